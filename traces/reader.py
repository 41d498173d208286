"""Opening a trace file for the analyses, with clear errors for files that are not whole traces."""

import json
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Self, cast

from casstrace.errors import CasstraceError
from casstrace.outputs import PARTIAL_SUFFIX, target_of
from casstrace.traces.capabilities import Capability, capabilities_of
from casstrace.traces.meta import TraceMeta, meta_type_error
from casstrace.traces.schema import READABLE_FORMAT_VERSIONS
from casstrace.traces.validation import MAX_JSON_DEPTH, Invalid, invalid, too_deep


def _not_whole(path: Path) -> CasstraceError:
    """A trace a casstrace is still writing (outputs.partial_path), or left half-written when killed."""
    whole = target_of(path) if path.name.endswith(PARTIAL_SUFFIX) else path
    return CasstraceError(
        f"{path} is not a whole trace yet: a casstrace is still writing it (or was killed meanwhile)",
        f"report {whole} once the command that writes it has ended, or take the trace again",
    )


def _unreadable(path: Path, error: Exception) -> CasstraceError:
    return CasstraceError(
        f"{path} is not a readable casstrace trace ({error})",
        "the file is damaged or truncated: take the trace again, or copy it whole",
    )


class Trace:
    """A trace file opened read-only: its meta, and the connection casstrace.traces.queries reads."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self._columns: dict[str, frozenset[str]] = {}
        if not self.path.is_file():
            raise CasstraceError(f"no trace file at {self.path}", "give the path that `casstrace run` printed")
        if self.path.name.startswith(".") and self.path.name.endswith(PARTIAL_SUFFIX):
            raise _not_whole(self.path)
        try:
            self.db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            self.db.row_factory = sqlite3.Row
            (integrity,) = self.db.execute("PRAGMA quick_check").fetchone()
            if integrity != "ok":
                raise sqlite3.DatabaseError(integrity)
            meta = {}
            for key, value in self.db.execute("SELECT key, value FROM meta"):
                if too_deep(str(value)):
                    self.db.close()
                    raise self._invalid(
                        Invalid("meta", str(key), f"its JSON nests deeper than {MAX_JSON_DEPTH} levels")
                    )
                meta[key] = json.loads(value)
            self.meta = cast(TraceMeta, meta)  # its values' types are checked below (meta_type_error)
        except (sqlite3.DatabaseError, ValueError) as error:  # ValueError: a meta value that is not JSON
            if hasattr(self, "db"):
                self.db.close()
            raise _unreadable(self.path, error) from None
        version = self.meta.get("format_version")
        if version is None:  # its first meta not written yet
            self.db.close()
            raise _not_whole(self.path)
        if version not in READABLE_FORMAT_VERSIONS:
            raise CasstraceError(
                f"{self.path} has trace format {version!r}; this casstrace reads formats "
                f"{', '.join(map(str, READABLE_FORMAT_VERSIONS))}",
                "analyse it with the casstrace version that wrote it",
            )
        wrong = meta_type_error(self.meta)
        if wrong is not None:
            self.db.close()
            raise CasstraceError(
                f"{self.path} is not a readable casstrace trace (meta {wrong})",
                "the file was changed since casstrace wrote it: take the trace again",
            )
        try:
            tables = frozenset(
                name for (name,) in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            )
            found = invalid(self.db, tables)
        except sqlite3.DatabaseError as error:
            self.db.close()
            raise _unreadable(self.path, error) from None
        if found is not None:
            self.db.close()
            raise self._invalid(found)

    def _invalid(self, found: Invalid) -> CasstraceError:
        return CasstraceError(
            f"{self.path}: table {found.table}, field {found.field}: {found.what}",
            "the trace was changed since casstrace wrote it: take the trace again, or restore its copy",
        )

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[sqlite3.Row]:
        """Raw SQL, for the tests and benchmarks that check what a writer stored. The analyses ask
        casstrace.traces.queries instead, which knows the schema and its older formats."""
        return self.db.execute(sql, params).fetchall()

    def columns(self, table: str) -> frozenset[str]:
        """The table's columns in this trace; empty when its format predates the table. Asked once
        per table: an analysis asks per execution, 300 times in a `run --repeat 300` trace."""
        if table not in self._columns:
            self._columns[table] = frozenset(row[1] for row in self.db.execute(f"PRAGMA table_info({table})"))
        return self._columns[table]

    @property
    def complete(self) -> bool:
        return bool(self.meta.get("complete"))

    def captured_with(self, capability: Capability) -> bool:
        """Whether the backend that took the trace had this capability (casstrace.traces.capabilities)."""
        return capability in capabilities_of(self.meta)

    def measured(self, measure: str) -> bool:
        """Whether the backend took a measure ('syscalls', 'offsets', 'page_cache', 'latency', 'wire')."""
        return bool(self.meta.get("measures", {}).get(measure))

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
