"""The trace file format: see casstrace.traces.schema for its documentation."""

from casstrace.traces.reader import Trace
from casstrace.traces.schema import FORMAT_VERSION
from casstrace.traces.writer import TraceWriter

__all__ = ["Trace", "TraceWriter", "FORMAT_VERSION"]
