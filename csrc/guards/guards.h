/*
** guards.h: guard trees, evaluated natively before a cache entry is reused.
**
** Responsible for: a tree whose root is a RootGuardManager, whose inner
** nodes are GuardManagers, each holding the access path (fj_Source: frame
** local, global, builtin, closure cell, attribute, item, index, type of)
** its value is fetched through, and whose leaves are checks (TYPE_MATCH,
** ID_MATCH, EQUALS_MATCH, NONE_MATCH, SEQUENCE_LENGTH, DICT_KEYS,
** DICT_VERSION, TENSOR_MATCH, GLOBAL_STATE, GLOBAL_ABSENT, NO_ALIASING,
** DIMS_EQUAL, RELATION), none of which runs the program's code or keeps
** its objects alive; the fast check, the verbose
** check that names the failing guard, fail-count reordering of accessors,
** dict-version skipping, and the printer used by the `guards` log.
**
** Not responsible for: deciding which guards a trace needs (trace.c),
** when they run (evalframe.c / cache.c), or naming and reading a value
** (source.c).
*/
#ifndef FJ_GUARDS_H
#define FJ_GUARDS_H

#include "compat.h"
#include "frameview.h"
#include "source.h"


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
** A manager holds the access path (fj_Source) of its value and fetches it
** through that source's last step.  Asking twice for the same path returns
** the same manager.  In Python, only the root has local / global / builtin
** / closure_cell; only non-root managers have attr / item / index / type_of.
*/
/* A new, empty RootGuardManager.  New reference, NULL on error. */
PyObject *fj_guard_root_new(void);
/*
** The manager that watches the value at 'src' under 'root', created with
** the managers of the path's earlier steps on first use.  Borrowed (owned
** by its parent), NULL on error.
*/
PyObject *fj_guard_manager(PyObject *root, fj_Source *src);

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
/* TENSOR_MATCH on a torch tensor: type, dtype, device, requires_grad, dispatch
   keys, sizes and strides (torchlib.h).  'dynamic_dims' (NULL, None or a
   sequence of ints) leaves those dims' sizes out (any size >= 2) and then
   requires contiguous strides instead of the exact ones; the example must
   be contiguous with those sizes >= 2 (ValueError otherwise).  0 or -1. */
int fj_guard_add_torch_match(PyObject *mgr, PyObject *example, PyObject *dynamic_dims);
/* GLOBAL_STATE also pins torch's global state (grad mode, autocast ...): the
   root's one GLOBAL_STATE leaf checks both.  0 or -1. */
int fj_guard_add_torch_state(PyObject *root);
/* Root only: the frame's globals have no 'name' (so the builtin is what loads). */
int fj_guard_add_global_absent(PyObject *root, PyObject *name);
/* The dict at 'mgr' (another module's globals) has no key 'name'. */
int fj_guard_add_key_absent(PyObject *mgr, PyObject *name);
/* Root only: the values at 'sources' (a tuple of 2..16 fj_Source) are distinct objects. */
int fj_guard_add_no_aliasing(PyObject *root, PyObject *sources);
/* Root only: dim 'dim_a' of the array at fj_Source 'src_a' has the size of dim 'dim_b' at 'src_b'. */
int fj_guard_add_dims_equal(PyObject *root, PyObject *src_a, int dim_a, PyObject *src_b, int dim_b);
/*
** RELATION (root only): a relation over symbols the trace branched on
** (csrc/trace/shape_env.c, docs/dynamic.md "Relations"), printed as 'text'
** (L['x'].shape[0] > 10).  'syms': a tuple of (source, dim) for an input
** array's size, (source, -1) for an int input; 'prog': a flat tuple of
** (opcode, operand) ints, FJ_REL_* below, run on a stack of int64 as Python
** runs them on ints; it passes when its one result's truth is 'expect'.
** Anything it cannot compute exactly (past int64, a zero divisor) fails.
** With 'view' (the frame being traced), it is added only when it passes for
** those values.  The same text twice is one leaf.  1 when there, 0 when it
** does not pass now (not added), -1 on error.
*/
enum {
    FJ_REL_SYM = 1, /* push symbol #operand */
    FJ_REL_CONST,   /* push operand */
    FJ_REL_NEG,
    FJ_REL_ADD, FJ_REL_SUB, FJ_REL_MUL, FJ_REL_FLOORDIV, FJ_REL_MOD,
    FJ_REL_LT, FJ_REL_LE, FJ_REL_EQ, FJ_REL_NE, FJ_REL_GT, FJ_REL_GE
};
int fj_guard_add_relation(PyObject *root, PyObject *syms, PyObject *prog, int expect, PyObject *text,
                          const fj_FrameView *view);

/* The printer: "GUARDS:" then one line per leaf.  New reference, NULL on error. */
PyObject *fj_guards_format(PyObject *root);
/* Number of leaves in the tree of 'root' (-1 with an exception if not a root). */
Py_ssize_t fj_guards_num_leaves(PyObject *root);

/* Adds the guard types and helpers to framejit._C. Returns -1 on error. */
int fj_guards_init(PyObject *module);

#endif
