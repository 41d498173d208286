"""Verdicts by class of query, on real nodes: everyday reads are not flagged, however small their
payload; pathological reads are flagged with the right cause first.

The truth is how the data was laid out (tables of this module, loaded once per node and kept: a
table comment marks a finished load): a point read by primary key of ~400 B rows reads one 16 KiB
chunk; a partition of 2,000 rows of which 1,990 were deleted afterwards (a second SSTable of
tombstones); a partition written over 12 flushes with compaction off (12 SSTables); a table scan
that keeps one row. On the test node (5.0, BIG) and a 5.0 node writing BTI (a node of this module,
127.0.0.1 on its own ports, left running when it already ran), compressed and not.
"""

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from cassandra.concurrent import execute_concurrent_with_args

from casstrace.analyses import analyse
from casstrace.analyses.model import Analysis
from casstrace.node.connection import resolve_settings
from casstrace.node.runner import RunOptions, run
from casstrace.sandbox.control import Sandbox
from casstrace.sandbox.demo import WideTable

pytestmark = pytest.mark.integration

KEYSPACE = "casstrace_verdicts"
LOADED = "casstrace verdict classes, loaded v1"     # the last table's comment once every table is loaded
USERS = 3_000                     # ~400 B rows: 1.2 MB, 74 chunks of 16 KiB
SENSOR_ROWS = 4_000               # one wide partition of 200 B rows
SMALL_SENSORS = range(2, 12)      # partitions of SMALL_SENSOR_ROWS rows
SMALL_SENSOR_ROWS = 20
QUEUE_ROWS, QUEUE_LIVE = 2_000, 10   # rows of 1,000 B, all but QUEUE_LIVE deleted after a flush
FRAGMENT_FLUSHES, FRAGMENT_ROWS = 12, 20   # the same 20 rows of 2,000 B written again before each flush
BTI_DATA_DIR = Path(os.environ.get("CASSTRACE_TEST_BTI_DATA_DIR")
                    or Path.home() / ".local/share/casstrace/test-bti-sandbox")
BTI_NATIVE_PORT = int(os.environ.get("CASSTRACE_TEST_BTI_NATIVE_PORT", "19312"))
BTI_JMX_PORT = int(os.environ.get("CASSTRACE_TEST_BTI_JMX_PORT", "17312"))
DEMO = WideTable()

NOT_FLAGGED = {
    "point read by full primary key": f"SELECT email FROM {KEYSPACE}.users WHERE user_id = 1234",
    "point read, uncompressed table": f"SELECT email FROM {KEYSPACE}.users_plain WHERE user_id = 1234",
    "all columns of one row": f"SELECT * FROM {KEYSPACE}.users WHERE user_id = 77",
    "time-series slice with LIMIT": f"SELECT ts, value FROM {KEYSPACE}.events WHERE sensor = 1 AND ts < 3000 LIMIT 50",
    "latest rows of a small partition": f"SELECT * FROM {KEYSPACE}.events WHERE sensor = 3 LIMIT 5",
}
FLAGGED = {   # query -> the cause named first
    "partition mostly tombstones": (f"SELECT v FROM {KEYSPACE}.queue WHERE pk = 1", "tombstones"),
    "partition across many SSTables": (f"SELECT * FROM {KEYSPACE}.fragments WHERE pk = 1", "many_sstables"),
    "filtering scan": (f"SELECT user_id FROM {KEYSPACE}.users WHERE email = 'user42@example.com' ALLOW FILTERING",
                       "whole_partition_scan"),
    "scan without partition key": (f"SELECT * FROM {KEYSPACE}.events WHERE ts = 7 ALLOW FILTERING",
                                   "whole_partition_scan"),
    "wide partition without clustering restriction": (
        f"SELECT ts, value FROM {KEYSPACE}.events WHERE sensor = 1 AND status = 'alarm' ALLOW FILTERING",
        "whole_partition_scan"),
}


def load(node: Sandbox) -> None:
    """The module's tables on `node`, unless a finished load is there already."""
    with node.connect() as session:
        marked = list(session.execute("SELECT comment FROM system_schema.tables WHERE keyspace_name = %s "
                                      "AND table_name = 'fragments'", (KEYSPACE,)))
        if marked and marked[0].comment == LOADED:
            return
        session.execute(f"DROP KEYSPACE IF EXISTS {KEYSPACE}")
        session.execute(f"CREATE KEYSPACE {KEYSPACE} WITH replication = {{'class': 'SimpleStrategy', "
                        "'replication_factor': 1}")
        lz4 = "compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 16}"
        no_compaction = "compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}"
        for table, compression in (("users", lz4), ("users_plain", "compression = {'enabled': 'false'}")):
            session.execute(f"CREATE TABLE {KEYSPACE}.{table} (user_id int PRIMARY KEY, name text, email text, "
                            f"bio text) WITH {compression}")
        session.execute(f"CREATE TABLE {KEYSPACE}.events (sensor int, ts int, status text, value text, "
                        f"PRIMARY KEY (sensor, ts)) WITH CLUSTERING ORDER BY (ts DESC) AND {lz4}")
        session.execute(f"CREATE TABLE {KEYSPACE}.queue (pk int, ck int, v text, PRIMARY KEY (pk, ck)) "
                        f"WITH {lz4} AND {no_compaction} AND gc_grace_seconds = 864000")
        session.execute(f"CREATE TABLE {KEYSPACE}.fragments (pk int, ck int, v text, PRIMARY KEY (pk, ck)) "
                        f"WITH {lz4} AND {no_compaction}")
        values = random.Random(23)
        users = [(i, f"user{i}", f"user{i}@example.com", values.randbytes(170).hex()) for i in range(USERS)]
        for table in ("users", "users_plain"):
            insert = session.prepare(f"INSERT INTO {KEYSPACE}.{table} (user_id, name, email, bio) VALUES (?, ?, ?, ?)")
            execute_concurrent_with_args(session, insert, users, concurrency=64, raise_on_first_error=True)
        insert = session.prepare(f"INSERT INTO {KEYSPACE}.events (sensor, ts, status, value) VALUES (?, ?, ?, ?)")
        events = [(1, ts, "alarm" if ts == 1_500 else "ok", values.randbytes(100).hex()) for ts in range(SENSOR_ROWS)]
        events += [(sensor, ts, "ok", values.randbytes(100).hex())
                   for sensor in SMALL_SENSORS for ts in range(SMALL_SENSOR_ROWS)]
        execute_concurrent_with_args(session, insert, events, concurrency=64, raise_on_first_error=True)
        insert = session.prepare(f"INSERT INTO {KEYSPACE}.queue (pk, ck, v) VALUES (1, ?, ?)")
        execute_concurrent_with_args(session, insert, [(ck, values.randbytes(500).hex()) for ck in range(QUEUE_ROWS)],
                                     concurrency=64, raise_on_first_error=True)
        node.nodetool("flush", KEYSPACE)
        delete = session.prepare(f"DELETE FROM {KEYSPACE}.queue WHERE pk = 1 AND ck = ?")
        execute_concurrent_with_args(session, delete, [(ck,) for ck in range(QUEUE_LIVE, QUEUE_ROWS)],
                                     concurrency=64, raise_on_first_error=True)
        insert = session.prepare(f"INSERT INTO {KEYSPACE}.fragments (pk, ck, v) VALUES (1, ?, ?)")
        for _ in range(FRAGMENT_FLUSHES):
            execute_concurrent_with_args(session, insert, [(ck, values.randbytes(1_000).hex())
                                                           for ck in range(FRAGMENT_ROWS)],
                                         concurrency=64, raise_on_first_error=True)
            node.nodetool("flush", KEYSPACE)
        session.execute(f"ALTER TABLE {KEYSPACE}.fragments WITH comment = '{LOADED}'")


def traced(node: Sandbox, query: str, out: Path) -> Analysis:
    return analyse(run(RunOptions(query=query, connection=resolve_settings(node.host, node.native_port),
                                  out=out, repeat=2)))


@pytest.fixture(scope="module")
def big(sandbox: Sandbox) -> Sandbox:
    assert (sandbox.settings.sstable_format or "big") == "big"
    load(sandbox)
    return sandbox


@pytest.fixture(scope="module")
def bti() -> Iterator[Sandbox]:
    node = Sandbox(BTI_DATA_DIR)
    started_here = not node.is_running()
    if started_here:
        node.start(version="5.0", native_port=BTI_NATIVE_PORT, jmx_port=BTI_JMX_PORT, sstable_format="bti",
                   heap="512M", progress=lambda _: None)
    load(node)
    yield node
    if started_here:
        node.stop()


def judged(analysis: Analysis) -> str:
    """What a failing assertion shows: the verdict, and the causes with their shares."""
    causes = [(f.cause, f.certainty, None if f.excess_share is None else round(f.excess_share, 2))
              for f in analysis.findings]
    return f"{analysis.verdict.status}: {analysis.verdict.summary} causes {causes}"


@pytest.mark.parametrize("label", NOT_FLAGGED)
def test_everyday_reads_are_not_flagged_on_big(big, label, tmp_path):
    analysis = traced(big, NOT_FLAGGED[label], tmp_path / "q.trace")
    assert analysis.verdict.status == "not flagged", judged(analysis)
    assert analysis.necessary is not None and analysis.necessary.sstable_format == "big"
    assert analysis.findings == []


@pytest.mark.parametrize("label", ["point read by full primary key", "point read, uncompressed table",
                                   "all columns of one row", "latest rows of a small partition"])
def test_everyday_reads_are_not_flagged_on_bti(bti, label, tmp_path):
    analysis = traced(bti, NOT_FLAGGED[label], tmp_path / "q.trace")
    assert analysis.verdict.status == "not flagged", judged(analysis)
    assert analysis.necessary is not None and analysis.necessary.sstable_format == "bti"


def test_a_point_read_is_judged_against_one_chunk_as_stored(big, tmp_path):
    """The issue's users table: the read is one LZ4 chunk; the necessary read is that chunk as the
    SSTable stores it (CompressionInfo.db, read at run time) and one index page."""
    analysis = traced(big, NOT_FLAGGED["point read by full primary key"], tmp_path / "point.trace")
    necessary = analysis.necessary
    assert (necessary.units, necessary.chunk_length, necessary.index_bytes) == (1, 16_384, 4_096)
    with_layout = [s for s in _storage(analysis) if s.get("compression")]
    assert with_layout and with_layout[0]["compression"]["chunk_length"] == 16_384
    layout = with_layout[0]["compression"]
    assert necessary.unit_bytes == -(-layout["compressed_bytes"] // layout["chunks"])
    assert analysis.overall.read > 100        # the payload basis would have flagged it
    per_execution = analysis.read_per_execution
    assert 0.5 * necessary.bytes <= per_execution <= 2 * necessary.bytes, judged(analysis)


def _storage(analysis: Analysis) -> list[dict]:
    return analysis.context["table_schema"].get("storage") or []


@pytest.mark.parametrize("label", FLAGGED)
def test_pathological_reads_are_flagged_with_the_right_cause_first(big, label, tmp_path):
    query, cause = FLAGGED[label]
    analysis = traced(big, query, tmp_path / "q.trace")
    assert analysis.verdict.status == "flagged", judged(analysis)
    assert analysis.findings[0].cause == cause, judged(analysis)
    assert analysis.findings[0].excess_share >= 0.5, judged(analysis)


def test_full_row_read_of_wide_rows_is_flagged_with_its_cause_first(big, demo_tables, tmp_path):
    analysis = traced(big, DEMO.wide_query, tmp_path / "wide.trace")
    assert analysis.verdict.status == "flagged", judged(analysis)
    assert [f.cause for f in analysis.findings][:2] == ["full_row_read", "whole_partition_scan"], judged(analysis)
