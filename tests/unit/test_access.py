"""analyses/access.py: the access pattern of each file, and where its offset map comes from."""

import pytest

import synthetic_traces as synthetic


def test_access_pattern_says_where_the_offset_map_comes_from(wide):
    by_path = {p.file.path: p for p in wide.access}
    data, index = by_path[synthetic.DATA_PATH], by_path[synthetic.INDEX_PATH]
    assert data.source == "heatmap" and "0 of 7,606 calls streamed" in data.source_note
    assert [(p.time_s, p.offset, p.calls) for p in data.points][:2] == [(0.5, 0, 100), (0.6, 10 << 20, 100)]
    assert data.read_size_median == 8192
    assert index.source == "events"
    assert [(p.kind, p.offset) for p in index.points] == [
        ("lseek", 0),
        ("read", 0),
        ("read", 200_704),
        ("lseek", 0),
        ("read", 0),
        ("read", 200_704),
    ]
    assert index.points[0].time_s == pytest.approx(0.11)
