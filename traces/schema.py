"""The casstrace trace file: one SQLite database, metadata only (never row data, never credentials).

A trace is written by a capture backend (bcc probes, or a sysdig import) and read by the
analyses. Everything in it is what the kernel or the client measured; nothing is derived.

Conventions
- Timestamps are nanoseconds on one clock per trace, so windows, events and latency slots line up:
  CLOCK_MONOTONIC for bcc captures (what bpf_ktime_get_ns() returns), Unix time for sysdig imports.
  meta `clock_offset_ns` converts them to Unix time (0 for imports).
- A *window* is a stretch of the capture: the whole capture ('capture'), or one execution of
  the query ('warmup', 'execution', 'tracing'), or the gaps between them ('between'); in a
  `casstrace watch` trace, 'watch' is while the node traced (format 2). `watch --interval` writes a
  trace per interval: 'watch' is the interval, after a 'between' from the capture's start (its slots
  count from it); thread_io, the heat map and the spectrogram hold the interval's slots, the
  per-window aggregates are empty but in the last interval's trace (the capture's own: its whole).
  Every row of the per-window aggregates (file_io, read_sizes, coverage) belongs to exactly one
  window, and the windows of one trace never overlap, so summing over windows gives the capture's
  totals. The heat map and the latency spectrogram are kept by time slot instead (meta slot_ns).
- A *file* is anything the process had a descriptor on (file, socket, pipe, ...), or a file the
  page cache filled on its behalf (found by device and inode, e.g. through mmap).
- A measure that a backend does not take is absent, never zero: meta `measures` lists which were taken.
- Three measures say what a process read from a file: read syscalls (read_bytes), page-cache misses
  (cache_miss_*: pages the page cache filled for it) and, since format 2, mapped pages touched
  (mapped_touched_bytes: pages of its memory maps of the file it accessed, from the accessed bits of
  its page tables, which a warm mmap read sets without any syscall or page-cache event).

Tables: each is declared once in casstrace.traces.tables (its columns with their types, units and
meanings, its key, how a merge of several nodes combines it, the format that added it); SCHEMA below
is generated from those declarations.

Meta keys (values are JSON)
  format_version     int, FORMAT_VERSION
  casstrace_version  str
  complete           bool: false when the capture was interrupted or failed part-way
  incomplete_reason  str, present when complete is false
  backend            'bcc' | 'sysdig'
  capabilities       [str]: what that backend could do, casstrace.traces.capabilities.Capability's values
                     ('per_call_offsets', 'page_cache_fills', 'exact_totals', 'profile_join', 'follow_children',
                     'thread_io'). Later in format 3; a trace without it has those of its backend (LEGACY there)
  source             str: what was captured ('pid 1234', 'command ...', 'import of FILE.scap')
  measures           {"syscalls": bool, "offsets": bool, "page_cache": bool, "latency": bool, "wire": bool,
                      "mapped": bool, "mappings": bool, "call_fills": bool}   (format 2; absent: not measured).
                     mappings: the mappings table lists the process's mapped files (empty: it mapped none);
                     call_fills: events.cache_miss_pages and page_cache_fills are measured.
                     Format 5: "dirtied" (file_io/thread_io dirtied_pages, mapped_dirtied_pages),
                     "written_back" (file_io.written_back_bytes), "syncs" (sync_calls, sync_ns, sync_latency);
                     "thread_cpu" (a watch: thread_cpu holds its request threads' CPU slots that its
                     sampled sessions' spans meet; an empty table is then none, not unmeasured)
  unlogged_fill_pages int: page-cache fill pages neither a logged read nor page_cache_fills holds (its log
                     was full); in file_io's totals (bcc, with measures.call_fills)
  mapped_unmeasured  {"reason": str, "fix": str}: why mapped pages touched were not measured, when the
                     backend tried (e.g. /proc/PID/clear_refs refused)
  cold               {"page_cache_dropped": bool, "mapped_bytes_paged_out": int}: a --cold run; the
                     second is the address space of the queried table's files pushed out of the
                     process before each execution (process_madvise MADV_PAGEOUT)
  hostname, kernel   str, null when unknown (an imported capture was taken elsewhere)
  pid                int, process        str (the traced process's comm / command line)
  capture_start_ns, capture_end_ns  int (on the trace's clock)
  clock_offset_ns    int: add to a monotonic timestamp to get Unix time in ns
  slot_ns            int: width of a latency/heat-map time slot (slot 0 starts at capture_start_ns)
  heatmap_offset_bytes int: height of one heat-map offset bucket
  lost_events        int: events the kernel could not hand to us (ring/perf buffer full). Aggregates
                     are kept in the kernel and lose nothing; this counts per-event records only.
  unstreamed_events  int: per-event records deliberately not streamed (rate cap); aggregates still count them
  aggregate_overflows int: aggregate updates refused because a kernel map was full (0 when all are exact)
  ended_early        str, present when the capture ended before it was stopped (e.g. the process exited)
  notes              [str]: what the backend wants a reader to know (e.g. how the process was chosen)
  sysdig_version     str: the sysdig that took a live capture (absent from imports: casstrace reads
                     the file itself)
  query              str, keyspace str, consistency str, page_size int (run only: rows per page, 0 one page);
                     query is the statement with each literal as ? (node.statements.normalize, an IN list
                     keeping one ? a value), as given with run --keep-literals (and in traces from before)
  paging             {"page_size": int, "chosen": bool (by casstrace, not --page-size), "page_bytes": int | null
                      (the budget it was chosen for), "sampled_row_bytes": int | null (the largest row of the
                      sample taken before the capture), "reason": str} (run only; casstrace.node.paging)
  whole_cells        {"rows": int, "payload_bytes": int, "failed": str (when it did)}: a query selecting an element
                      of a collection or a field of a UDT, its first rows with those columns whole, sampled before
                      the capture (run only; casstrace.node.cells; absent for other queries)
  write              {"kind": str (INSERT, UPDATE, DELETE, BEGIN [UNLOGGED|COUNTER] BATCH), "statements": int (rows
                      each execution writes), "bind_markers": int (values casstrace generated per execution, never
                      stored)}: a run of a write on casstrace's own sandbox (absent for a read)
  node               {"host": str, "port": int, "pid": int}
  client_addresses   ["ip:port"] (run, later in format 4): this client's ends of its connections to the node;
                     the node's sockets with these remote addresses carry the query's results (the wire bytes
                     of each execution are derived from them by the analyses, not stored)
  leaf_digest        str (run, later in format 4): 64 hex digits, a digest of the result's leaf values per row
                     key (casstrace.node.leaves: a UDT taken apart into its fields, clustering rows of (name,
                     value) as one row), from the tracing execution: `compare` tells two traces return the same
                     data in another shape by it. A digest only, never the values; absent: not taken
  cassandra          {"release_version": str, "disk_access_mode": str, "data_file_directories": [str],
                      "compressed_read_ahead_bytes": int (5.0+'s compressed_read_ahead_buffer_size: a range
                      read of compressed SSTables reads this much at a time; absent: no such setting),
                      "commitlog_sync": str ('periodic', 'batch', 'group'), "commitlog_disk_access_mode": str
                      (5.0+: 'legacy' for mapped segments, 'direct', ...) (later in format 5; absent: the node
                      did not say: before 4.0),
                      "tables": [{"keyspace", "table", "id", "columns": [{"name","type","kind"}],
                                  "partition_key": [str], "clustering": [str],
                                  "compression": {...}, "sstables": [{"path","size"}],
                                  "storage": [SSTableStorage],
                                  "indexes": [{"name", "target", "kind": "sai" | "legacy" | class}],
                                  "base_table": str (a materialized view's table)}]}
                     storage (casstrace.traces.storage; run and watch, read from each live SSTable's
                     CompressionInfo.db and Statistics.db at the start): per SSTable {"data_path",
                     "format", "data_bytes", "compression": {"compressor", "chunk_length", "data_length",
                     "chunks", "compressed_bytes"} (absent: not compressed), "stats": {"partitions",
                     "cells", "partition_bytes_p50", "partition_bytes_max", "cells_p50", "cells_max",
                     "ttl_max" (seconds)},
                     "index_bytes" (Index.db or Partitions.db), "row_index_bytes" (Rows.db)}: sizes and
                     counts only; any key may be missing (not recorded)
  query_trace        [{"session_id", "duration_us", "events": [{"activity","source_elapsed_us","thread","source"}]}]
                     source (format 3): the address of the node that recorded the event
                     (system_traces.events.source), so a reader can tell the coordinator's events from
                     each replica's; absent in older traces
  replicas           (run, format 3) how the nodes rows were chosen: {"keyspace": str | null,
                      "consistency": str, "routing": "token map" | "all nodes (no partition key)" |
                      "all nodes (...why the partition could not be told...)",
                      "partitions": int (partition keys the token map was asked about; 0 for all nodes),
                      "ssh": bool (remote replicas were captured over ssh)}
  thread_slot_ns     int: width of a thread_io time slot (slot 0 starts at capture_start_ns); watch, and
                     run when its backend counts per thread (later in format 3)
  watch              (casstrace watch) {"sample_probability": float, "previous_probability": float | null,
                      "probability_restored": bool | null, "duration_s": float,
                      "start_ns", "end_ns": int (when the node traced, on the trace's clock),
                      "thread_map": "jcmd" (thread names matched to tids by the JVM's own list),
                      later in format 5: "casstrace_addresses": ["ip:port"] (casstrace's own connections
                      to the node: not a client's), "own_sandbox": bool (a node `casstrace sandbox` started)}
  gc_pauses          (run, format 4) [{"window_id", "collector", "pause_ns", "overlap_ns", "end_ns",
                      "heap_before_bytes", "heap_after_bytes", "heap_bytes"}]: each GC pause that overlapped a
                     window (casstrace.node.gc_pauses)
  jvm_pauses         (watch, format 4) [{"kind": "gc" | "safepoint", "what", "start_ns", "end_ns"}]: the JVM's GC
                     and safepoint pauses during the watch (or the interval), from its own log; absent: not measured
  table_activity     (watch, format 4) {"tables": int (the schema's table count), "active": [{"table", "flushes",
                      "reads", "writes", "memtable_bytes"}]}: per table, its memtable flushes and local requests
                     during the watch (nodetool tablestats before and after); absent: not measured
  table_background   (watch, format 5) {"pending_compactions_start", "pending_compactions_end",
                      "pending_compactions_max", "received_bytes": {"ks.table": int}}: per table, its pending
                     compactions (nodetool compactionstats at the watch's start and end; max: of those readings)
                     and the mutation bytes of the memtables it flushed in the watch (their serialized bytes, as
                     the node's log says); a key absent: not measured
  profile            present when the run was profiled (run --profile; format 2):
                     {"profiler": str ('async-profiler 4.1'), "read_method": str (the Java method whose every
                      call was recorded with its stack), "wall_interval_ns": int, "window_ids": [int] (the
                      windows the profiler was active in), "read_calls": int, "read_bytes": int (logged read
                      calls on files in those windows), "joined_calls": int, "joined_bytes": int (of which
                      joined with a Java stack), "samples": int (recorded stacks of the read method),
                      "fill_join_ns": int (a fill no read holds takes the stack of its thread's wall-clock
                      sample nearest in time when one is this near; absent: fills not put on stacks),
                      "fill_pages": int (fill pages in those windows: in logged reads + page_cache_fills),
                      "joined_fill_pages": int (in reads joined with a stack), "sampled_fill_pages": int
                      (fills no read holds, put on a wall-clock sample's stack)}

Several nodes (format 3)
- A `casstrace run` trace has a nodes row for every node it is about: the node the query went to
  (its coordinator) and every replica of the queried partition the driver's token map names (all
  nodes when the query names no partition), captured or not (captured = 0 with not_captured saying
  why). One node's JVM captured is the usual case; with several, every captured JVM had the same
  windows (the trace's windows table), and `files.node_id` says whose file each is: every per-file
  table (file_io, read_sizes, coverage, heatmap, events, page_cache_fills, mappings, profile_reads)
  is thereby per node. latency, threads, events, profile_samples and (format 4) window_measures and thread_io carry node_id
  themselves in a trace of several captured nodes (NULL when one was captured: the trace's one process). Imports
  and `capture` traces have no nodes rows, and files.node_id is NULL there.
- Clocks: every timestamp is on the trace's clock (that of the machine that ran `casstrace run`);
  a node's own timestamps were shifted by nodes.clock_shift_ns (0 on this machine; for a node
  reached over ssh, minus its clock's offset, measured by round trips as NTP does: the remote clock
  read against the midpoint of the shortest round trip). Latency and heat-map slots count from the
  trace's capture_start_ns; a node whose capture started at another moment has its slots moved by
  the nearest whole number of slots (within half a slot of the truth), thread_io's by whole thread slots.
- nodes.meta is that node's own capture meta, with the keys above (backend, source, pid, process,
  measures, hostname, kernel, lost_events, unstreamed_events, aggregate_overflows, ended_early,
  mapped_unmeasured, capture_start_ns / capture_end_ns and clock_offset_ns on its own clock, ...);
  `cassandra` {"data_file_directories", "tables": [{"keyspace", "table", "id", "sstables": [{"path",
  "size"}]}]}: that node's own files of the queried tables; for a node reached over ssh, `clock`
  {"offset_ns", "round_trip_ns"}: its clock's offset and the shortest round trip it was read in.
- Whole-trace meta of a trace of several captured nodes: lost_events, unstreamed_events,
  aggregate_overflows and unlogged_fill_pages are the sums over them; measures holds what every one of
  them measured (a measure some lack is false), capabilities those every one's backend had; pid,
  process, node and cassandra are those of the coordinator's node when it was captured, else of the
  first captured node; source names each node's pid and address.

Format history
  1  the first release.
  2  additive: tables stacks, profile_samples, profile_reads and meta `profile` (run --profile);
     tables thread_io, statement_sessions, session_threads and meta `thread_slot_ns`, `watch`
     (casstrace watch); file_io.mapped_touched_bytes and .mapped_huge_bytes, table mappings, meta
     measures.mapped and .mappings, mapped_unmeasured and cold (mapped pages touched, run --cold on
     mapped files). A version-1 trace reads as one without them ("not measured").
     Later in format 2: events.cache_miss_pages, table page_cache_fills, meta measures.call_fills and
     unlogged_fill_pages (page-cache fills per read call and per fault); profile_reads.fill_bytes and
     .fault_fill_bytes, meta profile.fill_join_ns, .fill_pages, .joined_fill_pages, .sampled_fill_pages
     (fill bytes on Java stacks). A trace without them reads as one that did not measure them.
  3  additive: table nodes; files.node_id; node_id in latency, threads, events, profile_samples;
     executions.coordinator; query_trace events' source; meta replicas (several nodes, above).
     The threads table's key became (node_id, tid). Older traces read as one node with no nodes rows.
     Later in format 3: meta capabilities (what the backend could do; before, its name said it);
     meta cassandra.tables[].storage (the SSTables' chunks and statistics, for the
     necessary read) and cassandra.compressed_read_ahead_bytes; a trace without them takes a
     compressed chunk at its full length, and no read-ahead.
     Later in format 3: a run traces each measured execution (statement_sessions.execution,
     session_threads, threads) and counts thread_io, so each execution is charged its own threads'
     reads (analyses.attribution); executions.other_requests. A trace without them charges an
     execution every read of its window.
  4  additive: table window_measures, one number per node, window and registered measure (the node's
     CPU time in an execution, ...; casstrace.traces.measures lists them). A format-3 trace reads as
     one that took none of them.
     Later in format 4: cassandra.tables[].indexes and .base_table, and storage stats.ttl_max; a
     trace without them models no index and no TTL.
     Later in format 4: table thread_cpu (the JVM's threads' on-CPU time per 1 ms slot in the measured
     executions' windows), from which the analyses take the CPU of the threads that served each
     execution; a trace without it has no such figure.
     Later in format 4: thread_io.node_id, session_threads.source and .node_id: a run of several nodes
     traces each execution and counts every node's threads, so each replica is charged only its own
     threads' reads while they served it; a span of another node's events is no local thread's. A
     trace without them has one node's threads.
  5  additive: the write path. file_io.dirtied_pages, .mapped_dirtied_pages, .written_back_bytes,
     .sync_calls, .sync_ns; thread_io.write_calls, .write_bytes, .dirtied_pages, .mapped_dirtied_pages;
     table sync_latency (per file, the latency of fsync, fdatasync, msync and sync_file_range). A
     format-4 trace reads as one that measured none of them (NULL / absent, never 0).
     Later in format 5: statement_sessions.mutations and .commitlog_ns (a write's mutations and its
     time in the commit log, from its trace events); a trace without them did not count them.
"""

import bisect
import functools

from casstrace.traces.tables import index_sql, schema_sql

FORMAT_VERSION = 5
READABLE_FORMAT_VERSIONS = (1, 2, 3, 4, 5)  # every older format stays readable: changes are additive
THREAD_SLOT_NS = 1_000_000  # thread_io slot: Cassandra's trace events are ~1 ms apart at best

# Units the format fixes, shared by every backend and the analyses.
PAGE_BYTES = 4096  # a memory page (page cache, maps): coverage rows count them (a CQL page: node/paging.py)
HUGE_PAGE_BYTES = 2 << 20  # a PMD mapping: one accessed bit for 2 MiB (mapped_huge_bytes)
SLOT_NS = 100_000_000  # time slot of the heat map and spectrogram (meta slot_ns records it)
HEATMAP_OFFSET_BYTES = 1 << 20  # heat-map offset bucket (meta heatmap_offset_bytes records it)
LATENCY_BUCKETS_PER_DECADE = 10  # latency bucket b holds [10^(b/10), 10^((b+1)/10)) ns
LATENCY_BUCKETS = 200  # bucket 199 starts near 10^19.9 ns: beyond any 64-bit latency


def _root_ceil(value: int, n: int) -> int:
    """The least integer x with x**n >= value, by integer Newton steps from just above the float
    estimate: exact, and a handful of steps where counting up from the estimate took thousands."""
    x = int(value ** (1.0 / n) * (1 + 1e-12)) + 1  # never below the true root
    while True:
        below = ((n - 1) * x + value // x ** (n - 1)) // n
        if below >= x:
            break
        x = below
    return x if x**n >= value else x + 1  # x is now the floor of the root


@functools.cache
def latency_bucket_starts() -> tuple[int, ...]:
    """The first latency (ns) of each bucket: the least ns with ns^10 >= 10^b. Integer arithmetic
    keeps every boundary exact, where floor(10 * log10(ns)) drifts at large values."""
    return tuple(_root_ceil(10**b, LATENCY_BUCKETS_PER_DECADE) for b in range(LATENCY_BUCKETS))


def latency_bucket(ns: int) -> int:
    """The latency table's bucket of a latency: b with 10^(b/10) <= ns < 10^((b+1)/10); 0 for 0 ns."""
    return max(0, bisect.bisect_right(latency_bucket_starts(), ns) - 1)


# The tables (and the indexes inserts rely on), from their declarations (casstrace.traces.tables).
SCHEMA = schema_sql(FORMAT_VERSION)
# Built once the rows are in (TraceWriter.finish): bulk inserts into an indexed table cost more
# than building the index afterwards.
INDEXES = index_sql()
