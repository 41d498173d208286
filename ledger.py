"""What casstrace changes on a node, written down on this machine before it is changed.

`watch` sets the node's trace probability; `watch --profile` and `run --profile` start async-profiler
in its JVM. Every exit path puts them back, except one no code runs on: SIGKILL (an OOM kill, a
closed terminal's process group killed, a node rebooting the tool's container). So before a change
is made, a small file in paths.state_dir()/changes says what it is, its original value, and which
process owns it (pid and start time: a pid the kernel handed to another process since is not the
owner). The owner removes the file once it has put the value back. Any later casstrace command that
touches the node (cli `watch`, `run`, `watch --restore`) reads the files of that node: an owner that
is gone left its change behind, and the command restores it (node.leftovers), saying so.

A node is its JVM (pid and start time): a restarted node has forgotten both changes (neither
persists), so a file about a JVM that is gone is simply removed.
"""

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from casstrace import paths
from casstrace.errors import CasstraceError

TRACE_PROBABILITY = "trace_probability"  # nodetool settraceprobability
PROFILER = "async_profiler"  # async-profiler started in the JVM
VERSION = 1


def process_start(pid: int) -> int | None:
    """When `pid` started (clock ticks since boot: /proc/PID/stat field 22), None if there is no such
    process or it has ended (a zombie: killed, not yet reaped by its parent). With the pid it names one
    process for good: a reused pid has another start time."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # from field 3, the state
    return None if fields[0] in ("Z", "X") else int(fields[19])


def alive(pid: int, start: int) -> bool:
    return process_start(pid) == start


@dataclass(frozen=True)
class Change:
    """One change to one node, as its file holds it."""

    what: str  # TRACE_PROBABILITY | PROFILER
    node_pid: int
    node_start: int
    original: float | str  # the value to put back
    changed_to: float | str
    owner_pid: int  # the casstrace that made it
    owner_start: int
    recorded_at: str  # UTC, ISO 8601

    @property
    def owner_alive(self) -> bool:
        return alive(self.owner_pid, self.owner_start)

    def is_own(self) -> bool:
        return self.owner_pid == os.getpid() and self.owner_alive


class Ledger:
    """The changes recorded for one node (the JVM `node_pid`)."""

    def __init__(self, node_pid: int, directory: Path | None = None):
        self.node_pid = node_pid
        self.node_start = process_start(node_pid)
        self.directory = directory or paths.state_dir() / "changes"

    def _path(self, what: str) -> Path:
        return self.directory / f"{self.node_pid}-{self.node_start}-{what}.json"

    def record(self, what: str, original: float | str, changed_to: float | str) -> None:
        """Write the change down (durably) before it is made. Refused when a live casstrace holds the
        same change on this node: its original value would be read as ours, and put back twice."""
        held = self.find(what)
        if held is not None and held.owner_alive and not held.is_own():
            raise CasstraceError(
                f"another casstrace (pid {held.owner_pid}) holds the node's {_words(what)} at "
                f"{held.changed_to} since {held.recorded_at}",
                f"wait for it to end, or stop it (kill {held.owner_pid}): it puts it back",
            )
        if held is not None and not held.is_own():
            raise CasstraceError(
                f"the node's {_words(what)} was left changed by casstrace pid {held.owner_pid}",
                "run `casstrace watch --restore` first",
            )
        if self.node_start is None:
            raise CasstraceError(f"no process with pid {self.node_pid}", "check that the node is running")
        change = Change(
            what,
            self.node_pid,
            self.node_start,
            original,
            changed_to,
            os.getpid(),
            process_start(os.getpid()) or 0,
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            partial = self._path(what).with_suffix(".partial")
            with open(partial, "w") as file:
                json.dump({"version": VERSION, **asdict(change)}, file)
                file.flush()
                os.fsync(file.fileno())
            partial.replace(self._path(what))
        except OSError as error:
            raise CasstraceError(
                f"cannot write down the change to the node's {_words(what)} in {self.directory} ({error.strerror})",
                "check that the directory is writable (XDG_STATE_HOME moves it)",
            ) from None

    def find(self, what: str) -> Change | None:
        try:
            data = json.loads(self._path(what).read_text())
        except (OSError, ValueError):
            return None
        data.pop("version", None)
        try:
            return Change(**data)
        except TypeError:  # another version's file: nothing this version can restore
            return None

    def forget(self, what: str) -> None:
        """The change was put back (or never made)."""
        self._path(what).unlink(missing_ok=True)

    def left_behind(self) -> list[Change]:
        """This node's changes whose owner is gone without putting them back. Files of JVMs that are
        gone (restarted nodes: they forgot the changes) are removed on the way."""
        if not self.directory.is_dir():
            return []
        left = []
        for path in sorted(self.directory.glob("*.json")):
            try:
                node_pid, node_start, _ = path.name.split("-", 2)
                gone = not alive(int(node_pid), int(node_start))
            except ValueError:
                continue
            if gone:
                path.unlink(missing_ok=True)
            elif int(node_pid) == self.node_pid:
                change = self.find(path.name.split("-", 2)[2].removesuffix(".json"))
                if change is not None and not change.owner_alive:
                    left.append(change)
        return left


def _words(what: str) -> str:
    return {TRACE_PROBABILITY: "trace probability", PROFILER: "async-profiler"}.get(what, what)
