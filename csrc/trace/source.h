/*
** source.h: where a value the tracer read came from.
**
** Responsible for: fj_Source, an immutable chain such as L['x'], G['np'],
** G['np'].sin, L['xs'][0], L['d']['k'], L['n'] (a closure cell), shared by
** guards (which guard-tree manager watches that value) and codegen (which
** instructions load it again).  The printed form is the one the guards log
** and the recompile reasons use.
**
** Not responsible for: the guards themselves (guards.c) or emitting code
** (codegen.c).
*/
#ifndef FJ_SOURCE_H
#define FJ_SOURCE_H

#include "guards.h"

typedef enum {
    FJ_SRC_LOCAL,   /* frame local slot 'index' named 'key' (printed L['key']) */
    FJ_SRC_GLOBAL,  /* the frame's globals, name 'key' (G['key']) */
    FJ_SRC_BUILTIN, /* the frame's builtins, name 'key' */
    FJ_SRC_CLOSURE, /* contents of the function's closure cell 'index' named 'key' */
    FJ_SRC_ATTR,    /* getattr(parent, key) */
    FJ_SRC_ITEM,    /* parent[key] (dicts, mappings) */
    FJ_SRC_INDEX    /* parent[index] (lists and tuples) */
} fj_SourceKind;

typedef struct fj_Source {
    PyObject_HEAD
    fj_SourceKind kind;
    PyObject *key;            /* strong: name (str) or item key */
    Py_ssize_t index;         /* slot, cell or sequence index */
    struct fj_Source *parent; /* strong, for ATTR/ITEM/INDEX */
    PyObject *text;           /* strong: printed form, made at creation */
} fj_Source;

/* Constructors. Each returns a new reference, NULL on error. */
fj_Source *fj_source_local(Py_ssize_t index, PyObject *name);
fj_Source *fj_source_global(PyObject *name);
fj_Source *fj_source_builtin(PyObject *name);
fj_Source *fj_source_closure(Py_ssize_t index, PyObject *name);
fj_Source *fj_source_attr(fj_Source *parent, PyObject *name);
fj_Source *fj_source_item(fj_Source *parent, PyObject *key);
fj_Source *fj_source_index(fj_Source *parent, Py_ssize_t index);

/*
** The guard-tree manager that watches the value at 'src' under 'root',
** created on first use.  Returns a borrowed reference, NULL on error.
*/
PyObject *fj_source_manager(PyObject *root, fj_Source *src);

/* A graph-placeholder-friendly name for 'src', e.g. l_x_ or g_w_. New ref. */
PyObject *fj_source_placeholder_name(fj_Source *src);

int fj_source_init(PyObject *module);

#endif

/*
** The value at 'src' in the frame seen through 'view' (globals/builtins
** dicts, localsplus, closure).  Returns a new reference, NULL on error.
*/
PyObject *fj_source_eval(fj_Source *src, const fj_FrameView *view);
