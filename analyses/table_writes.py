"""Per table, the background work of a watched node: its memtable flushes, its compactions, what they
wrote against what the table received (write amplification), its pending compactions and the SSTables
each sampled read merged (`casstrace watch`).

Who wrote is told by the writing thread's role (traces.thread_roles: memtable flush, compaction), the
table by the SSTable's path (traces.sstable_names). A flush writes one new SSTable per data directory:
each SSTable the flush threads wrote is a flush, its size the bytes written to all its components. A
compaction's bytes read are what its threads' read syscalls returned from Data files (the inputs it
merges; the components it opens of its own output are not its input), its bytes written those of
every component of its output.

Write amplification: the bytes the node wrote to disk for the table in the watch (flush and compaction
writes of its SSTables) ÷ the bytes of the mutations it received, as the node counts them in its
memtables: the serialized bytes of the memtables it flushed in the watch (meta `table_background`,
from the node's log: node.flush_log). Set against the memtables flushed, not the mutations that
arrived, each byte written is set against the mutations it came from: writes still in a memtable
have cost no disk write yet. (Cassandra 5.0 has no per-table count of the bytes a table received; the
wire bytes of write statements are known for the sampled ones only.)

Pure: a tally of the thread_io rows (tally_writes), added up over intervals like the watch's own
figures (analyses.watch.WatchTally), then summarised with the node's readings (table_writes).
"""

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from casstrace.analyses.amplification import SYSTEM_KEYSPACES
from casstrace.analyses.hints import HintsFor
from casstrace.analyses.query import parse_select
from casstrace.analyses.units import MIB, human_bytes
from casstrace.traces.meta import TableBackgroundMeta
from casstrace.traces.queries import ThreadIO
from casstrace.traces.sstable_names import SSTableName
from casstrace.traces.thread_roles import Role, role_of

# A flush smaller than this makes an SSTable compaction soon rewrites (cassandra-many-tables.md: many
# tables share the memtable space, so each flushes little, often).
SMALL_FLUSH_BYTES = MIB
# So many of the user's tables flushing small SSTables in one watch is the many-tables pattern (or too
# little memtable space); one table flushing small is the flushes someone forced, or a table of little
# traffic.
MANY_SMALL_FLUSHING_TABLES = 10

TableCause = Literal["small_flushes", "compaction_behind", "hints"]
TABLE_CAUSES: tuple[TableCause, ...] = ("small_flushes", "compaction_behind", "hints")


@dataclass
class TableWriteTally:
    """The flush and compaction bytes of a watch (or a stretch of it) by table, as figures that add up."""

    # table -> SSTable (its path less the component) -> bytes the flush threads wrote to its components
    flushed: dict[str, dict[str, int]] = field(default_factory=dict)
    compaction_read: Counter[str] = field(default_factory=Counter)  # table -> Data bytes compaction read
    compaction_written: Counter[str] = field(default_factory=Counter)  # table -> bytes compaction wrote
    measured: bool = True  # the trace counted write syscalls per thread (format 5), in every stretch added

    def add(self, other: "TableWriteTally") -> None:
        for table, sstables in other.flushed.items():
            mine = self.flushed.setdefault(table, {})
            for sstable, size in sstables.items():
                mine[sstable] = mine.get(sstable, 0) + size
        self.compaction_read.update(other.compaction_read)
        self.compaction_written.update(other.compaction_written)
        self.measured = self.measured and other.measured


def tally_writes(
    thread_io: Iterable[ThreadIO], sstables: Mapping[int, SSTableName], thread_names: Mapping[int, str]
) -> TableWriteTally:
    """Flush and compaction bytes by table, from thread_io rows (file_id of an SSTable component in
    `sstables`, tid named in `thread_names`). Rows whose write bytes were not measured make it
    unmeasured: a trace from before the write path."""
    tallied = TableWriteTally()
    roles: dict[int, Role] = {}  # by tid: a watch's rows are many, its threads few
    for row in thread_io:
        written = row.write_bytes
        if written is None:
            tallied.measured = False
        name = sstables.get(row.file_id)
        if name is None:
            continue
        role = roles.get(row.tid)
        if role is None:
            role = roles[row.tid] = role_of(thread_names.get(row.tid, ""))
        if role is Role.MEMTABLE_FLUSH and written:
            flushed = tallied.flushed.setdefault(name.owner, {})
            flushed[_sstable(name)] = flushed.get(_sstable(name), 0) + written
        elif role is Role.COMPACTION:
            if written:
                tallied.compaction_written[name.owner] += written
            if name.component == "Data" and row.read_bytes:
                tallied.compaction_read[name.owner] += row.read_bytes
    return tallied


def _sstable(name: SSTableName) -> str:
    """The SSTable's path less its component ('.../kv-<id>/nb-5-big'): one per flush, in whichever directory."""
    return name.path.rsplit("-", 1)[0]


@dataclass(frozen=True)
class SSTablesPerRead:
    reads: int  # sampled reads of the table whose trace said how many SSTables they merged
    mean: float
    most: int


@dataclass
class TableWrites:
    """One table's background work over the watch (None: not measured)."""

    table: str
    flushes: int | None  # SSTables the flush threads wrote
    flush_bytes: int | None
    flush_sizes: list[int] | None  # each flush's new SSTable, bytes, smallest first
    compaction_read_bytes: int | None  # Data bytes its compactions read
    compaction_written_bytes: int | None
    received_bytes: int | None  # mutation bytes of the memtables it flushed (the node's log)
    pending_compactions_start: int | None
    pending_compactions_end: int | None
    pending_compactions_max: int | None  # the most of the node's readings
    sstables_per_read: SSTablesPerRead | None

    @property
    def written_bytes(self) -> int | None:
        """Bytes the node wrote to disk for the table: flushes and compactions."""
        if self.flush_bytes is None or self.compaction_written_bytes is None:
            return None
        return self.flush_bytes + self.compaction_written_bytes

    @property
    def write_amplification(self) -> float | None:
        """Bytes written to disk for the table ÷ the mutation bytes it received (None: either not
        measured, or it received none)."""
        written = self.written_bytes
        if written is None or not self.received_bytes:
            return None
        return written / self.received_bytes

    @property
    def small_flushes(self) -> int:
        return sum(1 for size in self.flush_sizes or () if size < SMALL_FLUSH_BYTES)


@dataclass
class TableFinding:
    """A finding about the tables' background work, weighed by the bytes its fix would save."""

    cause: TableCause
    title: str
    tables: list[str]
    evidence: list[str]
    suggestion: list[str]
    saves_bytes: int  # disk writes its fix would save over a watch like this one


def table_writes(
    tallied: TableWriteTally | None,
    background: TableBackgroundMeta | None,
    reads: Mapping[str, Counter[int]],
) -> list[TableWrites]:
    """Every table that flushed, compacted, had pending compactions or was read (its SSTables per read),
    the most bytes written first. `tallied`: None when thread_io was not read; `background`: the node's
    readings (meta table_background); `reads`: per statement, the SSTables its sampled reads merged."""
    measured = tallied is not None and tallied.measured
    tally = tallied or TableWriteTally()
    background = background or {}
    pending_start = background.get("pending_compactions_start")
    pending_end = background.get("pending_compactions_end")
    pending_most = background.get("pending_compactions_max")
    received = background.get("received_bytes")
    per_read = sstables_per_read(reads)
    names = set(tally.flushed) | set(tally.compaction_read) | set(tally.compaction_written) | set(per_read)
    for pending in (pending_start, pending_end, pending_most):
        names |= {table for table, count in (pending or {}).items() if count}
    found = []
    for table in names:
        sizes = sorted(tally.flushed.get(table, {}).values())
        found.append(
            TableWrites(
                table=table,
                flushes=len(sizes) if measured else None,
                flush_bytes=sum(sizes) if measured else None,
                flush_sizes=sizes if measured else None,
                compaction_read_bytes=tally.compaction_read[table] if measured else None,
                compaction_written_bytes=tally.compaction_written[table] if measured else None,
                received_bytes=None if received is None else received.get(table, 0),
                pending_compactions_start=None if pending_start is None else pending_start.get(table, 0),
                pending_compactions_end=None if pending_end is None else pending_end.get(table, 0),
                pending_compactions_max=None if pending_most is None else pending_most.get(table, 0),
                sstables_per_read=per_read.get(table),
            )
        )
    return sorted(found, key=lambda t: (-(t.written_bytes or 0), t.table))


def sstables_per_read(reads: Mapping[str, Counter[int]]) -> dict[str, SSTablesPerRead]:
    """Per table ('ks.t'), the SSTables its sampled reads merged, from each read statement's counts."""
    merged: dict[str, Counter[int]] = {}
    for statement, counts in reads.items():
        select = parse_select(statement)
        if select is None or select.table is None or not counts:
            continue
        table = f"{select.keyspace}.{select.table}" if select.keyspace else select.table
        merged.setdefault(table, Counter()).update(counts)
    return {
        table: SSTablesPerRead(counts.total(), sum(n * c for n, c in counts.items()) / counts.total(), max(counts))
        for table, counts in merged.items()
    }


def table_findings(tables: list[TableWrites], hints: Sequence[HintsFor] = ()) -> list[TableFinding]:
    """Many small flushes (many tables, or little memtable space), compaction falling behind and hints
    (analyses.hints), the most bytes their fix would save first."""
    candidates = (_small_flushes(tables), *map(_compaction_behind, tables), _hints(hints))
    return sorted((finding for finding in candidates if finding), key=lambda f: -f.saves_bytes)


def _small_flushes(tables: list[TableWrites]) -> TableFinding | None:
    # The node's own tables flush small by design (a schema change flushes the schema's tables): not
    # the tables a user made too many of.
    small = [t for t in tables if t.small_flushes and t.table.split(".", 1)[0] not in SYSTEM_KEYSPACES]
    if len(small) < MANY_SMALL_FLUSHING_TABLES:
        return None
    flushes = sum(t.small_flushes for t in small)
    size = sum(s for t in small for s in t.flush_sizes or () if s < SMALL_FLUSH_BYTES)
    small.sort(key=lambda t: (-t.small_flushes, t.table))
    return TableFinding(
        cause="small_flushes",
        title=f"Many small flushes: {len(small)} tables flushed {flushes:,} SSTables under "
        f"{human_bytes(SMALL_FLUSH_BYTES)} ({human_bytes(size)} in all)",
        tables=[t.table for t in small],
        evidence=[
            ", ".join(f"{t.table}: {t.small_flushes} of {human_bytes(size / t.small_flushes)}" for t in small[:5])
            + (f", and {len(small) - 5} more tables" if len(small) > 5 else ""),
            "Each small SSTable is read again and rewritten by compaction, round after round "
            "(write amplification), and a read may merge many of them.",
        ],
        suggestion=[
            "Fewer tables: tables of the same columns can share one (a partition key column telling them apart).",
            "Or more memtable space (memtable_heap_space / memtable_offheap_space), so each table flushes larger.",
        ],
        # One table's flushes of the same bytes would be one SSTable: compaction's first rewrite of them is saved.
        saves_bytes=size,
    )


def _compaction_behind(table: TableWrites) -> TableFinding | None:
    start, end = table.pending_compactions_start, table.pending_compactions_end
    if start is None or end is None or end <= start:
        return None
    return TableFinding(
        cause="compaction_behind",
        title=f"Compaction falling behind on {table.table}: pending compactions grew from {start} to {end}",
        tables=[table.table],
        evidence=[
            f"Its compactions wrote {human_bytes(table.compaction_written_bytes or 0)} in the watch, "
            f"its flushes {human_bytes(table.flush_bytes or 0)}: SSTables pile up faster than they are merged.",
            *(
                [
                    f"Its sampled reads merged {table.sstables_per_read.mean:.1f} SSTables on average "
                    f"(at most {table.sstables_per_read.most})."
                ]
                if table.sstables_per_read
                else []
            ),
        ],
        suggestion=[
            "More compaction throughput (compaction_throughput, concurrent_compactors) if the disk has room; "
            "fewer, larger flushes (fewer tables, more memtable space); or a compaction strategy that "
            "rewrites less for this table's writes.",
        ],
        # Flushed data compaction has yet to merge: at least what it flushed in the watch is rewritten later.
        saves_bytes=table.flush_bytes or 0,
    )


def _hints(hints: Sequence[HintsFor]) -> TableFinding | None:
    if not hints:
        return None
    stored = sum(h.stored_bytes for h in hints)
    replayed = sum(h.replayed_bytes for h in hints)
    replicas = f"{len(hints)} replica{'s' if len(hints) > 1 else ''}"
    title = (
        f"Hints: the node stored {human_bytes(stored)} of writes for {replicas} it could not reach"
        if stored
        else f"Hints replayed: the node sent {human_bytes(replayed)} of stored writes to {replicas}"
    )
    return TableFinding(
        cause="hints",
        title=title,
        tables=[],
        evidence=[
            "; ".join(
                f"host ID {h.host_id}: {human_bytes(h.stored_bytes)} stored, {human_bytes(h.replayed_bytes)} replayed"
                for h in hints
            ),
            "Each hinted write is written twice by this node, to the replica's hints file and again when it "
            "replays it; until then the replica misses those writes.",
        ],
        suggestion=[
            "Find the replica by its host ID (nodetool status) and bring it back, or mend what keeps it "
            "unreachable. If it was down longer than max_hint_window, repair it: no hints are kept past that.",
        ],
        # Reaching the replica saves both the hints file's writes and their replay.
        saves_bytes=stored + replayed,
    )
