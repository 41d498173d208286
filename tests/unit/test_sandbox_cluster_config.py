"""A sandbox of several nodes, without starting any: each node's configuration, its tokens, the
refusals that come before any JVM, and the reading of `nodetool status`."""

import dataclasses
import json
from pathlib import Path

import pytest

from casstrace.errors import CasstraceError
from casstrace.sandbox.cluster import SandboxCluster, ring_states
from casstrace.sandbox.config import cassandra_yaml, daemon_command
from casstrace.sandbox.settings import MURMUR3_RING, Layout, Settings, node_token

VERSION = "5.0.9"


def test_node_k_listens_on_its_own_address_with_node_1_as_seed(tmp_path: Path) -> None:
    settings = Settings(
        VERSION,
        native_port=31042,
        jmx_port=31191,
        storage_port=30991,
        node=2,
        nodes=3,
        cluster_name="casstrace sandbox c",
    )
    yaml = cassandra_yaml(Layout(tmp_path / "node2"), settings)
    for key in ("listen_address", "rpc_address", "broadcast_address", "broadcast_rpc_address"):
        assert f"\n{key}: 127.0.0.2\n" in yaml
    assert '- seeds: "127.0.0.1:30991"' in yaml
    assert "\nstorage_port: 30991\n" in yaml and "\nnative_transport_port: 31042\n" in yaml
    assert f"\ninitial_token: {MURMUR3_RING // 3}\n" in yaml and "\nnum_tokens: 1\n" in yaml
    assert "\ncluster_name: casstrace sandbox c\n" in yaml
    command = daemon_command("java", [], Layout(tmp_path / "node2"), settings)
    assert "-Dcassandra.jmx.local.port=31191" in command


def test_one_node_keeps_the_configuration_it_always_had(tmp_path: Path) -> None:
    yaml = cassandra_yaml(Layout(tmp_path), Settings(VERSION))
    assert "\ninitial_token: 0\n" in yaml and "\ncluster_name: casstrace sandbox\n" in yaml
    assert "\nlisten_address: 127.0.0.1\n" in yaml


@pytest.mark.parametrize("nodes", [1, 2, 3, 9])
def test_tokens_cut_the_ring_in_equal_parts(nodes: int) -> None:
    tokens = [node_token(k, nodes) for k in range(1, nodes + 1)]
    assert tokens[0] == 0
    assert all(-(2**63) <= token < 2**63 for token in tokens)
    ring = sorted(token % MURMUR3_RING for token in tokens)
    gaps = [(b - a) for a, b in zip(ring, ring[1:] + [ring[0] + MURMUR3_RING])]
    assert max(gaps) - min(gaps) <= nodes


@pytest.mark.parametrize(
    "options, fragment",
    [
        (dict(nodes=10), "use --nodes 1 to 9"),
        (dict(nodes=0), "use --nodes 1 to 9"),
        (dict(node=4, nodes=3), "no node 4 in a sandbox of 3"),
    ],
)
def test_impossible_clusters_are_refused(options: dict[str, int], fragment: str) -> None:
    with pytest.raises(CasstraceError, match=fragment):
        Settings(VERSION, **options)  # type: ignore[arg-type]


def _existing(tmp_path: Path, nodes: int) -> SandboxCluster:
    settings = Settings(VERSION, native_port=31042, jmx_port=31190, nodes=nodes)
    (tmp_path / "sandbox.json").write_text(json.dumps(dataclasses.asdict(settings)))
    return SandboxCluster(tmp_path)


def test_a_sandbox_does_not_change_its_number_of_nodes(tmp_path: Path) -> None:
    cluster = _existing(tmp_path, nodes=1)
    with pytest.raises(CasstraceError, match="has 1 node; a node added to its data") as refused:
        cluster.start(nodes=3, progress=lambda _: None)
    assert "another --data-dir" in (refused.value.fix or "")


def test_node_k_starts_alone_only_with_the_settings_it_has(tmp_path: Path) -> None:
    cluster = _existing(tmp_path, nodes=3)
    with pytest.raises(CasstraceError, match="--node starts one node"):
        cluster.start(only=2, heap="2G", progress=lambda _: None)
    with pytest.raises(CasstraceError, match="has no node 4 \\(it has 3\\)"):
        cluster.node(4)
    assert [node.data_dir for node in cluster.nodes] == [tmp_path, tmp_path / "node2", tmp_path / "node3"]


def test_ring_states_from_nodetool_status() -> None:
    output = """\
Datacenter: datacenter1
=======================
Status=Up/Down
|/ State=Normal/Leaving/Joining/Moving
--  Address    Load        Tokens  Owns (effective)  Host ID                               Rack
UN  127.0.0.3  114.41 KiB  1       100.0%            f62e24ba-481e-4fbf-8df9-f3884da8fa71  rack1
DN  127.0.0.1  114.35 KiB  1       100.0%            6fa392b9-ff43-4678-9f8a-c2f5928c027a  rack1
UJ  127.0.0.2  114.41 KiB  1       100.0%            957ed3d7-53f1-492c-9e59-3c38367210a2  rack1
"""
    assert ring_states(output) == {"127.0.0.3": "UN", "127.0.0.1": "DN", "127.0.0.2": "UJ"}
