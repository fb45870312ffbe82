/*
** builtin_ops.h: Python's sum(), max() and min() of a 1-d array as graph
** operations.
**
** Responsible for: framejit._C._builtin_sum(a, start), _builtin_max(a) and
** _builtin_min(a), which compute what CPython's builtins compute when they
** iterate over the array (a NumPy scalar per item, '+' from the start value
** in order, '>' / '<' keeping the first of equal items, NaN never taken
** unless first), in C for float64, float32 and int64 arrays, and by calling
** the builtin itself for anything else or for any case C would not do the
** same (an integer overflow, a float condition NumPy warns about, an empty
** array): values, types, warnings and errors are always CPython's.  The row
** their nodes use (fj_builtin_reduce_row).
**
** Not responsible for: deciding when a call is one (trace_call.c).
*/
#ifndef FJ_BUILTIN_OPS_H
#define FJ_BUILTIN_OPS_H
#include "graph.h"

/* The row of their nodes: the target is the _C function, the label its name. */
extern const fj_OpDef fj_builtin_reduce_row;
/* max(a, b, ...) and min(a, b, ...) of values of one type (trace_call.c,
   builtin_pick): the target is the builtin itself, which returns one of them. */
extern const fj_OpDef fj_builtin_pick_row;

/* The _C functions: borrowed, valid after fj_builtin_ops_init.  'which':
   0 sum, 1 max, 2 min. */
PyObject *fj_builtin_reduce_fn(int which);

int fj_builtin_ops_init(PyObject *module);
#endif
