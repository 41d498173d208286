"""`casstrace sweep` end to end on the test sandbox: a small three-point sweep, real loads and probes."""

import json
import signal
import subprocess
import time

import pytest

from casstrace.analyses import analyse
from casstrace.analyses.sweep import summarise_sweep
from casstrace.reports import render
from casstrace.reports.sweep import document
from casstrace.sandbox.demo import is_loaded
from casstrace.sandbox.sweep import SWEEP_KEYSPACE
from casstrace_cli import CASSTRACE, casstrace

pytestmark = pytest.mark.integration

COLUMNS = (2, 4, 6)
ROWS, CELL_BYTES = 10, 20_000


def sweep_tables(session) -> list[str]:
    return sorted(
        row.table_name
        for row in session.execute(
            "SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (SWEEP_KEYSPACE,)
        )
    )


@pytest.fixture(scope="module")
def three_points(tmp_path_factory, sandbox, demo_tables):
    """A sweep over N = 2, 4, 6 (10 rows of 20 KB cells): (JSON report, traces directory, process)."""
    directory = tmp_path_factory.mktemp("sweep")
    report = directory / "sweep.json"
    done = casstrace(
        "sweep",
        "--data-dir",
        sandbox.data_dir,
        "--min-columns",
        COLUMNS[0],
        "--max-columns",
        COLUMNS[-1],
        "--step",
        COLUMNS[1] - COLUMNS[0],
        "--rows",
        ROWS,
        "--cell-bytes",
        CELL_BYTES,
        "--repeat",
        2,
        "--traces-dir",
        directory / "traces",
        "--format",
        "json",
        "--output",
        report,
    )
    return json.loads(report.read_text()) if report.exists() else None, directory / "traces", done


def test_three_point_sweep_data_bytes_grow_with_n(three_points):
    report, _, done = three_points
    assert done.returncode == 0, done.stderr
    points = report["points"]
    assert [p["columns"] for p in points] == list(COLUMNS)
    for p in points:
        # Random cells do not compress: the wide table's Data.db holds at least every cell once.
        assert p["columns"] * ROWS * CELL_BYTES <= p["wide_data_file_bytes"] < 1.1 * p["columns"] * ROWS * CELL_BYTES
        for side in ("wide", "narrow"):  # the last column of every row, whatever N
            assert (p[side]["rows"], p[side]["payload_bytes"]) == (ROWS, ROWS * CELL_BYTES)
            assert p[side]["executions"] == 2
    sizes = [p["wide_data_file_bytes"] for p in points]
    wide_read = [p["wide"]["data_read_bytes"] for p in points]
    narrow_read = [p["narrow"]["data_read_bytes"] for p in points]
    assert sizes == sorted(sizes) and len(set(sizes)) == len(sizes)
    assert wide_read == sorted(wide_read) and wide_read[-1] > 2 * wide_read[0]
    assert max(narrow_read) < 1.5 * min(narrow_read)  # the refactor stays flat
    assert all(read >= ROWS * CELL_BYTES for read in narrow_read)
    assert report["fits"]["wide_data_read"]["slope"] > 0
    assert any("grows linearly with N" in f for f in report["findings"] if f.startswith("Wide"))
    assert any(f.startswith("Narrow") and "Data bytes read per execution: flat" in f for f in report["findings"])


def test_sweep_drops_what_it_created_and_leaves_the_demo_alone(three_points, cql_session, demo_tables):
    _, _, done = three_points
    assert done.returncode == 0, done.stderr
    assert sweep_tables(cql_session) == []
    assert (
        cql_session.execute(
            "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = %s", (SWEEP_KEYSPACE,)
        ).one()
        is None
    )
    assert is_loaded(cql_session, demo_tables.spec)


def test_html_report_draws_the_curves(three_points, sandbox):
    report, traces, _ = three_points
    measured = [
        (
            p["columns"],
            analyse(traces / f"wide-{p['columns']:03d}.trace"),
            analyse(traces / f"narrow-{p['columns']:03d}.trace"),
            p["wide_data_file_bytes"],
            p["narrow_data_file_bytes"],
        )
        for p in report["points"]
    ]
    page = render(document(summarise_sweep(measured, ROWS, CELL_BYTES)), "html")
    assert page.startswith("<!DOCTYPE html>") and page.count('class="plotly-graph-div"') == 3
    for title in ("Data bytes read per execution", "Latency per execution", "Amplification"):
        assert title in page


def test_keep_leaves_the_tables_and_a_second_sweep_reuses_them(tmp_path, sandbox, cql_session):
    args = [
        "sweep",
        "--data-dir",
        sandbox.data_dir,
        "--min-columns",
        3,
        "--max-columns",
        3,
        "--rows",
        5,
        "--cell-bytes",
        10_000,
        "--repeat",
        1,
        "--warmup",
        0,
        "--traces-dir",
        tmp_path,
        "--format",
        "json",
    ]
    try:
        first = casstrace(*args, "--keep")
        assert first.returncode == 0, first.stderr
        assert sweep_tables(cql_session) == ["narrow_3", "wide_3"]
        ids = list(
            cql_session.execute("SELECT id FROM system_schema.tables WHERE keyspace_name = %s", (SWEEP_KEYSPACE,))
        )
        refused = casstrace(*args)  # the first sweep's traces are there: not replaced without --force
        assert refused.returncode == 2 and "wide-003.trace: the file exists" in refused.stderr
        second = casstrace(*args, "--force")  # reuses the kept tables, so it must not drop them
        assert second.returncode == 0, second.stderr
        assert (
            list(cql_session.execute("SELECT id FROM system_schema.tables WHERE keyspace_name = %s", (SWEEP_KEYSPACE,)))
            == ids
        )
        assert json.loads(second.stdout)["points"][0]["wide"]["payload_bytes"] == 5 * 10_000
    finally:
        cql_session.execute(f"DROP KEYSPACE IF EXISTS {SWEEP_KEYSPACE}")


def test_rows_too_wide_for_one_write_fail_before_touching_the_node(tmp_path):
    done = casstrace("sweep", "--data-dir", tmp_path / "no-sandbox", "--max-columns", 100, "--cell-bytes", 200_000)
    assert done.returncode == 2
    assert done.stderr.startswith("casstrace: error: a row of 100 columns of 200,000 bytes is 19.1 MiB")
    assert not (tmp_path / "no-sandbox").exists()


def test_tables_too_big_for_the_nodes_memtables_are_refused(sandbox, cql_session):
    done = casstrace("sweep", "--data-dir", sandbox.data_dir, "--rows", 1000, "--max-columns", 100)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(
        "casstrace: error: the two tables at N=100 hold 1,907 MiB, more than the quarter of the node's 1 GiB heap"
    )
    assert (
        "(fix: lower --rows, --cell-bytes or --max-columns, or start the sandbox with a larger --heap)" in done.stderr
    )
    assert sweep_tables(cql_session) == []


def test_a_stopped_sandbox_fails_in_one_line(tmp_path):
    done = casstrace("sweep", "--data-dir", tmp_path, "--max-columns", 10)
    assert done.returncode == 2
    assert done.stderr.startswith(f"casstrace: error: the sandbox in {tmp_path} is not running")


def test_a_sweep_stopped_by_sigterm_reports_what_it_did_drops_its_tables_and_exits_143(tmp_path, sandbox, cql_session):
    """SIGTERM once N = 2 is traced, while N = 4 is: the report of N = 2, marked incomplete, the
    keyspace dropped, and exit 128 + 15 (a sweep that went on to report used to exit 0)."""
    traces, report = tmp_path / "traces", tmp_path / "sweep.json"
    argv = ["sweep", "--data-dir", sandbox.data_dir, "--min-columns", 2, "--max-columns", 4, "--step", 2]
    argv += ["--rows", ROWS, "--cell-bytes", CELL_BYTES, "--repeat", 1, "--traces-dir", traces]
    sweep = subprocess.Popen(
        [*CASSTRACE, *map(str, argv), "--format", "json", "--output", str(report)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    second = traces / ".wide-004.trace.partial"  # N = 2 was yielded: the sweep is tracing N = 4
    deadline = time.monotonic() + 300
    while not second.exists() and sweep.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    sweep.send_signal(signal.SIGTERM)
    _, stderr = sweep.communicate(timeout=120)
    assert sweep.returncode == 128 + signal.SIGTERM, stderr
    assert "Traceback" not in stderr
    assert stderr.splitlines()[-1].startswith("casstrace: terminated (SIGTERM)"), stderr
    done = json.loads(report.read_text())
    assert [p["columns"] for p in done["points"]] == [2]
    assert done["warnings"][0] == "INCOMPLETE SWEEP: interrupted after 1 of 2 column counts.", done["warnings"]
    assert sweep_tables(cql_session) == []
    keyspace = "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = %s"
    assert cql_session.execute(keyspace, (SWEEP_KEYSPACE,)).one() is None
