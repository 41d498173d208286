"""One capture kept attached across the runs of one command (orchestration.kept_capture), and the
program under it (probes.bcc.bcc_capture.KeptProgram): a capture's trace holds what a fresh capture's
holds, and nothing of the capture before it.

The program's part, against a helper process's own reads: with a per-call log of one record, every
other read goes to the kernel's maps (per-file totals, coverage, spectrogram, page-cache fills), which
a kept program must empty between captures; a read a thread entered during the first capture and
returned from during the second is no call of the second's (a fresh program never saw it enter).
The runs' part, on the test node with the demo tables: the wide query reads only the wide table's
Data files, the narrow query only the narrow table's, and a run of the same query through a capture
of its own reads the same.
"""

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from casstrace.node.connection import resolve_settings
from casstrace.orchestration.kept_capture import KeptCapture
from casstrace.orchestration.runner import RunOptions, run
from casstrace.probes.bcc.bcc_capture import BccCapture, KeptProgram, ProgramOptions
from casstrace.traces import Trace, TraceWriter

pytestmark = pytest.mark.integration

PAGE = 4096
# A process that reads what it is told, cold (its pages dropped first), in 16 KiB calls; and a thread
# of it blocked in a read of a pipe until fed.
READER = textwrap.dedent(
    """
    import json, os, sys, threading
    r, w = os.pipe()
    got = []
    blocked = None
    def answer(value):
        print(json.dumps(value), flush=True)
    answer({"pipe": os.fstat(r).st_ino})
    for line in sys.stdin:
        command, _, argument = line.strip().partition(" ")
        if command == "read":
            with open(argument, "rb", buffering=0) as f:
                os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
                calls = 0
                while f.read(16384):
                    calls += 1
            answer({"calls": calls + 1})  # the last read returns 0 bytes
        elif command == "block":
            blocked = threading.Thread(target=lambda: got.append(len(os.read(r, 4096))))
            blocked.start()
            answer({"tid": blocked.native_id})
        elif command == "feed":
            os.write(w, b"x" * int(argument))
            blocked.join()
            answer({"read": got.pop()})
    """
)


@pytest.fixture(scope="module")
def traces(sandbox, demo_tables, tmp_path_factory) -> dict[str, Path]:
    """The wide query then the narrow one through one kept capture, then the narrow one alone."""
    directory = tmp_path_factory.mktemp("kept")
    settings = resolve_settings(sandbox.host, sandbox.native_port)
    spec = demo_tables.spec

    def options(query: str, name: str) -> RunOptions:
        return RunOptions(query=query, connection=settings, out=directory / f"{name}.trace", repeat=2)

    with KeptCapture() as capture:
        wide = capture.run(options(spec.wide_query, "wide"))
        narrow = capture.run(options(spec.narrow_query, "narrow"))
    return {"wide": wide, "narrow": narrow, "fresh": run(options(spec.narrow_query, "fresh"))}


def measured_reads(path: Path, data_files: list[Path]) -> list[tuple[int, int]]:
    """(bytes read, calls logged) of `data_files` in each measured execution's window, in order."""
    paths = [str(file) for file in data_files]
    marks = ",".join("?" * len(paths))
    with Trace(path) as trace:
        return [
            (row[0], row[1])
            for row in trace.rows(
                "SELECT"
                f" (SELECT coalesce(sum(read_bytes), 0) FROM file_io JOIN files USING (file_id)"
                f"  WHERE file_io.window_id = x.window_id AND path IN ({marks})),"
                f" (SELECT count(*) FROM events JOIN files USING (file_id) JOIN windows AS w"
                f"  ON w.window_id = x.window_id AND events.ts_ns >= w.start_ns AND events.ts_ns < w.end_ns"
                f"  WHERE path IN ({marks}))"
                " FROM executions AS x WHERE kind = 'measured' ORDER BY execution",
                (*paths, *paths),
            )
        ]


def all_reads(path: Path, data_files: list[Path]) -> tuple[int, int]:
    """(bytes read, calls logged) of `data_files` in every window of the trace."""
    paths = [str(file) for file in data_files]
    marks = ",".join("?" * len(paths))
    with Trace(path) as trace:
        ((read,),) = trace.rows(
            f"SELECT coalesce(sum(read_bytes), 0) FROM file_io JOIN files USING (file_id) WHERE path IN ({marks})",
            paths,
        )
        ((calls,),) = trace.rows(
            f"SELECT count(*) FROM events JOIN files USING (file_id) WHERE path IN ({marks})", paths
        )
    return read, calls


def span(path: Path) -> tuple[int, int, int]:
    """(first window's start, last window's end, earliest logged call) on the capture's clock."""
    with Trace(path) as trace:
        ((start, end),) = trace.rows("SELECT min(start_ns), max(end_ns) FROM windows")
        ((first_call,),) = trace.rows("SELECT min(ts_ns) FROM events")
    return start, end, first_call


def test_the_first_run_reads_the_wide_table(traces, demo_tables):
    reads = measured_reads(traces["wide"], demo_tables.wide.data_files)
    assert len(reads) == 2
    for read, calls in reads:  # the demo's full-row read: a third of the table at least (test_end_to_end's bound)
        assert read >= 0.3 * demo_tables.wide.data_bytes and calls > 0


def test_the_second_run_holds_nothing_of_the_first(traces, demo_tables):
    assert all_reads(traces["narrow"], demo_tables.wide.data_files) == (0, 0)
    assert all_reads(traces["fresh"], demo_tables.wide.data_files) == (0, 0)
    wide_start, wide_end, _ = span(traces["wide"])
    narrow_start, narrow_end, narrow_first_call = span(traces["narrow"])
    assert wide_start < wide_end < narrow_start <= narrow_first_call <= narrow_end


def test_the_second_run_reads_what_a_capture_of_its_own_reads(traces, demo_tables):
    kept = measured_reads(traces["narrow"], demo_tables.narrow.data_files)
    fresh = measured_reads(traces["fresh"], demo_tables.narrow.data_files)
    assert kept == fresh
    assert all(read > 0 for read, _ in kept)
    # Nothing comes back that was not read: each execution's reads cover the payload (200 values of c0).
    spec = demo_tables.spec
    assert all(read >= spec.rows * spec.first_column_bytes for read, _ in kept)


def test_each_trace_counts_its_own_losses(traces):
    for path in traces.values():
        with Trace(path) as trace:
            assert trace.meta["lost_events"] == 0 and trace.meta["unstreamed_events"] == 0
            assert trace.meta["aggregate_overflows"] == 0


class Reader:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", READER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.pipe = f"pipe:[{self.answer()['pipe']}]"

    def answer(self) -> dict:
        assert self.process.stdout is not None
        return json.loads(self.process.stdout.readline())

    def ask(self, command: str) -> dict:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.answer()

    def block(self) -> None:
        """A thread of the reader's in a read of its pipe (read(2), number 0) when this returns."""
        tid = self.ask("block")["tid"]
        syscall = Path(f"/proc/{self.process.pid}/task/{tid}/syscall")
        while syscall.read_text().split()[0] != "0":
            time.sleep(0.001)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=10)


def captured(capture: BccCapture, path: Path, work) -> Trace:
    """The capture of `work(reader)` in one execution window, written to `path` and opened."""
    with capture:
        capture.begin_window("execution", execution=1)
        work()
        capture.begin_window("between")
    writer = TraceWriter(path)
    result = capture.stop()
    assert result is not None
    result.write(writer)
    return Trace(writer.finish())


def file_figures(trace: Trace, path: str) -> tuple[int, int, int, int]:
    """(read calls, bytes read, pages the page cache filled, pages covered) of `path` in the execution's
    window; zeros when the trace has no row of it."""
    rows = trace.rows(
        "SELECT read_calls, read_bytes, coalesce(cache_miss_pages, 0),"
        " (SELECT coalesce(sum(page_count), 0) FROM coverage c WHERE c.window_id = f.window_id"
        "  AND c.file_id = f.file_id AND source = 'syscall')"
        " FROM file_io f JOIN files USING (file_id) WHERE window_id = 2 AND path = ?",
        (path,),
    )
    return tuple(rows[0]) if rows else (0, 0, 0, 0)


def files_read(trace: Trace) -> tuple[int, int]:
    """(bytes read, pages the page cache filled) of every file in the execution's window, named or
    not (the reader reads files only when told)."""
    ((read, filled),) = trace.rows(
        "SELECT coalesce(sum(read_bytes), 0), coalesce(sum(cache_miss_pages), 0) FROM file_io JOIN files"
        " USING (file_id) WHERE window_id = 2 AND kind NOT IN ('pipe', 'socket')"
    )
    return read, filled


def file_reads_timed(trace: Trace) -> int:
    """The read calls on files in the latency spectrogram (the reader reads files only when told)."""
    ((calls,),) = trace.rows("SELECT coalesce(sum(count), 0) FROM latency WHERE syscall = 'read' AND target = 'file'")
    return calls


@pytest.fixture(scope="module")
def helper_traces(tmp_path_factory):
    """The reader captured three times: the first file, then the second (a read of the pipe entered
    before, returning in it, then one entered and returning in it) through one kept program, then the
    second file again through a program of its own. (traces, the reader's answers, the files.)"""
    directory = tmp_path_factory.mktemp("kept-program")
    first, second = directory / "first", directory / "second"
    for path, pages in ((first, 96), (second, 40)):
        with open(path, "wb") as file:
            file.write(os.urandom(pages * PAGE))
            os.fsync(file.fileno())  # written back: a dirty page would stay cached past the reader's drop
    reader = Reader()
    answers: dict[str, dict] = {}
    options = ProgramOptions(stream_limit=1)  # every read but the first goes to the kernel's maps
    try:
        with KeptProgram(options) as kept:
            pid = reader.process.pid

            def first_capture() -> None:
                answers["first"] = reader.ask(f"read {first}")
                reader.block()  # still in the read when this capture stops

            def second_capture(name: str) -> None:
                answers[f"{name} stale"] = reader.ask("feed 7")
                reader.block()
                answers[f"{name} own"] = reader.ask("feed 11")
                answers[name] = reader.ask(f"read {second}")

            traces = {
                "first": captured(BccCapture(pid, stream_limit=1, build=kept), directory / "1.trace", first_capture),
                "kept": captured(
                    BccCapture(pid, stream_limit=1, build=kept), directory / "2.trace", lambda: second_capture("kept")
                ),
            }
        reader.block()  # as before the kept program's second capture
        traces["fresh"] = captured(
            BccCapture(pid, stream_limit=options.stream_limit), directory / "3.trace", lambda: second_capture("fresh")
        )
    finally:
        reader.close()
    yield traces, answers, reader.pipe, (str(first), str(second))
    for trace in traces.values():
        trace.close()


def test_a_kept_program_counts_the_first_capture_exactly(helper_traces):
    traces, answers, _, (first, _) = helper_traces
    assert file_figures(traces["first"], first) == (answers["first"]["calls"], 96 * PAGE, 96, 96)


def test_a_kept_programs_second_capture_holds_nothing_of_the_first(helper_traces):
    traces, answers, pipe, (first, second) = helper_traces
    kept = traces["kept"]
    assert file_figures(kept, first) == (0, 0, 0, 0)
    assert files_read(kept) == (40 * PAGE, 40)
    assert file_figures(kept, second) == (answers["kept"]["calls"], 40 * PAGE, 40, 40)
    # The pipe's read entered during the first capture returned 7 bytes during the second: not its call.
    assert (answers["kept stale"]["read"], answers["kept own"]["read"]) == (7, 11)
    assert file_figures(kept, pipe)[:2] == (1, 11)
    for trace in traces.values():
        assert trace.meta["lost_events"] == 0 and trace.meta["aggregate_overflows"] == 0


def test_a_kept_programs_second_capture_equals_a_fresh_ones(helper_traces):
    traces, answers, pipe, (_, second) = helper_traces
    assert answers["fresh"]["calls"] == answers["kept"]["calls"]
    for figures in (lambda trace: file_figures(trace, second), lambda trace: file_figures(trace, pipe), files_read):
        assert figures(traces["fresh"]) == figures(traces["kept"])
    # Every read of a file is timed (the one logged too): the second file's, none of the first's.
    assert file_reads_timed(traces["kept"]) == file_reads_timed(traces["fresh"]) == answers["kept"]["calls"]
