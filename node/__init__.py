"""Talking to one Cassandra node: what `casstrace run` needs besides the probes.

Holds: finding the Cassandra JVM in /proc (jvm.py), cqlsh-style connection settings (connection.py),
running the query and measuring its payload (query.py, statements.py: only SELECT), the context a
trace records about the node (context.py), and the run routine that drives a capture backend
around the executions into a trace (runner.py).
May import: casstrace.probes, casstrace.traces, errors, paths, phases. Never analyses, reports,
sandbox or cli.
"""
