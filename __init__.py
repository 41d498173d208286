"""casstrace: on-node I/O diagnosis for Apache Cassandra.

Data flows one way: probes (what the kernel tells us) -> traces (the trace file) ->
analyses (pure functions from a trace to findings) -> reports (one module per format).
cli/ is a thin click layer over them, one module per command.
"""

__version__ = "0.1.0"
