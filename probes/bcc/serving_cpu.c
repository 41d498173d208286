// The CPU of the threads that can serve a traced request, per thread and time slot, for `casstrace
// watch` (serving_cpu.py; thread_slots.c comes before this): of the process TGID, each slice of a thread
// whose name as it ran (prev_comm) is a request stage's (SERVES_SESSIONS: the stages a traced session's
// events run on; a shared-pool worker renames itself as it moves from stage to stage, so the name read
// at the switch is the one it had while it ran), while userspace says so (counting[0]: the watch's
// window). The other processes' switches, and the JVM's other threads (GC, compaction, flushes), are
// let go at once: the maps hold the request threads' busy slots only, which userspace drains.

BPF_ARRAY(counting, u32, 1);

TRACEPOINT_PROBE(sched, sched_switch) {
    u64 now = bpf_ktime_get_ns();
    u64 started = switched_in_at(now);
    u64 pid_tgid = bpf_get_current_pid_tgid();
    if ((pid_tgid >> 32) != TGID || started == 0)
        return 0;
    int zero = 0;
    u32 *on = counting.lookup(&zero);
    if (!on || !*on)
        return 0;
    char comm[sizeof(args->prev_comm)];
    __builtin_memcpy(comm, args->prev_comm, sizeof(comm));
    if (SERVES_SESSIONS(comm))
        add_slots((u32)pid_tgid, started, now);
    return 0;
}
