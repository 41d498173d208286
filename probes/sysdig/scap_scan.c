/* ScapReader._scan (probes/sysdig/scap_reader.py) compiled: the loop over a chunk's event blocks, which is
 * most of a .scap import's time. It is the same loop, step for step: the event tables come from
 * scap_reader.py (configure()), and every event that changes the thread or fd tables (opens,
 * sockets, clones, execs...), every block that is not an event and every rare shape (v1 blocks,
 * parameters wider than 8 bytes) goes back to the reader's own Python methods. What it does itself:
 * framing the blocks, the parameter lengths, pairing an I/O exit with its enter event, the fd
 * lookups, and building the call tuples. tests/test_scap_reader.py checks that both loops read the
 * same calls from every capture.
 *
 * Built by setup.py as casstrace.probes.sysdig._scap_scan (optional: without a compiler the Python loop
 * reads). Not a BPF program, unlike capture.c beside it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MAX_TYPE 1024      /* event types configure() accepts (the tracked ones are all below) */
#define MAX_PARAMS 64      /* as scap_reader's LENGTHS16 */

typedef struct {
    char tracked, io, io_enter, open, send_tuple, execve;
    long kind, enter;
    PyObject *syscall, *positioned;
    int exit_params[4], enter_params[4];   /* (fd, size, offset, whence) positions, -1: absent */
} event_spec;

typedef struct {
    uint32_t type;
    char has_nparams, has_flags;
} block_spec;

static event_spec specs[MAX_TYPE];
static block_spec blocks[32];
static int block_count;
static long close_kind;
static uint32_t state_only, large_payload;
static PyObject *scap_error;
static PyObject *PID;     /* "pid", interned: looked up once per I/O call */
static int configured;

static inline uint16_t rd16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t rd32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t rd64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* A little-endian integer of 1..8 bytes, the fd signed (as scap_reader's _args reads them). */
static PyObject *integer(const unsigned char *p, uint32_t length, int is_signed)
{
    uint64_t value = 0;
    for (uint32_t i = 0; i < length; i++)
        value |= (uint64_t)p[i] << (8 * i);
    if (is_signed) {
        if (length < 8 && (value >> (8 * length - 1)) & 1)
            value |= ~(uint64_t)0 << (8 * length);
        return PyLong_FromLongLong((long long)value);
    }
    return PyLong_FromUnsignedLongLong(value);
}

static int int_list(PyObject *sequence, int *out, const char *what)
{
    PyObject *fast = PySequence_Fast(sequence, what);
    if (fast == NULL)
        return -1;
    if (PySequence_Fast_GET_SIZE(fast) != 4) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "%s: 4 positions expected", what);
        return -1;
    }
    for (int i = 0; i < 4; i++) {
        out[i] = (int)PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
        if (out[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
    }
    Py_DECREF(fast);
    return 0;
}

/* Each event type of `types` (an iterable of ints) gets flag 1 at `offset` in its spec. */
static int mark(PyObject *types, size_t offset)
{
    PyObject *iterator = PyObject_GetIter(types), *item;
    if (iterator == NULL)
        return -1;
    while ((item = PyIter_Next(iterator)) != NULL) {
        long type = PyLong_AsLong(item);
        Py_DECREF(item);
        if (type < 0 || type >= MAX_TYPE) {
            Py_DECREF(iterator);
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "event type %ld out of range", type);
            return -1;
        }
        ((char *)&specs[type])[offset] = 1;
    }
    Py_DECREF(iterator);
    return PyErr_Occurred() ? -1 : 0;
}

static PyObject *configure(PyObject *module, PyObject *args)
{
    PyObject *io_events, *io_enters, *tracked, *opens, *sends, *execves, *event_blocks, *error;
    unsigned long state_only_flag, large_payload_flag;
    if (!PyArg_ParseTuple(args, "O!O!OOOOO!lkkO", &PyDict_Type, &io_events, &PyDict_Type, &io_enters, &tracked,
                          &opens, &sends, &execves, &PyDict_Type, &event_blocks, &close_kind, &state_only_flag,
                          &large_payload_flag, &error))
        return NULL;
    for (int i = 0; i < MAX_TYPE; i++) {
        Py_CLEAR(specs[i].syscall);
        Py_CLEAR(specs[i].positioned);
    }
    memset(specs, 0, sizeof specs);
    state_only = (uint32_t)state_only_flag;
    large_payload = (uint32_t)large_payload_flag;
    Py_XSETREF(scap_error, Py_NewRef(error));
    PyObject *key, *value;
    Py_ssize_t position = 0;
    while (PyDict_Next(io_events, &position, &key, &value)) {
        long type = PyLong_AsLong(key);
        PyObject *syscall, *positioned, *enter_params, *exit_params;
        long kind, enter;
        if (type < 0 || type >= MAX_TYPE) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "event type %ld out of range", type);
            return NULL;
        }
        if (!PyArg_ParseTuple(value, "lUOlOO", &kind, &syscall, &positioned, &enter, &enter_params, &exit_params))
            return NULL;
        event_spec *spec = &specs[type];
        spec->io = 1;
        spec->kind = kind;
        spec->enter = enter;
        spec->syscall = Py_NewRef(syscall);
        spec->positioned = Py_NewRef(PyObject_IsTrue(positioned) ? Py_True : Py_False);
        if (int_list(exit_params, spec->exit_params, "exit parameters") < 0)
            return NULL;
    }
    position = 0;
    while (PyDict_Next(io_enters, &position, &key, &value)) {
        long type = PyLong_AsLong(key);
        if (type < 0 || type >= MAX_TYPE) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "event type %ld out of range", type);
            return NULL;
        }
        specs[type].io_enter = 1;
        if (int_list(value, specs[type].enter_params, "enter parameters") < 0)
            return NULL;
    }
    if (mark(tracked, offsetof(event_spec, tracked)) < 0 || mark(opens, offsetof(event_spec, open)) < 0 ||
        mark(sends, offsetof(event_spec, send_tuple)) < 0 || mark(execves, offsetof(event_spec, execve)) < 0)
        return NULL;
    block_count = 0;
    position = 0;
    while (PyDict_Next(event_blocks, &position, &key, &value)) {
        PyObject *has_nparams, *has_flags;
        if (block_count == (int)(sizeof blocks / sizeof blocks[0])) {
            PyErr_SetString(PyExc_ValueError, "too many event block types");
            return NULL;
        }
        if (!PyArg_ParseTuple(value, "OO", &has_nparams, &has_flags))
            return NULL;
        blocks[block_count].type = (uint32_t)PyLong_AsUnsignedLong(key);
        if (PyErr_Occurred())
            return NULL;
        blocks[block_count].has_nparams = (char)PyObject_IsTrue(has_nparams);
        blocks[block_count].has_flags = (char)PyObject_IsTrue(has_flags);
        block_count++;
    }
    if (PID == NULL && (PID = PyUnicode_InternFromString("pid")) == NULL)
        return NULL;
    configured = 1;
    Py_RETURN_NONE;
}

/* The event's parameter lengths as the tuple the reader's Python methods take. */
static PyObject *lengths_tuple(const uint32_t *lengths, long nparams)
{
    PyObject *tuple = PyTuple_New(nparams);
    if (tuple == NULL)
        return NULL;
    for (long i = 0; i < nparams; i++) {
        PyObject *length = PyLong_FromUnsignedLong(lengths[i]);
        if (length == NULL) {
            Py_DECREF(tuple);
            return NULL;
        }
        PyTuple_SET_ITEM(tuple, i, length);
    }
    return tuple;
}

/* The four (fd, size, offset, whence) arguments at `positions` into args (new references, None
 * where not carried). Parameters wider than 8 bytes go to the reader's own _args. */
static int arguments(PyObject *reader, PyObject *buffer, const unsigned char *data, Py_ssize_t values,
                     const uint32_t *lengths, const Py_ssize_t *offsets, long nparams, const int *positions,
                     PyObject **args)
{
    for (int slot = 0; slot < 4; slot++) {
        int at = positions[slot];
        if (at >= 0 && at < nparams && lengths[at] > 8) {
            PyObject *tuple = lengths_tuple(lengths, nparams);
            if (tuple == NULL)
                return -1;
            PyObject *wanted = Py_BuildValue("(iiii)", positions[0], positions[1], positions[2], positions[3]);
            PyObject *found = wanted == NULL ? NULL :
                PyObject_CallMethod(reader, "_args", "OnOO", buffer, values, tuple, wanted);
            Py_DECREF(tuple);
            Py_XDECREF(wanted);
            if (found == NULL)
                return -1;
            if (!PyTuple_Check(found) || PyTuple_GET_SIZE(found) != 4) {
                Py_DECREF(found);
                PyErr_SetString(PyExc_TypeError, "_args did not return 4 values");
                return -1;
            }
            for (int i = 0; i < 4; i++)
                args[i] = Py_NewRef(PyTuple_GET_ITEM(found, i));
            Py_DECREF(found);
            return 0;
        }
    }
    for (int slot = 0; slot < 4; slot++) {
        int at = positions[slot];
        if (at < 0 || at >= nparams || lengths[at] == 0) {
            args[slot] = Py_NewRef(Py_None);
            continue;
        }
        args[slot] = integer(data + values + offsets[at], lengths[at], slot == 0);
        if (args[slot] == NULL) {
            for (int i = 0; i < slot; i++)
                Py_CLEAR(args[i]);
            return -1;
        }
    }
    return 0;
}

/* pending.pop(key, None): a new reference, or NULL with no error when absent. */
static PyObject *pop(PyObject *dict, PyObject *key)
{
    PyObject *value = PyDict_GetItemWithError(dict, key);
    if (value == NULL)
        return NULL;
    Py_INCREF(value);
    if (PyDict_DelItem(dict, key) < 0) {
        Py_DECREF(value);
        return NULL;
    }
    return value;
}

static PyObject *scan(PyObject *module, PyObject *const *argv, Py_ssize_t argc)
{
    if (argc != 5 || !PyBytes_Check(argv[1]) || !PyList_Check(argv[3]) || !PyDict_Check(argv[4])) {
        PyErr_SetString(PyExc_TypeError, "scan(reader, buffer: bytes, at: int, out: list, pending: dict)");
        return NULL;
    }
    if (!configured) {
        PyErr_SetString(PyExc_RuntimeError, "scan() before configure()");
        return NULL;
    }
    PyObject *reader = argv[0], *buffer = argv[1], *out = argv[3], *pending = argv[4];
    Py_ssize_t at = PyLong_AsSsize_t(argv[2]);
    if (at == -1 && PyErr_Occurred())
        return NULL;
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(buffer);
    Py_ssize_t size = PyBytes_GET_SIZE(buffer);
    PyObject *threads = PyObject_GetAttrString(reader, "threads");
    PyObject *fds = PyObject_GetAttrString(reader, "fds");
    PyObject *view = NULL;          /* memoryview(buffer), made for the first Python method needing it */
    PyObject *tid_key = NULL, *ts_value = NULL, *lengths_value = NULL;
    long events = 0;
    int stopped = 0;
    uint32_t lengths[MAX_PARAMS];
    Py_ssize_t offsets[MAX_PARAMS + 1];
    if (threads == NULL || fds == NULL)
        goto fail;

    while (at + 8 <= size) {
        uint32_t block_type = rd32(data + at), block_length = rd32(data + at + 4);
        Py_ssize_t block_start = at, block_end = at + block_length;
        if (block_end > size || block_length < 12 || block_length & 3) {
            if (block_length < 12 || block_length & 3) {
                PyErr_Format(scap_error, "a block of %u bytes at a block boundary: not a capture", block_length);
                goto fail;
            }
            if (block_length > (64u << 20)) {
                PyErr_SetString(scap_error, "a block longer than 64 MiB: not a capture");
                goto fail;
            }
            break;
        }
        int has_nparams = 1, has_flags = 0, known = block_type == 0x216;
        for (int i = 0; !known && i < block_count; i++)
            if (blocks[i].type == block_type)
                known = 1, has_nparams = blocks[i].has_nparams, has_flags = blocks[i].has_flags;
        if (!known) {
            PyObject *done = PyObject_CallMethod(reader, "_block_at", "kOnn", (unsigned long)block_type, buffer, at,
                                                 block_end);
            if (done == NULL)
                goto fail;
            Py_DECREF(done);
            at = block_end;
            continue;
        }
        Py_ssize_t event = at + (has_flags ? 14 : 10);
        Py_ssize_t header = has_nparams ? 26 : 22;
        if (event + header > block_end - 4) {
            PyErr_Format(scap_error, "an event block of %u bytes: shorter than an event", block_length);
            goto fail;
        }
        uint32_t flags = has_flags ? rd32(data + at + 10) : 0;
        uint64_t ts = rd64(data + event), tid = rd64(data + event + 8);
        uint32_t length = rd32(data + event + 16);
        uint16_t etype = rd16(data + event + 20);
        long nparams = has_nparams ? (long)rd32(data + event + 22) : -1;
        events++;
        at = block_end;
        if (etype >= MAX_TYPE || !specs[etype].tracked)
            continue;
        const event_spec *spec = &specs[etype];
        Py_CLEAR(tid_key);
        Py_CLEAR(ts_value);
        Py_CLEAR(lengths_value);
        if ((ts_value = PyLong_FromUnsignedLongLong(ts)) == NULL)
            goto fail;
        if (nparams < 0) {
            PyObject *found = PyObject_CallMethod(reader, "_v1_nparams", "OnnH", buffer, event + header,
                                                  event + (Py_ssize_t)length, etype);
            if (found == NULL)
                goto fail;
            if (found == Py_None) {
                Py_DECREF(found);
                continue;
            }
            nparams = PyLong_AsLong(found);
            Py_DECREF(found);
            if (nparams == -1 && PyErr_Occurred())
                goto fail;
        }
        int wide = (flags & large_payload) != 0;
        Py_ssize_t values = event + header + (wide ? 4 : 2) * nparams;
        if (nparams >= MAX_PARAMS || values > block_end - 4) {
            PyErr_Format(scap_error, "an event of type %u longer than its block", (unsigned)etype);
            goto fail;
        }
        offsets[0] = 0;
        for (long i = 0; i < nparams; i++) {
            const unsigned char *p = data + event + header + (wide ? 4 : 2) * i;
            lengths[i] = wide ? rd32(p) : rd16(p);
            offsets[i + 1] = offsets[i] + lengths[i];
        }
        if (values + offsets[nparams] > block_end - 4) {
            PyErr_Format(scap_error, "an event of type %u longer than its block", (unsigned)etype);
            goto fail;
        }
        if ((tid_key = PyLong_FromUnsignedLongLong(tid)) == NULL)
            goto fail;
        PyObject *thread = PyDict_GetItemWithError(threads, tid_key);   /* borrowed */
        if (thread == NULL) {
            if (PyErr_Occurred())
                goto fail;
            PyObject *made = PyObject_CallMethod(reader, "_unknown_thread", "O", tid_key);
            if (made == NULL)
                goto fail;
            int failed = PyDict_SetItem(threads, tid_key, made);
            Py_DECREF(made);
            if (failed < 0)
                goto fail;
            thread = made;   /* the dict holds it */
        }

        if (spec->io) {
            PyObject *enter = pop(pending, tid_key);
            if (enter == NULL && PyErr_Occurred())
                goto fail;
            long long result = nparams && lengths[0] == 8 ? (long long)rd64(data + values) : 0;
            PyObject *entry_ts = Py_None, *fd = Py_None, *size_arg = Py_None, *offset = Py_None, *whence = Py_None;
            if (enter != NULL && PyTuple_Check(enter) && PyTuple_GET_SIZE(enter) == 6 &&
                PyLong_AsLong(PyTuple_GET_ITEM(enter, 0)) == spec->enter) {
                entry_ts = PyTuple_GET_ITEM(enter, 1);
                fd = PyTuple_GET_ITEM(enter, 2);
                size_arg = PyTuple_GET_ITEM(enter, 3);
                offset = PyTuple_GET_ITEM(enter, 4);
                whence = PyTuple_GET_ITEM(enter, 5);
            }
            Py_INCREF(entry_ts), Py_INCREF(fd), Py_INCREF(size_arg), Py_INCREF(offset), Py_INCREF(whence);
            Py_XDECREF(enter);
            if (PyErr_Occurred())
                goto io_fail;
            /* Newer exit events carry the arguments themselves. */
            if (spec->exit_params[0] < nparams) {
                PyObject *args[4];
                if (arguments(reader, buffer, data, values, lengths, offsets, nparams, spec->exit_params, args) < 0)
                    goto io_fail;
                Py_SETREF(fd, args[0]);
                if (args[1] != Py_None) Py_SETREF(size_arg, args[1]); else Py_DECREF(args[1]);
                if (args[2] != Py_None) Py_SETREF(offset, args[2]); else Py_DECREF(args[2]);
                if (args[3] != Py_None) Py_SETREF(whence, args[3]); else Py_DECREF(args[3]);
            }
            PyObject *pid = PyObject_GetAttr(thread, PID);
            if (pid == NULL)
                goto io_fail;
            PyObject *table = PyDict_GetItemWithError(fds, pid);
            if (table == NULL) {
                if (PyErr_Occurred() || (table = PyDict_New()) == NULL) {
                    Py_DECREF(pid);
                    goto io_fail;
                }
                int failed = PyDict_SetItem(fds, pid, table);
                Py_DECREF(table);
                if (failed < 0) {
                    Py_DECREF(pid);
                    goto io_fail;
                }
            }
            Py_DECREF(pid);
            PyObject *fd_info = Py_NewRef(Py_None);
            if (fd != Py_None) {
                long long number = PyLong_AsLongLong(fd);
                if (number == -1 && PyErr_Occurred()) {
                    Py_DECREF(fd_info);
                    goto io_fail;
                }
                if (number >= 0) {
                    PyObject *known_fd = PyDict_GetItemWithError(table, fd);
                    if (known_fd == NULL) {
                        if (PyErr_Occurred()) {
                            Py_DECREF(fd_info);
                            goto io_fail;
                        }
                        known_fd = PyObject_CallMethod(reader, "_unknown_fd", NULL);
                        if (known_fd == NULL || PyDict_SetItem(table, fd, known_fd) < 0) {
                            Py_XDECREF(known_fd);
                            Py_DECREF(fd_info);
                            goto io_fail;
                        }
                        Py_SETREF(fd_info, known_fd);
                    } else {
                        Py_SETREF(fd_info, Py_NewRef(known_fd));
                    }
                }
                if (spec->kind == close_kind && result == 0) {
                    PyObject *closed = pop(table, fd);
                    if (closed == NULL && PyErr_Occurred()) {
                        Py_DECREF(fd_info);
                        goto io_fail;
                    }
                    Py_XDECREF(closed);
                }
            }
            if (flags & state_only) {
                Py_DECREF(fd_info);
                Py_DECREF(entry_ts), Py_DECREF(fd), Py_DECREF(size_arg), Py_DECREF(offset), Py_DECREF(whence);
                PyObject *skipped = PyObject_GetAttrString(reader, "skipped_state_only");
                PyObject *one = PyLong_FromLong(1);
                PyObject *more = skipped == NULL || one == NULL ? NULL : PyNumber_Add(skipped, one);
                Py_XDECREF(skipped);
                Py_XDECREF(one);
                if (more == NULL || PyObject_SetAttrString(reader, "skipped_state_only", more) < 0) {
                    Py_XDECREF(more);
                    goto fail;
                }
                Py_DECREF(more);
                continue;
            }
            PyObject *result_value = PyLong_FromLongLong(result);
            PyObject *kind = PyLong_FromLong(spec->kind);
            if (result_value == NULL || kind == NULL) {
                Py_XDECREF(result_value), Py_XDECREF(kind), Py_DECREF(fd_info);
                goto io_fail;
            }
            PyObject *call = PyTuple_New(12);
            if (call == NULL) {
                Py_DECREF(result_value), Py_DECREF(kind), Py_DECREF(fd_info);
                goto io_fail;
            }
            PyTuple_SET_ITEM(call, 0, kind);
            PyTuple_SET_ITEM(call, 1, Py_NewRef(spec->syscall));
            PyTuple_SET_ITEM(call, 2, Py_NewRef(spec->positioned));
            PyTuple_SET_ITEM(call, 3, Py_NewRef(ts_value));
            PyTuple_SET_ITEM(call, 4, entry_ts);
            PyTuple_SET_ITEM(call, 5, Py_NewRef(thread));
            PyTuple_SET_ITEM(call, 6, fd);
            PyTuple_SET_ITEM(call, 7, fd_info);
            PyTuple_SET_ITEM(call, 8, result_value);
            PyTuple_SET_ITEM(call, 9, size_arg);
            PyTuple_SET_ITEM(call, 10, offset);
            PyTuple_SET_ITEM(call, 11, whence);
            int failed = PyList_Append(out, call);
            Py_DECREF(call);
            if (failed < 0)
                goto fail;
            continue;
        io_fail:
            Py_DECREF(entry_ts), Py_DECREF(fd), Py_DECREF(size_arg), Py_DECREF(offset), Py_DECREF(whence);
            goto fail;
        }

        if (view == NULL && (view = PyMemoryView_FromObject(buffer)) == NULL)
            goto fail;
        if (spec->io_enter) {
            if (spec->send_tuple && nparams > 2 && lengths[2] > 1) {
                if ((lengths_value = lengths_tuple(lengths, nparams)) == NULL)
                    goto fail;
                PyObject *done = PyObject_CallMethod(reader, "_name_by_peer", "OOnOO", thread, buffer, values,
                                                     lengths_value, view);
                if (done == NULL)
                    goto fail;
                Py_DECREF(done);
            }
            PyObject *args[4];
            if (arguments(reader, buffer, data, values, lengths, offsets, nparams, spec->enter_params, args) < 0)
                goto fail;
            PyObject *entry = PyTuple_New(6);
            PyObject *type_value = PyLong_FromLong(etype);
            if (entry == NULL || type_value == NULL) {
                Py_XDECREF(entry), Py_XDECREF(type_value);
                for (int i = 0; i < 4; i++)
                    Py_DECREF(args[i]);
                goto fail;
            }
            PyTuple_SET_ITEM(entry, 0, type_value);
            PyTuple_SET_ITEM(entry, 1, Py_NewRef(ts_value));
            for (int i = 0; i < 4; i++)
                PyTuple_SET_ITEM(entry, 2 + i, args[i]);
            int failed = PyDict_SetItem(pending, tid_key, entry);
            Py_DECREF(entry);
            if (failed < 0)
                goto fail;
            continue;
        }
        if (lengths_value == NULL && (lengths_value = lengths_tuple(lengths, nparams)) == NULL)
            goto fail;
        if (spec->open) {
            PyObject *enter = pop(pending, tid_key);
            if (enter == NULL && PyErr_Occurred())
                goto fail;
            PyObject *call = PyObject_CallMethod(reader, "_opened", "lOOOOnOl", (long)etype, ts_value, thread,
                                                 enter != NULL ? enter : Py_None, view, values, lengths_value,
                                                 nparams);
            Py_XDECREF(enter);
            if (call == NULL)
                goto fail;
            int failed = call != Py_None && !(flags & state_only) ? PyList_Append(out, call) : 0;
            Py_DECREF(call);
            if (failed < 0)
                goto fail;
            continue;
        }
        if (spec->execve && PyList_GET_SIZE(out) > 0) {
            /* the calls before an execve are folded before it renames their thread: read it again,
             * first thing, on the next call */
            at = block_start;
            events--;
            stopped = 1;
            break;
        }
        PyObject *done = PyObject_CallMethod(reader, "_state", "lOOOOOnOlk", (long)etype, ts_value, thread, pending,
                                             buffer, view, values, lengths_value, nparams, (unsigned long)flags);
        if (done == NULL)
            goto fail;
        Py_DECREF(done);
    }
    Py_XDECREF(tid_key);
    Py_XDECREF(ts_value);
    Py_XDECREF(lengths_value);
    Py_XDECREF(view);
    Py_DECREF(threads);
    Py_DECREF(fds);
    return Py_BuildValue("(nlO)", at, events, stopped ? Py_True : Py_False);

fail:
    Py_XDECREF(tid_key);
    Py_XDECREF(ts_value);
    Py_XDECREF(lengths_value);
    Py_XDECREF(view);
    Py_XDECREF(threads);
    Py_XDECREF(fds);
    return NULL;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(io_events, io_enters, tracked, opens, sends_with_tuple, execves, event_blocks, close_kind,"
     " state_only, large_payload, scap_error): the event tables of scap_reader.py."},
    {"scan", (PyCFunction)(void (*)(void))scan, METH_FASTCALL,
     "scan(reader, buffer, at, out, pending) -> (at, events, stopped): ScapReader._scan, compiled."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scap_scan", "ScapReader._scan compiled (probes/sysdig/scap_scan.c).", -1, methods,
};

PyMODINIT_FUNC PyInit__scap_scan(void)
{
    return PyModule_Create(&module);
}
