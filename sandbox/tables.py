"""The many-tables study (cassandra-many-tables.md), run on casstrace's own sandbox node: the same
write load spread over N tables, for each N of a series.

Everything goes into a keyspace of its own, `casstrace_tables` (the user's tables are never touched,
nor any setting of the node): per N, tables `n{N}_t{i}` (a bigint key and a blob value), which receive
`writes` writes of `value_bytes` random bytes (LZ4 cannot shrink them) between them, write i to table
i mod N, as fast as the node takes them (IN_FLIGHT at a time). Keys are generated
(node.generated_values): every write is a new row. The load runs under a watch-style capture of the
node (orchestration.watcher), which sees the flushes and compactions it causes; at its end the
point's tables are flushed (so every byte received reaches disk), the node is left to finish its
flushes and compactions, and its heap is read (jcmd GC.heap_info). The node's own counts are taken
beside: the watch's memtable switch counts (nodetool tablestats) and the point's rows of
system.compaction_history.

A point's tables are dropped once it is traced, and the keyspace once the sweep ends however it ends
(Ctrl-C included), unless `keep`. Only a node casstrace started (node.own_sandbox) is written to.
"""

import datetime
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cassandra.cluster import Session
from cassandra.concurrent import execute_concurrent

from casstrace.errors import CasstraceError
from casstrace.node.generated_values import GeneratedValues
from casstrace.node.jvm import jcmd_command, run_tool
from casstrace.node.thread_pools import BACKGROUND_ROLES, wait_idle
from casstrace.sandbox.control import Sandbox
from casstrace.sandbox.sweep import MAX_ROW_BYTES, keyspace_of_its_own, sandbox_target

if TYPE_CHECKING:
    from casstrace.orchestration.experiment import Captures, Plan, Progress
    from casstrace.orchestration.targets import Target
    from casstrace.orchestration.watcher import WatchOptions

TABLES_KEYSPACE = "casstrace_tables"
IN_FLIGHT = 32  # writes in flight: enough to keep a sandbox node's 2 cores busy
SETTLE_TIMEOUT_S = 120.0  # at most this long for the node's flushes and compactions to end after a load
# The watch's sampled tracing: as rare as it goes (the load's statements are known; tracing them
# would write to system_traces, more background work than the study's).
SAMPLE_PROBABILITY = 1e-6
# The capture goes on this long after the load and its background work: the last writes' slots.
TAIL_S = 0.5
_HEAP_USED = re.compile(r"\bused (\d+)K\b")


@dataclass(frozen=True)
class TablesPlan:
    tables: tuple[int, ...]  # the values of N
    writes: int  # writes per point, spread over its N tables
    value_bytes: int
    keep: bool = False
    keyspace: str = TABLES_KEYSPACE

    def check(self) -> None:
        if not self.tables or min(self.tables) < 1:
            raise CasstraceError(
                "the sweep needs table counts of 1 or more",
                "give --tables N (1 or more), once per point, e.g. --tables 1 --tables 10 --tables 100",
            )
        if self.value_bytes > MAX_ROW_BYTES:
            raise CasstraceError(
                f"a value of {self.value_bytes:,} bytes is more than Cassandra takes in one write "
                f"({MAX_ROW_BYTES / 2**20:.0f} MiB here)",
                "lower --value-bytes",
            )
        if self.writes < max(self.tables):
            raise CasstraceError(
                f"{self.writes:,} writes cannot reach each of {max(self.tables):,} tables",
                "give --writes at least the largest --tables",
            )


def table_names(tables: int) -> list[str]:
    """The tables of the point of N tables: n{N}_t{i}, their own at every N."""
    return [f"n{tables}_t{number:04d}" for number in range(tables)]


def trace_path(traces_dir: Path, tables: int) -> Path:
    return traces_dir / f"tables-{tables:04d}.trace"


@dataclass
class TablesRun:
    """One point as it ran: the load as the client saw it, the node's figures, the capture's trace."""

    tables: int
    trace: Path
    writes: int  # writes the node acknowledged
    failed_writes: int
    load_s: float  # from the first write sent to the last acknowledged
    heap_used_bytes: int | None  # the JVM's heap in use at the load's end (jcmd GC.heap_info; None: not read)
    compaction_history: list[tuple[str, int, int]]  # (table, bytes_in, bytes_out): the node's, in the point


@dataclass
class TablesPoint:
    """The variant of one N: its tables created, written to under a watch-style capture of the node
    (the load runs once the probes are attached), dropped after unless `keep`."""

    sandbox: Sandbox
    plan: TablesPlan
    tables: int
    traces_dir: Path
    target: "Target"  # the node, its JVM one casstrace started (tables_experiment)
    force: bool = False
    runs_queries: bool = False
    session: Session | None = None  # the keyspace's, while staged

    @property
    def label(self) -> str:
        return f"N={self.tables}"

    def capture_options(self) -> "list[WatchOptions]":
        from casstrace.orchestration.watcher import WatchOptions

        (out,) = self.traces()
        return [
            WatchOptions(
                connection=self.target.connection,
                pid=self.target.pid,
                duration_s=TAIL_S,
                probability=SAMPLE_PROBABILITY,
                out=out,
                force=self.force,
            )
        ]

    def traces(self) -> list[Path]:
        return [trace_path(self.traces_dir, self.tables)]

    @contextmanager
    def staged(self, progress: "Progress") -> Iterator[None]:
        progress(f"{self.label}: creating the tables", 0)
        with self.sandbox.connect(self.plan.keyspace) as self.session:
            _create(self.session, self.tables)
            yield  # a capture cut short leaves the tables to the keyspace's drop, once the sweep ends
            if not self.plan.keep:
                _drop(self.session, self.tables)
        self.session = None

    def capture(self, captures: "Captures", progress: "Progress") -> "TablesRun":
        from casstrace.orchestration.watcher import WatchCallbacks

        assert self.session is not None  # staged
        progress(f"{self.label}: writing", 0)
        assert self.target.pid is not None  # tables_experiment: a JVM casstrace started
        load = PointLoad(self.sandbox, self.session, self.plan, self.tables, self.target.pid)
        since = time.time()
        (options,) = self.capture_options()
        trace = captures.watch(options, WatchCallbacks(started=load.run))
        history = _compaction_history(self.session, self.plan.keyspace, self.tables, since)
        return TablesRun(self.tables, trace, load.writes, load.failed, load.seconds, load.heap_used_bytes, history)


def tables_experiment(sandbox: Sandbox, plan: TablesPlan, traces_dir: Path, force: bool = False) -> "Plan[TablesRun]":
    """The study as a plan: each N in turn, in a keyspace of its own (dropped once the sweep ends however
    it ends, unless `keep`), on a node casstrace started: the one kind of node written to."""
    from casstrace.node.jvm import cassandra_at
    from casstrace.node.own_sandbox import require_own_sandbox
    from casstrace.orchestration.experiment import Plan

    plan.check()
    # The JVM serving the port, shown to be one casstrace started: the one kind of node written to.
    process = cassandra_at(sandbox.host, sandbox.native_port)
    require_own_sandbox(process, sandbox.native_port)
    assert process is not None  # require_own_sandbox refuses a port no JVM here serves
    target = sandbox_target(sandbox, process.pid)
    return Plan(
        variants=tuple(TablesPoint(sandbox, plan, n, traces_dir, target, force) for n in plan.tables),
        target=target,
        staged=lambda: keyspace_of_its_own(sandbox, plan.keyspace, plan.keep),
        force=force,
    )


class PointLoad:
    """One point's writes, spread over its tables, then its flush and the node's background work."""

    def __init__(self, sandbox: Sandbox, session: Session, plan: TablesPlan, tables: int, pid: int):
        self.sandbox, self.session, self.plan, self.tables, self.pid = sandbox, session, plan, tables, pid
        self.writes = self.failed = 0
        self.seconds = 0.0
        self.heap_used_bytes: int | None = None

    def run(self) -> None:
        """Called once the probes are attached (watch's `started`)."""
        names = table_names(self.tables)
        inserts = [self.session.prepare(f"INSERT INTO {name} (key, value) VALUES (?, ?)") for name in names]
        keys = GeneratedValues([inserts[0].column_metadata[0].type])
        began = time.monotonic()
        for ok, _ in execute_concurrent(
            self.session,
            _writes(inserts, keys, self.plan.writes, self.plan.value_bytes),
            concurrency=IN_FLIGHT,
            raise_on_first_error=False,
            results_generator=True,
        ):
            if ok:
                self.writes += 1
            else:
                self.failed += 1
        self.seconds = time.monotonic() - began
        self.heap_used_bytes = heap_used(self.pid)
        # Every byte received reaches disk inside the capture: the flushes the memtable space forced, and
        # the last memtables' (one per table).
        self.sandbox.nodetool("flush", self.plan.keyspace, *names)
        settle(self.session)


def _writes(inserts: list[Any], keys: GeneratedValues, writes: int, value_bytes: int) -> Iterator[tuple[Any, tuple]]:
    for number in range(writes):
        yield inserts[number % len(inserts)], (*keys.values(number), os.urandom(value_bytes))


def heap_used(pid: int) -> int | None:
    """The bytes of the JVM's heap in use, live objects and garbage not yet collected (None: jcmd failed)."""
    try:
        text = run_tool(
            [*jcmd_command(pid), "GC.heap_info"],
            "jcmd GC.heap_info",
            30.0,
            cannot_run_fix="install a JDK with jcmd",
            failed_fix="check the node's JVM",
        )
    except CasstraceError:
        return None
    return parse_heap_used(text)


def parse_heap_used(text: str) -> int | None:
    """The heap in use, from jcmd GC.heap_info's first line (' garbage-first heap   total 1048576K, used
    474092K [...]'; the collector's name varies, the words 'used NK' do not)."""
    found = _HEAP_USED.search(text)
    return None if found is None else int(found[1]) * 1024


def settle(session: Session, timeout_s: float = SETTLE_TIMEOUT_S) -> None:
    """Wait until the node's flush and compaction pools are idle, at most timeout_s: a point's
    background work ends inside its capture."""
    wait_idle(session, BACKGROUND_ROLES, timeout_s)


def _create(session: Session, tables: int) -> None:
    for name in table_names(tables):
        session.execute(f"DROP TABLE IF EXISTS {name}")
        session.execute(f"CREATE TABLE {name} (key bigint PRIMARY KEY, value blob)")


def _drop(session: Session, tables: int) -> None:
    for name in table_names(tables):
        session.execute(f"DROP TABLE IF EXISTS {name}")


def _compaction_history(session: Session, keyspace: str, tables: int, since: float) -> list[tuple[str, int, int]]:
    """The node's record of the compactions of the point's tables since `since` (Unix s): (table,
    bytes_in, bytes_out), Data bytes as Cassandra counts them."""
    ours = set(table_names(tables))
    rows = session.execute(
        "SELECT columnfamily_name, bytes_in, bytes_out, compacted_at FROM system.compaction_history "
        "WHERE keyspace_name = %s ALLOW FILTERING",
        (keyspace,),
    )
    return [
        (f"{keyspace}.{row.columnfamily_name}", row.bytes_in, row.bytes_out)
        for row in rows
        if row.columnfamily_name in ours and row.compacted_at.replace(tzinfo=datetime.UTC).timestamp() >= since - 1
    ]
