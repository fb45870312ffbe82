/*
** guards.h: guard trees, evaluated natively before a cache entry is reused.
**
** Responsible for: a tree whose root is a RootGuardManager, whose inner
** nodes are GuardManagers reached through accessors that mirror access paths
** (frame local by index, global by name, builtin by name, attribute, item,
** index, closure cell, type of), and whose leaves are checks (TYPE_MATCH,
** ID_MATCH, EQUALS_MATCH, NONE_MATCH, SEQUENCE_LENGTH, DICT_KEYS,
** DICT_VERSION, TENSOR_MATCH, GLOBAL_STATE, GLOBAL_ABSENT, NOT_IN,
** NO_ALIASING, DIMS_EQUAL), none of which runs the program's code or keeps
** its objects alive; the fast check, the verbose
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
** exception set when evaluating a guard raised.  Order: depth-first, each
** manager's leaves then its accessors; the root's own leaves (GLOBAL_STATE)
** run last, after its accessors.  A fetch that raises AttributeError,
** KeyError or IndexError fails the guard; other exceptions propagate.
*/
int fj_guards_check(PyObject *root, const fj_FrameView *view);

/* The tree's invariants (debug builds check every tree the compiler makes):
   depths, source texts, known leaf kinds with their text, 'skippable'
   matching its leaves.  0, or -1 with SystemError naming what is broken. */
int fj_guards_verify(PyObject *root);

/*
** Takes the guard tree under 'root' (managers, ID_MATCH weak references)
** off the garbage collector's list: a cache entry's guards are reachable only
** from a code object's extra slot, which the collector cannot traverse, so
** tracking them finds nothing and shows framejit's bookkeeping in
** gc.get_objects() (test_descr test_slots counts objects).
*/
void fj_guards_untrack(PyObject *root);

/*
** Like fj_guards_check, without side effects on fail counts.  Returns a new
** reference: None when all guards pass, otherwise a str naming the first
** failing guard in the printer's words (e.g. "L['n'] == 3").  NULL on error.
*/
PyObject *fj_guards_check_verbose(PyObject *root, const fj_FrameView *view);

/*
** Building trees (for the compiler and for tests; the Python methods of the
** same names call these).  Every builder raises (and returns NULL / -1) on a
** bad argument; none of them may be called with a NULL tree.
**
** Accessors return the child GuardManager reached through an access path.
** The child is BORROWED: owned by its parent, valid while the parent lives.
** Asking twice for the same path returns the same child.  Only the root has
** local / global / builtin / closure_cell; only non-root managers have attr
** / item / index / type_of.  NULL on error.
*/
/* A new, empty RootGuardManager.  New reference, NULL on error. */
PyObject *fj_guard_root_new(void);
/* L['name']: fast-local slot 'index' of the frame (a NULL slot fails). */
PyObject *fj_guard_local(PyObject *root, Py_ssize_t index, PyObject *name);
/* G['name'] from view->globals. */
PyObject *fj_guard_global(PyObject *root, PyObject *name);
/* G['__builtins__']['name'] from view->builtins. */
PyObject *fj_guard_builtin(PyObject *root, PyObject *name);
/* L['name']: the contents of cell 'index' of view->closure. */
PyObject *fj_guard_closure_cell(PyObject *root, Py_ssize_t index, PyObject *name);
/* <src>.name */
PyObject *fj_guard_attr(PyObject *mgr, PyObject *name);
/* <src>[key] (exact dicts read without calling __getitem__). */
PyObject *fj_guard_item(PyObject *mgr, PyObject *key);
/* <src>[i] (exact lists and tuples read directly). */
PyObject *fj_guard_index(PyObject *mgr, Py_ssize_t i);
/* type(<src>) */
PyObject *fj_guard_type_of(PyObject *mgr);

/*
** Leaves: checks on the value of 'mgr'.  Return 0, or -1 with an exception
** set.  No leaf runs the program's code when checked, and none keeps a
** program object alive: classes, modules, functions and other objects are
** held through weak references (the leaf fails once the object died); only
** builtin values and objects that take no weak reference are held strongly.
** "Builtin values" below: None, bool, Ellipsis and exact int, float, str,
** bytes, complex, and tuples of them, compared in C (floats by bit pattern).
*/
int fj_guard_add_type_match(PyObject *mgr, PyObject *tp);   /* type(v) is tp */
int fj_guard_add_id_match(PyObject *mgr, PyObject *obj);    /* v is obj */
/* same exact type and equal: a builtin value, an exact set/frozenset of them, or a
   NumPy scalar; any other value raises TypeError (comparing it would run its __eq__) */
int fj_guard_add_equals_match(PyObject *mgr, PyObject *value);
int fj_guard_add_none_match(PyObject *mgr);                 /* v is None */
int fj_guard_add_sequence_length(PyObject *mgr, Py_ssize_t n); /* exact list/tuple, len n */
/* dict whose keys, in order, equal 'keys': builtin values by value, others by identity */
int fj_guard_add_dict_keys(PyObject *mgr, PyObject *keys);
int fj_guard_add_dict_version(PyObject *mgr, PyObject *d);  /* dict unchanged since */
/*
** numpy.ndarray of exactly type(example), same dtype, ndim, shape, strides;
** 'dynamic_dims' (a sequence of ints, or NULL) lists dims whose size and
** stride are not checked.
*/
int fj_guard_add_tensor_match(PyObject *mgr, PyObject *example, PyObject *dynamic_dims);
/* Root only: NumPy's floating-point error state (np.errstate) unchanged. */
int fj_guard_add_global_state(PyObject *root);
/* Root only: the frame's globals have no 'name' (so the builtin is what loads). */
int fj_guard_add_global_absent(PyObject *root, PyObject *name);
/* v equals (same type, equal) none of 'values' (a tuple of builtin values): e.g. a
   dynamic int is not 0 or 1. */
int fj_guard_add_not_in(PyObject *mgr, PyObject *values);
/* Root only: the values at 'sources' (a tuple of 2..16 fj_Source) are distinct objects. */
int fj_guard_add_no_aliasing(PyObject *root, PyObject *sources);
/* Root only: dim 'dim_a' of the array at fj_Source 'src_a' has the size of dim 'dim_b' at 'src_b'. */
int fj_guard_add_dims_equal(PyObject *root, PyObject *src_a, int dim_a, PyObject *src_b, int dim_b);

/* The printer: "GUARDS:" then one line per leaf.  New reference, NULL on error. */
/*
** The printer's text for a value: its repr when that runs none of the
** program's code (else "<T object>"), ints past 256 bits in cut hex (their
** decimal repr can raise ValueError), cut to 'max' characters when max > 3.
** New reference, NULL on error.
*/
PyObject *fj_guards_value_text(PyObject *o, Py_ssize_t max);
PyObject *fj_guards_format(PyObject *root);
/* Number of leaves in the tree of 'root' (-1 with an exception if not a root). */
Py_ssize_t fj_guards_num_leaves(PyObject *root);

/*
** d[key] the way guards read it, running none of the program's code (no
** __getitem__ of a dict subclass, no key's __hash__ or __eq__): 1 with *out
** borrowed, 0 when missing or not knowable without that code, -1 on error.
*/
int fj_guards_dict_get(PyObject *d, PyObject *key, PyObject **out);

/*
** getattr(o, name) the way guards read it: only when that runs none of the
** program's code (module dicts, plain instance dicts and class attributes,
** C slots and getsets; never a __getattr__, a property of an instance or a
** descriptor class of the program's).  1 with *out a new reference, 0 when
** missing or not knowable without that code, -1 on error.
*/
int fj_guards_getattr(PyObject *o, PyObject *name, PyObject **out);

/* Adds the guard types and helpers to framejit._C. Returns -1 on error. */
int fj_guards_init(PyObject *module);

#endif
