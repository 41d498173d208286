"""A write runs only on a node casstrace started: its JVM's configuration is a sandbox's, whose record and
pid file name this very JVM, and the statement goes to the record's native port. Everything else, a
copy of a sandbox's files included, is refused."""

import json
import os

import pytest

from casstrace.errors import CasstraceError
from casstrace.node.jvm import DAEMON_CLASS, CassandraProcess
from casstrace.node.own_sandbox import require_own_sandbox, sandbox_root
from casstrace.sandbox.settings import Layout

PORT = 39042


def started_sandbox(root, pid, port=PORT):
    """A sandbox's files as `casstrace sandbox start` leaves them, and its JVM's command line."""
    layout = Layout(root)
    layout.conf.mkdir(parents=True)
    layout.yaml.write_text("cluster_name: x\n")
    layout.settings.write_text(json.dumps({"native_port": port}))
    layout.pid_file.write_text(f"{pid}\n")
    return CassandraProcess(pid, ("java", f"-Dcassandra.config=file://{layout.yaml}", DAEMON_CLASS))


def test_the_jvm_a_sandbox_started_is_its_own(tmp_path):
    process = started_sandbox(tmp_path / "sandbox", os.getpid())
    assert sandbox_root(process) == tmp_path / "sandbox"
    assert require_own_sandbox(process, PORT).root == tmp_path / "sandbox"


def refusal(process, port=PORT) -> str:
    with pytest.raises(CasstraceError) as refused:
        require_own_sandbox(process, port)
    assert "casstrace sandbox start" in str(refused.value.fix)
    return refused.value.message


def test_a_node_started_another_way_is_refused(tmp_path):
    foreign = CassandraProcess(
        os.getpid(), ("java", "-Dcassandra.config=file:///etc/cassandra/cassandra.yaml", DAEMON_CLASS)
    )
    assert "casstrace did not start it" in refusal(foreign)
    assert "casstrace did not start it" in refusal(CassandraProcess(os.getpid(), ("java", DAEMON_CLASS)))


def test_a_copy_of_a_sandbox_run_by_hand_is_refused(tmp_path):
    process = started_sandbox(tmp_path / "copy", os.getpid())
    (tmp_path / "copy" / "cassandra.pid").write_text(f"{os.getpid() + 1}\n")  # the pid file names another JVM
    assert sandbox_root(process) is None
    assert "casstrace did not start it" in refusal(process)


def test_a_sandbox_without_its_record_is_refused(tmp_path):
    process = started_sandbox(tmp_path / "sandbox", os.getpid())
    (tmp_path / "sandbox" / "sandbox.json").unlink()
    assert "no sandbox record" in refusal(process)


def test_a_write_to_another_port_than_the_sandbox_s_is_refused(tmp_path):
    process = started_sandbox(tmp_path / "sandbox", os.getpid(), port=19042)
    assert "native port 19042" in refusal(process, PORT)


def test_a_node_whose_jvm_is_not_here_is_refused():
    assert "no JVM on this machine" in refusal(None)
