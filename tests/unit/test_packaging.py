"""The distribution ships one top-level package, casstrace, with the areas as its subpackages."""

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_wheel_holds_only_the_casstrace_package(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
        check=True,
    )
    (wheel,) = tmp_path.glob("casstrace-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top_levels = {name.split("/")[0] for name in names if not name.startswith("casstrace-")}
    assert top_levels == {"casstrace"}
    for area in ("probes", "cli", "analyses", "traces", "reports", "sandbox", "node"):
        assert f"casstrace/{area}/__init__.py" in names
    assert not any(name.startswith(("casstrace/tests/", "casstrace/benchmarks/")) for name in names)
    # The BPF programs travel with the package: the probes compile them at run time.
    assert any(name.startswith("casstrace/probes/") and name.endswith(".c") for name in names)


def test_console_script_runs():
    result = subprocess.run([Path(sys.executable).parent / "casstrace", "--help"], capture_output=True, text=True)
    assert result.returncode == 0
    for command in ("sandbox", "demo", "capture", "run", "report", "traces", "import", "compare", "sweep"):
        assert command in result.stdout
