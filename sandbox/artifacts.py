"""Apache Cassandra's jars: chosen on Maven Central, resolved by Maven into casstrace's cache.

The first start of a version runs Maven once (network); the classpath it prints is remembered
beside the Maven repository, so every later start reads that list and checks the jars against the
.sha1 files Maven keeps next to them, without touching the network.
"""

import hashlib
import re
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from casstrace import paths
from casstrace.errors import CasstraceError

GROUP_PATH = "org/apache/cassandra/cassandra-all"
METADATA_URL = f"https://repo1.maven.org/maven2/{GROUP_PATH}/maven-metadata.xml"
_RELEASE = re.compile(r"^\d+\.\d+\.\d+$")


def maven_repo() -> Path:
    return paths.cache_dir() / "maven"


def _classpath_file(version: str) -> Path:
    return paths.cache_dir() / "classpaths" / f"cassandra-{version}.txt"


def version_key(version: str) -> tuple[int, ...]:
    """'4.1.10' -> (4, 1, 10), which orders releases."""
    return tuple(int(part) for part in version.split("."))


def published_versions(timeout: float = 10.0) -> list[str]:
    """Every cassandra-all version Maven Central lists, in its order (oldest first)."""
    try:
        with urllib.request.urlopen(METADATA_URL, timeout=timeout) as response:
            text = response.read().decode()
    except (urllib.error.URLError, OSError) as error:
        raise CasstraceError(
            f"cannot reach Maven Central to look up Cassandra versions ({error})",
            "check the network, or pass --version with a version already in the cache "
            f"({', '.join(cached_versions()) or 'none cached yet'})",
        ) from None
    return re.findall(r"<version>([^<]+)</version>", text)


def cached_versions() -> list[str]:
    """Versions whose classpath was resolved before, newest first."""
    folder = paths.cache_dir() / "classpaths"
    found = [p.name[len("cassandra-") : -len(".txt")] for p in folder.glob("cassandra-*.txt")]
    return sorted((v for v in found if _RELEASE.match(v)), key=version_key, reverse=True)


def newest_release(series: str) -> str:
    """The newest release of a series (e.g. 5.0 -> 5.0.9). Asks Maven Central; when it cannot be
    reached, settles for the newest release of that series already in the cache."""
    in_series = lambda v: _RELEASE.match(v) and v.startswith(series + ".")  # noqa: E731
    try:
        candidates = [v for v in published_versions() if in_series(v)]
    except CasstraceError:
        cached = [v for v in cached_versions() if in_series(v)]
        if not cached:
            raise
        return cached[0]
    if not candidates:
        raise CasstraceError(f"Maven Central lists no Cassandra {series}.x release", "pass --version explicitly")
    return max(candidates, key=version_key)


def classpath(version: str, *, progress: Callable[[str], None] = print) -> list[Path]:
    """The jars that run Cassandra `version`, resolving them with Maven the first time."""
    listing = _classpath_file(version)
    # A jar deleted from the cache (the fix `verify` suggests) is fetched again by Maven.
    if not listing.exists() or not all(jar.exists() for jar in _read(listing)):
        _resolve(version, listing, progress)
    jars = _read(listing)
    verify(jars)
    return jars


def _read(listing: Path) -> list[Path]:
    return [Path(entry) for entry in listing.read_text().strip().split(":")]


def verify(jars: list[Path]) -> None:
    """Refuses a cache that a crash or a full disk left broken: a jar that is missing or whose
    SHA-1 differs from the checksum Maven downloaded beside it."""
    for jar in jars:
        checksum_file = jar.with_name(jar.name + ".sha1")
        if not jar.exists():
            problem = "is missing"
        elif checksum_file.exists():
            expected = checksum_file.read_text().split()[0].strip().lower()
            actual = hashlib.sha1(jar.read_bytes()).hexdigest()
            if actual == expected:
                continue
            problem = "does not match its Maven checksum"
        else:
            continue
        raise CasstraceError(
            f"the Cassandra artifact cache is corrupt: {jar} {problem}",
            f"delete {jar.parent} (or all of {maven_repo()}) and start again to re-download it",
        )


def _resolve(version: str, listing: Path, progress: Callable[[str], None]) -> None:
    known = published_versions()
    if version not in known:
        near = [v for v in known if v.split(".")[0] == version.split(".")[0]][-5:] or known[-5:]
        raise CasstraceError(
            f"Cassandra {version} is not published on Maven Central",
            f"pick a published version, e.g. {', '.join(near)}",
        )
    mvn = shutil.which("mvn")
    if mvn is None:
        raise CasstraceError(
            "Maven (mvn) is not installed; it downloads Cassandra's jars",
            "run scripts/install, or apt-get install maven",
        )
    progress(f"Resolving Cassandra {version} and its dependencies with Maven into {maven_repo()} (first start only)...")
    listing.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="casstrace-mvn-") as work:
        pom = Path(work) / "pom.xml"
        pom.write_bytes(resources.files("casstrace.sandbox").joinpath("pom.xml").read_bytes())
        output = Path(work) / "classpath.txt"
        result = subprocess.run(
            [
                mvn,
                "-B",
                "-q",
                "-f",
                str(pom),
                f"-Dmaven.repo.local={maven_repo()}",
                f"-Dcassandra.version={version}",
                "dependency:build-classpath",
                "-Dmdep.includeScope=runtime",
                f"-Dmdep.outputFile={output}",
            ],
            cwd=work,
            capture_output=True,
            text=True,
        )
        if result.returncode != 0 or not output.exists():
            errors = [line for line in result.stdout.splitlines() + result.stderr.splitlines() if "ERROR" in line]
            raise CasstraceError(
                f"Maven could not resolve Cassandra {version}: "
                f"{errors[0] if errors else f'exit status {result.returncode}'}",
                "check the network to Maven Central and run start again",
            )
        # Written last and whole, so an interrupted resolution is simply retried next time.
        partial = listing.with_suffix(".partial")
        partial.write_text(output.read_text().strip())
        partial.replace(listing)
