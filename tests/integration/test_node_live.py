"""casstrace.node against the test sandbox: payload bytes, digests, context gathering."""

from pathlib import Path

import pytest

from casstrace.node import context
from casstrace.node.connection import NodeSession, resolve_settings
from casstrace.node.jvm import find_cassandra
from casstrace.node.query import MeasuringProtocolHandler, execute, prepare

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def node(sandbox):
    settings = resolve_settings(host=sandbox.host, port=sandbox.port, environ={})
    with NodeSession(settings, protocol_handler=MeasuringProtocolHandler) as session:
        yield session


def run_query(node, query, **options):
    return execute(node.session, prepare(node.session, query), **options)


def test_payload_bytes_are_the_returned_values(node, demo_tables, cql_session):
    spec = demo_tables.spec
    table = f"{demo_tables.keyspace}.{spec.table}"
    result = run_query(node, f"SELECT c0 FROM {table} WHERE stream_id = {spec.stream_id}", page_size=64)
    assert (result.rows, result.pages) == (spec.rows, 4)
    assert result.payload_bytes == 100 * result.rows
    # Independently: the lengths of the values the stock driver decodes.
    wide = list(cql_session.execute(f"SELECT ts, c0, c1 FROM {table} WHERE stream_id = {spec.stream_id}"))
    two_columns = run_query(node, f"SELECT ts, c0, c1 FROM {table} WHERE stream_id = {spec.stream_id}")
    assert two_columns.payload_bytes == sum(4 + len(row.c0) + len(row.c1) for row in wide)


def test_digest_tells_same_data_from_different_data(node, demo_tables):
    spec = demo_tables.spec
    where = f"WHERE stream_id = {spec.stream_id}"
    wide = run_query(node, f"SELECT c0 FROM {demo_tables.keyspace}.{spec.table} {where}", page_size=7)
    narrow = run_query(node, f"SELECT value FROM {demo_tables.keyspace}.{spec.narrow_table} {where} AND column_no = 0")
    assert wide.digest == narrow.digest and wide.pages != narrow.pages
    other_column = run_query(node, f"SELECT c1 FROM {demo_tables.keyspace}.{spec.table} {where} LIMIT 3")
    fewer_rows = run_query(node, f"SELECT c0 FROM {demo_tables.keyspace}.{spec.table} {where} LIMIT 199")
    assert len({wide.digest, other_column.digest, fewer_rows.digest}) == 3


def test_context_describes_the_table_and_its_sstables(node, demo_tables):
    query = f"SELECT c0 FROM {demo_tables.spec.table} WHERE stream_id = 1"
    node.use_keyspace(demo_tables.keyspace)
    gathered = context.gather(
        node.session,
        find_cassandra(native_port=node.settings.port),
        prepare(node.session, query),
        query,
        demo_tables.keyspace,
    )
    (table,) = gathered["tables"]
    assert [c["name"] for c in table["columns"][:2]] == ["stream_id", "ts"]
    assert {(c["name"], c["type"], c["kind"]) for c in table["columns"][2:]} == {
        (name, "blob", "regular") for name in demo_tables.spec.column_names
    }
    assert table["compression"]["class"].endswith("LZ4Compressor")
    data = [f for f in table["sstables"] if f["path"].endswith("-Data.db")]
    assert [Path(f["path"]) for f in data] == demo_tables.wide.data_files
    assert all(f["path"].startswith(tuple(gathered["data_file_directories"])) for f in data)


def test_credentials_from_cqlshrc_are_passed_to_the_driver(sandbox, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".cassandra").mkdir()
    (tmp_path / ".cassandra" / "cqlshrc").write_text("[authentication]\nusername = rc_user\npassword = rc_secret\n")
    # The test sandbox does not authenticate, so the connection succeeds either way; what matters
    # is that the driver was given the credentials to answer a challenge with.
    with NodeSession(resolve_settings(host=sandbox.host, port=sandbox.port, environ={})) as session:
        provider = session.cluster.auth_provider
        assert (provider.username, provider.password) == ("rc_user", "rc_secret")
