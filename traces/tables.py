"""Every table of a trace, declared once: its columns (name, SQL type, unit, nullable, default), its key
and indexes, how a merged trace of several nodes combines it, and the format version each appeared in.

From these declarations follow the schema's SQL (`schema_sql`, `index_sql`: what TraceWriter creates),
the writer's INSERT (`insert_sql`: a column the table has not is refused before anything is written), the
select list of a table read whole (`select_list`: a column a later format added reads as NULL from an older
trace; casstrace.traces.queries), the merge of several nodes' traces (casstrace.traces.merge, by each
table's `merge`) and the figures the validation checks (`Column.checked`, file_io's). What a column means
is in its `doc`, which the SQL keeps as a comment (`.schema` in the sqlite3 shell shows it).

The typed rows stay classes mypy reads: a table's TypedDict in traces/rows.py (what a capture hands the
writer) and, for a table read whole, its record in casstrace.traces.queries. tests/unit/test_trace_tables.py
holds both to the declaration (the same columns, in order; required keys and None where the column allows
it), and the generated SQL to the SQL traces hold: a column or table is only ever appended (at the end of
its table, or after the tables there are), never renamed, moved or retyped.
"""

import enum
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple


class Merge(enum.Enum):
    """How merge_node (casstrace.traces.merge) brings one node's rows of a table into a merged trace."""

    WHOLE_TRACE = "whole trace"  # the run's own rows, written once: never copied from a node's trace
    APPENDED = "appended"  # copied: file and stack ids re-based, times shifted onto the trace's clock, node named
    # appended, slots moved by whole slot_ns's; rows meeting in one key add up their other columns (but node_id)
    SUMMED_BY_SLOT = "summed by slot"
    SUMMED_BY_THREAD_SLOT = "summed by thread slot"  # the same by thread_slot_ns's slots


# NamedTuples and a plain class, not dataclasses: the writer imports this at start-up, where dataclasses
# would load inspect (tests/unit/test_costs.py).
class Column(NamedTuple):
    name: str
    doc: str = ""
    type: str = "INTEGER"  # | 'TEXT' | 'REAL' | 'NUMERIC'
    nullable: bool = True
    unit: str | None = None  # what a number counts: 'ns', 'bytes', 'pages', 'calls', ...
    default: int | None = None  # the value of a column an INSERT leaves out (None: NULL)
    primary_key: bool = False  # the table's one-column key (an INTEGER one is the rowid)
    references: str | None = None  # 'table(column)'
    since: int = 1  # the format version that added it (at least its table's: Table makes it so)
    checked: bool = False  # file_io's: validation.py refuses a trace where it holds no finite non-negative number

    @property
    def sql(self) -> str:
        parts = [self.name, self.type]
        if self.primary_key:
            parts.append("PRIMARY KEY")
        if not self.nullable:
            parts.append("NOT NULL")
        if self.default is not None:
            parts.append(f"DEFAULT {self.default}")
        if self.references is not None:
            parts.append(f"REFERENCES {self.references}")
        return " ".join(parts)


class Index(NamedTuple):
    name: str
    on: str  # what it indexes: 'file_id, source', 'ifnull(node_id, 0), tid'
    unique: bool = False
    # Built once the rows are in (TraceWriter.finish): bulk inserts into an indexed table cost more than
    # building the index afterwards. A unique index an insert relies on (INSERT OR REPLACE) is made at once.
    after_rows: bool = True


class Table:
    def __init__(
        self,
        name: str,
        columns: tuple[Column, ...],
        merge: Merge,
        *,
        since: int = 1,
        key: tuple[str, ...] = (),
        indexes: tuple[Index, ...] = (),
        doc: str = "",
    ):
        """`since`: the format version that added it; `key`: a key of several columns (PRIMARY KEY (...)),
        a one-column key being its Column's primary_key."""
        self.name, self.merge, self.since, self.key, self.indexes, self.doc = name, merge, since, key, indexes, doc
        # a column is as old as its table at least: declared only where a later format added it
        self.columns = tuple(column._replace(since=max(column.since, since)) for column in columns)
        self.by_name = {column.name: column for column in self.columns}
        self.column_names = tuple(self.by_name)


def text(name: str, doc: str = "", **options: Any) -> Column:
    return Column(name, doc, type="TEXT", **options)


_NODE_DOC = "the node in a trace of several (NULL: the one process)"
_WINDOW = "windows(window_id)"
_FILE = "files(file_id)"

TABLES: tuple[Table, ...] = (
    Table(
        "meta",
        (text("key", primary_key=True), text("value", "JSON", nullable=False)),
        Merge.WHOLE_TRACE,
        doc="the trace's metadata: keys and JSON values (schema.py's docstring lists them)",
    ),
    Table(
        "nodes",
        (
            Column("node_id", "1, 2, ...", primary_key=True),
            text("address", "the node's address as the driver's token map names it ('127.0.0.2')", nullable=False),
            text("host", "how it was reached: NULL on this machine, else the ssh destination"),
            text("datacenter"),
            text("rack"),
            Column("replica", "1 when it holds a replica of the queried partition (token map)", nullable=False),
            Column("captured", "1 when its JVM was captured on the trace's windows", nullable=False),
            text("not_captured", "why not, when captured = 0 ('down: ...', 'no JVM on this machine; give --ssh')"),
            Column("pid"),
            Column("clock_shift_ns", "added to the node's own timestamps to put them on the trace's clock", unit="ns"),
            text("meta", "JSON: that node's own capture meta (schema.py's 'Several nodes')"),
        ),
        Merge.WHOLE_TRACE,
        since=3,
        doc="the Cassandra nodes of a `casstrace run` trace: the node(s) whose JVM was captured, and the"
        " replicas of the queried partition that were not, with why (none in imports and `capture` traces)",
    ),
    Table(
        "files",
        (
            Column("file_id", primary_key=True),
            text("path", "absolute path; sockets 'tcp 127.0.0.1:9042->127.0.0.1:50412'", nullable=False),
            text("kind", "'file' | 'socket' | 'pipe' | 'other' | 'unknown'", nullable=False),
            Column("size_bytes", "size at the end of the capture, NULL when unknown", unit="bytes"),
            Column("dev", "st_dev as userspace sees it (os.makedev), NULL when unknown"),
            Column("inode"),
            text("local_addr", "sockets only: 'ip:port'"),
            text("remote_addr"),
            Column(
                "node_id", "the node whose JVM had the file (NULL: no nodes rows)", references="nodes(node_id)", since=3
            ),
        ),
        Merge.APPENDED,
        indexes=(Index("files_path", "path"),),
    ),
    Table(
        "windows",
        (
            Column("window_id", primary_key=True),
            text("label", "'capture' | 'warmup' | 'execution' | 'tracing' | 'between' | 'watch'", nullable=False),
            Column("execution", "executions.execution for warmup/execution/tracing windows"),
            Column("start_ns", nullable=False, unit="ns"),
            Column("end_ns", nullable=False, unit="ns"),
        ),
        Merge.WHOLE_TRACE,
    ),
    Table(
        "file_io",
        (
            Column("window_id", nullable=False, references=_WINDOW),
            Column("file_id", nullable=False, references=_FILE),
            Column(
                "read_calls", "read, pread64, readv, preadv, preadv2, recv*", nullable=False, default=0, unit="calls"
            ),
            Column("read_bytes", "bytes the calls returned", nullable=False, default=0, unit="bytes"),
            Column("read_requested_bytes", "bytes the calls asked for", nullable=False, default=0, unit="bytes"),
            Column("read_ns", "summed latency, NULL when not measured", unit="ns"),
            Column("write_calls", "write, pwrite64, writev, pwritev*, send*", nullable=False, default=0, unit="calls"),
            Column("write_bytes", nullable=False, default=0, unit="bytes"),
            Column("lseek_calls", nullable=False, default=0, unit="calls"),
            Column(
                "seek_jumps",
                "reads that did not start where the previous one on the file ended",
                nullable=False,
                default=0,
                unit="calls",
            ),
            Column(
                "longest_sequential_bytes", "longest run of back-to-back reads", nullable=False, default=0, unit="bytes"
            ),
            Column(
                "cache_miss_pages", "pages the page cache filled for this process (NULL: not measured)", unit="pages"
            ),
            Column("cache_miss_bytes", unit="bytes"),
            Column(
                "mapped_touched_bytes",
                "mapped pages of the file the process accessed in the window (NULL: not measured, or not mapped);"
                " a part mapped by one huge (PMD) entry counts whole 2 MiB",
                unit="bytes",
                since=2,
            ),
            Column(
                "mapped_huge_bytes",
                "of the file's mapping, bytes mapped by 2 MiB entries at the window's end",
                unit="bytes",
                since=2,
            ),
            Column(
                "dirtied_pages",
                "pages of the file its threads dirtied in the page cache, by write syscalls and stores into shared"
                " mappings (NULL: not measured)",
                unit="pages",
                since=5,
                checked=True,
            ),
            Column(
                "mapped_dirtied_pages",
                "of which outside any syscall (stores into a mapping)",
                unit="pages",
                since=5,
                checked=True,
            ),
            Column(
                "written_back_bytes",
                "bytes the kernel wrote from the page cache to the device for the file, by any thread",
                unit="bytes",
                since=5,
                checked=True,
            ),
            Column(
                "sync_calls",
                "fsync, fdatasync, msync, sync_file_range on the file",
                unit="calls",
                since=5,
                checked=True,
            ),
            Column("sync_ns", "their summed latency (msync's file: the mapping's)", unit="ns", since=5, checked=True),
        ),
        Merge.APPENDED,
        key=("window_id", "file_id"),
        doc="exact per-window, per-file totals (bcc: counted in the kernel, or added up from the per-call log)",
    ),
    Table(
        "read_sizes",
        (
            Column("window_id", nullable=False),
            Column("file_id", nullable=False),
            Column("log2_bucket", nullable=False),
            Column("count", nullable=False, unit="calls"),
        ),
        Merge.APPENDED,
        key=("window_id", "file_id", "log2_bucket"),
        doc="read size distribution: bucket b holds reads returning [2^b, 2^(b+1)) bytes; b = -1 for 0 bytes",
    ),
    Table(
        "coverage",
        (
            Column("window_id", nullable=False),
            Column("file_id", nullable=False),
            text("source", "'syscall' | 'page_cache'", nullable=False),
            Column("first_page", nullable=False),
            Column("page_count", nullable=False, unit="pages"),
        ),
        Merge.APPENDED,
        indexes=(Index("coverage_file", "file_id, source"),),
        doc="which 4 KiB pages of a file were touched, as runs [first_page, first_page + page_count): 'syscall':"
        " bytes read syscalls returned; 'page_cache': pages inserted into the page cache",
    ),
    Table(
        "heatmap",
        (
            Column("file_id", nullable=False),
            text("source", "as in coverage", nullable=False),
            Column("slot", "(ts - capture_start_ns) // slot_ns", nullable=False),
            Column("offset_bucket", "offset // heatmap_offset_bytes", nullable=False),
            Column("calls", nullable=False, unit="calls"),
            Column("bytes", nullable=False, unit="bytes"),
        ),
        Merge.SUMMED_BY_SLOT,
        key=("file_id", "source", "slot", "offset_bucket"),
        doc="offset-by-time heat map of reads",
    ),
    Table(
        "latency",
        (
            Column("slot", nullable=False),
            text("syscall", nullable=False),
            text("target", "what the syscall's fd was: 'file' | 'socket' | 'other' | 'none' (no fd)", nullable=False),
            Column("bucket", "latency in [10^(b/10), 10^((b+1)/10)) ns (10 buckets a decade)", nullable=False),
            Column("count", nullable=False, unit="calls"),
            Column("node_id", _NODE_DOC, since=3),
        ),
        Merge.SUMMED_BY_SLOT,
        key=("slot", "syscall", "target", "bucket", "node_id"),
        doc="syscall latency spectrogram, aggregated in the kernel",
    ),
    Table(
        "sync_latency",
        (
            Column("window_id", nullable=False, references=_WINDOW),
            Column("file_id", nullable=False, references=_FILE),
            text("syscall", "'fsync' | 'fdatasync' | 'msync' | 'sync_file_range'", nullable=False),
            Column("bucket", "as the latency table's (latency_bucket)", nullable=False),
            Column("count", nullable=False, unit="calls"),
            Column("node_id", _NODE_DOC),
        ),
        Merge.APPENDED,
        since=5,
        key=("window_id", "file_id", "syscall", "bucket", "node_id"),
        doc="per-file spectrogram of sync calls' latency (msync's file is the one its address range maps)",
    ),
    Table(
        "events",
        (
            Column("ts_ns", "syscall entry", nullable=False, unit="ns"),
            Column("tid", nullable=False),
            text("syscall", "'read' | 'pread64' | 'readv' | 'preadv' | 'preadv2' | 'lseek' | ...", nullable=False),
            Column("fd"),
            Column("file_id"),
            Column("offset", "reads: file offset read from (NULL when unknown); lseek: the offset argument"),
            Column("requested", "reads: bytes asked for; lseek: whence"),
            Column("returned", "reads: bytes returned (negative errno); lseek: resulting position"),
            Column("latency_ns", "NULL when not measured", unit="ns"),
            Column(
                "cache_miss_pages",
                "reads: pages the page cache filled of the file read while the call ran, counted in the reading"
                " thread (meta measures.call_fills; NULL: not measured, lseek)",
                unit="pages",
                since=2,
            ),
            Column("node_id", _NODE_DOC, since=3),
        ),
        Merge.APPENDED,
        indexes=(Index("events_file_ts", "file_id, ts_ns"),),
        doc="per-call records of reads and lseeks on files, streamed as far as they stay cheap (meta"
        " unstreamed_events / lost_events count the rest)",
    ),
    Table(
        "page_cache_fills",
        (
            Column("ts_ns", "the fill (the read's entry, for a read's fills)", nullable=False, unit="ns"),
            Column("tid", nullable=False),
            Column("file_id", nullable=False, references=_FILE),
            Column("pages", "4 KiB pages", nullable=False, unit="pages"),
            text("syscall", "the syscall in flight; NULL: none (a fault)"),
        ),
        Merge.APPENDED,
        since=2,
        doc="page-cache fills no logged read holds, each with the thread that caused it (meta"
        " measures.call_fills): per file, events.cache_miss_pages + these + meta unlogged_fill_pages ="
        " file_io.cache_miss_pages",
    ),
    Table(
        "mappings",
        (
            Column("file_id", primary_key=True, references=_FILE),
            Column("mapped_bytes", "address space mapping the file", nullable=False, unit="bytes"),
            Column("resident_bytes", "of which in memory (NULL: unknown)", unit="bytes"),
        ),
        Merge.APPENDED,
        since=2,
        doc="the files the process had mapped when the capture ended, whether or not a measure saw them read",
    ),
    Table(
        "threads",
        (Column("tid", nullable=False), text("name", nullable=False), Column("node_id", since=3)),
        Merge.APPENDED,
        indexes=(Index("threads_node_tid", "ifnull(node_id, 0), tid", unique=True, after_rows=False),),
        doc="a thread id names one thread per node: (node_id, tid) is unique (node_id NULL: the one process)",
    ),
    Table(
        "stacks",
        (Column("stack_id", primary_key=True), text("frames", "JSON array, root first", nullable=False)),
        Merge.APPENDED,
        since=2,
        doc="Java stacks (async-profiler, run --profile): frame names only, never arguments or values",
    ),
    Table(
        "profile_samples",
        (
            Column("window_id", nullable=False),
            Column("tid", nullable=False),
            Column("stack_id", nullable=False, references="stacks(stack_id)"),
            text("state", "'STATE_RUNNABLE': on a CPU or waiting for one"),
            Column("samples", nullable=False, unit="samples"),
            Column("node_id", _NODE_DOC, since=3),
        ),
        Merge.APPENDED,
        since=2,
        doc="wall-clock samples of the JVM's threads while the profiler was active",
    ),
    Table(
        "profile_reads",
        (
            Column("window_id", nullable=False),
            Column("file_id", nullable=False, references=_FILE),
            Column("stack_id", nullable=False, references="stacks(stack_id)"),
            Column("calls", nullable=False, unit="calls"),
            Column("bytes", nullable=False, unit="bytes"),
            Column(
                "fill_bytes",
                "page-cache fill bytes of the file inside those read calls (meta profile.fill_join_ns; NULL before)",
                unit="bytes",
                since=2,
            ),
            Column(
                "fault_fill_bytes",
                "fills no read holds, put on the same thread's wall-clock sample nearest in time",
                unit="bytes",
                since=2,
            ),
        ),
        Merge.APPENDED,
        since=2,
        key=("window_id", "file_id", "stack_id"),
        doc="read calls (events) joined with the Java stack that made each of them (meta profile.read_method)",
    ),
    Table(
        "executions",
        (
            Column("execution", "1, 2, ... in the order they ran", primary_key=True),
            text("kind", "'warmup' | 'measured' | 'tracing'", nullable=False),
            Column("window_id", references=_WINDOW),
            Column("latency_s", "wall time seen by the client, all pages fetched", type="REAL", unit="s"),
            Column("rows"),
            Column("payload_bytes", "serialized size of the returned values", unit="bytes"),
            Column(
                "wire_bytes",
                "before meta client_addresses: bytes the node wrote to the client connection in its window"
                " (NULL since: derived, not stored)",
                unit="bytes",
            ),
            Column("client_file_id", "before meta client_addresses: the node's side of the client connection"),
            Column("pages"),
            text("error"),
            text("coordinator", "address of the node that coordinated it, NULL when unknown", since=3),
            Column(
                "other_requests",
                "requests of the node's other client connections around its window (NULL: not measured)",
                since=3,
            ),
        ),
        Merge.WHOLE_TRACE,
    ),
    Table(
        "thread_io",
        (
            Column("tid", nullable=False),
            Column("slot", "(ts - capture_start_ns) // thread_slot_ns", nullable=False),
            Column("file_id", nullable=False),
            Column("read_calls", nullable=False, unit="calls"),
            Column("read_bytes", nullable=False, unit="bytes"),
            Column("cache_miss_pages", nullable=False, unit="pages"),
            Column("node_id", _NODE_DOC, since=4),
            Column("write_calls", "write syscalls (write, pwrite64, writev, pwritev*)", unit="calls", since=5),
            Column("write_bytes", "the bytes they wrote", unit="bytes", since=5),
            Column("dirtied_pages", "pages of the file it dirtied in the page cache", unit="pages", since=5),
            Column("mapped_dirtied_pages", "of which stores into a shared mapping", unit="pages", since=5),
        ),
        Merge.SUMMED_BY_THREAD_SLOT,
        since=2,
        key=("tid", "slot", "file_id"),
        doc="file bytes per thread and time slot (meta thread_slot_ns), counted in the kernel: reads by the"
        " thread that made them, page-cache fills by the thread that caused them; writes and pages dirtied too",
    ),
    Table(
        "window_measures",
        (
            Column("node_id", "the node in a trace of several (NULL: the one process, or the client)"),
            Column("window_id", nullable=False, references=_WINDOW),
            text("measure", "a name of casstrace.traces.measures.MEASURES", nullable=False),
            Column("value", "in the measure's unit ('ns', 'bytes', 'count')", type="NUMERIC", nullable=False),
        ),
        Merge.APPENDED,
        since=4,
        doc="per-window measures taken by window sources, one number per node, window and measure (a measure"
        " not taken has no rows, never 0)",
    ),
    Table(
        "thread_cpu",
        (
            Column("node_id", _NODE_DOC),
            Column("tid", nullable=False),
            Column("ts_ns", "the slot's start, on the trace's clock", nullable=False, unit="ns"),
            Column("slot_ns", "the slot's width", nullable=False, unit="ns"),
            Column("oncpu_ns", "the thread's time on a CPU within the slot", nullable=False, unit="ns"),
        ),
        Merge.APPENDED,
        since=4,
        doc="on-CPU time of each thread of the captured JVM per time slot, in the measured executions' windows",
    ),
    Table(
        "statement_sessions",
        (
            Column("session", primary_key=True),
            text("session_id", "system_traces.sessions.session_id (expires with the node's TTL)", nullable=False),
            text("statement", "normalized: every literal as ?", nullable=False),
            text("consistency"),
            text("client", "the client's address"),
            Column("started_ns", nullable=False, unit="ns"),
            Column("duration_ns", unit="ns"),
            Column("live_rows", "'Read N live rows and M tombstone cells' (NULL: none)"),
            Column("tombstone_cells"),
            Column("sstables_merged", "'Merged data from memtables and N sstables', the most of one read"),
            Column("execution", "the run's execution it traced (one session a page); NULL in a watch", since=3),
            Column("mutations", "'Appending to commitlog' events on the nodes traced (NULL: none)", since=5),
            Column("commitlog_ns", "from each of them to its thread's next event", unit="ns", since=5),
        ),
        Merge.WHOLE_TRACE,
        since=2,
        doc="requests Cassandra traced during a watch, or a run's measured executions: never their values",
    ),
    Table(
        "session_threads",
        (
            Column("session", nullable=False, references="statement_sessions(session)"),
            text("thread", "the JVM's thread name, as the events give it", nullable=False),
            Column("tid", "NULL when no thread of that name was found"),
            Column("first_ns", nullable=False, unit="ns"),
            Column("last_ns", nullable=False, unit="ns"),
            Column("events", nullable=False, unit="events"),
            text("source", "the address of the node whose thread it is (NULL: not recorded)", since=4),
            Column("node_id", "the captured node of that address in a trace of several", since=4),
        ),
        Merge.WHOLE_TRACE,
        since=2,
        doc="where each session's events ran: one row per (session, thread) of each captured node",
    ),
)

TABLE = {table.name: table for table in TABLES}


def create_sql(table: Table, version: int) -> str:
    """CREATE TABLE of `table` as format `version` has it (its columns of that format or before), each
    column's doc a comment beside it (sqlite_master keeps them: `.schema` in the sqlite3 shell shows them)."""
    columns = [column for column in table.columns if column.since <= version]
    entries = [column.sql for column in columns] + ([f"PRIMARY KEY ({', '.join(table.key)})"] if table.key else [])
    docs = [column.doc for column in columns] + [""]
    lines = [entry + ("," if at < len(entries) - 1 else "") for at, entry in enumerate(entries)]
    width = max(map(len, lines))
    body = "\n".join(f"    {line:<{width}}  -- {doc}" if doc else f"    {line}" for line, doc in zip(lines, docs))
    return f"CREATE TABLE {table.name} (\n{body}\n)"


def _index_sql(table: Table, index: Index) -> str:
    return f"CREATE {'UNIQUE ' if index.unique else ''}INDEX {index.name} ON {table.name}({index.on})"


def schema_sql(version: int) -> str:
    """The tables of format `version` (and the indexes inserts rely on), as a script: from format 3 on
    (format 3 changed the keys of threads and latency, the one change that was not an addition)."""
    statements = []
    for table in (table for table in TABLES if table.since <= version):
        comment = f"-- {table.doc}\n" if table.doc else ""
        statements.append(f"{comment}{create_sql(table, version)};\n")
        statements += [_index_sql(table, index) + ";\n" for index in table.indexes if not index.after_rows]
    return "\n".join(statements)


def index_sql() -> str:
    """The indexes built once the rows are in (TraceWriter.finish)."""
    return "".join(_index_sql(table, index) + ";\n" for table in TABLES for index in table.indexes if index.after_rows)


def insert_sql(table: Table, columns: Sequence[str]) -> str:
    """INSERT of `columns` of `table` (values in that order); ValueError naming a column it has not."""
    unknown = [name for name in columns if name not in table.by_name]
    if unknown:
        raise ValueError(f"the trace's table {table.name} has no column {', '.join(unknown)}")
    return f"INSERT INTO {table.name}({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


def select_list(table: Table, present: Callable[[str], bool]) -> str:
    """Every column of `table`, in order, for reading it whole: a column a trace lacks (`present` says
    which it has: a later format's) as NULL."""
    return ", ".join(name if present(name) else "NULL" for name in table.column_names)
