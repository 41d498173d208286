"""Containers' JVMs without a node: the container ids in cgroup paths as each runtime names them, and
stand-in JVMs (processes with the CassandraDaemon class in their command line), each in a network
namespace of its own listening on every address at the same port, as containers' JVMs do, told
apart by their address and by their cgroup. The real node in a container is test_container_node.py."""

import subprocess
import sys
import textwrap
from contextlib import ExitStack

import pytest

from casstrace.errors import CasstraceError
from casstrace.node.jvm import DAEMON_CLASS, cassandra_at
from casstrace.node.namespaces import container_ids, container_jvm
from foreign_jvms import in_container_cgroup

ID = "3f2a9c1be8d4" + "0" * 50 + "ab"
# /proc/PID/cgroup lines of a container's process, as each runtime's cgroup driver names them.
CGROUPS = {
    "docker, cgroupfs driver": f"12:memory:/docker/{ID}\n0::/docker/{ID}\n",
    "docker, systemd driver": f"0::/system.slice/docker-{ID}.scope\n",
    "podman": f"0::/machine.slice/libpod-{ID}.scope/container\n",
    "containerd under Kubernetes, cgroupfs": f"0::/kubepods/burstable/pod0c6b1d2e-1111-2222-3333-444455556666/{ID}\n",
    "containerd under Kubernetes, systemd": (
        f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0c6b.slice/cri-containerd-{ID}.scope\n"
    ),
    "CRI-O": f"0::/kubepods.slice/kubepods-pod0c6b.slice/crio-{ID}.scope\n",
}


@pytest.mark.parametrize("runtime", sorted(CGROUPS))
def test_container_ids_in_cgroup_paths(runtime, tmp_path):
    (tmp_path / "123").mkdir()
    (tmp_path / "123" / "cgroup").write_text(CGROUPS[runtime])
    assert container_ids(123, tmp_path) == {ID}


def test_no_container_id_outside_containers(tmp_path):
    (tmp_path / "123").mkdir()
    (tmp_path / "123" / "cgroup").write_text("0::/system.slice/cassandra.service\n4:memory:/user.slice\n")
    assert container_ids(123, tmp_path) == set()


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


@pytest.mark.integration
def test_jvms_on_every_address_of_their_own_networks_are_told_apart_by_address(containers):
    for pid, address, _ in containers:
        assert cassandra_at(address, PORT).pid == pid


@pytest.mark.integration
def test_container_jvm_by_id_or_its_prefix(containers):
    for pid, _, container_id in containers:
        assert container_jvm(container_id).pid == pid
        assert container_jvm(container_id[:12].upper()).pid == pid
    with pytest.raises(CasstraceError) as error:
        container_jvm("0123456789ab")
    assert "no Cassandra JVM runs in container '0123456789ab'" in error.value.message
    assert all(str(pid) in error.value.message for pid, _, _ in containers)


@pytest.mark.parametrize(
    "args, fragment",
    [
        (
            ("run", "SELECT * FROM ks.t", "--container", "0123456789ab"),
            "no Cassandra JVM runs in container '0123456789ab'",
        ),
        (
            ("capture", "--container", "no-such-container", "--duration", "1", "--out", "x.trace"),
            "no Cassandra JVM runs in container 'no-such-container'",
        ),
        (("watch", "--pid", "1", "--container", "0123456789ab"), "--pid and --container both name the JVM"),
    ],
)
def test_a_container_that_is_not_there_is_one_line(args, fragment, tmp_path):
    from casstrace_cli import casstrace

    result = casstrace(*args, cwd=tmp_path)
    assert result.returncode != 0 and not (tmp_path / "x.trace").exists()
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("casstrace: error: ") and fragment in last and "(fix: " in last, result.stderr
