"""The writes of a trace's files, as a report section and as JSON (analyses.write_io's WriteIO)."""

import dataclasses

from casstrace.analyses.model import WriteIO
from casstrace.analyses.units import human_bytes, human_ns
from casstrace.reports.document import NOT_BRIEF, Block, Notes, Section, Table

WRITE_COLUMNS = (
    "File",
    "Written",
    "Writes",
    "Dirtied",
    "Mapped dirtied",
    "Written back",
    "Syncs",
    "Sync p50 ≤",
    "Sync p99 ≤",
)


def write_section(writes: WriteIO | None, several_nodes: bool) -> Section | None:
    """The files written, dirtied, written back or synced, with why a figure is not measured; None when
    the trace has none (a read)."""
    if writes is None or not writes.files:
        return None
    rows: list[tuple[str, ...]] = [
        (
            f"[{f.node}] {f.path}" if several_nodes and f.node else f.path,
            human_bytes(f.written_bytes),
            f"{f.write_calls:,}",
            human_bytes(f.dirtied_bytes),
            human_bytes(f.mapped_dirtied_bytes),
            human_bytes(f.written_back_bytes),
            "not measured" if f.sync_calls is None else f"{f.sync_calls:,}",
            human_ns(f.sync_p50_ns) if f.sync_calls else "",
            human_ns(f.sync_p99_ns) if f.sync_calls else "",
        )
        for f in writes.files
    ]
    blocks: list[Block] = [Table(WRITE_COLUMNS, rows)]
    if writes.unmeasured:
        blocks.append(Notes([f"{label}: {why}" for label, why in writes.unmeasured.items()]))
    return Section("Writes", blocks, NOT_BRIEF)


def write_data(writes: WriteIO | None) -> dict | None:
    if writes is None:
        return None
    return {"files": [dataclasses.asdict(f) for f in writes.files], "unmeasured": dict(writes.unmeasured)}
