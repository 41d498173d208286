/* Rows into a table of a trace through SQLite's own API: what TraceWriter.add_events(bulk=True)
 * uses for the millions of per-call rows of a .scap import. The sqlite3 module binds and checks
 * every value through Python's object protocol; here a row costs half as much (the insert itself
 * is the same statement, given by the writer).
 *
 * It writes on a connection of its own to the writer's .partial file, inside one transaction, while
 * the writer's connection holds none (the writer commits first; SQLite sees the file changed at its
 * next statement). Values: int (64-bit), str, None, float, bytes; anything else is a TypeError.
 * Built by setup.py as casstrace.traces._bulk_insert (optional: without it, executemany). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <sqlite3.h>

static PyObject *database_error(sqlite3 *db, const char *what)
{
    PyObject *sqlite = PyImport_ImportModule("sqlite3");
    PyObject *error = sqlite == NULL ? NULL : PyObject_GetAttrString(sqlite, "OperationalError");
    Py_XDECREF(sqlite);
    if (error != NULL) {
        PyErr_Format(error, "%s: %s", what, db != NULL ? sqlite3_errmsg(db) : "out of memory");
        Py_DECREF(error);
    }
    return NULL;
}

static int bind(sqlite3_stmt *statement, int at, PyObject *value)
{
    if (value == Py_None)
        return sqlite3_bind_null(statement, at);
    if (PyLong_Check(value)) {
        long long number = PyLong_AsLongLong(value);
        if (number == -1 && PyErr_Occurred())
            return -1;
        return sqlite3_bind_int64(statement, at, number);
    }
    if (PyUnicode_Check(value)) {
        Py_ssize_t length;
        const char *text = PyUnicode_AsUTF8AndSize(value, &length);
        return text == NULL ? -1 : sqlite3_bind_text(statement, at, text, (int)length, SQLITE_TRANSIENT);
    }
    if (PyFloat_Check(value))
        return sqlite3_bind_double(statement, at, PyFloat_AS_DOUBLE(value));
    if (PyBytes_Check(value))
        return sqlite3_bind_blob(statement, at, PyBytes_AS_STRING(value), (int)PyBytes_GET_SIZE(value),
                                 SQLITE_TRANSIENT);
    PyErr_Format(PyExc_TypeError, "a value of type %s cannot go into a trace", Py_TYPE(value)->tp_name);
    return -1;
}

static PyObject *insert(PyObject *module, PyObject *args)
{
    const char *path, *sql;
    PyObject *rows;
    if (!PyArg_ParseTuple(args, "ssO", &path, &sql, &rows))
        return NULL;
    PyObject *iterator = PyObject_GetIter(rows);
    if (iterator == NULL)
        return NULL;
    sqlite3 *db = NULL;
    sqlite3_stmt *statement = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        database_error(db, "cannot open the trace");
        goto done;
    }
    /* as the writer's own connection: a .partial is thrown away on a crash */
    if (sqlite3_exec(db, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, sql, -1, &statement, NULL) != SQLITE_OK) {
        database_error(db, "cannot insert into the trace");
        goto done;
    }
    int columns = sqlite3_bind_parameter_count(statement);
    PyObject *row;
    while ((row = PyIter_Next(iterator)) != NULL) {
        PyObject *fast = PySequence_Fast(row, "a row is a sequence");
        Py_DECREF(row);
        if (fast == NULL)
            goto done;
        if (PySequence_Fast_GET_SIZE(fast) != columns) {
            PyErr_Format(PyExc_ValueError, "a row of %zd values for %d columns", PySequence_Fast_GET_SIZE(fast),
                         columns);
            Py_DECREF(fast);
            goto done;
        }
        int failed = 0;
        for (int i = 0; i < columns && !failed; i++) {
            int status = bind(statement, i + 1, PySequence_Fast_GET_ITEM(fast, i));
            if (status < 0)
                failed = 1;
            else if (status != SQLITE_OK)
                failed = 2;
        }
        Py_DECREF(fast);
        if (failed == 1)
            goto done;
        if (failed == 2 || sqlite3_step(statement) != SQLITE_DONE) {
            database_error(db, "cannot insert into the trace");
            goto done;
        }
        sqlite3_reset(statement);
    }
    if (!PyErr_Occurred() && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        database_error(db, "cannot commit into the trace");
done:
    Py_DECREF(iterator);
    sqlite3_finalize(statement);
    if (db != NULL) {
        if (PyErr_Occurred())   /* a .partial that failed is discarded: leave nothing half-written open */
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_close(db);
    }
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"insert", insert, METH_VARARGS,
     "insert(path, sql, rows): runs the INSERT statement `sql` once per row, in one transaction."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_bulk_insert", "Rows into a trace through SQLite's API (traces/bulk_insert.c).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__bulk_insert(void)
{
    return PyModule_Create(&module);
}
