"""Stand-in JVMs of containers (processes with the CassandraDaemon class in their command line), each
in a network namespace of its own listening on every address at the same port, as containers' JVMs
do (needs root), told apart by their address and by their cgroup."""

import subprocess
import sys
import textwrap
from contextlib import ExitStack

import pytest

from casstrace.errors import CasstraceError
from casstrace.node.jvm import DAEMON_CLASS, cassandra_at
from casstrace.node.namespaces import container_jvm
from foreign_jvms import in_container_cgroup

pytestmark = pytest.mark.integration


PORT = 9042


# A stand-in JVM in a network namespace of its own, with its own address ($1) on its loopback,
# listening on every address at PORT, as a container's JVM does.
IN_NAMESPACE = 'ip link set lo up && ip addr add "$1"/32 dev lo && shift && exec "$@"'


LISTENER = textwrap.dedent(f"""
    import socket, time
    server = socket.socket()
    server.bind(("0.0.0.0", {PORT}))
    server.listen()
    print("listening", flush=True)
    time.sleep(120)
""")


@pytest.fixture
def containers():
    """Two stand-in JVMs, each in its own network namespace and in a cgroup named as docker's and as
    podman's containers are: [(pid, address, container id)]."""
    found = []
    with ExitStack() as stack:
        for address, parent, prefix in (
            ("10.213.0.5", "system.slice", "docker-"),
            ("10.213.0.6", "machine.slice", "libpod-"),
        ):
            process = subprocess.Popen(
                [
                    "unshare",
                    "--net",
                    "--",
                    "sh",
                    "-c",
                    IN_NAMESPACE,
                    "sh",
                    address,
                    sys.executable,
                    "-c",
                    LISTENER,
                    DAEMON_CLASS,
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            stack.callback(process.wait)
            stack.callback(process.kill)
            assert process.stdout.readline().strip() == "listening"
            found.append((process.pid, address, stack.enter_context(in_container_cgroup(process.pid, parent, prefix))))
        yield found


def test_jvms_on_every_address_of_their_own_networks_are_told_apart_by_address(containers):
    for pid, address, _ in containers:
        assert cassandra_at(address, PORT).pid == pid


def test_container_jvm_by_id_or_its_prefix(containers):
    for pid, _, container_id in containers:
        assert container_jvm(container_id).pid == pid
        assert container_jvm(container_id[:12].upper()).pid == pid
    with pytest.raises(CasstraceError) as error:
        container_jvm("0123456789ab")
    assert "no Cassandra JVM runs in container '0123456789ab'" in error.value.message
    assert all(str(pid) in error.value.message for pid, _, _ in containers)
