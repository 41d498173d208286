"""The demo data in the test sandbox: what the node returns and what it keeps on disk."""

import re

import pytest
from cassandra.query import SimpleStatement

from casstrace.sandbox.demo import WideTable, ensure_loaded

pytestmark = pytest.mark.integration


def test_wide_table_rows_and_value_sizes(demo_tables, cql_session):
    spec = demo_tables.spec
    assert (spec.keyspace, spec.table, spec.rows, spec.columns) == ("casstrace_demo", "streams", 200, 20)
    rows = list(
        cql_session.execute(
            f"SELECT ts, c0, c1, c19 FROM {spec.keyspace}.{spec.table} WHERE stream_id = {spec.stream_id}"
        )
    )
    assert [row.ts for row in rows] == list(range(200))
    assert {len(row.c0) for row in rows} == {100}
    assert {len(row.c1) for row in rows} == {len(row.c19) for row in rows} == {50_000}
    # The bytes are the seeded ones, so a test can know any value without reading it.
    expected = dict(spec.values())
    assert all(row.c19 == expected[row.ts][19] for row in rows[:5])


def test_narrow_table_holds_the_same_values(demo_tables, cql_session):
    spec = demo_tables.spec
    narrow = list(
        cql_session.execute(
            f"SELECT column_no, ts, value FROM {spec.keyspace}.{spec.narrow_table} "
            f"WHERE stream_id = {spec.stream_id} AND column_no IN (0, 7)"
        )
    )
    assert len(narrow) == 2 * 200
    wide = {
        row.ts: row
        for row in cql_session.execute(
            f"SELECT ts, c0, c7 FROM {spec.keyspace}.{spec.table} WHERE stream_id = {spec.stream_id}"
        )
    }
    for row in narrow:
        assert row.value == (wide[row.ts].c0 if row.column_no == 0 else wide[row.ts].c7)
    # Small pages: the node materialises each page's rows whole (50 KB values), and the driver's
    # default 5000-row page of this table would ask a 1 GiB heap for ~250 MB at once.
    keys = cql_session.execute(
        SimpleStatement(
            f"SELECT column_no, ts FROM {spec.keyspace}.{spec.narrow_table} WHERE stream_id = {spec.stream_id}",
            fetch_size=100,
        )
    )
    assert sorted(keys) == [(c, ts) for c in range(20) for ts in range(200)]


def test_each_table_is_one_lz4_sstable_on_disk(demo_tables, sandbox, cql_session):
    spec = demo_tables.spec
    for table in (demo_tables.wide, demo_tables.narrow):
        assert len(table.data_files) == 1
        data_file = table.data_files[0]
        assert data_file.is_relative_to(sandbox.data_dir / "data" / spec.keyspace)
        # Random values do not compress: the file holds at least every value byte.
        assert spec.total_bytes < data_file.stat().st_size < spec.total_bytes * 1.05
        stats = sandbox.nodetool("tablestats", f"{spec.keyspace}.{table.name}").stdout
        assert re.search(r"SSTable count: 1\b", stats)
        assert int(re.search(r"Space used \(live\): (\d+)", stats).group(1)) >= table.data_bytes
        compression = (
            cql_session.execute(
                "SELECT compression FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s",
                (spec.keyspace, table.name),
            )
            .one()
            .compression
        )
        assert compression["class"].endswith("LZ4Compressor") and compression["chunk_length_in_kb"] == "16"


def test_loading_again_is_a_no_op(demo_tables, sandbox):
    again = ensure_loaded(sandbox, WideTable())
    assert not again.loaded_now
    assert again.wide.data_files == demo_tables.wide.data_files


def test_sizes_are_options(sandbox, cql_session):
    spec = WideTable(keyspace="casstrace_demo_small", rows=5, columns=3, first_column_bytes=10, other_column_bytes=2000)
    data = ensure_loaded(sandbox, spec, force=True)
    assert data.loaded_now and len(data.wide.data_files) == len(data.narrow.data_files) == 1
    columns = [
        row.column_name
        for row in cql_session.execute(
            "SELECT column_name FROM system_schema.columns WHERE keyspace_name = %s AND table_name = %s",
            (spec.keyspace, spec.table),
        )
    ]
    assert sorted(columns) == ["c0", "c1", "c2", "stream_id", "ts"]
    rows = list(cql_session.execute(f"SELECT c0, c2 FROM {spec.keyspace}.{spec.table}"))
    assert [(len(r.c0), len(r.c2)) for r in rows] == [(10, 2000)] * 5
    cql_session.execute(f"DROP KEYSPACE {spec.keyspace}")
