"""A watch in progress in the Prometheus text exposition format (version 0.0.4), for
`watch --metrics-port`.

Named by Prometheus conventions: `casstrace_` prefix, base units in the name (bytes, seconds), `_total`
on counters. Counters (what the watch has seen so far):

  casstrace_statement_read_bytes_total{statement, table, component, measure}
      SSTable bytes the sampled executions of a statement read; measure: "data" (what the reads
      returned plus page-cache fills beyond it, the report's figure), "syscall", "cache_miss"
  casstrace_statement_executions_total{statement, kind}     kind: "sampled", "estimated" (sampled ÷ P)
  casstrace_table_read_bytes_total{table, component, measure}   every thread's, sampled or not
  casstrace_sessions_sampled_total                            sessions the node traced (P of its requests)
  casstrace_table_write_bytes_total{table, by}   bytes the node wrote to a table's SSTables, by="flush" or
      "compaction" (its threads' write syscalls; analyses.table_writes)
  casstrace_table_compaction_read_bytes_total{table}   Data bytes its compactions read
  casstrace_table_flushes_total{table}           its memtable flushes (new SSTables its flush threads wrote)
  casstrace_hints_bytes_total{host_id, direction}   bytes of hints for a replica (its host ID) the node
      stored ("stored": written to its hints files) or sent it ("replayed": read back; analyses.hints)

Gauges (over the watch so far): casstrace_statement_read_bytes_per_execution{statement} (every
component), casstrace_statement_amplification_ratio{statement} (Data read ÷ the necessary read of the
rows, when casstrace has a model of it), casstrace_statement_latency_p99_seconds{statement, pauses}
(the node's p99 over the sampled executions, pauses="included", and over those no GC or safepoint pause
of the JVM overlapped, pauses="excluded"; a statement with a label of its own), casstrace_watch_sample_ratio,
casstrace_watch_duration_seconds, casstrace_table_write_amplification_ratio{table} (its flush and compaction
writes ÷ the mutation bytes it received; received as the watch's end reads them, so at the end).

Write statements: casstrace_statement_write_bytes_total{statement, measure} and
casstrace_statement_write_node_seconds_per_execution{statement, part} (reports/prometheus_writes.py).

Bounded label sets: a statement is its normalized text (literals as ?, its control and invisible format
characters as visible escapes: `\\x1b`, `\\u202e`, casstrace.terminal); the first `top` statements to rank
among the top by estimated bytes keep a label of their own for the whole watch, every other is summed
into statement="other", so a series never moves between labels. The figures are recomputed
from the whole watch at each refresh (sessions sampled late, slots shared anew): a counter reports the
largest value it has had, so it never goes down.
"""

from casstrace.analyses.table_writes import TableWrites
from casstrace.analyses.watch import StatementIO, Watch
from casstrace.analyses.watch_tables import TableRead
from casstrace.reports.prometheus_measures import HELP as MEASURE_HELP
from casstrace.reports.prometheus_measures import measure_samples
from casstrace.reports.prometheus_writes import HELP as WRITE_HELP
from casstrace.reports.prometheus_writes import Labels, write_samples
from casstrace.terminal import printable

OTHER = "other"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
READ_MEASURES = ("data", "syscall", "cache_miss")  # the three figures of a read's bytes

HELP = {
    "casstrace_statement_read_bytes_total": (
        "counter",
        "SSTable bytes the sampled executions of a statement read, by table, component and measure",
    ),
    "casstrace_statement_executions_total": (
        "counter",
        "Executions of a statement: sampled by the node's tracing, and estimated (sampled / sample ratio)",
    ),
    "casstrace_table_read_bytes_total": (
        "counter",
        "SSTable bytes every thread of the node read, by table, component and measure",
    ),
    "casstrace_sessions_sampled_total": ("counter", "Requests the node traced (its sampled sessions)"),
    "casstrace_statement_read_bytes_per_execution": (
        "gauge",
        "SSTable bytes a statement read per sampled execution, over the watch so far",
    ),
    "casstrace_statement_amplification_ratio": (
        "gauge",
        "Data bytes a statement read per execution / the necessary read of its rows (when casstrace has a model of it)",
    ),
    "casstrace_statement_latency_p99_seconds": (
        "gauge",
        "A statement's p99 latency on the node, with the executions a JVM pause overlapped included or excluded",
    ),
    "casstrace_table_write_bytes_total": (
        "counter",
        "Bytes the node wrote to a table's SSTables, by its flush or compaction threads",
    ),
    "casstrace_table_compaction_read_bytes_total": ("counter", "Data bytes a table's compactions read"),
    "casstrace_table_flushes_total": ("counter", "Memtable flushes of a table (the SSTables its flushes wrote)"),
    "casstrace_hints_bytes_total": (
        "counter",
        "Bytes of hints for a replica (by host ID) the node stored in its hints files, or read back to replay",
    ),
    "casstrace_table_write_amplification_ratio": (
        "gauge",
        "Bytes the node wrote to disk for a table (flushes and compactions) / the mutation bytes it received",
    ),
    "casstrace_watch_sample_ratio": ("gauge", "Share of requests the node traces during the watch"),
    "casstrace_watch_duration_seconds": ("gauge", "Seconds watched so far"),
    **WRITE_HELP,
    **MEASURE_HELP,
}


def _series(name: str) -> tuple[str, ...]:
    """A family's series names: a summary's `_sum` and `_count` beside its quantiles."""
    return (name, f"{name}_sum", f"{name}_count") if HELP[name][0] == "summary" else (name,)


class Exposition:
    """The metrics page of one watch, refreshed with each new figure of it (not thread-safe: one writer)."""

    def __init__(self, top: int):
        self.top = top
        self.labelled: set[str] = set()  # statements with a label of their own, for good
        self.highest: dict[tuple[str, Labels], float] = {}  # counter series -> the most it has reported

    def page(self, watch: Watch, tables: list[TableRead]) -> str:
        for statement in watch.statements[: self.top]:
            if len(self.labelled) < self.top:
                self.labelled.add(statement.statement)
        samples: dict[str, list[tuple[Labels, float]]] = {series: [] for name in HELP for series in _series(name)}
        grouped: dict[str, list[StatementIO]] = {}
        for statement in watch.statements:
            grouped.setdefault(statement.statement if statement.statement in self.labelled else OTHER, []).append(
                statement
            )
        for label, statements in sorted(grouped.items()):
            self._statement(samples, label, statements)
        for table in tables:
            for measure, value in zip(
                READ_MEASURES, (table.data_read_bytes, table.syscall_bytes, table.cache_miss_bytes)
            ):
                samples["casstrace_table_read_bytes_total"].append(
                    ((("table", table.table), ("component", table.component), ("measure", measure)), value)
                )
        for written in watch.table_writes:
            self._table_writes(samples, written)
        for hinted in watch.hints:
            for direction, size in (("stored", hinted.stored_bytes), ("replayed", hinted.replayed_bytes)):
                samples["casstrace_hints_bytes_total"].append(
                    ((("host_id", hinted.host_id), ("direction", direction)), size)
                )
        samples["casstrace_sessions_sampled_total"].append(((), sum(s.sampled_executions for s in watch.statements)))
        samples["casstrace_watch_sample_ratio"].append(((), watch.probability))
        samples["casstrace_watch_duration_seconds"].append(((), watch.duration_s))
        return "".join(self._family(name, samples) for name in HELP)

    def _statement(
        self, samples: dict[str, list[tuple[Labels, float]]], label: str, statements: list[StatementIO]
    ) -> None:
        by_component: dict[tuple[str, str], list[float]] = {}
        for statement in statements:
            count = statement.sampled_executions
            for read in statement.components:
                figures = by_component.setdefault((read.table, read.component), [0.0, 0.0, 0.0])
                for index, per_execution in enumerate(
                    (read.bytes_per_execution, read.syscall_bytes_per_execution, read.cache_miss_bytes_per_execution)
                ):
                    figures[index] += per_execution * count
        for (table, component), figures in sorted(by_component.items()):
            for measure, value in zip(READ_MEASURES, figures):
                samples["casstrace_statement_read_bytes_total"].append(
                    ((("statement", label), ("table", table), ("component", component), ("measure", measure)), value)
                )
        sampled = sum(s.sampled_executions for s in statements)
        for kind, value in (
            ("sampled", float(sampled)),
            ("estimated", sum(s.estimated_executions for s in statements)),
        ):
            samples["casstrace_statement_executions_total"].append(((("statement", label), ("kind", kind)), value))
        if sampled:
            per_execution = sum(s.sstable_read_bytes_per_execution * s.sampled_executions for s in statements) / sampled
            samples["casstrace_statement_read_bytes_per_execution"].append(((("statement", label),), per_execution))
        if label != OTHER:  # a label of its own: one statement
            (statement,) = statements
            for pauses, p99 in (
                ("included", statement.latency_p99_s),
                (
                    "excluded",
                    statement.latency_p99_without_pauses_s if statement.paused_executions is not None else None,
                ),
            ):
                if p99 is not None:
                    samples["casstrace_statement_latency_p99_seconds"].append(
                        ((("statement", label), ("pauses", pauses)), p99)
                    )
        write_samples(samples, label, statements)
        measure_samples(samples, label, statements, quantiles=label != OTHER)
        if label != OTHER and statements[0].necessary_bytes_per_execution:  # a label of its own: one statement
            samples["casstrace_statement_amplification_ratio"].append(
                (
                    (("statement", label),),
                    statements[0].data_read_bytes_per_execution / statements[0].necessary_bytes_per_execution,
                )
            )

    @staticmethod
    def _table_writes(samples: dict[str, list[tuple[Labels, float]]], written: TableWrites) -> None:
        """A table's write figures, those measured (a figure not measured has no series)."""
        table = (("table", written.table),)
        for by, size in (("flush", written.flush_bytes), ("compaction", written.compaction_written_bytes)):
            if size is not None:
                samples["casstrace_table_write_bytes_total"].append(((*table, ("by", by)), size))
        if written.compaction_read_bytes is not None:
            samples["casstrace_table_compaction_read_bytes_total"].append((table, written.compaction_read_bytes))
        if written.flushes is not None:
            samples["casstrace_table_flushes_total"].append((table, written.flushes))
        if written.write_amplification is not None:
            samples["casstrace_table_write_amplification_ratio"].append((table, written.write_amplification))

    def _family(self, name: str, samples: dict[str, list[tuple[Labels, float]]]) -> str:
        kind, text = HELP[name]
        lines = [f"# HELP {name} {text}\n", f"# TYPE {name} {kind}\n"]
        for series_name in _series(name):
            for labels, value in samples[series_name]:
                # never down: a figure recomputed a little lower keeps its highest (a summary's sum and count too)
                if kind == "counter" or series_name != name:
                    key = (series_name, labels)
                    value = self.highest[key] = max(value, self.highest.get(key, 0.0))
                rendered = ",".join(f'{key}="{_escape(text)}"' for key, text in labels)
                line = f"{series_name}{{{rendered}}}" if labels else series_name
                lines.append(f"{line} {_number(value)}\n")
        return "".join(lines)


def _escape(value: str) -> str:
    """A label value: its control and format characters shown as escapes (a dashboard shows the label
    as it is), then the exposition's own escaping of backslashes and quotes (printable left no newline)."""
    return printable(value).replace("\\", "\\\\").replace('"', '\\"')


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))
