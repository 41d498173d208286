"""What `casstrace watch` costs a busy node: p99 latency and throughput at >= 1,000 requests/s of mixed
prepared statements with bound values, alone vs watched, interleaved (prints figures; not a test).

    .venv/bin/python benchmarks/watch_busy.py --port 9042 [--rounds 3] [--block-s 30] [--target 1200]
        [--parts] [--bpf-stats]

The load: four prepared statements with bound values over a table of its own
(casstrace_watch_shift.kv, as benchmarks/watch_shift.py makes it), issued asynchronously by the
driver at --target requests/s (at most --in-flight outstanding: a node that cannot keep up shows it
as lower throughput, not as an ever-growing queue). Each round: a block alone, then a block under
`casstrace watch --sample P` (the block starts once the watch says its probes are attached).
Per block: the throughput achieved and the p99 of the client's latency. Printed: each round's
figures, the medians over the rounds, and the watched ÷ alone ratios (goal, issue 28: <= 1.05 for
both). The machine's load average is printed beside them: on a shared machine, say so with the figures.

Where the cost comes from: --parts adds, in each round between those two, a block with the node's
sampled tracing alone (`nodetool settraceprobability P`, put back as the watch puts it back) and a
block with the watch's probes alone (the same capture, per-thread slots and all, drained every
REFRESH_S as the watch drains it, in a process of its own as the watch's are: --hold-probes).
Per block, beside the client's figures: the CPU seconds casstrace's process used during the block,
the node's JVM's (the BPF programs run in its threads: included) and the client's own, and the
load average (the machine's busy share from /proc/stat is not printed: this VM's /proc/stat counts
less busy time than these processes used). With --bpf-stats, also the time in casstrace's BPF programs
(/proc/sys/kernel/bpf_stats_enabled on meanwhile: two clock reads more a run, so the blocks cost a
little more than without).
"""

import argparse
import os
import random
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from bpf_floor import bpf_stats
from casstrace.analyses.percentiles import percentile
from casstrace.ledger import Ledger
from casstrace.node.jvm import CassandraProcess, find_cassandra
from casstrace.node.tracing import TraceProbability, nodetool_for
from casstrace.orchestration.watcher import REFRESH_S, WATCH_WINDOW, warn
from casstrace.probes.backends import DEFAULT_BACKEND, backend
from casstrace.probes.protocol import CaptureOptions, ThreadIOCapture
from casstrace.traces.schema import THREAD_SLOT_NS
from figures import process_cpu_ns, report
from watch_shift import KEYSPACE, STARTED, attached, connect, node_arguments, start_watch, until_done

PARTS = ("alone", "tracing", "probes", "watched")  # a round's blocks with --parts, in this order
PROBES_ALONE = "the probes alone"
# Seconds a watch (or the probes alone) outlasts its block: it attaches before the block and is
# done after it, so neither its start nor its end (nodetool, the trace) falls in the block.
OUTLAST_S = 3.0


def statements(session: Any, rows: int) -> list[tuple[object, Callable[[], tuple]]]:
    table = f"{KEYSPACE}.kv"
    shapes = [
        (f"SELECT v FROM {table} WHERE k = ? AND c = ?", lambda: (random.randrange(rows), random.randrange(4))),
        (f"SELECT w FROM {table} WHERE k = ? AND c = ?", lambda: (random.randrange(rows), random.randrange(4))),
        (f"SELECT c, w FROM {table} WHERE k = ? AND c > ?", lambda: (random.randrange(rows), 1)),
        (f"SELECT v FROM {table} WHERE k = ? LIMIT 1", lambda: (random.randrange(rows),)),
    ]
    return [(session.prepare(cql), values) for cql, values in shapes]


def block(session: Any, prepared: list, seconds: float, target: float, in_flight: int) -> tuple[float, float]:
    """(requests/s achieved, p99 latency in s) of one block of the load."""
    latencies: list[float] = []
    slots = threading.Semaphore(in_flight)
    lock = threading.Lock()
    started = time.monotonic()
    number = 0
    while (due := started + number / target) < started + seconds:
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        slots.acquire()
        statement, values = prepared[number % len(prepared)]
        began = time.monotonic()
        future = session.execute_async(statement, values())

        def done(_: object, began: float = began) -> None:
            with lock:
                latencies.append(time.monotonic() - began)
            slots.release()

        def failed(_: object) -> None:
            slots.release()

        future.add_callbacks(done, failed)
        number += 1
    for _ in range(in_flight):  # wait for the last answers
        slots.acquire()
    elapsed = time.monotonic() - started
    return len(latencies) / elapsed, percentile(latencies, 0.99) or 0.0


@dataclass
class Block:
    """One block of the load under one part of the watch, and what the machine spent meanwhile."""

    rate: float  # requests/s achieved
    p99_s: float  # of the client's latency
    casstrace_cpu_s: float  # casstrace's process (0: none runs)
    bpf_s: float | None  # in casstrace's BPF programs (None: not counted, no --bpf-stats)
    node_cpu_s: float  # the node's JVM, the BPF programs run in its threads included
    client_cpu_s: float  # this process: the load's driver
    load: float  # 1-minute load average at the block's end


def bpf_run_ns(pid: int) -> int:
    """ns spent so far in the BPF programs `pid` holds (their fds' fdinfo, as BccCapture.program_run_times
    reads its own), counted only while /proc/sys/kernel/bpf_stats_enabled is 1."""
    total = 0
    for info in Path(f"/proc/{pid}/fdinfo").iterdir():
        try:
            fields = info.read_text()
        except OSError:  # closed meanwhile
            continue
        total += sum(int(line.split()[1]) for line in fields.splitlines() if line.startswith("run_time_ns:"))
    return total


def measured(load: Callable[[], tuple[float, float]], node_pid: int, casstrace_pid: int | None, bpf: bool) -> Block:
    """load()'s figures, with the CPU each process and the machine spent while it ran."""

    def cpu_ns() -> tuple[int, int, int, int]:  # casstrace, its BPF programs, the node, the client
        return (
            process_cpu_ns(casstrace_pid) if casstrace_pid else 0,
            bpf_run_ns(casstrace_pid) if casstrace_pid and bpf else 0,
            process_cpu_ns(node_pid),
            process_cpu_ns(os.getpid()),
        )

    before = cpu_ns()
    rate, p99 = load()
    after = cpu_ns()
    casstrace_s, bpf_s, node_s, client_s = ((end - start) / 1e9 for start, end in zip(before, after, strict=True))
    return Block(
        rate=rate,
        p99_s=p99,
        casstrace_cpu_s=casstrace_s,
        bpf_s=bpf_s if casstrace_pid and bpf else None,
        node_cpu_s=node_s,
        client_cpu_s=client_s,
        load=os.getloadavg()[0],
    )


@contextmanager
def traced(node: CassandraProcess, probability: float) -> Iterator[None]:
    """The node's sampled tracing alone, switched as the watch switches it (written down in the
    ledger first, put back on every way out: TraceProbability)."""
    with TraceProbability(nodetool_for(node), probability, warn, Ledger(node.pid)):
        yield


@contextmanager
def probed(pid: int, seconds: float) -> Iterator[int]:
    """The watch's probes alone on `pid` for `seconds`, in a process of their own (its pid given)."""
    command = [sys.executable, str(Path(__file__).resolve()), "--hold-probes", str(pid), "--block-s", str(seconds)]
    with until_done(attached(command, PROBES_ALONE), PROBES_ALONE) as holder:
        yield holder.pid


@contextmanager
def watched(args: argparse.Namespace, seconds: float) -> Iterator[int]:
    """`casstrace watch` for `seconds` (its process's pid given)."""
    with until_done(start_watch(args, seconds)) as watcher:
        yield watcher.pid


def hold_probes(pid: int, seconds: float) -> None:
    """The probes `casstrace watch` attaches (orchestration.watcher: per-thread slots, the default
    per-call log), drained every REFRESH_S as its _wait drains them, for `seconds`; no tracing, no
    trace written. Says STARTED on stderr once attached, as the watch does."""
    options = CaptureOptions(thread_slot_ns=THREAD_SLOT_NS, source=f"pid {pid} (watch_busy.py, probes alone)")
    capture = cast(ThreadIOCapture, backend(DEFAULT_BACKEND)(pid, options=options))
    capture.start()
    try:
        capture.begin_window(WATCH_WINDOW)
        print(f"watch_busy.py: {STARTED}", file=sys.stderr, flush=True)
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(REFRESH_S, left))
            capture.drain_thread_io()
    finally:
        capture.stop()


def parts(args: argparse.Namespace, node: CassandraProcess) -> dict[str, Callable[[], AbstractContextManager]]:
    """Each part of the watch by name: a context that runs it around a block, giving the pid of
    casstrace's process (None: none runs)."""
    seconds = args.block_s + OUTLAST_S
    return {
        "alone": lambda: nullcontext(None),
        "tracing": lambda: traced(node, args.sample),
        "probes": lambda: probed(node.pid, seconds),
        "watched": lambda: watched(args, seconds),
    }


def line(name: str, block: Block) -> str:
    bpf = f" (BPF {block.bpf_s:.2f})" if block.bpf_s is not None else ""
    return (
        f"{name:<8} {block.rate:>7,.0f} req/s  p99 {block.p99_s * 1000:6.2f} ms  "
        f"casstrace CPU {block.casstrace_cpu_s:5.2f} s{bpf}  node CPU {block.node_cpu_s:5.1f} s  "
        f"client CPU {block.client_cpu_s:5.1f} s  "
        f"load {block.load:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    node_arguments(parser, "/tmp/casstrace-watch-busy.trace")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--block-s", type=float, default=30.0)
    parser.add_argument("--target", type=float, default=1200.0, help="requests/s offered")
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--parts", action="store_true", help="also the node's tracing alone and the probes alone")
    parser.add_argument("--bpf-stats", action="store_true", help="count the time in casstrace's BPF programs")
    parser.add_argument("--hold-probes", type=int, metavar="PID", help=argparse.SUPPRESS)  # the probes' process
    args = parser.parse_args()
    if args.hold_probes is not None:
        hold_probes(args.hold_probes, args.block_s)
        return

    cluster, session = connect(args)
    node = find_cassandra(None, native_port=args.port)
    prepared = statements(session, args.rows)
    block(session, prepared, 5, args.target, args.in_flight)  # warm the caches and the connections
    names = PARTS if args.parts else ("alone", "watched")
    around = parts(args, node)
    blocks: dict[str, list[Block]] = {name: [] for name in names}
    with bpf_stats() if args.bpf_stats else nullcontext():
        for number in range(1, args.rounds + 1):
            for name in names:
                with around[name]() as casstrace_pid:
                    blocks[name].append(
                        measured(
                            lambda: block(session, prepared, args.block_s, args.target, args.in_flight),
                            node.pid,
                            casstrace_pid,
                            args.bpf_stats,
                        )
                    )
                print(f"round {number}: {line(name, blocks[name][-1])}", flush=True)
    cluster.shutdown()

    alone_rate = statistics.median(b.rate for b in blocks["alone"])
    alone_p99 = statistics.median(b.p99_s for b in blocks["alone"])
    print(f"\nmedians of {args.rounds} rounds (÷ alone):")
    for name, kept in blocks.items():
        rate, p99 = statistics.median(b.rate for b in kept), statistics.median(b.p99_s for b in kept)
        bpf = [b.bpf_s for b in kept if b.bpf_s is not None]
        print(
            f"{name:<8} {rate:>7,.0f} req/s ({rate / alone_rate:.3f})  p99 {p99 * 1000:6.2f} ms "
            f"({p99 / alone_p99:.3f})  casstrace CPU {statistics.median(b.casstrace_cpu_s for b in kept):5.2f} s"
            + (f" (BPF {statistics.median(bpf):.2f})" if bpf else "")
            + f"  node CPU {statistics.median(b.node_cpu_s for b in kept):5.1f} s"
        )
    watched_blocks = blocks["watched"]
    report("watch_busy_throughput_ratio", statistics.median(b.rate for b in watched_blocks) / alone_rate)
    report("watch_busy_p99_ratio", statistics.median(b.p99_s for b in watched_blocks) / alone_p99)


if __name__ == "__main__":
    main()
