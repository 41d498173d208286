"""Units of a run on several nodes: the routing key read from a statement (checked against the
driver's own serializers), the merge of partial traces (format 3), --hosts, /proc/net addresses."""

import json
import sqlite3
import uuid

import pytest
from cassandra import cqltypes
from cassandra.metadata import Murmur3Token

from casstrace.errors import CasstraceError
from casstrace.node.jvm import CassandraProcess
from casstrace.node.replicas import replica_set, routing_keys, serialize_literal
from casstrace.orchestration import targets
from casstrace.orchestration.agents import clock_offset
from casstrace.orchestration.targets import RemoteSettings, parse_hosts, plan_nodes
from casstrace.probes.proc.proc_fds import proc_net_host
from casstrace.traces import Trace, TraceWriter
from casstrace.traces.merge import combined_meta, merge_node
from casstrace.traces.schema import FORMAT_VERSION, SLOT_NS, THREAD_SLOT_NS

PROTOCOL_VERSION = 5


def table(*columns):
    return {"columns": [{"name": name, "type": kind, "kind": role} for name, kind, role in columns]}


STREAMS = table(("stream_id", "int", "partition_key"), ("ts", "int", "clustering"), ("c0", "blob", "regular"))


@pytest.mark.parametrize(
    "cql_type, literal, value",
    [
        ("int", "-7", -7),
        ("bigint", "9000000000", 9_000_000_000),
        ("smallint", "300", 300),
        ("tinyint", "-2", -2),
        ("varint", "123456789012345678901234567890", 123456789012345678901234567890),
        ("varint", "-129", -129),
        ("varint", "0", 0),
        ("varint", "128", 128),
        ("double", "2.5", 2.5),
        ("float", "0.25", 0.25),
        ("boolean", "true", True),
        ("text", "'it''s'", "it's"),
        ("ascii", "$$a'b$$", "a'b"),
        ("uuid", "6ba7b810-9dad-11d1-80b4-00c04fd430c8", uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")),
        ("blob", "0xCAFE", b"\xca\xfe"),
        ("timestamp", "1700000000000", 1_700_000_000_000),
        ("inet", "'10.1.2.3'", "10.1.2.3"),
    ],
)
def test_literals_serialize_as_the_driver_serializes_their_values(cql_type, literal, value):
    by_name = {
        "int": cqltypes.Int32Type,
        "bigint": cqltypes.LongType,
        "smallint": cqltypes.ShortType,
        "tinyint": cqltypes.ByteType,
        "varint": cqltypes.IntegerType,
        "double": cqltypes.DoubleType,
        "float": cqltypes.FloatType,
        "boolean": cqltypes.BooleanType,
        "text": cqltypes.UTF8Type,
        "ascii": cqltypes.AsciiType,
        "uuid": cqltypes.UUIDType,
        "blob": cqltypes.BytesType,
        "timestamp": cqltypes.DateType,
        "inet": cqltypes.InetAddressType,
    }
    driver_type = by_name[cql_type]
    assert serialize_literal(
        {"name": "k", "type": cql_type, "kind": "partition_key"}, literal
    ) == driver_type.serialize(value, PROTOCOL_VERSION)


def test_a_literal_that_does_not_fit_its_type_has_no_routing_key():
    assert serialize_literal({"name": "k", "type": "int", "kind": "partition_key"}, "'1'") is None
    assert serialize_literal({"name": "k", "type": "int", "kind": "partition_key"}, "9999999999") is None
    assert serialize_literal({"name": "k", "type": "date", "kind": "partition_key"}, "'2020-01-01'") is None


def test_routing_keys_of_a_statement():
    assert routing_keys("SELECT c0 FROM ks.streams WHERE stream_id = 1", STREAMS) == ([b"\0\0\0\1"], "")
    keys, _ = routing_keys(
        "select c0 from ks.streams where STREAM_ID in (1, 2) and ts > 5 limit 3 allow filtering", STREAMS
    )
    assert keys == [b"\0\0\0\1", b"\0\0\0\2"]
    # the token the driver computes from the key is Cassandra's (Murmur3 of the serialized key)
    assert Murmur3Token.from_key(keys[0]).value == -4069959284402364209
    for statement in (
        "SELECT * FROM ks.streams",
        "SELECT * FROM ks.streams WHERE token(stream_id) > 0",
        "SELECT * FROM ks.streams WHERE ts = 1 ALLOW FILTERING",
    ):
        assert routing_keys(statement, STREAMS) == (None, "no partition key")


def test_a_composite_partition_key_is_the_driver_s_composite():
    composite = table(("a", "text", "partition_key"), ("b", "int", "partition_key"), ("c", "int", "clustering"))
    keys, _ = routing_keys("SELECT * FROM t WHERE b = 2 AND a = 'x' -- a comment\n AND c = 1", composite)
    parts = [cqltypes.UTF8Type.serialize("x", PROTOCOL_VERSION), cqltypes.Int32Type.serialize(2, PROTOCOL_VERSION)]
    assert keys == [b"".join(len(part).to_bytes(2, "big") + part + b"\0" for part in parts)]
    assert routing_keys("SELECT * FROM t WHERE a = 'x'", composite) == (None, "no partition key")


def test_proc_net_addresses():
    assert proc_net_host("0100007F") == "127.0.0.1"
    assert proc_net_host("0200007F") == "127.0.0.2"
    assert proc_net_host("00000000") == "0.0.0.0"
    assert proc_net_host("0000000000000000FFFF00000300007F") == "127.0.0.3"
    assert proc_net_host("00000000000000000000000001000000") == "::1"


def test_hosts_option():
    assert parse_hosts(["127.0.0.2=root@db2,127.0.0.3=db3", "10.0.0.4=ssh://u@h:2222"]) == {
        "127.0.0.2": "root@db2",
        "127.0.0.3": "db3",
        "10.0.0.4": "ssh://u@h:2222",
    }
    assert parse_hosts(["admin@127.0.0.5"]) == {"127.0.0.5": "admin@127.0.0.5"}
    with pytest.raises(CasstraceError):
        parse_hosts(["=db2"])


# -- the merge -------------------------------------------------------------------------------------
START = 1_000_000_000


def partial(path, *, start_ns, data_path, read_bytes, lost=0, mapped=True, tid=77):
    """One node's trace as an agent writes it: 3 windows, a Data file and a socket, an event, latency."""
    writer = TraceWriter(path)
    writer.set_meta(
        backend="bcc",
        pid=tid,
        process="java",
        capture_start_ns=start_ns,
        capture_end_ns=start_ns + 10,
        slot_ns=SLOT_NS,
        lost_events=lost,
        unstreamed_events=1,
        measures={"syscalls": True, "mapped": mapped},
        cassandra={"data_file_directories": ["/d"]},
        thread_slot_ns=THREAD_SLOT_NS,
    )
    for label, execution in (("between", None), ("execution", 1), ("between", None)):
        writer.add_window(label, start_ns, start_ns, execution)
    socket_id = writer.file_id("tcp 127.0.0.1:9042->127.0.0.1:5000", "socket")
    data_id = writer.file_id(data_path, "file", size_bytes=100)
    writer.add_file_io(
        [
            {"window_id": 2, "file_id": data_id, "read_calls": 1, "read_bytes": read_bytes},
            {"window_id": 2, "file_id": socket_id, "write_calls": 1, "write_bytes": 5},
        ]
    )
    writer.add_coverage([{"window_id": 2, "file_id": data_id, "source": "syscall", "first_page": 0, "page_count": 1}])
    writer.add_events([(start_ns + 5, tid, "pread64", 9, data_id, 0, 4096, read_bytes, 100, 1)])
    writer.add_latency(
        [
            {"slot": 0, "syscall": "pread64", "target": "file", "bucket": 30, "count": 2},
            {"slot": 1, "syscall": "pread64", "target": "file", "bucket": 30, "count": 3},
        ]
    )
    writer.add_heatmap(
        [{"file_id": data_id, "source": "syscall", "slot": 0, "offset_bucket": 0, "calls": 1, "bytes": read_bytes}]
    )
    writer.add_threads({tid: "ReadStage-1"})
    writer.add_thread_io(
        [{"tid": tid, "slot": 2, "file_id": data_id, "read_calls": 1, "read_bytes": read_bytes, "cache_miss_pages": 0}]
    )
    return writer.finish()


def test_partial_traces_merge_into_one_per_node(tmp_path):
    one = partial(tmp_path / "1.trace", start_ns=START + 3 * SLOT_NS, data_path="/n1/Data.db", read_bytes=1000, lost=2)
    two = partial(
        tmp_path / "2.trace",
        start_ns=START + 14 * SLOT_NS + SLOT_NS // 3,
        data_path="/n2/Data.db",
        read_bytes=3000,
        lost=5,
        mapped=False,
    )
    writer = TraceWriter(tmp_path / "merged.trace")
    for label, execution in (("between", None), ("execution", 1), ("between", None)):
        writer.add_window(label, START, START, execution)
    shift = -7 * SLOT_NS  # node 2's clock runs 0.7 s ahead of ours
    merge_node(writer, one, 1, 0, START)
    merge_node(writer, two, 2, shift, START)
    writer.set_meta(**combined_meta([json.loads(json.dumps(Trace(one).meta)), Trace(two).meta], 0))
    with Trace(writer.finish()) as trace:
        assert trace.meta["format_version"] == FORMAT_VERSION == 5
        per_node = {
            (row["node_id"], row["path"]): row["read_bytes"]
            for row in trace.rows(
                "SELECT f.node_id, f.path, SUM(io.read_bytes) AS read_bytes"
                " FROM file_io io JOIN files f USING (file_id)"
                " GROUP BY f.file_id"
            )
        }
        assert per_node == {
            (1, "/n1/Data.db"): 1000,
            (2, "/n2/Data.db"): 3000,
            (1, "tcp 127.0.0.1:9042->127.0.0.1:5000"): 0,
            (2, "tcp 127.0.0.1:9042->127.0.0.1:5000"): 0,
        }
        assert len({row["file_id"] for row in trace.rows("SELECT file_id FROM files")}) == 4
        # every reference to a file followed the renumbering
        for table_name in ("file_io", "coverage", "events", "heatmap"):
            assert not trace.rows(f"SELECT * FROM {table_name} WHERE file_id NOT IN (SELECT file_id FROM files)")
        events = {row["node_id"]: row["ts_ns"] for row in trace.rows("SELECT node_id, ts_ns FROM events")}
        assert events == {1: START + 3 * SLOT_NS + 5, 2: START + 14 * SLOT_NS + SLOT_NS // 3 + 5 + shift}
        # slots re-based on the trace's start: node 1 by 3 slots; node 2 by round(7.33) = 7
        latency = {(row["node_id"], row["slot"]): row["count"] for row in trace.rows("SELECT * FROM latency")}
        assert latency == {(1, 3): 2, (1, 4): 3, (2, 7): 2, (2, 8): 3}
        assert {(row["node_id"], row["tid"]) for row in trace.rows("SELECT * FROM threads")} == {(1, 77), (2, 77)}
        # thread slots (1 ms) too, each node's from its own capture's start: 300 + 2; 1433.3 - 700 + 2
        thread_io = {(row["node_id"], row["tid"], row["slot"]) for row in trace.rows("SELECT * FROM thread_io")}
        assert thread_io == {(1, 77, 302), (2, 77, 735)}
        assert trace.meta["thread_slot_ns"] == THREAD_SLOT_NS
        assert trace.meta["lost_events"] == 7 and trace.meta["unstreamed_events"] == 2
        assert trace.meta["measures"] == {"syscalls": True, "mapped": False}


def test_a_partial_of_another_format_or_other_windows_is_refused(tmp_path):
    one = partial(tmp_path / "1.trace", start_ns=START, data_path="/n1/Data.db", read_bytes=1)
    writer = TraceWriter(tmp_path / "merged.trace")
    writer.add_window("capture", START, START)
    with pytest.raises(CasstraceError, match="3 windows where the run has 1"):
        merge_node(writer, one, 1, 0, START)
    with sqlite3.connect(one) as db:
        db.execute("UPDATE meta SET value = '2' WHERE key = 'format_version'")
    with pytest.raises(CasstraceError, match="trace format 2"):
        merge_node(writer, one, 1, 0, START)
    writer.discard()


# -- the replica set and the plan ------------------------------------------------------------------
class FakeHost:
    def __init__(self, address, rack="rack1"):
        self.address, self.datacenter, self.rack = address, "dc1", rack
        self.endpoint = type("Endpoint", (), {"port": 9042})()


class FakeCluster:
    """The driver's Cluster as replica_set uses it: hosts, a keyspace refresh, the token map's replicas."""

    def __init__(self, hosts, replicas_by_key):
        self.hosts, self.replicas_by_key, self.refreshed = hosts, replicas_by_key, []
        self.metadata = self

    def all_hosts(self):
        return list(self.hosts)

    def refresh_keyspace_metadata(self, keyspace):
        self.refreshed.append(keyspace)

    def get_replicas(self, keyspace, key):
        return self.replicas_by_key.get(key, [])


HOSTS = [FakeHost(f"10.0.0.{i}") for i in (1, 2, 3, 4)]
ONE_KEY = b"\0\0\0\1"


def test_the_replica_set_is_the_coordinator_then_the_token_map_s_replicas():
    cluster = FakeCluster(HOSTS, {ONE_KEY: [HOSTS[2], HOSTS[1]]})
    found = replica_set(cluster, "10.0.0.1", 9042, "ks", STREAMS, "SELECT c0 FROM ks.streams WHERE stream_id = 1")
    assert [(n.address, n.replica, n.coordinator) for n in found.nodes] == [
        ("10.0.0.1", False, True),
        ("10.0.0.3", True, False),
        ("10.0.0.2", True, False),
    ]
    assert (found.routing, found.partitions, cluster.refreshed) == ("token map", 1, ["ks"])
    coordinating_replica = replica_set(
        cluster, "10.0.0.2", 9042, "ks", STREAMS, "SELECT c0 FROM ks.streams WHERE stream_id = 1"
    )
    assert [(n.address, n.coordinator) for n in coordinating_replica.nodes] == [("10.0.0.2", True), ("10.0.0.3", False)]


def test_a_statement_with_no_partition_involves_every_node():
    found = replica_set(FakeCluster(HOSTS, {}), "10.0.0.1", 9042, "ks", STREAMS, "SELECT c0 FROM ks.streams")
    assert [n.address for n in found.nodes] == [h.address for h in HOSTS] and all(n.replica for n in found.nodes)
    assert (found.routing, found.partitions) == ("all nodes (no partition key)", 0)
    unknown = replica_set(
        FakeCluster(HOSTS, {}),
        "10.0.0.1",
        9042,
        "ks",
        table(("d", "date", "partition_key")),
        "SELECT * FROM ks.t WHERE d = '2020-01-01'",
    )
    assert unknown.routing == "all nodes (cannot read the date value of d)"


def test_the_plan_captures_what_runs_here_and_says_why_not_the_rest(monkeypatch):
    found = replica_set(
        FakeCluster(HOSTS, {ONE_KEY: HOSTS[:3]}),
        "10.0.0.1",
        9042,
        "ks",
        STREAMS,
        "SELECT c0 FROM ks.streams WHERE stream_id = 1",
    )
    here = {"10.0.0.2": 222}
    monkeypatch.setattr(targets, "serving_jvms", dict)
    monkeypatch.setattr(
        targets,
        "cassandra_at",
        lambda address, port, serving: CassandraProcess(here[address], ()) if address in here else None,
    )
    coordinator = CassandraProcess(111, ())
    plan = plan_nodes(found, coordinator, RemoteSettings(), "bcc", [])
    assert [
        (p.node_id, p.node.address, p.target and p.target.options.pid, p.target and p.target.ssh, p.not_captured)
        for p in plan
    ] == [
        (1, "10.0.0.1", 111, None, None),
        (2, "10.0.0.2", 222, None, None),
        (3, "10.0.0.3", None, None, "no JVM on this machine; give --ssh"),
    ]
    over_ssh = plan_nodes(found, coordinator, RemoteSettings(ssh=True, hosts={"10.0.0.2": "db2"}), "bcc", [])
    assert [(p.target.ssh, p.target.options.pid) for p in over_ssh] == [(None, 111), ("db2", None), ("10.0.0.3", None)]
    assert over_ssh[2].target.command()[:3] == ["ssh", "-o", "BatchMode=yes"]
    with pytest.raises(CasstraceError, match=r"10\.0\.0\.9, which is no node of this query"):
        plan_nodes(found, coordinator, RemoteSettings(hosts={"10.0.0.9": "x"}), "bcc", [])


def test_a_remote_clock_s_offset_is_read_at_the_midpoint_of_the_shortest_round_trip():
    """A remote clock 5 s ahead, read over round trips with uneven delays: the shortest one's
    midpoint gives the offset within half that round trip."""
    offset_ns = 5_000_000_000
    samples = []
    for sent, out_ns, back_ns in (
        (1_000_000, 9_000_000, 1_000_000),
        (50_000_000, 300_000, 500_000),
        (90_000_000, 2_000_000, 30_000_000),
    ):
        samples.append((sent, sent + out_ns + offset_ns, sent + out_ns + back_ns))
    measured, round_trip = clock_offset(samples)
    assert round_trip == 800_000
    assert abs(measured - offset_ns) <= round_trip // 2
