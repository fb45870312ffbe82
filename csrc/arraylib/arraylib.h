/*
** arraylib.h: what framejit needs of an array library, one row per library
** (issue 19).  NumPy is the first row, torch the second; a third library
** is a third row plus its trace-time part.
**
** Responsible for: recognising a library's arrays (the hook looks for them
** in a frame's arguments), the TENSOR_MATCH leaf that pins what a trace
** assumed of one (dtype, shape, strides, and per library: NumPy's
** writeable flag, torch's device, requires_grad and dispatch keys), and the
** global state its graphs depend on (NumPy's errstate; torch's grad mode,
** autocast, default dtype, deterministic algorithms) in GLOBAL_STATE.
**
** Not responsible for: the trace-time part, which lives with the tracer:
** NumPy's op table with C shape rules and stand-in dtype inference
** (ops.c, ops_shape.c), torch's graph nodes whose metadata comes from its
** meta kernels (trace_torch.c, torchlib.h).  The eager runner needs
** nothing per library: a node calls its target (graph.c).
*/
#ifndef FJ_ARRAYLIB_H
#define FJ_ARRAYLIB_H

#include "compat.h"

typedef struct fj_ArrayLib {
    const char *name; /* "numpy", "torch" */
    /* 1 once the program has imported the library (never imports it) */
    int (*ready)(void);
    /* an array of the library, any subclass (NumPy: arrays and scalars) */
    int (*is_array)(PyObject *o);
    /* TENSOR_MATCH on guard manager 'mgr' for 'example'; dynamic_dims (a
       sequence of ints, None or NULL) left unguarded.  0 or -1. */
    int (*add_tensor_match)(PyObject *mgr, PyObject *example, PyObject *dynamic_dims);
    /* its global state joins the root's GLOBAL_STATE leaf.  0 or -1. */
    int (*add_global_state)(PyObject *root);
} fj_ArrayLib;

extern const fj_ArrayLib fj_numpy_lib, fj_torch_lib;

/* The library whose array 'o' is, or NULL (libraries not imported are not
   asked).  Never raises. */
const fj_ArrayLib *fj_arraylib_of(PyObject *o);

/* 1 once at least one library is imported. */
int fj_arraylib_any_ready(void);

#endif
