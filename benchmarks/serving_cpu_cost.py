"""What keeping a watched node's request threads' CPU per 1 ms slot costs (probes/bcc/serving_cpu.c,
each sampled write's CPU part in `casstrace watch`), under writes at a fixed rate (prints figures; not
a test).

    sudo .venv/bin/python benchmarks/serving_cpu_cost.py --port 9042 [--rate 1000] [--seconds 20]

A table of its own (casstrace_cpu_bench.kv) takes INSERTs at --rate per second from another session
while the source counts, as a watch's window does, and is drained every 2 s, as a watch drains it.
The kernel's accounting of the program's runs (kernel.bpf_stats_enabled on for the run, then put
back): its time per scheduler switch (every switch of every process runs it; the JVM's request
threads' take the slot path) and its share of one core; the drains' CPU in this process, as a share
of one core; the slots the kernel kept per second (what a watch holds in memory until a trace is
written, and which it filters down to its sampled sessions' spans). The keyspace is dropped at the end.
"""

import argparse
import os
import time

from bpf_floor import bpf_stats, programs_runs
from casstrace.node.jvm import find_cassandra
from casstrace.probes.bcc.serving_cpu import ServingCpu
from casstrace.sandbox.workload import BackgroundRequests
from casstrace.terminal import warn
from figures import report
from watch_write_overhead import writing_table

KEYSPACE = "casstrace_cpu_bench"
DRAIN_EVERY_S = 2.0  # casstrace.orchestration.watcher.REFRESH_S


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9042)
    parser.add_argument("--rate", type=float, default=1000.0, help="writes per second asked")
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()

    from cassandra.cluster import Cluster

    cluster = Cluster([args.host], port=args.port)
    session = cluster.connect()
    insert = writing_table(session, KEYSPACE)
    values = [(key // 10, key % 10, os.urandom(200)) for key in range(int(args.rate * args.seconds))]
    pid = find_cassandra(None, native_port=args.port).pid
    try:
        with bpf_stats():
            source = ServingCpu(pid, frozenset({"watch"}), warn)
            assert source.measured, "the program did not attach"
            source.on_window_start(1, "watch", None)
            load = BackgroundRequests(session, insert, values, args.rate, args.seconds, in_flight=64)
            drains_cpu_s, slots = 0.0, 0
            with load:
                began, ran_before = time.monotonic(), programs_runs()
                while time.monotonic() - began < args.seconds:
                    time.sleep(DRAIN_EVERY_S)
                    cpu = time.thread_time()
                    slots += source.drain()
                    drains_cpu_s += time.thread_time() - cpu
                ns, runs = (after - before for after, before in zip(programs_runs(), ran_before, strict=True))
                wall_s = time.monotonic() - began
            source.stop()
    finally:
        session.execute(f"DROP KEYSPACE IF EXISTS {KEYSPACE}")
        cluster.shutdown()
    print(
        f"{load.completed / wall_s:,.0f} writes/s answered; {runs / wall_s:,.0f} switches/s on the machine, "
        f"the program {ns / max(runs, 1):,.0f} ns a switch ({ns / wall_s / 1e9:.2%} of a core); drains "
        f"{drains_cpu_s / wall_s:.2%} of a core; {slots / wall_s:,.0f} request-thread slots kept per second"
    )
    report("serving_cpu_ns_per_switch", ns / max(runs, 1))
    report("serving_cpu_core_share", ns / wall_s / 1e9)
    report("serving_cpu_drain_core_share", drains_cpu_s / wall_s)
    report("serving_cpu_slots_per_s", slots / wall_s)


if __name__ == "__main__":
    main()
