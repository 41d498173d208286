"""A write statement's figures in the watch report (analyses.statement_writes): the items every format
lays out, and the ranking table's cell."""

from casstrace.analyses.statement_writes import StatementWrites
from casstrace.analyses.units import human_bytes, human_ns
from casstrace.reports.common import NOT_MEASURED


def written_per_execution(write: StatementWrites) -> str:
    """The ranking table's cell: commit-log bytes appended per execution, else its bytes on the wire."""
    if write.commitlog_bytes_per_execution is not None:
        return f"{human_bytes(write.commitlog_bytes_per_execution)} commit log"
    if write.wire_bytes_per_execution is not None:
        return f"{human_bytes(write.wire_bytes_per_execution)} wire"
    return NOT_MEASURED


def written_items(write: StatementWrites) -> list[tuple[str, str]]:
    """Label/value items: what it writes, its bytes on the wire and in the commit log, its node time split."""
    return [
        ("write", _what(write)),
        ("rows and cells written", _rows_and_cells(write)),
        (
            "partitions per execution",
            "—"
            if write.partitions_per_execution is None
            else f"{write.partitions_per_execution:,.1f} (mutations in its trace events)",
        ),
        (
            "on the wire per execution",
            NOT_MEASURED
            if write.wire_bytes_per_execution is None
            else human_bytes(write.wire_bytes_per_execution)
            + (
                " (its clients ran other statements too: their bytes split by executions, an estimate)"
                if write.wire_estimated
                else " (read from its clients' connections)"
            ),
        ),
        (
            "commit log per execution",
            NOT_MEASURED
            if write.commitlog_bytes_per_execution is None
            else f"{human_bytes(write.commitlog_bytes_per_execution)} (pages its threads dirtied in the segments)",
        ),
        ("node time per execution", _split(write)),
    ]


def _what(write: StatementWrites) -> str:
    tables = ", ".join(write.tables) or "tables not named (a driver's batch)"
    if write.kind != "BATCH":
        return f"{write.kind} into {tables}"
    statements = (
        f"{write.statements_per_execution:,} statements" if write.statements_per_execution else "statements not named"
    )
    logged = {True: "logged ", False: "unlogged ", None: ""}[write.logged]
    return f"{logged}BATCH of {statements}: {tables}"


def _rows_and_cells(write: StatementWrites) -> str:
    if write.rows_per_execution is None and write.cells_per_execution is None:
        return "— (the text does not say: an IN list, or a driver's batch)"
    rows = "—" if write.rows_per_execution is None else f"{write.rows_per_execution:,}"
    cells = "—" if write.cells_per_execution is None else f"{write.cells_per_execution:,}"
    total = (
        f"; about {write.estimated_rows:,.0f} rows, {write.estimated_cells:,.0f} cells in all"
        if write.estimated_rows is not None and write.estimated_cells is not None
        else ""
    )
    return f"{rows} rows, {cells} cells per execution (from its text){total}"


def _split(write: StatementWrites) -> str:
    if write.node_ns_per_execution is None:
        return "—"
    pause = NOT_MEASURED if write.pause_ns_per_execution is None else human_ns(write.pause_ns_per_execution)
    commitlog = "—" if write.commitlog_ns_per_execution is None else human_ns(write.commitlog_ns_per_execution)
    cpu = NOT_MEASURED if write.cpu_ns_per_execution is None else human_ns(write.cpu_ns_per_execution)
    return (
        f"{human_ns(write.node_ns_per_execution)}: commit log {commitlog}, GC and safepoints {pause}, "
        f"CPU {cpu} (its threads', outside those), the rest {human_ns(write.rest_ns_per_execution)}"
    )
