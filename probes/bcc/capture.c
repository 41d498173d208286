// casstrace capture program (bcc). Watches every thread of one process (TGID) through
// tracepoints only (the syscalls it handles through their own tracepoints, or raw_syscalls' pair
// attached raw with ALL_SYSCALLS; the others through perf), and never reads a
// kernel-internal struct: everything comes from tracepoint fields and arguments, from the
// registers a system call was made with (the x86-64 syscall ABI, as ptrace shows them) and from
// the syscall arguments in the process's own memory.
//
// Userspace (bcc_capture.py) passes these macros: SLOT_NS, HEATMAP_BYTES, EVENT_CAPACITY,
// FILL_CAPACITY, MAP_ENTRIES, REGION_ENTRIES, HAS_FOLIO_ORDER, FOLLOW_CHILDREN, THREAD_SLOT_NS, ALL_SYSCALLS,
// LOGGED_CALLS_IN_MAPS, NR_<syscall>
// numbers, and the codes and records of program.py. The process is not among them: its TGID is
// written into control[CONTROL_TGID] when the capture starts, so that the program (seconds of
// compiling) can be built while casstrace still connects and looks for the process.
//
// THREAD_SLOT_NS > 0 (`casstrace watch`) also counts file bytes per (thread, time slot of that
// width, file): what Cassandra's trace events, which name a thread and a time, are joined with.
// With 0 (the default) the program compiles to exactly what it was without it.
//
// FOLLOW_CHILDREN 1 also watches every process the captured one forks after attach, at any depth,
// and their threads. fd numbers are per process, so fd state and fd-keyed aggregates then carry the owning
// process (OWNER), and records and notices say which process they are from. With 0 (the default,
// --pid and `casstrace run`) the owner is a constant 0 and the program compiles to exactly the
// instructions it had before following existed: following costs nothing unless asked for.
//
// Aggregates are keyed by the window epoch that userspace writes into control[CONTROL_EPOCH]
// whenever a window begins, so nothing has to be read or reset mid-capture; epoch 0 means "not
// capturing". Userspace reads every map once, after the program stopped counting: detached, or idle
// (epoch and TGID 0) with every run of it ended, when it is kept attached for the next capture, which
// starts from emptied maps (bcc_capture.KeptProgram).

// The codes both sides use (KIND_*, TARGET_*, SYS_*, SOURCE_*, CONTROL_*, COUNT_*, COUNTERS, NOTICE_*)
// and the records userspace reads (struct event, struct notice, struct fill) are defined once, in program.py:
// bcc_capture.py passes the codes as macros and puts the generated structs in front of this text.

#define COVERAGE_WORDS_MAX 64       // 16 MiB per call; longer calls are counted as truncated
#define COVERAGE_REGION_WORDS 64    // words of page bits per coverage entry: 16 MiB of a file
#define HEAT_ROW_CELLS 16           // offset buckets per heat map entry
#define IOV_READ_MAX 16
#define READ_SIZE_BUCKETS 34        // index 0: 0 bytes; index b + 1: [2^b, 2^(b+1))

#define AT_FDCWD_ -100
#define EINPROGRESS_ 115
#define SOCKADDR_BYTES 28           // sockaddr_in6, the largest address connect/accept give here

#define CLONE_THREAD_ 0x00010000

BPF_ARRAY(control, u64, CONTROL_SLOTS);

// The process captured (an array lookup with a constant index: inlined by the verifier).
static __always_inline bool is_captured(u32 tgid) {
    u32 index = CONTROL_TGID;
    u64 *captured = control.lookup(&index);
    return captured && *captured == tgid;
}

#if FOLLOW_CHILDREN
// Descendants of the captured process being watched.
BPF_HASH(followed, u32, u8, FOLLOWED_ENTRIES);
static __always_inline bool watched(u32 tgid) {
    return is_captured(tgid) || followed.lookup(&tgid);
}
#define OWNER(tgid) (tgid)
#define FD_SLOT_TYPE u64
#define FD_SLOT(tgid, fd) (((u64)(tgid) << 32) | (u32)(fd))
#else
#define watched(tgid) is_captured(tgid)
#define OWNER(tgid) 0
#define FD_SLOT_TYPE u32
#define FD_SLOT(tgid, fd) ((u32)(fd))
#endif

BPF_ARRAY(counters, u64, COUNTERS);
BPF_ARRAY(syscall_flags, u8, 512);

// Latency buckets: 10 per decade of nanoseconds. For each power of two, the bucket of its lower
// bound and the latencies at which the next buckets start (userspace computes them exactly).
struct octave {
    u64 first_bucket;
    u64 limits[4];
};
BPF_ARRAY(octaves, struct octave, 64);

// The syscall a thread is in, from sys_enter to sys_exit.
struct call {
    u64 ts;            // 0 when no call is in flight
    u64 args[4];
    u32 nr;
    u32 epoch;
    // Page-cache fills while a read is in flight, of the first file it filled: the read's own
    // file, its readahead (struct event carries them, so each fill has the read's stack).
    u64 fill_inode;
    u32 fill_dev;
    u32 fill_pages;
};
BPF_TASK_STORAGE(calls, struct call);

// The call the thread is in, entered since this capture started; 0 when none. A program kept
// attached across captures (bcc_capture.KeptProgram) keeps each thread's storage from the capture
// before: a call entered then, still in flight, is none of this capture's, as it is none of a fresh
// program's, which never saw it enter.
static __always_inline struct call *call_in_flight(void) {
    struct call *c = calls.task_storage_get((void *)bpf_get_current_task_btf(), 0, 0);
    u32 index = CONTROL_START_NS;
    u64 *start = control.lookup(&index);
    return c && c->ts && start && c->ts >= *start ? c : 0;
}

// What the process's fd number currently refers to, and where its file position is.
struct fd_state {
    u32 gen;           // bumped each time the number is given to a new open file description
    u8 kind;
    u8 pos_known;
    u16 pad;
    s64 pos;
    s64 next_offset;   // where the previous read on this fd ended (-1: none yet)
    u64 run_bytes;     // bytes of the current run of back-to-back reads
    u32 run_epoch;
    u32 pad2;
};
BPF_HASH(fds, FD_SLOT_TYPE, struct fd_state, 65536);   // key: FD_SLOT(process, fd)

struct fd_key {
    u32 epoch;
    u32 fd;
    u32 gen;
    u32 owner;         // OWNER(process)
};
struct file_stats {
    u64 read_calls;
    u64 read_bytes;
    u64 read_requested;
    u64 read_ns;
    u64 write_calls;
    u64 write_bytes;
    u64 lseek_calls;
    u64 seek_jumps;
    u64 longest_run;
    u64 read_sizes[READ_SIZE_BUCKETS];
};
BPF_HASH(stats_by_fd, struct fd_key, struct file_stats, MAP_ENTRIES);
BPF_PERCPU_ARRAY(zero_stats, struct file_stats, 1);

// A file as the aggregates name it: (fd, OWNER << 32 | gen) for syscalls, (dev, inode) for the
// page cache.
struct file_ref {
    u32 source;
    u32 fd_or_dev;
    u64 gen_or_inode;
};

struct page_key {
    u32 epoch;
    u32 dev;
    u64 inode;
};
BPF_HASH(page_cache_pages, struct page_key, u64, MAP_ENTRIES);

// Bit p of word w of region r: page (r * COVERAGE_REGION_WORDS + w) * 64 + p was touched.
// Regions rather than single words keep the entries a scan or a random-read storm touches few,
// and so in the cache: a hash lookup that misses it costs more than the rest of the update.
struct coverage_key {
    struct file_ref file;
    u32 epoch;
    u32 pad;
    u64 region;
};
struct coverage_region {
    u64 words[COVERAGE_REGION_WORDS];
};
BPF_HASH(coverage, struct coverage_key, struct coverage_region, REGION_ENTRIES);
BPF_PERCPU_ARRAY(zero_region, struct coverage_region, 1);

// Cell c of a row: offset bucket row * HEAT_ROW_CELLS + c, in one time slot (rows for the same
// reason as coverage regions).
struct heat_key {
    struct file_ref file;
    u32 slot;
    u32 row;
};
struct heat_cell {
    u64 calls;
    u64 bytes;
};
struct heat_row {
    struct heat_cell cells[HEAT_ROW_CELLS];
};
BPF_HASH(heatmap, struct heat_key, struct heat_row, REGION_ENTRIES);
BPF_PERCPU_ARRAY(zero_heat_row, struct heat_row, 1);

struct latency_key {
    u32 slot;
    u16 nr;
    u8 target;
    u8 bucket;
};
BPF_HASH(latency_hist, struct latency_key, u64, MAP_ENTRIES);

// The write path, per window and file (dev, inode): pages dirtied in the page cache by the process's
// threads, of which outside any syscall (stores into a shared mapping); pages written back to the
// device (in whatever thread: the flusher, or a sync); sync calls' latency.
struct dirtied {
    u64 pages;
    u64 mapped_pages;
};
BPF_HASH(dirtied_pages, struct page_key, struct dirtied, MAP_ENTRIES);
BPF_HASH(written_back, struct page_key, u64, MAP_ENTRIES);   // pages
// Inodes whose writeback counts: those the process dirtied, and its files open or mapped at the start
// (written by userspace). Writeback runs in kernel threads: no pid tells whose file it is.
BPF_HASH(written_inodes, u64, u8, MAP_ENTRIES);
struct sync_key {
    struct file_ref file;   // msync: (SOURCE_ADDRESS, 0, its address)
    u32 epoch;
    u16 nr;
    u16 bucket;
};
struct sync_stats {
    u64 calls;
    u64 ns;
};
BPF_HASH(sync_latency, struct sync_key, struct sync_stats, MAP_ENTRIES);

#if THREAD_SLOT_NS
// File bytes by the thread that read them (syscalls) or made the page cache fill them (its own
// reads, their readahead, its faults on mapped files), and that wrote them (syscalls), per
// THREAD_SLOT_NS slot since start_ns.
struct thread_io_key {
    struct file_ref file;
    u32 tid;
    u32 slot;
};
struct thread_io {
    u64 read_calls;
    u64 read_bytes;
    u64 cache_pages;
    u64 write_calls;
    u64 write_bytes;
    u64 dirtied_pages;
    u64 mapped_dirtied_pages;
};
BPF_HASH(thread_io, struct thread_io_key, struct thread_io, MAP_ENTRIES);
#endif

// Per-call records of reads and lseeks on files, written in place and read once at the end
// (no per-event wakeup or userspace work). A call that finds room in the log is added to the
// per-file totals, coverage and heat map by userspace from its record, exactly as the kernel
// would have, and so is its latency to the spectrogram: those map updates are most of a read's
// cost. Past EVENT_CAPACITY calls are only
// counted here, and the kernel aggregates them.
// LOGGED_CALLS_IN_MAPS 1 adds a logged call up in the maps too, so that one capture holds each call
// both ways: the test that userspace's sums of the log equal the kernel's, call for call. With 0 (every
// capture's) a logged call skips the maps, as above.
BPF_F_TABLE("array", u32, struct event, event_log, EVENT_CAPACITY, BPF_F_MMAPABLE);

// Page-cache fills no logged read holds, with the thread and time of each (for `run --profile` to
// find the Java code that faulted): faults on mapped files, fills inside other syscalls, fills of a
// second file inside a read, and those of reads the event log had no room for. Written in place
// like the event log; past FILL_CAPACITY only their pages are counted.
BPF_F_TABLE("array", u32, struct fill, fill_log, FILL_CAPACITY, BPF_F_MMAPABLE);

// Rare events userspace must see while the process still holds the fd (to name it).
BPF_RINGBUF_OUTPUT(notices, 64);

static __always_inline void count(u32 which, u64 n) {
    u64 *counter = counters.lookup(&which);
    if (counter)
        __sync_fetch_and_add(counter, n);
}

#if THREAD_SLOT_NS
// The thread's entry for the file in the slot of ts; 0 before the start, or when the map is full.
static __always_inline struct thread_io *thread_io_of(struct file_ref *file, u32 tid, u64 ts) {
    u32 index = CONTROL_START_NS;
    u64 *start = control.lookup(&index);
    if (!start || ts < *start)
        return 0;
    struct thread_io_key key = {.tid = tid, .slot = (ts - *start) / THREAD_SLOT_NS};
    key.file = *file;
    struct thread_io zero = {};
    struct thread_io *io = thread_io.lookup_or_try_init(&key, &zero);
    if (!io)
        count(COUNT_AGGREGATE_OVERFLOW, 1);
    return io;
}

static __always_inline void count_thread_io(struct file_ref *file, u32 tid, u64 ts, u64 calls, u64 bytes, u64 pages) {
    struct thread_io *io = thread_io_of(file, tid, ts);
    if (!io)
        return;
    __sync_fetch_and_add(&io->read_calls, calls);
    __sync_fetch_and_add(&io->read_bytes, bytes);
    __sync_fetch_and_add(&io->cache_pages, pages);
}
#endif

static __always_inline u32 current_epoch(void) {
    u32 index = CONTROL_EPOCH;
    u64 *epoch = control.lookup(&index);
    return epoch ? (u32)*epoch : 0;
}

static __always_inline u32 slot_of(u64 ts) {
    u32 index = CONTROL_START_NS;
    u64 *start = control.lookup(&index);
    if (!start || ts < *start)
        return 0;
    return (ts - *start) / SLOT_NS;
}

static __always_inline u32 log2_u64(u64 v) {
    u32 r = 0;
    if (v >> 32) { v >>= 32; r += 32; }
    if (v >> 16) { v >>= 16; r += 16; }
    if (v >> 8) { v >>= 8; r += 8; }
    if (v >> 4) { v >>= 4; r += 4; }
    if (v >> 2) { v >>= 2; r += 2; }
    if (v >> 1) { r += 1; }
    return r;
}

static __always_inline u32 latency_bucket(u64 ns) {
    if (ns == 0)
        return 0;
    u32 index = log2_u64(ns);
    struct octave *o = octaves.lookup(&index);
    if (!o)
        return 0;
    u32 bucket = o->first_bucket;
#pragma unroll
    for (int i = 0; i < 4; i++)
        if (ns >= o->limits[i])
            bucket++;
    return bucket;
}

static __always_inline u8 target_of(struct fd_state *f) {
    if (!f)
        return TARGET_OTHER;
    if (f->kind == KIND_FILE || f->kind == KIND_UNKNOWN)
        return TARGET_FILE;
    if (f->kind == KIND_SOCKET)
        return TARGET_SOCKET;
    return TARGET_OTHER;
}

static __always_inline struct file_stats *stats_of(u32 epoch, u32 tgid, u32 fd, struct fd_state *f) {
    struct fd_key key = {.epoch = epoch, .fd = fd, .gen = f ? f->gen : 0, .owner = OWNER(tgid)};
    u32 zero = 0;
    struct file_stats *empty = zero_stats.lookup(&zero);
    if (!empty)
        return 0;
    struct file_stats *stats = stats_by_fd.lookup_or_try_init(&key, empty);
    if (!stats)
        count(COUNT_AGGREGATE_OVERFLOW, 1);
    return stats;
}

// Marks pages [first, last] of a file as touched in this epoch.
static __always_inline void cover(struct file_ref *file, u32 epoch, u64 first, u64 last) {
    struct coverage_key key = {.epoch = epoch};
    key.file = *file;
    u64 first_word = first / 64, last_word = last / 64;
    if (last_word - first_word >= COVERAGE_WORDS_MAX) {
        count(COUNT_COVERAGE_TRUNCATED, 1);
        last_word = first_word + COVERAGE_WORDS_MAX - 1;
        last = last_word * 64 + 63;
    }
    u32 zero = 0;
    struct coverage_region *empty = zero_region.lookup(&zero);
    if (!empty)
        return;
    struct coverage_region *region = 0;
#pragma clang loop unroll(disable)
    for (int i = 0; i < COVERAGE_WORDS_MAX; i++) {
        u64 word = first_word + i;
        if (word > last_word)
            break;
        if (!region || key.region != word / COVERAGE_REGION_WORDS) {
            key.region = word / COVERAGE_REGION_WORDS;
            region = coverage.lookup_or_try_init(&key, empty);
            if (!region) {
                count(COUNT_AGGREGATE_OVERFLOW, 1);
                return;
            }
        }
        u64 from = word == first_word ? first % 64 : 0;
        u64 to = word == last_word ? last % 64 : 63;
        __sync_fetch_and_or(&region->words[word % COVERAGE_REGION_WORDS], (~0ULL >> (63 - to)) & (~0ULL << from));
    }
}

static __always_inline void heat(struct file_ref *file, u64 ts, u64 offset, u64 bytes) {
    u64 bucket = offset / HEATMAP_BYTES;
    struct heat_key key = {.slot = slot_of(ts), .row = bucket / HEAT_ROW_CELLS};
    key.file = *file;
    u32 zero = 0;
    struct heat_row *empty = zero_heat_row.lookup(&zero);
    if (!empty)
        return;
    struct heat_row *row = heatmap.lookup_or_try_init(&key, empty);
    if (!row) {
        count(COUNT_AGGREGATE_OVERFLOW, 1);
        return;
    }
    struct heat_cell *cell = &row->cells[bucket % HEAT_ROW_CELLS];
    __sync_fetch_and_add(&cell->calls, 1);
    __sync_fetch_and_add(&cell->bytes, bytes);
}

// The slot of the next record of an in-place log, counting the offer in its counter; -1 when full.
static __always_inline s64 claim_slot(u32 offered_counter, u64 capacity) {
    u64 *offered = counters.lookup(&offered_counter);
    if (!offered)
        return -1;
    u64 index = __sync_fetch_and_add(offered, 1);
    return index < capacity ? (s64)index : -1;
}

// True when the call is in the log (and so left to userspace to aggregate).
static __always_inline bool log_event(struct call *c, u32 tgid, u32 tid, s32 fd, u32 gen, u64 latency, s64 offset,
                                      s64 requested, s64 returned, u64 run_bytes, bool seek_jump) {
    s64 index = claim_slot(COUNT_EVENTS_OFFERED, EVENT_CAPACITY);
    if (index < 0)
        return false;
    u32 slot = index;
    struct event *e = event_log.lookup(&slot);
    if (!e)
        return false;
    e->ts = c->ts;
    e->latency = latency;
    e->offset = offset;
    e->requested = requested;
    e->returned = returned;
    e->run_bytes = run_bytes;
    e->tid = tid;
    e->fd = fd;
    e->gen = gen;
    e->nr = c->nr;
    e->epoch = c->epoch;
    e->seek_jump = seek_jump;
    e->fill_inode = c->fill_inode;
    e->fill_dev = c->fill_dev;
    e->fill_pages = c->fill_pages;
#if FOLLOW_CHILDREN
    e->tgid = tgid;
#endif
    return true;
}

static __always_inline void log_fill(u64 ts, u32 tid, u32 nr, u32 epoch, u32 dev, u64 inode, u64 pages) {
    s64 index = claim_slot(COUNT_FILLS_OFFERED, FILL_CAPACITY);
    u32 slot = index;
    struct fill *f = index >= 0 ? fill_log.lookup(&slot) : 0;
    if (!f) {
        count(COUNT_FILL_PAGES_UNLOGGED, pages);
        return;
    }
    f->ts = ts;
    f->inode = inode;
    f->dev = dev;
    f->pages = pages;
    f->tid = tid;
    f->nr = nr;
    f->epoch = epoch;
}

// Bytes an iovec array asks for (readv, preadv, preadv2, recvmsg).
static __always_inline u64 iov_bytes(u64 iov, u64 count_) {
    u64 total = 0;
    if (count_ > IOV_READ_MAX) {
        count(COUNT_IOV_TRUNCATED, 1);
        count_ = IOV_READ_MAX;
    }
    for (int i = 0; i < IOV_READ_MAX; i++) {
        if (i >= count_)
            break;
        struct { u64 base; u64 len; } vec = {};
        if (bpf_probe_read_user(&vec, sizeof(vec), (void *)(iov + i * 16)))
            break;
        total += vec.len;
    }
    return total;
}

static __always_inline void add_read(struct file_stats *stats, u64 requested, s64 ret, u64 latency) {
    __sync_fetch_and_add(&stats->read_calls, 1);
    __sync_fetch_and_add(&stats->read_requested, requested);
    __sync_fetch_and_add(&stats->read_ns, latency);
    if (ret >= 0) {
        __sync_fetch_and_add(&stats->read_bytes, ret);
        u32 bucket = ret ? log2_u64(ret) + 1 : 0;
        if (bucket < READ_SIZE_BUCKETS)
            __sync_fetch_and_add(&stats->read_sizes[bucket], 1);
    }
}

// True when the call went to the event log (see struct event).
static __always_inline bool on_read(struct call *c, u32 tgid, u32 tid, s32 fd, struct fd_state *f,
                                    s64 ret, u64 latency) {
    u32 nr = c->nr;
    s64 offset = -1;
    u64 requested = c->args[2];
    bool positioned = nr == NR_pread64 || nr == NR_preadv || (nr == NR_preadv2 && (s64)c->args[3] != -1);
    if (positioned)
        offset = c->args[3];
    else if (f && f->pos_known)
        offset = f->pos;
    if (nr == NR_readv || nr == NR_preadv || nr == NR_preadv2) {
        requested = iov_bytes(c->args[1], c->args[2]);
    } else if (nr == NR_recvmsg) {
        struct { u64 name; u64 namelen; u64 iov; u64 iovlen; } msg = {};
        requested = bpf_probe_read_user(&msg, sizeof(msg), (void *)c->args[1]) ? 0 : iov_bytes(msg.iov, msg.iovlen);
    }

    if (!f || ret < 0 || target_of(f) != TARGET_FILE) {   // sockets, pipes, failed reads: totals only
        struct file_stats *stats = stats_of(c->epoch, tgid, fd, f);
        if (stats)
            add_read(stats, requested, ret, latency);
        return false;
    }
    if (!positioned && f->pos_known)
        f->pos += ret;
    bool seek_jump = false;
    u64 run_bytes = 0;
    if (offset >= 0) {
        // Shared by the threads reading this fd; concurrent reads make "back to back" ambiguous
        // anyway, so these updates need no lock.
        seek_jump = f->next_offset >= 0 && f->next_offset != offset;
        if (seek_jump || f->run_epoch != c->epoch) {
            f->run_bytes = 0;
            f->run_epoch = c->epoch;
        }
        f->run_bytes += ret;
        f->next_offset = offset + ret;
        run_bytes = f->run_bytes;
    }
#if THREAD_SLOT_NS
    struct file_ref read_file = {.source = SOURCE_SYSCALL, .fd_or_dev = fd,
                                 .gen_or_inode = ((u64)OWNER(tgid) << 32) | f->gen};
    count_thread_io(&read_file, tid, c->ts, 1, ret, 0);
#endif
    bool logged = log_event(c, tgid, tid, fd, f->gen, latency, offset, requested, ret, run_bytes, seek_jump);
    if (logged && !LOGGED_CALLS_IN_MAPS)
        return true;

    struct file_stats *stats = stats_of(c->epoch, tgid, fd, f);
    if (stats) {
        add_read(stats, requested, ret, latency);
        if (seek_jump)
            __sync_fetch_and_add(&stats->seek_jumps, 1);
        if (run_bytes > stats->longest_run)
            stats->longest_run = run_bytes;
    }
    if (offset < 0 || ret == 0)
        return logged;
    struct file_ref file = {.source = SOURCE_SYSCALL, .fd_or_dev = fd,
                            .gen_or_inode = ((u64)OWNER(tgid) << 32) | f->gen};
    cover(&file, c->epoch, (u64)offset >> PAGE_SHIFT_4K, (u64)(offset + ret - 1) >> PAGE_SHIFT_4K);
    heat(&file, c->ts, offset, ret);
    return logged;
}

static __always_inline void on_write(struct call *c, u32 tgid, u32 tid, s32 fd, struct fd_state *f, s64 ret) {
    struct file_stats *stats = stats_of(c->epoch, tgid, fd, f);
    if (stats) {
        __sync_fetch_and_add(&stats->write_calls, 1);
        if (ret > 0)
            __sync_fetch_and_add(&stats->write_bytes, ret);
    }
#if THREAD_SLOT_NS
    if (f && target_of(f) == TARGET_FILE) {
        struct file_ref file = {.source = SOURCE_SYSCALL, .fd_or_dev = fd,
                                .gen_or_inode = ((u64)OWNER(tgid) << 32) | f->gen};
        struct thread_io *io = thread_io_of(&file, tid, c->ts);
        if (io) {
            __sync_fetch_and_add(&io->write_calls, 1);
            if (ret > 0)
                __sync_fetch_and_add(&io->write_bytes, ret);
        }
    }
#endif
    if (ret > 0 && f && f->pos_known && (c->nr == NR_write || c->nr == NR_writev))
        f->pos += ret;
}

static __always_inline void on_sync(struct call *c, u32 tgid, s32 fd, struct fd_state *f, u64 latency) {
    struct sync_key key = {.epoch = c->epoch, .nr = c->nr, .bucket = latency_bucket(latency)};
    if (c->nr == NR_msync) {
        key.file.source = SOURCE_ADDRESS;
        key.file.gen_or_inode = c->args[0];
    } else {
        key.file.source = SOURCE_SYSCALL;
        key.file.fd_or_dev = fd;
        key.file.gen_or_inode = ((u64)OWNER(tgid) << 32) | (f ? f->gen : 0);
    }
    struct sync_stats zero = {};
    struct sync_stats *stats = sync_latency.lookup_or_try_init(&key, &zero);
    if (!stats) {
        count(COUNT_AGGREGATE_OVERFLOW, 1);
        return;
    }
    __sync_fetch_and_add(&stats->calls, 1);
    __sync_fetch_and_add(&stats->ns, latency);
}

static __always_inline bool on_lseek(struct call *c, u32 tgid, u32 tid, s32 fd, struct fd_state *f,
                                     s64 ret, u64 latency) {
    bool logged = target_of(f) == TARGET_FILE &&
                  log_event(c, tgid, tid, fd, f ? f->gen : 0, latency, c->args[1], c->args[2], ret, 0, false);
    if (!logged || LOGGED_CALLS_IN_MAPS) {
        struct file_stats *stats = stats_of(c->epoch, tgid, fd, f);
        if (stats)
            __sync_fetch_and_add(&stats->lseek_calls, 1);
    }
    if (ret >= 0 && f) {
        f->pos = ret;
        f->pos_known = 1;
    }
    return logged;
}

// fd now names a new open file description: bump its generation and tell userspace.
static __always_inline void on_new_fd(struct call *c, u32 tgid, u32 tid, s32 fd, u8 kind, s32 aux_fd,
                                      bool with_path) {
    if (fd < 0)
        return;
    FD_SLOT_TYPE key = FD_SLOT(tgid, fd);
    struct fd_state *f = fds.lookup(&key);
    u32 gen = 1;
    if (f) {
        gen = f->gen + 1;
        f->gen = gen;
        f->kind = kind;
        f->pos = 0;
        f->pos_known = 1;
        f->next_offset = -1;
        f->run_bytes = 0;
    } else {
        struct fd_state fresh = {.gen = 1, .kind = kind, .pos_known = 1, .next_offset = -1};
        if (fds.update(&key, &fresh))
            count(COUNT_AGGREGATE_OVERFLOW, 1);
    }
    struct notice *n = notices.ringbuf_reserve(sizeof(struct notice));
    if (!n) {
        count(COUNT_NOTICES_LOST, 1);
        return;
    }
    n->ts = c->ts;
    n->ret = fd;
    n->tid = tid;
    n->type = NOTICE_NEW_FD;
    n->nr = c->nr;
    n->kind = kind;
    n->fd = fd;
    n->gen = gen;
    n->aux_fd = aux_fd;
    n->aux_gen = 0;
    n->text[0] = 0;
#if FOLLOW_CHILDREN
    n->tgid = tgid;
#endif
    if (aux_fd >= 0 && !with_path) {
        FD_SLOT_TYPE aux_key = FD_SLOT(tgid, aux_fd);
        struct fd_state *aux = fds.lookup(&aux_key);
        n->aux_gen = aux ? aux->gen : 0;
    }
    if (with_path) {
        u64 path = (c->nr == NR_openat || c->nr == NR_openat2) ? c->args[1] : c->args[0];
        bpf_probe_read_user_str(n->text, sizeof(n->text), (void *)path);
    } else if ((c->nr == NR_accept || c->nr == NR_accept4) && c->args[1]) {
        // The peer's address, as the kernel just wrote it into the caller's sockaddr.
        bpf_probe_read_user(n->text, SOCKADDR_BYTES, (void *)c->args[1]);
    }
    notices.ringbuf_submit(n, BPF_RB_FORCE_WAKEUP);  // even behind renames not yet taken (notify)
}

static __always_inline void on_new_fd_pair(struct call *c, u32 tgid, u32 tid, u64 pair, u8 kind) {
    s32 fds_[2] = {-1, -1};
    if (bpf_probe_read_user(fds_, sizeof(fds_), (void *)pair))
        return;
    on_new_fd(c, tgid, tid, fds_[0], kind, fds_[1], false);
    on_new_fd(c, tgid, tid, fds_[1], kind, fds_[0], false);
}

// text: a name in the kernel (a thread's comm); or else user_sockaddr, an address in the process's
// memory; or else user_path, a path there.
static __always_inline void notify(u32 type, u32 tgid, u32 tid, s32 fd, u32 gen, char *text, u64 user_sockaddr,
                                   u64 user_path) {
    struct notice *n = notices.ringbuf_reserve(sizeof(struct notice));
    if (!n) {
        count(COUNT_NOTICES_LOST, 1);
        return;
    }
    __builtin_memset(n, 0, sizeof(struct notice) - NOTICE_PATH);
    n->ts = bpf_ktime_get_ns();
    n->type = type;
    n->tid = tid;
    n->fd = fd;
    n->gen = gen;
    n->text[0] = 0;
#if FOLLOW_CHILDREN
    n->tgid = tgid;
#endif
    if (text)
        bpf_probe_read_kernel_str(n->text, 16, text);
    else if (user_sockaddr)
        bpf_probe_read_user(n->text, SOCKADDR_BYTES, (void *)user_sockaddr);
    else if (user_path)
        bpf_probe_read_user_str(n->text, sizeof(n->text), (void *)user_path);
    // A rename wakes no one: Cassandra's shared-pool workers rename themselves at each task of
    // another pool (2,600 renames/s at 1,200 requests/s), and a wake-up each cost ~8 us here and
    // ~16 us of the poller's CPU (benchmarks/watch_busy.py). The poller takes them at its next
    // poll (<= 50 ms); every other notice wakes it, even behind renames not yet taken.
    notices.ringbuf_submit(n, type == NOTICE_RENAME ? BPF_RB_NO_WAKEUP : BPF_RB_FORCE_WAKEUP);
}

// A watched thread's call enters, with its number and first four arguments.
static __always_inline int enter_call(u32 nr, u64 arg0, u64 arg1, u64 arg2, u64 arg3) {
    u32 epoch = current_epoch();
    if (!epoch)
        return 0;
    struct call *c = calls.task_storage_get((void *)bpf_get_current_task_btf(), 0,
                                            BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (!c)
        return 0;
    c->nr = nr;
    c->epoch = epoch;
    c->args[0] = arg0;
    c->args[1] = arg1;
    c->args[2] = arg2;
    c->args[3] = arg3;
    c->fill_pages = 0;
    c->ts = bpf_ktime_get_ns();
    return 0;
}

// A call's exit: the number and arguments are those its entry saw (c->ts is cleared at every exit,
// so a call is never matched with another's entry).
static __always_inline int exit_call(s64 ret) {
    u64 pid_tgid = bpf_get_current_pid_tgid();
    if (!watched(pid_tgid >> 32))
        return 0;
    struct call *c = call_in_flight();
    if (!c)
        return 0;
    u64 now = bpf_ktime_get_ns();
    u64 latency = now - c->ts;
    u32 tid = (u32)pid_tgid;
    u32 tgid = pid_tgid >> 32;
    u32 nr = c->nr;

    u32 flag_index = nr;
    u8 *flag = syscall_flags.lookup(&flag_index);
    u8 flags = flag ? *flag : 0;
    s32 fd = (s32)c->args[0];
    struct fd_state *f = 0;
    u8 target = TARGET_NONE;
    if (flags & SYS_FD_ARG) {
        FD_SLOT_TYPE key = FD_SLOT(tgid, fd);
        f = fds.lookup(&key);
        target = target_of(f);
    }

    bool logged = false;   // then userspace bins its latency from the log
    if (flags & SYS_READ) {
        logged = on_read(c, tgid, tid, fd, f, ret, latency);
        if (!logged && c->fill_pages)   // the fills have no record to ride on
            log_fill(c->ts, tid, nr, c->epoch, c->fill_dev, c->fill_inode, c->fill_pages);
    } else if (flags & SYS_WRITE) {
        on_write(c, tgid, tid, fd, f, ret);
    } else if (nr == NR_fsync || nr == NR_fdatasync || nr == NR_msync || nr == NR_sync_file_range) {
        on_sync(c, tgid, fd, f, latency);
    } else if (nr == NR_lseek) {
        logged = on_lseek(c, tgid, tid, fd, f, ret, latency);
    } else if (ret >= 0) {
        if (flags & SYS_NEW_FD) {
            bool with_path = nr == NR_open || nr == NR_openat || nr == NR_openat2 || nr == NR_creat;
            bool at_dir = nr == NR_openat || nr == NR_openat2;
            on_new_fd(c, tgid, tid, ret, flags >> SYS_KIND_SHIFT, at_dir ? (s32)c->args[0] : AT_FDCWD_, with_path);
        } else if (nr == NR_dup || nr == NR_dup2 || nr == NR_dup3 ||
                   (nr == NR_fcntl && (c->args[1] == 0 || c->args[1] == 1030))) {  // F_DUPFD(_CLOEXEC)
            on_new_fd(c, tgid, tid, ret, f ? f->kind : KIND_UNKNOWN, fd, false);
        } else if (nr == NR_pipe || nr == NR_pipe2) {
            on_new_fd_pair(c, tgid, tid, c->args[0], KIND_PIPE);
        } else if (nr == NR_socketpair) {
            on_new_fd_pair(c, tgid, tid, c->args[3], KIND_SOCKET);
        } else if (nr == NR_close && f) {
            f->kind = KIND_CLOSED;
        }
    }
    if (nr == NR_connect && (ret == 0 || ret == -EINPROGRESS_))   // non-blocking connects go on after
        notify(NOTICE_CONNECT, tgid, tid, fd, f ? f->gen : 0, 0, c->args[1], 0);
    // A new working directory, for the relative paths opened from now on (chdir: the path it was
    // given, resolved by userspace against the one before; fchdir: the directory fd's generation).
    if (nr == NR_chdir && ret == 0)
        notify(NOTICE_CHDIR, tgid, tid, AT_FDCWD_, 0, 0, 0, c->args[0]);
    else if (nr == NR_fchdir && ret == 0)
        notify(NOTICE_CHDIR, tgid, tid, fd, f ? f->gen : 0, 0, 0, 0);
    if (!logged || LOGGED_CALLS_IN_MAPS) {
        struct latency_key key = {.slot = slot_of(c->ts), .nr = nr, .target = target,
                                  .bucket = latency_bucket(latency)};
        u64 zero = 0;
        u64 *calls_in_bucket = latency_hist.lookup_or_try_init(&key, &zero);
        if (calls_in_bucket)
            __sync_fetch_and_add(calls_in_bucket, 1);
        else
            count(COUNT_AGGREGATE_OVERFLOW, 1);
    }
    c->ts = 0;
    return 0;
}

#if ALL_SYSCALLS
// `--spectrogram all`: the raw_syscalls pair, which runs on every syscall of every process on the
// machine (the check of the process included), so that the latency spectrogram has every call the
// process makes (futex, epoll waits, ...).

// The registers the kernel saved when the call was made (struct pt_regs, laid out as ptrace's
// user_regs_struct, a user ABI), r10 to di: the x86-64 syscall ABI passes arguments in di, si, dx,
// r10, r8, r9. One read of these 64 bytes costs less than the perf record a tracepoint program is
// handed.
struct syscall_regs {
    u64 r10, r9, r8, ax, cx, dx, si, di;
};
#define PT_REGS_R10_OFFSET 56

// Raw: its arguments are a pt_regs pointer and the syscall number.
RAW_TRACEPOINT_PROBE(sys_enter) {
    if (!watched(bpf_get_current_pid_tgid() >> 32))
        return 0;
    struct syscall_regs regs;
    if (bpf_probe_read_kernel(&regs, sizeof(regs), (void *)ctx->args[0] + PT_REGS_R10_OFFSET))
        return 0;
    return enter_call(ctx->args[1], regs.di, regs.si, regs.dx, regs.r10);
}

// Raw as well: its arguments are a pt_regs pointer, not read here, and the return value.
RAW_TRACEPOINT_PROBE(sys_exit) {
    return exit_call(ctx->args[1]);
}
#else
// The default: one program pair attached (by bcc_capture.py) to the syscalls:sys_enter_NAME and
// sys_exit_NAME tracepoints of the calls this program handles (syscalls.CAPTURED) and no other, so
// that the process's futex and epoll waits, and every other process's calls, run no program: they pay
// only the kernel's check, at each syscall, of whether that call's tracepoint is enabled. The layouts
// are those every syscall tracepoint shares (events/syscalls/*/format).
struct syscall_enter_args {
    u64 common;
    s32 nr;
    u32 pad;
    u64 args[6];
};
struct syscall_exit_args {
    u64 common;
    s32 nr;
    u32 pad;
    s64 ret;
};

// The kernel refuses a program that reads past a tracepoint's record (its ctx offsets are checked at
// attach), and the record has only the call's own arguments: one entry program per number of
// arguments read, syscall_enter_N for calls of N arguments (4 for calls of more).
#define SYSCALL_ENTER(n, arg0, arg1, arg2, arg3)                                  \
    int syscall_enter_##n(struct syscall_enter_args *args) {                      \
        if (!watched(bpf_get_current_pid_tgid() >> 32))                           \
            return 0;                                                             \
        return enter_call(args->nr, arg0, arg1, arg2, arg3);                      \
    }
SYSCALL_ENTER(0, 0, 0, 0, 0)
SYSCALL_ENTER(1, args->args[0], 0, 0, 0)
SYSCALL_ENTER(2, args->args[0], args->args[1], 0, 0)
SYSCALL_ENTER(3, args->args[0], args->args[1], args->args[2], 0)
SYSCALL_ENTER(4, args->args[0], args->args[1], args->args[2], args->args[3])

int syscall_exit(struct syscall_exit_args *args) {
    return exit_call(args->ret);
}
#endif


// Pages the page cache fills for this process: syscall reads and their readahead, and faults on
// mmapped files, which syscall tracing cannot see. Pages added inside a write call are about to
// be overwritten, not missed, and are left out.
TRACEPOINT_PROBE(filemap, mm_filemap_add_to_page_cache) {
    if (!watched(bpf_get_current_pid_tgid() >> 32))
        return 0;
    u32 epoch = current_epoch();
    if (!epoch)
        return 0;
    struct call *c = call_in_flight();
    bool in_read = false;
    if (c) {
        u32 flag_index = c->nr;
        u8 *flag = syscall_flags.lookup(&flag_index);
        if (flag && (*flag & SYS_WRITE))
            return 0;
        in_read = flag && (*flag & SYS_READ);
    }
#if HAS_FOLIO_ORDER
    u64 pages = 1ULL << (args->order & 31);
#else
    u64 pages = 1;
#endif
    u64 now = bpf_ktime_get_ns();
    u32 tid = (u32)bpf_get_current_pid_tgid();
    if (in_read && (!c->fill_pages || (c->fill_dev == args->s_dev && c->fill_inode == args->i_ino))) {
        c->fill_dev = args->s_dev;
        c->fill_inode = args->i_ino;
        c->fill_pages += pages;
    } else {
        log_fill(now, tid, c ? c->nr : NO_CALL, epoch, args->s_dev, args->i_ino, pages);
    }
    struct page_key key = {.epoch = epoch, .dev = args->s_dev, .inode = args->i_ino};
    u64 zero = 0;
    u64 *total = page_cache_pages.lookup_or_try_init(&key, &zero);
    if (total)
        __sync_fetch_and_add(total, pages);
    else
        count(COUNT_AGGREGATE_OVERFLOW, 1);
    struct file_ref file = {.source = SOURCE_PAGE_CACHE, .fd_or_dev = args->s_dev, .gen_or_inode = args->i_ino};
#if THREAD_SLOT_NS
    count_thread_io(&file, tid, now, 0, 0, pages);
#endif
    cover(&file, epoch, args->index, args->index + pages - 1);
    heat(&file, now, args->index << PAGE_SHIFT_4K, pages << PAGE_SHIFT_4K);
    return 0;
}

// The write path's raw tracepoints, attached where this kernel has them and its BTF gives the offsets
// read (kernel_btf.py: a raw program is never skipped while another BPF program holds the CPU, as a perf
// tracepoint's is). Their arguments are kernel objects: only the members named there are read.

#if HAS_DIRTY_FOLIO || HAS_WRITEPAGES_RESULT
// (kernel dev, inode) of a file, from its inode.
static __always_inline void file_of_inode(void *inode, u32 *dev, u64 *ino) {
    void *sb = 0;
    bpf_probe_read_kernel(ino, sizeof(*ino), inode + INODE_INO);
    bpf_probe_read_kernel(&sb, sizeof(sb), inode + INODE_SB);
    if (sb)
        bpf_probe_read_kernel(dev, sizeof(*dev), sb + SB_DEV);
}
#endif

#if HAS_DIRTY_FOLIO
// A folio of a file turned dirty (folio, mapping), in the thread that dirtied it: inside a write
// syscall, or a store into a shared mapping (a fault outside any syscall).
RAW_TRACEPOINT_PROBE(writeback_dirty_folio) {
    u64 pid_tgid = bpf_get_current_pid_tgid();
    if (!watched(pid_tgid >> 32))
        return 0;
    u32 epoch = current_epoch();
    if (!epoch)
        return 0;
    void *folio = (void *)ctx->args[0], *mapping = (void *)ctx->args[1], *inode = 0;
    u64 flags = 0;
    u8 order = 0;
    bpf_probe_read_kernel(&flags, sizeof(flags), folio);
    if (flags & (1ULL << FOLIO_HEAD_BIT))
        bpf_probe_read_kernel(&order, sizeof(order), folio + FOLIO_ORDER);
    u64 pages = 1ULL << (order & 31);
    bpf_probe_read_kernel(&inode, sizeof(inode), mapping + MAPPING_HOST);
    struct page_key key = {.epoch = epoch};
    if (inode)
        file_of_inode(inode, &key.dev, &key.inode);
    struct call *c = call_in_flight();
    bool mapped = !c;
    struct dirtied zero = {};
    struct dirtied *dirtied = dirtied_pages.lookup_or_try_init(&key, &zero);
    if (!dirtied) {
        count(COUNT_AGGREGATE_OVERFLOW, 1);
        return 0;
    }
    __sync_fetch_and_add(&dirtied->pages, pages);
    if (mapped)
        __sync_fetch_and_add(&dirtied->mapped_pages, pages);
    u64 ino = key.inode;
    if (!written_inodes.lookup(&ino)) {
        u8 one = 1;
        if (written_inodes.update(&ino, &one))
            count(COUNT_AGGREGATE_OVERFLOW, 1);
    }
#if THREAD_SLOT_NS
    struct file_ref file = {.source = SOURCE_PAGE_CACHE, .fd_or_dev = key.dev, .gen_or_inode = key.inode};
    struct thread_io *io = thread_io_of(&file, (u32)pid_tgid, bpf_ktime_get_ns());
    if (io) {
        __sync_fetch_and_add(&io->dirtied_pages, pages);
        if (mapped)
            __sync_fetch_and_add(&io->mapped_dirtied_pages, pages);
    }
#endif
    return 0;
}
#endif

#if HAS_WRITEPAGES_RESULT
// Pages of a file ext4 sent to its device (inode, wbc, ret, pages_written): background writeback and
// every sync, in whatever thread.
RAW_TRACEPOINT_PROBE(ext4_writepages_result) {
    u32 epoch = current_epoch();
    s32 written = (s32)ctx->args[3];
    if (!epoch || written <= 0)
        return 0;
    struct page_key key = {.epoch = epoch};
    file_of_inode((void *)ctx->args[0], &key.dev, &key.inode);
    u64 ino = key.inode;
    if (!written_inodes.lookup(&ino))
        return 0;
    u64 zero = 0;
    u64 *pages = written_back.lookup_or_try_init(&key, &zero);
    if (pages)
        __sync_fetch_and_add(pages, written);
    else
        count(COUNT_AGGREGATE_OVERFLOW, 1);
    return 0;
}
#endif

TRACEPOINT_PROBE(task, task_rename) {
    u32 tgid = bpf_get_current_pid_tgid() >> 32;
    if (!watched(tgid))
        return 0;
    notify(NOTICE_RENAME, tgid, args->pid, -1, 0, args->newcomm, 0, 0);
    return 0;
}

TRACEPOINT_PROBE(sched, sched_process_exit) {
    u32 tgid = bpf_get_current_pid_tgid() >> 32;
    if (!watched(tgid))
        return 0;
#if FOLLOW_CHILDREN
    if (args->group_dead)   // its pid may now go to any process: stop watching it
        followed.delete(&tgid);
#endif
    notify(NOTICE_EXIT, tgid, args->pid, -1, 0, args->comm, 0, 0);
    return 0;
}

#if FOLLOW_CHILDREN
// Runs in the parent as the child is created, before the child can run (so none of its syscalls is
// missed). task_newtask rather than sched_process_fork: its clone_flags tell a new thread (already
// watched through its process) from a new process (to be watched from now on).
TRACEPOINT_PROBE(task, task_newtask) {
    u32 tgid = bpf_get_current_pid_tgid() >> 32;
    if (!watched(tgid))
        return 0;
    bool thread = args->clone_flags & CLONE_THREAD_;
    if (!thread) {
        u32 child = args->pid;
        u8 one = 1;
        if (followed.update(&child, &one))
            count(COUNT_AGGREGATE_OVERFLOW, 1);
    }
    notify(thread ? NOTICE_THREAD : NOTICE_FORK, tgid, args->pid, -1, 0, args->comm, 0, 0);
    return 0;
}
#endif
