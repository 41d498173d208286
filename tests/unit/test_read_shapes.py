"""The necessary read of each of CQL's read shapes (analyses.necessary), and the expired-cells cause,
on tables described as a run records them (their real nodes: tests/integration/test_verdict_classes.py)."""

import dataclasses

from casstrace.analyses.causes import CAUSE_FINDERS
from casstrace.analyses.findings import CassandraCounts, FindingContext
from casstrace.analyses.necessary import filtering_scan, necessary_read
from casstrace.analyses.query import TableSchema, indexed_column, parse_select

CHUNK, STORED_CHUNK = 16_384, 15_000
READ_AHEAD = 256 * 1024


def table(
    *, clustering: list[str] | None = None, partitions: int = 5_000, chunks: int = 150, sstables=(), **extra
) -> TableSchema:
    """A table of one compressed SSTable (LZ4, 16 KiB chunks) of `partitions` partitions."""
    columns = {"id": {"name": "id", "kind": "partition_key"}} | {
        name: {"name": name, "kind": "clustering"} for name in clustering or []
    }
    columns |= {name: {"name": name, "kind": "regular"} for name in ("city", "team", "name", "attrs", "v")}
    return TableSchema(
        keyspace="ks",
        table="t",
        columns=columns,  # type: ignore[arg-type]
        partition_key=["id"],
        clustering=clustering or [],
        compression={"class": "LZ4Compressor", "chunk_length_in_kb": "16"},
        sstables=list(sstables),
        storage=[
            {
                "format": "big",
                "data_bytes": chunks * STORED_CHUNK,
                "compression": {
                    "compressor": "LZ4Compressor",
                    "chunk_length": CHUNK,
                    "data_length": chunks * CHUNK,
                    "chunks": chunks,
                    "compressed_bytes": chunks * STORED_CHUNK,
                },
                "stats": {"partitions": partitions, "cells": partitions * 5},
                "index_bytes": 100_000,
            }
        ],
        **extra,
    )


def necessary(query: str, schema: TableSchema, *, payload: int, rows: int):
    return necessary_read(
        parse_select(query), schema, payload_bytes=payload, rows=rows, rows_aggregated=None, read_ahead=READ_AHEAD
    )


def test_selection_parsing_tells_distinct_and_elements_apart():
    select = parse_select("SELECT DISTINCT id, attrs['k'], addr.city FROM ks.t")
    assert select is not None and select.distinct
    assert select.columns == ["id", "attrs", "addr"]  # a field's name is not a column
    assert select.elements == ["attrs", "addr"]
    assert [indexed_column(t) for t in ("city", "values(tags)", "full(addr)", '"Name"')] == [
        "city",
        "tags",
        "addr",
        "Name",
    ]


def test_an_index_read_costs_a_chunk_and_a_lookup_per_partition_found_and_no_read_ahead():
    indexes = [
        {"name": "t_city", "target": "city", "kind": "legacy"},
        {"name": "t_team", "target": "team", "kind": "sai"},
    ]
    schema = table(indexes=indexes)
    legacy = necessary("SELECT name FROM ks.t WHERE city = 'c'", schema, payload=100, rows=10)
    sai = necessary("SELECT name FROM ks.t WHERE team = 't'", schema, payload=100, rows=10)
    assert legacy is not None and sai is not None
    assert legacy.units == sai.units == 10 and legacy.data_bytes == 10 * STORED_CHUNK
    assert legacy.index_bytes == 10 * 4_096 + 4_096 + STORED_CHUNK  # and the hidden table's partition
    assert sai.index_bytes == 10 * 4_096 + 3 * 4_096  # terms, postings, row ids to keys
    # an indexed column filtered is no filtering scan; another column is
    indexed = parse_select("SELECT name FROM ks.t WHERE city = 'c' AND name = 'n' ALLOW FILTERING")
    scan = parse_select("SELECT name FROM ks.t WHERE name = 'n' ALLOW FILTERING")
    assert indexed is not None and scan is not None
    assert not filtering_scan(indexed, schema) and filtering_scan(scan, schema)


def test_distinct_reads_the_head_of_each_partition():
    # 50 partitions of 3 chunks each: smaller than the read-ahead, each read whole (the whole table)
    schema = table(partitions=50, chunks=150)
    distinct = necessary("SELECT DISTINCT id FROM ks.t", schema, payload=200, rows=50)
    assert distinct is not None and distinct.data_bytes == 150 * STORED_CHUNK
    # 5,000 partitions of 450 B: the first 100 lie in one read-ahead buffer
    many = necessary("SELECT DISTINCT id FROM ks.t LIMIT 100", table(), payload=400, rows=100)
    assert many is not None and many.data_bytes == READ_AHEAD


def test_in_on_a_clustering_column_costs_a_chunk_per_row_named():
    schema = table(clustering=["ts"])
    listed = necessary("SELECT v FROM ks.t WHERE id = 7 AND ts IN (1, 70, 150)", schema, payload=900, rows=3)
    assert listed is not None and listed.units == 3
    found = necessary("SELECT v FROM ks.t WHERE id = 7 AND ts IN (1, 70, 150)", schema, payload=300, rows=1)
    assert found is not None and found.units == 1  # two were not found


def test_an_element_needs_its_whole_cell_the_row_standing_for_it():
    schema = table(partitions=40, chunks=200)  # rows of 80 KiB
    element = necessary("SELECT attrs['k1'] FROM ks.t WHERE id = 7", schema, payload=100, rows=1)
    assert element is not None and element.result_bytes == 200 * CHUNK // 40
    assert element.units == 5
    whole = necessary("SELECT name FROM ks.t WHERE id = 7", schema, payload=100, rows=1)
    assert whole is not None and whole.units == 1


def context(schema: TableSchema, ttl_max: int = 0) -> FindingContext:
    schema.storage[0]["stats"]["ttl_max"] = ttl_max
    return FindingContext(
        flagged=True,
        threshold=10,
        executions=1,
        data_read_bytes=2_000_000,
        syscall_bytes=2_000_000,
        cache_outside_syscall_bytes=None,
        payload_bytes=10_000,
        rows=10,
        necessary=None,
        select=parse_select("SELECT v FROM ks.t WHERE id = 1"),
        schema=schema,
        cassandra=[CassandraCounts(live_rows=10, tombstone_cells=1_990, sstables_merged=1)],
    )


def test_dead_cells_are_expired_where_the_sstables_hold_ttls_else_tombstones():
    expired = context(table(clustering=["ts"]), 86_400)
    deleted = context(table(clustering=["ts"]), 0)
    assert CAUSE_FINDERS["tombstones"](expired) is None
    finding = CAUSE_FINDERS["expired_cells"](expired)
    assert finding is not None and "86,400 s" in finding.evidence[1]
    assert finding.read_after_fix_bytes == 2_000_000 * 10 / 2_000
    assert CAUSE_FINDERS["expired_cells"](deleted) is None
    assert CAUSE_FINDERS["tombstones"](deleted) is not None


def test_an_index_lookup_costs_at_most_its_files_on_disk():
    """The index's own lookup from the SSTables' listing: a legacy index's hidden table of 2 KiB is
    read whole, at most; SAI a page of its terms, of its postings and of the SSTable's key map, each at
    most its files (a terms file of 1 KiB)."""
    directory = "/d/ks/t-0d493010ea8b11f19b6ea7edf2753d3b"
    sstables = [
        {"path": f"{directory}/.t_city/nb-1-big-Data.db", "size": 1_500},
        {"path": f"{directory}/.t_city/nb-1-big-Index.db", "size": 548},
        {"path": f"{directory}/nb-1-big-SAI+aa+t_team+TermsData.db", "size": 1_024},
        {"path": f"{directory}/nb-1-big-SAI+aa+t_team+PostingLists.db", "size": 90_000},
        {"path": f"{directory}/nb-1-big-SAI+aa+RowToPartition.db", "size": 20_000},
        {"path": f"{directory}/nb-1-big-SAI+aa+other_idx+TermsData.db", "size": 50_000},
    ]
    indexes = [
        {"name": "t_city", "target": "city", "kind": "legacy"},
        {"name": "t_team", "target": "team", "kind": "sai"},
    ]
    schema = table(indexes=indexes, sstables=sstables)
    legacy = necessary("SELECT name FROM ks.t WHERE city = 'c'", schema, payload=100, rows=10)
    sai = necessary("SELECT name FROM ks.t WHERE team = 't'", schema, payload=100, rows=10)
    assert legacy is not None and legacy.index_bytes == 10 * 4_096 + 2_048
    assert sai is not None and sai.index_bytes == 10 * 4_096 + 1_024 + 4_096 + 4_096


def test_rows_found_through_an_index_need_at_most_the_tables_chunks():
    """3,000 rows in 3,000 partitions of a table of 150 chunks: the rows lie in those chunks, each read
    once at the least; the node reads a chunk a row, and low_cardinality_index names it."""
    schema = table(indexes=[{"name": "t_city", "target": "city", "kind": "legacy"}])
    found = necessary("SELECT * FROM ks.t WHERE city = 'c'", schema, payload=1_200_000, rows=3_000)
    assert found is not None and found.units == 150 and found.data_bytes == 150 * STORED_CHUNK
    assert found.index_bytes == 100_000 + 4_096 + STORED_CHUNK  # the whole Index.db at most
    low = dataclasses.replace(
        context(schema),
        data_read_bytes=3_000 * STORED_CHUNK,
        payload_bytes=1_200_000,
        rows=3_000,
        necessary=found,
        select=parse_select("SELECT * FROM ks.t WHERE city = 'c'"),
    )
    finding = CAUSE_FINDERS["low_cardinality_index"](low)
    assert finding is not None and finding.read_after_fix_bytes == found.bytes
    assert "3,000 chunks" in finding.evidence[0] and "150 chunks" in finding.evidence[0]
    few = dataclasses.replace(low, rows=10, data_read_bytes=10 * STORED_CHUNK)
    assert CAUSE_FINDERS["low_cardinality_index"](few) is None


def test_an_element_needs_its_whole_cell_as_sampled():
    """The sample of the first rows with the cell whole (node.cells) gives the cell's own size: a 35 KB
    map in a row of 80 KiB, 3 chunks, not 5; a failed sample leaves the stored row."""
    schema = table(partitions=40, chunks=200)
    query = "SELECT attrs['k1'] FROM ks.t WHERE id = 7"
    sampled = necessary_read(
        parse_select(query),
        schema,
        payload_bytes=100,
        rows=1,
        rows_aggregated=None,
        whole_cells={"rows": 2, "payload_bytes": 70_000},
    )
    assert sampled is not None and sampled.result_bytes == 35_000 and sampled.units == 3
    assert "sampled on the first 2 rows" in sampled.basis
    failed = necessary_read(
        parse_select(query),
        schema,
        payload_bytes=100,
        rows=1,
        rows_aggregated=None,
        whole_cells={"rows": 0, "payload_bytes": 0, "failed": "ReadTimeout: ..."},
    )
    assert failed is not None and failed.result_bytes == 200 * CHUNK // 40
