"""The lean install of a production node (docs/production-node.md), as a node gets it: the wheels
scripts/build-wheel makes, installed by scripts/install-node into a fresh virtualenv on Debian's
Python with bcc linked in, offline. The installed casstrace, run from outside the repository with
nothing of it on the import path, reports its version, imports every shared .scap capture as the
repository's own casstrace does, and captures a real command's reads, to the byte."""

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
SCAP_DIR = REPO / "tests" / "data" / "scap"
# Run outside the repository, without PYTHONPATH: only the virtualenv's casstrace can be imported.
NODE_ENV = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}


@pytest.fixture(scope="module")
def node_venv(tmp_path_factory) -> Path:
    scratch = tmp_path_factory.mktemp("node-install")
    dist, venv = scratch / "dist", scratch / "venv"
    built = subprocess.run([REPO / "scripts" / "build-wheel", dist], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    installed = subprocess.run(
        [REPO / "scripts" / "install-node", "--venv", venv, dist],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=scratch,
        env=NODE_ENV,
    )
    assert installed.returncode == 0, installed.stderr
    assert f"remove: rm -r {venv}" in installed.stdout
    return venv


def node_casstrace(venv: Path, *args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [venv / "bin" / "casstrace", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=NODE_ENV,
    )


def test_the_installed_casstrace_is_the_wheels_with_its_compiled_parts_and_bcc(node_venv, tmp_path):
    from casstrace import __version__

    version = node_casstrace(node_venv, "--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.strip().endswith(__version__)
    where = subprocess.run(
        [
            node_venv / "bin" / "python",
            "-c",
            "import bcc, casstrace; from casstrace.probes.sysdig import scap_reader, sysdig_import; "
            "from casstrace.traces import writer; "
            "print(casstrace.__file__, bcc.__file__, scap_reader.COMPILED_SCAN is not None, "
            "sysdig_import.COMPILED_FOLD is not None, writer.BULK_INSERT is not None)",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=NODE_ENV,
    )
    assert where.returncode == 0, where.stderr
    package, bcc, *compiled = where.stdout.split()
    assert package.startswith(f"{node_venv}/lib/") and "site-packages/casstrace/" in package
    assert os.path.realpath(bcc).startswith("/usr/lib/python3/dist-packages/bcc/")  # Debian's, linked in
    assert compiled == ["True", "True", "True"]


@pytest.mark.parametrize("capture", sorted(path.name for path in SCAP_DIR.glob("*.scap")))
def test_the_installed_casstrace_imports_as_the_repositorys_does(node_venv, capture, tmp_path):
    from casstrace_cli import casstrace

    node_trace, repo_trace = tmp_path / "node.trace", tmp_path / "repo.trace"
    imported = node_casstrace(node_venv, "import", SCAP_DIR / capture, "--out", node_trace, cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert casstrace("import", SCAP_DIR / capture, "--out", repo_trace).returncode == 0

    def files(trace: Path, run: Callable[..., subprocess.CompletedProcess[str]]) -> list[tuple[str, int, int]]:
        result = run("report", trace, "--format", "json")
        assert result.returncode == 0, result.stderr
        return sorted((f["path"], f["read_bytes"], f["read_calls"]) for f in json.loads(result.stdout)["files"])

    assert files(node_trace, lambda *a: node_casstrace(node_venv, *a, cwd=tmp_path)) == files(repo_trace, casstrace)


def test_the_installed_casstrace_captures_a_commands_reads_to_the_byte(node_venv, tmp_path):
    data = tmp_path / "input.bin"
    data.write_bytes(os.urandom(3_000_000))
    trace = tmp_path / "dd.trace"
    captured = node_casstrace(
        node_venv, "capture", "--out", trace, "--", "dd", f"if={data}", "of=/dev/null", "bs=65536", cwd=tmp_path
    )
    assert captured.returncode == 0, captured.stderr
    report = node_casstrace(node_venv, "report", trace, "--format", "json", cwd=tmp_path)
    files = {f["path"]: f for f in json.loads(report.stdout)["files"]}
    # dd reads the file in 46 calls of up to 64 KiB, the last one returning 0 bytes at its end.
    assert files[str(data)]["read_bytes"] == 3_000_000
    assert files[str(data)]["read_calls"] == 47
