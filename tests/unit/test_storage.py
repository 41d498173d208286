"""node.storage parses CompressionInfo.db and Statistics.db as Cassandra writes them (built here
field by field from the writers' layout; the real files of 4.1 and 5.0 nodes, BIG and BTI, are read
by tests/integration/test_verdict_classes.py and tests/integration/test_mmap_nodes.py)."""

import os
import struct

from casstrace.node.storage import chunk_layout, sstable_stats, sstable_storage
from casstrace.traces.meta import SSTableFileMeta


def utf(text: str) -> bytes:
    return struct.pack(">H", len(text)) + text.encode()


def compression_info(chunks: int, *, max_compressed_length: bool = True) -> bytes:
    header = utf("LZ4Compressor") + struct.pack(">i", 1) + utf("lz4_compressor_type") + utf("fast")
    header += struct.pack(">i", 16_384) + (struct.pack(">i", 2**31 - 1) if max_compressed_length else b"")
    return (
        header
        + struct.pack(">qi", chunks * 16_384 - 100, chunks)
        + b"".join(struct.pack(">q", 15_000 * i) for i in range(chunks))
    )


def histogram(buckets: dict[int, int], offsets: list[int]) -> bytes:
    """EstimatedHistogram.serializer: bucket count (one per offset and the overflow), then (previous
    offset, count) per bucket; bucket i counts the values above offsets[i - 1] up to offsets[i]."""
    body = b"".join(struct.pack(">qq", offsets[i - 1] if i else 0, buckets.get(i, 0)) for i in range(len(offsets) + 1))
    return struct.pack(">i", len(offsets) + 1) + body


def statistics(stats: bytes, *, checksum: bool = True) -> bytes:
    """MetadataSerializer: component count, [checksum], (type, offset) each, then the components."""
    head_bytes = 4 + (4 if checksum else 0) + 8 * 2
    validation = b"\x00" * 10
    toc = struct.pack(">i", 2) + (struct.pack(">i", 0xC0FFEE) if checksum else b"")
    toc += struct.pack(">ii", 0, head_bytes) + struct.pack(">ii", 2, head_bytes + len(validation))
    return toc + validation + stats


def test_a_compression_info_gives_its_chunks():
    data = compression_info(3)
    layout = chunk_layout(data[:80], len(data), "nb", 45_012)  # the header, not the offsets
    assert layout == {
        "compressor": "LZ4Compressor",
        "chunk_length": 16_384,
        "data_length": 3 * 16_384 - 100,
        "chunks": 3,
        "compressed_bytes": 45_012,
    }


def test_a_3x_compression_info_has_no_max_compressed_length():
    data = compression_info(2, max_compressed_length=False)
    layout = chunk_layout(data, len(data), "md", 30_000)
    assert layout is not None and layout["chunks"] == 2
    assert chunk_layout(data, len(data), "nb", 30_000) is None  # read as 4.0+: the sizes do not add up


def test_statistics_give_partitions_and_cells_from_the_histograms():
    offsets = [1, 2, 3, 4, 5, 6, 7, 8, 10, 12]
    sizes = histogram({9: 30}, [100, 120, 149, 179, 215, 258, 310, 372, 446, 535])  # 30 partitions of 373..446 B
    cells = histogram({2: 30}, offsets)  # 3 cells each
    assert sstable_stats(statistics(sizes + cells), "nb") == {
        "partitions": 30,
        "cells": 90,
        "partition_bytes_p50": 535,
        "partition_bytes_max": 535,
        "cells_p50": 3,
        "cells_max": 3,
    }
    stats = sstable_stats(statistics(sizes + cells, checksum=False), "md")
    assert stats is not None and stats["cells"] == 90


def test_statistics_give_the_longest_ttl_of_the_cells():
    """StatsMetadata after its histograms: the commit log upper bound, the min and max timestamps,
    the min and max local deletion times, then the min and max TTL."""
    histograms = histogram({9: 30}, [100, 120, 149, 179, 215, 258, 310, 372, 446, 535]) + histogram({2: 30}, [1, 2, 3])
    after = struct.pack(">qiqqiiii", 7, 30, 1, 2, 100, 200, 1, 86_400)
    stats = sstable_stats(statistics(histograms + after), "nb")
    assert stats is not None and stats["ttl_max"] == 86_400


def test_storage_of_sstables_as_listed_leaves_out_what_is_not_there(tmp_path):
    table = tmp_path / "ks" / "t-0123456789abcdef0123456789abcdef"
    table.mkdir(parents=True)
    (table / "nb-1-big-Data.db").write_bytes(b"\x00" * 45_012)
    (table / "nb-1-big-CompressionInfo.db").write_bytes(compression_info(3))
    (table / "nb-1-big-Index.db").write_bytes(b"\x00" * 300)
    (table / "da-2-bti-Data.db").write_bytes(b"\x00" * 5_000)  # uncompressed, no statistics
    (table / "da-2-bti-Partitions.db").write_bytes(b"\x00" * 80)
    (table / "da-2-bti-Rows.db").write_bytes(b"")
    files: list[SSTableFileMeta] = [
        {"path": str(path), "size": path.stat().st_size} for path in sorted(table.iterdir())
    ]
    files.append({"path": str(table / "nb-3-big-Data.db"), "size": 10})  # compacted away since the listing
    files.append({"path": str(table / "nb-3-big-CompressionInfo.db"), "size": 10})
    by_name = {s["data_path"].rsplit("/", 1)[-1]: s for s in sstable_storage(os.getpid(), files)}
    big, bti, gone = by_name["nb-1-big-Data.db"], by_name["da-2-bti-Data.db"], by_name["nb-3-big-Data.db"]
    assert bti["format"] == "bti"
    assert big["compression"]["chunks"] == 3 and big["index_bytes"] == 300 and "stats" not in big
    assert "compression" not in bti and bti["index_bytes"] == 80 and bti["row_index_bytes"] == 0
    assert "compression" not in gone
