"""The capture backends, registered once: `--backend NAME` picks one of BACKENDS.

Each is a casstrace.probes.protocol.CaptureFactory: called with the pid (and where the process's
data files are, and how many per-call records to keep), it makes a Capture. A backend's module is
imported when a capture is made, not when the backends are listed: `casstrace --help`, `compare`
of two traces and every command's option parsing list them, and the capture modules (with the
trace writer and the BPF program's layout) cost ~30 ms to import.
"""

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from casstrace.errors import CasstraceError

if TYPE_CHECKING:
    from casstrace.probes.bcc_capture import ProgramBuild
    from casstrace.probes.protocol import Capture, CaptureFactory


def _bcc(pid: int, *, extra_dirs: Iterable[str | Path] = (), stream_limit: int | None = None) -> "Capture":
    """eBPF tracepoints: exact aggregates in the kernel, page-cache misses."""
    from casstrace.probes.bcc_capture import BccCapture
    return BccCapture(pid, extra_dirs=extra_dirs, stream_limit=stream_limit)


def _sysdig(pid: int, *, extra_dirs: Iterable[str | Path] = (), stream_limit: int | None = None) -> "Capture":
    """`sysdig -w`, then the .scap importer: no page-cache measure."""
    from casstrace.probes.sysdig_capture import SysdigCapture
    return SysdigCapture(pid, extra_dirs=extra_dirs, stream_limit=stream_limit)


BACKENDS: "dict[str, CaptureFactory]" = {"bcc": _bcc, "sysdig": _sysdig}
DEFAULT_BACKEND = "bcc"


def backend(name: str) -> "CaptureFactory":
    try:
        return BACKENDS[name]
    except KeyError:
        raise CasstraceError(f"no capture backend named {name!r}",
                             f"choose one of: {', '.join(BACKENDS)}") from None


class StartedBackend:
    """A backend whose slow preparation began before the process to capture is known (see
    started): a CaptureFactory that hands the preparation to the first capture it makes."""

    def __init__(self, factory: "CaptureFactory", build: "ProgramBuild | None" = None):
        self.factory = factory
        self._build = build

    def __call__(self, pid: int, *, extra_dirs: Iterable[str | Path] = (),
                 stream_limit: int | None = None) -> "Capture":
        if self._build is None or stream_limit is not None:   # built for the default stream limit
            return self.factory(pid, extra_dirs=extra_dirs, stream_limit=stream_limit)
        from casstrace.probes.bcc_capture import BccCapture

        build, self._build = self._build, None
        return BccCapture(pid, extra_dirs=extra_dirs, build=build)

    def release(self, wait: bool = False) -> None:
        """Give up the preparation if no capture took it; `wait`: until none of it runs any more (a run
        that captures otherwise, through agents, before its measured executions)."""
        build, self._build = self._build, None
        if build is not None:
            build.close(wait)


@contextmanager
def started(name: str) -> Iterator[StartedBackend]:
    """The backend `name` with its slow preparation begun now, in the background, for the first
    capture it makes: bcc compiles its program (seconds of one core, the longest part of `casstrace
    run`) while the caller connects and looks for the process. A program no capture took is freed
    on leaving the block (once its compile ends, without waiting for it)."""
    factory = backend(name)
    if factory is not _bcc:
        yield StartedBackend(factory)
        return
    from casstrace.probes.bcc_capture import ProgramBuild

    prepared = StartedBackend(factory, ProgramBuild())
    try:
        yield prepared
    finally:
        prepared.release()
