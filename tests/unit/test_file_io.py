"""analyses/file_io.py: per-file I/O grouped by SSTable, and the page runs of the coverage table."""

import synthetic_traces as synthetic
from casstrace.analyses import pages


def test_per_file_io_groups_sstable_components(wide):
    paths = [f.path for f in wide.files]
    assert paths[0] == synthetic.DATA_PATH
    data = wide.files[0]
    assert (data.read_calls, data.read_bytes, data.read_requested_bytes) == (3_803, 62_574_072, 3_803 * 16_454)
    assert (data.seek_jumps, data.lseek_calls, data.longest_sequential_bytes) == (1, 0, 62_574_072)
    assert data.touched_bytes == 15_277 * 4096
    assert data.coverage == 15_277 * 4096 / synthetic.DATA_SIZE
    assert data.read_sizes == {13: 3_000, 14: 803}
    [sstable] = wide.sstables
    assert (sstable.keyspace, sstable.table, sstable.generation, sstable.label) == (
        "demo",
        "wide",
        13,
        "demo.wide nb-13-big",
    )
    assert [f.component for f in sstable.files] == ["Data", "Index"]
    others = {f.path: f for f in wide.other_files}
    assert others[synthetic.CLIENT_SOCKET].write_bytes == 26_000
    assert others["/sys/fs/cgroup/memory.stat"].read_bytes == 7_240
    # page cache not measured for sockets and pseudo-files is None, not 0
    assert others[synthetic.CLIENT_SOCKET].cache_miss_bytes is None


def test_page_runs():
    runs = pages.merge([(10, 5), (0, 4), (3, 2), (20, 1)])
    assert runs == [(0, 5), (10, 15), (20, 21)]
    assert pages.subtract(runs, pages.merge([(2, 1), (12, 10)])) == [(0, 2), (3, 5), (10, 12)]
    assert pages.bytes_within([(0, 2)], 5000) == 5000
    assert pages.bytes_within([(0, 2)], None) == 8192
