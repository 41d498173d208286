"""A node in a container: its JVM in network, mount and PID namespaces of its own, nothing published.

The probes need nothing of this: BPF sees every process by its pid as the host numbers it, and the
node's files are read through /proc/PID/root (probes.proc.proc_fds.in_root). What does need it is the
driver, which must reach the native port where the node listens: in the JVM's network namespace.
join_network_namespace moves casstrace there (setns) before the driver starts a thread or opens a
socket. A network namespace is a thread's, and a thread starts in the one of the thread that
creates it: joined from the main thread before anything else starts, every thread the driver
starts afterwards (its event loop, its executor's) and every tool casstrace runs (nodetool, ssh)
is in the node's network, as a process inside the container would be.

container_jvm finds the JVM of a container by the container's id as the runtimes name its cgroups:
docker (/docker/ID, /system.slice/docker-ID.scope), podman (libpod-ID.scope), containerd and CRI-O
under Kubernetes (/kubepods/.../ID, cri-containerd-ID.scope, crio-ID.scope); a name is resolved to
the id by the runtime's own CLI where one is installed, else matched against the container's host
name (a Kubernetes pod's name).
"""

import ctypes
import os
import re
import shutil
import subprocess
from pathlib import Path

from casstrace.errors import CasstraceError
from casstrace.node.jvm import CassandraProcess, cassandra_processes
from casstrace.probes.proc.proc_fds import in_root

CLONE_NEWNET = 0x40000000
# A container id in one component of a cgroup path: the whole component, or after the runtime's
# prefix (docker-, libpod-, cri-containerd-, crio-), before .scope.
CGROUP_CONTAINER_ID = re.compile(r"(?:^|-)([0-9a-f]{64})(?:\.scope)?$")
RUNTIME_CLIS = ("docker", "podman", "nerdctl")
RUNTIME_TIMEOUT_S = 10.0


def _namespace(pid: int | str, kind: str) -> tuple[int, int]:
    stat = os.stat(f"/proc/{pid}/ns/{kind}")
    return stat.st_dev, stat.st_ino


def in_our_network(pid: int) -> bool:
    """Whether process `pid` shares this process's network namespace (a process gone counts as yes:
    whoever looks for it says so)."""
    try:
        return _namespace(pid, "net") == _namespace("thread-self", "net")
    except OSError:
        return True


def join_network_namespace(pid: int) -> bool:
    """Move the calling thread into process `pid`'s network namespace, if it is not there already;
    True when it moved. Call it from the main thread before the driver (or anything that opens
    sockets) starts a thread: see the module's docstring."""
    if in_our_network(pid):
        return False
    try:
        namespace = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as error:
        raise CasstraceError(
            f"cannot open the network namespace of pid {pid}: {error.strerror}",
            "run casstrace as root (joining a container's network needs CAP_SYS_ADMIN)",
        ) from None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.setns(namespace, CLONE_NEWNET) != 0:
            reason = os.strerror(ctypes.get_errno())
            raise CasstraceError(
                f"cannot join the network namespace of pid {pid} (where its native port is): {reason}",
                "run casstrace as root (joining a container's network needs CAP_SYS_ADMIN)",
            )
    finally:
        os.close(namespace)
    return True


def container_ids(pid: int, proc: Path = Path("/proc")) -> set[str]:
    """The container ids in the process's cgroup paths (every hierarchy's line of /proc/PID/cgroup)."""
    try:
        lines = (proc / str(pid) / "cgroup").read_text().splitlines()
    except OSError:
        return set()
    return {
        match.group(1)
        for line in lines
        for component in line.split(":", 2)[-1].split("/")
        if (match := CGROUP_CONTAINER_ID.search(component))
    }


def _runtime_id(name: str) -> str | None:
    """The id a container runtime installed here gives the container called `name`, None when none does."""
    for cli in RUNTIME_CLIS:
        path = shutil.which(cli)
        if path is None:
            continue
        try:
            found = subprocess.run(
                [path, "inspect", "--format", "{{.Id}}", name],
                capture_output=True,
                text=True,
                timeout=RUNTIME_TIMEOUT_S,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        answer = found.stdout.strip().lower()
        if found.returncode == 0 and re.fullmatch(r"[0-9a-f]{64}", answer):
            return answer
    return None


def _host_name(pid: int) -> str | None:
    try:
        return Path(in_root(pid, "/etc/hostname")).read_text().strip() or None
    except OSError:
        return None


def container_jvm(container: str, proc: Path = Path("/proc")) -> CassandraProcess:
    """The Cassandra JVM of a container, given by its id (or a unique prefix of it, docker's 12
    characters) or its name. CasstraceError naming the fix when no JVM, or several, match."""
    wanted = container.strip().lower()
    jvms = cassandra_processes(proc)
    by_id = {process: container_ids(process.pid, proc) for process in jvms}
    found = (
        [process for process, ids in by_id.items() if any(i.startswith(wanted) for i in ids)]
        if re.fullmatch(r"[0-9a-f]{4,64}", wanted)
        else []
    )
    if not found:
        runtime_id = _runtime_id(container)
        found = (
            [process for process, ids in by_id.items() if runtime_id in ids]
            if runtime_id
            else [process for process in jvms if by_id[process] and _host_name(process.pid) == container]
        )
    if len(found) == 1:
        return found[0]
    in_containers = sorted(f"{process.pid} ({sorted(ids)[0][:12]})" for process, ids in by_id.items() if ids)
    listed = (
        f"the Cassandra JVMs in containers here: {', '.join(in_containers)}"
        if in_containers
        else "no Cassandra JVM here runs in a container"
    )
    if not found:
        raise CasstraceError(
            f"no Cassandra JVM runs in container {container!r} ({listed})",
            "give --container as the container's id or name (docker ps, podman ps, crictl ps), or --pid",
        )
    raise CasstraceError(
        f"{len(found)} Cassandra JVMs match container {container!r} ({listed})",
        "give more of the container's id, or --pid",
    )


def node_pid(pid: int | None, container: str | None) -> int | None:
    """The JVM a command watches, given by --pid or --container (not both), joined in its network
    namespace so that the driver reaches the node where it listens. None when neither is given."""
    if pid is not None and container is not None:
        raise CasstraceError("--pid and --container both name the JVM", "give one of them")
    if container is not None:
        pid = container_jvm(container).pid
    if pid is not None:
        join_network_namespace(pid)
    return pid
