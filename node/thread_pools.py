"""The node's thread pools as it reports them (system_views.thread_pools: a pool's name, as its
threads are named, and its active and pending tasks), read by role (traces.thread_roles)."""

import time
from collections.abc import Collection, Iterable
from typing import Protocol

from cassandra import InvalidRequest
from cassandra.cluster import Session

from casstrace.traces.thread_roles import Role, role_of

# The node's own work on its tables beside the requests: flushes (the per-disk writers and the
# reclaiming of the flushed memtables among them) and compactions.
BACKGROUND_ROLES = frozenset({Role.MEMTABLE_FLUSH, Role.COMPACTION})
THREAD_POOLS = "SELECT name, active_tasks, pending_tasks FROM system_views.thread_pools"
POLL_S = 0.2


class PoolRow(Protocol):
    """A row of system_views.thread_pools, the columns THREAD_POOLS selects."""

    name: str
    active_tasks: int
    pending_tasks: int


def busy(rows: Iterable[PoolRow], roles: Collection[Role]) -> list[str]:
    """The pools of `roles` with a task running or waiting, in the node's order."""
    return [row.name for row in rows if role_of(row.name) in roles and (row.active_tasks or row.pending_tasks)]


def busy_pools(session: Session, roles: Collection[Role]) -> list[str]:
    """The node's pools of `roles` with a task running or waiting now."""
    return busy(session.execute(THREAD_POOLS), roles)


def wait_idle(session: Session, roles: Collection[Role], timeout_s: float) -> bool:
    """Wait until the node's pools of `roles` have no task running or waiting, at most timeout_s;
    whether they did."""
    deadline = time.monotonic() + timeout_s
    while busy_pools(session, roles):
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)
    return True


def trace_writes_done(session: Session, timeout_s: float) -> bool | None:
    """Wait until the node's tracing stage has no write of a traced request's session or events running
    or waiting, at most timeout_s; whether it had none (None: the node does not say, before 4.0). On a
    busy node it lags the requests: a session read before its events are in shows fewer rows."""
    try:
        return wait_idle(session, {Role.TRACING}, timeout_s)
    except InvalidRequest:
        return None
