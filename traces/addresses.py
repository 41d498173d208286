"""Socket addresses as the trace records them ('ip:port', '[ipv6]:port'), in one spelling per address;
which sockets are a client's (ClientSockets)."""

from collections.abc import Iterable
from dataclasses import dataclass


def normalize_ip(ip: str) -> str:
    """One spelling per address: no brackets, IPv4-mapped IPv6 as plain IPv4."""
    ip = ip.strip("[]")
    if ip.lower().startswith("::ffff:") and "." in ip:
        return ip[len("::ffff:") :]
    return ip


def parse_address(address: str | None) -> tuple[str, int] | None:
    """'ip:port' or '[ipv6]:port' -> (ip, port), None when it is not one."""
    if not address or ":" not in address:
        return None
    ip, _, port = address.rpartition(":")
    try:
        return normalize_ip(ip), int(port)
    except ValueError:
        return None


DEFAULT_NATIVE_PORT = 9042  # Cassandra's native_transport_port unless the node sets another


@dataclass(frozen=True)
class ClientSockets:
    """The one rule for which of a node's TCP sockets are a CQL client's: the node's end is on its
    native-transport port (every client's: on a busy node, other clients' too; its connections to
    other nodes are on the storage port). Given `clients` (the client's ends of one client's
    connections, (ip, port): a run's meta client_addresses), only that client's: those whose remote
    end is one of them. A socket whose node end was not recorded is judged by its remote end alone."""

    native_port: int
    clients: frozenset[tuple[str, int]] | None = None  # None: every client's

    @classmethod
    def of(cls, native_port: int, clients: Iterable[str | tuple[str, int]] | None = None) -> "ClientSockets":
        """The rule for `native_port`, of `clients` ('ip:port' or (ip, port), in any spelling) when given."""
        if clients is None:
            return cls(native_port)
        ends = (parse_address(end) if isinstance(end, str) else (normalize_ip(end[0]), end[1]) for end in clients)
        return cls(native_port, frozenset(end for end in ends if end is not None))

    def holds(self, local: tuple[str, int] | None, remote: tuple[str, int] | None) -> bool:
        """Whether the socket from the node's `local` end (None: not recorded) to `remote` is one of them."""
        if self.clients is None:
            return local is not None and local[1] == self.native_port
        return (local is None or local[1] == self.native_port) and remote in self.clients
