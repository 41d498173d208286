// On-CPU time of one process's threads, per capture window, from the scheduler's switches.
//
// At each switch the task leaving the CPU is the current one, and it has run since the previous
// switch on this CPU: so one per-CPU timestamp gives every slice, with no per-thread start to
// keep. A slice of the captured process (TGID) is added to (window, tid) in the kernel: nothing
// is lost, and Python reads the map once, at the end. The window is the one userspace set last
// (window[0]), so a slice that straddles a window's edge counts in the window it ended in.

struct slice_key {
    u32 window;
    u32 tid;
};

BPF_PERCPU_ARRAY(switched_in, u64, 1);
BPF_ARRAY(window, u32, 1);
BPF_ARRAY(overflows, u64, 1);
BPF_HASH(oncpu, struct slice_key, u64, ONCPU_ENTRIES);

TRACEPOINT_PROBE(sched, sched_switch) {
    int zero = 0;
    u64 now = bpf_ktime_get_ns();
    u64 *last = switched_in.lookup(&zero);
    if (!last)
        return 0;
    u64 started = *last;
    *last = now;
    u64 pid_tgid = bpf_get_current_pid_tgid();
    if ((pid_tgid >> 32) != TGID || started == 0)
        return 0;
    u32 *current = window.lookup(&zero);
    struct slice_key key = {.window = current ? *current : 0, .tid = (u32)pid_tgid};
    u64 ran = now - started;
    u64 *total = oncpu.lookup(&key);
    if (total) {
        __sync_fetch_and_add(total, ran);
    } else if (oncpu.insert(&key, &ran) != 0) {
        u64 *lost = overflows.lookup(&zero);
        if (lost)
            __sync_fetch_and_add(lost, 1);
    }
    return 0;
}
