-- The schema of trace format 4 in its last state: traces/schema.py's SCHEMA and INDEXES at commit
-- fe1fc42424c62b27ee549113d883c67b094c8a26, the last before format 5.

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL                 -- JSON
);

-- format 3: the Cassandra nodes of a `casstrace run` trace (one row each; none in imports and
-- `capture` traces): the node(s) whose JVM was captured, and the replicas of the queried partition
-- that were not, with why. A node's own capture meta is kept whole in its `meta`.
CREATE TABLE nodes (
    node_id        INTEGER PRIMARY KEY,   -- 1, 2, ...
    address        TEXT NOT NULL,         -- the node's address as the driver's token map names it ('127.0.0.2')
    host           TEXT,                  -- how it was reached: NULL on this machine, else the ssh destination
    datacenter     TEXT,
    rack           TEXT,
    replica        INTEGER NOT NULL,      -- 1 when it holds a replica of the queried partition (token map)
    captured       INTEGER NOT NULL,      -- 1 when its JVM was captured on the trace's windows
    not_captured   TEXT,                  -- why not, when captured = 0 ('down: ...', 'no JVM on this machine; give --ssh', 'ssh: ...')
    pid            INTEGER,
    clock_shift_ns INTEGER,               -- added to the node's own timestamps to put them on the trace's clock
    meta           TEXT                   -- JSON: that node's own capture meta (see "Several nodes" above)
);

CREATE TABLE files (
    file_id     INTEGER PRIMARY KEY,
    path        TEXT NOT NULL,          -- absolute path; sockets 'tcp 127.0.0.1:9042->127.0.0.1:50412'
    kind        TEXT NOT NULL,          -- 'file' | 'socket' | 'pipe' | 'other' | 'unknown'
    size_bytes  INTEGER,                -- size at the end of the capture, NULL when unknown
    dev         INTEGER,                -- st_dev as userspace sees it (os.makedev), NULL when unknown
    inode       INTEGER,
    local_addr  TEXT,                   -- sockets only: 'ip:port'
    remote_addr TEXT,
    node_id     INTEGER REFERENCES nodes(node_id)   -- format 3: the node whose JVM had the file (NULL: no nodes rows)
);

CREATE TABLE windows (
    window_id  INTEGER PRIMARY KEY,
    label      TEXT NOT NULL,           -- 'capture' | 'warmup' | 'execution' | 'tracing' | 'between' | 'watch'
    execution  INTEGER,                 -- executions.execution for warmup/execution/tracing windows
    start_ns   INTEGER NOT NULL,
    end_ns     INTEGER NOT NULL
);

-- Exact per-window, per-file totals (bcc: counted in the kernel, or added up from the per-call log
-- for the calls it holds; nothing is lost either way).
CREATE TABLE file_io (
    window_id                INTEGER NOT NULL REFERENCES windows(window_id),
    file_id                  INTEGER NOT NULL REFERENCES files(file_id),
    read_calls               INTEGER NOT NULL DEFAULT 0,  -- read, pread64, readv, preadv, preadv2, recv*
    read_bytes               INTEGER NOT NULL DEFAULT 0,  -- bytes the calls returned
    read_requested_bytes     INTEGER NOT NULL DEFAULT 0,  -- bytes the calls asked for
    read_ns                  INTEGER,                     -- summed latency, NULL when not measured
    write_calls              INTEGER NOT NULL DEFAULT 0,  -- write, pwrite64, writev, pwritev*, send*
    write_bytes              INTEGER NOT NULL DEFAULT 0,
    lseek_calls              INTEGER NOT NULL DEFAULT 0,
    seek_jumps               INTEGER NOT NULL DEFAULT 0,  -- reads that did not start where the previous one on the file ended
    longest_sequential_bytes INTEGER NOT NULL DEFAULT 0,  -- longest run of back-to-back reads
    cache_miss_pages         INTEGER,                     -- pages the page cache filled for this process (NULL: not measured)
    cache_miss_bytes         INTEGER,
    -- format 2: mapped pages of the file the process accessed in the window (NULL: not measured, or
    -- the file was not mapped). Granularity is the mapping's: 4 KiB pages, but a whole 2 MiB for a part
    -- mapped by one huge (PMD) entry, which the next column measures.
    mapped_touched_bytes     INTEGER,
    mapped_huge_bytes        INTEGER,                     -- of the file's mapping, bytes mapped by 2 MiB entries at the window's end
    PRIMARY KEY (window_id, file_id)
);

-- Read size distribution: bucket b holds reads returning [2^b, 2^(b+1)) bytes; b = -1 for 0 bytes.
CREATE TABLE read_sizes (
    window_id INTEGER NOT NULL,
    file_id   INTEGER NOT NULL,
    log2_bucket INTEGER NOT NULL,
    count     INTEGER NOT NULL,
    PRIMARY KEY (window_id, file_id, log2_bucket)
);

-- Which 4 KiB pages of a file were touched, as runs [first_page, first_page + page_count).
-- source 'syscall': bytes returned by read syscalls; 'page_cache': pages inserted into the page cache.
CREATE TABLE coverage (
    window_id  INTEGER NOT NULL,
    file_id    INTEGER NOT NULL,
    source     TEXT NOT NULL,
    first_page INTEGER NOT NULL,
    page_count INTEGER NOT NULL
);

-- Offset-by-time heat map of reads: slot = (ts - capture_start_ns) // slot_ns,
-- offset_bucket = offset // heatmap_offset_bytes. source as in coverage.
CREATE TABLE heatmap (
    file_id       INTEGER NOT NULL,
    source        TEXT NOT NULL,
    slot          INTEGER NOT NULL,
    offset_bucket INTEGER NOT NULL,
    calls         INTEGER NOT NULL,
    bytes         INTEGER NOT NULL,
    PRIMARY KEY (file_id, source, slot, offset_bucket)
);

-- Syscall latency spectrogram, aggregated in the kernel.
-- bucket b counts syscalls whose latency lies in [10^(b/10), 10^((b+1)/10)) ns (10 buckets a decade).
-- target: what the syscall's fd was: 'file' | 'socket' | 'other' | 'none' (no fd argument).
CREATE TABLE latency (
    slot    INTEGER NOT NULL,
    syscall TEXT NOT NULL,
    target  TEXT NOT NULL,
    bucket  INTEGER NOT NULL,
    count   INTEGER NOT NULL,
    node_id INTEGER,                    -- format 3: the node in a trace of several (NULL: the one process)
    PRIMARY KEY (slot, syscall, target, bucket, node_id)
);

-- Per-call records of reads and lseeks on files, streamed as far as they stay cheap
-- (meta unstreamed_events / lost_events count the rest).
CREATE TABLE events (
    ts_ns      INTEGER NOT NULL,        -- syscall entry
    tid        INTEGER NOT NULL,
    syscall    TEXT NOT NULL,           -- 'read' | 'pread64' | 'readv' | 'preadv' | 'preadv2' | 'lseek' | ...
    fd         INTEGER,
    file_id    INTEGER,
    offset     INTEGER,                 -- reads: file offset read from (NULL when unknown); lseek: the offset argument
    requested  INTEGER,                 -- reads: bytes asked for; lseek: whence
    returned   INTEGER,                 -- reads: bytes returned (negative errno); lseek: resulting position
    latency_ns INTEGER,                 -- NULL when not measured
    -- format 2 (meta measures.call_fills): reads: pages the page cache filled of the file read while the
    -- call ran (its misses and their readahead), counted in the reading thread; NULL: not measured, lseek
    cache_miss_pages INTEGER,
    node_id    INTEGER                  -- format 3: the node in a trace of several (NULL: the one process)
);

-- format 2 (meta measures.call_fills): page-cache fills no logged read holds, each with the thread that
-- caused it: faults on mapped files (syscall NULL), fills inside other syscalls, fills of another file
-- inside a read, fills of reads the per-call log had no room for. Per file, events.cache_miss_pages + these
-- pages + meta unlogged_fill_pages (the whole capture's) = file_io.cache_miss_pages (per window too, but for
-- a read that straddles a window's edge: its fills go by its entry).
CREATE TABLE page_cache_fills (
    ts_ns   INTEGER NOT NULL,           -- the fill (the read's entry, for a read's fills)
    tid     INTEGER NOT NULL,
    file_id INTEGER NOT NULL REFERENCES files(file_id),
    pages   INTEGER NOT NULL,           -- 4 KiB pages
    syscall TEXT                        -- the syscall in flight; NULL: none (a fault)
);

-- format 2: the files the process had mapped when the capture ended, whether or not a measure saw
-- them read (a warm mmap read is invisible to syscalls and the page cache).
CREATE TABLE mappings (
    file_id        INTEGER PRIMARY KEY REFERENCES files(file_id),
    mapped_bytes   INTEGER NOT NULL,    -- address space mapping the file
    resident_bytes INTEGER              -- of which in memory (NULL: unknown)
);

-- A thread id names one thread per node: (node_id, tid) is unique (node_id NULL: the one process).
CREATE TABLE threads (
    tid     INTEGER NOT NULL,
    name    TEXT NOT NULL,
    node_id INTEGER                     -- format 3
);
CREATE UNIQUE INDEX threads_node_tid ON threads(ifnull(node_id, 0), tid);

-- Java stacks (async-profiler, run --profile): frame names, root first, as a JSON array. Frames
-- only (class and method names, native symbols): never arguments or values.
CREATE TABLE stacks (
    stack_id INTEGER PRIMARY KEY,
    frames   TEXT NOT NULL
);

-- Wall-clock samples of the JVM's threads while the profiler was active, per window, thread, stack
-- and the thread's state when sampled ('STATE_RUNNABLE': on a CPU or waiting for one).
CREATE TABLE profile_samples (
    window_id INTEGER NOT NULL,
    tid       INTEGER NOT NULL,
    stack_id  INTEGER NOT NULL REFERENCES stacks(stack_id),
    state     TEXT,
    samples   INTEGER NOT NULL,
    node_id   INTEGER                   -- format 3: the node in a trace of several (NULL: the one process)
);

-- Read calls (the per-call log, events) joined with the Java stack that made each of them
-- (meta profile.read_method): calls and bytes returned, per window, file and stack.
CREATE TABLE profile_reads (
    window_id INTEGER NOT NULL,
    file_id   INTEGER NOT NULL REFERENCES files(file_id),
    stack_id  INTEGER NOT NULL REFERENCES stacks(stack_id),
    calls     INTEGER NOT NULL,
    bytes     INTEGER NOT NULL,
    -- format 2 (meta profile.fill_join_ns present; NULL before): page-cache fill bytes of the file put on
    -- this stack: inside those read calls (events.cache_miss_pages, exact), and fills no read holds
    -- (page_cache_fills: faults on mapped files) by the same thread's wall-clock sample nearest in time,
    -- within profile.fill_join_ns (a sample, not the fault's own stack)
    fill_bytes       INTEGER,
    fault_fill_bytes INTEGER,
    PRIMARY KEY (window_id, file_id, stack_id)
);

CREATE TABLE executions (
    execution     INTEGER PRIMARY KEY,  -- 1, 2, ... in the order they ran
    kind          TEXT NOT NULL,        -- 'warmup' | 'measured' | 'tracing'
    window_id     INTEGER REFERENCES windows(window_id),
    latency_s     REAL,                 -- wall time seen by the client, all pages fetched
    rows          INTEGER,
    payload_bytes INTEGER,              -- serialized size of the returned values
    wire_bytes    INTEGER,              -- before meta client_addresses: bytes the node wrote to the client
                                        -- connection in its window (NULL since: derived, not stored)
    client_file_id INTEGER,             -- before meta client_addresses: files.file_id of the node's side of
                                        -- the client connection (NULL since)
    pages         INTEGER,
    error         TEXT,
    coordinator   TEXT,                 -- format 3: address of the node that coordinated it (the driver's
                                        -- response future), NULL when unknown (format < 3, failed early)
    other_requests INTEGER              -- later in format 3: requests of the node's other client connections
                                        -- around its window (system_views.clients request_count, read
                                        -- before and after it); NULL: not measured
);

-- File bytes per thread and time slot (meta thread_slot_ns), counted in the kernel: syscall reads
-- by the thread that made them, page-cache fills by the thread that caused them (its reads, their
-- readahead, its faults on mapped files). Mapped pages read while already cached are in neither.
CREATE TABLE thread_io (
    tid              INTEGER NOT NULL,
    slot             INTEGER NOT NULL,  -- (ts - capture_start_ns) // thread_slot_ns
    file_id          INTEGER NOT NULL,
    read_calls       INTEGER NOT NULL,
    read_bytes       INTEGER NOT NULL,
    cache_miss_pages INTEGER NOT NULL,
    node_id          INTEGER,           -- later in format 4: the node in a trace of several (NULL: the one process)
    PRIMARY KEY (tid, slot, file_id)
);

-- format 4: per-window measures taken beside the backend by window sources, one number per node,
-- window and measure; casstrace.traces.measures registers each measure with its unit, its merge rule
-- (how several rows of one window combine) and its label. A measure not taken has no rows, never 0.
CREATE TABLE window_measures (
    node_id   INTEGER,                  -- the node in a trace of several (NULL: the one process, or the client)
    window_id INTEGER NOT NULL REFERENCES windows(window_id),
    measure   TEXT NOT NULL,            -- a name of casstrace.traces.measures.MEASURES
    value     NUMERIC NOT NULL          -- in the measure's unit ('ns', 'bytes', 'count')
);

-- later in format 4: on-CPU time of each thread of the captured JVM per time slot, in the measured
-- executions' windows only, from the scheduler's switches (each slice cut at the slots' edges): what the
-- threads that served an execution (session_threads) ran while they served it (casstrace.analyses.attribution).
CREATE TABLE thread_cpu (
    node_id  INTEGER,                   -- the node in a trace of several (NULL: the one process)
    tid      INTEGER NOT NULL,
    ts_ns    INTEGER NOT NULL,          -- the slot's start, on the trace's clock
    slot_ns  INTEGER NOT NULL,          -- the slot's width
    oncpu_ns INTEGER NOT NULL           -- the thread's time on a CPU within the slot
);

-- Requests Cassandra traced during a watch (its probabilistic tracing), or a run's measured executions
-- (each traced): the statement normalized (every literal as ?), never its values. Times on the trace's clock.
CREATE TABLE statement_sessions (
    session         INTEGER PRIMARY KEY,
    session_id      TEXT NOT NULL,     -- system_traces.sessions.session_id (expires with the node's TTL)
    statement       TEXT NOT NULL,
    consistency     TEXT,
    client          TEXT,              -- the client's address
    started_ns      INTEGER NOT NULL,
    duration_ns     INTEGER,
    live_rows       INTEGER,           -- from the events: 'Read N live rows and M tombstone cells' (NULL: none)
    tombstone_cells INTEGER,
    sstables_merged INTEGER,           -- 'Merged data from memtables and N sstables', the most of one read
    execution       INTEGER            -- later in format 3: the run's execution it traced (one session a page);
                                       -- NULL in a watch
);

-- Where each session's events ran: one row per (session, thread) of each captured node, first to last event
-- (a replica not captured has none).
CREATE TABLE session_threads (
    session  INTEGER NOT NULL REFERENCES statement_sessions(session),
    thread   TEXT NOT NULL,            -- the JVM's thread name, as the events give it
    tid      INTEGER,                  -- its Linux thread id, NULL when no thread of that name was found
    first_ns INTEGER NOT NULL,
    last_ns  INTEGER NOT NULL,
    events   INTEGER NOT NULL,
    source   TEXT,                     -- later in format 4: the address of the node whose thread it is
                                       -- (system_traces.events.source); NULL: not recorded
    node_id  INTEGER                   -- later in format 4: the captured node of that address in a trace of
                                       -- several (NULL: the one process)
);

CREATE INDEX files_path ON files(path);
CREATE INDEX coverage_file ON coverage(file_id, source);
CREATE INDEX events_file_ts ON events(file_id, ts_ns);
