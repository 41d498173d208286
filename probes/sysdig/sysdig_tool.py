"""The installed sysdig binary: finding it, asking its version, and the filter a live capture
records with. (Reading a capture needs none of this: probes/scap_reader reads the file itself.)"""

import os
import shutil
import subprocess
from pathlib import Path

from casstrace.errors import CasstraceError
from casstrace.paths import cache_dir

# The sysdig event types a live capture records: the I/O probes/sysdig/scap_reader.py folds, and what keeps
# its thread and fd tables right (threads started, programs run, sockets named, fds copied).
CAPTURED_EVENTS = (
    "close",
    "creat",
    "llseek",
    "lseek",
    "open",
    "openat",
    "openat2",
    "pread",
    "preadv",
    "pwrite",
    "pwritev",
    "read",
    "readv",
    "recv",
    "recvfrom",
    "recvmsg",
    "send",
    "sendmsg",
    "sendto",
    "write",
    "writev",
    "clone",
    "clone3",
    "fork",
    "vfork",
    "execve",
    "socket",
    "connect",
    "accept",
    "accept4",
    "dup",
    "dup2",
    "dup3",
    "pipe",
    "pipe2",
)

INSTALL_FIX = "install sysdig (Debian/Ubuntu: apt-get install sysdig), or put it on PATH"


def find_sysdig() -> str:
    path = shutil.which("sysdig")
    if path is None:
        raise CasstraceError("sysdig is not installed (no `sysdig` on PATH)", INSTALL_FIX)
    return path


def sysdig_filter(pid: int | None = None, proc: str | None = None) -> str:
    """A sysdig filter for the event types casstrace uses, of one process (pid) or of processes
    whose executable is `proc`."""
    conditions = [f"evt.type in ({','.join(CAPTURED_EVENTS)})"]
    if pid is not None:
        conditions.insert(0, f"proc.pid={int(pid)}")
    elif proc is not None:
        if not proc or any(ch in proc for ch in " \t\"'()/\\"):
            raise CasstraceError(
                f"--proc {proc!r} is not a process name", "give the executable's name, e.g. --proc java, or use --pid"
            )
        # proc.exe is argv[0]; proc.exepath the binary. (proc.name names the thread in sysdig
        # 0.29, so it would pick single threads out of a process.)
        conditions.insert(0, f'(proc.exe="{proc}" or proc.exepath endswith "/{proc}")')
    return " and ".join(conditions)


class SysdigVersion:
    """`sysdig --version`. Asking costs a start-up of sysdig (~18 ms of CPU, a third of what the
    import's own sysdig run costs on the largest shared capture), so the answer is kept in the cache
    dir under the binary's identity (path, inode, size, mtime): an upgraded or different sysdig is
    asked again. When asked, it runs alongside the real work."""

    def __init__(self, sysdig: str):
        self.process = None
        try:
            binary = os.stat(sysdig)
        except OSError as error:
            raise CasstraceError(f"cannot run {sysdig}: {error}", INSTALL_FIX) from None
        self._identity = f"{os.path.realpath(sysdig)} {binary.st_ino} {binary.st_size} {binary.st_mtime_ns}"
        self._version = self._remembered()
        if self._version is None:
            try:
                self.process = subprocess.Popen(
                    [sysdig, "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
                )
            except OSError as error:
                raise CasstraceError(f"cannot run {sysdig}: {error}", INSTALL_FIX) from None

    def __str__(self) -> str:
        if self._version is None:
            assert self.process is not None  # asked in __init__ when not remembered
            try:
                words = self.process.communicate(timeout=30)[0].split()
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                words = []
            if words:
                self._version = words[-1]
                self._remember()
            else:
                self._version = "(unknown version)"
        return self._version

    @staticmethod
    def _cache() -> Path:
        return cache_dir() / "sysdig-version"

    def _remembered(self) -> str | None:
        try:
            identity, version = self._cache().read_text().split("\n")[:2]
        except (OSError, ValueError):
            return None
        return version if identity == self._identity and version else None

    def _remember(self) -> None:
        # One entry, the sysdig last asked; written aside and renamed, so a reader never sees half.
        cache = self._cache()
        aside = cache.with_name(f".{cache.name}.{os.getpid()}")
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            aside.write_text(f"{self._identity}\n{self._version}\n")
            os.replace(aside, cache)
        except OSError:
            aside.unlink(missing_ok=True)  # an unwritable cache only means asking again next time
