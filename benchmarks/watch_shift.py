"""A long `casstrace watch` under load: is it flat? (prints figures; not a test)

    .venv/bin/python benchmarks/watch_shift.py --port 9042 [--duration-s 3600] [--interval-s 300] [--rate 40]

A table of its own (casstrace_watch_shift.kv: --rows rows of 4 KiB, flushed) is read by prepared
statements with bound values (four shapes, --rate requests/s each, plus system.local) for the whole
watch; `casstrace watch --sample P --interval S --metrics-port` runs meanwhile in a fresh process.
Every --every-s seconds: the watch's resident memory (VmRSS) and CPU seconds, and from its /metrics
page the sessions sampled and the point statement's SSTable bytes per execution. At the end: the
intervals' lost events and refused map updates, each interval's figures for the point statement,
and the summary's per-statement figures against what the load ran.

What flat means: memory within a few MB from one interval to the next, no lost event or refused
update, the bytes per execution steady from interval to interval.
"""

import argparse
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from casstrace.node.jvm import find_cassandra
from casstrace.node.tracing import nodetool_for
from casstrace.sandbox.workload import Load, Workload
from figures import report

T = TypeVar("T")
KEYSPACE = "casstrace_watch_shift"
STARTED = "probes attached"
CASSTRACE = Path(sys.executable).parent / "casstrace"


def prepare_table(session: Any, rows: int, port: int) -> None:
    session.execute(
        f"CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}"
    )
    session.execute(f"CREATE TABLE IF NOT EXISTS {KEYSPACE}.kv (k int, c int, v blob, w text, PRIMARY KEY (k, c))")
    insert = session.prepare(f"INSERT INTO {KEYSPACE}.kv (k, c, v, w) VALUES (?, ?, ?, ?)")
    for key in range(rows):
        for column in range(4):
            session.execute(insert, (key, column, bytes([key % 251]) * 4096, "x" * 64))
    nodetool_for(find_cassandra(None, native_port=port)).run("flush", KEYSPACE, "kv")


def node_arguments(parser: argparse.ArgumentParser, out: str) -> None:
    """What both watch benchmarks (this one and watch_busy.py) take: the node, the table, the watch."""
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9042)
    parser.add_argument("--rows", type=int, default=400)
    parser.add_argument("--sample", type=float, default=0.01)
    parser.add_argument("--out", default=out)


def connect(args: argparse.Namespace) -> tuple[Any, Any]:
    """(cluster, session) to the node, its benchmark table ready."""
    from cassandra.cluster import Cluster

    cluster = Cluster([args.host], port=args.port)
    session = cluster.connect()
    prepare_table(session, args.rows, args.port)
    return cluster, session


def start_watch(args: argparse.Namespace, duration_s: float, *extra: str) -> subprocess.Popen:
    """`casstrace watch` in a fresh process, returned once its probes are attached."""
    command = [
        str(CASSTRACE),
        "watch",
        "--host",
        args.host,
        "--port",
        str(args.port),
        "--sample",
        str(args.sample),
        "--duration",
        str(duration_s),
        "--format",
        "json",
        "--out",
        args.out,
        "--force",
        *extra,
    ]
    return attached(command)


def attached(command: list[str], what: str = "casstrace watch") -> subprocess.Popen:
    """`command` (`what`: casstrace watch, or watch_busy.py's probes alone) in a fresh process,
    returned once it says on stderr that its probes are attached."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    for line in process.stderr:
        if STARTED in line:
            return process
    process.wait()
    raise SystemExit(f"{what} did not start (exit {process.returncode})")


@contextmanager
def until_done(process: subprocess.Popen, what: str = "casstrace watch") -> Iterator[subprocess.Popen]:
    """`process` (from attached(), `what` runs in it) inside; after, its end awaited (its duration is up). Left by an
    error, it is stopped with SIGINT: it detaches its probes and puts back what it changed on the node."""
    try:
        yield process
    except BaseException:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=900)
        raise
    process.communicate(timeout=900)
    if process.returncode:
        raise SystemExit(f"{what} failed (exit {process.returncode})")


def while_watched(args: argparse.Namespace, duration_s: float, work: Callable[[], T]) -> T:
    """work()'s result, run while `casstrace watch` watches (started first, its end awaited after)."""
    with until_done(start_watch(args, duration_s)):
        return work()


def loads(rate: float, rows: int) -> list[Load]:
    table = f"{KEYSPACE}.kv"
    return [
        Load("point", f"SELECT v FROM {table} WHERE k = ? AND c = ?", rate, (rows // 2, 1)),
        Load("partition", f"SELECT v FROM {table} WHERE k = ?", rate, (rows // 3,)),
        Load("narrow", f"SELECT w FROM {table} WHERE k = ? AND c = ?", rate, (rows // 4, 2)),
        Load("range", f"SELECT c, w FROM {table} WHERE k = ? AND c > ?", rate, (rows // 5, 0)),
        Load("system.local", "SELECT release_version FROM system.local", rate / 4),
    ]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User and system CPU the process used so far (/proc/PID/stat utime + stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scrape(port: int) -> str:
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    except OSError:
        return ""


def value(page: str, pattern: str) -> float | None:
    found = re.search(pattern + r" ([0-9.e+]+)$", page, re.M)
    return float(found.group(1)) if found else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    node_arguments(parser, "/tmp/casstrace-watch-shift.trace")
    parser.add_argument("--duration-s", type=float, default=3600)
    parser.add_argument("--rate", type=float, default=40.0, help="requests/s of each of the four statements")
    parser.add_argument("--every-s", type=float, default=60)
    parser.add_argument("--interval-s", type=float, default=300, help="0: one trace (memory grows with the watch)")
    parser.add_argument("--metrics-port", type=int, default=19871, help="0: none (memory alone, no live figures)")
    args = parser.parse_args()

    cluster, session = connect(args)
    watcher = start_watch(
        args,
        args.duration_s,
        *(("--metrics-port", str(args.metrics_port)) if args.metrics_port else ()),
        *(("--interval", str(args.interval_s)) if args.interval_s else ()),
    )
    started = time.monotonic()
    workload = Workload(session, loads(args.rate, args.rows), args.duration_s).start()
    print(f"{'minute':>7} {'RSS MB':>8} {'CPU s':>7} {'sessions sampled':>17} {'point bytes/exec':>17}", flush=True)
    samples = []
    while watcher.poll() is None and time.monotonic() - started < args.duration_s - 1:
        time.sleep(args.every_s)
        page = scrape(args.metrics_port)
        sampled = value(page, r"casstrace_sessions_sampled_total")
        per_execution = value(
            page,
            r'casstrace_statement_read_bytes_per_execution\{statement="SELECT v FROM '
            + KEYSPACE
            + r'\.kv WHERE k = \? AND c = \?"\}',
        )
        memory = rss_mb(watcher.pid)
        samples.append((time.monotonic() - started, memory))
        print(
            f"{(time.monotonic() - started) / 60:>7.1f} {memory:>8.1f} {cpu_seconds(watcher.pid):>7.1f} "
            f"{sampled or 0:>17.0f} {per_execution or 0:>17.0f}",
            flush=True,
        )
    workload.join()
    output, errors = watcher.communicate(timeout=1800)
    if watcher.returncode:
        raise SystemExit(f"casstrace watch failed (exit {watcher.returncode}): {errors[-2000:]}")
    result = json.loads(output)
    out = Path(args.out)
    traces = sorted(out.parent.glob(f"{out.stem}-[0-9][0-9][0-9][0-9]{out.suffix}")) if args.interval_s else [out]
    lost = refused = 0
    point = f"SELECT v FROM {KEYSPACE}.kv WHERE k = ? AND c = ?"
    print(f"\n{'interval':>8} {'lost':>5} {'refused':>8} {'point sampled':>14} {'point bytes/exec':>17}")
    for number, trace in enumerate(traces, start=1):
        with sqlite3.connect(trace) as db:
            meta = {k: json.loads(v) for k, v in db.execute("SELECT key, value FROM meta")}
        lost, refused = lost + (meta.get("lost_events") or 0), refused + (meta.get("aggregate_overflows") or 0)
        interval = trace.with_suffix(".json")
        statements = json.loads(interval.read_text())["statements"] if interval.exists() else result["statements"]
        mine = next((s for s in statements if s["query"] == point), None)
        print(
            f"{number:>8} {meta.get('lost_events') or 0:>5} {meta.get('aggregate_overflows') or 0:>8} "
            f"{mine['sampled_executions'] if mine else 0:>14} "
            f"{mine['sstable_read_bytes_per_execution'] if mine else 0:>17,.0f}"
        )
    print(f"lost events {lost}, refused map updates {refused}")
    ran = {load.name: load.executions for load in workload.loads}
    print(f"{'statement':<60} {'ran':>8} {'est. executions':>16} {'bytes/exec':>11}")
    for statement in result["statements"][:6]:
        print(
            f"{statement['query'][:60]:<60} {'':>8} {statement['estimated_executions']:>16,.0f} "
            f"{statement['sstable_read_bytes_per_execution']:>11,.0f}"
        )
    print("ran by the load: " + ", ".join(f"{name} {count}" for name, count in ran.items()))
    # Growth once the first intervals have set the allocator's high-water mark (or after a minute).
    settled = [memory for at, memory in samples if at >= 2 * (args.interval_s or 30)]
    if len(settled) >= 2:
        report("watch_shift_rss_settled_mb", settled[0])
        report("watch_shift_rss_growth_mb", samples[-1][1] - settled[0])
    cluster.shutdown()


if __name__ == "__main__":
    main()
