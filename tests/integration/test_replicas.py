"""Capturing nodes through capture agents (casstrace.orchestration.agents): on this machine, and through a real
sshd the tests start on a loopback port with a throwaway key; the figures against the kernel's
/proc/PID/io counters and against the in-process capture of `casstrace run`."""

import json
import os
import signal
import socket
import subprocess
import time

import pytest

from bpf_programs import program_exists, program_ids
from casstrace.analyses import analyse
from casstrace.node.query import MeasuringProtocolHandler, execute, prepare
from casstrace.orchestration.agents import AgentOptions, AgentsCapture, AgentTarget
from casstrace.probes.protocol import GAP_WINDOW, Windows
from casstrace.probes.recording import record
from casstrace.traces import Trace, TraceWriter
from casstrace_cli import CASSTRACE, casstrace
from replicas_helpers import agents_of, data_bytes_per_execution, rchar, remote_casstrace

pytestmark = pytest.mark.integration


def test_an_agent_captures_its_node_on_the_driver_s_windows(sandbox, demo_tables, demo_query, tmp_path):
    """The agent path of one local node: every byte the JVM read in an execution's window is what
    the kernel counted for it (rchar), and each window's Data bytes are the query's."""
    pid = sandbox.pid()
    target = AgentTarget(1, AgentOptions(sandbox.host, sandbox.native_port, pid, "bcc"))
    capture = AgentsCapture([target], primary_node_id=1)
    counted: list[tuple[int, int]] = []
    with sandbox.connect() as session:
        session.client_protocol_handler = MeasuringProtocolHandler
        prepared = prepare(session, demo_query)

        def body(windows: Windows) -> None:
            for execution in (1, 2):
                before = rchar(pid)
                window_id = windows.begin_window("execution", execution)
                execute(session, prepared)
                windows.begin_window(GAP_WINDOW)
                counted.append((window_id, rchar(pid) - before))

        path = record(capture, TraceWriter(tmp_path / "agent.trace"), body)
    capture.discard()
    with Trace(path) as trace:
        assert trace.complete and trace.meta["format_version"] == 5
        for window_id, kernel in counted:
            (seen,) = trace.rows(
                "SELECT SUM(io.read_bytes) FROM file_io io JOIN files f USING (file_id)"
                " WHERE io.window_id = ? AND f.node_id = 1",
                (window_id,),
            )[0]
            assert abs(seen - kernel) <= 0.01 * kernel + 65536, (window_id, seen, kernel)
        per_node = data_bytes_per_execution(trace)
        assert per_node[1] >= demo_tables.spec.rows * demo_tables.spec.other_column_bytes
    assert not capture.partials.exists()  # the agent's partial trace went into the trace, and is gone


def test_an_agent_stopped_on_its_machine_ends_the_run_early_and_its_capture_is_kept(sandbox, demo_query, tmp_path):
    """SIGTERM to an agent (its own machine's shutdown, an operator): it detaches and sends back what
    it captured; the run ends early, its trace kept and marked incomplete, with that node's bytes."""
    target = AgentTarget(1, AgentOptions(sandbox.host, sandbox.native_port, sandbox.pid(), "bcc"))
    capture = AgentsCapture([target], primary_node_id=1)
    with sandbox.connect() as session:
        session.client_protocol_handler = MeasuringProtocolHandler
        prepared = prepare(session, demo_query)

        def body(windows: Windows) -> str | None:
            windows.begin_window("execution", 1)
            execute(session, prepared)
            windows.begin_window(GAP_WINDOW)
            (agent,) = agents_of(os.getpid())
            os.kill(agent, signal.SIGTERM)
            deadline = time.monotonic() + 60
            while not windows.ended_early and time.monotonic() < deadline:
                windows.begin_window(GAP_WINDOW)
                time.sleep(0.2)
            return windows.ended_early

        path = record(capture, TraceWriter(tmp_path / "stopped.trace"), body)
    capture.discard()
    with Trace(path) as trace:
        assert not trace.complete and "stopped on its machine" in trace.meta["incomplete_reason"]
        assert data_bytes_per_execution(trace)[1] > 0


def test_an_agent_whose_driver_is_gone_detaches_and_exits(sandbox):
    agent = subprocess.Popen(
        [*CASSTRACE, "agent", "--address", sandbox.host, "--port", str(sandbox.native_port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    ready = json.loads(agent.stdout.readline())
    assert ready["ready"]["pid"] == sandbox.pid()
    programs = program_ids(agent.pid)
    assert programs
    agent.stdin.close()  # the driver died (or its ssh connection dropped)
    assert agent.wait(timeout=30) == 1
    assert agent.stdout.read() == b""  # it kept nothing and sent nothing
    assert not any(program_exists(program) for program in programs)


def test_an_agent_for_a_node_with_no_jvm_says_the_node_is_down(sandbox):
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    agent = subprocess.run(
        [*CASSTRACE, "agent", "--address", "127.0.0.9", "--port", str(port)], input=b"", capture_output=True, timeout=60
    )
    message = json.loads(agent.stdout)
    assert agent.returncode == 1 and message["down"] is True
    assert f"serves 127.0.0.9:{port}" in message["error"]


# -- over ssh: through the real sshd of the `sshd` fixture (tests/conftest.py) ---------------------


def test_the_ssh_path_gives_the_local_path_s_bytes(sandbox, demo_query, sshd, tmp_path):
    local, remote = tmp_path / "local.trace", tmp_path / "ssh.trace"
    common = ["--host", sandbox.host, "--port", sandbox.native_port, "--repeat", 3, "--no-html"]
    done = casstrace("run", demo_query, *common, "--out", local)
    assert done.returncode == 0, done.stderr
    done = casstrace(
        "run",
        demo_query,
        *common,
        "--out",
        remote,
        "--hosts",
        f"{sandbox.host}=node1",
        "--ssh-config",
        sshd,
        "--remote-casstrace",
        remote_casstrace(),
    )
    assert done.returncode == 0, done.stderr
    with Trace(local) as here, Trace(remote) as there:
        assert there.complete and there.meta["replicas"]["ssh"] is True
        node = there.rows("SELECT * FROM nodes WHERE node_id = 1")[0]
        assert (node["host"], node["captured"], node["pid"]) == ("node1", 1, sandbox.pid())
        # the same machine's clock, measured through ssh: within half the shortest round trip of 0
        clock = json.loads(node["meta"])["clock"]
        assert abs(node["clock_shift_ns"]) <= clock["round_trip_ns"] // 2 + 1_000_000
        local_bytes, ssh_bytes = data_bytes_per_execution(here)[1], data_bytes_per_execution(there)[1]
        assert abs(ssh_bytes - local_bytes) <= 0.05 * local_bytes, (local_bytes, ssh_bytes)
        measured = [[e.wire_bytes for e in analyse(t).executions if e.kind == "measured"] for t in (there, here)]
        assert measured[0] == measured[1] and None not in measured[0]


def test_a_host_ssh_cannot_reach_is_one_line_naming_it(sandbox, demo_query, sshd, tmp_path):
    out = tmp_path / "never.trace"
    done = casstrace(
        "run",
        demo_query,
        "--host",
        sandbox.host,
        "--port",
        sandbox.native_port,
        "--out",
        out,
        "--hosts",
        f"{sandbox.host}=closed",
        "--ssh-config",
        sshd,
        "--no-html",
    )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("casstrace: error: ssh to closed failed"), done.stderr
    assert "(fix: " in lines[0]
    assert not out.exists() and not list(tmp_path.glob(".*partial"))
