"""The window sources every `casstrace run` capture of a node's JVM takes beside its backend: the one
place a per-window measure's source is wired (CONTRIBUTING.md, "A per-execution measure").

`casstrace run` on this machine's JVM and each node's agent (casstrace.orchestration.agents) call
node_sources(), so a source added here is taken on every captured node of every run, and its rows
reach the trace through casstrace.traces.merge for several nodes.
"""

from collections.abc import Collection, Sequence

from casstrace.node.gc_pauses import GcPauses
from casstrace.probes.bcc.node_time import NodeTime
from casstrace.probes.proc.mapped_pages import MappedPagesCapture
from casstrace.probes.protocol import WindowSource
from casstrace.terminal import warn


def node_sources(
    pid: int,
    data_file_directories: Sequence[str],
    native_port: int,
    clients: Collection[tuple[str, int]] | None = None,
) -> list[WindowSource]:
    """The mapped pages each window touched, the node's time and CPU time, and the JVM's pauses per
    window (made now, before the capture: their set-up lands in no window). The node's time is of the
    connections from `clients` (the run's driver's ends), or every client's where they are not known."""
    return [
        MappedPagesCapture(pid, data_file_directories),
        NodeTime(pid, native_port, warn, clients=clients),
        GcPauses(pid, warn),
    ]
