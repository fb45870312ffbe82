/*
** native_loop.h: captured loops compiled to C loops (docs/loops.md).
**
** Responsible for: deciding whether a loop node's body compiles (scalar
** arithmetic on Python ints, floats and bools and on NumPy float64,
** float32, int64, int32 and bool scalars, element reads and stores of 1-d
** and 2-d arrays, sqrt and abs: operations whose C result is NumPy's and
** Python's, bit for bit), its C function (one per loop, in the plan's
** source), and running it: the arguments unboxed, the kernel called, the
** final state boxed.  The kernel stops before any iteration it cannot
** finish exactly (an index out of bounds, an integer overflow, a division
** by zero, a float-to-int store of a NaN or an out-of-range value, a
** floating-point condition NumPy's error state does not ignore): it undoes
** that iteration's stores, and the loop goes on from there through the
** eager loop (loop.c), which raises or warns exactly as CPython does.
**
** Not responsible for: capturing loops (trace_loops.c), the eager loop
** (loop.c), plans and groups (native.c).
*/
#ifndef FJ_NATIVE_LOOP_H
#define FJ_NATIVE_LOOP_H
#include "native.h"

#define FJL_MAX_VALUES 64 /* placeholders of a compiled body */

/* How a body placeholder's value is passed. */
enum {
    FJL_PY_INT = 1, /* a Python int, as int64 (a loop index, a counter) */
    FJL_PY_FLOAT,   /* a Python float */
    FJL_PY_BOOL,    /* a Python bool */
    FJL_NP,         /* a NumPy scalar of FJT type 'type' */
    FJL_ARRAY,      /* an ndarray of FJT type 'type', 1-d or 2-d */
};

typedef struct {
    int kind;   /* FJL_* */
    int type;   /* FJT_* (FJL_NP, FJL_ARRAY) */
    int ndim;   /* FJL_ARRAY */
    int stored; /* FJL_ARRAY: the body stores into it (must be writeable) */
    int loaded; /* FJL_ARRAY: the body reads its elements */
    int chunked; /* FJL_ARRAY: an inner loop's chunk version stores into it (native_loop.c, cw_) */
    PyArray_Descr *descr; /* borrowed (the node holds it): FJL_NP boxing */
} fjl_Slot;

typedef int (*fjl_fn)(long long start, long long stop, long long step, void *values, void *outs, int ignore,
                      long long *stopped);

typedef struct {
    Py_ssize_t node;          /* the loop node's index in the plan's graph */
    int nph;                  /* body placeholders: index, carried, lifted */
    int ncarried, nstate;
    fjl_Slot ph[FJL_MAX_VALUES];
    int carried_slot[FJL_MAX_VALUES]; /* state slot of each carried placeholder */
    fjl_Slot out[FJL_MAX_VALUES];     /* each state slot's value after an iteration */
    int out_src[FJL_MAX_VALUES];      /* the body output of each slot: placeholder index,
                                         -1 - node index for a computed one, or FJL_CONST */
    int whilemode;            /* a while loop (loop.h, fj_loop_new_while): the body's output after
                                 the state is its test's value ('stay_src', as out_src); the node's
                                 last argument the test's first value; it goes on while a test's
                                 truth is not wneg0 / wnegs.  Its kernel runs a chunk of iterations
                                 per call (status 3: the chunk ended, call again) */
    int wneg0, wnegs, stay_src;
    int breaks;               /* a for loop with breaks on data (loop_exit nodes at its top level):
                                 the kernel stops at the iteration that breaks (status 5, or 6
                                 before any iteration of the call), the eager loop runs it */
    fjl_fn fn;                /* filled by _load */
} fjn_LoopPlan;

#define FJL_CONST (-1000000)
/* the iterations a while loop's kernel runs per call (fjn_loop_run): signals are seen between */
#define FJL_WCHUNK (1LL << 22)

/*
** Fills 'lp' for loop node 'n' when its body compiles: 1; 0 when it does
** not (nothing set); -1 with an exception.
*/
int fjn_loop_plan(fj_Node *n, Py_ssize_t index, fjn_LoopPlan *lp);
/* Appends the C source of loop 'li' (function fj_l<li>) to 'buf'.  0 or -1. */
int fjn_loop_emit(PyObject *buf, fjn_LoopPlan *lp, fj_Node *n, int li);
/*
** Runs loop node 'n' (its arguments in 'env') with its compiled kernel:
** new reference to the final state (the loop node's value), NULL on error.
** Arguments the kernel was not built for (types, layouts), and the
** iterations after one the kernel stopped before, run through the eager
** loop.  '*fallbacks' counts the runs that did.
*/
PyObject *fjn_loop_run(fjn_LoopPlan *lp, fj_Node *n, PyObject **env, Py_ssize_t *fallbacks);
#endif
