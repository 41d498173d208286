"""sandbox/tables.py without a node: the plan's refusals, the tables' names, jcmd's heap figure
(tests/integration/test_sweep_tables.py runs the study)."""

import pytest

from casstrace.errors import CasstraceError
from casstrace.sandbox.tables import TablesPlan, parse_heap_used, table_names

HEAP_INFO = """23765:
 garbage-first heap   total 1048576K, used 474092K [0x00000000c0000000, 0x0000000100000000)
  region size 1024K, 78 young (79872K), 4 survivors (4096K)
 Metaspace       used 61039K, committed 61696K, reserved 1114112K
"""


def test_the_heap_in_use_is_the_heaps_not_the_metaspaces():
    assert parse_heap_used(HEAP_INFO) == 474_092 * 1024
    assert parse_heap_used("jcmd: no such process") is None


def test_each_point_has_tables_of_its_own():
    assert table_names(3) == ["n3_t0000", "n3_t0001", "n3_t0002"]
    assert not set(table_names(10)) & set(table_names(100))


@pytest.mark.parametrize(
    "plan, words",
    [
        (TablesPlan((), 10, 100), "table counts of 1 or more"),
        (TablesPlan((1, 50), 49, 100), "49 writes cannot reach each of 50 tables"),
        (TablesPlan((1,), 10, 16 << 20), "more than Cassandra takes in one write"),
    ],
)
def test_a_plan_the_node_cannot_run_is_refused(plan, words):
    with pytest.raises(CasstraceError, match=words):
        plan.check()
    TablesPlan((1, 50), 50, 100).check()
