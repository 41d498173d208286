"""A write's generated values: of every type the driver can send, new at every execution, distinct
between markers of one type; a write without a marker, or a type casstrace cannot make, is refused."""

import pytest
from cassandra.cqltypes import lookup_casstype

from casstrace.errors import CasstraceError
from casstrace.node.generated_values import GeneratedValues

PROTOCOL = 5
M = "org.apache.cassandra.db.marshal."
TYPES = {
    "tinyint": "ByteType",
    "smallint": "ShortType",
    "int": "Int32Type",
    "bigint": "LongType",
    "varint": "IntegerType",
    "text": "UTF8Type",
    "ascii": "AsciiType",
    "blob": "BytesType",
    "uuid": "UUIDType",
    "timeuuid": "TimeUUIDType",
    "float": "FloatType",
    "double": "DoubleType",
    "decimal": "DecimalType",
    "timestamp": "TimestampType",
    "date": "SimpleDateType",
    "time": "TimeType",
    "inet": "InetAddressType",
    "list<int>": f"ListType({M}Int32Type)",
    "set<text>": f"SetType({M}UTF8Type)",
    "map<text, bigint>": f"MapType({M}UTF8Type,{M}LongType)",
    "frozen<list<uuid>>": f"FrozenType({M}ListType({M}UUIDType))",
    "tuple<int, text>": f"TupleType({M}Int32Type,{M}UTF8Type)",
}


def cql_type(name: str):
    return lookup_casstype(M + TYPES[name])


@pytest.mark.parametrize("name", list(TYPES))
def test_every_execution_gets_a_new_value_the_driver_serializes(name):
    column = cql_type(name)
    generated = GeneratedValues([column], seed=7)
    values = [generated.values(execution)[0] for execution in range(1, 201)]
    # the driver's own serializer is the truth that the value is of the column's type
    serialized = [column.serialize(value, PROTOCOL) for value in values]
    assert len(set(serialized)) == 200, f"{name}: a value repeated within 200 executions"


def test_two_markers_of_one_type_never_write_the_same_key_in_an_execution():
    generated = GeneratedValues([cql_type("bigint")] * 4, seed=1)
    for execution in range(1, 50):
        assert len(set(generated.values(execution))) == 4


def test_two_runs_start_from_different_values():
    first, second = GeneratedValues([cql_type("bigint")]), GeneratedValues([cql_type("bigint")])
    assert first.values(1) != second.values(1)


def test_a_write_without_a_marker_is_refused():
    with pytest.raises(CasstraceError, match="without bind markers") as refused:
        GeneratedValues([])
    assert "?" in str(refused.value.fix)


def test_a_type_casstrace_cannot_make_is_refused_with_a_fix():
    duration = lookup_casstype(M + "DurationType")
    with pytest.raises(CasstraceError, match="cannot generate values") as refused:
        GeneratedValues([cql_type("int"), duration])
    assert "literal" in str(refused.value.fix)
