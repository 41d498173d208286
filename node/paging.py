"""The page size of a measured query: rows per page, bounded in bytes.

A page is held whole in the node's heap while it is built, and in casstrace's memory while it is
measured: at the driver's 5,000 rows a page of 1 MB rows is 5 GB, more than a 1 GiB heap holds
(the node dies of OutOfMemoryError). Unless the user gives --page-size, casstrace samples the
query's first rows (one row, then up to SAMPLE_ROWS) before the capture starts, measures their
bytes as the node sent them (MeasuringProtocolHandler), and pages so that the largest row sampled
times the page size stays within the byte budget (--page-bytes). A row larger than the budget
alone makes every page unsafe: the query runs one row a page, and the user is warned first.

The sample is not part of any execution: each execution runs the query from its first page to
its last, at the chosen size, inside its own window (paging resumes where the last page ended).
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI reads the defaults below before it loads the driver
    from cassandra.cluster import Session
    from cassandra.query import PreparedStatement

DEFAULT_CQL_PAGE_BYTES = 8 * 1024 * 1024  # --page-bytes: the byte budget of one CQL page
MAX_PAGE_ROWS = 5000  # the driver's default fetch size: pages of small rows stay as they were
SAMPLE_ROWS = 10


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


def choose(session: "Session", prepared: "PreparedStatement", consistency: str, page_bytes: int) -> Paging:
    """Rows per page so that a page of rows as large as the largest sampled stays within page_bytes."""
    from casstrace.node.query import execution_failure, first_page

    try:
        largest = first_page(session, prepared, consistency, 1).largest_row_bytes
        if largest * SAMPLE_ROWS <= page_bytes:  # ten such rows are safe to sample
            largest = max(largest, first_page(session, prepared, consistency, SAMPLE_ROWS).largest_row_bytes)
    except Exception as error:  # the node refused or timed out: the executions say so, each as it fails
        # Nothing is known of the rows, so no page larger than one row is known to be safe.
        return Paging(
            1, True, page_bytes, None, f"1 row: the sample of the first rows failed ({execution_failure(error)})"
        )
    budget = f"the {page_bytes:,} B of a page (--page-bytes)"
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
    session: "Session", prepared: "PreparedStatement", consistency: str, page_size: int | None, page_bytes: int
) -> Paging:
    """--page-size when given, else the size chosen for --page-bytes."""
    return given(page_size) if page_size is not None else choose(session, prepared, consistency, page_bytes)
