/*
** trace_multi.c: NumPy calls that return several arrays.
**
** np.linalg.eigh, qr, svd and slogdet return a tuple of arrays (NumPy 2: a
** named tuple, EighResult...), and np.nonzero / np.where / a.nonzero() of an
** array of two or more dimensions a tuple of index arrays.  Such a call is one
** graph node whose value is that tuple, made by NumPy's own function when the
** graph runs (LAPACK runs once), and one item node per result
** (operator.getitem of it), each with its array's metadata.
**
** The program sees a tuple Var of the item Vars (unpacking, indexing, len,
** iteration read them); a named tuple's Var also keeps the call node (extra)
** and the named tuple's type (extra2): a field (res.eigenvalues) is its item,
** type() is the named tuple's, and where the value leaves the graph (returned,
** stored, at a break) it is the call node's value, NumPy's own object, never a
** plain tuple built from the items.
**
** Shapes follow from the operand's (the rules below, NumPy's documented
** results); dtypes and the result's type come from NumPy's function run on a
** small stand-in of the operand's dtype and number of dimensions (an identity
** matrix, 2 x 2 or 1 x 2 or 2 x 1, batch dims 1), which also raises what NumPy
** would for a dtype it does not take (a break: CPython raises it).  Sizes are
** pinned for linalg (automatic dynamic specializes), not for np.nonzero (its
** arrays' size is the data's whatever the operand's); an empty operand of
** linalg is not traced (its
** paths in NumPy differ).  np.nonzero's arrays have a size only the data
** decides: the symbol of the count of nonzero items (trace_dims.c), shared by
** every item.
**
** Not traced (they keep breaking, with the reason): eig and eigvals (whose
** result dtype is complex or not as the data decide), lstsq (its residuals'
** size and rank are the data's), qr's 'raw' mode, arguments that are graph
** values other than the array.
*/
#include "trace.h"
#include "fj_numpy.h"
#include "graph.h"

#define VAR(o) ((fj_Var *)(o))

enum { M_EIGH, M_QR, M_SVD, M_SLOGDET, M_NONZERO };

typedef struct {
    const char *name;      /* numpy.linalg's (and the printed name's) */
    int kind;
    int nparams;
    const char *params[3]; /* after the array */
    const char *defaults;  /* their defaults: a string's ("L"), or 't' / 'f' per bool */
    int raises;            /* LinAlgError from the data (did not converge) */
} MultiFn;

static const MultiFn multi_fns[] = {
    {"eigh", M_EIGH, 1, {"UPLO"}, "L", 1},
    {"qr", M_QR, 1, {"mode"}, "reduced", 1},
    {"svd", M_SVD, 3, {"full_matrices", "compute_uv", "hermitian"}, "ttf", 1},
    {"slogdet", M_SLOGDET, 0, {NULL}, "", 1},
};
#define N_MULTI ((int)(sizeof multi_fns / sizeof multi_fns[0]))

/* numpy.linalg's own functions, from its implementation module (a program that
   replaced np.linalg.eigh with its own function keeps it): borrowed, NULL when
   numpy.linalg is not imported. */
static PyObject *own_fns[N_MULTI];
static int own_looked;

/* NumPy's implementation module 'impl' (NumPy 2; 'old' before it), once module
   'loaded' is imported (never importing it for the program): a new reference,
   or NULL (no exception). */
static PyObject *numpy_impl(const char *loaded, const char *impl, const char *old)
{
    PyObject *name = PyUnicode_FromString(loaded);
    PyObject *m = name ? PyImport_GetModule(name) : NULL;
    Py_XDECREF(name);
    PyErr_Clear();
    if (m == NULL)
        return NULL;
    Py_DECREF(m);
    m = PyImport_ImportModule(impl);
    if (m == NULL) {
        PyErr_Clear();
        m = PyImport_ImportModule(old);
    }
    PyErr_Clear();
    return m;
}

static void look_up_own(void)
{
    PyObject *impl = numpy_impl("numpy.linalg", "numpy.linalg._linalg", "numpy.linalg.linalg");
    if (impl == NULL)
        return;
    for (int k = 0; impl != NULL && k < N_MULTI; k++) {
        own_fns[k] = PyObject_GetAttrString(impl, multi_fns[k].name);
        PyErr_Clear();
    }
    Py_XDECREF(impl);
    PyErr_Clear();
    own_looked = 1;
}

/* The row of NumPy function 'fn', or NULL. */
static const MultiFn *multi_of(PyObject *fn)
{
    if (!own_looked)
        look_up_own();
    for (int k = 0; k < N_MULTI; k++)
        if (own_fns[k] != NULL && fn == own_fns[k])
            return &multi_fns[k];
    return NULL;
}

int fj_trace_is_multi(PyObject *fn)
{
    return multi_of(fn) != NULL;
}

/* The stand-in of array node 'an' (see the head): a new array, or NULL with
   Unsupported. */
static PyObject *stand_in(fj_Node *an)
{
    npy_intp m = an->shape[an->ndim - 2], n = an->shape[an->ndim - 1];
    npy_intp sm = m == n ? 2 : m < n ? 1 : 2, sn = m == n ? 2 : m < n ? 2 : 1;
    npy_intp sh[FJ_MAX_NDIM];
    for (int i = 0; i < an->ndim - 2; i++)
        sh[i] = 1;
    sh[an->ndim - 2] = sm;
    sh[an->ndim - 1] = sn;
    Py_INCREF(an->dtype);
    PyObject *s = PyArray_Zeros(an->ndim, sh, an->dtype, 0);
    if (s == NULL)
        return NULL;
    /* ones on the diagonal: every function here takes it without a warning */
    PyObject *one = PyLong_FromLong(1);
    for (npy_intp i = 0; one != NULL && i < (sm < sn ? sm : sn); i++) {
        npy_intp at[FJ_MAX_NDIM] = {0};
        at[an->ndim - 2] = at[an->ndim - 1] = i;
        char *p = PyArray_GetPtr((PyArrayObject *)s, at);
        if (PyArray_SETITEM((PyArrayObject *)s, p, one) < 0) {
            Py_CLEAR(s);
            break;
        }
    }
    Py_XDECREF(one);
    return s;
}

/* Shapes of the results (see numpy.linalg's documentation): nres of them into
   nd[] / sh[][]; the single result of svd(compute_uv=False) and qr(mode='r').
   0, or -1 with Unsupported for what this does not trace. */
static int result_shapes(const MultiFn *f, fj_Node *an, PyObject *const *p, int *nres, int nd[3],
                         npy_intp sh[3][FJ_MAX_NDIM])
{
    int b = an->ndim - 2;
    npy_intp m = an->shape[b], n = an->shape[b + 1], k = m < n ? m : n;
    for (int r = 0; r < 3; r++) {
        memcpy(sh[r], an->shape, sizeof(npy_intp) * (size_t)b);
        nd[r] = b;
    }
#define DIMS(r, ...)                                                   \
    do {                                                               \
        npy_intp d_[] = {__VA_ARGS__};                                 \
        for (size_t q_ = 0; q_ < sizeof d_ / sizeof d_[0]; q_++)       \
            sh[r][nd[r]++] = d_[q_];                                   \
    } while (0)
    switch (f->kind) {
    case M_EIGH:
    case M_SLOGDET:
        if (m != n)
            return fj_unsupported("np.linalg.%s of a matrix that is not square (it raises)", f->name);
        *nres = 2;
        if (f->kind == M_EIGH) {
            DIMS(0, m);
            DIMS(1, m, m);
        }
        return 0;
    case M_QR: {
        const char *mode = PyUnicode_AsUTF8(p[0]);
        if (mode == NULL) {
            PyErr_Clear();
            return fj_unsupported("np.linalg.qr with a mode that is not a string");
        }
        if (strcmp(mode, "reduced") == 0) {
            *nres = 2;
            DIMS(0, m, k);
            DIMS(1, k, n);
        }
        else if (strcmp(mode, "complete") == 0) {
            *nres = 2;
            DIMS(0, m, m);
            DIMS(1, m, n);
        }
        else if (strcmp(mode, "r") == 0) {
            *nres = 1;
            DIMS(0, k, n);
        }
        else
            return fj_unsupported("np.linalg.qr with mode=%R", p[0]);
        return 0;
    }
    case M_SVD: {
        int full = PyObject_IsTrue(p[0]), uv = PyObject_IsTrue(p[1]), herm = PyObject_IsTrue(p[2]);
        if (full < 0 || uv < 0 || herm < 0)
            return -1;
        if (herm && m != n)
            return fj_unsupported("np.linalg.svd(hermitian=True) of a matrix that is not square (it raises)");
        if (!uv) {
            *nres = 1;
            DIMS(0, k);
            return 0;
        }
        *nres = 3;
        if (full) {
            DIMS(0, m, m);
            DIMS(2, n, n);
        }
        else {
            DIMS(0, m, k);
            DIMS(2, k, n);
        }
        DIMS(1, k);
        return 0;
    }
    }
#undef DIMS
    return fj_unsupported("internal: np.linalg function %s", f->name);
}

/* Binds the call's arguments after the array to f's parameters (constants
   only), defaults where absent: p[] new references.  0, or -1 with
   Unsupported (or a TypeError CPython would raise: a break then). */
static int bind_params(const MultiFn *f, PyObject *const *args, Py_ssize_t n, PyObject *kwnames, PyObject *p[3],
                       int *np_)
{
    const char *const *pn = f->params;
    int k = f->nparams;
    *np_ = k;
    for (int i = 0; i < 3; i++)
        p[i] = NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, npos = n - nkw;
    if (npos < 1 || npos - 1 > k)
        return fj_unsupported("np.linalg.%s with %zd positional arguments", f->name, npos);
    for (Py_ssize_t i = 1; i < n; i++) {
        int slot = (int)i - 1;
        if (i >= npos) {
            const char *kw = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i - npos));
            slot = -1;
            for (int q = 0; kw != NULL && q < k; q++)
                if (strcmp(kw, pn[q]) == 0)
                    slot = q;
            if (kw == NULL || slot < 0 || p[slot] != NULL) {
                PyErr_Clear();
                goto bad;
            }
        }
        fj_Var *v = VAR(args[i]);
        if (v->kind != FJ_VAR_CONST)
            return fj_unsupported("np.linalg.%s with a '%s' that is not a constant", f->name, pn[slot]);
        p[slot] = Py_NewRef(v->obj);
    }
    for (int q = 0; q < k; q++) {
        if (p[q] != NULL)
            continue;
        p[q] = f->kind == M_SVD ? Py_NewRef(f->defaults[q] == 't' ? Py_True : Py_False)
                                : PyUnicode_FromString(f->defaults);
        if (p[q] == NULL)
            goto error;
    }
    return 0;
bad:
    fj_unsupported("np.linalg.%s with keyword arguments it does not take (it raises)", f->name);
error:
    for (int q = 0; q < 3; q++)
        Py_CLEAR(p[q]);
    return -1;
}

/* Item node k of call node 'call' with the metadata of stand-in result 'like'
   (an array or a NumPy scalar) and the shape given.  Borrowed node, NULL on error. */
static fj_Node *item_node(PyObject *g, fj_Node *call, Py_ssize_t k, PyObject *like, int nd, const npy_intp *sh,
                          PyObject *stem)
{
    const fj_OpDef *gr = fj_ops_for_getitem(); /* its target: operator.getitem */
    PyObject *gi = gr ? fj_op_target(gr) : NULL, *label = PyUnicode_FromString("operator.getitem");
    PyObject *args = gi && label ? Py_BuildValue("(On)", (PyObject *)call, k) : NULL;
    int scalar = PyArray_IsScalar(like, Generic);
    fj_Node *it = args ? fj_graph_raw_call(g, &fj_multi_item_row, gi, label, stem, args, NULL,
                                           scalar ? FJ_VAL_NPSCALAR : FJ_VAL_ARRAY)
                       : NULL;
    Py_XDECREF(label);
    Py_XDECREF(args);
    if (it == NULL)
        return NULL;
    it->dtype = scalar ? PyArray_DescrFromScalar(like) : (PyArray_Descr *)Py_NewRef(PyArray_DESCR((PyArrayObject *)like));
    if (it->dtype == NULL)
        return NULL;
    it->ndim = scalar ? 0 : nd;
    if (!scalar)
        memcpy(it->shape, sh, sizeof(npy_intp) * (size_t)nd);
    return it;
}

/* The graph calls of linalg function f on array Var 'a'.  The result Var, or
   NULL with Unsupported. */
static PyObject *linalg_call(fj_TFrame *fr, const MultiFn *f, PyObject *fn, PyObject *const *args, Py_ssize_t n,
                             PyObject *kwnames)
{
    fj_Node *an = (fj_Node *)VAR(args[0])->obj;
    PyObject *p[3] = {NULL, NULL, NULL}, *standin = NULL, *res = NULL, *targs = NULL, *label = NULL, *stem = NULL,
             *items = NULL, *out = NULL;
    int np_ = 0, nres = 0, nd[3];
    npy_intp sh[3][FJ_MAX_NDIM];
    if (an->ndim < 2)
        return fj_unsupported("np.linalg.%s of a %d-dimensional array (it raises)", f->name, an->ndim), NULL;
    for (int i = 0; i < an->ndim; i++)
        if (an->shape[i] == 0)
            return fj_unsupported("np.linalg.%s of an empty array is not traced", f->name), NULL;
    if (VAR(args[0])->dynamic && fj_trace_pin_sizes(fr->tx, args[0], "np.linalg") < 0)
        return NULL;
    if (f->raises && fj_trace_effects_pending(fr->tx))
        return fj_unsupported("np.linalg.%s after side effects (an error it raises from the data would lose them)",
                              f->name), NULL;
    if (bind_params(f, args, n, kwnames, p, &np_) < 0 || result_shapes(f, an, p, &nres, nd, sh) < 0)
        goto done;
    /* dtypes and the result's type: NumPy's function on the stand-in */
    if ((standin = stand_in(an)) == NULL)
        goto done;
    PyObject *call[4] = {standin, p[0], p[1], p[2]};
    res = PyObject_Vectorcall(fn, call, 1 + (size_t)np_, NULL);
    if (res == NULL) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        fj_unsupported("np.linalg.%s of a %R array raises %s: not traced", f->name, (PyObject *)an->dtype,
                       et ? ((PyTypeObject *)et)->tp_name : "an error");
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
        goto done;
    }
    int is_tuple = PyTuple_Check(res);
    if ((nres == 1) == is_tuple || (is_tuple && PyTuple_GET_SIZE(res) != nres)) {
        fj_unsupported("np.linalg.%s returned %s (not what framejit expects of it)", f->name, Py_TYPE(res)->tp_name);
        goto done;
    }
    if ((targs = PyTuple_New(1 + np_)) == NULL)
        goto done;
    PyTuple_SET_ITEM(targs, 0, Py_NewRef((PyObject *)an));
    for (int q = 0; q < np_; q++)
        PyTuple_SET_ITEM(targs, 1 + q, Py_NewRef(p[q]));
    label = PyUnicode_FromFormat("np.linalg.%s", f->name);
    stem = PyUnicode_FromString(f->name);
    if (label == NULL || stem == NULL)
        goto done;
    PyObject *g = fr->tx->body ? fr->tx->body : fr->tx->graph;
    if (!is_tuple) {
        /* one array (svd(compute_uv=False), qr(mode='r')) */
        fj_Node *c = fj_graph_raw_call(g, &fj_multi_row, fn, label, stem, targs, NULL, FJ_VAL_ARRAY);
        if (c == NULL)
            goto done;
        c->dtype = (PyArray_Descr *)Py_NewRef(PyArray_DESCR((PyArrayObject *)res));
        c->ndim = nd[0];
        memcpy(c->shape, sh[0], sizeof(npy_intp) * (size_t)nd[0]);
        out = (PyObject *)fj_var_node((PyObject *)c);
        goto done;
    }
    fj_Node *c = fj_graph_raw_call(g, &fj_multi_row, fn, label, stem, targs, NULL, FJ_VAL_TUPLE);
    if (c == NULL || (items = PyList_New(nres)) == NULL)
        goto done;
    Py_SETREF(stem, PyUnicode_FromFormat("%s_item", f->name));
    for (int r = 0; stem != NULL && r < nres; r++) {
        fj_Node *it = item_node(g, c, r, PyTuple_GET_ITEM(res, r), nd[r], sh[r], stem);
        fj_Var *iv = it ? fj_var_node((PyObject *)it) : NULL;
        if (iv == NULL)
            goto done;
        PyList_SET_ITEM(items, r, (PyObject *)iv);
    }
    fj_Var *tv = fj_var_new(FJ_VAR_TUPLE, NULL, items);
    if (tv != NULL && !PyTuple_CheckExact(res)) {
        /* a named tuple: its value where it leaves the graph is the call's */
        tv->extra = Py_NewRef((PyObject *)c);
        tv->extra2 = Py_NewRef((PyObject *)Py_TYPE(res));
    }
    out = (PyObject *)tv;
done:
    for (int q = 0; q < 3; q++)
        Py_XDECREF(p[q]);
    Py_XDECREF(standin);
    Py_XDECREF(res);
    Py_XDECREF(targs);
    Py_XDECREF(label);
    Py_XDECREF(stem);
    Py_XDECREF(items);
    return out;
}

PyObject *fj_trace_multi_call(fj_TFrame *fr, PyObject *fn, PyObject *const *args, Py_ssize_t n, PyObject *kwnames,
                              int *handled)
{
    const MultiFn *f = multi_of(fn);
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    *handled = 0;
    if (f == NULL || n - nkw < 1)
        return NULL;
    fj_Var *a = VAR(args[0]);
    if (a->kind != FJ_VAR_NODE || ((fj_Node *)a->obj)->vkind != FJ_VAL_ARRAY ||
        ((fj_Node *)a->obj)->dtype == NULL)
        return NULL; /* not an array of the graph: as any other call */
    *handled = 1;
    return linalg_call(fr, f, fn, args, n, kwnames);
}

/*
** np.nonzero(a) for an array of two or more dimensions: one call of NumPy's
** nonzero and its ndim index arrays, each of intp and of the size the count
** of a's nonzero items is.  The result Var, or NULL with Unsupported.
*/
PyObject *fj_trace_nonzero_nd(fj_TFrame *fr, PyObject *fn, PyObject *av)
{
    fj_Node *an = (fj_Node *)VAR(av)->obj;
    PyObject *g = fr->tx->body ? fr->tx->body : fr->tx->graph;
    /* (a's dims may be symbolic: the items' size is the data's, whatever a's sizes) */
    if (an->datadep)
        return fj_unsupported("np.nonzero of an array whose size depends on the data (x[mask], np.nonzero) "
                              "is not traced"), NULL;
    PyObject *targs = Py_BuildValue("(O)", (PyObject *)an), *label = PyUnicode_FromString("np.nonzero");
    PyObject *stem = PyUnicode_FromString("nonzero"), *items = NULL, *out = NULL;
    PyObject *like = PyArray_Zeros(1, (npy_intp[]){0}, PyArray_DescrFromType(NPY_INTP), 0);
    int sym = fj_dims_count_symbol(an);
    if (targs == NULL || label == NULL || stem == NULL || like == NULL)
        goto done;
    fj_Node *c = fj_graph_raw_call(g, &fj_multi_row, fn, label, stem, targs, NULL, FJ_VAL_TUPLE);
    if (c == NULL || (items = PyList_New(an->ndim)) == NULL)
        goto done;
    Py_SETREF(stem, PyUnicode_FromString("nonzero_item"));
    for (int r = 0; stem != NULL && r < an->ndim; r++) {
        npy_intp one = FJ_DATADEP_SIZE;
        fj_Node *it = item_node(g, c, r, like, 1, &one, stem);
        if (it == NULL)
            goto done;
        it->datadep = sym;
        fj_Var *iv = fj_var_node((PyObject *)it);
        if (iv == NULL)
            goto done;
        iv->dynamic = 1; /* every use that needs its size asks fj_trace_pin_sizes, which refuses */
        PyList_SET_ITEM(items, r, (PyObject *)iv);
    }
    out = (PyObject *)fj_var_new(FJ_VAR_TUPLE, NULL, items);
done:
    Py_XDECREF(targs);
    Py_XDECREF(label);
    Py_XDECREF(stem);
    Py_XDECREF(items);
    Py_XDECREF(like);
    return out;
}

PyObject *fj_trace_multi_field(fj_Var *t, PyObject *name)
{
    /* a field of the named tuple: its item (the type's _fields say which) */
    PyObject *fields = PyObject_GetAttrString(t->extra2, "_fields");
    Py_ssize_t at = -1;
    if (fields != NULL && PyTuple_Check(fields))
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fields) && at < 0; i++) {
            int eq = PyUnicode_Check(PyTuple_GET_ITEM(fields, i)) &&
                     PyUnicode_Compare(PyTuple_GET_ITEM(fields, i), name) == 0;
            if (eq)
                at = i;
        }
    Py_XDECREF(fields);
    PyErr_Clear();
    if (at >= 0 && at < PyList_GET_SIZE(t->items))
        return Py_NewRef(PyList_GET_ITEM(t->items, at));
    return fj_unsupported("attribute %U of %s", name, ((PyTypeObject *)t->extra2)->tp_name), NULL;
}

/* ---- np.ndindex and np.ndenumerate --------------------------------------- */

/* numpy's own ndindex and ndenumerate classes (borrowed; NULL until numpy.lib is imported). */
static PyObject *own_ndindex, *own_ndenumerate;

static void look_up_nd(void)
{
    PyObject *impl = numpy_impl("numpy", "numpy.lib._index_tricks_impl", "numpy.lib.index_tricks");
    if (impl != NULL) {
        own_ndindex = PyObject_GetAttrString(impl, "ndindex");
        own_ndenumerate = own_ndindex ? PyObject_GetAttrString(impl, "ndenumerate") : NULL;
        Py_DECREF(impl);
    }
    PyErr_Clear();
}

/* A shape entry: a constant int >= 0 (a symbolic int pinned).  -1 with Unsupported. */
static Py_ssize_t shape_entry(PyObject *v)
{
    PyObject *c = fj_var_as_const(v);
    if (c == NULL && PyErr_Occurred())
        return -1;
    if (c == NULL || !PyLong_Check(c))
        return fj_unsupported("np.ndindex with a shape that is not made of constant ints"), -1;
    Py_ssize_t s = PyLong_AsSsize_t(c);
    if (s == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return fj_unsupported("np.ndindex with a huge size"), -1;
    }
    if (s < 0)
        return fj_unsupported("np.ndindex with a negative size (it raises)"), -1;
    return s;
}

PyObject *fj_trace_nd_call(fj_TFrame *fr, PyObject *fn, PyObject *const *args, Py_ssize_t n, PyObject *kwnames,
                           int *handled)
{
    *handled = 0;
    if (own_ndindex == NULL)
        look_up_nd();
    if (fn == NULL || (fn != own_ndindex && fn != own_ndenumerate) || (kwnames && PyTuple_GET_SIZE(kwnames)))
        return NULL;
    PyObject *shape = NULL, *arr = Py_None, *dims = NULL, *out = NULL;
    if (fn == own_ndenumerate) {
        if (n != 1)
            return NULL;
        fj_Var *a = VAR(args[0]);
        fj_Node *an = a->kind == FJ_VAR_NODE ? (fj_Node *)a->obj : NULL;
        if (an == NULL || an->vkind != FJ_VAL_ARRAY || an->dtype == NULL)
            return NULL; /* a list, a constant: as before */
        *handled = 1;
        if (a->dynamic && fj_trace_pin_sizes(fr->tx, args[0], "np.ndenumerate") < 0)
            return NULL;
        if ((dims = PyList_New(an->ndim)) == NULL)
            return NULL;
        for (int d = 0; d < an->ndim; d++) {
            PyObject *s = PyLong_FromSsize_t(an->shape[d]);
            if (s == NULL)
                goto done;
            PyList_SET_ITEM(dims, d, s);
        }
        arr = args[0];
    }
    else {
        *handled = 1;
        /* ndindex(2, 3) or ndindex((2, 3)) */
        PyObject *const *sv = args;
        Py_ssize_t sn = n;
        PyObject *one = NULL;
        if (n == 1 && VAR(args[0])->kind == FJ_VAR_TUPLE) {
            sv = &PyList_GET_ITEM(VAR(args[0])->items, 0);
            sn = PyList_GET_SIZE(VAR(args[0])->items);
        }
        else if (n == 1 && VAR(args[0])->kind == FJ_VAR_CONST && PyTuple_Check(VAR(args[0])->obj)) {
            one = VAR(args[0])->obj;
            sn = PyTuple_GET_SIZE(one);
        }
        if ((dims = PyList_New(sn)) == NULL)
            return NULL;
        for (Py_ssize_t d = 0; d < sn; d++) {
            Py_ssize_t s;
            if (one != NULL) {
                PyObject *c = PyTuple_GET_ITEM(one, d);
                s = PyLong_Check(c) ? PyLong_AsSsize_t(c) : -2;
                if (s < 0) {
                    PyErr_Clear();
                    fj_unsupported("np.ndindex with a shape that is not made of ints >= 0");
                    goto done;
                }
            }
            else if ((s = shape_entry(sv[d])) < 0)
                goto done;
            PyObject *o = PyLong_FromSsize_t(s);
            if (o == NULL)
                goto done;
            PyList_SET_ITEM(dims, d, o);
        }
    }
    Py_ssize_t size = 1;
    for (Py_ssize_t d = 0; d < PyList_GET_SIZE(dims); d++) {
        Py_ssize_t s = PyLong_AsSsize_t(PyList_GET_ITEM(dims, d));
        if (s > 0 && size > PY_SSIZE_T_MAX / s) {
            fj_unsupported("np.ndindex with a size over the index range");
            goto done;
        }
        size *= s;
    }
    shape = PyList_AsTuple(dims);
    PyObject *range = shape ? PyObject_CallFunction((PyObject *)&PyRange_Type, "n", size) : NULL;
    PyObject *empty = range ? PyList_New(0) : NULL;
    fj_Var *it = empty ? fj_var_new(FJ_VAR_ITER, range, empty) : NULL;
    Py_XDECREF(range);
    Py_XDECREF(empty);
    if (it != NULL && (it->extra2 = PyTuple_Pack(2, shape, arr)) == NULL)
        Py_CLEAR(it);
    out = (PyObject *)it;
done:
    Py_XDECREF(dims);
    Py_XDECREF(shape);
    return out;
}
