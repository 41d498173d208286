"""The capture backends, registered once: `--backend NAME` picks one of BACKENDS.

Each is a Backend (a casstrace.probes.protocol.CaptureFactory with a name): called with the pid
(and where the process's data files are, and how many per-call records to keep), it makes a
Capture. It declares what it can do (`capabilities`, casstrace.traces.capabilities.Capability):
a caller that needs something of a backend asks for the capability, never for the backend's name,
and the backend's trace records the set (meta()). A backend's module is imported when a capture is
made, not when the backends are listed: `casstrace --help`, `compare` of two traces and every
command's option parsing list them, and the capture modules (with the trace writer and the BPF
program's layout) cost ~30 ms to import.
"""

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from casstrace.errors import CasstraceError
from casstrace.traces.capabilities import Capability, recorded
from casstrace.traces.schema import THREAD_SLOT_NS

if TYPE_CHECKING:
    from casstrace.probes.protocol import Capture, CaptureOptions

# Per-call records (reads, lseeks: the calls' log) a capture or an import keeps unless told otherwise
# (--stream-limit); the calls past it are counted, and every aggregate holds them all. Here rather than
# in protocol.py: `casstrace import` needs it and the backends, not the capture protocol.
DEFAULT_STREAM_LIMIT = 500_000


class Preparation(Protocol):
    """A backend's slow preparation, begun before the process to capture is known (see started)."""

    def close(self, wait: bool = False) -> None:
        """Give it up unless a capture took it; `wait`: until none of it runs any more."""
        ...


class Backend(ABC):
    """A capture backend (a CaptureFactory): what it is called, what it can do, how it captures."""

    name: str
    capabilities: frozenset[Capability]

    def __call__(
        self,
        pid: int,
        *,
        extra_dirs: Iterable[str | Path] = (),
        stream_limit: int | None = None,
        options: "CaptureOptions | None" = None,
        prepared: Preparation | None = None,
    ) -> "Capture":
        """A capture of `pid`; `prepared`: what prepare() returned, for a capture with the options it
        was prepared for."""
        missing = options.needs() - self.capabilities if options is not None else set()
        if missing:
            raise ValueError(f"the {self.name} backend cannot {', '.join(sorted(c.value for c in missing))}")
        return self._capture(pid, extra_dirs, stream_limit, options, prepared)

    @abstractmethod
    def _capture(
        self,
        pid: int,
        extra_dirs: Iterable[str | Path],
        stream_limit: int | None,
        options: "CaptureOptions | None",
        prepared: Preparation | None,
    ) -> "Capture": ...

    def prepare(self, thread_slot_ns: int = 0, kept: bool = False) -> Preparation | None:
        """Begin what takes long before the process is known, for a capture asking only `thread_slot_ns`
        of CaptureOptions (None: nothing takes long). `kept`: for every such capture in turn, until it
        is closed (a backend that cannot keep one prepares for the first only)."""
        return None

    def meta(self) -> dict[str, Any]:
        """What its traces record of it: meta `backend` and `capabilities`."""
        return {"backend": self.name, "capabilities": recorded(self.capabilities)}


class _Bcc(Backend):
    """eBPF tracepoints: exact aggregates in the kernel, page-cache misses."""

    name = "bcc"
    capabilities = frozenset(Capability)

    def _capture(
        self,
        pid: int,
        extra_dirs: Iterable[str | Path],
        stream_limit: int | None,
        options: "CaptureOptions | None",
        prepared: Preparation | None,
    ) -> "Capture":
        from casstrace.probes.bcc.bcc_capture import BccCapture, KeptProgram, ProgramBuild
        from casstrace.probes.protocol import CaptureOptions

        options = options or CaptureOptions()
        if prepared is not None and not isinstance(prepared, ProgramBuild | KeptProgram):
            raise TypeError(f"a bcc capture cannot take {prepared!r}")
        command = options.command
        kept = " (its command line kept whole, not redacted)" if options.command_kept_whole else ""
        return BccCapture(
            pid,
            extra_dirs=extra_dirs,
            stream_limit=stream_limit,
            build=prepared,
            follow_children=command is not None,
            until_exit=command is not None,
            source=options.source or (f"command {command} and its descendants{kept}" if command else None),
            process=command,
            thread_slot_ns=options.thread_slot_ns,
            all_syscalls=options.all_syscalls,
        )

    def prepare(self, thread_slot_ns: int = 0, kept: bool = False) -> Preparation:
        """Compile the BPF program (seconds of one core, the longest part of `casstrace run`); `kept`:
        attached once for every capture, detached once (its detach is most of a `run`'s time)."""
        from casstrace.probes.bcc.bcc_capture import KeptProgram, ProgramBuild, ProgramOptions

        options = ProgramOptions(thread_slot_ns=thread_slot_ns)
        return KeptProgram(options) if kept else ProgramBuild(options)


class _Sysdig(Backend):
    """`sysdig -w`, then the .scap importer: no page-cache measure."""

    name = "sysdig"
    capabilities = frozenset({Capability.PER_CALL_OFFSETS})

    def _capture(
        self,
        pid: int,
        extra_dirs: Iterable[str | Path],
        stream_limit: int | None,
        options: "CaptureOptions | None",
        prepared: Preparation | None,
    ) -> "Capture":
        from casstrace.probes.sysdig.sysdig_capture import SysdigCapture

        return SysdigCapture(
            pid, extra_dirs=extra_dirs, stream_limit=stream_limit, source=options.source if options else None
        )


BCC, SYSDIG = _Bcc(), _Sysdig()
BACKENDS: dict[str, Backend] = {backend.name: backend for backend in (BCC, SYSDIG)}
DEFAULT_BACKEND = BCC.name


def backend(name: str) -> Backend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise CasstraceError(f"no capture backend named {name!r}", f"choose one of: {', '.join(BACKENDS)}") from None


def run_thread_slot_ns(capabilities: frozenset[Capability]) -> int:
    """The per-thread slot `casstrace run` asks of a backend (CaptureOptions.thread_slot_ns), so each
    execution is charged only its own threads' reads (analyses.attribution); 0 where it cannot count."""
    return THREAD_SLOT_NS if Capability.THREAD_IO in capabilities else 0


def backends_with(capability: Capability) -> list[str]:
    """The names of the backends that have `capability` (for a refusal's fix)."""
    return [name for name, found in BACKENDS.items() if capability in found.capabilities]


class StartedBackend:
    """A backend whose slow preparation began before the process to capture is known (see
    started): a CaptureFactory that hands the preparation to the first capture it makes, or, `kept`,
    to every capture it makes with the options `run` asks, one after another (the bcc program
    attached once for all the runs of one command, and detached once, at release())."""

    def __init__(self, factory: Backend, kept: bool = False):
        self.factory = factory
        self.capabilities = factory.capabilities
        self.kept = kept
        self.thread_slot_ns = run_thread_slot_ns(factory.capabilities)  # prepared for what `run` asks
        self._prepared = factory.prepare(self.thread_slot_ns, kept)

    def __call__(
        self,
        pid: int,
        *,
        extra_dirs: Iterable[str | Path] = (),
        stream_limit: int | None = None,
        options: "CaptureOptions | None" = None,
    ) -> "Capture":
        asked = (
            (options.command, options.thread_slot_ns, options.all_syscalls) if options is not None else (None, 0, False)
        )
        if self._prepared is None or stream_limit is not None or asked != (None, self.thread_slot_ns, False):
            return self.factory(pid, extra_dirs=extra_dirs, stream_limit=stream_limit, options=options)
        prepared = self._prepared
        if not self.kept:
            self._prepared = None
        return self.factory(pid, extra_dirs=extra_dirs, options=options, prepared=prepared)

    def release(self, wait: bool = False) -> None:
        """Give up the preparation if no capture took it, or the kept one (detached now); `wait`: until
        none of it runs any more (a run that captures otherwise, through agents, before its measured
        executions: the runs after it prepare their own)."""
        prepared, self._prepared = self._prepared, None
        if prepared is not None:
            prepared.close(wait)


@contextmanager
def started(name: str) -> Iterator[StartedBackend]:
    """The backend `name` with its slow preparation begun now, in the background, for the first
    capture it makes: bcc compiles its program while the caller connects and looks for the process.
    A preparation no capture took is given up on leaving the block (without waiting for it)."""
    prepared = StartedBackend(backend(name))
    try:
        yield prepared
    finally:
        prepared.release()
