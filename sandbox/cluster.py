"""A sandbox of N nodes: one Cassandra cluster on 127.0.0.1 ... 127.0.0.N, each node its own JVM.

Node 1 is the sandbox's data directory itself, node K its subdirectory nodeK (settings.node_dir);
node 1's sandbox.json says how many nodes there are, and every node's own sandbox.json how it
runs. The nodes start one after another, each once the previous one is Up/Normal in node 1's view
of the ring: nodes that join at once can claim the same ranges. A one-node sandbox is exactly
the Sandbox of control.py, started and stopped through this class the same way.
"""

import dataclasses
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from casstrace.errors import CasstraceError
from casstrace.sandbox.control import START_TIMEOUT_S, STOP_TIMEOUT_S, Sandbox, Status, check_ports_free, find_runtime
from casstrace.sandbox.settings import DEFAULT_CLUSTER_NAME, Layout, node_dir

# After a node answers CQL, the seconds the others may take to see it Up/Normal through gossip.
RING_TIMEOUT_S = 120
# A line of `nodetool status`: state (U/D + N/L/J/M), then the node's address.
_STATUS_LINE = re.compile(r"^(?P<state>[UD][NLJM])\s+(?P<address>\d+\.\d+\.\d+\.\d+)\s", re.MULTILINE)


def ring_states(nodetool_status: str) -> dict[str, str]:
    """address -> two-letter state ('UN', 'DN', ...) from `nodetool status` output."""
    return {match["address"]: match["state"] for match in _STATUS_LINE.finditer(nodetool_status)}


class SandboxCluster:
    def __init__(self, data_dir: str | Path):
        self.root = Layout(data_dir).root

    @property
    def data_dir(self) -> Path:
        return self.root

    @property
    def first(self) -> Sandbox:
        """Node 1: the seed, the node every verb without --node means."""
        return Sandbox(self.root)

    @property
    def size(self) -> int:
        """How many nodes the sandbox has (1 before its first start)."""
        settings = self.first.layout.load_settings()
        return settings.nodes if settings is not None else 1

    @property
    def nodes(self) -> list[Sandbox]:
        return [self.node(number) for number in range(1, self.size + 1)]

    def node(self, number: int) -> Sandbox:
        """Node `number` (1-based) of this sandbox; raises naming the fix when there is none."""
        if not 1 <= number <= self.size:
            raise CasstraceError(
                f"the sandbox in {self.root} has no node {number} (it has {self.size})",
                f"use --node 1 to {self.size}, or start a sandbox with more --nodes",
            )
        return Sandbox(node_dir(self.root, number))

    def statuses(self) -> list[Status]:
        return [node.status() for node in self.nodes]

    def is_running(self) -> bool:
        """Whether every node runs."""
        return all(node.is_running() for node in self.nodes)

    # -- start and stop ---------------------------------------------------------------------
    def start(
        self,
        *,
        nodes: int | None = None,
        only: int | None = None,
        timeout: float = START_TIMEOUT_S,
        progress: Callable[[str], None] = print,
        **options: Any,
    ) -> list[Status]:
        """Starts every node that is not running (or just node `only`), one after another, and
        returns once each answers CQL and is Up/Normal in node 1's view of the ring. `options`
        are Sandbox.start's (version, native_port, jmx_port, ...): node 1 takes them, the other
        nodes follow node 1 (its ports, version, heap), each on its own JMX port."""
        first = self.first
        previous = first.layout.load_settings()
        if only is not None:
            if nodes is not None or any(value is not None for value in options.values()):
                raise CasstraceError(
                    "--node starts one node of a sandbox with the settings it already has",
                    "give --node alone, or start the whole sandbox without --node",
                )
            node = self.node(only)
            node.refuse_if_running()
            settings = node.settings
            runtime = find_runtime(settings, progress)
            check_ports_free(settings)
            node.launch(settings, runtime, timeout=timeout)
            self._wait_in_ring(node.settings.address)
            return self.statuses()

        size = nodes if nodes is not None else previous.nodes if previous is not None else 1
        if previous is not None and size != previous.nodes:
            raise CasstraceError(
                f"the sandbox in {self.root} has {previous.nodes} node{'s' * (previous.nodes != 1)}; "
                f"a node added to its data would own ranges it has no data for",
                f"start a new sandbox with another --data-dir (or delete {self.root})",
            )
        if previous is None and size > 1:
            options["cluster_name"] = f"{DEFAULT_CLUSTER_NAME} {self.root.name}"
        base = first.resolve_settings(nodes=size, node=1, **options)
        planned = [
            (
                Sandbox(node_dir(self.root, number)),
                dataclasses.replace(base, node=number, jmx_port=base.jmx_port + number - 1),
            )
            for number in range(1, size + 1)
        ]
        to_start = [(node, settings) for node, settings in planned if not node.is_running()]
        if not to_start:
            if size == 1:
                first.refuse_if_running()
            raise CasstraceError(
                f"every node of the sandbox in {self.root} is already running",
                f"use it as it is, or stop it first: casstrace sandbox stop --data-dir {self.root}",
            )
        for node, _ in to_start:
            node.check_writable()
        runtime = find_runtime(base, progress)
        for _, settings in to_start:
            check_ports_free(settings)
        for node, settings in to_start:
            if size > 1:
                progress(f"Starting node {settings.node} of {size} on {settings.address} ...")
            node.launch(settings, runtime, timeout=timeout)
            if size > 1:
                self._wait_in_ring(settings.address)
        return self.statuses()

    def stop(self, only: int | None = None, timeout: float = STOP_TIMEOUT_S) -> list[tuple[int, int | None]]:
        """Stops every node (or node `only`): all are signalled first, then each waited for down
        to its JVM's last thread. Returns (node number, PID stopped or None) for each."""
        numbers = [only] if only is not None else list(range(1, self.size + 1))
        signalled = [(number, self.node(number).signal_stop()) for number in numbers]
        for number, pid in signalled:
            self.node(number).wait_stopped(pid, timeout)
        return signalled

    # -- the ring ---------------------------------------------------------------------------
    def ring(self, via: int = 1) -> dict[str, str]:
        """address -> state ('UN', 'DN', ...) as node `via` sees the ring."""
        return ring_states(self.node(via).nodetool("status").stdout)

    def _wait_in_ring(self, address: str) -> None:
        """Waits until node 1 (or, when node 1 is down, the node just started) sees `address`
        Up/Normal. A one-node sandbox has no ring to wait for."""
        if self.size == 1:
            return
        via = 1 if self.first.is_running() else int(address.rsplit(".", 1)[1])
        deadline = time.monotonic() + RING_TIMEOUT_S
        while True:
            states = self.ring(via)
            if states.get(address) == "UN":
                return
            if time.monotonic() > deadline:
                raise CasstraceError(
                    f"node {address} answers CQL but node {via} sees it as "
                    f"{states.get(address, 'absent')} after {RING_TIMEOUT_S} s",
                    f"see the logs, e.g. {self.node(via).log}",
                )
            time.sleep(1)
