"""What every thread of a watched node read, by table and SSTable component (sampled or not,
requests or compaction alike): the per-table figures `watch --metrics-port` exports beside the
per-statement ones of analyses.watch."""

from dataclasses import dataclass

from casstrace.analyses.watch import WatchTally


@dataclass(frozen=True)
class TableRead:
    table: str  # 'ks.table' (or ks.table.index)
    component: str  # 'Data', 'Index', 'Partitions', ...
    data_read_bytes: int  # what read syscalls returned, plus page-cache fills beyond it
    syscall_bytes: int
    cache_miss_bytes: int


def table_reads(tallied: WatchTally) -> list[TableRead]:
    """The watch's SSTable bytes by table and component, most first."""
    return sorted(
        (
            TableRead(table, component, *(round(figure) for figure in figures))
            for (table, component), figures in tallied.tables.items()
        ),
        key=lambda read: (-read.data_read_bytes, read.table, read.component),
    )
