"""The consistency levels a query can run at, by name (the driver's own list): what `run
--consistency` and `compare --after-consistency` accept. Apart from node.query so that parsing
those options loads only the driver's top package, not its cluster machinery (~0.1 s, which
`casstrace run` spends compiling its probes meanwhile)."""

from cassandra import ConsistencyLevel

CONSISTENCY_LEVELS = sorted(ConsistencyLevel.name_to_value)
