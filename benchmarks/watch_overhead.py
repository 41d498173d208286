"""What `casstrace watch` costs the node's clients: the p99 latency it adds (prints figures; not a test).

  .venv/bin/python benchmarks/watch_overhead.py [--port 9042] [--rounds 3] [--block-s 20] [--sample 0.01]

The load is the watch tests' (casstrace.sandbox.workload, loopback only): the demo's wide statement
at 3/s, its narrow refactor at 15/s and `SELECT release_version FROM system.local` at 30/s, on a
sandbox with the demo data (`casstrace demo` loads it). Blocks of --block-s seconds alternate:
the load alone, then the load under `casstrace watch --sample P` (probes attached, the node tracing P
of its requests; the block starts once the watch says so). Latency is the client's, per request.

Printed: per statement and for all requests, p50 and p99 without and with the watch, and the p99
the watch adds (ms and %), over every block of each kind. On a shared 2-core machine one block's
p99 is noise: compare the per-round figures, and re-measure on a quiet machine for docs/performance.md.
The headline for scripts/bench: FIGURE watch_p99_ratio (p99 of all requests watched ÷ alone).
"""

import argparse

from casstrace.analyses.percentiles import percentile
from casstrace.orchestration.watcher import DEFAULT_PROBABILITY
from casstrace.sandbox.control import Sandbox
from casstrace.sandbox.demo import WideTable
from casstrace.sandbox.workload import Load, Workload
from figures import report
from watch_shift import while_watched


def loads(spec: WideTable) -> list[Load]:
    return [
        Load("wide", f"SELECT c0 FROM {spec.keyspace}.{spec.table} WHERE stream_id = ?", 3, (spec.stream_id,)),
        Load("narrow", spec.narrow_query, 15),
        Load("system.local", "SELECT release_version FROM system.local", 30),
    ]


def block(session: object, spec: WideTable, seconds: float) -> dict[str, list[float]]:
    workload = Workload(session, loads(spec), seconds).start().join()
    return {load.name: load.latencies_s for load in workload.loads}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", help="the sandbox's directory (default: the dev sandbox)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9042)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--block-s", type=float, default=20.0)
    parser.add_argument("--sample", type=float, default=DEFAULT_PROBABILITY)
    parser.add_argument("--out", default="/tmp/casstrace-watch-overhead.trace")
    args = parser.parse_args()

    sandbox = Sandbox(args.data_dir)
    spec = WideTable()
    plain: dict[str, list[float]] = {}
    watched: dict[str, list[float]] = {}
    with sandbox.connect() as session:
        block(session, spec, 3)  # warm the page cache and the prepared statements
        for number in range(1, args.rounds + 1):
            alone = block(session, spec, args.block_s)
            under = while_watched(args, args.block_s + 2, lambda: block(session, spec, args.block_s))
            print(f"round {number}: p99 all requests {_ms(_p99(alone))} alone, {_ms(_p99(under))} watched")
            for name in alone:
                plain.setdefault(name, []).extend(alone[name])
                watched.setdefault(name, []).extend(under[name])
    plain["all requests"] = [value for values in plain.values() for value in values]
    watched["all requests"] = [value for values in watched.values() for value in values]
    print(
        f"\ncasstrace watch --sample {args.sample:g}: {args.rounds} rounds of {args.block_s:g} s alone, "
        f"then {args.block_s:g} s watched (client latency per request)"
    )
    print(
        f"{'statement':<14} {'requests':>9} {'p50 alone':>10} {'p50 watched':>12} {'p99 alone':>10} "
        f"{'p99 watched':>12} {'p99 added':>10} {'added %':>8}"
    )
    for name in plain:
        before, after = plain[name], watched[name]
        p99_before, p99_after = percentile(before, 0.99), percentile(after, 0.99)
        added = None if p99_before is None or p99_after is None else p99_after - p99_before
        share = f"{added / p99_before:+.1%}" if added is not None and p99_before else "—"
        print(
            f"{name:<14} {len(after):>9} {_ms(percentile(before, 0.5)):>10} {_ms(percentile(after, 0.5)):>12} "
            f"{_ms(p99_before):>10} {_ms(p99_after):>12} {_ms(added):>10} {share:>8}"
        )
    p99_alone, p99_watched = percentile(plain["all requests"], 0.99), percentile(watched["all requests"], 0.99)
    if p99_alone and p99_watched is not None:
        report("watch_p99_ratio", p99_watched / p99_alone)


def _p99(latencies: dict[str, list[float]]) -> float | None:
    return percentile([value for values in latencies.values() for value in values], 0.99)


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1000:.2f} ms"


if __name__ == "__main__":
    main()
