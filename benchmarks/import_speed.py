"""How long `casstrace import` takes next to sysdig's own `topfiles_bytes` on the same capture.

    .venv/bin/python benchmarks/import_speed.py [CAPTURE.scap] [--runs N]

Default capture: the largest .scap in ../shared/scap. Prints the best of N wall times for
- `sysdig -r FILE -c topfiles_bytes` (the baseline: sysdig parsing the file, summing in Lua),
- `sysdig -r FILE -p <casstrace's format> <casstrace's filter>` (the sysdig half of an import),
- `casstrace import --help` (the fixed cost of starting Python and the CLI),
- `casstrace import FILE` (the whole import, trace written),
and the ratio import / topfiles_bytes (goal: <= 1.2).
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from casstrace.probes.sysdig_import import OUTPUT_FORMAT, find_sysdig, sysdig_filter

REPO = Path(__file__).resolve().parents[1]
SHARED_SCAP = REPO.parent / "shared" / "scap"
CASSTRACE = str(Path(sys.executable).parent / "casstrace")


def best_of(runs: int, command: list[str]) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, check=True)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("capture", nargs="?", type=Path)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    capture = args.capture or max(SHARED_SCAP.glob("*.scap"), key=lambda path: path.stat().st_size)
    sysdig = find_sysdig()
    with tempfile.TemporaryDirectory() as tmp:
        timings = {
            "sysdig -c topfiles_bytes": best_of(args.runs, [sysdig, "-r", str(capture), "-c", "topfiles_bytes"]),
            "sysdig -p (import's half)": best_of(
                args.runs, [sysdig, "-r", str(capture), "-p", OUTPUT_FORMAT, sysdig_filter()]),
            "casstrace import --help": best_of(args.runs, [CASSTRACE, "import", "--help"]),
            "casstrace import": best_of(
                args.runs, [CASSTRACE, "import", str(capture), "--out", f"{tmp}/bench.trace"]),
        }
    print(f"capture: {capture} ({capture.stat().st_size:,} bytes), best of {args.runs} runs")
    for name, seconds in timings.items():
        print(f"  {name:28s} {seconds * 1000:8.1f} ms")
    baseline = timings["sysdig -c topfiles_bytes"]
    ratio = timings["casstrace import"] / baseline
    print(f"ratio import / topfiles_bytes: {ratio:.2f} (goal <= 1.2)")
    beyond_startup = (timings["casstrace import"] - timings["casstrace import --help"]) / baseline
    print(f"ratio without Python's start-up: {beyond_startup:.2f}")


if __name__ == "__main__":
    main()
