"""A trace edited by hand is refused when it is opened (casstrace.traces.validation): one line naming the
table and the field, through `report` and `compare`, never an internal error or a figure nobody could
have measured; an untouched trace still opens. Each case is a real trace (the writer's) edited with sqlite3."""

import shutil
import sqlite3
from concurrent.futures import ThreadPoolExecutor

import pytest

import synthetic_traces as synthetic
from casstrace.errors import CasstraceError
from casstrace.traces import Trace
from casstrace.traces.validation import MAX_JSON_DEPTH, too_deep
from casstrace_cli import casstrace, one_error_line

DEEP = '{"a": ' + "[" * 100_000 + "1" + "]" * 100_000 + "}"

# name: (the edit, the table and field the refusal names, what it says)
EDITS = {
    "text": (
        "UPDATE window_measures SET value = 'abc' WHERE measure = 'node_ns'",
        "window_measures, field value",
        "node_ns of window 3 is 'abc', not a number",
    ),
    "nan": (
        "UPDATE window_measures SET value = 'NaN' WHERE measure = 'node_ns'",
        "window_measures, field value",
        "node_ns of window 3 is 'NaN', not a number",
    ),
    "blob": (
        "UPDATE window_measures SET value = x'00ff' WHERE measure = 'node_ns'",
        "window_measures, field value",
        "node_ns of window 3 is a blob, not a number",
    ),
    "infinite": (
        "UPDATE window_measures SET value = 9e999 WHERE measure = 'node_ns'",
        "window_measures, field value",
        "node_ns of window 3 is infinite",
    ),
    "unregistered": (
        "UPDATE window_measures SET measure = 'cpu_typo' WHERE measure = 'node_ns'",
        "window_measures, field measure",
        "'cpu_typo' is not a registered measure",
    ),
    "derived": (
        "UPDATE window_measures SET measure = 'traced_ns' WHERE measure = 'node_ns'",
        "window_measures, field measure",
        "'traced_ns' is derived by the analyses",
    ),
    "negative node time": (
        "UPDATE window_measures SET value = -5000000 WHERE measure = 'node_ns'",
        "window_measures, field value",
        "node_ns of window 3 is -5,000,000 ns, negative",
    ),
    "negative round trip": (
        "UPDATE executions SET latency_s = -1 WHERE execution = 2",
        "executions, field latency_s",
        "execution 2's round trip is -1 s, negative",
    ),
    "58 days of CPU": (
        f"UPDATE window_measures SET value = {58 * 86400 * 10**9} WHERE measure = 'request_cpu_ns'",
        "window_measures, field value",
        "request_cpu_ns of window 3 is 5,011,200,000,000,000 ns, more than its node's 3 threads can "
        "run in the capture's 1,500,000,000 ns",
    ),
    "a span past its window": (
        "UPDATE window_measures SET measure = 'gc_pause_ns', value = 2000000000, window_id = 1"
        " WHERE measure = 'node_ns'",
        "window_measures, field value",
        "gc_pause_ns of window 1 is 2,000,000,000 ns, more than the window's length (400,000,000 ns)",
    ),
    "negative written back": (
        "INSERT INTO file_io(window_id, file_id, written_back_bytes) VALUES (1, 1, -4096)",
        "file_io, field written_back_bytes",
        "file 1 in window 1: -4,096 bytes, negative",
    ),
    "mapped dirtied past dirtied": (
        "INSERT INTO file_io(window_id, file_id, dirtied_pages, mapped_dirtied_pages) VALUES (1, 1, 2, 5)",
        "file_io, field mapped_dirtied_pages",
        "file 1 in window 1: 5 of its 2 dirtied pages dirtied through a mapping",
    ),
    "window backwards": (
        "UPDATE windows SET end_ns = start_ns - 1 WHERE window_id = 2",
        "windows, field end_ns",
        "window 2 ends at 5399999999, before it starts (5400000000)",
    ),
    "deep meta": (
        "INSERT OR REPLACE INTO meta(key, value) VALUES ('notes', :deep)",
        "meta, field notes",
        f"its JSON nests deeper than {MAX_JSON_DEPTH} levels",
    ),
}


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    return synthetic.timed_run(tmp_path_factory.mktemp("validation") / "good.trace")


@pytest.fixture(scope="module")
def refusals(good):
    """(report's, compare's) outcome of each edited trace, run two at a time."""
    edited = {}
    for name, (sql, _, _) in EDITS.items():
        path = good.with_name(name.replace(" ", "-") + ".trace")
        shutil.copy(good, path)
        with sqlite3.connect(path) as db:
            assert db.execute(sql, {"deep": DEEP}).rowcount == 1
        db.close()
        edited[name] = path
    runs = [
        (name, args)
        for name, path in edited.items()
        for args in (("report", path, "--format", "json", "-o", path.with_suffix(".json")), ("compare", good, path))
    ]
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda run: casstrace(*run[1]), runs))
    outcomes: dict[str, list] = {}
    for (name, args), outcome in zip(runs, done):
        outcomes.setdefault(name, []).append((args, outcome))
    return outcomes


@pytest.mark.parametrize("name", EDITS)
def test_an_edited_trace_is_refused_in_one_line_naming_the_table_and_field(refusals, name):
    _, where, what = EDITS[name]
    for args, done in refusals[name]:
        line = one_error_line(done)
        path = args[1] if args[0] == "report" else args[2]
        assert line.startswith(f"casstrace: error: {path}: table {where}: {what}"), (args[0], line)
        assert "internal error" not in line and "(fix: the trace was changed since casstrace wrote it" in line
        assert not path.with_suffix(".json").exists()  # no half-written output


def test_an_untouched_trace_opens_and_compares_with_itself(good):
    with Trace(good) as trace:
        assert trace.meta["query"].startswith("SELECT")
    done = casstrace("compare", good, good, "--fail-if-worse")
    assert done.returncode == 0, done.stderr
    assert "PASS --fail-if-worse" in done.stderr + done.stdout


def test_a_figure_within_its_bounds_opens(tmp_path):
    """At the bound (with its slack): CPU time of every thread the whole capture (a window's CPU counts
    the slices that end while it is current, begun before it too); the node's time past its round trip
    (other clients' requests add to it on a busy node)."""
    path = synthetic.timed_run(tmp_path / "edge.trace", node_ns=900_000_000, cpu_ns=4_500_000_000, latency_s=0.05)
    with Trace(path):
        pass
    with sqlite3.connect(path) as db:
        db.execute("UPDATE window_measures SET value = 4600000000 WHERE measure = 'request_cpu_ns'")
    db.close()
    with pytest.raises(CasstraceError, match="table window_measures, field value: request_cpu_ns"):
        Trace(path)


def test_json_depth_is_told_without_recursion():
    assert too_deep(DEEP)
    assert not too_deep("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH)
    assert too_deep("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1))
    assert not too_deep('["[[[[' + "[" * 100 + '\\"{{"]')  # brackets inside strings are text
    assert not too_deep('{"a": [1, {"b": "]]]]"}], "c": {}}')


def test_without_threads_listed_cpu_is_bounded_by_the_most_threads_linux_runs(tmp_path):
    path = synthetic.timed_run(tmp_path / "no-threads.trace", cpu_ns=10**16, threads=0)  # 116 days
    with pytest.raises(CasstraceError, match="its node's 4,194,304 threads can run in the capture's 1,500,000,000 ns"):
        Trace(path)
