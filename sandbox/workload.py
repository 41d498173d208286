"""Bounded background workloads on a sandbox node: statements at fixed rates, ending by themselves.

For `casstrace watch` to have something to find (its tests, its overhead benchmark): each statement
runs on its own thread, one request at a time, started on a fixed schedule (a late start does not
make the next ones come faster), until the duration is over. Each records what it achieved: how
many ran, how long each took as the client saw it, how many failed.
"""

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Load:
    """One statement of the workload: `cql` with `values` (a prepared statement when there are any)."""

    name: str
    cql: str
    rate_per_s: float
    values: tuple = ()
    started_s: list[float] = field(default_factory=list)  # time.monotonic() of each start
    latencies_s: list[float] = field(default_factory=list)
    errors: int = 0

    @property
    def executions(self) -> int:
        return len(self.latencies_s)


class Workload:
    """Start with start(); it ends by itself after `duration_s` (join() waits for it)."""

    def __init__(self, session: Any, loads: list[Load], duration_s: float):
        self.session = session
        self.loads = loads
        self.duration_s = duration_s
        self.started: float | None = None
        self.ended: float | None = None
        self._threads: list[threading.Thread] = []

    def start(self) -> "Workload":
        statements = [self.session.prepare(load.cql) if load.values else load.cql for load in self.loads]
        self.started = time.monotonic()
        for load, statement in zip(self.loads, statements):
            thread = threading.Thread(
                target=self._run, args=(load, statement), name=f"workload-{load.name}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        return self

    def join(self) -> "Workload":
        for thread in self._threads:
            thread.join()
        self.ended = time.monotonic()
        return self

    @staticmethod
    def executions_between(load: Load, start_s: float, end_s: float) -> int:
        """How many of the load's executions started in [start_s, end_s] (time.monotonic())."""
        return sum(start_s <= began <= end_s for began in load.started_s)

    def _run(self, load: Load, statement: Any) -> None:
        assert self.started is not None
        interval = 1 / load.rate_per_s
        deadline = self.started + self.duration_s
        number = 0
        while True:
            due = self.started + number * interval
            if due >= deadline:
                return
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            number += 1
            began = time.monotonic()
            try:
                self.session.execute(statement, load.values or None)
            except Exception:  # a timeout on a busy machine: counted, the schedule goes on
                load.errors += 1
                continue
            load.started_s.append(began)
            load.latencies_s.append(time.monotonic() - began)
            # Late beyond the next start: skip the starts already missed rather than burst.
            number = max(number, int((time.monotonic() - self.started) / interval))


class BackgroundRequests:
    """Another client's requests at a fixed rate — reads of many keys, or writes of many rows — each
    with the next of `values` in turn, asynchronously (the driver's execute_async, at most `in_flight`
    at a time), ending by itself after `duration_s` or at stop(): the traffic of a node that serves
    other clients while casstrace measures one query. Give it a session of its own (a Cluster of its
    own): the node then counts its requests as another client's."""

    def __init__(
        self,
        session: Any,
        cql: str,
        values: list[tuple],
        rate_per_s: float,
        duration_s: float,
        in_flight: int = 32,
        consistency: str | None = None,  # a ConsistencyLevel's name (None: the session's)
    ):
        if rate_per_s <= 0 or not values:
            raise ValueError("a background load needs a positive rate and values to bind")
        self.session = session
        self.cql = cql
        self.values = values
        self.rate_per_s = rate_per_s
        self.duration_s = duration_s
        self.in_flight = in_flight
        self.consistency = consistency
        self.completed = 0
        # (sent, answered) of each request answered, on CLOCK_MONOTONIC as the client saw it: a trace's
        # clock too, so a test can tell which of a trace's windows the other client's requests overlapped
        self.answered_s: list[tuple[float, float]] = []
        self.errors = 0
        self.skipped = 0  # starts due while `in_flight` requests were still out
        self.started: float | None = None
        self.ended: float | None = None
        self._outstanding = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "BackgroundRequests":
        from cassandra import ConsistencyLevel

        statement = self.session.prepare(self.cql)
        if self.consistency is not None:
            statement.consistency_level = ConsistencyLevel.name_to_value[self.consistency]
        self.started = time.monotonic()
        self._thread = threading.Thread(target=self._run, args=(statement,), name="background-reads", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> "BackgroundRequests":
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        deadline = time.monotonic() + 5.0
        while self._outstanding and time.monotonic() < deadline:  # the last requests' answers
            time.sleep(0.01)
        self.ended = time.monotonic()
        return self

    def __enter__(self) -> "BackgroundRequests":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def latencies_s(self) -> list[float]:
        """Each answered request's latency, as the client saw it."""
        return [answered - sent for sent, answered in self.answered_s]

    def answered_during(self, start_s: float, end_s: float) -> int:
        """How many answered requests were out at some moment of [start_s, end_s] (time.monotonic())."""
        return sum(sent <= end_s and answered >= start_s for sent, answered in self.answered_s)

    @property
    def achieved_rate(self) -> float:
        """Requests answered per second, over the load's life so far."""
        if self.started is None:
            return 0.0
        return self.completed / max(1e-9, (self.ended or time.monotonic()) - self.started)

    def _done(self, _: object, began: float) -> None:
        answered = time.monotonic()
        with self._lock:
            self._outstanding -= 1
            self.completed += 1
            self.answered_s.append((began, answered))

    def _failed(self, _: object) -> None:
        with self._lock:
            self._outstanding -= 1
            self.errors += 1

    def _run(self, statement: Any) -> None:
        assert self.started is not None
        interval = 1 / self.rate_per_s
        number = 0
        while not self._stop.is_set():
            due = self.started + number * interval
            if due - self.started >= self.duration_s:
                return
            now = time.monotonic()
            if due > now:
                self._stop.wait(due - now)
                continue
            with self._lock:
                room = self._outstanding < self.in_flight
                if room:
                    self._outstanding += 1
            if room:
                began = time.monotonic()
                future = self.session.execute_async(statement, self.values[number % len(self.values)])
                future.add_callbacks(self._done, self._failed, callback_args=(began,))
            else:
                self.skipped += 1
            number += 1


@dataclass(frozen=True)
class PointTable:
    """A table of `rows` rows of `value_bytes` random bytes by key, LZ4 in 16 KiB chunks, flushed to
    one SSTable: a point read of it needs one chunk and the index (issue 32's table, smaller)."""

    keyspace: str
    table: str = "kv"
    rows: int = 5_000
    value_bytes: int = 2_000
    replication_factor: int = 1  # on a cluster: every node holds every row at 3

    @property
    def name(self) -> str:
        return f"{self.keyspace}.{self.table}"

    def point_query(self, key: int) -> str:
        return f"SELECT v FROM {self.name} WHERE pk = {key}"

    @property
    def by_key(self) -> str:
        """The point read with its key bound."""
        return f"SELECT v FROM {self.name} WHERE pk = ?"

    def keys_except(self, key: int) -> list[tuple]:
        """Every other key, as bound values for by_key."""
        return [(other,) for other in range(self.rows) if other != key]

    def ensure(self, session: Any, flush: Callable[[str, str], object]) -> None:
        """Create and fill it unless it holds its rows already; `flush(keyspace, table)` (nodetool)."""
        from cassandra.concurrent import execute_concurrent_with_args

        session.execute(
            f"CREATE KEYSPACE IF NOT EXISTS {self.keyspace}"
            f" WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': {self.replication_factor}}}"
        )
        session.execute(
            f"CREATE TABLE IF NOT EXISTS {self.name} (pk int PRIMARY KEY, v blob)"
            " WITH compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 16}"
        )
        if session.execute(f"SELECT pk FROM {self.name} WHERE pk = {self.rows - 1}").one() is not None:
            return
        generator = random.Random(32)
        insert = session.prepare(f"INSERT INTO {self.name} (pk, v) VALUES (?, ?)")
        execute_concurrent_with_args(
            session, insert, [(key, generator.randbytes(self.value_bytes)) for key in range(self.rows)], concurrency=32
        )
        flush(self.keyspace, self.table)
