"""Traces built from known events, for the analyses and reports tests (numbers from the shared
Cassandra 5.0.9 captures: 200 rows, c0 = 100 B, c1..c19 = 50,000 B, LZ4 16 KiB chunks)."""

from casstrace.traces import TraceWriter

START_NS = 5_000_000_000
SLOT_NS = 100_000_000
MiB = 1 << 20
TABLE_DIR = "/var/lib/cassandra/data/demo/wide-1a81fdb0e66811f19555a79a9024071e"
DATA_PATH = f"{TABLE_DIR}/nb-13-big-Data.db"
INDEX_PATH = f"{TABLE_DIR}/nb-13-big-Index.db"
DATA_SIZE = 190_897_104
CLIENT_SOCKET = "tcp 127.0.0.1:9042->127.0.0.1:50412"
WIDE_ROWS, WIDE_PAYLOAD, WIDE_WIRE = 200, 20_000, 26_000
WIDE_DATA_READ, WIDE_DATA_CALLS = 62_574_072, 3_803


def wide_table_schema(table="wide", chunk_kb="16"):
    columns = [
        {"name": "id", "type": "int", "kind": "partition_key"},
        {"name": "ts", "type": "int", "kind": "clustering"},
    ]
    columns += [{"name": f"c{i}", "type": "blob", "kind": "regular"} for i in range(20)]
    return {
        "keyspace": "demo",
        "table": table,
        "columns": columns,
        "partition_key": ["id"],
        "clustering": ["ts"],
        "compression": {"class": "org.apache.cassandra.io.compress.LZ4Compressor", "chunk_length_in_kb": chunk_kb},
        "sstables": [{"path": DATA_PATH, "size": DATA_SIZE}],
    }


def _base_meta(writer, *, backend="bcc", source="pid 4242", measures=None, duration_ns=1_500_000_000, **extra):
    writer.set_meta(
        backend=backend,
        source=source,
        measures=measures or {"syscalls": True, "offsets": True, "page_cache": True, "latency": True, "wire": True},
        pid=4242,
        process="java -cp ... org.apache.cassandra.service.CassandraDaemon",
        capture_start_ns=START_NS,
        capture_end_ns=START_NS + duration_ns,
        slot_ns=SLOT_NS,
        heatmap_offset_bytes=MiB,
        **{"lost_events": 0, "unstreamed_events": 0, **extra},
    )


def _run_windows(writer, measured: dict, warmup: dict | None = None) -> tuple[int, int]:
    """warmup window (execution 1), a gap, the measured execution (2). Returns their window ids."""
    warmup_window = writer.add_window("warmup", START_NS, START_NS + 400_000_000, execution=1)
    writer.add_window("between", START_NS + 400_000_000, START_NS + 500_000_000)
    measured_window = writer.add_window("execution", START_NS + 500_000_000, START_NS + 1_500_000_000, execution=2)
    writer.add_execution(execution=1, kind="warmup", window_id=warmup_window, **(warmup or measured))
    writer.add_execution(execution=2, kind="measured", window_id=measured_window, **measured)
    return warmup_window, measured_window


MEASURED_WINDOW = 3  # _run_windows: warmup (1), between (2), the measured execution (3)


def timed_run(
    path,
    node_ns: float = 20_000_000,
    cpu_ns: float = 10_000_000,
    *,
    latency_s: float = 0.05,
    query: str = "SELECT * FROM casstrace_layouts.t WHERE pk = 0 LIMIT 20",
    threads: int = 3,
    rows: int = 20,
    payload_bytes: int = 30_000,
    **meta,
):
    """A run trace of one measured execution (window MEASURED_WINDOW, 1 s) with the node's time and its
    request pools' CPU, its round trip `latency_s`, the JVM's `threads` threads, and more `meta`."""
    writer = TraceWriter(path)
    _base_meta(writer, query=query, keyspace="demo", **meta)
    _run_windows(writer, {"latency_s": latency_s, "rows": rows, "payload_bytes": payload_bytes})
    writer.add_threads({4243 + i: f"ReadStage-{i}" for i in range(threads)})
    writer.add_window_measures(
        [
            {"window_id": MEASURED_WINDOW, "measure": "node_ns", "value": node_ns},
            {"window_id": MEASURED_WINDOW, "measure": "request_cpu_ns", "value": cpu_ns},
        ]
    )
    return writer.finish()


def wide_select_c0(
    path,
    *,
    query="SELECT c0 FROM demo.wide WHERE id = 1",
    table_schema=None,
    payload=WIDE_PAYLOAD,
    data_read=WIDE_DATA_READ,
    query_trace=None,
    rows=WIDE_ROWS,
):
    """bcc-style trace of the full-row read: warm cache, 3,803 preads of Data.db, per-call events of
    Data.db not streamed (heat map only), those of Index.db streamed."""
    writer = TraceWriter(path)
    _base_meta(
        writer,
        query=query,
        keyspace="demo",
        consistency="ONE",
        page_size=5000,
        node={"host": "127.0.0.1", "port": 9042, "pid": 4242},
        cassandra={
            "release_version": "5.0.9",
            "disk_access_mode": "mmap_index_only",
            "data_file_directories": ["/var/lib/cassandra/data"],
            "tables": [table_schema or wide_table_schema()],
        },
        query_trace=query_trace
        or [
            {
                "session_id": "3e1f",
                "duration_us": 850_000,
                "events": [
                    {
                        "activity": "Merged data from memtables and 1 sstables",
                        "source_elapsed_us": 900,
                        "thread": "ReadStage-2",
                    },
                    {
                        "activity": "Read 200 live rows and 0 tombstone cells",
                        "source_elapsed_us": 840_000,
                        "thread": "ReadStage-2",
                    },
                ],
            }
        ],
        unstreamed_events=2 * WIDE_DATA_CALLS,
    )
    data = writer.file_id(DATA_PATH, "file", size_bytes=DATA_SIZE, dev=2049, inode=11)
    index = writer.file_id(INDEX_PATH, "file", size_bytes=409_600, dev=2049, inode=12)
    client = writer.file_id(CLIENT_SOCKET, "socket", local_addr="127.0.0.1:9042", remote_addr="127.0.0.1:50412")
    cgroup = writer.file_id("/sys/fs/cgroup/memory.stat", "file", size_bytes=7_240)
    execution = {"latency_s": 0.9, "rows": rows, "payload_bytes": payload, "wire_bytes": WIDE_WIRE, "pages": 1}
    warmup, measured = _run_windows(writer, execution)
    data_pages = -(-data_read // 4096)
    for window, cache_miss in ((warmup, data_pages * 4096), (measured, 0)):
        writer.add_file_io(
            [
                {
                    "window_id": window,
                    "file_id": data,
                    "read_calls": WIDE_DATA_CALLS,
                    "read_bytes": data_read,
                    "read_requested_bytes": WIDE_DATA_CALLS * 16_454,
                    "read_ns": 120_000_000,
                    "seek_jumps": 1,
                    "longest_sequential_bytes": data_read,
                    "cache_miss_pages": cache_miss // 4096,
                    "cache_miss_bytes": cache_miss,
                },
                {
                    "window_id": window,
                    "file_id": index,
                    "read_calls": 2,
                    "read_bytes": 8_192,
                    "read_requested_bytes": 8_192,
                    "read_ns": 40_000,
                    "lseek_calls": 1,
                    "seek_jumps": 1,
                    "longest_sequential_bytes": 4_096,
                    "cache_miss_pages": 0,
                    "cache_miss_bytes": 0,
                },
                {
                    "window_id": window,
                    "file_id": client,
                    "write_calls": 1,
                    "write_bytes": WIDE_WIRE,
                    "read_calls": 1,
                    "read_bytes": 60,
                    "read_requested_bytes": 65_536,
                },
            ]
        )
        writer.add_read_sizes(
            [
                {"window_id": window, "file_id": data, "log2_bucket": 13, "count": 3_000},
                {"window_id": window, "file_id": data, "log2_bucket": 14, "count": WIDE_DATA_CALLS - 3_000},
            ]
        )
        writer.add_coverage(
            [{"window_id": window, "file_id": data, "source": "syscall", "first_page": 0, "page_count": data_pages}]
        )
    writer.add_file_io(
        [
            {
                "window_id": measured,
                "file_id": cgroup,
                "read_calls": 3,
                "read_bytes": 7_240,
                "read_requested_bytes": 12_288,
            }
        ]
    )
    writer.add_heatmap(
        [
            {
                "file_id": data,
                "source": "syscall",
                "slot": slot,
                "offset_bucket": bucket,
                "calls": 100,
                "bytes": 1_600_000,
            }
            for slot, bucket in ((5, 0), (6, 10), (7, 20), (8, 40), (9, 59))
        ]
    )
    writer.add_events(
        [
            (START_NS + 510_000_000, 77, "lseek", 41, index, 0, 0, 0, 800, None),
            (START_NS + 520_000_000, 77, "pread64", 41, index, 0, 4_096, 4_096, 30_000, None),
            (START_NS + 530_000_000, 77, "pread64", 41, index, 200_704, 4_096, 4_096, 10_000, None),
            (START_NS + 110_000_000, 77, "lseek", 41, index, 0, 0, 0, 800, None),
            (START_NS + 120_000_000, 77, "pread64", 41, index, 0, 4_096, 4_096, 30_000, None),
            (START_NS + 130_000_000, 77, "pread64", 41, index, 200_704, 4_096, 4_096, 10_000, None),
        ]
    )
    writer.add_threads({77: "ReadStage-2"})
    writer.add_latency(
        [
            {"slot": 6, "syscall": "pread64", "target": "file", "bucket": 45, "count": 3_000},
            {"slot": 7, "syscall": "pread64", "target": "file", "bucket": 50, "count": 803},
            {"slot": 6, "syscall": "futex", "target": "none", "bucket": 30, "count": 10},
            {"slot": 14, "syscall": "write", "target": "socket", "bucket": 40, "count": 1},
        ]
    )
    return writer.finish()


MMAP_DATA_PATH = f"{TABLE_DIR}/nb-14-big-Data.db"
MMAP_FILLED_PAGES = 46_000
PREAD_PATH = f"{TABLE_DIR}/nb-15-big-Data.db"


def wide_select_c0_mmap(path):
    """disk_access_mode mmap: no read syscalls on one Data file, only page-cache fills; a second
    SSTable read with pread whose readahead filled 30 pages beyond the 10 the syscalls returned."""
    writer = TraceWriter(path)
    _base_meta(
        writer,
        query="SELECT c0 FROM demo.wide WHERE id = 1",
        keyspace="demo",
        cassandra={"release_version": "5.0.9", "disk_access_mode": "mmap", "tables": [wide_table_schema()]},
    )
    mapped = writer.file_id(MMAP_DATA_PATH, "file", size_bytes=DATA_SIZE, dev=2049, inode=21)
    preads = writer.file_id(PREAD_PATH, "file", size_bytes=1_000_000, dev=2049, inode=22)
    execution = {
        "latency_s": 2.5,
        "rows": WIDE_ROWS,
        "payload_bytes": WIDE_PAYLOAD,
        "wire_bytes": WIDE_WIRE,
        "pages": 1,
    }
    _, measured = _run_windows(writer, execution)
    writer.add_file_io(
        [
            {
                "window_id": measured,
                "file_id": mapped,
                "cache_miss_pages": MMAP_FILLED_PAGES,
                "cache_miss_bytes": MMAP_FILLED_PAGES * 4096,
            },
            {
                "window_id": measured,
                "file_id": preads,
                "read_calls": 1,
                "read_bytes": 40_960,
                "read_requested_bytes": 40_960,
                "cache_miss_pages": 40,
                "cache_miss_bytes": 163_840,
            },
        ]
    )
    writer.add_coverage(
        [
            {
                "window_id": measured,
                "file_id": mapped,
                "source": "page_cache",
                "first_page": 0,
                "page_count": MMAP_FILLED_PAGES,
            },
            {"window_id": measured, "file_id": preads, "source": "syscall", "first_page": 0, "page_count": 10},
            {"window_id": measured, "file_id": preads, "source": "page_cache", "first_page": 0, "page_count": 40},
        ]
    )
    writer.add_heatmap(
        [
            {
                "file_id": mapped,
                "source": "page_cache",
                "slot": 6 + i,
                "offset_bucket": 30 * i,
                "calls": 11_000,
                "bytes": 45_000_000,
            }
            for i in range(4)
        ]
    )
    return writer.finish()


SYSDIG_CLIENT_WIRE = 25_000


def sysdig_import(path, *, cassandra=None):
    """A sysdig import: no executions, no query, page cache not measured, latency measured."""
    writer = TraceWriter(path)
    _base_meta(
        writer,
        backend="sysdig",
        source="import of cassandra5-fullrow-lz4.scap",
        measures={"syscalls": True, "offsets": True, "page_cache": False, "latency": True, "wire": True},
        clock_offset_ns=0,
        **({"cassandra": cassandra} if cassandra else {}),
    )
    window = writer.add_window("capture", START_NS, START_NS + 1_500_000_000)
    data = writer.file_id(
        "/tmp/cass-probe/data/data/probe/streams_lz4-1a81fdb0e66811f19555a79a9024071e/nb-13-big-Data.db",
        "file",
        size_bytes=DATA_SIZE,
    )
    client = writer.file_id(
        "tcp 127.0.0.1:9042->127.0.0.1:50412", "socket", local_addr="127.0.0.1:9042", remote_addr="127.0.0.1:50412"
    )
    gossip = writer.file_id(
        "tcp 127.0.0.1:7000->127.0.0.2:41000", "socket", local_addr="127.0.0.1:7000", remote_addr="127.0.0.2:41000"
    )
    writer.add_file_io(
        [
            {
                "window_id": window,
                "file_id": data,
                "read_calls": WIDE_DATA_CALLS,
                "read_bytes": WIDE_DATA_READ,
                "read_requested_bytes": WIDE_DATA_READ,
                "seek_jumps": 1,
                "longest_sequential_bytes": WIDE_DATA_READ,
            },
            {"window_id": window, "file_id": client, "write_calls": 2, "write_bytes": SYSDIG_CLIENT_WIRE},
            {"window_id": window, "file_id": gossip, "write_calls": 1, "write_bytes": 5_000},
        ]
    )
    writer.add_latency([{"slot": 2, "syscall": "pread", "target": "file", "bucket": 48, "count": WIDE_DATA_CALLS}])
    return writer.finish()


WARM_MMAP_DATA_PATH = f"{TABLE_DIR}/nb-16-big-Data.db"
WARM_MMAP_INDEX_PATH = f"{TABLE_DIR}/nb-16-big-Index.db"


def warm_mmap(
    path,
    *,
    touched: int,
    huge: int = 0,
    payload: int = WIDE_PAYLOAD,
    warmup_touched: int | None = None,
    measured: bool = True,
    unmeasured_reason: str = "/proc/4242/clear_refs refused the clear (test)",
    syscall_pages: int = 0,
    query="SELECT c0 FROM demo.wide WHERE id = 1",
):
    """A warm node with disk_access_mode mmap (format 2): the Data file read only through its map, so
    no syscall and no page-cache fill; `touched` bytes of mapped pages accessed in the measured
    execution (`huge` of its mapping in 2 MiB entries). measured=False: the measure was refused.
    syscall_pages: pages of the Data file a read syscall also returned in the window."""
    writer = TraceWriter(path)
    _base_meta(
        writer,
        query=query,
        keyspace="demo",
        measures={
            "syscalls": True,
            "offsets": True,
            "page_cache": True,
            "latency": True,
            "wire": True,
            "mapped": measured,
            "mappings": True,
        },
        cassandra={"release_version": "4.1.10", "disk_access_mode": "mmap", "tables": [wide_table_schema()]},
        **({} if measured else {"mapped_unmeasured": {"reason": unmeasured_reason, "fix": "run as root"}}),
    )
    data = writer.file_id(WARM_MMAP_DATA_PATH, "file", size_bytes=DATA_SIZE, dev=2049, inode=31)
    index = writer.file_id(WARM_MMAP_INDEX_PATH, "file", size_bytes=409_600, dev=2049, inode=32)
    execution = {"latency_s": 0.4, "rows": WIDE_ROWS, "payload_bytes": payload, "wire_bytes": WIDE_WIRE, "pages": 1}
    warmup, measured_window = _run_windows(writer, execution)
    writer.add_mappings(
        [
            {
                "file_id": data,
                "mapped_bytes": DATA_SIZE + 4096 - DATA_SIZE % 4096,
                "resident_bytes": DATA_SIZE + 4096 - DATA_SIZE % 4096,
            },
            {"file_id": index, "mapped_bytes": 409_600, "resident_bytes": 409_600},
        ]
    )
    if syscall_pages:
        writer.add_file_io(
            [
                {
                    "window_id": measured_window,
                    "file_id": data,
                    "read_calls": 1,
                    "read_bytes": syscall_pages * 4096,
                    "read_requested_bytes": syscall_pages * 4096,
                    "cache_miss_pages": 0,
                    "cache_miss_bytes": 0,
                }
            ]
        )
        writer.add_coverage(
            [
                {
                    "window_id": measured_window,
                    "file_id": data,
                    "source": "syscall",
                    "first_page": 0,
                    "page_count": syscall_pages,
                }
            ]
        )
    if measured:
        writer.add_mapped_touched(
            [
                (measured_window, data, touched, huge),
                (measured_window, index, 8192, 0),
                (warmup, data, touched if warmup_touched is None else warmup_touched, huge),
            ]
        )
    return writer.finish()


# Cassandra 5.0.6's query trace of `SELECT c0` at QUORUM on a 3-node sandbox (RF 3), taken on
# 127.0.0.1 (events abridged): the coordinator reads locally (no event says so) and sends a digest
# request to 127.0.0.2.
QUORUM_EVENTS = [
    ("127.0.0.1", "ReadStage-2", "Executing single-partition query on wide"),
    ("127.0.0.1", "Native-Transport-Requests-1", "reading digest from /127.0.0.2:7000"),
    ("127.0.0.1", "Messaging-EventLoop-3-1", "Sending READ_REQ message to /127.0.0.2:7000 message size 158 bytes"),
    ("127.0.0.2", "Messaging-EventLoop-3-1", "READ_REQ message received from /127.0.0.1:7000"),
    ("127.0.0.2", "ReadStage-1", "Executing single-partition query on wide"),
    ("127.0.0.1", "ReadStage-2", "Read 200 live rows and 0 tombstone cells"),
    ("127.0.0.2", "ReadStage-1", "Read 200 live rows and 0 tombstone cells"),
    ("127.0.0.2", "ReadStage-1", "Enqueuing response to /127.0.0.1:7000"),
    ("127.0.0.1", "RequestResponseStage-3", "Processing response from /127.0.0.2:7000"),
]
ONE_EVENTS = [
    ("127.0.0.1", "ReadStage-2", "Executing single-partition query on wide"),
    ("127.0.0.1", "ReadStage-2", "Read 200 live rows and 0 tombstone cells"),
]


def replica_reads(path, *, consistency="QUORUM", third="captured", extra_events=()):
    """A run of `SELECT c0` over 3 nodes (RF 3) with 127.0.0.1 coordinating: at QUORUM 127.0.0.1 (data)
    and 127.0.0.2 (digest) each read WIDE_DATA_READ of their own Data.db, at ONE only 127.0.0.1.
    `third`: 'captured' (it read nothing), or the not_captured reason of 127.0.0.3. `extra_events`:
    more of Cassandra's trace events, (source, thread, activity), after those of the level."""
    events = (QUORUM_EVENTS if consistency == "QUORUM" else ONE_EVENTS) + list(extra_events)
    writer = TraceWriter(path)
    _base_meta(
        writer,
        query="SELECT c0 FROM demo.wide WHERE id = 1",
        keyspace="demo",
        consistency=consistency,
        page_size=5000,
        node={"host": "127.0.0.1", "port": 9042, "pid": 4242},
        replicas={
            "keyspace": "demo",
            "consistency": consistency,
            "routing": "token map",
            "partitions": 1,
            "ssh": False,
        },
        cassandra={"release_version": "5.0.9", "disk_access_mode": "mmap_index_only", "tables": [wide_table_schema()]},
        query_trace=[
            {
                "session_id": "9a1c",
                "duration_us": 390_000,
                "events": [
                    {"activity": activity, "source_elapsed_us": 1_000 * number, "thread": thread, "source": source}
                    for number, (source, thread, activity) in enumerate(events)
                ],
            }
        ],
    )
    captured = third == "captured"
    writer.add_nodes(
        [
            {"node_id": 1, "address": "127.0.0.1", "replica": True, "captured": True, "pid": 4242},
            {"node_id": 2, "address": "127.0.0.2", "replica": True, "captured": True, "pid": 4343},
            {
                "node_id": 3,
                "address": "127.0.0.3",
                "replica": True,
                "captured": captured,
                "not_captured": None if captured else third,
                "pid": 4444 if captured else None,
            },
        ]
    )
    execution = {
        "latency_s": 0.4,
        "rows": WIDE_ROWS,
        "payload_bytes": WIDE_PAYLOAD,
        "wire_bytes": WIDE_WIRE,
        "pages": 1,
        "coordinator": "127.0.0.1",
    }
    _, measured = _run_windows(writer, execution)
    readers = (1, 2) if consistency == "QUORUM" else (1,)
    for node_id in (1, 2, 3) if captured else (1, 2):
        address = f"127.0.0.{node_id}"
        data = writer.file_id(
            f"/sandbox/node{node_id}/data/demo/wide-1a81fdb0e66811f19555a79a9024071e/nb-1-big-Data.db",
            "file",
            size_bytes=DATA_SIZE,
            dev=2049,
            inode=100 + node_id,
        )
        client = writer.file_id(
            f"tcp {address}:9042->127.0.0.1:5041{node_id}",
            "socket",
            local_addr=f"{address}:9042",
            remote_addr=f"127.0.0.1:5041{node_id}",
        )
        peer = writer.file_id(
            f"tcp {address}:7000->127.0.0.{3 - node_id if node_id < 3 else 1}:4900{node_id}",
            "socket",
            local_addr=f"{address}:7000",
            remote_addr=f"127.0.0.{3 - node_id if node_id < 3 else 1}:4900{node_id}",
        )
        writer.files_of_node(node_id)
        if node_id in readers:
            writer.add_file_io(
                [
                    {
                        "window_id": measured,
                        "file_id": data,
                        "read_calls": WIDE_DATA_CALLS,
                        "read_bytes": WIDE_DATA_READ,
                        "read_requested_bytes": WIDE_DATA_READ,
                        "cache_miss_pages": 0,
                        "cache_miss_bytes": 0,
                    }
                ]
            )
            writer.add_coverage(
                [
                    {
                        "window_id": measured,
                        "file_id": data,
                        "source": "syscall",
                        "first_page": 0,
                        "page_count": -(-WIDE_DATA_READ // 4096),
                    }
                ]
            )
        writer.add_file_io(
            [
                {
                    "window_id": measured,
                    "file_id": client,
                    "write_calls": 1,
                    "write_bytes": WIDE_WIRE if node_id == 1 else 0,
                },
                {
                    "window_id": measured,
                    "file_id": peer,
                    "write_calls": 1,
                    "write_bytes": 160 if node_id in readers else 0,
                },
            ]
        )
    return writer.finish()


WATCH_TABLE_DIR = "/var/lib/cassandra/data/ks/wide-0123456789abcdef0123456789abcdef"
WATCH_DATA_PATH = f"{WATCH_TABLE_DIR}/nb-5-big-Data.db"
WATCH_SLOT_NS = 1_000_000
# One SSTable of 200 rows x 20 cells: 190 MB in 11,600 LZ4 chunks of 16 KiB stored as 16,456 B
WATCH_STORAGE = {
    "data_path": WATCH_DATA_PATH,
    "format": "big",
    "data_bytes": 11_600 * 16_456,
    "compression": {
        "compressor": "LZ4Compressor",
        "chunk_length": 16_384,
        "data_length": 190_020_000,
        "chunks": 11_600,
        "compressed_bytes": 11_600 * 16_456,
    },
    "stats": {"partitions": 1, "cells": 4_000},
    "index_bytes": 40,
}


def watch(
    path, *, data_read: int, rows: int = 1, tombstone_cells: int = 0, statement="SELECT c0 FROM ks.wide WHERE k = ?"
):
    """A `casstrace watch` trace of one sampled execution of `statement` on ks.wide (the table of
    WATCH_STORAGE) that read `data_read` bytes of its Data file by syscall and returned `rows` rows,
    past `tombstone_cells` tombstones; P = 0.5."""
    writer = TraceWriter(path)
    schema = wide_table_schema("wide") | {"keyspace": "ks", "sstables": [], "storage": [WATCH_STORAGE]}
    schema["columns"][0]["name"] = schema["partition_key"][0] = "k"
    _base_meta(
        writer,
        node={"host": "127.0.0.1", "port": 9042, "pid": 4242},
        cassandra={"disk_access_mode": "standard", "tables": [schema]},
        thread_slot_ns=WATCH_SLOT_NS,
        watch={"sample_probability": 0.5, "duration_s": 1.5, "start_ns": START_NS, "end_ns": START_NS + 1_500_000_000},
        unstreamed_events=1,  # no per-call log: the slots carry the syscall bytes
    )
    data = writer.file_id(WATCH_DATA_PATH, "file", size_bytes=11_600 * 16_456)
    started = START_NS + 10 * WATCH_SLOT_NS
    writer.add_statement_sessions(
        [
            {
                "session": 1,
                "session_id": "00000000-0000-0000-0000-000000000001",
                "statement": statement,
                "consistency": "LOCAL_ONE",
                "client": None,
                "started_ns": started,
                "duration_ns": 2 * WATCH_SLOT_NS,
                "live_rows": rows,
                "tombstone_cells": tombstone_cells,
                "sstables_merged": 1,
            }
        ]
    )
    writer.add_session_threads(
        [
            {
                "session": 1,
                "thread": "ReadStage-1",
                "tid": 101,
                "first_ns": started,
                "last_ns": started + 300_000,
                "events": 4,
            }
        ]
    )
    writer.add_thread_io(
        [{"tid": 101, "slot": 10, "file_id": data, "read_calls": 1, "read_bytes": data_read, "cache_miss_pages": 0}]
    )
    writer.add_threads({101: "ReadStage-1"})
    return writer.finish()


HOSTILE = "<img src=x onerror=alert(1)>"


def hostile_names(path):
    """The full-row read of a table and a query whose names carry HTML (quoted CQL identifiers may
    hold anything), and a query-trace event that does too."""
    table = f"wide{HOSTILE}"
    return wide_select_c0(
        path,
        table_schema=wide_table_schema(table=table),
        query=f'SELECT c0 FROM demo."{table}" WHERE id = 1 -- </script><script>alert(2)</script>',
        query_trace=[
            {
                "session_id": "s",
                "duration_us": 1,
                "events": [
                    {
                        "activity": f"Read 1 live rows and 0 tombstone cells {HOSTILE}",
                        "source_elapsed_us": 1,
                        "thread": "t",
                    }
                ],
            }
        ],
    )
