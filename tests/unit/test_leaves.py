"""node.leaves: the same data in three shapes (columns, a frozen UDT, clustering rows of (name, value))
gives one digest of its leaf values per row key; another value, row or order does what it should."""

from collections import namedtuple

from casstrace.node.leaves import LeafDigest, RowShape

FIELDS = ("a", "b", "c")
Fields = namedtuple("Fields", ["a", "b", "c"])  # as the driver decodes a frozen UDT
DATA = {(1, ts): (f"x{ts}", f"y{ts}", f"z{ts}") for ts in range(4)}


def digest(shape, column_names, rows):
    found = LeafDigest(shape)
    found.add(column_names, rows)
    return found.digest()


def columns(data=DATA):
    return digest(RowShape(("pk", "ts")), ["pk", "ts", *FIELDS], [(*key, *values) for key, values in data.items()])


def udt(data=DATA):
    return digest(RowShape(("pk", "ts")), ["pk", "ts", "v"], [(*key, Fields(*values)) for key, values in data.items()])


def clustering_rows(data=DATA):
    rows = [(*key, name, value) for key, values in data.items() for name, value in zip(FIELDS, values)]
    return digest(RowShape(("pk", "ts"), "name"), ["pk", "ts", "name", "value"], rows)


def test_one_digest_for_the_three_shapes_of_the_same_data():
    assert columns() == udt() == clustering_rows()


def test_rows_in_another_order_or_pages_give_the_same_digest():
    found = LeafDigest(RowShape(("pk", "ts")))
    rows = [(*key, Fields(*values)) for key, values in reversed(list(DATA.items()))]
    found.add(["pk", "ts", "v"], rows[:2])
    found.add(["pk", "ts", "v"], rows[2:])
    assert found.digest() == udt()


def test_a_changed_missing_or_moved_value_changes_it():
    changed = {**DATA, (1, 2): ("x2", "y2", "other")}
    missing = {key: values for key, values in DATA.items() if key != (1, 3)}
    moved = {**DATA, (1, 0): DATA[(1, 1)], (1, 1): DATA[(1, 0)]}  # a value under another row key
    for other in (changed, missing, moved):
        assert udt(other) != columns()
