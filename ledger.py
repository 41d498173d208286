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

A file is written aside, synced and renamed: it is whole or absent, whatever kills the writer. One
that cannot be read all the same (truncated or edited by hand, another version's, not a regular file)
is an Unreadable record, named with its reason: never a crash, never "nothing to put back" (the
node's value is then compared with what casstrace could have set: node.leftovers). Only regular
files are opened, without blocking (a FIFO at the path must not hang a command) and without
following a link.

A whole record is acted on only when everything it names is casstrace's own. Here: its JVM, whose
pid and start time must both be the running node's (a record without a start time, written by hand,
names no JVM for sure); node.leftovers checks the paths. Anything else is Refused: never acted on,
left in place, and said with what the user can do.
"""

import dataclasses
import errno
import json
import os
import stat
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from casstrace import paths
from casstrace.errors import CasstraceError

TRACE_PROBABILITY = "trace_probability"  # nodetool settraceprobability
PROFILER = "async_profiler"  # async-profiler started in the JVM
GC_LOG = "gc_log"  # a VM.log output of GC and safepoint pauses added to the JVM (run); changed_to: its file
VERSION = 1
MAX_RECORD_BYTES = 64 * 1024  # a record is ~300 B: anything larger is not one, and is not read whole


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


@dataclass(frozen=True)
class Unreadable:
    """A record that cannot be read as a Change: what it is about (from its file's name), and why.
    Who made it and what the value was before cannot be known."""

    what: str
    node_pid: int
    path: Path
    reason: str


@dataclass(frozen=True)
class Refused:
    """A whole record naming something that is not casstrace's own (here: another JVM than the one
    running with its pid), and why. Nothing it names is touched, and it stays until the user removes it."""

    what: str
    node_pid: int
    path: Path
    reason: str


Record = Change | Unreadable | Refused


class Ledger:
    """The changes recorded for one node (the JVM `node_pid`)."""

    def __init__(self, node_pid: int, directory: Path | None = None):
        self.node_pid = node_pid
        self.node_start = process_start(node_pid)
        self.directory = directory or paths.state_dir() / "changes"

    def path(self, what: str) -> Path:
        """The file of the record of `what`."""
        return self.directory / f"{self.node_pid}-{self.node_start}-{what}.json"

    @property
    def node_alive(self) -> bool:
        """The JVM is the one the ledger was opened for, and still runs."""
        return self.node_start is not None and alive(self.node_pid, self.node_start)

    def record(self, what: str, original: float | str, changed_to: float | str) -> None:
        """Write the change down (durably) before it is made. Refused when a live casstrace holds the
        same change on this node: its original value would be read as ours, and put back twice."""
        held = self.read(what)
        if isinstance(held, Unreadable | Refused):  # unknown or not ours: the node's value now may be casstrace's
            state = "cannot be read" if isinstance(held, Unreadable) else "is refused"
            raise CasstraceError(
                f"the ledger's record of the node's {_words(what)}, {held.path}, {state} ({held.reason}): "
                "the node's value now may be one a killed casstrace left, not its own",
                "run `casstrace watch --restore`: it says what to check and how to put it back",
            )
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
            partial = self.path(what).with_suffix(".partial")
            partial.unlink(missing_ok=True)  # what a killed writer left: created anew, never opened
            descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            with open(descriptor, "w") as file:
                json.dump({"version": VERSION, **asdict(change)}, file)
                file.flush()
                os.fsync(file.fileno())
            partial.replace(self.path(what))
            _sync_directory(self.directory)  # the rename itself survives a crash of the machine
        except OSError as error:
            raise CasstraceError(
                f"cannot write down the change to the node's {_words(what)} in {self.directory} ({error.strerror})",
                "check that the directory is writable (XDG_STATE_HOME moves it)",
            ) from None

    def read(self, what: str) -> Record | None:
        """This node's record of `what`: the change, or why its file cannot be read; None when there is none."""
        return read_record(self.path(what), what, self.node_pid, self.node_start)

    def forget(self, what: str) -> None:
        """The change was put back (or never made)."""
        self.path(what).unlink(missing_ok=True)

    def records(self) -> list[Record]:
        """This node's records. Files of JVMs that are gone (restarted nodes: they forgot the changes)
        are removed on the way."""
        if not self.directory.is_dir():
            return []
        found: list[Record] = []
        for path in sorted(self.directory.iterdir()):
            try:
                node_pid, node_start, what = path.stem.split("-", 2)
                gone = not alive(int(node_pid), int(node_start))
            except ValueError:
                continue
            if path.suffix not in (".json", ".partial"):
                continue
            if gone:
                path.unlink(missing_ok=True)
            elif int(node_pid) == self.node_pid and path.suffix == ".json":
                record = read_record(path, what, self.node_pid, self.node_start)
                if record is not None:
                    found.append(record)
        return found

    def left_behind(self) -> list[Record]:
        """This node's changes whose owner is gone without putting them back, its records that cannot be
        read (whose owner cannot be known), and those refused (to be said)."""
        return [record for record in self.records() if not isinstance(record, Change) or not record.owner_alive]


def read_record(path: Path, what: str, node_pid: int, node_start: int | None) -> Record | None:
    """The record at `path` of the JVM `node_pid` started at `node_start`: a Change, an Unreadable or
    a Refused saying why not, None when there is no file."""
    try:
        data = _read_json(path)
    except FileNotFoundError:
        return None
    except _NotARecord as error:
        return Unreadable(what, node_pid, path, str(error))
    reason = _wrong_shape(data, what, node_pid)
    if reason is not None:
        return Unreadable(what, node_pid, path, reason)
    assert isinstance(data, dict)
    recorded_start = data.get("node_start")
    if recorded_start is None:
        return Refused(what, node_pid, path, f"it records no start time of JVM {node_pid}: it may be about another")
    if recorded_start != node_start:
        return Refused(
            what,
            node_pid,
            path,
            f"it is about the JVM {node_pid} started at {recorded_start}, not the one running "
            f"(started at {node_start})",
        )
    return Change(**{name: data[name] for name in _FIELDS})


class _NotARecord(Exception):
    """Why a file cannot be read as a record."""


def _read_json(path: Path) -> object:
    """The JSON in the regular file at `path`, opened without blocking or following a link."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:  # no record
        raise
    except OSError as error:
        raise _NotARecord(error.strerror) from None
    if not stat.S_ISREG(mode):
        raise _NotARecord(f"not a regular file but {_kind(mode)}")
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as error:  # replaced since the lstat: by a link (ELOOP), say
        raise _NotARecord("a symbolic link" if error.errno == errno.ELOOP else error.strerror) from None
    with open(descriptor, "rb") as file:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise _NotARecord(f"not a regular file but {_kind(mode)}")
        try:
            raw = file.read(MAX_RECORD_BYTES + 1)
        except OSError as error:
            raise _NotARecord(error.strerror) from None
    if len(raw) > MAX_RECORD_BYTES:
        raise _NotARecord(f"larger than {MAX_RECORD_BYTES // 1024} KiB")
    if not raw.strip():
        raise _NotARecord("empty")
    try:
        return json.loads(raw)
    except UnicodeDecodeError:
        raise _NotARecord("not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise _NotARecord(f"not whole JSON, truncated or damaged: {error.msg} at byte {error.pos}") from None


_FIELDS = {field.name: field.type for field in dataclasses.fields(Change)}
_NUMBERS = {"node_pid", "node_start", "owner_pid", "owner_start"}


def _wrong_shape(data: object, what: str, node_pid: int) -> str | None:
    """Why `data` is not a record of `what` on node `node_pid` (None: it is one)."""
    if not isinstance(data, dict):
        return f"holds {_json_kind(data)}, not a record"
    if data.get("version") != VERSION:
        return f"format version {json.dumps(data.get('version'))[:20]}, where this casstrace writes {VERSION}"
    missing = [name for name in _FIELDS if name not in data and name != "node_start"]  # no start: Refused
    if missing:
        return f"no {', '.join(missing)}"
    for name in _NUMBERS:
        if not _is_int(data.get(name)) and not (name == "node_start" and data.get(name) is None):
            return f"its {name} is {_json_kind(data[name])}, not a whole number"
    if not isinstance(data["recorded_at"], str):
        return f"its recorded_at is {_json_kind(data['recorded_at'])}, not a time"
    if data["what"] != what or data["node_pid"] != node_pid:
        return f"it is about {json.dumps(data['what'])[:40]} of pid {data['node_pid']}, not what its name says"
    for name in ("original", "changed_to"):
        value = data[name]
        if what == TRACE_PROBABILITY and not (_is_number(value) and 0 <= value <= 1):
            return f"its {name} is {_json_kind(value)}, not a probability"
        if what == PROFILER and not isinstance(value, str):
            return f"its {name} is {_json_kind(value)}, not a profiler state"
        if what == GC_LOG and not isinstance(value, str):
            return f"its {name} is {_json_kind(value)}, not a log output"
    return None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {json.dumps(value)}"
    if isinstance(value, int | float | str):
        return json.dumps(value)[:40]
    return "a list" if isinstance(value, list) else "an object"


def _kind(mode: int) -> str:
    kinds = [
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ]
    return next((name for test, name in kinds if test(mode)), "not a file")


def _sync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _words(what: str) -> str:
    return {TRACE_PROBABILITY: "trace probability", PROFILER: "async-profiler", GC_LOG: "GC log output"}.get(what, what)
