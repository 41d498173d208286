"""The memtables a node flushed, from its own log: per table, the serialized bytes of the mutations each
flushed memtable held (Cassandra's memtable accounting, the figure `nodetool tablestats` shows as
'Memtable data size' before the flush) and its operations.

Cassandra logs each flush at INFO, on the flush thread (4.0-5.0, Flushing.java / Memtable.java):

    [PerDiskMemtableFlushWriter_0:3] ... Writing Memtable-orders@1793676432(1.234MiB serialized bytes, 4 ops, ...
    [PerDiskMemtableFlushWriter_0:3] ... Completed flushing /data/ks/orders-<id>/nb-51-big-Data.db (179B) ...

The first line names the table only; the second, on the same thread, the SSTable and so its keyspace.
Sizes are printed to 3 decimals of their unit (FBUtilities.prettyPrintMemory): within 0.05 % of the
bytes. `watch` reads the log from where it ended when the watch began (LogMark) to where it ends.
"""

import os
import re
from dataclasses import dataclass
from pathlib import Path

from casstrace.node.jvm import CassandraProcess
from casstrace.probes.proc.proc_fds import in_root
from casstrace.traces.sstable_names import parse_sstable_path

_THREAD = r"\[(?P<thread>[^\]]+)\]"
_WRITING = re.compile(
    _THREAD + r".*? Writing Memtable-(?P<table>[^@\s]+)@\d+\((?P<size>[\d.]+)(?P<unit>[KMGTP]iB|B) serialized bytes, "
    r"(?P<ops>\d+) ops"
)
_COMPLETED = re.compile(_THREAD + r".*? Completed flushing (?P<path>\S+)")
_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50}


@dataclass(frozen=True)
class FlushedMemtable:
    table: str  # 'ks.table'
    serialized_bytes: int
    operations: int


def parse_flushes(text: str) -> list[FlushedMemtable]:
    """The memtables flushed in a stretch of a node's log, each with its table from its SSTable's path."""
    writing: dict[str, tuple[str, int, int]] = {}  # flush thread -> (table, bytes, ops) it is writing
    found = []
    for line in text.splitlines():
        if match := _WRITING.search(line):
            size = round(float(match["size"]) * _UNITS[match["unit"]])
            writing[match["thread"]] = (match["table"], size, int(match["ops"]))
        elif (match := _COMPLETED.search(line)) and match["thread"] in writing:
            table, size, ops = writing.pop(match["thread"])
            name = parse_sstable_path(match["path"])
            if name is not None and name.table == table:
                found.append(FlushedMemtable(name.owner, size, ops))
    return found


def received_bytes(flushed: list[FlushedMemtable]) -> dict[str, int]:
    """Per table, the mutation bytes its flushed memtables held."""
    received: dict[str, int] = {}
    for memtable in flushed:
        received[memtable.table] = received.get(memtable.table, 0) + memtable.serialized_bytes
    return received


def log_path(process: CassandraProcess) -> Path | None:
    """The node's system.log, as this machine sees it (a container's through its root)."""
    directory = process.system_property("cassandra.logdir")
    return Path(in_root(process.pid, f"{directory}/system.log")) if directory else None


@dataclass(frozen=True)
class LogMark:
    """Where a node's log ended at a moment: what it logs from then on is read from there."""

    path: Path
    inode: int
    offset: int

    @classmethod
    def now(cls, path: Path | None) -> "LogMark | None":
        if path is None:
            return None
        try:
            status = os.stat(path)
        except OSError:
            return None
        return cls(path, status.st_ino, status.st_size)

    def flushes_since(self) -> list[FlushedMemtable] | None:
        """The memtables flushed since the mark (None: the log was rolled over or cannot be read)."""
        try:
            with open(self.path, "rb") as log:
                if os.fstat(log.fileno()).st_ino != self.inode:
                    return None
                log.seek(self.offset)
                return parse_flushes(log.read().decode(errors="replace"))
        except OSError:
            return None
