"""How right the nearest wall-clock sample is as the stack of a page-cache fill (prints figures; not a test).

  .venv/bin/python benchmarks/fault_join_accuracy.py [--host 127.0.0.1] [--port 9042] [--runs 3]
      [--query "SELECT ..."] --data-files "DATA_DIR/*/streams-*/*-Data.db"

`run --profile` puts a fault on a mapped file on the stack of the faulting thread's wall-clock sample
nearest in time (casstrace.probes.jvm.java_stacks.nearest_samples): no Java method brackets a fault. How
often that sample names the code that faulted cannot be measured on faults themselves; it can on the
fills inside pread calls, where the truth is known (the call's own stack, from async-profiler's
instrumentation of the JDK's read method). On a node that reads its Data files with pread
(disk_access_mode standard; 5.0's default mmap_index_only), each cold execution's read calls that
filled pages are given both stacks; the figures are the fill bytes the nearest sample puts on a stack
at all, and on a stack whose asking Cassandra frame (casstrace.analyses.profile.reading_frame) is the
call's, for several bounds; and, as a control, the same with each fill moved 50 ms later (what a
sample of the same thread at an unrelated time gets right: a query whose bytes all come from one frame
agrees by itself). The narrow demo query (--query "SELECT value FROM
casstrace_demo.streams_narrow WHERE stream_id = 1 AND column_no = 0", its Data files) is the hard case:
a few short reads, each a brief moment of its thread. On a node that maps them (4.x's default), it
prints the fault fill bytes the nearest sample puts on a stack per bound (there is no truth to compare the stack with).
"""

import argparse
import glob
import os
import tempfile
from dataclasses import replace
from pathlib import Path

from casstrace.analyses.profile import reading_frame
from casstrace.node.connection import NodeSession, resolve_settings
from casstrace.node.context import make_cold
from casstrace.node.jvm import find_cassandra
from casstrace.node.query import MeasuringProtocolHandler, execute, prepare
from casstrace.probes.bcc.bcc_capture import BccCapture
from casstrace.probes.jvm.async_profiler import AsyncProfiler
from casstrace.probes.jvm.java_stacks import (
    FILL_JOIN_NS,
    METHOD_EVENT,
    PAGE_BYTES,
    WALL_EVENT,
    LoggedFill,
    LoggedRead,
    join_reads,
    nearest_samples,
)
from casstrace.probes.jvm.jfr import read_samples
from casstrace.sandbox.demo import WideTable
from casstrace.traces import TraceWriter
from figures import report

DEMO_QUERY = WideTable().wide_query
BOUNDS_NS = (500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000, 20_000_000)
# (name, the window (before, after) of a bound)
STRATEGIES = (("nearest", lambda b: (b, b)), ("first after", lambda b: (0, b)))
CONTROL_SHIFT_NS = 50_000_000


def share(part: int, whole: int) -> str:
    return f"{part / whole:6.1%}" if whole else "     —"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9042)
    parser.add_argument("--query", default=DEMO_QUERY)
    parser.add_argument("--runs", type=int, default=3, help="cold executions")
    parser.add_argument("--data-files", required=True, help="the queried table's Data files (a glob)")
    args = parser.parse_args()

    process = find_cassandra(native_port=args.port)
    profiler = AsyncProfiler(process.pid)
    files = {(stat.st_dev, stat.st_ino) for stat in map(os.stat, glob.glob(args.data_files))}
    filled = faulted = control = 0  # control: same frame, each fill 50 ms later, nearest within 2 ms
    keys = [(name, bound) for name, _ in STRATEGIES for bound in BOUNDS_NS]
    attributed = dict.fromkeys(keys, 0)
    same_frame = dict.fromkeys(keys, 0)
    faults_attributed = dict.fromkeys(keys, 0)
    with (
        NodeSession(resolve_settings(args.host, args.port), protocol_handler=MeasuringProtocolHandler) as node,
        tempfile.TemporaryDirectory() as scratch,
    ):
        prepared = prepare(node.session, args.query)
        execute(node.session, prepared)
        for run in range(args.runs):
            make_cold(process.pid, files)
            capture = BccCapture(process.pid)
            capture.start()
            window = capture.begin_window("execution", run + 1)
            profiler.start()
            try:
                execute(node.session, prepared)
            finally:
                recording = profiler.stop()
                result = capture.stop()
            assert result is not None
            writer = TraceWriter(Path(scratch) / f"run{run}.trace")
            result.write(writer)
            reads = [LoggedRead(*read) for read in writer.logged_reads([window])]
            data_ids = {row[0] for row in writer.db.execute("SELECT file_id FROM files WHERE path LIKE '%Data.db'")}
            faults = [
                fill for fill in (LoggedFill(*row) for row in writer.logged_fills([window])) if fill.file_id in data_ids
            ]
            writer.discard()
            samples = list(read_samples(recording))
            profiler.cleanup()
            exact = {
                (read.tid, read.ts_ns): maker
                for read, maker in join_reads(reads, [s for s in samples if s.event == METHOD_EVENT])
                if maker is not None
            }
            wall = [s for s in samples if s.event == WALL_EVENT]
            fills = [
                LoggedFill(read.ts_ns, read.tid, read.file_id, read.fill_pages)
                for read in reads
                if read.fill_pages and (read.tid, read.ts_ns) in exact
            ]
            filled += sum(fill.pages for fill in fills) * PAGE_BYTES
            faulted += sum(fill.pages for fill in faults) * PAGE_BYTES
            shifted = [replace(fill, ts_ns=fill.ts_ns + CONTROL_SHIFT_NS) for fill in fills]
            for fill, (_, nearest) in zip(fills, nearest_samples(shifted, wall)):
                truth = reading_frame(exact[(fill.tid, fill.ts_ns)].stack)
                if nearest is not None and truth is not None and reading_frame(nearest.stack) == truth:
                    control += fill.pages * PAGE_BYTES
            for name, window_of in STRATEGIES:
                for bound in BOUNDS_NS:
                    before, after = window_of(bound)
                    faults_attributed[(name, bound)] += sum(
                        fill.pages * PAGE_BYTES
                        for fill, nearest in nearest_samples(faults, wall, before, after)
                        if nearest is not None
                    )
                    for fill, nearest in nearest_samples(fills, wall, before, after):
                        if nearest is None:
                            continue
                        attributed[(name, bound)] += fill.pages * PAGE_BYTES
                        truth = reading_frame(exact[(fill.tid, fill.ts_ns)].stack)
                        if truth is not None and reading_frame(nearest.stack) == truth:
                            same_frame[(name, bound)] += fill.pages * PAGE_BYTES

    print(f"query: {args.query}, {args.runs} cold executions")
    print(
        f"fill bytes inside pread calls with a known stack: {filled / 2**20:.1f} MiB; "
        f"fault fill bytes of the Data files (no read call): {faulted / 2**20:.1f} MiB"
    )
    print("strategy, bound: pread fills on a sample's stack, with the call's own asking frame; faults on a stack")
    for name, bound in keys:
        print(
            f"  {name:20} {bound / 1e6:5.1f} ms: {share(attributed[(name, bound)], filled)} "
            f"{share(same_frame[(name, bound)], filled)}  {share(faults_attributed[(name, bound)], faulted)}"
        )
    print(
        f"control, each pread fill {CONTROL_SHIFT_NS / 1e6:.0f} ms later, nearest within 2 ms: the call's own "
        f"asking frame {share(control, filled)}"
    )
    if filled:
        report("fault_join_same_frame_share", same_frame[("nearest", FILL_JOIN_NS)] / filled)
    if faulted:
        report("fault_join_attributed_share", faults_attributed[("nearest", FILL_JOIN_NS)] / faulted)


if __name__ == "__main__":
    main()
