"""What each table costs the node beside its traffic, from `nodetool tablestats`: the schema's table
count, and per table its memtable flushes (the memtable switch count), local reads and writes and the
memtable's size. `watch` reads it before and after: a table's flushes and requests in the watch are the
differences (meta `table_activity`). With `nodetool compactionstats`, each table's pending compactions
at the watch's start and end, and with the memtables the node's log says it flushed meanwhile
(node.flush_log), the mutation bytes they held (meta `table_background`).
"""

import re
from dataclasses import dataclass

from casstrace.node.flush_log import FlushedMemtable, received_bytes
from casstrace.node.tracing import Nodetool
from casstrace.traces.meta import TableActivity, TableBackgroundMeta

_KEYSPACE = re.compile(r"^Keyspace\s*:\s*(\S+)")
_TABLE = re.compile(r"^\s+Table(?: \(index\))?:\s*(\S+)")
_FIGURE = re.compile(r"^\s+(Memtable switch count|Local read count|Local write count|Memtable data size):\s*(\d+)")
_TOTAL = re.compile(r"^Total number of tables:\s*(\d+)")
FIELDS = {
    "Memtable switch count": "flushes",
    "Local read count": "reads",
    "Local write count": "writes",
    "Memtable data size": "memtable_bytes",
}


@dataclass(frozen=True)
class TableStats:
    tables: int  # the schema's table count, as the node gives it
    per_table: dict[str, dict[str, int]]  # 'ks.table' -> flushes, reads, writes, memtable_bytes (since start)


def parse_tablestats(text: str) -> TableStats:
    """The figures of `nodetool tablestats` (Cassandra 4.0-5.0's text output)."""
    total, keyspace, table = 0, "", ""
    per_table: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        if found := _TOTAL.match(line):
            total = int(found[1])
        elif found := _KEYSPACE.match(line):
            keyspace = found[1]
        elif found := _TABLE.match(line):
            table = f"{keyspace}.{found[1]}"
            per_table[table] = {}
        elif (found := _FIGURE.match(line)) and table:
            per_table[table][FIELDS[found[1]]] = int(found[2])
    return TableStats(total or len(per_table), per_table)


def table_stats(nodetool: Nodetool) -> TableStats:
    return parse_tablestats(nodetool.run("tablestats"))


def activity(before: TableStats, after: TableStats) -> list[TableActivity]:
    """Per table, its flushes, reads and writes between the two readings and its memtable's size at the
    second, for the tables that flushed or served a request meanwhile; most flushes first."""
    found: list[TableActivity] = []
    for table, figures in after.per_table.items():
        earlier = before.per_table.get(table, {})
        moved = {key: figures.get(key, 0) - earlier.get(key, 0) for key in ("flushes", "reads", "writes")}
        if any(moved.values()):
            found.append(
                {
                    "table": table,
                    "flushes": moved["flushes"],
                    "reads": moved["reads"],
                    "writes": moved["writes"],
                    "memtable_bytes": figures.get("memtable_bytes", 0),
                }
            )
    return sorted(found, key=lambda t: (-t["flushes"], -t["writes"] - t["reads"], t["table"]))


_PENDING_TOTAL = re.compile(r"^pending tasks:?\s+\d+\s*$")
_PENDING_41 = re.compile(r"^-\s*(\S+?)\.(\S+):\s*(\d+)\s*$")  # 4.0, 4.1: '- ks.table: 3'
_AFTER_PENDING = "compactions completed"
_PENDING_50 = re.compile(r"^(\S+)\s+(\S+)\s+(\d+)\s*$")  # 5.0: 'ks  table  3', a row of its table


def parse_compactionstats(text: str) -> dict[str, int]:
    """Each table's pending compactions ('ks.table' -> count; the tables with none are not listed), from
    `nodetool compactionstats` (4.0-5.0: the rows under 'pending tasks')."""
    pending: dict[str, int] = {}
    listing = False
    for line in text.splitlines():
        if _PENDING_TOTAL.match(line.strip()):
            listing = True
        elif line.startswith(_AFTER_PENDING):  # 5.0: the table's next row, shaped like a table's
            listing = False
        elif listing and (found := _PENDING_41.match(line.strip()) or _PENDING_50.match(line.strip())):
            pending[f"{found[1]}.{found[2]}"] = int(found[3])
        else:
            listing = False
    return pending


def pending_compactions(nodetool: Nodetool) -> dict[str, int]:
    return parse_compactionstats(nodetool.run("compactionstats"))


def background(
    pending: tuple[dict[str, int], dict[str, int]] | None, flushed: list[FlushedMemtable] | None
) -> TableBackgroundMeta:
    """The node's side of the tables' background work over a watch: pending compactions at its start and
    end (`pending`; None: not read), and the mutation bytes of the memtables each table flushed
    (`flushed`, from the node's log; None: not read)."""
    found: TableBackgroundMeta = {}
    if pending is not None:
        start, end = pending
        found["pending_compactions_start"] = start
        found["pending_compactions_end"] = end
        found["pending_compactions_max"] = {table: max(start.get(table, 0), end.get(table, 0)) for table in start | end}
    if flushed is not None:
        found["received_bytes"] = received_bytes(flushed)
    return found
