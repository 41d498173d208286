"""What Cassandra's trace events say in numbers (system_traces.events activities), and what its
thread names say.

Read by the analyses from a run trace's query_trace, and by `casstrace watch` as it reads sampled
sessions, which keeps these numbers and never the activity texts (they can quote literals).
"""

import re

LIVE_AND_TOMBSTONES = re.compile(r"Read (\d+) live rows? and (\d+) tombstone cells?", re.IGNORECASE)
MERGED_SSTABLES = re.compile(r"Merged data from memtables and (\d+) sstables", re.IGNORECASE)

# Cassandra's shared worker pool (SEPWorker): its threads serve these stages in turn and rename
# themselves '<stage>-<worker id>' as they switch, the id staying the thread's own. So
# 'ReadStage-2' and 'Native-Transport-Requests-2' are one thread. Other pools name their threads
# '<pool>:<n>' (CompactionExecutor:1) and keep them.
SHARED_POOL_STAGES = (
    "ReadStage",
    "MutationStage",
    "CounterMutationStage",
    "ViewMutationStage",
    "Native-Transport-Requests",
    "Native-Transport-Auth-Requests",
    "RequestResponseStage",
)
_SHARED_WORKER = re.compile(rf"^(?:{'|'.join(map(re.escape, SHARED_POOL_STAGES))})-(\d+)$")


def shared_pool_worker(thread: str) -> int | None:
    """The worker id of a shared-pool thread name ('ReadStage-12' -> 12), None for other threads."""
    match = _SHARED_WORKER.match(thread)
    return int(match.group(1)) if match else None
