/* Rows into a table of a trace through SQLite's own API: what TraceWriter uses for the tables of
 * very many rows (per-call events: an import's millions; a long run's coverage runs: a million).
 * The sqlite3 module binds and checks
 * every value through Python's object protocol and runs the statement once per row; here rows are
 * bound directly and go in 64 to a statement (see ROWS_PER_STATEMENT): a third of the time.
 *
 * It writes on a connection of its own to the writer's .partial file, inside one transaction, while
 * the writer's connection holds none (the writer commits first; SQLite sees the file changed at its
 * next statement). Values: int (64-bit), str, None, float, bytes; anything else is a TypeError.
 * Built by setup.py as casstrace.traces._bulk_insert (optional: without it, executemany). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <sqlite3.h>
#include <string.h>

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

static int bind(sqlite3_stmt *statement, int at, PyObject *value, sqlite3_destructor_type text_lifetime)
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
        return text == NULL ? -1 : sqlite3_bind_text(statement, at, text, (int)length, text_lifetime);
    }
    if (PyFloat_Check(value))
        return sqlite3_bind_double(statement, at, PyFloat_AS_DOUBLE(value));
    if (PyBytes_Check(value))
        return sqlite3_bind_blob(statement, at, PyBytes_AS_STRING(value), (int)PyBytes_GET_SIZE(value),
                                 SQLITE_TRANSIENT);
    PyErr_Format(PyExc_TypeError, "a value of type %s cannot go into a trace", Py_TYPE(value)->tp_name);
    return -1;
}

/* Rows go in ROWS_PER_STATEMENT at a time, one multi-row INSERT each: SQLite's cost per statement
 * run (step, reset, the VDBE's setup) is most of a narrow row's, and bound in one step it is paid
 * once per chunk (an import's events went in ~45% faster). 64 rows of 11 columns stay far below
 * SQLite's limit on parameters (999 before 3.32). */
#define ROWS_PER_STATEMENT 64

/* "INSERT INTO table(a, b) VALUES (?, ?), (?, ?) ..." for `rows` rows; NULL with an exception set. */
static char *insert_sql(const char *table, PyObject *columns, int rows)
{
    Py_ssize_t count = PyTuple_GET_SIZE(columns);
    size_t names = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *name = PyTuple_GET_ITEM(columns, i);
        if (!PyUnicode_Check(name)) {
            PyErr_SetString(PyExc_TypeError, "a column name is a str");
            return NULL;
        }
        Py_ssize_t length;
        if (PyUnicode_AsUTF8AndSize(name, &length) == NULL)
            return NULL;
        names += (size_t)length + 2;
    }
    size_t group = 3 * (size_t)count + 2;   /* "(?, ?)" and the ", " before the next */
    char *sql = PyMem_Malloc(strlen(table) + names + 32 + group * (size_t)rows);
    if (sql == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    char *at = sql + sprintf(sql, "INSERT INTO %s(", table);
    for (Py_ssize_t i = 0; i < count; i++)
        at += sprintf(at, i ? ", %s" : "%s", PyUnicode_AsUTF8(PyTuple_GET_ITEM(columns, i)));
    at += sprintf(at, ") VALUES ");
    for (int row = 0; row < rows; row++) {
        at += sprintf(at, row ? ", (" : "(");
        for (Py_ssize_t i = 0; i < count; i++)
            at += sprintf(at, i ? ", ?" : "?");
        at += sprintf(at, ")");
    }
    return sql;
}

/* The values of `row` bound from parameter `first` on: 0, -1 with a Python exception set, or a
 * SQLite error code. */
static int bind_row(sqlite3_stmt *statement, int first, PyObject *row, Py_ssize_t columns)
{
    PyObject *fast = PySequence_Fast(row, "a row is a sequence");
    if (fast == NULL)
        return -1;
    if (PySequence_Fast_GET_SIZE(fast) != columns) {
        PyErr_Format(PyExc_ValueError, "a row of %zd values for %zd columns", PySequence_Fast_GET_SIZE(fast),
                     columns);
        Py_DECREF(fast);
        return -1;
    }
    /* A tuple or list row is its own values, and insert() holds every row of a statement until the
     * statement has run: its strs keep their UTF-8 form that long, so SQLite need not copy it
     * (SQLITE_STATIC). Another sequence's values live in `fast` only, freed below: SQLite copies. */
    sqlite3_destructor_type text_lifetime = fast == row ? SQLITE_STATIC : SQLITE_TRANSIENT;
    int status = SQLITE_OK;
    for (Py_ssize_t i = 0; i < columns && status == SQLITE_OK; i++)
        status = bind(statement, first + (int)i, PySequence_Fast_GET_ITEM(fast, i), text_lifetime);
    Py_DECREF(fast);
    return status;
}

static PyObject *insert(PyObject *module, PyObject *args)
{
    const char *path, *table;
    PyObject *columns, *rows;
    if (!PyArg_ParseTuple(args, "ssO!O", &path, &table, &PyTuple_Type, &columns, &rows))
        return NULL;
    Py_ssize_t width = PyTuple_GET_SIZE(columns);
    PyObject *iterator = PyObject_GetIter(rows);
    if (iterator == NULL)
        return NULL;
    PyObject *pending[ROWS_PER_STATEMENT];
    int held = 0;
    sqlite3 *db = NULL;
    sqlite3_stmt *chunk = NULL, *single = NULL;
    char *chunk_sql = insert_sql(table, columns, ROWS_PER_STATEMENT);
    char *single_sql = chunk_sql == NULL ? NULL : insert_sql(table, columns, 1);
    if (single_sql == NULL)
        goto done;
    /* NOMUTEX: only this call uses the connection, so binding a value need not take its lock */
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        database_error(db, "cannot open the trace");
        goto done;
    }
    /* as the writer's own connection: a .partial is thrown away on a crash */
    if (sqlite3_exec(db, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, chunk_sql, -1, &chunk, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, single_sql, -1, &single, NULL) != SQLITE_OK) {
        database_error(db, "cannot insert into the trace");
        goto done;
    }
    for (;;) {
        PyObject *row = PyIter_Next(iterator);
        if (row != NULL) {
            pending[held++] = row;
            if (held < ROWS_PER_STATEMENT)
                continue;
        } else if (PyErr_Occurred()) {
            goto done;
        }
        if (held == 0)
            break;
        /* a full chunk in one statement; what is left at the end, row by row */
        int per_statement = held == ROWS_PER_STATEMENT ? ROWS_PER_STATEMENT : 1;
        sqlite3_stmt *statement = per_statement == ROWS_PER_STATEMENT ? chunk : single;
        for (int first = 0; first < held; first += per_statement) {
            int status = SQLITE_OK;
            for (int k = 0; k < per_statement && status == SQLITE_OK; k++)
                status = bind_row(statement, 1 + k * (int)width, pending[first + k], width);
            if (status < 0)
                goto done;
            if (status != SQLITE_OK || sqlite3_step(statement) != SQLITE_DONE) {
                database_error(db, "cannot insert into the trace");
                goto done;
            }
            sqlite3_reset(statement);
        }
        for (int k = 0; k < held; k++)
            Py_DECREF(pending[k]);
        held = 0;
        if (row == NULL)
            break;
    }
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        database_error(db, "cannot commit into the trace");
done:
    for (int k = 0; k < held; k++)
        Py_DECREF(pending[k]);
    Py_DECREF(iterator);
    PyMem_Free(chunk_sql);
    PyMem_Free(single_sql);
    sqlite3_finalize(chunk);
    sqlite3_finalize(single);
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
     "insert(path, table, columns, rows): inserts the rows (sequences of len(columns) values) into "
     "table(columns), in one transaction."},
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
