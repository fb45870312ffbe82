/*
** cache.c: the per-code-object cache of guarded code.  See cache.h.
**
** The ExtraState is a plain C struct owned by the code object's extra slot;
** CPython calls extra_state_free when the code object dies or when the slot
** is overwritten (so fj_cache_reset is "set the slot to NULL").  Entries are
** _CacheEntry objects in a small array; move-to-front is a memmove of a few
** pointers.
*/
#include "cache.h"
#include "fj_array.h"

#include <string.h>

PyTypeObject *fj_CacheEntry_Type = NULL;
PyObject *fj_guard_error_hook = NULL;
int (*fj_cache_owner_eq)(PyObject *owner, PyObject *callback) = NULL;
static Py_ssize_t extra_index = -1;

#if FJ_SUPPORTED

/* ---------------------------------------------------------------- entries */

static int cacheentry_clear(fj_CacheEntry *self)
{
    Py_CLEAR(self->guard_manager);
    Py_CLEAR(self->code);
    Py_CLEAR(self->compile_id);
    Py_CLEAR(self->owner);
    return 0;
}

static void cacheentry_dealloc(fj_CacheEntry *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    cacheentry_clear(self);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static int cacheentry_traverse(fj_CacheEntry *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->guard_manager);
    Py_VISIT(self->code);
    Py_VISIT(self->compile_id);
    Py_VISIT(self->owner);
    return 0;
}

static PyObject *cacheentry_code(fj_CacheEntry *self)
{
    PyObject *v = self->code;
    if (v != NULL && self->own_code)
        v = fj_weakref_object(v);
    return v ? v : Py_None; /* borrowed */
}

static PyObject *cacheentry_repr(fj_CacheEntry *self)
{
    return PyUnicode_FromFormat("<_CacheEntry compile_id=%R code=%R>", self->compile_id,
                                cacheentry_code(self));
}

static PyObject *cacheentry_get(fj_CacheEntry *self, void *which)
{
    if ((Py_ssize_t)which == (Py_ssize_t)offsetof(fj_CacheEntry, code))
        return Py_NewRef(cacheentry_code(self));
    PyObject *v = *(PyObject **)((char *)self + (Py_ssize_t)which);
    return Py_NewRef(v ? v : Py_None);
}

static PyGetSetDef cacheentry_getset[] = {
    {"guard_manager", (getter)cacheentry_get, NULL, "the RootGuardManager that admits this entry",
     (void *)offsetof(fj_CacheEntry, guard_manager)},
    {"code", (getter)cacheentry_get, NULL, "the code object run on a hit",
     (void *)offsetof(fj_CacheEntry, code)},
    {"compile_id", (getter)cacheentry_get, NULL, "the compile id, e.g. '0/1'",
     (void *)offsetof(fj_CacheEntry, compile_id)},
    {NULL},
};

static PyObject *cacheentry_new_py(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    PyErr_SetString(PyExc_TypeError, "_CacheEntry objects are made by the cache, not by hand");
    return NULL;
}

static PyType_Slot cacheentry_slots[] = {
    {Py_tp_dealloc, cacheentry_dealloc},
    {Py_tp_traverse, cacheentry_traverse},
    {Py_tp_clear, cacheentry_clear},
    {Py_tp_repr, cacheentry_repr},
    {Py_tp_getset, cacheentry_getset},
    {Py_tp_new, cacheentry_new_py},
    {Py_tp_doc, "One guarded code object in a code object's cache."},
    {0, NULL},
};

static PyType_Spec cacheentry_spec = {
    "framejit._C.eval_frame._CacheEntry", sizeof(fj_CacheEntry), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, cacheentry_slots};

/* ------------------------------------------------------------ extra state */

static void extra_state_free(void *p)
{
    fj_ExtraState *es = (fj_ExtraState *)p;
    if (es == NULL)
        return;
    /* Clear the array first: dropping an entry may run arbitrary code. */
    fj_CacheEntry **entries = es->entries;
    Py_ssize_t n = es->n;
    PyObject *fs = es->frame_state;
    es->entries = NULL;
    es->n = es->cap = 0;
    es->frame_state = NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        Py_DECREF(entries[i]);
    PyMem_Free(entries);
    Py_XDECREF(fs);
    fj_dynamic_clear(&es->dyn);
    PyMem_Free(es);
}

PyObject *fj_cache_guard_failures(fj_ExtraState *es, const fj_FrameView *view)
{
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out && i < es->n; i++) {
        fj_CacheEntry *e = es->entries[i];
        PyObject *text = fj_guards_check_verbose(e->guard_manager, view);
        if (text == NULL) { /* a guard raised: that is its failure */
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyErr_NormalizeException(&type, &value, &tb);
            text = value ? PyUnicode_FromFormat("(guard raised %R)", value) : NULL;
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
        }
        else if (text == Py_None)
            Py_SETREF(text, PyUnicode_FromString("(passes now)"));
        PyObject *pair = text ? PyTuple_Pack(2, e->compile_id, text) : NULL;
        Py_XDECREF(text);
        if (pair == NULL || PyList_Append(out, pair) < 0)
            Py_CLEAR(out);
        Py_XDECREF(pair);
    }
    return out;
}

fj_ExtraState *fj_cache_get(PyCodeObject *co)
{
    return (fj_ExtraState *)fj_code_get_extra(co, extra_index);
}

fj_ExtraState *fj_cache_get_or_create(PyCodeObject *co)
{
    fj_ExtraState *es = fj_cache_get(co);
    if (es != NULL)
        return es;
    es = PyMem_Calloc(1, sizeof(*es));
    if (es == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    es->frame_state = PyDict_New();
    if (es->frame_state == NULL || fj_code_set_extra(co, extra_index, es) < 0) {
        Py_XDECREF(es->frame_state);
        PyMem_Free(es);
        return NULL;
    }
    return es;
}

void fj_cache_reset(PyCodeObject *co)
{
    if (fj_cache_get(co) == NULL)
        return;
    /* Dropping the entries may drop the last other reference to 'co'; keep
       it alive until its slot is cleared (CPython frees the old value
       before it stores the new one). */
    Py_INCREF(co);
    if (fj_code_set_extra(co, extra_index, NULL) < 0)
        PyErr_WriteUnraisable((PyObject *)co);
    Py_DECREF(co);
}

PyObject *fj_view_locals_dict(PyCodeObject *co, const fj_FrameView *view, int fresh)
{
    PyObject *d = PyDict_New();
    if (d == NULL)
        return NULL;
    int n = FJ_CODE_NLOCALSPLUS(co), nfree = FJ_CODE_NFREEVARS(co);
    for (int i = 0; i < n; i++) {
        int kind = fj_code_local_kind(co, i);
        PyObject *v;
        if (kind & FJ_FAST_FREE) {
            Py_ssize_t j = i - (n - nfree);
            if (view->closure == NULL || j >= PyTuple_GET_SIZE(view->closure))
                continue;
            v = PyCell_GET(PyTuple_GET_ITEM(view->closure, j));
        }
        else {
            v = i < view->nlocalsplus ? view->localsplus[i] : NULL;
            if (v != NULL && (kind & FJ_FAST_CELL) && !fresh && PyCell_Check(v))
                v = PyCell_GET(v);
        }
        if (v != NULL && PyDict_SetItem(d, fj_code_local_name(co, i), v) < 0) {
            Py_DECREF(d);
            return NULL;
        }
    }
    return d;
}

/* Calls the guard error hook with the pending exception kept intact. */
static void call_guard_error_hook(fj_CacheEntry *e, PyCodeObject *co, const fj_FrameView *view,
                                  Py_ssize_t index, int is_last)
{
    if (fj_guard_error_hook == NULL)
        return;
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    PyObject *hook = Py_NewRef(fj_guard_error_hook);
    PyObject *locals = fj_view_locals_dict(co, view, 1);
    PyObject *res = NULL;
    if (locals != NULL)
        res = PyObject_CallFunction(hook, "OOOnO", e->guard_manager, (PyObject *)co, locals,
                                    index, is_last ? Py_True : Py_False);
    if (res == NULL)
        PyErr_WriteUnraisable(hook);
    Py_XDECREF(res);
    Py_XDECREF(locals);
    Py_DECREF(hook);
    PyErr_Restore(exc_type, exc_value, exc_tb);
}

/* True if entry 'e' may serve a frame under 'callback'. */
static inline int owner_ok(fj_CacheEntry *e, PyObject *callback)
{
    if (callback == Py_False || e->owner == NULL || e->owner == callback)
        return 1;
    return fj_cache_owner_eq != NULL && fj_cache_owner_eq(e->owner, callback);
}

fj_CacheEntry *fj_cache_lookup(fj_ExtraState *es, PyCodeObject *co, const fj_FrameView *view,
                               PyObject *callback)
{
    for (Py_ssize_t i = 0; i < es->n; i++) {
        fj_CacheEntry *e = es->entries[i];
        if (!owner_ok(e, callback))
            continue;
        /* A guard may run code that resets this cache: hold the entry. */
        Py_INCREF(e);
        int ok = fj_guards_check(e->guard_manager, view);
        if (ok < 0) {
            call_guard_error_hook(e, co, view, i, i == es->n - 1);
            Py_DECREF(e);
            return NULL;
        }
        if (ok) {
            /* Still ours at index i? Then move it to the front. */
            if (fj_cache_get(co) == es && i < es->n && es->entries[i] == e && i > 0) {
                memmove(es->entries + 1, es->entries, i * sizeof(*es->entries));
                es->entries[0] = e;
            }
            return e; /* new reference */
        }
        Py_DECREF(e);
        if (fj_cache_get(co) != es)
            return NULL; /* the cache was reset under us */
    }
    return NULL;
}

fj_CacheEntry *fj_cache_add(PyCodeObject *co, PyObject *guard_manager, PyObject *code,
                            PyObject *compile_id, PyObject *owner)
{
    fj_ExtraState *es = fj_cache_get_or_create(co);
    if (es == NULL)
        return NULL;
    fj_CacheEntry **entries = fj_array_grow(es->entries, es->n, &es->cap, sizeof(*entries), 4);
    if (entries == NULL)
        return NULL;
    es->entries = entries;
    fj_CacheEntry *e = PyObject_GC_New(fj_CacheEntry, fj_CacheEntry_Type);
    if (e == NULL)
        return NULL;
    Py_INCREF(fj_CacheEntry_Type);
    e->guard_manager = Py_NewRef(guard_manager);
    e->own_code = code == (PyObject *)co;
    e->code = e->own_code ? PyWeakref_NewRef(code, NULL) : Py_NewRef(code);
    e->compile_id = Py_NewRef(compile_id ? compile_id : Py_None);
    e->owner = Py_XNewRef(owner);
    PyObject_GC_Track(e);
    if (e->code == NULL) {
        Py_DECREF(e);
        return NULL;
    }
    /* The entry lives in the code's extra slot, which the garbage collector
       cannot traverse: tracking it, its guards, its weak reference, the new
       code's tuples and the frame state finds no cycle and only shows
       framejit's bookkeeping in gc.get_objects() (test_descr test_slots).
       A dict is tracked again when a container is stored in it. */
    PyObject_GC_UnTrack(e);
    fj_guards_untrack(guard_manager);
    if (e->own_code)
        PyObject_GC_UnTrack(e->code);
    else
        fj_code_untrack_tuples((PyCodeObject *)code);
    PyObject_GC_UnTrack(es->frame_state);
    memmove(es->entries + 1, es->entries, es->n * sizeof(*es->entries));
    es->entries[0] = e;
    es->n++;
    return e;
}

int fj_cache_init(PyObject *module)
{
    extra_index = fj_request_code_extra_index(extra_state_free);
    if (extra_index < 0) {
        PyErr_SetString(PyExc_RuntimeError, "framejit: no code extra index available");
        return -1;
    }
    fj_CacheEntry_Type = (PyTypeObject *)PyType_FromSpec(&cacheentry_spec);
    return fj_CacheEntry_Type == NULL ? -1 : 0;
}

#else /* !FJ_SUPPORTED */

int fj_cache_init(PyObject *module)
{
    return 0;
}

#endif
