// Each thread's on-CPU time per THREAD_SLOT_NS-wide slot of the monotonic clock, from the scheduler's
// switches: the code node_time.c and serving_cpu.c share (the Python side puts it before either).
// A slice is added to (tid, slot) for the slots it spans, split at their edges, so that the analyses
// can take, of the threads that served a request, only the time they ran while they served it.
// Nothing is lost but what the full maps refuse (overflows[0], counted).

struct thread_slot {
    u32 tid;
    u32 unused;
    u64 slot; // bpf_ktime_get_ns() / THREAD_SLOT_NS
};

BPF_ARRAY(overflows, u64, 1);
BPF_PERCPU_ARRAY(switched_in, u64, 1);
// Preallocated: sched_switch runs with the run queue locked, where an allocating map's per-CPU cache
// runs dry after a few inserts (a 50 ms slice cut into slots lost all but its last 4 of them).
BPF_HASH(thread_slots, struct thread_slot, u64, THREAD_SLOTS);

static inline void count_overflow(void) {
    int zero = 0;
    u64 *lost = overflows.lookup(&zero);
    if (lost)
        __sync_fetch_and_add(lost, 1);
}

// At a switch at `now`: since when the task leaving this CPU ran (this CPU's previous switch; 0: none
// seen yet), every slice given by one per-CPU timestamp, with no per-thread start to keep.
static inline u64 switched_in_at(u64 now) {
    int zero = 0;
    u64 *last = switched_in.lookup(&zero);
    if (!last)
        return 0;
    u64 started = *last;
    *last = now;
    return started;
}

static inline void add_ns(struct thread_slot *key, u64 ns) {
    u64 *total = thread_slots.lookup(key);
    if (total)
        __sync_fetch_and_add(total, ns);
    else if (thread_slots.insert(key, &ns) != 0)
        count_overflow();
}

// The slice [from, to) of thread `tid`, cut at the slots' edges from its end backwards: the end is
// where the thread last served (it left the CPU after its work, to wait for more), so the slots an
// execution's events fall in are counted exactly. A slice longer than SLICE_SLOTS slots puts its
// earliest rest in the earliest slot it counts.
static inline void add_slots(u32 tid, u64 from, u64 to) {
    if (to <= from)
        return;
    struct thread_slot key = {.tid = tid, .unused = 0, .slot = (to - 1) / THREAD_SLOT_NS};
    for (int i = 0; i < SLICE_SLOTS; i++) {
        u64 edge = key.slot * THREAD_SLOT_NS;
        if (from >= edge || i == SLICE_SLOTS - 1) {
            add_ns(&key, to - from);
            return;
        }
        add_ns(&key, to - edge);
        to = edge;
        key.slot--;
    }
}

