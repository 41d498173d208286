"""The report of `casstrace watch`: a Watch as a Document every format renders.

JSON schema (the document's data), version 1; new fields may be added within a version. Bytes are
SSTable bytes the node's threads read (syscalls, plus page-cache fills beyond them); a figure that
was not measured is null, never 0.

{
  "version": 1, "kind": "watch",
  "duration_s": float, "sample_probability": float,
  "statements": [                       most estimated storage bytes first: SSTable bytes read, plus a write's
                                        commit-log bytes appended (else its bytes on the wire)
    {"query": str,                      normalized: every literal as ?
     "sampled_executions": int, "estimated_executions": float (sampled ÷ sample_probability),
     "estimated_sstable_bytes": float,  the ranking figure
     "sstable_read_bytes_per_execution": float,   every component of every table
     "data_read_bytes_per_execution": float,      Data components, as `casstrace run` counts data read
     "read_by_component": [{"table": "ks.t", "component": "Data", "bytes_per_execution": float,
                            "syscall_bytes_per_execution": float, "cache_miss_bytes_per_execution": float}],
     "rows_per_execution": float | null, "bytes_per_row": float | null,
     "latency_p50_s": float | null, "latency_p99_s": float | null,   session durations (the node's)
     "latency_p99_without_pauses_s": float | null,   the p99 over the executions no GC or safepoint pause of
                                        the JVM overlapped (null: pauses not measured, or every one overlapped)
     "paused_executions": int | null,   sampled executions a pause overlapped (null: pauses not measured)
     "consistency": [str], "unmatched_threads": [str],
     "verdict": "flagged" | "not flagged" | "undetermined",   as `casstrace run` judges: data read against
                                        the necessary read of its rows (casstrace.analyses.necessary)
     "necessary_bytes_per_execution": float | null,   null: no model (the table's storage or rows unknown)
     "findings": [FINDING],             as in the run report (casstrace.reports.run): the causes
                                        of a flagged statement first, then notes
     "run_command": str,                `casstrace run` of it; a write on a node casstrace did not start, or a
                                        driver's batch (no statement named): what to do instead
     "write": null | {                  a write statement (INSERT, UPDATE, DELETE, BATCH); null: not a write
       "kind": str, "tables": [str], "statements_per_execution": int | null (a batch's; null: a driver's),
       "logged": bool | null, "rows_per_execution": int | null, "cells_per_execution": int | null (from
       the normalized text), "estimated_rows": float | null, "estimated_cells": float | null (x estimated
       executions), "partitions_per_execution": float | null (its trace events' mutations),
       "wire_bytes_per_execution": float | null (what the node read from its clients' connections),
       "wire_estimated": bool (those clients ran other statements too: split by executions),
       "commitlog_bytes_per_execution": float | null (commit-log pages its threads dirtied),
       "node_ns_per_execution", "commitlog_ns_per_execution", "pause_ns_per_execution" (GC and
       safepoints), "cpu_ns_per_execution" (its serving threads' CPU outside the commit log and the
       pauses), "rest_ns_per_execution": float | null (its node time split: the four add up to it),
       "estimated_storage_bytes": float},
     "measures_per_execution": [{...}]  the registered per-execution measures over its sampled
                                        executions, as the run report's "measures_per_execution"
                                        (casstrace.reports.run): each sampled session's figures
                                        (casstrace.analyses.session_measures: Cassandra's traced time, a
                                        write's commit log, the pauses it overlapped, its serving CPU)}],
  "sstable_bytes": int, "explained_bytes": int, "explained_share": float | null,
  "unexplained": [{"pool": str, "what": str, "sstable_bytes": int}],
  "mapped_touched": [{"table": str, "component": str, "touched_bytes": int}] | null,
                                        SSTable pages touched through memory maps during the watch,
                                        attributable to no thread or statement (null: not measured)
  "warnings": [str], "notes": [str], "context": {...},
  "profile": null | {...}        watch --profile: as in the run report (casstrace.reports.run),
                                 over every thread's reads of user tables' Data files during the watch
  "tables": null | {             what the schema's tables cost beside their traffic (null: not read)
    "count": int,                the schema's table count
    "active": [{"table": str, "flushes": int, "writes": int, "reads": int (during the watch),
                "memtable_bytes": int (at its end), "little_traffic": bool (flushed for few writes a flush)}]}
  "background": {                per table, its flushes and compactions during the watch (analyses.table_writes)
    "tables": [{"table": str,     most bytes written first; any figure null: not measured
                "flushes": int, "flush_bytes": int, "flush_sizes": [int] (each flush's new SSTable, smallest first),
                "compaction_read_bytes": int (Data bytes its compactions read), "compaction_written_bytes": int,
                "written_bytes": int (flushes + compactions), "received_bytes": int (mutation bytes of the
                memtables it flushed: their serialized bytes, the node's log),
                "write_amplification": float (written ÷ received),
                "pending_compactions_start", "pending_compactions_end", "pending_compactions_max": int,
                "sstables_per_read": {"reads": int, "mean": float, "most": int} | null (sampled reads)}],
    "findings": [{"cause": "small_flushes" | "compaction_behind", "title": str, "tables": [str],
                  "evidence": [str], "suggestion": [str], "saves_bytes": int}]}   most bytes saved first
}
"""

import dataclasses

from casstrace.analyses.units import human_bytes, human_ms
from casstrace.analyses.watch import INSTEAD_OF_RUN, StatementIO, Watch, describe_share
from casstrace.reports import common, table_writes
from casstrace.reports.document import Block, Code, Document, Items, Paragraph, Section, Table
from casstrace.reports.statement_writes import written_items, written_per_execution

VERSION = 1


def document(watch: Watch, top: int | None = None) -> Document:
    """The report; `top` limits the statements detailed (the JSON keeps them all)."""
    shown = watch.statements[:top] if top else watch.statements
    sections = [_head(watch), _ranking(shown)]
    sections += [_statement_section(rank, statement) for rank, statement in enumerate(shown, start=1)]
    sections.append(_unexplained(watch))
    if watch.table_costs is not None:
        sections.append(Section("Tables: flushes and requests during the watch", _tables(watch)))
    if watch.table_writes or watch.hints:
        sections.append(table_writes.section(watch.table_writes, watch.table_findings, watch.hints))
    if watch.profile is not None:
        sections.append(common.profile_section(watch.profile, "watch --profile"))
    if watch.context:
        sections.append(Section("Context", [Items([(key, str(value)) for key, value in watch.context.items()])]))
    return Document("casstrace watch: the statements behind the node's reads", data(watch), sections)


def _head(watch: Watch) -> Section:
    head: list[Block] = [
        Paragraph(
            f"Statements the node served in {watch.duration_s:.0f} s, ranked by the storage bytes they "
            "moved: the SSTable bytes they read and the commit-log bytes they appended "
            f"(Cassandra traced {watch.probability:.3g} of the requests)."
            + ("" if watch.complete else " The watch did not finish.")
        )
    ]
    head += [Paragraph(warning, "warning") for warning in watch.warnings]
    return Section(None, head)


def _ranking(shown: list[StatementIO]) -> Section:
    if not shown:
        return Section(
            "Statements",
            [
                Paragraph(
                    "No statement was sampled: the node served none, or too few for the sample "
                    "probability (raise --sample, or watch longer).",
                    "warning",
                )
            ],
        )
    headers = (
        "#",
        "Statement",
        "Sampled",
        "Est. executions",
        "Read / execution",
        "Data / execution",
        "Written / execution",
        "Rows / execution",
        "Bytes / row",
        "p50",
        "p99",
        "p99 without pauses",
    )
    return Section("Statements", [Table(headers, [_row(rank, s) for rank, s in enumerate(shown, start=1)])])


def _statement_section(rank: int, statement: StatementIO) -> Section:
    blocks: list[Block] = [Code(statement.statement), Items(_statement_items(statement))]
    if statement.components:
        blocks.append(
            Table(
                ("Table", "Component", "Read / execution", "Syscalls", "Page-cache fills"),
                [
                    (
                        c.table,
                        c.component,
                        human_bytes(c.bytes_per_execution),
                        human_bytes(c.syscall_bytes_per_execution),
                        human_bytes(c.cache_miss_bytes_per_execution),
                    )
                    for c in statement.components
                ],
            )
        )
    if statement.unmatched_threads:
        blocks.append(
            Paragraph(
                f"Events on threads with no known thread id ({', '.join(statement.unmatched_threads)}): "
                "their reads are not counted here.",
                "warning",
            )
        )
    blocks.append(common.findings_block(None, statement.findings, statement.data_read_bytes_per_execution))
    if statement.run_command in INSTEAD_OF_RUN:
        blocks.append(Paragraph(f"Measure it alone: {statement.run_command}", "muted"))
    else:
        blocks.append(Paragraph("Measure it alone, precisely (fill in the ? values):", "muted"))
        blocks.append(Code(statement.run_command))
    return Section(f"{rank}. {_short(statement.statement)}", blocks)


def _statement_items(statement: StatementIO) -> list[tuple[str, str]]:
    necessary = (
        f" (the necessary read of its rows: {human_bytes(statement.necessary_bytes_per_execution)} per execution)"
        if statement.necessary_bytes_per_execution is not None
        else " (no necessary read: the table's storage or the rows are not known)"
    )
    return [
        ("executions", f"{statement.sampled_executions} sampled, about {statement.estimated_executions:,.0f} in all"),
        (
            "read per execution",
            f"{human_bytes(statement.sstable_read_bytes_per_execution)} from SSTables, of "
            f"which {human_bytes(statement.data_read_bytes_per_execution)} from Data files",
        ),
        ("verdict", statement.verdict + necessary),
        ("rows per execution", _number(statement.rows_per_execution)),
        ("bytes per row", human_bytes(statement.bytes_per_row) if statement.bytes_per_row is not None else "—"),
        ("latency (node)", f"p50 {_ms(statement.latency_p50_s)}, p99 {_ms(statement.latency_p99_s)}"),
        ("latency without the JVM's pauses", _without_pauses(statement)),
        ("consistency", ", ".join(statement.consistency) or "—"),
        *(written_items(statement.write) if statement.write else []),
        *common.summary_items(statement.measures),
    ]


def _unexplained(watch: Watch) -> Section:
    blocks: list[Block] = [Paragraph(describe_share(watch))]
    if watch.unexplained:
        blocks.append(
            Table(
                ("Threads", "What", "SSTable bytes"),
                [(p.pool, p.what, human_bytes(p.sstable_bytes)) for p in watch.unexplained],
            )
        )
    if watch.mapped_touched:
        blocks.append(
            Paragraph(
                "Pages the JVM touched through its memory maps during the watch (no syscall, "
                "no page-cache fill: no thread or statement can be charged for them):"
            )
        )
        blocks.append(
            Table(
                ("Table", "Component", "Mapped pages touched"),
                [(m.table, m.component, human_bytes(m.touched_bytes)) for m in watch.mapped_touched],
            )
        )
    blocks += [Paragraph(note, "muted") for note in watch.notes]
    return Section("What the sampled sessions do not explain", blocks)


def data(watch: Watch) -> dict:
    return {
        "version": VERSION,
        "kind": "watch",
        "duration_s": watch.duration_s,
        "sample_probability": watch.probability,
        "statements": [_statement_data(s) for s in watch.statements],
        "sstable_bytes": watch.sstable_bytes,
        "explained_bytes": watch.explained_bytes,
        "explained_share": watch.explained_share,
        "unexplained": [dataclasses.asdict(p) for p in watch.unexplained],
        "mapped_touched": None
        if watch.mapped_touched is None
        else [dataclasses.asdict(m) for m in watch.mapped_touched],
        "warnings": watch.warnings,
        "notes": watch.notes,
        "context": watch.context,
        "trace": watch.trace_path,
        "complete": watch.complete,
        "profile": common.profile_data(watch.profile) if watch.profile is not None else None,
        "tables": None
        if watch.table_costs is None
        else {
            "count": watch.tables,
            "active": [dataclasses.asdict(t) | {"little_traffic": t.little_traffic} for t in watch.table_costs],
        },
        "background": table_writes.data(watch.table_writes, watch.table_findings, watch.hints),
    }


def _statement_data(s: StatementIO) -> dict:
    return {
        "query": s.statement,
        "sampled_executions": s.sampled_executions,
        "estimated_executions": s.estimated_executions,
        "estimated_sstable_bytes": s.estimated_sstable_bytes,
        "sstable_read_bytes_per_execution": s.sstable_read_bytes_per_execution,
        "data_read_bytes_per_execution": s.data_read_bytes_per_execution,
        "read_by_component": [dataclasses.asdict(c) for c in s.components],
        "rows_per_execution": s.rows_per_execution,
        "bytes_per_row": s.bytes_per_row,
        "latency_p50_s": s.latency_p50_s,
        "latency_p99_s": s.latency_p99_s,
        "latency_p99_without_pauses_s": s.latency_p99_without_pauses_s,
        "paused_executions": s.paused_executions,
        "consistency": s.consistency,
        "unmatched_threads": s.unmatched_threads,
        "verdict": s.verdict,
        "necessary_bytes_per_execution": s.necessary_bytes_per_execution,
        "findings": [dataclasses.asdict(f) for f in s.findings],
        "run_command": s.run_command,
        "write": None
        if s.write is None
        else {key: value for key, value in dataclasses.asdict(s.write).items() if key != "findings"},
        "measures_per_execution": common.measures_data(s.measures),
    }


def _row(rank: int, s: StatementIO) -> tuple[str, ...]:
    return (
        str(rank),
        _short(s.statement),
        str(s.sampled_executions),
        f"{s.estimated_executions:,.0f}",
        human_bytes(s.sstable_read_bytes_per_execution),
        human_bytes(s.data_read_bytes_per_execution),
        written_per_execution(s.write) if s.write else "—",
        _number(s.rows_per_execution),
        human_bytes(s.bytes_per_row) if s.bytes_per_row is not None else "—",
        _ms(s.latency_p50_s),
        _ms(s.latency_p99_s),
        _ms(s.latency_p99_without_pauses_s) if s.paused_executions is not None else common.NOT_MEASURED,
    )


def _without_pauses(s: StatementIO) -> str:
    """The p99 over the executions no GC or safepoint pause overlapped, and how many one did."""
    if s.paused_executions is None:
        return "GC and safepoint pauses not measured"
    return (
        f"p99 {_ms(s.latency_p99_without_pauses_s)} over the {s.sampled_executions - s.paused_executions} "
        f"sampled executions no GC or safepoint pause overlapped ({s.paused_executions} overlapped one)"
    )


def _tables(watch: Watch) -> list[Block]:
    """The schema's table count, and the tables that flushed or served requests during the watch."""
    blocks: list[Block] = [Paragraph(f"{watch.tables} tables in the schema.")]
    if watch.table_costs:
        blocks.append(
            Table(
                ("Table", "Flushes", "Writes", "Reads", "Memtable", "Little traffic"),
                [
                    (
                        t.table,
                        f"{t.flushes:,}",
                        f"{t.writes:,}",
                        f"{t.reads:,}",
                        human_bytes(t.memtable_bytes),
                        "yes" if t.little_traffic else "",
                    )
                    for t in watch.table_costs
                ],
            )
        )
    return blocks


def _short(statement: str, width: int = 60) -> str:
    return statement if len(statement) <= width else statement[: width - 1] + "…"


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f}"


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else human_ms(seconds)
