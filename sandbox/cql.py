"""Running a few CQL statements from the command line and showing their rows as a table."""

from collections.abc import Iterator

from cassandra import DriverException, OperationTimedOut
from cassandra.cluster import Session
from cassandra.protocol import ErrorMessage
from cassandra.query import SimpleStatement

from casstrace.errors import CasstraceError
from casstrace.node.query import server_message
from casstrace.node.statements import split_statements

MAX_CELL = 60
# Rows per page. Cassandra builds each page whole in its heap; with the driver's default of 5000,
# a page of 50 KB blobs is ~250 MB, enough to exhaust a sandbox's 1 GiB heap.
FETCH_SIZE = 100


def run(session: Session, text: str) -> Iterator[str]:
    """Executes each statement; yields a printable block per statement that returned rows."""
    for number, statement in enumerate(split_statements(text), 1):
        try:
            result = session.execute(SimpleStatement(statement, fetch_size=FETCH_SIZE))
        except (DriverException, OperationTimedOut, ErrorMessage) as error:  # ErrorMessage: what the node refused
            first_line = " ".join(statement.split())[:80]
            raise CasstraceError(
                f"statement {number} ({first_line}) failed: {server_message(error)}",
                "correct the statement; the ones before it were executed",
            ) from None
        if result.column_names:
            yield format_rows(result.column_names, list(result))


def format_cell(value: object) -> str:
    if isinstance(value, (bytes, bytearray)):
        shown = "0x" + bytes(value[: MAX_CELL // 2 - 2]).hex()
        return shown if len(value) <= MAX_CELL // 2 - 2 else f"{shown}… ({len(value)} bytes)"
    text = "null" if value is None else str(value)
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def format_rows(columns: list[str], rows: list) -> str:
    cells = [[format_cell(value) for value in row] for row in rows]
    widths = [max([len(name)] + [len(row[i]) for row in cells]) for i, name in enumerate(columns)]
    line = lambda values: " | ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()  # noqa: E731
    out = [line(columns), "-+-".join("-" * w for w in widths)]
    out += [line(row) for row in cells]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out)
