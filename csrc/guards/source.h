/*
** source.h: access paths, the one way framejit names and reads a value of a
** frame about to run.
**
** Responsible for: fj_Source, an immutable chain such as L['x'], G['np'],
** G['np'].sin, L['xs'][0], L['d']['k'], L['n'] (a closure cell),
** type(L['self']): its kind, its printed text (the one the guards log and
** the recompile reasons use, made once at creation) and the single fetch of
** its value from a frame view, with the guards' semantics: a value that is
** missing, or that only the program's own code could produce (a
** __getattr__, a property, a mapping's __getitem__, a key's __eq__), is
** "absent", never an exception.  Guard managers hold their source and fetch
** through it; the tracer and the compile driver fetch through it too.
**
** Not responsible for: the guard tree (guards.c: which manager watches a
** source) or emitting code that reloads a source (codegen.c).
*/
#ifndef FJ_SOURCE_H
#define FJ_SOURCE_H

#include "frameview.h"
#include "guard_values.h"

typedef enum {
    FJ_SRC_LOCAL,   /* frame local slot 'index' named 'key' (printed L['key']) */
    FJ_SRC_GLOBAL,  /* the frame's globals, name 'key' (G['key']) */
    FJ_SRC_BUILTIN, /* the frame's builtins, name 'key' */
    FJ_SRC_CLOSURE, /* contents of the function's closure cell 'index' named 'key' */
    FJ_SRC_ATTR,    /* getattr(parent, key) */
    FJ_SRC_ITEM,    /* parent[key] (exact dicts) */
    FJ_SRC_INDEX,   /* parent[index] (exact lists and tuples; negative counts from the end) */
    FJ_SRC_TYPE,    /* type(parent) */
    FJ_SRC_MODULE,  /* sys.modules[key]: a module an import statement of the frame reads */
    FJ_SRC_SIZE     /* the size of dim 'index' of parent, an ndarray or a plain torch tensor
                       (printed parent.shape[index]; read without running any code) */
} fj_SourceKind;

typedef struct fj_Source {
    PyObject_HEAD
    fj_SourceKind kind;
    PyObject *key;            /* strong or NULL: name (str) or item key */
    Py_ssize_t index;         /* slot, cell or sequence index */
    struct fj_Source *parent; /* strong, for ATTR/ITEM/INDEX/TYPE; NULL for the others */
    PyObject *text;           /* strong: printed form, made at creation */
} fj_Source;

/*
** Constructors.  Each returns a new reference, NULL on error (a negative
** slot or cell index, or a name that is not a str, raises ValueError or
** TypeError).
*/
fj_Source *fj_source_local(Py_ssize_t index, PyObject *name);
fj_Source *fj_source_global(PyObject *name);
fj_Source *fj_source_builtin(PyObject *name);
fj_Source *fj_source_closure(Py_ssize_t index, PyObject *name);
fj_Source *fj_source_attr(fj_Source *parent, PyObject *name);
fj_Source *fj_source_item(fj_Source *parent, PyObject *key);
fj_Source *fj_source_index(fj_Source *parent, Py_ssize_t index);
fj_Source *fj_source_type_of(fj_Source *parent);
fj_Source *fj_source_size_of(fj_Source *parent, Py_ssize_t dim);
fj_Source *fj_source_module(PyObject *name);

/* The size of dim 'd' of an ndarray or a plain torch tensor 'o' as an int:
   1 with *out a new reference, 0 when 'o' is neither or has too few dims, -1
   on error (FJ_SRC_SIZE's step). */
int fj_source_size(PyObject *o, Py_ssize_t d, PyObject **out);

/* 1 if 'o' is an fj_Source. */
int fj_source_check(PyObject *o);

/*
** The last step of 'src': its value given its parent's value 'parent'
** (ignored for the frame-rooted kinds).  'keys_pinned': the parent is a
** dict whose keys a guard just matched by value, so an item lookup runs no
** key's __eq__.  1 with *out a new reference; 0 when absent (see the header
** comment); -1 with an exception on a real error (memory).
**
** Inline: the guard check runs it for every manager of a tree.
*/
static inline int fj_source_fetch_step(const fj_Source *src, PyObject *parent, int keys_pinned,
                                       const fj_FrameView *view, PyObject **out)
{
    PyObject *v = NULL, *d = NULL;
    switch (src->kind) {
    case FJ_SRC_LOCAL:
        if (src->index < view->nlocalsplus)
            v = view->localsplus[src->index];
        goto borrowed;
    case FJ_SRC_GLOBAL:
        d = view->globals;
        goto dict;
    case FJ_SRC_BUILTIN:
        d = view->builtins;
        goto dict;
    case FJ_SRC_CLOSURE: {
        PyObject *cl = view->closure;
        if (cl != NULL && PyTuple_Check(cl) && src->index < PyTuple_GET_SIZE(cl)) {
            PyObject *cell = PyTuple_GET_ITEM(cl, src->index);
            if (PyCell_Check(cell))
                v = PyCell_GET(cell);
        }
        goto borrowed;
    }
    case FJ_SRC_ATTR:
        return fj_safe_getattr(parent, src->key, out);
    case FJ_SRC_ITEM:
        d = parent;
        goto dict;
    case FJ_SRC_INDEX: {
        Py_ssize_t i = src->index;
        if (PyList_CheckExact(parent) || PyTuple_CheckExact(parent)) {
            Py_ssize_t n = Py_SIZE(parent);
            if (i < 0)
                i += n;
            if (i >= 0 && i < n)
                v = PyList_CheckExact(parent) ? PyList_GET_ITEM(parent, i)
                                              : PyTuple_GET_ITEM(parent, i);
        }
        goto borrowed; /* other sequences: their __getitem__ is not run */
    }
    case FJ_SRC_TYPE:
        v = (PyObject *)Py_TYPE(parent);
        goto borrowed;
    case FJ_SRC_MODULE:
        d = PyImport_GetModuleDict();
        goto dict;
    case FJ_SRC_SIZE:
        return fj_source_size(parent, src->index, out);
    }
    PyErr_SetString(PyExc_SystemError, "framejit: bad source kind");
    return -1;
dict:
    if (d == NULL)
        return 0;
    switch (fj_dict_lookup(d, src->key, keys_pinned && src->kind == FJ_SRC_ITEM, &v)) {
    case 1:
        break;
    case -1:
        return -1;
    default:
        return 0;
    }
borrowed:
    if (v == NULL)
        return 0;
    *out = Py_NewRef(v);
    return 1;
}

/* The value at 'src' in the frame seen through 'view': the steps from the
   root, same answers as fj_source_fetch_step. */
int fj_source_fetch(const fj_Source *src, const fj_FrameView *view, PyObject **out);

/* 1 if the last steps of 'a' and 'b' are the same access (kind, slot or
   key; keys compared by value without the program's code), 0 if not, -1 on
   error. */
int fj_source_same_step(const fj_Source *a, const fj_Source *b);

/* 1 if 'a' and 'b' are the same access path (every step the same), 0 if
   not, -1 on error. */
int fj_source_same(const fj_Source *a, const fj_Source *b);

/* A graph-placeholder-friendly name for 'src', e.g. l_x_ or g_w_. New ref. */
PyObject *fj_source_placeholder_name(fj_Source *src);

int fj_source_init(PyObject *module);

#endif
