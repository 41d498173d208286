"""The capture backends, registered once: `--backend NAME` picks one of BACKENDS.

Each is a casstrace.probes.protocol.CaptureFactory: called with the pid (and where the process's
data files are, and how many per-call records to keep), it makes a Capture. Neither module imports
its tracer (bcc, sysdig) until a capture starts, so listing them costs nothing.
"""

from casstrace.errors import CasstraceError
from casstrace.probes.bcc_capture import BccCapture
from casstrace.probes.protocol import CaptureFactory
from casstrace.probes.sysdig_capture import SysdigCapture

BACKENDS: dict[str, CaptureFactory] = {
    "bcc": BccCapture,         # eBPF tracepoints: exact aggregates in the kernel, page-cache misses
    "sysdig": SysdigCapture,   # `sysdig -w`, then the .scap importer: no page-cache measure
}
DEFAULT_BACKEND = "bcc"


def backend(name: str) -> CaptureFactory:
    try:
        return BACKENDS[name]
    except KeyError:
        raise CasstraceError(f"no capture backend named {name!r}",
                             f"choose one of: {', '.join(BACKENDS)}") from None
