/*
** source.c: access paths: kinds, texts, the one fetch.  See source.h.
*/
#include "source.h"

#include "guard_values.h"

static PyTypeObject *source_type = NULL; /* strong */

static void source_dealloc(fj_Source *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
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

/* A source is tracked only when its chain holds a key the collector tracks
   (an object as an item key, which could refer back to a guard tree that
   holds the source); a tree's managers visit their source.  No tp_clear:
   sources are immutable, and clearing the managers breaks such a cycle. */
static int source_traverse(fj_Source *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->key);
    Py_VISIT(self->parent);
    return 0;
}

static PyType_Slot source_slots[] = {
    {Py_tp_dealloc, source_dealloc},
    {Py_tp_repr, source_repr},
    {Py_tp_str, source_repr},
    {Py_tp_traverse, source_traverse},
    {0, NULL},
};
static PyType_Spec source_spec = {"framejit._C.Source", sizeof(fj_Source), 0,
                                  Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, source_slots};

int fj_source_check(PyObject *o)
{
    return source_type != NULL && Py_IS_TYPE(o, source_type);
}

/* The printed form of a source: its parent's text and the step, an item key
   in the guards' words (a repr that runs none of the program's code). */
static PyObject *source_text(fj_SourceKind kind, PyObject *key, Py_ssize_t index,
                             fj_Source *parent)
{
    switch (kind) {
    case FJ_SRC_LOCAL:
    case FJ_SRC_CLOSURE:
        return PyUnicode_FromFormat("L[%R]", key);
    case FJ_SRC_GLOBAL:
        return PyUnicode_FromFormat("G[%R]", key);
    case FJ_SRC_BUILTIN:
        return PyUnicode_FromFormat("G['__builtins__'][%R]", key);
    case FJ_SRC_MODULE:
        return PyUnicode_FromFormat("sys.modules[%R]", key);
    case FJ_SRC_ATTR:
        return PyUnicode_FromFormat("%U.%U", parent->text, key);
    case FJ_SRC_ITEM: {
        PyObject *k = fj_guards_value_text(key, 0);
        PyObject *r = k != NULL ? PyUnicode_FromFormat("%U[%U]", parent->text, k) : NULL;
        Py_XDECREF(k);
        return r;
    }
    case FJ_SRC_INDEX:
        return PyUnicode_FromFormat("%U[%zd]", parent->text, index);
    case FJ_SRC_TYPE:
        return PyUnicode_FromFormat("type(%U)", parent->text);
    case FJ_SRC_SIZE:
        return PyUnicode_FromFormat("%U.shape[%zd]", parent->text, index);
    }
    PyErr_SetString(PyExc_SystemError, "framejit: bad source kind");
    return NULL;
}

/* Makes a source; steals nothing.  Names (every kind but ITEM, INDEX, TYPE)
   must be str.  Returns a new reference, NULL on error. */
static fj_Source *source_new(fj_SourceKind kind, PyObject *key, Py_ssize_t index,
                             fj_Source *parent)
{
    if (source_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "framejit sources are not initialized");
        return NULL;
    }
    if (kind != FJ_SRC_ITEM && kind != FJ_SRC_INDEX && kind != FJ_SRC_TYPE && kind != FJ_SRC_SIZE &&
        (key == NULL || !PyUnicode_Check(key))) {
        PyErr_Format(PyExc_TypeError, "guard name must be a str, not %.100s",
                     key ? Py_TYPE(key)->tp_name : "NULL");
        return NULL;
    }
    if (index < 0 && (kind == FJ_SRC_LOCAL || kind == FJ_SRC_CLOSURE)) {
        PyErr_Format(PyExc_ValueError, "%s index must be >= 0",
                     kind == FJ_SRC_LOCAL ? "local slot" : "closure cell");
        return NULL;
    }
    fj_Source *s = PyObject_GC_New(fj_Source, source_type);
    if (s == NULL)
        return NULL;
    Py_INCREF(source_type);
    s->kind = kind;
    s->key = Py_XNewRef(key);
    s->index = index;
    s->parent = (fj_Source *)Py_XNewRef((PyObject *)parent);
    s->text = source_text(kind, key, index, parent);
    if (s->text == NULL) {
        Py_DECREF(s);
        return NULL;
    }
    if ((key != NULL && PyObject_GC_IsTracked(key)) ||
        (parent != NULL && PyObject_GC_IsTracked((PyObject *)parent)))
        PyObject_GC_Track(s);
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
fj_Source *fj_source_size_of(fj_Source *parent, Py_ssize_t dim)
{
    if (dim < 0) {
        PyErr_SetString(PyExc_ValueError, "a size source's dim must be >= 0");
        return NULL;
    }
    return source_new(FJ_SRC_SIZE, NULL, dim, parent);
}
fj_Source *fj_source_type_of(fj_Source *parent)
{
    return source_new(FJ_SRC_TYPE, NULL, 0, parent);
}
fj_Source *fj_source_module(PyObject *name)
{
    return source_new(FJ_SRC_MODULE, name, 0, NULL);
}

int fj_source_fetch(const fj_Source *src, const fj_FrameView *view, PyObject **out)
{
    PyObject *parent = NULL;
    if (src->parent != NULL) {
        int r = fj_source_fetch(src->parent, view, &parent);
        if (r <= 0)
            return r;
    }
    int r = fj_source_fetch_step(src, parent, 0, view, out);
    Py_XDECREF(parent);
    return r;
}

int fj_source_same_step(const fj_Source *a, const fj_Source *b)
{
    if (a->kind != b->kind)
        return 0;
    switch (a->kind) {
    case FJ_SRC_LOCAL:
    case FJ_SRC_CLOSURE:
    case FJ_SRC_INDEX:
    case FJ_SRC_SIZE:
        return a->index == b->index;
    case FJ_SRC_TYPE:
        return 1;
    default:
        if (a->key == b->key)
            return 1;
        /* no program __eq__: keys that are not builtin values match by identity only */
        return fj_value_kind(a->key, 0) != EQ_NONE ? fj_value_same(a->key, b->key) : 0;
    }
}

int fj_source_same(const fj_Source *a, const fj_Source *b)
{
    for (; a != NULL && b != NULL; a = a->parent, b = b->parent) {
        if (a == b)
            return 1;
        int r = fj_source_same_step(a, b);
        if (r <= 0)
            return r;
    }
    return a == b; /* both chains ended together */
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
    case FJ_SRC_MODULE: {
        /* m_numpy_linalg_: the dotted name's dots as underscores */
        PyObject *dot = PyUnicode_FromString("."), *us = PyUnicode_FromString("_");
        PyObject *n = dot && us ? PyUnicode_Replace(src->key, dot, us, -1) : NULL;
        PyObject *r = n ? PyUnicode_FromFormat("m_%U_", n) : NULL;
        Py_XDECREF(dot);
        Py_XDECREF(us);
        Py_XDECREF(n);
        return r;
    }
    default:
        break;
    }
    PyObject *base = fj_source_placeholder_name(src->parent);
    if (base == NULL)
        return NULL;
    if (src->kind == FJ_SRC_INDEX)
        out = PyUnicode_FromFormat("%U%zd_", base, src->index);
    else if (src->kind == FJ_SRC_SIZE)
        out = PyUnicode_FromFormat("%Ushape_%zd_", base, src->index);
    else if (src->kind == FJ_SRC_TYPE)
        out = PyUnicode_FromFormat("%Utype_", base);
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
