"""casstrace's own costs at production scale: thousands of SSTables, a production heap, gigabytes
read per execution (prints figures; not a test).

    .venv/bin/python benchmarks/scale.py [--sstables 5000] [--heap 8G] [--mode mmap|standard]
                                         [--data-dir DIR] [--runs 3] [--skip-run] [--stop-node]

The node: Cassandra 4.1 (Java 11, as the sandbox runs it) on 127.0.0.14, its own data directory and
ports, built once and reused: one table, compaction disabled and uncompressed, one partition of
ROWS rows of ROW_BYTES random bytes flushed into one SSTable, whose files are then copied under
the generations 2 ... N while the node is stopped (a flush per SSTable would take hours here).
Every copy is a file of its own (a hard link would make them one inode, one set of cached pages),
so the node maps and opens N SSTables and the query `SELECT * FROM scale.many WHERE p = 1` reads
the partition from every one: N x ROWS x ROW_BYTES (2.29 GB at 5,000). --mode restarts the same
node with that disk_access_mode: mmap (4.1's auto), where every Data and Index file is mapped, or
standard (pread).

Measured, each printed with the machine's load average beside it:
- the mapped-pages measure per window (probes/proc/mapped_pages.py: the clear before a window, the smaps
  read after it), medians of --runs: goal <= 50 ms at 5,000 SSTables;
- a capture's stop on that JVM (BccCapture.stop(): detach, read the maps, the final fd snapshot;
  and writing its trace, which names every file): goal <= 1 s;
- `casstrace run` of the query (--repeat 1 --warmup 0): its turnaround, the part that is
  casstrace's own (all but the executions), the trace's size and the time `casstrace report` takes
  on it, beside the same for a query reading 1/50th of the bytes (bounded: independent of the bytes
  read).
The node stays up between runs (--stop-node stops it at the end): building it takes minutes.
"""

import argparse
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from casstrace.probes.bcc.bcc_capture import BccCapture
from casstrace.probes.proc import mapped_pages
from casstrace.sandbox import config, control
from casstrace.sandbox.settings import HOST, Layout, Settings
from casstrace.traces import Trace, TraceWriter
from figures import report

VERSION = "4.1.10"
KEYSPACE, TABLE = "scale", "many"
ROWS, ROW_BYTES = 7, 64 << 10  # one SSTable's partition: 448 KiB
CASSTRACE = Path(sys.executable).parent / "casstrace"
GENERATION = re.compile(r"^(?P<version>[a-z]{2})-(?P<gen>\d+)-(?P<format>big)-(?P<component>.+)$")
HOME = Path.home() / ".local/share/casstrace"


@dataclass(frozen=True)
class Node:
    """A 4.1 node of this benchmark: where it lives and listens, its SSTables and heap."""

    address: str
    native_port: int
    jmx_port: int
    data_dir: Path
    sstables: int
    heap: str

    @property
    def layout(self) -> Layout:
        return Layout(self.data_dir)

    def settings(self, mode: str) -> Settings:
        return Settings(
            version=VERSION,
            native_port=self.native_port,
            jmx_port=self.jmx_port,
            disk_access_mode=None if mode == "mmap" else mode,
            heap=self.heap,
        )


SCALE = Node("127.0.0.14", 19414, 17414, HOME / "scale-node", 5000, "8G")
SMALL = Node("127.0.0.15", 19415, 17415, HOME / "scale-small-node", 1, "1G")  # the sandbox's default size


def load() -> str:
    return "load " + " ".join(f"{value:.2f}" for value in os.getloadavg())


# -- the node ------------------------------------------------------------------------------------


def start(node: Node, mode: str) -> int:
    """Start the node (its yaml at its own address) and return its pid once it answers CQL."""
    layout, settings = node.layout, node.settings(mode)
    runtime = control.find_runtime(settings)
    layout.root.mkdir(parents=True, exist_ok=True)
    layout.save_settings(settings)
    config.write_config(layout, settings)
    # Its own address (seeds too: it is its own), and time for a read of 5,000 SSTables by pread
    # (standard), which takes longer than the default 5 s.
    layout.yaml.write_text(layout.yaml.read_text().replace(HOST, node.address) + "read_request_timeout: 120000ms\n")
    for directory in (layout.data, layout.commitlog, layout.saved_caches, layout.hints, layout.cdc_raw, layout.logs):
        directory.mkdir(parents=True, exist_ok=True)
    with open(layout.log, "ab") as log:
        process = subprocess.Popen(
            config.daemon_command(runtime.java, runtime.jars, layout, settings),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=layout.root,
            start_new_session=True,
        )
    layout.pid_file.write_text(f"{process.pid}\n")
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"the node exited while starting (status {process.returncode}): see {layout.log}")
        try:
            socket.create_connection((node.address, node.native_port), timeout=1).close()
            return process.pid
        except OSError:
            time.sleep(1)
    sys.exit(f"the node did not answer on {node.address}:{node.native_port} in 900 s: see {layout.log}")


def table_dir(layout: Layout) -> Path:
    (directory,) = (layout.data / KEYSPACE).glob(f"{TABLE}-*")
    return directory


def build(node: Node) -> None:
    """A fresh node holding `node.sstables` copies of one SSTable (see the module's docstring)."""
    from cassandra.cluster import Cluster

    print(f"building a node in {node.data_dir}: {node.sstables:,} SSTables ({load()})", flush=True)
    began = time.monotonic()
    start(node, "mmap")
    cluster = Cluster([node.address], port=node.native_port, connect_timeout=30)
    cql = cluster.connect()
    cql.execute(
        f"CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}"
    )
    cql.execute(
        f"CREATE TABLE IF NOT EXISTS {KEYSPACE}.{TABLE} (p int, c int, v blob, PRIMARY KEY (p, c)) "
        "WITH compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'} "
        "AND compression = {'enabled': 'false'}"
    )
    insert = cql.prepare(f"INSERT INTO {KEYSPACE}.{TABLE} (p, c, v) VALUES (1, ?, ?)")
    for row in range(ROWS):
        cql.execute(insert, (row, os.urandom(ROW_BYTES)))
    cluster.shutdown()
    sandbox = control.Sandbox(node.data_dir)
    sandbox.nodetool("flush", KEYSPACE, TABLE)
    sandbox.stop()
    directory = table_dir(node.layout)
    first = [(path, parts) for path in sorted(directory.iterdir()) if (parts := GENERATION.match(path.name))]
    generations = {parts["gen"] for _, parts in first}
    if generations != {"1"}:
        sys.exit(
            f"expected one SSTable of generation 1 in {directory}, found {sorted(generations)} "
            "(UUID generations, uuid_sstable_identifiers_enabled, are not copied here)"
        )
    for generation in range(2, node.sstables + 1):
        for path, parts in first:
            shutil.copyfile(path, directory / f"{parts['version']}-{generation}-{parts['format']}-{parts['component']}")
    print(f"  built in {time.monotonic() - began:.0f} s ({load()})", flush=True)


def ensure_node(node: Node, mode: str) -> int:
    """The node's pid, running in `mode` (built, started or restarted as needed)."""
    layout = node.layout
    if not (layout.data / KEYSPACE).exists():
        build(node)
    pid = control.Sandbox(node.data_dir).pid()
    current = layout.load_settings()
    if pid is not None and current == node.settings(mode):
        return pid
    if pid is not None:
        control.Sandbox(node.data_dir).stop()
    began = time.monotonic()
    pid = start(node, mode)
    sstables = sum(1 for _ in table_dir(layout).glob("*-Data.db"))
    print(
        f"node started ({mode}, {sstables:,} SSTables, {node.heap} heap) "
        f"in {time.monotonic() - began:.0f} s ({load()})",
        flush=True,
    )
    return pid


def describe_jvm(pid: int) -> str:
    status = Path(f"/proc/{pid}/status").read_text()
    rss = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
    mappings = len(Path(f"/proc/{pid}/maps").read_text().splitlines())
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return f"pid {pid}: resident {rss / 1024:.0f} MiB, {mappings:,} mappings, {fds:,} fds"


# -- the measures --------------------------------------------------------------------------------


def quartet(seconds: list[float]) -> str:
    return (
        f"median {statistics.median(seconds) * 1e3:7.1f} ms (min {min(seconds) * 1e3:.1f}, "
        f"max {max(seconds) * 1e3:.1f}; {load()})"
    )


def mapped_window(pid: int, data: Path, runs: int, prefix: str) -> None:
    """The measure's cost around one window, as `run` takes it (MappedPagesCapture), and what the
    kernel alone takes to write smaps (one read of it all) and to walk the page tables smaps walks
    (smaps_rollup: every page of the heap too)."""
    capture = mapped_pages.MappedPagesCapture(pid, [str(data)])
    clears, reads, kernel, walk = [], [], [], []
    for window_id in range(1, runs + 1):
        began = time.perf_counter()
        capture.before_window()
        cleared = time.perf_counter()
        capture.after_window(window_id)
        reads.append(time.perf_counter() - cleared)
        clears.append(cleared - began)
        began = time.perf_counter()
        Path(f"/proc/{pid}/smaps").read_bytes()
        kernel.append(time.perf_counter() - began)
        began = time.perf_counter()
        Path(f"/proc/{pid}/smaps_rollup").read_bytes()
        walk.append(time.perf_counter() - began)
    print(f"  mapped pages, clear:                {quartet(clears)}")
    print(f"  mapped pages, smaps read and parse: {quartet(reads)}")
    print(f"    smaps written by the kernel:      {quartet(kernel)}")
    print(f"    smaps_rollup (its page-table walk, no text: the floor of any smaps read): {quartet(walk)}")
    report(f"{prefix}_mapped_window_ms", (statistics.median(clears) + statistics.median(reads)) * 1e3)


def capture_stop(pid: int, data: Path, runs: int, prefix: str) -> None:
    stops, writes = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for number in range(runs):
            capture = BccCapture(pid, extra_dirs=[str(data)])
            capture.start()
            time.sleep(1)
            began = time.perf_counter()
            captured = capture.stop()
            stops.append(time.perf_counter() - began)
            assert captured is not None
            writer = TraceWriter(Path(scratch) / f"stop{number}.trace")
            began = time.perf_counter()
            captured.write(writer)
            writer.finish()
            writes.append(time.perf_counter() - began)
    print(
        f"  capture stop: median {statistics.median(stops):.3f} s (min {min(stops):.3f}); writing its trace: "
        f"median {statistics.median(writes):.3f} s ({load()})"
    )
    report(f"{prefix}_stop_s", statistics.median(stops))
    report(f"{prefix}_stop_write_s", statistics.median(stops) + statistics.median(writes))


def casstrace_run(node: Node, query: str, out: Path) -> tuple[float, float, float, int, float]:
    """(wall, casstrace's own wall: all but the executions, the executions' wall, trace bytes,
    `casstrace report` seconds) of one `casstrace run` (one execution, no warmup). The executions'
    wall is their latency as the trace records it (the client's, every page fetched): the node's
    work, which casstrace cannot shorten; all the rest, the mapped-pages measure around each window
    included, is casstrace's."""
    began = time.perf_counter()
    result = subprocess.run(
        [
            str(CASSTRACE),
            "run",
            query,
            "--host",
            node.address,
            "--port",
            str(node.native_port),
            "--repeat",
            "1",
            "--warmup",
            "0",
            "--request-timeout",
            "600",
            "--out",
            str(out),
            "--no-html",
        ],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - began
    if result.returncode != 0:
        sys.exit(f"casstrace run failed: {result.stderr.strip()}")
    with Trace(out) as trace:
        ((executions,),) = trace.rows("SELECT COALESCE(SUM(latency_s), 0) FROM executions")
    began = time.perf_counter()
    subprocess.run([str(CASSTRACE), "report", str(out), "--format", "json"], check=True, stdout=subprocess.DEVNULL)
    analysed = time.perf_counter() - began
    size = out.stat().st_size
    os.unlink(out)
    return wall, wall - executions, executions, size, analysed


WHOLE_PARTITION = f"SELECT * FROM {KEYSPACE}.{TABLE} WHERE p = 1"
ONE_ROW = f"SELECT * FROM {KEYSPACE}.{TABLE} WHERE p = 1 AND c = 0"


def run_turnaround(node: Node, label: str, queries: dict[str, str], runs: int) -> dict[str, list[tuple]]:
    """Each query `runs` times: what casstrace_run measures, printed."""
    figures: dict[str, list[tuple]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, query in queries.items():
            for _ in range(runs):
                figures.setdefault(name, []).append(casstrace_run(node, query, Path(scratch) / "run.trace"))
            wall, own, executions, size, analysed = (statistics.median(column) for column in zip(*figures[name]))
            print(
                f"  {label}, run of {name}: wall {wall:.2f} s, casstrace's own {own:.2f} s, the execution "
                f"{executions:.2f} s; trace {size / 1e6:.2f} MB, report {analysed:.2f} s (medians of {runs}; {load()})",
                flush=True,
            )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["mmap", "standard"], default="mmap")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-run", action="store_true", help="leave out the `casstrace run` measures")
    parser.add_argument("--stop-nodes", action="store_true", help="stop the nodes at the end")
    options = parser.parse_args()
    prefix = f"scale_{options.mode}"
    pid = ensure_node(SCALE, options.mode)
    print(f"machine: {os.cpu_count()} CPUs, kernel {platform.release()}; {describe_jvm(pid)}; {load()}", flush=True)
    try:
        if not options.skip_run:
            scale = run_turnaround(
                SCALE,
                "5,000 SSTables",
                {"the whole partition (2.29 GB)": WHOLE_PARTITION, "one row (1/7 of it)": ONE_ROW},
                options.runs,
            )
            big, one_row = (scale[name] for name in scale)
            report(
                f"{prefix}_trace_size_ratio",
                statistics.median(r[3] for r in big) / statistics.median(r[3] for r in one_row),
            )
            report(
                f"{prefix}_report_ratio",
                statistics.median(r[4] for r in big) / statistics.median(r[4] for r in one_row),
            )
            print(f"  after the runs: {describe_jvm(pid)}")
        mapped_window(pid, SCALE.layout.data, options.runs * 3, prefix)
        capture_stop(pid, SCALE.layout.data, options.runs, prefix)
        if not options.skip_run:
            ensure_node(SMALL, options.mode)
            small = run_turnaround(SMALL, "1 SSTable, 1G heap", {"the whole partition": WHOLE_PARTITION}, options.runs)
            own = statistics.median(r[1] for r in big), statistics.median(r[1] for r in next(iter(small.values())))
            print(
                f"  casstrace's own time in a run: {own[0]:.2f} s at 5,000 SSTables, {own[1]:.2f} s on the small node "
                f"({own[0] / own[1]:.2f}x, goal <= 2)"
            )
            report(f"{prefix}_run_own_ratio", own[0] / own[1])
    finally:
        if options.stop_nodes:
            for node in (SCALE, SMALL):
                control.Sandbox(node.data_dir).stop()


if __name__ == "__main__":
    main()
