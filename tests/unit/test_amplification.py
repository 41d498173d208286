"""analyses/amplification.py: the data read of each execution and of the whole run, from every measure
(syscalls, page-cache fills, mapped pages touched), and what it is divided by (payload or wire bytes)."""

import json
import sqlite3

import pytest

import synthetic_traces as synthetic
from casstrace.analyses import analyse
from casstrace.analyses.amplification import data_read
from casstrace.analyses.attribution import SlotIO
from casstrace.analyses.model import IndexPart
from casstrace.reports import common
from casstrace.traces.schema import PAGE_BYTES

KiB = 1024


def test_per_execution_amplification_uses_each_window(wide):
    warmup, measured = wide.executions
    assert (warmup.kind, measured.kind) == ("warmup", "measured")
    assert warmup.amplification.cache_miss_bytes == 15_277 * 4096  # the warmup ran cold
    assert measured.amplification.cache_miss_bytes == 0
    assert measured.amplification.read == 62_574_072 / 20_000


def test_mmap_reads_count_page_cache_fills_outside_syscall_pages(tmp_path):
    analysis = analyse(synthetic.wide_select_c0_mmap(tmp_path / "mmap.trace"))
    o = analysis.overall
    mapped = synthetic.MMAP_FILLED_PAGES * 4096
    assert o.syscall_bytes == 40_960  # only the pread SSTable
    assert o.cache_miss_bytes == mapped + 40 * 4096
    assert o.cache_outside_syscall_bytes == mapped + 30 * 4096  # readahead beyond the 10 pages read
    assert o.data_read_bytes == 40_960 + mapped + 30 * 4096
    assert o.read == o.data_read_bytes / 20_000
    assert o.sstables_read == 2
    assert analysis.verdict.status == "flagged"
    assert [finding.cause for finding in analysis.findings] == [
        "full_row_read",
        "readahead_inflation",
        "whole_partition_scan",
        "cold_cache",
    ]
    mmap_finding = analysis.findings[1]
    assert "memory-mapped" in mmap_finding.title
    by_path = {p.file.path: p for p in analysis.access}
    assert by_path[synthetic.MMAP_DATA_PATH].source == "none"
    assert {p.kind for p in by_path[synthetic.MMAP_DATA_PATH].points} == {"page_cache"}
    assert analysis.spectrograms[0].counts == {}


def test_sysdig_import_compares_with_wire_bytes_and_never_shows_unmeasured_zeros(tmp_path):
    analysis = analyse(synthetic.sysdig_import(tmp_path / "sysdig.trace"))
    o = analysis.overall
    assert analysis.scope.startswith("the whole capture")
    assert (o.basis, o.basis_bytes, o.payload_bytes) == ("wire", synthetic.SYSDIG_CLIENT_WIRE, None)
    assert o.read == 62_574_072 / 25_000  # internode socket (port 7000) not counted
    assert (o.cache_miss_bytes, o.cache_outside_syscall_bytes, o.device) == (None, None, None)
    assert all(f.cache_miss_bytes is None for f in analysis.files)
    assert analysis.verdict.status == "flagged"
    assert "wire bytes" in analysis.verdict.summary
    assert any("Page-cache misses were not measured" in note for note in analysis.verdict.notes)
    assert any("page-cache misses" in w for w in analysis.warnings)


@pytest.mark.parametrize("port", [9042, 19143])
def test_a_capture_judges_data_reads_only_against_what_it_saw_sent_to_clients(tmp_path, port):
    """`casstrace capture --pid` of a node: the trace does not record the node's native port, so
    only a socket on the default one (9042) shows what it sent its clients. A node on another port
    sent them what no figure shows: undetermined, never "read 20 MB to return nothing"."""
    from casstrace.traces import TraceWriter

    writer = TraceWriter(tmp_path / f"node-{port}.trace")
    writer.set_meta(
        backend="bcc", measures={"syscalls": True, "offsets": True, "page_cache": True, "latency": True, "wire": True}
    )
    window = writer.add_window("capture", 0, 1_000_000_000)
    data = writer.file_id(
        "/var/lib/cassandra/data/ks/t-1b255f4def2540a6000000000000000a/nb-1-big-Data.db", "file", size_bytes=100_000_000
    )
    client = writer.file_id(f"tcp 127.0.0.1:{port}->127.0.0.1:50412", "socket")
    writer.add_file_io(
        [
            {
                "window_id": window,
                "file_id": data,
                "read_calls": 1_250,
                "read_bytes": 20_480_000,
                "read_requested_bytes": 20_480_000,
                "cache_miss_pages": 0,
                "cache_miss_bytes": 0,
            },
            {"window_id": window, "file_id": client, "write_calls": 3, "write_bytes": 6_144},
        ]
    )
    analysis = analyse(writer.finish())
    if port == 9042:
        assert analysis.overall.wire_bytes == 6_144
        assert analysis.verdict.status == "flagged" and "3333" in analysis.verdict.summary.replace(",", "")
    else:
        assert analysis.overall.wire_bytes is None and analysis.overall.basis is None
        assert (analysis.verdict.status, analysis.verdict.reason) == ("undetermined", "no_basis")


@pytest.mark.parametrize(
    "syscall, fills_outside, mapped_outside, read",
    [
        (16_384, 0, 0, 16_384),  # warm preads: what they returned
        (16_384, 112 * KiB, 0, 16_384 + 112 * KiB),  # readahead past the pages read
        (0, 8 * KiB, 60 * KiB, 60 * KiB),  # a cold mapped read is in both: the larger, not the sum
        (4_096, 0, 12 * KiB, 16 * KiB),  # a warm mapped read beside a syscall's page
    ],
)
def test_data_read_counts_no_page_twice(syscall, fills_outside, mapped_outside, read):
    assert data_read(syscall, fills_outside, mapped_outside) == read


def test_watch_counts_a_slot_by_the_run_formula():
    """A slot keeps no pages: the fills outside the syscalls' pages are those past their bytes."""
    assert SlotIO(1, 1, 1, read_bytes=16_384, cache_miss_pages=32).data_read_bytes == 32 * PAGE_BYTES
    assert SlotIO(1, 1, 1, read_bytes=16_384, cache_miss_pages=0).data_read_bytes == 16_384
    assert SlotIO(1, 1, 1, read_bytes=16_384, cache_miss_pages=2).data_read_bytes == 16_384


def test_wire_bytes_are_derived_from_the_client_addresses_in_meta(tmp_path):
    """A run records its client's addresses, not its executions' wire bytes: the analyses sum what the
    node wrote, in each window, to its sockets with one of them at the remote end."""
    trace = synthetic.wide_select_c0(tmp_path / "wide.trace")

    def with_clients(addresses):
        with sqlite3.connect(trace) as db:
            db.execute("UPDATE executions SET wire_bytes = NULL, client_file_id = NULL")
            db.execute("INSERT OR REPLACE INTO meta VALUES ('client_addresses', ?)", (json.dumps(addresses),))
        db.close()
        return analyse(trace)

    # one spelling per address: the IPv4-mapped form of the socket's remote end is the same client
    analysis = with_clients(["[::ffff:127.0.0.1]:50412", "127.0.0.1:50999"])
    assert [e.wire_bytes for e in analysis.executions] == [synthetic.WIDE_WIRE, synthetic.WIDE_WIRE]
    assert analysis.overall.wire_bytes == synthetic.WIDE_WIRE
    # no socket of this client: no wire bytes per execution (None, never 0)
    assert [e.wire_bytes for e in with_clients(["127.0.0.1:1"]).executions] == [None, None]


def test_the_index_part_is_measured_by_part_beside_the_data_read(wide):
    """The wide trace's measured execution read 8 KiB of the SSTable's Index.db (two preads): the
    index part, by the data_read formula, with the file's size on disk; not in the data read."""
    index = wide.index_read
    assert index is not None and index.executions == 1
    assert index.parts == [IndexPart("Index", 8_192, 409_600)]
    assert wide.overall.data_read_bytes == synthetic.WIDE_DATA_READ
    items = dict(common.index_read_items(wide))
    assert items["  Index"] == "8.0 KiB (400.0 KiB on disk)"
