"""The nodes of a multi-node trace (format 3): what part each took in the read, and what each read.

Roles come from Cassandra's own query trace and the executions' coordinators, nothing else:
  coordinator        an executions.coordinator address (the node the driver's request went to);
  data replica       named by a coordinator's 'reading data from /X', or the coordinator itself when
                     it read locally and no other node was sent the data request;
  digest replica     named by 'reading digest from /X', or the coordinator when it read locally while
                     another node was sent the data request (a digest read reads the rows as fully
                     as a data read; only its reply is a hash);
  read repair        named by 'Enqueuing full data read to X' (after a digest mismatch);
  speculative retry  named by 'speculating read retry on X'.
A local read is not traced as such by Cassandra (it only logs it): it shows as read events
('Executing single-partition query', 'Read N live rows ...') whose source is the coordinator.

Figures are per node over the analysed windows: the amplification rule of amplification.py over the
node's own Data files, the bytes its files were read, and what it wrote to other nodes and to
clients (sockets on the native port). A node that was not captured has no figures (None), and
makes every sum over the cluster a lower bound.
"""

import re
from collections import Counter
from collections.abc import Iterable

from casstrace.analyses import amplification as amp
from casstrace.analyses.attribution import RunAttribution
from casstrace.analyses.model import Amplification, FileIO, NodeIO
from casstrace.traces import Trace, queries
from casstrace.traces.addresses import ClientSockets
from casstrace.traces.meta import QueryTraceSession
from casstrace.traces.sstable_names import SSTableName

COORDINATOR, DATA, DIGEST, READ_REPAIR, SPECULATIVE = (
    "coordinator",
    "data replica",
    "digest replica",
    "read repair",
    "speculative retry",
)
ROLE_ORDER = (COORDINATOR, DATA, DIGEST, READ_REPAIR, SPECULATIVE)

_ADDRESS = r"(?:[\w.-]*/)?(\d{1,3}(?:\.\d{1,3}){3})"  # '/127.0.0.2:7000', 'localhost/127.0.0.1:7000'
_REMOTE_READ = re.compile(rf"^reading (data|digest) from {_ADDRESS}", re.IGNORECASE)
_READ_REPAIR = re.compile(rf"^Enqueuing full data read to (?:Full\()?{_ADDRESS}", re.IGNORECASE)
_SPECULATIVE = re.compile(rf"^speculating read retry on (?:Full\()?{_ADDRESS}", re.IGNORECASE)
# What a node traces when it reads the partition itself.
_LOCAL_READ = re.compile(
    r"^(Executing single-partition query|Read \d+ live rows?|Merged data from memtables)", re.IGNORECASE
)


def roles(query_trace: list[QueryTraceSession], coordinators: Iterable[str]) -> dict[str, list[str]]:
    """address -> its roles in the read, in ROLE_ORDER, from Cassandra's query trace events (with
    their `source`) and the executions' coordinators."""
    found: dict[str, set[str]] = {address: {COORDINATOR} for address in coordinators if address}
    for session in query_trace:
        events = session.get("events") or []
        remote_data = False
        local_readers: set[str] = set()
        named: set[str] = set()
        for event in events:
            activity = event.get("activity", "")
            source = event.get("source")
            if match := _REMOTE_READ.match(activity):
                kind, address = match.group(1).lower(), match.group(2)
                found.setdefault(address, set()).add(DATA if kind == "data" else DIGEST)
                named.add(address)
                remote_data |= kind == "data"
            elif match := _READ_REPAIR.match(activity):
                found.setdefault(match.group(1), set()).add(READ_REPAIR)
            elif match := _SPECULATIVE.match(activity):
                found.setdefault(match.group(1), set()).add(SPECULATIVE)
                named.add(match.group(1))
            elif source and _LOCAL_READ.match(activity):
                local_readers.add(source)
        # A node that read without being sent a request read locally, as the coordinator.
        for address in local_readers - named:
            found.setdefault(address, set()).add(DIGEST if remote_data else DATA)
    return {address: [role for role in ROLE_ORDER if role in kinds] for address, kinds in found.items()}


def nodes(
    trace: Trace,
    window_ids: list[int],
    data: dict[int, SSTableName],
    files: list[FileIO],
    *,
    executions: int,
    payload_bytes: int | None,
    read: amp.ReadPages,
    query_trace: list[QueryTraceSession],
    coordinators: list[str],
    attributed: RunAttribution | None = None,
) -> list[NodeIO]:
    """Every node of the trace with its roles and figures over `window_ids` (the measured executions',
    `executions` of them; `files`: their file_io); [] for a trace without nodes rows. `attributed`:
    the run's join by thread, when it has one: each node is charged its own threads' part of each
    execution where other requests touched it."""
    node_rows = queries.nodes(trace)  # none in imports and captures
    if not node_rows:
        return []
    file_nodes = queries.file_node_ids(trace)
    wire = _wire(trace, window_ids, amp.client_rule(trace), {row.node_id: row.address for row in node_rows})
    read_bytes: Counter[str] = Counter()  # by address: bytes read syscalls returned from its files (not sockets)
    for f in files:
        if f.kind == "file" and f.node is not None:
            read_bytes[f.node] += f.read_bytes
    reads_in = _reads_in(trace, window_ids, data)
    by_address = roles(query_trace, coordinators)
    found = []
    for row in node_rows:
        node_id, captured = row.node_id, row.captured
        figures: Amplification | None = None
        if captured:
            own = {file_id: name for file_id, name in data.items() if file_nodes.get(file_id) == node_id}
            figures = amp.amplification(
                trace,
                window_ids,
                own,
                payload_bytes=payload_bytes,
                wire_bytes=None,
                read=read,
                shares=attributed.shares(own) if attributed is not None else None,
            )
        to_nodes, to_client = wire.get(node_id, (0, 0))
        found.append(
            NodeIO(
                node_id=node_id,
                address=row.address,
                host=row.host,
                datacenter=row.datacenter,
                rack=row.rack,
                replica=row.replica,
                captured=captured,
                not_captured=row.not_captured,
                pid=row.pid,
                roles=by_address.get(row.address, []),
                executions=executions,
                read_bytes=read_bytes[row.address] if captured else None,
                amplification=figures,
                wire_to_nodes_bytes=to_nodes if captured and trace.measured("wire") else None,
                wire_to_client_bytes=to_client if captured and trace.measured("wire") else None,
                reads_in=reads_in.get(node_id, []),
            )
        )
    return found


def _reads_in(trace: Trace, window_ids: list[int], data: dict[int, SSTableName]) -> dict[int, list[int]]:
    """node_id -> the executions (of those windows) in which any measure saw its Data files read."""
    found: dict[int, list[int]] = {}
    for node_id, execution in queries.node_executions_reading(
        trace, window_ids, sorted(data), count_mapped=trace.measured("mapped")
    ):
        found.setdefault(node_id, []).append(execution)
    return found


def readers_per_execution(nodes: list[NodeIO]) -> dict[int, int]:
    """execution -> how many nodes read the Data files in it (executions no captured node read in are absent)."""
    counts: Counter[int] = Counter(execution for node in nodes for execution in node.reads_in)
    return dict(counts)


def _wire(
    trace: Trace, window_ids: list[int], clients: ClientSockets, addresses: dict[int, str]
) -> dict[int, tuple[int, int]]:
    """node_id -> (bytes it wrote to other nodes, bytes it wrote to clients: `clients`' sockets).
    Between nodes, Cassandra talks on the storage port: the port found most often on either end of
    the other connections with a node's address (the trace does not record it)."""
    sockets = [socket for socket in amp.socket_writes(trace, window_ids) if socket.node_id is not None]
    # Each connection between nodes has the storage port at one end and an ephemeral port at the other.
    to_peers = Counter(
        port
        for socket in sockets
        if not socket.is_one_of(clients) and socket.remote[0] in addresses.values()
        for port in (socket.local[-1], socket.remote[-1])
    )
    storage_port = to_peers.most_common(1)[0][0] if to_peers else None
    totals: dict[int, tuple[int, int]] = {}
    for socket in sockets:
        assert socket.node_id is not None
        to_nodes, to_client = totals.get(socket.node_id, (0, 0))
        if socket.is_one_of(clients):
            to_client += socket.written
        elif storage_port is not None and storage_port in (socket.local[-1], socket.remote[-1]):
            to_nodes += socket.written
        totals[socket.node_id] = (to_nodes, to_client)
    return totals
