"""Cheap guards on costs that have regressed before: measured in this run, as ratios or as CPU time
of a fresh interpreter, so that a busy machine does not make them fail (wall time is not used).

The README's figures themselves are checked by `scripts/bench` against benchmarks/figures.toml.
"""

import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

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


def test_the_stated_figures_are_complete_and_flag_what_is_worse():
    """benchmarks/figures.toml, which scripts/bench compares against: every figure names a
    benchmark that exists, a value, a noise and a direction; worse() flags past the noise only."""
    sys.path.insert(0, str(BENCHMARKS))
    import figures

    stated = figures.expected()
    assert stated
    for name, figure in stated.items():
        assert (BENCHMARKS / figure["benchmark"]).is_file(), name
        assert figure["better"] in ("lower", "higher") and figure["noise"] > 0, name
        assert isinstance(figure["value"], (int, float)) and isinstance(figure["args"], list), name
    lower = {"value": 2.0, "noise": 0.1, "better": "lower"}
    assert not figures.worse(lower, 2.19) and figures.worse(lower, 2.21)
    higher = {"value": 50, "noise": 0.2, "better": "higher"}
    assert not figures.worse(higher, 40.5) and figures.worse(higher, 39.5)
    assert figures.parse("noise\nFIGURE a_b 1.5\nFIGURE c 2e-3\n") == {"a_b": 1.5, "c": 0.002}
