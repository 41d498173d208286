"""Understanding SSTable paths: which keyspace, table, SSTable and component a file belongs to.

Cassandra has named SSTable files three ways (org.apache.cassandra.io.sstable.Descriptor):

- up to 2.1 (versions up to `ka`): `<keyspace>-<table>-[tmp-|tmplink-]<version>-<generation>-<Component>`,
  e.g. `benchmarks-test-ka-130-Data.db` in `data/benchmarks/test-23182450d5c011e5acecb7882d261790/`.
  A secondary index's SSTables carry `<table>.<index>` as the table name. Before 1.1 the keyspace was
  only the directory, `<table>-[tmp-]<version>-<generation>-<Component>`.
- 2.2 onwards (`la` ... `nb`, `oa`, `da`): `[tmp-|tmplink-]<version>-<generation>-<format>-<Component>`,
  keyspace and table taken from the directories `<keyspace>/<table>-<table id>/`; a secondary index
  lives in a `.<index>` subdirectory, snapshots in `snapshots/<tag>/`, incremental backups in `backups/`.
- 4.1 onwards may use UUID-based generations (`uuid_sstable_identifiers_enabled`): a time UUID in
  28 base-36 characters `dddd_ssss_nnnnnrrrrrrrrrrrrr` (days, seconds, 100 ns units, random part),
  e.g. `nb-3fw2_0tj4_46w3k2cpidnirvjy7k-big-Data.db` or `da-3gmz_0v2f_5bbwg2ho2ac0ws3cra-bti-Data.db`.

Formats are `big` (components Data, Index, Summary, ...) and, from 5.0, `bti` (Data, Partitions, Rows,
no Index or Summary). Pre-2.2 names carry no format: they are `big`.
"""

import datetime
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

_SEQUENCE_ID = r"\d+"
_UUID_ID = r"[0-9a-z]{4}_[0-9a-z]{4}_[0-9a-z]{18}"
_TEMPORARY = r"(?:(?P<temporary>tmp|tmplink)-)?"

# 2.2+: version-generation-format-Component (component names never contain '-')
_CURRENT = re.compile(
    rf"^{_TEMPORARY}(?P<version>[a-z]{{2}})-(?P<generation>{_SEQUENCE_ID}|{_UUID_ID})-(?P<format>[a-z]+)-(?P<component>[^-]+)$",
    re.IGNORECASE,
)
# 1.1 - 2.1: keyspace-table-[tmp-]version-generation-Component
_LEGACY = re.compile(
    rf"^(?P<keyspace>\w+)-(?P<table>[\w.]+)-{_TEMPORARY}(?P<version>[a-z]+)-(?P<generation>\d+)-(?P<component>[^-]+)$"
)
# 0.7 - 1.0: table-[tmp-]version-generation-Component, keyspace from the directory
_ANCIENT = re.compile(rf"^(?P<table>[\w.]+)-{_TEMPORARY}(?P<version>[a-z]+)-(?P<generation>\d+)-(?P<component>[^-]+)$")
_TABLE_DIRECTORY = re.compile(r"^(?P<table>\w+)-(?P<table_id>[0-9a-f]{32})$")

# Component file names (the part after the last '-') -> component name.
_COMPONENT_FILES = {
    "Data.db": "Data",
    "Index.db": "Index",
    "Partitions.db": "Partitions",
    "Rows.db": "Rows",
    "Summary.db": "Summary",
    "Filter.db": "Filter",
    "CompressionInfo.db": "CompressionInfo",
    "Statistics.db": "Statistics",
    "Digest.crc32": "Digest",
    "Digest.adler32": "Digest",
    "Digest.sha1": "Digest",
    "TOC.txt": "TOC",
    "CRC.db": "CRC",
}

# The time UUID epoch (1582-10-15), for UUID-based generations.
_UUID_EPOCH = datetime.datetime(1582, 10, 15, tzinfo=datetime.UTC)


@dataclass(frozen=True)
class SSTableName:
    """What an SSTable component's path says about it."""

    path: str
    keyspace: str
    table: str  # the base table; see `index` for a secondary index's own SSTables
    table_id: str | None  # 32 hex digits from the table directory (2.1+), else None
    index: str | None  # secondary index name when the SSTable belongs to an index
    version: str  # 'ka', 'nb', 'oa', 'da', ...
    format: str  # 'big' | 'bti' (pre-2.2 names: 'big')
    generation: int | str  # int for sequence ids, the 28-character string for UUID-based ids
    component: str  # 'Data', 'Index', 'Partitions', ..., 'TOC'; 'SAI' / 'SASI' for index components
    component_file: str  # the file's own suffix, e.g. 'Digest.crc32', 'SAI+aa+idx+TermsData.db'
    temporary: bool = False  # pre-3.0 'tmp-' / 'tmplink-' files of a flush or compaction in progress
    snapshot: str | None = None  # snapshot tag when the file is in snapshots/<tag>/
    backup: bool = False

    @property
    def sstable(self) -> tuple:
        """Identifies the SSTable the component belongs to."""
        return (self.keyspace, self.table, self.index, self.generation)

    @property
    def generation_time(self) -> datetime.datetime | None:
        """When a UUID-based generation was created (UTC); None for sequence numbers."""
        if isinstance(self.generation, int):
            return None
        days, seconds, rest = self.generation.split("_")
        hundred_ns = int(rest[:5], 36)
        return _UUID_EPOCH + datetime.timedelta(
            days=int(days, 36), seconds=int(seconds, 36), microseconds=hundred_ns / 10
        )

    @property
    def owner(self) -> str:
        """'ks.table', or 'ks.table.index' for a secondary index's SSTables."""
        return f"{self.keyspace}.{self.table}" + (f".{self.index}" if self.index else "")

    @property
    def attached_index(self) -> str | None:
        """The index an SAI component belongs to ('SAI+aa+<index>+TermsData.db'); None for the
        SSTable's own SAI components ('SAI+aa+RowToPartition.db', shared by its indexes) and others."""
        if self.component != "SAI":
            return None
        fields = self.component_file.split("+")
        return fields[2] if len(fields) == 4 else None

    @property
    def part(self) -> str:
        """What the file is to a read of its table, by component: 'Data', 'Index', 'SAI people_team
        TermsData', 'SAI RowToPartition' (the SSTable's own), 'people_city Data' (a legacy index's
        hidden table)."""
        if self.component == "SAI":
            fields = self.component_file.removesuffix(".db").split("+")
            return " ".join(["SAI", *fields[2:]])
        return f"{self.index} {self.component}" if self.index else self.component

    @property
    def label(self) -> str:
        """Short human name: 'ks.table gen 13 Data'."""
        return f"{self.owner} gen {self.generation} {self.component}"


def parse_sstable_path(path: str) -> SSTableName | None:
    """The SSTable a path belongs to, or None when the path is not an SSTable component."""
    path = path.removesuffix(" (deleted)")
    pure = PurePosixPath(path)
    name = pure.name
    directories = list(pure.parent.parts)

    if match := _CURRENT.match(name):
        parts = match.groupdict()
        location = _locate_in_directories(directories)
        if location is None:
            return None
        keyspace, table, table_id, index, snapshot, backup = location
    elif (match := _LEGACY.match(name)) and match["table"] not in ("tmp", "tmplink"):
        parts = match.groupdict()
        keyspace = parts["keyspace"]
        table, _, index = parts["table"].partition(".")
        location = _locate_in_directories(directories)
        table_id, snapshot, backup = (location[2], location[4], location[5]) if location else (None, None, False)
        parts["format"] = "big"
    elif match := _ANCIENT.match(name):
        parts = match.groupdict()
        table, _, index = parts["table"].partition(".")
        snapshot, backup, directories = _strip_snapshot_or_backup(directories)
        if not directories:
            return None
        keyspace, table_id = directories[-1], None
        parts["format"] = "big"
    else:
        return None

    component_file = parts["component"]
    component = _component_name(component_file)
    if component is None:
        return None
    generation = parts["generation"]
    return SSTableName(
        path=path,
        keyspace=keyspace,
        table=table,
        table_id=table_id,
        index=index or None,
        version=parts["version"],
        format=parts["format"].lower(),
        generation=int(generation) if generation.isdigit() else generation.lower(),
        component=component,
        component_file=component_file,
        temporary=bool(parts.get("temporary")),
        snapshot=snapshot,
        backup=backup,
    )


def _component_name(component_file: str) -> str | None:
    if component_file in _COMPONENT_FILES:
        return _COMPONENT_FILES[component_file]
    if component_file.startswith("SAI+"):  # storage-attached index, 5.0: SAI+aa+<index>+TermsData.db
        return "SAI"
    if component_file.startswith("SI_"):  # SASI index, 3.4+: SI_<index>.db
        return "SASI"
    # A component this module does not know (a newer release, a custom format): keep its stem.
    stem, dot, extension = component_file.partition(".")
    return stem if dot and stem.isalnum() and extension in ("db", "txt") else None


def _strip_snapshot_or_backup(directories: list[str]) -> tuple[str | None, bool, list[str]]:
    """Remove a trailing snapshots/<tag> or backups directory; returns (snapshot, backup, rest)."""
    if len(directories) >= 2 and directories[-2] == "snapshots":
        return directories[-1], False, directories[:-2]
    if directories and directories[-1] == "backups":
        return None, True, directories[:-1]
    return None, False, directories


def _locate_in_directories(directories: list[str]) -> tuple[str, str, str | None, str | None, str | None, bool] | None:
    """(keyspace, table, table_id, index, snapshot, backup) from
    .../<ks>/<table>[-<id>]/[.<index>/][snapshots/<tag>/|backups/]."""
    index = None
    if directories and directories[-1].startswith(".") and len(directories[-1]) > 1:
        index = directories.pop()[1:]
    snapshot, backup, directories = _strip_snapshot_or_backup(directories)
    if index is None and directories and directories[-1].startswith("."):
        index = directories.pop()[1:]
    if len(directories) < 2:
        return None
    table_directory = directories[-1]
    if match := _TABLE_DIRECTORY.match(table_directory):
        table, table_id = match["table"], match["table_id"]
    else:
        table, table_id = table_directory, None
    return directories[-2], table, table_id, index, snapshot, backup
