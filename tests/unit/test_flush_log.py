"""node/flush_log.py: the memtables a node flushed, from its log's lines (a 5.0.9 node's, as written)."""

import os

from casstrace.node.flush_log import FlushedMemtable, LogMark, parse_flushes, received_bytes

DATA = "/work/devnode/data/shop"
RANGE = "flushed range = [min(-9223372036854775808), max(9223372036854775807))"
POSITION = "for commitlog position CommitLogPosition(segmentId=1795949716204, position=96343)"


def writing(thread: int, table: str, size: str, ops: int) -> str:
    return (
        f"INFO  [PerDiskMemtableFlushWriter_0:{thread}] 2026-11-29 10:57:15,905 Flushing.java:153 - Writing "
        f"Memtable-{table}@1793676432({size} serialized bytes, {ops} ops, 3.359KiB (0%) on-heap, 0B (0%) off-heap), "
        + RANGE
    )


def completed(thread: int, sstable: str) -> str:
    return (
        f"INFO  [PerDiskMemtableFlushWriter_0:{thread}] 2026-11-29 10:57:15,984 Flushing.java:179 - Completed "
        f"flushing {DATA}/{sstable} (425KiB) {POSITION}"
    )


# Two flush threads at once, their lines interleaved; a line of another kind between them.
LOG = (
    "\n".join(
        (
            writing(3, "orders", "586B", 4),
            writing(4, "items", "1.500MiB", 5000),
            "INFO  [Native-Transport-Requests-3] 2026-11-29 10:57:15,953 ColumnFamilyStore.java:1055 - Enqueuing "
            "flush of shop.orders, Reason: USER_FORCED, Usage: 2.861KiB (0%) on-heap, 0B (0%) off-heap",
            completed(4, "items-afddfb9dbc1e30688056eed6c302ba09/nb-71-big-Data.db"),
            completed(3, "orders-24101c25a2ae3af787c1b40ee1aca33f/nb-51-big-Data.db"),
            writing(3, "orders", "2.250KiB", 9),
            completed(3, "orders-24101c25a2ae3af787c1b40ee1aca33f/nb-52-big-Data.db"),
        )
    )
    + "\n"
)


def test_each_flushed_memtable_with_its_table_from_its_sstable():
    assert parse_flushes(LOG) == [
        FlushedMemtable("shop.items", 1_572_864, 5000),
        FlushedMemtable("shop.orders", 586, 4),
        FlushedMemtable("shop.orders", 2304, 9),
    ]
    assert received_bytes(parse_flushes(LOG)) == {"shop.items": 1_572_864, "shop.orders": 586 + 2304}


def test_a_flush_still_being_written_when_the_stretch_ends_is_not_counted():
    assert parse_flushes(LOG.splitlines()[0]) == []


def test_the_log_is_read_from_the_mark_and_not_across_a_roll_over(tmp_path):
    log = tmp_path / "system.log"
    first, rest = LOG.split("\n", 1)
    log.write_text(first + "\n")  # a flush begun before the mark: its bytes are in the line before it, not counted
    mark = LogMark.now(log)
    assert mark is not None and mark.flushes_since() == []
    with open(log, "a") as appended:
        appended.write(rest)
    assert [m.serialized_bytes for m in mark.flushes_since() or []] == [1_572_864, 2304]
    os.replace(log, tmp_path / "system.log.1")  # logback rolled it over: the mark's offset means nothing now
    log.write_text(LOG)
    assert mark.flushes_since() is None
    assert LogMark.now(tmp_path / "absent.log") is None
