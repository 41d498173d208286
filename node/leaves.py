"""The same data in another shape: a result's leaf values, as a multiset per row key.

A refactor may change a result's shape and not its data: 100 text columns become one frozen UDT of
the same 100 fields, or clustering rows of (column name, value). The payload's digest (node.query)
differs then, its cells being other cells; the leaves do not. A row's leaves are its values, with a
UDT (or tuple) taken apart into its fields, recursively; a table whose one regular column is named by
its last clustering column (PRIMARY KEY (pk, ts, name), value) has one logical row per the other key
columns, its leaves the values of its clustering rows. Each logical row hashes to 256 bits (its key
and its sorted leaves), and the digest is their sum modulo 2**256, as the payload's is: the order of
the rows does not count, a missing, extra or changed leaf does. Computed on the client; a run's trace
keeps the digest (meta leaf_digest), so that stored traces of a refactor compare, never the values.
"""

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

DIGEST_MODULUS = 2**256


@dataclass(frozen=True)
class RowShape:
    """Which result columns identify a logical row, and which names its leaves (None: no column does)."""

    key: tuple[str, ...]
    name: str | None = None


def row_shape(session: Any, keyspace: str, table: str) -> RowShape | None:
    """The shape of `keyspace.table`, from the node's schema tables (None: no such table)."""
    columns = list(
        session.execute(
            "SELECT column_name, kind, position FROM system_schema.columns"
            " WHERE keyspace_name = %s AND table_name = %s",
            (keyspace, table),
        )
    )
    if not columns:
        return None

    def key(kind: str) -> list[str]:
        return [c.column_name for c in sorted((c for c in columns if c.kind == kind), key=lambda c: c.position)]

    partition, clustering = key("partition_key"), key("clustering")
    regular = [c.column_name for c in columns if c.kind in ("regular", "static")]
    if len(regular) == 1 and len(clustering) >= 2:
        return RowShape(tuple(partition + clustering[:-1]), clustering[-1])
    return RowShape(tuple(partition + clustering))


def statement_shape(session: Any, statement: Any) -> RowShape | None:
    """The row shape of the table a prepared SELECT reads (from its result's metadata)."""
    columns = statement.result_metadata or []
    if not columns:
        return None
    keyspace, table = columns[0][0], columns[0][1]
    return row_shape(session, keyspace, table)


def leaves(value: Any) -> Iterable[str]:
    """A value's leaves: a UDT's or a tuple's fields, taken apart; anything else whole."""
    if isinstance(value, tuple):
        for part in value:
            yield from leaves(part)
    else:
        yield repr(value)


@dataclass
class LeafDigest:
    shape: RowShape
    rows: dict[tuple[str, ...], list[str]] = field(default_factory=lambda: defaultdict(list))

    def add(self, column_names: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        keyed = [i for i, name in enumerate(column_names) if name in self.shape.key]
        named = {i for i, name in enumerate(column_names) if name == self.shape.name}
        for row in rows:
            key = tuple(repr(row[i]) for i in keyed)
            found = self.rows[key]
            for i, value in enumerate(row):
                if i not in named and i not in keyed:
                    found.extend(leaves(value))

    def digest(self) -> str:
        total = 0
        for key, found in self.rows.items():
            row_hash = hashlib.blake2b(repr((key, sorted(found))).encode(), digest_size=32)
            total = (total + int.from_bytes(row_hash.digest(), "big")) % DIGEST_MODULUS
        return f"{total:064x}"
