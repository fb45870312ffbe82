/*
** native.h: the `native` backend: fused C kernels for NumPy graphs.
**
** Responsible for: the plan of a graph (native.c): partitioning its call
** nodes into fused groups of elementwise operations, the per-call runner
** (framejit._C.NativePlan, vectorcall) that runs each group's compiled
** kernel (or, for nodes that do not fuse, the NumPy operation exactly as
** the eager runner does), output allocation with NumPy's dtype, shape and
** memory order, threads for large flat loops, and the exact fallbacks
** (a group whose kernel reports a floating-point exception or an integer
** division problem, or whose inputs do not match what the kernel was built
** for, runs node by node through NumPy).  The C source generator
** (native_emit.c) turns a group into two C functions.
**
** Not responsible for: finding and running the system C compiler and the
** on-disk kernel cache (framejit/native.py does that at backend-call
** time and hands the built shared object to NativePlan._load), tracing.
*/
#ifndef FJ_NATIVE_H
#define FJ_NATIVE_H
#include "fused_ops.h" /* FJN_* codes: what a kernel computes, named by each op row (fj_OpDef.fused) */
#include "graph.h"

#define FJN_MAX_OPS 64 /* members of one group */
#define FJN_MAX_IN 24  /* operands (group inputs) of one group */
#define FJN_MAX_OUT 16 /* materialized values of one group */
/* A kernel's status: 0, FJN_ST_HARD (run the group through NumPy), or FE_*
   bits (fenv.h) of the conditions NumPy's loops would raise: the group runs
   through NumPy unless np.geterr() ignores every one of them. */
#define FJN_ST_HARD 0x10000
#define FJN_ST_HARD_STR "0x10000"

/* Value types a kernel computes with (canonical: int64 is one type whatever its NumPy type number). */
enum {
    FJT_NONE = 0, FJT_BOOL, FJT_I8, FJT_I16, FJT_I32, FJT_I64,
    FJT_U8, FJT_U16, FJT_U32, FJT_U64, FJT_F32, FJT_F64, FJT_COUNT
};

/* Kinds of group inputs. */
enum { FJN_IN_ARRAY = 1, FJN_IN_NPSCALAR, FJN_IN_PYSCALAR, FJN_IN_CONST };

typedef struct {
    int kind;           /* FJN_IN_* */
    Py_ssize_t node;    /* env index (node index) of ARRAY/NPSCALAR/PYSCALAR, -1 for CONST */
    int type;           /* FJT_* of the value (a constant: F64, I64 or BOOL) */
    int ndim;           /* static ndim (ARRAY) */
    int bcast;          /* 0: one element (stride 0), 1: the group's full shape, 2: broadcasts partly */
    double dval;        /* CONST F64 */
    long long ival;     /* CONST I64 / BOOL */
    PyTypeObject *sctype; /* NPSCALAR: the exact scalar type (borrowed: NumPy's static types) */
    int rowvec;         /* a row group's array input that varies along the row (else one value per row) */
    int pwsrc;          /* a row group's input a float sum or mean reduces directly (C-contiguous then) */
} fjn_Input;

/* The kinds of a row group's members (fjn_Op.rk): docs/native.md, "Row groups". */
enum { FJN_RK_VEC = 1, FJN_RK_RSC, FJN_RK_RED, FJN_RK_CALL };
#define FJN_MAX_CALL 8 /* NumPy inner loops one row group calls */

/* An operand reference: >= 0 a group input, < 0 member -(ref)-1. */
typedef struct {
    Py_ssize_t node;    /* node index */
    int code;           /* FJN_* */
    int nargs;
    int arg[3];
    int argtype[3];     /* FJT_* each operand is cast to before the operation */
    int type;           /* FJT_* of the result (the node's dtype) */
    int out;            /* index among the group's outputs, or -1 (not materialized) */
    int axis;           /* reductions: the reduced axis of the group, or -1 for every axis */
    int keepdims;       /* reductions over one axis: keepdims=True */
    int rowonly;        /* a float max/min over the last axis that fuses in a row group only */
    int rk;             /* row groups: FJN_RK_VEC (one value per element), _RSC (one per row), _RED */
    int level;          /* row groups: the pass that computes it (a reduction: the pass it accumulates in) */
    int buf;            /* row groups: its row buffer (kept for later passes, or summed), or -1 */
    int call;           /* row groups: 1 + the index of the NumPy inner loop computing it (FJN_RK_CALL), or 0 */
} fjn_Op;

typedef int (*fjn_flat_fn)(Py_ssize_t start, Py_ssize_t end, char *const *data);
typedef int (*fjn_strided_fn)(int ndim, const Py_ssize_t *shape, char *const *data, const Py_ssize_t *strides);
/* A float sum's group over every axis, split at NumPy's recursion for threads:
   part(lo, n) stores the pairwise total of the subtree [lo, lo + n) in *total
   and returns a status (FE_INVALID meaning "the flag was set: check");
   check(lo, n, nan, ovf) decides the invalid over [lo, lo + n) as one
   thread would (the prologue's fj_suminv). */
typedef int (*fjn_part_fn)(Py_ssize_t lo, Py_ssize_t n, char *const *data, void *total);
typedef int (*fjn_check_fn)(Py_ssize_t lo, Py_ssize_t n, char *const *data, int nan, int ovf);
/* A row group's kernel: rows r0 .. r1-1 of length m; slot k's row r starts at data[k] + r * rs[k];
   'scratch' holds the group's row buffers (nbuf rows of m 8-byte items). */
typedef int (*fjn_rows_fn)(Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t m, char *const *data, const Py_ssize_t *rs,
                           void *scratch, void *const *calls);

typedef struct {
    int nops, nin, nout;
    fjn_Op ops[FJN_MAX_OPS];
    fjn_Input in[FJN_MAX_IN];
    int out_op[FJN_MAX_OUT];          /* member index of each output */
    int ndim;                         /* static ndim of the group */
    npy_intp shape[FJ_MAX_NDIM];      /* static shape (trace-time sizes) */
    int datadep;                      /* the symbol of a dim 0 whose size depends on the data
                                         (fj_Node.datadep; shape[0] is then a stand-in), or 0 */
    int has_partial;                  /* an input broadcasts partly: no flat loop */
    int fortran_ok;                   /* F order may be computed (no partial input, no static dim of 1) */
    int has_red;                      /* has reductions: one thread, the kernel runs even when empty */
    int red_noempty;                  /* has max/min/mean: an empty iteration runs through NumPy (its error) */
    int pw;                           /* member index of a float sum/mean (NumPy's pairwise order), or -1 */
    int has_axisred;                  /* has reductions over one axis: strided kernel, C order only */
    int row_bytes;                    /* bytes per element a flat run moves: array inputs + outputs */
    int rowk;                         /* a row group: reductions along the last axis read back by the
                                         members after them (passes over each row: fjn_emit_row_group) */
    int npass, nbuf;                  /* row groups: passes over a row, row buffers */
    int ncall;                        /* row groups: NumPy inner loops called on rows */
    int alias;                        /* the group whose kernels this one runs (itself, or an earlier
                                         group of the same text: compiled once) */
    void *calls[3 * FJN_MAX_CALL];    /* each loop's function, context and auxdata (its capsule: the
                                         plan's 'capsules') */
    /* filled by _load */
    fjn_flat_fn flat;
    fjn_strided_fn strided;
    fjn_part_fn part;   /* float sum / mean over every axis only (else NULL) */
    fjn_check_fn check;
    fjn_rows_fn rows;   /* row groups only (then flat and strided are NULL) */
} fjn_Group;

/* Does row-group member op have its values in a row (a row buffer, or its output's row:
   native_emit.c names it kb<member>)?  Such a member read in a later pass is loaded, not
   recomputed, and a float sum or a NumPy call reads that row. */
static inline int fjn_has_row(const fjn_Op *op)
{
    return (op->rk == FJN_RK_VEC || op->rk == FJN_RK_CALL) && (op->buf >= 0 || op->out >= 0);
}

/* Type helpers (native_emit.c). */
int fjn_type_of_descr(PyArray_Descr *d); /* FJT_* or FJT_NONE when not computed natively */
int fjn_type_num(int t);                 /* the NumPy type number of FJT_* */
int fjn_type_size(int t);

/*
** Appends to 'buf' (a list of str) the C source of group 'g' number 'gi':
** functions fj_g<gi>_flat and fj_g<gi>_strided.  0, or -1 with an exception.
*/
int fjn_emit_group(PyObject *buf, const fjn_Group *g, int gi);
/* The common prologue of every kernel file (new reference str, NULL on error). */
PyObject *fjn_emit_prologue(void);
/* True when group 'g' computes a function of framejit/_vmath.h (fjn_vmath_fns). */
int fjn_group_uses_vmath(const fjn_Group *g);
/* framejit/_vmath.h's functions, indexed by code - FJN_EXP: the C name's stem
   (fj_<stem>64 / fj_<stem>32), which dtypes it has (a code without one is
   NumPy's loop, called on blocks: native.c row_join_call), and whether it raises
   invalid on purpose for arguments it leaves to NumPy (native_emit.c is_hard_invalid) */
typedef struct {
    const char *ufunc, *stem;
    unsigned char f64, f32, hard_invalid;
} fjn_VmathFn;
extern const fjn_VmathFn fjn_vmath_fns[];
#define FJN_VMATH_FN(code) (&fjn_vmath_fns[(code) - FJN_EXP])

/* The FE_* bits of the conditions np.geterr() says "ignore" for (0 when it
   cannot be asked). */
int fjn_ignored_flags(void);

/* The environment variable 'name' as a count of bytes / threads: 1 with *out set
   when it is a non-negative decimal integer (clamped to PY_SSIZE_T_MAX), else 0 (unset,
   empty or not a number: the caller keeps its default). */
int fjn_env_count(const char *name, Py_ssize_t *out);

/* Adds NativePlan and native_plan() to framejit._C.  -1 on error. */
/* Adds the backend's functions to the module and its test hooks to
   'testing' (framejit._C._testing). */
int fj_native_init(PyObject *module, PyObject *testing);

#endif
