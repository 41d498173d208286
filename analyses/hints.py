"""Hints in a watch: what the node stored for replicas it could not reach, and what it replayed to them.

A coordinator that cannot deliver a write to a replica keeps it as a hint, in a hints file of that
replica's own (`<host ID>-<timestamp>-<version>.hints` in the node's hints_directory), and sends the
hints when the replica is back (hints dispatch). Every hint is a write the node does twice: once to
the file, once more from it. So the bytes written to hints files are the node's writes for a replica
that was down or unreachable, and the bytes read from them the replay.

Who wrote is told by the file, not the thread: each file is one replica's. Pure: a tally of the
thread_io rows (tally_hints), added up over intervals like the watch's other figures.
"""

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from casstrace.traces.queries import ThreadIO

HINTS_FILE = re.compile(
    r"(?:^|/)(?P<host_id>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-\d+-\d+\.hints$"
)


def hints_target(path: str) -> str | None:
    """The host ID of the replica a hints file holds hints for (None: not a hints file)."""
    found = HINTS_FILE.search(path)
    return found["host_id"] if found else None


def hints_files(files: Mapping[int, str]) -> dict[int, str]:
    """file_id -> the host ID its hints are for, for the hints files among `files` (file_id -> path)."""
    return {file_id: target for file_id, path in files.items() if (target := hints_target(path))}


@dataclass
class HintsTally:
    """Per replica (host ID), the bytes written to its hints files and read back from them."""

    stored: Counter[str] = field(default_factory=Counter)
    replayed: Counter[str] = field(default_factory=Counter)

    def add(self, other: "HintsTally") -> None:
        self.stored.update(other.stored)
        self.replayed.update(other.replayed)

    def __bool__(self) -> bool:
        return bool(+self.stored or +self.replayed)


def tally_hints(thread_io: Iterable[ThreadIO], targets: Mapping[int, str]) -> HintsTally:
    """The hints files' bytes in thread_io rows; `targets`: file_id -> host ID (hints_files)."""
    tallied = HintsTally()
    for row in thread_io:
        target = targets.get(row.file_id)
        if target is None:
            continue
        if row.write_bytes:
            tallied.stored[target] += row.write_bytes
        if row.read_bytes:
            tallied.replayed[target] += row.read_bytes
    return tallied


@dataclass(frozen=True)
class HintsFor:
    """One replica's hints over the watch."""

    host_id: str
    stored_bytes: int
    replayed_bytes: int


def hints_per_replica(tallied: HintsTally | None) -> list[HintsFor]:
    """Each replica that had hints stored or replayed, the most bytes first."""
    if not tallied:
        return []
    hosts = set(+tallied.stored) | set(+tallied.replayed)
    found = [HintsFor(host, tallied.stored[host], tallied.replayed[host]) for host in hosts]
    return sorted(found, key=lambda h: (-(h.stored_bytes + h.replayed_bytes), h.host_id))
