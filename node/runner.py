"""`casstrace run`: execute a CQL query on this node under the probes and write the trace.

Order matters: everything that can fail because of the user's input (connection, query, keyspace,
finding the JVM) fails before a probe attaches or a trace file exists. Then each execution gets its
own capture window, so every byte the probes see is attributed to one execution or to the gaps
between them. The driver's query tracing makes the node write to system_traces, so it runs once
more after the measured executions, in a 'tracing' window of its own, and its system_traces
records are fetched after the capture stops.
"""

import itertools
import json
import re
import sys
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from casstrace.errors import CasstraceError
from casstrace.node import context
from casstrace.node.connection import ConnectionSettings, NodeSession, parse_address
from casstrace.node.jvm import find_cassandra
from casstrace.node.query import (MeasuringProtocolHandler, QueryResult, execute, execution_failure, prepare,
                                  query_traces)
from casstrace.node.statements import read_only_statement
from casstrace.paths import default_traces_dir
from casstrace.phases import Phases
from casstrace.probes.async_profiler import AsyncProfiler
from casstrace.probes.java_stacks import write_recording
from casstrace.probes.mapped_pages import MappedPagesCapture
from casstrace.traces import TraceWriter

BACKENDS = {
    "bcc": ("casstrace.probes.bcc_capture", "BccCapture"),
    "sysdig": ("casstrace.probes.sysdig_capture", "SysdigCapture"),
}


@dataclass
class RunOptions:
    query: str
    connection: ConnectionSettings
    keyspace: str | None = None
    pid: int | None = None
    repeat: int = 5
    warmup: int = 1
    cold: bool = False
    consistency: str = "ONE"
    page_size: int | None = 5000
    backend: str = "bcc"
    out: Path | None = None
    profile: bool = False
    force: bool = False        # replace an existing regular file at `out` (casstrace.outputs)


@dataclass
class Execution:
    execution: int
    kind: str                  # 'warmup' | 'measured' | 'tracing'
    window_id: int
    result: QueryResult | None = None
    error: str | None = None


INTERRUPTED = "interrupted (Ctrl-C)"


def warn(message: str) -> None:
    print(f"casstrace: warning: {message}", file=sys.stderr)


def capture_class(backend: str):
    module_name, class_name = BACKENDS[backend]
    try:
        module = __import__(module_name, fromlist=[class_name])
    except ImportError as error:
        raise CasstraceError(f"the {backend} capture backend is not available ({error})",
                             "install casstrace with its probes, or choose another --backend") from None
    return getattr(module, class_name)


def default_trace_path(query: str, now: datetime | None = None) -> Path:
    """A readable, sortable name: 20260122-165530-select-c0-from-streams.trace"""
    now = now or datetime.now()
    words = re.findall(r"[a-z0-9_]+", query.lower())[:6]
    slug = "-".join(words)[:60].strip("-") or "query"
    name = f"{now:%Y%m%d-%H%M%S}-{slug}"
    # Two runs of one query in the same second get two names (a trace is never written over).
    candidates = (f"{name}.trace" if number == 1 else f"{name}-{number}.trace" for number in itertools.count(1))
    return next(path for path in (default_traces_dir() / c for c in candidates) if not path.exists())


def run(options: RunOptions, phases: Phases | None = None) -> Path:
    """Run the query under the probes and return the path of the trace written.
    `phases` records where the wall time went (casstrace run --timings)."""
    phases = phases or Phases()
    query = read_only_statement(options.query)   # before anything connects
    if options.repeat < 1 or options.warmup < 0:
        raise CasstraceError("--repeat must be at least 1 and --warmup at least 0", "give --repeat N (N >= 1)")
    backend = capture_class(options.backend)  # fail on a missing backend before touching the node
    if options.profile and options.backend != "bcc":
        raise CasstraceError(f"--profile joins async-profiler's stacks with the bcc probes' log of each read; the "
                             f"{options.backend} backend keeps no such log on the same clock",
                             "use --profile with --backend bcc (the default)")

    with ExitStack() as stack:
        with phases("connect, prepare"):
            node = stack.enter_context(
                NodeSession(options.connection, options.keyspace, protocol_handler=MeasuringProtocolHandler))
            prepared = prepare(node.session, query)
        with phases("find JVM, read schema"):
            process = find_cassandra(options.pid, native_port=options.connection.port)
            cassandra = context.gather(node.session, process, prepared, query, options.keyspace)
        keyspace = options.keyspace or next((t["keyspace"] for t in cassandra["tables"]), None)
        cold = None
        if options.cold:
            # Fails here, before a probe attaches, when the mapped pages cannot be pushed out.
            # (Again before each execution, in its turn.)
            cold = Cold(process.pid, context.table_file_keys(process.pid, cassandra))
            cold.before_execution()

        profiler = None
        if options.profile:
            with phases("fetch profiler"):
                profiler = AsyncProfiler(process.pid, progress=lambda line: print(line, file=sys.stderr))
            stack.callback(profiler.cleanup)

        writer = TraceWriter(options.out or default_trace_path(query), force=options.force)
        try:
            capture = backend(process.pid, extra_dirs=tuple(cassandra["data_file_directories"]))
            mapped = MappedPagesCapture(process.pid, cassandra["data_file_directories"])
            executions, incomplete_reason = _execute_all(capture, mapped, cold, node, prepared, options, phases,
                                                         profiler)
            client_addresses = node.client_addresses()
        except BaseException:
            writer.discard()
            raise

        interrupted = incomplete_reason == INTERRUPTED
        with phases("write trace"):
            try:
                tracing = next((e for e in executions if e.kind == "tracing" and e.result), None)
                query_trace = []
                if tracing and not interrupted:
                    try:
                        query_trace = query_traces(tracing.result)
                    except KeyboardInterrupt:
                        interrupted, incomplete_reason = True, INTERRUPTED
                    except Exception as error:  # TraceUnavailable, a timeout: the capture is still worth keeping
                        warn(f"Cassandra's own query trace could not be read ({error}); the trace goes without it")
                capture.write(writer)
                mapped.write(writer)
                if cold is not None:
                    writer.set_meta(cold={"page_cache_dropped": True, "mapped_bytes_paged_out": cold.paged_out})
                writer.set_meta(
                    query=query,
                    keyspace=keyspace,
                    consistency=options.consistency,
                    page_size=options.page_size or 0,
                    node={"host": options.connection.host, "port": options.connection.port, "pid": process.pid},
                    cassandra=cassandra,
                    query_trace=query_trace,
                )
                _write_executions(writer, executions, client_addresses)
                if profiler is not None:
                    measured = [e.window_id for e in executions if e.kind == "measured"]
                    write_recording(writer, profiler, measured, warn)
                if capture.ended_early and not incomplete_reason:
                    incomplete_reason = f"the capture ended early: {capture.ended_early}"
            except BaseException:
                writer.discard()
                raise
            path = writer.finish(complete=not incomplete_reason, reason=incomplete_reason)
    if interrupted:
        warn(f"interrupted: the trace so far, marked incomplete, is at {path}")
        raise KeyboardInterrupt
    return path


@dataclass
class Cold:
    """--cold: the queried table's files to push out of the JVM and the page cache before each
    execution. Nothing to restore afterwards: the node reads the pages back as it needs them."""

    pid: int
    files: set[tuple[int, int]]
    paged_out: int = 0     # address space paged out before the last execution

    def before_execution(self) -> None:
        self.paged_out = context.make_cold(self.pid, self.files)


def _execute_all(capture, mapped: MappedPagesCapture, cold: Cold | None, node: NodeSession, prepared,
                 options: RunOptions, phases: Phases, profiler: "AsyncProfiler | None" = None):
    """Run warmups, measured executions and the tracing execution, each in its own window; the
    mapped pages each touched are measured around its window (outside it, so outside its timing).
    Returns (executions, why the run stopped early or None). A failed execution is recorded and
    ends the run; Ctrl-C ends it too (INTERRUPTED is returned, so that what was captured is kept).
    The profiler, when given, is active from just before the first measured execution to just
    after the last one, and stopped on every way out."""
    plan = ["warmup"] * options.warmup + ["measured"] * options.repeat + ["tracing"]
    labels = {"warmup": "warmup", "measured": "execution", "tracing": "tracing"}
    executions: list[Execution] = []
    stopped = None
    with phases("compile, attach probes"):
        capture.start()
    try:
        with phases("run the query"):
            try:
                for number, kind in enumerate(plan, start=1):
                    if capture.ended_early:
                        stopped = f"the capture ended early: {capture.ended_early}"
                        break
                    if profiler is not None:
                        if kind == "measured" and not profiler.recorded:
                            with phases("start profiler"):
                                profiler.start()
                        elif kind != "measured" and profiler.active:
                            with phases("stop profiler"):
                                profiler.stop_or_warn(warn)
                    if cold is not None:
                        try:
                            cold.before_execution()
                        except CasstraceError as error:
                            stopped = f"execution {number} could not be made cold: {error}"
                            break
                    mapped.before_window()
                    window_id = capture.begin_window(labels[kind], execution=number)
                    execution = Execution(number, kind, window_id)
                    executions.append(execution)
                    try:
                        execution.result = execute(node.session, prepared, options.consistency, options.page_size,
                                                   trace=(kind == "tracing"))
                    except Exception as error:
                        execution.error = execution_failure(error)
                    finally:
                        capture.begin_window("between")
                        mapped.after_window(window_id)
                    if execution.error:
                        stopped = f"execution {number} failed: {execution.error}"
                        break
            except KeyboardInterrupt:
                stopped = INTERRUPTED
                if executions and executions[-1].result is None:
                    executions[-1].error = "interrupted"
    finally:
        if profiler is not None and profiler.active:
            with phases("stop profiler"):
                profiler.stop_or_warn(warn)
        with phases("detach probes"):
            capture.stop()
    return executions, stopped


def _write_executions(writer: TraceWriter, executions: list[Execution], client_addresses) -> None:
    """executions rows, with the bytes the node wrote to this client's connections in each window."""
    measures = writer.db.execute("SELECT value FROM meta WHERE key = 'measures'").fetchone()
    wire_measured = measures is not None and bool(json.loads(measures[0]).get("wire"))
    client_sockets = {
        file_id
        for file_id, remote_addr in writer.db.execute("SELECT file_id, remote_addr FROM files WHERE kind = 'socket'")
        if parse_address(remote_addr) in client_addresses
    }
    for execution in executions:
        wire_bytes = client_file_id = None
        if wire_measured and client_sockets:
            written = {
                file_id: write_bytes
                for file_id, write_bytes in writer.db.execute(
                    "SELECT file_id, write_bytes FROM file_io WHERE window_id = ?"
                    f" AND file_id IN ({', '.join('?' * len(client_sockets))})",
                    (execution.window_id, *client_sockets),
                )
            }
            wire_bytes = sum(written.values())
            if written:
                client_file_id = max(written, key=written.get)
        result = execution.result
        writer.add_execution(
            execution=execution.execution,
            kind=execution.kind,
            window_id=execution.window_id,
            latency_s=result.latency_s if result else None,
            rows=result.rows if result else None,
            payload_bytes=result.payload_bytes if result else None,
            wire_bytes=wire_bytes,
            client_file_id=client_file_id,
            pages=result.pages if result else None,
            error=execution.error,
        )
