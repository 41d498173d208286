"""What a sandbox is: its data directory, the settings remembered there, and where each file lives.

A sandbox is identified by its data directory alone. `start` records the version, ports, heap,
disk access mode, commit log sync mode, SSTable format and number of nodes in sandbox.json, so every
later verb needs only --data-dir.

A sandbox of N nodes is one cluster: node 1 lives in the data directory itself (so a one-node
sandbox is laid out as it always was), node K in its subdirectory nodeK with a sandbox.json of its
own. Node K listens on 127.0.0.K (Linux routes all of 127/8 to the loopback), on the same native
and storage ports as every other node; only its JMX port, which Cassandra binds to 127.0.0.1 for
every node, is its own: node 1's plus K - 1.
"""

import dataclasses
import json
import os
import re
from pathlib import Path

from casstrace.errors import CasstraceError
from casstrace.node.own_sandbox import SANDBOX_CONFIG, SANDBOX_PID_FILE, SANDBOX_RECORD
from casstrace.sandbox.versions import SSTABLE_FORMATS, series_of

DISK_ACCESS_MODES = ("auto", "mmap", "mmap_index_only", "standard")
# When a write is acknowledged: periodic (every version's default), once it is in the commit log's
# memory, synced every commitlog_sync_period; batch, once the commit log holds it on disk (each
# write waits for a sync of its segment).
COMMITLOG_SYNC_MODES = ("periodic", "batch")
DEFAULT_COMMITLOG_SYNC = "periodic"
DEFAULT_NATIVE_PORT = 9042
DEFAULT_JMX_PORT = 7199
DEFAULT_HEAP = "1G"
HOST = "127.0.0.1"
DEFAULT_CLUSTER_NAME = "casstrace sandbox"
# Addresses 127.0.0.1 ... 127.0.0.9: a laptop's worth of JVMs, and an address per node that reads
# at a glance.
MAX_NODES = 9
MURMUR3_RING = 2**64


def node_address(node: int) -> str:
    return f"127.0.0.{node}"


def node_token(node: int, nodes: int) -> int:
    """Node `node`'s one token: the ring cut in `nodes` equal parts, node 1 at 0 (where a
    one-node sandbox has always had it, so its data keeps its token)."""
    token = (node - 1) * (MURMUR3_RING // nodes)
    return token - MURMUR3_RING if token >= MURMUR3_RING // 2 else token


@dataclasses.dataclass
class Settings:
    version: str | None
    native_port: int = DEFAULT_NATIVE_PORT
    jmx_port: int = DEFAULT_JMX_PORT
    # Gossip's port. Two sandboxes side by side need different ones too; by default it follows
    # the JMX port (7199 -> 7000, 17199 -> 17000) so users only ever choose two ports.
    storage_port: int | None = None
    # None: the version's own default (auto -> mmap on 4.x, mmap_index_only on 5.0), which
    # cassandra.yaml then leaves unset, as a stock node does.
    disk_access_mode: str | None = None
    commitlog_sync: str = DEFAULT_COMMITLOG_SYNC
    heap: str = DEFAULT_HEAP
    # None: the version's default (big). 'bti' (5.0) also needs storage_compatibility_mode NONE.
    sstable_format: str | None = None
    # This node's number (1 ... nodes) in its cluster of `nodes`; its address is 127.0.0.{node}.
    node: int = 1
    nodes: int = 1
    # Gossip refuses a node of another cluster name: a misdirected seed cannot merge two sandboxes.
    cluster_name: str = DEFAULT_CLUSTER_NAME

    @property
    def address(self) -> str:
        return node_address(self.node)

    @property
    def seed(self) -> str:
        """Node 1, every node's seed (one seed keeps a restarted node from forming a ring alone)."""
        return f"{node_address(1)}:{self.storage_port}"

    @property
    def initial_token(self) -> int:
        return node_token(self.node, self.nodes)

    def __post_init__(self) -> None:
        if self.storage_port is None:
            self.storage_port = self.jmx_port - 199 if self.jmx_port > 1223 else self.jmx_port + 1
        if self.disk_access_mode is not None and self.disk_access_mode not in DISK_ACCESS_MODES:
            raise CasstraceError(
                f"unknown disk access mode {self.disk_access_mode!r}", f"use one of {', '.join(DISK_ACCESS_MODES)}"
            )
        if self.commitlog_sync not in COMMITLOG_SYNC_MODES:
            raise CasstraceError(
                f"unknown commit log sync mode {self.commitlog_sync!r}",
                f"use --commitlog-sync {' or '.join(COMMITLOG_SYNC_MODES)}",
            )
        if self.version is not None and self.sstable_format is not None:
            formats = series_of(self.version).sstable_formats
            if self.sstable_format not in formats:
                raise CasstraceError(
                    f"Cassandra {self.version} cannot write {self.sstable_format!r} SSTables",
                    f"use --sstable-format {' or '.join(formats)}"
                    + ("" if self.sstable_format not in SSTABLE_FORMATS else ", or --version 5.0"),
                )
        if not 1 <= self.nodes <= MAX_NODES:
            raise CasstraceError(
                f"a sandbox of {self.nodes} nodes is not possible",
                f"use --nodes 1 to {MAX_NODES} (addresses 127.0.0.1 ... 127.0.0.{MAX_NODES})",
            )
        if not 1 <= self.node <= self.nodes:
            raise CasstraceError(
                f"there is no node {self.node} in a sandbox of {self.nodes}", f"use --node 1 to {self.nodes}"
            )
        if not re.fullmatch(r"\d+[MmGg]", self.heap):
            raise CasstraceError(
                f"heap size {self.heap!r} is not like 512M or 1G", "pass --heap with a number and M or G"
            )
        ports = {"native": self.native_port, "JMX": self.jmx_port, "storage": self.storage_port}
        for name, port in ports.items():
            if not 1 <= port <= 65535:
                raise CasstraceError(f"{name} port {port} is out of range", "use 1024-65535")
        if len(set(ports.values())) < len(ports):
            raise CasstraceError(
                f"the sandbox's ports must differ, got {ports}", "choose distinct --native-port and --jmx-port"
            )


def node_dir(root: Path, node: int) -> Path:
    """Where node `node` of the sandbox in `root` lives."""
    return root if node == 1 else root / f"node{node}"


class Layout:
    """Every path of one sandbox node; all of them under its data directory."""

    def __init__(self, data_dir: str | os.PathLike[str]):
        self.root = Path(data_dir).expanduser().absolute()
        self.settings = self.root / SANDBOX_RECORD
        self.pid_file = self.root / SANDBOX_PID_FILE
        self.yaml = self.root / SANDBOX_CONFIG  # node.own_sandbox knows a sandbox's JVM by it
        self.conf = self.yaml.parent
        self.logback = self.conf / "logback.xml"
        self.tools_logback = self.conf / "logback-tools.xml"
        self.data = self.root / "data"
        self.commitlog = self.root / "commitlog"
        self.saved_caches = self.root / "saved_caches"
        self.hints = self.root / "hints"
        self.cdc_raw = self.root / "cdc_raw"
        self.logs = self.root / "logs"
        self.log = self.logs / "system.log"

    def load_settings(self) -> Settings | None:
        if not self.settings.exists():
            return None
        try:
            return Settings(**json.loads(self.settings.read_text()))
        except (ValueError, TypeError) as error:
            raise CasstraceError(
                f"{self.settings} is unreadable ({error})", f"delete {self.settings} and start the sandbox again"
            ) from None

    def save_settings(self, settings: Settings) -> None:
        partial = self.settings.with_suffix(".partial")
        partial.write_text(json.dumps(dataclasses.asdict(settings), indent=2) + "\n")
        partial.replace(self.settings)
