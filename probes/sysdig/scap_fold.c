/* ScapImporter._fold_python (probes/sysdig/sysdig_import.py) compiled: folding the reader's calls into
 * each process's per-file, per-window totals, its heat-map and latency cells and its per-call
 * records. The same steps in the same order, with the state in C: the fds' positions, the files'
 * running totals and page runs, the cells of the current slots. Python keeps what is rare or
 * shared with the writer: a process or file met for the first time (_process_of, _file_of), where
 * slot 0 starts (_started), moving old slots' cells to disk (_move_slots, after flush() has handed
 * them over), spilling records (the spool). export() hands the totals back as the Python fold
 * leaves them. tests/test_scap_import.py checks that both folds write the same traces.
 *
 * Integers are 64-bit here, as the capture's fields are; a total beyond 2^63 would be an error,
 * not a wrap. Built by setup.py as casstrace.probes.sysdig._scap_fold (optional, as scap_scan.c). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static long OPEN, CLOSE, READ, WRITE, SEEK;
static int64_t SLOT_NS, HEATMAP_OFFSET_BYTES, PAGE_BYTES;
static uint64_t *bucket_starts;
static Py_ssize_t bucket_count;
static PyObject *TARGET_NONE, *TARGET_OTHER, *FILE_KIND;
static PyObject *PID, *TID, *COMM;    /* attribute names, interned: looked up once per call */

/* -- an int64 -> int64 map: open addressing, linear probing, deletion by backward shift ---------- */
typedef struct {
    int64_t *keys, *values;
    char *used;
    size_t cap, n;
} imap;

static inline uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

static int imap_grow(imap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 16;
    int64_t *keys = PyMem_Calloc(cap, sizeof *keys), *values = PyMem_Calloc(cap, sizeof *values);
    char *used = PyMem_Calloc(cap, 1);
    if (keys == NULL || values == NULL || used == NULL) {
        PyMem_Free(keys), PyMem_Free(values), PyMem_Free(used);
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->used[i])
            continue;
        size_t at = mix((uint64_t)m->keys[i]) & (cap - 1);
        while (used[at])
            at = (at + 1) & (cap - 1);
        used[at] = 1, keys[at] = m->keys[i], values[at] = m->values[i];
    }
    PyMem_Free(m->keys), PyMem_Free(m->values), PyMem_Free(m->used);
    m->keys = keys, m->values = values, m->used = used, m->cap = cap;
    return 0;
}

static int64_t *imap_get(const imap *m, int64_t key)
{
    if (m->cap == 0)
        return NULL;
    for (size_t at = mix((uint64_t)key) & (m->cap - 1); m->used[at]; at = (at + 1) & (m->cap - 1))
        if (m->keys[at] == key)
            return &m->values[at];
    return NULL;
}

static int imap_set(imap *m, int64_t key, int64_t value)
{
    int64_t *found = imap_get(m, key);
    if (found != NULL) {
        *found = value;
        return 0;
    }
    if ((m->n + 1) * 2 > m->cap && imap_grow(m) < 0)
        return -1;
    size_t at = mix((uint64_t)key) & (m->cap - 1);
    while (m->used[at])
        at = (at + 1) & (m->cap - 1);
    m->used[at] = 1, m->keys[at] = key, m->values[at] = value;
    m->n++;
    return 0;
}

static void imap_remove(imap *m, int64_t key)
{
    if (m->cap == 0)
        return;
    size_t mask = m->cap - 1, at = mix((uint64_t)key) & mask;
    while (m->used[at] && m->keys[at] != key)
        at = (at + 1) & mask;
    if (!m->used[at])
        return;
    m->used[at] = 0;
    m->n--;
    /* Moves back the entries after it that probed past it. */
    for (size_t next = (at + 1) & mask; m->used[next]; next = (next + 1) & mask) {
        size_t home = mix((uint64_t)m->keys[next]) & mask;
        if (((next - home) & mask) >= ((next - at) & mask)) {
            m->used[at] = 1, m->keys[at] = m->keys[next], m->values[at] = m->values[next];
            m->used[next] = 0;
            at = next;
        }
    }
}

static void imap_free(imap *m)
{
    PyMem_Free(m->keys), PyMem_Free(m->values), PyMem_Free(m->used);
    memset(m, 0, sizeof *m);
}

/* -- cells: (4 x int64) -> (2 x int64), in the order first met (as a Python dict keeps them) ---- */
typedef struct {
    int64_t key[4], value[2];
} cell;

static uint64_t cell_hash(const int64_t *key)
{
    return mix((uint64_t)key[0] ^ mix((uint64_t)key[1] ^ mix((uint64_t)key[2] ^ mix((uint64_t)key[3]))));
}

/* The index: slot -> position + 1 (0: empty), open addressing on cell_hash. */
typedef struct {
    size_t *slots;
    size_t cap;
} cell_index;

typedef struct {
    cell *cells;
    size_t n, cap;
    cell_index index;
} cell_map;

static int cell_reindex(cell_map *m, size_t cap)
{
    size_t *slots = PyMem_Calloc(cap, sizeof *slots);
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < m->n; i++) {
        size_t at = cell_hash(m->cells[i].key) & (cap - 1);
        while (slots[at])
            at = (at + 1) & (cap - 1);
        slots[at] = i + 1;
    }
    PyMem_Free(m->index.slots);
    m->index.slots = slots, m->index.cap = cap;
    return 0;
}

static cell *cell_at(cell_map *m, const int64_t *key)
{
    if ((m->n + 1) * 2 > m->index.cap && cell_reindex(m, m->index.cap ? m->index.cap * 2 : 64) < 0)
        return NULL;
    size_t mask = m->index.cap - 1, at = cell_hash(key) & mask;
    for (; m->index.slots[at]; at = (at + 1) & mask) {
        cell *found = &m->cells[m->index.slots[at] - 1];
        if (memcmp(found->key, key, sizeof found->key) == 0)
            return found;
    }
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        cell *grown = PyMem_Realloc(m->cells, cap * sizeof *grown);
        if (grown == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        m->cells = grown, m->cap = cap;
    }
    cell *made = &m->cells[m->n];
    memcpy(made->key, key, sizeof made->key);
    made->value[0] = made->value[1] = 0;
    m->index.slots[at] = ++m->n;
    return made;
}

static void cell_map_free(cell_map *m)
{
    PyMem_Free(m->cells), PyMem_Free(m->index.slots);
    memset(m, 0, sizeof *m);
}

/* Python's bisect.bisect_right on a sorted array: the index after the last element <= x. */
static size_t bisect_right(const int64_t *sorted, size_t n, int64_t x)
{
    size_t low = 0, high = n;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (x < sorted[middle])
            high = middle;
        else
            low = middle + 1;
    }
    return low;
}

/* -- a file's totals in one window ------------------------------------------------------------------ */
typedef struct {
    int64_t read_calls, read_bytes, read_requested_bytes, read_ns, write_calls, write_bytes, lseek_calls,
        seek_jumps, longest_sequential_bytes, run_bytes;
    int has_read_ns;
    int64_t read_sizes[65];    /* log2 bucket + 1 (a 0-byte read is bucket -1) */
    int64_t *starts, *ends;    /* disjoint sorted page runs [start, end), as _PageRuns */
    size_t runs, runs_cap;
} window;

static int runs_reserve(window *w, size_t n)
{
    if (n <= w->runs_cap)
        return 0;
    size_t cap = w->runs_cap ? w->runs_cap * 2 : 8;
    while (cap < n)
        cap *= 2;
    int64_t *starts = PyMem_Realloc(w->starts, cap * sizeof *starts);
    if (starts == NULL)
        return PyErr_NoMemory(), -1;
    w->starts = starts;
    int64_t *ends = PyMem_Realloc(w->ends, cap * sizeof *ends);
    if (ends == NULL)
        return PyErr_NoMemory(), -1;
    w->ends = ends, w->runs_cap = cap;
    return 0;
}

/* _PageRuns.add: the run [start, end) merged into the runs. */
static int pages_add(window *w, int64_t start, int64_t end)
{
    size_t n = w->runs;
    if (n && start >= w->starts[n - 1]) {
        if (start <= w->ends[n - 1]) {
            if (end > w->ends[n - 1])
                w->ends[n - 1] = end;
            return 0;
        }
        if (runs_reserve(w, n + 1) < 0)
            return -1;
        w->starts[n] = start, w->ends[n] = end, w->runs = n + 1;
        return 0;
    }
    size_t i = bisect_right(w->starts, n, start);
    if (i && w->ends[i - 1] >= start) {
        i--;
        start = w->starts[i];
        if (w->ends[i] > end)
            end = w->ends[i];
    }
    size_t j = i;
    while (j < n && w->starts[j] <= end) {
        if (w->ends[j] > end)
            end = w->ends[j];
        j++;
    }
    /* runs [i, j) become the one run [start, end) */
    if (j == i) {
        if (runs_reserve(w, n + 1) < 0)
            return -1;
        memmove(w->starts + i + 1, w->starts + i, (n - i) * sizeof *w->starts);
        memmove(w->ends + i + 1, w->ends + i, (n - i) * sizeof *w->ends);
        w->runs = n + 1;
    } else if (j > i + 1) {
        memmove(w->starts + i + 1, w->starts + j, (n - j) * sizeof *w->starts);
        memmove(w->ends + i + 1, w->ends + j, (n - j) * sizeof *w->ends);
        w->runs = n - (j - i - 1);
    }
    w->starts[i] = start, w->ends[i] = end;
    return 0;
}

typedef struct {
    PyObject *number, *target;  /* the file's number (an int: records carry it) and latency target (a str) */
    int64_t index;
    int is_file, has_next;
    int64_t next_read_offset;
    window **windows;           /* one per window of the importer, made on first use */
} file;

typedef struct {
    PyObject *process, *threads, *staged, *fd_objects;   /* _Process, its .threads, .staged, the Fds keyed below */
    PyObject *last_thread, *last_comm;
    int64_t events, records, paired, blind, file_bytes;
    imap positions;     /* fd -> file position, where the capture shows it */
    imap fd_files;      /* address of an Fd -> index in files */
    cell_map heatmap;   /* (file index, slot, offset bucket, 0) -> (calls, bytes) */
    cell_map latency;   /* (slot, syscall str, target str, bucket) -> (count, 0) */
    file *files;
    size_t file_count;
} process;

typedef struct {
    PyObject_HEAD
    PyObject *importer, *spool;
    Py_ssize_t held;             /* records in memory since the last spill */
    int64_t *window_starts;
    Py_ssize_t window_count;     /* 0: no windows given (one window, 0) */
    int64_t event_limit;         /* -1: none */
    Py_ssize_t memory_rows;
    imap pids;                   /* pid -> index in processes, -1: not wanted */
    process **processes;
    size_t process_count;
} Fold;

static void window_free(window *w)
{
    if (w == NULL)
        return;
    PyMem_Free(w->starts), PyMem_Free(w->ends), PyMem_Free(w);
}

static void process_free(process *p, Py_ssize_t windows)
{
    Py_XDECREF(p->process), Py_XDECREF(p->threads), Py_XDECREF(p->staged), Py_XDECREF(p->fd_objects);
    Py_XDECREF(p->last_thread), Py_XDECREF(p->last_comm);
    imap_free(&p->positions), imap_free(&p->fd_files);
    cell_map_free(&p->heatmap), cell_map_free(&p->latency);
    for (size_t i = 0; i < p->file_count; i++) {
        Py_XDECREF(p->files[i].number), Py_XDECREF(p->files[i].target);
        if (p->files[i].windows != NULL)
            for (Py_ssize_t w = 0; w < windows; w++)
                window_free(p->files[i].windows[w]);
        PyMem_Free(p->files[i].windows);
    }
    PyMem_Free(p->files);
    PyMem_Free(p);
}

static void Fold_dealloc(Fold *self)
{
    for (size_t i = 0; i < self->process_count; i++)
        process_free(self->processes[i], self->window_count ? self->window_count : 1);
    PyMem_Free(self->processes);
    PyMem_Free(self->window_starts);
    imap_free(&self->pids);
    Py_XDECREF(self->importer), Py_XDECREF(self->spool);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Fold_init(Fold *self, PyObject *args, PyObject *kwargs)
{
    PyObject *importer, *window_starts, *event_limit;
    Py_ssize_t memory_rows;
    if (!PyArg_ParseTuple(args, "OOOn", &importer, &window_starts, &event_limit, &memory_rows))
        return -1;
    if (bucket_starts == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Fold() before configure()");
        return -1;
    }
    self->importer = Py_NewRef(importer);
    if ((self->spool = PyObject_GetAttrString(importer, "spool")) == NULL)
        return -1;
    self->memory_rows = memory_rows;
    self->event_limit = event_limit == Py_None ? -1 : PyLong_AsLongLong(event_limit);
    if (self->event_limit == -1 && PyErr_Occurred())
        return -1;
    if (window_starts != Py_None) {
        PyObject *fast = PySequence_Fast(window_starts, "window starts");
        if (fast == NULL)
            return -1;
        self->window_count = PySequence_Fast_GET_SIZE(fast);
        self->window_starts = PyMem_Calloc(self->window_count ? self->window_count : 1, sizeof(int64_t));
        for (Py_ssize_t i = 0; self->window_starts != NULL && i < self->window_count; i++)
            self->window_starts[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
        Py_DECREF(fast);
        if (self->window_starts == NULL)
            return PyErr_NoMemory(), -1;
        if (PyErr_Occurred())
            return -1;
        if (self->window_count == 0)   /* an empty list is falsy: the Python fold has no windows then */
            PyMem_Free(self->window_starts), self->window_starts = NULL;
    }
    return 0;
}

/* The process of `thread` (borrowed), or NULL with no error for one whose calls are not wanted. */
static process *process_of(Fold *self, PyObject *thread, int64_t pid_value)
{
    int64_t *known = imap_get(&self->pids, pid_value);
    if (known != NULL)
        return *known < 0 ? NULL : self->processes[*known];
    PyObject *made = PyObject_CallMethod(self->importer, "_process_of", "O", thread);
    if (made == NULL)
        return NULL;
    if (made == Py_None) {
        Py_DECREF(made);
        imap_set(&self->pids, pid_value, -1);
        return NULL;
    }
    process *p = PyMem_Calloc(1, sizeof *p);
    process **grown = PyMem_Realloc(self->processes, (self->process_count + 1) * sizeof *grown);
    if (p == NULL || grown == NULL) {
        PyMem_Free(p);
        if (grown != NULL)
            self->processes = grown;
        Py_DECREF(made);
        PyErr_NoMemory();
        return NULL;
    }
    self->processes = grown;
    p->process = made;
    p->threads = PyObject_GetAttrString(made, "threads");
    p->staged = PyObject_GetAttrString(made, "staged");
    p->fd_objects = PyList_New(0);
    self->processes[self->process_count] = p;
    if (imap_set(&self->pids, pid_value, (int64_t)self->process_count) < 0) {
        process_free(p, 0);
        return NULL;
    }
    self->process_count++;
    if (p->threads == NULL || p->staged == NULL || p->fd_objects == NULL)
        return NULL;
    return p;
}

static file *file_of(Fold *self, process *p, PyObject *fd_info, PyObject *fd)
{
    int64_t *known = imap_get(&p->fd_files, (int64_t)(intptr_t)fd_info);
    if (known != NULL)
        return &p->files[*known];
    PyObject *made = PyObject_CallMethod(self->importer, "_file_of", "OOO", p->process, fd_info, fd);
    if (made == NULL)
        return NULL;
    PyObject *index = PyObject_GetAttrString(made, "index");
    PyObject *number = index == NULL ? NULL : PyObject_GetAttrString(made, "number");
    PyObject *kind = number == NULL ? NULL : PyObject_GetAttrString(made, "kind");
    PyObject *target = kind == NULL ? NULL : PyObject_GetAttrString(made, "latency_target");
    Py_DECREF(made);
    Py_ssize_t at = index == NULL ? -1 : PyLong_AsSsize_t(index);
    Py_XDECREF(index);
    if (target == NULL || at < 0) {
        Py_XDECREF(number), Py_XDECREF(kind), Py_XDECREF(target);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "a file index below 0");
        return NULL;
    }
    int is_file = PyUnicode_Check(kind) && PyUnicode_Compare(kind, FILE_KIND) == 0;
    Py_DECREF(kind);
    if ((size_t)at >= p->file_count) {   /* a file new to the process: indices come in order */
        file *grown = PyMem_Realloc(p->files, (at + 1) * sizeof *grown);
        if (grown == NULL) {
            Py_DECREF(number), Py_DECREF(target);
            PyErr_NoMemory();
            return NULL;
        }
        memset(grown + p->file_count, 0, (at + 1 - p->file_count) * sizeof *grown);
        p->files = grown, p->file_count = at + 1;
    }
    file *f = &p->files[at];
    f->index = at;
    Py_XSETREF(f->number, number);
    Py_XSETREF(f->target, target);
    f->is_file = is_file;
    if (PyList_Append(p->fd_objects, fd_info) < 0 || imap_set(&p->fd_files, (int64_t)(intptr_t)fd_info, at) < 0)
        return NULL;
    return f;
}

/* Hands the cells of slots before `below` to the processes' Python dicts (heatmap, latency), added
 * to what those hold, in the order they were first met. */
static int flush(Fold *self, int64_t below)
{
    for (size_t i = 0; i < self->process_count; i++) {
        process *p = self->processes[i];
        for (int which = 0; which < 2; which++) {
            cell_map *m = which ? &p->latency : &p->heatmap;
            if (m->n == 0)
                continue;
            PyObject *dict = PyObject_GetAttrString(p->process, which ? "latency" : "heatmap");
            if (dict == NULL)
                return -1;
            size_t kept = 0;
            for (size_t c = 0; c < m->n; c++) {
                cell *each = &m->cells[c];
                int64_t slot = which ? each->key[0] : each->key[1];
                if (slot >= below) {
                    m->cells[kept++] = *each;
                    continue;
                }
                PyObject *key, *value;
                if (which)
                    key = Py_BuildValue("(LOOL)", (long long)each->key[0], (PyObject *)(intptr_t)each->key[1],
                                        (PyObject *)(intptr_t)each->key[2], (long long)each->key[3]);
                else
                    key = Py_BuildValue("(LLL)", (long long)each->key[0], (long long)each->key[1],
                                        (long long)each->key[2]);
                if (key == NULL) {
                    Py_DECREF(dict);
                    return -1;
                }
                PyObject *before = PyDict_GetItemWithError(dict, key);
                if (before == NULL && PyErr_Occurred()) {
                    Py_DECREF(key), Py_DECREF(dict);
                    return -1;
                }
                if (which) {
                    long long count = each->value[0] + (before != NULL ? PyLong_AsLongLong(before) : 0);
                    value = PyLong_FromLongLong(count);
                } else {
                    long long calls = each->value[0], bytes = each->value[1];
                    if (before != NULL) {
                        calls += PyLong_AsLongLong(PyList_GET_ITEM(before, 0));
                        bytes += PyLong_AsLongLong(PyList_GET_ITEM(before, 1));
                    }
                    value = Py_BuildValue("[LL]", calls, bytes);
                }
                int failed = value == NULL || PyErr_Occurred() || PyDict_SetItem(dict, key, value) < 0;
                Py_DECREF(key), Py_XDECREF(value);
                if (failed) {
                    Py_DECREF(dict);
                    return -1;
                }
            }
            Py_DECREF(dict);
            if (kept != m->n) {
                m->n = kept;
                if (cell_reindex(m, m->index.cap) < 0)
                    return -1;
            }
        }
    }
    return 0;
}

static inline int64_t as_int(PyObject *value, int *failed)
{
    long long number = PyLong_AsLongLong(value);
    if (number == -1 && PyErr_Occurred())
        *failed = 1;
    return number;
}

static int latency_bucket(int64_t ns)
{
    /* bisect_right(starts, ns) - 1, at least 0 */
    if (ns <= 0)
        return 0;
    Py_ssize_t low = 0, high = bucket_count;
    while (low < high) {
        Py_ssize_t middle = (low + high) / 2;
        if ((uint64_t)ns < bucket_starts[middle])
            high = middle;
        else
            low = middle + 1;
    }
    return low > 0 ? (int)(low - 1) : 0;
}

static PyObject *set_ending(Fold *self, int64_t last_ns, int has_last, int64_t move_at)
{
    PyObject *last = has_last ? PyLong_FromLongLong(last_ns) : NULL;
    PyObject *move = PyLong_FromLongLong(move_at);
    int failed = move == NULL || (has_last && last == NULL) ||
        (has_last && PyObject_SetAttrString(self->importer, "last_ns", last) < 0) ||
        PyObject_SetAttrString(self->importer, "_move_at", move) < 0;
    Py_XDECREF(last), Py_XDECREF(move);
    return failed ? NULL : Py_None;
}

static PyObject *Fold_fold(Fold *self, PyObject *args)
{
    PyObject *calls;
    long long slot_lag, move_every;
    if (!PyArg_ParseTuple(args, "OLL", &calls, &slot_lag, &move_every))
        return NULL;
    PyObject *start_value = PyObject_GetAttrString(self->importer, "start_ns");
    PyObject *move_value = PyObject_GetAttrString(self->importer, "_move_at");
    if (start_value == NULL || move_value == NULL) {
        Py_XDECREF(start_value), Py_XDECREF(move_value);
        return NULL;
    }
    int failed = 0, started = start_value != Py_None, has_last = 0;
    int64_t start_ns = started ? as_int(start_value, &failed) : 0, move_at = as_int(move_value, &failed), last_ns = 0;
    Py_DECREF(start_value), Py_DECREF(move_value);
    if (failed)
        return NULL;
    PyObject *iterator = PyObject_GetIter(calls), *call = NULL;
    if (iterator == NULL)
        return NULL;
    Py_ssize_t windows = self->window_starts != NULL ? self->window_count : 1;

    while ((call = PyIter_Next(iterator)) != NULL) {
        PyObject *pid = NULL, *tid = NULL, *comm = NULL, *latency_value = NULL, *record = NULL, *read_offset = NULL;
        if (!PyTuple_Check(call) || PyTuple_GET_SIZE(call) != 12) {
            PyErr_SetString(PyExc_TypeError, "a call is a tuple of 12");
            goto fail;
        }
        long kind = PyLong_AsLong(PyTuple_GET_ITEM(call, 0));
        PyObject *syscall = PyTuple_GET_ITEM(call, 1);
        int positioned = PyObject_IsTrue(PyTuple_GET_ITEM(call, 2));
        PyObject *ts_value = PyTuple_GET_ITEM(call, 3), *entry_value = PyTuple_GET_ITEM(call, 4);
        PyObject *thread = PyTuple_GET_ITEM(call, 5), *fd = PyTuple_GET_ITEM(call, 6);
        PyObject *fd_info = PyTuple_GET_ITEM(call, 7), *result_value = PyTuple_GET_ITEM(call, 8);
        PyObject *size = PyTuple_GET_ITEM(call, 9), *offset = PyTuple_GET_ITEM(call, 10);
        PyObject *whence = PyTuple_GET_ITEM(call, 11);
        int64_t ts = as_int(ts_value, &failed);
        int64_t result = as_int(result_value, &failed);
        if (failed || (kind == -1 && PyErr_Occurred()) || positioned < 0)
            goto fail;
        last_ns = ts, has_last = 1;
        if (!started) {
            PyObject *start = PyObject_CallMethod(self->importer, "_started", "OO", ts_value, entry_value);
            if (start == NULL)
                goto fail;
            start_ns = as_int(start, &failed);
            Py_DECREF(start);
            if (failed)
                goto fail;
            started = 1;
        }
        if ((pid = PyObject_GetAttr(thread, PID)) == NULL)
            goto fail;
        int64_t pid_number = as_int(pid, &failed);
        if (failed)
            goto fail;
        process *p = process_of(self, thread, pid_number);
        if (p == NULL) {
            if (PyErr_Occurred())
                goto fail;
            goto next;
        }
        if ((tid = PyObject_GetAttr(thread, TID)) == NULL || (comm = PyObject_GetAttr(thread, COMM)) == NULL)
            goto fail;
        if (thread != p->last_thread || comm != p->last_comm) {
            if (PyDict_SetItem(p->threads, tid, comm) < 0)
                goto fail;
            Py_XSETREF(p->last_thread, Py_NewRef(thread));
            Py_XSETREF(p->last_comm, Py_NewRef(comm));
        }
        p->events++;
        int has_latency = entry_value != Py_None;
        int64_t latency = 0;
        PyObject *entry = entry_value;
        if (has_latency) {
            latency = ts - as_int(entry_value, &failed);
            if (failed)
                goto fail;
            p->paired++;
        } else {
            entry = ts_value;
            if (fd == Py_None && kind != OPEN)
                p->blind++;   /* an old-format exit without its enter event: see check_readable() */
        }
        file *f = NULL;
        if (fd_info != Py_None && (f = file_of(self, p, fd_info, fd)) == NULL)
            goto fail;

        int64_t slot = ts - start_ns < 0 ? 0 : (ts - start_ns) / SLOT_NS;
        if (ts - start_ns >= 0 && slot > move_at) {
            int64_t below = slot - slot_lag;
            if (flush(self, below) < 0)
                goto fail;
            PyObject *moved = PyObject_CallMethod(self->importer, "_move_slots", "L", (long long)below);
            if (moved == NULL)
                goto fail;
            Py_DECREF(moved);
            move_at = slot + move_every;
        }
        if (has_latency) {
            PyObject *target = kind == OPEN ? TARGET_NONE : f != NULL ? f->target : TARGET_OTHER;
            int64_t key[4] = {slot, (int64_t)(intptr_t)syscall, (int64_t)(intptr_t)target, latency_bucket(latency)};
            cell *counted = cell_at(&p->latency, key);
            if (counted == NULL)
                goto fail;
            counted->value[0]++;
        }
        if (kind == OPEN || kind == CLOSE) {
            if (fd != Py_None) {
                int64_t number = as_int(fd, &failed);
                if (failed || (kind == OPEN ? imap_set(&p->positions, number, 0) : (imap_remove(&p->positions, number), 0)) < 0)
                    goto fail;
            }
            goto next;
        }
        if (f == NULL || fd == Py_None)
            goto next;
        int64_t fd_number = as_int(fd, &failed);
        if (failed)
            goto fail;
        Py_ssize_t at_window = 0;
        if (self->window_starts != NULL) {
            size_t after = bisect_right(self->window_starts, (size_t)self->window_count, ts);
            at_window = after > 0 ? (Py_ssize_t)after - 1 : 0;
        }
        if (f->windows == NULL && (f->windows = PyMem_Calloc(windows, sizeof *f->windows)) == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
        window *stats = f->windows[at_window];
        if (stats == NULL && (stats = f->windows[at_window] = PyMem_Calloc(1, sizeof *stats)) == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
        if (kind == READ) {
            stats->read_calls++;
            if (size != Py_None) {
                stats->read_requested_bytes += as_int(size, &failed);
                if (failed)
                    goto fail;
            }
            if (has_latency)
                stats->read_ns += latency, stats->has_read_ns = 1;
            int64_t returned = result;
            if (result >= 0)
                stats->read_sizes[returned ? 64 - __builtin_clzll((uint64_t)returned) : 0]++;
            int has_offset;
            int64_t offset_number = 0;
            if (positioned) {
                has_offset = offset != Py_None;
                if (has_offset) {
                    offset_number = as_int(offset, &failed);
                    if (failed)
                        goto fail;
                }
                read_offset = Py_NewRef(offset);
            } else {
                int64_t *position = imap_get(&p->positions, fd_number);
                has_offset = position != NULL;
                if (has_offset) {
                    offset_number = *position;
                    if (returned > 0)
                        *position = offset_number + returned;
                }
                read_offset = has_offset ? PyLong_FromLongLong(offset_number) : Py_NewRef(Py_None);
                if (read_offset == NULL)
                    goto fail;
            }
            if (returned > 0) {
                stats->read_bytes += returned;
                if (f->is_file)
                    p->file_bytes += returned;
            }
            if (!f->is_file)
                goto next;
            if (has_offset && returned > 0) {
                if (f->has_next && offset_number != f->next_read_offset) {
                    stats->seek_jumps++;
                    stats->run_bytes = 0;
                }
                stats->run_bytes += returned;
                if (stats->run_bytes > stats->longest_sequential_bytes)
                    stats->longest_sequential_bytes = stats->run_bytes;
                f->next_read_offset = offset_number + returned, f->has_next = 1;
                if (pages_add(stats, offset_number / PAGE_BYTES, (offset_number + returned - 1) / PAGE_BYTES + 1) < 0)
                    goto fail;
                int64_t key[4] = {f->index, slot, offset_number / HEATMAP_OFFSET_BYTES, 0};
                cell *heat = cell_at(&p->heatmap, key);
                if (heat == NULL)
                    goto fail;
                heat->value[0]++, heat->value[1] += returned;
            } else if (returned > 0) {
                f->has_next = 0;   /* lost track of where the file is being read */
            }
            if (has_latency && (latency_value = PyLong_FromLongLong(latency)) == NULL)
                goto fail;
            record = PyTuple_Pack(10, entry, tid, syscall, fd, f->number, read_offset, size, result_value,
                                  has_latency ? latency_value : Py_None, Py_None);
        } else if (kind == WRITE) {
            stats->write_calls++;
            if (result > 0) {
                stats->write_bytes += result;
                if (f->is_file)
                    p->file_bytes += result;
                int64_t *position = positioned ? NULL : imap_get(&p->positions, fd_number);
                if (position != NULL)
                    *position += result;
            }
            goto next;
        } else {   /* SEEK */
            stats->lseek_calls++;
            if (result >= 0) {
                if (imap_set(&p->positions, fd_number, result) < 0)
                    goto fail;
            } else {
                imap_remove(&p->positions, fd_number);
            }
            if (!f->is_file)
                goto next;
            /* lseek's offset is a UINT64 in the capture; a negative offset wraps */
            if (offset == Py_None) {
                read_offset = Py_NewRef(Py_None);
            } else {
                unsigned long long raw = PyLong_AsUnsignedLongLong(offset);
                if (raw == (unsigned long long)-1 && PyErr_Occurred())
                    goto fail;
                if ((read_offset = PyLong_FromLongLong((long long)raw)) == NULL)
                    goto fail;
            }
            if (has_latency && (latency_value = PyLong_FromLongLong(latency)) == NULL)
                goto fail;
            record = PyTuple_Pack(10, entry, tid, syscall, fd, f->number, read_offset, whence, result_value,
                                  has_latency ? latency_value : Py_None, Py_None);
        }
        if (record == NULL)
            goto fail;
        /* A per-call record of a read or lseek on a file, for the events table; past the limit
         * only counted (the trace says how many: unstreamed_events). */
        p->records++;
        if (self->event_limit < 0 || p->records <= self->event_limit) {
            if (PyList_Append(p->staged, record) < 0)
                goto fail;
            if (++self->held >= self->memory_rows) {
                self->held = 0;
                PyObject *spilled = PyObject_CallMethod(self->spool, "spill", NULL);
                if (spilled == NULL)
                    goto fail;
                Py_DECREF(spilled);
            }
        }
    next:
        Py_XDECREF(pid), Py_XDECREF(tid), Py_XDECREF(comm), Py_XDECREF(latency_value), Py_XDECREF(record);
        Py_XDECREF(read_offset);
        Py_DECREF(call);
        continue;
    fail:
        Py_XDECREF(pid), Py_XDECREF(tid), Py_XDECREF(comm), Py_XDECREF(latency_value), Py_XDECREF(record);
        Py_XDECREF(read_offset);
        Py_XDECREF(call);
        break;
    }
    Py_DECREF(iterator);
    PyObject *error_type, *error_value, *error_traceback;
    PyErr_Fetch(&error_type, &error_value, &error_traceback);
    PyObject *ended = set_ending(self, last_ns, has_last, move_at);
    if (error_type != NULL) {
        PyErr_Restore(error_type, error_value, error_traceback);   /* the first error is the one to tell */
        return NULL;
    }
    if (ended == NULL)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *window_tuple(const window *w)
{
    PyObject *sizes = PyDict_New(), *starts = PyList_New(w->runs), *ends = PyList_New(w->runs);
    if (sizes == NULL || starts == NULL || ends == NULL)
        goto fail;
    for (int bucket = 0; bucket < 65; bucket++) {
        if (!w->read_sizes[bucket])
            continue;
        PyObject *key = PyLong_FromLong(bucket - 1), *count = PyLong_FromLongLong(w->read_sizes[bucket]);
        int failed = key == NULL || count == NULL || PyDict_SetItem(sizes, key, count) < 0;
        Py_XDECREF(key), Py_XDECREF(count);
        if (failed)
            goto fail;
    }
    for (size_t i = 0; i < w->runs; i++) {
        PyObject *start = PyLong_FromLongLong(w->starts[i]), *end = PyLong_FromLongLong(w->ends[i]);
        if (start == NULL || end == NULL) {
            Py_XDECREF(start), Py_XDECREF(end);
            goto fail;
        }
        PyList_SET_ITEM(starts, i, start);
        PyList_SET_ITEM(ends, i, end);
    }
    PyObject *read_ns = w->has_read_ns ? PyLong_FromLongLong(w->read_ns) : Py_NewRef(Py_None);
    if (read_ns == NULL)
        goto fail;
    return Py_BuildValue("(LLLNLLLLLLNNN)", (long long)w->read_calls, (long long)w->read_bytes,
                         (long long)w->read_requested_bytes, read_ns, (long long)w->write_calls,
                         (long long)w->write_bytes, (long long)w->lseek_calls, (long long)w->seek_jumps,
                         (long long)w->longest_sequential_bytes, (long long)w->run_bytes, sizes, starts, ends);
fail:
    Py_XDECREF(sizes), Py_XDECREF(starts), Py_XDECREF(ends);
    return NULL;
}

/* [(process, (events, records, paired, blind, file_bytes), [(file index, window, totals)])], after
 * handing every cell to the processes' dicts. The read_sizes of a window follow the Python fold's
 * order only as a dict (by bucket here): the trace's rows are the same. */
static PyObject *Fold_export(Fold *self, PyObject *unused)
{
    if (flush(self, INT64_MAX) < 0)
        return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    Py_ssize_t windows = self->window_starts != NULL ? self->window_count : 1;
    for (size_t i = 0; i < self->process_count; i++) {
        process *p = self->processes[i];
        PyObject *totals = PyList_New(0);
        if (totals == NULL)
            goto fail;
        for (size_t at = 0; at < p->file_count; at++) {
            file *f = &p->files[at];
            for (Py_ssize_t w = 0; f->windows != NULL && w < windows; w++) {
                if (f->windows[w] == NULL)
                    continue;
                PyObject *stats = window_tuple(f->windows[w]);
                PyObject *row = stats == NULL ? NULL : Py_BuildValue("(nnN)", (Py_ssize_t)at, w, stats);
                if (row == NULL || PyList_Append(totals, row) < 0) {
                    Py_XDECREF(row);
                    Py_DECREF(totals);
                    goto fail;
                }
                Py_DECREF(row);
            }
        }
        PyObject *row = Py_BuildValue("(O(LLLLL)N)", p->process, (long long)p->events, (long long)p->records,
                                      (long long)p->paired, (long long)p->blind, (long long)p->file_bytes, totals);
        if (row == NULL || PyList_Append(out, row) < 0) {
            Py_XDECREF(row);
            goto fail;
        }
        Py_DECREF(row);
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef Fold_methods[] = {
    {"fold", (PyCFunction)Fold_fold, METH_VARARGS, "fold(calls, slot_lag, move_every_slots): folds the calls."},
    {"export", (PyCFunction)Fold_export, METH_NOARGS, "The totals so far, as the Python fold keeps them."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject FoldType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "casstrace.probes.sysdig._scap_fold.Fold",
    .tp_basicsize = sizeof(Fold),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Fold(importer, window_starts, event_limit, memory_rows): ScapImporter's fold, compiled.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Fold_init,
    .tp_dealloc = (destructor)Fold_dealloc,
    .tp_methods = Fold_methods,
};

static PyObject *configure(PyObject *module, PyObject *args)
{
    PyObject *starts, *none, *other, *file_kind;
    long long slot_ns, heatmap_bytes, page_bytes;
    if (!PyArg_ParseTuple(args, "lllllLLLOUUU", &OPEN, &CLOSE, &READ, &WRITE, &SEEK, &slot_ns, &heatmap_bytes,
                          &page_bytes, &starts, &none, &other, &file_kind))
        return NULL;
    SLOT_NS = slot_ns, HEATMAP_OFFSET_BYTES = heatmap_bytes, PAGE_BYTES = page_bytes;
    PyObject *fast = PySequence_Fast(starts, "latency bucket starts");
    if (fast == NULL)
        return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(fast);
    uint64_t *table = PyMem_Calloc(count ? count : 1, sizeof *table);
    if (table == NULL) {
        Py_DECREF(fast);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        /* starts beyond 64 bits are beyond any latency: kept as the largest value */
        unsigned long long value = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(fast, i));
        if (value == (unsigned long long)-1 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError)) {
                Py_DECREF(fast);
                PyMem_Free(table);
                return NULL;
            }
            PyErr_Clear();
        }
        table[i] = value;
    }
    Py_DECREF(fast);
    PyMem_Free(bucket_starts);
    bucket_starts = table, bucket_count = count;
    Py_XSETREF(TARGET_NONE, Py_NewRef(none));
    Py_XSETREF(TARGET_OTHER, Py_NewRef(other));
    Py_XSETREF(FILE_KIND, Py_NewRef(file_kind));
    if ((PID == NULL && (PID = PyUnicode_InternFromString("pid")) == NULL) ||
        (TID == NULL && (TID = PyUnicode_InternFromString("tid")) == NULL) ||
        (COMM == NULL && (COMM = PyUnicode_InternFromString("comm")) == NULL))
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(OPEN, CLOSE, READ, WRITE, SEEK, SLOT_NS, HEATMAP_OFFSET_BYTES, PAGE_BYTES, latency_bucket_starts,"
     " 'none', 'other', 'file'): the units and call kinds of sysdig_import.py."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scap_fold", "ScapImporter's fold compiled (probes/sysdig/scap_fold.c).", -1, methods,
};

PyMODINIT_FUNC PyInit__scap_fold(void)
{
    if (PyType_Ready(&FoldType) < 0)
        return NULL;
    PyObject *made = PyModule_Create(&module);
    if (made == NULL)
        return NULL;
    if (PyModule_AddObjectRef(made, "Fold", (PyObject *)&FoldType) < 0) {
        Py_DECREF(made);
        return NULL;
    }
    return made;
}
