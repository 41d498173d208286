"""Per-file I/O (sysdig's topfiles_bytes, done better), grouped by SSTable and component."""

from casstrace.analyses import pages
from casstrace.analyses.model import FileIO, SSTableIO
from casstrace.traces import Trace, queries
from casstrace.traces.sstable_names import parse_sstable_path


def page_runs(
    trace: Trace, window_ids: list[int], source: str | None = None, file_ids: list[int] | None = None
) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """Merged coverage runs keyed by (window_id, file_id), for one source or both, of every file or
    of `file_ids` (found through the coverage_file index)."""
    runs: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for window_id, file_id, first_page, page_count in queries.coverage_runs(trace, window_ids, source, file_ids):
        runs.setdefault((window_id, file_id), []).append((first_page, page_count))
    return {key: pages.merge(value) for key, value in runs.items()}


def file_io(trace: Trace, window_ids: list[int]) -> list[FileIO]:
    """Every file with I/O in the windows, most bytes first."""
    page_cache_measured = trace.measured("page_cache")
    mapped_measured = trace.measured("mapped")
    touched = _touched_pages(trace, window_ids)
    sizes = _read_sizes(trace, window_ids)
    nodes = queries.file_node_addresses(trace)
    found = []
    for row in queries.file_totals(trace, window_ids):
        mapped = (row.mapped_touched_bytes or 0) if mapped_measured else None
        cache_miss = row.cache_miss_bytes if page_cache_measured else None
        if cache_miss is None and page_cache_measured and mapped:
            cache_miss = 0  # a row only the mapped-pages measure wrote (a file seen only through its map): no fill
        if not (row.read_calls or row.write_calls or row.lseek_calls or cache_miss or mapped):
            continue
        size = row.size_bytes
        runs = touched.get(row.file_id)
        touched_bytes = pages.bytes_within(runs, size) if runs else None
        found.append(
            FileIO(
                file_id=row.file_id,
                path=row.path,
                kind=row.kind,
                size_bytes=size,
                sstable=parse_sstable_path(row.path) if row.kind == "file" else None,
                read_calls=row.read_calls,
                read_bytes=row.read_bytes,
                read_requested_bytes=row.read_requested_bytes,
                read_ns=row.read_ns,
                write_calls=row.write_calls,
                write_bytes=row.write_bytes,
                lseek_calls=row.lseek_calls,
                seek_jumps=row.seek_jumps,
                longest_sequential_bytes=row.longest_sequential_bytes,
                cache_miss_bytes=cache_miss,
                mapped_touched_bytes=mapped,
                touched_bytes=touched_bytes,
                coverage=touched_bytes / size if touched_bytes is not None and size else None,
                read_sizes=sizes.get(row.file_id, {}),
                node=nodes.get(row.file_id),
            )
        )
    found.sort(
        key=lambda f: (
            f.read_bytes + (f.cache_miss_bytes or 0) + (f.mapped_touched_bytes or 0) + f.write_bytes,
            f.read_calls,
        ),
        reverse=True,
    )
    return found


def _touched_pages(trace: Trace, window_ids: list[int]) -> dict[int, list]:
    """Distinct pages per file touched by read syscalls or page-cache fills in any of the windows."""
    by_file: dict[int, list] = {}
    for file_id, first_page, page_count in queries.distinct_coverage(trace, window_ids):
        by_file.setdefault(file_id, []).append((first_page, page_count))
    return {file_id: pages.merge(runs) for file_id, runs in by_file.items()}


def _read_sizes(trace: Trace, window_ids: list[int]) -> dict[int, dict[int, int]]:
    sizes: dict[int, dict[int, int]] = {}
    for file_id, log2_bucket, reads in queries.read_size_counts(trace, window_ids):
        sizes.setdefault(file_id, {})[log2_bucket] = reads
    return sizes


def group_by_sstable(files: list[FileIO]) -> list[SSTableIO]:
    """SSTable component files grouped per SSTable, the SSTables with most bytes read first."""
    groups: dict[tuple, SSTableIO] = {}
    for f in files:
        if f.sstable is None:
            continue
        name = f.sstable
        group = groups.setdefault(
            name.sstable,
            SSTableIO(
                keyspace=name.keyspace,
                table=name.table,
                index=name.index,
                generation=name.generation,
                format=name.format,
                version=name.version,
                files=[],
            ),
        )
        group.files.append(f)
    return sorted(
        groups.values(),
        key=lambda g: (
            (g.total("read_bytes") or 0) + (g.total("cache_miss_bytes") or 0) + (g.total("mapped_touched_bytes") or 0)
        ),
        reverse=True,
    )
