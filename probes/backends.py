"""The capture backends, registered once: `--backend NAME` picks one of BACKENDS.

Each is a casstrace.probes.protocol.CaptureFactory: called with the pid (and where the process's
data files are, and how many per-call records to keep), it makes a Capture. A backend's module is
imported when a capture is made, not when the backends are listed: `casstrace --help`, `compare`
of two traces and every command's option parsing list them, and the capture modules (with the
trace writer and the BPF program's layout) cost ~30 ms to import.
"""

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from casstrace.errors import CasstraceError

if TYPE_CHECKING:
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
