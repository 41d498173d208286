"""The part of the watch's report about the tables' background work (analyses.table_writes): a table per
table of its flushes, compactions, write amplification, pending compactions and SSTables per read, the
findings about them first, and the hints the node stored and replayed per replica (analyses.hints); and
the same as JSON-ready data."""

import dataclasses

from casstrace.analyses.hints import HintsFor
from casstrace.analyses.table_writes import TableFinding, TableWrites
from casstrace.analyses.units import human_bytes
from casstrace.reports.common import NOT_MEASURED
from casstrace.reports.document import Block, FindingItem, Findings, Paragraph, Section, Table

HEADERS = (
    "Table",
    "Flushes",
    "Flushed",
    "Each flush (smallest – largest)",
    "Compaction read",
    "Compaction written",
    "Mutations flushed",
    "Write amplification",
    "Pending compactions (start → end, max)",
    "SSTables / read (mean, max)",
)


def section(tables: list[TableWrites], findings: list[TableFinding], hints: list[HintsFor]) -> Section:
    blocks: list[Block] = [
        Paragraph(
            "Per table, what the node wrote to disk for it during the watch (its flush and compaction threads' "
            "writes to its SSTables) against the mutation bytes of the memtables it flushed (their serialized bytes, "
            "as the node's log says): the write amplification."
        )
    ]
    if findings:
        blocks.append(
            Findings(
                None,
                [
                    FindingItem(
                        f.title, "measured", f"saves {human_bytes(f.saves_bytes)} of writes", f.evidence, f.suggestion
                    )
                    for f in findings
                ],
            )
        )
    if tables:
        blocks.append(Table(HEADERS, [_row(t) for t in tables]))
    if hints:
        blocks.append(
            Table(
                ("Hints for (host ID)", "Stored", "Replayed"),
                [(h.host_id, human_bytes(h.stored_bytes), human_bytes(h.replayed_bytes)) for h in hints],
            )
        )
    return Section("Tables: flushes, compactions and write amplification", blocks)


def _row(t: TableWrites) -> tuple[str, ...]:
    sizes = t.flush_sizes
    return (
        t.table,
        NOT_MEASURED if t.flushes is None else f"{t.flushes:,}",
        human_bytes(t.flush_bytes),
        NOT_MEASURED if sizes is None else (f"{human_bytes(sizes[0])} – {human_bytes(sizes[-1])}" if sizes else "—"),
        human_bytes(t.compaction_read_bytes),
        human_bytes(t.compaction_written_bytes),
        human_bytes(t.received_bytes),
        "—" if t.write_amplification is None else f"{t.write_amplification:,.2f}x",
        NOT_MEASURED
        if t.pending_compactions_start is None
        else f"{t.pending_compactions_start} → {t.pending_compactions_end}, {t.pending_compactions_max}",
        "—" if t.sstables_per_read is None else f"{t.sstables_per_read.mean:.1f}, {t.sstables_per_read.most}",
    )


def data(tables: list[TableWrites], findings: list[TableFinding], hints: list[HintsFor]) -> dict:
    return {
        "tables": [
            dataclasses.asdict(t) | {"written_bytes": t.written_bytes, "write_amplification": t.write_amplification}
            for t in tables
        ],
        "findings": [dataclasses.asdict(f) for f in findings],
        "hints": [dataclasses.asdict(h) for h in hints],
    }
