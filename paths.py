"""Where casstrace keeps things: downloads under the user's cache dir, sandboxes and traces under the data dir,
what it changed on a node (until it is put back) under the state dir, the JVM's GC log of a run under the
temporary dir."""

import os
from pathlib import Path


def _xdg(variable: str, fallback: str) -> Path:
    value = os.environ.get(variable)
    return Path(value) if value else Path.home() / fallback


def cache_dir() -> Path:
    """Maven artifacts and other re-downloadable things ($XDG_CACHE_HOME/casstrace)."""
    return _xdg("XDG_CACHE_HOME", ".cache") / "casstrace"


def data_dir() -> Path:
    """Sandboxes and stored traces ($XDG_DATA_HOME/casstrace)."""
    return _xdg("XDG_DATA_HOME", ".local/share") / "casstrace"


def default_sandbox_dir() -> Path:
    return data_dir() / "sandbox"


def default_traces_dir() -> Path:
    return data_dir() / "traces"


def state_dir() -> Path:
    """What must outlive a casstrace killed mid-way: the ledger of what it changed on a node, until it
    is put back ($XDG_STATE_HOME/casstrace; ledger.py)."""
    return _xdg("XDG_STATE_HOME", ".local/state") / "casstrace"


def gc_log_root() -> Path:
    """Where a run's GC log goes, each in a directory of its own that the JVM's user writes to
    (casstrace.node.gc_pauses): the temporary dir ($TMPDIR, else /tmp). A ledger record naming a log
    elsewhere is not casstrace's, and is never acted on (casstrace.node.leftovers)."""
    import tempfile  # here: every command imports paths, and its start-up is kept light (test_costs)

    return Path(tempfile.gettempdir())
