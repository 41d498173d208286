"""What a trace must say about the node for its figures to be read right: the Cassandra version, how
it reads its files (disk_access_mode), where its data lives, and the schema and SSTables of the
tables the query touches. Gathered once per trace, before the probes attach, so these reads are not
part of the capture.
"""

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from cassandra.cluster import Session
from cassandra.query import PreparedStatement

from casstrace.errors import CasstraceError
from casstrace.node import storage
from casstrace.node.connection import answered_in_time
from casstrace.node.jvm import CassandraProcess, fd_targets
from casstrace.probes.proc import mapped_pages
from casstrace.probes.proc.proc_fds import in_root, stat_in_root
from casstrace.traces.meta import CassandraMeta, IndexMeta, SSTableFileMeta, TableMeta

# "DiskAccessMode 'auto' determined to be mmap, indexAccessMode is mmap" (3.x, 4.x),
# "DiskAccessMode is standard, indexAccessMode is mmap" (5.0)
DISK_ACCESS_LOG_LINE = re.compile(r"DiskAccessMode\s+(?:'\w+'\s+determined to be|is)\s+(\w+)")
TABLE_REFERENCE = re.compile(
    r"\b(?:FROM|INTO|UPDATE|TABLE)\s+((?:\"[^\"]+\"|\w+)(?:\s*\.\s*(?:\"[^\"]+\"|\w+))?)", re.IGNORECASE
)


def _rows(session: Session, cql: str, params: Sequence[object] = ()) -> list[Any]:
    with answered_in_time(session, f"`{cql.replace('%s', '?')}`"):
        return list(session.execute(cql, params))


def settings(session: Session) -> dict[str, str]:
    """system_views.settings (Cassandra 4.0+) as a dict, {} where the table does not exist."""
    try:
        return {row.name: row.value for row in _rows(session, "SELECT name, value FROM system_views.settings")}
    except Exception:  # older node: no virtual tables
        return {}


def _log_disk_access_mode(process: CassandraProcess) -> str | None:
    """The data access mode of the node's last startup, from its system.log."""
    log_dir = process.system_property("cassandra.logdir")
    return logged_disk_access_mode(Path(in_root(process.pid, f"{log_dir}/system.log"))) if log_dir else None


def logged_disk_access_mode(log: Path) -> str | None:
    """The data access mode a node's log says its last startup resolved ('mmap' for 'auto' on
    4.x), or None when the log does not say."""
    found = None
    try:
        with open(log, errors="replace") as lines:
            for line in lines:
                if "DiskAccessMode" in line:
                    found = DISK_ACCESS_LOG_LINE.search(line) or found
    except OSError:
        return None
    return found.group(1) if found else None


def disk_access_mode(node_settings: dict[str, str], process: CassandraProcess | None) -> str:
    """How the node reads Data.db files, as it reports it (the resolved mode: 'mmap_index_only' shows
    as 'standard', since only the index is mapped)."""
    logged = _log_disk_access_mode(process) if process is not None else None
    return node_settings.get("disk_access_mode") or logged or "unknown"


DATA_STORAGE = re.compile(r"^\s*(\d+)\s*(B|KiB|MiB|GiB)\s*$")
DATA_STORAGE_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def read_ahead(node_settings: dict[str, str]) -> CassandraMeta:
    """meta cassandra's compressed_read_ahead_bytes: compressed_read_ahead_buffer_size (5.0+: what a
    range read of compressed SSTables reads at a time), {} where the node has no such setting (4.x)
    or says it in a form not known."""
    match = DATA_STORAGE.match(node_settings.get("compressed_read_ahead_buffer_size") or "")
    return {"compressed_read_ahead_bytes": int(match.group(1)) * DATA_STORAGE_UNITS[match.group(2)]} if match else {}


def commit_log(node_settings: dict[str, str]) -> CassandraMeta:
    """meta cassandra's commitlog_sync and commitlog_disk_access_mode, those the node says (4.0+)."""
    found: CassandraMeta = {}
    if node_settings.get("commitlog_sync"):
        found["commitlog_sync"] = node_settings["commitlog_sync"]
    if node_settings.get("commitlog_disk_access_mode"):
        found["commitlog_disk_access_mode"] = node_settings["commitlog_disk_access_mode"]
    return found


def _parse_list_setting(value: str) -> list[str]:
    return [item.strip().strip("'\"") for item in value.strip("[]").split(",") if item.strip()]


def yaml_data_directories(process: CassandraProcess) -> list[str]:
    """data_file_directories of the cassandra.yaml the JVM was started with (-Dcassandra.config=
    file://...), read through the node's root; [] when it names none or cannot be read. Block lists
    (`- /path` lines) and flow lists (`[/a, /b]`) are read; other YAML is not needed for this key."""
    config = process.system_property("cassandra.config") or ""
    if not config.startswith("file:"):
        return []
    try:
        lines = Path(in_root(process.pid, urlparse(config).path)).read_text(errors="replace").splitlines()
    except OSError:
        return []
    for number, line in enumerate(lines):
        key, colon, rest = line.partition(":")
        if key != "data_file_directories" or not colon:
            continue
        rest = rest.split("#")[0].strip()
        if rest:
            return _parse_list_setting(rest)
        found = []
        for item in lines[number + 1 :]:
            if not item.strip() or item.lstrip().startswith("#"):
                continue
            entry = re.match(r"^\s+-\s+(.*?)\s*(?:#.*)?$", item)
            if entry is None:
                break
            found.append(entry.group(1).strip("'\""))
        return found
    return []


def data_directories(node_settings: dict[str, str], process: CassandraProcess) -> list[str]:
    """Where the node keeps SSTables: its settings, else its cassandra.yaml, else
    cassandra.storagedir/data, else the directories of the Data.db files it has open."""
    if node_settings.get("data_file_directories"):
        return _parse_list_setting(node_settings["data_file_directories"])
    if from_yaml := yaml_data_directories(process):
        return from_yaml
    storage = process.system_property("cassandra.storagedir")
    if storage and Path(in_root(process.pid, f"{storage}/data")).is_dir():
        return [str(Path(storage, "data"))]
    # DIR/keyspace/table-id/file
    return sorted({str(Path(target).parents[2]) for target in fd_targets(process.pid) if target.endswith("-Data.db")})


def tables_touched(prepared: PreparedStatement | None, query: str, keyspace: str | None) -> list[tuple[str, str]]:
    """(keyspace, table) pairs the query reads or writes: from the node's result metadata (when it was
    prepared), and from the table names written in the query (statements without result columns)."""
    found = []
    for column in (prepared.result_metadata if prepared is not None else None) or ():
        found.append((column[0], column[1]))
    for reference in TABLE_REFERENCE.findall(query):
        parts = [part.strip() for part in reference.split(".")]
        parts = [part[1:-1] if part.startswith('"') else part.lower() for part in parts]
        if len(parts) == 2:
            found.append((parts[0], parts[1]))
        elif keyspace:
            found.append((keyspace, parts[0]))
    return list(dict.fromkeys(found))


def table_schema(session: Session, keyspace: str, table: str) -> TableMeta | None:
    """Columns, primary key, compression and secondary indexes from system_schema; a materialized
    view's likewise (a table of its own on disk); None when there is no such table (a virtual table)."""
    rows = _rows(
        session,
        "SELECT id, compression FROM system_schema.tables WHERE keyspace_name = %s AND table_name = %s",
        (keyspace, table),
    )
    view = (
        []
        if rows
        else _rows(
            session,
            "SELECT id, compression, base_table_name FROM system_schema.views"
            " WHERE keyspace_name = %s AND view_name = %s",
            (keyspace, table),
        )
    )
    if not rows and not view:
        return None
    columns = sorted(
        _rows(
            session,
            "SELECT column_name, type, kind, position FROM system_schema.columns"
            " WHERE keyspace_name = %s AND table_name = %s",
            (keyspace, table),
        ),
        key=lambda c: ({"partition_key": 0, "clustering": 1, "static": 2}.get(c.kind, 3), c.position, c.column_name),
    )
    found = (rows or view)[0]
    schema: TableMeta = {
        "keyspace": keyspace,
        "table": table,
        "id": str(found.id),
        "columns": [{"name": c.column_name, "type": c.type, "kind": c.kind} for c in columns],
        "partition_key": [c.column_name for c in columns if c.kind == "partition_key"],
        "clustering": [c.column_name for c in columns if c.kind == "clustering"],
        "compression": dict(found.compression or {}),
        "indexes": [] if view else _indexes(session, keyspace, table),
    }
    if view:
        schema["base_table"] = view[0].base_table_name
    return schema


def _indexes(session: Session, keyspace: str, table: str) -> list[IndexMeta]:
    """The table's secondary indexes: 5.0's storage-attached ones (SAI), the legacy ones (a hidden
    table each), and any other class by its name."""
    indexes: list[IndexMeta] = []
    for row in _rows(
        session,
        "SELECT index_name, kind, options FROM system_schema.indexes WHERE keyspace_name = %s AND table_name = %s",
        (keyspace, table),
    ):
        options = dict(row.options or {})
        index_class = options.get("class_name", "")
        kind = (
            "legacy" if row.kind != "CUSTOM" else "sai" if index_class.endswith("StorageAttachedIndex") else index_class
        )
        indexes.append({"name": row.index_name, "target": options.get("target", ""), "kind": kind})
    return indexes


def sstable_files(pid: int, data_dirs: list[str], keyspace: str, table: str, table_id: str) -> list[SSTableFileMeta]:
    """The files of a table's live SSTables, with sizes, as they are on disk now
    (DIR/keyspace/table-<id without dashes>/), then those of its legacy secondary indexes' hidden
    tables (its `.<index>/` subdirectories); snapshots and backups are left out. Paths are the
    node's own, read through its root when it runs in another mount namespace (a container)."""
    directory_name = f"{table}-{table_id.replace('-', '')}"
    files: list[SSTableFileMeta] = []
    for data_dir in data_dirs:
        table_dir = str(Path(data_dir, keyspace, directory_name))
        found, subdirectories = _listed(pid, table_dir)
        files += found
        for subdirectory in subdirectories:
            if subdirectory.startswith("."):  # a legacy index's SSTables
                files += _listed(pid, os.path.join(table_dir, subdirectory))[0]
    return files


def _listed(pid: int, directory: str) -> tuple[list[SSTableFileMeta], list[str]]:
    """(the files of a directory with their sizes, its subdirectories), both sorted by name."""
    sizes, subdirectories = [], []
    try:
        # scandir: a table of 5,000 SSTables has 40,000 files, which pathlib took 1.1 s to list
        with os.scandir(in_root(pid, directory)) as entries:
            for entry in entries:
                try:
                    if entry.is_file():
                        sizes.append((entry.name, entry.stat().st_size))
                    elif entry.is_dir():
                        subdirectories.append(entry.name)
                except FileNotFoundError:  # compacted away meanwhile
                    continue
    except (FileNotFoundError, NotADirectoryError):
        return [], []
    return [{"path": os.path.join(directory, name), "size": size} for name, size in sorted(sizes)], sorted(
        subdirectories
    )


def gather(
    session: Session, process: CassandraProcess | None, prepared: PreparedStatement, query: str, keyspace: str | None
) -> CassandraMeta:
    """meta 'cassandra' of a run trace. Without the node's process (its JVM runs elsewhere) the data
    directories are what the node's settings say, and its SSTables are not listed."""
    node_settings = settings(session)
    data_dirs = (
        data_directories(node_settings, process)
        if process is not None
        else _parse_list_setting(node_settings.get("data_file_directories", ""))
    )
    return cassandra_meta(session, process, node_settings, data_dirs, tables_touched(prepared, query, keyspace))


def cassandra_meta(
    session: Session,
    process: CassandraProcess | None,
    node_settings: dict[str, str],
    data_dirs: list[str],
    tables_read: Iterable[tuple[str, str]],
) -> CassandraMeta:
    """meta 'cassandra', for a run and a watch alike: the node's release, disk access mode, data
    directories and read-ahead, and each table read's schema, with its SSTables and their storage when
    the node's process is here (None: its JVM runs elsewhere)."""
    local = _rows(session, "SELECT release_version FROM system.local WHERE key = 'local'")
    tables: list[TableMeta] = []
    for table_keyspace, table in tables_read:
        schema = table_schema(session, table_keyspace, table)
        if schema is not None:
            schema["sstables"] = (
                [] if process is None else sstable_files(process.pid, data_dirs, table_keyspace, table, schema["id"])
            )
            if process is not None:
                schema["storage"] = storage.sstable_storage(process.pid, schema["sstables"])
            tables.append(schema)
    return {
        "release_version": local[0].release_version if local else "unknown",
        "disk_access_mode": disk_access_mode(node_settings, process),
        "data_file_directories": data_dirs,
        "tables": tables,
        **read_ahead(node_settings),
        **commit_log(node_settings),
    }


def table_file_keys(pid: int, cassandra: CassandraMeta) -> set[tuple[int, int]]:
    """(st_dev, inode) of every file of the queried tables' SSTables (meta 'cassandra' of gather()),
    their paths as process `pid` names them."""
    keys = set()
    for table in cassandra["tables"]:
        for sstable_file in table["sstables"]:
            try:
                stat = stat_in_root(pid, sstable_file["path"])
            except OSError:  # compacted away since
                continue
            keys.add((stat.st_dev, stat.st_ino))
    return keys


def make_cold(pid: int, files: set[tuple[int, int]]) -> int:
    """Before a cold execution: push the process's mapped pages of these files out of it and out of
    the page cache (drop_caches alone keeps mapped pages), then drop the page cache. Returns the bytes
    of address space paged out. CasstraceError when the mapped pages cannot be pushed out, so that
    no run is called cold that was not."""
    try:
        paged_out = mapped_pages.page_out(pid, mapped_pages.file_mappings(pid, files))
    except mapped_pages.PageOutUnavailable as error:
        raise CasstraceError(
            f"--cold cannot push the table's mapped pages out of pid {pid}: {error}",
            "run casstrace as root on Linux 5.10 or later, or leave out --cold",
        ) from None
    drop_page_cache()
    return paged_out


def drop_page_cache() -> None:
    """Write back dirty pages, then evict clean page-cache pages that no process maps."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as control:
            control.write("1\n")
    except OSError as error:
        raise CasstraceError(
            f"cannot drop the page cache for --cold: {error.strerror}", "run casstrace as root, or leave out --cold"
        ) from None
