"""The wide table of the reference write-up (CASSANDRA-6586) and its narrow refactor.

`WideTable` describes both tables; `ensure_loaded` creates and fills them once, then flushes and
compacts each to a single SSTable so a trace of a read sees one Data.db per table. The table's
comment records the description it was loaded with, written last: a load that was interrupted, or
one with other sizes, is simply redone.
"""

import dataclasses
import json
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from cassandra.cluster import Session
from cassandra.concurrent import execute_concurrent_with_args

from casstrace.errors import CasstraceError
from casstrace.sandbox.control import Sandbox

# The narrow rows of one wide row go in a few at a time: past about 1 MiB of requests in flight on
# a connection (native_transport_receive_queue_capacity) the node stops reading it, and the driver
# fails the next request with "Connection ... is overloaded" (100 columns of 100 KB did).
NARROW_IN_FLIGHT_BYTES = 512 * 1024


@dataclasses.dataclass(frozen=True)
class WideTable:
    keyspace: str = "casstrace_demo"
    table: str = "streams"
    narrow_table: str = "streams_narrow"
    stream_id: int = 1
    rows: int = 200
    columns: int = 20              # c0 .. c{columns-1}
    first_column_bytes: int = 100  # c0, the small column the demo query selects
    other_column_bytes: int = 50_000
    chunk_length_kb: int = 16
    seed: int = 6586

    @property
    def column_names(self) -> list[str]:
        return [f"c{i}" for i in range(self.columns)]

    def value_bytes(self, column_no: int) -> int:
        return self.first_column_bytes if column_no == 0 else self.other_column_bytes

    @property
    def row_bytes(self) -> int:
        return sum(self.value_bytes(i) for i in range(self.columns))

    @property
    def total_bytes(self) -> int:
        return self.rows * self.row_bytes

    def values(self) -> Iterator[tuple[int, list[bytes]]]:
        """(ts, [value of c0, c1, ...]) for every row: random, so LZ4 cannot shrink them, and
        seeded, so both tables and any later check see the same bytes."""
        generator = random.Random(self.seed)
        for ts in range(self.rows):
            yield ts, [generator.randbytes(self.value_bytes(i)) for i in range(self.columns)]

    @property
    def wide_query(self) -> str:
        """The write-up's query: one small column of the wide rows."""
        return f"SELECT c0 FROM {self.keyspace}.{self.table} WHERE stream_id = {self.stream_id}"

    @property
    def narrow_query(self) -> str:
        """The same values after the refactor: the column became a clustering row."""
        return (f"SELECT value FROM {self.keyspace}.{self.narrow_table}"
                f" WHERE stream_id = {self.stream_id} AND column_no = 0")

    def marker(self) -> str:
        return "casstrace demo data " + json.dumps(dataclasses.asdict(self), sort_keys=True)


@dataclasses.dataclass
class LoadedTable:
    name: str
    data_files: list[Path]    # the Data.db files (one after compaction)

    @property
    def data_bytes(self) -> int:
        return sum(path.stat().st_size for path in self.data_files)


@dataclasses.dataclass
class DemoData:
    spec: WideTable
    wide: LoadedTable
    narrow: LoadedTable
    loaded_now: bool          # False when the data was already there

    @property
    def keyspace(self) -> str:
        return self.spec.keyspace


def create_statements(spec: WideTable) -> list[str]:
    options = (f"WITH compression = {{'class': 'LZ4Compressor', "
               f"'chunk_length_in_kb': {spec.chunk_length_kb}}}")
    blobs = ", ".join(f"{name} blob" for name in spec.column_names)
    return [
        f"CREATE KEYSPACE IF NOT EXISTS {spec.keyspace} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}",
        f"DROP TABLE IF EXISTS {spec.keyspace}.{spec.table}",
        f"DROP TABLE IF EXISTS {spec.keyspace}.{spec.narrow_table}",
        f"CREATE TABLE {spec.keyspace}.{spec.table} (stream_id int, ts int, {blobs}, "
        f"PRIMARY KEY (stream_id, ts)) {options}",
        f"CREATE TABLE {spec.keyspace}.{spec.narrow_table} (stream_id int, column_no int, ts int, "
        f"value blob, PRIMARY KEY ((stream_id), column_no, ts)) {options}",
    ]


def is_loaded(session: Session, spec: WideTable) -> bool:
    rows = session.execute(
        "SELECT table_name, comment FROM system_schema.tables WHERE keyspace_name = %s",
        (spec.keyspace,))
    comments = {row.table_name: row.comment for row in rows}
    return all(comments.get(name) == spec.marker() for name in (spec.table, spec.narrow_table))


def load(session: Session, spec: WideTable, progress: Callable[[int], None] = lambda rows_done: None) -> None:
    """(Re)creates both tables and writes every row into each; `progress(n)` after each row."""
    for statement in create_statements(spec):
        session.execute(statement)
    columns = ", ".join(spec.column_names)
    insert_wide = session.prepare(
        f"INSERT INTO {spec.keyspace}.{spec.table} (stream_id, ts, {columns}) "
        f"VALUES (?, ?, {', '.join('?' * spec.columns)})")
    insert_narrow = session.prepare(
        f"INSERT INTO {spec.keyspace}.{spec.narrow_table} (stream_id, column_no, ts, value) "
        "VALUES (?, ?, ?, ?)")
    concurrency = max(1, NARROW_IN_FLIGHT_BYTES // max(1, spec.other_column_bytes))
    for ts, values in spec.values():
        session.execute(insert_wide, (spec.stream_id, ts, *values))
        execute_concurrent_with_args(session, insert_narrow, [(spec.stream_id, column_no, ts, value)
                                                              for column_no, value in enumerate(values)],
                                     concurrency=concurrency)
        progress(1)


def compact_to_one_sstable(sandbox: Sandbox, keyspace: str, tables: list[str]) -> None:
    """Flushes the memtables and major-compacts, so each table is one SSTable on disk."""
    sandbox.nodetool("flush", keyspace, *tables)
    sandbox.nodetool("compact", keyspace, *tables)


def data_files(sandbox: Sandbox, session: Session, keyspace: str, table: str, timeout: float = 30.0) -> list[Path]:
    """The table's live Data.db files. A table's directory is named after its id, so an older
    table of the same name (dropped, its directory left behind) is never counted. Compaction
    deletes the replaced SSTables a moment after it returns, hence the short wait for them."""
    row = session.execute("SELECT id FROM system_schema.tables WHERE keyspace_name = %s "
                          "AND table_name = %s", (keyspace, table)).one()
    if row is None:
        raise CasstraceError(f"table {keyspace}.{table} does not exist",
                             "load it first, e.g. with casstrace demo")
    directory = sandbox.layout.data / keyspace / f"{table}-{row.id.hex}"
    deadline = time.monotonic() + timeout
    while True:
        files = sorted(directory.glob("*-Data.db"))
        if len(files) <= 1 or time.monotonic() > deadline:
            return files
        time.sleep(0.2)


def ensure_loaded(sandbox: Sandbox, spec: WideTable = WideTable(),
                  progress: Callable[[int], None] = lambda rows_done: None, force: bool = False) -> DemoData:
    """Loads the demo tables into a running sandbox unless they are already there, as `spec`
    describes them, and returns where they live on disk."""
    with sandbox.connect() as session:
        loaded_now = force or not is_loaded(session, spec)
        if loaded_now:
            load(session, spec, progress)
            compact_to_one_sstable(sandbox, spec.keyspace, [spec.table, spec.narrow_table])
            for name in (spec.table, spec.narrow_table):
                comment = spec.marker().replace("'", "''")
                session.execute(f"ALTER TABLE {spec.keyspace}.{name} WITH comment = '{comment}'")
        wide, narrow = (LoadedTable(name, data_files(sandbox, session, spec.keyspace, name))
                        for name in (spec.table, spec.narrow_table))
    return DemoData(spec, wide, narrow, loaded_now)
