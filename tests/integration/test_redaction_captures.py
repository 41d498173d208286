"""A captured process's and command's secrets never reach the trace or its reports (real captures;
the redaction table itself: tests/unit/test_redaction.py)."""

import shlex
import subprocess
import sys

import pytest

from casstrace_cli import CASSTRACE

pytestmark = pytest.mark.integration


# A command holding a credential in each form a command line takes (sh runs the script and ignores
# the words after it): the secrets, and the words that must be kept around them.
COMMAND = [
    "sh",
    "-c",
    "cat /etc/hostname; : mysql -phunter1 db",
    "-Djavax.net.ssl.keyStorePassword=hunter6",
    "--password",
    "hunter7",
    "https://u:hunter8@example.com",
    "-phunter9",
    "-p",
    "hunter10",
    "-u",
    "alice:hunter11",
    "-H",
    "Authorization: Bearer hunter12",
    "--header",
    "X-Api-Key: hunter13",
    "-H",
    "Cookie: session=hunter14",
    "DB_PASSWORD=hunter15",
    "--login=hunter16",
]
SECRETS = [f"hunter{n}" for n in (1, *range(6, 17))]
KEPT = ["cat /etc/hostname; : mysql -p", "--password", "-u", "--header", "Authorization:", "DB_PASSWORD=", "--login="]


def test_a_captured_command_secrets_do_not_reach_the_trace_or_its_reports(tmp_path):
    out = tmp_path / "command.trace"
    done = subprocess.run([*CASSTRACE, "capture", "--out", str(out), "--", *COMMAND], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    reports = [
        subprocess.run([*CASSTRACE, "report", str(out), "--format", format_], capture_output=True, text=True).stdout
        for format_ in ("text", "md", "json", "html")
    ]
    raw = out.read_bytes().decode(errors="replace")
    assert not [word for word in KEPT if word not in raw]  # the command and its options are there ...
    assert "cat /etc/hostname" in reports[0]
    for shown in [raw, done.stdout, done.stderr, *reports]:
        assert not [secret for secret in SECRETS if secret in shown]  # ... its secrets are not
    assert "kept whole" not in raw


def test_keep_command_line_stores_the_command_whole(tmp_path):
    out = tmp_path / "whole.trace"
    done = subprocess.run(
        [*CASSTRACE, "capture", "--out", str(out), "--keep-command-line", "--", *COMMAND],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    raw = out.read_bytes().decode(errors="replace")
    assert shlex.join(COMMAND) in raw  # every word, as given
    assert "its command line kept whole, not redacted" in raw  # and the trace says so


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


def test_capture_of_a_command_with_a_huge_argument_ends_promptly(tmp_path):
    out = tmp_path / "echo.trace"
    done = subprocess.run(
        [*CASSTRACE, "capture", "--out", str(out), "--", "/bin/echo", "x" * 120_000],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert b"120,000 characters not shown" in out.read_bytes()
