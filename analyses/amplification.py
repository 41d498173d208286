"""Amplification: bytes read from the queried table's Data files against the bytes the query returned.

Three measures see the bytes a query read from a Data file, each a part the others may miss:
  S  read syscalls: the bytes they returned (and, from the coverage table, which pages);
  F  page-cache fills: pages the page cache filled for the JVM (device reads: a mapped page faulted
     in cold, readahead around a read or a fault);
  M  mapped pages touched: pages of the JVM's memory maps of the file it accessed (smaps
     Referenced, after clearing the accessed bits): a warm mmap read, which makes no syscall and
     no fill.
Bytes read = S + max(M - pages(S), F - pages(S)), per window and file (`data_read`, the one formula
of `run` and `watch`; docs/verdicts.md says why it counts no page twice).

Where part of a mapping is 2 MiB (PMD) entries, one access marks 2 MiB referenced: M is then an upper
bound, and `data_read_least_bytes` the least the same accessed bits allow (4 KiB per 2 MiB entry).

On a node that serves other requests, their reads fall in the same windows: an execution whose
session was traced is charged only what its own threads read (analyses.attribution), and what
others read meanwhile is kept beside it (Busy), never added. Mapped pages touched are per process:
in a window where other requests touched the node they cannot be charged to anyone, and are left out
(the verdict says what that leaves undetermined).

The figure is divided by the payload the client received (the serialized values), or, when there
is no payload (a sysdig import), by the bytes the node wrote to the client connection.
"""

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from casstrace.analyses import pages
from casstrace.analyses.file_io import page_runs
from casstrace.analyses.model import Amplification, Busy, Execution, IndexPart, IndexRead, Unseen
from casstrace.analyses.units import human_bytes
from casstrace.traces import Trace, queries
from casstrace.traces.addresses import DEFAULT_NATIVE_PORT, ClientSockets, parse_address
from casstrace.traces.queries import ExecutionRecord
from casstrace.traces.schema import HUGE_PAGE_BYTES, PAGE_BYTES
from casstrace.traces.sstable_names import SSTableName, parse_sstable_path

if TYPE_CHECKING:  # attribution counts by this module's data_read
    from casstrace.analyses.attribution import ExecutionShare

MMAP_DATA_MODES = {"mmap", "auto", "legacy"}  # disk_access_modes that read Data files through memory maps
SYSTEM_KEYSPACES = {
    "system",
    "system_schema",
    "system_traces",
    "system_auth",
    "system_distributed",
    "system_views",
    "system_virtual_schema",
    "system_cluster_metadata",
}


def data_read(syscall_bytes: int, fills_outside_syscall_bytes: int, mapped_outside_syscall_bytes: int = 0) -> int:
    """The bytes read from a file in one window (or, in a watch, one thread's 1 ms slot): what read
    syscalls returned, plus the larger of the page-cache fills and the mapped pages touched outside
    the pages those syscalls returned. Larger, not summed: a cold mapped read is in both."""
    return syscall_bytes + max(fills_outside_syscall_bytes, mapped_outside_syscall_bytes)


def data_files(trace: Trace, keyspace: str | None, table: str | None) -> dict[int, SSTableName]:
    """The Data components of the queried table's SSTables (secondary indexes excluded), by file_id.

    Without a known table (an import of an arbitrary capture), every user table's Data files."""
    chosen = {}
    for file_id, path in queries.file_paths(trace, "file"):
        name = parse_sstable_path(path)
        if name is None or name.component != "Data" or name.index is not None:
            continue
        if table is None:
            if name.keyspace not in SYSTEM_KEYSPACES:
                chosen[file_id] = name
        elif name.table == table and (keyspace is None or name.keyspace == keyspace):
            chosen[file_id] = name
    return chosen


# What a read goes through besides the Data file: the partition index (BIG's Index.db and Summary,
# BTI's Partitions.db and Rows.db tries) and 5.0's storage-attached indexes. A legacy index's hidden
# table is read whole (its Data too).
INDEX_COMPONENTS = frozenset({"Index", "Summary", "Partitions", "Rows", "SAI", "SASI"})


def index_files(trace: Trace, keyspace: str | None, table: str | None) -> dict[int, SSTableName]:
    """The index part of the queried table's files, by file_id: its SSTables' index components and
    every read component of its legacy secondary indexes' SSTables. Empty without a known table."""
    chosen: dict[int, SSTableName] = {}
    if table is None:
        return chosen
    for file_id, path in queries.file_paths(trace, "file"):
        name = parse_sstable_path(path)
        if name is None or name.table != table or (keyspace is not None and name.keyspace != keyspace):
            continue
        if name.component in INDEX_COMPONENTS or (name.index is not None and name.component == "Data"):
            chosen[file_id] = name
    return chosen


def index_read(
    trace: Trace, window_ids: list[int], files: dict[int, SSTableName], shares: "dict[int, ExecutionShare] | None"
) -> IndexRead | None:
    """What the windows' executions read from the index part (index_files), by part, by the one
    data_read formula: the windows where other requests touched the node are left out (no thread's
    share of these files is kept). None when the table has no index file or no window is left."""
    windows = [window for window in window_ids if not (shares and window in shares and shares[window].busy)]
    if not files or not windows:
        return None
    read = read_pages(trace, windows, files)
    mapped_measured = trace.measured("mapped")
    parts: dict[str, int] = {}
    for row in queries.file_window_io(trace, windows, sorted(files)):
        touched = (row.mapped_touched_bytes or 0) if mapped_measured else 0
        bytes_read = read.data_read(row.window_id, row.file_id, row.read_bytes or 0, touched)
        part = files[row.file_id].part
        parts[part] = parts.get(part, 0) + bytes_read
    sizes = queries.file_sizes(trace)
    on_disk: dict[str, int] = {}
    for file_id, name in files.items():
        on_disk[name.part] = on_disk.get(name.part, 0) + (sizes.get(file_id) or 0)
    return IndexRead(
        executions=len(windows),
        parts=[IndexPart(part, parts.get(part, 0), size) for part, size in sorted(on_disk.items())],
    )


@dataclass(frozen=True)
class ReadPages:
    """What the coverage table says of the queried Data files, per (window_id, file_id): the bytes
    of the pages read syscalls returned, and of the pages the page cache filled that no syscall
    returned in that window. Read once for every amplification of an analysis (each execution's,
    the warmup's, the total): reading it per execution made an analysis quadratic in executions."""

    syscall_bytes: dict[tuple[int, int], int]
    fills_outside_syscall_bytes: dict[tuple[int, int], int]

    def data_read(self, window_id: int, file_id: int, syscall_bytes: int, mapped_touched_bytes: int) -> int:
        """`data_read` of one window and file: its syscall bytes, and the larger of its fills and its
        mapped pages touched outside the pages those syscalls returned."""
        key = (window_id, file_id)
        mapped_only = max(0, mapped_touched_bytes - self.syscall_bytes.get(key, 0))
        return data_read(syscall_bytes, self.fills_outside_syscall_bytes.get(key, 0), mapped_only)


def read_pages(trace: Trace, window_ids: list[int], data: dict[int, SSTableName]) -> ReadPages:
    """ReadPages of the windows. The runs of one window, file and source are disjoint (both trace
    writers make them from a page bitmap), so SQLite sums the syscall pages itself; fills are few,
    and only the syscall runs of the windows and files with fills are read into Python."""
    files = sorted(data)
    syscall = {(row.window_id, row.file_id): row.bytes for row in queries.syscall_page_bytes(trace, window_ids, files)}
    fills = page_runs(trace, window_ids, "page_cache", files) if trace.measured("page_cache") else {}
    outside: dict[tuple[int, int], int] = {}
    if fills:
        syscall_runs = page_runs(
            trace, sorted({window for window, _ in fills}), "syscall", sorted({file_id for _, file_id in fills})
        )
        sizes = queries.file_sizes(trace)
        outside = {
            key: pages.bytes_within(pages.subtract(runs, syscall_runs.get(key, [])), sizes.get(key[1]))
            for key, runs in fills.items()
        }
    return ReadPages(syscall, outside)


def amplification(
    trace: Trace,
    window_ids: list[int],
    data: dict[int, SSTableName],
    *,
    payload_bytes: int | None,
    wire_bytes: int | None,
    read: ReadPages,
    shares: "dict[int, ExecutionShare] | None" = None,
) -> Amplification:
    """`read`: the ReadPages of (at least) these windows (read_pages), read once by the caller for all.
    `shares`: window_id -> its execution's share by thread (attribution.run_attribution().shares); a window
    where other requests touched the node counts its execution's share, not the window's reads."""
    page_cache_measured = trace.measured("page_cache")
    mapped_measured = trace.measured("mapped")
    covered = [shares[window] for window in window_ids if shares and window in shares]
    busy_windows = {share.window_id for share in covered if share.busy}
    totals = _read_totals(
        queries.file_window_io(trace, window_ids, sorted(data)), read, covered, busy_windows, mapped_measured
    )
    basis: str | None
    basis_bytes: int | None
    if payload_bytes is not None:
        basis, basis_bytes = "payload", payload_bytes
    elif wire_bytes is not None:
        basis, basis_bytes = "wire", wire_bytes
    else:
        basis = basis_bytes = None

    def over(value: float | None, denominator: float | None) -> float | None:
        return value / denominator if value is not None and denominator else None

    data_read_bytes = totals.data_read_bytes
    cache_miss = totals.cache_miss_bytes if page_cache_measured else None
    by_measure = {
        "read syscalls": totals.syscall_bytes,
        "page-cache fills": totals.outside_syscall_bytes,
        "mapped pages touched": totals.mapped_only_bytes,
    }
    return Amplification(
        basis=basis,
        basis_bytes=basis_bytes,
        payload_bytes=payload_bytes,
        wire_bytes=wire_bytes,
        syscall_bytes=totals.syscall_bytes,
        cache_miss_bytes=cache_miss,
        cache_outside_syscall_bytes=totals.outside_syscall_bytes if page_cache_measured else None,
        mapped_touched_bytes=totals.mapped_bytes if mapped_measured else None,
        mapped_outside_syscall_bytes=totals.mapped_only_bytes if mapped_measured else None,
        data_read_bytes=data_read_bytes,
        data_read_least_bytes=totals.data_read_least_bytes,
        read=over(data_read_bytes, basis_bytes),
        read_least=over(totals.data_read_least_bytes, basis_bytes),
        syscall=over(totals.syscall_bytes, basis_bytes),
        device=over(cache_miss, basis_bytes),
        wire=over(data_read_bytes, wire_bytes),
        carried_by=max(by_measure, key=lambda name: by_measure[name]) if data_read_bytes else None,
        data_files=len(totals.touched),
        sstables_read=len({data[file_id].sstable for file_id in totals.touched}),
        busy=busy(covered, len(busy_windows), totals.unattributed_mapped_bytes if mapped_measured else None),
    )


@dataclass(frozen=True)
class _ReadTotals:
    """The Data files' bytes read in some windows, by measure (amplification's sums)."""

    syscall_bytes: int
    cache_miss_bytes: int
    outside_syscall_bytes: int  # page-cache fills outside the read syscalls
    mapped_bytes: int
    mapped_only_bytes: int  # mapped pages touched that no read syscall returned
    data_read_bytes: int
    data_read_least_bytes: int
    unattributed_mapped_bytes: int  # mapped pages touched in busy windows: no thread to charge them to
    touched: set[int]  # the file_ids read


def _read_totals(
    rows: list[queries.FileWindowIO],
    read: ReadPages,
    covered: "list[ExecutionShare]",
    busy_windows: set[int],
    mapped_measured: bool,
) -> _ReadTotals:
    """The sums of the windows' rows; a busy window (other requests touched the node) counts its
    execution's share instead of its rows."""
    syscall_bytes = cache_miss = outside = mapped = mapped_only = data_read_bytes = data_read_least = 0
    unattributed_mapped = 0
    touched = set()
    for row in rows:
        key = (row.window_id, row.file_id)
        if row.window_id in busy_windows:
            if mapped_measured:  # per process: no thread to charge it to
                unattributed_mapped += max(0, (row.mapped_touched_bytes or 0) - read.syscall_bytes.get(key, 0))
            continue
        syscall_bytes += row.read_bytes or 0
        cache_miss += row.cache_miss_bytes or 0
        fills = read.fills_outside_syscall_bytes.get(key, 0)
        touched_bytes = (row.mapped_touched_bytes or 0) if mapped_measured else 0
        least = least_touched(touched_bytes, (row.mapped_huge_bytes or 0) if mapped_measured else 0)
        # Referenced counts the pages of a mapped file that a read syscall returned too: once is enough.
        syscall_page_bytes = read.syscall_bytes.get(key, 0)
        window_mapped_only = max(0, touched_bytes - syscall_page_bytes)
        data_read_bytes += data_read(row.read_bytes or 0, fills, window_mapped_only)
        data_read_least += data_read(row.read_bytes or 0, fills, max(0, least - syscall_page_bytes))
        outside += fills
        mapped += touched_bytes
        mapped_only += window_mapped_only
        if row.read_bytes or row.cache_miss_bytes or touched_bytes:
            touched.add(row.file_id)
    for share in covered:
        if share.window_id in busy_windows:
            syscall_bytes += share.syscall_bytes
            cache_miss += share.cache_miss_bytes
            outside += share.fill_outside_syscall_bytes
            data_read_bytes += share.data_read_bytes
            data_read_least += share.data_read_bytes
            touched |= share.files
    return _ReadTotals(
        syscall_bytes=syscall_bytes,
        cache_miss_bytes=cache_miss,
        outside_syscall_bytes=outside,
        mapped_bytes=mapped,
        mapped_only_bytes=mapped_only,
        data_read_bytes=data_read_bytes,
        data_read_least_bytes=data_read_least,
        unattributed_mapped_bytes=unattributed_mapped,
        touched=touched,
    )


def busy(covered: "list[ExecutionShare]", busy_executions: int, mapped_unattributed: int | None) -> Busy | None:
    """What other requests read in the windows of `covered` (None: no execution was charged by thread)."""
    if not covered:
        return None
    table_bytes = sum(share.table_bytes for share in covered)
    requests = [share.other_requests for share in covered if share.other_requests is not None]
    return Busy(
        executions=len(covered),
        busy_executions=busy_executions,
        other_requests=sum(requests) if requests else None,
        table_bytes_by_others=sum(share.others_table_bytes for share in covered),
        other_tables_bytes=sum(share.other_tables_bytes for share in covered),
        attributed_share=min(1.0, sum(s.data_read_bytes for s in covered) / table_bytes) if table_bytes else None,
        mapped_unattributed_bytes=mapped_unattributed,
    )


def least_touched(touched_bytes: int, huge_bytes: int) -> int:
    """The fewest bytes a process may have touched for `touched_bytes` of Referenced, when up to
    `huge_bytes` of its mapping are 2 MiB (PMD) entries, each marked whole by one 4 KiB access."""
    from_huge = min(touched_bytes, huge_bytes)
    return touched_bytes - from_huge + -(-from_huge // HUGE_PAGE_BYTES) * PAGE_BYTES


def unseen_reads(
    trace: Trace, data: dict[int, SSTableName], overall: Amplification, data_label: str, disk_access_mode: str | None
) -> Unseen | None:
    """Why reads of these Data files may be in no measure of the trace, or None when every way the
    JVM reads them was measured (or they are known not to be mapped)."""
    if trace.measured("mapped"):
        return unattributed_mapped(overall, data_label)
    unmeasured = trace.meta.get("mapped_unmeasured") or {}
    fix = unmeasured.get("fix") or (
        "trace the query with `casstrace run` on the node (bcc backend, as root): "
        "it measures the mapped pages the JVM touches"
    )
    why = f": {unmeasured['reason']}" if unmeasured.get("reason") else ""
    if trace.measured("mappings"):
        mapped = queries.mapped_bytes(trace, sorted(data))
        if not mapped:
            return None
        return Unseen(
            f"The JVM maps {human_bytes(mapped)} of {data_label}, and the mapped pages it touched were "
            f"not measured{why}; a warm read through those maps shows in no other measure",
            fix,
        )
    mode = (disk_access_mode or "unknown").lower()
    if mode in MMAP_DATA_MODES:
        return Unseen(
            f"disk_access_mode is '{mode}': Cassandra reads {data_label} through memory maps, and this "
            f"trace has no measure of mapped pages touched{why}; a warm mapped read shows in no other",
            fix,
        )
    if mode == "unknown" and overall.syscall_bytes == 0:
        return Unseen(
            f"No read syscall touched {data_label} and disk_access_mode is unknown: Cassandra may read "
            f"them through memory maps, which no measure of this trace sees{why}",
            fix,
        )
    return None


def unattributed_mapped(overall: Amplification, data_label: str) -> Unseen | None:
    """The mapped pages of the Data files touched while other requests touched the node: per process,
    no thread to charge, so in no figure (None: there were none)."""
    busy_node = overall.busy
    if busy_node is None or not busy_node.mapped_unattributed_bytes:
        return None
    return Unseen(
        f"Other requests touched the node during {busy_node.busy_executions} of the {busy_node.executions} "
        f"executions, and {human_bytes(busy_node.mapped_unattributed_bytes)} of mapped pages of {data_label} "
        "were touched then: the accessed bits are per process, so those reads cannot be charged to the query "
        "or to the others, and are in no figure here",
        "run again when the node serves fewer requests, or on a replica taken out of the clients' load",
    )


# -- which windows, which executions -------------------------------------------------------------


def scope(trace: Trace, rows: list[ExecutionRecord]) -> tuple[list[int], str]:
    """The windows the totals cover: the measured executions', else the whole capture."""
    measured = [row.window_id for row in rows if row.kind == "measured" and row.window_id is not None]
    if measured:
        count = len(measured)
        return measured, f"{count} measured execution{'s' * (count != 1)}"
    all_windows = queries.window_ids(trace)
    return all_windows, "the whole capture (no measured execution windows recorded)"


def warmup(
    trace: Trace, rows: list[ExecutionRecord], data: dict[int, SSTableName], read: ReadPages
) -> Amplification | None:
    """What the warmup executions read, kept apart from the measured ones (None: no warmup ran).
    `read`: the ReadPages of (at least) their windows."""
    warmups = [row for row in rows if row.kind == "warmup" and row.window_id is not None]
    if not warmups:
        return None

    def total(values: list[int | None]) -> int | None:
        return None if any(value is None for value in values) else sum(value or 0 for value in values)

    return amplification(
        trace,
        [row.window_id for row in warmups if row.window_id is not None],
        data,
        payload_bytes=total([row.payload_bytes for row in warmups]),
        wire_bytes=total([row.wire_bytes for row in warmups]),
        read=read,
    )


def client_sockets(trace: Trace) -> list[int]:
    """The node's sockets to this run's client: those whose remote address is one of meta client_addresses
    ([]: a trace without them)."""
    rule = client_rule(trace, trace.meta.get("client_addresses") or [])
    return [
        file_id for file_id, remote in queries.socket_remotes(trace).items() if rule.holds(None, parse_address(remote))
    ]


def with_client_wire(trace: Trace, rows: list[ExecutionRecord]) -> list[ExecutionRecord]:
    """The executions, each with the bytes the node wrote to this client's connections in its window: the
    node's sockets whose remote address is one of meta client_addresses (a run's, later in format 4). An
    older trace's executions keep the wire bytes stored with them; a trace with no such socket, or that
    did not measure socket writes, has none (None, never 0)."""
    if not trace.measured("wire"):
        return rows
    sockets = client_sockets(trace)
    if not sockets:
        return rows
    windows = [row.window_id for row in rows if row.window_id is not None]
    written: Counter[int] = Counter()
    for write in queries.window_writes(trace, windows, sockets):
        written[write.window_id] += write.written
    return [row if row.window_id is None else replace(row, wire_bytes=written[row.window_id]) for row in rows]


def client_rule(trace: Trace, clients: Iterable[str] | None = None) -> ClientSockets:
    """Which of the trace's node's sockets are a client's (traces.addresses.ClientSockets): on its
    native-transport port; of `clients` ('ip:port') alone when given."""
    return ClientSockets.of((trace.meta.get("node") or {}).get("port") or DEFAULT_NATIVE_PORT, clients)


@dataclass(frozen=True)
class SocketWrites:
    """Bytes written to one socket over some windows (and read from it), with its ends as [ip, port] (a
    missing remote: ['']), and the node whose JVM had it (None in a trace without nodes)."""

    node_id: int | None
    local: list[str]
    remote: list[str]
    written: int
    read: int = 0

    @property
    def local_end(self) -> tuple[str, int] | None:
        return parse_address(":".join(self.local))

    @property
    def remote_end(self) -> tuple[str, int] | None:
        return parse_address(":".join(self.remote))

    def is_one_of(self, rule: ClientSockets) -> bool:
        return rule.holds(self.local_end, self.remote_end)


def socket_writes(trace: Trace, window_ids: list[int]) -> list[SocketWrites]:
    """Every socket's writes over the windows (sockets are named 'tcp LOCAL->REMOTE' where the
    backend kept no address columns)."""
    found = []
    for row in queries.socket_writes(trace, window_ids):
        ends = row.path.split()[-1].split("->")
        local = (row.local_addr or ends[0]).rsplit(":", 1)
        remote = (row.remote_addr or (ends[1] if len(ends) > 1 else ":")).rsplit(":", 1)
        found.append(SocketWrites(row.node_id, local, remote, row.written, row.read))
    return found


def client_wire_bytes(trace: Trace, window_ids: list[int]) -> int | None:
    """Bytes the node wrote to client connections (sockets on its native-transport port), when no
    execution records them. None when the backend did not measure socket writes, or when the trace
    does not record the node's port (a capture of a process) and no socket has the default one: a
    node on another port sent its clients what no figure here shows, not 0 B."""
    if not trace.measured("wire"):
        return None
    rule = client_rule(trace)
    clients = [socket.written for socket in socket_writes(trace, window_ids) if socket.is_one_of(rule)]
    if not clients and not (trace.meta.get("node") or {}).get("port"):
        return None
    return sum(clients)


def execution_results(
    trace: Trace,
    rows: list[ExecutionRecord],
    data: dict[int, SSTableName],
    read: ReadPages,
    shares: "dict[int, ExecutionShare] | None" = None,
    measures: dict[int, dict[str, float]] | None = None,
) -> list[Execution]:
    """Each execution with its amplification and its window's measures. `read`: the ReadPages of (at
    least) their windows; `shares`: the measured executions' by thread (attribution.run_attribution().shares);
    `measures`: per window (casstrace.analyses.measures.by_window)."""
    results = []
    for row in rows:
        amp = None
        if row.window_id is not None:
            amp = amplification(
                trace,
                [row.window_id],
                data,
                payload_bytes=row.payload_bytes,
                wire_bytes=row.wire_bytes,
                read=read,
                shares=shares,
            )
        figures = (measures or {}).get(row.window_id, {}) if row.window_id is not None else {}
        results.append(Execution.of(row, amp, figures))
    return results
