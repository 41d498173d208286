"""Pure functions from a trace (casstrace.traces.Trace) to findings.

Holds: analyse() and what it combines: per-file I/O (file_io.py), amplification and the verdict
(amplification.py, causes.py), access patterns (access.py), latency spectrograms (spectrogram.py),
the query's table (query.py), comparisons and sweeps of several traces (compare.py, sweep.py), the
Java stacks of the reads (profile.py), the statements a watch ranks (watch.py), and the model the
reports render (model.py, units.py).
May import: casstrace.traces (to read a trace), errors. Never probes, node, sandbox, reports or cli.

Public API:
    analyse(trace_or_path, rule=VerdictRule()) -> Analysis   every analysis of one trace
    VerdictRule(threshold=10.0, min_excess=64 KiB)            --threshold and --min-excess: the one rule of
                                                              every verdict (run, compare, sweep, watch)
    judge(rule, data_read, necessary, executions, ...)        its status: flagged | not flagged | undetermined
    Analysis and its parts (FileIO, SSTableIO, AccessPattern, Spectrogram, Amplification, Execution,
    Finding, Verdict) in casstrace.analyses.model; casstrace.reports renders them.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from casstrace.analyses.analysis import analyse
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
    from casstrace.analyses.verdict_rule import VerdictRule, judge

__all__ = [
    "analyse",
    "VerdictRule",
    "judge",
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

# Each name loads its module on first use: a command that needs one module of the analyses (run's
# options need verdict_rule's) does not load them all (analyse() loads most: ~0.1 s).
_MODULE_OF = {"analyse": "analysis", "VerdictRule": "verdict_rule", "judge": "verdict_rule"}
_MODULE_OF.update((name, "model") for name in __all__ if name not in _MODULE_OF)


def __getattr__(name: str) -> Any:
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_MODULE_OF[name]}"), name)
