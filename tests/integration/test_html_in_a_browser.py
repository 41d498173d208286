"""The HTML report in a real headless browser, offline (the format itself: tests/unit/test_html_report.py)."""

import shutil
import subprocess
from pathlib import Path

import pytest

from casstrace.reports import write

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


pytestmark = pytest.mark.integration


@pytest.mark.skipif(not shutil.which("chromium"), reason="chromium is not installed")
def test_html_renders_offline_in_headless_chromium(tmp_path, wide):
    page = write(wide, "html", tmp_path / "report.html")
    ARTIFACTS.mkdir(exist_ok=True)
    screenshot = ARTIFACTS / "report-wide.png"
    screenshot.unlink(missing_ok=True)
    chromium = [
        "chromium",
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--proxy-server=127.0.0.1:9",  # any network access fails
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=10000",
        "--window-size=1400,4000",
    ]
    dom = subprocess.run(chromium + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], console
    # The first screen's chart (read against necessary read and payload; the node's time split), then
    # the per-file, offset and two spectrogram plots.
    assert dom.stdout.count('class="plot-container plotly"') == 5
    assert dom.stdout.count('class="heatmaplayer') == 2
    shot = subprocess.run(
        chromium + [f"--screenshot={screenshot}", page.as_uri()], capture_output=True, text=True, timeout=120
    )
    assert [line for line in shot.stderr.splitlines() if ":CONSOLE" in line] == []
    assert screenshot.stat().st_size > 50_000
