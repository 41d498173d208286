"""What `casstrace watch` costs a busy node: p99 latency and throughput at >= 1,000 requests/s of mixed
prepared statements with bound values, alone vs watched, interleaved (prints figures; not a test).

    .venv/bin/python benchmarks/watch_busy.py --port 9042 [--rounds 3] [--block-s 30] [--target 1200]

The load: four prepared statements with bound values over a table of its own
(casstrace_watch_shift.kv, as benchmarks/watch_shift.py makes it), issued asynchronously by the
driver at --target requests/s (at most --in-flight outstanding: a node that cannot keep up shows it
as lower throughput, not as an ever-growing queue). Each round: a block alone, then a block under
`casstrace watch --sample P` (the block starts once the watch says its probes are attached).
Per block: the throughput achieved and the p99 of the client's latency. Printed: each round's
figures, the medians over the rounds, and the watched ÷ alone ratios (goal, issue 28: <= 1.05 for
both). The machine's load average is printed beside them: on a shared machine, say so with the figures.
"""

import argparse
import os
import random
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from casstrace.analyses.percentiles import percentile
from figures import report
from watch_shift import KEYSPACE, connect, node_arguments, while_watched


def statements(session: Any, rows: int) -> list[tuple[object, Callable[[], tuple]]]:
    table = f"{KEYSPACE}.kv"
    shapes = [
        (f"SELECT v FROM {table} WHERE k = ? AND c = ?", lambda: (random.randrange(rows), random.randrange(4))),
        (f"SELECT w FROM {table} WHERE k = ? AND c = ?", lambda: (random.randrange(rows), random.randrange(4))),
        (f"SELECT c, w FROM {table} WHERE k = ? AND c > ?", lambda: (random.randrange(rows), 1)),
        (f"SELECT v FROM {table} WHERE k = ? LIMIT 1", lambda: (random.randrange(rows),)),
    ]
    return [(session.prepare(cql), values) for cql, values in shapes]


def block(session: Any, prepared: list, seconds: float, target: float, in_flight: int) -> tuple[float, float]:
    """(requests/s achieved, p99 latency in s) of one block of the load."""
    latencies: list[float] = []
    slots = threading.Semaphore(in_flight)
    lock = threading.Lock()
    started = time.monotonic()
    number = 0
    while (due := started + number / target) < started + seconds:
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        slots.acquire()
        statement, values = prepared[number % len(prepared)]
        began = time.monotonic()
        future = session.execute_async(statement, values())

        def done(_: object, began: float = began) -> None:
            with lock:
                latencies.append(time.monotonic() - began)
            slots.release()

        def failed(_: object) -> None:
            slots.release()

        future.add_callbacks(done, failed)
        number += 1
    for _ in range(in_flight):  # wait for the last answers
        slots.acquire()
    elapsed = time.monotonic() - started
    return len(latencies) / elapsed, percentile(latencies, 0.99) or 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    node_arguments(parser, "/tmp/casstrace-watch-busy.trace")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--block-s", type=float, default=30.0)
    parser.add_argument("--target", type=float, default=1200.0, help="requests/s offered")
    parser.add_argument("--in-flight", type=int, default=64)
    args = parser.parse_args()

    cluster, session = connect(args)
    prepared = statements(session, args.rows)
    block(session, prepared, 5, args.target, args.in_flight)  # warm the caches and the connections
    alone, under = [], []
    for number in range(1, args.rounds + 1):
        alone.append(block(session, prepared, args.block_s, args.target, args.in_flight))
        under.append(
            while_watched(
                args, args.block_s + 3, lambda: block(session, prepared, args.block_s, args.target, args.in_flight)
            )
        )
        print(
            f"round {number}: alone {alone[-1][0]:,.0f} req/s p99 {alone[-1][1] * 1000:.2f} ms; watched "
            f"{under[-1][0]:,.0f} req/s p99 {under[-1][1] * 1000:.2f} ms; load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    throughput = statistics.median(r for r, _ in under) / statistics.median(r for r, _ in alone)
    p99 = statistics.median(p for _, p in under) / statistics.median(p for _, p in alone)
    print(
        f"\nmedians of {args.rounds}: alone {statistics.median(r for r, _ in alone):,.0f} req/s, p99 "
        f"{statistics.median(p for _, p in alone) * 1000:.2f} ms; watched "
        f"{statistics.median(r for r, _ in under):,.0f} req/s, "
        f"p99 {statistics.median(p for _, p in under) * 1000:.2f} ms"
    )
    report("watch_busy_throughput_ratio", throughput)
    report("watch_busy_p99_ratio", p99)
    cluster.shutdown()


if __name__ == "__main__":
    main()
