/*
** ops_shape.c: the shape rules of the op table.
**
** Responsible for: computing the output shape of each operation from the
** input shapes and the constant arguments alone (never running NumPy on
** data): broadcasting, reductions with axis/keepdims, matmul/dot, reshape,
** transpose/.T, swapaxes, expand_dims, squeeze, concatenate, stack,
** broadcast_to, astype, ravel/flatten, cumsum/cumprod, sort/argsort, basic
** indexing (ints, slices, None, Ellipsis), and the array creation functions
** (zeros & co from their constant shape, the *_like functions, arange's
** length as NumPy computes it, linspace, eye), raising the error NumPy
** would raise (with the op's name) when the combination is invalid.  A
** NumPy scalar operand counts as 0-d.  For indexing it also decides whether
** the result is a NumPy scalar.
**
** Not responsible for: dtypes (ops.c), binding arguments (ops.c).
*/
#include "graph.h"
#include "ops.h"

#include <math.h>
#include <string.h>

#define QN(op) fj_op_qualname(op)

/* "(2,3)" into buf. */
static void fmt_shape(char *buf, size_t n, int nd, const npy_intp *sh)
{
    size_t pos = 0;
    pos += (size_t)snprintf(buf + pos, n - pos, "(");
    for (int i = 0; i < nd && pos < n; i++)
        pos += (size_t)snprintf(buf + pos, n - pos, i ? ",%ld" : "%ld", (long)sh[i]);
    if (pos < n)
        pos += (size_t)snprintf(buf + pos, n - pos, nd == 1 ? ",)" : ")");
}

/* Raises ValueError with 'fmt' (its three %s: the op's name, then the two
   shapes).  Returns -1. */
static int shapes_error(const fj_OpDef *op, const char *fmt, int nd1, const npy_intp *sh1, int nd2,
                        const npy_intp *sh2)
{
    char s1[256], s2[256];
    fmt_shape(s1, sizeof s1, nd1, sh1);
    fmt_shape(s2, sizeof s2, nd2, sh2);
    PyErr_Format(PyExc_ValueError, fmt, QN(op), s1, s2);
    return -1;
}

static int is_scalar_const(PyObject *o)
{
    return PyLong_Check(o) || PyFloat_Check(o) || PyComplex_Check(o) || PyArray_IsScalar(o, Generic);
}

/* True when 'o' holds only builtin or NumPy numbers in lists and tuples
   (no nodes, nothing whose conversion could run the program's code). */
static int numbers_only(PyObject *o, int depth)
{
    if (is_scalar_const(o))
        return !PyArray_IsScalar(o, Generic) || PyArray_IsScalar(o, Number) || PyArray_IsScalar(o, Bool);
    if (depth > 32 || !(PyList_CheckExact(o) || PyTuple_CheckExact(o)))
        return 0;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!numbers_only(PySequence_Fast_GET_ITEM(o, i), depth + 1))
            return 0;
    return 1;
}

/*
** A constant array-like ([1, 2], ((1, 0), (0, 1))): its shape as
** np.asarray gives it, and its dtype's type number into *type_num (when
** not NULL).  0; 1 when 'o' is not one (nothing set); -1 with NumPy's error
** (a ragged list).
*/
static int const_seq_shape(const fj_OpDef *op, PyObject *o, int *nd, npy_intp *sh, int *type_num)
{
    if (!numbers_only(o, 0))
        return 1;
    PyObject *arr = PyArray_FromAny(o, NULL, 0, 0, 0, NULL);
    if (arr == NULL) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        PyErr_NormalizeException(&et, &ev, &tb);
        PyObject *msg = ev ? PyObject_Str(ev) : NULL;
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s: %U", QN(op), msg ? msg : Py_None);
        Py_XDECREF(msg);
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
        return -1;
    }
    int r = 0;
    if (PyArray_NDIM((PyArrayObject *)arr) > FJ_MAX_NDIM || PyArray_TYPE((PyArrayObject *)arr) == NPY_OBJECT)
        r = 1;
    else {
        *nd = PyArray_NDIM((PyArrayObject *)arr);
        memcpy(sh, PyArray_DIMS((PyArrayObject *)arr), sizeof(npy_intp) * (size_t)*nd);
        if (type_num)
            *type_num = PyArray_TYPE((PyArrayObject *)arr);
    }
    Py_DECREF(arr);
    return r;
}

/* Shape of an operand: a node, a scalar constant (0-d), or a constant
   array-like (numbers in lists and tuples).  0 or -1. */
static int operand_shape(const fj_OpDef *op, PyObject *o, int *nd, npy_intp *sh)
{
    if (fj_Node_Check(o)) {
        fj_Node *n = (fj_Node *)o;
        *nd = n->ndim;
        memcpy(sh, n->shape, sizeof(npy_intp) * (size_t)n->ndim);
        return 0;
    }
    if (is_scalar_const(o)) {
        *nd = 0;
        return 0;
    }
    if ((PyList_CheckExact(o) || PyTuple_CheckExact(o)) && const_seq_shape(op, o, nd, sh, NULL) == 0)
        return 0;
    if (PyErr_Occurred())
        return -1;
    PyErr_Format(PyExc_TypeError, "%s: unsupported operand of type %.100s", QN(op), Py_TYPE(o)->tp_name);
    return -1;
}

/* The array or NumPy-scalar node 'o' (a NumPy scalar has ndim 0), or NULL
   with a TypeError. */
static fj_Node *array_node(const fj_OpDef *op, PyObject *o)
{
    if (o && fj_Node_Check(o) && ((fj_Node *)o)->vkind != FJ_VAL_PYSCALAR)
        return (fj_Node *)o;
    PyErr_Format(PyExc_TypeError, "%s: expected a traced array, got %.100s", QN(op),
                 o ? (fj_Node_Check(o) ? "a Python scalar" : Py_TYPE(o)->tp_name) : "nothing");
    return NULL;
}

/* Broadcasts (nd, sh) into (*ond, osh).  0 or -1 with NumPy's message. */
static int broadcast_into(const fj_OpDef *op, int *ond, npy_intp *osh, int nd, const npy_intp *sh)
{
    int rn = nd > *ond ? nd : *ond;
    npy_intp res[FJ_MAX_NDIM];
    for (int i = 0; i < rn; i++) {
        int ia = i - (rn - *ond), ib = i - (rn - nd);
        npy_intp a = ia >= 0 ? osh[ia] : 1, bb = ib >= 0 ? sh[ib] : 1;
        if (a == bb || bb == 1)
            res[i] = a;
        else if (a == 1)
            res[i] = bb;
        else {
            return shapes_error(op, "%s: operands could not be broadcast together with shapes %s %s",
                                *ond, osh, nd, sh);
        }
    }
    *ond = rn;
    memcpy(osh, res, sizeof(npy_intp) * (size_t)rn);
    return 0;
}

/* An int (not a bool) into *v (OverflowError beyond Py_ssize_t); anything
   else is a TypeError "'<type>' object cannot be interpreted as an
   integer<what>".  0 or -1. */
static int int_arg(const fj_OpDef *op, PyObject *o, const char *what, Py_ssize_t *v)
{
    if (!PyIndex_Check(o) || PyBool_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: '%.100s' object cannot be interpreted as an integer%s", QN(op),
                     Py_TYPE(o)->tp_name, what);
        return -1;
    }
    *v = PyNumber_AsSsize_t(o, PyExc_OverflowError);
    return *v == -1 && PyErr_Occurred() ? -1 : 0;
}

/* Normalizes an axis index against ndim.  0 or -1 (TypeError/AxisError). */
static int norm_axis(const fj_OpDef *op, PyObject *ax, int ndim, int *out)
{
    Py_ssize_t v;
    if (int_arg(op, ax, " axis", &v) < 0)
        return -1;
    if (v < -ndim || v >= ndim)
        return fj_ops_axis_error("%s: axis %zd is out of bounds for array of dimension %d", QN(op), v, ndim);
    *out = (int)(v < 0 ? v + ndim : v);
    return 0;
}

/* Axes from None (all), an int or a sequence into mask[ndim].  0 or -1. */
static int axis_mask(const fj_OpDef *op, PyObject *axis, int ndim, int allow_tuple, unsigned char *mask)
{
    memset(mask, 0, FJ_MAX_NDIM);
    if (!axis || axis == Py_None) {
        memset(mask, 1, (size_t)ndim);
        return 0;
    }
    if (ndim == 0 && (op->flags & FJ_OPF_AXIS0D) && PyIndex_Check(axis) && !PyBool_Check(axis)) {
        /* NumPy's legacy: an int axis 0 or -1 on a 0-d input selects nothing */
        Py_ssize_t v;
        if (int_arg(op, axis, " axis", &v) < 0)
            return -1;
        if (v == 0 || v == -1)
            return 0;
    }
    if (PyTuple_Check(axis) || PyList_Check(axis)) {
        if (!allow_tuple) {
            PyErr_Format(PyExc_TypeError, "%s: axis must be None or an integer, not a tuple", QN(op));
            return -1;
        }
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(axis); i++) {
            int a;
            if (norm_axis(op, PySequence_Fast_GET_ITEM(axis, i), ndim, &a) < 0)
                return -1;
            if (mask[a]) {
                PyErr_Format(PyExc_ValueError, "%s: duplicate value in 'axis'", QN(op));
                return -1;
            }
            mask[a] = 1;
        }
        return 0;
    }
    int a;
    if (norm_axis(op, axis, ndim, &a) < 0)
        return -1;
    mask[a] = 1;
    return 0;
}

/* Reads an int or a sequence of ints into dims.  0 or -1. */
/* A symbolic int (a Python-int node: a size or an int input the trace keeps
   symbolic, issue 22) read as its trace-time value, for metadata; anything
   else as it is.  Borrowed. */
static PyObject *int_example(PyObject *o)
{
    if (fj_Node_Check(o) && ((fj_Node *)o)->vkind == FJ_VAL_PYSCALAR && ((fj_Node *)o)->example != NULL &&
        PyLong_CheckExact(((fj_Node *)o)->example))
        return ((fj_Node *)o)->example;
    return o;
}

static int int_seq(const fj_OpDef *op, PyObject *o, const char *what, npy_intp *dims, int *n)
{
    o = int_example(o);
    if (PyIndex_Check(o) && !PyBool_Check(o)) {
        Py_ssize_t v;
        if (int_arg(op, o, "", &v) < 0)
            return -1;
        dims[0] = v;
        *n = 1;
        return 0;
    }
    if (!PyTuple_Check(o) && !PyList_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be an int or a tuple of ints, not %.100s", QN(op), what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    Py_ssize_t len = PySequence_Fast_GET_SIZE(o);
    if (len > FJ_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "%s: %s has more than %d entries", QN(op), what, FJ_MAX_NDIM);
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        PyObject *it = int_example(PySequence_Fast_GET_ITEM(o, i));
        if (!PyIndex_Check(it) || PyBool_Check(it)) {
            PyErr_Format(PyExc_TypeError, "%s: %s entries must be ints, not %.100s", QN(op), what,
                         Py_TYPE(it)->tp_name);
            return -1;
        }
        Py_ssize_t v;
        if (int_arg(op, it, "", &v) < 0)
            return -1;
        dims[i] = v;
    }
    *n = (int)len;
    return 0;
}

static int too_many_dims(const fj_OpDef *op, int nd)
{
    if (nd > FJ_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "%s: result would have %d dimensions (framejit tracks up to %d)", QN(op),
                     nd, FJ_MAX_NDIM);
        return -1;
    }
    return 0;
}

/* ---- the rules ---------------------------------------------------------- */

static int sh_broadcast(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    int seen = 0;
    if ((op->flags & FJ_OPF_SELECT) && (!b->v[1] || !b->v[2])) {
        PyErr_Format(PyExc_TypeError, "%s: the one-argument form (data-dependent shape) is not supported", QN(op));
        return -1;
    }
    out->ndim = 0;
    for (int i = 0; i < op->nin && i < FJ_OP_MAXPARAMS; i++) {
        PyObject *o = b->v[i];
        int nd;
        npy_intp sh[FJ_MAX_NDIM];
        if (!o || (o == Py_None && i > 0))
            continue;
        if (operand_shape(op, o, &nd, sh) < 0 || broadcast_into(op, &out->ndim, out->shape, nd, sh) < 0)
            return -1;
        seen++;
    }
    if (!seen) {
        PyErr_Format(PyExc_TypeError, "%s: missing operands", QN(op));
        return -1;
    }
    return 0;
}

static int sh_reduce(const fj_OpDef *op, fj_Bound *b, fj_Meta *out, int allow_tuple)
{
    int nd, ia = fj_ops_param_index(op, "axis"), ik = fj_ops_param_index(op, "keepdims");
    npy_intp sh[FJ_MAX_NDIM];
    unsigned char mask[FJ_MAX_NDIM];
    if (!b->v[0]) {
        PyErr_Format(PyExc_TypeError, "%s: missing the array argument", QN(op));
        return -1;
    }
    if (operand_shape(op, b->v[0], &nd, sh) < 0)
        return -1;
    if (nd == 0 && op->shape_rule == FJ_SH_ARGREDUCE && ia >= 0 && b->v[ia] && b->v[ia] != Py_None) {
        /* argmax/argmin ravel a 0-d input: axis 0 or -1 of a 1-d array, and a scalar result */
        int ax;
        out->ndim = 0;
        return norm_axis(op, b->v[ia], 1, &ax);
    }
    if (axis_mask(op, ia >= 0 ? b->v[ia] : NULL, nd, allow_tuple, mask) < 0)
        return -1;
    int keep = 0;
    if (ik >= 0 && b->v[ik]) {
        keep = PyObject_IsTrue(b->v[ik]);
        if (keep < 0)
            return -1;
    }
    if (op->flags & FJ_OPF_NO_IDENTITY) {
        for (int i = 0; i < nd; i++) {
            if (mask[i] && sh[i] == 0) {
                if (op->flags & FJ_OPF_ARGMSG)
                    PyErr_Format(PyExc_ValueError, "%s: attempt to get %s of an empty sequence", QN(op), op->name);
                else
                    PyErr_Format(PyExc_ValueError,
                                 "%s: zero-size array to reduction operation %s which has no identity", QN(op),
                                 op->ufunc);
                return -1;
            }
        }
    }
    out->ndim = 0;
    for (int i = 0; i < nd; i++) {
        if (!mask[i])
            out->shape[out->ndim++] = sh[i];
        else if (keep)
            out->shape[out->ndim++] = 1;
    }
    return 0;
}

/* The shapes of the two operands of matmul/dot: a (nda dims) and bb (ndb dims). */
typedef struct {
    int nda, ndb;
    npy_intp a[FJ_MAX_NDIM], bb[FJ_MAX_NDIM];
} TwoShapes;

/*
** Reads the shapes of matmul/dot's two operands into 's' and checks their
** core dimension (a's last against b's second to last, or only one).  0; 1
** when an operand is 0-d (no core dimension: the caller decides); or -1 with
** an exception.
*/
static int core_operands(const fj_OpDef *op, fj_Bound *b, TwoShapes *s)
{
    if (!b->v[0] || !b->v[1]) {
        PyErr_Format(PyExc_TypeError, "%s: needs two operands", QN(op));
        return -1;
    }
    if (operand_shape(op, b->v[0], &s->nda, s->a) < 0 ||
        operand_shape(op, b->v[1], &s->ndb, s->bb) < 0)
        return -1;
    if (s->nda == 0 || s->ndb == 0)
        return 1;
    if (s->a[s->nda - 1] != (s->ndb >= 2 ? s->bb[s->ndb - 2] : s->bb[0]))
        return shapes_error(op, "%s: shapes %s and %s not aligned (core dimensions mismatch)", s->nda,
                            s->a, s->ndb, s->bb);
    return 0;
}

static int sh_matmul(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    TwoShapes s;
    int r = core_operands(op, b, &s);
    if (r > 0)
        PyErr_Format(PyExc_ValueError, "%s: input operand %d does not have enough dimensions", QN(op),
                     s.nda == 0 ? 0 : 1);
    if (r != 0)
        return -1;
    /* core: a (..., n, k), b (..., k, m); 1-D operands get a 1 added */
    int bnd = 0;
    npy_intp bsh[FJ_MAX_NDIM];
    if (s.nda > 2 && broadcast_into(op, &bnd, bsh, s.nda - 2, s.a) < 0)
        return -1;
    if (s.ndb > 2 && broadcast_into(op, &bnd, bsh, s.ndb - 2, s.bb) < 0)
        return -1;
    out->ndim = bnd;
    memcpy(out->shape, bsh, sizeof(npy_intp) * (size_t)bnd);
    if (s.nda >= 2)
        out->shape[out->ndim++] = s.a[s.nda - 2];
    if (s.ndb >= 2)
        out->shape[out->ndim++] = s.bb[s.ndb - 1];
    return 0;
}

static int sh_dot(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    TwoShapes s;
    int r = core_operands(op, b, &s);
    if (r < 0)
        return -1;
    if (r > 0) { /* multiply by a scalar */
        out->ndim = s.nda ? s.nda : s.ndb;
        memcpy(out->shape, s.nda ? s.a : s.bb, sizeof(npy_intp) * (size_t)out->ndim);
        return 0;
    }
    out->ndim = 0;
    for (int i = 0; i < s.nda - 1; i++)
        out->shape[out->ndim++] = s.a[i];
    if (s.ndb >= 2) {
        if (too_many_dims(op, s.nda + s.ndb - 2) < 0)
            return -1;
        for (int i = 0; i < s.ndb - 2; i++)
            out->shape[out->ndim++] = s.bb[i];
        out->shape[out->ndim++] = s.bb[s.ndb - 1];
    }
    return 0;
}

/* reshape, broadcast_to: the array (b->v[0], returned, borrowed) and the
   shape argument (b->v[1]: an int or ints) into dims[*n].  NULL on error. */
static fj_Node *array_and_shape(const fj_OpDef *op, fj_Bound *b, npy_intp *dims, int *n)
{
    fj_Node *a = array_node(op, b->v[0]);
    if (!a)
        return NULL;
    if (!b->v[1]) {
        PyErr_Format(PyExc_TypeError, "%s: missing the shape argument", QN(op));
        return NULL;
    }
    return int_seq(op, b->v[1], "shape", dims, n) < 0 ? NULL : a;
}

static int sh_reshape(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    npy_intp dims[FJ_MAX_NDIM];
    int n, unknown = -1;
    fj_Node *a = array_and_shape(op, b, dims, &n);
    if (!a)
        return -1;
    npy_intp size = 1, known = 1;
    for (int i = 0; i < a->ndim; i++)
        size *= a->shape[i];
    for (int i = 0; i < n; i++) {
        if (dims[i] < 0) { /* NumPy 2 takes any negative entry as the unknown one */
            if (unknown >= 0) {
                PyErr_Format(PyExc_ValueError, "%s: can only specify one unknown dimension", QN(op));
                return -1;
            }
            unknown = i;
        } else {
            known *= dims[i];
        }
    }
    if (unknown >= 0) {
        if (known == 0 || size % known != 0)
            goto bad;
        dims[unknown] = size / known;
    } else if (known != size) {
        goto bad;
    }
    out->ndim = n;
    memcpy(out->shape, dims, sizeof(npy_intp) * (size_t)n);
    return 0;
bad: {
    char s1[256];
    fmt_shape(s1, sizeof s1, n, dims);
    PyErr_Format(PyExc_ValueError, "%s: cannot reshape array of size %zd into shape %s", QN(op), (Py_ssize_t)size,
                 s1);
    return -1;
}
}

static int sh_transpose(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    fj_Node *a = array_node(op, b->v[0]);
    if (!a)
        return -1;
    PyObject *axes = op->kind == FJ_OP_ATTR ? NULL : b->v[1];
    out->ndim = a->ndim;
    if (!axes || axes == Py_None) {
        for (int i = 0; i < a->ndim; i++)
            out->shape[i] = a->shape[a->ndim - 1 - i];
        return 0;
    }
    npy_intp perm[FJ_MAX_NDIM];
    int n;
    unsigned char seen[FJ_MAX_NDIM] = {0};
    if (int_seq(op, axes, "axes", perm, &n) < 0)
        return -1;
    if (n != a->ndim) {
        PyErr_Format(PyExc_ValueError, "%s: axes don't match array", QN(op));
        return -1;
    }
    for (int i = 0; i < n; i++) {
        npy_intp v = perm[i];
        if (v < -n || v >= n)
            return fj_ops_axis_error("%s: axis %zd is out of bounds for array of dimension %d", QN(op),
                                     (Py_ssize_t)v, n);
        if (v < 0)
            v += n;
        if (seen[v]) {
            PyErr_Format(PyExc_ValueError, "%s: repeated axis in transpose", QN(op));
            return -1;
        }
        seen[v] = 1;
        out->shape[i] = a->shape[v];
    }
    return 0;
}

static int sh_swapaxes(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    fj_Node *a = array_node(op, b->v[0]);
    int x, y;
    if (!a)
        return -1;
    if (!b->v[1] || !b->v[2]) {
        PyErr_Format(PyExc_TypeError, "%s: needs axis1 and axis2", QN(op));
        return -1;
    }
    if (norm_axis(op, b->v[1], a->ndim, &x) < 0 || norm_axis(op, b->v[2], a->ndim, &y) < 0)
        return -1;
    out->ndim = a->ndim;
    memcpy(out->shape, a->shape, sizeof(npy_intp) * (size_t)a->ndim);
    out->shape[x] = a->shape[y];
    out->shape[y] = a->shape[x];
    return 0;
}

static int sh_expand_dims(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    fj_Node *a = array_node(op, b->v[0]);
    if (!a)
        return -1;
    if (!b->v[1]) {
        PyErr_Format(PyExc_TypeError, "%s: missing the axis argument", QN(op));
        return -1;
    }
    PyObject *axis = b->v[1];
    Py_ssize_t na = PyTuple_Check(axis) || PyList_Check(axis) ? PySequence_Fast_GET_SIZE(axis) : 1;
    int ond = a->ndim + (int)na;
    unsigned char mask[FJ_MAX_NDIM];
    if (too_many_dims(op, ond) < 0 || axis_mask(op, axis, ond, 1, mask) < 0)
        return -1;
    for (int i = 0, j = 0; i < ond; i++)
        out->shape[i] = mask[i] ? 1 : a->shape[j++];
    out->ndim = ond;
    return 0;
}

static int sh_squeeze(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    fj_Node *a = array_node(op, b->v[0]);
    unsigned char mask[FJ_MAX_NDIM];
    if (!a)
        return -1;
    if (!b->v[1] || b->v[1] == Py_None) {
        for (int i = 0; i < a->ndim; i++)
            mask[i] = a->shape[i] == 1;
    } else {
        if (axis_mask(op, b->v[1], a->ndim, 1, mask) < 0)
            return -1;
        for (int i = 0; i < a->ndim; i++) {
            if (mask[i] && a->shape[i] != 1) {
                PyErr_Format(PyExc_ValueError,
                             "%s: cannot select an axis to squeeze out which has size not equal to one", QN(op));
                return -1;
            }
        }
    }
    out->ndim = 0;
    for (int i = 0; i < a->ndim; i++)
        if (!mask[i])
            out->shape[out->ndim++] = a->shape[i];
    return 0;
}

/* The arrays of concatenate/stack: a tuple or list of nodes (arrays, NumPy
   or Python scalars) and scalar constants.  Sets *n; 0 or -1. */
static int seq_items(const fj_OpDef *op, PyObject *seq, Py_ssize_t *n)
{
    if (!seq || !(PyTuple_Check(seq) || PyList_Check(seq))) {
        PyErr_Format(PyExc_TypeError, "%s: expected a tuple or list of arrays", QN(op));
        return -1;
    }
    *n = PySequence_Fast_GET_SIZE(seq);
    if (*n == 0) {
        PyErr_Format(PyExc_ValueError, "%s: need at least one array to %s", QN(op),
                     op->shape_rule == FJ_SH_STACK ? "stack" : "concatenate");
        return -1;
    }
    return 0;
}

static int sh_concatenate(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    Py_ssize_t n;
    int nd, fnd;
    npy_intp sh[FJ_MAX_NDIM], fsh[FJ_MAX_NDIM];
    if (seq_items(op, b->v[0], &n) < 0)
        return -1;
    if (b->v[1] == Py_None) { /* flatten everything */
        npy_intp total = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (operand_shape(op, PySequence_Fast_GET_ITEM(b->v[0], i), &nd, sh) < 0)
                return -1;
            npy_intp s = 1;
            for (int d = 0; d < nd; d++)
                s *= sh[d];
            total += s;
        }
        out->ndim = 1;
        out->shape[0] = total;
        return 0;
    }
    int axis = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (operand_shape(op, PySequence_Fast_GET_ITEM(b->v[0], i), &nd, sh) < 0)
            return -1;
        if (nd == 0) {
            PyErr_Format(PyExc_ValueError, "%s: zero-dimensional arrays cannot be concatenated", QN(op));
            return -1;
        }
    }
    if (operand_shape(op, PySequence_Fast_GET_ITEM(b->v[0], 0), &fnd, fsh) < 0)
        return -1;
    if (b->v[1] && norm_axis(op, b->v[1], fnd, &axis) < 0)
        return -1;
    out->ndim = fnd;
    memcpy(out->shape, fsh, sizeof(npy_intp) * (size_t)fnd);
    for (Py_ssize_t i = 1; i < n; i++) {
        if (operand_shape(op, PySequence_Fast_GET_ITEM(b->v[0], i), &nd, sh) < 0)
            return -1;
        if (nd != fnd) {
            PyErr_Format(PyExc_ValueError,
                         "%s: all the input arrays must have same number of dimensions, but the array at index 0 "
                         "has %d dimension(s) and the array at index %zd has %d dimension(s)",
                         QN(op), fnd, i, nd);
            return -1;
        }
        for (int d = 0; d < nd; d++) {
            if (d != axis && sh[d] != fsh[d]) {
                PyErr_Format(PyExc_ValueError,
                             "%s: all the input array dimensions except for the concatenation axis must match "
                             "exactly, but along dimension %d, the array at index 0 has size %zd and the array "
                             "at index %zd has size %zd",
                             QN(op), d, (Py_ssize_t)fsh[d], i, (Py_ssize_t)sh[d]);
                return -1;
            }
        }
        out->shape[axis] += sh[axis];
    }
    return 0;
}

static int sh_stack(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    Py_ssize_t n;
    int axis = 0, nd, fnd;
    npy_intp sh[FJ_MAX_NDIM], fsh[FJ_MAX_NDIM];
    if (seq_items(op, b->v[0], &n) < 0)
        return -1;
    if (operand_shape(op, PySequence_Fast_GET_ITEM(b->v[0], 0), &fnd, fsh) < 0)
        return -1;
    for (Py_ssize_t i = 1; i < n; i++) {
        if (operand_shape(op, PySequence_Fast_GET_ITEM(b->v[0], i), &nd, sh) < 0)
            return -1;
        if (nd != fnd || memcmp(sh, fsh, sizeof(npy_intp) * (size_t)fnd) != 0) {
            PyErr_Format(PyExc_ValueError, "%s: all input arrays must have the same shape", QN(op));
            return -1;
        }
    }
    if (too_many_dims(op, fnd + 1) < 0)
        return -1;
    if (b->v[1] && norm_axis(op, b->v[1], fnd + 1, &axis) < 0)
        return -1;
    out->ndim = fnd + 1;
    for (int i = 0, j = 0; i < out->ndim; i++)
        out->shape[i] = i == axis ? (npy_intp)n : fsh[j++];
    return 0;
}

static int sh_broadcast_to(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    npy_intp dims[FJ_MAX_NDIM];
    int n;
    fj_Node *a = array_and_shape(op, b, dims, &n);
    if (!a)
        return -1;
    for (int i = 0; i < n; i++) {
        if (dims[i] < 0) {
            PyErr_Format(PyExc_ValueError, "%s: all elements of broadcast shape must be non-negative", QN(op));
            return -1;
        }
    }
    if (a->ndim > n) {
        PyErr_Format(PyExc_ValueError,
                     "%s: input operand has more dimensions than allowed by the axis remapping", QN(op));
        return -1;
    }
    for (int i = 0; i < a->ndim; i++) {
        npy_intp s = a->shape[i], t = dims[n - a->ndim + i];
        if (s != t && s != 1)
            return shapes_error(op,
                                "%s: operands could not be broadcast together with remapped shapes "
                                "[original->remapped]: %s and requested shape %s",
                                a->ndim, a->shape, n, dims);
    }
    out->ndim = n;
    memcpy(out->shape, dims, sizeof(npy_intp) * (size_t)n);
    return 0;
}

static int sh_same(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    if (!b->v[0]) {
        PyErr_Format(PyExc_TypeError, "%s: missing the array argument", QN(op));
        return -1;
    }
    return operand_shape(op, b->v[0], &out->ndim, out->shape);
}

static int is_int_index(PyObject *o)
{
    return !PyBool_Check(o) && (PyLong_Check(o) || PyArray_IsScalar(o, Integer));
}

/* Kinds of index items. */
enum { IX_INT = 1, IX_SLICE, IX_NONE, IX_ELLIPSIS, IX_ARRAY };

/* One index item classified: its kind, for IX_INT its value when known
   ('known'), for IX_ARRAY its shape, and the constant's values when the
   array is a constant list ('values', a new reference). */
typedef struct {
    int kind, known, nd;
    Py_ssize_t value;
    npy_intp sh[FJ_MAX_NDIM];
    PyObject *values;
} IndexItem;

static int classify_index(const fj_OpDef *op, PyObject *it, IndexItem *ix)
{
    memset(ix, 0, sizeof *ix);
    if (is_int_index(it)) {
        ix->kind = IX_INT;
        ix->known = 1;
        ix->value = PyNumber_AsSsize_t(it, PyExc_IndexError);
        return ix->value == -1 && PyErr_Occurred() ? -1 : 0;
    }
    if (PySlice_Check(it)) {
        ix->kind = IX_SLICE;
        return 0;
    }
    if (it == Py_None || it == Py_Ellipsis) {
        ix->kind = it == Py_None ? IX_NONE : IX_ELLIPSIS;
        return 0;
    }
    if (fj_Node_Check(it)) {
        fj_Node *n = (fj_Node *)it;
        if (n->vkind == FJ_VAL_PYSCALAR) {
            if (n->example != NULL && PyLong_CheckExact(n->example)) {
                ix->kind = IX_INT; /* a symbolic int: its value is the graph's */
                return 0;
            }
        } else if ((n->vkind == FJ_VAL_ARRAY || n->vkind == FJ_VAL_NPSCALAR) && n->dtype != NULL) {
            int tn = n->dtype->type_num;
            if (tn == NPY_BOOL) {
                PyErr_Format(PyExc_TypeError,
                             "%s: a boolean mask index (x[mask]) selects a number of items that depends on "
                             "the data: not traced", QN(op));
                return -1;
            }
            if (!PyTypeNum_ISINTEGER(tn)) {
                PyErr_Format(PyExc_IndexError,
                             "%s: arrays used as indices must be of integer (or boolean) type", QN(op));
                return -1;
            }
            if (n->vkind == FJ_VAL_NPSCALAR || n->ndim == 0) {
                ix->kind = IX_INT; /* 0-d integer arrays index as integers */
                return 0;
            }
            ix->kind = IX_ARRAY;
            ix->nd = n->ndim;
            memcpy(ix->sh, n->shape, sizeof(npy_intp) * (size_t)n->ndim);
            return 0;
        }
    } else if (PyList_CheckExact(it) || PyTuple_CheckExact(it)) {
        int tn = -1;
        int r = const_seq_shape(op, it, &ix->nd, ix->sh, &tn);
        if (r < 0)
            return -1;
        if (r == 0 && PyTypeNum_ISINTEGER(tn) && ix->nd > 0) {
            ix->kind = IX_ARRAY;
            ix->values = PyArray_FromAny(it, PyArray_DescrFromType(NPY_INTP), 0, 0, NPY_ARRAY_CARRAY, NULL);
            return ix->values ? 0 : -1;
        }
    }
    PyErr_Format(PyExc_TypeError,
                 "%s: index of type %.100s is not supported (ints, slices, None, Ellipsis and integer "
                 "arrays)", QN(op), fj_Node_Check(it) ? "Python scalar" : Py_TYPE(it)->tp_name);
    return -1;
}

static int index_out_of_bounds(const fj_OpDef *op, Py_ssize_t v, int dim, npy_intp size)
{
    PyErr_Format(PyExc_IndexError, "%s: index %zd is out of bounds for axis %d with size %zd", QN(op), v, dim,
                 (Py_ssize_t)size);
    return -1;
}

/*
** a[mask] with a boolean array 'm' (the whole index): m's dims must be a's
** leading ones, as NumPy checks; the result is (n, *a.shape[m.ndim:]) where
** n, the number of true items, depends on the data (FJ_DATADEP_SIZE stands
** for it; the tracer gives the node its symbol, trace_dims.c).
*/
static int mask_selection(const fj_OpDef *op, fj_Node *a, fj_Node *m, fj_Meta *out)
{
    if (a->vkind != FJ_VAL_ARRAY || m->vkind != FJ_VAL_ARRAY || m->ndim < 1 || m->ndim > a->ndim) {
        PyErr_Format(PyExc_TypeError,
                     "%s: a boolean mask index is traced only as an array of at least one dim and at most "
                     "the indexed array's", QN(op));
        return -1;
    }
    for (int d = 0; d < m->ndim; d++)
        if (m->shape[d] != a->shape[d]) {
            PyErr_Format(PyExc_IndexError,
                         "%s: boolean index did not match indexed array along axis %d; size of axis is %zd "
                         "but size of corresponding boolean axis is %zd",
                         QN(op), d, (Py_ssize_t)a->shape[d], (Py_ssize_t)m->shape[d]);
            return -1;
        }
    if (too_many_dims(op, 1 + a->ndim - m->ndim) < 0)
        return -1;
    out->vkind = FJ_VAL_ARRAY;
    out->ndim = 1 + a->ndim - m->ndim;
    out->shape[0] = FJ_DATADEP_SIZE;
    memcpy(out->shape + 1, a->shape + m->ndim, sizeof(npy_intp) * (size_t)(a->ndim - m->ndim));
    return 0;
}

static int is_mask_node(PyObject *it)
{
    return fj_Node_Check(it) && ((fj_Node *)it)->dtype != NULL && ((fj_Node *)it)->dtype->type_num == NPY_BOOL &&
           ((fj_Node *)it)->vkind != FJ_VAL_PYSCALAR;
}

/*
** Indexing: ints, slices, None, Ellipsis and integer arrays (nodes or
** constant lists), alone or in tuples, as NumPy's mapping.c does it.  With
** an integer array present, every int and array index is "advanced": their
** shapes broadcast together, and the broadcast shape takes the place of the
** first of them when they are all next to each other, else it comes first.
** Bounds of constant indices are checked here; an array's values are data,
** and NumPy checks them when the graph runs.  A boolean array is traced as
** the whole index (mask_selection); in a tuple it is refused.
*/
/* PySlice_Unpack of a slice whose bounds may be symbolic ints (Python-scalar
   nodes, x[:n]: their trace-time values).  0 or -1. */
static int unpack_slice(PyObject *o, Py_ssize_t *start, Py_ssize_t *stop, Py_ssize_t *step)
{
    PySliceObject *sl = (PySliceObject *)o;
    PyObject *p[3] = {sl->start, sl->stop, sl->step};
    int nodes = 0;
    for (int i = 0; i < 3; i++)
        if (fj_Node_Check(p[i])) {
            fj_Node *n = (fj_Node *)p[i];
            if (n->vkind != FJ_VAL_PYSCALAR || n->example == NULL) {
                PyErr_Format(PyExc_TypeError, "framejit: slice bound %U is not a Python int", n->name);
                return -1;
            }
            p[i] = n->example;
            nodes = 1;
        }
    if (!nodes)
        return PySlice_Unpack(o, start, stop, step);
    PyObject *t = PySlice_New(p[0], p[1], p[2]);
    int r = t ? PySlice_Unpack(t, start, stop, step) : -1;
    Py_XDECREF(t);
    return r;
}

static int sh_getitem(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    fj_Node *a = array_node(op, b->v[0]);
    PyObject *index = b->v[1];
    IndexItem ix[FJ_MAX_NDIM + 1];
    int r = -1;
    if (!a)
        return -1;
    if (!index) {
        PyErr_Format(PyExc_TypeError, "%s: missing the index", QN(op));
        return -1;
    }
    if (is_mask_node(index))
        return mask_selection(op, a, (fj_Node *)index, out);
    PyObject *const *items = &index;
    Py_ssize_t n = 1;
    if (PyTuple_Check(index)) {
        items = &PyTuple_GET_ITEM(index, 0);
        n = PyTuple_GET_SIZE(index);
    }
    if (n > FJ_MAX_NDIM) {
        PyErr_Format(PyExc_IndexError, "%s: too many indices for array: array is %d-dimensional, but %zd were "
                     "indexed", QN(op), a->ndim, n);
        return -1;
    }
    Py_ssize_t done = 0;
    int consumed = 0, ellipses = 0, only_ints = 1, scalar = a->vkind == FJ_VAL_NPSCALAR;
    int arrays = 0, first_adv = -1, last_adv = -1, adjacent = 1;
    int bnd = 0;
    npy_intp bsh[FJ_MAX_NDIM];
    for (; done < n; done++) {
        if (classify_index(op, items[done], &ix[done]) < 0)
            goto out;
        int k = ix[done].kind;
        if (k == IX_INT || k == IX_SLICE || k == IX_ARRAY)
            consumed++;
        if (k != IX_INT)
            only_ints = 0;
        if (k == IX_ELLIPSIS && ++ellipses > 1) {
            PyErr_Format(PyExc_IndexError, "%s: an index can only have a single ellipsis ('...')", QN(op));
            done++;
            goto out;
        }
        if (k == IX_ARRAY) {
            arrays++;
            if (broadcast_into(op, &bnd, bsh, ix[done].nd, ix[done].sh) < 0) {
                done++;
                goto out;
            }
        }
    }
    if (arrays) { /* ints are advanced too: are the advanced items next to each other? */
        for (Py_ssize_t i = 0; i < n; i++) {
            if (ix[i].kind != IX_INT && ix[i].kind != IX_ARRAY)
                continue;
            if (first_adv < 0)
                first_adv = (int)i;
            else if (last_adv != (int)i - 1)
                adjacent = 0;
            last_adv = (int)i;
        }
    }
    if (scalar && consumed > 0) {
        PyErr_Format(PyExc_IndexError, "%s: invalid index to scalar variable.", QN(op));
        goto out;
    }
    if (consumed > a->ndim) {
        PyErr_Format(PyExc_IndexError, "%s: too many indices for array: array is %d-dimensional, but %d were indexed",
                     QN(op), a->ndim, consumed);
        goto out;
    }
    int dim = 0, placed = 0;
    out->ndim = 0;
    if (arrays && !adjacent) {
        out->ndim = bnd;
        memcpy(out->shape, bsh, sizeof(npy_intp) * (size_t)bnd);
        placed = 1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        IndexItem *it = &ix[i];
        if (it->kind == IX_NONE) {
            if (too_many_dims(op, out->ndim + 1) < 0)
                goto out;
            out->shape[out->ndim++] = 1;
        } else if (it->kind == IX_ELLIPSIS) {
            int skip = a->ndim - consumed;
            if (too_many_dims(op, out->ndim + skip) < 0)
                goto out;
            for (int k = 0; k < skip; k++)
                out->shape[out->ndim++] = a->shape[dim++];
        } else if (it->kind == IX_SLICE) {
            Py_ssize_t start, stop, step;
            if (unpack_slice(items[i], &start, &stop, &step) < 0)
                goto out;
            if (too_many_dims(op, out->ndim + 1) < 0)
                goto out;
            out->shape[out->ndim++] = PySlice_AdjustIndices(a->shape[dim++], &start, &stop, step);
        } else {
            npy_intp size = a->shape[dim];
            if (it->kind == IX_INT && it->known && (it->value < -size || it->value >= size)) {
                index_out_of_bounds(op, it->value, dim, size);
                goto out;
            }
            if (it->values != NULL) { /* a constant list: its values are known */
                npy_intp *v = (npy_intp *)PyArray_DATA((PyArrayObject *)it->values);
                for (npy_intp k = 0, m = PyArray_SIZE((PyArrayObject *)it->values); k < m; k++) {
                    if (v[k] < -size || v[k] >= size) {
                        index_out_of_bounds(op, (Py_ssize_t)v[k], dim, size);
                        goto out;
                    }
                }
            }
            dim++;
            if (arrays && !placed) {
                if (too_many_dims(op, out->ndim + bnd) < 0)
                    goto out;
                memcpy(out->shape + out->ndim, bsh, sizeof(npy_intp) * (size_t)bnd);
                out->ndim += bnd;
                placed = 1;
            }
        }
    }
    for (; dim < a->ndim; dim++) { /* trailing dims not indexed */
        if (too_many_dims(op, out->ndim + 1) < 0)
            goto out;
        out->shape[out->ndim++] = a->shape[dim];
    }
    out->vkind = !arrays && only_ints && consumed == a->ndim ? FJ_VAL_NPSCALAR : FJ_VAL_ARRAY;
    r = 0;
out:
    for (Py_ssize_t i = 0; i < done && i < n; i++)
        Py_XDECREF(ix[i].values);
    return r;
}

/* ---- flattening, cumulative ops, sorting -------------------------------- */

static npy_intp shape_size(int nd, const npy_intp *sh)
{
    npy_intp size = 1;
    for (int i = 0; i < nd; i++)
        size *= sh[i];
    return size;
}

/* ravel, flatten: (size,); also for NumPy scalars and 0-d arrays. */
static int sh_ravel(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    int nd;
    npy_intp sh[FJ_MAX_NDIM];
    if (!b->v[0] || operand_shape(op, b->v[0], &nd, sh) < 0) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "%s: missing the array argument", QN(op));
        return -1;
    }
    out->ndim = 1;
    out->shape[0] = shape_size(nd, sh);
    return 0;
}

/* The shape of the op's first argument, the array (TypeError when it is missing).  0 or -1. */
static int first_shape(const fj_OpDef *op, fj_Bound *b, int *nd, npy_intp *sh)
{
    if (!b->v[0]) {
        PyErr_Format(PyExc_TypeError, "%s: missing the array argument", QN(op));
        return -1;
    }
    return operand_shape(op, b->v[0], nd, sh);
}

/*
** cumsum/cumprod (rule FJ_SH_CUMULATIVE, default axis None), sort
** (FJ_SH_SORT, default -1) and argsort (FJ_SH_ARGSORT, default -1): axis None
** flattens; an int axis keeps the shape.  cumsum and argsort take a 0-d
** input as 1-d (NumPy ravels it first), sort does not.
*/
static int sh_axis_keep(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    int nd, ax, ia = fj_ops_param_index(op, "axis");
    npy_intp sh[FJ_MAX_NDIM];
    if (first_shape(op, b, &nd, sh) < 0)
        return -1;
    PyObject *axis = ia >= 0 ? b->v[ia] : NULL;
    if (axis == Py_None || (!axis && op->shape_rule == FJ_SH_CUMULATIVE)) {
        out->ndim = 1;
        out->shape[0] = shape_size(nd, sh);
        return 0;
    }
    if (nd == 0 && op->shape_rule != FJ_SH_SORT) { /* NumPy works on the 0-d input raveled */
        nd = 1;
        sh[0] = 1;
    }
    if (axis) {
        if (norm_axis(op, axis, nd, &ax) < 0)
            return -1;
    } else if (nd == 0) {
        return fj_ops_axis_error("%s: axis -1 is out of bounds for array of dimension 0", QN(op));
    }
    out->ndim = nd;
    memcpy(out->shape, sh, sizeof(npy_intp) * (size_t)nd);
    return 0;
}

/* ---- diff, tile, repeat, average ---------------------------------------- */

/* A constant int (not a bool, not a traced value) into *v.  0 or -1. */
static int const_int(const fj_OpDef *op, PyObject *o, const char *what, Py_ssize_t *v)
{
    if (fj_Node_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a constant, not a traced value", QN(op), what);
        return -1;
    }
    return int_arg(op, o, "", v);
}

/*
** diff(a, n=1, axis=-1, prepend, append): prepend and append (a scalar, or
** an array with a's dims but along the axis) join a along the axis, then
** each of the n differences shortens it by one, down to 0.  n=0 returns a
** itself (an alias the graph would not know): refused, as negative n.
*/
static int sh_diff(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    int nd, ax = 0;
    npy_intp sh[FJ_MAX_NDIM];
    Py_ssize_t n = 1;
    if (!b->v[0] || operand_shape(op, b->v[0], &nd, sh) < 0) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "%s: missing the array argument", QN(op));
        return -1;
    }
    if (b->v[1] && const_int(op, b->v[1], "n", &n) < 0)
        return -1;
    if (n <= 0) {
        PyErr_Format(n < 0 ? PyExc_ValueError : PyExc_TypeError,
                     n < 0 ? "%s: order must be non-negative but got %zd"
                           : "%s: n=%zd returns the input itself: not traced", QN(op), n);
        return -1;
    }
    if (nd == 0) {
        PyErr_Format(PyExc_ValueError, "%s: diff requires input that is at least one dimensional", QN(op));
        return -1;
    }
    if (b->v[2]) {
        if (norm_axis(op, b->v[2], nd, &ax) < 0)
            return -1;
    } else
        ax = nd - 1;
    npy_intp len = sh[ax];
    for (int k = 3; k <= 4; k++) {
        int end;
        npy_intp esh[FJ_MAX_NDIM];
        if (!b->v[k])
            continue;
        if (operand_shape(op, b->v[k], &end, esh) < 0)
            return -1;
        if (end == 0) {
            len += 1;
            continue;
        }
        int ok = end == nd;
        for (int d = 0; ok && d < nd; d++)
            ok = d == ax || esh[d] == sh[d];
        if (!ok)
            return shapes_error(op, "%s: prepend/append of shape %s does not join an array of shape %s "
                                "along the axis", end, esh, nd, sh);
        len += esh[ax];
    }
    out->ndim = nd;
    memcpy(out->shape, sh, sizeof(npy_intp) * (size_t)nd);
    out->shape[ax] = len > n ? len - n : 0;
    return 0;
}

/* tile(A, reps): A's shape and reps, each padded with leading ones to the
   longer, multiplied.  reps: a non-negative int or a tuple/list of them. */
static int sh_tile(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    int nd, d;
    npy_intp sh[FJ_MAX_NDIM], reps[FJ_MAX_NDIM];
    if (!b->v[0] || !b->v[1] || operand_shape(op, b->v[0], &nd, sh) < 0) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "%s: needs A and reps", QN(op));
        return -1;
    }
    PyObject *r = b->v[1];
    if (PyTuple_CheckExact(r) || PyList_CheckExact(r)) {
        Py_ssize_t m = PySequence_Fast_GET_SIZE(r);
        if (m > FJ_MAX_NDIM)
            return too_many_dims(op, (int)m);
        d = (int)m;
        for (int i = 0; i < d; i++) {
            Py_ssize_t v;
            if (const_int(op, PySequence_Fast_GET_ITEM(r, i), "reps", &v) < 0)
                return -1;
            reps[i] = v;
        }
    } else {
        Py_ssize_t v;
        if (const_int(op, r, "reps", &v) < 0)
            return -1;
        d = 1;
        reps[0] = v;
    }
    for (int i = 0; i < d; i++) {
        if (reps[i] < 0) {
            PyErr_Format(PyExc_ValueError, "%s: negative dimensions are not allowed", QN(op));
            return -1;
        }
    }
    int D = d > nd ? d : nd;
    out->ndim = D;
    for (int i = 0; i < D; i++) {
        npy_intp s = i - (D - nd) >= 0 ? sh[i - (D - nd)] : 1;
        npy_intp t = i - (D - d) >= 0 ? reps[i - (D - d)] : 1;
        out->shape[i] = s * t;
    }
    return 0;
}

/* repeat(a, repeats, axis=None): axis None repeats the flattened items;
   'repeats' is a non-negative int, or a constant sequence of one count or
   of one per item along the axis. */
static int sh_repeat(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    int nd, ax = -1;
    npy_intp sh[FJ_MAX_NDIM];
    if (!b->v[0] || !b->v[1] || operand_shape(op, b->v[0], &nd, sh) < 0) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "%s: needs the array and repeats", QN(op));
        return -1;
    }
    if (b->v[2] && b->v[2] != Py_None && norm_axis(op, b->v[2], nd, &ax) < 0)
        return -1;
    npy_intp len = ax < 0 ? shape_size(nd, sh) : sh[ax], total = 0;
    PyObject *r = b->v[1];
    if (PyTuple_CheckExact(r) || PyList_CheckExact(r)) {
        Py_ssize_t m = PySequence_Fast_GET_SIZE(r);
        if (m != 1 && m != len) {
            PyErr_Format(PyExc_ValueError, "%s: operands could not be broadcast together with shape (%zd,) (%zd,)",
                         QN(op), (Py_ssize_t)len, m);
            return -1;
        }
        for (Py_ssize_t i = 0; i < m; i++) {
            Py_ssize_t v;
            if (const_int(op, PySequence_Fast_GET_ITEM(r, i), "repeats", &v) < 0)
                return -1;
            if (v < 0) {
                PyErr_Format(PyExc_ValueError, "%s: repeats may not contain negative values.", QN(op));
                return -1;
            }
            total += m == 1 ? v * len : v;
        }
    } else {
        Py_ssize_t v;
        if (const_int(op, r, "repeats", &v) < 0)
            return -1;
        if (v < 0) {
            PyErr_Format(PyExc_ValueError, "%s: repeats may not contain negative values.", QN(op));
            return -1;
        }
        total = v * len;
    }
    if (ax < 0) {
        out->ndim = 1;
        out->shape[0] = total;
        return 0;
    }
    out->ndim = nd;
    memcpy(out->shape, sh, sizeof(npy_intp) * (size_t)nd);
    out->shape[ax] = total;
    return 0;
}

/* average(a, axis, weights, keepdims): a reduction; weights have a's shape,
   or are 1-d along a single int axis. */
static int sh_average(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    if (sh_reduce(op, b, out, 1) < 0)
        return -1;
    PyObject *w = b->v[2];
    if (w == NULL || w == Py_None)
        return 0;
    int nd, wnd;
    npy_intp sh[FJ_MAX_NDIM], wsh[FJ_MAX_NDIM];
    if (operand_shape(op, b->v[0], &nd, sh) < 0 || operand_shape(op, w, &wnd, wsh) < 0)
        return -1;
    if (wnd == nd && memcmp(wsh, sh, sizeof(npy_intp) * (size_t)nd) == 0)
        return 0;
    int ax;
    PyObject *axis = b->v[1];
    if (axis == NULL || axis == Py_None) {
        PyErr_Format(PyExc_TypeError, "%s: Axis must be specified when shapes of a and weights differ.", QN(op));
        return -1;
    }
    if (wnd != 1 || !PyIndex_Check(axis) || norm_axis(op, axis, nd, &ax) < 0 || wsh[0] != sh[ax]) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "%s: Shape of weights must be consistent with shape of a along "
                         "specified axis.", QN(op));
        return -1;
    }
    return 0;
}

/* ---- array creation ----------------------------------------------------- */

/* A non-negative size from an int constant (not bool, not a traced value). */
static int size_arg(const fj_OpDef *op, PyObject *o, const char *what, npy_intp *v)
{
    if (fj_Node_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a constant, not a traced value", QN(op), what);
        return -1;
    }
    Py_ssize_t x;
    if (int_arg(op, o, "", &x) < 0)
        return -1;
    *v = x;
    return 0;
}

/* A shape argument: an int or a sequence of non-negative ints. */
static int shape_arg(const fj_OpDef *op, PyObject *o, fj_Meta *out)
{
    o = int_example(o);
    if (fj_Node_Check(o) || ((PyTuple_Check(o) || PyList_Check(o)) && PySequence_Fast_GET_SIZE(o) > 0 &&
                             fj_Node_Check(int_example(PySequence_Fast_GET_ITEM(o, 0))))) {
        PyErr_Format(PyExc_TypeError, "%s: the shape must be constant, not a traced value", QN(op));
        return -1;
    }
    if (int_seq(op, o, "shape", out->shape, &out->ndim) < 0)
        return -1;
    for (int i = 0; i < out->ndim; i++) {
        if (out->shape[i] < 0) {
            PyErr_Format(PyExc_ValueError, "%s: negative dimensions are not allowed", QN(op));
            return -1;
        }
    }
    return 0;
}

/* order= of zeros/ones/empty/full/eye: only 'C' (or absent) is traced. */
static int order_c_only(const fj_OpDef *op, fj_Bound *b)
{
    int io = fj_ops_param_index(op, "order");
    PyObject *o = io >= 0 ? b->v[io] : NULL;
    if (!o || (PyUnicode_Check(o) && PyUnicode_CompareWithASCIIString(o, "C") == 0))
        return 0;
    PyErr_Format(PyExc_TypeError, "%s: order=%R is not supported by framejit (only 'C')", QN(op), o);
    return -1;
}

/* fill_value of full/full_like: a scalar or a traced value that broadcasts
   to the result's shape (NumPy copies it in with copyto). */
static int check_fill(const fj_OpDef *op, PyObject *fill, const fj_Meta *out)
{
    int nd;
    npy_intp sh[FJ_MAX_NDIM];
    if (!fill) {
        PyErr_Format(PyExc_TypeError, "%s: missing the fill_value argument", QN(op));
        return -1;
    }
    if (!fj_Node_Check(fill) && !is_scalar_const(fill) && !PyBool_Check(fill)) {
        PyErr_Format(PyExc_TypeError, "%s: fill_value must be a scalar or a traced array, not %.100s", QN(op),
                     Py_TYPE(fill)->tp_name);
        return -1;
    }
    if (operand_shape(op, fill, &nd, sh) < 0)
        return -1;
    int ok = nd <= out->ndim;
    for (int i = 0; ok && i < nd; i++) {
        npy_intp t = out->shape[out->ndim - nd + i];
        ok = sh[i] == t || sh[i] == 1;
    }
    if (!ok)
        return shapes_error(op, "%s: could not broadcast input array from shape %s into shape %s", nd,
                            sh, out->ndim, out->shape);
    return 0;
}

/* zeros, ones, empty (shape, dtype, order) and full (shape, fill_value, ...). */
static int sh_create(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    if (!b->v[0]) {
        PyErr_Format(PyExc_TypeError, "%s: missing the shape argument", QN(op));
        return -1;
    }
    if (shape_arg(op, b->v[0], out) < 0 || order_c_only(op, b) < 0)
        return -1;
    int ifill = fj_ops_param_index(op, "fill_value");
    return ifill >= 0 ? check_fill(op, b->v[ifill], out) : 0;
}

/* np.linalg's rows.  Stacks of matrices are (..., M, N); what NumPy would
   refuse from the shapes (not square, not matching) is refused here. */
static int sh_linalg(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    const char *f = op->attr;
    int nd = 0;
    npy_intp sh[FJ_MAX_NDIM];
    if (b->v[0] == NULL || operand_shape(op, b->v[0], &nd, sh) < 0)
        return b->v[0] == NULL ? (PyErr_Format(PyExc_TypeError, "%s: missing the array", QN(op)), -1) : -1;
    for (int i = 0; i < nd; i++)
        if (sh[i] == 0) /* NumPy's empty paths keep other dtypes than the stand-in run finds */
            return PyErr_Format(PyExc_TypeError, "%s of an empty array is not traced", QN(op)), -1;
    if (strcmp(f, "norm") == 0) {
        /* the 2-norm of the flattened array, or (ord given) a vector's or a matrix's
           norm; an int axis: vector norms along it */
        PyObject *ord = b->v[1], *axis = b->v[2], *keep = b->v[3];
        int keepdims = keep != NULL && keep != Py_None && PyObject_IsTrue(keep) > 0;
        if (keep != NULL && keep != Py_None && !PyBool_Check(keep))
            return PyErr_Format(PyExc_TypeError, "%s: keepdims must be a bool", QN(op)), -1;
        if (ord != NULL && ord != Py_None && !(PyLong_CheckExact(ord) || PyFloat_CheckExact(ord) ||
                                               PyUnicode_Check(ord)))
            return PyErr_Format(PyExc_TypeError, "%s: ord must be a constant", QN(op)), -1;
        if (axis == NULL || axis == Py_None) {
            if (ord != NULL && ord != Py_None && nd != 1 && nd != 2)
                return PyErr_Format(PyExc_TypeError, "%s: ord on a %d-d array raises", QN(op), nd), -1;
            out->ndim = keepdims ? nd : 0;
            for (int i = 0; i < out->ndim; i++)
                out->shape[i] = 1;
            return 0;
        }
        Py_ssize_t ax;
        if (int_arg(op, axis, "axis", &ax) < 0)
            return -1;
        if (ax < -nd || ax >= nd)
            return fj_ops_axis_error("axis %zd is out of bounds for array of dimension %d", ax, nd);
        if (ax < 0)
            ax += nd;
        out->ndim = 0;
        for (int i = 0; i < nd; i++) {
            if (i == ax && !keepdims)
                continue;
            out->shape[out->ndim++] = i == ax ? 1 : sh[i];
        }
        return 0;
    }
    if (nd < 2)
        return PyErr_Format(PyExc_TypeError, "%s: %d-dimensional array given (at least two dimensions raise)", QN(op),
                            nd), -1;
    int square = sh[nd - 1] == sh[nd - 2];
    if (strcmp(f, "pinv") == 0) {
        memcpy(out->shape, sh, sizeof(npy_intp) * (size_t)nd);
        out->shape[nd - 2] = sh[nd - 1];
        out->shape[nd - 1] = sh[nd - 2];
        out->ndim = nd;
        return 0;
    }
    if (!square)
        return PyErr_Format(PyExc_TypeError, "%s: last 2 dimensions of the array must be square (it raises)", QN(op)),
               -1;
    if (strcmp(f, "det") == 0) {
        out->ndim = nd - 2;
        memcpy(out->shape, sh, sizeof(npy_intp) * (size_t)(nd - 2));
        return 0;
    }
    if (strcmp(f, "matrix_power") == 0) {
        Py_ssize_t n;
        if (b->v[1] == NULL || fj_Node_Check(b->v[1]) || int_arg(op, b->v[1], "n", &n) < 0)
            return PyErr_Occurred() ? -1 : (PyErr_Format(PyExc_TypeError, "%s: n must be a constant int", QN(op)), -1);
        if (n == 1) /* NumPy returns the argument itself: an alias the graph would not keep */
            return PyErr_Format(PyExc_TypeError, "%s with n=1 returns its argument itself", QN(op)), -1;
    }
    if (strcmp(f, "solve") == 0) {
        int bnd = 0;
        npy_intp bsh[FJ_MAX_NDIM];
        if (b->v[1] == NULL || operand_shape(op, b->v[1], &bnd, bsh) < 0)
            return b->v[1] == NULL ? (PyErr_Format(PyExc_TypeError, "%s: missing b", QN(op)), -1) : -1;
        npy_intp m = sh[nd - 1];
        if (bnd == 1) {
            /* b a vector (M,): the result (..., M) */
            if (bsh[0] != m)
                return PyErr_Format(PyExc_TypeError, "%s: b's length does not match a (it raises)", QN(op)), -1;
            out->ndim = nd - 1;
            memcpy(out->shape, sh, sizeof(npy_intp) * (size_t)(nd - 1));
            return 0;
        }
        if (bnd == nd - 1) /* NumPy 1.x reads it as a stack of vectors, 2.x as matrices */
            return PyErr_Format(PyExc_TypeError, "%s: b with one dimension fewer than a is not traced", QN(op)), -1;
        if (bnd < 2 || bsh[bnd - 2] != m)
            return PyErr_Format(PyExc_TypeError, "%s: b's shape does not match a (it raises)", QN(op)), -1;
        /* (..., M, K): the stacks broadcast */
        int ond = nd - 2;
        npy_intp osh[FJ_MAX_NDIM];
        memcpy(osh, sh, sizeof(npy_intp) * (size_t)ond);
        if (broadcast_into(op, &ond, osh, bnd - 2, bsh) < 0 || ond + 2 > FJ_MAX_NDIM)
            return -1;
        memcpy(out->shape, osh, sizeof(npy_intp) * (size_t)ond);
        out->shape[ond] = m;
        out->shape[ond + 1] = bsh[bnd - 1];
        out->ndim = ond + 2;
        return 0;
    }
    /* inv, matrix_power: the same shape */
    memcpy(out->shape, sh, sizeof(npy_intp) * (size_t)nd);
    out->ndim = nd;
    return 0;
}

/* np.random's legacy draws: an array of 'size' (rand and randn: of their
   dims), its parameters real number constants.  Without a size the result is
   a Python scalar, and array parameters broadcast: not traced. */
static int sh_random(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    int isz = fj_ops_param_index(op, "size");
    if (isz < 0) {
        /* rand(d0, d1, ...) */
        out->ndim = 0;
        for (int k = 0; k < 6 && b->v[k] != NULL; k++) {
            Py_ssize_t v;
            if (fj_Node_Check(b->v[k]) || int_arg(op, b->v[k], "a dimension", &v) < 0) {
                if (!PyErr_Occurred())
                    PyErr_Format(PyExc_TypeError, "%s: the dimensions must be constant", QN(op));
                return -1;
            }
            if (v < 0) {
                PyErr_Format(PyExc_ValueError, "%s: negative dimensions are not allowed", QN(op));
                return -1;
            }
            out->shape[out->ndim++] = v;
        }
    }
    else if (b->v[isz] == NULL || b->v[isz] == Py_None) {
        PyErr_Format(PyExc_TypeError, "%s without a size draws a Python scalar (not traced)", QN(op));
        return -1;
    }
    else if (shape_arg(op, b->v[isz], out) < 0)
        return -1;
    if (out->ndim == 0 && isz < 0) {
        PyErr_Format(PyExc_TypeError, "%s without dimensions draws a Python float (not traced)", QN(op));
        return -1;
    }
    for (int k = 0; k < FJ_OP_MAXPARAMS; k++) {
        PyObject *v = b->v[k];
        if (k == isz || v == NULL || v == Py_None || k == fj_ops_param_index(op, "dtype"))
            continue;
        if (k == 0 && (op->flags & FJ_OPF_GENERATOR))
            continue; /* the generator */
        if (isz >= 0 && !((PyLong_CheckExact(v) || PyFloat_CheckExact(v)) && !PyBool_Check(v))) {
            PyErr_Format(PyExc_TypeError, "%s: parameters that are not Python numbers are not traced", QN(op));
            return -1;
        }
    }
    return 0;
}

/* zeros_like & co: the prototype's shape (a traced value or a scalar
   constant), or the 'shape' argument. */
static int sh_like(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    int is = fj_ops_param_index(op, "shape"), ifill = fj_ops_param_index(op, "fill_value");
    if (!b->v[0]) {
        PyErr_Format(PyExc_TypeError, "%s: missing the prototype argument", QN(op));
        return -1;
    }
    if (!fj_Node_Check(b->v[0]) && !is_scalar_const(b->v[0]) && !PyBool_Check(b->v[0])) {
        PyErr_Format(PyExc_TypeError, "%s: the prototype must be a traced array or a scalar, not %.100s", QN(op),
                     Py_TYPE(b->v[0])->tp_name);
        return -1;
    }
    if (is >= 0 && b->v[is] && b->v[is] != Py_None) {
        if (shape_arg(op, b->v[is], out) < 0)
            return -1;
    } else if (operand_shape(op, b->v[0], &out->ndim, out->shape) < 0) {
        return -1;
    }
    return ifill >= 0 ? check_fill(op, b->v[ifill], out) : 0;
}

/* A start/stop/step of arange: a real number constant whose dtype does not
   depend on its value (ints within int64). */
static int arange_bound(const fj_OpDef *op, PyObject *o)
{
    if (fj_Node_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: bounds that are traced values give a data-dependent length", QN(op));
        return -1;
    }
    if (PyLong_Check(o) && !PyBool_Check(o)) {
        int overflow;
        (void)PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow) {
            PyErr_Format(PyExc_TypeError, "%s: integer bounds outside int64 are not traced", QN(op));
            return -1;
        }
        return 0;
    }
    if (PyBool_Check(o) || PyFloat_CheckExact(o) || PyArray_IsScalar(o, Integer) ||
        PyArray_IsScalar(o, Floating) || PyArray_IsScalar(o, Bool))
        return 0;
    PyErr_Format(PyExc_TypeError, "%s: bounds of type %.100s are not traced (real numbers only)", QN(op),
                 Py_TYPE(o)->tp_name);
    return -1;
}

/* arange: the length as NumPy computes it (ctors.c _calc_length), with the
   same Python arithmetic on the same constants:
   len = ceil((stop - start) / step), 0 when stop == start, 1 or 0 (by the
   sign) when the quotient underflows to zero. */
static int sh_arange(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    PyObject *start = b->v[0], *stop = b->v[1], *step = b->v[2];
    PyObject *zero = NULL, *one = NULL, *delta = NULL, *val = NULL;
    npy_intp len = 0;
    if (start == Py_None)
        start = NULL;
    if (stop == Py_None)
        stop = NULL;
    if (step == Py_None)
        step = NULL;
    /* a symbolic int (np.arange(n), n = x.shape[0]: trace_dims.c gives the
       length its symbol) by its value now */
    if (start)
        start = int_example(start);
    if (stop)
        stop = int_example(stop);
    if (step)
        step = int_example(step);
    if (!stop) {
        if (!start) {
            PyErr_Format(PyExc_TypeError, "%s: arange() requires stop to be specified.", QN(op));
            return -1;
        }
        stop = start;
        start = NULL;
    }
    if ((start && arange_bound(op, start) < 0) || arange_bound(op, stop) < 0 || (step && arange_bound(op, step) < 0))
        return -1;
    if (!(zero = PyLong_FromLong(0)) || !(one = PyLong_FromLong(1)))
        goto error;
    if (!(delta = PyNumber_Subtract(stop, start ? start : zero)))
        goto error;
    int nonzero = PyObject_RichCompareBool(delta, zero, Py_NE);
    if (nonzero < 0)
        goto error;
    val = PyNumber_TrueDivide(delta, step ? step : one);
    if (!nonzero) { /* an empty range, even with step 0 */
        PyErr_Clear();
        len = 0;
    } else {
        if (!val) {
            if (PyErr_ExceptionMatches(PyExc_ZeroDivisionError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_ZeroDivisionError, "%s: division by zero", QN(op));
            }
            goto error;
        }
        int val_zero = PyObject_RichCompareBool(val, zero, Py_EQ);
        if (val_zero < 0)
            goto error;
        double value = PyFloat_AsDouble(val);
        if (value == -1.0 && PyErr_Occurred())
            goto error;
        if (val_zero) { /* underflow or division by infinity */
            len = signbit(value) ? 0 : 1;
        } else {
            double iv = ceil(value);
            if (isnan(iv)) {
                PyErr_Format(PyExc_ValueError, "%s: arange: cannot compute length", QN(op));
                goto error;
            }
            if (!((double)NPY_MIN_INTP <= iv && iv <= (double)NPY_MAX_INTP)) {
                PyErr_Format(PyExc_ValueError, "%s: Maximum allowed size exceeded", QN(op));
                goto error;
            }
            len = (npy_intp)iv;
        }
    }
    out->ndim = 1;
    out->shape[0] = len > 0 ? len : 0;
    Py_DECREF(zero);
    Py_DECREF(one);
    Py_DECREF(delta);
    Py_XDECREF(val);
    return 0;
error:
    Py_XDECREF(zero);
    Py_XDECREF(one);
    Py_XDECREF(delta);
    Py_XDECREF(val);
    return -1;
}

/* linspace(start, stop, num=50, endpoint, retstep, dtype, axis): the
   broadcast shape of start and stop with 'num' inserted at 'axis'. */
static int sh_linspace(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    int nd = 0, ax = 0;
    npy_intp sh[FJ_MAX_NDIM], num = 50;
    if (!b->v[0] || !b->v[1]) {
        PyErr_Format(PyExc_TypeError, "%s: needs start and stop", QN(op));
        return -1;
    }
    for (int i = 0; i < 2; i++) {
        int ond;
        npy_intp osh[FJ_MAX_NDIM];
        if (operand_shape(op, b->v[i], &ond, osh) < 0 || broadcast_into(op, &nd, sh, ond, osh) < 0)
            return -1;
    }
    if (b->v[2]) {
        if (size_arg(op, b->v[2], "num", &num) < 0)
            return -1;
        if (num < 0) {
            PyErr_Format(PyExc_ValueError, "%s: Number of samples, %zd, must be non-negative.", QN(op),
                         (Py_ssize_t)num);
            return -1;
        }
    }
    if (b->v[4]) {
        int r = PyObject_IsTrue(b->v[4]);
        if (r < 0)
            return -1;
        if (r) {
            PyErr_Format(PyExc_TypeError, "%s: retstep=True is not supported by framejit", QN(op));
            return -1;
        }
    }
    if (too_many_dims(op, nd + 1) < 0 || (b->v[6] && norm_axis(op, b->v[6], nd + 1, &ax) < 0))
        return -1;
    out->ndim = nd + 1;
    for (int i = 0, j = 0; i < out->ndim; i++)
        out->shape[i] = i == ax ? num : sh[j++];
    return 0;
}

/* eye(N, M=None, k=0, dtype, order): (N, M or N). */
static int sh_eye(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    npy_intp n, m, k;
    if (!b->v[0]) {
        PyErr_Format(PyExc_TypeError, "%s: missing N", QN(op));
        return -1;
    }
    if (size_arg(op, b->v[0], "N", &n) < 0)
        return -1;
    m = n;
    if (b->v[1] && b->v[1] != Py_None && size_arg(op, b->v[1], "M", &m) < 0)
        return -1;
    if (b->v[2] && size_arg(op, b->v[2], "k", &k) < 0)
        return -1;
    if (n < 0 || m < 0) {
        PyErr_Format(PyExc_ValueError, "%s: negative dimensions are not allowed", QN(op));
        return -1;
    }
    if (order_c_only(op, b) < 0)
        return -1;
    out->ndim = 2;
    out->shape[0] = n;
    out->shape[1] = m;
    return 0;
}

/*
** a[index] = value.  Basic and integer-array indexing: the value must
** broadcast into the selection (leading length-1 dims of the value may
** exceed it, as NumPy allows).  A boolean array index of exactly a's shape (a mask) takes a
** scalar value only (the count of selected items is data).  The node keeps
** a's shape.  0 or -1 with NumPy's error.
*/
static int sh_setitem(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    fj_Node *a = array_node(op, b->v[0]);
    PyObject *index = b->v[1], *value = b->v[2];
    int vnd;
    npy_intp vsh[FJ_MAX_NDIM];
    if (!a)
        return -1;
    if (a->vkind != FJ_VAL_ARRAY) {
        PyErr_Format(PyExc_TypeError, "%s: item assignment on a NumPy scalar", QN(op));
        return -1;
    }
    if (!index || !value) {
        PyErr_Format(PyExc_TypeError, "%s: missing the index or the value", QN(op));
        return -1;
    }
    if (fj_Node_Check(value) && ((fj_Node *)value)->vkind == FJ_VAL_PYSCALAR)
        vnd = 0;
    else if (operand_shape(op, value, &vnd, vsh) < 0)
        return -1;
    if (fj_Node_Check(index) && ((fj_Node *)index)->dtype != NULL &&
        ((fj_Node *)index)->dtype->type_num == NPY_BOOL) {
        /* a[mask] = value: the value broadcasts into the selection (n, *a.shape[m.ndim:]) */
        fj_Meta sel;
        memset(&sel, 0, sizeof sel);
        if (mask_selection(op, a, (fj_Node *)index, &sel) < 0)
            return -1;
        int ok = vnd <= sel.ndim;
        for (int d = 1; ok && d <= vnd; d++) {
            npy_intp v = vsh[vnd - d], s = sel.shape[sel.ndim - d];
            ok = v == s || v == 1;
        }
        if (!ok)
            return shapes_error(op, "%s: could not broadcast input array from shape %s into shape %s", vnd, vsh,
                                sel.ndim, sel.shape);
    }
    else {
        fj_Bound gb;
        fj_Meta sel;
        memset(&gb, 0, sizeof gb);
        memset(&sel, 0, sizeof sel);
        gb.v[0] = (PyObject *)a;
        gb.v[1] = index;
        if (sh_getitem(op, &gb, &sel) < 0)
            return -1;
        int lead = 0;
        while (vnd - lead > sel.ndim && vsh[lead] == 1)
            lead++;
        int ok = vnd - lead <= sel.ndim;
        for (int d = 0; ok && d < vnd - lead; d++) {
            npy_intp v = vsh[vnd - 1 - d], s = sel.shape[sel.ndim - 1 - d];
            ok = v == s || v == 1;
        }
        if (!ok) {
            return shapes_error(op, "%s: could not broadcast input array from shape %s into shape %s",
                                vnd, vsh, sel.ndim, sel.shape);
        }
    }
    out->vkind = FJ_VAL_ARRAY;
    out->ndim = a->ndim;
    memcpy(out->shape, a->shape, sizeof(npy_intp) * (size_t)a->ndim);
    return 0;
}

static int check_inplace(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    /* an in-place operator on an array writes into it: the result keeps its shape */
    if (op->kind == FJ_OP_INPLACE && fj_Node_Check(b->v[0]) && ((fj_Node *)b->v[0])->vkind == FJ_VAL_ARRAY) {
        fj_Node *a = (fj_Node *)b->v[0];
        if (a->ndim != out->ndim || memcmp(a->shape, out->shape, sizeof(npy_intp) * (size_t)a->ndim) != 0) {
            return shapes_error(op,
                                "%s: non-broadcastable output operand with shape %s doesn't match the "
                                "broadcast shape %s",
                                a->ndim, a->shape, out->ndim, out->shape);
        }
    }
    return 0;
}

static int shape_rule(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    switch (op->shape_rule) {
    case FJ_SH_BROADCAST:
        return sh_broadcast(op, b, out);
    case FJ_SH_REDUCE:
        return sh_reduce(op, b, out, 1);
    case FJ_SH_ARGREDUCE:
        return sh_reduce(op, b, out, 0);
    case FJ_SH_MATMUL:
        return sh_matmul(op, b, out);
    case FJ_SH_DOT:
        return sh_dot(op, b, out);
    case FJ_SH_RESHAPE:
        return sh_reshape(op, b, out);
    case FJ_SH_TRANSPOSE:
        return sh_transpose(op, b, out);
    case FJ_SH_SWAPAXES:
        return sh_swapaxes(op, b, out);
    case FJ_SH_EXPAND_DIMS:
        return sh_expand_dims(op, b, out);
    case FJ_SH_SQUEEZE:
        return sh_squeeze(op, b, out);
    case FJ_SH_CONCATENATE:
        return sh_concatenate(op, b, out);
    case FJ_SH_STACK:
        return sh_stack(op, b, out);
    case FJ_SH_BROADCAST_TO:
        return sh_broadcast_to(op, b, out);
    case FJ_SH_SAME:
        return sh_same(op, b, out);
    case FJ_SH_GETITEM:
        return sh_getitem(op, b, out);
    case FJ_SH_RAVEL:
        return sh_ravel(op, b, out);
    case FJ_SH_CUMULATIVE:
    case FJ_SH_SORT:
    case FJ_SH_ARGSORT:
        return sh_axis_keep(op, b, out);
    case FJ_SH_CREATE:
        return sh_create(op, b, out);
    case FJ_SH_LIKE:
        return sh_like(op, b, out);
    case FJ_SH_ARANGE:
        return sh_arange(op, b, out);
    case FJ_SH_LINSPACE:
        return sh_linspace(op, b, out);
    case FJ_SH_DIFF:
        return sh_diff(op, b, out);
    case FJ_SH_TILE:
        return sh_tile(op, b, out);
    case FJ_SH_REPEAT:
        return sh_repeat(op, b, out);
    case FJ_SH_AVERAGE:
        return sh_average(op, b, out);
    case FJ_SH_EYE:
        return sh_eye(op, b, out);
    case FJ_SH_RANDOM:
        return sh_random(op, b, out);
    case FJ_SH_LINALG:
        return sh_linalg(op, b, out);
    case FJ_SH_SETITEM:
        return sh_setitem(op, b, out);
    case FJ_SH_NONZERO: {
        /* flatnonzero: (n,); argwhere: (n, a.ndim); n depends on the data */
        int nd;
        npy_intp sh[FJ_MAX_NDIM];
        if (first_shape(op, b, &nd, sh) < 0)
            return -1;
        int arg = strcmp(op->name, "argwhere") == 0;
        if (arg && nd == 0) {
            PyErr_Format(PyExc_TypeError, "%s of a 0-d value is not traced", QN(op));
            return -1;
        }
        out->vkind = FJ_VAL_ARRAY;
        out->ndim = arg ? 2 : 1;
        out->shape[0] = FJ_DATADEP_SIZE;
        out->shape[1] = nd;
        return 0;
    }
    }
    PyErr_Format(PyExc_SystemError, "framejit: op %s has no shape rule", op->name);
    return -1;
}

int fj_ops_shape(const fj_OpDef *op, PyObject *args, fj_Bound *b, fj_Meta *out)
{
    (void)args;
    if (shape_rule(op, b, out) < 0)
        return -1;
    return op->kind == FJ_OP_INPLACE ? check_inplace(op, b, out) : 0;
}
