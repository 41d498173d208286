"""Values for a write's bind markers, generated so that every execution writes fresh rows.

`casstrace run` repeats a write N times on its own sandbox (node.own_sandbox). Each marker of the
prepared statement gets, per execution, a value of its column's type: a number counts up from a
random start of the marker's own (so two markers of one type in a batch never write the same key,
and two runs do not overwrite each other's rows), a text or blob carries that number, a uuid is new.
So a key written as `?` is a new row each execution, and the cost measured is that of a new row,
not an overwrite. Literals run as written (the same cells again each time); a write with no marker
at all is refused (node.statements.no_bind_markers): repeating it would only overwrite its cells,
which are not casstrace's to change.

The values go to the driver only: no trace, log or report holds them (the trace stores the
statement with its literals as `?`, node.statements.normalize).
"""

import datetime
import decimal
import ipaddress
import random
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from casstrace.errors import CasstraceError
from casstrace.node.statements import no_bind_markers

# A value of one type from a counter that differs at every execution.
Generator = Callable[[int], Any]

# Integer types: the range of their values (a counter wraps in it).
_INTEGER_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64, "counter": 64, "varint": 64}
_TEXT_BYTES = 16  # a text or blob value: the counter in 16 hex digits (a fixed size: its cost is one size)
_EPOCH = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)


def _integer(bits: int) -> Generator:
    half = 2 ** (bits - 1)
    return lambda n: (n % 2**bits) - half


def _scalar(typename: str) -> Generator | None:
    if typename in _INTEGER_BITS:
        return _integer(_INTEGER_BITS[typename])
    simple: dict[str, Generator] = {
        "text": lambda n: f"{n % 16**_TEXT_BYTES:0{_TEXT_BYTES}x}",
        "varchar": lambda n: f"{n % 16**_TEXT_BYTES:0{_TEXT_BYTES}x}",
        "ascii": lambda n: f"{n % 16**_TEXT_BYTES:0{_TEXT_BYTES}x}",
        "blob": lambda n: (n % 2 ** (8 * _TEXT_BYTES)).to_bytes(_TEXT_BYTES, "big"),
        "uuid": lambda n: uuid.UUID(int=n % 2**128, version=4),
        "timeuuid": lambda n: uuid.uuid1(clock_seq=n % 2**14),
        "boolean": lambda n: n % 2 == 1,
        "float": lambda n: float(n % 2**24),
        "double": lambda n: float(n % 2**53),
        "decimal": lambda n: decimal.Decimal(n % 10**18) / 100,
        "timestamp": lambda n: _EPOCH + datetime.timedelta(milliseconds=n % 2**40),
        "date": lambda n: datetime.date(2000, 1, 1) + datetime.timedelta(days=n % 2**16),
        "time": lambda n: datetime.time(n % 24, n % 60, (n // 60) % 60),
        "inet": lambda n: str(ipaddress.IPv4Address(n % 2**32)),
    }
    return simple.get(typename)


def generator(cql_type: Any) -> Generator:
    """The generator of a driver type (cassandra.cqltypes: `typename`, `subtypes`), or CasstraceError
    for a type casstrace cannot make values of."""
    typename = cql_type.typename
    subtypes: Sequence[Any] = getattr(cql_type, "subtypes", ()) or ()
    if typename == "frozen":
        return generator(subtypes[0])
    if typename in ("list", "set"):
        element = generator(subtypes[0])
        return lambda n: [element(n)] if typename == "list" else {element(n)}
    if typename == "map":
        key, value = generator(subtypes[0]), generator(subtypes[1])
        return lambda n: {key(n): value(n)}
    if typename == "tuple":
        fields = [generator(subtype) for subtype in subtypes]
        return lambda n: tuple(field(n) for field in fields)
    scalar = _scalar(typename)
    if scalar is None:
        raise CasstraceError(
            f"casstrace cannot generate values of a column of type {cql_type.cql_parameterized_type()} "
            "for the write's bind markers",
            "write that column's value into the statement as a literal, and the others as ?",
        )
    return scalar


class GeneratedValues:
    """The values of a prepared write's markers for each execution: `values(execution)`."""

    def __init__(self, column_types: Sequence[Any], seed: int | None = None):
        if not column_types:  # node.statements refuses such a write already; the node's count is the truth
            raise no_bind_markers("write")
        rng = random.Random(seed)
        self._generators = [generator(column_type) for column_type in column_types]
        # Each marker counts from its own random start: distinct keys between markers and between runs.
        self._starts = [rng.getrandbits(63) for _ in column_types]

    def values(self, execution: int) -> list[Any]:
        return [make(start + execution) for make, start in zip(self._generators, self._starts, strict=True)]
