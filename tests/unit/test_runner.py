"""orchestration/runner.py's plan step, without a node: the options checked before anything connects,
and a RunPlan's refusals before any probe attaches (the discovery that builds it needs a node:
tests/integration/test_run.py, test_replicas_cluster.py); the statement as the trace stores it."""

import dataclasses
from datetime import datetime

import pytest

from casstrace.analyses.query import parse_select
from casstrace.errors import CasstraceError
from casstrace.node.connection import ConnectionSettings
from casstrace.node.replicas import ClusterNode, ReplicaSet
from casstrace.orchestration.agents import AgentOptions, AgentTarget
from casstrace.orchestration.runner import (
    RunOptions,
    RunPlan,
    check_backend,
    check_options,
    default_trace_path,
    narrowed,
    stored_statement,
)
from casstrace.orchestration.targets import PlannedNode
from casstrace.traces.capabilities import Capability
from casstrace.traces.meta import CassandraMeta

QUERY = "SELECT c0 FROM demo.wide WHERE id = 1"


def options(**changed) -> RunOptions:
    return RunOptions(**{"query": QUERY, "connection": ConnectionSettings(port=1), **changed})


def plan(*ssh: str | None) -> RunPlan:
    """A plan of one node per `ssh` (None: this machine's), each captured."""
    nodes = [
        ClusterNode(f"127.0.0.{n}", 9042, "dc1", "r1", replica=True, coordinator=n == 1) for n in range(1, len(ssh) + 1)
    ]
    planned = [
        PlannedNode(n, node, AgentTarget(n, AgentOptions(node.address, node.port), ssh=destination))
        for n, (node, destination) in enumerate(zip(nodes, ssh), start=1)
    ]
    replicas = ReplicaSet(tuple(nodes), "demo", "TOKEN_MAP", 1)
    return RunPlan("demo", "127.0.0.1", None, CassandraMeta(), replicas, planned)


def test_options_are_checked_before_anything_connects():
    assert check_options(options()) == QUERY
    with pytest.raises(CasstraceError, match="--repeat"):
        check_options(options(repeat=0))
    with pytest.raises(CasstraceError, match="--warmup"):
        check_options(options(warmup=-1))
    with pytest.raises(CasstraceError):
        check_options(options(query="DELETE FROM demo.wide WHERE id = 1"))  # a run only reads
    check_backend(options(profile=True), frozenset({Capability.PROFILE_JOIN}))
    with pytest.raises(CasstraceError, match="--profile"):
        check_backend(options(profile=True), frozenset())


def test_a_plan_of_one_local_node_is_captured_here():
    one = plan(None)
    assert not one.several and [t.node_id for t in one.targets] == [1]
    one.check(options(profile=True, all_syscalls=True))  # one JVM here: both allowed


@pytest.mark.parametrize("ssh", [(None, None), ("node1",)])
def test_a_plan_captured_by_agents_refuses_what_only_one_local_jvm_can_do(ssh):
    several = plan(*ssh)
    assert several.several
    several.check(options())
    with pytest.raises(CasstraceError, match="--profile"):
        several.check(options(profile=True))
    with pytest.raises(CasstraceError, match="--spectrogram all"):
        several.check(options(all_syscalls=True))


def test_a_plan_with_no_node_to_capture_says_why():
    nobody = plan(None)
    nobody.nodes[0] = PlannedNode(1, nobody.nodes[0].node, None, "its JVM runs on another machine")
    assert nobody.targets == []
    with pytest.raises(CasstraceError):  # no JVM listens on port 1 here: find_cassandra's words, or the plan's
        nobody.check(options())


STORED = [
    ("SELECT c0 FROM demo.wide WHERE id = 1", "SELECT c0 FROM demo.wide WHERE id = ?"),
    (
        "SELECT * FROM ks.t WHERE id IN (1, 2, 3) AND ts IN ('2026-01-01', '2026-01-02') LIMIT 10",
        "SELECT * FROM ks.t WHERE id IN (?, ?, ?) AND ts IN (?, ?) LIMIT ?",
    ),
    (
        "select count(*) from ks.t where token(id) > -9223372036854775808 and b = 0x0a allow filtering;",
        "select count(*) from ks.t where token(id) > ? and b = ? allow filtering",
    ),
    (
        "SELECT attrs['k'], \"Tags\" FROM ks.t  WHERE id = 7e3 AND f = true -- a comment",
        'SELECT attrs[?], "Tags" FROM ks.t WHERE id = ? AND f = ?',
    ),
    (
        "SELECT DISTINCT id FROM ks.t WHERE id = 5f1b2c3d-0000-4000-8000-00000000000a PER PARTITION LIMIT 2",
        "SELECT DISTINCT id FROM ks.t WHERE id = ? PER PARTITION LIMIT ?",
    ),
]


@pytest.mark.parametrize("query, stored", STORED)
def test_the_trace_stores_the_statement_with_its_literals_as_placeholders(query, stored):
    assert stored_statement(query, options()) == stored
    # what the analyses read of it is the same: table, columns, restrictions, each IN list's length, LIMIT
    read = parse_select(stored)
    assert read is not None and dataclasses.replace(read, text=query) == parse_select(query)
    assert stored_statement(query, options(keep_literals=True)) == query  # run --keep-literals


def test_a_default_trace_name_holds_no_literal():
    name = default_trace_path("SELECT * FROM ks.t WHERE k = 12345 AND c = 'x'", datetime(2026, 1, 22, 16, 55, 30)).name
    assert name == "20260122-165530-select-from-ks-t-where-k.trace"


def test_a_session_is_placed_within_the_nodes_take_and_answer_when_they_lie_within_the_clients():
    client = (1_000_000, 2_000_000)
    assert narrowed(client, (1_200_000, 1_700_000)) == (1_200_000, 1_700_000)
    assert narrowed(client, None) == client
    # a span the client's does not hold (another clock, or not this execution's): the client's
    assert narrowed(client, (900_000, 1_700_000)) == client
    assert narrowed(client, (1_200_000, 2_100_000)) == client
