"""A trace never carries credentials: secrets on a command line are redacted, by one function
(casstrace.redaction.redact_command) wherever a command line is stored or printed."""

import subprocess
import sys

import pytest

from casstrace.redaction import redact_command
from casstrace_cli import CASSTRACE


def test_secret_options_and_classpath_are_redacted():
    argv = [
        "/usr/bin/java",
        "-cp",
        "/a/x.jar:/a/y.jar",
        "-Djavax.net.ssl.keyStorePassword=hunter2",
        "-Djavax.net.ssl.keyStore=/etc/cassandra/keystore",
        "--password",
        "hunter3",
        "-Xmx1G",
        "org.apache.cassandra.service.CassandraDaemon",
    ]
    assert redact_command(argv) == (
        "/usr/bin/java -cp <classpath: 2 entries> -Djavax.net.ssl.keyStorePassword=<redacted> "
        "-Djavax.net.ssl.keyStore=/etc/cassandra/keystore --password <redacted> -Xmx1G "
        "org.apache.cassandra.service.CassandraDaemon"
    )


CASES = [
    # (argv, what is shown)
    (
        ["java", "-Djavax.net.ssl.keyStorePassword=hunter2", "-Xmx1G"],
        "java -Djavax.net.ssl.keyStorePassword=<redacted> -Xmx1G",
    ),
    (["java", "-Dcassandra.jmx.remote.password.file=/etc/pw"], "java -Dcassandra.jmx.remote.password.file=<redacted>"),
    (["tool", "--password", "hunter2", "--host", "h"], "tool --password <redacted> --host h"),
    (["tool", "--password", "-starts-with-a-dash"], "tool --password <redacted>"),
    (["tool", "--password=hunter2"], "tool --password=<redacted>"),
    (["tool", "--api-key", "K123", "x"], "tool --api-key <redacted> x"),
    (["tool", "--api_key=K123"], "tool --api_key=<redacted>"),
    (["tool", "--apikey", "K123"], "tool --apikey <redacted>"),
    (["tool", "--token", "T123"], "tool --token <redacted>"),
    (["tool", "--auth-token=T123"], "tool --auth-token=<redacted>"),
    (["tool", "-secret", "S"], "tool -secret <redacted>"),
    (["tool", "--password"], "tool --password"),
    (
        ["nodetool", "-u", "cassandra", "-pw", "hunter2", "-h", "127.0.0.1", "settraceprobability", "0"],
        "nodetool -u cassandra -pw <redacted> -h 127.0.0.1 settraceprobability 0",
    ),
    (["sh", "-c", "nodetool -pw hunter2 status"], "sh -c nodetool -pw <redacted> status"),
    (
        ["env", "DB_PASSWORD=hunter2", "GITHUB_TOKEN=ghp_x", "HOME=/root", "run"],
        "env DB_PASSWORD=<redacted> GITHUB_TOKEN=<redacted> HOME=/root run",
    ),
    (["curl", "https://alice:hunter2@example.com/x"], "curl https://alice:<redacted>@example.com/x"),
    (["psql", "postgresql://bob:pw%40x@db:5432/app"], "psql postgresql://bob:<redacted>@db:5432/app"),
    (["cqlsh", "alice:hunter2@127.0.0.1"], "cqlsh alice:<redacted>@127.0.0.1"),
    (["tool", "--url=https://u:p@h/"], "tool --url=https://u:<redacted>@h/"),
    (["sh", "-c", "cqlsh --password hunter2 -e 'SELECT 1'"], "sh -c cqlsh --password <redacted> -e 'SELECT 1'"),
    (
        ["sh", "-c", "API_TOKEN=abc ./run --password='two words'"],
        "sh -c API_TOKEN=<redacted> ./run --password=<redacted>",
    ),
    (["java", "-cp", "/a/x.jar:/a/y.jar:/a/z.jar", "Main"], "java -cp <classpath: 3 entries> Main"),
    (["java", "-classpath", "", "Main"], "java -classpath <classpath: 0 entries> Main"),
    # nothing secret: shown as given
    (["ls", "-l", "/var/lib/cassandra"], "ls -l /var/lib/cassandra"),
    (
        ["java", "-XX:+UseG1GC", "-Dcassandra.config=file:///etc/c.yaml", "user@host"],
        "java -XX:+UseG1GC -Dcassandra.config=file:///etc/c.yaml user@host",
    ),
    (["git", "clone", "git@github.com:org/repo.git"], "git clone git@github.com:org/repo.git"),
]


@pytest.mark.parametrize("argv, shown", CASES)
def test_redaction_table(argv, shown):
    assert redact_command(argv) == shown


@pytest.mark.integration
def test_a_captured_command_secrets_do_not_reach_the_trace_or_its_reports(tmp_path):
    out = tmp_path / "command.trace"
    done = subprocess.run(
        [
            *CASSTRACE,
            "capture",
            "--out",
            str(out),
            "--",
            "sh",
            "-c",
            "cat /etc/hostname",
            "-Djavax.net.ssl.keyStorePassword=hunter6",
            "--password",
            "hunter7",
            "https://u:hunter8@example.com",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    reports = [
        subprocess.run([*CASSTRACE, "report", str(out), "--format", format_], capture_output=True, text=True).stdout
        for format_ in ("text", "md", "json", "html")
    ]
    assert "cat /etc/hostname" in reports[0]  # the command is there ...
    for shown in [out.read_bytes().decode(errors="replace"), done.stdout, done.stderr, *reports]:
        assert not any(secret in shown for secret in ("hunter6", "hunter7", "hunter8"))  # ... its secrets are not


@pytest.mark.integration
def test_a_captured_process_secrets_do_not_reach_the_trace(tmp_path):
    target = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)", "-Dssl.trustStorePassword=hunter4", "--token", "hunter5"]
    )
    try:
        out = tmp_path / "secret.trace"
        done = subprocess.run(
            [*CASSTRACE, "capture", "--pid", str(target.pid), "--duration", "0.5", "--out", str(out)],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        raw = out.read_bytes()
        assert b"time.sleep(30)" in raw  # the command line is there ...
        assert b"hunter4" not in raw and b"hunter5" not in raw  # ... its secrets are not
    finally:
        target.kill()
        target.wait()
