"""casstrace watch: which statements a live node's reads go to, ranked by bytes, without running any."""

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from casstrace.cli.options import (
    PID,
    PORT,
    FiniteFloat,
    IntRange,
    Seconds,
    container_option,
    verdict_options,
    watched_jvm,
)
from casstrace.cli.output import deliver, report_options
from casstrace.errors import CasstraceError
from casstrace.interrupts import INTERRUPTS, Interrupted
from casstrace.outputs import check_output, check_series, in_series, numbered
from casstrace.terminal import printable

if TYPE_CHECKING:
    from casstrace.analyses.watch import RunningFigures, Watch
    from casstrace.node.metrics_endpoint import MetricsEndpoint
    from casstrace.orchestration.watcher import LiveSnapshot, WatchOptions
    from casstrace.reports.prometheus import Exposition

DEFAULT_TOP = 10


@click.command("watch")
@click.option("--host", help="Node to watch (default CQLSH_HOST, cqlshrc, else 127.0.0.1).")
@click.option("--port", type=PORT, help="Native transport port (default CQLSH_PORT, cqlshrc, else 9042).")
@click.option("--username", "-u", help="Role name (password from CASSTRACE_PASSWORD or cqlshrc/credentials).")
@click.option("--ssl", "ssl_enabled", is_flag=True, help="Connect with TLS (certificates as cqlsh).")
@click.option("--cqlshrc", type=click.Path(dir_okay=False, path_type=Path), help="cqlsh configuration file.")
@click.option("--pid", type=PID, help="PID of the Cassandra JVM (default: the one listening on --port).")
@container_option
@click.option("--duration", type=Seconds(), help="Seconds to watch (default: until Ctrl-C).")
@click.option(
    "--interval",
    type=Seconds(),
    help="Cut the watch into intervals of this many seconds (at least 10): a trace and a report each, "
    "NAME-0001.trace ... beside --out's NAME, and the whole watch's summary at the end. Memory stays "
    "that of one interval: for watches of hours.",
)
@click.option(
    "--sample",
    type=FiniteFloat(min=0, max=1, min_open=True),
    default=0.01,
    show_default=True,
    help="Share of requests the node traces meanwhile (nodetool settraceprobability; restored after).",
)
@click.option(
    "--top",
    type=IntRange(min=1),
    default=DEFAULT_TOP,
    show_default=True,
    help="Statements in the live table and detailed in the report.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Trace file to write (default: a dated name under the casstrace data directory).",
)
@click.option(
    "--nodetool",
    "nodetool_command",
    help="The node's nodetool command (default: the node's own classes on its JMX port).",
)
@click.option(
    "--profile",
    is_flag=True,
    help="Load async-profiler into the JVM while watching: the Java stack of every read of a Data file "
    "(bytes flame graph) and wall-clock samples of the threads that read (CPU flame graph).",
)
@click.option(
    "--metrics-port",
    type=PORT,
    help="Serve the figures so far for Prometheus at http://ADDRESS:PORT/metrics while watching.",
)
@click.option(
    "--metrics-address",
    default="127.0.0.1",
    show_default=True,
    help="Address the metrics are served on: IPv4 or IPv6 (::1; 0.0.0.0 or :: for every interface).",
)
@click.option(
    "--restore",
    is_flag=True,
    help="Only put back what a casstrace killed on this node left changed (trace probability, "
    "a running async-profiler), then exit. Any watch or run does it first anyway.",
)
@verdict_options
@report_options(html_default="TRACE.html beside the trace")
def command(
    host: str | None,
    port: int | None,
    username: str | None,
    ssl_enabled: bool,
    cqlshrc: Path | None,
    pid: int | None,
    container: str | None,
    duration: float | None,
    interval: float | None,
    sample: float,
    top: int,
    out: Path | None,
    nodetool_command: str | None,
    profile: bool,
    metrics_port: int | None,
    metrics_address: str,
    restore: bool,
    threshold: float,
    min_excess: int,
    format_: str,
    output: Path | None,
    force: bool,
    color: bool | None,
) -> None:
    """Watch the node's JVM and rank the statements it serves by the storage bytes they move.

    A read moves the SSTable bytes it reads, a write the commit-log bytes it appends.

    The probes count every thread's file bytes; Cassandra traces a share of the requests (--sample),
    which names each statement's threads and times; the join gives each statement its bytes, rows
    and latency, with causes, and says what compaction, flushes and unsampled requests read."""
    from casstrace.analyses.verdict_rule import VerdictRule
    from casstrace.analyses.watch import RunningFigures
    from casstrace.node.connection import resolve_settings
    from casstrace.orchestration.watcher import WatchOptions, restore_left

    if restore:
        pid = watched_jvm(pid, container)
        settings = resolve_settings(host, port, username, ssl_enabled, cqlshrc, node_pid=pid)
        restore_left(WatchOptions(connection=settings, pid=pid, nodetool=nodetool_command))  # says what it did
        return
    trace_path, summary_output = _checked_outputs(cqlshrc, out, output, format_, force, series=interval is not None)
    metrics = _served_metrics(metrics_port, metrics_address, top)
    # Before the driver starts a thread (see node.namespaces); the metrics server's opens no socket to the node.
    pid = watched_jvm(pid, container)
    settings = resolve_settings(host, port, username, ssl_enabled, cqlshrc, node_pid=pid)
    table = LiveTable(top) if sys.stderr.isatty() else None
    figures = RunningFigures(VerdictRule(threshold, min_excess))
    intervals = IntervalReports(format_, top, force, figures) if interval is not None else None
    report = SummaryReport(format_, top, force, color, summary_output, figures, intervals)
    options = WatchOptions(
        connection=settings,
        pid=pid,
        duration_s=duration,
        probability=sample,
        top=top,
        out=trace_path,
        force=force,
        nodetool=nodetool_command,
        profile=profile,
        interval_s=interval,
    )
    live = Live(table, metrics, figures) if table is not None or metrics is not None else None
    watching = _watching(f"{settings.host}:{settings.port}", duration, interval, sample, metrics)
    _watch_and_report(options, live, watching, intervals, report, metrics)


def _watch_and_report(
    options: "WatchOptions",
    live: "Live | None",
    watching: str,
    intervals: "IntervalReports | None",
    report: "SummaryReport",
    metrics: "tuple[MetricsEndpoint, Exposition] | None",
) -> None:
    """Watches, then reports what was captured: also of a --duration watch cut short, or of a node gone
    away, before saying why the watch ended. `watching`: the line said once the probes are attached."""
    from casstrace.node.gone import NodeWentAway
    from casstrace.orchestration.experiment import watch_node
    from casstrace.orchestration.watcher import WatchCallbacks

    try:
        path = watch_node(
            options, WatchCallbacks(live, lambda: click.echo(watching, err=True), intervals or (lambda path: None))
        )
    except Interrupted as interrupted:  # a --duration watch cut short (an open-ended one ends on Ctrl-C)
        if interrupted.trace is not None:
            report(interrupted.trace)
        raise  # cli.main says where the trace is, and exits 128 + the signal
    except NodeWentAway as went_away:  # what was captured is reported, then why the watch ended
        report(went_away.trace)
        raise
    finally:
        if metrics is not None:
            metrics[0].close()
    report(path)


def _checked_outputs(
    cqlshrc: Path | None, out: Path | None, output: Path | None, format_: str, force: bool, *, series: bool
) -> tuple[Path, Path | None]:
    """The trace's path and the report's (None: standard output), refused before anything attaches; the
    default names are always new. `series`: --interval, every interval's trace and report, and a summary
    that is none of them."""
    from casstrace.node.connection import configuration_files
    from casstrace.orchestration.watcher import default_trace_path
    from casstrace.reports import beside_trace, default_output

    inputs = configuration_files(cqlshrc)
    trace_path = out or default_trace_path()
    if out is not None:
        check_output(out, force, inputs)
    summary_output = output or default_output(format_, beside_trace(trace_path, format_))  # None: stdout
    if summary_output is not None:
        check_output(summary_output, force, [*inputs, *([out] if out else [])])
    if series:
        check_series(trace_path, force)
        if output is not None and in_series(trace_path, output):
            raise CasstraceError(
                f"refusing to write the summary to {output}: this watch writes its intervals' traces and "
                f"reports under that name ({numbered(trace_path, 1).name}, ...), --force or not",
                "give --output another name",
            )
    return trace_path, summary_output


def _watching(
    node: str,
    duration: float | None,
    interval: float | None,
    sample: float,
    metrics: "tuple[MetricsEndpoint, Exposition] | None",
) -> str:
    """The line that says the watch has started, and what it does."""
    return (
        f"casstrace: watching {node}"
        + (f" for {duration:g} s" if duration else " until Ctrl-C")
        + (f", a trace and a report every {interval:g} s" if interval else "")
        + f": probes attached, the node traces {sample:g} of its requests"
        + (f"; metrics served at {metrics[0].describe()}" if metrics is not None else "")
    )


def _served_metrics(
    metrics_port: int | None, metrics_address: str, top: int
) -> "tuple[MetricsEndpoint, Exposition] | None":
    """--metrics-port's endpoint, bound now: a port in use fails before anything changes on the node."""
    if metrics_port is None:
        return None
    from casstrace.node.metrics_endpoint import MetricsEndpoint
    from casstrace.reports.prometheus import CONTENT_TYPE, Exposition

    # Bound in this machine's network, where Prometheus scrapes it, before casstrace joins a container's.
    return MetricsEndpoint(metrics_port, metrics_address, CONTENT_TYPE).start(), Exposition(top)


class SummaryReport:
    """The watch's report when it ends (or is cut short, or the node goes away): of its trace, or with
    --interval the last interval's report then the whole watch's summary."""

    def __init__(
        self,
        format_: str,
        top: int,
        force: bool,
        color: bool | None,
        output: Path | None,
        figures: "RunningFigures",
        intervals: "IntervalReports | None",
    ):
        self.format = format_
        self.top = top
        self.force = force
        self.color = color
        self.output = output  # None: standard output
        self.figures = figures
        self.intervals = intervals

    def __call__(self, path: Path) -> None:
        from casstrace.analyses.watch import analyse_watch
        from casstrace.reports.watch import document

        with INTERRUPTS.deferred():  # a signal meanwhile waits until the report is written
            if self.intervals is None:
                result, inputs_read = analyse_watch(path, self.figures.rule), [path]
            else:  # the last interval's report, then the whole watch's
                self.intervals(path)
                result, inputs_read = self.intervals.figures.summary(), self.intervals.figures.traces
            deliver(
                document(result, self.top),
                self.format,
                self.output,
                self.color,
                [f"{len(result.statements)} statements sampled; trace: {result.trace_path}"],
                self.force,
                inputs=inputs_read,
            )
            click.echo(printable(f"trace: {result.trace_path}"), err=True)


class Live:
    """Each refresh of a watch: the figures so far summarised once, for the terminal's table and the
    metrics endpoint. With --interval, the watcher's figures are the current interval's: the
    intervals done (in `figures`) are added to them."""

    def __init__(
        self,
        table: "LiveTable | None",
        metrics: "tuple[MetricsEndpoint, Exposition] | None",
        figures: "RunningFigures",
    ):
        self.table = table
        self.metrics = metrics
        self.figures = figures

    def __call__(self, snapshot: "LiveSnapshot") -> None:
        from casstrace.analyses.statement_writes import clients_read
        from casstrace.analyses.watch import WatchInputs, summarise_tally
        from casstrace.analyses.watch_tables import table_reads
        from casstrace.traces.addresses import ClientSockets, parse_address
        from casstrace.traces.queries import SessionThread, StatementSession, ThreadCpu, ThreadIO

        client_bytes = None  # no connection named yet: not 0 B
        if snapshot.sockets:
            ends = ((parse_address(local), parse_address(remote), read) for local, remote, read in snapshot.sockets)
            client_bytes = clients_read(ends, ClientSockets.of(snapshot.native_port), snapshot.casstrace_addresses)

        inputs = WatchInputs.from_rows(
            [StatementSession(**row) for row in snapshot.sessions],
            [SessionThread(**row) for row in snapshot.spans],
            [ThreadIO(**row) for row in snapshot.thread_io],
            snapshot.files,
            snapshot.thread_names,
            capture_start_ns=snapshot.capture_start_ns,
            slot_ns=snapshot.slot_ns,
            probability=snapshot.probability,
            duration_s=snapshot.elapsed_s,
            pauses=snapshot.pauses,
            client_bytes=client_bytes,
            thread_cpu=None if snapshot.thread_cpu is None else [ThreadCpu(**row) for row in snapshot.thread_cpu],
        )
        so_far = self.figures.so_far(inputs)
        if snapshot.received_bytes is not None:  # the amplification so far (the node's readings come at the end)
            so_far.meta = {**so_far.meta, "table_background": {"received_bytes": snapshot.received_bytes}}
        watched = summarise_tally(so_far, rule=self.figures.rule)
        if self.metrics is not None:
            endpoint, exposition = self.metrics
            endpoint.publish(exposition.page(watched, table_reads(so_far)))
        if self.table is not None:
            self.table(watched)


class IntervalReports:
    """`watch --interval`: each interval's report beside its trace, as its trace is written; the
    intervals' figures are counted in the watch's RunningFigures (analyses.watch), which the summary at
    the end and the live figures meanwhile read."""

    def __init__(self, format_: str, top: int, force: bool, figures: "RunningFigures"):
        self.format = format_
        self.top = top
        self.force = force
        self.figures = figures

    def __call__(self, path: Path) -> None:
        from casstrace.analyses.units import human_bytes
        from casstrace.analyses.watch import analyse_watch
        from casstrace.reports import ReportOptions, beside_trace, write
        from casstrace.reports.watch import document

        watched = analyse_watch(path, self.figures.rule)
        report = write(
            document(watched, self.top),
            self.format,
            beside_trace(path, self.format),
            ReportOptions(color=False),
            force=self.force,
            inputs=[path],
        )
        number = self.figures.add_interval(watched, path)
        click.echo(
            printable(
                f"casstrace: interval {number} ({watched.duration_s:.0f} s): {len(watched.statements)} statements "
                f"sampled, {human_bytes(watched.sstable_bytes)} of SSTable bytes; trace: {path}; report: {report}"
            ),
            err=True,
        )


class LiveTable:
    """The top statements so far, redrawn in place on the terminal (standard error)."""

    def __init__(self, top: int):
        self.top = top
        self.lines = 0

    def __call__(self, watch: "Watch") -> None:
        from casstrace.analyses.units import human_bytes

        rows = [
            f"casstrace watch: {watch.duration_s:.0f} s, {sum(s.sampled_executions for s in watch.statements)} "
            f"sampled requests; SSTable bytes so far: {human_bytes(watch.sstable_bytes)}",
            f"{'read/exec':>10} {'est. execs':>10} {'p50 ms':>8}  statement",
        ]
        for statement in watch.statements[: self.top]:
            p50 = f"{statement.latency_p50_s * 1000:.1f}" if statement.latency_p50_s is not None else "—"
            rows.append(
                f"{human_bytes(statement.sstable_read_bytes_per_execution):>10} "
                f"{statement.estimated_executions:>10,.0f} {p50:>8}  {printable(statement.statement)[:90]}"
            )
        erase = f"\x1b[{self.lines}F\x1b[J" if self.lines else ""
        sys.stderr.write(erase + "\n".join(rows) + "\n")
        sys.stderr.flush()
        self.lines = len(rows)
