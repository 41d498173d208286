"""`casstrace run` on a node that serves other clients: bytes per execution and verdict of a point
read as the background rate grows, and what charging each execution by thread costs the run
(prints figures; not a test).

    .venv/bin/python benchmarks/run_busy_node.py --port 9042 [--rates 0,100,300,1000] [--repeat 20]

The table: casstrace_busy.kv (sandbox.workload.PointTable: 5,000 rows of 2,000 B by key, LZ4 in
16 KiB chunks, one SSTable). The background: another client (a Cluster of its own) reading every
other key of the table at each rate with the driver's async API (sandbox.workload.BackgroundRequests),
started a second before the run and stopped after it; its achieved rate is printed. Per rate: run's
Data bytes per execution, its verdict, the bytes read by other requests meanwhile, the share of the
windows' reads of the table charged to the query, run's turnaround (its call, probes compiled
included), of which reading the executions' sessions and the JVM's thread names (the join's cost to
the run), the join itself (analyses.attribution.run_attribution) and the whole analysis's time, and
the node JVM's CPU seconds during the run. FIGURE lines: each rate's bytes per execution, whether it
was flagged (1) or not (0), the achieved rate and those costs.
The 1-minute load average is printed beside: on a shared machine, say so with the figures.
"""

import argparse
import os
import sys
import time
from pathlib import Path

from casstrace.analyses.analysis import analyse
from casstrace.analyses.attribution import run_attribution
from casstrace.node.connection import ConnectionSettings
from casstrace.node.jvm import find_cassandra
from casstrace.node.tracing import nodetool_for
from casstrace.orchestration.runner import RunOptions, run
from casstrace.phases import Phases
from casstrace.sandbox.workload import BackgroundRequests, PointTable
from casstrace.traces import Trace
from figures import process_cpu_ns, report

TABLE = PointTable("casstrace_busy")
KEY = 4242
LEAD_S = 1.0  # the background runs this long before the run starts
IN_FLIGHT = 128  # the background's requests out at once (as tests/integration/test_busy_node.py)
THREADS_PHASE = "read the executions' threads"  # orchestration.runner's phase: the join's cost to run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9042)
    parser.add_argument("--rates", default="0,100,300,1000")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--out", default="/tmp/casstrace-run-busy")
    args = parser.parse_args()
    from cassandra.cluster import Cluster

    process = find_cassandra(None, native_port=args.port)
    nodetool = nodetool_for(process)
    cluster = Cluster([args.host], port=args.port)
    session = cluster.connect()
    TABLE.ensure(session, lambda keyspace, table: nodetool.run("flush", keyspace, table))
    Path(args.out).mkdir(parents=True, exist_ok=True)
    print(f"load average (1, 5, 15 min): {os.getloadavg()}", flush=True)
    for rate in (float(r) for r in args.rates.split(",")):
        load = BackgroundRequests(session, TABLE.by_key, TABLE.keys_except(KEY), rate or 1, 3600, in_flight=IN_FLIGHT)
        if rate:
            load.start()
            time.sleep(LEAD_S)
        node_cpu, began, phases = process_cpu_ns(process.pid), time.monotonic(), Phases()
        path = run(
            RunOptions(
                query=TABLE.point_query(KEY),
                connection=ConnectionSettings(host=args.host, port=args.port),
                repeat=args.repeat,
                out=Path(args.out) / f"rate-{int(rate)}.trace",
                force=True,
            ),
            phases,
        )
        turnaround, node_cpu_s = time.monotonic() - began, (process_cpu_ns(process.pid) - node_cpu) / 1e9
        if rate:
            load.stop()
        analysed = time.monotonic()
        analysis = analyse(path)
        analysis_s = time.monotonic() - analysed
        with Trace(path) as trace:
            joined = time.monotonic()
            run_attribution(trace)
            join_s = time.monotonic() - joined
        threads_s = sum(wall for name, wall, _ in phases.spans if name == THREADS_PHASE)
        executions = max(1, len([e for e in analysis.executions if e.kind == "measured"]))
        busy = analysis.overall.busy
        per_execution = analysis.overall.data_read_bytes / executions
        name = f"run_busy_{int(rate)}"
        print(
            f"rate {rate:g}/s (achieved {load.achieved_rate if rate else 0:.0f}/s, {load.errors} errors): "
            f"{per_execution / 1024:.1f} KiB per execution, {analysis.verdict.status}; "
            f"others read {busy.table_bytes_by_others / 1024 if busy else float('nan'):.0f} KiB of the table, "
            f"share {busy.attributed_share if busy and busy.attributed_share is not None else float('nan'):.2f}, "
            f"other requests {busy.other_requests if busy else None}; "
            f"turnaround {turnaround:.2f} s (reading the executions' threads {threads_s:.2f} s), join "
            f"{join_s:.2f} s, analysis {analysis_s:.2f} s, node CPU {node_cpu_s:.2f} s; load {os.getloadavg()[0]:.2f}",
            flush=True,
        )
        report(f"{name}_kib_per_execution", per_execution / 1024)
        report(f"{name}_flagged", float(analysis.verdict.status == "flagged"))
        report(f"{name}_join_s", join_s)
        report(f"{name}_achieved_rate", load.achieved_rate if rate else 0)
        report(f"{name}_turnaround_s", turnaround)
        report(f"{name}_node_cpu_s", node_cpu_s)
        report(f"{name}_threads_s", threads_s)
        report(f"{name}_analysis_s", analysis_s)
    cluster.shutdown()
    print(f"load average (1, 5, 15 min): {os.getloadavg()}", file=sys.stderr)


if __name__ == "__main__":
    main()
