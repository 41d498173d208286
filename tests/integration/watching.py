"""What the watch tests share: the command that watches the test sandbox, started as a user starts
it, and the node's trace probability (fixtures: set before a watch, put back after the module)."""

import re
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from casstrace.node.jvm import find_cassandra
from casstrace.node.tracing import Nodetool, nodetool_for
from casstrace_cli import CASSTRACE

SAMPLE = 0.3
PREVIOUS = 0.002  # the node's probability before each watch: distinct from 0 and from SAMPLE
STARTED = "probes attached"


@pytest.fixture(scope="module")
def nodetool(sandbox) -> Iterator[Nodetool]:
    tool = nodetool_for(find_cassandra(sandbox.pid()))
    yield tool
    tool.set_trace_probability(0)


@pytest.fixture
def previous_probability(nodetool) -> float:
    nodetool.set_trace_probability(PREVIOUS)
    return PREVIOUS


def watch_command(sandbox, out: Path, *extra: str, sample: float = SAMPLE) -> list[str]:
    return [
        *CASSTRACE,
        "watch",
        "--host",
        sandbox.host,
        "--port",
        str(sandbox.native_port),
        "--pid",
        str(sandbox.pid()),
        "--sample",
        str(sample),
        "--out",
        str(out),
        *extra,
    ]


def start_watch(command: list[str]) -> subprocess.Popen:
    """Start the watch and return once it watches (its stderr says so)."""
    watcher = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert watcher.stderr is not None
    lines = []
    for line in watcher.stderr:
        lines.append(line)
        if STARTED in line:
            return watcher
    watcher.wait()
    raise AssertionError(f"the watch never started (exit {watcher.returncode}): {''.join(lines)}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def scrape_sessions_sampled(port: int) -> float | None:
    """casstrace_sessions_sampled_total on the watch's metrics page (None: no page, or not on it yet)."""
    try:
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    except OSError:
        return None
    found = re.search(r"^casstrace_sessions_sampled_total ([0-9.e+]+)$", page, re.M)
    return float(found.group(1)) if found else None
