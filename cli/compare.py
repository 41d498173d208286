"""casstrace compare: two queries (or two stored traces) side by side, after checking they return the same data."""

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from casstrace.analyses.compare import DEFAULT_TOLERANCE, LATENCY_FLOOR_S
from casstrace.cli import run as run_cli
from casstrace.cli.options import FiniteFloat, verdict_options
from casstrace.cli.output import deliver, report_options
from casstrace.errors import CasstraceError
from casstrace.node.consistency import CONSISTENCY_LEVELS

if TYPE_CHECKING:
    from casstrace.analyses.compare import Comparison, PayloadCheck
    from casstrace.analyses.model import Analysis
    from casstrace.analyses.verdict_rule import VerdictRule
    from casstrace.node.connection import ConnectionSettings
    from casstrace.orchestration.experiment import Plan, RunRecord
    from casstrace.orchestration.runner import RunOptions
    from casstrace.orchestration.targets import Target
from casstrace.outputs import check_output
from casstrace.terminal import printable

# The options `compare --before/--after` shares with `casstrace run`, taken from it: same flags, defaults, help.
RUN_OPTIONS = (
    "keyspace",
    "host",
    "port",
    "username",
    "ssl_enabled",
    "cqlshrc",
    "connect_timeout",
    "request_timeout",
    "pid",
    "repeat",
    "warmup",
    "cold",
    "consistency",
    "page_size",
    "page_bytes",
    "allow_large_rows",
    "backend",
    "keep_literals",
)
# Those of them a side's run takes as given (the node's, its connection and --pid, make the plan's one
# target; the consistency is per side).
SIDE_OPTIONS = (
    "keyspace",
    "repeat",
    "warmup",
    "cold",
    "page_size",
    "page_bytes",
    "allow_large_rows",
    "backend",
    "keep_literals",
)
GATE_FAILED = 1  # exit status when --fail-if-worse or --max-amplification fails (errors exit 2)


@click.command("compare")
@click.argument("traces", nargs=-1, metavar="[TRACE_A TRACE_B]", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--before", help="First query (CQL): run under the probes like `casstrace run`.")
@click.option("--after", help="Second query (CQL), typically the refactored one; needs --before.")
@click.option(
    "--after-consistency",
    type=click.Choice(CONSISTENCY_LEVELS, case_sensitive=False),
    help="Consistency level of --after (e.g. --consistency ONE --after-consistency QUORUM, the same "
    "query twice: what the level costs in bytes).  [default: --consistency]",
)
@click.option(
    "--traces-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where --before/--after write their two traces (default: the casstrace data directory).",
)
@report_options(html_default="beside the second trace")
@verdict_options
@click.option(
    "--fail-if-worse",
    is_flag=True,
    help="Exit 1 when the second query is worse: per execution it reads more from its table's Data files "
    "than the first by more than --tolerance, or its median latency is higher by more than "
    f"--tolerance and by at least {LATENCY_FLOOR_S * 1000:g} ms.",
)
@click.option(
    "--tolerance",
    type=FiniteFloat(min=0),
    default=DEFAULT_TOLERANCE * 100,
    show_default=True,
    help="Percent by which the second query may read more or be slower before --fail-if-worse fails.",
)
@click.option(
    "--max-amplification",
    type=FiniteFloat(min=0),
    metavar="X",
    help="Exit 1 when the second query would be flagged at threshold X: it reads at least X times its "
    "necessary read, and --min-excess past it; or when that is undetermined.",
)
def command(
    traces: tuple[Path, ...],
    before: str | None,
    after: str | None,
    after_consistency: str | None,
    traces_dir: Path | None,
    format_: str,
    output: Path | None,
    force: bool,
    threshold: float,
    min_excess: int,
    fail_if_worse: bool,
    tolerance: float,
    max_amplification: float | None,
    color: bool | None,
    **run_options: Any,
) -> None:
    """Compare TRACE_A TRACE_B, or run --before CQL and --after CQL, side by side.

    First checks that both return the same payload, and refuses (exit 2) when they do not: live
    queries by row count and a digest of the returned values computed on the client (never
    stored), from one untraced execution of each before any probe runs; stored traces by the
    digest of their leaf values each kept (the same data in another shape too), else by row count
    and payload bytes only. Then shows, per execution, the
    latency (median, p99), the bytes read per file, the page-cache misses, the amplification and
    verdict of each, and the ratios second ÷ first.

    The options from --keyspace on are those of `casstrace run`, for --before/--after.

    Exit status: 0, or 1 when a gate asked for (--fail-if-worse, --max-amplification) fails, or 2
    on an error (including different data).
    """
    from casstrace.analyses.compare import compare
    from casstrace.analyses.verdict_rule import VerdictRule

    live = check_arguments(traces, before, after, output, force, run_options)
    if live:
        assert before is not None and after is not None  # check_arguments refused a missing one
        payload, paths = run_both(before, after, traces_dir, run_options, after_consistency)
        traces = tuple(paths)
        labels = ("before", "after")
    else:
        payload, labels = None, ("A", "B")
    first, second = analyse_both(traces, labels, VerdictRule(threshold, min_excess), live)
    comparison = compare(
        first,
        second,
        payload,
        labels,
        fail_if_worse=fail_if_worse,
        tolerance=tolerance / 100,
        max_amplification=max_amplification,
    )
    if comparison.payload.status == "different":
        raise refusal(comparison.payload.summary, live)
    report(comparison, format_, output, color, force, traces)
    if comparison.failed_gates:
        click.get_current_context().exit(GATE_FAILED)


def check_arguments(
    traces: tuple[Path, ...],
    before: str | None,
    after: str | None,
    output: Path | None,
    force: bool,
    run_options: dict[str, Any],
) -> bool:
    """Whether the two queries run live; refused unless two traces or both queries are given, and --output
    refused before anything runs (a refusal costs nothing)."""
    live = before is not None or after is not None
    if live == bool(traces) or (live and (before is None or after is None)) or (traces and len(traces) != 2):
        raise CasstraceError(
            "give either two traces or both --before and --after",
            'casstrace compare A.trace B.trace, or casstrace compare --before "SELECT ..." --after "SELECT ..."',
        )
    if output is not None:
        from casstrace.node.connection import configuration_files

        check_output(output, force, inputs=[*traces, *(configuration_files(run_options["cqlshrc"]) if live else [])])
    return live


def analyse_both(
    traces: tuple[Path, ...], labels: tuple[str, str], rule: "VerdictRule", live: bool
) -> "tuple[Analysis, Analysis]":
    """Both traces analysed; each must hold a query's measured executions, and a live run's must have
    succeeded (run_cli.require_success)."""
    from casstrace.analyses import analyse

    first, second = (analyse(path, rule) for path in traces)
    for analysis, path, label in zip((first, second), traces, labels):
        if not any(execution.kind == "measured" for execution in analysis.executions):
            raise CasstraceError(
                f"{path} ({label}) has no measured executions: it is a watch, capture or import trace, and a "
                "comparison is per execution of one query",
                "compare two traces of `casstrace run`, or give --before and --after",
            )
    if live:
        for analysis, path in zip((first, second), traces):
            run_cli.require_success(analysis, path)
    return first, second


def report(
    comparison: "Comparison",
    format_: str,
    output: Path | None,
    color: bool | None,
    force: bool,
    traces: tuple[Path, ...],
) -> None:
    """The comparison in `format_`, with its summary and each gate's outcome (default: beside the second trace)."""
    from casstrace.reports import default_output, report_format
    from casstrace.reports.comparison import document

    if output is None:
        output = default_output(format_, Path(traces[1]).with_suffix(f".compare{report_format(format_).suffix}"))
    deliver(
        document(comparison),
        format_,
        output,
        color,
        [comparison.summary]
        + [f"{'PASS' if gate.passed else 'FAIL'} {gate.option}: {gate.reason}" for gate in comparison.gates],
        force,
        inputs=traces,
    )


def refusal(difference: str, live: bool) -> CasstraceError:
    return CasstraceError(
        f"refusing to compare: the two {'queries' if live else 'traces'} do not return the same data. {difference}",
        "compare a query with its refactor returning the same rows and values (same partition, same column)"
        + (
            ""
            if live
            else "; `casstrace compare --before CQL --after CQL` checks the values live, in another shape too"
        ),
    )


def run_both(
    before: str, after: str, traces_dir: Path | None, run_options: dict[str, Any], after_consistency: str | None = None
) -> "tuple[PayloadCheck, list[Path]]":
    """Check that both queries return the same data (one execution each, no probes), then run each
    under the probes into its own trace, --after at `after_consistency` when given: a plan of two
    sides. Returns (the payload check, the two trace paths)."""
    from casstrace.node.statements import read_only_statement
    from casstrace.orchestration.experiment import KeptCaptures, execute
    from casstrace.orchestration.kept_capture import KeptCapture

    queries = [read_only_statement(before), read_only_statement(after)]
    consistencies = [run_options["consistency"].upper(), (after_consistency or run_options["consistency"]).upper()]
    plan = compare_plan(queries, consistencies, traces_dir, run_options)
    # The probes compile while both queries are checked, and stay attached from one run to the next.
    with KeptCapture(run_options["backend"]) as capture:
        check = payload_check(plan.target.connection, queries, consistencies, run_options)
        if check.status == "different":
            raise refusal(check.summary, live=True)
        paths = []
        for side in execute(plan, captures=KeptCaptures(capture)):
            paths.append(side.trace)
            click.echo(printable(f"trace ({side.label}): {side.trace}"), err=True)
    return check, paths


def compare_plan(
    queries: list[str], consistencies: list[str], traces_dir: Path | None, run_options: dict[str, Any]
) -> "Plan[RunRecord]":
    """The two sides, 'before' and 'after', each query at its consistency, on the one node the options name."""
    from casstrace.node.connection import resolve_settings
    from casstrace.orchestration.experiment import Plan, QueryRun
    from casstrace.orchestration.targets import Target

    settings = resolve_settings(
        *(
            run_options[name]
            for name in ("host", "port", "username", "ssl_enabled", "cqlshrc", "connect_timeout", "request_timeout")
        )
    )
    target = Target(settings, run_options["pid"])
    sides = tuple(
        QueryRun(role, side_options(query, consistency, role, target, traces_dir, run_options))
        for role, query, consistency in zip(("before", "after"), queries, consistencies)
    )
    return Plan(sides, target, backend=run_options["backend"])


def payload_check(
    settings: "ConnectionSettings", queries: list[str], consistencies: list[str], run_options: dict[str, Any]
) -> "PayloadCheck":
    """Both queries executed once each, untraced, and what they returned compared."""
    from casstrace.analyses.compare import Payload, check_payload
    from casstrace.node.connection import NodeSession
    from casstrace.node.leaves import statement_shape
    from casstrace.node.paging import paging, query_shape
    from casstrace.node.query import MeasuringProtocolHandler, execute, prepare

    page_size, page_bytes = run_options["page_size"], run_options["page_bytes"]
    with NodeSession(settings, run_options["keyspace"], protocol_handler=MeasuringProtocolHandler) as node:
        prepared = [prepare(node.session, query) for query in queries]
        results = [
            execute(
                node.session,
                statement,
                consistency,
                paging(
                    node.session,
                    statement,
                    consistency,
                    page_size,
                    page_bytes,
                    query_shape(node.session, statement, query, None, None),
                    run_options["allow_large_rows"],
                ).page_size,
                shape=statement_shape(node.session, statement),
            )
            for statement, query, consistency in zip(prepared, queries, consistencies)
        ]
    return check_payload(*(Payload(r.rows, r.payload_bytes, r.digest, leaf_digest=r.leaf_digest) for r in results))


def side_options(
    query: str,
    consistency: str,
    role: str,
    target: "Target",
    traces_dir: Path | None,
    run_options: dict[str, Any],
) -> "RunOptions":
    """The run of one side of a compare on the plan's `target`: `casstrace run`'s options, its trace named
    for its role."""
    from casstrace.orchestration.runner import RunOptions, default_trace_path

    default = default_trace_path(query)
    return RunOptions.aimed_at(
        target,
        query,
        consistency=consistency,
        out=(traces_dir or default.parent) / f"{default.stem}-{role}{default.suffix}",
        **{name: run_options[name] for name in SIDE_OPTIONS},
    )


_run_params = {param.name: param for param in run_cli.command.params}
command.params += [_run_params[name] for name in RUN_OPTIONS]
