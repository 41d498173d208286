"""The HTML report: one self-contained file that opens offline, fit to attach to a ticket.

plotly's JavaScript is embedded once, inline (no CDN, no network). Every name that comes from the
trace (paths, table and column names, the query, Cassandra's trace) is escaped by `_text`: its control
and invisible format characters written as visible escapes (casstrace.terminal.printable: a U+202E in
the query would reorder what the reader sees), then html.escape, in the page and in the strings plotly
renders as its own HTML subset (titles, labels, hover text); plotly's JSON encoder writes '<' as \\u003c.

Figures are plotly.js figure dicts in their canonical form (`title: {text: ...}`), written out by
plotly's to_html without validation: plotly's figure objects validate and deep-copy every point
again (0.3 s of a demo query's report, most of `casstrace run`'s reporting), and what they would
check is fixed here, in code, not in the trace.
"""

import html
import math
from collections.abc import Sequence
from typing import Any

import plotly.io as pio
import plotly.offline

from casstrace.analyses.measures import SPLIT_LABELS
from casstrace.analyses.model import AccessPattern, Spectrogram, WeightedStack
from casstrace.analyses.spectrogram import LAST_BUCKET, bucket_lower_ns
from casstrace.analyses.units import bytes_to_kib, bytes_to_mib, human_bytes, human_ns, ns_to_ms, s_to_ms
from casstrace.reports.document import (
    Block,
    Chart,
    Code,
    Document,
    ExecutionBars,
    Findings,
    FlameGraph,
    Items,
    Notes,
    OffsetMap,
    Paragraph,
    Query,
    Subheading,
    Table,
    Tone,
)
from casstrace.reports.formats import ReportOptions
from casstrace.terminal import printable

MAX_SPECTROGRAM_ROWS = 600
# csysdig's spectrogram palette: black (none), greens, yellows, reds, on log10(calls) 0..4
SPECTRO_COLOURS = [[0.0, "#003300"], [0.25, "#00b000"], [0.5, "#e0e000"], [0.75, "#ff4000"], [1.0, "#ff0000"]]
PLOT_CONFIG = {"displaylogo": False, "responsive": True}
SPLIT_COLOURS = ("#f58518", "#e45756", "#ff9da6", "#b279a2", "#bab0ac")  # the time split's parts (SPLIT_LABELS)
Figure = dict[str, Any]  # a plotly.js figure: {"data": [traces], "layout": {...}}

STYLE = """
html { overflow-y: scroll; } /* the scroll bar there before plotly sizes its plots: none wider than the page */
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1400px; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.8em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: .5em 0; font-size: .9em; }
th, td { border: 1px solid #ddd; padding: .25em .5em; text-align: left; vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f4f4f4; }
td:first-child { word-break: break-all; max-width: 40em; }
td { overflow-wrap: anywhere; }
table.context td:first-child { white-space: nowrap; word-break: normal; }
.verdict { padding: .8em 1em; border-radius: 6px; font-size: 1.1em; }
.flagged { background: #fde2e1; border: 2px solid #c0392b; }
.not-flagged { background: #e3f6e5; border: 2px solid #27ae60; }
.undetermined { background: #fff6d6; border: 2px solid #d4a017; }
.warning { background: #fff0c2; border: 2px solid #d48a00; padding: .6em 1em; margin: .4em 0; font-weight: bold; }
.finding { margin: .8em 0; padding: .5em 1em; border-left: 4px solid #c0392b; background: #fafafa; }
.certainty { font-size: .8em; padding: .1em .4em; border-radius: 3px; background: #ddd; }
code, pre { background: #f4f4f4; padding: .1em .3em; white-space: pre-wrap; }
.muted { color: #666; }
"""


def _text(text: str) -> str:
    """Text from outside, shown as text in the page: every control and format character escaped visibly,
    then HTML's own characters."""
    return html.escape(printable(text))


def _head(title: str) -> list[str]:
    return [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_text(title)}</title>",
        f"<style>{STYLE}</style>",
        f'<script type="text/javascript">{plotly.offline.get_plotlyjs()}</script>',
        "</head><body>",
    ]


TONE_CLASSES: dict[Tone, str] = {
    "good": "verdict not-flagged",
    "bad": "verdict flagged",
    "warning": "warning",
    "muted": "muted",
    "plain": "",
}


class Html:
    suffix = ".html"
    writes_a_file = True  # a page to open, never standard output: without --output it goes beside its input

    def render(self, document: Document, options: ReportOptions) -> str:
        e = _text
        verdict = document.verdict
        page_title = f"casstrace: {verdict.status} {verdict.about}" if verdict is not None else document.title
        subject = f" <span class='muted'>{e(document.subject)}</span>" if document.subject else ""
        parts = _head(page_title) + [f"<h1>{e(document.title)}{subject}</h1>"]
        parts += [f'<div class="warning">⚠ {e(w)}</div>' for w in document.warnings]
        if verdict is not None:
            parts.append(
                f'<div class="verdict {verdict.status.replace(" ", "-")}"><b>{e(verdict.status.upper())}</b> '
                f"{e(verdict.summary)}</div>"
            )
            if verdict.notes:
                parts.append("<ul>" + "".join(f"<li>{e(n)}</li>" for n in verdict.notes) + "</ul>")
        for section in document.shown("full"):
            if section.heading is not None:
                parts.append(f"<h2>{e(section.heading)}</h2>")
            parts += [part for block in section.blocks if (part := _block(block))]
        parts.append("</body></html>")
        return "\n".join(parts)


RENDERER = Html()


def _block(block: Block) -> str:
    e = _text
    if isinstance(block, Subheading):
        return f"<h3>{e(block.text)}</h3>"
    if isinstance(block, Paragraph):
        tag = "div" if block.tone in ("good", "bad", "warning") else "p"
        return f'<{tag} class="{TONE_CLASSES[block.tone]}">{e(block.text)}</{tag}>'
    if isinstance(block, Notes):
        return "\n".join(f"<p>{e(line)}</p>" for line in block.lines)
    if isinstance(block, Code):
        return f"<pre>{e(block.text)}</pre>"
    if isinstance(block, Query):
        return f"<p>Query: <code>{e(block.text)}</code> — totals cover {e(block.scope)}.</p>" if block.text else ""
    if isinstance(block, Items):
        return _table(("", ""), block.rows, css_class="context")
    if isinstance(block, Table):
        return _table(block.headers, block.rows)
    if isinstance(block, Findings):
        return _findings(block)
    if isinstance(block, Chart):
        return _figure(_line_chart(block))
    if isinstance(block, ExecutionBars):
        return _figure(_execution_bars(block))
    if isinstance(block, FlameGraph):
        return _figure(_icicle(block.title, block.stacks, block.unit)) if block.stacks else ""
    if isinstance(block, OffsetMap):
        return _figure(_offset_map(block.pattern))
    return _figure(_spectrogram(block.spectrogram)) if block.spectrogram.counts else ""


def _findings(block: Findings) -> str:
    e = _text
    if not block.items and block.empty is None:
        return ""
    parts = [f"<h2>{e(block.heading)}</h2>"] if block.heading is not None else []
    if not block.items:
        parts.append(f"<p class='muted'>{e(block.empty or '')}</p>")
    parts += [
        f'<div class="finding"><b>{e(finding.title)}</b> <span class="certainty">{e(finding.certainty)}</span>'
        "<ul>"
        + (f"<li>{e(finding.estimate)}</li>" if finding.estimate else "")
        + "".join(f"<li>Evidence: {e(x)}</li>" for x in finding.evidence)
        + "".join(f"<li>Try: {e(x)}</li>" for x in finding.suggestions)
        + "</ul></div>"
        for finding in block.items
    ]
    return "\n".join(parts)


def _line_chart(chart: Chart) -> Figure:
    return _plot(
        [
            {
                "type": "scatter",
                "x": chart.x,
                "y": series.y,
                "mode": "lines+markers",
                "name": _text(series.name),
                "line": {"color": series.colour, "dash": "dash" if series.dashed else "solid"},
            }
            for series in chart.series
        ],
        title=_text(chart.title),
        height=380,
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
        xaxis={"title": {"text": _text(chart.x_title)}},
        yaxis={"title": {"text": _text(chart.y_title)}, "rangemode": "tozero"},
    )


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]], css_class: str = "") -> str:
    if not rows:
        return "<p class='muted'>None.</p>"
    head = "" if not any(headers) else "<tr>" + "".join(f"<th>{_text(str(h))}</th>" for h in headers) + "</tr>"
    body = "".join(
        "<tr>"
        + "".join(
            f"<td class='n'>{_text(c)}</td>" if c[:1].isdigit() else f"<td>{_text(c)}</td>" for c in map(str, row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table class='{css_class}'>{head}{body}</table>"


def _plot(data: list[dict[str, Any]], *, title: str, title_size: int | None = None, **layout: Any) -> Figure:
    """A figure of `data` (plotly.js traces) under `title` (already escaped), with more `layout`. The
    title starts at the left, as plotly's default template put it: a long path is cut at its end."""
    font = {"font": {"size": title_size}} if title_size else {}
    return {"data": data, "layout": {"title": {"text": title, "x": 0.05, **font}, **layout}}


BYTES_BAR_PX = 150  # the bytes bars' part of the first screen's chart
SPLIT_BAR_PX = 110  # the node's time's stacked bar, with its axis
CHART_FRAME_PX = 130  # title, axis titles and margins
TEXT_ROOM_DECADES = 0.9  # right of the longest bar, for its value written outside it


def _bytes_axis(values: Sequence[float]) -> dict[str, Any]:
    """A log axis of KiB over the positive `values`: a data read 1,000x the necessary read and the payload
    leaves them a visible bar on a linear one only a pixel wide. Room is left right of the longest bar
    for its value, and below the shortest."""
    positive = [bytes_to_kib(value) for value in values if value > 0] or [1.0]
    low, high = math.log10(min(positive)), math.log10(max(positive))
    return {
        "type": "log",
        "dtick": 1,  # a tick a decade: 1, 10, 100 KiB ...
        "range": [math.floor(low) - 0.3, high + TEXT_ROOM_DECADES],
        "title": {"text": "KiB per execution (log scale)"},
    }


def _execution_bars(bars: ExecutionBars) -> Figure:
    """Per execution: the data read against the necessary read and the payload (top, each bar labelled
    with its value), and the node's time split into CPU, I/O wait, GC and the rest (bottom, when
    measured): one chart."""
    shown = bars.bytes_per_execution
    data: list[dict[str, Any]] = [
        {
            "type": "bar",
            "orientation": "h",
            "x": [bytes_to_kib(value) for value in shown.values()],
            # a log axis draws no bar of 0: its label says it
            "y": [_text(name if value > 0 else f"{name}: {human_bytes(value)}") for name, value in shown.items()],
            "text": [human_bytes(value) for value in shown.values()],
            "textposition": "outside",
            "cliponaxis": False,
            "xaxis": "x",
            "yaxis": "y",
            "name": "per execution",
            "marker": {"color": "#4c78a8"},
            "hovertemplate": "%{y}: %{text}<extra></extra>",
            "showlegend": False,
        }
    ]
    split = bars.time_split
    bytes_axis = {**_bytes_axis(list(shown.values())), "anchor": "y"}
    layout: dict[str, Any] = {
        "title": {"text": "Per execution: bytes read, and where the node's time went"},
        "barmode": "stack",
        "margin": {"l": 20, "r": 20, "t": 50, "b": 40},
        "xaxis": bytes_axis,
        # labels beside their bars, read top down, given the room they need
        "yaxis": {"anchor": "x", "automargin": True, "autorange": "reversed"},
    }
    if split is None:
        title = layout["title"]["text"].replace(", and where the node's time went", " (the node's time: not measured)")
        return {
            "data": data,
            "layout": {**layout, "title": {"text": title}, "height": BYTES_BAR_PX + CHART_FRAME_PX},
        }
    for name, colour in zip(SPLIT_LABELS, SPLIT_COLOURS, strict=True):
        data.append(
            {
                "type": "bar",
                "orientation": "h",
                "x": [ns_to_ms(split.parts_ns[name])],
                "y": ["node time"],
                "xaxis": "x2",
                "yaxis": "y2",
                "name": name,
                "marker": {"color": colour},
                "hovertemplate": f"{_text(name)}: {human_ns(split.parts_ns[name])}<extra></extra>",
            }
        )
    height = BYTES_BAR_PX + SPLIT_BAR_PX + CHART_FRAME_PX
    share = SPLIT_BAR_PX / (BYTES_BAR_PX + SPLIT_BAR_PX)
    return {
        "data": data,
        "layout": {
            **layout,
            "height": height,
            "yaxis": {**layout["yaxis"], "domain": [share + 0.15, 1]},
            "xaxis2": {"title": {"text": f"ms (the node's time: {human_ns(split.node_ns)})"}, "anchor": "y2"},
            "yaxis2": {"domain": [0, share - 0.08], "anchor": "x2", "automargin": True},
            # beside the split's bar, in its order, clear of both axes
            "legend": {"x": 1.01, "y": 0, "yanchor": "bottom", "traceorder": "normal"},
        },
    }


def _figure(figure: Figure) -> str:
    return pio.to_html(figure, full_html=False, include_plotlyjs=False, config=PLOT_CONFIG, validate=False)


ICICLE_MIN_SHARE = 0.001  # frames below 0.1 % of the total are left out: unreadable, and they bloat the page
ICICLE_ROW_PX = 18
FRAME_COLOURS = (("org.apache.cassandra.", "#4c78a8"), ("java.", "#72b7b2"), ("jdk.", "#72b7b2"), ("sun.", "#72b7b2"))
OTHER_JAVA_COLOUR, NATIVE_COLOUR = "#f58518", "#e45756"  # libraries (netty ...); native, JVM and kernel code


def _frame_colour(frame: str) -> str:
    for prefix, colour in FRAME_COLOURS:
        if frame.startswith(prefix):
            return colour
    return OTHER_JAVA_COLOUR if "." in frame and "::" not in frame else NATIVE_COLOUR


def _short_frame(frame: str) -> str:
    """Class and method without the package (and without a lambda's address); native frames whole."""
    if "::" in frame:
        return frame
    parts = [part for part in frame.split(".") if not part.startswith("0x")]
    return ".".join(parts[-2:])


def _icicle(title: str, stacks: list[WeightedStack], unit: str) -> Figure:
    """A flame graph drawn top-down (icicle): one box per frame on a path from the root, as wide as
    the bytes or samples of the stacks through it, coloured by kind (Cassandra, JDK, other Java,
    native); click a box to zoom into it, hover for the full frame name."""
    total = sum(weighted.value for weighted in stacks)
    ids, labels, parents, values, names = ["all"], ["all"], [""], [total], ["all stacks"]
    colours = ["#bab0ac"]
    index: dict[tuple[str, ...], int] = {(): 0}
    for weighted in stacks:
        path: tuple[str, ...] = ()
        for frame in weighted.stack:
            parent = index[path]
            path = path + (frame,)
            if path not in index:
                index[path] = len(ids)
                ids.append(f"f{len(ids)}")
                labels.append(_text(_short_frame(frame)))
                parents.append(ids[parent])
                values.append(0)
                names.append(_text(frame))
                colours.append(_frame_colour(frame))
            values[index[path]] += weighted.value
    keep = [i for i, value in enumerate(values) if value >= total * ICICLE_MIN_SHARE]
    depth = max((len(path) for path, i in index.items() if values[i] >= total * ICICLE_MIN_SHARE), default=0) + 1
    shown = {
        "type": "icicle",
        "ids": [ids[i] for i in keep],
        "labels": [labels[i] for i in keep],
        "parents": [parents[i] for i in keep],
        "values": [values[i] for i in keep],
        "customdata": [names[i] for i in keep],
        "branchvalues": "total",
        "marker": {"colors": [colours[i] for i in keep]},
        "tiling": {"orientation": "v"},
        "maxdepth": -1,
        "textfont": {"size": 10},
        "insidetextfont": {"size": 10},
        "hovertemplate": f"%{{customdata}}<br>%{{value:,}} {unit} (%{{percentRoot:.1%}})<extra></extra>",
    }
    return _plot(
        [shown],
        title=_text(title),
        height=ICICLE_ROW_PX * depth + 60,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
    )


def _offset_map(pattern: AccessPattern) -> Figure:
    traces = []
    styles = {
        "read": ("read", "#1f77b4", "circle"),
        "lseek": ("lseek", "#d62728", "x"),
        "page_cache": ("page-cache fill", "#2ca02c", "square"),
    }
    for kind, (label, colour, symbol) in styles.items():
        points = [p for p in pattern.points if p.kind == kind]
        if not points:
            continue
        traces.append(
            {
                "type": "scatter",  # SVG: WebGL may be missing where the report is opened
                "x": [p.time_s for p in points],
                "y": [bytes_to_mib(p.offset) for p in points],
                "mode": "markers",
                "name": label,
                "marker": {"color": colour, "symbol": symbol, "size": 5 if pattern.source == "events" else 8},
                "customdata": [[human_bytes(p.length), p.calls] for p in points],
                "hovertemplate": "t=%{x:.3f}s offset=%{y:.2f} MiB<br>%{customdata[0]} in %{customdata[1]} calls"
                "<extra></extra>",
            }
        )
    size = f" of {human_bytes(pattern.file.size_bytes)}" if pattern.file.size_bytes else ""
    return _plot(
        traces,
        title=_text(f"{pattern.file.path}{size} — {pattern.source}: {pattern.source_note}"),
        title_size=12,
        xaxis={"title": {"text": "time since capture start (s)"}},
        yaxis={"title": {"text": "file offset (MiB)"}},
        height=380,
        margin={"l": 60, "r": 20, "t": 60, "b": 50},
    )


def _spectrogram(spectrogram: Spectrogram) -> Figure:
    first, per_row, rows = spectrogram.time_rows(MAX_SPECTROGRAM_ROWS)
    counts = [[0] * LAST_BUCKET for _ in range(rows)]
    for (slot, bucket), count in spectrogram.counts.items():
        counts[(slot - first) // per_row][bucket] += count
    latency_labels = [
        f"{human_ns(bucket_lower_ns(b))} – {human_ns(bucket_lower_ns(b + 1))}" for b in range(LAST_BUCKET)
    ]
    heatmap = {
        "type": "heatmap",
        "z": [[math.log10(c) if c else None for c in row] for row in counts],
        "customdata": counts,
        "text": [latency_labels] * rows,
        "x": list(range(LAST_BUCKET)),
        "y": [(first + r * per_row) * spectrogram.slot_s for r in range(rows)],
        "colorscale": SPECTRO_COLOURS,
        "zmin": 0,
        "zmax": 4,
        "colorbar": {
            "title": {"text": "calls"},
            "tickvals": [0, 1, 2, 3, 4],
            "ticktext": ["1", "10", "100", "1k", "10k+"],
        },
        "hovertemplate": "latency %{text}<br>t=%{y:.1f}s<br>%{customdata} calls<extra></extra>",
    }
    decades = list(range(0, LAST_BUCKET + 1, 10))  # bucket 10*d starts at 10^d ns
    return _plot(
        [heatmap],
        title=_text(
            f"{spectrogram.title}: {spectrogram.total:,} calls, one row = {s_to_ms(spectrogram.slot_s * per_row):g} ms"
        ),
        xaxis={
            "title": {"text": "latency (log scale)"},
            "tickvals": [b - 0.5 for b in decades],
            "ticktext": [human_ns(bucket_lower_ns(b)) for b in decades],
            "range": [-0.5, LAST_BUCKET - 0.5],
        },
        yaxis={"title": {"text": "time since capture start (s)"}, "autorange": "reversed"},
        plot_bgcolor="black",
        height=max(300, min(900, 120 + rows * 6)),
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
    )
