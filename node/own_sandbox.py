"""Whether a Cassandra node is one casstrace started itself (`casstrace sandbox start`): the one kind of
node `run` may write to.

A sandbox node is told by what its start left on disk, never by a name or a port alone: its JVM was
started with `-Dcassandra.config=file://ROOT/conf/cassandra.yaml`, ROOT holds the sandbox's record
(`sandbox.json`, the settings it was started with) and its pid file names this very JVM, and the
record's native port is the one the statement goes to. A node started any other way — a production
node, a node a user started by hand from a copy of the sandbox's files — fails one of these, and
`run` stays read-only on it.

The names here are the sandbox's layout (sandbox.settings.Layout takes them from here: one definition).
"""

import json
from dataclasses import dataclass
from pathlib import Path

from casstrace.errors import CasstraceError
from casstrace.node.jvm import CassandraProcess

SANDBOX_RECORD = "sandbox.json"  # the settings a sandbox node was started with
SANDBOX_PID_FILE = "cassandra.pid"
SANDBOX_CONFIG = Path("conf") / "cassandra.yaml"
_CONFIG_PREFIX = "file://"


@dataclass(frozen=True)
class OwnSandbox:
    """A node casstrace started: its data directory and native port."""

    root: Path
    native_port: int


def sandbox_root(process: CassandraProcess) -> Path | None:
    """The sandbox directory whose start made this JVM, or None: a node casstrace did not start (its
    configuration is not a sandbox's, the directory has no record, or its pid file names another JVM)."""
    config = process.system_property("cassandra.config")
    if config is None or not config.startswith(_CONFIG_PREFIX):
        return None
    path = Path(config[len(_CONFIG_PREFIX) :])
    root = path.parent.parent
    if root / SANDBOX_CONFIG != path or not (root / SANDBOX_RECORD).is_file():
        return None
    try:
        recorded_pid = int((root / SANDBOX_PID_FILE).read_text().strip())
    except (OSError, ValueError):
        return None
    return root if recorded_pid == process.pid else None


def require_own_sandbox(process: CassandraProcess | None, native_port: int) -> OwnSandbox:
    """The sandbox `process` is, when casstrace started it and it serves `native_port`; otherwise a
    CasstraceError: a write runs on casstrace's own sandbox only. None: the node's JVM is not on this
    machine, so nothing here can show casstrace started it."""
    fix = "run writes on a node started by `casstrace sandbox start`; on this node `run` only reads (give a SELECT)"
    if process is None:
        raise CasstraceError(
            f"refusing to run a write: the node at port {native_port} has no JVM on this machine, so casstrace "
            "cannot tell it started it",
            fix,
        )
    root = sandbox_root(process)
    if root is None:
        raise CasstraceError(
            f"refusing to run a write on the node of JVM {process.pid}: casstrace did not start it "
            f"(no sandbox record, {SANDBOX_RECORD}, names this JVM)",
            fix,
        )
    try:
        recorded = int(json.loads((root / SANDBOX_RECORD).read_text())["native_port"])
    except (OSError, ValueError, KeyError, TypeError):
        recorded = None
    if recorded != native_port:
        raise CasstraceError(
            f"refusing to run a write: it goes to port {native_port}, but JVM {process.pid} is the sandbox "
            f"in {root}, whose record gives native port {recorded}",
            fix,
        )
    return OwnSandbox(root, native_port)
