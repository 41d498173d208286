"""Overhead of run --profile on the query (prints figures; not a test).

  .venv/bin/python benchmarks/profile_overhead.py [--host 127.0.0.1] [--port 9042] [--blocks 6] [--runs 10]
                                                  [--query "SELECT ..."]

The demo's wide query (SELECT c0 FROM casstrace_demo.streams WHERE stream_id = 1) warm, in blocks
that alternate between async-profiler idle and async-profiler active as `run --profile` makes it
(every call of the JDK's read method recorded with its stack, wall-clock samples every 1 ms). Each
block starts with one execution left out (the first after a start pays the instrumentation of the
read method). Prints the medians of both, their ratio, the spread of the ratio between neighbouring
blocks (on a shared machine one ratio means little), the JVM's CPU time per execution both ways
(its CPU-time clock: less swayed by other processes than latency), what starting and stopping cost, and
the recording's sample count per execution.
"""

import argparse
import statistics
import time

from casstrace.node.connection import NodeSession, resolve_settings
from casstrace.node.jvm import find_cassandra
from casstrace.node.query import MeasuringProtocolHandler, execute, prepare
from casstrace.probes.jvm.async_profiler import AsyncProfiler
from casstrace.probes.jvm.jfr import read_samples
from casstrace.sandbox.demo import WideTable
from figures import process_cpu_ns, report

DEMO_QUERY = WideTable().wide_query


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9042)
    parser.add_argument("--query", default=DEMO_QUERY)
    parser.add_argument("--blocks", type=int, default=6, help="blocks of each kind")
    parser.add_argument("--runs", type=int, default=10, help="measured executions per block")
    args = parser.parse_args()

    settings = resolve_settings(args.host, args.port)
    process = find_cassandra(native_port=args.port)
    profiler = AsyncProfiler(process.pid)
    idle: list[float] = []
    active: list[float] = []
    ratios: list[float] = []
    starts: list[float] = []
    stops: list[float] = []
    samples_per_execution: list[float] = []
    cpu_ms: dict[str, list[float]] = {"idle": [], "active": []}  # JVM CPU per execution, per block
    with NodeSession(settings, protocol_handler=MeasuringProtocolHandler) as node:
        prepared = prepare(node.session, args.query)

        def block(kind: str) -> list[float]:
            execute(node.session, prepared)  # left out
            used = process_cpu_ns(process.pid)
            latencies = [execute(node.session, prepared).latency_s for _ in range(args.runs)]
            cpu_ms[kind].append((process_cpu_ns(process.pid) - used) / args.runs / 1e6)
            return latencies

        for _ in range(3):  # warm the node and the JIT
            execute(node.session, prepared)
        for _ in range(args.blocks):
            before = block("idle")
            began = time.perf_counter()
            profiler.start()
            starts.append(time.perf_counter() - began)
            try:
                during = block("active")
            finally:
                began = time.perf_counter()
                recording = profiler.stop()
                stops.append(time.perf_counter() - began)
            calls = sum(1 for s in read_samples(recording) if s.event == "jdk.ExecutionSample")
            samples_per_execution.append(calls / (args.runs + 1))
            profiler.cleanup()
            idle += before
            active += during
            ratios.append(statistics.median(during) / statistics.median(before))

    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
    print(f"query: {args.query}")
    print(f"blocks: {args.blocks} x {args.runs} executions each, profiler idle / active")
    print(f"median latency, profiler idle:   {statistics.median(idle) * 1000:8.2f} ms")
    print(f"median latency, profiler active: {statistics.median(active) * 1000:8.2f} ms")
    overhead = statistics.median(active) / statistics.median(idle)
    print(f"overhead (ratio of medians):     {overhead:8.3f}x")
    report("profile_overhead_ratio", overhead)
    print(
        f"block ratios: min {min(ratios):.3f}  q1 {quartiles[0]:.3f}  median {quartiles[1]:.3f}  "
        f"q3 {quartiles[2]:.3f}  max {max(ratios):.3f}"
    )
    print(
        f"JVM CPU per execution: idle {statistics.median(cpu_ms['idle']):.1f} ms, "
        f"active {statistics.median(cpu_ms['active']):.1f} ms (medians of the blocks)"
    )
    print(f"read-method calls recorded per execution: {statistics.median(samples_per_execution):,.0f}")
    print(
        f"start (jcmd, agent_load): median {statistics.median(starts):.2f} s; "
        f"stop: median {statistics.median(stops):.2f} s (outside the measured executions)"
    )


if __name__ == "__main__":
    main()
