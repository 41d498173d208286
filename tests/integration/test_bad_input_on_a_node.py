"""Bad input that needs a node, root or a full disk: still one line `casstrace: error: ... (fix: ...)`, a
non-zero exit, no half-written output (the rest: tests/unit/test_bad_input.py)."""

import subprocess
from pathlib import Path

import pytest

from casstrace_cli import CASSTRACE, one_error_line

SCAP = Path(__file__).resolve().parents[1] / "data" / "scap" / "curl_google.scap"
pytestmark = pytest.mark.integration


def test_a_request_timeout_the_start_up_reads_exceed_is_said_so(node_args, tmp_path):
    """1 µs is less than any answer takes, so the first of casstrace's reads of the schema, before the
    query, times out (1 ms does only on a busy node: the executions time out instead, said as theirs)."""
    out = tmp_path / "t.trace"
    line = one_error_line(
        subprocess.run(
            [
                *CASSTRACE,
                "run",
                "SELECT * FROM system.local",
                *node_args,
                "--out",
                str(out),
                "--request-timeout",
                "0.000001",
                "--repeat",
                "1",
                "--warmup",
                "0",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    )
    assert "did not answer" in line and "within --request-timeout (1e-06 s)" in line
    assert "give a longer --request-timeout" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "command",
    [
        ["run", "SELECT * FROM system.local", "{node}", "--repeat", "1", "--warmup", "0", "--no-html"],
        ["import", str(SCAP.with_name("cassandra5-select-star-lz4.scap"))],
    ],
)
def test_a_disk_that_fills_up_while_the_trace_is_written(full_disk_dir, node_args, command):
    """sqlite's "database or disk is full", said as a full disk in that directory; no partial file left."""
    argv = [word for arg in command for word in (node_args if arg == "{node}" else [arg])]
    out = full_disk_dir / "t.trace"
    line = one_error_line(
        subprocess.run([*CASSTRACE, *argv, "--out", str(out)], capture_output=True, text=True, timeout=300)
    )
    assert f"the disk is full: no room left in {full_disk_dir} to write t.trace" in line
    assert list(full_disk_dir.iterdir()) == []
