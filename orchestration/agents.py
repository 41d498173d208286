"""Capturing several nodes' JVMs on the same windows: one capture agent per node, driven from here.

An *agent* (`casstrace agent`, hidden) captures one node's JVM on the machine it runs on, with the
normal backend and window sources, through casstrace.probes.recording.record; it takes the window
boundaries as commands on its stdin, acknowledging each, and at `stop` sends back its partial trace.
Agents of this machine run as subprocesses, remote ones through the user's own `ssh` (BatchMode:
nothing prompts); the same agent and the same protocol either way. `AgentsCapture` is the
casstrace.probes.protocol.Capture that drives them: each window opens on every agent (all
acknowledged) before the execution starts; its result merges the partial traces into one
(casstrace.traces.merge), with each remote clock's offset measured by round trips (NTP-style: the
agent's clock read against the midpoint of the shortest round trip).

The protocol: one JSON object per line each way; the agent's partial trace follows its
{"trace": N} line as N raw bytes. Its messages are typed in casstrace.orchestration.agent_messages
(the name of each after the arrow), which alone reads and writes these lines.
    agent -> {"ready": {"pid", "hostname", "casstrace_version", "protocol"}}   once capturing
    {"op": "window", "label", "execution"}  -> {"window": id, "ended_early": str | null}
    {"op": "clock"}                         -> {"now_ns": int}  (the agent's capture clock)
    {"op": "cold"}                          -> {"paged_out": int}  (run --cold, before an execution)
    {"op": "stop"}                          -> {"trace": N} + N bytes, then the agent exits
    agent -> {"error": str, "fix": str, "down": bool}   instead of any reply, then it exits non-zero
An agent whose driver is gone (its stdin closed: casstrace killed, the ssh connection lost) stops
its capture, undoing everything (probes detached, sources stopped), keeps nothing and exits. Agents
run in their own session, so a Ctrl-C at the terminal reaches only the driver, which stops them.
"""

import os
import platform
import queue
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

from casstrace import __version__
from casstrace.errors import CasstraceError
from casstrace.node import context
from casstrace.node.jvm import CassandraProcess, cassandra_at, find_cassandra, java_thread_ids
from casstrace.orchestration.agent_messages import (
    ClockReading,
    ColdRefused,
    Command,
    Failed,
    MakeCold,
    NotAMessage,
    OpenWindow,
    PagedOut,
    ReadClock,
    Ready,
    Reply,
    Stop,
    TraceFollows,
    WindowOpened,
    decode_command,
    decode_reply,
    encode,
)
from casstrace.orchestration.sources import node_sources
from casstrace.probes.backends import DEFAULT_BACKEND, backend, run_thread_slot_ns
from casstrace.probes.protocol import CaptureOptions, Window, WindowLog, Windows
from casstrace.probes.recording import record
from casstrace.terminal import warn
from casstrace.traces import TraceWriter, merge
from casstrace.traces.meta import CassandraMeta, TableMeta

PROTOCOL = 1
READY_TIMEOUT_S = 180.0  # compiling the probes on a loaded machine, or a slow ssh login
REPLY_TIMEOUT_S = 60.0  # a window switch, a cold eviction
TRACE_TIMEOUT_S = 300.0  # detaching and writing a long capture
CLOCK_ROUND_TRIPS = 8
ReplyT = TypeVar("ReplyT", bound=Reply)


@dataclass(frozen=True)
class TableRef:
    """A queried table, as the agent needs it to list the table's files on its node."""

    keyspace: str
    table: str
    id: str

    def argument(self) -> str:
        return f"{self.keyspace}.{self.table}.{self.id}"

    @staticmethod
    def parse(text: str) -> "TableRef":
        keyspace, table, table_id = text.split(".", 2)
        return TableRef(keyspace, table, table_id)


@dataclass(frozen=True)
class AgentOptions:
    address: str  # the node's native address: its JVM listens there
    port: int
    pid: int | None = None
    backend: str = DEFAULT_BACKEND
    tables: tuple[TableRef, ...] = ()

    def arguments(self) -> list[str]:
        """The `casstrace agent` arguments that give these options."""
        return [
            "agent",
            "--address",
            self.address,
            "--port",
            str(self.port),
            "--backend",
            self.backend,
            *(["--pid", str(self.pid)] if self.pid is not None else []),
            *(argument for table in self.tables for argument in ("--table", table.argument())),
        ]


class DriverGone(Exception):
    """The agent's stdin closed: whoever drove it is gone."""


class NodeDown(CasstraceError):
    """No Cassandra JVM serves the node's address here."""


# -- the agent: one node's capture, driven through stdin/stdout ----------------------------------------


class _Channel:
    """The agent's end of the protocol."""

    def __init__(self, commands: IO[bytes], replies: IO[bytes]):
        self.commands, self.replies = commands, replies

    def send(self, message: Reply) -> None:
        self.replies.write(encode(message))
        self.replies.flush()

    def receive(self) -> Command:
        line = self.commands.readline()
        if not line:
            raise DriverGone("the agent's driver closed its end")
        try:
            return decode_command(line)
        except NotAMessage as error:
            raise CasstraceError(f"the agent got {error}", "use the same casstrace on every node") from None


def node_jvm(options: AgentOptions) -> CassandraProcess:
    """The JVM of the agent's node: --pid, else the Cassandra JVM that serves its address."""
    if options.pid is not None:
        return find_cassandra(options.pid)
    process = cassandra_at(options.address, options.port)
    if process is None:
        raise NodeDown(
            f"no Cassandra JVM on {platform.node()} serves {options.address}:{options.port}",
            "start the node, or check the address and port",
        )
    return process


def node_tables(process: CassandraProcess, tables: Sequence[TableRef]) -> CassandraMeta:
    """What a node's capture records of itself: where its data lives and the queried tables' files."""
    directories = context.data_directories({}, process)
    found: list[TableMeta] = [
        {
            "keyspace": table.keyspace,
            "table": table.table,
            "id": table.id,
            "sstables": context.sstable_files(process.pid, directories, table.keyspace, table.table, table.id),
        }
        for table in tables
    ]
    return {"data_file_directories": directories, "tables": found}


def serve(options: AgentOptions, commands: IO[bytes], replies: IO[bytes]) -> int:
    """Run the agent until `stop` or until its driver is gone; returns the exit status (128 + N when
    signal N stopped it, after its capture went back)."""
    from casstrace.interrupts import Interrupted

    channel = _Channel(commands, replies)
    status = 0
    try:
        process = node_jvm(options)
        cassandra = node_tables(process, options.tables)
        factory = backend(options.backend)
        # Per-thread slots as a single node's run counts them: each replica is charged its own threads' reads.
        slots = CaptureOptions(thread_slot_ns=run_thread_slot_ns(factory.capabilities))
        capture = factory(
            process.pid,
            extra_dirs=cassandra["data_file_directories"],
            options=slots if slots != CaptureOptions() else None,
        )
        with tempfile.TemporaryDirectory(prefix="casstrace-agent-") as directory:
            writer = TraceWriter(Path(directory, "node.trace"))

            def body(windows: Windows) -> str | None:
                channel.send(Ready(process.pid, platform.node(), __version__, PROTOCOL))
                return _follow(channel, windows, process, cassandra)

            def annotate(writer: TraceWriter) -> None:
                writer.set_meta(
                    node={"address": options.address, "port": options.port, "pid": process.pid}, cassandra=cassandra
                )
                try:  # the JVM's own thread names (its trace events' names), where /proc cuts them
                    writer.add_threads({tid: name for name, tid in java_thread_ids(process.pid).items()})
                except CasstraceError as error:  # this node's reads stay charged by window
                    warn(f"the JVM's threads could not be listed ({error})")

            try:
                path = record(
                    capture,
                    writer,
                    body,
                    annotate=annotate,
                    sources=node_sources(process.pid, cassandra["data_file_directories"], options.port),
                )
            except Interrupted as interrupted:  # killed meanwhile: what was captured still goes back
                if interrupted.trace is None:
                    raise
                path, status = interrupted.trace, interrupted.exit_code
            data = path.read_bytes()
            channel.send(TraceFollows(len(data)))
            replies.write(data)
            replies.flush()
    except DriverGone:
        return 1
    except CasstraceError as error:
        try:
            channel.send(Failed(error.message, error.fix or "", isinstance(error, NodeDown)))
        except OSError:
            pass
        return 1
    except (BrokenPipeError, ConnectionResetError):
        return 1
    return status


def _follow(channel: _Channel, windows: Windows, process: CassandraProcess, cassandra: CassandraMeta) -> str | None:
    """Obey the driver's commands until `stop`."""
    while True:
        match channel.receive():
            case OpenWindow(label, execution):
                window_id = windows.begin_window(label, execution)
                channel.send(WindowOpened(window_id, windows.ended_early))
            case ReadClock():
                channel.send(ClockReading(windows.now_ns()))
            case MakeCold():
                try:
                    channel.send(
                        PagedOut(context.make_cold(process.pid, context.table_file_keys(process.pid, cassandra)))
                    )
                except CasstraceError as error:  # that execution is not cold; the capture goes on
                    channel.send(ColdRefused(error.message))
            case Stop():
                return None


# -- the driver's side -----------------------------------------------------------------------------


@dataclass(frozen=True)
class AgentTarget:
    """A node to capture, and how to reach the machine its JVM runs on."""

    node_id: int
    options: AgentOptions
    ssh: str | None = None  # the ssh destination; None: this machine
    ssh_config: Path | None = None
    remote_casstrace: str = "casstrace"

    @property
    def where(self) -> str:
        return f"{self.options.address} (ssh {self.ssh})" if self.ssh else self.options.address

    def command(self) -> list[str]:
        if self.ssh is None:
            return [sys.executable, "-m", "casstrace", *self.options.arguments()]
        return [
            "ssh",
            "-o",
            "BatchMode=yes",
            "-o",
            "ConnectTimeout=15",
            "-o",
            "ServerAliveInterval=15",
            *(["-F", str(self.ssh_config)] if self.ssh_config else []),
            "-T",
            self.ssh,
            "--",
            shlex.join([*shlex.split(self.remote_casstrace), *self.options.arguments()]),
        ]


class AgentFailed(CasstraceError):
    pass


class AgentEnded(Exception):
    """An agent sent its trace before it was told to stop: its capture ended on its machine."""


class _Link:
    """The driver's end of one agent: its process, and a thread reading what it says."""

    def __init__(self, target: AgentTarget, partials: Path):
        self.target = target
        self.partials = partials
        self.messages: queue.Queue[Reply | None] = queue.Queue()
        self.stderr: list[str] = []
        self.process = subprocess.Popen(
            target.command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.trace: Path | None = None
        self.trace_complete = False  # all the bytes its TraceFollows announced came
        self.ended: TraceFollows | None = None  # when it stopped before being told to
        self._threads = [
            threading.Thread(target=self._read, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        try:
            for line in iter(self.process.stdout.readline, b""):
                try:
                    message = decode_reply(line)
                except NotAMessage:  # a stray line on its stdout (a shell's, ssh's): words for failure()
                    self.stderr.append(line.decode(errors="replace").strip())
                    continue
                if isinstance(message, TraceFollows):
                    data = self.process.stdout.read(message.trace)
                    self.trace = self.partials / f"node-{self.target.node_id}.trace"
                    self.trace.write_bytes(data)
                    self.trace_complete = len(data) == message.trace
                self.messages.put(message)
        finally:
            self.messages.put(None)  # the agent's output ended

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in iter(self.process.stderr.readline, b""):
            self.stderr.append(line.decode(errors="replace").rstrip())
            del self.stderr[:-20]

    def send(self, command: Command) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(encode(command))
            self.process.stdin.flush()
        except OSError:
            pass  # the agent is gone: receive() says why

    def receive_any(self, timeout_s: float) -> Reply:
        """The agent's next reply; AgentFailed when it failed, said nothing in time or exited, and
        AgentEnded when it sent its trace untold (its capture was stopped on its machine)."""
        try:
            message = self.messages.get(timeout=timeout_s)
        except queue.Empty:
            raise self.failure(f"no answer in {timeout_s:.0f} s") from None
        if message is None:
            self.messages.put(None)
            raise self.failure("it exited", ended=True)
        if isinstance(message, Failed):
            cls = NodeDownThere if message.down else AgentFailed
            raise cls(f"{self.target.where}: {message.error}", message.fix)
        return message

    def receive(self, expected: type[ReplyT], timeout_s: float) -> ReplyT:
        """The agent's next reply, which must be an `expected` (receive_any says what else happens)."""
        message = self.receive_any(timeout_s)
        if isinstance(message, TraceFollows) and expected is not TraceFollows:
            self.ended = message  # stopped on its own machine (a signal there): what it captured came back
            raise AgentEnded(f"{self.target.where}: its capture was stopped on its machine")
        if not isinstance(message, expected):
            raise self.failure(f"it answered {type(message).__name__} where {expected.__name__} was due")
        return message

    def failure(self, what: str, ended: bool = False) -> AgentFailed:
        """Why the agent failed, in the words of whatever failed (ssh, the shell, the agent). ended:
        its output ended, so its exit status and last words follow within moments."""
        status = self.process.poll()
        if ended and status is None:
            try:
                status = self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            self._threads[1].join(timeout=1)
        said = next((line for line in reversed(self.stderr) if line.strip()), "")
        ssh = self.target.ssh is not None
        if ssh and status == 255:
            return AgentFailed(
                f"ssh to {self.target.ssh} failed: {said or 'exit 255'}",
                f"check that `ssh -o BatchMode=yes {self.target.ssh} true` works (keys or agent, "
                "~/.ssh/config, known_hosts)",
            )
        if ssh and status == 127:
            return AgentFailed(
                f"casstrace is not installed on {self.target.ssh}: {said}",
                f"install casstrace on {self.target.ssh} (README: Remote replicas), or give "
                "--remote-casstrace with its path there",
            )
        return AgentFailed(
            f"the capture agent of {self.target.where} failed: {what}" + (f" ({said})" if said else ""),
            "run with --debug, or check that casstrace runs as root on that machine",
        )

    def clock_samples(self, now_ns: Callable[[], int]) -> list[tuple[int, int, int]]:
        """Round trips (sent, the agent's clock, received) of `clock` commands, for clock_offset()."""
        samples = []
        for _ in range(CLOCK_ROUND_TRIPS):
            sent = now_ns()
            self.send(ReadClock())
            remote = self.receive(ClockReading, REPLY_TIMEOUT_S).now_ns
            samples.append((sent, remote, now_ns()))
        return samples

    def close(self, grace_s: float = 5.0) -> None:
        """End the agent: its stdin closed (it detaches and exits), killed if it lingers."""
        if self.process.stdin is not None:
            try:
                self.process.stdin.close()
            except OSError:
                pass
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def clock_offset(samples: Sequence[tuple[int, int, int]]) -> tuple[int, int]:
    """From round trips (sent, the remote clock's reading, received), the remote clock minus ours and
    the round trip it was measured in, NTP-style: the reading is taken to be at the midpoint of its
    round trip, and the shortest round trip wins (the least room for an asymmetric delay: the error
    is at most half of it)."""
    round_trip, offset = min((received - sent, remote - (sent + received) // 2) for sent, remote, received in samples)
    return offset, round_trip


class NodeDownThere(AgentFailed):
    """The agent found no Cassandra JVM for its node: the node is down (not a failure of the run)."""


@dataclass
class CapturedNode:
    target: AgentTarget
    pid: int
    clock_shift_ns: int = 0
    round_trip_ns: int | None = None
    clock_samples: list[tuple[int, int, int]] = field(default_factory=list)  # ssh: at start, and at stop
    trace: Path | None = None

    def read_clock(self, link: "_Link", now_ns: Callable[[], int]) -> None:
        """Add round trips to the agent's clock; its shift is then the best of all so far."""
        self.clock_samples.extend(link.clock_samples(now_ns))
        offset, self.round_trip_ns = clock_offset(self.clock_samples)
        self.clock_shift_ns = -offset


@dataclass
class AgentsResult:
    """The protocol's CaptureResult of an AgentsCapture: the nodes' partial traces, merged at write()."""

    windows: tuple[Window, ...]
    ended_early: str | None
    nodes: list[CapturedNode]
    primary: int  # index in nodes of the node whose pid/process the trace names
    metas: dict[int, dict[str, Any]] = field(default_factory=dict)  # node_id -> its own meta, once written

    def write(self, writer: TraceWriter) -> None:
        """The trace's windows, then every node's partial trace merged in (each removed once merged)."""
        for window in self.windows:
            writer.add_window(window.label, window.start_ns, window.end_ns, window.execution)
        for node in self.nodes:
            assert node.trace is not None
            meta = self.metas[node.target.node_id] = merge.merge_node(
                writer, node.trace, node.target.node_id, node.clock_shift_ns, self.windows[0].start_ns
            )
            if node.round_trip_ns is not None:  # how well its clock shift is known
                meta["clock"] = {"offset_ns": -node.clock_shift_ns, "round_trip_ns": node.round_trip_ns}
            node.trace.unlink()
        writer.set_meta(
            source="; ".join(f"pid {node.pid} on {node.target.where}" for node in self.nodes),
            capture_start_ns=self.windows[0].start_ns,
            capture_end_ns=self.windows[-1].end_ns,
            **merge.combined_meta(list(self.metas.values()), self.primary),
        )
        if self.ended_early:
            writer.set_meta(ended_early=self.ended_early)


class AgentsCapture:
    """A casstrace.probes.protocol.Capture of several nodes' JVMs, one agent each (module docstring).

    Nodes whose agent finds no JVM (the node is down) are left out and listed in `down` (target,
    reason); any other agent failure fails the capture, naming the node."""

    def __init__(self, targets: Sequence[AgentTarget], primary_node_id: int):
        self.targets = tuple(targets)
        self.primary_node_id = primary_node_id
        self.pid = 0
        self.partials = Path(tempfile.mkdtemp(prefix="casstrace-nodes-"))  # the agents' traces, until merged
        self.down: list[tuple[AgentTarget, str]] = []
        self._links: list[_Link] = []
        self._nodes: dict[int, CapturedNode] = {}
        self._windows: WindowLog | None = None
        self._ended_early: str | None = None
        self._result: AgentsResult | None = None
        self._stopped = False

    @property
    def ended_early(self) -> str | None:
        return self._ended_early

    def now_ns(self) -> int:
        return time.monotonic_ns()  # the clock of every local capture (bpf_ktime_get_ns)

    def start(self) -> None:
        if self._links or self._stopped:
            return
        start_ns = self.now_ns()
        try:
            self._links = [_Link(target, self.partials) for target in self.targets]
            for link in list(self._links):
                try:
                    ready = link.receive(Ready, READY_TIMEOUT_S)
                except NodeDownThere as down:
                    self.down.append((link.target, f"down: {down.message.split(': ', 1)[-1]}"))
                    self._links.remove(link)
                    link.close()
                    continue
                if ready.protocol != PROTOCOL:
                    raise AgentFailed(
                        f"{link.target.where} runs casstrace {ready.casstrace_version}, "
                        f"whose capture agent speaks another protocol",
                        f"install casstrace {__version__} there",
                    )
                node = CapturedNode(link.target, ready.pid)
                if link.target.ssh is not None:
                    node.read_clock(link, self.now_ns)
                self._nodes[link.target.node_id] = node
            if not self._links:
                raise CasstraceError(
                    "no node could be captured: "
                    + "; ".join(f"{target.options.address} {reason}" for target, reason in self.down),
                    "start the nodes",
                )
        except BaseException:
            self._close_links()
            self._stopped = True
            raise
        primary = self._nodes.get(self.primary_node_id) or next(iter(self._nodes.values()))
        self.pid = primary.pid
        self._windows = WindowLog(start_ns)

    def begin_window(self, label: str, execution: int | None = None) -> int:
        if self._windows is None or self._stopped:
            raise RuntimeError("begin_window() outside a running capture")
        now = self.now_ns()
        for link in self._capturing():
            link.send(OpenWindow(label, execution))
        window_id = self._windows.begin(label, execution, now)
        for link in self._capturing():
            try:
                reply = link.receive(WindowOpened, REPLY_TIMEOUT_S)
            except AgentEnded as ended:  # the others go on; the run ends early, its trace incomplete
                self._ended_early = self._ended_early or str(ended)
                continue
            if reply.window != window_id:
                raise link.failure(f"it opened window {reply.window} where the run opened {window_id}")
            if reply.ended_early and self._ended_early is None:
                self._ended_early = f"{link.target.where}: {reply.ended_early}"
        return window_id

    def make_cold(self) -> int:
        """--cold on every node before an execution; the address space paged out, summed."""
        for link in self._capturing():
            link.send(MakeCold())
        paged_out, refused = 0, []
        for link in self._capturing():
            match link.receive_any(REPLY_TIMEOUT_S):
                case PagedOut(paged):
                    paged_out += paged
                case ColdRefused(why):
                    refused.append(f"{link.target.where}: {why}")
                case other:
                    raise link.failure(f"it answered {type(other).__name__} where PagedOut was due")
        if refused:
            raise CasstraceError(
                "; ".join(refused), "run casstrace as root on Linux 5.10 or later, or leave out --cold"
            )
        return paged_out

    def stop(self) -> AgentsResult | None:
        if self._stopped:
            return self._result
        self._stopped = True
        if self._windows is None:
            return None
        windows = self._windows.close(self.now_ns())
        try:
            for link in self._capturing():  # the remote clocks again: the shortest round trip of both ends wins
                if link.target.ssh is not None:
                    self._nodes[link.target.node_id].read_clock(link, self.now_ns)
            for link in self._capturing():
                link.send(Stop())
            for link in self._links:
                if link.ended is None:
                    link.receive(TraceFollows, TRACE_TIMEOUT_S)
                if not link.trace_complete or link.trace is None:
                    raise link.failure("its trace came cut short")
                self._nodes[link.target.node_id].trace = link.trace
        finally:
            self._close_links()
        nodes = [self._nodes[link.target.node_id] for link in self._links]
        primary = next((i for i, node in enumerate(nodes) if node.target.node_id == self.primary_node_id), 0)
        self._result = AgentsResult(windows, self._ended_early, nodes, primary)
        return self._result

    def _capturing(self) -> list[_Link]:
        """The agents still capturing (not stopped on their own machine)."""
        return [link for link in self._links if link.ended is None]

    def discard(self) -> None:
        """Remove the agents' partial traces that are still here (the run ended before merging them)."""
        shutil.rmtree(self.partials, ignore_errors=True)

    def _close_links(self) -> None:
        for link in self._links:
            link.close()


def main_streams() -> tuple[IO[bytes], IO[bytes]]:
    """The agent's protocol streams: stdin, and the real stdout; whatever else writes to fd 1 (a
    library's message) goes to stderr instead, so that it cannot break the protocol."""
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    return sys.stdin.buffer, replies
