"""The page size of a query by its shape (node.paging): aggregates and small LIMITs are never
sampled, and a row the node's heap cannot page is refused, from the SSTables' statistics alone."""

from typing import Any

import pytest

from casstrace.errors import CasstraceError
from casstrace.node.jvm import CassandraProcess
from casstrace.node.paging import (
    LARGE_ROW_HEAP_SHARE,
    MAX_PAGE_ROWS,
    QueryShape,
    choose,
    paging,
    row_sizes,
)
from casstrace.traces.meta import ColumnMeta, TableMeta

MB = 10**6


class NoSample:
    """A session that fails the test if anything is executed on it."""

    def execute_async(self, *args: Any, **kwargs: Any) -> None:
        raise AssertionError("the node was asked for a sample")


def table(partition_bytes_max: int, cells_max: int, columns: int, cells: int, data_length: int) -> TableMeta:
    return {
        "keyspace": "ks",
        "table": "t",
        "columns": [ColumnMeta(name="k", type="int", kind="partition_key")]
        + [ColumnMeta(name=f"c{i}", type="blob", kind="regular") for i in range(columns)],
        "clustering": [],
        "storage": [
            {
                "data_path": "/d/nb-1-big-Data.db",
                "data_bytes": data_length,
                "stats": {
                    "partitions": 3,
                    "cells": cells,
                    "partition_bytes_max": partition_bytes_max,
                    "cells_max": cells_max,
                },
            }
        ],
    }


# 20 cells of 10 MB in one row, beside small ones
LARGE = table(partition_bytes_max=210 * MB, cells_max=20, columns=20, cells=60, data_length=230 * MB)


def test_the_largest_row_is_the_largest_partition_over_its_rows_and_scales_to_the_selected_columns() -> None:
    every = row_sizes(LARGE, None)
    assert every is not None and (every.largest, every.rows_in_largest) == (210 * MB, 1)
    one = row_sizes(LARGE, ["k", "c0"])
    assert one is not None and one.largest == 210 * MB // 20
    aliased = row_sizes(LARGE, ["k", "size_of_c0"])  # not a column: the whole row is assumed
    assert aliased is not None and aliased.largest == 210 * MB
    wide = row_sizes(table(190 * MB, 4_000, 20, 4_000, 190 * MB), None)  # 200 rows of 950 KB
    assert wide is not None and wide.largest == 950_000


def test_a_row_past_the_heaps_share_is_refused_before_any_sample_unless_allowed() -> None:
    heap = 2**30
    shape = QueryShape(rows=row_sizes(LARGE, None), heap_bytes=heap)
    assert shape.row_limit == heap // LARGE_ROW_HEAP_SHARE
    with pytest.raises(CasstraceError) as refused:
        paging(NoSample(), None, "ONE", None, 8 * 2**20, shape)
    assert "210,000,000 B" in refused.value.message and "--allow-large-rows" in (refused.value.fix or "")
    with pytest.raises(CasstraceError):  # a page size given splits no row either
        paging(NoSample(), None, "ONE", 1, 8 * 2**20, shape)
    allowed = paging(NoSample(), None, "ONE", 1, 8 * 2**20, shape, allow_large_rows=True)
    assert allowed.page_size == 1
    # a heap large enough pages it
    assert (
        paging(NoSample(), None, "ONE", 1, 8 * 2**20, QueryShape(rows=shape.rows, heap_bytes=16 * 2**30)).page_size == 1
    )


def test_an_aggregate_is_not_sampled_and_pages_by_the_mean_stored_row() -> None:
    small = row_sizes(table(400_000, 20_000, 1, 20_000, 300_000), None)  # 10,000 rows of ~30 B... per cell
    assert small is not None and small.mean == 15
    chosen = choose(NoSample(), None, "ONE", 8 * 2**20, QueryShape(aggregate=True, rows=small))
    assert (chosen.page_size, chosen.sampled_row_bytes) == (MAX_PAGE_ROWS, None)
    unknown = choose(NoSample(), None, "ONE", 8 * 2**20, QueryShape(aggregate=True))
    assert unknown.page_size == MAX_PAGE_ROWS
    large = row_sizes(table(10 * MB, 1, 1, 10, 100 * MB), None)  # rows of 10 MB
    assert choose(NoSample(), None, "ONE", 8 * 2**20, QueryShape(aggregate=True, rows=large)).page_size == 1


def test_a_small_limit_is_one_page_without_a_sample() -> None:
    rows = row_sizes(table(20_000, 4, 4, 40, 200_000), None)
    chosen = choose(NoSample(), None, "ONE", 8 * 2**20, QueryShape(limit=10, rows=rows))
    assert chosen.page_size == 10 and chosen.sampled_row_bytes is None


@pytest.mark.parametrize(
    "argv, heap",
    [
        (("java", "-Xms1G", "-Xmx1G", "x.CassandraDaemon"), 2**30),
        (("java", "-Xmx512m", "-Xmx8g"), 8 * 2**30),  # the last one counts
        (("java", "-XX:MaxHeapSize=2147483648"), 2**31),
    ],
)
def test_the_heap_of_a_jvm_is_its_last_xmx(argv: tuple[str, ...], heap: int) -> None:
    assert CassandraProcess(1, argv).max_heap_bytes == heap
