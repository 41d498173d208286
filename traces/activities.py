"""What Cassandra's trace events say in numbers (system_traces.events activities); the threads they
name are traces.thread_roles'.

Read by the analyses from a run trace's query_trace, and by `casstrace watch` as it reads sampled
sessions, which keeps these numbers and never the activity texts (they can quote literals).
"""

import re

LIVE_AND_TOMBSTONES = re.compile(r"Read (\d+) live rows? and (\d+) tombstone cells?", re.IGNORECASE)
MERGED_SSTABLES = re.compile(r"Merged data from memtables and (\d+) sstables", re.IGNORECASE)
