"""What each table costs the node beside its traffic, from `nodetool tablestats`: the schema's table
count, and per table its memtable flushes (the memtable switch count), local reads and writes and the
memtable's size. `watch` reads it before and after: a table's flushes and requests in the watch are the
differences (meta `table_activity`).
"""

import re
from dataclasses import dataclass

from casstrace.node.tracing import Nodetool
from casstrace.traces.meta import TableActivity

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
