"""The trace file format: see casstrace.traces.schema for its documentation.

Holds: the schema (documented and versioned), TraceWriter (a trace is either absent or whole),
Trace (the reader and the only place that opens a trace file), the typed read API the analyses
query a trace with (queries.py), the typed rows a capture hands the
writer (rows.py) and the structured meta values (meta.py), SSTable file names (sstable_names.py),
what a watch trace adds (activities.py), what the backend could do (capabilities.py), several
nodes' traces merged into one (merge.py), when a thread served a traced request (serving.py), and
what each thread of a node does, from its name, per Cassandra version (thread_roles.py).
May import: casstrace's errors, outputs (how a file is replaced) and __version__ only: every other
layer builds on this one.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from casstrace.traces.reader import Trace
    from casstrace.traces.schema import FORMAT_VERSION
    from casstrace.traces.writer import TraceWriter

__all__ = ["Trace", "TraceWriter", "FORMAT_VERSION"]

# Each name loads its module on first use: a command that only writes a trace (casstrace import, which
# competes with sysdig's whole run) does not pay for the reader and its meta types.
_MODULE_OF = {"Trace": "reader", "TraceWriter": "writer", "FORMAT_VERSION": "schema"}


def __getattr__(name: str) -> Any:
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_MODULE_OF[name]}"), name)
