"""What the tests of runs on several nodes share: per-node figures of a trace, the kernel's
count of a JVM's reads, and a real sshd on a loopback port with a throwaway key."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from casstrace.traces import Trace


def rchar(pid: int) -> int:
    """Bytes the process read by read syscalls so far, as the kernel counts them (/proc/PID/io)."""
    return int(
        next(line.split()[1] for line in Path(f"/proc/{pid}/io").read_text().splitlines() if line.startswith("rchar:"))
    )


def data_bytes_per_execution(trace: Trace) -> dict[int, int]:
    """node_id -> the Data.db bytes its JVM read by syscalls per measured execution (the mean)."""
    (executions,) = trace.rows("SELECT COUNT(*) FROM windows WHERE label = 'execution'")[0]
    rows = trace.rows(
        "SELECT f.node_id, SUM(io.read_bytes) AS bytes FROM file_io io JOIN files f USING (file_id)"
        " JOIN windows w USING (window_id) WHERE w.label = 'execution' AND f.path LIKE '%-Data.db'"
        " GROUP BY f.node_id"
    )
    return {row["node_id"]: row["bytes"] // executions for row in rows}


def agents_of(pid: int) -> list[int]:
    """The capture agents a `casstrace run` started (its children running `casstrace agent`)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if (
                entry.name.isdigit()
                and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid
                and b"agent" in (entry / "cmdline").read_bytes().split(b"\0")
            ):
                found.append(int(entry.name))
        except (OSError, IndexError, ValueError):
            continue
    return found


def remote_casstrace() -> str:
    """The casstrace the ssh tests run on the far side: this tree's."""
    return str(Path(sys.executable).with_name("casstrace"))


def ssh_port() -> int:
    """CASSTRACE_TEST_SSH_PORT, else a port free now on 127.0.0.1 (two suites at once do not collide)."""
    if os.environ.get("CASSTRACE_TEST_SSH_PORT"):
        return int(os.environ["CASSTRACE_TEST_SSH_PORT"])
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def test_sshd(directory: Path) -> Iterator[Path]:
    """An sshd on a loopback port (ssh_port()) that accepts a throwaway key for root; yields an ssh
    config file in which Host 'node1' reaches it and Host 'closed' is a port nothing listens on."""
    port = ssh_port()
    if shutil.which("sshd", path="/usr/sbin:/usr/bin") is None:
        raise RuntimeError("no sshd: scripts/install --test installs Debian's openssh-server")
    for key in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", directory / key], check=True)
    (directory / "authorized_keys").write_text((directory / "client_key.pub").read_text())
    host_key = (directory / "host_key.pub").read_text().split()
    (directory / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}\n")
    (directory / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {directory}/host_key\n"
        f"AuthorizedKeysFile {directory}/authorized_keys\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\n"
        f"UsePAM no\nStrictModes no\nPidFile {directory}/sshd.pid\nMaxStartups 30\nMaxSessions 30\n"
    )
    (directory / "ssh_config").write_text(
        f"Host node1\n  HostName 127.0.0.1\n  Port {port}\n  User root\n  IdentityFile {directory}/client_key\n"
        f"  IdentitiesOnly yes\n  UserKnownHostsFile {directory}/known_hosts\n  StrictHostKeyChecking yes\n"
        f"Host closed\n  HostName 127.0.0.1\n  Port 1\n  User root\n  IdentityFile {directory}/client_key\n"
    )
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation directory
    daemon = subprocess.Popen(
        ["/usr/sbin/sshd", "-D", "-e", "-f", directory / "sshd_config"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 10
        while (
            subprocess.run(
                ["ssh", "-F", directory / "ssh_config", "-o", "BatchMode=yes", "node1", "true"], capture_output=True
            ).returncode
            != 0
        ):
            if daemon.poll() is not None:
                raise RuntimeError(f"the test sshd exited: {daemon.stderr.read().decode() if daemon.stderr else ''}")
            if time.monotonic() > deadline:
                raise RuntimeError("the test sshd does not accept the key")
            time.sleep(0.2)
        yield directory / "ssh_config"
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=10)
