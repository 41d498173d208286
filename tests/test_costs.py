"""Cheap guards on costs that have regressed before: measured in this run, as ratios or as CPU time
of a fresh interpreter, so that a busy machine does not make them fail (wall time is not used).

The README's figures themselves are checked by `scripts/bench` against benchmarks/figures.toml.
"""

import subprocess
import sys

# Modules `casstrace --help` and every command's start-up must not pay for: the driver, bcc, the
# trace database, the analyses and reports load only in the commands that use them.
HEAVY = ("sqlite3", "cassandra", "bcc", "plotly", "jinja2", "casstrace.traces", "casstrace.probes",
         "casstrace.analyses", "casstrace.reports", "casstrace.node")


def fresh(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_the_cli_entry_point_imports_nothing_heavy():
    loaded = fresh("import sys, casstrace.cli.main; print(' '.join(sys.modules))").split()
    heavy = sorted(name for name in loaded if name.startswith(HEAVY))
    assert heavy == []


def test_casstrace_import_starts_without_the_analyses_reports_or_drivers():
    """`casstrace import` competes with sysdig's own start-up (tests/test_sysdig.py)."""
    loaded = fresh("import sys, casstrace.cli.main, casstrace.cli.import_scap; print(' '.join(sys.modules))").split()
    heavy = sorted(name for name in loaded if name.startswith(
        ("cassandra", "bcc", "plotly", "jinja2", "casstrace.analyses", "casstrace.reports", "casstrace.node")))
    assert heavy == []


def test_bucketing_a_latency_costs_under_a_millisecond_at_start_up():
    """The first latency_bucket of a process builds the bucket table (it once took 0.62 s): CPU
    time of that first call in a fresh interpreter, best of three."""
    code = ("import time; from casstrace.traces.schema import latency_bucket;"
            " t = time.process_time(); latency_bucket(123_456_789); print(time.process_time() - t)")
    assert min(float(fresh(code)) for _ in range(3)) < 1e-3
