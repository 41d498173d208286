"""The page size of a measured query: rows per page, bounded in bytes; and rows too large to page.

A page is held whole in the node's heap while it is built, and in casstrace's memory while it is
measured: at the driver's 5,000 rows a page of 1 MB rows is 5 GB, more than a 1 GiB heap holds
(the node dies of OutOfMemoryError). Unless the user gives --page-size, casstrace samples the
query's first rows (one row, then up to SAMPLE_ROWS) before the capture starts, measures their
bytes as the node sent them (MeasuringProtocolHandler), and pages so that the largest row sampled
times the page size stays within the byte budget (--page-bytes). A row larger than the budget
alone makes every page unsafe: the query runs one row a page, and the user is warned first.

The sample costs the node what the query's first rows cost, so it is bounded and skipped where it
is not needed:
  - first, the table's SSTables' own statistics (Statistics.db: partition sizes and cells per
    partition) bound the largest row the query may fetch; a row past what the node's heap can page
    (LARGE_ROW_HEAP_SHARE of it) is refused before anything reads it, unless --allow-large-rows;
  - an aggregate (count, sum, avg, min, max, a user-defined aggregate, GROUP BY) is never sampled:
    Cassandra pages the rows it aggregates internally at the request's page size, and re-reads its
    way to where each internal page starts, so a page of 1 row makes a count of N rows N reads. Its
    page size is the budget over the table's mean stored row, at most MAX_PAGE_ROWS;
  - a LIMIT whose rows, at the largest the statistics allow, fit the budget is one page: no sample;
  - the sample waits SAMPLE_TIMEOUT_S at most; when it fails, the statistics choose the page size
    (1 row without them).

The sample is not part of any execution: each execution runs the query from its first page to
its last, at the chosen size, inside its own window (paging resumes where the last page ended).
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING

from casstrace.errors import CasstraceError
from casstrace.node.statements import select_shape
from casstrace.traces.meta import TableMeta

if TYPE_CHECKING:  # the CLI reads the defaults below before it loads the driver
    from cassandra.cluster import Session
    from cassandra.query import PreparedStatement

DEFAULT_CQL_PAGE_BYTES = 8 * 1024 * 1024  # --page-bytes: the byte budget of one CQL page
MAX_PAGE_ROWS = 5000  # the driver's default fetch size: pages of small rows stay as they were
SAMPLE_ROWS = 10
SAMPLE_TIMEOUT_S = 2.0  # the sample's wait for the node: a query slower than this is paged by the statistics
# A row is built whole in the node's heap, and held there several times over while it is sent (the
# cells read, the row, the encoded response, its frames): one past this share of the heap is refused.
LARGE_ROW_HEAP_SHARE = 16


@dataclass(frozen=True)
class RowSizes:
    """What a table's SSTables say of its rows (their Statistics.db), for the columns a query selects."""

    table: str  # keyspace.table
    largest: int  # bytes of the largest row the query may fetch (the selected share of it)
    largest_partition: int  # bytes of the largest partition (the histogram bucket's upper bound)
    rows_in_largest: int  # rows the largest partition holds (its cells ÷ the regular columns)
    mean: int  # bytes of a stored row, on average over the SSTables


@dataclass(frozen=True)
class QueryShape:
    """What decides how a query may be paged (node.statements.select_shape and the table's statistics)."""

    aggregate: bool = False
    limit: int | None = None
    rows: RowSizes | None = None  # None: the table's SSTables' statistics are not known
    heap_bytes: int | None = None  # the node's maximum heap, when known

    @property
    def row_limit(self) -> int | None:
        """The largest row the node pages safely."""
        return self.heap_bytes // LARGE_ROW_HEAP_SHARE if self.heap_bytes else None


def _mib(size: int) -> str:
    return f"{size / 2**20:,.1f} MiB"


def row_sizes(table: TableMeta, selected: list[str] | None) -> RowSizes | None:
    """The rows of `table` by its SSTables' statistics; `selected`: the columns the query returns
    (None: not known, the whole row). The largest partition's rows are its mean row: the
    histograms give a partition's bytes and its cells apart, so a partition of rows of mixed sizes
    may hold one larger than this (docs/large-partitions.md)."""
    stats = [s["stats"] for s in table.get("storage") or [] if (s.get("stats") or {}).get("partitions")]
    regular = [c["name"] for c in table.get("columns") or [] if c.get("kind") in ("regular", "static")]
    if not stats:
        return None
    columns = max(1, len(regular))
    largest = max(stats, key=lambda stat: stat.get("partition_bytes_max", 0))
    partition = largest.get("partition_bytes_max", 0)
    rows_in_largest = max(1, largest.get("cells_max", 0) // columns)
    known = set(regular) | {c["name"] for c in table.get("columns") or []}
    share = 1.0
    if selected is not None and set(selected) <= known:  # an alias or a function: the whole row
        share = max(1, len(set(selected) & set(regular))) / columns
    data = sum(s.get("compression", {}).get("data_length", s.get("data_bytes", 0)) for s in table["storage"])
    rows = max(1, sum(stat.get("cells", 0) for stat in stats) // columns)
    return RowSizes(
        table=f"{table.get('keyspace')}.{table.get('table')}",
        largest=round(partition / rows_in_largest * share),
        largest_partition=partition,
        rows_in_largest=rows_in_largest,
        mean=max(1, data // rows),
    )


def query_shape(
    session: "Session", prepared: "PreparedStatement", statement: str, table: TableMeta | None, heap_bytes: int | None
) -> QueryShape:
    """The shape of the prepared `statement`: its aggregation (a function it calls that is no native
    aggregate is looked up among the node's user-defined ones), LIMIT, and the table's row sizes."""
    shape = select_shape(statement)
    user_aggregates: frozenset[str] = frozenset()
    if not shape.aggregate():
        from casstrace.node.connection import answered_in_time

        unknown = shape.calls - {"token", "writetime", "ttl", "cast", "tojson", "fromjson"}
        if unknown:
            with answered_in_time(session, "the node's user-defined aggregates"):
                found = session.execute("SELECT aggregate_name FROM system_schema.aggregates")
            user_aggregates = frozenset(row.aggregate_name for row in found)
    selected = [column[2] for column in prepared.result_metadata or []] or None
    return QueryShape(
        aggregate=shape.aggregate(user_aggregates),
        limit=shape.limit,
        rows=row_sizes(table, selected) if table is not None else None,
        heap_bytes=heap_bytes,
    )


def refuse_large_rows(shape: QueryShape) -> None:
    """A CasstraceError when the statistics say the query may fetch a row the node cannot page."""
    rows, limit = shape.rows, shape.row_limit
    if rows is None or limit is None or rows.largest <= limit:
        return
    held = f"{rows.rows_in_largest:,} rows" if rows.rows_in_largest > 1 else "one row"
    raise CasstraceError(
        f"a row of {rows.table} may be {_mib(rows.largest)} ({rows.largest:,} B of the selected columns; "
        f"its SSTables' largest partition is {_mib(rows.largest_partition)} in {held}): more than "
        f"1/{LARGE_ROW_HEAP_SHARE} of the node's {_mib(shape.heap_bytes or 0)} heap, which would hold the row whole, "
        "several times over, to send it (a page cannot split a row, whatever --page-bytes)",
        "select fewer of its large columns (a narrower SELECT), or give --allow-large-rows if the node's heap holds it",
    )


@dataclass(frozen=True)
class Paging:
    """The page size the executions use, and why."""

    page_size: int  # rows per page; 0: one page, the whole result
    chosen: bool  # chosen by casstrace (not --page-size)
    page_bytes: int | None  # the budget it was chosen for (None: --page-size given)
    sampled_row_bytes: int | None  # the largest row of the sample, in payload bytes
    reason: str

    @property
    def row_over_budget(self) -> bool:
        return self.chosen and self.page_bytes is not None and (self.sampled_row_bytes or 0) > self.page_bytes

    def meta(self) -> dict[str, int | bool | str | None]:
        return {
            "page_size": self.page_size,
            "chosen": self.chosen,
            "page_bytes": self.page_bytes,
            "sampled_row_bytes": self.sampled_row_bytes,
            "reason": self.reason,
        }


def given(page_size: int) -> Paging:
    return Paging(
        page_size, False, None, None, "no paging (--page-size 0)" if page_size == 0 else f"--page-size {page_size}"
    )


def choose(
    session: "Session", prepared: "PreparedStatement", consistency: str, page_bytes: int, shape: QueryShape
) -> Paging:
    """Rows per page so that a page of rows as large as the largest sampled stays within page_bytes."""
    from casstrace.node.query import execution_failure, first_page

    budget = f"the {page_bytes:,} B of a page (--page-bytes)"
    if shape.aggregate:
        if shape.rows is None:
            return Paging(MAX_PAGE_ROWS, True, page_bytes, None, f"{MAX_PAGE_ROWS:,} rows: an aggregate, not sampled")
        rows = max(1, min(MAX_PAGE_ROWS, page_bytes // shape.rows.mean))
        return Paging(
            rows,
            True,
            page_bytes,
            None,
            f"{rows:,} rows aggregated a page: an aggregate, not sampled; its SSTables' rows of "
            f"{shape.rows.mean:,} B on average within {budget}",
        )
    if shape.limit and shape.rows is not None and shape.limit * shape.rows.largest <= page_bytes:
        return Paging(
            shape.limit,
            True,
            page_bytes,
            None,
            f"{shape.limit:,} rows: LIMIT {shape.limit:,} of rows of at most {shape.rows.largest:,} B "
            f"(its SSTables' statistics) is one page within {budget}, not sampled",
        )
    try:
        largest = first_page(session, prepared, consistency, 1, SAMPLE_TIMEOUT_S).largest_row_bytes
        if largest * SAMPLE_ROWS <= page_bytes:  # ten such rows are safe to sample
            largest = max(
                largest, first_page(session, prepared, consistency, SAMPLE_ROWS, SAMPLE_TIMEOUT_S).largest_row_bytes
            )
    except Exception as error:  # the node refused or was slow: the statistics, else one row a page
        failed = f"the sample of the first rows failed ({execution_failure(error)})"
        if shape.rows is not None:
            rows = max(1, min(MAX_PAGE_ROWS, page_bytes // max(1, shape.rows.largest)))
            return Paging(
                rows,
                True,
                page_bytes,
                None,
                f"{rows:,} rows: {failed}; its SSTables' rows of at most {shape.rows.largest:,} B within {budget}",
            )
        # Nothing is known of the rows, so no page larger than one row is known to be safe.
        return Paging(1, True, page_bytes, None, f"1 row: {failed}")
    if largest == 0:
        return Paging(
            MAX_PAGE_ROWS,
            True,
            page_bytes,
            0,
            f"{MAX_PAGE_ROWS:,} rows: the sample returned no bytes to size a page by",
        )
    if largest > page_bytes:
        return Paging(
            1,
            True,
            page_bytes,
            largest,
            f"1 row: a row of {largest:,} B is larger than {budget} alone; no page is within it",
        )
    rows = min(MAX_PAGE_ROWS, page_bytes // largest)
    return Paging(
        rows,
        True,
        page_bytes,
        largest,
        f"{rows:,} rows: the largest of the first {SAMPLE_ROWS} rows "
        f"is {largest:,} B; a page within {budget}"
        + (f", at most {MAX_PAGE_ROWS:,} rows" if rows == MAX_PAGE_ROWS else ""),
    )


def paging(
    session: "Session",
    prepared: "PreparedStatement",
    consistency: str,
    page_size: int | None,
    page_bytes: int,
    shape: QueryShape,
    allow_large_rows: bool = False,
) -> Paging:
    """--page-size when given, else the size chosen for --page-bytes; a CasstraceError first when the
    query may fetch a row too large for the node (unless `allow_large_rows`)."""
    if not allow_large_rows:
        refuse_large_rows(shape)
    return given(page_size) if page_size is not None else choose(session, prepared, consistency, page_bytes, shape)
