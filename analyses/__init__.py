"""Pure functions from a trace (casstrace.traces.Trace) to findings.

Holds: analyse() and what it combines: per-file I/O (file_io.py), amplification and the verdict
(amplification.py, causes.py), access patterns (access.py), latency spectrograms (spectrogram.py),
the query's table (query.py), comparisons and sweeps of several traces (compare.py, sweep.py), the
Java stacks of the reads (profile.py), the statements a watch ranks (watch.py), and the model the
reports render (model.py, units.py).
May import: casstrace.traces (to read a trace), errors. Never probes, node, sandbox, reports or cli.

Public API:
    analyse(trace_or_path, threshold=10.0, min_excess=64 KiB) -> Analysis   every analysis of one trace
    Analysis and its parts (FileIO, SSTableIO, AccessPattern, Spectrogram, Amplification, Execution,
    Finding, Verdict) in casstrace.analyses.model; casstrace.reports renders them.
"""

from casstrace.analyses.analysis import DEFAULT_THRESHOLD, analyse
from casstrace.analyses.causes import DEFAULT_MIN_EXCESS
from casstrace.analyses.model import (
    AccessPattern,
    Amplification,
    Analysis,
    Execution,
    FileIO,
    Finding,
    Spectrogram,
    SSTableIO,
    Verdict,
)

__all__ = [
    "analyse",
    "DEFAULT_THRESHOLD",
    "DEFAULT_MIN_EXCESS",
    "Analysis",
    "AccessPattern",
    "Amplification",
    "Execution",
    "FileIO",
    "Finding",
    "Spectrogram",
    "SSTableIO",
    "Verdict",
]
