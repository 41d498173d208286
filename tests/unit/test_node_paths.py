"""Where a node casstrace did not start keeps its files, from what it was started with: the
data_file_directories of its cassandra.yaml, paths as the node names them."""

import os

import pytest

from casstrace.node import context
from casstrace.node.context import data_directories, yaml_data_directories
from casstrace.node.jvm import CassandraProcess
from casstrace.probes.proc.proc_fds import in_root
from casstrace.reports import common


def started_with(tmp_path, yaml: str) -> CassandraProcess:
    config = tmp_path / "cassandra.yaml"
    config.write_text(yaml)
    # This process stands for the JVM: it sees our own file tree, so its paths are ours.
    return CassandraProcess(
        os.getpid(), ("java", f"-Dcassandra.config=file://{config}", "org.apache.cassandra.service.CassandraDaemon")
    )


@pytest.mark.parametrize(
    "yaml, expected",
    [
        (
            "cluster_name: x\ndata_file_directories:\n  - /var/lib/cassandra/data\ncommitlog_directory: /c\n",
            ["/var/lib/cassandra/data"],
        ),
        (
            "data_file_directories:\n    # two disks\n    - '/disk1/data'   # the first\n\n"
            '    - "/disk2/data"\nx: 1\n',
            ["/disk1/data", "/disk2/data"],
        ),
        ("data_file_directories: [/disk1/data, '/disk2/data']  # flow style\n", ["/disk1/data", "/disk2/data"]),
        ("# data_file_directories:\n#     - /var/lib/cassandra/data\ncluster_name: x\n", []),
        ("cluster_name: x\n", []),
    ],
)
def test_data_file_directories_of_the_yaml(tmp_path, yaml, expected):
    assert yaml_data_directories(started_with(tmp_path, yaml)) == expected


def test_the_yaml_answers_when_the_node_does_not(tmp_path):
    process = started_with(tmp_path, "data_file_directories:\n  - /srv/cassandra/data\n")
    assert data_directories({}, process) == ["/srv/cassandra/data"]
    # The node's own settings (system_views.settings) come first.
    assert data_directories({"data_file_directories": "[/a, /b]"}, process) == ["/a", "/b"]


def test_no_yaml_on_the_command_line_or_none_readable(tmp_path):
    assert yaml_data_directories(CassandraProcess(os.getpid(), ("java",))) == []
    missing = CassandraProcess(os.getpid(), (f"-Dcassandra.config=file://{tmp_path}/none.yaml",))
    assert yaml_data_directories(missing) == []


def test_paths_of_a_process_that_sees_our_file_tree_are_ours():
    assert in_root(os.getpid(), "/var/lib/cassandra/data") == "/var/lib/cassandra/data"
    assert in_root(os.getpid(), "relative/path") == "relative/path"


def test_the_commit_logs_modes_are_kept_as_the_node_says_them_and_shown_in_words():
    settings = {"commitlog_sync": "batch", "commitlog_disk_access_mode": "legacy", "commitlog_sync_period": "0ms"}
    meta = context.commit_log(settings)
    assert meta == {"commitlog_sync": "batch", "commitlog_disk_access_mode": "legacy"}
    assert common.commit_log(dict(meta)) == "batch sync, segments legacy"
    assert context.commit_log({}) == {}  # 3.x: no settings table
    assert common.commit_log({}).startswith("not known")
    assert common.commit_log({"commitlog_sync": "periodic"}) == "periodic sync"  # 4.x: no access mode
