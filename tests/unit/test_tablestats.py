"""node/tablestats.py: nodetool tablestats parsed, the watch's table activity, and what the watch
report says of it (tests/integration/test_watch_tables.py runs it on a node)."""

import json

from casstrace.analyses.watch import FEW_WRITES_PER_FLUSH, MANY_TABLES, WatchInputs, summarise
from casstrace.node.flush_log import FlushedMemtable
from casstrace.node.tablestats import activity, background, parse_compactionstats, parse_tablestats
from casstrace.reports import render
from casstrace.reports.watch import document

OUTPUT = """Total number of tables: {total}
----------------
Keyspace : shop
\tRead Count: 12
\tWrite Count: 40
\tPending Flushes: 0
\t\tTable: orders
\t\tSSTable count: 1
\t\tMemtable cell count: 3
\t\tMemtable data size: {orders_memtable}
\t\tMemtable off heap memory used: 0
\t\tMemtable switch count: {orders_flushes}
\t\tLocal read count: {orders_reads}
\t\tLocal read latency: 0.120 ms
\t\tLocal write count: {orders_writes}
\t\tLocal write latency: 0.030 ms
\t\tTable: idle
\t\tMemtable data size: 0
\t\tMemtable switch count: 0
\t\tLocal read count: 0
\t\tLocal write count: 0
----------------
Keyspace : system
\t\tTable: local
\t\tMemtable data size: 512
\t\tMemtable switch count: {local_flushes}
\t\tLocal read count: 900
\t\tLocal write count: 3
"""


def stats(total=47, orders_memtable=2048, orders_flushes=2, orders_reads=10, orders_writes=40, local_flushes=5):
    return parse_tablestats(
        OUTPUT.format(
            total=total,
            orders_memtable=orders_memtable,
            orders_flushes=orders_flushes,
            orders_reads=orders_reads,
            orders_writes=orders_writes,
            local_flushes=local_flushes,
        )
    )


def test_tablestats_are_read_per_table():
    found = stats()
    assert found.tables == 47
    assert found.per_table["shop.orders"] == {"memtable_bytes": 2048, "flushes": 2, "reads": 10, "writes": 40}
    assert found.per_table["system.local"]["reads"] == 900


def test_the_activity_is_what_moved_between_the_readings():
    moved = activity(stats(), stats(orders_flushes=5, orders_writes=1040, orders_memtable=4096, local_flushes=6))
    assert moved == [
        {"table": "shop.orders", "flushes": 3, "reads": 0, "writes": 1000, "memtable_bytes": 4096},
        {"table": "system.local", "flushes": 1, "reads": 0, "writes": 0, "memtable_bytes": 512},
    ]  # shop.idle did nothing: left out


def test_the_watch_says_what_tables_cost_beside_their_traffic():
    moved = activity(
        stats(), stats(total=MANY_TABLES + 1, orders_flushes=3, orders_writes=40 + 5 * FEW_WRITES_PER_FLUSH)
    )
    meta = {"table_activity": {"tables": MANY_TABLES + 1, "active": moved}}
    inputs = WatchInputs([], [], [], {}, {}, capture_start_ns=0, slot_ns=1, probability=0.5, duration_s=1.0)
    watched = summarise(inputs, meta)
    assert watched.tables == MANY_TABLES + 1
    assert [(t.table, t.little_traffic) for t in watched.table_costs or []] == [("shop.orders", False)]
    assert any(note.startswith("MANY TABLES") for note in watched.notes)
    report = json.loads(render(document(watched), "json"))
    assert report["tables"]["count"] == MANY_TABLES + 1
    assert report["tables"]["active"][0]["flushes"] == 1
    # a flush for a handful of writes is little traffic
    few = summarise(inputs, {"table_activity": {"tables": 3, "active": activity(stats(), stats(orders_flushes=4))}})
    assert [t.little_traffic for t in few.table_costs or []] == [True]
    assert any("flushed their memtable" in note for note in few.notes)
    assert "Little traffic" in render(document(few), "md")


# nodetool compactionstats with pending compactions, as 5.0 prints them (a row per table under 'pending
# tasks') and as 4.0 and 4.1 do ('- ks.table: n')
COMPACTIONSTATS_50 = """concurrent compactors            2
pending tasks                    7
shop                 orders      5
shop                 items       2
compactions completed            5
data compacted                   14308061
"""
COMPACTIONSTATS_41 = """pending tasks: 7
- shop.orders: 5
- shop.items: 2

id                                   compaction type keyspace table  completed total unit  progress
"""


def test_pending_compactions_per_table():
    for text in (COMPACTIONSTATS_50, COMPACTIONSTATS_41):
        assert parse_compactionstats(text) == {"shop.orders": 5, "shop.items": 2}
    assert parse_compactionstats("concurrent compactors 2\npending tasks 0\ncompactions completed 5\n") == {}


def test_the_background_meta_the_watch_writes():
    flushed = [FlushedMemtable("shop.orders", 1000, 3), FlushedMemtable("shop.orders", 500, 2)]
    assert background(({"shop.orders": 5}, {"shop.items": 2}), flushed) == {
        "pending_compactions_start": {"shop.orders": 5},
        "pending_compactions_end": {"shop.items": 2},
        "pending_compactions_max": {"shop.orders": 5, "shop.items": 2},
        "received_bytes": {"shop.orders": 1500},
    }
    assert background(None, None) == {}  # neither read: not measured
