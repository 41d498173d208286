"""casstrace run: execute a CQL query on this node under the probes and write a trace."""

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from casstrace.analyses.verdict_rule import DEFAULT_RULE, VerdictRule
from casstrace.cli.options import (
    CQL_PAGE_BYTES,
    EXECUTIONS,
    PAGE_SIZE,
    PID,
    PORT,
    SPECTROGRAMS,
    WARMUPS,
    Seconds,
    container_option,
    read_statements,
    spectrogram_option,
    verdict_options,
    watched_jvm,
)
from casstrace.cli.output import force_option
from casstrace.errors import CasstraceError
from casstrace.node.consistency import CONSISTENCY_LEVELS
from casstrace.node.paging import DEFAULT_CQL_PAGE_BYTES, MAX_PAGE_ROWS
from casstrace.outputs import check_output
from casstrace.phases import Phases
from casstrace.probes.backends import BACKENDS, DEFAULT_BACKEND, started
from casstrace.terminal import printable

if TYPE_CHECKING:
    from casstrace.analyses.model import Analysis


@click.command("run")
@click.argument("query", required=False)
@click.option(
    "--file",
    "query_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Read the CQL statement from this file instead of the command line.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Trace file to write (default: a dated name under the casstrace data directory).",
)
@click.option("--keyspace", "-k", help="Keyspace for unqualified table names.")
@click.option("--host", help="Node to query (default CQLSH_HOST, cqlshrc, else 127.0.0.1: the sandbox).")
@click.option("--port", type=PORT, help="Native transport port (default CQLSH_PORT, cqlshrc, else 9042).")
@click.option(
    "--username",
    "-u",
    help="Role name. The password comes from CASSTRACE_PASSWORD or the cqlshrc/credentials "
    "files, never from the command line.",
)
@click.option(
    "--ssl", "ssl_enabled", is_flag=True, help="Connect with TLS (certificates as cqlsh: SSL_CERTFILE, cqlshrc [ssl])."
)
@click.option(
    "--cqlshrc",
    type=click.Path(dir_okay=False, path_type=Path),
    help="cqlsh configuration file (default ~/.cassandra/cqlshrc).",
)
@click.option("--connect-timeout", type=Seconds(), default=5.0, show_default=True, help="Seconds to wait for the node.")
@click.option(
    "--request-timeout", type=Seconds(), default=60.0, show_default=True, help="Seconds to wait for each page."
)
@click.option("--pid", type=PID, help="PID of the Cassandra JVM (default: found by its CassandraDaemon command line).")
@container_option
@click.option("--repeat", type=EXECUTIONS, default=5, show_default=True, help="Measured executions.")
@click.option(
    "--warmup",
    type=WARMUPS,
    default=1,
    show_default=True,
    help="Executions before the measured ones (captured, kept apart).",
)
@click.option(
    "--cold",
    is_flag=True,
    help="Before each execution, push the queried table's pages out of the JVM's "
    "memory maps (process_madvise MADV_PAGEOUT, Linux 5.10+) and drop the page cache (root).",
)
@click.option(
    "--consistency", default="ONE", show_default=True, type=click.Choice(CONSISTENCY_LEVELS, case_sensitive=False)
)
@click.option(
    "--page-size",
    type=PAGE_SIZE,
    default=None,
    show_default="chosen for --page-bytes",
    help="Rows per page (0: no paging). Every page is fetched. Not given: casstrace samples the "
    "query's first rows before the capture and pages so that a page stays within --page-bytes "
    f"(at most {MAX_PAGE_ROWS:,} rows).",
)
@click.option(
    "--page-bytes",
    type=CQL_PAGE_BYTES,
    default=DEFAULT_CQL_PAGE_BYTES,
    show_default=True,
    metavar="BYTES",
    help="The byte budget of a page when casstrace chooses the page size: a page of 190 MB can take "
    "a node with a small heap down.",
)
@click.option(
    "--allow-large-rows",
    is_flag=True,
    help="Run the query even when its table's SSTables say it may fetch a row larger than the node's "
    "heap pages safely (1/16 of it); casstrace refuses such a query otherwise.",
)
@click.option(
    "--backend",
    type=click.Choice(list(BACKENDS)),
    default=DEFAULT_BACKEND,
    show_default=True,
    help="What captures the JVM's I/O.",
)
@spectrogram_option()
@click.option(
    "--profile",
    is_flag=True,
    help="Load async-profiler into the JVM for the measured executions: the Java stack of every read "
    "(bytes flame graph) and wall-clock samples of the serving threads (CPU flame graph).",
)
@click.option(
    "--ssh",
    "ssh",
    is_flag=True,
    help="Capture the query's nodes whose JVM is not on this machine over ssh (the destination is the "
    "node's address; your ~/.ssh/config, keys and agent apply). casstrace must be installed there.",
)
@click.option(
    "--hosts",
    "hosts",
    multiple=True,
    metavar="ADDRESS=DESTINATION,...",
    help="Capture these nodes over `ssh DESTINATION` (even when their JVM is on this machine).",
)
@click.option(
    "--ssh-config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="ssh configuration file for --ssh/--hosts (ssh -F).",
)
@click.option(
    "--remote-casstrace",
    default="casstrace",
    show_default=True,
    help="The command that runs casstrace on the nodes reached over ssh (e.g. 'sudo -n casstrace').",
)
@click.option(
    "--keep-literals",
    is_flag=True,
    help="Store and report the statement with its literals (the values of its WHERE clause). Without it "
    "the trace and its reports hold the statement with each literal as ?, as `casstrace watch` does; the "
    "node runs it as given either way.",
)
@click.option("--no-html", is_flag=True, help="Do not write the HTML report beside the trace.")
@verdict_options
@force_option
@click.option("--timings", is_flag=True, help="Print where the wall time went, phase by phase (to stderr).")
def command(
    query: str | None,
    query_file: Path | None,
    out: Path | None,
    keyspace: str | None,
    host: str | None,
    port: int | None,
    username: str | None,
    ssl_enabled: bool,
    cqlshrc: Path | None,
    connect_timeout: float,
    request_timeout: float,
    pid: int | None,
    container: str | None,
    repeat: int,
    warmup: int,
    cold: bool,
    consistency: str,
    page_size: int | None,
    page_bytes: int,
    allow_large_rows: bool,
    backend: str,
    spectrogram: str,
    profile: bool,
    ssh: bool,
    hosts: tuple[str, ...],
    ssh_config: Path | None,
    remote_casstrace: str,
    keep_literals: bool,
    no_html: bool,
    threshold: float,
    min_excess: int,
    force: bool,
    timings: bool,
) -> None:
    """Run QUERY (a CQL statement) on this node while probes watch the Cassandra JVM, and write a trace.

    Every replica of the queried partition whose JVM runs on this machine is captured too, on the same
    windows (and those elsewhere with --ssh or --hosts)."""
    phases = Phases()
    text = statement_text(query, query_file)
    pid = watched_jvm(pid, container)  # before any thread starts: see node.namespaces
    # The probes compile on another core from here on; this core loads the driver and the rest of
    # the run meanwhile, and connects.
    with started(backend) as started_backend:
        from casstrace.node.connection import resolve_settings
        from casstrace.orchestration.experiment import run_query
        from casstrace.orchestration.runner import RunOptions
        from casstrace.orchestration.targets import RemoteSettings, parse_hosts

        prepare_outputs(out, not no_html, force, [path for path in (query_file, ssh_config) if path], cqlshrc)
        options = RunOptions(
            query=text,
            connection=resolve_settings(
                host, port, username, ssl_enabled, cqlshrc, connect_timeout, request_timeout, node_pid=pid
            ),
            keyspace=keyspace,
            pid=pid,
            repeat=repeat,
            warmup=warmup,
            cold=cold,
            consistency=consistency.upper(),
            page_size=page_size,
            page_bytes=page_bytes,
            allow_large_rows=allow_large_rows,
            backend=backend,
            all_syscalls=spectrogram != SPECTROGRAMS[0],
            out=out,
            profile=profile,
            force=force,
            keep_literals=keep_literals,
            targets=RemoteSettings(ssh, parse_hosts(hosts), ssh_config, remote_casstrace),
        )
        rule = VerdictRule(threshold, min_excess)
        with reporting_interruptions(html=not no_html, force=force, rule=rule):
            path = run_query(options, phases, started_backend)
    with phases("analyse, report"):
        report(path, html=not no_html, force=force, rule=rule)
    if timings:
        click.echo(phases.summary(), err=True)


def statement_text(query: str | None, query_file: Path | None) -> str:
    """The statement to run, from the command line or --file (one of them)."""
    if (query is None) == (query_file is None):
        raise CasstraceError(
            "give the query either as an argument or with --file, not both or neither",
            'casstrace run "SELECT ..." or casstrace run --file query.cql',
        )
    return read_statements(query_file) if query_file is not None else query or ""


def prepare_outputs(out: Path | None, html: bool, force: bool, inputs: list[Path], cqlshrc: Path | None) -> None:
    """--out and the HTML report beside it, refused before anything connects (the default names are
    always new; `inputs`: the files the run reads, besides the cqlsh configuration files); the HTML
    renderer loaded now, while the probes compile, not after the run."""
    from casstrace.node.connection import configuration_files
    from casstrace.reports import beside_trace, report_format

    if out is not None:
        inputs = inputs + configuration_files(cqlshrc)
        check_output(out, force, inputs)
        if html:
            check_output(beside_trace(out, "html"), force, inputs)
    if html:
        report_format("html")  # loads plotly


def report(
    path: Path, html: bool, force: bool = False, after_signal: bool = False, rule: VerdictRule = DEFAULT_RULE
) -> None:
    """The verdict in the terminal, and the full HTML report beside the trace. A signal meanwhile
    waits until both are written (and is raised then). Exits non-zero when an execution failed,
    unless a signal ended the run (its exit says so; the execution it cut short is no failure)."""
    from casstrace.analyses import analyse
    from casstrace.interrupts import INTERRUPTS, Interrupted
    from casstrace.reports import ReportOptions, beside_trace, document, render, write

    try:
        with INTERRUPTS.deferred():
            analysis = analyse(path, rule)
            report = document(analysis)  # once, for both formats
            click.echo(render(report, "text", ReportOptions(brief=True, color=sys.stdout.isatty())), nl=False)
            click.echo(printable(f"trace: {path}"))
            if html:
                written = write(report, "html", beside_trace(path, "html"), force=force, inputs=[path])
                click.echo(printable(f"report: {written}"))
    except Interrupted as interrupted:
        if interrupted.trace is None:  # the signal came once the trace was written: it is this one
            interrupted.trace, interrupted.trace_complete = path, analysis.complete
        raise
    if not after_signal:
        require_success(analysis, path)


@contextmanager
def reporting_interruptions(html: bool, force: bool = False, rule: VerdictRule = DEFAULT_RULE) -> Iterator[None]:
    """A run cut short by a signal, or by its node going away, still reports the trace it kept (cli.main
    says where it is, and why the run ended)."""
    from casstrace.interrupts import Interrupted
    from casstrace.node.gone import NodeWentAway

    try:
        yield
    except Interrupted as interrupted:
        if interrupted.trace is not None:
            report(interrupted.trace, html, force, after_signal=True, rule=rule)
        raise
    except NodeWentAway as went_away:  # its failed execution is the node's end, not the query's
        report(went_away.trace, html, force, after_signal=True, rule=rule)
        raise


def require_success(analysis: "Analysis", path: Path) -> None:
    """Exit non-zero, with the node's own error, when an execution failed: the run stops at the
    first failure, so the measured executions it has are fewer than asked, or none."""
    failed = next((execution for execution in analysis.executions if execution.error), None)
    if failed is None:
        return
    succeeded = sum(execution.kind == "measured" and execution.error is None for execution in analysis.executions)
    what = (
        f"every execution failed ({failed.kind} execution {failed.execution})"
        if not succeeded
        else f"execution {failed.execution} ({failed.kind}) failed after {succeeded} measured one(s) succeeded: "
        "the figures above cover only those"
    )
    raise CasstraceError(
        f"{what}: {failed.error}; the trace is kept at {path}",
        "check the node and the query's --consistency (the node's error says why)",
    )
