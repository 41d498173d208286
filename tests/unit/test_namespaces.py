"""Containers' JVMs without a node: the container ids in cgroup paths as each runtime names them. Stand-in
JVMs (processes with the CassandraDaemon class in their command line), each in a network namespace of
its own, told apart by their address and their cgroup: tests/integration/test_container_jvms.py. The
real node in a container: tests/integration/test_container_node.py."""

import pytest

from casstrace.node.namespaces import container_ids

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
