"""Starting, stopping and talking to one sandbox node (cluster.py: a sandbox of several).

The node's JVM runs detached (its own session), its stdout and stderr going to the sandbox's log.
It is found again only through the PID file in its data directory, and a PID counts only while
/proc says that process is a CassandraDaemon reading this sandbox's cassandra.yaml: a stale PID
file, or a PID the kernel gave to someone else, never gets a signal from us.
"""

import dataclasses
import errno
import os
import shlex
import signal
import socket
import subprocess
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from casstrace import paths
from casstrace.errors import CasstraceError
from casstrace.node.context import logged_disk_access_mode
from casstrace.node.jvm import DAEMON_CLASS, read_argv
from casstrace.sandbox import artifacts, config, versions
from casstrace.sandbox.java import NODETOOL_JAVA_MAJOR, find_java
from casstrace.sandbox.settings import HOST, Layout, Settings

if TYPE_CHECKING:  # the driver loads on first connect: `sandbox status` does without it
    from cassandra.cluster import Session

START_TIMEOUT_S = 300
STOP_TIMEOUT_S = 120


class StartFailed(CasstraceError):
    """The JVM did not come up; `log_tail` holds the end of its `log` for the user."""

    def __init__(self, message: str, fix: str, log: Path, log_tail: list[str]):
        super().__init__(message, fix)
        self.log = log
        self.log_tail = log_tail


@dataclasses.dataclass
class Status:
    running: bool
    data_dir: Path
    pid: int | None
    settings: Settings | None
    log: Path

    @property
    def host(self) -> str:
        return self.settings.address if self.settings is not None else HOST

    @property
    def disk_access(self) -> str:
        """How the node reads SSTables: the mode configured, where the version's default, and
        what the running node's log says it resolved to ('auto -> mmap (4.1's default)')."""
        if self.settings is None or self.settings.version is None:
            return "unknown"
        series = versions.series_of(self.settings.version)
        configured = self.settings.disk_access_mode or series.default_disk_access_mode
        default = f" ({series.name}'s default)" if self.settings.disk_access_mode is None else ""
        resolved = logged_disk_access_mode(self.log) if self.running else None
        if resolved is not None:
            return f"{configured}{default}: Data files {resolved}"
        if configured == series.default_disk_access_mode:
            return f"{series.default_disk_access}{default}"
        return configured

    @property
    def sstable_format(self) -> str:
        return (self.settings.sstable_format if self.settings else None) or "big"


class Sandbox:
    def __init__(self, data_dir: str | os.PathLike[str] | None = None):
        self.layout = Layout(data_dir or paths.default_sandbox_dir())

    @property
    def data_dir(self) -> Path:
        return self.layout.root

    @property
    def host(self) -> str:
        """The node's address (127.0.0.K for node K of a cluster)."""
        settings = self.layout.load_settings()
        return settings.address if settings is not None else HOST

    @property
    def settings(self) -> Settings:
        settings = self.layout.load_settings()
        if settings is None:
            raise CasstraceError(
                f"no sandbox has been started in {self.data_dir}",
                f"run: casstrace sandbox start --data-dir {self.data_dir}",
            )
        return settings

    @property
    def native_port(self) -> int:
        return self.settings.native_port

    port = native_port  # the CQL port, as node-facing code calls it

    @property
    def jmx_port(self) -> int:
        return self.settings.jmx_port

    @property
    def log(self) -> Path:
        return self.layout.log

    # -- process ----------------------------------------------------------------------------
    def pid(self) -> int | None:
        """The running node's PID, or None when the PID file is absent or stale."""
        try:
            pid = int(self.layout.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        argv = read_argv(pid) or ()
        ours = DAEMON_CLASS in argv and f"-Dcassandra.config=file://{self.layout.yaml}" in argv
        return pid if ours else None

    def is_running(self) -> bool:
        return self.pid() is not None

    def status(self) -> Status:
        pid = self.pid()
        return Status(pid is not None, self.data_dir, pid, self.layout.load_settings(), self.layout.log)

    def start(
        self,
        *,
        version: str | None = None,
        native_port: int | None = None,
        jmx_port: int | None = None,
        disk_access_mode: str | None = None,
        commitlog_sync: str | None = None,
        sstable_format: str | None = None,
        heap: str | None = None,
        timeout: float = START_TIMEOUT_S,
        progress: Callable[[str], None] = print,
    ) -> Status:
        """Starts the node and returns once it answers CQL. Options left None keep what this
        sandbox used last time (or the defaults for a new one). `version` is a release (4.1.10)
        or a series (4.1, 4.1.x: its newest release)."""
        self.refuse_if_running()
        self.check_writable()
        settings = self.resolve_settings(
            version=version,
            native_port=native_port,
            jmx_port=jmx_port,
            disk_access_mode=disk_access_mode,
            commitlog_sync=commitlog_sync,
            sstable_format=sstable_format,
            heap=heap,
        )
        runtime = find_runtime(settings, progress)
        check_ports_free(settings)
        return self.launch(settings, runtime, timeout=timeout)

    def refuse_if_running(self) -> None:
        running = self.pid()
        if running is not None:
            settings = self.layout.load_settings()
            raise CasstraceError(
                f"the sandbox in {self.data_dir} is already running (pid {running}, "
                f"CQL on {self.host}:{settings.native_port if settings else '?'})",
                f"use it as it is, or stop it first: casstrace sandbox stop --data-dir {self.data_dir}",
            )

    def resolve_settings(self, **options: Any) -> Settings:
        """The settings a start with these options gives: those left None keep what this sandbox
        used last time (or the defaults for a new one)."""
        previous = self.layout.load_settings()
        version = options.get("version")
        if version is not None:
            series, release = versions.parse_version(version)
            options["version"] = release or artifacts.newest_release(series.name)
        chosen: dict[str, Any] = {k: v for k, v in options.items() if v is not None}
        if previous is not None:
            if "jmx_port" in chosen and "storage_port" not in chosen:  # it follows the JMX port
                previous.storage_port = None
            settings = Settings(**{**dataclasses.asdict(previous), **chosen})
            _check_data_compatible(previous, settings, self.data_dir)
            return settings
        if "version" not in chosen:
            chosen["version"] = artifacts.newest_release(versions.DEFAULT_SERIES)
        return Settings(**chosen)

    def launch(self, settings: Settings, runtime: "Runtime", *, timeout: float = START_TIMEOUT_S) -> Status:
        """Starts the node with `settings` (remembered for the next start) on `runtime` (its
        version's, from find_runtime) and returns once it answers CQL; its ports have been
        checked to be free."""
        java, jars = runtime.java, runtime.jars
        extra_options = jvm_extra_options()
        self.layout.save_settings(settings)
        config.write_config(self.layout, settings)
        for directory in (
            self.layout.data,
            self.layout.commitlog,
            self.layout.saved_caches,
            self.layout.hints,
            self.layout.cdc_raw,
            self.layout.logs,
        ):
            directory.mkdir(parents=True, exist_ok=True)
        if self.layout.log.exists():
            self.layout.log.replace(self.layout.log.with_name("system.log.previous"))
        with open(self.layout.log, "ab") as log:
            process = subprocess.Popen(
                config.daemon_command(java, jars, self.layout, settings, extra_options),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.data_dir,
                start_new_session=True,
            )
        self.layout.pid_file.write_text(f"{process.pid}\n")
        try:
            self._wait_for_cql(process, settings, timeout)
        except StartFailed:
            _end(process)
            self.layout.pid_file.unlink(missing_ok=True)
            raise
        return self.status()

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> int | None:
        """Stops the node (SIGTERM, then SIGKILL after `timeout`); returns the PID it stopped,
        or None when it was not running."""
        pid = self.signal_stop()
        self.wait_stopped(pid, timeout)
        return pid

    def signal_stop(self) -> int | None:
        """Asks the node to stop (SIGTERM) without waiting; returns its PID, None when it was
        not running. wait_stopped(pid) waits for it: a cluster signals every node first."""
        pid = self.pid()
        if pid is None:
            self.layout.pid_file.unlink(missing_ok=True)
            return None
        os.kill(pid, signal.SIGTERM)
        return pid

    def wait_stopped(self, pid: int | None, timeout: float = STOP_TIMEOUT_S) -> None:
        """Waits until the JVM signal_stop() signalled has exited, down to its last thread (SIGKILL
        after `timeout`), then drops its PID file."""
        if pid is None:
            return
        deadline = time.monotonic() + timeout
        while not _exited(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if not _exited(pid):
            os.kill(pid, signal.SIGKILL)
            while not _exited(pid):
                time.sleep(0.1)
        self.layout.pid_file.unlink(missing_ok=True)

    # -- talking to it ----------------------------------------------------------------------
    def nodetool(self, *args: str, capture: bool = True) -> subprocess.CompletedProcess[str]:
        """Runs nodetool against this node over local JMX, from the node's own classpath.
        Raises CasstraceError when nodetool fails."""
        settings = self.settings
        self._require_running()
        assert settings.version is not None
        command = config.nodetool_command(
            find_java(NODETOOL_JAVA_MAJOR), artifacts.classpath(settings.version), self.layout, settings, list(args)
        )
        result = subprocess.run(command, capture_output=capture, text=True, cwd=self.data_dir)
        if result.returncode != 0:
            detail = (result.stderr or result.stdout or "").strip().splitlines() if capture else []
            raise CasstraceError(
                f"nodetool {' '.join(args)} failed with exit status {result.returncode}"
                + (f": {detail[-1]}" if detail else ""),
                f"check the node's log {self.layout.log}",
            )
        return result

    @contextmanager
    def connect(self, keyspace: str | None = None) -> Iterator["Session"]:
        """A cassandra-driver session to this node, closed on exit."""
        from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, NoHostAvailable
        from cassandra.policies import WhiteListRoundRobinPolicy

        settings = self.settings
        self._require_running()
        # Loading 50 KB blobs and compacting can keep a small node busy for a while.
        # Only this node, also in a cluster: `sandbox cql --node K` means node K coordinates.
        profile = ExecutionProfile(
            load_balancing_policy=WhiteListRoundRobinPolicy([settings.address]), request_timeout=120
        )
        cluster = Cluster(
            [settings.address],
            port=settings.native_port,
            connect_timeout=10,
            execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        )
        try:
            try:
                session = cluster.connect(keyspace)
            except NoHostAvailable as error:
                raise CasstraceError(
                    f"cannot connect to the sandbox on {settings.address}:{settings.native_port} ({error})",
                    f"check `casstrace sandbox status --data-dir {self.data_dir}`",
                ) from None
            yield session
        finally:
            cluster.shutdown()

    def _require_running(self) -> None:
        if not self.is_running():
            raise CasstraceError(
                f"the sandbox in {self.data_dir} is not running",
                f"run: casstrace sandbox start --data-dir {self.data_dir}",
            )

    def check_writable(self) -> None:
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=self.data_dir):
                pass
        except OSError as error:
            raise CasstraceError(
                f"cannot write to the sandbox data directory {self.data_dir} ({error.strerror or error})",
                "choose a writable directory with --data-dir",
            ) from None

    def _wait_for_cql(self, process: subprocess.Popen, settings: Settings, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise StartFailed(
                    f"Cassandra exited during startup with status {process.returncode}",
                    f"see the log {self.layout.log}",
                    self.layout.log,
                    self._log_tail(),
                )
            if _accepts(settings.address, settings.native_port) and self._answers_cql():
                return
            time.sleep(0.5)
        raise StartFailed(
            f"Cassandra did not accept CQL on {settings.address}:{settings.native_port} within {timeout:.0f} s",
            f"see the log {self.layout.log}",
            self.layout.log,
            self._log_tail(),
        )

    def _answers_cql(self) -> bool:
        try:
            with self.connect() as session:
                session.execute("SELECT release_version FROM system.local")
            return True
        except CasstraceError:
            return False

    def _log_tail(self, lines: int = 30) -> list[str]:
        try:
            with open(self.layout.log, errors="replace") as log:
                return [line.rstrip("\n") for line in deque(log, maxlen=lines)]
        except OSError:
            return []


@dataclasses.dataclass(frozen=True)
class Runtime:
    """What runs a node of a version: its Java and the jars of its classpath."""

    java: str
    jars: list[Path]


# As bin/cassandra: flags a user adds to the node's JVM, e.g. -XX:TieredStopAtLevel=1 (C1 only: a
# start in about half the CPU, its code slower; what the test suite's nodes that measure no CPU use).
JVM_EXTRA_OPTS = "JVM_EXTRA_OPTS"


def jvm_extra_options() -> list[str]:
    """The flags in $JVM_EXTRA_OPTS, split as a shell would."""
    try:
        return shlex.split(os.environ.get(JVM_EXTRA_OPTS, ""))
    except ValueError as error:
        raise CasstraceError(
            f"{JVM_EXTRA_OPTS} cannot be split into JVM flags ({error})",
            f"quote it as a shell would, or unset {JVM_EXTRA_OPTS}",
        ) from None


def find_runtime(settings: Settings, progress: Callable[[str], None] = print) -> Runtime:
    """The Java and jars of the settings' version (resolved with Maven the first time). Found before
    the ports are checked: a missing Java is the first thing a new user must hear about."""
    assert settings.version is not None
    return Runtime(
        find_java(versions.series_of(settings.version).java_major, progress=progress),
        artifacts.classpath(settings.version, progress=progress),
    )


def _check_data_compatible(previous: Settings, settings: Settings, data_dir: Path) -> None:
    """Refuses what the data a sandbox already holds cannot take: an older series than wrote it,
    and big after bti on 5.0 (storage_compatibility_mode NONE cannot go back to CASSANDRA_4)."""
    assert previous.version is not None and settings.version is not None
    fresh = f"start a new sandbox with another --data-dir, or delete {data_dir}"
    if artifacts.version_key(settings.version)[:2] < artifacts.version_key(previous.version)[:2]:
        raise CasstraceError(
            f"the sandbox in {data_dir} holds data of Cassandra {previous.version}, "
            f"which {settings.version} cannot read",
            fresh,
        )
    if previous.sstable_format == "bti" and settings.sstable_format != "bti":
        raise CasstraceError(
            f"the sandbox in {data_dir} was started with --sstable-format bti, which "
            "Cassandra cannot undo (storage_compatibility_mode NONE)",
            fresh,
        )


def _accepts(address: str, port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex((address, port)) == 0


def check_ports_free(settings: Settings) -> None:
    """Refuses a start whose ports someone already holds: the native and storage ports on the
    node's address, JMX on 127.0.0.1 (where Cassandra binds it for every node)."""
    assert settings.storage_port is not None
    which = {
        (settings.address, settings.native_port): ("native (CQL)", "--native-port"),
        (HOST, settings.jmx_port): ("JMX", "--jmx-port"),
        (settings.address, settings.storage_port): (
            "storage (gossip)",
            "--jmx-port (the storage port is the JMX port - 199)",
        ),
    }
    for (address, port), (name, option) in which.items():
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((address, port))
            except OSError as error:
                if error.errno != errno.EADDRINUSE:
                    raise
                on = "" if address == HOST else f" on {address}"
                raise CasstraceError(
                    f"{name} port {port}{on} is already in use",
                    f"stop what listens there (see: ss -ltnp 'sport = :{port}') or choose another {option}",
                ) from None


def _exited(pid: int) -> bool:
    """Whether the whole process is gone, its sockets with it. Not `pid() is None`: an exiting
    process drops its memory (and so its command line) before its files, and the JVM's main thread
    turns zombie while its other threads still hold the sockets: a restart in either gap found the
    JMX port still listening."""
    _reap(pid)
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return len(tasks) <= 1 and stat[stat.rindex(")") + 2] in "ZX"  # the last thread, a zombie


def _reap(pid: int) -> None:
    """Collects the exit status when the node is our own child (started in this process), so it
    does not linger as a zombie."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _end(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
