/*
** ops.h: the table of NumPy operations the tracer understands.
**
** Responsible for: one row (fj_OpDef) per way an array operation is met in
** bytecode (a NumPy callable, an ndarray method, a BINARY_OP / COMPARE_OP /
** unary opcode, an attribute, subscription), the lookups from what the
** tracer sees to a row, and the inference of a call's output metadata
** (dtype, shape, NumPy-scalar-or-array) without touching array data.
** Shapes come from C rules (ops_shape.c); dtypes and result kinds come from
** running the operation once on tiny stand-ins (arrays of shape (1,)*ndim),
** cached per signature, so NumPy's own promotion rules (NEP 50) decide.
**
** Not responsible for: graph nodes and running graphs (graph.c), deciding
** graph breaks (the tracer turns an inference error into one).
*/
#ifndef FJ_OPS_H
#define FJ_OPS_H
#include "fj_numpy.h"
#include "fused_ops.h"

#define FJ_MAX_NDIM 32 /* NumPy 2's NPY_MAXDIMS is 64; we track up to 32 */

struct fj_Node;

/* How the tracer meets an operation (fj_OpDef.kind). */
enum {
    FJ_OP_FUNC = 1, /* a callable: numpy.sin, builtins.abs */
    FJ_OP_METHOD,   /* ndarray method called on args[0]: 'sum' */
    FJ_OP_BINOP,    /* BINARY_OP oparg (code = NB_ADD...), target operator.add */
    FJ_OP_INPLACE,  /* BINARY_OP in-place oparg (NB_INPLACE_ADD...), target operator.iadd */
    FJ_OP_COMPARE,  /* COMPARE_OP (code = Py_LT...), target operator.lt */
    FJ_OP_UNARY,    /* UNARY_* (code = FJ_UNARY_*), target operator.neg / builtins.abs */
    FJ_OP_ATTR,     /* attribute that is a graph node: 'T' */
    FJ_OP_GETITEM,  /* BINARY_SUBSCR, target operator.getitem */
};

/* fj_OpDef.code of FJ_OP_UNARY rows. */
enum { FJ_UNARY_NEG = 1, FJ_UNARY_POS, FJ_UNARY_INVERT, FJ_UNARY_ABS };

/* Shape rules (ops_shape.c). */
enum {
    FJ_SH_BROADCAST = 1, /* elementwise: broadcast of the first 'nin' operands (None skipped) */
    FJ_SH_REDUCE,        /* 'axis' (None/int/tuple) and 'keepdims' */
    FJ_SH_ARGREDUCE,     /* like REDUCE, axis None or int only */
    FJ_SH_MATMUL,
    FJ_SH_DOT,
    FJ_SH_RESHAPE,
    FJ_SH_TRANSPOSE,
    FJ_SH_SWAPAXES,
    FJ_SH_EXPAND_DIMS,
    FJ_SH_SQUEEZE,
    FJ_SH_CONCATENATE,
    FJ_SH_STACK,
    FJ_SH_BROADCAST_TO,
    FJ_SH_SAME,    /* same shape as args[0] (astype) */
    FJ_SH_GETITEM, /* also decides the kind (NumPy scalar for a full integer index) */
    FJ_SH_RAVEL,      /* (size,): ravel, flatten */
    FJ_SH_CUMULATIVE, /* cumsum/cumprod: axis None flattens, an int keeps the shape (0-d counts as 1-d) */
    FJ_SH_SORT,       /* sort: axis -1 by default, None flattens */
    FJ_SH_ARGSORT,    /* argsort: as sort, but 0-d counts as 1-d */
    FJ_SH_CREATE,     /* zeros/ones/empty/full: the 'shape' argument */
    FJ_SH_LIKE,       /* *_like: the prototype's shape, or the 'shape' argument */
    FJ_SH_ARANGE,     /* NumPy's arange length from constant start/stop/step */
    FJ_SH_LINSPACE,   /* broadcast(start, stop) with 'num' inserted at 'axis' */
    FJ_SH_EYE,        /* (N, M) */
    FJ_SH_DIFF,       /* diff: the axis shortened by n, lengthened by prepend/append */
    FJ_SH_TILE,       /* tile: shapes padded to len(reps) and multiplied */
    FJ_SH_REPEAT,     /* repeat: an int or a constant per-item count, along an axis or flattened */
    FJ_SH_AVERAGE,    /* average: as REDUCE, with 'weights' of a's shape or 1-d along the axis */
    FJ_SH_LINALG,     /* np.linalg's inv, pinv, det, solve, norm, matrix_power (by the row's attr) */
    FJ_SH_RANDOM,     /* draws of np.random's legacy functions: 'size' (or rand's dims), scalar parameters */
    FJ_SH_SETITEM,    /* a[index] = value: the selection (basic indexing, or a boolean mask of a's
                         leading dims) must take the value; the node keeps a's shape */
    FJ_SH_NONZERO,    /* flatnonzero (n,), argwhere (n, a.ndim): n depends on the data (fj_Node.datadep) */
};

/* Dtype rules. */
enum {
    FJ_DT_RUN = 1, /* run the op on tiny stand-ins, cached: dtype and kind from NumPy */
    FJ_DT_SAME,    /* dtype of args[0]; the kind is an array, or (NumPy-scalar input) found by a tiny run */
    FJ_DT_CREATE,  /* creation functions: run on the arguments with sizes shrunk to 0/1/2, cached */
    FJ_DT_RANDOM,  /* random draws (never run while tracing: that would advance the generator): the
                      'dtype' argument, or the row's 'rdtype' */
};

/* fj_OpDef.flags */
#define FJ_OPF_NO_IDENTITY 0x1 /* reduction fails on an empty reduced axis (max, argmax) */
#define FJ_OPF_VARARGS 0x2     /* method taking a shape/axes as varargs: a.reshape(2, 3) */
#define FJ_OPF_ARGMSG 0x4      /* empty-reduction message of argmax/argmin */
#define FJ_OPF_CREATES 0x8     /* makes a new array from constants (zeros, ones, arange...) */
#define FJ_OPF_AXIS0D 0x10     /* a 0-d input takes an int axis 0 or -1 (ufunc reductions, squeeze) */
#define FJ_OPF_MUTATES 0x20    /* writes into args[0] and returns None (operator.setitem); the node's
                                  metadata is args[0]'s and no Var ever holds the node's value */
#define FJ_OPF_OUT 0x40        /* ufunc: 'out' may be an array node, written into and returned
                                  (same_kind casting, its shape the broadcast result's) */
#define FJ_OPF_UFUNC 0x80      /* the row is its 'ufunc' called on its operands (the target is that ufunc, or
                                  an operator ndarray runs with it), so the runner may call the ufunc with
                                  'out' (fj_op_ufunc); not comparisons (ndarray's have fallbacks of their
                                  own) nor '**' (scalar fast paths) */
#define FJ_OPF_RAISES 0x200    /* may raise from the data when the graph runs (average's zero
                                  weights): not after side effects the graph would lose */
#define FJ_OPF_EFFECT 0x400    /* advances state outside the graph (a random generator's): the node runs
                                  once per call, in order, never dropped or folded (with FJ_OPF_CREATES);
                                  its graph is not run again after an error (node_mutates) */
#define FJ_OPF_GENERATOR 0x800 /* a method of np.random.Generator on a generator the graph takes as an
                                  input (an FJ_VAL_OBJECT placeholder): fj_ops_for_generator_method */
#define FJ_OPF_SELECT 0x100    /* where(condition, x, y): x and y are required (the one-argument form is
                                  nonzero's, whose shape depends on the data) */

/*
** One row.  'params' lists the positional parameter names in order,
** comma separated (the array itself included, 'self' for methods); a name
** ending in '?' is accepted only when absent or None (e.g. 'out?'), one
** ending in '!' only positionally.  Any keyword not in 'params' is an error.
** Backends know an operation by its row's columns ('ufunc', 'fused',
** 'flags'), never by its name.
*/
typedef struct fj_OpDef {
    const char *name;   /* node-name stem: "add" gives nodes add, add_1, ... */
    int kind;           /* FJ_OP_* */
    const char *module; /* module holding the target ("numpy", "operator", "builtins"); NULL: a method or attribute name */
    const char *attr;   /* the target's attribute name in 'module', or the method / attribute name */
    int code;           /* BINOP/INPLACE: NB_* oparg; COMPARE: Py_LT...; UNARY: FJ_UNARY_* */
    const char *symbol; /* operator text for printed code ("+", "<", "-", "~"); NULL otherwise */
    int shape_rule;     /* FJ_SH_* */
    int dtype_rule;     /* FJ_DT_* */
    int nin;            /* operands taking part in broadcasting (FJ_SH_BROADCAST) */
    const char *params;
    int flags;          /* FJ_OPF_* */
    const char *ufunc;  /* numpy.<ufunc> computing the row's elements (elementwise rows, in-place operators
                           excepted), or the ufunc a reduction reduces with (sum: add, max: maximum); else NULL */
    int fused;          /* FJN_* (fused_ops.h): what a fused kernel computes for the row, 0 if it never fuses;
                           an elementwise code other than FJN_WHERE and FJN_CAST comes with a 'ufunc', whose
                           loops give the kernel's types */
    const char *rdtype; /* FJ_DT_RANDOM: the result's dtype without a 'dtype' argument ("float64") */
} fj_OpDef;

/* Result kinds (fj_Node.vkind). */
/* FJ_VAL_PYSCALAR: a Python int, float or bool computed in the graph (a
** symbolic int of automatic dynamic shapes, or arithmetic on one); its
** trace-time value is kept as 'example'. */
/* FJ_VAL_TENSOR: a torch tensor; the node's 'fake' is a meta tensor with its
** metadata (torchlib.h), its dtype is NULL.  FJ_VAL_TENSORS: a tuple of
** tensors (torch.split, torch.max(x, 1)); 'fake' is the tuple of fakes and
** the tracer reads its items with getitem nodes. */
/* FJ_VAL_TUPLE: a tuple of values (a captured loop's final state, read
** with loop_item nodes); no dtype. */
/* FJ_VAL_OBJECT: an opaque object the graph takes as an input and passes to
** its ops as it is (a np.random.Generator whose methods draw); no dtype. */
enum { FJ_VAL_ARRAY = 1, FJ_VAL_NPSCALAR = 2, FJ_VAL_PYSCALAR = 3, FJ_VAL_TENSOR = 4, FJ_VAL_TENSORS = 5,
       FJ_VAL_TUPLE = 6, FJ_VAL_OBJECT = 7 };

/* The rows of torch operations met by callable, method or attribute name:
   the node's target says which (ops.c). */
extern const fj_OpDef fj_torch_func_row, fj_torch_method_row, fj_torch_attr_row;
/* A captured loop (the node's target is its fj_Loop, loop.h), the
   reading of one value of its final state (operator.getitem), and a
   compound while test's exit in its body (fj_loop_exit_callable). */
extern const fj_OpDef fj_loop_row, fj_loop_item_row, fj_loop_exit_row, fj_loop_pick_row;
/* A NumPy call of several results (np.linalg.eigh, n-d np.nonzero: trace_multi.c)
   and the reading of one of them (operator.getitem). */
extern const fj_OpDef fj_multi_row, fj_multi_item_row;

/* Inferred output metadata of a call. */
typedef struct {
    int vkind;             /* FJ_VAL_* */
    PyArray_Descr *dtype;  /* strong */
    int ndim;
    npy_intp shape[FJ_MAX_NDIM];
    PyObject *example;     /* strong: the trace-time value of a FJ_VAL_PYSCALAR, else NULL */
} fj_Meta;

/*
** Lookups: each returns the row (static storage, never freed) or NULL when
** the operation is unknown (no exception set).  fj_ops_for_callable may
** import numpy on first use; if that fails it returns NULL and clears the
** error.
*/
const fj_OpDef *fj_ops_for_callable(PyObject *fn);   /* numpy.sin, operator.add, builtins.abs, by identity */
const fj_OpDef *fj_ops_for_method(PyObject *name);   /* 'sum', 'reshape', 'astype', ... (str) */
const fj_OpDef *fj_ops_for_attr(PyObject *name);     /* 'T' */
const fj_OpDef *fj_ops_for_generator_method(PyObject *name); /* np.random.Generator's 'normal', ... */
const fj_OpDef *fj_ops_for_binop(int nb_oparg);      /* NB_ADD ... NB_INPLACE_XOR */
const char *fj_ops_binop_symbol(int nb_oparg);       /* "+", "@=", ... as the program spells it; "?" */
const fj_OpDef *fj_ops_for_compare(int op);          /* Py_LT ... Py_GE */
const fj_OpDef *fj_ops_for_unary(int which);         /* FJ_UNARY_* */
const fj_OpDef *fj_ops_for_getitem(void);
const fj_OpDef *fj_ops_for_setitem(void);           /* operator.setitem on an array (FJ_OPF_MUTATES) */

/* The row's target: the callable, or the method / attribute name (str).  Borrowed (lives as long as the module). NULL if unresolved. */
PyObject *fj_op_target(const fj_OpDef *op);
/*
** The NumPy ufunc (one output, 'nargs' inputs) that an elementwise row
** computes, so a caller may pass it an 'out' array: new reference, or NULL
** (no exception set) for every other row.
*/
PyObject *fj_op_ufunc(const fj_OpDef *op, Py_ssize_t nargs);
/* "numpy.sin", "operator.add", or the method name: static storage. */
const char *fj_op_qualname(const fj_OpDef *op);

/*
** Infers the output metadata of 'op' called with 'args' (tuple; fj_Node items
** stand for arrays / NumPy scalars, everything else is a constant) and
** 'kwargs' (dict or NULL).  On success fills 'out' (out->dtype is a new
** reference) and returns 0.  On an unsupported or invalid combination
** returns -1 with a Python exception set (TypeError, ValueError, IndexError,
** numpy AxisError, OverflowError) whose message names the operation.
*/
int fj_ops_infer(const fj_OpDef *op, PyObject *args, PyObject *kwargs, fj_Meta *out);

/*
** The value kind of 'v' (FJ_VAL_*) into *vkind, its dtype (a new reference)
** into *dtype and, for a Python scalar, 'v' itself (a new reference) into
** *example: an ndarray (its dtype; ndim and shape are the caller's), a
** NumPy scalar, or a Python bool, int or float (dtype bool, long, double).
** 1; 0 for a value of another type (nothing set); -1 with an exception.
*/
int fj_value_meta(PyObject *v, int *vkind, PyArray_Descr **dtype, PyObject **example);

/*
** Static attributes of an array node that are not graph nodes: 'shape'
** (tuple of ints), 'ndim', 'size', 'itemsize', 'nbytes' (int), 'dtype'.
** Returns a new reference, or NULL without an exception when 'name' is not
** such an attribute (NULL with an exception only on memory errors).
*/
PyObject *fj_ops_static_attr(struct fj_Node *n, PyObject *name);

/* Number of rows; row i is fj_ops_row(i) (for tests and listings). */
Py_ssize_t fj_ops_count(void);
const fj_OpDef *fj_ops_row(Py_ssize_t i);

/* ---- internal to ops*.c ---- */

/* Arguments bound to a row's parameters: borrowed, NULL when absent (None
   for a '?' parameter counts as absent). */
#define FJ_OP_MAXPARAMS 12
typedef struct {
    PyObject *v[FJ_OP_MAXPARAMS];
    PyObject *varargs; /* strong or NULL: FJ_OPF_VARARGS methods' trailing positionals as a tuple */
} fj_Bound;
int fj_ops_param_index(const fj_OpDef *op, const char *name); /* -1 if none */
/* Shape (and, for getitem, kind) of the result; 0 or -1 with an exception. */
int fj_ops_shape(const fj_OpDef *op, PyObject *args, fj_Bound *b, fj_Meta *out);
/* Raises numpy's AxisError (a ValueError) with a message; returns -1. */
int fj_ops_axis_error(const char *fmt, ...);

/* Adds this subsystem's names to framejit._C. Returns -1 on error. */
/* Adds the op table's test hooks to 'testing' (framejit._C._testing). */
int fj_ops_init(PyObject *testing);

#endif
