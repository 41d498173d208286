"""Hostile input that needs a node or real probes: each is one line `casstrace: error: … (fix: …)`
with the right diagnosis, or a figure right against its truth."""

import os
import sqlite3
import subprocess

import pytest

from casstrace_cli import CASSTRACE

pytestmark = pytest.mark.integration


def _one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("casstrace: error: ") and "(fix: " in lines[0], done.stderr
    assert "internal error" not in lines[0]
    return lines[0]


def test_a_relative_path_is_the_command_s_own_directory(tmp_path):
    """`capture -- sh -c 'cat data.bin'`: the read is of tmp_path/data.bin (the command's working
    directory), its bytes the file's size, never /data.bin."""
    data = tmp_path / "data.bin"
    data.write_bytes(os.urandom(1 << 20))
    out = tmp_path / "relative.trace"
    done = subprocess.run(
        [*CASSTRACE, "capture", "--out", str(out), "--", "sh", "-c", "cat data.bin > /dev/null"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(out) as db:
        read = dict(
            db.execute(
                "SELECT f.path, SUM(io.read_bytes) FROM files f JOIN file_io io USING (file_id)"
                " WHERE f.path LIKE '%data.bin' GROUP BY f.path"
            ).fetchall()
        )
    assert read == {str(data): 1 << 20}


@pytest.mark.parametrize(
    "query, said",
    [
        ("SELECT c0 FROM casstrace_demo.streams WHERE stream_id = 1 AND \udcff", "not UTF-8 (byte 0xff"),
        ('SELECT c0 AS "' + "a" * 70_000 + '" FROM casstrace_demo.streams WHERE stream_id = 1', "65,535 bytes"),
    ],
    ids=["0xff byte", "64 KB alias"],
)
def test_a_query_no_node_could_answer_is_one_line(sandbox, node_args, tmp_path, query, said):
    done = subprocess.run(
        [*CASSTRACE, "run", query, *node_args, "--out", str(tmp_path / "q.trace")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert said in _one_error_line(done)
    assert list(tmp_path.iterdir()) == []
