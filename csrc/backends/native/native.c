/*
** native.c: the plan and the runner of the `native` backend.
**
** Responsible for: framejit._C.native_plan(graph), which partitions a
** graph's call nodes into fused groups and returns (NativePlan, C source)
** or (None, None) when nothing fuses; NativePlan._load(path), which dlopens
** the compiled kernels; and NativePlan's vectorcall, the per-call runner:
** placeholders into an environment, then each step in order: a node that
** does not fuse runs through NumPy exactly as the eager runner does
** (fj_graph_run_node), a group checks its inputs, allocates its outputs with
** NumPy (dtype of the node, broadcast shape, the memory order NumPy's
** ufuncs give) and calls its kernel (split across threads for large flat
** loops).  A group whose inputs are not what its kernel handles (dtype,
** alignment, a layout whose NumPy output order is not computed here, a
** broadcast error) or whose kernel reports a floating-point exception or
** an integer division problem runs node by node through NumPy instead, so
** results, warnings and errors are always NumPy's.
**
** What fuses: elementwise operations of the op table on bool, int8-64,
** uint8-64, float32 and float64, whose loop dtypes NumPy's own
** ufunc.resolve_dtypes gives (see fjn_classify).  Nodes of the same static
** shape that follow each other fuse into one group (see docs/native.md).
**
** Not responsible for: the C text of kernels (native_emit.c), the compiler
** and the disk cache (framejit/native.py), graphs (graph.c).
*/
#include "fj_array.h"
#include "fj_numpy.h"
#include "native.h"
#include "native_loop.h"
#include "native_pool.h"
#include "native_stream.h"
#include "native_threads.h"

#include <dlfcn.h>
#include <errno.h>
#include <fenv.h>
#include <math.h>
#include <structmember.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- configuration ------------------------------------------------------- */

static int fjn_threads = 1;                    /* threads for large flat loops */
static Py_ssize_t fjn_thread_min = 1 << 16;    /* elements before threads are used (native_threads.c) */
static Py_ssize_t fjn_nogil_min = 1 << 14;     /* elements before the GIL is released */
/* Float max/min over one axis: exact (zero and NaN results go to NumPy) but
   slower than NumPy's SIMD loops here, so off (native_config(float_axis_minmax=True)). */
static int fjn_float_axis_minmax = 0;
/* config.native_exact (native_config(exact=)): transcendental functions through
   NumPy (its bits) rather than framejit/_vmath.h's (within a bound) */
static int fjn_exact = 1;
/* the text of framejit/_vmath.h (native_config(vmath=): native.py reads it) */
static PyObject *fjn_vmath_src = NULL;
/* NumPy runs its AVX-512 loops here (native_config(numpy_avx512=): native.py asks
   NumPy's CPU dispatch): then the functions numpy_avx512_faster names are NumPy's
   loops, called inside the kernels, not _vmath.h's */
static int fjn_numpy_avx512 = 0;

/* The dtypes (1: float64, 2: float32) of vmath code 'code' whose NumPy AVX-512 loop
   (Intel's SVML, NumPy's build on x86-64) is faster than framejit/_vmath.h's
   function, measured where both run (tools/vmath_speed.py and
   bench/native/transcendental.py's per-function table: docs/native.md
   "Transcendental functions"); where NumPy has no such loop (no AVX-512, another
   CPU), its loops are scalar libm calls, 5 to 30 times slower than _vmath.h's. */
static int numpy_avx512_faster(int code)
{
    /* measured (one core, f(a) * 0.5 + b over 1e6 elements, NumPy 2.4.6 on an Intel
       Xeon with AVX-512): _vmath.h's functions named here run 0.34 to 1.43x NumPy
       alone where NumPy's loop inside the kernel runs 1.08 to 1.80x (float64 tanh
       0.98x against 1.12x); exp, log, sin, cos, float32 tanh and expm1, float64
       expm1, log1p, log2, log10 and arctan are faster as _vmath.h's (1.21 to 14x,
       BENCHMARKS.md) */
    switch (code) {
    case FJN_TAN:
    case FJN_SINH:
    case FJN_COSH:
    case FJN_ARCSIN:
    case FJN_ARCCOS:
    case FJN_CBRT:
    case FJN_ARCTAN2:
    case FJN_POWER:
        return 3;
    case FJN_TANH:
        return 1;
    case FJN_ARCTAN:
    case FJN_LOG2:
    case FJN_LOG10:
    case FJN_LOG1P:
        return 2;
    default:
        return 0;
    }
}

/* ---- classification of nodes -------------------------------------------- */

static PyObject *fjn_numpy; /* strong: the numpy module */

/* The fused code of call node 'n': its row's (fj_OpDef.fused), or 0 when its
   operation never fuses.  Keywords only go with reductions (axis, keepdims:
   checked by fjn_classify). */
static int node_code(fj_Node *n, int exact)
{
    const fj_OpDef *op = n->op;
    if (n->kind != FJ_NODE_CALL || op == NULL || (n->kwargs != NULL && !FJN_IS_REDUCTION(op->fused)))
        return 0;
    if (FJN_IS_VMATH(op->fused) && (exact || fjn_vmath_src == NULL))
        return 0; /* NumPy's bits (config.native_exact) */
    return op->fused;
}

/* Which operation types each fused code accepts (its loop type 't'). */
static int code_accepts(int code, int t)
{
    int isf = t == FJT_F32 || t == FJT_F64, isb = t == FJT_BOOL, isi = !isf && !isb && t != FJT_NONE;
    if (FJN_IS_VMATH(code))
        /* the dtypes framejit/_vmath.h has the function for (native_emit.c fjn_vmath_fns);
           others stay NumPy's loops */
        return (t == FJT_F64 ? FJN_VMATH_FN(code)->f64 : t == FJT_F32 ? FJN_VMATH_FN(code)->f32 : 0) &&
               !(fjn_numpy_avx512 && (numpy_avx512_faster(code) & (t == FJT_F64 ? 1 : 2)));
    switch (code) {
    case FJN_ADD:
    case FJN_MUL:
    case FJN_MAX:
    case FJN_MIN:
    case FJN_LT:
    case FJN_LE:
    case FJN_EQ:
    case FJN_NE:
    case FJN_GT:
    case FJN_GE:
    case FJN_LAND:
    case FJN_LOR:
    case FJN_LXOR:
    case FJN_LNOT:
    case FJN_POS:
    case FJN_ABS:
    case FJN_WHERE:
    case FJN_CAST:
        return 1;
    case FJN_SUB:
    case FJN_NEG:
    case FJN_SQUARE:
        return isf || isi;
    case FJN_BAND:
    case FJN_BOR:
    case FJN_BXOR:
    case FJN_INVERT:
        return isi || isb;
    case FJN_FLOORDIV:
    case FJN_MOD:
        return isi;
    default: /* TDIV RECIP SQRT ISNAN ISINF ISFINITE SIGNBIT FLOOR CEIL TRUNC RINT */
        return isf;
    }
}

/* Does integer constant 'v' fit type 't' (so a C cast keeps its value)? */
static int int_fits(long long v, int t)
{
    switch (t) {
    case FJT_BOOL:
        return v == 0 || v == 1;
    case FJT_I8:
        return v >= -128 && v <= 127;
    case FJT_I16:
        return v >= -32768 && v <= 32767;
    case FJT_I32:
        return v >= INT32_MIN && v <= INT32_MAX;
    case FJT_U8:
        return v >= 0 && v <= 255;
    case FJT_U16:
        return v >= 0 && v <= 65535;
    case FJT_U32:
        return v >= 0 && v <= (long long)UINT32_MAX;
    case FJT_U64:
        return v >= 0;
    default: /* I64, floats */
        return 1;
    }
}

/* ---- the plan ------------------------------------------------------------- */

enum { FJN_STEP_NODE = 1, FJN_STEP_GROUP, FJN_STEP_LOOP };

typedef struct {
    int kind;
    Py_ssize_t node;     /* FJN_STEP_NODE */
    int group;           /* FJN_STEP_GROUP; FJN_STEP_LOOP: the loop's index */
    Py_ssize_t nrelease;
    Py_ssize_t *release; /* env slots to clear after this step (PyMem) */
} fjn_Step;

typedef struct {
    PyObject_HEAD
    PyObject *graph;   /* strong */
    PyObject *nodes;   /* strong: list of the graph's nodes */
    Py_ssize_t nnodes, nph;
    fj_Node *output;   /* borrowed (held by 'nodes') */
    Py_ssize_t nsteps;
    fjn_Step *steps;   /* PyMem */
    int ngroups;
    fjn_Group *groups; /* PyMem */
    int nloops;
    fjn_LoopPlan *loops; /* PyMem: the captured loops compiled to C (native_loop.c) */
    PyObject *source;  /* strong str */
    int loaded;
    void *dl;             /* dlopen handle of the kernels, closed with the plan */
    Py_ssize_t fallbacks; /* group runs that went through NumPy instead of their kernel */
    Py_ssize_t split_reductions; /* group runs whose reductions were split over threads */
    Py_ssize_t streamed;         /* group runs whose outputs were written with streaming stores */
    Py_ssize_t row_runs;         /* group runs whose rows ran the flat kernel with inputs constant along them */
    PyObject *capsules;          /* list: NumPy's call-info capsules of the inner loops row groups call */
    Py_ssize_t eager_runs;       /* calls run by the eager runner before the kernels were loaded */
    int partitioned;             /* plan_partition ran (once) */
    PyObject *on_call;      /* called with the plan after its eager call number call_at, then dropped */
    Py_ssize_t call_at;
    PyObject *weakrefs;          /* (framejit/native.py keeps the deferred plans in a WeakSet) */
    int exact;                   /* config.native_exact when the plan was made (native_config(exact=)) */
    vectorcallfunc vectorcall;
} fjn_Plan;

static PyTypeObject *fjn_PlanType;

static fj_Node *plan_node(fjn_Plan *p, Py_ssize_t i)
{
    return (fj_Node *)PyList_GET_ITEM(p->nodes, i);
}

/* Builder state. */
typedef struct {
    fjn_Plan *p;
    int *member_group;  /* per node: group id or -1 */
    int *member_index;  /* per node: index in its group */
    int open;           /* open group id or -1 */
    Py_ssize_t cap_steps, cap_groups;
} fjn_Builder;

static int add_step(fjn_Builder *b, int kind, Py_ssize_t node, int group)
{
    fjn_Plan *p = b->p;
    fjn_Step *steps = fj_array_grow(p->steps, p->nsteps, &b->cap_steps, sizeof(fjn_Step), 16);
    if (steps == NULL)
        return -1;
    p->steps = steps;
    fjn_Step *s = &p->steps[p->nsteps++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->node = node;
    s->group = group;
    return 0;
}

static int close_group(fjn_Builder *b)
{
    int g = b->open;
    b->open = -1;
    return g >= 0 ? add_step(b, FJN_STEP_GROUP, -1, g) : 0;
}

/* The static type and input kind of argument 'a' of a fused node; 0 if it cannot be an operand. */
static int operand_info(PyObject *a, int *type, int *kind)
{
    if (fj_Node_Check(a)) {
        fj_Node *n = (fj_Node *)a;
        if (n->kind == FJ_NODE_OUTPUT)
            return 0;
        if (n->vkind == FJ_VAL_PYSCALAR) {
            if (n->example == NULL || PyBool_Check(n->example))
                return 0;
            *type = PyLong_CheckExact(n->example) ? FJT_I64 : PyFloat_CheckExact(n->example) ? FJT_F64 : FJT_NONE;
            *kind = FJN_IN_PYSCALAR;
            return *type != FJT_NONE;
        }
        *type = fjn_type_of_descr(n->dtype);
        *kind = n->vkind == FJ_VAL_NPSCALAR ? FJN_IN_NPSCALAR : FJN_IN_ARRAY;
        return *type != FJT_NONE;
    }
    *kind = FJN_IN_CONST;
    if (PyBool_Check(a))
        *type = FJT_BOOL;
    else if (PyLong_CheckExact(a)) {
        int ovf = 0;
        (void)PyLong_AsLongLongAndOverflow(a, &ovf);
        if (PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        if (ovf)
            return 0;
        *type = FJT_I64;
    } else if (PyFloat_CheckExact(a))
        *type = FJT_F64;
    else
        return 0;
    return 1;
}

/*
** arr ** 2, arr ** 0.5, arr ** -1 with a constant exponent: NumPy's
** ndarray.__pow__ runs square / sqrt / reciprocal for these (its fast scalar
** power; the warnings name those ufuncs), so they fuse as such.  'n' is a
** node of code FJN_POW (so without keywords).  1 if it fuses (op filled), 0
** if not.
*/
static int classify_pow(fj_Node *n, fjn_Op *op)
{
    if (PyTuple_GET_SIZE(n->args) != 2 || n->vkind != FJ_VAL_ARRAY)
        return 0;
    PyObject *a = PyTuple_GET_ITEM(n->args, 0), *e = PyTuple_GET_ITEM(n->args, 1);
    if (!fj_Node_Check(a) || ((fj_Node *)a)->vkind != FJ_VAL_ARRAY || !(PyLong_CheckExact(e) || PyFloat_CheckExact(e)))
        return 0;
    double v = PyLong_CheckExact(e) ? PyLong_AsDouble(e) : PyFloat_AS_DOUBLE(e);
    if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    int t = fjn_type_of_descr(((fj_Node *)a)->dtype), isf = t == FJT_F32 || t == FJT_F64;
    if (t == FJT_NONE || t != fjn_type_of_descr(n->dtype) || t == FJT_BOOL)
        return 0;
    memset(op, 0, sizeof *op);
    op->node = n->index;
    op->nargs = 1;
    op->argtype[0] = op->type = t;
    op->out = -1;
    if (v == 2.0 && (isf || PyLong_CheckExact(e)))
        op->code = FJN_SQUARE;
    else if (v == 0.5 && isf)
        op->code = FJN_SQRT;
    else if (v == -1.0 && isf)
        op->code = FJN_RECIP;
    else
        return 0;
    return 1;
}

/* x ** c of pow node 'n' with an exponent ndarray.__pow__ computes with another
   ufunc than np.power (2, 0.5, -1: classify_pow; 1 and 0 too): those never fuse
   as FJN_POWER (their warnings would name power) */
static int pow_by_other_ufunc(fj_Node *n)
{
    if (PyTuple_GET_SIZE(n->args) != 2)
        return 1;
    PyObject *e = PyTuple_GET_ITEM(n->args, 1);
    if (fj_Node_Check(e) && ((fj_Node *)e)->vkind == FJ_VAL_PYSCALAR)
        return 1; /* a Python number traced as a value: its value may be any of them */
    if (!(PyLong_Check(e) || PyFloat_Check(e)))
        return 0;
    double v = PyLong_Check(e) ? PyLong_AsDouble(e) : PyFloat_AsDouble(e);
    if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return 1;
    }
    return v == 2.0 || v == 0.5 || v == -1.0 || v == 1.0 || v == 0.0;
}

/*
** The axis and keepdims of reduction node 'n' whose arguments are (x),
** (x, axis) and keywords among axis= and keepdims= (constants: axis None or
** an int within the operand's ndim, keepdims a bool).  1 (fills *axis, -1
** for every axis, and *keepdims) or 0 when the form is anything else.
*/
static int reduction_axis(fj_Node *n, int *axis, int *keepdims)
{
    PyObject *ax = PyTuple_GET_SIZE(n->args) == 2 ? PyTuple_GET_ITEM(n->args, 1) : Py_None, *kd = Py_False;
    if (PyTuple_GET_SIZE(n->args) > 2 || !fj_Node_Check(PyTuple_GET_ITEM(n->args, 0)))
        return 0;
    if (n->kwargs) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(n->kwargs, &pos, &k, &v)) {
            if (PyUnicode_Check(k) && PyUnicode_CompareWithASCIIString(k, "axis") == 0 &&
                PyTuple_GET_SIZE(n->args) == 1)
                ax = v;
            else if (PyUnicode_Check(k) && PyUnicode_CompareWithASCIIString(k, "keepdims") == 0)
                kd = v;
            else
                return 0;
        }
    }
    if (!PyBool_Check(kd))
        return 0;
    *keepdims = kd == Py_True;
    if (ax == Py_None) {
        *axis = -1;
        return !*keepdims;
    }
    if (!PyLong_CheckExact(ax))
        return 0;
    int nd = ((fj_Node *)PyTuple_GET_ITEM(n->args, 0))->ndim;
    long a = PyLong_AsLong(ax);
    if (a == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (a < -nd || a >= nd)
        return 0;
    *axis = (int)(a < 0 ? a + nd : a);
    return 1;
}

/*
** Decides whether call node 'n' fuses: fills 'op' (code, nargs, argtype,
** type; arg refs are filled by the caller).  Returns 1 (fuses), 0 (does not),
** -1 on a real error (memory).
*/
static int fjn_classify(fj_Node *n, fjn_Op *op, int exact)
{
    int code = node_code(n, exact);
    if (code == FJN_POW) {
        int r = classify_pow(n, op);
        if (r != 0 || exact || fjn_vmath_src == NULL || pow_by_other_ufunc(n))
            return r;
        code = FJN_POWER; /* x ** y where ndarray.__pow__ calls np.power */
    }
    if (code == 0)
        return 0;
    const fj_OpDef *row = n->op;
    PyObject *types = NULL, *ufunc = NULL, *res = NULL;
    int r = 0, axis = -1, keepdims = 0;
    /* the operands, and astype's dtype after its one operand */
    Py_ssize_t nargs = row->nin + (code == FJN_CAST);
    if (FJN_IS_REDUCTION(code)) {
        if (!reduction_axis(n, &axis, &keepdims) || (n->vkind != FJ_VAL_ARRAY && n->vkind != FJ_VAL_NPSCALAR))
            return 0;
    } else if ((n->vkind != FJ_VAL_ARRAY && n->vkind != FJ_VAL_NPSCALAR) || PyTuple_GET_SIZE(n->args) != nargs) {
        return 0;
    }
    memset(op, 0, sizeof *op);
    op->node = n->index;
    op->code = code;
    op->nargs = row->nin;
    op->type = fjn_type_of_descr(n->dtype);
    op->out = -1;
    op->axis = axis;
    op->keepdims = keepdims;
    if (op->type == FJT_NONE)
        return 0;
    int otype[3], okind[3];
    for (int i = 0; i < op->nargs; i++)
        if (!operand_info(PyTuple_GET_ITEM(n->args, i), &otype[i], &okind[i]))
            return 0;
    if (FJN_IS_REDUCTION(code)) {
        /* exact in any order: integer sums (wrap), max/min (a float result of
           zero or NaN runs through NumPy: there the order decides), any/all;
           float sum and mean follow NumPy's pairwise order (native_emit.c). */
        int t = otype[0], rt = op->type;
        int tf = t == FJT_F32 || t == FJT_F64;
        if (okind[0] != FJN_IN_ARRAY || (axis < 0 && n->vkind != FJ_VAL_NPSCALAR))
            return 0;
        op->argtype[0] = code == FJN_RSUM ? rt : t;
        /* over one axis: only the kinds exact in any order; a float max/min
           whose result holds a zero or a NaN runs through NumPy (run_group) */
        if (axis >= 0 && tf && (code == FJN_RSUM || code == FJN_RMEAN))
            return axis == ((fj_Node *)PyTuple_GET_ITEM(n->args, 0))->ndim - 1 && rt == t; /* rows: pairwise */
        if (axis >= 0 && code == FJN_RMEAN)
            return 0;
        if (axis >= 0 && tf && !fjn_float_axis_minmax) {
            /* a float max / min over the last axis fuses into a row group (the
               rows are in cache for the passes after it); alone over another axis
               NumPy's SIMD loops are faster than this backend's */
            fj_Node *a = (fj_Node *)PyTuple_GET_ITEM(n->args, 0);
            if (axis != a->ndim - 1 || a->shape[axis] == 1 || (code != FJN_RMAX && code != FJN_RMIN))
                return 0;
            op->rowonly = 1;
        }
        switch (code) {
        case FJN_RSUM:
            return tf ? rt == t : (rt == FJT_I64 || rt == FJT_U64);
        case FJN_RMEAN:
            return tf && rt == t;
        case FJN_RMAX:
        case FJN_RMIN:
            return rt == t;
        default:
            return rt == FJT_BOOL;
        }
    }
    if (code == FJN_CAST) {
        if (fj_Node_Check(PyTuple_GET_ITEM(n->args, 1)) || okind[0] == FJN_IN_CONST)
            return 0;
        op->argtype[0] = otype[0];
        return okind[0] != FJN_IN_PYSCALAR;
    }
    if (code == FJN_WHERE) {
        op->argtype[0] = FJT_BOOL;
        op->argtype[1] = op->argtype[2] = op->type;
    } else {
        /* NumPy's own loop selection (NEP 50: Python scalars are weak) */
        types = PyTuple_New(op->nargs + 1);
        if (!types)
            return -1;
        for (int i = 0; i < op->nargs; i++) {
            PyObject *a = PyTuple_GET_ITEM(n->args, i), *t;
            if (okind[i] == FJN_IN_CONST)
                t = (PyObject *)Py_TYPE(a);
            else if (okind[i] == FJN_IN_PYSCALAR)
                t = (PyObject *)Py_TYPE(((fj_Node *)a)->example);
            else
                t = (PyObject *)((fj_Node *)a)->dtype;
            PyTuple_SET_ITEM(types, i, Py_NewRef(t));
        }
        PyTuple_SET_ITEM(types, op->nargs, Py_NewRef(Py_None));
        ufunc = PyObject_GetAttrString(fjn_numpy, row->ufunc);
        res = ufunc ? PyObject_CallMethod(ufunc, "resolve_dtypes", "(O)", types) : NULL;
        if (!res || !PyTuple_Check(res) || PyTuple_GET_SIZE(res) != op->nargs + 1) {
            PyErr_Clear(); /* NumPy has no such loop: not fused (the eager path reports it) */
            goto done;
        }
        for (int i = 0; i <= op->nargs; i++) {
            PyObject *d = PyTuple_GET_ITEM(res, i);
            int t = PyArray_DescrCheck(d) ? fjn_type_of_descr((PyArray_Descr *)d) : FJT_NONE;
            if (t == FJT_NONE)
                goto done;
            if (i < op->nargs)
                op->argtype[i] = t;
            else if (t != op->type)
                goto done;
        }
        if (op->nargs == 2 && op->argtype[0] != op->argtype[1])
            goto done; /* mixed loops (int64 < uint64): not fused */
    }
    if (n->vkind == FJ_VAL_NPSCALAR && fjn_type_size(op->argtype[0]) > 0 && op->argtype[0] != FJT_BOOL &&
        op->argtype[0] != FJT_F32 && op->argtype[0] != FJT_F64 &&
        (op->code == FJN_ADD || op->code == FJN_SUB || op->code == FJN_MUL || op->code == FJN_NEG ||
         op->code == FJN_ABS || op->code == FJN_SQUARE || op->code == FJN_FLOORDIV || op->code == FJN_MOD))
        goto done; /* NumPy's scalar math checks integer overflow (a warning): not fused */
    for (int i = 0; i < op->nargs; i++) {
        int to = op->argtype[i];
        if (!code_accepts(op->code, to))
            goto done;
        if (okind[i] == FJN_IN_CONST && otype[i] == FJT_I64) {
            long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(n->args, i));
            if (!int_fits(v, to))
                goto done;
        }
        if (okind[i] == FJN_IN_CONST && otype[i] == FJT_F64 && to != FJT_F64 && to != FJT_F32)
            goto done;
        if (okind[i] == FJN_IN_CONST && otype[i] == FJT_F64 && to == FJT_F32) {
            /* a Python float meeting float32 (NEP 50) that overflows in the cast: NumPy
               warns "overflow encountered in cast" (or raises) each time; a compiled
               constant would fold to inf silently (found by review) */
            double d = PyFloat_AsDouble(PyTuple_GET_ITEM(n->args, i));
            if (d == -1.0 && PyErr_Occurred()) {
                PyErr_Clear();
                goto done;
            }
            if (isfinite(d) && fabs(d) >= 0x1.ffffffp127)
                goto done;
        }
        if (okind[i] == FJN_IN_PYSCALAR && to != otype[i] && !(otype[i] == FJT_I64 && to == FJT_F64))
            goto done;
    }
    r = 1;
done:
    Py_XDECREF(types);
    Py_XDECREF(ufunc);
    Py_XDECREF(res);
    return r;
}

static int same_shape(fjn_Group *g, fj_Node *n)
{
    /* a size that depends on the data equals only itself (its stand-in is not a size) */
    if (g->ndim != n->ndim || g->datadep != n->datadep)
        return 0;
    for (int i = 0; i < n->ndim; i++)
        if (g->shape[i] != n->shape[i])
            return 0;
    return 1;
}

/* The input index of external argument 'a' in group 'g' (added if new), or -1 when full. */
static int group_input(fjn_Group *g, PyObject *a)
{
    int type = 0, kind = 0;
    (void)operand_info(a, &type, &kind);
    if (kind != FJN_IN_CONST) {
        fj_Node *n = (fj_Node *)a;
        for (int k = 0; k < g->nin; k++)
            if (g->in[k].node == n->index)
                return k;
    }
    if (g->nin == FJN_MAX_IN)
        return -1;
    fjn_Input *in = &g->in[g->nin];
    memset(in, 0, sizeof *in);
    in->kind = kind;
    in->type = type;
    in->node = -1;
    if (kind == FJN_IN_CONST) {
        if (type == FJT_F64)
            in->dval = PyFloat_AS_DOUBLE(a);
        else
            in->ival = type == FJT_BOOL ? (a == Py_True) : PyLong_AsLongLong(a);
    } else {
        fj_Node *n = (fj_Node *)a;
        in->node = n->index;
        if (kind == FJN_IN_ARRAY) {
            in->ndim = n->ndim;
            if (n->ndim > g->ndim)
                return -1;
            npy_intp size = 1;
            int full = n->ndim == g->ndim;
            for (int i = 0; i < n->ndim; i++) {
                size *= n->shape[i];
                if (n->shape[i] != g->shape[g->ndim - n->ndim + i])
                    full = 0;
            }
            in->bcast = size == 1 ? 0 : full ? 1 : 2;
        } else if (kind == FJN_IN_NPSCALAR) {
            in->sctype = n->dtype->typeobj;
        }
    }
    return g->nin++;
}

static int is_pairwise(const fjn_Op *op)
{
    return (op->code == FJN_RSUM || op->code == FJN_RMEAN) && (op->type == FJT_F32 || op->type == FJT_F64);
}

/* Adds classified node 'n' (op filled) to the open group; 0 ok, 1 no room, -1 error. */
static int group_add(fjn_Builder *b, fj_Node *n, fjn_Op *op)
{
    fjn_Group *g = &b->p->groups[b->open];
    if (g->nops == FJN_MAX_OPS)
        return 1;
    int save_nin = g->nin;
    for (int i = 0; i < op->nargs; i++) {
        PyObject *a = PyTuple_GET_ITEM(n->args, i);
        if (fj_Node_Check(a) && b->member_group[((fj_Node *)a)->index] == b->open) {
            op->arg[i] = -b->member_index[((fj_Node *)a)->index] - 1;
            continue;
        }
        int k = group_input(g, a);
        if (k < 0) {
            g->nin = save_nin;
            return 1;
        }
        op->arg[i] = k;
    }
    b->member_group[n->index] = b->open;
    b->member_index[n->index] = g->nops;
    if (FJN_IS_REDUCTION(op->code))
        g->has_red = 1;
    if (FJN_IS_REDUCTION(op->code) && op->axis >= 0)
        g->has_axisred = 1;
    if (is_pairwise(op))
        g->pw = g->nops;
    g->ops[g->nops++] = *op;
    return 0;
}

static int open_group(fjn_Builder *b, fj_Node *n)
{
    fjn_Plan *p = b->p;
    fjn_Group *gs = fj_array_grow(p->groups, p->ngroups, &b->cap_groups, sizeof(fjn_Group), 4);
    if (gs == NULL)
        return -1;
    p->groups = gs;
    fjn_Group *g = &p->groups[p->ngroups];
    memset(g, 0, sizeof *g);
    g->ndim = n->ndim;
    g->datadep = n->datadep;
    g->pw = -1;
    if (n->ndim > 0)
        memcpy(g->shape, n->shape, sizeof(npy_intp) * (size_t)n->ndim);
    b->open = p->ngroups++;
    return 0;
}

/* Does node 'n' read a reduction of the open group (whose value exists only after the group ran)? */
static int reads_open_reduction(fjn_Builder *b, fj_Node *n)
{
    if (b->open < 0)
        return 0;
    fjn_Group *g = &b->p->groups[b->open];
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(n->inputs); j++) {
        Py_ssize_t in = ((fj_Node *)PyTuple_GET_ITEM(n->inputs, j))->index;
        if (b->member_group[in] == b->open && FJN_IS_REDUCTION(g->ops[b->member_index[in]].code))
            return 1;
    }
    return 0;
}

/* Is node 'n' a slice view of an array no member of the open group computes
** (a[1:-1, :-2]: indexing by constant slices, None and Ellipsis only)?  Such a
** view runs before the open group rather than closing it: it computes
** nothing, raises nothing (a slice clips to any size), and its base exists
** before the group (a member of the group writes only its own fresh
** outputs), so eager's order of values, warnings and errors is kept.  A
** stencil over slices is one group then, not one per slice (issue 23). */
static int is_hoistable_view(fjn_Builder *b, fj_Node *n)
{
    if (b->open < 0 || n->op == NULL || n->op->kind != FJ_OP_GETITEM || n->vkind != FJ_VAL_ARRAY ||
        PyTuple_GET_SIZE(n->args) != 2 || (n->kwargs != NULL && PyDict_GET_SIZE(n->kwargs) > 0))
        return 0;
    PyObject *base = PyTuple_GET_ITEM(n->args, 0), *key = PyTuple_GET_ITEM(n->args, 1);
    if (!fj_Node_Check(base) || ((fj_Node *)base)->vkind != FJ_VAL_ARRAY ||
        b->member_group[((fj_Node *)base)->index] == b->open)
        return 0;
    Py_ssize_t nk = PyTuple_Check(key) ? PyTuple_GET_SIZE(key) : 1;
    if (nk == 0)
        return 0;
    for (Py_ssize_t k = 0; k < nk; k++) {
        PyObject *e = PyTuple_Check(key) ? PyTuple_GET_ITEM(key, k) : key;
        if (e == Py_None || e == Py_Ellipsis)
            continue;
        if (!PySlice_Check(e))
            return 0;
        PySliceObject *sl = (PySliceObject *)e;
        PyObject *parts[3] = {sl->start, sl->stop, sl->step};
        for (int j = 0; j < 3; j++)
            if (parts[j] != Py_None && !PyLong_CheckExact(parts[j]))
                return 0;
        int ovf = 0;
        if (sl->step != Py_None && PyLong_AsLongAndOverflow(sl->step, &ovf) == 0 && !ovf) /* (a ValueError) */
            return 0;
    }
    return 1;
}

/* ---- row groups ------------------------------------------------------------
** A reduction along the last axis whose result the members after it read
** back (x - x.max(axis=-1, keepdims=True), a softmax, a layer norm) closes a
** plain group: its value exists only once every element was reduced.  A row
** group runs such a chain row by row instead: passes over one row (which
** stays in cache) compute the reductions of each level and then the members
** reading them (docs/native.md, "Row groups"; native_emit.c
** fjn_emit_row_group).  Members are of three kinds: VEC (the group's shape),
** RED (a reduction along the last axis), RSC (one value per row: the
** group's shape with the last axis 1, computed from reductions).
*/

/* Is op a reduction along group g's rows: the last axis (1-d: also every axis)? */
static int is_row_red(const fjn_Group *g, const fjn_Op *op)
{
    return FJN_IS_REDUCTION(op->code) && g->ndim >= 1 && (op->axis == g->ndim - 1 || (g->ndim == 1 && op->axis < 0));
}

/* Is node n of group g's row-scalar shape: the group's with the last axis 1 (1-d: also ())? */
static int row_scalar_shape(const fjn_Group *g, const fj_Node *n)
{
    if (g->ndim == 1)
        return n->ndim == 0 || (n->ndim == 1 && n->shape[0] == 1);
    if (n->ndim != g->ndim || n->datadep != g->datadep || n->shape[g->ndim - 1] != 1)
        return 0;
    for (int a = 0; a + 1 < g->ndim; a++)
        if (n->shape[a] != g->shape[a])
            return 0;
    return 1;
}

/* Can group g become a row group: rows longer than 1, reductions all along them? */
static int row_capable(const fjn_Group *g)
{
    if (g->ndim < 1 || g->shape[g->ndim - 1] == 1)
        return 0;
    for (int m = 0; m < g->nops; m++)
        if (FJN_IS_REDUCTION(g->ops[m].code) && !is_row_red(g, &g->ops[m]))
            return 0;
    return 1;
}

/* Adds classified node n to the open group as a row-group member when that is
   what it needs: a member reading the group's reductions back, a reduction the
   plain group cannot take (a second float sum, a float max / min along rows).
   1 (added: the group is a row group), 0 (not: the caller goes on), -1 error. */
static int row_join(fjn_Builder *b, fj_Node *n, fjn_Op *op)
{
    if (b->open < 0)
        return 0;
    fjn_Group *g = &b->p->groups[b->open];
    if (!row_capable(g) || g->nops == FJN_MAX_OPS)
        return 0;
    int reads = 0;
    for (int i = 0; i < op->nargs; i++) {
        PyObject *a = PyTuple_GET_ITEM(n->args, i);
        if (!fj_Node_Check(a))
            continue;
        fj_Node *an = (fj_Node *)a;
        if (b->member_group[an->index] != b->open) {
            /* an input of a row-scalar member: a scalar or an array of the row-scalar shape */
            if (!same_shape(g, n) && !FJN_IS_REDUCTION(op->code) && an->vkind == FJ_VAL_ARRAY &&
                !row_scalar_shape(g, an)) {
                npy_intp size = 1;
                for (int d = 0; d < an->ndim; d++)
                    size *= an->shape[d];
                if (size != 1)
                    return 0;
            }
            continue;
        }
        const fjn_Op *ao = &g->ops[b->member_index[an->index]];
        if (FJN_IS_REDUCTION(ao->code)) {
            /* read back along the row: keepdims (a 1-d group's scalar result broadcasts too) */
            if (!ao->keepdims && g->ndim != 1)
                return 0;
            reads = 1;
        } else if (!same_shape(g, an)) {
            reads = 1; /* a row-scalar member */
        }
    }
    if (FJN_IS_REDUCTION(op->code)) {
        fj_Node *a = (fj_Node *)PyTuple_GET_ITEM(n->args, 0);
        if (!is_row_red(g, op) || !same_shape(g, a) || reads)
            return 0;
        /* the plain group takes it when it can */
        if (!g->rowk && !op->rowonly && !(g->pw >= 0 || (is_pairwise(op) && g->has_red)))
            return 0;
    } else if (same_shape(g, n)) {
        if (!reads)
            return 0;
    } else if (row_scalar_shape(g, n)) {
        if (!reads)
            return 0;
    } else {
        return 0;
    }
    int r = group_add(b, n, op);
    if (r != 0)
        return r < 0 ? -1 : 0;
    g->rowk = 1;
    return 1;
}

/* The prefix of NumPy's ufunc_call_info (the "numpy_1.24_ufunc_call_info"
   capsule of ufunc._resolve_dtypes_and_context, filled by
   ufunc._get_strided_loop; NumPy's test_loop_access reads it the same way). */
typedef struct {
    void *strided_loop;
    void *context;
    void *auxdata;
    npy_bool requires_pyapi;
    npy_bool no_floatingpoint_errors;
} fjn_CallInfo;

/* NumPy's own inner loop of ufunc 'name' of nin (1 or 2) operands of type
   'descr' and a result of that type, for the given operand strides (an item,
   or 0 for a constant) and a contiguous result: fills fn (function, context,
   auxdata) and appends the capsule owning them to *caps.  1, 0 when NumPy has
   no such loop, -1 error. */
static int numpy_loop(const char *name, int nin, PyArray_Descr *descr, const Py_ssize_t *strides, PyObject **caps,
                      void **fn)
{
    PyObject *uf = NULL, *r = NULL, *dts = NULL, *fixed = NULL, *kw = NULL, *got = NULL;
    int rc = 0;
    Py_ssize_t isz = (Py_ssize_t)PyDataType_ELSIZE(descr);
    if (!(uf = PyObject_GetAttrString(fjn_numpy, name)) ||
        !(dts = nin == 1 ? Py_BuildValue("(OO)", (PyObject *)descr, Py_None)
                         : Py_BuildValue("(OOO)", (PyObject *)descr, (PyObject *)descr, Py_None)))
        goto done;
    r = PyObject_CallMethod(uf, "_resolve_dtypes_and_context", "(O)", dts);
    if (!r || !PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 2 || !PyTuple_Check(PyTuple_GET_ITEM(r, 0)) ||
        PyTuple_GET_SIZE(PyTuple_GET_ITEM(r, 0)) != nin + 1)
        goto done;
    for (int i = 0; i <= nin; i++) {
        PyObject *d = PyTuple_GET_ITEM(PyTuple_GET_ITEM(r, 0), i);
        if (!PyArray_DescrCheck(d) || !PyArray_EquivTypes((PyArray_Descr *)d, descr))
            goto done; /* another loop (a cast in between): not this */
    }
    PyObject *cap = PyTuple_GET_ITEM(r, 1);
    /* the strides the kernel calls it with (the loop may be chosen by them): each
       operand's (0 for a constant), the output's contiguous */
    if (!(fixed = nin == 1 ? Py_BuildValue("(nn)", strides[0], isz) : Py_BuildValue("(nnn)", strides[0], strides[1], isz)) ||
        !(kw = Py_BuildValue("{sO}", "fixed_strides", fixed)))
        goto done;
    PyObject *meth = PyObject_GetAttrString(uf, "_get_strided_loop"), *args = PyTuple_Pack(1, cap);
    got = meth && args ? PyObject_Call(meth, args, kw) : NULL;
    Py_XDECREF(meth);
    Py_XDECREF(args);
    if (!got)
        goto done;
    fjn_CallInfo *ci = PyCapsule_GetPointer(cap, "numpy_1.24_ufunc_call_info");
    if (!ci || !ci->strided_loop || ci->requires_pyapi)
        goto done;
    if (!*caps && !(*caps = PyList_New(0))) {
        rc = -1;
        goto done;
    }
    if (PyList_Append(*caps, cap) < 0) {
        rc = -1;
        goto done;
    }
    fn[0] = ci->strided_loop;
    fn[1] = ci->context;
    fn[2] = ci->auxdata;
    rc = 1;
done:
    if (rc == 0 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_MemoryError))
            rc = -1;
        else
            PyErr_Clear(); /* an older NumPy, no such loop: the node runs through NumPy */
    }
    Py_XDECREF(uf);
    Py_XDECREF(r);
    Py_XDECREF(dts);
    Py_XDECREF(fixed);
    Py_XDECREF(kw);
    Py_XDECREF(got);
    return rc;
}

/* A unary ufunc the kernels do not compute (a transcendental function with
   config.native_exact, tan, cbrt, log2 ...) joins the open group as a call
   of NumPy's own inner loop on each row or block (NumPy's bits: the loop
   NumPy runs for a contiguous array, whose elements do not depend on where a
   call's run starts or ends; tests/test_native_rowgroups.py checks every
   run length class).  1 joined, 0 not, -1 error. */
static int row_join_call2(fjn_Builder *b, fj_Node *n);

/* Adds node n, computed by the NumPy loop just stored at the open group's
   calls[3 * ncall] (its nargs operands and result of type t), to the group,
   which becomes a row group.  1 joined, 0 no room, -1 error. */
static int add_call(fjn_Builder *b, fj_Node *n, int code, int nargs, int t)
{
    fjn_Group *g = &b->p->groups[b->open];
    fjn_Op op;
    memset(&op, 0, sizeof op);
    op.node = n->index;
    op.code = code;
    op.nargs = nargs;
    for (int j = 0; j < nargs; j++)
        op.argtype[j] = t;
    op.type = t;
    op.out = -1;
    op.axis = -1;
    op.call = g->ncall + 1;
    int r = group_add(b, n, &op);
    if (r != 0)
        return r < 0 ? -1 : 0;
    g->ncall++;
    g->rowk = 1;
    return 1;
}

static int row_join_call(fjn_Builder *b, fj_Node *n)
{
    const fj_OpDef *row = n->op;
    if (row != NULL && row->nin == 2)
        return row_join_call2(b, n);
    /* a unary ufunc the kernels do not compute: the transcendental functions (with
       native_exact), tan, arcsin ... arctanh, exp2, log2, log10, cbrt, sign, degrees ... */
    if (b->open < 0 || n->kind != FJ_NODE_CALL || row == NULL || row->kind != FJ_OP_FUNC || row->nin != 1 ||
        !(row->flags & FJ_OPF_UFUNC) || !(row->fused == 0 || FJN_IS_VMATH(row->fused)) || row->ufunc == NULL ||
        (n->kwargs && PyDict_GET_SIZE(n->kwargs)) || PyTuple_GET_SIZE(n->args) != 1 ||
        (n->vkind != FJ_VAL_ARRAY && n->vkind != FJ_VAL_NPSCALAR))
        return 0;
    fjn_Group *g = &b->p->groups[b->open];
    PyObject *a = PyTuple_GET_ITEM(n->args, 0);
    if (!row_capable(g) || g->nops == FJN_MAX_OPS || g->ncall == FJN_MAX_CALL || !fj_Node_Check(a))
        return 0;
    fj_Node *an = (fj_Node *)a;
    if (same_shape(g, an) && same_shape(g, n)) {
        if (an->vkind != FJ_VAL_ARRAY || n->vkind != FJ_VAL_ARRAY)
            return 0;
    } else if (g->rowk && row_scalar_shape(g, n) && b->member_group[an->index] == b->open) {
        /* one value per row (log of a row's sum): NumPy's loop on that one value;
           its operand a reduction read back or another such value */
        const fjn_Op *ao = &g->ops[b->member_index[an->index]];
        if (same_shape(g, an) || (FJN_IS_REDUCTION(ao->code) && !ao->keepdims && g->ndim != 1))
            return 0;
    } else {
        return 0;
    }
    int t = fjn_type_of_descr(n->dtype);
    if ((t != FJT_F32 && t != FJT_F64) || fjn_type_of_descr(((fj_Node *)a)->dtype) != t)
        return 0;
    Py_ssize_t stride = (Py_ssize_t)PyDataType_ELSIZE(n->dtype);
    int rc = numpy_loop(row->ufunc, 1, n->dtype, &stride, &b->p->capsules, &g->calls[3 * g->ncall]);
    if (rc <= 0)
        return rc;
    return add_call(b, n, row->fused ? row->fused : FJN_UCALL, 1, t);
}

/* The binary float ufuncs the kernels do not compute whose NumPy loop joins a
   group (each checked to give every element the same bits whatever run it is
   in, with an array or a constant for either operand: tests/test_native_rowgroups.py). */
static const char *const row_call2_ufuncs[] = {"power", "arctan2", "hypot", "logaddexp", "logaddexp2", NULL};

/* A binary ufunc of row_call2_ufuncs (np.power, x ** y but for the exponents
   NumPy's ndarray.__pow__ computes otherwise, np.arctan2 ...) of float operands
   of the open group's shape and type, or one of them a Python float or int
   constant of that type's exact value, joins the open group as a call of
   NumPy's loop on each row or block (the constant's stride 0).  1 joined, 0 not,
   -1 error. */
static int row_join_call2(fjn_Builder *b, fj_Node *n)
{
    const fj_OpDef *row = n->op;
    if (b->open < 0 || n->kind != FJ_NODE_CALL || row->ufunc == NULL || PyTuple_GET_SIZE(n->args) != 2 ||
        (n->kwargs && PyDict_GET_SIZE(n->kwargs)) || n->vkind != FJ_VAL_ARRAY ||
        !((row->kind == FJ_OP_FUNC && (row->flags & FJ_OPF_UFUNC) && (row->fused == 0 || FJN_IS_VMATH(row->fused))) ||
          (row->kind == FJ_OP_BINOP && row->fused == FJN_POW)))
        return 0;
    int known = 0;
    for (int i = 0; row_call2_ufuncs[i] && !known; i++)
        known = strcmp(row->ufunc, row_call2_ufuncs[i]) == 0;
    fjn_Group *g = &b->p->groups[b->open];
    int t = fjn_type_of_descr(n->dtype);
    if (!known || (t != FJT_F32 && t != FJT_F64) || !row_capable(g) || g->nops == FJN_MAX_OPS ||
        g->ncall == FJN_MAX_CALL || !same_shape(g, n))
        return 0;
    Py_ssize_t strides[2];
    int arrays = 0;
    for (int i = 0; i < 2; i++) {
        PyObject *a = PyTuple_GET_ITEM(n->args, i);
        if (fj_Node_Check(a)) {
            fj_Node *an = (fj_Node *)a;
            if (an->vkind != FJ_VAL_ARRAY || !same_shape(g, an) || fjn_type_of_descr(an->dtype) != t)
                return 0;
            strides[i] = (Py_ssize_t)PyDataType_ELSIZE(n->dtype);
            arrays++;
            continue;
        }
        /* a constant: a Python float, or an int, whose value the type holds exactly
           (NumPy converts it to the array's type) */
        double v;
        if (PyFloat_CheckExact(a)) {
            v = PyFloat_AS_DOUBLE(a);
        } else if (PyLong_CheckExact(a)) {
            int ovf = 0;
            long long iv = PyLong_AsLongLongAndOverflow(a, &ovf);
            if (ovf || iv > (1LL << 24) || iv < -(1LL << 24))
                return 0;
            v = (double)iv;
        } else {
            return 0;
        }
        if (t == FJT_F32 && (double)(float)v != v && v == v)
            return 0;
        /* x ** k: ndarray.__pow__ computes these exponents with other ufuncs */
        if (row->kind == FJ_OP_BINOP && i == 1 && (v == 2.0 || v == 0.5 || v == -1.0 || v == 1.0 || v == 0.0))
            return 0;
        strides[i] = 0;
    }
    if (arrays == 0)
        return 0;
    int rc = numpy_loop(row->ufunc, 2, n->dtype, strides, &b->p->capsules, &g->calls[3 * g->ncall]);
    if (rc <= 0)
        return rc;
    return add_call(b, n, FJN_UCALL, 2, t);
}

/* A call of NumPy's loop (row_join_call) that no open group takes opens a
   group of its own shape (np.tanh(x) * 2.0 + b is then one group).  A group
   left with calls only runs them as NumPy nodes (finish_groups).  1 opened
   and joined, 0 not (the group that was open is closed: the caller then runs
   the node alone, as any node that does not fuse), -1 error. */
static int row_open_call(fjn_Builder *b, fj_Node *n)
{
    /* (row_join_call checks the operand against the new group's shape) */
    if (close_group(b) < 0 || open_group(b, n) < 0)
        return -1;
    int rc = row_join_call(b, n);
    if (rc <= 0) {
        /* not taken: the empty group is undone (no step was added for it) */
        b->p->ngroups--;
        b->open = -1;
    }
    return rc;
}

/* Operand 'ref' of a row group's member read as a whole row (summed, or a
   NumPy call's argument): a member gets a row buffer, unless it has its row
   already (a buffer, or a NumPy call's: a buffer or its output's row); an
   input is read in place. */
static void row_buffer(fjn_Group *g, int ref)
{
    if (ref < 0 && !fjn_has_row(&g->ops[-ref - 1]) && g->ops[-ref - 1].rk != FJN_RK_CALL)
        g->ops[-ref - 1].buf = g->nbuf++;
}

/* The passes, kinds, levels and row buffers of row group g (its outputs read
   outside marked).  A member no one reads is an output (its flags are NumPy's
   too); a reduction read only inside the group is not.  A VEC member read in a
   later pass is recomputed there, unless it is costly (a transcendental
   function, a division, a square root): then its row is kept in a buffer, as
   is the summed row of a float sum or mean.  0, or 1 when the group cannot run
   this way (too many outputs: its nodes run one by one). */
static int finish_row_group(fjn_Plan *p, fjn_Group *g)
{
    unsigned char read_in[FJN_MAX_OPS] = {0};
    int maxlvl = 0;
    g->nbuf = 0;
    for (int m = 0; m < g->nops; m++) {
        fjn_Op *op = &g->ops[m];
        fj_Node *n = plan_node(p, op->node);
        int lvl = 0;
        for (int j = 0; j < op->nargs; j++) {
            if (op->arg[j] >= 0)
                continue;
            const fjn_Op *ao = &g->ops[-op->arg[j] - 1];
            int al = ao->level + (ao->rk == FJN_RK_RED || ao->rk == FJN_RK_CALL);
            lvl = al > lvl ? al : lvl;
            read_in[-op->arg[j] - 1] = 1;
        }
        op->rk = FJN_IS_REDUCTION(op->code) ? FJN_RK_RED
                 : same_shape(g, n)          ? (op->call ? FJN_RK_CALL : FJN_RK_VEC)
                                             : FJN_RK_RSC; /* (a NumPy call on one value per row too) */
        op->level = lvl;
        op->buf = -1;
        if (op->rk != FJN_RK_RSC && lvl > maxlvl)
            maxlvl = lvl;
    }
    g->npass = maxlvl + 1;
    for (int m = 0; m < g->nops; m++) {
        fjn_Op *op = &g->ops[m];
        if (op->rk != FJN_RK_RED && !read_in[m] && op->out < 0) {
            if (g->nout == FJN_MAX_OUT)
                return 1;
            op->out = g->nout;
            g->out_op[g->nout++] = m;
        }
        if (op->rk == FJN_RK_CALL) {
            /* its row: computed into a buffer (an output: into the output row), its
               operand's row in a buffer too (an input: the input's row) */
            if (op->out < 0)
                op->buf = g->nbuf++;
            for (int j = 0; j < op->nargs; j++)
                row_buffer(g, op->arg[j]);
            continue;
        }
        if (op->rk == FJN_RK_RED && is_pairwise(op)) {
            if (op->arg[0] >= 0)
                g->in[op->arg[0]].pwsrc = 1;
            row_buffer(g, op->arg[0]);
        }
        if (op->rk != FJN_RK_VEC || fjn_has_row(op) ||
            !(FJN_IS_VMATH(op->code) || op->code == FJN_TDIV || op->code == FJN_SQRT || op->code == FJN_RECIP))
            continue;
        for (int k = m + 1; k < g->nops; k++) {
            const fjn_Op *ko = &g->ops[k];
            int later = 0;
            for (int j = 0; j < ko->nargs; j++)
                later |= ko->arg[j] == -m - 1 && ko->level > op->level;
            if (later) {
                op->buf = g->nbuf++;
                break;
            }
        }
    }
    for (int k = 0; k < g->nin; k++) {
        fjn_Input *in = &g->in[k];
        in->rowvec = 0;
        if (in->kind == FJN_IN_ARRAY && in->bcast != 0 && in->ndim >= 1)
            in->rowvec = plan_node(p, in->node)->shape[in->ndim - 1] != 1;
    }
    return 0;
}

/* Marks outputs, static layout facts, and turns unusable groups into node steps. */
static int finish_groups(fjn_Builder *b)
{
    fjn_Plan *p = b->p;
    for (Py_ssize_t i = 0; i < p->nnodes; i++) {
        fj_Node *n = plan_node(p, i);
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(n->inputs); j++) {
            Py_ssize_t in = ((fj_Node *)PyTuple_GET_ITEM(n->inputs, j))->index;
            int gid = b->member_group[in];
            if (gid < 0 || gid == b->member_group[i])
                continue;
            fjn_Group *g = &p->groups[gid];
            fjn_Op *op = &g->ops[b->member_index[in]];
            if (op->out < 0) {
                if (g->nout == FJN_MAX_OUT) {
                    g->nout = FJN_MAX_OUT + 1; /* too many: the group runs unfused */
                    continue;
                }
                op->out = g->nout;
                g->out_op[g->nout++] = b->member_index[in];
            }
        }
    }
    for (int gi = 0; gi < p->ngroups; gi++) {
        fjn_Group *g = &p->groups[gi];
        int calls_only = g->nops > 0;
        for (int m = 0; m < g->nops && calls_only; m++)
            calls_only = g->ops[m].call != 0;
        if (calls_only)
            g->nout = FJN_MAX_OUT + 1; /* NumPy's loops alone: its nodes, as they are */
        if (g->rowk && g->nout <= FJN_MAX_OUT && finish_row_group(p, g))
            g->nout = FJN_MAX_OUT + 1; /* too many outputs: the group runs unfused */
        for (int m = 0; m < g->nops && !g->rowk; m++) {
            fjn_Op *op = &g->ops[m];
            if (!FJN_IS_REDUCTION(op->code)) {
                /* a member nothing reads (y = np.log(x), y unused) is an output all the
                   same: a kernel would drop its operations, and with them the flags and
                   warnings NumPy raises computing it (found by review) */
                int read = op->out >= 0;
                for (int k = m + 1; !read && k < g->nops; k++)
                    for (int j = 0; j < g->ops[k].nargs; j++)
                        read |= g->ops[k].arg[j] == -m - 1;
                if (!read && g->nout <= FJN_MAX_OUT) {
                    if (g->nout == FJN_MAX_OUT) {
                        g->nout = FJN_MAX_OUT + 1;
                        continue;
                    }
                    op->out = g->nout;
                    g->out_op[g->nout++] = m;
                }
                continue;
            }
            g->has_red = 1;
            if (op->code == FJN_RMAX || op->code == FJN_RMIN || op->code == FJN_RMEAN)
                g->red_noempty = 1;
            if (op->out < 0 && g->nout <= FJN_MAX_OUT) {
                if (g->nout == FJN_MAX_OUT) {
                    g->nout = FJN_MAX_OUT + 1;
                    continue;
                }
                op->out = g->nout;
                g->out_op[g->nout++] = m;
            }
        }
        g->has_partial = 0;
        g->fortran_ok = g->ndim >= 2;
        for (int k = 0; k < g->nin; k++)
            if (g->in[k].kind == FJN_IN_ARRAY && g->in[k].bcast == 2)
                g->has_partial = 1;
        for (int i = 0; i < g->ndim; i++)
            if (g->shape[i] == 1)
                g->fortran_ok = 0;
        if (g->has_partial)
            g->fortran_ok = 0;
        g->row_bytes = 0; /* the streaming threshold's measure (stream_for) */
        for (int k = 0; k < g->nin; k++)
            if (g->in[k].kind != FJN_IN_CONST && g->in[k].bcast)
                g->row_bytes += fjn_type_size(g->in[k].type);
        for (int j = 0; j < g->nout && g->nout <= FJN_MAX_OUT; j++)
            g->row_bytes += fjn_type_size(g->ops[g->out_op[j]].type);
    }
    /* groups with too many outputs become node steps */
    for (Py_ssize_t s = 0; s < p->nsteps; s++) {
        fjn_Step *st = &p->steps[s];
        if (st->kind != FJN_STEP_GROUP || p->groups[st->group].nout <= FJN_MAX_OUT)
            continue;
        fjn_Group *g = &p->groups[st->group];
        Py_ssize_t extra = g->nops - 1;
        fjn_Step *ns = PyMem_Realloc(p->steps, sizeof(fjn_Step) * (size_t)(p->nsteps + extra));
        if (!ns) {
            PyErr_NoMemory();
            return -1;
        }
        p->steps = ns;
        memmove(&p->steps[s + 1 + extra], &p->steps[s + 1], sizeof(fjn_Step) * (size_t)(p->nsteps - s - 1));
        for (int m = 0; m < g->nops; m++) {
            memset(&p->steps[s + m], 0, sizeof(fjn_Step));
            p->steps[s + m].kind = FJN_STEP_NODE;
            p->steps[s + m].node = g->ops[m].node;
            b->member_group[g->ops[m].node] = -1;
        }
        p->nsteps += extra;
        g->nops = 0; /* dead group: no source */
        g->nout = 0;
        s += extra;
    }
    return 0;
}

/* Release lists: each env slot is cleared after the last step that reads it. */
static int compute_releases(fjn_Builder *b)
{
    fjn_Plan *p = b->p;
    Py_ssize_t *last = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(p->nnodes + 1));
    Py_ssize_t *produced = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(p->nnodes + 1));
    int rc = -1;
    if (!last || !produced) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < p->nnodes; i++) {
        last[i] = -1;
        produced[i] = -1;
    }
    for (Py_ssize_t s = 0; s < p->nsteps; s++) {
        fjn_Step *st = &p->steps[s];
        if (st->kind == FJN_STEP_NODE || st->kind == FJN_STEP_LOOP) {
            fj_Node *n = plan_node(p, st->node);
            produced[st->node] = s;
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(n->inputs); j++)
                last[((fj_Node *)PyTuple_GET_ITEM(n->inputs, j))->index] = s;
        } else {
            fjn_Group *g = &p->groups[st->group];
            for (int k = 0; k < g->nin; k++)
                if (g->in[k].node >= 0)
                    last[g->in[k].node] = s;
            for (int j = 0; j < g->nout; j++)
                produced[g->ops[g->out_op[j]].node] = s;
        }
    }
    /* the output node reads at the end: never released early */
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(p->output->inputs); j++)
        last[((fj_Node *)PyTuple_GET_ITEM(p->output->inputs, j))->index] = p->nsteps;
    for (Py_ssize_t i = 0; i < p->nnodes; i++) {
        Py_ssize_t s = last[i] >= 0 ? last[i] : produced[i];
        if (plan_node(p, i)->kind == FJ_NODE_PLACEHOLDER && last[i] < 0)
            continue; /* unused input: released at the end */
        if (s < 0 || s >= p->nsteps)
            continue;
        fjn_Step *st = &p->steps[s];
        Py_ssize_t *r = PyMem_Realloc(st->release, sizeof(Py_ssize_t) * (size_t)(st->nrelease + 1));
        if (!r) {
            PyErr_NoMemory();
            goto done;
        }
        st->release = r;
        r[st->nrelease++] = i;
    }
    rc = 0;
done:
    PyMem_Free(last);
    PyMem_Free(produced);
    return rc;
}

static PyObject *plan_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames);

/* A plan of 'graph' with nothing partitioned yet (its calls run the graph
   eagerly until _partition and _load).  New reference, NULL on error. */
static fjn_Plan *plan_alloc(PyObject *graph)
{
    fjn_Plan *p = NULL;
    if (!fj_Graph_Check(graph)) {
        PyErr_SetString(PyExc_TypeError, "native_plan expects a framejit graph");
        return NULL;
    }
    if (!fjn_numpy && !(fjn_numpy = PyImport_ImportModule("numpy")))
        return NULL;
    p = PyObject_New(fjn_Plan, fjn_PlanType);
    if (!p)
        return NULL;
    p->graph = Py_NewRef(graph);
    p->nodes = NULL;
    p->steps = NULL;
    p->groups = NULL;
    p->loops = NULL;
    p->nloops = 0;
    p->nsteps = 0;
    p->ngroups = 0;
    p->source = NULL;
    p->loaded = 0;
    p->dl = NULL;
    p->fallbacks = 0;
    p->split_reductions = 0;
    p->streamed = 0;
    p->row_runs = 0;
    p->capsules = NULL;
    p->eager_runs = 0;
    p->output = NULL;
    p->nph = 0;
    p->vectorcall = plan_vectorcall;
    p->partitioned = 0;
    p->on_call = NULL;
    p->call_at = 0;
    p->weakrefs = NULL;
    p->exact = fjn_exact;
    p->nodes = PyObject_GetAttrString(graph, "nodes");
    if (!p->nodes || !PyList_Check(p->nodes))
        goto error;
    p->nnodes = PyList_GET_SIZE(p->nodes);
    if (p->nnodes == 0 || plan_node(p, p->nnodes - 1)->kind != FJ_NODE_OUTPUT) {
        PyErr_SetString(PyExc_ValueError, "framejit native: the graph has no output node");
        goto error;
    }
    p->output = plan_node(p, p->nnodes - 1);
    return p;
error:
    Py_DECREF(p);
    return NULL;
}

/* Partitions plan p's graph into steps and fused groups: the C source of its
   kernels (new reference), Py_None when nothing fuses or loops (the plan then
   runs the graph eagerly), NULL on error. */
static PyObject *plan_partition(fjn_Plan *p)
{
    fjn_Builder b = {0};
    PyObject *buf = NULL, *result = NULL, *pro = NULL, *sep = NULL, *src = NULL, *seen = NULL;
    if (p->partitioned) {
        PyErr_SetString(PyExc_RuntimeError, "framejit native: the plan is partitioned already");
        return NULL;
    }
    p->partitioned = 1;
    b.p = p;
    b.open = -1;
    b.member_group = PyMem_Malloc(sizeof(int) * (size_t)p->nnodes);
    b.member_index = PyMem_Malloc(sizeof(int) * (size_t)p->nnodes);
    if (!b.member_group || !b.member_index) {
        PyErr_NoMemory();
        goto error;
    }
    for (Py_ssize_t i = 0; i < p->nnodes; i++)
        b.member_group[i] = b.member_index[i] = -1;
    for (Py_ssize_t i = 0; i < p->nnodes; i++) {
        fj_Node *n = plan_node(p, i);
        fjn_Op op;
        if (n->kind == FJ_NODE_PLACEHOLDER) {
            p->nph++;
            continue;
        }
        if (n->kind == FJ_NODE_OUTPUT)
            break;
        if (n->op == &fj_loop_row) {
            /* a captured loop: a C loop when its body compiles, else the eager loop */
            fjn_LoopPlan *lps = PyMem_Realloc(p->loops, sizeof(fjn_LoopPlan) * (size_t)(p->nloops + 1));
            if (lps == NULL) {
                PyErr_NoMemory();
                goto error;
            }
            p->loops = lps;
            int lc = fjn_loop_plan(n, i, &p->loops[p->nloops]);
            if (lc < 0 || close_group(&b) < 0)
                goto error;
            if (add_step(&b, lc ? FJN_STEP_LOOP : FJN_STEP_NODE, i, lc ? p->nloops : -1) < 0)
                goto error;
            p->nloops += lc;
            continue;
        }
        int c = fjn_classify(n, &op, p->exact);
        if (c < 0)
            goto error;
        if (c == 1 && op.code == FJN_EXP && op.type == FJT_F64 && b.open >= 0 && p->groups[b.open].rowk &&
            same_shape(&p->groups[b.open], n)) {
            /* a float64 exp over a row group's rows: NumPy's AVX-512 loop on the row
               beats _vmath.h's inline fj_exp64 there (softmax 1000x1000 2.00x NumPy
               against 1.73x), and its bits are NumPy's; a flat group keeps fj_exp64
               (no row buffers: the transcendental chain) */
            int rj = row_join_call(&b, n);
            if (rj < 0)
                goto error;
            if (rj)
                continue;
        }
        if (c == 1) {
            int rj = row_join(&b, n, &op);
            if (rj < 0)
                goto error;
            if (rj)
                continue;
        }
        if (c == 1 && reads_open_reduction(&b, n) && close_group(&b) < 0)
            goto error;
        if (c == 1 && FJN_IS_REDUCTION(op.code)) {
            /* joins the open group when it reduces a member or an array of the group's
               shape; else it opens a group of its operand's shape.  A float sum or
               mean (pairwise order) shares its group with no other reduction. */
            fj_Node *a = (fj_Node *)PyTuple_GET_ITEM(n->args, 0);
            int pw = is_pairwise(&op);
            int mine = b.open >= 0 && (b.member_group[a->index] == b.open || same_shape(&p->groups[b.open], a));
            if (mine && (p->groups[b.open].pw >= 0 || (pw && p->groups[b.open].has_red)))
                mine = 0;
            /* a row group takes row reductions only (row_join); a float max / min
               along rows only joins a group that can be one */
            if (mine && (p->groups[b.open].rowk || (op.rowonly && !row_capable(&p->groups[b.open]))))
                mine = 0;
            if (!mine && b.open >= 0 && close_group(&b) < 0)
                goto error;
            if (!mine && open_group(&b, a) < 0)
                goto error;
            int r = group_add(&b, n, &op);
            if (r < 0)
                goto error;
            if (r == 1) {
                if (close_group(&b) < 0 || open_group(&b, a) < 0 || group_add(&b, n, &op) != 0)
                    goto error;
            }
            if (op.rowonly)
                p->groups[b.open].rowk = 1;
            continue;
        }
        if (c == 1) {
            if (b.open >= 0 && !same_shape(&p->groups[b.open], n) && close_group(&b) < 0)
                goto error;
            if (b.open < 0 && open_group(&b, n) < 0)
                goto error;
            int r = group_add(&b, n, &op);
            if (r < 0)
                goto error;
            if (r == 1) { /* no room: a new group */
                if (close_group(&b) < 0 || open_group(&b, n) < 0 || group_add(&b, n, &op) != 0)
                    goto error;
            }
            continue;
        }
        if (c == 0 && is_hoistable_view(&b, n)) {
            if (add_step(&b, FJN_STEP_NODE, i, -1) < 0)
                goto error;
            continue;
        }
        if (c == 0) {
            int rj = row_join_call(&b, n);
            if (rj == 0)
                rj = row_open_call(&b, n);
            if (rj < 0)
                goto error;
            if (rj)
                continue;
        }
        /* the open group runs before any node that does not fuse: a group is a
           run of consecutive nodes, so warnings and errors come in eager's order
           (the kernel raises none; a fallback raises its members' in order), and
           an in-place operator cannot write an array the group still reads */
        if (close_group(&b) < 0)
            goto error;
        if (add_step(&b, FJN_STEP_NODE, i, -1) < 0)
            goto error;
    }
    if (close_group(&b) < 0 || finish_groups(&b) < 0 || compute_releases(&b) < 0)
        goto error;
    int live = p->nloops;
    for (int gi = 0; gi < p->ngroups; gi++)
        live += p->groups[gi].nops > 0;
    if (!live) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    buf = PyList_New(0);
    if (!buf || !(pro = fjn_emit_prologue()) || PyList_Append(buf, pro) < 0)
        goto error;
    for (int gi = 0; gi < p->ngroups; gi++)
        if (p->groups[gi].nops > 0 && fjn_group_uses_vmath(&p->groups[gi])) {
            if (fjn_vmath_src == NULL || PyList_Append(buf, fjn_vmath_src) < 0) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_RuntimeError, "framejit native: _vmath.h was not read");
                goto error;
            }
            break;
        }
    /* identical groups (an unrolled loop repeats its body's) are compiled once:
       a group whose text, its index aside, is an earlier group's runs that
       group's functions (g->alias) */
    if (!(seen = PyDict_New()) || !(sep = PyUnicode_FromString("")))
        goto error;
    for (int gi = 0; gi < p->ngroups; gi++) {
        fjn_Group *g = &p->groups[gi];
        g->alias = gi;
        if (g->nops == 0)
            continue;
        PyObject *gb = PyList_New(0), *text = NULL, *norm = NULL, *pat = NULL, *at = NULL, *first;
        int rc = -1;
        if (gb && fjn_emit_group(gb, g, gi) == 0 && (text = PyUnicode_Join(sep, gb)) &&
            (pat = PyUnicode_FromFormat("fj_g%d_", gi)) && (at = PyUnicode_FromString("fj_g@_")) &&
            (norm = PyUnicode_Replace(text, pat, at, -1))) {
            first = PyDict_GetItemWithError(seen, norm);
            if (first) {
                g->alias = (int)PyLong_AsLong(first);
                rc = 0;
            } else if (!PyErr_Occurred()) {
                PyObject *idx = PyLong_FromLong(gi);
                rc = idx && PyDict_SetItem(seen, norm, idx) == 0 && PyList_Append(buf, text) == 0 ? 0 : -1;
                Py_XDECREF(idx);
            }
        }
        Py_XDECREF(gb);
        Py_XDECREF(text);
        Py_XDECREF(norm);
        Py_XDECREF(pat);
        Py_XDECREF(at);
        if (rc < 0)
            goto error;
    }
    for (int li = 0; li < p->nloops; li++)
        if (fjn_loop_emit(buf, &p->loops[li], plan_node(p, p->loops[li].node), li) < 0)
            goto error;
    if (!(src = PyUnicode_Join(sep, buf)))
        goto error;
    p->source = Py_NewRef(src);
    result = Py_NewRef(src);
    goto done;
error:
    result = NULL;
done:
    PyMem_Free(b.member_group);
    PyMem_Free(b.member_index);
    Py_XDECREF(buf);
    Py_XDECREF(pro);
    Py_XDECREF(sep);
    Py_XDECREF(seen);
    Py_XDECREF(src);
    return result;
}

static PyObject *plan_new_from_graph(PyObject *graph)
{
    fjn_Plan *p = plan_alloc(graph);
    if (!p)
        return NULL;
    PyObject *src = plan_partition(p), *r = NULL;
    if (src == Py_None)
        r = Py_BuildValue("(OO)", Py_None, Py_None);
    else if (src)
        r = PyTuple_Pack(2, (PyObject *)p, src);
    Py_XDECREF(src);
    Py_DECREF(p);
    return r;
}

/* The FE_* conditions NumPy's error state ignores (np.geterr()[...] == "ignore").
   The state lives in a ContextVar (numpy.ufunc.extobj, NumPy 2) whose value
   np.seterr and np.errstate replace with a new capsule: the bits read for one
   value stand while it is the value.  A captured loop asks on every run, and
   np.geterr() (a Python function building a dict) cost a short loop's call a
   microsecond.  Without the ContextVar (an older NumPy) every ask calls it.
   Errors count as "nothing ignored". */
static PyObject *fjn_err_cv;  /* the ContextVar; Py_None: not found; NULL: not looked up */
static PyObject *fjn_err_key; /* the value fjn_err_bits were read for (strong: numpy's own capsule) */
static int fjn_err_bits;

static int read_ignored_flags(void)
{
    static const struct {
        int bit;
        const char *name;
    } cats[] = {{FE_DIVBYZERO, "divide"}, {FE_OVERFLOW, "over"}, {FE_UNDERFLOW, "under"}, {FE_INVALID, "invalid"}};
    PyObject *err = PyObject_CallMethod(fjn_numpy, "geterr", NULL);
    int bits = 0;
    if (err != NULL && PyDict_Check(err)) {
        for (size_t i = 0; i < sizeof cats / sizeof cats[0]; i++) {
            PyObject *mode = PyDict_GetItemString(err, cats[i].name); /* borrowed */
            if (mode && PyUnicode_Check(mode) && PyUnicode_CompareWithASCIIString(mode, "ignore") == 0)
                bits |= cats[i].bit;
        }
    }
    Py_XDECREF(err);
    PyErr_Clear();
    return bits;
}

int fjn_ignored_flags(void)
{
    if (!fjn_numpy && !(fjn_numpy = PyImport_ImportModule("numpy"))) {
        PyErr_Clear();
        return 0;
    }
    if (fjn_err_cv == NULL) {
        PyObject *m = PyImport_ImportModule("numpy._core._ufunc_config");
        PyObject *cv = m ? PyObject_GetAttrString(m, "_extobj_contextvar") : NULL;
        Py_XDECREF(m);
        PyErr_Clear();
        if (cv != NULL && PyContextVar_CheckExact(cv))
            fjn_err_cv = cv;
        else {
            Py_XDECREF(cv);
            fjn_err_cv = Py_NewRef(Py_None);
        }
    }
    if (fjn_err_cv == Py_None)
        return read_ignored_flags();
    PyObject *val = NULL;
    if (PyContextVar_Get(fjn_err_cv, NULL, &val) < 0 || val == NULL) {
        PyErr_Clear();
        return read_ignored_flags();
    }
    if (val != fjn_err_key) {
        fjn_err_bits = read_ignored_flags();
        Py_XSETREF(fjn_err_key, Py_NewRef(val));
    }
    Py_DECREF(val);
    return fjn_err_bits;
}

/* Does NumPy's error state ignore every FE_* condition of kernel status
   'status', so the kernel's values stand?  Asked only when a kernel reports
   something; errors count as "no". */
static int status_ignored(int status)
{
    int all = FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID;
    return !(status & ~all) && !(status & ~fjn_ignored_flags());
}

/* ---- running ---------------------------------------------------------------- */

typedef struct {
    fjn_flat_fn fn;
    Py_ssize_t start, end;
    char *const *data;
    const fjn_Stream *stream; /* NULL: ordinary stores */
    int status;
} fjn_Work;

/* Chunk t of nt over [0, n): equal parts rounded up to 64 elements (whole
   cache lines and vectors); the last ones may be short or empty. */
static void chunk_of(Py_ssize_t n, int nt, int t, Py_ssize_t *lo, Py_ssize_t *hi)
{
    Py_ssize_t chunk = ((n + nt - 1) / nt + 63) & ~(Py_ssize_t)63;
    *lo = t * chunk < n ? t * chunk : n;
    *hi = (t + 1) * chunk < n ? (t + 1) * chunk : n;
}

static void flat_task(void *arg, int t)
{
    fjn_Work *w = &((fjn_Work *)arg)[t];
    w->status = w->start >= w->end ? 0
                : w->stream        ? fjn_run_streamed(w->fn, w->start, w->end, w->data, w->stream)
                                   : w->fn(w->start, w->end, w->data);
}

/* Runs a flat kernel over [0, n), split over the worker threads when large
   (csrc/backends/native/native_threads.c), its outputs written with streaming stores when
   'stream' is not NULL (csrc/backends/native/native_stream.c).  The kernels' statuses ORed. */
static int run_flat(fjn_flat_fn fn, Py_ssize_t n, char *const *data, const fjn_Stream *stream)
{
    int nt = fjn_threads;
    if (nt <= 1 || n < fjn_thread_min)
        return stream ? fjn_run_streamed(fn, 0, n, data, stream) : fn(0, n, data);
    if (nt > 16)
        nt = 16;
    fjn_Work work[16];
    int status = 0;
    for (int t = 0; t < nt; t++) {
        work[t].fn = fn;
        chunk_of(n, nt, t, &work[t].start, &work[t].end);
        work[t].data = data;
        work[t].stream = stream;
        work[t].status = 0;
    }
    fjn_parallel(flat_task, work, nt);
    for (int t = 0; t < nt; t++)
        status |= work[t].status;
    return status;
}

/* The streaming description of an elementwise group's flat run over 'size'
   elements, filled in 'st', when the run moves at least fjn_stream_min bytes
   (g->row_bytes per element); else NULL.  The common answer, no, costs one
   division. */
static const fjn_Stream *stream_for(const fjn_Group *g, Py_ssize_t size, PyArrayObject *const *outs,
                                    fjn_Stream *st)
{
    Py_ssize_t row = g->row_bytes;
    /* size * row >= fjn_stream_min, without overflow */
    if (g->has_red || row <= 0 || size <= 0 || size < fjn_stream_min / row + (fjn_stream_min % row != 0) ||
        !fjn_stream_available())
        return NULL;
    for (int k = 0; k < g->nin; k++)
        st->step[k] = g->in[k].kind != FJN_IN_CONST && g->in[k].bcast ? fjn_type_size(g->in[k].type) : 0;
    for (int j = 0; j < g->nout; j++) {
        if (!outs[j])
            return NULL;
        st->isz[j] = (int)PyArray_ITEMSIZE(outs[j]);
    }
    st->nin = g->nin;
    st->nout = g->nout;
    return st;
}

/* ---- rows with an input constant along them ------------------------------------
**
** The strided kernel runs a row on the flat (vectorized) kernel only when every
** operand is contiguous along it; a partly broadcast input that is constant
** along the rows (stride 0 on the last axis: x * w[:, None], x - m with m of
** keepdims shape) sends every row to its scalar loop.  Such rows run here
** instead: the flat kernel on chunks of at most FJN_ROW_CHUNK elements of each
** row, each constant input pointed at a buffer holding its row's value
** repeated (filled once per row), the other operands at the chunk.  The
** kernel computes the same operations on the same values, so the results are
** the strided kernel's; each call clears the FE flags and returns its own, so
** the statuses ORed are the conditions of the whole run.  A row costs a call
** and a fill, which short rows of few operations do not earn back, so rows
** whose length times the group's operations is below FJN_ROW_WORK keep the
** scalar loop (figures: docs/native.md, "Rows with an input constant along
** them"). */
#define FJN_ROW_CHUNK 1024
#define FJN_ROW_WORK 512

static int slot_size(const fjn_Group *g, int k)
{
    return fjn_type_size(k < g->nin ? g->in[k].type : g->ops[g->out_op[k - g->nin]].type);
}

/*
** An elementwise group's axes merged where every operand's memory lets them
** be one (the outer axis's stride is the inner's times the inner's size, for
** each slot with data; size-1 axes dropped): x[1:-1, 1:-1, :] of a (500,
** 500, 3) array is 498 rows of 1494 contiguous items, not 248004 rows of 3
** (its stencil ran 0.18x NumPy).  The element order of an elementwise group
** does not matter (its outputs are new arrays).  Writes *ond, oshape and
** ostrides (slot-major, as 'strides'); nd 0 stays 0.
*/
static void coalesce_axes(int nd, const npy_intp *shape, const npy_intp *strides, char *const *data, int nslot,
                          int *ond, npy_intp *oshape, npy_intp *ostrides)
{
    int keep[FJ_MAX_NDIM], nk = 0;
    for (int a = 0; a < nd; a++)
        if (shape[a] != 1)
            keep[nk++] = a;
    if (nk == 0 && nd > 0)
        keep[nk++] = nd - 1; /* all ones: one axis of 1 */
    int on = 0;
    for (int i = 0; i < nk; i++) {
        int a = keep[i];
        int merge = on > 0;
        for (int k = 0; merge && k < nslot; k++)
            merge = !data[k] || ostrides[k * FJ_MAX_NDIM + on - 1] == shape[a] * strides[k * nd + a];
        if (merge) {
            oshape[on - 1] *= shape[a];
            for (int k = 0; k < nslot; k++)
                ostrides[k * FJ_MAX_NDIM + on - 1] = data[k] ? strides[k * nd + a] : 0;
            continue;
        }
        oshape[on] = shape[a];
        for (int k = 0; k < nslot; k++)
            ostrides[k * FJ_MAX_NDIM + on] = data[k] ? strides[k * nd + a] : 0;
        on++;
    }
    /* to the layout of 'strides' (slot-major rows of 'on' entries) */
    for (int k = 0; k < nslot; k++)
        for (int a = 0; a < on; a++)
            ostrides[k * on + a] = ostrides[k * FJ_MAX_NDIM + a];
    *ond = on;
}

/* 1 when the rows of this call take run_rows: an elementwise group of at least
   two axes, rows of at least FJN_ROW_WORK / (its operations) elements, every
   operand contiguous along the row or (an input) constant along it, at least
   one of those. */
static int rows_ok(const fjn_Group *g, int nd, const npy_intp *shape, char *const *data, const npy_intp *strides,
                   int nslot)
{
    int zero = 0;
    if (g->has_red || nd < 2 || shape[nd - 1] * g->nops < FJN_ROW_WORK)
        return 0;
    for (int k = 0; k < nslot; k++) {
        npy_intp st = strides[k * nd + nd - 1];
        if (!data[k])
            continue; /* a constant of the source */
        if (k < g->nin && g->in[k].bcast == 0) {
            if (st != 0)
                return 0;
        } else if (st == 0 && k < g->nin) {
            zero = 1;
        } else if (st != slot_size(g, k)) {
            return 0;
        }
    }
    return zero;
}

/* The rows of [nd, shape] (rows_ok) on the flat kernel; 'data' at the first
   element.  -1 when the buffer could not be allocated (nothing ran). */
static int run_rows(const fjn_Group *g, int nd, const npy_intp *shape, char *const *data, const npy_intp *strides,
                    int nslot)
{
    npy_intp inner = shape[nd - 1], outer = 1, idx[FJ_MAX_NDIM];
    npy_intp ch = inner < FJN_ROW_CHUNK ? inner : FJN_ROW_CHUNK;
    int zk[FJN_MAX_IN], nz = 0, status = 0;
    for (int k = 0; k < g->nin && k < nslot; k++)
        if (data[k] && g->in[k].bcast != 0 && strides[k * nd + nd - 1] == 0)
            zk[nz++] = k;
    /* 8 bytes per element: the widest item */
    char *buf = PyMem_RawMalloc((size_t)nz * (size_t)ch * 8);
    if (!buf)
        return -1;
    for (int a = 0; a + 1 < nd; a++) {
        outer *= shape[a];
        idx[a] = 0;
    }
    char *rp[FJN_MAX_IN + FJN_MAX_OUT], *row[FJN_MAX_IN + FJN_MAX_OUT];
    for (npy_intp o = 0; o < outer; o++) {
        for (int k = 0; k < nslot; k++) {
            row[k] = data[k];
            for (int a = 0; data[k] && a + 1 < nd; a++)
                row[k] += idx[a] * strides[k * nd + a];
            rp[k] = row[k];
        }
        for (int z = 0; z < nz; z++) {
            /* the row's value repeated: one item, then doubling copies (a few
               memcpy calls, not one store per element) */
            int k = zk[z];
            size_t isz = (size_t)slot_size(g, k), have = isz, need = (size_t)ch * isz;
            char *b = buf + (size_t)z * (size_t)ch * 8;
            memcpy(b, row[k], isz);
            while (have < need) {
                size_t m = need - have < have ? need - have : have;
                memcpy(b + have, b, m);
                have += m;
            }
            rp[k] = b;
        }
        for (npy_intp c = 0; c < inner; c += ch) {
            npy_intp len = inner - c < ch ? inner - c : ch;
            status |= g->flat(0, len, rp);
            for (int k = 0; k < nslot; k++) /* the contiguous operands to the next chunk */
                if (rp[k])
                    rp[k] += len * strides[k * nd + nd - 1];
        }
        for (int a = nd - 2; a >= 0; a--) {
            if (++idx[a] < shape[a])
                break;
            idx[a] = 0;
        }
    }
    PyMem_RawFree(buf);
    return status;
}

/* An elementwise group's strided run of one thread: run_rows when its rows
   qualify ('rows': rows_ok of the call, which splitting the first axis keeps),
   else the strided kernel. */
static int strided_or_rows(const fjn_Group *g, int nd, const npy_intp *shape, char *const *data,
                           const npy_intp *strides, int nslot, int rows)
{
    if (rows) {
        int st = run_rows(g, nd, shape, data, strides, nslot);
        if (st != -1)
            return st;
    }
    return g->strided(nd, shape, data, strides);
}

typedef struct {
    const fjn_Group *g;
    int nd, nslot, rows;
    npy_intp shape[FJ_MAX_NDIM];
    char *data[FJN_MAX_IN + FJN_MAX_OUT];
    const npy_intp *strides;
    int status;
} fjn_SWork;

static void strided_task(void *arg, int t)
{
    fjn_SWork *w = &((fjn_SWork *)arg)[t];
    w->status = w->shape[0] > 0 ? strided_or_rows(w->g, w->nd, w->shape, w->data, w->strides, w->nslot, w->rows) : 0;
}

/* Runs an elementwise group's strided form (strided_or_rows), split along the
   first axis over the worker threads when large.  The statuses ORed. */
static int run_strided(const fjn_Group *g, int nd, const npy_intp *shape, char *const *data, int nslot,
                       const npy_intp *strides, npy_intp size, int rows)
{
    int nt = fjn_threads;
    if (nt <= 1 || size < fjn_thread_min || nd < 1 || shape[0] < 2)
        return strided_or_rows(g, nd, shape, data, strides, nslot, rows);
    if (nt > 16)
        nt = 16;
    if (nt > shape[0])
        nt = (int)shape[0];
    fjn_SWork *work = PyMem_RawMalloc(sizeof(fjn_SWork) * (size_t)nt);
    int status = 0;
    if (!work)
        return strided_or_rows(g, nd, shape, data, strides, nslot, rows);
    npy_intp chunk = (shape[0] + nt - 1) / nt;
    for (int t = 0; t < nt; t++) {
        fjn_SWork *w = &work[t];
        npy_intp lo = t * chunk < shape[0] ? t * chunk : shape[0];
        npy_intp hi = (t + 1) * chunk < shape[0] ? (t + 1) * chunk : shape[0];
        w->g = g;
        w->nd = nd;
        w->nslot = nslot;
        w->rows = rows;
        memcpy(w->shape, shape, sizeof(npy_intp) * (size_t)nd);
        w->shape[0] = hi - lo;
        for (int k = 0; k < nslot; k++)
            w->data[k] = data[k] ? data[k] + lo * strides[k * nd] : NULL;
        w->strides = strides;
        w->status = 0;
    }
    fjn_parallel(strided_task, work, nt);
    for (int t = 0; t < nt; t++)
        status |= work[t].status;
    PyMem_RawFree(work);
    return status;
}

typedef union {
    double d;
    long long i;
    unsigned char b;
    char raw[16];
} fjn_Scalar;

/* ---- reductions in parallel ----------------------------------------------------
**
** Reductions over every axis of a flat group are exact in any split except
** the float sum / mean, which must follow NumPy's pairwise tree:
**  - others (integer sums, max / min, any / all): each chunk's kernel writes
**    its partial results into its own slots, combined here in chunk order
**    (integer sums wrap as the kernels' do; a float max / min is exact, a
**    chunk's zero or NaN already made the chunk's status hard);
**  - float sum / mean: the range is split at the top nodes of NumPy's
**    recursion (n2 = n / 2 rounded down to a multiple of 8, as the kernel's
**    own recursion), each subtree's total computed by fj_g<N>_part, and the
**    totals added back up the same tree: the same additions in the same
**    order as one thread.  Whether an invalid happened is decided once over
**    the whole range (fj_g<N>_check) when a part or a combining add raised
**    the flag; an overflow / underflow of the combining adds and the mean's
**    division is read from this thread's flags.
** Chunk results are combined unless a chunk's status is hard: conditions
** NumPy's errstate ignores keep the kernel's values, as in one thread.
*/

static int red_kind_ok(const fjn_Op *op)
{
    switch (op->code) {
    case FJN_RSUM:
        return op->type != FJT_F32 && op->type != FJT_F64;
    case FJN_RMAX:
    case FJN_RMIN:
    case FJN_RANY:
    case FJN_RALL:
        return 1;
    default:
        return 0;
    }
}

/* Can the group's reductions run in chunks (every axis, no float sum)? */
static int red_parallel_ok(const fjn_Group *g)
{
    if (g->pw >= 0 || g->has_axisred)
        return 0;
    for (int m = 0; m < g->nops; m++)
        if (FJN_IS_REDUCTION(g->ops[m].code) && !red_kind_ok(&g->ops[m]))
            return 0;
    return 1;
}

typedef struct {
    fjn_flat_fn fn;
    Py_ssize_t start, end;
    char *data[FJN_MAX_IN + FJN_MAX_OUT];
    fjn_Scalar red[FJN_MAX_OUT]; /* this chunk's reduction results */
    int status;
} fjn_RWork;

static void red_task(void *arg, int t)
{
    fjn_RWork *w = &((fjn_RWork *)arg)[t];
    w->status = w->fn(w->start, w->end, w->data);
}

static int is_unsigned_type(int t)
{
    return t == FJT_BOOL || t == FJT_U8 || t == FJT_U16 || t == FJT_U32 || t == FJT_U64;
}

/* A kernel value of type t as a double / as a 64-bit integer (two's complement). */
static double val_d(const void *p, int t)
{
    return t == FJT_F32 ? (double)*(const float *)p : *(const double *)p;
}

static long long val_i(const void *p, int t)
{
    switch (t) {
    case FJT_BOOL:
    case FJT_U8: return *(const uint8_t *)p;
    case FJT_I8: return *(const int8_t *)p;
    case FJT_I16: return *(const int16_t *)p;
    case FJT_U16: return *(const uint16_t *)p;
    case FJT_I32: return *(const int32_t *)p;
    case FJT_U32: return *(const uint32_t *)p;
    default: return *(const long long *)p;
    }
}

/* Combines chunk b's result into 'acc' (both of op's type). */
static void red_combine(const fjn_Op *op, void *acc, const void *b)
{
    int t = op->type, sz = fjn_type_size(t);
    if (t == FJT_F32 || t == FJT_F64) { /* max / min: no NaN here (its chunk is hard) */
        double x = val_d(acc, t), y = val_d(b, t);
        int take = op->code == FJN_RMAX ? y > x : y < x;
        if (take)
            memcpy(acc, b, (size_t)sz);
        return;
    }
    long long x = val_i(acc, t), y = val_i(b, t);
    unsigned long long ux = (unsigned long long)x, uy = (unsigned long long)y, r;
    int uns = is_unsigned_type(t);
    switch (op->code) {
    case FJN_RSUM:
        r = ux + uy; /* wraps like the kernel's (uint64_t) additions */
        break;
    case FJN_RMAX:
        r = (uns ? uy > ux : y > x) ? uy : ux;
        break;
    case FJN_RMIN:
        r = (uns ? uy < ux : y < x) ? uy : ux;
        break;
    case FJN_RANY:
        r = (ux != 0) | (uy != 0);
        break;
    default: /* FJN_RALL */
        r = (ux != 0) & (uy != 0);
        break;
    }
    memcpy(acc, &r, (size_t)sz); /* little-endian: the low bytes */
}

static int run_red_parallel(fjn_Group *g, Py_ssize_t n, char *const *data)
{
    int nt = fjn_threads > 16 ? 16 : fjn_threads, nslot = g->nin + g->nout, status = 0;
    fjn_RWork *work = PyMem_RawMalloc(sizeof(fjn_RWork) * (size_t)nt);
    if (!work)
        return g->flat(0, n, data);
    for (int t = 0; t < nt; t++) {
        fjn_RWork *w = &work[t];
        w->fn = g->flat;
        chunk_of(n, nt, t, &w->start, &w->end);
        memcpy(w->data, data, sizeof(char *) * (size_t)nslot);
        for (int j = 0; j < g->nout; j++)
            if (FJN_IS_REDUCTION(g->ops[g->out_op[j]].code))
                w->data[g->nin + j] = w->red[j].raw;
    }
    fjn_parallel(red_task, work, nt);
    for (int t = 0; t < nt; t++)
        status |= work[t].status;
    /* combined whenever the results may be kept: soft flags (an underflow,
       or a divide NumPy's errstate ignores) keep the kernel's values */
    if (!(status & FJN_ST_HARD))
        for (int j = 0; j < g->nout; j++) {
            const fjn_Op *op = &g->ops[g->out_op[j]];
            if (!FJN_IS_REDUCTION(op->code))
                continue;
            char acc[16];
            memcpy(acc, work[0].red[j].raw, 16);
            for (int t = 1; t < nt; t++)
                red_combine(op, acc, work[t].red[j].raw);
            memcpy(data[g->nin + j], acc, (size_t)fjn_type_size(op->type));
        }
    PyMem_RawFree(work);
    return status;
}

typedef struct {
    fjn_part_fn fn;
    Py_ssize_t lo, n;
    char *const *data;
    double total[1]; /* room for a float or a double, aligned */
    int status;
} fjn_PWork;

static void pw_task(void *arg, int t)
{
    fjn_PWork *w = &((fjn_PWork *)arg)[t];
    w->status = w->fn(w->lo, w->n, w->data, w->total);
}

static int run_pw_parallel(fjn_Group *g, Py_ssize_t n, char *const *data)
{
    const fjn_Op *op = &g->ops[g->pw];
    int f32 = op->type == FJT_F32, cnt = 1, status = 0;
    fjn_PWork work[16];
    Py_ssize_t lo[16] = {0}, len[16] = {n};
    /* split every node while there are threads for twice as many (a node of
       more than 128 elements splits exactly as NumPy's recursion does) */
    while (cnt * 2 <= fjn_threads && cnt * 2 <= 16) {
        Py_ssize_t nlo[16], nlen[16];
        for (int k = 0; k < cnt; k++) {
            if (len[k] <= 128)
                return g->flat(0, n, data);
            Py_ssize_t n2 = len[k] / 2;
            n2 -= n2 % 8;
            nlo[2 * k] = lo[k];
            nlen[2 * k] = n2;
            nlo[2 * k + 1] = lo[k] + n2;
            nlen[2 * k + 1] = len[k] - n2;
        }
        cnt *= 2;
        memcpy(lo, nlo, sizeof(Py_ssize_t) * (size_t)cnt);
        memcpy(len, nlen, sizeof(Py_ssize_t) * (size_t)cnt);
    }
    for (int k = 0; k < cnt; k++) {
        work[k].fn = g->part;
        work[k].lo = lo[k];
        work[k].n = len[k];
        work[k].data = data;
        work[k].total[0] = 0;
        work[k].status = 0;
    }
    fjn_parallel(pw_task, work, cnt);
    /* the totals back up the tree: left + right at every level.  These adds
       (and the mean's division) run here: their overflow / underflow are
       the kernel's conditions too, read from the flags (volatile keeps the
       arithmetic between the clear and the test) */
    volatile float tf[16];
    volatile double td[16];
    feclearexcept(FE_ALL_EXCEPT);
    for (int k = 0; k < cnt; k++) {
        status |= work[k].status;
        if (f32) {
            float v;
            memcpy(&v, work[k].total, sizeof(float));
            tf[k] = v;
        } else {
            td[k] = work[k].total[0];
        }
    }
    for (int c = cnt; c > 1; c /= 2)
        for (int k = 0; k < c / 2; k++) {
            if (f32)
                tf[k] = tf[2 * k] + tf[2 * k + 1];
            else
                td[k] = td[2 * k] + td[2 * k + 1];
        }
    int nan = f32 ? isnan(tf[0]) : isnan(td[0]);
    /* invalid raised by a part or a combining add: the kernel's fj_suminv
       decides, as for one thread (the generated prologue explains it) */
    int maybe = (status & FE_INVALID) != 0 || fetestexcept(FE_INVALID) != 0;
    status &= ~FE_INVALID;
    if (maybe)
        status |= g->check(0, n, data, nan, (status & FE_OVERFLOW) || fetestexcept(FE_OVERFLOW));
    char *out = data[g->nin + op->out];
    if (f32) {
        float r = 0.0f + tf[0];
        if (op->code == FJN_RMEAN)
            r = (float)((double)r / (double)(int64_t)n);
        memcpy(out, &r, sizeof r);
    } else {
        double r = 0.0 + td[0];
        if (op->code == FJN_RMEAN)
            r = r / (double)(int64_t)n;
        memcpy(out, &r, sizeof r);
    }
    status |= fetestexcept(FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW);
    return status;
}

/* Runs group 'g' node by node through NumPy (the eager runner's way).  0 or -1. */
static int run_group_unfused(fjn_Plan *p, fjn_Group *g, PyObject **env)
{
    for (int m = 0; m < g->nops; m++) {
        fj_Node *n = plan_node(p, g->ops[m].node);
        PyObject *v = fj_graph_run_node(n, env);
        if (!v) {
            for (int k = 0; k < m; k++)
                Py_CLEAR(env[g->ops[k].node]);
            return -1;
        }
        Py_XSETREF(env[n->index], v);
    }
    for (int m = 0; m < g->nops; m++)
        if (g->ops[m].out < 0)
            Py_CLEAR(env[g->ops[m].node]);
    return 0;
}

/* Fills the result of a one-axis reduction (C-contiguous, integer or bool) with its identity. */
static void fill_identity(PyArrayObject *a, const fjn_Op *op)
{
    npy_intp n = PyArray_SIZE(a);
    char *d = PyArray_DATA(a);
    int t = op->type, sz = fjn_type_size(t);
    if (op->code == FJN_RSUM || op->code == FJN_RANY || op->code == FJN_RMEAN) {
        memset(d, 0, (size_t)(n * sz));
        return;
    }
    if (op->code == FJN_RALL) {
        memset(d, 1, (size_t)n);
        return;
    }
    int is_max = op->code == FJN_RMAX, sgn = t >= FJT_I8 && t <= FJT_I64;
    if (t == FJT_F32) {
        for (npy_intp i = 0; i < n; i++)
            ((float *)d)[i] = is_max ? -HUGE_VALF : HUGE_VALF;
        return;
    }
    if (t == FJT_F64) {
        for (npy_intp i = 0; i < n; i++)
            ((double *)d)[i] = is_max ? -HUGE_VAL : HUGE_VAL;
        return;
    }
    for (npy_intp i = 0; i < n; i++) {
        switch (sz) {
        case 1:
            ((uint8_t *)d)[i] = t == FJT_BOOL ? (is_max ? 0 : 1) : sgn ? (is_max ? 0x80 : 0x7f) : (is_max ? 0 : 0xff);
            break;
        case 2:
            ((uint16_t *)d)[i] = sgn ? (is_max ? 0x8000 : 0x7fff) : (is_max ? 0 : 0xffff);
            break;
        case 4:
            ((uint32_t *)d)[i] = sgn ? (is_max ? 0x80000000u : 0x7fffffffu) : (is_max ? 0 : 0xffffffffu);
            break;
        default:
            ((uint64_t *)d)[i] = sgn ? (is_max ? 0x8000000000000000ull : 0x7fffffffffffffffull)
                                     : (is_max ? 0 : 0xffffffffffffffffull);
        }
    }
}

/* The row stride of slot strides 's' over the leading axes of 'shape' (nd >= 1),
   when one stride walks them all (every leading axis of more than one element
   is the next one's stride times its size, or all are 0): 1 and *rs; else 0. */
static int row_stride(int nd, const npy_intp *shape, const npy_intp *s, npy_intp *rs)
{
    npy_intp r = 0, prod = 1;
    int first = 1;
    for (int a = nd - 2; a >= 0; a--) {
        if (shape[a] == 1)
            continue;
        if (first) {
            r = s[a];
            first = 0;
        } else if (s[a] != r * prod) {
            return 0;
        }
        prod *= shape[a];
    }
    *rs = r;
    return 1;
}

/* Rows of a row group's call, split over the worker threads (each with its own scratch). */
typedef struct {
    fjn_rows_fn fn;
    Py_ssize_t r0, r1, m;
    char *const *data;
    const npy_intp *rs;
    void *const *calls;
    size_t scratch;
    int status;
} fjn_RGWork;

static void rows_task(void *arg, int t)
{
    fjn_RGWork *w = &((fjn_RGWork *)arg)[t];
    char small[4096];
    w->status = 0;
    if (w->r0 >= w->r1)
        return;
    void *s = w->scratch <= sizeof small ? (void *)small : PyMem_RawMalloc(w->scratch);
    if (!s) {
        w->status = FJN_ST_HARD; /* the group runs through NumPy */
        return;
    }
    w->status = w->fn(w->r0, w->r1, w->m, w->data, w->rs, s, w->calls);
    if (s != (void *)small)
        PyMem_RawFree(s);
}

/* Rows [0, R) of length M (threads when large); the statuses ORed.  Called without the GIL when large. */
static int run_rows_split(fjn_Group *g, Py_ssize_t R, Py_ssize_t M, char *const *data, const npy_intp *rs)
{
    int nt = fjn_threads > 16 ? 16 : fjn_threads, status = 0;
    if (nt < 1 || R * M < fjn_thread_min)
        nt = 1;
    if (nt > R)
        nt = (int)R;
    fjn_RGWork w[16];
    for (int t = 0; t < nt; t++) {
        chunk_of(R, nt, t, &w[t].r0, &w[t].r1);
        w[t].fn = g->rows;
        w[t].m = M;
        w[t].data = data;
        w[t].rs = rs;
        w[t].calls = g->calls;
        w[t].scratch = (size_t)g->nbuf * (size_t)M * 8;
    }
    if (nt <= 1)
        rows_task(w, 0);
    else
        fjn_parallel(rows_task, w, nt);
    for (int t = 0; t < nt; t++)
        status |= w[t].status;
    return status;
}

/* The rows of a row group without reductions (NumPy loops called between
   elementwise members) whose operands are all C-contiguous or one value:
   blocks of this many elements, whatever the shape. */
#define FJN_ROW_BLOCK 2048

/* Runs row group g's kernel (inputs in data / strides, 'shape' the broadcast
   shape, not empty, C order): allocates the outputs into outs (a NumPy scalar
   result into obuf), returns the kernel's status, FJN_ST_HARD when the layouts
   do not suit it (nothing ran), or -1 with an exception. */
static int run_rowk(fjn_Plan *p, fjn_Group *g, int nd, npy_intp *shape, char **data, const npy_intp *strides,
                    PyArrayObject **outs, fjn_Scalar *obuf, PyObject **env)
{
    if (nd < 1)
        return FJN_ST_HARD;
    npy_intp M = shape[nd - 1], R = 1, size = 1, rs[FJN_MAX_IN + FJN_MAX_OUT];
    for (int a = 0; a < nd; a++)
        size *= shape[a];
    /* blocks: no reductions (so no row is special), every operand contiguous or one value */
    int blocks = !g->has_red;
    for (int k = 0; k < g->nin && blocks; k++) {
        const fjn_Input *in = &g->in[k];
        if (in->kind == FJN_IN_ARRAY && in->bcast != 0)
            blocks = in->bcast == 1 && PyArray_IS_C_CONTIGUOUS((PyArrayObject *)env[in->node]);
    }
    if (blocks)
        M = size < FJN_ROW_BLOCK ? size : FJN_ROW_BLOCK;
    R = size / M; /* rows: the leading axes' product (blocks: whole blocks) */
    for (int k = 0; k < g->nin; k++) {
        const fjn_Input *in = &g->in[k];
        rs[k] = 0;
        if (in->kind != FJN_IN_ARRAY || in->bcast == 0)
            continue;
        if (blocks) {
            rs[k] = M * fjn_type_size(in->type);
            continue;
        }
        const npy_intp *s = &strides[k * nd];
        /* along the row: contiguous (or a row of one), or one value */
        if (in->rowvec ? (s[nd - 1] != fjn_type_size(in->type) && M != 1) : s[nd - 1] != 0)
            return FJN_ST_HARD;
        if (!row_stride(nd, shape, s, &rs[k]))
            return FJN_ST_HARD;
        /* a float sum of the input itself follows NumPy's order when C-contiguous */
        if (in->pwsrc && !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)env[in->node]))
            return FJN_ST_HARD;
    }
    for (int j = 0; j < g->nout; j++) {
        const fjn_Op *op = &g->ops[g->out_op[j]];
        fj_Node *n = plan_node(p, op->node);
        int slot = g->nin + j, isz = fjn_type_size(op->type);
        if (op->rk == FJN_RK_VEC || op->rk == FJN_RK_CALL) {
            Py_INCREF(n->dtype);
            outs[j] = fjn_pool_new_array(n->dtype, nd, shape, 0);
            rs[slot] = M * isz;
        } else if (n->vkind == FJ_VAL_NPSCALAR) {
            data[slot] = obuf[j].raw; /* a 1-d group: one row */
            rs[slot] = 0;
            continue;
        } else {
            /* one value per row: the leading axes, and the last as 1 (keepdims) */
            npy_intp rshape[FJ_MAX_NDIM];
            for (int a = 0; a < n->ndim; a++)
                rshape[a] = a + 1 < nd ? shape[a] : 1;
            Py_INCREF(n->dtype);
            outs[j] = fjn_pool_new_array(n->dtype, n->ndim, rshape, 0);
            rs[slot] = isz;
        }
        if (!outs[j])
            return -1;
        data[slot] = PyArray_DATA(outs[j]);
    }
    /* blocks: the elements after the last whole block, one shorter row */
    npy_intp tail = blocks ? size - R * M : 0;
    char *tdata[FJN_MAX_IN + FJN_MAX_OUT];
    for (int k = 0; k < g->nin + g->nout; k++)
        tdata[k] = data[k] && rs[k] ? data[k] + R * rs[k] : data[k];
    int status;
    PyThreadState *ts = size >= fjn_nogil_min ? PyEval_SaveThread() : NULL;
    status = run_rows_split(g, R, M, data, rs);
    if (tail)
        status |= run_rows_split(g, 1, tail, tdata, rs);
    if (ts)
        PyEval_RestoreThread(ts);
    return status;
}

/* Runs group 'g'.  0 or -1 with an exception. */
static int run_group(fjn_Plan *p, fjn_Group *g, PyObject **env)
{
    const int nd = g->ndim, nslot = g->nin + g->nout;
    char *data[FJN_MAX_IN + FJN_MAX_OUT];
    npy_intp strides[(FJN_MAX_IN + FJN_MAX_OUT) * FJ_MAX_NDIM];
    npy_intp shape[FJ_MAX_NDIM];
    fjn_Scalar sbuf[FJN_MAX_IN], obuf[FJN_MAX_OUT];
    PyArrayObject *outs[FJN_MAX_OUT] = {0};
    int all_c = !g->has_partial, all_f = g->fortran_ok, fortran = 0, status, streamed = 0, rows = 0;
    npy_intp size = 1;
    for (int i = 0; i < nd; i++)
        shape[i] = 1;
    memset(strides, 0, sizeof(npy_intp) * (size_t)(nslot * (nd > 0 ? nd : 1)));
    /* inputs: values, the broadcast shape */
    for (int k = 0; k < g->nin; k++) {
        const fjn_Input *in = &g->in[k];
        PyObject *o = in->node >= 0 ? env[in->node] : NULL;
        data[k] = NULL;
        switch (in->kind) {
        case FJN_IN_CONST:
            break;
        case FJN_IN_PYSCALAR:
            if (in->type == FJT_I64 && PyLong_CheckExact(o)) {
                int ovf = 0;
                sbuf[k].i = PyLong_AsLongLongAndOverflow(o, &ovf);
                if (ovf || (sbuf[k].i == -1 && PyErr_Occurred())) {
                    PyErr_Clear();
                    goto unfused;
                }
            } else if (in->type == FJT_F64 && PyFloat_CheckExact(o)) {
                sbuf[k].d = PyFloat_AS_DOUBLE(o);
            } else {
                goto unfused;
            }
            data[k] = sbuf[k].raw;
            break;
        case FJN_IN_NPSCALAR:
            if (Py_TYPE(o) == in->sctype) {
                PyArray_ScalarAsCtype(o, sbuf[k].raw);
                data[k] = sbuf[k].raw;
            } else if (PyArray_CheckExact(o) && PyArray_NDIM((PyArrayObject *)o) == 0 &&
                       fjn_type_of_descr(PyArray_DESCR((PyArrayObject *)o)) == in->type &&
                       PyArray_ISALIGNED((PyArrayObject *)o)) {
                data[k] = PyArray_DATA((PyArrayObject *)o);
            } else {
                goto unfused;
            }
            break;
        case FJN_IN_ARRAY: {
            if (!PyArray_CheckExact(o))
                goto unfused;
            PyArrayObject *a = (PyArrayObject *)o;
            int an = PyArray_NDIM(a);
            if (an != in->ndim || an > nd || fjn_type_of_descr(PyArray_DESCR(a)) != in->type ||
                !PyArray_ISALIGNED(a))
                goto unfused;
            if (in->bcast == 0 && PyArray_SIZE(a) != 1)
                goto unfused;
            for (int ax = 0; ax < an; ax++) {
                npy_intp dim = PyArray_DIM(a, ax);
                int gax = nd - an + ax;
                if (dim != 1) {
                    if (shape[gax] == 1)
                        shape[gax] = dim;
                    else if (shape[gax] != dim)
                        goto unfused; /* NumPy raises the broadcast error */
                }
            }
            data[k] = PyArray_DATA(a);
            if (in->bcast == 1) {
                all_c &= PyArray_IS_C_CONTIGUOUS(a) != 0;
                all_f &= PyArray_IS_F_CONTIGUOUS(a) != 0;
            }
            break;
        }
        }
    }
    for (int i = 0; i < nd; i++)
        size *= shape[i];
    /* strides of the array inputs (0 on broadcast axes); full inputs must span the whole shape */
    for (int k = 0; k < g->nin; k++) {
        const fjn_Input *in = &g->in[k];
        if (in->kind != FJN_IN_ARRAY)
            continue;
        PyArrayObject *a = (PyArrayObject *)env[in->node];
        int an = PyArray_NDIM(a);
        for (int ax = 0; ax < an; ax++) {
            int gax = nd - an + ax;
            npy_intp dim = PyArray_DIM(a, ax);
            if (in->bcast == 1 && dim != shape[gax])
                goto unfused;
            strides[k * nd + gax] = dim == 1 ? 0 : PyArray_STRIDE(a, ax);
        }
    }
    if (!all_c) {
        /* NumPy's ufunc output order (its iterator's axis sort): C unless every
           operand orders its axes the other way; anything in between runs unfused */
        int c_ok = 1, f_ok = g->fortran_ok;
        for (int k = 0; k < g->nin; k++) {
            if (g->in[k].kind != FJN_IN_ARRAY || g->in[k].bcast == 0)
                continue;
            const npy_intp *s = &strides[k * nd];
            for (int i = 0; i < nd; i++)
                for (int j = i + 1; j < nd; j++) {
                    npy_intp si = s[i] < 0 ? -s[i] : s[i], sj = s[j] < 0 ? -s[j] : s[j];
                    if (si == 0 || sj == 0) {
                        f_ok = 0;
                        continue;
                    }
                    if (si < sj)
                        c_ok = 0;
                    else
                        f_ok = 0;
                }
        }
        if (c_ok)
            fortran = 0;
        else if (f_ok)
            fortran = 1;
        else
            goto unfused;
    }
    if (g->rowk) {
        /* a row group: C order (its float sums follow NumPy's rows there), not empty
           (NumPy's errors and warnings for empty rows are its own) */
        if (fortran || size == 0 || !g->rows)
            goto unfused;
        status = run_rowk(p, g, nd, shape, data, strides, outs, obuf, env);
        if (status == -1)
            goto error;
        goto ran;
    }
    if (fortran && g->has_axisred)
        goto unfused; /* NumPy's order of an axis reduction's result is not computed here */
    if (g->pw >= 0 && g->ops[g->pw].axis >= 0 && !all_c)
        goto unfused; /* a float sum over the last axis follows NumPy's order for C-contiguous rows only */
    /* outputs */
    if (size == 0 && g->red_noempty)
        goto unfused; /* NumPy's "zero-size array to reduction operation" error */
    for (int j = 0; j < g->nout; j++) {
        const fjn_Op *op = &g->ops[g->out_op[j]];
        fj_Node *n = plan_node(p, op->node);
        int red = FJN_IS_REDUCTION(op->code);
        if (red && op->axis >= 0) {
            /* one axis reduced: C order, filled with the identity, stride 0 along the axis */
            npy_intp rshape[FJ_MAX_NDIM];
            int rnd = 0;
            for (int ax = 0; ax < nd; ax++)
                if (ax != op->axis)
                    rshape[rnd++] = shape[ax];
                else if (op->keepdims)
                    rshape[rnd++] = 1;
            Py_INCREF(n->dtype);
            outs[j] = (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, n->dtype, rnd, rshape, NULL, NULL, 0, NULL);
            if (!outs[j])
                goto error;
            fill_identity(outs[j], op);
            for (int ax = 0, rax = 0; ax < nd; ax++) {
                if (ax == op->axis) {
                    strides[(g->nin + j) * nd + ax] = 0;
                    rax += op->keepdims;
                } else {
                    strides[(g->nin + j) * nd + ax] = PyArray_STRIDE(outs[j], rax++);
                }
            }
            data[g->nin + j] = PyArray_DATA(outs[j]);
            continue;
        }
        if (red && n->vkind == FJ_VAL_NPSCALAR) {
            /* a NumPy scalar result: the kernel writes a local, which becomes the
               scalar (no 0-d array made and dropped per call) */
            data[g->nin + j] = obuf[j].raw;
            for (int ax = 0; ax < nd; ax++)
                strides[(g->nin + j) * nd + ax] = 0;
            continue;
        }
        Py_INCREF(n->dtype);
        outs[j] = fjn_pool_new_array(n->dtype, red ? 0 : nd, shape, fortran ? NPY_ARRAY_F_CONTIGUOUS : 0);
        if (!outs[j])
            goto error;
        data[g->nin + j] = PyArray_DATA(outs[j]);
        for (int ax = 0; ax < nd; ax++)
            strides[(g->nin + j) * nd + ax] = red ? 0 : PyArray_STRIDE(outs[j], ax);
    }
    status = 0;
    if (size > 0 || g->has_red) {
        int flat = (all_c || (fortran && all_f)) && !g->has_axisred;
        /* an elementwise group's strided run over its axes merged (coalesce_axes) */
        npy_intp cstrides[(FJN_MAX_IN + FJN_MAX_OUT) * FJ_MAX_NDIM], cshape[FJ_MAX_NDIM];
        int cnd = nd;
        const npy_intp *sshape = shape, *sstrides = strides;
        if (!flat && !g->has_red && nd > 1) {
            coalesce_axes(nd, shape, strides, data, nslot, &cnd, cshape, cstrides);
            sshape = cshape;
            sstrides = cstrides;
        }
        fjn_Stream stb;
        const fjn_Stream *stream = flat ? stream_for(g, size, outs, &stb) : NULL;
        streamed = stream != NULL;
        rows = !flat && rows_ok(g, cnd, sshape, data, sstrides, nslot);
        if (size >= fjn_nogil_min) {
            int split = 0;
            Py_BEGIN_ALLOW_THREADS
            int par = flat && fjn_threads > 1 && size >= fjn_thread_min;
            if (g->has_red && par && g->pw >= 0 && g->part && g->ops[g->pw].axis < 0) {
                status = run_pw_parallel(g, size, data);
                split = 1;
            } else if (g->has_red && par && red_parallel_ok(g)) {
                status = run_red_parallel(g, size, data);
                split = 1;
            }
            else if (g->has_red)
                status = flat ? g->flat(0, size, data) : g->strided(nd, shape, data, strides);
            else
                status = flat ? run_flat(g->flat, size, data, stream)
                              : run_strided(g, cnd, sshape, data, nslot, sstrides, size, rows);
            Py_END_ALLOW_THREADS
            p->split_reductions += split;
        } else if (stream) {
            status = fjn_run_streamed(g->flat, 0, size, data, stream);
        } else if (g->has_red) {
            status = flat ? g->flat(0, size, data) : g->strided(nd, shape, data, strides);
        } else {
            status = flat ? g->flat(0, size, data) : strided_or_rows(g, cnd, sshape, data, sstrides, nslot, rows);
        }
    }
ran:
    /* a float max/min over one axis with a zero (the sign depends on NumPy's
       order) or a NaN (the payload does) somewhere: NumPy decides */
    for (int j = 0; status == 0 && g->has_axisred && !g->rowk && j < g->nout; j++) {
        const fjn_Op *op = &g->ops[g->out_op[j]];
        if ((op->code != FJN_RMAX && op->code != FJN_RMIN) || op->axis < 0 ||
            (op->type != FJT_F32 && op->type != FJT_F64))
            continue;
        npy_intp cnt = PyArray_SIZE(outs[j]);
        for (npy_intp i = 0; i < cnt && status == 0; i++) {
            double v = op->type == FJT_F32 ? (double)((float *)PyArray_DATA(outs[j]))[i]
                                           : ((double *)PyArray_DATA(outs[j]))[i];
            if (v == 0 || isnan(v))
                status = FJN_ST_HARD;
        }
    }
    if (status != 0 && !status_ignored(status)) {
        for (int j = 0; j < g->nout; j++)
            Py_CLEAR(outs[j]);
        goto unfused;
    }
    p->streamed += streamed; /* counted when the kernel's results are kept */
    p->row_runs += rows;
    for (int j = 0; j < g->nout; j++) {
        fj_Node *n = plan_node(p, g->ops[g->out_op[j]].node);
        PyObject *v = (PyObject *)outs[j];
        outs[j] = NULL;
        if (!v)
            v = PyArray_Scalar(obuf[j].raw, n->dtype, NULL);
        else if (n->vkind == FJ_VAL_NPSCALAR)
            v = PyArray_Return((PyArrayObject *)v);
        if (!v)
            goto error;
        Py_XSETREF(env[n->index], v);
    }
    return 0;
unfused:
    p->fallbacks++;
    return run_group_unfused(p, g, env);
error:
    for (int j = 0; j < g->nout; j++)
        Py_XDECREF(outs[j]);
    return -1;
}

static PyObject *plan_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    fjn_Plan *p = (fjn_Plan *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), nn = p->nnodes;
    PyObject *small[FJ_ENV_SMALL], **env, *result = NULL;
    if (kwnames && PyTuple_GET_SIZE(kwnames)) {
        PyErr_SetString(PyExc_TypeError, "framejit native plan takes no keyword arguments");
        return NULL;
    }
    if (!p->loaded) {
        /* the kernels are still compiling (framejit/native.py, config.native_background):
           the graph runs as the eager backend runs it */
        PyObject *r = PyObject_Vectorcall(p->graph, args, nargsf, kwnames);
        p->eager_runs++;
        if (p->on_call && p->eager_runs >= p->call_at) {
            /* framejit/native.py: the build after the second call (_submit: a
               thread's start, its Python work holding the GIL, after the call
               rather than in it; no Python at all in the first) */
            PyObject *fn = p->on_call, *x, *et, *ev, *tb;
            p->on_call = NULL;
            PyErr_Fetch(&et, &ev, &tb);
            if (!(x = PyObject_CallOneArg(fn, (PyObject *)p)))
                PyErr_WriteUnraisable(fn);
            Py_XDECREF(x);
            PyErr_Restore(et, ev, tb);
            Py_DECREF(fn);
        }
        return r;
    }
    if (nargs != p->nph) {
        PyErr_Format(PyExc_TypeError, "framejit graph takes %zd inputs but %zd were given", p->nph, nargs);
        return NULL;
    }
    if ((env = fj_env_new(small, nn)) == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < p->nph; i++)
        env[i] = Py_NewRef(args[i]);
    for (Py_ssize_t s = 0; s < p->nsteps; s++) {
        fjn_Step *st = &p->steps[s];
        if (st->kind == FJN_STEP_NODE) {
            PyObject *v = fj_graph_run_node(plan_node(p, st->node), env);
            if (!v)
                goto done;
            Py_XSETREF(env[st->node], v);
        } else if (st->kind == FJN_STEP_LOOP) {
            PyObject *v = fjn_loop_run(&p->loops[st->group], plan_node(p, st->node), env, &p->fallbacks);
            if (!v)
                goto done;
            Py_XSETREF(env[st->node], v);
        } else if (run_group(p, &p->groups[st->group], env) < 0) {
            goto done;
        }
        for (Py_ssize_t r = 0; r < st->nrelease; r++)
            Py_CLEAR(env[st->release[r]]);
    }
    result = fj_graph_resolve(PyTuple_GET_ITEM(p->output->args, 0), env);
done:
    fj_env_free(env, small, nn);
    return result;
}

/* ---- the Python surface --------------------------------------------------- */

static void plan_dealloc(fjn_Plan *p)
{
    PyTypeObject *tp = Py_TYPE(p);
    if (p->weakrefs)
        PyObject_ClearWeakRefs((PyObject *)p);
    for (Py_ssize_t s = 0; s < p->nsteps; s++)
        PyMem_Free(p->steps[s].release);
    PyMem_Free(p->steps);
    PyMem_Free(p->groups);
    PyMem_Free(p->loops);
    Py_XDECREF(p->graph);
    Py_XDECREF(p->nodes);
    Py_XDECREF(p->source);
    /* after the kernels that call their loops are gone (they are not running) */
    Py_XDECREF(p->capsules);
    Py_XDECREF(p->on_call);
    /* no call of this plan is running (a call holds a reference), so no
       worker runs its kernels; dlopen counts the plans sharing one file */
    if (p->dl)
        dlclose(p->dl);
    PyObject_Free(p);
    Py_DECREF(tp);
}

/* plan._load(path): dlopens the built kernels (closed when the plan goes). */
static PyObject *plan_load(fjn_Plan *p, PyObject *path)
{
    PyObject *bytes = NULL;
    if (!p->partitioned) {
        PyErr_SetString(PyExc_RuntimeError, "framejit native: _load before _partition");
        return NULL;
    }
    if (!PyUnicode_FSConverter(path, &bytes))
        return NULL;
    void *h = dlopen(PyBytes_AS_STRING(bytes), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        PyErr_Format(PyExc_OSError, "framejit native: cannot load %S: %s", path, e ? e : "?");
        Py_DECREF(bytes);
        return NULL;
    }
    Py_DECREF(bytes);
    if (p->dl) { /* loaded again: keep one handle */
        p->loaded = 0;
        dlclose(p->dl);
    }
    p->dl = h;
    for (int gi = 0; gi < p->ngroups; gi++) {
        fjn_Group *g = &p->groups[gi];
        char name[64];
        if (g->nops == 0)
            continue;
        int ai = g->alias; /* an identical earlier group's functions */
        if (g->rowk) {
            snprintf(name, sizeof name, "fj_g%d_rows", ai);
            *(void **)&g->rows = dlsym(h, name);
            if (!g->rows) {
                PyErr_Format(PyExc_OSError, "framejit native: %S lacks the kernel of group %d", path, gi);
                return NULL;
            }
            continue;
        }
        snprintf(name, sizeof name, "fj_g%d_flat", ai);
        *(void **)&g->flat = dlsym(h, name);
        snprintf(name, sizeof name, "fj_g%d_strided", ai);
        *(void **)&g->strided = dlsym(h, name);
        snprintf(name, sizeof name, "fj_g%d_part", ai); /* float sums over every axis only */
        *(void **)&g->part = dlsym(h, name);
        snprintf(name, sizeof name, "fj_g%d_check", ai);
        *(void **)&g->check = dlsym(h, name);
        if (!g->part || !g->check)
            g->part = NULL, g->check = NULL;
        if (!g->flat || !g->strided) {
            PyErr_Format(PyExc_OSError, "framejit native: %S lacks the kernels of group %d", path, gi);
            return NULL;
        }
    }
    for (int li = 0; li < p->nloops; li++) {
        char name[64];
        snprintf(name, sizeof name, "fj_l%d", li);
        *(void **)&p->loops[li].fn = dlsym(h, name);
        if (!p->loops[li].fn) {
            PyErr_Format(PyExc_OSError, "framejit native: %S lacks the kernel of loop %d", path, li);
            return NULL;
        }
    }
    p->loaded = 1;
    Py_RETURN_NONE;
}

/* plan.groups: a list of lists of node names, one per fused group. */
static PyObject *plan_get_groups(fjn_Plan *p, void *c)
{
    PyObject *r = PyList_New(0);
    for (int gi = 0; r && gi < p->ngroups; gi++) {
        fjn_Group *g = &p->groups[gi];
        if (g->nops == 0)
            continue;
        PyObject *l = PyList_New(g->nops);
        for (int m = 0; l && m < g->nops; m++)
            PyList_SET_ITEM(l, m, Py_NewRef(plan_node(p, g->ops[m].node)->name));
        if (!l || PyList_Append(r, l) < 0)
            Py_CLEAR(r);
        Py_XDECREF(l);
    }
    return r;
}

static PyObject *plan_get_source(fjn_Plan *p, void *c)
{
    return Py_NewRef(p->source ? p->source : Py_None);
}

static PyObject *plan_get_graph(fjn_Plan *p, void *c)
{
    return Py_NewRef(p->graph);
}

static PyObject *plan_repr(fjn_Plan *p)
{
    int live = 0, fused = 0;
    for (int gi = 0; gi < p->ngroups; gi++) {
        live += p->groups[gi].nops > 0;
        fused += p->groups[gi].nops;
    }
    return PyUnicode_FromFormat("<framejit native plan: %d groups, %d fused nodes, %zd steps>", live, fused,
                                p->nsteps);
}

/* plan._after_calls(n, fn): fn(plan) is called when eager call number n (or
   the next one, if n have run) is over, before it returns. */
static PyObject *plan_after_calls(fjn_Plan *p, PyObject *args)
{
    Py_ssize_t n;
    PyObject *fn;
    if (!PyArg_ParseTuple(args, "nO:_after_calls", &n, &fn))
        return NULL;
    p->call_at = n;
    Py_XSETREF(p->on_call, Py_NewRef(fn));
    Py_RETURN_NONE;
}

/* plan._partition(): the kernels' C source, or None when nothing fuses. */
static PyObject *plan_partition_method(fjn_Plan *p, PyObject *unused)
{
    return plan_partition(p);
}

static PyMethodDef plan_methods[] = {
    {"_load", (PyCFunction)plan_load, METH_O, "_load(path): dlopen the compiled kernels of this plan."},
    {"_after_calls", (PyCFunction)plan_after_calls, METH_VARARGS,
     "_after_calls(n, fn): fn(plan) when eager call number n has run."},
    {"_partition", (PyCFunction)plan_partition_method, METH_NOARGS,
     "_partition(): partitions a deferred plan's graph; the kernels' C source, or None when nothing fuses."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef plan_getset[] = {
    {"groups", (getter)plan_get_groups, NULL, "fused groups (lists of node names)", NULL},
    {"source", (getter)plan_get_source, NULL, "the generated C source", NULL},
    {"graph", (getter)plan_get_graph, NULL, "the graph this plan runs", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef plan_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(fjn_Plan, weakrefs), READONLY, NULL},
    {"fallbacks", T_PYSSIZET, offsetof(fjn_Plan, fallbacks), READONLY,
     "group runs that went through NumPy instead of their kernel (flags, inputs or layouts)"},
    {"row_runs", T_PYSSIZET, offsetof(fjn_Plan, row_runs), READONLY,
     "group runs whose rows ran the flat (vectorized) kernel with a partly broadcast input constant along "
     "them (x * w[:, None]); counted when the results are kept"},
    {"streamed", T_PYSSIZET, offsetof(fjn_Plan, streamed), READONLY,
     "group runs whose outputs were written with streaming (non-temporal) stores"},
    {"eager_runs", T_PYSSIZET, offsetof(fjn_Plan, eager_runs), READONLY,
     "calls that ran the graph with the eager runner while the kernels were compiling"},
    {"loaded", T_INT, offsetof(fjn_Plan, loaded), READONLY, "1 once the compiled kernels are loaded"},
    {"partitioned", T_INT, offsetof(fjn_Plan, partitioned), READONLY,
     "1 once the graph is partitioned into steps and groups (native_plan_deferred plans: _partition)"},
    {"split_reductions", T_PYSSIZET, offsetof(fjn_Plan, split_reductions), READONLY,
     "group runs whose reductions over every axis were split over the worker threads"},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(fjn_Plan, vectorcall), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot plan_slots[] = {
    {Py_tp_dealloc, plan_dealloc},
    {Py_tp_repr, plan_repr},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_methods, plan_methods},
    {Py_tp_getset, plan_getset},
    {Py_tp_members, plan_members},
    {Py_tp_doc, "A graph compiled by the native backend: calling it runs fused kernels and NumPy."},
    {0, NULL},
};

static PyType_Spec plan_spec = {
    .name = "framejit._C.NativePlan",
    .basicsize = sizeof(fjn_Plan),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = plan_slots,
};

/* native_plan(graph) -> (NativePlan, source) or (None, None).  New reference, NULL on error. */
static PyObject *native_plan(PyObject *mod, PyObject *graph)
{
    if (fj_numpy_ensure() < 0) /* fj_numpy.h: loaded lazily */
        return NULL;
    return plan_new_from_graph(graph);
}

/* native_plan_deferred(graph): a plan not partitioned yet, which runs the graph
   eagerly until plan._partition() and plan._load(path) (tiered compilation:
   framejit/native.py does both in a background thread). */
static PyObject *native_plan_deferred(PyObject *mod, PyObject *graph)
{
    if (fj_numpy_ensure() < 0)
        return NULL;
    return (PyObject *)plan_alloc(graph);
}

/* native_config(threads=None, thread_min=None, float_axis_minmax=None, stream_min=None) ->
   (threads, thread_min, float_axis_minmax, stream_min): reads / sets the knobs (new reference,
   NULL on error).  stream_min: bytes an elementwise run moves before its outputs are written
   with streaming stores (csrc/backends/native/native_stream.c); -1 when the machine has none. */
static PyObject *native_config(PyObject *mod, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"threads", "thread_min", "float_axis_minmax", "stream_min", "exact", "vmath",
                             "numpy_avx512", NULL};
    PyObject *t = Py_None, *m = Py_None, *f = Py_None, *sm = Py_None, *ex = Py_None, *vm = Py_None, *av = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOOOOO:native_config", kwlist, &t, &m, &f, &sm, &ex, &vm, &av))
        return NULL;
    int avv = av == Py_None ? -1 : PyObject_IsTrue(av);
    if (av != Py_None && avv < 0)
        return NULL;
    if (vm != Py_None && !PyUnicode_Check(vm)) {
        PyErr_Format(PyExc_TypeError, "native_config: vmath must be the text of _vmath.h, not %.100s",
                     Py_TYPE(vm)->tp_name);
        return NULL;
    }
    int exv = ex == Py_None ? -1 : PyObject_IsTrue(ex);
    if (ex != Py_None && exv < 0)
        return NULL;
    Py_ssize_t smv = -2;
    if (sm != Py_None) {
        smv = PyLong_AsSsize_t(sm);
        if (smv == -1 && PyErr_Occurred())
            return NULL;
        /* -1 is what native_config() reads where there are no streaming stores */
        if (smv < 0 && !(smv == -1 && !fjn_stream_available())) {
            PyErr_Format(PyExc_ValueError, "native_config: stream_min must be >= 0 bytes, not %zd", smv);
            return NULL;
        }
    }
    /* every argument converted before any is applied: an error changes nothing */
    int fv = -1;
    long tv = 0;
    Py_ssize_t mv = 0;
    if (f != Py_None && (fv = PyObject_IsTrue(f)) < 0)
        return NULL;
    if (t != Py_None && (tv = PyLong_AsLong(t)) == -1 && PyErr_Occurred())
        return NULL;
    if (m != Py_None && (mv = PyLong_AsSsize_t(m)) == -1 && PyErr_Occurred())
        return NULL;
    if (f != Py_None)
        fjn_float_axis_minmax = fv;
    if (t != Py_None)
        fjn_threads = tv < 1 ? 1 : tv > 16 ? 16 : (int)tv;
    if (m != Py_None)
        fjn_thread_min = mv < 1 ? 1 : mv;
    if (smv >= 0)
        fjn_stream_min = smv;
    if (exv >= 0)
        fjn_exact = exv;
    if (vm != Py_None)
        Py_XSETREF(fjn_vmath_src, Py_NewRef(vm));
    if (avv >= 0)
        fjn_numpy_avx512 = avv;
    return Py_BuildValue("(inOn)", fjn_threads, fjn_thread_min, fjn_float_axis_minmax ? Py_True : Py_False,
                         fjn_stream_available() ? fjn_stream_min : (Py_ssize_t)-1);
}

static PyObject *native_workers(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    return PyLong_FromLong(fjn_parallel_workers());
}

/* native_stream_width(width=None) -> int: the bytes per streaming store of the
   copy out of the staging buffer (csrc/backends/native/native_stream.c); width (16, 32 or 64)
   selects the widest this CPU has up to it.  0: no streaming stores. */
static PyObject *native_stream_width(PyObject *mod, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"width", NULL};
    PyObject *wo = Py_None;
    (void)mod;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:native_stream_width", kwlist, &wo))
        return NULL;
    if (wo != Py_None) {
        if (PyBool_Check(wo)) {
            PyErr_Format(PyExc_TypeError, "native_stream_width: width must be an integer (16, 32 or 64), not %R", wo);
            return NULL;
        }
        PyObject *idx = PyNumber_Index(wo); /* ints and NumPy integers; TypeError for the rest */
        if (!idx)
            return NULL;
        long w = PyLong_AsLong(idx);
        Py_DECREF(idx);
        if (w == -1 && PyErr_Occurred())
            PyErr_Clear(); /* too large: the message below */
        if (w != 16 && w != 32 && w != 64) {
            PyErr_Format(PyExc_ValueError, "native_stream_width: width must be 16, 32 or 64 bytes, not %R", wo);
            return NULL;
        }
        fjn_stream_set_width((int)w);
    }
    return PyLong_FromLong(fjn_stream_width());
}

/* _native_stream_copy(dst, src): copies the bytes of src into dst (writable,
   contiguous, the same length) with the streaming copy in use (tests: every
   alignment of the destination at every width).  False without streaming
   stores (dst unchanged). */
static PyObject *native_stream_copy(PyObject *mod, PyObject *args)
{
    if (fj_numpy_ensure() < 0) /* fj_numpy.h: loaded lazily */
        return NULL;
    Py_buffer d, s;
    (void)mod;
    if (!PyArg_ParseTuple(args, "w*y*:_native_stream_copy", &d, &s))
        return NULL;
    PyObject *r = NULL;
    if (d.len != s.len)
        PyErr_Format(PyExc_ValueError, "_native_stream_copy: dst has %zd bytes, src %zd", d.len, s.len);
    else
        r = PyBool_FromLong(fjn_stream_copy((char *)d.buf, (const char *)s.buf, (size_t)d.len) == 0);
    PyBuffer_Release(&d);
    PyBuffer_Release(&s);
    return r;
}

static PyObject *dtype_tuple(int f64, int f32)
{
    return f64 && f32 ? Py_BuildValue("(ss)", "float64", "float32")
           : f64      ? Py_BuildValue("(s)", "float64")
           : f32      ? Py_BuildValue("(s)", "float32")
                      : PyTuple_New(0);
}

/* native_vmath() -> {ufunc name: (C stem, dtypes, dtypes left to NumPy here)}:
   framejit/_vmath.h's functions, the dtypes it has them for, and those of them
   whose NumPy AVX-512 loop the kernels call instead (native_config(numpy_avx512=)) */
static PyObject *native_vmath(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    PyObject *d = PyDict_New();
    for (int c = FJN_EXP; d != NULL && c <= FJN_POWER; c++) {
        const fjn_VmathFn *f = FJN_VMATH_FN(c);
        int np_ = fjn_numpy_avx512 ? numpy_avx512_faster(c) : 0;
        PyObject *v = Py_BuildValue("(sNN)", f->stem, dtype_tuple(f->f64, f->f32),
                                    dtype_tuple(f->f64 && (np_ & 1), f->f32 && (np_ & 2)));
        if (v == NULL || PyDict_SetItemString(d, f->ufunc, v) < 0)
            Py_CLEAR(d);
        Py_XDECREF(v);
    }
    return d;
}

static PyMethodDef native_functions[] = {
    {"native_vmath", (PyCFunction)native_vmath, METH_NOARGS,
     "native_vmath() -> {ufunc name: (C stem, dtypes, dtypes left to NumPy here)}: the transcendental "
     "functions of framejit/_vmath.h, the dtypes it has them for, and those whose NumPy AVX-512 loop the "
     "kernels call instead"},
    {"native_plan", (PyCFunction)native_plan, METH_O,
     "native_plan(graph) -> (NativePlan, C source) or (None, None) when nothing fuses."},
    {"native_plan_deferred", (PyCFunction)native_plan_deferred, METH_O,
     "native_plan_deferred(graph) -> a NativePlan running the graph eagerly until _partition() and _load()."},
    {"native_config", (PyCFunction)(void (*)(void))native_config, METH_VARARGS | METH_KEYWORDS,
     "native_config(threads=None, thread_min=None, float_axis_minmax=None, stream_min=None) -> the four settings"},
    {"native_stream_width", (PyCFunction)(void (*)(void))native_stream_width, METH_VARARGS | METH_KEYWORDS,
     "native_stream_width(width=None) -> bytes per streaming store (16, 32 or 64; 0: none); width selects "
     "the widest this CPU has up to it"},
    {"native_workers", (PyCFunction)native_workers, METH_NOARGS,
     "native_workers() -> the number of worker threads started (csrc/backends/native/native_threads.c)"},
    {"native_pool", (PyCFunction)(void (*)(void))fjn_pool_config, METH_VARARGS | METH_KEYWORDS,
     "native_pool(limit=None) -> dict: the output buffer pool's figures; limit sets its byte limit "
     "(0 frees what it holds and turns it off)"},
    {NULL, NULL, 0, NULL},
};

/* framejit._C._testing */
static PyMethodDef native_testing[] = {
    {"native_stream_copy", (PyCFunction)native_stream_copy, METH_VARARGS,
     "native_stream_copy(dst, src) -> bool: src's bytes into dst with the streaming copy"},
    {NULL, NULL, 0, NULL},
};

int fjn_env_count(const char *name, Py_ssize_t *out)
{
    const char *env = getenv(name);
    char *end = NULL;
    if (!env || !*env || *env == '-')
        return 0;
    errno = 0;
    unsigned long long v = strtoull(env, &end, 10);
    if (!end || *end != '\0')
        return 0;
    *out = errno == ERANGE || v > (unsigned long long)PY_SSIZE_T_MAX ? PY_SSIZE_T_MAX : (Py_ssize_t)v;
    return 1;
}

int fj_native_init(PyObject *module, PyObject *testing)
{
    if (PyModule_AddFunctions(testing, native_testing) < 0)
        return -1;
    Py_ssize_t ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int explicit = fjn_env_count("FRAMEJIT_NATIVE_THREADS", &ncpu); /* an explicit thread count */
    fjn_threads = ncpu > 1 ? (ncpu > 16 ? 16 : (int)ncpu) : 1;
    if (!explicit && fjn_threads > 8)
        fjn_threads = 8;
    fjn_stream_init();
    if (fjn_pool_init() < 0)
        return -1;
    fjn_PlanType = (PyTypeObject *)PyType_FromSpec(&plan_spec);
    if (!fjn_PlanType || PyModule_AddObjectRef(module, "NativePlan", (PyObject *)fjn_PlanType) < 0)
        return -1;
    return PyModule_AddFunctions(module, native_functions);
}
