"""What every thread of a watched node read, by table and SSTable component (sampled or not,
requests or compaction alike): the per-table figures `watch --metrics-port` exports beside the
per-statement ones of analyses.watch."""

from collections import defaultdict
from dataclasses import dataclass

from casstrace.analyses.watch import WatchInputs
from casstrace.traces.schema import PAGE_BYTES


@dataclass(frozen=True)
class TableRead:
    table: str  # 'ks.table' (or ks.table.index)
    component: str  # 'Data', 'Index', 'Partitions', ...
    data_read_bytes: int  # what read syscalls returned, plus page-cache fills beyond it
    syscall_bytes: int
    cache_miss_bytes: int


def table_reads(inputs: WatchInputs) -> list[TableRead]:
    """The watch's SSTable bytes by table and component, most first."""
    totals: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for row in inputs.thread_io:
        name = inputs.sstables.get(row.file_id)
        if name is None:
            continue
        figures = totals[(name.owner, name.component)]
        figures[0] += row.data_read_bytes
        figures[1] += row.read_bytes
        figures[2] += row.cache_miss_pages * PAGE_BYTES
    return sorted(
        (TableRead(table, component, *figures) for (table, component), figures in totals.items()),
        key=lambda read: (-read.data_read_bytes, read.table, read.component),
    )
