"""A trace of several nodes (format 3), built from known events: roles from Cassandra's own query
trace, per-node figures, the consistency level in the verdict, a node not captured named."""

import json

from casstrace.analyses import analyse
from casstrace.analyses.nodes import readers_per_execution, roles
from casstrace.reports import ReportOptions, render
from synthetic_traces import QUORUM_EVENTS, WIDE_DATA_READ, WIDE_WIRE, replica_reads


def _session(events):
    return [
        {
            "session_id": "s",
            "duration_us": 1,
            "events": [
                {"activity": activity, "source_elapsed_us": 1, "thread": thread, "source": source}
                for source, thread, activity in events
            ],
        }
    ]


def test_roles_come_from_the_query_trace_and_the_coordinator():
    assert roles(_session(QUORUM_EVENTS), ["127.0.0.1"]) == {
        "127.0.0.1": ["coordinator", "data replica"],
        "127.0.0.2": ["digest replica"],
    }
    # The coordinator not a replica: it sends the data request too, and reads nothing itself.
    remote = [
        ("127.0.0.3", "Native-Transport-Requests-1", "reading data from /127.0.0.1:7000"),
        ("127.0.0.3", "Native-Transport-Requests-1", "reading digest from /127.0.0.2:7000"),
        ("127.0.0.1", "ReadStage-1", "Executing single-partition query on wide"),
        ("127.0.0.2", "ReadStage-1", "Executing single-partition query on wide"),
        ("127.0.0.3", "ReadStage-1", "speculating read retry on Full(/127.0.0.4:7000,(-1,0])"),
        ("127.0.0.3", "ReadStage-1", "Digest mismatch: Mismatch for key DecoratedKey(1)"),
        ("127.0.0.3", "ReadStage-1", "Enqueuing full data read to Full(/127.0.0.2:7000,(-1,0])"),
    ]
    assert roles(_session(remote), ["127.0.0.3"]) == {
        "127.0.0.3": ["coordinator"],
        "127.0.0.1": ["data replica"],
        "127.0.0.2": ["digest replica", "read repair"],
        "127.0.0.4": ["speculative retry"],
    }


def test_quorum_reads_on_two_nodes_and_the_verdict_says_so(tmp_path):
    analysis = analyse(replica_reads(tmp_path / "quorum.trace"))
    by_address = {node.address: node for node in analysis.nodes}
    assert [by_address[a].data_read_bytes for a in ("127.0.0.1", "127.0.0.2", "127.0.0.3")] == [
        WIDE_DATA_READ,
        WIDE_DATA_READ,
        0,
    ]
    assert by_address["127.0.0.1"].role == "coordinator + data replica"
    assert by_address["127.0.0.2"].role == "digest replica"
    assert by_address["127.0.0.1"].wire_to_client_bytes == WIDE_WIRE
    assert by_address["127.0.0.2"].wire_to_nodes_bytes == 160
    assert analysis.overall.data_read_bytes == 2 * WIDE_DATA_READ
    assert readers_per_execution(analysis.nodes) == {2: 2}  # the measured execution: two replicas read
    assert analysis.verdict.status == "flagged"
    assert (
        "QUORUM: 2 replicas each read the whole rows (1 data read, 1 digest read in Cassandra's trace)"
        in analysis.verdict.summary
    )
    assert "at least" not in analysis.verdict.summary
    assert any(f.cause == "replica_reads" for f in analysis.findings)
    # Every format shows the nodes; JSON per node and per file.
    document = json.loads(render(analysis, "json", ReportOptions()))
    assert [(n["address"], n["role"], n["data_read_bytes"]) for n in document["nodes"]] == [
        ("127.0.0.1", "coordinator + data replica", WIDE_DATA_READ),
        ("127.0.0.2", "digest replica", WIDE_DATA_READ),
        ("127.0.0.3", "replica, no part in the traced read", 0),
    ]
    assert {f["node"] for f in document["files"] if f["component"] == "Data"} == {"127.0.0.1", "127.0.0.2"}
    assert document["consistency"] == "QUORUM"
    for fmt in ("text", "md", "html"):
        shown = render(analysis, fmt, ReportOptions())
        assert "Nodes at QUORUM" in shown and "digest replica" in shown, fmt
    # Each file with its node (the nodes' data directories are alike), the md's top files too.
    top_files = render(analysis, "md", ReportOptions()).split("#### Top files")[1]
    assert r"| \[127.0.0.1\] /sandbox/node1/" in top_files and r"| \[127.0.0.2\] /sandbox/node2/" in top_files


def test_one_reads_on_one_node(tmp_path):
    analysis = analyse(replica_reads(tmp_path / "one.trace", consistency="ONE"))
    assert [node.address for node in analysis.nodes if node.read_data] == ["127.0.0.1"]
    assert "ONE: 1 replica read the whole rows (1 data read in Cassandra's trace)" in analysis.verdict.summary
    assert not any(f.cause == "replica_reads" for f in analysis.findings)


def test_a_node_not_captured_is_named_and_makes_the_figures_a_lower_bound(tmp_path):
    analysis = analyse(
        replica_reads(
            tmp_path / "down.trace",
            consistency="ONE",
            third="down: no Cassandra JVM serves 127.0.0.3:9042 on this machine",
        )
    )
    missing = analysis.nodes[2]
    assert not missing.captured and missing.data_read_bytes is None and missing.read_bytes is None
    summary = analysis.verdict.summary
    assert summary.startswith("Read at least ")
    assert "Not captured: 127.0.0.3 (replica, no part in the traced read): down: no Cassandra JVM" in summary
    assert "lower bound" in summary
    document = json.loads(render(analysis, "json", ReportOptions()))
    assert document["nodes"][2]["data_read_bytes"] is None and document["nodes"][2]["captured"] is False
    assert "not captured: down: no Cassandra JVM" in render(analysis, "text", ReportOptions())


def test_a_speculative_read_is_named_with_what_its_figures_miss(tmp_path):
    speculation = [("127.0.0.1", "ReadStage-2", "speculating read retry on Full(/127.0.0.3:7000,(-1,0])")]
    analysis = analyse(replica_reads(tmp_path / "speculative.trace", extra_events=speculation))
    assert analysis.nodes[2].roles == ["speculative retry"]
    (note,) = [note for note in analysis.verdict.notes if "speculatively" in note]
    assert note.startswith("127.0.0.3 read speculatively") and "began inside an execution's window" in note
    assert not any("speculatively" in note for note in analyse(replica_reads(tmp_path / "plain.trace")).verdict.notes)
    assert "127.0.0.3 read speculatively" in render(analysis, "text", ReportOptions())


def test_compare_one_with_quorum_shows_what_the_level_costs(tmp_path):
    from casstrace.analyses.compare import compare
    from casstrace.reports.comparison import document

    one = analyse(replica_reads(tmp_path / "one.trace", consistency="ONE"))
    quorum = analyse(replica_reads(tmp_path / "quorum.trace"))
    comparison = compare(one, quorum, labels=("ONE", "QUORUM"))
    replicas = comparison.metric("replicas_read")
    assert (replicas.first, replicas.second) == (1, 2)
    assert comparison.metric("data_read_bytes").ratio == 2
    assert (
        "What the consistency level costs: at QUORUM 2 replicas read per execution, at ONE 1 replica."
        in comparison.summary
    )
    data = document(comparison).data
    assert (data["first"]["consistency"], data["second"]["replicas_read"]) == ("ONE", 2)
    assert any(f["name"].startswith("[127.0.0.2] ") for f in data["second"]["files"])
