"""What the per-window measures of `casstrace run` cost (prints figures; not a test).

  .venv/bin/python benchmarks/window_measures_cost.py [--port 9042] [--queries 300] [--blocks 3]

As root, on a node of this machine: the set-up and tear-down of each source casstrace.orchestration.sources
adds to every run (the node-time program's compile and attach; the GC log output added and removed by
jcmd), and what they cost the node: the client's median and p99 latency of a point read, in blocks of
`--queries` executions with the sources attached and without, interleaved, as a ratio; and the rows of
thread_cpu (a thread's CPU per 1 ms slot) a second of measured window writes, and the request threads'
transitions (switches and wake-ups, request_states.py) it sends through the ring.
"""

import argparse
import os
import statistics
import sys
import time

from casstrace.node.connection import NodeSession, resolve_settings
from casstrace.node.gc_pauses import GcPauses
from casstrace.node.jvm import cassandra_at
from casstrace.probes.bcc.node_time import NodeTime
from figures import report

QUERY = "SELECT * FROM system.local"


def timed(action):
    began = time.perf_counter()
    result = action()
    return result, time.perf_counter() - began


def block(session, prepared, queries: int) -> list[float]:
    latencies = []
    for _ in range(queries):
        began = time.perf_counter()
        session.execute(prepared)
        latencies.append(time.perf_counter() - began)
    return latencies


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=9042)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--blocks", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()}")
    with NodeSession(resolve_settings("127.0.0.1", args.port), None) as node:
        process = cassandra_at(node.address(), args.port)
        prepared = node.session.prepare(QUERY)
        block(node.session, prepared, args.queries)  # warm
        alone: list[float] = []
        measured: list[float] = []
        setup, gc_setup, gc_teardown, slot_rates, transition_rates = [], [], [], [], []
        for _ in range(args.blocks):
            alone += block(node.session, prepared, args.queries)
            node_time, seconds = timed(lambda: NodeTime(process.pid, args.port, lambda m: sys.exit(m)))
            setup.append(seconds)
            gc, seconds = timed(lambda: GcPauses(process.pid, lambda m: sys.exit(m)))
            gc_setup.append(seconds)
            node_time.on_window_start(1, "execution", 1)
            gc.on_window_start(1, "execution", 1)
            latencies, seconds = timed(lambda: block(node.session, prepared, args.queries))
            measured += latencies
            node_time.stop()
            slot_rates.append(len(node_time.thread_slots()) / seconds)
            transition_rates.append(len(node_time.transitions()) / seconds)
            gc_teardown.append(timed(gc.stop)[1])
    p50 = statistics.median(measured) / statistics.median(alone)
    p99 = statistics.quantiles(measured, n=100)[98] / statistics.quantiles(alone, n=100)[98]
    print(f"  node-time program compile and attach: {statistics.median(setup):.2f} s")
    added, removed = statistics.median(gc_setup), statistics.median(gc_teardown)
    print(f"  GC log output added / removed (jcmd): {added:.2f} s / {removed:.2f} s")
    print(f"  point read with the sources / without: median {p50:.3f}x, p99 {p99:.3f}x")
    print(f"  thread_cpu rows per second of measured window: {statistics.median(slot_rates):,.0f}")
    report("node_time_setup_s", statistics.median(setup))
    report("gc_log_setup_s", statistics.median(gc_setup))
    report("window_measures_p50_ratio", p50)
    report("window_measures_p99_ratio", p99)
    print(f"  request threads' transitions per second of measured window: {statistics.median(transition_rates):,.0f}")
    report("thread_cpu_rows_per_s", statistics.median(slot_rates))
    report("request_transitions_per_s", statistics.median(transition_rates))


if __name__ == "__main__":
    main()
