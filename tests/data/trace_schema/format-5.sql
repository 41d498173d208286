-- sqlite_master of an empty trace (format 5) written by casstrace at commit eb7c9478b2d50cc8871c0f9b4e2c9d8c94bd73eb,
-- before the tables were declared in traces/tables.py: what tests/unit/test_trace_tables.py holds the
-- generated schema to. One statement per entry, in sqlite_master's order.

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL                 -- JSON
);

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
    -- format 5, the write path (NULL: not measured). Pages of the file dirtied in the page cache by
    -- the process's threads: by write syscalls and by stores into shared mappings of it (a mapped
    -- commit log); of which outside any syscall (stores into a mapping).
    dirtied_pages            INTEGER,
    mapped_dirtied_pages     INTEGER,
    written_back_bytes       INTEGER,                     -- bytes the kernel wrote from the page cache to the
                                                          -- device for the file, by any thread (background
                                                          -- writeback, or a sync)
    sync_calls               INTEGER,                     -- fsync, fdatasync, msync, sync_file_range on the file
    sync_ns                  INTEGER,                     -- their summed latency (msync's file: the mapping's)
    PRIMARY KEY (window_id, file_id)
);

CREATE TABLE read_sizes (
    window_id INTEGER NOT NULL,
    file_id   INTEGER NOT NULL,
    log2_bucket INTEGER NOT NULL,
    count     INTEGER NOT NULL,
    PRIMARY KEY (window_id, file_id, log2_bucket)
);

CREATE TABLE coverage (
    window_id  INTEGER NOT NULL,
    file_id    INTEGER NOT NULL,
    source     TEXT NOT NULL,
    first_page INTEGER NOT NULL,
    page_count INTEGER NOT NULL
);

CREATE TABLE heatmap (
    file_id       INTEGER NOT NULL,
    source        TEXT NOT NULL,
    slot          INTEGER NOT NULL,
    offset_bucket INTEGER NOT NULL,
    calls         INTEGER NOT NULL,
    bytes         INTEGER NOT NULL,
    PRIMARY KEY (file_id, source, slot, offset_bucket)
);

CREATE TABLE latency (
    slot    INTEGER NOT NULL,
    syscall TEXT NOT NULL,
    target  TEXT NOT NULL,
    bucket  INTEGER NOT NULL,
    count   INTEGER NOT NULL,
    node_id INTEGER,                    -- format 3: the node in a trace of several (NULL: the one process)
    PRIMARY KEY (slot, syscall, target, bucket, node_id)
);

CREATE TABLE sync_latency (
    window_id INTEGER NOT NULL REFERENCES windows(window_id),
    file_id   INTEGER NOT NULL REFERENCES files(file_id),
    syscall   TEXT NOT NULL,            -- 'fsync' | 'fdatasync' | 'msync' | 'sync_file_range'
    bucket    INTEGER NOT NULL,
    count     INTEGER NOT NULL,
    node_id   INTEGER,                  -- the node in a trace of several (NULL: the one process)
    PRIMARY KEY (window_id, file_id, syscall, bucket, node_id)
);

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

CREATE TABLE page_cache_fills (
    ts_ns   INTEGER NOT NULL,           -- the fill (the read's entry, for a read's fills)
    tid     INTEGER NOT NULL,
    file_id INTEGER NOT NULL REFERENCES files(file_id),
    pages   INTEGER NOT NULL,           -- 4 KiB pages
    syscall TEXT                        -- the syscall in flight; NULL: none (a fault)
);

CREATE TABLE mappings (
    file_id        INTEGER PRIMARY KEY REFERENCES files(file_id),
    mapped_bytes   INTEGER NOT NULL,    -- address space mapping the file
    resident_bytes INTEGER              -- of which in memory (NULL: unknown)
);

CREATE TABLE threads (
    tid     INTEGER NOT NULL,
    name    TEXT NOT NULL,
    node_id INTEGER                     -- format 3
);

CREATE UNIQUE INDEX threads_node_tid ON threads(ifnull(node_id, 0), tid);

CREATE TABLE stacks (
    stack_id INTEGER PRIMARY KEY,
    frames   TEXT NOT NULL
);

CREATE TABLE profile_samples (
    window_id INTEGER NOT NULL,
    tid       INTEGER NOT NULL,
    stack_id  INTEGER NOT NULL REFERENCES stacks(stack_id),
    state     TEXT,
    samples   INTEGER NOT NULL,
    node_id   INTEGER                   -- format 3: the node in a trace of several (NULL: the one process)
);

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

CREATE TABLE thread_io (
    tid              INTEGER NOT NULL,
    slot             INTEGER NOT NULL,  -- (ts - capture_start_ns) // thread_slot_ns
    file_id          INTEGER NOT NULL,
    read_calls       INTEGER NOT NULL,
    read_bytes       INTEGER NOT NULL,
    cache_miss_pages INTEGER NOT NULL,
    node_id          INTEGER,           -- later in format 4: the node in a trace of several (NULL: the one process)
    write_calls      INTEGER,           -- format 5: write syscalls (write, pwrite64, writev, pwritev*)
    write_bytes      INTEGER,           --   and the bytes they wrote
    dirtied_pages    INTEGER,           --   4 KiB pages of the file it dirtied in the page cache (syscalls and stores)
    mapped_dirtied_pages INTEGER,       --   of which outside any syscall: stores into a shared mapping
    PRIMARY KEY (tid, slot, file_id)
);

CREATE TABLE window_measures (
    node_id   INTEGER,                  -- the node in a trace of several (NULL: the one process, or the client)
    window_id INTEGER NOT NULL REFERENCES windows(window_id),
    measure   TEXT NOT NULL,            -- a name of casstrace.traces.measures.MEASURES
    value     NUMERIC NOT NULL          -- in the measure's unit ('ns', 'bytes', 'count')
);

CREATE TABLE thread_cpu (
    node_id  INTEGER,                   -- the node in a trace of several (NULL: the one process)
    tid      INTEGER NOT NULL,
    ts_ns    INTEGER NOT NULL,          -- the slot's start, on the trace's clock
    slot_ns  INTEGER NOT NULL,          -- the slot's width
    oncpu_ns INTEGER NOT NULL           -- the thread's time on a CPU within the slot
);

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
    execution       INTEGER,           -- later in format 3: the run's execution it traced (one session a page);
                                       -- NULL in a watch
    mutations       INTEGER,           -- later in format 5: 'Appending to commitlog' events, a mutation (one
                                       -- partition of one keyspace) applied on a node traced (NULL: none)
    commitlog_ns    INTEGER            -- from each of them to its thread's next event: the append, and the
                                       -- wait for the sync under commitlog_sync batch or group
);

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
