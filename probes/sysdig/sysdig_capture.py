"""The sysdig capture backend: `sysdig -w` records the process, the importer turns the file into a trace.

A casstrace.probes.protocol.Capture, like the bcc backend; stop() returns a SysdigCaptured, the
recorded file and its windows, which the importer writes. sysdig's clock is Unix time, so windows
are taken with time.time_ns() and line up with the capture's own timestamps.

sysdig captures through a driver: its kernel module, its eBPF probe (a per-kernel object file), or
the modern eBPF driver built into sysdig >= 0.31 (`--modern-bpf`). Without one, `sysdig -w` fails
(or, through scap-driver-loader, tries to download and compile one): we check for a driver first
and say which is missing, and we watch sysdig start, so a failing driver is an error, never a hang.
The snaplen is 1, so no row data lands in the file.
"""

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from casstrace.errors import CasstraceError
from casstrace.probes.backends import DEFAULT_STREAM_LIMIT
from casstrace.probes.protocol import Window, WindowLog
from casstrace.probes.sysdig.sysdig_import import import_scap
from casstrace.probes.sysdig.sysdig_tool import SysdigVersion, find_sysdig, sysdig_filter
from casstrace.traces.writer import TraceWriter

START_TIMEOUT_S = 20
STOP_TIMEOUT_S = 30
SCAP_MODULE_DEVICE = Path("/dev/scap0")
KERNEL_BTF = Path("/sys/kernel/btf/vmlinux")


def _bpf_probe_path() -> Path | None:
    """The scap eBPF probe sysdig would load: $SYSDIG_BPF_PROBE, else what scap-driver-loader installs."""
    for candidate in (os.environ.get("SYSDIG_BPF_PROBE"), Path.home() / ".scap" / "scap-bpf.o"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def driver_options(sysdig: str, version: str) -> list[str]:
    """The sysdig options that select a driver that can work here, or a CasstraceError saying
    which drivers are missing."""
    help_text = subprocess.run([sysdig, "--help"], capture_output=True, text=True, timeout=30).stdout
    if "--modern-bpf" in help_text and KERNEL_BTF.exists():
        return ["--modern-bpf"]
    if SCAP_MODULE_DEVICE.exists():
        return []  # the kernel module is loaded: sysdig's default driver
    probe = _bpf_probe_path()
    if probe is not None:
        return [f"--bpf={probe}"]
    modern = (
        "its modern eBPF driver needs kernel BTF (/sys/kernel/btf/vmlinux is missing)"
        if "--modern-bpf" in help_text
        else "it predates the modern eBPF driver (sysdig >= 0.31)"
    )
    raise CasstraceError(
        f"sysdig {version} cannot capture on kernel {os.uname().release}: its kernel module is not loaded"
        f" ({SCAP_MODULE_DEVICE} missing), no eBPF probe is installed (SYSDIG_BPF_PROBE unset,"
        f" ~/.scap/scap-bpf.o missing), and {modern}",
        "use the default bcc backend (leave out --backend sysdig), or install sysdig's driver for this"
        " kernel (scap-driver-loader) or a sysdig >= 0.31",
    )


@dataclass(frozen=True)
class SysdigCaptured:
    """What a SysdigCapture recorded (its stop() returns it): the capture protocol's CaptureResult."""

    scap_path: Path
    pid: int
    windows: tuple[Window, ...]
    ended_early: str | None
    stream_limit: int
    workdir: tempfile.TemporaryDirectory[str]  # holds scap_path: removed once written
    source: str  # what was captured, for meta `source`

    def write(self, writer: TraceWriter) -> None:
        try:
            write_capture(self.scap_path, writer, self.pid, list(self.windows), self.stream_limit, self.source)
        finally:
            self.workdir.cleanup()


class SysdigCapture:
    """Records `pid` (all its threads) with `sysdig -w` between start() and stop()."""

    def __init__(
        self,
        pid: int,
        *,
        extra_dirs: Iterable[str | os.PathLike[str]] = (),
        stream_limit: int | None = None,
        source: str | None = None,
    ):
        # extra_dirs: the bcc backend names page-cache fills in these; sysdig sees no page cache.
        self.pid = pid
        self.source = source or f"pid {pid}"
        self.stream_limit = stream_limit or DEFAULT_STREAM_LIMIT
        self.ended_early: str | None = None
        self._windows: WindowLog | None = None
        self._sysdig: subprocess.Popen[bytes] | None = None
        self._workdir: tempfile.TemporaryDirectory[str] | None = None
        self._stderr: IO[str] | None = None
        self.scap_path: Path | None = None
        self.result: SysdigCaptured | None = None

    @staticmethod
    def now_ns() -> int:
        return time.time_ns()

    # -- start and stop -------------------------------------------------------------------------
    def start(self) -> None:
        if self._workdir is not None:
            return
        if os.geteuid() != 0:
            raise CasstraceError("sysdig captures need root", "run casstrace as root (sudo)")
        if not Path(f"/proc/{self.pid}").exists():
            raise CasstraceError(f"no process with pid {self.pid}", "give the pid of a running Cassandra JVM")
        sysdig = find_sysdig()
        version = SysdigVersion(sysdig)
        options = driver_options(sysdig, str(version))
        self._workdir = tempfile.TemporaryDirectory(prefix="casstrace-sysdig-")
        self.scap_path = Path(self._workdir.name) / "capture.scap"
        self._stderr = open(Path(self._workdir.name) / "sysdig.stderr", "w+")
        self._windows = WindowLog(self.now_ns())
        self._sysdig = subprocess.Popen(
            [sysdig, *options, "-s", "1", "-w", str(self.scap_path), sysdig_filter(pid=self.pid)],
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            start_new_session=True,
        )
        self._wait_until_capturing(str(version))

    def _wait_until_capturing(self, version: str) -> None:
        """sysdig writes the capture's header once its driver is open; it exits if it cannot."""
        assert self._sysdig is not None and self.scap_path is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._sysdig.poll() is not None:
                self._fail_start(f"sysdig {version} exited (status {self._sysdig.returncode}) before capturing")
            if self.scap_path.exists() and self.scap_path.stat().st_size > 0:
                return
            time.sleep(0.05)
        self._fail_start(f"sysdig {version} did not start capturing within {START_TIMEOUT_S} s")

    def _fail_start(self, what: str) -> None:
        assert self._stderr is not None
        self._end_sysdig()
        self._stderr.seek(0)
        lines = [line.strip() for line in self._stderr.read().splitlines() if line.strip()]
        self._cleanup()
        said = "; ".join(lines[-3:]) if lines else "no message"
        raise CasstraceError(
            f"{what}: {said}", "check that sysdig's driver loads (`sysdig -w /tmp/x.scap -n 10`), or use --backend bcc"
        )

    def stop(self) -> SysdigCaptured | None:
        """Stops sysdig (it closes the file cleanly on SIGINT) and closes the last window. Idempotent."""
        if self._sysdig is None:
            return self.result
        if self._sysdig.poll() is not None and self.ended_early is None:
            self.ended_early = f"sysdig exited (status {self._sysdig.returncode}) during the capture"
        self._end_sysdig()
        if self.ended_early is None and not Path(f"/proc/{self.pid}").exists():
            self.ended_early = f"process {self.pid} exited"
        assert self._windows is not None and self.scap_path is not None and self._workdir is not None
        assert self._stderr is not None
        self._stderr.close()
        self.result = SysdigCaptured(
            self.scap_path,
            self.pid,
            self._windows.close(self.now_ns()),
            self.ended_early,
            self.stream_limit,
            self._workdir,
            self.source,
        )
        return self.result

    def _end_sysdig(self) -> None:
        sysdig, self._sysdig = self._sysdig, None
        if sysdig is not None and sysdig.poll() is None:
            sysdig.send_signal(signal.SIGINT)
            try:
                sysdig.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                sysdig.kill()
                sysdig.wait()

    def _cleanup(self) -> None:
        if self._stderr is not None:
            self._stderr.close()
        if self._workdir is not None:
            self._workdir.cleanup()

    def __enter__(self) -> "SysdigCapture":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- windows --------------------------------------------------------------------------------
    def begin_window(self, label: str, execution: int | None = None) -> int:
        """Closes the current window and opens a new one; returns its window_id (2, 3, ...)."""
        if self._windows is None or self._sysdig is None:
            raise RuntimeError("begin_window() outside a running capture")
        return self._windows.begin(label, execution, self.now_ns())


def write_capture(
    scap: Path,
    writer: TraceWriter,
    pid: int,
    windows: list[Window],
    stream_limit: int = DEFAULT_STREAM_LIMIT,
    source: str | None = None,
) -> None:
    """A live capture's trace: the importer, on the capture's windows (`source` None: 'pid PID')."""
    import_scap(
        scap,
        writer,
        pid=pid,
        windows=windows,
        source=source or f"pid {pid}",
        event_limit=stream_limit,
        meta={"sysdig_version": str(SysdigVersion(find_sysdig()))},
        filtered_to_pid=True,
    )
