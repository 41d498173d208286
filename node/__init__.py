"""Talking to one Cassandra node: what `casstrace run` and `casstrace watch` need besides the probes.

Holds: finding the Cassandra JVM in /proc and its threads (jvm.py), cqlsh-style connection settings
(connection.py; segments.py reassembles protocol-v5 segments in linear time), running the query and
measuring its payload (query.py, statements.py: only SELECT; statements normalized for watch) in
pages bounded in bytes (paging.py), the context a trace records about the node (context.py), the run
routine that drives a capture backend around the executions into a trace (runner.py), the node's
probabilistic tracing and its sampled sessions (tracing.py), its busy thread pools by role
(thread_pools.py), the watch routine (watcher.py), and for
a run of several nodes: the replicas of the queried partition (replicas.py), which of them are
captured and how (targets.py), and the capture agents that capture them on the same windows,
here or over ssh (agents.py).
May import: casstrace.probes, casstrace.traces, errors, paths, phases. Never analyses, reports,
sandbox or cli.
"""
