/*
** trace_dims.c: symbolic sizes of dynamic dims (docs/dynamic.md).
**
** Responsible for: keeping, for each array Var of a dynamic shape, which of
** its dims are symbols (an input's dynamic dim: (source text, dim, source))
** and deciding, before an op with a dynamic operand goes into the graph,
** whether the op can raise for other sizes the guards let through.  Where
** two dims meet in broadcasting, the relation the trace saw is made a guard
** (DIMS_EQUAL, torch's s0 == s1) or, when a symbol meets a fixed size other
** than 1 or the op's shape rule is not modelled, the trace specializes
** (every dynamic input pinned).  A graph op therefore never raises a shape
** error at run time after a side effect traced before it.
**
** The symbols of a NODE Var are in its 'extra2' (a tuple, one entry per dim:
** None for a fixed size, or a symbol); a dynamic NODE Var without one is
** opaque (its sizes are not modelled: shape-sensitive uses specialize).
**
** Not responsible for: the guards' evaluation (guards.c), shape rules (ops_shape.c).
*/
#include "trace.h"

#include "fj_numpy.h"
#include "graph.h"

#define VAR(o) ((fj_Var *)(o))

PyObject *fj_dims_for_input(fj_Source *src, PyObject *dyn, int ndim)
{
    PyObject *t = PyTuple_New(ndim);
    for (int d = 0; t != NULL && d < ndim; d++)
        PyTuple_SET_ITEM(t, d, Py_NewRef(Py_None));
    for (Py_ssize_t i = 0; t != NULL && i < PyTuple_GET_SIZE(dyn); i++) {
        long d = PyLong_AsLong(PyTuple_GET_ITEM(dyn, i));
        if (d < 0 || d >= ndim)
            continue;
        PyObject *sym = Py_BuildValue("(OlO)", src->text, d, (PyObject *)src);
        if (sym == NULL)
            Py_CLEAR(t);
        else
            Py_SETREF(PyTuple_GET_ITEM(t, d), sym);
    }
    return t;
}

/* The number of dims a node's sizes have (arrays and tensors; 0 otherwise). */
static int shaped_ndim(const fj_Node *n)
{
    return n->vkind == FJ_VAL_ARRAY || n->vkind == FJ_VAL_TENSOR ? n->ndim : 0;
}

/* The dims of an operand: a new tuple (None = fixed), Py_None when opaque, NULL on error. */
static PyObject *dims_of(PyObject *v)
{
    fj_Var *vv = VAR(v);
    fj_Node *n = (fj_Node *)vv->obj;
    if (shaped_ndim(n) == 0)
        return PyTuple_New(0);
    if (vv->dynamic) {
        if (vv->extra2 != NULL && PyTuple_Check(vv->extra2) && PyTuple_GET_SIZE(vv->extra2) == n->ndim)
            return Py_NewRef(vv->extra2);
        if (n->vkind == FJ_VAL_PYSCALAR)
            return PyTuple_New(0);
        return Py_NewRef(Py_None);
    }
    int nd = shaped_ndim(n);
    PyObject *t = PyTuple_New(nd);
    for (int d = 0; t != NULL && d < nd; d++)
        PyTuple_SET_ITEM(t, d, Py_NewRef(Py_None));
    return t;
}

static int same_symbol(PyObject *a, PyObject *b)
{
    return PyUnicode_Compare(PyTuple_GET_ITEM(a, 0), PyTuple_GET_ITEM(b, 0)) == 0 &&
           PyLong_AsLong(PyTuple_GET_ITEM(a, 1)) == PyLong_AsLong(PyTuple_GET_ITEM(b, 1));
}

/* Specializes; the result's dims are then not needed.  0 or -1. */
static int pin(fj_Tracer *tx, PyObject **out)
{
    *out = NULL;
    return fj_trace_specialize(tx);
}


/*
** Broadcasting operands 'ops' (a list of NODE Vars): combines their dims
** right-aligned.  Returns 0 with *out the result's dims (or NULL after
** pinning), -1 on error.
*/
static int combine(fj_Tracer *tx, PyObject *ops, PyObject **out)
{
    int rn = 0, shaped = 0;
    PyObject *only = NULL;
    Py_ssize_t k = PyList_GET_SIZE(ops);
    for (Py_ssize_t i = 0; i < k; i++) {
        fj_Node *n = (fj_Node *)VAR(PyList_GET_ITEM(ops, i))->obj;
        int nd = shaped_ndim(n);
        if (nd > rn)
            rn = nd;
        if (nd > 0) {
            shaped++;
            only = PyList_GET_ITEM(ops, i);
        }
    }
    if (shaped <= 1) {
        /* one operand with dims: the result has its sizes, whatever they are */
        PyObject *d = only ? dims_of(only) : PyTuple_New(0);
        if (d == Py_None)
            Py_CLEAR(d);
        else if (d == NULL)
            return -1;
        *out = d;
        return 0;
    }
    PyObject *res = PyTuple_New(rn), *sizes = NULL;
    npy_intp size[FJ_MAX_NDIM];
    if (res == NULL)
        return -1;
    for (int d = 0; d < rn; d++) {
        PyTuple_SET_ITEM(res, d, Py_NewRef(Py_None));
        size[d] = 1;
    }
    (void)sizes;
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *v = PyList_GET_ITEM(ops, i);
        fj_Node *n = (fj_Node *)VAR(v)->obj;
        int nd = shaped_ndim(n);
        PyObject *dims = dims_of(v);
        if (dims == NULL) {
            Py_DECREF(res);
            return -1;
        }
        if (dims == Py_None) {
            Py_DECREF(dims);
            Py_DECREF(res);
            return pin(tx, out);
        }
        for (int d = 0; d < nd; d++) {
            int rd = rn - nd + d;
            PyObject *cur = PyTuple_GET_ITEM(res, rd), *sym = PyTuple_GET_ITEM(dims, d);
            npy_intp s = n->shape[d];
            if (sym == Py_None && cur == Py_None) {
                if (s != 1)
                    size[rd] = s;
                continue;
            }
            if (sym == Py_None || cur == Py_None) {
                /* a symbol meets a fixed size: right for every size only against 1 */
                npy_intp fixed = sym == Py_None ? s : size[rd];
                if (fixed != 1) {
                    Py_DECREF(dims);
                    Py_DECREF(res);
                    return pin(tx, out);
                }
                if (cur == Py_None)
                    Py_SETREF(PyTuple_GET_ITEM(res, rd), Py_NewRef(sym));
                size[rd] = s > size[rd] ? s : size[rd];
                continue;
            }
            if (!same_symbol(sym, cur)) {
                /* two symbols equal now: guard that they stay equal */
                int r = fj_guard_add_dims_equal(tx->guards, PyTuple_GET_ITEM(cur, 2),
                                                (int)PyLong_AsLong(PyTuple_GET_ITEM(cur, 1)),
                                                PyTuple_GET_ITEM(sym, 2),
                                                (int)PyLong_AsLong(PyTuple_GET_ITEM(sym, 1)));
                if (r < 0) {
                    Py_DECREF(dims);
                    Py_DECREF(res);
                    return -1;
                }
            }
        }
        Py_DECREF(dims);
    }
    *out = res;
    return 0;
}

/* True for a Var that is the constant -1 or a tuple/list holding just -1. */
static int is_minus_one_shape(PyObject *v)
{
    fj_Var *vv = VAR(v);
    PyObject *c = vv->kind == FJ_VAR_CONST ? vv->obj : NULL;
    if (c != NULL && (PyTuple_Check(c) || PyList_Check(c)) && PySequence_Fast_GET_SIZE(c) == 1)
        c = PySequence_Fast_GET_ITEM(c, 0);
    else if ((vv->kind == FJ_VAR_TUPLE || vv->kind == FJ_VAR_LIST) && PyList_GET_SIZE(vv->items) == 1) {
        fj_Var *it = VAR(PyList_GET_ITEM(vv->items, 0));
        c = it->kind == FJ_VAR_CONST ? it->obj : NULL;
    }
    return c != NULL && PyLong_CheckExact(c) && PyLong_AsLong(c) == -1;
}

/*
** A reduction's result dims: the input's without the reduced axes (kept as
** fixed size 1 with keepdims).  Only a constant int axis, None, or a tuple of
** ints is modelled; otherwise the result is opaque.  0 or -1.
*/
static int reduce_dims(const fj_OpDef *op, PyObject *const *args, Py_ssize_t n,
                       PyObject *kwnames, PyObject **out)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, npos = n - nkw;
    PyObject *axis = npos >= 2 ? args[1] : NULL, *keep = NULL;
    *out = NULL;
    if (n < 1 || VAR(args[0])->kind != FJ_VAR_NODE || npos > 2)
        return 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *kn = PyTuple_GET_ITEM(kwnames, k);
        if (PyUnicode_CompareWithASCIIString(kn, "axis") == 0)
            axis = args[npos + k];
        else if (PyUnicode_CompareWithASCIIString(kn, "keepdims") == 0)
            keep = args[npos + k];
    }
    (void)op;
    PyObject *ax = axis ? (VAR(axis)->kind == FJ_VAR_CONST ? VAR(axis)->obj : NULL) : Py_None;
    PyObject *kp = keep ? (VAR(keep)->kind == FJ_VAR_CONST ? VAR(keep)->obj : NULL) : Py_False;
    if (ax == NULL || kp == NULL || !PyBool_Check(kp))
        return 0;
    PyObject *in = dims_of(args[0]);
    if (in == NULL)
        return -1;
    if (in == Py_None) {
        Py_DECREF(in);
        return 0;
    }
    int nd = (int)PyTuple_GET_SIZE(in);
    unsigned char mask[FJ_MAX_NDIM];
    memset(mask, ax == Py_None, sizeof mask);
    PyObject *seq = ax == Py_None ? NULL : PySequence_Check(ax) ? Py_NewRef(ax) : PyTuple_Pack(1, ax);
    for (Py_ssize_t i = 0; seq != NULL && i < PySequence_Size(seq); i++) {
        PyObject *it = PySequence_GetItem(seq, i);
        long a = it && PyLong_CheckExact(it) ? PyLong_AsLong(it) : -1000;
        Py_XDECREF(it);
        if (a < 0)
            a += nd;
        if (a < 0 || a >= nd) {
            PyErr_Clear();
            Py_CLEAR(seq);
            Py_DECREF(in);
            return 0;
        }
        mask[a] = 1;
    }
    Py_XDECREF(seq);
    PyObject *res = PyList_New(0);
    for (int d = 0; res != NULL && d < nd; d++) {
        if (mask[d] && kp != Py_True)
            continue;
        if (PyList_Append(res, mask[d] ? Py_None : PyTuple_GET_ITEM(in, d)) < 0)
            Py_CLEAR(res);
    }
    Py_DECREF(in);
    if (res == NULL)
        return -1;
    *out = PyList_AsTuple(res);
    Py_DECREF(res);
    return *out ? 0 : -1;
}

int fj_dims_before_call(fj_TFrame *fr, const fj_OpDef *op, PyObject *const *args, Py_ssize_t n,
                        PyObject *kwnames, PyObject **out)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, npos = n - nkw;
    *out = NULL;
    if (fr->tx->specialized)
        return 0;
    switch (op->shape_rule) {
    case FJ_SH_BROADCAST: {
        PyObject *ops = PyList_New(0);
        int bad = ops == NULL;
        for (Py_ssize_t i = 0; !bad && i < n; i++) {
            fj_Var *a = VAR(args[i]);
            int operand = i < npos ? i < op->nin : 0;
            if (i >= npos) {
                /* out= given: NumPy never broadcasts it; x1=, x2= keywords: not modelled */
                PyObject *kn = PyTuple_GET_ITEM(kwnames, i - npos);
                if (PyUnicode_CompareWithASCIIString(kn, "out") == 0 && a->kind != FJ_VAR_CONST) {
                    Py_DECREF(ops);
                    return pin(fr->tx, out);
                }
                int pi = fj_ops_param_index(op, PyUnicode_AsUTF8(kn));
                operand = pi >= 0 && pi < op->nin;
                if (pi < 0)
                    PyErr_Clear();
            }
            if (i < npos && i >= op->nin && a->kind == FJ_VAR_NODE &&
                (op->flags & FJ_OPF_OUT) && i == op->nin) {
                Py_DECREF(ops);
                return pin(fr->tx, out); /* a positional out */
            }
            if (!operand || a->kind == FJ_VAR_CONST)
                continue; /* a scalar constant (or None) takes no part in the sizes */
            if (a->kind != FJ_VAR_NODE) {
                Py_DECREF(ops);
                return pin(fr->tx, out); /* a list or tuple operand: its shape is not modelled */
            }
            bad = PyList_Append(ops, (PyObject *)a) < 0;
        }
        if (bad) {
            Py_XDECREF(ops);
            return -1;
        }
        int r = combine(fr->tx, ops, out);
        Py_DECREF(ops);
        return r;
    }
    case FJ_SH_SAME:
        if (n >= 1 && VAR(args[0])->kind == FJ_VAR_NODE) {
            PyObject *d = dims_of(args[0]);
            if (d == NULL)
                return -1;
            if (d == Py_None)
                Py_CLEAR(d);
            *out = d;
        }
        return 0;
    case FJ_SH_RESHAPE:
        /* only x.reshape(-1) is right for every size */
        if (npos == 2 && is_minus_one_shape(args[1]))
            return 0;
        return pin(fr->tx, out);
    case FJ_SH_REDUCE:
    case FJ_SH_ARGREDUCE:
        return reduce_dims(op, args, n, kwnames, out);
    case FJ_SH_TRANSPOSE:
    case FJ_SH_SWAPAXES:
    case FJ_SH_EXPAND_DIMS:
    case FJ_SH_SQUEEZE:
    case FJ_SH_RAVEL:
    case FJ_SH_CUMULATIVE:
    case FJ_SH_SORT:
    case FJ_SH_ARGSORT:
    case FJ_SH_GETITEM:
    case FJ_SH_LIKE:
        /* one array operand, no size relation that can fail (sizes 0 and 1 are
           specialized; integer indices are pinned by the getitem tracer): the
           result's sizes are opaque */
        return 0;
    default:
        return pin(fr->tx, out);
    }
}

int fj_dims_broadcast(fj_Tracer *tx, PyObject *const *args, Py_ssize_t n, PyObject **out)
{
    *out = NULL;
    if (tx->specialized)
        return 0;
    PyObject *ops = PyList_New(0);
    if (ops == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        fj_Var *a = VAR(args[i]);
        if (a->kind == FJ_VAR_CONST)
            continue; /* a scalar (or None) takes no part in the sizes */
        if (a->kind != FJ_VAR_NODE) {
            Py_DECREF(ops);
            return pin(tx, out);
        }
        if (PyList_Append(ops, (PyObject *)a) < 0) {
            Py_DECREF(ops);
            return -1;
        }
    }
    int r = combine(tx, ops, out);
    Py_DECREF(ops);
    return r;
}
