"""Session fixtures every test shares: the test sandbox node, a driver session to it, the demo data.

The test sandbox is the one scripts/test starts (CASSTRACE_TEST_DATA_DIR, CASSTRACE_TEST_NATIVE_PORT,
CASSTRACE_TEST_JMX_PORT). When it is not running, the first test that needs it starts it, and the
session stops it at the end; a node that was already running is left running.
"""

import os
from pathlib import Path

import pytest

from casstrace.sandbox.control import Sandbox
from casstrace.sandbox.demo import DemoData, ensure_loaded

TEST_DATA_DIR = Path(os.environ.get("CASSTRACE_TEST_DATA_DIR")
                     or Path.home() / ".local/share/casstrace/test-sandbox")
TEST_NATIVE_PORT = int(os.environ.get("CASSTRACE_TEST_NATIVE_PORT", "19042"))
TEST_JMX_PORT = int(os.environ.get("CASSTRACE_TEST_JMX_PORT", "17199"))


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
