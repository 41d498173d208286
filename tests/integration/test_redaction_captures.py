"""A captured process's and command's secrets never reach the trace or its reports (real captures;
the redaction table itself: tests/unit/test_redaction.py)."""

import subprocess
import sys

import pytest

from casstrace_cli import CASSTRACE

pytestmark = pytest.mark.integration


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
