"""casstrace.node without a node: JVM discovery on the real /proc (stand-in processes), cqlsh-style
settings. The part against the test node is in test_node_live.py."""

import os
import socket
import subprocess
import sys
import textwrap

import pytest

from casstrace.errors import CasstraceError
from casstrace.node.connection import resolve_settings
from casstrace.node.jvm import DAEMON_CLASS, cassandra_processes, find_cassandra, listening_ports
from casstrace.traces.addresses import parse_address

# A stand-in process whose command line looks like a Cassandra JVM's: it listens on a port and
# prints it, then sleeps. Its argv ends with the daemon class, as `java ... CassandraDaemon` does.
LISTENER = textwrap.dedent("""
    import socket, sys, time
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    print(server.getsockname()[1], flush=True)
    time.sleep(120)
""")


@pytest.fixture
def daemon_lookalikes():
    """Two processes with the Cassandra main class as an argument, each listening on its own port."""
    processes = [
        subprocess.Popen([sys.executable, "-c", LISTENER, DAEMON_CLASS], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    try:
        yield [(process.pid, int(process.stdout.readline())) for process in processes]
    finally:
        for process in processes:
            process.kill()
            process.wait()


def test_lookalikes_are_found_and_told_apart_by_native_port(daemon_lookalikes):
    (first_pid, first_port), (second_pid, second_port) = daemon_lookalikes
    assert {first_pid, second_pid} <= {process.pid for process in cassandra_processes()}
    assert listening_ports(second_pid) == {second_port}
    assert find_cassandra(native_port=second_port).pid == second_pid
    assert find_cassandra(native_port=first_port).pid == first_pid


def test_several_jvms_and_none_on_the_port_is_a_clear_error(daemon_lookalikes):
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        free_port = unused.getsockname()[1]
    with pytest.raises(CasstraceError) as error:
        find_cassandra(native_port=free_port)
    assert "Cassandra JVMs run on this node" in error.value.message and "--pid" in (error.value.fix or "")
    with pytest.raises(CasstraceError, match="Cassandra JVMs run on this node"):
        find_cassandra()


def test_a_command_line_that_only_mentions_the_daemon_is_not_a_jvm():
    shell = subprocess.Popen(["sh", "-c", "sleep 30 # looking for CassandraDaemon"])
    try:
        assert shell.pid not in {process.pid for process in cassandra_processes()}
        with pytest.raises(CasstraceError, match="is not a Cassandra JVM"):
            find_cassandra(pid=shell.pid)
    finally:
        shell.kill()
        shell.wait()


def test_pid_of_a_non_cassandra_process_or_no_process():
    with pytest.raises(CasstraceError, match="is not a Cassandra JVM"):
        find_cassandra(pid=os.getpid())
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    with pytest.raises(CasstraceError, match=f"no process with pid {pid_max + 1}"):
        find_cassandra(pid=pid_max + 1)


# -- settings like cqlsh ---------------------------------------------------------------------------


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_cqlshrc_gives_host_port_and_credentials(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    write(
        tmp_path / ".cassandra" / "cqlshrc",
        """
        [connection]
        hostname = 127.0.0.2
        port = 19999
        [authentication]
        username = rc_user
        password = rc%secret
    """,
    )
    settings = resolve_settings(environ={})
    assert (settings.host, settings.port) == ("127.0.0.2", 19999)
    assert (settings.username, settings.password) == ("rc_user", "rc%secret")
    assert "rc%secret" not in repr(settings)
    assert settings.tls is None


def test_precedence_flag_then_environment_then_credentials_file_then_cqlshrc(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    credentials = write(
        tmp_path / "creds",
        """
        [PlainTextAuthProvider]
        username = file_user
        password = file_secret
    """,
    )
    write(
        tmp_path / ".cassandra" / "cqlshrc",
        f"""
        [connection]
        hostname = 127.0.0.2
        [authentication]
        username = rc_user
        password = rc_secret
        credentials = {credentials}
    """,
    )
    from_file = resolve_settings(environ={})
    assert (from_file.username, from_file.password) == ("file_user", "file_secret")
    from_env = resolve_settings(
        environ={
            "CASSTRACE_USERNAME": "env_user",
            "CASSTRACE_PASSWORD": "env_secret",
            "CQLSH_HOST": "127.0.0.3",
            "CQLSH_PORT": "9043",
        }
    )
    assert (from_env.host, from_env.port, from_env.username, from_env.password) == (
        "127.0.0.3",
        9043,
        "env_user",
        "env_secret",
    )
    from_flags = resolve_settings(
        host="127.0.0.4", port=9044, username="flag_user", environ={"CQLSH_HOST": "127.0.0.3"}
    )
    assert (from_flags.host, from_flags.port, from_flags.username) == ("127.0.0.4", 9044, "flag_user")


def test_tls_options_like_cqlsh(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    rc = write(
        tmp_path / "rc",
        """
        [connection]
        ssl = true
        [ssl]
        certfile = ~/ca.pem
        validate = false
        usercert = ~/client.pem
        userkey = ~/client.key
        [certfiles]
        10.0.0.9 = ~/node9.pem
    """,
    )
    tls = resolve_settings(cqlshrc=rc, environ={}).tls
    assert (tls.certfile, tls.validate, tls.usercert, tls.userkey) == (
        f"{tmp_path}/ca.pem",
        False,
        f"{tmp_path}/client.pem",
        f"{tmp_path}/client.key",
    )
    assert resolve_settings(host="10.0.0.9", cqlshrc=rc, environ={}).tls.certfile == f"{tmp_path}/node9.pem"
    overridden = resolve_settings(cqlshrc=rc, environ={"SSL_CERTFILE": "/etc/ca.pem", "SSL_VALIDATE": "true"}).tls
    assert (overridden.certfile, overridden.validate) == ("/etc/ca.pem", True)
    assert resolve_settings(environ={}).tls is None
    assert resolve_settings(ssl_enabled=True, environ={}).tls.validate is True


def test_socket_addresses_parse_to_one_spelling():
    assert parse_address("127.0.0.1:50412") == ("127.0.0.1", 50412)
    assert parse_address("[::ffff:127.0.0.1]:50412") == ("127.0.0.1", 50412)
    assert parse_address("[::1]:9042") == ("::1", 9042)
    assert parse_address(None) is None
