"""casstrace watch on a real node with real probes: a bounded background workload (the demo's wide
statement, its narrow refactor and system.local at fixed rates, loopback only, ending by itself),
watched for 10 s with a sample of 0.3.

The truths: `casstrace run` of the wide statement alone (data read per execution), the narrow rows'
size, what the workload achieved in the watch window (counted by the workload itself), the node's
trace probability read back through nodetool, and the bytes of the demo's rows.
"""

import contextlib
import json
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from casstrace.node.statements import normalize
from casstrace.sandbox.workload import Load, Workload
from casstrace_cli import CASSTRACE
from watching import (  # noqa: F401 (fixtures)
    PREVIOUS,
    SAMPLE,
    free_port,
    nodetool,
    previous_probability,
    scrape_sessions_sampled,
    start_watch,
    watch_command,
)

pytestmark = pytest.mark.integration

WATCH_S = 10
WORKLOAD_S = 20


def _loads(spec) -> list[Load]:
    # each load runs often enough that sampling at 0.3 falls outside test_estimated_executions' band (a
    # third to three times what ran) with odds of 1 in 20,000 (at 3 a second, 30 in a watch: 1 in 500)
    return [
        Load("wide", f"SELECT c0 FROM {spec.keyspace}.{spec.table} WHERE stream_id = ?", 6, (spec.stream_id,)),
        Load("narrow", spec.narrow_query, 15),  # literals in the text: they must not reach the trace
        Load("local", "SELECT release_version FROM system.local", 30),
    ]


@pytest.fixture(scope="module")
def watched(sandbox, demo_tables, nodetool, tmp_path_factory):
    """One 10 s watch of the workload, and what the workload achieved meanwhile."""
    nodetool.set_trace_probability(PREVIOUS)
    out = tmp_path_factory.mktemp("watch") / "watch.trace"
    loads = _loads(demo_tables.spec)
    with sandbox.connect() as session:
        watcher = start_watch(watch_command(sandbox, out, "--duration", str(WATCH_S), "--format", "json"))
        workload = Workload(session, loads, WORKLOAD_S).start()
        report, errors = watcher.communicate(timeout=300)
        workload.join()
    assert watcher.returncode == 0, errors
    return json.loads(report), out, workload, nodetool.trace_probability()


def test_the_wide_statement_ranks_first_by_bytes(watched, demo_tables):
    report, _, _, _ = watched
    wide = normalize(_loads(demo_tables.spec)[0].cql)
    assert report["statements"][0]["query"] == wide
    assert report["statements"][0]["estimated_sstable_bytes"] > 10 * max(
        s["estimated_sstable_bytes"] for s in report["statements"][1:]
    )


def test_estimated_executions_follow_what_the_workload_ran(watched, demo_tables):
    """Sampled ÷ P against the executions the workload started in the watch window (a loose band:
    with a few dozen executions, sampling at 0.3 varies by tens of percent)."""
    report, trace, workload, _ = watched
    with sqlite3.connect(trace) as db:
        meta = {key: json.loads(value) for key, value in db.execute("SELECT key, value FROM meta")}
    start_s, end_s = meta["watch"]["start_ns"] / 1e9, meta["watch"]["end_ns"] / 1e9
    by_query = {s["query"]: s for s in report["statements"]}
    for load in workload.loads:
        ran = Workload.executions_between(load, start_s, end_s)
        statement = by_query[normalize(load.cql)]
        assert statement["sampled_executions"] <= ran
        assert ran / 3 <= statement["estimated_executions"] <= ran * 3, (load.name, ran, statement)


def test_wide_data_read_per_execution_matches_casstrace_run(watched, demo_tables, sandbox, node_args, tmp_path):
    report, _, _, _ = watched
    wide = report["statements"][0]
    run_trace = tmp_path / "run.trace"
    subprocess.run(
        [
            *CASSTRACE,
            "run",
            *node_args,
            "--pid",
            str(sandbox.pid()),
            "--repeat",
            "3",
            "--no-html",
            "--out",
            str(run_trace),
            demo_tables.spec.wide_query,
        ],
        check=True,
        capture_output=True,
    )
    run = json.loads(
        subprocess.run(
            [*CASSTRACE, "report", "--format", "json", str(run_trace)], check=True, capture_output=True, text=True
        ).stdout
    )
    measured = [e["amplification"]["data_read_bytes"] for e in run["executions"] if e["kind"] == "measured"]
    per_execution = sum(measured) / len(measured)
    ratio = wide["data_read_bytes_per_execution"] / per_execution
    print(
        f"watch / run data read per execution: {ratio:.3f} "
        f"({wide['data_read_bytes_per_execution']:,.0f} / {per_execution:,.0f})"
    )
    assert 0.7 <= ratio <= 1.4
    assert wide["rows_per_execution"] == demo_tables.spec.rows
    assert {f["cause"] for f in wide["findings"]} >= {"full_row_read"}
    # No payload in a watch: past the least its one blob column takes, not past the table's mean cell
    # (c0 is 100 B of 20 columns of 50 KB): undetermined, and `run` says flagged.
    assert wide["verdict"] in ("flagged", "undetermined") and run["verdict"] == "flagged"
    assert wide["run_command"].startswith("casstrace run ") and "stream_id = ?" in wide["run_command"]


def test_the_narrow_statement_reads_about_its_rows(watched, demo_tables):
    report, _, _, _ = watched
    narrow = next(s for s in report["statements"] if s["query"] == normalize(demo_tables.spec.narrow_query))
    row_bytes = demo_tables.spec.value_bytes(0) + 8  # its value, and its two int clustering columns
    assert narrow["rows_per_execution"] == demo_tables.spec.rows
    assert 0 < narrow["bytes_per_row"] <= 2 * row_bytes
    assert narrow["latency_p50_s"] <= narrow["latency_p99_s"]
    assert narrow["verdict"] == "not flagged" and narrow["findings"] == []


def test_what_is_not_explained_is_shown_by_pool(watched):
    report, _, _, _ = watched
    assert 0 < report["explained_share"] <= 1
    assert report["explained_bytes"] + sum(p["sstable_bytes"] for p in report["unexplained"]) == pytest.approx(
        report["sstable_bytes"], abs=len(report["unexplained"]) + 1
    )


def test_trace_probability_is_back_after_a_normal_end(watched):
    assert watched[3] == PREVIOUS


def test_the_trace_holds_no_bound_or_row_value(watched, demo_tables):
    _, trace, _, _ = watched
    content = Path(trace).read_bytes()
    spec = demo_tables.spec
    assert b"column_no = 0" not in content and b"stream_id = 1" not in content
    assert b"bound_var" not in content and b"Parsing" not in content
    for number, (_, values) in enumerate(spec.values()):
        if number == 5:
            break
        assert values[0][:24] not in content and values[1][:24] not in content
    with sqlite3.connect(trace) as db:
        statements = {row[0] for row in db.execute("SELECT statement FROM statement_sessions")}
    assert statements and all(statement == normalize(statement) for statement in statements)


def test_report_reads_the_watch_trace(watched):
    report, trace, _, _ = watched
    again = json.loads(
        subprocess.run(
            [*CASSTRACE, "report", "--format", "json", str(trace)], check=True, capture_output=True, text=True
        ).stdout
    )
    assert [s["query"] for s in again["statements"]] == [s["query"] for s in report["statements"]]
    text = subprocess.run([*CASSTRACE, "report", str(trace)], check=True, capture_output=True, text=True).stdout
    assert "What the sampled sessions do not explain" in text


INTERVAL_S = 10
INTERVAL_WATCH_S = 35  # intervals end at 10, 20 and 30 s; the last one is complete ~10 s after its end


def _meta(trace: Path) -> dict:
    with sqlite3.connect(trace) as db:
        return {key: json.loads(value) for key, value in db.execute("SELECT key, value FROM meta")}


def _data_bytes(trace: Path, table: str) -> dict[str, int]:
    """Bytes read syscalls returned, per Data file: by thread and slot (thread_io) or per file (file_io)."""
    with sqlite3.connect(trace) as db:
        return dict(
            db.execute(
                f"SELECT path, SUM(t.read_bytes) FROM {table} t JOIN files USING (file_id) "
                "WHERE path LIKE '%-Data.db' GROUP BY path HAVING SUM(t.read_bytes) > 0"
            )
        )


def test_an_interval_watch_writes_a_trace_and_report_per_interval_and_sums_them(
    sandbox, demo_tables, nodetool, previous_probability, tmp_path
):
    """--interval: a trace and a JSON report per interval, and the summary. The truths: the kernel's
    per-file totals of the whole watch (a map of their own, in the capture's last trace) equal the
    intervals' per-thread bytes summed, to the byte; the summary is the sum of the intervals; no
    sampled session is in two intervals; estimated executions follow what the workload ran."""
    out, port = tmp_path / "shift.trace", free_port()
    loads = _loads(demo_tables.spec)
    with sandbox.connect() as session:
        command = watch_command(sandbox, out, "--duration", str(INTERVAL_WATCH_S), "--interval", str(INTERVAL_S))
        watcher = start_watch([*command, "--format", "json", "--metrics-port", str(port)])
        workload = Workload(session, loads, INTERVAL_WATCH_S + 5).start()
        scraped = []  # the sessions sampled so far, as the metrics page says every half second
        while watcher.poll() is None:
            if (sampled := scrape_sessions_sampled(port)) is not None:
                scraped.append(sampled)
            time.sleep(0.5)
        summary_text, errors = watcher.communicate(timeout=300)
        workload.join()
    assert watcher.returncode == 0, errors
    traces = [tmp_path / f"shift-{number:04d}.trace" for number in (1, 2, 3)]
    assert sorted(tmp_path.glob("*.trace")) == traces  # shift.trace itself became the last interval
    reports = [json.loads(trace.with_suffix(".json").read_text()) for trace in traces]
    summary = json.loads(summary_text)
    assert errors.count("casstrace: interval ") == 3
    assert nodetool.trace_probability() == previous_probability

    metas = [_meta(trace) for trace in traces]
    assert [round(m["watch"]["duration_s"]) for m in metas[:2]] == [INTERVAL_S, INTERVAL_S]
    assert summary["duration_s"] == pytest.approx(sum(m["watch"]["duration_s"] for m in metas))
    assert sum(m.get("aggregate_overflows", 0) + m.get("lost_events", 0) for m in metas) == 0
    by_file: dict[str, int] = {}
    for trace in traces:
        for path, size in _data_bytes(trace, "thread_io").items():
            by_file[path] = by_file.get(path, 0) + size
    assert by_file and by_file == _data_bytes(traces[-1], "file_io")

    with contextlib.ExitStack() as stack:
        sessions = [
            {
                row[0]
                for row in stack.enter_context(sqlite3.connect(trace)).execute(
                    "SELECT session_id FROM statement_sessions"
                )
            }
            for trace in traces
        ]
    assert sum(map(len, sessions)) == len(set().union(*sessions))  # none in two intervals
    assert summary["sstable_bytes"] == sum(r["sstable_bytes"] for r in reports)
    for statement in summary["statements"]:
        parts = [s for r in reports for s in r["statements"] if s["query"] == statement["query"]]
        assert statement["sampled_executions"] == sum(s["sampled_executions"] for s in parts)
        assert statement["estimated_sstable_bytes"] == pytest.approx(sum(s["estimated_sstable_bytes"] for s in parts))
    assert sum(s["sampled_executions"] for s in summary["statements"]) == sum(map(len, sessions))
    # The live figures add the intervals done to the one so far: a counter that never went down
    # across the cuts, and held the first two intervals' sessions by the end.
    assert scraped == sorted(scraped) and scraped[-1] >= len(sessions[0]) + len(sessions[1]), scraped
    start_s, end_s = metas[0]["watch"]["start_ns"] / 1e9, metas[-1]["watch"]["end_ns"] / 1e9
    by_query = {s["query"]: s for s in summary["statements"]}
    for load in workload.loads:
        ran = Workload.executions_between(load, start_s, end_s)
        assert 0.5 * ran <= by_query[normalize(load.cql)]["estimated_executions"] <= 1.5 * ran, load.name


def _ctrl_c(command: list[str]) -> tuple[int, str, str]:
    """Start the watch, press Ctrl-C a second into it: (exit status, stdout, stderr)."""
    watcher = start_watch(command)
    time.sleep(1)
    watcher.send_signal(signal.SIGINT)
    report, errors = watcher.communicate(timeout=300)
    return watcher.returncode, report, errors


def test_trace_probability_is_back_after_ctrl_c(sandbox, previous_probability, nodetool, tmp_path):
    out = tmp_path / "interrupted.trace"
    status, _, errors = _ctrl_c(watch_command(sandbox, out, "--duration", "120"))
    assert status == 130, errors
    assert nodetool.trace_probability() == previous_probability
    with sqlite3.connect(out) as db:
        complete = db.execute("SELECT value FROM meta WHERE key = 'complete'").fetchone()[0]
    assert json.loads(complete) is False


def test_ctrl_c_is_how_an_open_ended_watch_ends(sandbox, previous_probability, nodetool, tmp_path):
    """Without --duration, Ctrl-C ends the watch as it should end: a whole trace, the report, exit 0."""
    status, report, errors = _ctrl_c(watch_command(sandbox, tmp_path / "open.trace", "--format", "json"))
    assert status == 0, errors
    assert nodetool.trace_probability() == previous_probability
    assert json.loads(report)["complete"] is True


def test_trace_probability_is_back_after_an_error(
    sandbox, previous_probability, nodetool, tmp_path, monkeypatch, capsys
):
    """The watch fails while the node traces (here: as when the JVM's thread list cannot be read
    again, a failure from the node's side): the probability goes back and no trace is left."""
    from casstrace.cli.main import main
    from casstrace.errors import CasstraceError
    from casstrace.orchestration import watcher

    def fail(*args, **kwargs):
        assert nodetool.trace_probability() == SAMPLE  # it failed while the node traced
        raise CasstraceError("the node went away", "start it again")

    monkeypatch.setattr(watcher.Watch, "wait", fail)
    out = tmp_path / "failed.trace"
    with pytest.raises(SystemExit) as exit_:
        main(watch_command(sandbox, out, "--duration", "5")[len(CASSTRACE) :])
    assert exit_.value.code != 0
    assert "the node went away" in capsys.readouterr().err
    assert nodetool.trace_probability() == previous_probability
    assert not out.exists() and not list(tmp_path.glob(".*partial"))
