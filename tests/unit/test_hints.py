"""analyses/hints.py: the hints a watched node stored and replayed per replica, from hand-built thread_io
rows whose every byte is known; its finding beside the tables' and what every format and the metrics
page show of it (tests/integration/test_replicas_cluster.py watches a coordinator with a replica down)."""

import json
from pathlib import Path

from casstrace.analyses.hints import HintsFor, hints_target
from casstrace.analyses.watch import RunningFigures, WatchInputs, summarise
from casstrace.reports import render
from casstrace.reports.prometheus import Exposition
from casstrace.reports.watch import document
from casstrace.traces.queries import ThreadIO
from test_table_writes import io

DOWN = "5b1b4b7e-3c1d-4f5e-9a2b-0c1d2e3f4a5b"
BACK = "00000000-0000-4000-8000-000000000002"
HINTS = "/var/lib/cassandra/hints"
FILES = {
    1: f"{HINTS}/{DOWN}-1764428400000-2.hints",
    2: f"{HINTS}/{DOWN}-1764428400000-2.crc32",  # its checksum: not the hints' bytes
    3: f"{HINTS}/{BACK}-1764428300000-2.hints",
    4: "/var/lib/cassandra/data/ks/t-0123456789abcdef0123456789abcdef/nb-5-big-Data.db",
}
WRITER, DISPATCHER, READER = 1, 2, 3
THREADS = {WRITER: "HintsWriteExecutor:1", DISPATCHER: "HintsDispatcher:1", READER: "ReadStage-1"}


# 3,000 + 1,000 bytes of hints stored for the replica that is down, 8 of their checksum; 2,500 bytes
# replayed to the one that came back; a read of a Data file that is nobody's hints.
ROWS = [
    io(WRITER, 0, 1, written=3000),
    io(WRITER, 5, 1, written=1000),
    io(WRITER, 5, 2, written=8),
    io(DISPATCHER, 6, 3, read=2500),
    io(READER, 6, 4, read=4096),
]


def inputs(rows: list[ThreadIO]) -> WatchInputs:
    return WatchInputs.from_rows(
        [], [], rows, FILES, THREADS, capture_start_ns=0, slot_ns=1, probability=1.0, duration_s=10.0
    )


def test_a_hints_file_names_the_replica_it_holds_hints_for():
    assert hints_target(FILES[1]) == DOWN
    assert hints_target(f"{DOWN}-1764428400000-2.hints") == DOWN
    assert hints_target(FILES[2]) is None
    assert hints_target(FILES[4]) is None
    assert hints_target(f"{HINTS}/not-a-host-1764428400000-2.hints") is None


def test_per_replica_the_bytes_stored_and_replayed_and_a_finding_weighed_by_both():
    watched = summarise(inputs(ROWS), {})
    assert watched.hints == [HintsFor(DOWN, 4000, 0), HintsFor(BACK, 0, 2500)]
    [finding] = watched.table_findings
    assert finding.cause == "hints"
    assert finding.title == "Hints: the node stored 3.9 KiB of writes for 2 replicas it could not reach"
    assert finding.saves_bytes == 6500
    assert DOWN in finding.evidence[0] and BACK in finding.evidence[0]


def test_only_a_replay_is_a_finding_of_its_own_and_no_hints_none():
    replayed = summarise(inputs([io(DISPATCHER, 0, 3, read=2500)]), {})
    assert [f.title for f in replayed.table_findings] == [
        "Hints replayed: the node sent 2.4 KiB of stored writes to 1 replica"
    ]
    quiet = summarise(inputs([io(READER, 0, 4, read=4096)]), {})
    assert quiet.hints == [] and quiet.table_findings == []


def test_intervals_add_up_to_the_whole():
    running = RunningFigures()
    for number, rows in enumerate((ROWS[:2], ROWS[2:])):
        running.add_interval(summarise(inputs(rows), {}), Path(f"part-{number}.trace"))
    assert running.summary().hints == summarise(inputs(ROWS), {}).hints


def test_every_format_and_the_metrics_page_carry_the_hints():
    watched = summarise(inputs(ROWS), {})
    data = json.loads(render(document(watched), "json"))["background"]
    assert data["hints"] == [
        {"host_id": DOWN, "stored_bytes": 4000, "replayed_bytes": 0},
        {"host_id": BACK, "stored_bytes": 0, "replayed_bytes": 2500},
    ]
    assert [f["cause"] for f in data["findings"]] == ["hints"]
    for format_ in ("text", "md", "html"):
        rendered = render(document(watched), format_)
        assert "Hints: the node stored" in rendered, format_
        assert DOWN in rendered, format_
    page = Exposition(top=5).page(watched, [])
    assert f'casstrace_hints_bytes_total{{host_id="{DOWN}",direction="stored"}} 4000' in page
    assert f'casstrace_hints_bytes_total{{host_id="{BACK}",direction="replayed"}} 2500' in page
