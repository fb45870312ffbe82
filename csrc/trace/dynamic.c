/*
** dynamic.c: automatic dynamic shapes, the per-code memory.  See dynamic.h.
**
** Keys are source texts ("L['x']", "L['self'].n"), the same texts the
** tracer's inputs use, so the next trace finds an input's decision by its
** source.  Ints and sizes are compared as C values or exact ints: nothing
** here runs the program's code.
*/
#include "dynamic.h"

#include "fj_numpy.h"
#include "guard_values.h"
#include "tensor_meta.h"
#include "torchlib.h"
#include "trace.h"

static PyObject *dict_or_new(PyObject **slot)
{
    if (*slot == NULL)
        *slot = PyDict_New();
    return *slot;
}

/* What is remembered of 'value': the int itself, an exact array's or a
   contiguous tensor's sizes, or NULL (without an exception) for anything else. */
static PyObject *seen_of(PyObject *value)
{
    if (PyLong_CheckExact(value))
        return Py_NewRef(value);
    int64_t sizes[FJ_TENSOR_MAX_DIMS];
    int nd = 0, r = fj_trace_input_sizes(value, &nd, sizes);
    return r > 0 ? fj_int64_tuple(nd, sizes) : NULL;
}

int fj_dynamic_record(fj_DynState *ds, PyObject *inputs, const fj_FrameView *view)
{
    PyObject *seen = dict_or_new(&ds->seen);
    if (seen == NULL)
        return -1;
    Py_ssize_t pos = 0;
    PyObject *text, *var;
    while (PyDict_Next(inputs, &pos, &text, &var)) {
        fj_Source *src = ((fj_Var *)var)->source;
        if (src == NULL || ((fj_Var *)var)->size_input)
            continue; /* (a size read: its array's dims are watched) */
        PyObject *value = NULL;
        int got = fj_source_fetch(src, view, &value);
        if (got <= 0) {
            if (got < 0)
                return -1;
            continue;
        }
        PyObject *rec = seen_of(value);
        Py_DECREF(value);
        if (rec == NULL) {
            if (PyErr_Occurred())
                return -1;
            continue;
        }
        PyObject *pair = PyTuple_Pack(2, (PyObject *)src, rec);
        Py_DECREF(rec);
        if (pair == NULL || PyDict_SetItem(seen, text, pair) < 0) {
            Py_XDECREF(pair);
            return -1;
        }
        Py_DECREF(pair);
    }
    return 0;
}

/* An int input changed: 'text' becomes symbolic.  The message, None when
   it already was, NULL on error. */
static PyObject *int_changed(fj_DynState *ds, PyObject *text, PyObject *old, PyObject *cur)
{
    int same = PyObject_RichCompareBool(old, cur, Py_EQ); /* exact ints */
    int known = same == 0 ? PySet_Contains(ds->ints, text) : 1;
    if (same < 0 || known < 0)
        return NULL;
    if (same || known)
        return Py_NewRef(Py_None);
    if (PySet_Add(ds->ints, text) < 0)
        return NULL;
    /* the guard printer's text: a huge int's repr raises ValueError */
    PyObject *a = fj_guards_value_text(old, 60), *b = a ? fj_guards_value_text(cur, 60) : NULL;
    PyObject *msg = b ? PyUnicode_FromFormat("automatic dynamic: %U changed %U -> %U, now a "
                                             "symbolic int", text, a, b)
                      : NULL;
    Py_XDECREF(a);
    Py_XDECREF(b);
    return msg;
}

/* An array input of the same rank: the dims whose size changed become
   dynamic.  The message, None when nothing new, NULL on error. */
static PyObject *dims_changed(fj_DynState *ds, PyObject *text, PyObject *old, int nd, const int64_t *sizes)
{
    PyObject *have = PyDict_GetItemWithError(ds->dims, text);
    if (have == NULL && PyErr_Occurred())
        return NULL;
    PyObject *list = have ? PySequence_List(have) : PyList_New(0);
    if (list == NULL)
        return NULL;
    int changed = 0;
    for (int d = 0; d < nd; d++) {
        if (PyLong_AsLongLong(PyTuple_GET_ITEM(old, d)) == sizes[d])
            continue;
        PyObject *dobj = PyLong_FromLong(d);
        int in = dobj ? PySequence_Contains(list, dobj) : -1;
        if (in == 0) {
            in = PyList_Append(list, dobj);
            changed = 1;
        }
        Py_XDECREF(dobj);
        if (in < 0) {
            Py_DECREF(list);
            return NULL;
        }
    }
    PyObject *t = changed ? PyList_AsTuple(list) : NULL;
    Py_DECREF(list);
    if (!changed)
        return Py_NewRef(Py_None);
    if (t == NULL || PyDict_SetItem(ds->dims, text, t) < 0) {
        Py_XDECREF(t);
        return NULL;
    }
    PyObject *shape = fj_int64_tuple(nd, sizes);
    PyObject *msg = shape ? PyUnicode_FromFormat("automatic dynamic: %U size %R -> %R, dims %R "
                                                 "now dynamic", text, old, shape, t)
                          : NULL;
    Py_XDECREF(shape);
    Py_DECREF(t);
    return msg;
}

int fj_dynamic_update(fj_DynState *ds, const fj_FrameView *view, PyObject *messages)
{
    if (ds->seen == NULL)
        return 0;
    if (ds->ints == NULL && (ds->ints = PySet_New(NULL)) == NULL)
        return -1;
    if (dict_or_new(&ds->dims) == NULL)
        return -1;
    Py_ssize_t pos = 0;
    PyObject *text, *pair;
    while (PyDict_Next(ds->seen, &pos, &text, &pair)) {
        fj_Source *src = (fj_Source *)PyTuple_GET_ITEM(pair, 0);
        PyObject *old = PyTuple_GET_ITEM(pair, 1);
        PyObject *cur = NULL, *msg = NULL;
        int got = fj_source_fetch(src, view, &cur);
        if (got <= 0) {
            if (got < 0)
                return -1;
            continue;
        }
        msg = Py_NewRef(Py_None);
        if (PyLong_CheckExact(old) && PyLong_CheckExact(cur))
            Py_SETREF(msg, int_changed(ds, text, old, cur));
        else if (PyTuple_Check(old)) {
            int64_t sizes[FJ_TENSOR_MAX_DIMS];
            int nd = 0, r = fj_trace_input_sizes(cur, &nd, sizes);
            if (r < 0)
                Py_CLEAR(msg);
            else if (r > 0 && nd == PyTuple_GET_SIZE(old))
                Py_SETREF(msg, dims_changed(ds, text, old, nd, sizes));
        }
        Py_DECREF(cur);
        if (msg == NULL)
            return -1;
        int r = msg == Py_None ? 0 : PyList_Append(messages, msg);
        Py_DECREF(msg);
        if (r < 0)
            return -1;
    }
    return 0;
}

void fj_dynamic_clear(fj_DynState *ds)
{
    Py_CLEAR(ds->seen);
    Py_CLEAR(ds->ints);
    Py_CLEAR(ds->dims);
}
