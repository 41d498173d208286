"""The HTML report in a real headless browser, offline (the format itself: tests/unit/test_html_report.py)."""

import html
import itertools
import json
import re
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


# Run in the rendered page once plotly has drawn: the first chart's axes as plotly laid them out, its
# bars' values as drawn, and where its category labels and bars are on the page (CSS pixels).
FIRST_CHART_PROBE = """<script>
window.addEventListener("load", () => setTimeout(() => {
  const chart = document.querySelector(".js-plotly-plot");
  const box = (node) => { const r = node.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const probe = {
    width: document.documentElement.clientWidth,
    page_width: document.documentElement.scrollWidth,
    xaxis_type: chart._fullLayout.xaxis.type,
    chart: box(chart),
    plot_area: box(chart.querySelector(".draglayer .xy .nsewdrag")),
    bar_texts: [...chart.querySelectorAll(".barlayer .trace:first-child text.bartext")].map(
      (t) => ({text: t.textContent, box: box(t)})),
    bars: [...chart.querySelectorAll(".barlayer .trace:first-child .point path")].map(box),
    labels: [...chart.querySelectorAll(".ytick text")].map((t) => ({text: t.textContent, box: box(t)})),
  };
  const out = document.createElement("pre");
  out.id = "first-chart-probe";
  out.textContent = JSON.stringify(probe);
  document.body.appendChild(out);
}, 500));
</script></body>"""


@pytest.mark.skipif(not shutil.which("chromium"), reason="chromium is not installed")
def test_the_first_screen_shows_small_reads_beside_a_large_one_at_1400_px(tmp_path, wide):
    """The necessary read (36 KiB) and the payload (19.5 KiB) beside a data read 1,700x larger: on a log
    axis, each bar visible and labelled with its value, the labels whole and clear of the bars."""
    page = write(wide, "html", tmp_path / "report.html")
    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text().replace("</body>", FIRST_CHART_PROBE))
    chromium = [
        "chromium",
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--proxy-server=127.0.0.1:9",
        "--virtual-time-budget=10000",
        "--window-size=1400,1000",
    ]
    dom = subprocess.run(chromium + ["--dump-dom", probed.as_uri()], capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="first-chart-probe">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stderr[-2000:]
    probe = json.loads(html.unescape(found.group(1)))
    assert probe["xaxis_type"] == "log"
    assert probe["page_width"] <= probe["width"]  # no sideways scrolling
    assert [t["text"] for t in probe["bar_texts"]] == ["59.7 MiB", "36.0 KiB", "19.5 KiB"]
    plot_left = probe["plot_area"][0]  # a bar on a log axis is drawn from far left, clipped to the plot area
    widths = [right - max(left, plot_left) for left, _, right, _ in probe["bars"]]
    assert len(widths) == 3 and min(widths) >= 50, widths  # the smallest bar plainly visible
    labels = {label["text"]: label["box"] for label in probe["labels"]}
    assert set(labels) == {"data read", "necessary read", "payload"}
    chart_left = probe["chart"][0]
    for text, (left, _, right, _) in labels.items():
        assert left >= chart_left, text  # not cut at the chart's edge
        assert right <= plot_left, text  # not over the bars
    tops = sorted((top, bottom) for _, top, _, bottom in labels.values())
    assert all(below[0] >= above[1] for above, below in itertools.pairwise(tops))  # not over each other
    for text in probe["bar_texts"]:  # the values inside the chart, right of their bars
        assert text["box"][2] <= probe["chart"][2], text
    ARTIFACTS.mkdir(exist_ok=True)
    screenshot = ARTIFACTS / "report-first-screen.png"
    screenshot.unlink(missing_ok=True)
    subprocess.run(chromium + [f"--screenshot={screenshot}", page.as_uri()], capture_output=True, timeout=120)
    assert screenshot.stat().st_size > 20_000
