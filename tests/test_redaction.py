"""A trace never carries credentials: secrets on the traced process's command line are redacted."""

import subprocess
import sys
from pathlib import Path

import pytest

from casstrace.probes.proc_fds import redact_command

pytestmark = pytest.mark.integration

CASSTRACE = Path(sys.executable).parent / "casstrace"


def test_secret_options_and_classpath_are_redacted():
    argv = ["/usr/bin/java", "-cp", "/a/x.jar:/a/y.jar", "-Djavax.net.ssl.keyStorePassword=hunter2",
            "-Djavax.net.ssl.keyStore=/etc/cassandra/keystore", "--password", "hunter3", "-Xmx1G",
            "org.apache.cassandra.service.CassandraDaemon"]
    assert redact_command(argv) == (
        "/usr/bin/java -cp <classpath: 2 entries> -Djavax.net.ssl.keyStorePassword=<redacted> "
        "-Djavax.net.ssl.keyStore=/etc/cassandra/keystore --password <redacted> -Xmx1G "
        "org.apache.cassandra.service.CassandraDaemon")


def test_a_captured_process_secrets_do_not_reach_the_trace(tmp_path):
    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)",
                               "-Dssl.trustStorePassword=hunter4", "--token", "hunter5"])
    try:
        out = tmp_path / "secret.trace"
        done = subprocess.run([CASSTRACE, "capture", "--pid", str(target.pid), "--duration", "0.5",
                               "--out", str(out)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        raw = out.read_bytes()
        assert b"time.sleep(30)" in raw          # the command line is there ...
        assert b"hunter4" not in raw and b"hunter5" not in raw   # ... its secrets are not
    finally:
        target.kill()
        target.wait()
