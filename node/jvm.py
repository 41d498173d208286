"""Finding the Cassandra JVM on this node: the process the probes must watch.

A Cassandra JVM is recognised by its main class, org.apache.cassandra.service.CassandraDaemon, as
one argument of its command line (an exact argument, so a shell or a grep whose command line merely
mentions the class is not mistaken for it). When several run on one machine (a dev and a test
sandbox, say), the one listening on the native port the client connects to is the one to watch.
"""

import ctypes
import ipaddress
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from casstrace.errors import CasstraceError
from casstrace.probes.proc.proc_fds import in_root, net_table_rows, proc_net_host, root_prefix
from casstrace.redaction import redact_command
from casstrace.traces.thread_roles import KERNEL_NAME_CHARS, shared_pool_worker

PR_SET_PDEATHSIG = 1  # linux/prctl.h

DAEMON_CLASS = "org.apache.cassandra.service.CassandraDaemon"
NODETOOL_CLASS = "org.apache.cassandra.tools.NodeTool"
TCP_LISTEN = "0A"  # st column of /proc/net/tcp for a listening socket
_MAX_HEAP = re.compile(r"(?:-Xmx|-XX:MaxHeapSize=)(\d+)([kKmMgGtT]?)")
_SIZE_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


@dataclass(frozen=True)
class CassandraProcess:
    pid: int
    argv: tuple[str, ...]

    def system_property(self, name: str) -> str | None:
        """The value of a -Dname=value JVM option, or None."""
        prefix = f"-D{name}="
        for arg in self.argv:
            if arg.startswith(prefix):
                return arg[len(prefix) :]
        return None

    @property
    def max_heap_bytes(self) -> int:
        """The heap the JVM may grow to: its last -Xmx (or -XX:MaxHeapSize), else the JVM's default,
        a quarter of the machine's memory."""
        heap = None
        for arg in self.argv:
            if match := _MAX_HEAP.fullmatch(arg):
                heap = int(match.group(1)) * _SIZE_UNITS[match.group(2).lower()]
        return heap if heap is not None else os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4


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
    socket_inodes = {target[len("socket:[") : -1] for target in fd_targets(pid, proc) if target.startswith("socket:[")}
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


def listening_address(pid: int, port: int) -> str | None:
    """The one address the process accepts connections to `port` on, None when it listens on
    every address there (any will do), on none, or on several."""
    bound = {address for address, bound_port in listening_sockets(pid) if bound_port == port}
    return next(iter(bound)) if len(bound) == 1 and not bound & {"0.0.0.0", "::"} else None


def _accepts(sockets: set[tuple[str, int]], address: str, port: int) -> bool:
    """Whether a process listening on `sockets` accepts connections to address:port (bound to it, or to
    every address)."""
    return any(bound_port == port and bound in (address, "0.0.0.0", "::") for bound, bound_port in sockets)


def serving_jvms(proc: Path = Path("/proc")) -> dict[CassandraProcess, set[tuple[str, int]]]:
    """Every Cassandra JVM of this machine with the (address, port) it listens on."""
    return {process: listening_sockets(process.pid, proc) for process in cassandra_processes(proc)}


def cassandra_at(
    address: str,
    port: int,
    proc: Path = Path("/proc"),
    serving: dict[CassandraProcess, set[tuple[str, int]]] | None = None,
) -> CassandraProcess | None:
    """The Cassandra JVM of this machine that serves CQL at address:port, None when none does (one
    bound to that address before one bound to every address). `serving`: serving_jvms(), when the
    caller looks up several addresses."""
    serving = serving_jvms(proc) if serving is None else serving
    found = [process for process, sockets in serving.items() if _accepts(sockets, address, port)]
    if len(found) > 1 and not any((address, port) in serving[process] for process in found):
        # JVMs in containers of their own all listen on every address at the same port: the one
        # whose network namespace has the address serves it.
        found = [process for process in found if address in local_addresses(process.pid, proc)] or found
    return next((process for process in found if (address, port) in serving[process]), next(iter(found), None))


def local_addresses(pid: int, proc: Path = Path("/proc")) -> set[str]:
    """The addresses of the process's network namespace: its IPv4 local routes (net/fib_trie's
    '/32 host LOCAL' entries) and its IPv6 interface addresses (net/if_inet6)."""
    found = set()
    try:
        previous = ""
        for line in (proc / str(pid) / "net" / "fib_trie").read_text().splitlines():
            if "/32 host LOCAL" in line and previous.strip().startswith("|--"):
                found.add(previous.split()[-1])
            previous = line
    except OSError:
        pass
    try:
        for line in (proc / str(pid) / "net" / "if_inet6").read_text().splitlines():
            hexadecimal = line.split()[0]
            found.add(str(ipaddress.IPv6Address(bytes.fromhex(hexadecimal))))
    except (OSError, ValueError, IndexError):
        pass
    return found


def find_cassandra(
    pid: int | None = None, native_port: int | None = None, address: str | None = None, proc: Path = Path("/proc")
) -> CassandraProcess:
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
        sockets = {c: listening_sockets(c.pid, proc) for c in candidates}  # each JVM's fds read once
        listening = [c for c in candidates if any(port == native_port for _, port in sockets[c])]
        if address is not None and len(listening) > 1:  # nodes of one cluster share the port, not the address
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
    command = [jcmd, str(pid)] if jcmd else jcmd_command(pid)
    output = run_tool(
        [*command, "Thread.print"],
        f"jcmd {pid} Thread.print",
        timeout_s,
        cannot_run_fix="install a JDK matching the node's Java (its jcmd attaches to the JVM)",
        failed_fix="run casstrace as the node's user or root, with a JDK matching the node's Java",
    )
    names = parse_thread_print(output)
    if own_pid(pid) == pid:
        return names
    # The JVM numbers its threads in its own PID namespace (a container's); the probes see this machine's numbers.
    ours = host_thread_ids(pid)
    return {name: ours[tid] for name, tid in names.items() if tid in ours}


def host_thread_ids(pid: int) -> dict[int, int]:
    """The process's thread ids as it numbers them (its PID namespace) -> as this machine numbers them."""
    found = {}
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return {}
    for task in tasks:
        try:
            found[own_pid_in(task / "status")] = int(task.name)
        except (OSError, ValueError):  # the thread ended meanwhile
            continue
    return found


def run_tool(command: list[str], what: str, timeout_s: float, *, cannot_run_fix: str, failed_fix: str) -> str:
    """Run a JVM tool (jcmd, nodetool) and return its output; CasstraceError, with the tool's last
    line of complaint, when it cannot run or fails."""
    try:
        # Out of the terminal's process group: a Ctrl-C is casstrace's to handle (interrupts.py), not
        # a failure of the tool it would kill (a nodetool killed mid-restore would leave the change).
        # But it dies with casstrace: a nodetool outliving a SIGKILLed casstrace could change the node
        # after the next casstrace put it back (casstrace.ledger).
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise CasstraceError(f"{what} could not run ({error})", cannot_run_fix) from None
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise CasstraceError(f"{what} failed" + (f": {detail[-1]}" if detail else ""), failed_fix)
    return result.stdout


def jcmd_value_problem(value: str) -> str | None:
    """Why `value` cannot go whole into one option of a jcmd command (`output=file=VALUE`), None when
    it can. jcmd joins its arguments with spaces into one line (a newline starts another command) that
    the JVM splits again at each space, taking a quote as its own (HotSpot's DCmdArgIter); a file
    output's name has its %p and %t replaced (unified logging). Such a value is refused, never
    quoted: no quoting passes every value whole through both parsers."""
    if not value:
        return "it is empty"
    if value.startswith("-"):
        return "it begins with '-' (jcmd would take it for an option of its own)"
    if not (value.isascii() and value.isprintable()):
        return "it holds a control or non-ASCII character"
    for character, why in ((" ", "a space"), ('"', "a quote"), ("'", "a quote"), ("%", "a '%'")):
        if character in value:
            return f"it holds {why}"
    return None


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL it when casstrace ends (prctl PR_SET_PDEATHSIG)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def parse_thread_print(text: str) -> dict[str, int]:
    """Thread name -> TID from `jcmd PID Thread.print` (or jstack) output."""
    return {match["name"].replace('\\"', '"'): int(match["nid"], 0) for match in _THREAD_HEADER.finditer(text)}


class ThreadIds:
    """Thread names, as Cassandra's trace events give them, to Linux thread ids, of one node's JVM.

    A shared-pool thread renames itself as it moves between stages ('ReadStage-2' now,
    'Native-Transport-Requests-2' later: traces.thread_roles.shared_pool_worker); its worker id is
    what stays, so those names resolve by worker id, whatever the thread was called when listed.
    Other names resolve as listed. add() the lists taken at different times: a later one wins.

    Every node names its threads alike: `addresses` are those its trace events name it by (their
    source), so that another node's events in the same session find none of its threads (none
    given: every event is taken as its own); `node_id` is its node in a trace of several captured
    ones (None: the trace's one process)."""

    def __init__(self, addresses: Iterable[str] = (), node_id: int | None = None) -> None:
        self.by_name: dict[str, int] = {}
        self.by_worker: dict[int, int] = {}
        self.addresses = frozenset(addresses)
        self.node_id = node_id

    def add(self, names: dict[str, int], cut: bool = False) -> "ThreadIds":
        """`cut`: the names as the kernel has them (/proc's comm), cut to 15 characters: one that long
        may have lost its worker id's last digits ('MutationStage-29' is 'MutationStage-2'), so it
        resolves no worker."""
        for name, tid in names.items():
            self.by_name[name] = tid
            worker = shared_pool_worker(name)
            if worker is not None and not (cut and len(name) >= KERNEL_NAME_CHARS):
                self.by_worker[worker] = tid
        return self

    def tid(self, thread: str) -> int | None:
        worker = shared_pool_worker(thread)
        return self.by_name.get(thread) if worker is None else self.by_worker.get(worker)

    def names(self) -> dict[int, str]:
        """tid -> the name it was last listed under."""
        return {tid: name for name, tid in self.by_name.items()}

    def serves(self, source: str | None) -> bool:
        """Whether events recorded by the node at `source` (None: not recorded) are this node's."""
        return source is None or not self.addresses or source in self.addresses


def jcmd_command(pid: int) -> list[str]:
    """jcmd and the pid it attaches to: the one beside the node's own java (the same JDK attaches most
    surely), run where the node runs (in_node_namespaces), else PATH's, which attaches from here."""
    java = node_java(pid)
    beside = str(Path(java).with_name("jcmd")) if java else None
    if beside is not None and os.access(in_root(pid, beside), os.X_OK):
        return [*in_node_namespaces(pid), beside, str(own_pid(pid))]
    found = shutil.which("jcmd")
    if found is None:
        raise CasstraceError(
            "no jcmd beside the node's java or on PATH",
            "install a JDK matching the node's Java (Debian: openjdk-17-jdk-headless) so that "
            "casstrace can attach to the JVM",
        )
    return [found, str(pid)]


def node_java(pid: int) -> str | None:
    """The path of the JVM's java as the node names it (in its own file tree, when it has one)."""
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def own_pid(pid: int) -> int:
    """The process's pid in its own PID namespace (a container's numbers; the same where it has none)."""
    try:
        return own_pid_in(Path(f"/proc/{pid}/status"))
    except (OSError, ValueError):
        return pid


def own_pid_in(status: Path) -> int:
    """The innermost pid of a /proc/PID/status or /proc/PID/task/TID/status file's NSpid line."""
    for line in status.read_text().splitlines():
        if line.startswith("NSpid:"):
            return int(line.split()[-1])
    raise ValueError(f"{status} has no NSpid line")


def in_node_namespaces(pid: int) -> tuple[str, ...]:
    """What runs a tool where the JVM runs: in its mount, PID and network namespaces (its paths,
    its classes, its pid numbers, its JMX port), when it sees another file tree than ours (a
    container); nothing otherwise. nsenter is util-linux's, on every node."""
    if not root_prefix(pid):
        return ()
    return ("nsenter", f"--target={pid}", "--mount", "--pid", "--net", "--")
