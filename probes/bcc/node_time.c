// Where one process's time went, per capture window: the on-CPU time of its threads, from the
// scheduler's switches, and the time it took to answer its clients, from its socket calls.
//
// CPU: at each switch the task leaving the CPU is the current one, and it has run since the previous
// switch on this CPU, so one per-CPU timestamp gives every slice, with no per-thread start to keep.
// A slice of the captured process (TGID) is added to (window, tid) in the kernel, and to the window's
// request threads' total when the thread's name as it ran (prev_comm) is a request pool's
// (SERVES_REQUESTS, made from the prefixes by node_time.py): Cassandra's shared-pool workers rename
// themselves as they move from pool to pool, so a name read once at the end is not the one they
// had while they served.
//
// The node's time: on the client connections' descriptors (client_fds, filled by userspace: the
// measuring client's own, never another client's), a request begins at the entry of the read that
// takes its first bytes, and lasts until the exit of the last write of its answer; each answering
// write adds the time since the request began (or since the previous write of its answer), from no
// earlier than its window's start (window_start_ns, set by userspace with the window), to the window's
// total: a write long after the last answer (an event the node pushes on a connection) cannot carry
// the time before the window into it. A read after an answer begins the next
// request. Requests on one connection are taken one at a time (casstrace's client sends the next
// page's request after the previous answer).
//
// Per thread and time slot (thread_slots.c, put before this program): while userspace says so
// (per_thread[0], set in the measured executions' windows), each slice is also added to (tid, slot)
// for the THREAD_SLOT_NS-wide slots of the monotonic clock it spans, split at their edges, so that
// the analyses can take, of the threads that served an execution, only the time they ran while they
// served it.
//
// The request threads' states: in the same windows, each switch out, switch in and wake-up of a thread
// of the process with a request pool's name, and each answering write's segment of a request's time, go
// to userspace (the transitions ring) in the order they happened, where request_states.py folds them
// into the time the request threads ran, waited for a CPU or for the disk while a request was open. A
// thread switched in is known as the process's by its tid (jvm_threads: the process's threads as the
// capture began, from userspace, and each that left a CPU since): sched_switch names only the current
// task's process. A shared-pool worker moves from pool to pool without leaving its CPU, renaming itself
// as it goes: a rename into a request pool's name is sent as a switch in (it serves from then on), one
// out of it as having left the pools (it serves no request). A worker that took a request's task
// between two of another pool's, in one slice, is so seen serving it. Each request thread's condition
// since when is kept outside the windows too (request_threads: a map update per switch of the process's
// request threads, and per wake-up of one), for the window to open with it. A worker that waits for a
// CPU under another stage's name (woken or preempted: pool_waits) and takes a request's task in the
// slice it then gets waited for the request: at its rename into the pool, its wait is sent as a
// wake-up, and its slice until the rename as serving none (each traced request's own trace writes leave
// the pool's workers under the local writes' name).
//
// The window is the one userspace set last (window[0]): a slice or a write counts in the window it
// ended in. Nothing is lost but what the full maps and the ring refuse (overflows[0], counted).

struct slice_key {
    u32 window;
    u32 tid;
};

struct call {
    u64 enter_ns;
    u32 fd;
    u32 reading;
};

struct transition {
    u64 ts_ns;
    u64 from_ns; // KIND_ANSWERED: the start of the request's time the write ends; KIND_SWITCHED_OUT: the
                 // slice's start (0: not known)
    u32 tid;
    u32 window;
    u32 kind;
    u32 state;
};

struct request {
    u64 start_ns;
    u64 answered_ns; // exit of the last write of its answer so far (0: none yet)
};

BPF_ARRAY(window, u32, 1);
BPF_ARRAY(window_start_ns, u64, 1); // CLOCK_MONOTONIC
BPF_HASH(oncpu, struct slice_key, u64, ONCPU_ENTRIES);
BPF_ARRAY(per_thread, u32, 1);
BPF_HASH(client_fds, u32, u8, CLIENT_FDS);
BPF_HASH(in_call, u32, struct call, CALLS);
BPF_HASH(requests, u32, struct request, CLIENT_FDS);
BPF_HASH(answering_ns, u32, u64, WINDOWS);
BPF_HASH(answered, u32, u64, WINDOWS);
BPF_HASH(request_oncpu, u32, u64, WINDOWS);
BPF_HASH(jvm_threads, u32, u8, JVM_THREADS);
// The request threads' conditions, kept outside the measured windows too, so that each window starts
// from its threads' conditions as it opens (userspace reads them then): a thread on a CPU (switched in or
// renamed under a request pool's name), waiting for one, on the disk or asleep, since when. A thread
// renamed out of the pools leaves it.
struct thread_state {
    u64 since;
    u32 state; // STATE_*
    u32 unused;
};
BPF_HASH(request_threads, u32, struct thread_state, JVM_THREADS);
// Shared-pool workers under another stage's name (OTHER_STAGE), runnable: since when they wait for a CPU.
BPF_HASH(pool_waits, u32, u64, JVM_THREADS);
BPF_RINGBUF_OUTPUT(transitions, TRANSITION_PAGES);
BPF_HASH(transitions_lost, u32, u64, WINDOWS);

static inline u32 current_window(void) {
    int zero = 0;
    u32 *current = window.lookup(&zero);
    return current ? *current : 0;
}

static inline u32 per_thread_window(void) {
    int zero = 0;
    u32 *slotted = per_thread.lookup(&zero);
    return slotted && *slotted;
}

static inline void send(u64 ts_ns, u64 from_ns, u32 tid, u32 window_id, u32 kind, u32 state) {
    struct transition *sent = transitions.ringbuf_reserve(sizeof(struct transition));
    if (!sent) { // the window's split would be wrong: userspace leaves it out
        count_overflow();
        u64 none = 0;
        u64 *lost = transitions_lost.lookup_or_try_init(&window_id, &none);
        if (lost)
            __sync_fetch_and_add(lost, 1);
        return;
    }
    sent->ts_ns = ts_ns;
    sent->from_ns = from_ns;
    sent->tid = tid;
    sent->window = window_id;
    sent->kind = kind;
    sent->state = state;
    transitions.ringbuf_submit(sent, BPF_RB_NO_WAKEUP); // read at each window's end
}

// prev_state as sched_switch reports it: 0 (R) for a thread that is still runnable, else one bit of
// the task's reported state (S 1, D 2, ...) in its low byte; 0x100 ("+") for a preempted one.
#define REPORTED_STATES 0xff
#define UNINTERRUPTIBLE 0x2

// A thread of the process made runnable: woken (`created` 0: known as the process's by its tid), or
// new (1: a thread the process created, which bears its creator's name until it names itself; a
// request thread that starts one waits for it to run).
static inline void made_runnable(u32 tid, char *comm, u32 created) {
    if (OTHER_STAGE(comm)) {
        if ((created || jvm_threads.lookup(&tid)) && !pool_waits.lookup(&tid)) {
            u64 woken = bpf_ktime_get_ns();
            if (pool_waits.insert(&tid, &woken) != 0)
                count_overflow();
        }
        return;
    }
    if (!SERVES_REQUESTS(comm) || !(created || jvm_threads.lookup(&tid)))
        return;
    u64 now = bpf_ktime_get_ns();
    struct thread_state *known = request_threads.lookup(&tid);
    if (!known || known->state == STATE_SLEEPING || known->state == STATE_IO) { // not on a CPU, nor waiting for one
        struct thread_state woken = {.since = now, .state = STATE_RUNNABLE};
        if (request_threads.update(&tid, &woken) != 0)
            count_overflow();
    }
    if (per_thread_window())
        send(now, 0, tid, current_window(), KIND_WOKEN, 0);
}

TRACEPOINT_PROBE(sched, sched_wakeup) {
    char comm[sizeof(args->comm)];
    __builtin_memcpy(comm, args->comm, sizeof(comm));
    made_runnable(args->pid, comm, 0);
    return 0;
}

TRACEPOINT_PROBE(sched, sched_wakeup_new) {
    if ((bpf_get_current_pid_tgid() >> 32) != TGID) // run by the creator: the process's own new thread
        return 0;
    u32 tid = args->pid;
    u8 known = 1;
    if (jvm_threads.update(&tid, &known) != 0)
        count_overflow();
    char comm[sizeof(args->comm)];
    __builtin_memcpy(comm, args->comm, sizeof(comm));
    made_runnable(tid, comm, 1);
    return 0;
}

// The current task (one of the process's) leaves its CPU, in the state the scheduler reports.
static inline void leave_cpu(u64 now, u64 started, u32 tid, char *comm, long reported, u32 slotted, u32 window_id) {
    if (!SERVES_REQUESTS(comm)) { // not a request pool's: a rename out of one took it out of request_threads
        if (!OTHER_STAGE(comm))
            return;
        if (reported != 0)
            pool_waits.delete(&tid);
        else if (pool_waits.update(&tid, &now) != 0) // preempted: it waits for a CPU from now
            count_overflow();
        return;
    }
    u32 state = reported == 0 ? STATE_RUNNABLE : (reported & UNINTERRUPTIBLE) ? STATE_IO : STATE_SLEEPING;
    if (slotted) {
        struct thread_state *known = request_threads.lookup(&tid);
        // it served from its slice's start, or from its rename into a pool within the slice
        u64 from = known && known->state == STATE_RUNNING && known->since > started ? known->since : started;
        send(now, from, tid, window_id, KIND_SWITCHED_OUT, state);
    }
    struct thread_state left = {.since = now, .state = state};
    if (request_threads.update(&tid, &left) != 0)
        count_overflow();
}

TRACEPOINT_PROBE(sched, sched_switch) {
    u64 now = bpf_ktime_get_ns();
    u64 started = switched_in_at(now);
    u64 pid_tgid = bpf_get_current_pid_tgid();
    u32 ours = (pid_tgid >> 32) == TGID;
    u32 slotted = per_thread_window();
    u32 window_id = current_window();
    u32 tid = pid_tgid;
    char comm[sizeof(args->prev_comm)];
    __builtin_memcpy(comm, args->prev_comm, sizeof(comm));
    if (ours)
        leave_cpu(now, started, tid, comm, args->prev_state & REPORTED_STATES, slotted, window_id);
    u32 next = args->next_pid;
    char next_comm[sizeof(args->next_comm)];
    __builtin_memcpy(next_comm, args->next_comm, sizeof(next_comm));
    if (SERVES_REQUESTS(next_comm) && jvm_threads.lookup(&next)) {
        struct thread_state running = {.since = now, .state = STATE_RUNNING};
        if (request_threads.update(&next, &running) != 0)
            count_overflow();
        if (slotted)
            send(now, 0, next, window_id, KIND_SWITCHED_IN, 0);
    }
    if (!ours)
        return 0;
    u8 known = 1;
    if (!jvm_threads.lookup(&tid) && jvm_threads.insert(&tid, &known) != 0)
        count_overflow();
    if (started == 0)
        return 0;
    struct slice_key key = {.window = window_id, .tid = tid};
    u64 ran = now - started;
    u64 *total = oncpu.lookup(&key);
    if (total)
        __sync_fetch_and_add(total, ran);
    else if (oncpu.insert(&key, &ran) != 0)
        count_overflow();
    if (slotted)
        add_slots(key.tid, started, now);
    if (!SERVES_REQUESTS(comm))
        return 0;
    u64 none = 0;
    u64 *requests_total = request_oncpu.lookup_or_try_init(&key.window, &none);
    if (requests_total)
        __sync_fetch_and_add(requests_total, ran);
    else
        count_overflow();
    return 0;
}

TRACEPOINT_PROBE(task, task_rename) {
    u64 pid_tgid = bpf_get_current_pid_tgid();
    u32 tid = pid_tgid;
    if ((pid_tgid >> 32) != TGID || args->pid != tid) // the JVM names only the calling thread
        return 0;
    char before[sizeof(args->oldcomm)], after[sizeof(args->newcomm)];
    __builtin_memcpy(before, args->oldcomm, sizeof(before));
    __builtin_memcpy(after, args->newcomm, sizeof(after));
    u64 now = bpf_ktime_get_ns();
    // each name tested in its own branch: their two results compared made the verifier's paths explode
    if (SERVES_REQUESTS(after)) {
        if (SERVES_REQUESTS(before))
            return 0;
        struct thread_state running = {.since = now, .state = STATE_RUNNING};
        if (request_threads.update(&tid, &running) != 0)
            count_overflow();
        u64 *waited = pool_waits.lookup(&tid);
        if (per_thread_window()) {
            u32 window_id = current_window();
            int zero = 0;
            u64 *slice = switched_in.lookup(&zero);
            if (waited && slice && *waited < *slice) { // it waited for this slice under the other stage's name
                send(*waited, 0, tid, window_id, KIND_WOKEN, 0);
                send(*slice, 0, tid, window_id, KIND_SWITCHED_OUT, STATE_LEFT);
            }
            send(now, 0, tid, window_id, KIND_SWITCHED_IN, 0);
        }
        if (waited)
            pool_waits.delete(&tid);
    } else if (SERVES_REQUESTS(before)) {
        request_threads.delete(&tid);
        if (per_thread_window())
            send(now, 0, tid, current_window(), KIND_SWITCHED_OUT, STATE_LEFT);
    }
    return 0;
}

static inline int enter(u64 fd, u32 reading) {
    u64 pid_tgid = bpf_get_current_pid_tgid();
    if ((pid_tgid >> 32) != TGID)
        return 0;
    u32 key = fd;
    if (!client_fds.lookup(&key))
        return 0;
    u32 tid = pid_tgid;
    struct call made = {.enter_ns = bpf_ktime_get_ns(), .fd = key, .reading = reading};
    if (in_call.update(&tid, &made) != 0)
        count_overflow();
    return 0;
}

static inline int leave(long ret) {
    u64 pid_tgid = bpf_get_current_pid_tgid();
    if ((pid_tgid >> 32) != TGID)
        return 0;
    u32 tid = pid_tgid;
    struct call *found = in_call.lookup(&tid);
    if (!found)
        return 0;
    struct call made = *found;
    in_call.delete(&tid);
    if (ret <= 0)
        return 0;
    u32 fd = made.fd;
    struct request *open = requests.lookup(&fd);
    if (made.reading) {
        if (!open || open->answered_ns) {
            struct request fresh = {.start_ns = made.enter_ns, .answered_ns = 0};
            if (requests.update(&fd, &fresh) != 0)
                count_overflow();
        }
        return 0;
    }
    if (!open)
        return 0; // a write no request read asked for (an event the node pushes)
    u64 now = bpf_ktime_get_ns();
    u32 first_write = !open->answered_ns;
    u64 from = first_write ? open->start_ns : open->answered_ns;
    open->answered_ns = now;
    int zero_key = 0;
    u64 *opened = window_start_ns.lookup(&zero_key);
    if (opened && from < *opened)
        from = *opened;
    u32 window_id = current_window();
    u64 zero = 0;
    u64 *total = answering_ns.lookup_or_try_init(&window_id, &zero);
    if (total)
        __sync_fetch_and_add(total, now - from);
    else
        count_overflow();
    if (per_thread_window())
        send(now, from, 0, window_id, KIND_ANSWERED, 0);
    if (first_write) { // one request answered
        u64 *count = answered.lookup_or_try_init(&window_id, &zero);
        if (count)
            __sync_fetch_and_add(count, 1);
    }
    return 0;
}

TRACEPOINT_PROBE(syscalls, sys_enter_read) { return enter(args->fd, 1); }
TRACEPOINT_PROBE(syscalls, sys_exit_read) { return leave(args->ret); }
TRACEPOINT_PROBE(syscalls, sys_enter_readv) { return enter(args->fd, 1); }
TRACEPOINT_PROBE(syscalls, sys_exit_readv) { return leave(args->ret); }
TRACEPOINT_PROBE(syscalls, sys_enter_recvfrom) { return enter(args->fd, 1); }
TRACEPOINT_PROBE(syscalls, sys_exit_recvfrom) { return leave(args->ret); }
TRACEPOINT_PROBE(syscalls, sys_enter_recvmsg) { return enter(args->fd, 1); }
TRACEPOINT_PROBE(syscalls, sys_exit_recvmsg) { return leave(args->ret); }
TRACEPOINT_PROBE(syscalls, sys_enter_write) { return enter(args->fd, 0); }
TRACEPOINT_PROBE(syscalls, sys_exit_write) { return leave(args->ret); }
TRACEPOINT_PROBE(syscalls, sys_enter_writev) { return enter(args->fd, 0); }
TRACEPOINT_PROBE(syscalls, sys_exit_writev) { return leave(args->ret); }
TRACEPOINT_PROBE(syscalls, sys_enter_sendto) { return enter(args->fd, 0); }
TRACEPOINT_PROBE(syscalls, sys_exit_sendto) { return leave(args->ret); }
TRACEPOINT_PROBE(syscalls, sys_enter_sendmsg) { return enter(args->fd, 0); }
TRACEPOINT_PROBE(syscalls, sys_exit_sendmsg) { return leave(args->ret); }
