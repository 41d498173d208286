"""The tables the verdict tests read, by class of query (tests/integration/test_verdict_classes.py, and the 4.1
mmap node of tests/integration/test_mmap_nodes.py): what each query reads is known from how its data was laid
out, loaded once per node and kept (a table comment marks a finished load)."""

import random
import time
from pathlib import Path
from typing import Any

from cassandra.concurrent import execute_concurrent_with_args

from casstrace.analyses import analyse
from casstrace.analyses.model import Analysis
from casstrace.node.connection import resolve_settings
from casstrace.orchestration.kept_capture import KeptCapture
from casstrace.orchestration.runner import RunOptions, run
from casstrace.sandbox.control import Sandbox

KEYSPACE = "casstrace_verdicts"
LOADED = "casstrace verdict classes, loaded v2"  # the last table's comment once its tables are loaded
# A scan must read past a 5.0 range read's 256 KiB read-ahead ten times over to be flagged: the
# tables scanned hold some MB.
USERS = 10_000  # ~400 B rows: 4 MB, ~250 chunks of 16 KiB
SENSOR_ROWS = 10_000  # one wide partition of ~600 B rows
SMALL_SENSORS = range(2, 12)  # partitions of SMALL_SENSOR_ROWS rows
SMALL_SENSOR_ROWS = 20
QUEUE_ROWS, QUEUE_LIVE = 2_000, 10  # rows of 1,000 B, all but QUEUE_LIVE deleted after a flush
FRAGMENT_FLUSHES, FRAGMENT_ROWS = 12, 20  # the same 20 rows of 2,000 B written again before each flush

NOT_FLAGGED = {
    "point read by full primary key": f"SELECT email FROM {KEYSPACE}.users WHERE user_id = 1234",
    "point read, uncompressed table": f"SELECT email FROM {KEYSPACE}.users_plain WHERE user_id = 1234",
    "all columns of one row": f"SELECT * FROM {KEYSPACE}.users WHERE user_id = 77",
    "point reads of ten keys (IN)": f"SELECT email FROM {KEYSPACE}.users WHERE user_id IN "
    "(5, 42, 77, 500, 1000, 1234, 1500, 2000, 2500, 2999)",
    "time-series slice with LIMIT": f"SELECT ts, value FROM {KEYSPACE}.events WHERE sensor = 1 AND ts < 3000 LIMIT 50",
    "latest rows of a small partition": f"SELECT * FROM {KEYSPACE}.events WHERE sensor = 3 LIMIT 5",
    "first rows of a table (LIMIT, no key)": f"SELECT * FROM {KEYSPACE}.users LIMIT 10",
}
FLAGGED = {  # query -> the cause named first
    "partition mostly tombstones": (f"SELECT v FROM {KEYSPACE}.queue WHERE pk = 1", "tombstones"),
    "partition across many SSTables": (f"SELECT * FROM {KEYSPACE}.fragments WHERE pk = 1", "many_sstables"),
    "filtering scan": (
        f"SELECT user_id FROM {KEYSPACE}.users WHERE email = 'user42@example.com' ALLOW FILTERING",
        "filtering_scan",
    ),
    # Every row, one small column: what is not needed is the other cells of each row (a clustering
    # restriction without partition key is no such case: Cassandra seeks to the rows in each partition).
    "scan without partition key": (f"SELECT name FROM {KEYSPACE}.users", "full_row_read"),
    "wide partition without clustering restriction": (
        f"SELECT ts, value FROM {KEYSPACE}.events WHERE sensor = 1 AND status = 'alarm' ALLOW FILTERING",
        "whole_partition_scan",
    ),
}


def load(node: Sandbox, *, pathological: bool = True) -> None:
    """The module's tables on `node` (without the queue and fragments tables, whose 13 flushes take
    a while, unless `pathological`), unless a finished load is there already."""
    last = "fragments" if pathological else "events"
    with node.connect() as session:
        marked = list(
            session.execute(
                "SELECT comment FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s",
                (KEYSPACE, last),
            )
        )
        if marked and marked[0].comment == LOADED:
            return
        session.execute(f"DROP KEYSPACE IF EXISTS {KEYSPACE}")
        session.execute(
            f"CREATE KEYSPACE {KEYSPACE} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
        )
        lz4 = "compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 16}"
        no_compaction = "compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}"
        for table, compression in (("users", lz4), ("users_plain", "compression = {'enabled': 'false'}")):
            session.execute(
                f"CREATE TABLE {KEYSPACE}.{table} (user_id int PRIMARY KEY, name text, email text, "
                f"bio text) WITH {compression}"
            )
        session.execute(
            f"CREATE TABLE {KEYSPACE}.events (sensor int, ts int, status text, value text, "
            f"PRIMARY KEY (sensor, ts)) WITH CLUSTERING ORDER BY (ts DESC) AND {lz4}"
        )
        session.execute(
            f"CREATE TABLE {KEYSPACE}.queue (pk int, ck int, v text, PRIMARY KEY (pk, ck)) "
            f"WITH {lz4} AND {no_compaction} AND gc_grace_seconds = 864000"
        )
        session.execute(
            f"CREATE TABLE {KEYSPACE}.fragments (pk int, ck int, v text, PRIMARY KEY (pk, ck)) "
            f"WITH {lz4} AND {no_compaction}"
        )
        values = random.Random(23)
        users = [(i, f"user{i}", f"user{i}@example.com", values.randbytes(170).hex()) for i in range(USERS)]
        for table in ("users", "users_plain"):
            insert = session.prepare(f"INSERT INTO {KEYSPACE}.{table} (user_id, name, email, bio) VALUES (?, ?, ?, ?)")
            execute_concurrent_with_args(session, insert, users, concurrency=64, raise_on_first_error=True)
        insert = session.prepare(f"INSERT INTO {KEYSPACE}.events (sensor, ts, status, value) VALUES (?, ?, ?, ?)")
        events = [(1, ts, "alarm" if ts == 1_500 else "ok", values.randbytes(300).hex()) for ts in range(SENSOR_ROWS)]
        events += [
            (sensor, ts, "ok", values.randbytes(100).hex())
            for sensor in SMALL_SENSORS
            for ts in range(SMALL_SENSOR_ROWS)
        ]
        execute_concurrent_with_args(session, insert, events, concurrency=64, raise_on_first_error=True)
        if not pathological:
            node.nodetool("flush", KEYSPACE)
            session.execute(f"ALTER TABLE {KEYSPACE}.{last} WITH comment = '{LOADED}'")
            return
        insert = session.prepare(f"INSERT INTO {KEYSPACE}.queue (pk, ck, v) VALUES (1, ?, ?)")
        execute_concurrent_with_args(
            session,
            insert,
            [(ck, values.randbytes(500).hex()) for ck in range(QUEUE_ROWS)],
            concurrency=64,
            raise_on_first_error=True,
        )
        node.nodetool("flush", KEYSPACE)
        delete = session.prepare(f"DELETE FROM {KEYSPACE}.queue WHERE pk = 1 AND ck = ?")
        execute_concurrent_with_args(
            session, delete, [(ck,) for ck in range(QUEUE_LIVE, QUEUE_ROWS)], concurrency=64, raise_on_first_error=True
        )
        insert = session.prepare(f"INSERT INTO {KEYSPACE}.fragments (pk, ck, v) VALUES (1, ?, ?)")
        for _ in range(FRAGMENT_FLUSHES):
            execute_concurrent_with_args(
                session,
                insert,
                [(ck, values.randbytes(1_000).hex()) for ck in range(FRAGMENT_ROWS)],
                concurrency=64,
                raise_on_first_error=True,
            )
            node.nodetool("flush", KEYSPACE)
        for table in ("events", "fragments"):
            session.execute(f"ALTER TABLE {KEYSPACE}.{table} WITH comment = '{LOADED}'")


def traced(node: Sandbox, query: str, out: Path, capture: KeptCapture | None = None, **options: Any) -> Analysis:
    """The query run on the node and analysed: repeat 2 unless `options` (RunOptions' fields) say
    otherwise; through `capture` when the module keeps one."""
    settings = resolve_settings(node.host, node.native_port)
    run_options = RunOptions(query=query, connection=settings, out=out, **({"repeat": 2} | options))
    return analyse(capture.run(run_options) if capture is not None else run(run_options))


def judged(analysis: Analysis) -> str:
    """What a failing assertion shows: the verdict, and the causes with their shares."""
    causes = [
        (f.cause, f.certainty, None if f.excess_share is None else round(f.excess_share, 2)) for f in analysis.findings
    ]
    return f"{analysis.verdict.status}: {analysis.verdict.summary} causes {causes}"


# CQL's other read shapes (issue 33), each judged with its own model: a keyspace of its own, small
# tables (a few MB in all), loaded once per node and kept like the tables above.
SHAPES = "casstrace_shapes"
SHAPES_LOADED = "casstrace read shapes, loaded v1"  # the sessions table's comment once its tables are loaded
PEOPLE, CITIES = 5_000, 500  # ~400 B rows, ten a city (and a team): ten rows, ten partitions per lookup
SENSORS, READINGS = 30, 200  # partitions of 200 rows of ~300 B (~60 KB each, no row index) and a static
PROFILES = 40  # rows of a 300-element map (~35 KB) and a frozen UDT of ~40 KB
SESSION_ROWS, SESSION_LIVE = 2_000, 10  # rows of ~1,000 B, all but SESSION_LIVE written with a 1 s TTL
# The live rows' TTL. A load kept across runs is loaded again once less than LIVE_LEFT_S is left of
# it, so that no run sees them expire.
SESSION_LIVE_TTL_S, LIVE_LEFT_S = 86_400, 6 * 3_600

SHAPES_NOT_FLAGGED = {
    "through a secondary index": f"SELECT name FROM {SHAPES}.people WHERE city = 'city17'",
    "through an SAI index": f"SELECT name FROM {SHAPES}.people WHERE team = 'team17'",
    "from a materialized view": f"SELECT name FROM {SHAPES}.people_by_city WHERE city = 'city17'",
    "distinct partition keys": f"SELECT DISTINCT sensor FROM {SHAPES}.readings",
    "a static column": f"SELECT DISTINCT sensor, location FROM {SHAPES}.readings WHERE sensor = 7",
    "a static column beside rows": f"SELECT location, value FROM {SHAPES}.readings WHERE sensor = 7 AND ts < 5",
    "IN on a clustering column": f"SELECT value FROM {SHAPES}.readings WHERE sensor = 7 AND ts IN (1, 70, 150)",
    "token range with LIMIT": f"SELECT sensor, ts FROM {SHAPES}.readings WHERE token(sensor) > 0 LIMIT 10",
    "a counter": f"SELECT views FROM {SHAPES}.hits WHERE page = 42",
    # the whole cell is necessary (a collection's elements lie together; a frozen UDT is one cell)
    "an element of a large map": f"SELECT attrs['k1'] FROM {SHAPES}.profiles WHERE id = 7",
    "a field of a large frozen UDT": f"SELECT addr.city FROM {SHAPES}.profiles WHERE id = 7",
}
SHAPES_FLAGGED = {  # query -> the cause named first
    "rows past their TTL": (f"SELECT v FROM {SHAPES}.sessions WHERE pk = 1", "expired_cells"),
}
SAI_SHAPES = {"through an SAI index"}  # 5.0 only


def load_shapes(node: Sandbox) -> None:
    """The read shapes' tables on `node` (SAI on 5.0 only), unless a finished load is there already."""
    with node.connect() as session:
        if _loaded(session, "sessions", SHAPES_LOADED) and _live_rows_last(session):
            return

        def ddl(cql: str) -> None:
            _schema_change(session, cql)

        ddl(f"DROP KEYSPACE IF EXISTS {SHAPES}")
        ddl(f"CREATE KEYSPACE {SHAPES} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
        lz4 = "compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 16}"
        ddl(f"CREATE TABLE {SHAPES}.people (id int PRIMARY KEY, city text, team text, name text, bio text) WITH {lz4}")
        ddl(f"CREATE INDEX people_city ON {SHAPES}.people (city)")
        release = session.execute("SELECT release_version FROM system.local").one().release_version
        if int(release.split(".")[0]) >= 5:
            ddl(f"CREATE INDEX people_team ON {SHAPES}.people (team) USING 'sai'")
        ddl(
            f"CREATE MATERIALIZED VIEW {SHAPES}.people_by_city AS SELECT * FROM {SHAPES}.people "
            f"WHERE city IS NOT NULL AND id IS NOT NULL PRIMARY KEY (city, id) WITH {lz4}"
        )
        ddl(
            f"CREATE TABLE {SHAPES}.readings (sensor int, ts int, value text, location text static, "
            f"PRIMARY KEY (sensor, ts)) WITH {lz4}"
        )
        ddl(f"CREATE TABLE {SHAPES}.hits (page int PRIMARY KEY, views counter) WITH {lz4}")
        ddl(f"CREATE TYPE {SHAPES}.address (street text, city text, notes text)")
        ddl(
            f"CREATE TABLE {SHAPES}.profiles (id int PRIMARY KEY, attrs map<text, text>, addr frozen<address>) "
            f"WITH {lz4}"
        )
        ddl(
            f"CREATE TABLE {SHAPES}.sessions (pk int, ck int, v text, PRIMARY KEY (pk, ck)) "
            f"WITH {lz4} AND gc_grace_seconds = 864000"
        )
        values = random.Random(33)

        def insert(cql: str, rows: list[tuple]) -> None:
            execute_concurrent_with_args(session, session.prepare(cql), rows, concurrency=32, raise_on_first_error=True)

        insert(
            f"INSERT INTO {SHAPES}.people (id, city, team, name, bio) VALUES (?, ?, ?, ?, ?)",
            [
                (i, f"city{i % CITIES}", f"team{i % CITIES}", f"name{i}", values.randbytes(170).hex())
                for i in range(PEOPLE)
            ],
        )
        insert(
            f"INSERT INTO {SHAPES}.readings (sensor, ts, value) VALUES (?, ?, ?)",
            [(sensor, ts, values.randbytes(150).hex()) for sensor in range(SENSORS) for ts in range(READINGS)],
        )
        insert(f"UPDATE {SHAPES}.readings SET location = ? WHERE sensor = ?", [(f"site{s}", s) for s in range(SENSORS)])
        insert(f"UPDATE {SHAPES}.hits SET views = views + ? WHERE page = ?", [(i, i) for i in range(PEOPLE)])
        insert(
            f"INSERT INTO {SHAPES}.profiles (id, attrs, addr) VALUES (?, ?, ?)",
            [
                (
                    i,
                    {f"k{j}": values.randbytes(50).hex() for j in range(300)},
                    ("street", "city", values.randbytes(20_000).hex()),
                )
                for i in range(PROFILES)
            ],
        )
        insert(
            f"INSERT INTO {SHAPES}.sessions (pk, ck, v) VALUES (1, ?, ?) USING TTL ?",
            [
                (ck, values.randbytes(500).hex(), SESSION_LIVE_TTL_S if ck < SESSION_LIVE else 1)
                for ck in range(SESSION_ROWS)
            ],
        )
        time.sleep(2)  # past the TTL: expired cells, kept until gc_grace_seconds
        node.nodetool("flush", SHAPES)
        ddl(f"ALTER TABLE {SHAPES}.sessions WITH comment = '{SHAPES_LOADED}'")


# A low-cardinality index (issue 33): MEMBERS rows of ~400 B, one a partition, half of them of each
# value of `parity` (legacy index) and of `grade` (SAI, 5.0): a value's rows lie in every chunk of the
# table, and the node reads each by its key, its chunk again for each.
MEMBERS = 2_000
MEMBERS_LOADED = "casstrace low-cardinality index, loaded v2"
LOW_CARDINALITY = {  # query -> the index kind it reads through
    "through a low-cardinality index": (f"SELECT * FROM {SHAPES}.members WHERE parity = 1", "legacy"),
    "through a low-cardinality SAI index": (f"SELECT * FROM {SHAPES}.members WHERE grade = 'b'", "sai"),
}


def load_low_cardinality(node: Sandbox) -> None:
    """The members table on `node` (after load_shapes: its keyspace), unless loaded already."""
    with node.connect() as session:
        if _loaded(session, "members", MEMBERS_LOADED):
            return

        _schema_change(session, f"DROP TABLE IF EXISTS {SHAPES}.members")
        _schema_change(
            session,
            f"CREATE TABLE {SHAPES}.members (id int PRIMARY KEY, parity int, grade text, name text, bio text) "
            "WITH compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 16}",
        )
        _schema_change(session, f"CREATE INDEX members_parity ON {SHAPES}.members (parity)")
        release = session.execute("SELECT release_version FROM system.local").one().release_version
        if int(release.split(".")[0]) >= 5:
            _schema_change(session, f"CREATE INDEX members_grade ON {SHAPES}.members (grade) USING 'sai'")
        values = random.Random(34)
        execute_concurrent_with_args(
            session,
            session.prepare(f"INSERT INTO {SHAPES}.members (id, parity, grade, name, bio) VALUES (?, ?, ?, ?, ?)"),
            [(i, i % 2, "ab"[i % 2], f"name{i}", values.randbytes(170).hex()) for i in range(MEMBERS)],
            concurrency=32,
            raise_on_first_error=True,
        )
        node.nodetool("flush", SHAPES)
        _schema_change(session, f"ALTER TABLE {SHAPES}.members WITH comment = '{MEMBERS_LOADED}'")


def _loaded(session, table: str, marker: str) -> bool:
    """Whether the shapes keyspace's `table` carries `marker` as its comment: its load finished."""
    marked = list(
        session.execute(
            "SELECT comment FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s", (SHAPES, table)
        )
    )
    return bool(marked) and marked[0].comment == marker


def _live_rows_last(session) -> bool:
    """Whether the sessions table's SESSION_LIVE rows are all live, with LIVE_LEFT_S or more of their TTL left."""
    rows = session.execute(f"SELECT TTL(v) AS remaining FROM {SHAPES}.sessions WHERE pk = 1 AND ck < {SESSION_LIVE}")
    left = [row.remaining for row in rows]
    return len(left) == SESSION_LIVE and min(left) >= LIVE_LEFT_S


def _schema_change(session, cql: str) -> None:
    """A schema change waits for the node's agreement: on a busy machine, long."""
    session.execute(cql, timeout=120)
