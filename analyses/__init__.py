"""Pure functions from a trace (casstrace.traces.Trace) to findings. Never imports probes, node or sandbox.

Public API:
    analyse(trace_or_path, threshold=10.0) -> Analysis   every analysis of one trace
    Analysis and its parts (FileIO, SSTableIO, AccessPattern, Spectrogram, Amplification, Execution,
    Finding, Verdict) in casstrace.analyses.model; casstrace.reports renders them.
"""

from casstrace.analyses.analysis import DEFAULT_THRESHOLD, analyse
from casstrace.analyses.model import (AccessPattern, Amplification, Analysis, Execution, FileIO, Finding,
                                      Spectrogram, SSTableIO, Verdict)

__all__ = ["analyse", "DEFAULT_THRESHOLD", "Analysis", "AccessPattern", "Amplification", "Execution", "FileIO",
           "Finding", "Spectrogram", "SSTableIO", "Verdict"]
