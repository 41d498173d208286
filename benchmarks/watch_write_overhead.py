"""What `casstrace watch` costs a writing node: throughput and p99 at a fixed write rate, watched
against not (prints figures; not a test).

  .venv/bin/python benchmarks/watch_write_overhead.py --port 9042 [--rate 1000] [--rounds 3] [--block-s 20]

A table of its own (casstrace_write_bench.kv: int key, int clustering, a blob of --value-bytes) takes
INSERTs with bound values at --rate per second from another session, asynchronously (at most 64 in
flight), for blocks of --block-s seconds: the load alone; the load with the node tracing P of its
requests and nothing else (`nodetool settraceprobability P`: the floor, what Cassandra's own tracing
costs, which any watch pays); then the load under `casstrace watch --sample P` (probes attached; the
block starts once the watch says so). Latency is the client's, per request. The keyspace is dropped
at the end, and the trace probability put back to 0.

Printed: per round and over all rounds, writes answered per second and the p50/p99 of each kind of
block. The headlines for scripts/bench: FIGURE watch_write_p99_ratio (p99 watched ÷ alone), FIGURE
watch_write_rate_ratio (writes answered per second watched ÷ alone), and the floor's
FIGURE watch_write_floor_p99_ratio (p99 traced only ÷ alone).
"""

import argparse
import os
import time
from typing import Any

from casstrace.analyses.percentiles import percentile
from casstrace.node.jvm import find_cassandra
from casstrace.node.tracing import nodetool_for
from casstrace.sandbox.workload import BackgroundRequests
from figures import report
from watch_shift import node_arguments, while_watched

KEYSPACE = "casstrace_write_bench"
IN_FLIGHT = 64


def writing_table(session: Any, keyspace: str) -> str:
    """A table of `keyspace` (made if need be) for a benchmark's INSERTs: the statement that writes it."""
    session.execute(
        f"CREATE KEYSPACE IF NOT EXISTS {keyspace} WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1}"
    )
    session.execute(f"CREATE TABLE IF NOT EXISTS {keyspace}.kv (k int, c int, v blob, PRIMARY KEY (k, c))")
    return f"INSERT INTO {keyspace}.kv (k, c, v) VALUES (?, ?, ?)"


def block(session: Any, insert: Any, values: list[tuple], rate: float, seconds: float) -> BackgroundRequests:
    load = BackgroundRequests(session, insert, values, rate, seconds, in_flight=IN_FLIGHT)
    with load:
        time.sleep(seconds)
    return load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    node_arguments(parser, "/tmp/casstrace-watch-write-overhead.trace")
    parser.add_argument("--rate", type=float, default=1000.0, help="writes per second asked")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--block-s", type=float, default=20.0)
    parser.add_argument("--value-bytes", type=int, default=200)
    args = parser.parse_args()

    from cassandra.cluster import Cluster

    cluster = Cluster([args.host], port=args.port)
    session = cluster.connect()
    insert = writing_table(session, KEYSPACE)
    values = [(key // 10, key % 10, os.urandom(args.value_bytes)) for key in range(int(args.rate * args.block_s))]
    nodetool = nodetool_for(find_cassandra(None, native_port=args.port))
    alone: list[BackgroundRequests] = []
    traced: list[BackgroundRequests] = []
    watched: list[BackgroundRequests] = []
    try:
        block(session, insert, values, args.rate, 3)  # the prepared statement, the JIT
        for number in range(1, args.rounds + 1):
            alone.append(block(session, insert, values, args.rate, args.block_s))
            nodetool.run("settraceprobability", str(args.sample))
            try:
                traced.append(block(session, insert, values, args.rate, args.block_s))
            finally:
                nodetool.run("settraceprobability", "0")
            watched.append(
                while_watched(args, args.block_s + 2, lambda: block(session, insert, values, args.rate, args.block_s))
            )
            print(
                f"round {number}: {_line(alone[-1:])} alone; {_line(traced[-1:])} traced only; "
                f"{_line(watched[-1:])} watched"
            )
    finally:
        session.execute(f"DROP KEYSPACE IF EXISTS {KEYSPACE}")
        cluster.shutdown()
    print(
        f"\ncasstrace watch --sample {args.sample:g} at {args.rate:g} writes/s asked ({args.value_bytes} B values): "
        f"{args.rounds} rounds of {args.block_s:g} s alone, traced only, then watched\n"
        f"  alone:       {_line(alone)}\n  traced only: {_line(traced)}\n  watched:     {_line(watched)}"
    )
    p99_alone, p99_traced, p99_watched = _p99(alone), _p99(traced), _p99(watched)
    if p99_alone and p99_watched is not None and p99_traced is not None:
        report("watch_write_p99_ratio", p99_watched / p99_alone)
        report("watch_write_floor_p99_ratio", p99_traced / p99_alone)
    report("watch_write_rate_ratio", _rate(watched) / _rate(alone))


def _latencies(loads: list[BackgroundRequests]) -> list[float]:
    return [latency for load in loads for latency in load.latencies_s]


def _p99(loads: list[BackgroundRequests]) -> float | None:
    return percentile(_latencies(loads), 0.99)


def _rate(loads: list[BackgroundRequests]) -> float:
    """Writes answered per second over the blocks."""
    return sum(load.completed for load in loads) / sum((load.ended or 0) - (load.started or 0) for load in loads)


def _line(loads: list[BackgroundRequests]) -> str:
    p50, p99 = percentile(_latencies(loads), 0.5), _p99(loads)
    errors = sum(load.errors + load.skipped for load in loads)
    return f"{_rate(loads):,.0f} writes/s answered, p50 {_ms(p50)}, p99 {_ms(p99)}" + (
        f", {errors} failed or skipped" if errors else ""
    )


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1000:.2f} ms"


if __name__ == "__main__":
    main()
