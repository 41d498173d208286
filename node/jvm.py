"""Finding the Cassandra JVM on this node: the process the probes must watch.

A Cassandra JVM is recognised by its main class, org.apache.cassandra.service.CassandraDaemon, as
one argument of its command line (an exact argument, so a shell or a grep whose command line merely
mentions the class is not mistaken for it). When several run on one machine (a dev and a test
sandbox, say), the one listening on the native port the client connects to is the one to watch.
"""

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from casstrace.errors import CasstraceError
from casstrace.probes.proc_fds import net_table_rows, proc_net_host
from casstrace.redaction import redact_command
from casstrace.traces.activities import shared_pool_worker

DAEMON_CLASS = "org.apache.cassandra.service.CassandraDaemon"
TCP_LISTEN = "0A"  # st column of /proc/net/tcp for a listening socket


@dataclass(frozen=True)
class CassandraProcess:
    pid: int
    argv: tuple[str, ...]

    def system_property(self, name: str) -> str | None:
        """The value of a -Dname=value JVM option, or None."""
        prefix = f"-D{name}="
        for arg in self.argv:
            if arg.startswith(prefix):
                return arg[len(prefix):]
        return None


def read_argv(pid: int, proc: Path = Path("/proc")) -> tuple[str, ...] | None:
    """The process's command line as /proc shows it, None when there is no such process."""
    try:
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return tuple(part.decode(errors="replace") for part in raw.split(b"\0") if part)


def _is_cassandra(argv: tuple[str, ...]) -> bool:
    return any(arg == DAEMON_CLASS or arg.endswith(".CassandraDaemon") for arg in argv)


def cassandra_processes(proc: Path = Path("/proc")) -> list[CassandraProcess]:
    """Every process on this machine (as this /proc shows it) that is a Cassandra JVM."""
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        argv = read_argv(int(entry.name), proc)
        if argv and _is_cassandra(argv):
            found.append(CassandraProcess(int(entry.name), argv))
    return sorted(found, key=lambda process: process.pid)


def fd_targets(pid: int, proc: Path = Path("/proc")) -> list[str]:
    """What the process's file descriptors point to (their /proc/PID/fd links): paths, 'socket:[inode]'...
    Descriptors closed while they are read are left out; a process that is gone has none."""
    targets = []
    try:
        for fd in (proc / str(pid) / "fd").iterdir():
            try:
                targets.append(os.readlink(fd))
            except OSError:
                continue
    except OSError:
        pass
    return targets


def listening_sockets(pid: int, proc: Path = Path("/proc")) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket a process listens on: listening sockets in its network
    namespace whose inode is one of its file descriptors. '0.0.0.0' / '::' listen on every address."""
    socket_inodes = {target[len("socket:["):-1] for target in fd_targets(pid, proc) if target.startswith("socket:[")}
    sockets = set()
    for _, fields in net_table_rows(pid, ("tcp", "tcp6"), proc):
        local, state, inode = fields[1], fields[3], fields[9]
        if state == TCP_LISTEN and inode in socket_inodes:
            address, port = local.rsplit(":", 1)
            sockets.add((proc_net_host(address), int(port, 16)))
    return sockets


def listening_ports(pid: int, proc: Path = Path("/proc")) -> set[int]:
    """TCP ports a process listens on."""
    return {port for _, port in listening_sockets(pid, proc)}


def _accepts(sockets: set[tuple[str, int]], address: str, port: int) -> bool:
    """Whether a process listening on `sockets` accepts connections to address:port (bound to it, or to
    every address)."""
    return any(bound_port == port and bound in (address, "0.0.0.0", "::") for bound, bound_port in sockets)


def serving_jvms(proc: Path = Path("/proc")) -> dict[CassandraProcess, set[tuple[str, int]]]:
    """Every Cassandra JVM of this machine with the (address, port) it listens on."""
    return {process: listening_sockets(process.pid, proc) for process in cassandra_processes(proc)}


def cassandra_at(address: str, port: int, proc: Path = Path("/proc"),
                 serving: dict[CassandraProcess, set[tuple[str, int]]] | None = None) -> CassandraProcess | None:
    """The Cassandra JVM of this machine that serves CQL at address:port, None when none does (one
    bound to that address before one bound to every address). `serving`: serving_jvms(), when the
    caller looks up several addresses."""
    serving = serving_jvms(proc) if serving is None else serving
    found = [process for process, sockets in serving.items() if _accepts(sockets, address, port)]
    return next((process for process in found if (address, port) in serving[process]), next(iter(found), None))


def find_cassandra(pid: int | None = None, native_port: int | None = None, address: str | None = None,
                   proc: Path = Path("/proc")) -> CassandraProcess:
    """The Cassandra JVM to watch: `pid` when given (checked to be one), else the only one running,
    else the one listening on `native_port` (at `address`, when several listen on that port). Raises
    CasstraceError naming the fix otherwise."""
    if pid is not None:
        argv = read_argv(pid, proc)
        if argv is None:
            raise CasstraceError(f"no process with pid {pid}", "give --pid of the running Cassandra JVM")
        if not _is_cassandra(argv):
            raise CasstraceError(
                f"process {pid} ({redact_command(argv)[:80]}) is not a Cassandra JVM: "
                "its command line has no CassandraDaemon",
                "give --pid of the Cassandra JVM (`pgrep -f CassandraDaemon` lists them)",
            )
        return CassandraProcess(pid, argv)

    candidates = cassandra_processes(proc)
    if not candidates:
        raise CasstraceError(
            "no Cassandra JVM runs on this node (no process has CassandraDaemon in its command line)",
            "run casstrace on the Cassandra node itself, start one with `casstrace sandbox start`, "
            "or give --pid if its command line is unusual",
        )
    if len(candidates) == 1:
        return candidates[0]
    pids = ", ".join(str(c.pid) for c in candidates)
    if native_port is not None:
        sockets = {c: listening_sockets(c.pid, proc) for c in candidates}   # each JVM's fds read once
        listening = [c for c in candidates if any(port == native_port for _, port in sockets[c])]
        if address is not None and len(listening) > 1:   # nodes of one cluster share the port, not the address
            listening = [c for c in listening if _accepts(sockets[c], address, native_port)]
        if len(listening) == 1:
            return listening[0]
        raise CasstraceError(
            f"{len(candidates)} Cassandra JVMs run on this node (pids {pids}) and "
            f"{'none' if not listening else 'several'} of them listen on port {native_port}",
            "give --pid of the one the query goes to",
        )
    raise CasstraceError(
        f"{len(candidates)} Cassandra JVMs run on this node (pids {pids})",
        "give --pid of the one the query goes to",
    )


# A thread's header line in `jcmd PID Thread.print`: "NAME" #N [daemon] ... nid=0x2d1f ...
_THREAD_HEADER = re.compile(r'^"(?P<name>(?:[^"\\]|\\.)*)"\s.*?\bnid=(?P<nid>0x[0-9a-fA-F]+|\d+)', re.MULTILINE)


def java_thread_ids(pid: int, jcmd: str | None = None, timeout_s: float = 30.0) -> dict[str, int]:
    """The JVM's thread names (full, as Cassandra's trace events name them) -> Linux thread ids, from
    the JVM's own thread list (`jcmd PID Thread.print`: nid is the TID). /proc/PID/task/TID/comm
    would cut the names at 15 characters ('Native-Transpor'). CasstraceError when jcmd cannot run."""
    jcmd = jcmd or _jdk_tool(pid, "jcmd")
    output = run_tool([jcmd, str(pid), "Thread.print"], f"jcmd {pid} Thread.print", timeout_s,
                      cannot_run_fix="install a JDK matching the node's Java (its jcmd attaches to the JVM)",
                      failed_fix="run casstrace as the node's user or root, with a JDK matching the node's Java")
    return parse_thread_print(output)


def run_tool(command: list[str], what: str, timeout_s: float, *, cannot_run_fix: str, failed_fix: str) -> str:
    """Run a JVM tool (jcmd, nodetool) and return its output; CasstraceError, with the tool's last
    line of complaint, when it cannot run or fails."""
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise CasstraceError(f"{what} could not run ({error})", cannot_run_fix) from None
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise CasstraceError(f"{what} failed" + (f": {detail[-1]}" if detail else ""), failed_fix)
    return result.stdout


def parse_thread_print(text: str) -> dict[str, int]:
    """Thread name -> TID from `jcmd PID Thread.print` (or jstack) output."""
    return {match["name"].replace('\\"', '"'): int(match["nid"], 0) for match in _THREAD_HEADER.finditer(text)}


class ThreadIds:
    """Thread names, as Cassandra's trace events give them, to Linux thread ids.

    A shared-pool thread renames itself as it moves between stages ('ReadStage-2' now,
    'Native-Transport-Requests-2' later: traces.activities.shared_pool_worker); its worker id is
    what stays, so those names resolve by worker id, whatever the thread was called when listed.
    Other names resolve as listed. add() the lists taken at different times: a later one wins."""

    def __init__(self) -> None:
        self.by_name: dict[str, int] = {}
        self.by_worker: dict[int, int] = {}

    def add(self, names: dict[str, int]) -> "ThreadIds":
        for name, tid in names.items():
            self.by_name[name] = tid
            worker = shared_pool_worker(name)
            if worker is not None:
                self.by_worker[worker] = tid
        return self

    def tid(self, thread: str) -> int | None:
        worker = shared_pool_worker(thread)
        return self.by_name.get(thread) if worker is None else self.by_worker.get(worker)

    def names(self) -> dict[int, str]:
        """tid -> the name it was last listed under."""
        return {tid: name for name, tid in self.by_name.items()}


def _jdk_tool(pid: int, name: str) -> str:
    """A JDK tool: the one beside the node's own java (the same JDK attaches most surely), else PATH's."""
    try:
        beside = Path(os.readlink(f"/proc/{pid}/exe")).with_name(name)
    except OSError:
        beside = None
    if beside is not None and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise CasstraceError(f"no {name} beside the node's java or on PATH",
                             "install a JDK (Debian: openjdk-17-jdk-headless) so that casstrace can attach to the JVM")
    return found
