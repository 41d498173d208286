"""How a table's SSTables store their data, read from their component files at run time (the runner
sees the node's files): the compressed chunks (CompressionInfo.db) and the partition and cell
histograms (Statistics.db). Sizes and counts only: no key, no value is read. What cannot be read or
parsed is left out (traces.storage: missing means not recorded), never guessed.

CompressionInfo.db (Cassandra 3.0 to 5.0, BIG and BTI alike; big-endian): the compressor's class
name (writeUTF), its options (int count, then writeUTF key and value each), int chunk length, int
max compressed length (4.0+: 'na' and later; absent from 3.x's 'm*' versions), long uncompressed
data length, int chunk count, then one long offset per chunk into the Data file.

Statistics.db: int component count, int checksum of that table of contents (4.0+), then (int type,
int offset) per component; the STATS component (type 2) starts with two EstimatedHistograms,
partition sizes in bytes and cells per partition, each an int bucket count then (long lower bound,
long count) per bucket: a bucket counts values above its lower bound up to the next bucket's; then
the commit log upper bound (long, int), the min and max timestamps (long each), the min and max
local deletion times (int each), and the min and max TTL (int each: seconds, 0 without a TTL).
"""

import struct

from casstrace.probes.proc.proc_fds import in_root
from casstrace.traces.meta import SSTableFileMeta
from casstrace.traces.sstable_names import parse_sstable_path
from casstrace.traces.storage import ChunkLayout, SSTableStats, SSTableStorage

STATS_COMPONENT = 2  # MetadataType.STATS
COMPRESSION_HEADER_BYTES = 4096  # CompressionInfo.db's header (class name, options, lengths): not its offsets
# SSTable versions before 4.0's 'na' (3.x 'm*'): CompressionInfo.db without the max compressed length,
# Statistics.db without the checksum of its table of contents
_NO_MAX_COMPRESSED_LENGTH = ("m",)


class _Reader:
    def __init__(self, data: bytes, position: int = 0) -> None:
        self.data, self.position = data, position

    def take(self, fmt: str) -> tuple:
        values = struct.unpack_from(">" + fmt, self.data, self.position)
        self.position += struct.calcsize(">" + fmt)
        return values

    def utf(self) -> str:
        (length,) = self.take("H")
        text = self.data[self.position : self.position + length].decode("utf-8", "replace")
        self.position += length
        return text


def chunk_layout(data: bytes, file_bytes: int, version: str, data_file_bytes: int) -> ChunkLayout | None:
    """A CompressionInfo.db's chunks, from its first bytes (`data`: the header, at least) and its
    size (`file_bytes`: the header and one offset per chunk); None when it is not one this parser knows."""
    try:
        reader = _Reader(data)
        compressor = reader.utf()
        (options,) = reader.take("i")
        for _ in range(options * 2):
            reader.utf()
        (chunk_length,) = reader.take("i")
        if not version.startswith(_NO_MAX_COMPRESSED_LENGTH):
            reader.take("i")
        data_length, chunks = reader.take("qi")
    except (struct.error, ValueError):
        return None
    if chunk_length <= 0 or chunks < 0 or reader.position + 8 * chunks != file_bytes:
        return None
    return {
        "compressor": compressor.rsplit(".", 1)[-1],
        "chunk_length": chunk_length,
        "data_length": data_length,
        "chunks": chunks,
        "compressed_bytes": data_file_bytes,
    }


def _histogram(reader: _Reader) -> list[tuple[int, int]]:
    """(upper bound, count) per non-empty bucket; the last bucket (overflow) has its lower bound."""
    (buckets,) = reader.take("i")
    flat = reader.take(f"{2 * buckets}q")  # one call: thousands of SSTables are read at a run's start
    lowers, counts = flat[0::2], flat[1::2]
    return [(lowers[i + 1] if i + 1 < buckets else lowers[i], count) for i, count in enumerate(counts) if count]


def _median(histogram: list[tuple[int, int]]) -> int:
    total, seen = sum(count for _, count in histogram), 0
    for upper, count in histogram:
        seen += count
        if seen * 2 >= total:
            return upper
    return 0


def sstable_stats(data: bytes, version: str) -> SSTableStats | None:
    """Statistics.db's partition-size and cells-per-partition histograms; None when unknown."""
    try:
        reader = _Reader(data)
        (components,) = reader.take("i")
        if not version.startswith(_NO_MAX_COMPRESSED_LENGTH):  # 4.0+: the table of contents' checksum
            reader.take("i")
        offsets = dict(reader.take("ii") for _ in range(components))
        if STATS_COMPONENT not in offsets:
            return None
        reader.position = offsets[STATS_COMPONENT]
        sizes, cells = _histogram(reader), _histogram(reader)
    except (struct.error, ValueError):
        return None
    if not sizes:
        return {"partitions": 0, "cells": 0}
    stats: SSTableStats = {
        "partitions": sum(count for _, count in sizes),
        "cells": sum(upper * count for upper, count in cells),
        "partition_bytes_p50": _median(sizes),
        "partition_bytes_max": max(upper for upper, _ in sizes),
        "cells_p50": _median(cells),
        "cells_max": max((upper for upper, _ in cells), default=0),
    }
    try:  # past the commit log upper bound (long, int), the timestamps and the local deletion times
        reader.take("qiqqii")
        stats["ttl_max"] = reader.take("ii")[1]
    except struct.error:  # not recorded
        pass
    return stats


def _component_bytes(pid: int, components: dict[str, SSTableFileMeta], component: str, limit: int = -1) -> bytes | None:
    """The component's first `limit` bytes (-1: all of it), None when it is gone or not listed."""
    meta = components.get(component)
    if meta is None:
        return None
    try:
        with open(in_root(pid, meta["path"]), "rb") as opened:
            return opened.read(limit)
    except OSError:  # compacted away since the listing
        return None


def sstable_storage(pid: int, files: list[SSTableFileMeta]) -> list[SSTableStorage]:
    """The storage of each SSTable among a table's files (as context.sstable_files lists them)."""
    by_sstable: dict[object, dict[str, SSTableFileMeta]] = {}
    for sstable_file in files:
        name = parse_sstable_path(sstable_file["path"])
        if name is not None and name.index is None:
            by_sstable.setdefault(name.sstable, {})[name.component] = sstable_file
    found = []
    for components in by_sstable.values():
        data = components.get("Data")
        name = parse_sstable_path(data["path"]) if data else None
        if data is None or name is None:
            continue
        storage: SSTableStorage = {"data_path": data["path"], "format": name.format, "data_bytes": data["size"]}
        header = _component_bytes(pid, components, "CompressionInfo", COMPRESSION_HEADER_BYTES)
        if header is not None and (
            layout := chunk_layout(header, components["CompressionInfo"]["size"], name.version, data["size"])
        ):
            storage["compression"] = layout
        statistics = _component_bytes(pid, components, "Statistics")
        if statistics is not None and (stats := sstable_stats(statistics, name.version)) is not None:
            storage["stats"] = stats
        index = components.get("Index") or components.get("Partitions")
        if index is not None:
            storage["index_bytes"] = index["size"]
        if "Rows" in components:
            storage["row_index_bytes"] = components["Rows"]["size"]
        found.append(storage)
    return found
