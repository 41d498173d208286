"""The wide table of the reference write-up (CASSANDRA-6586) and its narrow refactor.

`WideTable` describes both tables; `ensure_loaded` creates and fills them once, then flushes and
compacts each to a single SSTable so a trace of a read sees one Data.db per table (on every node
of a sandbox cluster, each replica holding the whole rows at replication factor = nodes). The
table's comment records the description it was loaded with, written last, and the keyspace its
replication factor: a load that was interrupted, or one with other sizes or another replication
factor, is simply redone.
"""

import dataclasses
import json
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from cassandra import ConsistencyLevel
from cassandra.cluster import Session
from cassandra.concurrent import execute_concurrent_with_args

from casstrace.errors import CasstraceError
from casstrace.sandbox.cluster import SandboxCluster
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
    columns: int = 20  # c0 .. c{columns-1}
    first_column_bytes: int = 100  # c0, the small column the demo query selects
    other_column_bytes: int = 50_000
    chunk_length_kb: int = 16
    seed: int = 6586
    # A property of the keyspace, not of the rows: is_loaded reads it from the schema, and the
    # marker leaves it out (data loaded before it existed, at 1, stays loaded).
    replication_factor: int = 1

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
        return (
            f"SELECT value FROM {self.keyspace}.{self.narrow_table}"
            f" WHERE stream_id = {self.stream_id} AND column_no = 0"
        )

    def marker(self) -> str:
        rows = {k: v for k, v in dataclasses.asdict(self).items() if k != "replication_factor"}
        return "casstrace demo data " + json.dumps(rows, sort_keys=True)


@dataclasses.dataclass
class LoadedTable:
    name: str
    data_files: list[Path]  # the Data.db files (one after compaction)

    @property
    def data_bytes(self) -> int:
        return sum(path.stat().st_size for path in self.data_files)


@dataclasses.dataclass
class NodeTables:
    """Both tables' files on one node of the sandbox."""

    address: str
    wide: LoadedTable
    narrow: LoadedTable


@dataclasses.dataclass
class DemoData:
    spec: WideTable
    wide: LoadedTable  # on the node the data was loaded through (node 1)
    narrow: LoadedTable
    loaded_now: bool  # False when the data was already there
    nodes: list[NodeTables]  # every node of the sandbox, node 1 first; one for a one-node sandbox

    @property
    def keyspace(self) -> str:
        return self.spec.keyspace


def create_statements(spec: WideTable) -> list[str]:
    options = f"WITH compression = {{'class': 'LZ4Compressor', 'chunk_length_in_kb': {spec.chunk_length_kb}}}"
    blobs = ", ".join(f"{name} blob" for name in spec.column_names)
    replication = f"{{'class': 'SimpleStrategy', 'replication_factor': {spec.replication_factor}}}"
    return [
        f"CREATE KEYSPACE IF NOT EXISTS {spec.keyspace} WITH replication = {replication}",
        f"ALTER KEYSPACE {spec.keyspace} WITH replication = {replication}",
        f"DROP TABLE IF EXISTS {spec.keyspace}.{spec.table}",
        f"DROP TABLE IF EXISTS {spec.keyspace}.{spec.narrow_table}",
        f"CREATE TABLE {spec.keyspace}.{spec.table} (stream_id int, ts int, {blobs}, "
        f"PRIMARY KEY (stream_id, ts)) {options}",
        f"CREATE TABLE {spec.keyspace}.{spec.narrow_table} (stream_id int, column_no int, ts int, "
        f"value blob, PRIMARY KEY ((stream_id), column_no, ts)) {options}",
    ]


def is_loaded(session: Session, spec: WideTable) -> bool:
    rows = session.execute(
        "SELECT table_name, comment FROM system_schema.tables WHERE keyspace_name = %s", (spec.keyspace,)
    )
    comments = {row.table_name: row.comment for row in rows}
    keyspace = session.execute(
        "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = %s", (spec.keyspace,)
    ).one()
    return (
        keyspace is not None
        and keyspace.replication.get("replication_factor") == str(spec.replication_factor)
        and all(comments.get(name) == spec.marker() for name in (spec.table, spec.narrow_table))
    )


def load(session: Session, spec: WideTable, progress: Callable[[int], None] = lambda rows_done: None) -> None:
    """(Re)creates both tables and writes every row into each; `progress(n)` after each row.
    Every write waits for all replicas (ALL), so each node's flush finds every row there."""
    for statement in create_statements(spec):
        session.execute(statement)
    columns = ", ".join(spec.column_names)
    insert_wide = session.prepare(
        f"INSERT INTO {spec.keyspace}.{spec.table} (stream_id, ts, {columns}) "
        f"VALUES (?, ?, {', '.join('?' * spec.columns)})"
    )
    insert_narrow = session.prepare(
        f"INSERT INTO {spec.keyspace}.{spec.narrow_table} (stream_id, column_no, ts, value) VALUES (?, ?, ?, ?)"
    )
    insert_wide.consistency_level = insert_narrow.consistency_level = ConsistencyLevel.ALL
    concurrency = max(1, NARROW_IN_FLIGHT_BYTES // max(1, spec.other_column_bytes))
    for ts, values in spec.values():
        session.execute(insert_wide, (spec.stream_id, ts, *values))
        execute_concurrent_with_args(
            session,
            insert_narrow,
            [(spec.stream_id, column_no, ts, value) for column_no, value in enumerate(values)],
            concurrency=concurrency,
        )
        progress(1)


def compact_to_one_sstable(nodes: list[Sandbox], keyspace: str, tables: list[str]) -> None:
    """Flushes the memtables and major-compacts on every node, so each table is one SSTable on
    disk on each node."""
    for node in nodes:
        node.nodetool("flush", keyspace, *tables)
        node.nodetool("compact", keyspace, *tables)


def data_files(sandbox: Sandbox, session: Session, keyspace: str, table: str, timeout: float = 30.0) -> list[Path]:
    """The table's live Data.db files. A table's directory is named after its id, so an older
    table of the same name (dropped, its directory left behind) is never counted. Compaction
    deletes the replaced SSTables a moment after it returns, hence the short wait for them."""
    row = session.execute(
        "SELECT id FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s", (keyspace, table)
    ).one()
    if row is None:
        raise CasstraceError(f"table {keyspace}.{table} does not exist", "load it first, e.g. with casstrace demo")
    directory = sandbox.layout.data / keyspace / f"{table}-{row.id.hex}"
    deadline = time.monotonic() + timeout
    while True:
        files = sorted(directory.glob("*-Data.db"))
        if len(files) <= 1 or time.monotonic() > deadline:
            return files
        time.sleep(0.2)


def ensure_loaded(
    sandbox: Sandbox | SandboxCluster,
    spec: WideTable = WideTable(),
    progress: Callable[[int], None] = lambda rows_done: None,
    force: bool = False,
) -> DemoData:
    """Loads the demo tables into a running sandbox (every node of a cluster running) unless they
    are already there, as `spec` describes them, and returns where they live on disk."""
    nodes = sandbox.nodes if isinstance(sandbox, SandboxCluster) else [sandbox]
    if spec.replication_factor > len(nodes):
        raise CasstraceError(
            f"replication factor {spec.replication_factor} needs {spec.replication_factor} "
            f"nodes; the sandbox in {nodes[0].data_dir} has {len(nodes)}",
            f"start a sandbox of {spec.replication_factor} nodes: casstrace sandbox start "
            f"--nodes {spec.replication_factor} --data-dir DIR, or lower --rf",
        )
    for number, node in enumerate(nodes, 1):
        if len(nodes) > 1 and not node.is_running():
            raise CasstraceError(
                f"node {number} ({node.host}) of the sandbox in {nodes[0].data_dir} is stopped",
                f"start it: casstrace sandbox start --data-dir {nodes[0].data_dir} --node {number}",
            )
    with nodes[0].connect() as session:
        loaded_now = force or not is_loaded(session, spec)
        if loaded_now:
            load(session, spec, progress)
            compact_to_one_sstable(nodes, spec.keyspace, [spec.table, spec.narrow_table])
            for name in (spec.table, spec.narrow_table):
                comment = spec.marker().replace("'", "''")
                session.execute(f"ALTER TABLE {spec.keyspace}.{name} WITH comment = '{comment}'")
        on_nodes = [
            NodeTables(
                node.host,
                *(
                    LoadedTable(name, data_files(node, session, spec.keyspace, name))
                    for name in (spec.table, spec.narrow_table)
                ),
            )
            for node in nodes
        ]
    return DemoData(spec, on_nodes[0].wide, on_nodes[0].narrow, loaded_now, on_nodes)
