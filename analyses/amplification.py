"""Amplification: bytes read from the queried table's Data files against the bytes the query returned.

Bytes read = what read syscalls returned from the table's Data files, plus the pages the page cache
filled for those files outside the pages the syscalls returned (reads through mmap, readahead beyond
the requested range): both are I/O the query caused. The figure is divided by the payload the client
received (the serialized values), or, when there is no payload (a sysdig import), by the bytes the node
wrote to the client connection.
"""

from casstrace.analyses import pages
from casstrace.analyses.file_io import page_runs, sql_in
from casstrace.analyses.model import Amplification, Execution
from casstrace.traces import Trace
from casstrace.traces.sstable_names import SSTableName, parse_sstable_path

SYSTEM_KEYSPACES = {"system", "system_schema", "system_traces", "system_auth", "system_distributed",
                    "system_views", "system_virtual_schema", "system_cluster_metadata"}
DEFAULT_NATIVE_PORT = 9042


def data_files(trace: Trace, keyspace: str | None, table: str | None) -> dict[int, SSTableName]:
    """The Data components of the queried table's SSTables (secondary indexes excluded), by file_id.

    Without a known table (an import of an arbitrary capture), every user table's Data files."""
    chosen = {}
    for row in trace.rows("SELECT file_id, path FROM files WHERE kind = 'file'"):
        name = parse_sstable_path(row["path"])
        if name is None or name.component != "Data" or name.index is not None:
            continue
        if table is None:
            if name.keyspace not in SYSTEM_KEYSPACES:
                chosen[row["file_id"]] = name
        elif name.table == table and (keyspace is None or name.keyspace == keyspace):
            chosen[row["file_id"]] = name
    return chosen


def amplification(trace: Trace, window_ids: list[int], data: dict[int, SSTableName], *,
                  payload_bytes: int | None, wire_bytes: int | None) -> Amplification:
    page_cache_measured = trace.measured("page_cache")
    window_condition, window_params = sql_in("window_id", window_ids)
    file_condition, file_params = sql_in("file_id", sorted(data))
    rows = trace.rows(
        f"SELECT file_id, SUM(read_bytes) AS read_bytes, SUM(cache_miss_bytes) AS cache_miss_bytes"
        f" FROM file_io WHERE {window_condition} AND {file_condition} GROUP BY file_id",
        window_params + file_params,
    )
    syscall_bytes = sum(row["read_bytes"] for row in rows)
    touched = {row["file_id"] for row in rows if row["read_bytes"] or row["cache_miss_bytes"]}
    cache_miss = outside = None
    if page_cache_measured:
        cache_miss = sum(row["cache_miss_bytes"] or 0 for row in rows)
        outside = _cache_fills_outside_syscall_pages(trace, window_ids, set(data))
    data_read = syscall_bytes + (outside or 0)

    basis: str | None
    basis_bytes: int | None
    if payload_bytes is not None:
        basis, basis_bytes = "payload", payload_bytes
    elif wire_bytes is not None:
        basis, basis_bytes = "wire", wire_bytes
    else:
        basis = basis_bytes = None

    def over(value: float | None, denominator: float | None) -> float | None:
        return value / denominator if value is not None and denominator else None

    return Amplification(
        basis=basis, basis_bytes=basis_bytes, payload_bytes=payload_bytes, wire_bytes=wire_bytes,
        syscall_bytes=syscall_bytes, cache_miss_bytes=cache_miss, cache_outside_syscall_bytes=outside,
        data_read_bytes=data_read,
        read=over(data_read, basis_bytes), syscall=over(syscall_bytes, basis_bytes),
        device=over(cache_miss, basis_bytes), wire=over(data_read, wire_bytes),
        data_files=len(touched),
        sstables_read=len({data[file_id].sstable for file_id in touched}),
    )


def _cache_fills_outside_syscall_pages(trace: Trace, window_ids: list[int], file_ids: set[int]) -> int:
    """Bytes of pages the page cache filled in a window that no read syscall returned in that window."""
    syscall = page_runs(trace, window_ids, "syscall")
    sizes = {row["file_id"]: row["size_bytes"] for row in trace.rows("SELECT file_id, size_bytes FROM files")}
    total = 0
    for (window_id, file_id), filled in page_runs(trace, window_ids, "page_cache").items():
        if file_id in file_ids:
            extra = pages.subtract(filled, syscall.get((window_id, file_id), []))
            total += pages.bytes_within(extra, sizes.get(file_id))
    return total


# -- which windows, which executions -------------------------------------------------------------

def executions(trace: Trace) -> list[dict]:
    return [dict(row) for row in trace.rows("SELECT * FROM executions ORDER BY execution")]


def scope(trace: Trace, rows: list[dict]) -> tuple[list[int], str]:
    """The windows the totals cover: the measured executions', else the whole capture."""
    measured = [row for row in rows if row["kind"] == "measured" and row["window_id"] is not None]
    if measured:
        count = len(measured)
        return [row["window_id"] for row in measured], f"{count} measured execution{'s' * (count != 1)}"
    all_windows = [row["window_id"] for row in trace.rows("SELECT window_id FROM windows ORDER BY window_id")]
    return all_windows, "the whole capture (no measured execution windows recorded)"


def client_wire_bytes(trace: Trace, window_ids: list[int]) -> int | None:
    """Bytes the node wrote to client connections (sockets on its native-transport port), when no
    execution records them. None when the backend did not measure socket writes."""
    if not trace.measured("wire"):
        return None
    port = str((trace.meta.get("node") or {}).get("port") or DEFAULT_NATIVE_PORT)
    condition, params = sql_in("io.window_id", window_ids)
    total = 0
    for row in trace.rows(
        f"SELECT f.local_addr, f.path, SUM(io.write_bytes) AS written FROM file_io io"
        f" JOIN files f ON f.file_id = io.file_id WHERE f.kind = 'socket' AND {condition} GROUP BY f.file_id",
        params,
    ):
        local = row["local_addr"] or row["path"].split("->")[0]
        if local.rsplit(":", 1)[-1] == port:
            total += row["written"]
    return total


def execution_results(trace: Trace, rows: list[dict], data: dict[int, SSTableName]) -> list[Execution]:
    results = []
    for row in rows:
        amp = None
        if row["window_id"] is not None:
            amp = amplification(trace, [row["window_id"]], data,
                                payload_bytes=row["payload_bytes"], wire_bytes=row["wire_bytes"])
        results.append(Execution(
            execution=row["execution"], kind=row["kind"], latency_s=row["latency_s"], rows=row["rows"],
            payload_bytes=row["payload_bytes"], wire_bytes=row["wire_bytes"], pages=row["pages"],
            error=row["error"], amplification=amp,
        ))
    return results
