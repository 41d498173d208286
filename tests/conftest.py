"""Session fixtures every test shares: the test sandbox node, a driver session to it, the demo data.

The test sandbox is the one scripts/test starts (CASSTRACE_TEST_DATA_DIR, CASSTRACE_TEST_NATIVE_PORT,
CASSTRACE_TEST_JMX_PORT). When it is not running, the first test that needs it starts it, and the
session stops it at the end; a node that was already running is left running.

Unit and integration tests are told apart by the `integration` marker (registered in setup.cfg): a
module that needs a node, BPF, root, sysdig, Java, ssh, async-profiler or a browser sets
`pytestmark = pytest.mark.integration`, and `pytest -m "not integration"` runs the rest without any
of them. A test without the marker that asks for the node fails at once, saying so, instead of
quietly starting a JVM.
"""

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from casstrace.sandbox.control import Sandbox
from casstrace.sandbox.demo import DemoData, ensure_loaded

TEST_DATA_DIR = Path(os.environ.get("CASSTRACE_TEST_DATA_DIR")
                     or Path.home() / ".local/share/casstrace/test-sandbox")
TEST_NATIVE_PORT = int(os.environ.get("CASSTRACE_TEST_NATIVE_PORT", "19042"))
TEST_JMX_PORT = int(os.environ.get("CASSTRACE_TEST_JMX_PORT", "17199"))

# The fixtures below that reach the test node; any test that uses one is an integration test.
NODE_FIXTURES = frozenset({"sandbox", "cql_session", "demo_tables"})


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A unit test must not reach the node, not even through another fixture: fail it loudly."""
    uses_node = NODE_FIXTURES.intersection(getattr(item, "fixturenames", ()))
    if uses_node and item.get_closest_marker("integration") is None:
        pytest.fail(f"{item.nodeid} uses {', '.join(sorted(uses_node))} (the test node) but is not marked "
                    "integration: set `pytestmark = pytest.mark.integration` in its module", pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def scratch_data_home(tmp_path_factory):
    """Traces the tests write by default (and `casstrace traces` lists) go to a scratch data
    directory, not the user's. The test node lives at TEST_DATA_DIR, chosen apart from this."""
    previous = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("data-home"))
    yield
    if previous is None:
        os.environ.pop("XDG_DATA_HOME")
    else:
        os.environ["XDG_DATA_HOME"] = previous


@pytest.fixture(scope="session")
def sandbox() -> Sandbox:
    """The running test node. Use .pid(), .data_dir, .host, .native_port, .jmx_port, .log,
    .layout.data (the data_file_directory), .nodetool("flush", ...), .connect()."""
    node = Sandbox(TEST_DATA_DIR)
    started_here = not node.is_running()
    if started_here:
        node.start(native_port=TEST_NATIVE_PORT, jmx_port=TEST_JMX_PORT, progress=lambda _: None)
    yield node
    if started_here:
        node.stop()


@pytest.fixture(scope="session")
def cql_session(sandbox):
    """A cassandra-driver Session to the test node (no keyspace set)."""
    with sandbox.connect() as session:
        yield session


@pytest.fixture(scope="session")
def demo_tables(sandbox) -> DemoData:
    """The demo data in the test node, loaded once (kept across sessions). Fields:
    .keyspace; .spec (WideTable: .table, .narrow_table, .stream_id, .rows, .columns,
    .column_names, .value_bytes(column_no), .first_column_bytes, .other_column_bytes, .values());
    .wide and .narrow (LoadedTable: .name, .data_files [Data.db paths], .data_bytes)."""
    return ensure_loaded(sandbox)


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory on a read-only tmpfs (root ignores file modes: only a read-only filesystem truly
    refuses its writes). Needs root to mount: use it in integration tests."""
    mount_point = tmp_path / "read-only"
    mount_point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(mount_point)], check=True)
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=True)
