"""Query shapes paged safely (issue 33 items 1 and 4, issue 37 item 7), on real nodes.

Aggregates: `count(*)` of one partition of 10,000 and of 200,000 small rows, loaded and flushed
into the test node (a table comment marks a finished load). Cassandra pages the rows it aggregates
internally at the request's page size; at 1 row a page each internal page re-reads its way into the
partition, which made the node read 139 MiB for a partition of a few hundred KB and time out. The
truth: the count returned equals the rows loaded, the run completes NOT FLAGGED, and the node's
data read is within 2x of the necessary read (the partition's chunks).
"""

from pathlib import Path

import pytest
from cassandra.concurrent import execute_concurrent_with_args

from casstrace.analyses.findings import live_rows, trace_counts
from casstrace.node.paging import MAX_PAGE_ROWS
from casstrace.sandbox.control import Sandbox
from casstrace.traces import Trace
from verdict_tables import judged, traced

pytestmark = pytest.mark.integration

KEYSPACE = "casstrace_shapes"
LOADED = "casstrace query shapes, loaded v1"
COUNTED = {1: 10_000, 2: 200_000}  # partition -> its rows (an int clustering key, a 20 B text value)


def load_counted(node: Sandbox) -> None:
    with node.connect() as session:
        marked = list(
            session.execute(
                "SELECT comment FROM system_schema.tables WHERE keyspace_name = %s AND table_name = 'counted'",
                (KEYSPACE,),
            )
        )
        if marked and marked[0].comment == LOADED:
            return
        session.execute(
            f"CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} "
            "WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
        )
        session.execute(f"DROP TABLE IF EXISTS {KEYSPACE}.counted")
        session.execute(f"CREATE TABLE {KEYSPACE}.counted (pk int, ck int, v text, PRIMARY KEY (pk, ck))")
        insert = session.prepare(f"INSERT INTO {KEYSPACE}.counted (pk, ck, v) VALUES (?, ?, ?)")
        for pk, rows in COUNTED.items():
            execute_concurrent_with_args(
                session, insert, [(pk, ck, f"value {ck:014d}") for ck in range(rows)], concurrency=64
            )
        node.nodetool("flush", KEYSPACE, "counted")
        session.execute(f"ALTER TABLE {KEYSPACE}.counted WITH comment = '{LOADED}'")


@pytest.fixture(scope="module")
def counted(sandbox: Sandbox) -> Sandbox:
    load_counted(sandbox)
    return sandbox


@pytest.mark.parametrize("pk", list(COUNTED), ids=[f"{rows}-rows" for rows in COUNTED.values()])
def test_count_of_a_partition_completes_within_twice_the_necessary_read(
    counted: Sandbox, pk: int, tmp_path: Path
) -> None:
    out = tmp_path / "count.trace"
    analysis = traced(counted, f"SELECT count(*) FROM {KEYSPACE}.counted WHERE pk = {pk}", out)
    with Trace(out) as trace:
        paging = trace.meta["paging"]
        executions = trace.rows("SELECT kind, rows, error FROM executions")
    assert all(e["error"] is None and e["rows"] == 1 for e in executions), executions
    # not sampled, and paged at what the table's rows allow: never 1 row a page
    assert paging["chosen"] and paging["sampled_row_bytes"] is None
    assert paging["page_size"] == MAX_PAGE_ROWS, paging
    assert analysis.verdict.status == "not flagged", judged(analysis)
    over = analysis.overall.over_necessary
    assert over is not None and over <= 2.0, judged(analysis)
    # Cassandra's own count of the rows it read for the aggregate (its trace): the partition, once
    assert live_rows(trace_counts(analysis.query_trace)) == COUNTED[pk], judged(analysis)
