"""Which of a run's nodes are captured, and how: this machine's JVMs directly, the others over ssh.

A node's JVM is this machine's when a Cassandra JVM here serves the node's address and port
(casstrace.node.jvm.cassandra_at). `--hosts ADDRESS=DESTINATION` sends a node's capture through
`ssh DESTINATION` even so; `--ssh` sends there every node whose JVM is not here, the destination
being the node's address (which ~/.ssh/config may map to a host, user, port, jump host...). Any
other node is recorded as not captured, with why.

The node an experiment measures is its plan's `Target` (orchestration.experiment.Plan), the one set of
these fields every capture of a command is built from and checked against.
"""

import ipaddress
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from casstrace.errors import CasstraceError
from casstrace.node.connection import ConnectionSettings
from casstrace.node.jvm import CassandraProcess, cassandra_at, serving_jvms
from casstrace.node.replicas import ClusterNode, ReplicaSet
from casstrace.orchestration.agents import AgentOptions, AgentTarget, TableRef

NOT_HERE = "no JVM on this machine; give --ssh"


@dataclass(frozen=True)
class RemoteSettings:
    ssh: bool = False  # every node not on this machine over ssh
    hosts: Mapping[str, str] = field(default_factory=dict)  # node address -> ssh destination
    ssh_config: Path | None = None  # ssh -F
    remote_casstrace: str = "casstrace"  # the command that runs casstrace over there


@dataclass(frozen=True)
class Target:
    """The node an experiment measures (orchestration.experiment.Plan), as its captures' options name it:
    its address and port as the driver reaches it (with how it connects), its JVM on this machine where
    given (--pid), and how the query's other nodes are reached where given (--ssh, --hosts: run's)."""

    connection: ConnectionSettings
    pid: int | None = None
    remote: RemoteSettings = field(default_factory=RemoteSettings)

    @property
    def node(self) -> str:
        """The node as a message names it: its address and port, and its JVM where given."""
        at = f"{self.connection.host}:{self.connection.port}"
        return at if self.pid is None else f"{at} (JVM {self.pid})"

    def check_aims_at(self, other: "Target", what: str) -> None:
        """Refuse `what` (a capture of the plan's) aimed at another node than this one: another address
        or port, JVM, or way to the query's other nodes. How it logs in or how long it waits may differ."""
        if other.node != self.node:
            raise CasstraceError(
                f"{what} would capture {other.node}, not this command's node {self.node}",
                "measure one node per command: give each node's captures a command of their own",
            )
        if other.remote != self.remote:
            raise CasstraceError(
                f"{what} would reach the query's other nodes of {self.node} otherwise than this command's "
                "other captures (--ssh, --hosts)",
                "give every capture of one command the same --ssh and --hosts",
            )


@dataclass(frozen=True)
class PlannedNode:
    node_id: int
    node: ClusterNode
    target: AgentTarget | None  # None: not captured
    not_captured: str | None = None


def plan_nodes(
    replicas: ReplicaSet,
    coordinator_process: CassandraProcess | None,
    remote: RemoteSettings,
    backend: str,
    tables: Sequence[TableRef],
    serving: dict[CassandraProcess, set[tuple[str, int]]] | None = None,
) -> list[PlannedNode]:
    """One PlannedNode per node of the replica set, numbered from 1 in its order (coordinator first).
    `serving`: this machine's Cassandra JVMs and their sockets (jvm.serving_jvms()), when known."""
    addresses = {node.address for node in replicas.nodes}
    unknown = sorted(set(remote.hosts) - addresses)
    if unknown:
        raise CasstraceError(
            f"--hosts names {', '.join(unknown)}, which is no node of this query "
            f"(its nodes: {', '.join(sorted(addresses))})",
            "give --hosts as NODE_ADDRESS=SSH_DESTINATION for the addresses the cluster uses",
        )
    plan = []
    if serving is None:  # read once, not once per node: a JVM's fds and sockets take a while
        serving = serving_jvms()
    for node_id, node in enumerate(replicas.nodes, start=1):
        options = AgentOptions(node.address, node.port, None, backend, tuple(tables))

        def over_ssh(destination: str) -> AgentTarget:  # called in this iteration only
            return AgentTarget(
                node_id,  # noqa: B023
                options,  # noqa: B023
                ssh=destination,
                ssh_config=remote.ssh_config,
                remote_casstrace=remote.remote_casstrace,
            )

        if node.address in remote.hosts:
            plan.append(PlannedNode(node_id, node, over_ssh(remote.hosts[node.address])))
            continue
        process = (
            coordinator_process
            if node.coordinator and coordinator_process is not None
            else cassandra_at(node.address, node.port, serving=serving)
        )
        if process is not None:
            plan.append(PlannedNode(node_id, node, AgentTarget(node_id, replace(options, pid=process.pid))))
        elif remote.ssh:
            plan.append(PlannedNode(node_id, node, over_ssh(node.address)))
        elif is_this_machine(node.address):
            plan.append(
                PlannedNode(
                    node_id, node, None, f"down: no Cassandra JVM serves {node.address}:{node.port} on this machine"
                )
            )
        else:
            plan.append(PlannedNode(node_id, node, None, NOT_HERE))
    return plan


def is_this_machine(address: str) -> bool:
    """Whether the address is one of this machine's (loopback, or what its host name resolves to)."""
    try:
        if ipaddress.ip_address(address).is_loopback:
            return True
        return address in {str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None)}
    except (ValueError, OSError):
        return False


def parse_hosts(entries: Sequence[str]) -> dict[str, str]:
    """--hosts ADDRESS=DESTINATION,... (or several --hosts) as a dict; a bare DESTINATION stands for
    the node whose address it is."""
    hosts = {}
    for entry in (part.strip() for text in entries for part in text.split(",")):
        if not entry:
            continue
        address, equals, destination = entry.partition("=")
        if not equals:
            address, destination = _address_of(entry), entry
        if not address or not destination:
            raise CasstraceError(
                f"--hosts entry {entry!r} is not ADDRESS=DESTINATION", "give --hosts 10.0.0.2=admin@db2,10.0.0.3=db3"
            )
        hosts[address.strip()] = destination.strip()
    return hosts


def _address_of(destination: str) -> str:
    host = destination.rsplit("@", 1)[-1].removeprefix("ssh://").split(":")[0].strip("[]")
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        try:
            return str(socket.getaddrinfo(host, None)[0][4][0])
        except OSError:
            raise CasstraceError(
                f"--hosts {destination!r}: cannot resolve {host!r}", "give --hosts NODE_ADDRESS=DESTINATION"
            ) from None
