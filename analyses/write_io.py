"""Each file's writes over the analysed windows (trace format 5): bytes its write syscalls wrote, pages
the process dirtied in the page cache (by those writes, and by stores into a shared mapping: the
mapped commit log), bytes the kernel wrote back to the device, and the sync calls with their latency.

A figure a capture did not take is None with why (`WriteIO.unmeasured`), never 0: a capture of
syscalls only (sysdig) sees writes, never the page cache's dirtying or writeback, nor (sysdig) a sync's file.
"""

import re

from casstrace.analyses.model import FileWrites, WriteIO
from casstrace.analyses.percentiles import histogram_percentile
from casstrace.analyses.spectrogram import bucket_upper_ns
from casstrace.traces import Trace, queries
from casstrace.traces.capabilities import Capability
from casstrace.traces.schema import PAGE_BYTES

# A commit-log segment: CommitLog-<version>-<id>.log under the node's commitlog directory
COMMITLOG_SEGMENT = re.compile(r"(?:^|/)CommitLog-\d+-\d+\.log$")


def is_commitlog_segment(path: str) -> bool:
    return COMMITLOG_SEGMENT.search(path) is not None


# the meta measures of the write path, with what each figure is called in a report
WRITE_MEASURES = {"dirtied": "pages dirtied (mapped too)", "written_back": "bytes written back", "syncs": "sync calls"}

# why a capture that sees syscalls only (no page cache) cannot see each
UNSEEN_BY_SYSCALLS = {
    "dirtied": "not visible to a syscall capture",
    "written_back": "not visible to a syscall capture",
    "syncs": "not visible to a syscall capture: its records of sync calls carry no file",
}

# why a file's bytes written back are not measured though the capture took them
OFF_EXT4 = "measured on ext4 only: not for a file on another file system (tmpfs, xfs, btrfs)"


def write_io(trace: Trace, window_ids: list[int]) -> WriteIO:
    """The files' writes in those windows."""
    measured = {name: trace.measured(name) for name in WRITE_MEASURES}
    histograms: dict[int, dict[int, int]] = {}
    for file_id, _syscall, bucket, calls in queries.sync_latency(trace, window_ids):
        histogram = histograms.setdefault(file_id, {})
        histogram[bucket] = histogram.get(bucket, 0) + calls
    nodes = queries.file_node_addresses(trace)
    found = []
    for row in queries.file_totals(trace, window_ids):
        dirtied = (row.dirtied_pages or 0) * PAGE_BYTES if measured["dirtied"] else None
        # NULL where measured: the file lies on a file system whose writeback the capture cannot see
        written_back = row.written_back_bytes if measured["written_back"] else None
        syncs = (row.sync_calls or 0) if measured["syncs"] else None
        if row.kind not in ("file", "unknown") or not (row.write_calls or dirtied or written_back or syncs):
            continue
        histogram = histograms.get(row.file_id, {})
        p50, p99 = (histogram_percentile(histogram, fraction) for fraction in (0.50, 0.99))
        found.append(
            FileWrites(
                file_id=row.file_id,
                path=row.path,
                node=nodes.get(row.file_id),
                write_calls=row.write_calls,
                written_bytes=row.write_bytes,
                dirtied_bytes=dirtied,
                mapped_dirtied_bytes=(row.mapped_dirtied_pages or 0) * PAGE_BYTES if measured["dirtied"] else None,
                written_back_bytes=written_back,
                sync_calls=syncs,
                sync_ns=(row.sync_ns or 0) if measured["syncs"] else None,
                sync_p50_ns=bucket_upper_ns(p50) if p50 is not None else None,
                sync_p99_ns=bucket_upper_ns(p99) if p99 is not None else None,
            )
        )
    found.sort(key=lambda f: f.written_bytes + (f.dirtied_bytes or 0) + (f.written_back_bytes or 0), reverse=True)
    unmeasured = _unmeasured(trace, measured)
    if measured["written_back"] and any(f.written_back_bytes is None for f in found):
        unmeasured[WRITE_MEASURES["written_back"]] = OFF_EXT4
    return WriteIO(found, unmeasured)


def _unmeasured(trace: Trace, measured: dict[str, bool]) -> dict[str, str]:
    syscalls_only = not trace.captured_with(Capability.PAGE_CACHE_FILLS)
    backend = trace.meta.get("backend", "capture")
    why = {}
    for name, label in WRITE_MEASURES.items():
        if measured[name]:
            continue
        if syscalls_only:
            what, colon, more = UNSEEN_BY_SYSCALLS[name].partition(":")
            why[label] = f"{what} ({backend}){colon}{more}"
        elif name in trace.meta.get("measures", {}):
            why[label] = "this kernel has no tracepoint for it"
        else:
            why[label] = "not measured (a trace from before format 5)"
    return why
