/*
** guards.h: guard trees, evaluated natively before a cache entry is reused.
**
** Responsible for: a tree whose root is a RootGuardManager, whose inner
** nodes are GuardManagers reached through accessors that mirror access paths
** (frame local by index, global by name, builtin by name, attribute, item,
** index, closure cell, type of), and whose leaves are checks (TYPE_MATCH,
** ID_MATCH, EQUALS_MATCH, NONE_MATCH, SEQUENCE_LENGTH, DICT_KEYS,
** DICT_VERSION, TENSOR_MATCH, GLOBAL_STATE); the fast check, the verbose
** check that names the failing guard, fail-count reordering of accessors,
** dict-version skipping, and the printer used by the `guards` log.
**
** Not responsible for: deciding which guards a trace needs (trace.c) or
** when they run (evalframe.c / cache.c).
*/
#ifndef FJ_GUARDS_H
#define FJ_GUARDS_H

#include "compat.h"

/*
** What a guard tree sees of a frame about to run.  Everything is borrowed
** and valid for the duration of one check.  'localsplus' are the frame's
** fast-local slots in co_localsplusnames order (a fresh frame: arguments
** filled, other slots NULL; cell arguments still hold their raw value).
** 'closure' is the function's tuple of cells (NULL when there are none).
*/
typedef struct {
    PyObject *const *localsplus; /* borrowed */
    Py_ssize_t nlocalsplus;
    PyObject *closure;  /* borrowed, tuple of cells or NULL */
    PyObject *globals;  /* borrowed, dict */
    PyObject *builtins; /* borrowed, dict */
} fj_FrameView;

/* The RootGuardManager type (a heap type of framejit._C). Borrowed. */
extern PyTypeObject *fj_RootGuardManager_Type;
#define fj_RootGuardManager_Check(o) (Py_TYPE(o) == fj_RootGuardManager_Type)

/*
** Runs every guard of 'root' on 'view'.  Returns 1 when all pass, 0 when one
** fails (fail counts are bumped and accessors reordered), -1 with an
** exception set when evaluating a guard raised.
*/
int fj_guards_check(PyObject *root, const fj_FrameView *view);

/*
** Like fj_guards_check, without side effects on fail counts.  Returns a new
** reference: None when all guards pass, otherwise a str naming the first
** failing guard in the printer's words (e.g. "L['n'] == 3").  NULL on error.
*/
PyObject *fj_guards_check_verbose(PyObject *root, const fj_FrameView *view);

/* Adds the guard types and helpers to framejit._C. Returns -1 on error. */
int fj_guards_init(PyObject *module);

#endif
