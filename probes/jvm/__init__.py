"""The JVM's own view: async-profiler loaded into the node (async_profiler), its JFR recordings (jfr)
and the Java stacks read from them (java_stacks).

Part of probes/: may import what probes/ may (see probes/__init__.py)."""
