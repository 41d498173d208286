"""The node on this machine, where the test needs root: a PID namespace with no Cassandra JVM in it."""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def test_no_cassandra_jvm_in_a_process_namespace_without_one():
    # A fresh PID namespace with its own /proc sees only its own processes: a real machine
    # state with no Cassandra JVM, without stopping anyone's Cassandra.
    probe = subprocess.run(
        [
            "unshare",
            "--pid",
            "--fork",
            "--mount-proc",
            sys.executable,
            "-c",
            "from casstrace.node.jvm import find_cassandra; find_cassandra()",
        ],
        capture_output=True,
        text=True,
    )
    assert probe.returncode != 0
    assert "no Cassandra JVM runs on this node" in probe.stderr
