"""What Cassandra's trace events say in numbers (system_traces.events activities); the threads they
name are traces.thread_roles'.

Read by the analyses from a run trace's query_trace, and by `casstrace watch` as it reads sampled
sessions, which keeps these numbers and never the activity texts (they can quote literals).
"""

import re

LIVE_AND_TOMBSTONES = re.compile(r"Read (\d+) live rows? and (\d+) tombstone cells?", re.IGNORECASE)
MERGED_SSTABLES = re.compile(r"Merged data from memtables and (\d+) sstables", re.IGNORECASE)
# A mutation applied on a node: one per partition (and keyspace) a write touches, on each replica. The
# time to the thread's next event is the append, and under `commitlog_sync: batch` or `group` the wait
# for the segment's sync (Keyspace.apply traces before CommitLog.add, then "Adding to ... memtable").
COMMITLOG_APPEND = re.compile(r"^Appending to commitlog$", re.IGNORECASE)
# The statement of a driver's batch (a BATCH message): its session names neither the statements nor
# their count, only that it was one (the analyses count its mutations).
DRIVER_BATCH_STATEMENT = "BEGIN BATCH … APPLY BATCH"
