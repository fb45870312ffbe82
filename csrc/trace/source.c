/*
** source.c: access-path chains for values the tracer read.  See source.h.
*/
#include "source.h"

#include "guards.h"

static PyTypeObject *source_type = NULL;

static void source_dealloc(fj_Source *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    Py_CLEAR(self->key);
    Py_CLEAR(self->parent);
    Py_CLEAR(self->text);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyObject *source_repr(fj_Source *self)
{
    return Py_NewRef(self->text);
}

static PyType_Slot source_slots[] = {
    {Py_tp_dealloc, source_dealloc},
    {Py_tp_repr, source_repr},
    {Py_tp_str, source_repr},
    {0, NULL},
};
static PyType_Spec source_spec = {"framejit._C.Source", sizeof(fj_Source), 0, Py_TPFLAGS_DEFAULT,
                                  source_slots};

/* Makes a source; steals nothing. Returns a new reference, NULL on error. */
static fj_Source *source_new(fj_SourceKind kind, PyObject *key, Py_ssize_t index,
                             fj_Source *parent)
{
    fj_Source *s = PyObject_New(fj_Source, source_type);
    if (s == NULL)
        return NULL;
    Py_INCREF(source_type);
    s->kind = kind;
    s->key = Py_XNewRef(key);
    s->index = index;
    s->parent = (fj_Source *)Py_XNewRef((PyObject *)parent);
    switch (kind) {
    case FJ_SRC_LOCAL:
    case FJ_SRC_CLOSURE:
        s->text = PyUnicode_FromFormat("L[%R]", key);
        break;
    case FJ_SRC_GLOBAL:
        s->text = PyUnicode_FromFormat("G[%R]", key);
        break;
    case FJ_SRC_BUILTIN:
        s->text = PyUnicode_FromFormat("G['__builtins__'][%R]", key);
        break;
    case FJ_SRC_ATTR:
        s->text = PyUnicode_FromFormat("%U.%U", parent->text, key);
        break;
    case FJ_SRC_ITEM:
        s->text = PyUnicode_FromFormat("%U[%R]", parent->text, key);
        break;
    case FJ_SRC_INDEX:
        s->text = PyUnicode_FromFormat("%U[%zd]", parent->text, index);
        break;
    }
    if (s->text == NULL) {
        Py_DECREF(s);
        return NULL;
    }
    return s;
}

fj_Source *fj_source_local(Py_ssize_t index, PyObject *name)
{
    return source_new(FJ_SRC_LOCAL, name, index, NULL);
}
fj_Source *fj_source_global(PyObject *name)
{
    return source_new(FJ_SRC_GLOBAL, name, 0, NULL);
}
fj_Source *fj_source_builtin(PyObject *name)
{
    return source_new(FJ_SRC_BUILTIN, name, 0, NULL);
}
fj_Source *fj_source_closure(Py_ssize_t index, PyObject *name)
{
    return source_new(FJ_SRC_CLOSURE, name, index, NULL);
}
fj_Source *fj_source_attr(fj_Source *parent, PyObject *name)
{
    return source_new(FJ_SRC_ATTR, name, 0, parent);
}
fj_Source *fj_source_item(fj_Source *parent, PyObject *key)
{
    return source_new(FJ_SRC_ITEM, key, 0, parent);
}
fj_Source *fj_source_index(fj_Source *parent, Py_ssize_t index)
{
    return source_new(FJ_SRC_INDEX, NULL, index, parent);
}

PyObject *fj_source_manager(PyObject *root, fj_Source *src)
{
    PyObject *parent = NULL;
    if (src->parent != NULL && (parent = fj_source_manager(root, src->parent)) == NULL)
        return NULL;
    switch (src->kind) {
    case FJ_SRC_LOCAL:
        return fj_guard_local(root, src->index, src->key);
    case FJ_SRC_GLOBAL:
        return fj_guard_global(root, src->key);
    case FJ_SRC_BUILTIN:
        return fj_guard_builtin(root, src->key);
    case FJ_SRC_CLOSURE:
        return fj_guard_closure_cell(root, src->index, src->key);
    case FJ_SRC_ATTR:
        return fj_guard_attr(parent, src->key);
    case FJ_SRC_ITEM:
        return fj_guard_item(parent, src->key);
    case FJ_SRC_INDEX:
        return fj_guard_index(parent, src->index);
    }
    PyErr_SetString(PyExc_SystemError, "framejit: bad source kind");
    return NULL;
}

PyObject *fj_source_placeholder_name(fj_Source *src)
{
    /* l_x_, g_w_, l_self_w_, l_xs_0_ ... : lower-case kind letter, then the path. */
    PyObject *out = NULL;
    switch (src->kind) {
    case FJ_SRC_LOCAL:
    case FJ_SRC_CLOSURE:
        return PyUnicode_FromFormat("l_%U_", src->key);
    case FJ_SRC_GLOBAL:
        return PyUnicode_FromFormat("g_%U_", src->key);
    case FJ_SRC_BUILTIN:
        return PyUnicode_FromFormat("b_%U_", src->key);
    default:
        break;
    }
    PyObject *base = fj_source_placeholder_name(src->parent);
    if (base == NULL)
        return NULL;
    if (src->kind == FJ_SRC_INDEX)
        out = PyUnicode_FromFormat("%U%zd_", base, src->index);
    else if (PyUnicode_Check(src->key) && PyUnicode_IsIdentifier(src->key))
        out = PyUnicode_FromFormat("%U%U_", base, src->key);
    else
        out = PyUnicode_FromFormat("%Ukey_", base);
    Py_DECREF(base);
    return out;
}

int fj_source_init(PyObject *module)
{
    source_type = (PyTypeObject *)PyType_FromSpec(&source_spec);
    return source_type == NULL ? -1 : 0;
}

PyObject *fj_source_eval(fj_Source *src, const fj_FrameView *view)
{
    PyObject *parent = NULL, *r = NULL;
    if (src->parent != NULL && (parent = fj_source_eval(src->parent, view)) == NULL)
        return NULL;
    switch (src->kind) {
    case FJ_SRC_LOCAL:
        r = src->index < view->nlocalsplus ? view->localsplus[src->index] : NULL;
        if (r == NULL)
            PyErr_Format(PyExc_UnboundLocalError, "%U is not bound", src->text);
        Py_XINCREF(r);
        break;
    case FJ_SRC_GLOBAL:
    case FJ_SRC_BUILTIN: {
        PyObject *d = src->kind == FJ_SRC_GLOBAL ? view->globals : view->builtins;
        int found = d != NULL ? fj_guards_dict_get(d, src->key, &r) : 0;
        if (found == 0)
            PyErr_Format(PyExc_NameError, "%U is not defined", src->text);
        r = found > 0 ? Py_NewRef(r) : NULL;
        break;
    }
    case FJ_SRC_CLOSURE:
        if (view->closure != NULL && src->index < PyTuple_GET_SIZE(view->closure))
            r = PyCell_GET(PyTuple_GET_ITEM(view->closure, src->index));
        if (r == NULL)
            PyErr_Format(PyExc_NameError, "%U is empty", src->text);
        Py_XINCREF(r);
        break;
    case FJ_SRC_ATTR: {
        int found = fj_guards_getattr(parent, src->key, &r);
        if (found == 0)
            PyErr_Format(PyExc_AttributeError, "%U is missing", src->text);
        if (found <= 0)
            r = NULL;
        break;
    }
    case FJ_SRC_ITEM: {
        /* read as the guards read it: no program __getitem__, __hash__, __eq__ */
        int found = fj_guards_dict_get(parent, src->key, &r);
        if (found == 0)
            PyErr_Format(PyExc_KeyError, "%U is missing", src->text);
        r = found > 0 ? Py_NewRef(r) : NULL;
        break;
    }
    case FJ_SRC_INDEX:
        if ((PyList_CheckExact(parent) || PyTuple_CheckExact(parent)) && src->index >= 0 &&
            src->index < Py_SIZE(parent))
            r = Py_NewRef(PySequence_Fast_GET_ITEM(parent, src->index));
        else
            PyErr_Format(PyExc_IndexError, "%U is missing", src->text);
        break;
    }
    Py_XDECREF(parent);
    return r;
}
