"""`watch` on the test node: per table, its flushes and compactions (analyses.table_writes) against the
files they left on disk, and the mutation bytes against the node's own memtable size before each flush.

One watch of a fresh table: rows written, `nodetool flush`, more rows, flush, `nodetool compact`. The
truths: each new SSTable's files on disk after its flush (every component), the inputs' Data files and
the output's files after the compaction, and `nodetool tablestats`' "Memtable data size" just before
each flush. A second watch flushes tiny tables of their own twice: the many-small-flushes finding."""

import json
import re
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from casstrace.analyses.table_writes import MANY_SMALL_FLUSHING_TABLES
from casstrace.node.tablestats import parse_tablestats
from watching import free_port, nodetool, previous_probability, start_watch, watch_command  # noqa: F401 (fixtures)

pytestmark = pytest.mark.integration

KEYSPACE = "casstrace_table_writes"
TINY_KEYSPACE = "casstrace_tiny_tables"
ROWS = 300  # a flush of ~300 KiB: small, on one table
VALUE_BYTES = 1024
SCRAPE_WAIT_S = 30


def sstables(directory: Path) -> dict[str, int]:
    """Each SSTable in a table's directory ('nb-3-big') -> the bytes of its every component."""
    found: dict[str, int] = {}
    for path in directory.iterdir():
        if (match := re.match(r"^(\w+-\w+-\w+)-\w+\.\w+$", path.name)) and path.is_file():
            found[match[1]] = found.get(match[1], 0) + path.stat().st_size
    return found


def table_directory(sandbox, session, keyspace: str, table: str) -> Path:
    """The table's directory: named by its id (one of a dropped table of that name may still be there)."""
    query = "SELECT id FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s"
    [row] = session.execute(query, (keyspace, table))
    return sandbox.layout.data / keyspace / f"{table}-{row.id.hex}"


def data_size(directory: Path, sstable: str) -> int:
    return (directory / f"{sstable}-Data.db").stat().st_size


def memtable_bytes(sandbox, table: str) -> int:
    stats = parse_tablestats(sandbox.nodetool("tablestats", table).stdout)
    return stats.per_table[table]["memtable_bytes"]


def write(session, table: str, first: int, count: int) -> None:
    insert = session.prepare(f"INSERT INTO {table} (k, v) VALUES (?, ?)")
    for key in range(first, first + count):
        session.execute(insert, (key, bytes([key % 251]) * VALUE_BYTES))


def scrape_until(port: int, table: str, compacted: int) -> str:
    """The metrics page once a live refresh counted the compaction's writes (refreshes come every 2 s, or
    less often when one takes long: casstrace keeps its live figures to a tenth of a core)."""
    series = re.compile(rf'^casstrace_table_write_bytes_total{{table="{table}",by="compaction"}} (\d+)$', re.M)
    deadline = time.monotonic() + SCRAPE_WAIT_S
    while True:
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        found = series.search(page)
        if (found and int(found[1]) >= compacted) or time.monotonic() > deadline:
            return page
        time.sleep(1)


def stop(watcher: subprocess.Popen) -> dict:
    """Ctrl-C: how an open-ended watch ends, whole; its JSON report."""
    watcher.send_signal(signal.SIGINT)
    report, errors = watcher.communicate(timeout=300)
    assert watcher.returncode == 0, errors
    return json.loads(report)


@pytest.fixture(scope="module")
def watched(sandbox, cql_session, nodetool, tmp_path_factory):
    """The watch of a table's two flushes and a compaction, with what the disk and the node said."""
    table = f"{KEYSPACE}.kv"
    cql_session.execute(f"DROP KEYSPACE IF EXISTS {KEYSPACE}")
    cql_session.execute(
        f"CREATE KEYSPACE {KEYSPACE} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
    )
    cql_session.execute(f"CREATE TABLE {table} (k int PRIMARY KEY, v blob)")
    directory = table_directory(sandbox, cql_session, KEYSPACE, "kv")
    port = free_port()
    out = tmp_path_factory.mktemp("table-writes") / "writes.trace"
    watcher = start_watch(watch_command(sandbox, out, "--metrics-port", str(port), "--format", "json"))
    flushed: dict[str, int] = {}
    received: list[int] = []
    try:
        for first in (0, ROWS):
            write(cql_session, table, first, ROWS)
            received.append(memtable_bytes(sandbox, table))
            before = sstables(directory)
            sandbox.nodetool("flush", KEYSPACE, "kv")
            flushed |= {name: size for name, size in sstables(directory).items() if name not in before}
        inputs = sstables(directory)
        input_data = {name: data_size(directory, name) for name in inputs}
        sandbox.nodetool("compact", KEYSPACE, "kv")
        output = {name: size for name, size in sstables(directory).items() if name not in inputs}
        page = scrape_until(port, table, sum(output.values()))
    finally:
        report = stop(watcher)
    [written] = [t for t in report["background"]["tables"] if t["table"] == table]
    yield {
        "table": written,
        "report": report,
        "page": page,
        "flushed": flushed,
        "input_data_sizes": input_data,
        "output": output,
        "received": received,
    }
    cql_session.execute(f"DROP KEYSPACE IF EXISTS {KEYSPACE}")


def test_each_flush_is_its_new_sstable_on_disk(watched):
    table, flushed = watched["table"], watched["flushed"]
    assert len(flushed) == 2, flushed
    assert table["flushes"] == 2
    assert table["flush_sizes"] == sorted(flushed.values())
    assert table["flush_bytes"] == sum(flushed.values())


def test_a_compaction_reads_its_inputs_and_writes_its_output(watched):
    table, output = watched["table"], watched["output"]
    assert len(output) == 1, output
    assert table["compaction_written_bytes"] == sum(output.values())
    assert table["compaction_read_bytes"] == sum(watched["input_data_sizes"].values())


def test_write_amplification_against_the_node_s_memtable_size(watched):
    table = watched["table"]
    received = sum(watched["received"])
    assert table["received_bytes"] == pytest.approx(received, rel=5e-4)  # the log prints 3 decimals
    on_disk = sum(watched["flushed"].values()) + sum(watched["output"].values())
    assert table["write_amplification"] == pytest.approx(on_disk / received, rel=5e-4)
    assert table["pending_compactions_end"] == 0
    # one table flushing small SSTables: not the many-tables finding
    assert [f["cause"] for f in watched["report"]["background"]["findings"]] == []


def test_the_metrics_page_carries_the_table_s_write_bytes_and_amplification(watched):
    page, table = watched["page"], watched["table"]
    checked = subprocess.run(["promtool", "check", "metrics"], input=page, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    name = table["table"]
    flush = re.search(rf'^casstrace_table_write_bytes_total{{table="{name}",by="flush"}} (\d+)$', page, re.M)
    assert flush and int(flush[1]) == table["flush_bytes"], page
    ratio = re.search(rf'^casstrace_table_write_amplification_ratio{{table="{name}"}} ([0-9.e+]+)$', page, re.M)
    assert ratio and float(ratio[1]) == pytest.approx(table["write_amplification"], rel=5e-4), page


def test_many_tiny_tables_flushed_again_and_again(sandbox, cql_session, previous_probability, tmp_path):
    tables = [f"{TINY_KEYSPACE}.t{n}" for n in range(MANY_SMALL_FLUSHING_TABLES)]
    cql_session.execute(f"DROP KEYSPACE IF EXISTS {TINY_KEYSPACE}")
    cql_session.execute(
        f"CREATE KEYSPACE {TINY_KEYSPACE} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
    )
    for table in tables:
        cql_session.execute(f"CREATE TABLE {table} (k int PRIMARY KEY, v blob)")
    watcher = start_watch(watch_command(sandbox, tmp_path / "tiny.trace", "--format", "json"))
    try:
        for first in (0, 10):
            for table in tables:
                write(cql_session, table, first, 10)
            sandbox.nodetool("flush", TINY_KEYSPACE)
    finally:
        report = stop(watcher)
    cql_session.execute(f"DROP KEYSPACE IF EXISTS {TINY_KEYSPACE}")
    [finding] = [f for f in report["background"]["findings"] if f["cause"] == "small_flushes"]
    assert sorted(finding["tables"]) == sorted(tables)
    flushes = {t["table"]: t["flushes"] for t in report["background"]["tables"]}
    assert all(flushes[table] == 2 for table in tables), flushes
