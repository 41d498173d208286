"""The whole cells behind an element or a field: what the node reads for a query that selects one
element of a non-frozen collection (`attrs['k']`) or one field of a frozen UDT (`addr.city`).

Cassandra reads such a cell whole (a collection's elements lie together in the row, a frozen value is
one cell) and sends the client the element alone, so the payload says nothing of what had to be read.
Before the capture, casstrace runs the same SELECT with those columns whole
(node.statements.whole_cell_statement) for its first rows, and records their bytes as the node sent
them (MeasuringProtocolHandler): sizes only, never a value. The necessary read
(analyses.necessary) takes the cells of every row returned to be as large as those sampled.

The sample is bounded like the page-size sample (node.paging): at most SAMPLE_ROWS rows, fewer when
the table's statistics say its rows are large (a page within --page-bytes), one page, SAMPLE_TIMEOUT_S;
it reads what the query's first rows read anyway. When it fails, the trace says why and the model
falls back to the table's stored rows (Statistics.db).
"""

from typing import TYPE_CHECKING

from casstrace.node.paging import SAMPLE_ROWS, SAMPLE_TIMEOUT_S, QueryShape
from casstrace.node.statements import whole_cell_statement
from casstrace.traces.meta import WholeCellsMeta

if TYPE_CHECKING:
    from cassandra.cluster import Session


def whole_cells(
    session: "Session", statement: str, consistency: str, page_bytes: int, shape: QueryShape
) -> WholeCellsMeta | None:
    """The first rows of `statement` with its elements and fields whole, measured; None when it
    selects no element or field."""
    from casstrace.node.query import execution_failure, first_page

    whole = whole_cell_statement(statement)
    if whole is None:
        return None
    rows = SAMPLE_ROWS
    if shape.rows is not None:  # the largest row the statistics allow, whole: a page within the budget
        rows = max(1, min(SAMPLE_ROWS, page_bytes // max(1, shape.rows.largest)))
    try:  # preparing waits --request-timeout at most, as the query's own preparation did
        prepared = session.prepare(whole)
        page = first_page(session, prepared, consistency, rows, SAMPLE_TIMEOUT_S)
    except Exception as error:  # the node refused or was slow: the stored rows stand for the cells
        return {"rows": 0, "payload_bytes": 0, "failed": execution_failure(error)}
    return {"rows": len(page), "payload_bytes": page.payload_bytes}
