"""Local Cassandra nodes for the demo, the tests and `casstrace sweep`, under one data directory each.

Holds: the jars from Maven Central (artifacts.py) and the versions and Java each series runs on
(versions.py, java.py), the node's configuration (config.py, settings.py), start/stop/status and
nodetool (control.py), cqlsh-like statements (cql.py), the demo tables (demo.py), the sweep's
loads and runs (sweep.py; the many-columns study's, layouts.py; the many-tables study's, tables.py),
and a bounded workload at fixed rates (workload.py: watch's tests and benchmark).
May import: casstrace.node (to find, query and trace its node), errors, paths. Never probes,
traces, analyses, reports or cli directly.
"""
