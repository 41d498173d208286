"""`watch --metrics-port` scraped by a real Prometheus server (Debian's prometheus 2.42, a process of
the test's own on free ports), the series queried back through its HTTP API; `promtool check metrics`
on the page. The truths: what the workload ran (its own count) and the table it read."""

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from casstrace.node.jvm import find_cassandra
from casstrace.node.tracing import nodetool_for
from casstrace.sandbox.workload import Load, Workload
from casstrace_cli import CASSTRACE
from watching import free_port, nodetool, previous_probability, start_watch, watch_command  # noqa: F401 (fixtures)

pytestmark = pytest.mark.integration

KEYSPACE = "casstrace_watch_metrics"
ROWS = 200
VALUE_BYTES = 4096
SAMPLE = 0.5
# The workload runs WATCH_S - 10 s, and the watch 10 s more to read its last sessions and be scraped.
# ~600 executions: the binomial check below (3 sigma) holds the sampled count within ±13 %
WATCH_S = 25
RATE_PER_S = 40
SCRAPE_S = 2


@pytest.fixture(scope="module")
def table(sandbox) -> str:
    """A table whose rows are in an SSTable (flushed): reading one reads the disk, or the page cache."""
    with sandbox.connect() as session:
        session.execute(
            f"CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = "
            "{'class': 'SimpleStrategy', 'replication_factor': 1}"
        )
        session.execute(f"CREATE TABLE IF NOT EXISTS {KEYSPACE}.kv (k int PRIMARY KEY, v blob)")
        insert = session.prepare(f"INSERT INTO {KEYSPACE}.kv (k, v) VALUES (?, ?)")
        for key in range(ROWS):
            session.execute(insert, (key, bytes([key % 251]) * VALUE_BYTES))
    nodetool_for(find_cassandra(sandbox.pid())).run("flush", KEYSPACE, "kv")
    return f"{KEYSPACE}.kv"


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    """A Prometheus server of the test's own, scraping the port the watch will serve on."""
    if shutil.which("prometheus") is None:
        pytest.fail("prometheus is not installed (scripts/install --test installs it)")
    folder = tmp_path_factory.mktemp("prometheus")
    target, api = free_port(), free_port()
    (folder / "prometheus.yml").write_text(
        f"global: {{scrape_interval: {SCRAPE_S}s, scrape_timeout: {SCRAPE_S}s}}\n"
        f"scrape_configs:\n  - job_name: casstrace\n    static_configs:\n      - targets: ['127.0.0.1:{target}']\n"
    )
    server = subprocess.Popen(
        [
            "prometheus",
            f"--config.file={folder / 'prometheus.yml'}",
            f"--storage.tsdb.path={folder / 'data'}",
            f"--web.listen-address=127.0.0.1:{api}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(folder / "prometheus.log").open("w"),
    )
    yield target, f"http://127.0.0.1:{api}"
    server.terminate()
    server.wait(timeout=30)


@pytest.fixture(scope="module")
def scraped(sandbox, table, prometheus, nodetool, tmp_path_factory):
    """A watch serving metrics while a workload reads the table, scraped by Prometheus throughout;
    the page fetched by hand at the end, and the workload's own count."""
    port, api = prometheus
    out = tmp_path_factory.mktemp("watch") / "metrics.trace"
    load = Load("kv", f"SELECT v FROM {table} WHERE k = ?", RATE_PER_S, (7,))
    command = watch_command(
        sandbox,
        out,
        "--duration",
        str(WATCH_S),
        "--metrics-port",
        str(port),
        "--format",
        "json",
        sample=SAMPLE,
    )
    with sandbox.connect() as session:
        watcher = start_watch(command)
        workload = Workload(session, [load], WATCH_S - 10).start()
        workload.join()
        time.sleep(3 * SCRAPE_S)
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        report, errors = watcher.communicate(timeout=300)
    assert watcher.returncode == 0, errors
    return page, api, load, json.loads(report), errors


def _query(api: str, expression: str) -> list[dict]:
    url = f"{api}/api/v1/query?" + urllib.parse.urlencode({"query": expression})
    answer = json.loads(urllib.request.urlopen(url, timeout=10).read())
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def test_promtool_accepts_the_page(scraped, tmp_path):
    page = scraped[0]
    checked = subprocess.run(["promtool", "check", "metrics"], input=page, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "casstrace_statement_read_bytes_total" in page


def test_prometheus_scraped_the_statement_and_table_series(scraped, table):
    _, api, load, report, errors = scraped
    statement = f"SELECT v FROM {table} WHERE k = ?"
    executions = {
        series["metric"]["kind"]: float(series["value"][1])
        for series in _query(api, f'max_over_time(casstrace_statement_executions_total{{statement="{statement}"}}[5m])')
    }
    # Sampled: about SAMPLE of what the workload ran (binomial; 3 sigma), and what the final report says.
    ran = load.executions
    sigma = (ran * SAMPLE * (1 - SAMPLE)) ** 0.5
    assert abs(executions["sampled"] - ran * SAMPLE) <= 3 * sigma + 2, (executions, ran, errors)
    assert executions["estimated"] == pytest.approx(executions["sampled"] / SAMPLE)
    (final,) = [s for s in report["statements"] if s["query"] == statement]
    assert executions["sampled"] <= final["sampled_executions"]
    data = _query(
        api,
        f'max_over_time(casstrace_statement_read_bytes_total{{statement="{statement}",'
        f'component="Data",measure="data"}}[5m])',
    )
    assert data and float(data[0]["value"][1]) > 0
    tables = _query(api, f'max_over_time(casstrace_table_read_bytes_total{{table="{table}",measure="data"}}[5m])')
    assert {series["metric"]["component"] for series in tables} >= {"Data"}
    assert float(_query(api, "max_over_time(casstrace_watch_sample_ratio[5m])")[0]["value"][1]) == SAMPLE


def test_the_statement_label_set_is_bounded(scraped):
    page = scraped[0]
    labels = {line.split('statement="', 1)[1].split('"', 1)[0] for line in page.splitlines() if 'statement="' in line}
    assert len(labels - {"other"}) <= 10  # --top's default


def test_a_busy_port_fails_before_the_node_changes(sandbox, previous_probability, nodetool, tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            [
                *CASSTRACE,
                "watch",
                "--host",
                sandbox.host,
                "--port",
                str(sandbox.native_port),
                "--duration",
                "5",
                "--metrics-port",
                str(port),
                "--out",
                str(tmp_path / "w.trace"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2
    assert done.stderr.startswith(f"casstrace: error: cannot serve metrics on http://127.0.0.1:{port}/"), done.stderr
    assert "(fix: give another --metrics-port)" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert nodetool.trace_probability() == previous_probability
    assert not (tmp_path / "w.trace").exists()


def test_metrics_are_served_on_ipv6_loopback(sandbox, previous_probability, nodetool, tmp_path):
    """--metrics-address ::1: served over IPv6, at the URL the watch names (brackets and all)."""
    with socket.socket(socket.AF_INET6) as probe:
        probe.bind(("::1", 0))
        port = probe.getsockname()[1]
    command = watch_command(
        sandbox, tmp_path / "w.trace", "--duration", "10", "--metrics-port", str(port), "--metrics-address", "::1"
    )
    watcher = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert watcher.stderr is not None
    started = watcher.stderr.readline()
    url = f"http://[::1]:{port}/metrics"
    assert f"metrics served at {url}" in started, started
    page = ""
    deadline = time.monotonic() + 30
    while "casstrace_watch_sample_ratio" not in page and time.monotonic() < deadline:
        time.sleep(1)
        try:
            page = urllib.request.urlopen(url, timeout=5).read().decode()
        except OSError:
            pass
    _, errors = watcher.communicate(timeout=300)
    assert watcher.returncode == 0, started + errors
    ratio = [line for line in page.splitlines() if line.startswith("casstrace_watch_sample_ratio ")]
    assert ratio and float(ratio[0].split()[1]) == pytest.approx(0.3), page
