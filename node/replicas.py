"""Which nodes a run is about: the node the query goes to, and the replicas of the partition it reads.

The replicas come from the driver's token map (the cluster's nodes and tokens, learnt at connect,
and the keyspace's replication): the partition key's values are read from the statement's WHERE
clause (`pk = literal`, `pk IN (literals)`, every column of a composite key), serialized as the
node would serialize them, and hashed by the partitioner into the token whose replicas the map
names. A statement that names no single partition (no WHERE on the whole key, a token() range, a
type this module cannot serialize) involves every node: all of them are the replica set then, and
the routing says why.

Nothing here reads a value into a trace: the key's values are used for the token only.
"""

import ipaddress
import itertools
import re
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from cassandra.cluster import Cluster

from casstrace.node.statements import tokenize
from casstrace.traces.meta import ColumnMeta, TableMeta

TOKEN_MAP = "token map"
ALL_NODES = "all nodes (no partition key)"


@dataclass(frozen=True)
class ClusterNode:
    """A node as the driver's token map names it."""

    address: str  # its native transport (rpc) address
    port: int  # its native transport port
    datacenter: str | None
    rack: str | None
    replica: bool  # holds a replica of the queried partition(s)
    coordinator: bool  # the node the query is sent to
    broadcast_address: str | None = None  # the address other nodes know it by (its trace events' source)

    def addresses(self) -> set[str]:
        """Every address the cluster names it by."""
        return {self.address} | ({self.broadcast_address} if self.broadcast_address else set())


@dataclass(frozen=True)
class ReplicaSet:
    nodes: tuple[ClusterNode, ...]  # the coordinator first, then the replicas in the token map's order
    keyspace: str | None
    routing: str  # TOKEN_MAP, or 'all nodes (...why...)'
    partitions: int  # partition keys the token map was asked about (0: all nodes)


def replica_set(
    cluster: Cluster, coordinator: str, port: int, keyspace: str | None, table: TableMeta | None, statement: str
) -> ReplicaSet:
    """The nodes of a run of `statement` sent to `coordinator` (an address): see the module's docstring.
    `cluster` must have been connected with its token map (NodeSession(token_map=True))."""
    hosts = list(cluster.metadata.all_hosts())
    keys, why = (None, "no table") if table is None or keyspace is None else routing_keys(statement, table)
    replicas: list[object] = []
    if keys is not None and keyspace is not None:
        cluster.refresh_keyspace_metadata(keyspace)  # the replication strategy of the token map's answer
        for key in keys:
            replicas.extend(host for host in cluster.metadata.get_replicas(keyspace, key) if host not in replicas)
        if not replicas:
            keys, why = None, "the token map names no replica"
    if keys is None:
        replicas = list(hosts)
    routing = TOKEN_MAP if keys is not None else (ALL_NODES if why == "no partition key" else f"all nodes ({why})")

    def node(host: object, is_replica: bool) -> ClusterNode:
        endpoint = getattr(host, "endpoint", None)
        return ClusterNode(
            address=str(getattr(host, "address", "")),
            port=getattr(endpoint, "port", None) or port,
            datacenter=getattr(host, "datacenter", None),
            rack=getattr(host, "rack", None),
            replica=is_replica,
            coordinator=str(getattr(host, "address", "")) == coordinator,
            broadcast_address=str(broadcast) if (broadcast := getattr(host, "broadcast_address", None)) else None,
        )

    nodes = [node(host, True) for host in replicas]
    if not any(n.coordinator for n in nodes):
        known = next((host for host in hosts if str(getattr(host, "address", "")) == coordinator), None)
        nodes.insert(
            0,
            node(known, False)
            if known is not None
            else ClusterNode(coordinator, port, None, None, replica=False, coordinator=True),
        )
    nodes.sort(key=lambda n: not n.coordinator)
    return ReplicaSet(tuple(nodes), keyspace, routing, len(keys or ()))


# -- the partition key's values, from the statement ------------------------------------------------
_VALUE = r"(?:'(?:[^']|'')*'|\$\$.*?\$\$|[-+\w.:]+)"
_CONDITION = re.compile(
    rf"(?P<column>\"(?:[^\"]|\"\")*\"|\w+)\s*(?:=\s*(?P<value>{_VALUE})"
    rf"|\bIN\s*\((?P<values>\s*{_VALUE}(?:\s*,\s*{_VALUE})*)\s*\))",
    re.IGNORECASE | re.S,
)


def routing_keys(statement: str, table: TableMeta) -> tuple[list[bytes] | None, str]:
    """The routing keys (serialized partition keys) the statement reads, or (None, why not)."""
    partition_key = [column for column in table.get("columns", []) if column["kind"] == "partition_key"]
    if not partition_key:
        return None, "no partition key"
    where = _where_clause(statement)
    if where is None or re.search(r"\btoken\s*\(", where, re.IGNORECASE):
        return None, "no partition key"
    values: dict[str, list[str]] = {}
    for match in _CONDITION.finditer(where):
        name = _identifier(match["column"])
        if match["value"] is not None:
            values.setdefault(name, []).append(match["value"])
        else:
            values.setdefault(name, []).extend(re.findall(_VALUE, match["values"], re.S))
    if any(column["name"] not in values for column in partition_key):
        return None, "no partition key"
    keys = []
    for combination in itertools.product(*(values[column["name"]] for column in partition_key)):
        parts = []
        for column, literal in zip(partition_key, combination):
            serialized = serialize_literal(column, literal)
            if serialized is None:
                return None, f"cannot read the {column['type']} value of {column['name']}"
            parts.append(serialized)
        keys.append(
            parts[0] if len(parts) == 1 else b"".join(struct.pack(">H", len(part)) + part + b"\0" for part in parts)
        )
    return keys, ""


def _where_clause(statement: str) -> str | None:
    """The statement's WHERE clause up to ORDER BY, GROUP BY, PER PARTITION, LIMIT or ALLOW
    FILTERING, comments removed; None when it has none."""
    text = "".join(" " if token.kind == "comment" else token.text for token in tokenize(statement))
    found = re.search(r"\bWHERE\b(.*?)(?:\b(?:ORDER|GROUP|PER|LIMIT|ALLOW)\b|$)", text, re.IGNORECASE | re.S)
    # The lazy match stops at a keyword inside a string literal too; strings never hold a partition key's
    # column name followed by '=', so the conditions before it are still found.
    return found.group(1) if found else None


def _identifier(text: str) -> str:
    return text[1:-1].replace('""', '"') if text.startswith('"') else text.lower()


def _string(literal: str) -> str | None:
    if literal.startswith("'"):
        return literal[1:-1].replace("''", "'")
    if literal.startswith("$$"):
        return literal[2:-2]
    return None


def _varint(value: int) -> bytes:
    length = max(1, (value + (value < 0)).bit_length() // 8 + 1)
    return value.to_bytes(length, "big", signed=True)


def _fixed(fmt: str) -> Callable[[str], bytes]:
    return lambda literal: struct.pack(fmt, int(literal) if fmt[1] in "bhiq" else float(literal))


def _not_a(kind: str, literal: str) -> bytes:
    raise ValueError(f"{literal!r} is not a {kind} literal")


_SERIALIZERS: dict[str, Callable[[str], bytes]] = {
    "tinyint": _fixed(">b"),
    "smallint": _fixed(">h"),
    "int": _fixed(">i"),
    "bigint": _fixed(">q"),
    "counter": _fixed(">q"),
    "timestamp": _fixed(">q"),
    "float": _fixed(">f"),
    "double": _fixed(">d"),
    "varint": lambda literal: _varint(int(literal)),
    "boolean": lambda literal: {"true": b"\1", "false": b"\0"}[literal.lower()],
    "uuid": lambda literal: uuid.UUID(literal).bytes,
    "timeuuid": lambda literal: uuid.UUID(literal).bytes,
    "blob": lambda literal: (
        bytes.fromhex(literal.removeprefix("0x").removeprefix("0X"))
        if literal[:2].lower() == "0x"
        else _not_a("blob", literal)
    ),
}
_STRING_TYPES = {"text", "varchar", "ascii"}


def serialize_literal(column: ColumnMeta, literal: str) -> bytes | None:
    """The bytes the node hashes for this CQL literal of the column's type, None when this module
    does not know how (an unsupported type, or a literal that does not fit the type)."""
    kind = column["type"].lower()
    text = _string(literal)
    if kind in _STRING_TYPES:
        return text.encode() if text is not None else None
    if kind == "inet" and text is not None:
        try:
            return ipaddress.ip_address(text).packed
        except ValueError:
            return None
    serializer = _SERIALIZERS.get(kind)
    if serializer is None or text is not None:
        return None
    try:
        return serializer(literal)
    except (ValueError, KeyError, struct.error, OverflowError):
        return None
