"""How the queried table's SSTables store their data, as a run recorded it (meta `cassandra.tables[].storage`).

Written by casstrace.node.storage from each live SSTable's CompressionInfo.db and Statistics.db at
run time (the runner sees the node's files), read by the necessary-read model of the analyses.
Sizes and counts only, never a key or a value. Every key may be missing (an older trace, a node
whose files could not be read, a version whose format is not known): missing means not recorded.
"""

from typing import TypedDict


class ChunkLayout(TypedDict):
    """A compressed SSTable's chunks (CompressionInfo.db)."""

    compressor: str  # the class's simple name ('LZ4Compressor')
    chunk_length: int  # uncompressed bytes per chunk (chunk_length_in_kb x 1024)
    data_length: int  # uncompressed bytes of the Data file
    chunks: int
    compressed_bytes: int  # the Data file's size: every chunk as stored, each with its 4-byte checksum


class SSTableStats(TypedDict, total=False):
    """Statistics.db's histograms (what `nodetool tablehistograms` shows, per SSTable)."""

    partitions: int  # partitions in the SSTable
    cells: int  # cells, from the cells-per-partition histogram (bucket upper bounds)
    partition_bytes_p50: int  # partition size histogram's median and largest bucket (upper bounds)
    partition_bytes_max: int
    cells_p50: int
    cells_max: int
    ttl_max: int  # the longest TTL of its cells, in seconds (0: no cell has a TTL)


class SSTableStorage(TypedDict, total=False):
    data_path: str  # the Data component
    format: str  # 'big' | 'bti'
    data_bytes: int  # the Data file's size on disk
    compression: ChunkLayout  # absent: not compressed (or CompressionInfo.db unreadable)
    stats: SSTableStats
    index_bytes: int  # Index.db (big) or Partitions.db (bti) size
    row_index_bytes: int  # Rows.db (bti) size
