"""run's executions charged by thread (analyses.attribution): a synthetic run trace where another
thread reads the queried table's Data file in the execution's window, as another client's requests do."""

import json

from casstrace.analyses import analyse
from casstrace.analyses.attribution import Span, serving_threads
from casstrace.reports import render
from casstrace.reports.formats import FORMATS
from casstrace.traces import TraceWriter
from casstrace.traces.measures import MEASURES
from synthetic_traces import DATA_PATH, DATA_SIZE, START_NS, _base_meta, wide_table_schema

SLOT = 1_000_000
OWN, OTHERS, OTHER_TABLE = 64 * 1024, 3 * 64 * 1024, 100_000
OTHER_TABLE_PATH = "/var/lib/cassandra/data/shop/orders-2b81fdb0e66811f19555a79a9024071e/nb-3-big-Data.db"


def busy_run(path, *, mapped_touched=None, other_requests=12, thread_cpu=()):
    """One measured execution (window 2): its thread 101 reads OWN from Data.db in slots 600-603, its
    session's events there; thread 102 (another client's request) reads OTHERS in slots 600-611 and
    thread 103 OTHER_TABLE from another table; the window's file_io holds them all. thread_cpu: (tid,
    slot, ns) on-CPU time per slot."""
    writer = TraceWriter(path)
    measures = {"syscalls": True, "offsets": True, "page_cache": True, "latency": True, "wire": True}
    if mapped_touched is not None:
        measures["mapped"] = True
    _base_meta(
        writer,
        measures=measures,
        query="SELECT c0 FROM demo.wide WHERE id = 1",
        keyspace="demo",
        consistency="ONE",
        node={"host": "127.0.0.1", "port": 9042, "pid": 4242},
        cassandra={"release_version": "5.0.9", "disk_access_mode": "mmap", "tables": [wide_table_schema()]},
        thread_slot_ns=SLOT,
        unstreamed_events=16,  # the calls go by slot
    )
    data = writer.file_id(DATA_PATH, "file", size_bytes=DATA_SIZE, dev=2049, inode=11)
    other = writer.file_id(OTHER_TABLE_PATH, "file", size_bytes=10 << 20, dev=2049, inode=13)
    window = writer.add_window("execution", START_NS + 500_000_000, START_NS + 1_500_000_000, execution=1)
    writer.add_execution(
        execution=1,
        kind="measured",
        window_id=window,
        rows=1,
        payload_bytes=100,
        pages=1,
        other_requests=other_requests,
    )
    writer.add_file_io(
        [
            {
                "window_id": window,
                "file_id": data,
                "read_calls": 16,
                "read_bytes": OWN + OTHERS,
                "read_requested_bytes": OWN + OTHERS,
                "cache_miss_pages": 0,
                "cache_miss_bytes": 0,
            },
            {"window_id": window, "file_id": other, "read_calls": 1, "read_bytes": OTHER_TABLE},
        ]
    )
    if mapped_touched is not None:
        writer.add_mapped_touched([(window, data, mapped_touched, 0)])
    writer.add_coverage(
        [{"window_id": window, "file_id": data, "source": "syscall", "first_page": 0, "page_count": 64}]
    )
    rows = [(101, slot, data, OWN // 4) for slot in range(600, 604)]
    rows += [(102, slot, data, OTHERS // 12) for slot in range(600, 612)]
    rows += [(103, 700, other, OTHER_TABLE)]
    writer.add_thread_io(
        [
            {"tid": tid, "slot": slot, "file_id": f, "read_calls": 1, "read_bytes": size, "cache_miss_pages": 0}
            for tid, slot, f, size in rows
        ]
    )
    writer.add_statement_sessions(
        [
            {
                "session": 1,
                "session_id": "5a1e",
                "statement": "SELECT c0 FROM demo.wide WHERE id = ?",
                "consistency": "ONE",
                "client": "127.0.0.1",
                "started_ns": START_NS + 599_000_000,
                "duration_ns": 6_000_000,
                "live_rows": 1,
                "tombstone_cells": 0,
                "sstables_merged": 1,
                "execution": 1,
            }
        ]
    )
    writer.add_session_threads(
        [
            {
                "session": 1,
                "thread": "ReadStage-1",
                "tid": 101,
                "first_ns": START_NS + 600_100_000,
                "last_ns": START_NS + 603_500_000,
                "events": 4,
            }
        ]
    )
    writer.add_threads({101: "ReadStage-1", 102: "ReadStage-2", 103: "ReadStage-3"})
    writer.add_thread_cpu(
        [
            {
                "tid": tid,
                "ts_ns": START_NS + slot * SLOT,
                "slot_ns": SLOT,
                "oncpu_ns": ns,
                "node_id": node[0] if node else None,
            }
            for tid, slot, ns, *node in thread_cpu
        ]
    )
    return writer.finish()


def test_an_execution_is_charged_only_its_own_threads_reads(tmp_path):
    analysis = analyse(busy_run(tmp_path / "busy.trace"))
    overall = analysis.overall
    assert overall.syscall_bytes == overall.data_read_bytes == OWN
    busy = overall.busy
    assert busy is not None and (busy.executions, busy.busy_executions) == (1, 1)
    assert busy.table_bytes_by_others == OTHERS and busy.other_tables_bytes == OTHER_TABLE
    assert busy.other_requests == 12
    assert busy.attributed_share == OWN / (OWN + OTHERS)
    (execution,) = [e for e in analysis.executions if e.kind == "measured"]
    assert execution.amplification is not None and execution.amplification.data_read_bytes == OWN
    assert any(warning.startswith("BUSY NODE") for warning in analysis.warnings)


def test_the_serving_threads_of_each_execution(tmp_path):
    from casstrace.traces import Trace

    with Trace(busy_run(tmp_path / "busy.trace")) as trace:
        assert serving_threads(trace) == {
            1: [Span(1, "ReadStage-1", 101, START_NS + 600_100_000, START_NS + 603_500_000)]
        }


def test_mapped_pages_touched_while_others_ran_leave_the_verdict_undetermined(tmp_path):
    # A warm mmap read: the pages touched are per process, so whose they were no measure says.
    analysis = analyse(busy_run(tmp_path / "busy.trace", mapped_touched=4 << 20))
    assert analysis.overall.data_read_bytes == OWN  # none of the mapped pages charged
    assert (
        analysis.overall.busy is not None and analysis.overall.busy.mapped_unattributed_bytes == (4 << 20) - 64 * 4096
    )  # beyond the syscall pages
    assert analysis.verdict.status == "undetermined"


def test_the_serving_threads_cpu_is_theirs_while_they_served(tmp_path):
    """Thread 101's events span 600.1-603.5 ms: its slots 599-603 meet them widened by CALL_MARGIN_NS (0.25
    ms), 598 and 604 do not; thread 102 (another client's) ran all along and is no serving thread's."""
    ran = [(101, slot, 200_000) for slot in range(598, 605)] + [(102, slot, 900_000) for slot in range(600, 612)]
    analysis = analyse(busy_run(tmp_path / "busy.trace", thread_cpu=ran))
    (execution,) = [e for e in analysis.executions if e.kind == "measured"]
    assert execution.measures["serving_cpu_ns"] == 5 * 200_000
    assert execution.measures["traced_ns"] == 6_000_000  # its session's duration, as Cassandra traced it
    cpu = analysis.cpu_per_result
    assert cpu is not None and cpu.measure == "serving_cpu_ns"
    # one row of one cell (SELECT c0)
    assert (cpu.per_execution_ns, cpu.per_row_ns, cpu.per_cell_ns, cpu.cells_per_row) == (1e6, 1e6, 1e6, 1)
    for fmt in FORMATS:  # a column of the executions table, an item of the headline numbers, per row
        text = render(analysis, fmt)
        if fmt == "json":
            report = json.loads(text)
            assert report["cpu_per_result"]["per_cell_ns"] == 1e6
            assert {m["name"] for m in report["measures_per_execution"]} >= {"serving_cpu_ns"}
        else:
            assert text.count(MEASURES["serving_cpu_ns"].label.replace("'", "&#x27;" if fmt == "html" else "'")) >= 3


def test_another_nodes_thread_of_the_same_tid_is_not_the_serving_threads(tmp_path):
    """Two machines' threads may share a tid: thread 101 of node 2 ran in the same slots as the serving
    thread 101 of the one process, and is not counted."""
    ran = [(101, slot, 200_000) for slot in range(599, 604)] + [(101, slot, 700_000, 2) for slot in range(599, 604)]
    analysis = analyse(busy_run(tmp_path / "busy.trace", thread_cpu=ran))
    (execution,) = [e for e in analysis.executions if e.kind == "measured"]
    assert execution.measures["serving_cpu_ns"] == 5 * 200_000


def test_no_thread_cpu_no_serving_cpu(tmp_path):
    analysis = analyse(busy_run(tmp_path / "busy.trace"))
    assert all("serving_cpu_ns" not in e.measures for e in analysis.executions)
    assert analysis.cpu_per_result is None
