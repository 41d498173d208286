"""The trace file format: see casstrace.traces.schema for its documentation.

Holds: the schema (documented and versioned), TraceWriter (a trace is either absent or whole),
Trace (the reader and the only place that opens a trace file), the typed read API the analyses
query a trace with (queries.py), the typed rows a capture hands the
writer (rows.py) and the structured meta values (meta.py), SSTable file names (sstable_names.py),
what a watch trace adds (activities.py), what the backend could do (capabilities.py), several
nodes' traces merged into one (merge.py), and when a thread served a traced request (serving.py).
May import: casstrace's errors, outputs (how a file is replaced) and __version__ only: every other
layer builds on this one.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from casstrace.traces.reader import Trace
    from casstrace.traces.schema import FORMAT_VERSION
    from casstrace.traces.writer import TraceWriter

__all__ = ["Trace", "TraceWriter", "FORMAT_VERSION"]


def __getattr__(name: str) -> Any:
    """Each name loads its module on first use: a command that only writes a trace (casstrace import,
    which competes with sysdig's whole run) does not pay for the reader and its meta types."""
    if name == "Trace":
        from casstrace.traces.reader import Trace

        return Trace
    if name == "TraceWriter":
        from casstrace.traces.writer import TraceWriter

        return TraceWriter
    if name == "FORMAT_VERSION":
        from casstrace.traces.schema import FORMAT_VERSION

        return FORMAT_VERSION
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
