/*
** trace_torch.c: torch tensors in the tracer (issue 19; torchlib.h).
**
** A tensor input is a placeholder whose metadata is a meta tensor (its
** "fake"); every torch operation the trace meets (a function of torch's
** namespaces, a Tensor method or attribute, an operator with a tensor
** operand) is called once on the fakes of its arguments: torch's own meta
** kernels give the result's dtype, shape, strides and requires_grad, and
** raise where the real call would (a graph break, so CPython raises it).
** Nothing runs on data at trace time.
**
** Results: a tensor is a node; an in-place operation's result is its
** operand's own Var (x.add_(1) is x); a tuple of tensors is a node whose
** items are read by getitem nodes; metadata methods (size(), dim()) and
** attributes (shape, dtype) are constants, which TENSOR_MATCH guards.
*/
#include "trace.h"

#include "fj_numpy.h"
#include "graph.h"
#include "guards.h"
#include "arraylib.h"
#include "tensor_meta.h"
#include "torch_infer.h"
#include "torchlib.h"
#include "walk.h"
#include "guard_values.h"
#include "source.h"

#include <string.h>

#define VAR(o) ((fj_Var *)(o))

/* Once per process, at the first trace that meets torch: framejit.torch_meta.ensure()
   installs the C reader of tensors (or starts building it in the background). */
static void ensure_reader(void)
{
    static int asked = 0;
    if (asked || fj_tensor_meta_ready())
        return;
    asked = 1;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *mod = PyImport_ImportModule("framejit.torch_meta");
    PyObject *r = mod ? PyObject_CallMethod(mod, "ensure", NULL) : NULL;
    if (r == NULL)
        PyErr_WriteUnraisable(NULL); /* guards then read tensors through torch's methods */
    Py_XDECREF(r);
    Py_XDECREF(mod);
    PyErr_Restore(et, ev, tb);
}

int fj_trace_torch_begin(fj_Tracer *tx);
int fj_trace_torch_begin(fj_Tracer *tx)
{
    if (tx->body != NULL)
        return fj_unsupported("a torch tensor inside a captured loop (loop nodes run NumPy bodies; a "
                              "loop over tensors is unrolled)");
    /* the first torch value of the trace: the graph depends on torch's global state */
    if (fj_graph_is_torch(tx->graph))
        return 0;
    ensure_reader();
    return fj_torch_lib.add_global_state(tx->guards);
}

/* A tensor node's metadata refused by the graph (set_torch_meta's only
   ValueError: more dims than FJ_MAX_NDIM): the break, naming 'what'.  NULL. */
static void *too_many_dims(PyObject *what)
{
    PyErr_Clear();
    fj_unsupported("%U has more than %d dimensions (the most framejit traces)", what, FJ_MAX_NDIM);
    return NULL;
}

int fj_trace_input_sizes(PyObject *t, int *nd, int64_t *sizes)
{
    fj_TensorMeta m;
    if (PyArray_CheckExact(t)) {
        *nd = PyArray_NDIM((PyArrayObject *)t);
        for (int d = 0; d < *nd; d++)
            sizes[d] = PyArray_DIM((PyArrayObject *)t, d);
        return 1;
    }
    if (!fj_torch_is_plain_tensor(t))
        return 0;
    int r = fj_torch_meta_read(t, &m);
    if (r <= 0 || !fj_tensor_meta_contiguous(&m))
        return r < 0 ? -1 : 0;
    *nd = m.ndim;
    memcpy(sizes, m.sizes, sizeof(int64_t) * (size_t)m.ndim);
    return 1;
}

fj_Var *fj_trace_tensor_input(fj_Tracer *tx, fj_Source *src, PyObject *mgr, PyObject *value, PyObject *dims)
{
    if (!fj_torch_is_plain_tensor(value)) {
        /* a subclass may override __torch_function__ or any method */
        fj_unsupported("%U is an instance of torch.Tensor subclass %s", src->text,
                       Py_TYPE(value)->tp_name);
        return NULL;
    }
    const char *why = NULL;
    PyObject *fake = fj_torch_fake(value, &why);
    if (fake == NULL) {
        if (why != NULL)
            fj_unsupported_keyed(why, "%U: %s", src->text, why);
        else
            fj_trace_as_unsupported("reading a tensor's metadata");
        return NULL;
    }
    PyObject *name = fj_source_placeholder_name(src);
    fj_Node *node = NULL;
    if (name != NULL && fj_trace_torch_begin(tx) == 0)
        node = fj_graph_tensor_placeholder(tx->graph, name, fake);
    Py_XDECREF(name);
    Py_DECREF(fake);
    if (node == NULL && PyErr_ExceptionMatches(PyExc_ValueError))
        return too_many_dims(src->text);
    if (node == NULL || fj_guard_add_torch_match(mgr, value, dims) < 0)
        return NULL;
    node->pytype = Py_NewRef((PyObject *)Py_TYPE(value)); /* exact: TENSOR_MATCH pins it */
    fj_Var *v = fj_var_node((PyObject *)node);
    if (v != NULL && PyList_Append(tx->placeholders, (PyObject *)v) < 0)
        Py_CLEAR(v);
    return v;
}

int fj_trace_is_tensor_var(PyObject *v)
{
    fj_Var *vv = VAR(v);
    return vv->kind == FJ_VAR_NODE && ((fj_Node *)vv->obj)->vkind == FJ_VAL_TENSOR;
}

/* fj_var_find's 'enter': stops at a tensor node. */
static int tensor_enter(fj_VarWalk *w, PyObject *v)
{
    fj_Var *vv = VAR(v);
    if (vv->kind == FJ_VAR_NODE)
        return ((fj_Node *)vv->obj)->vkind == FJ_VAL_TENSOR || ((fj_Node *)vv->obj)->vkind == FJ_VAL_TENSORS
                   ? FJ_WALK_STOP
                   : FJ_WALK_SKIP;
    return vv->kind == FJ_VAR_TUPLE || vv->kind == FJ_VAR_LIST ? FJ_WALK_INTO : FJ_WALK_SKIP;
}

int fj_trace_has_tensor(PyObject *const *args, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        int r = fj_var_find(args[i], FJ_PART_ITEMS, tensor_enter, NULL);
        if (r != 0)
            return r;
    }
    return 0;
}

/* The graph argument 'a' with nodes replaced by their fakes (symbolic
   scalars by their trace-time values).  New reference, NULL on error. */
static PyObject *fake_arg(PyObject *a, void *unused)
{
    if (fj_Node_Check(a)) {
        fj_Node *n = (fj_Node *)a;
        if (n->vkind == FJ_VAL_TENSOR || n->vkind == FJ_VAL_TENSORS)
            return Py_NewRef(n->fake);
        if (n->vkind == FJ_VAL_PYSCALAR)
            return Py_NewRef(n->example);
        fj_unsupported("a NumPy value (%U) meets a torch operation", n->name);
        return NULL;
    }
    if (PyTuple_CheckExact(a) || PyList_CheckExact(a))
        return fj_map_items(a, PyTuple_CheckExact(a), fake_arg, NULL);
    if (PySlice_Check(a)) {
        /* x[:n] with a symbolic bound: the bound's value */
        PySliceObject *sl = (PySliceObject *)a;
        PyObject *p0 = fake_arg(sl->start, NULL), *p1 = p0 ? fake_arg(sl->stop, NULL) : NULL;
        PyObject *p2 = p1 ? fake_arg(sl->step, NULL) : NULL;
        PyObject *r = p2 ? PySlice_New(p0, p1, p2) : NULL;
        Py_XDECREF(p0);
        Py_XDECREF(p1);
        Py_XDECREF(p2);
        return r;
    }
    return Py_NewRef(a);
}

/* The name stem and printed target of a torch function: ("sin", "torch.sin").
   New references into *stem and *label; 0 or -1. */
static int func_names(PyObject *fn, PyObject **stem, PyObject **label)
{
    *stem = *label = NULL;
    PyObject *name = PyObject_GetAttrString(fn, "__name__");
    if (name == NULL || !PyUnicode_Check(name)) {
        Py_XDECREF(name);
        PyErr_Clear();
        *stem = PyUnicode_FromString("call");
        return *stem ? 0 : -1;
    }
    *stem = name;
    if (Py_TYPE(fn) == &PyMethodDescr_Type) {
        *label = PyUnicode_FromFormat("torch.Tensor.%U", name);
        return *label ? 0 : -1;
    }
    PyObject *mod = NULL;
    if (PyCFunction_Check(fn)) {
        PyObject *self = ((PyCFunctionObject *)fn)->m_self;
        mod = self != NULL && PyModule_Check(self) ? PyModule_GetNameObject(self)
                                                   : PyUnicode_FromString("torch");
    }
    else if (PyFunction_Check(fn)) {
        mod = Py_XNewRef(((PyFunctionObject *)fn)->func_module);
        PyObject *qual = ((PyFunctionObject *)fn)->func_qualname;
        if (mod != NULL && PyUnicode_Check(mod) && qual != NULL) {
            /* torch._tensor's functions are torch.Tensor's methods */
            if (PyUnicode_CompareWithASCIIString(mod, "torch._tensor") == 0)
                Py_SETREF(mod, PyUnicode_FromString("torch"));
            *label = mod ? PyUnicode_FromFormat("%U.%U", mod, qual) : NULL;
            Py_XDECREF(mod);
            return *label ? 0 : -1;
        }
    }
    if (mod == NULL || !PyUnicode_Check(mod)) {
        Py_XDECREF(mod);
        PyErr_Clear();
        *label = PyObject_Repr(fn);
        return *label ? 0 : -1;
    }
    *label = PyUnicode_FromFormat("%U.%U", mod, name);
    Py_DECREF(mod);
    return *label ? 0 : -1;
}

/* "to", interned (t.cpu() is traced as t.to(meta) on the fake). Borrowed. */
static PyObject *to_name(void)
{
    static PyObject *s = NULL;
    if (s == NULL)
        s = PyUnicode_InternFromString("to");
    return s;
}

/* What to call the failing op in a reason: new reference. */
static PyObject *op_text(const fj_OpDef *op, PyObject *target)
{
    if (op == &fj_torch_method_row)
        return PyUnicode_FromFormat("Tensor.%U()", target);
    if (op == &fj_torch_attr_row)
        return PyUnicode_FromFormat("Tensor.%U", target);
    if (op == &fj_torch_func_row) {
        PyObject *stem, *label;
        if (func_names(target, &stem, &label) < 0)
            return NULL;
        Py_XDECREF(stem);
        return label;
    }
    return PyUnicode_FromFormat("operator %s on a tensor", op->symbol ? op->symbol : op->name);
}

/* Calls the op on fakes: the result (new reference), or NULL with
   fj_Unsupported naming the op and torch's error. */
static PyObject *call_on_fakes(const fj_OpDef *op, PyObject *target, PyObject *fargs, PyObject *fkw)
{
    PyObject *res;
    if (op->kind == FJ_OP_METHOD) {
        PyObject *m = PyObject_GetAttr(PyTuple_GET_ITEM(fargs, 0), target);
        PyObject *rest = m ? PyTuple_GetSlice(fargs, 1, PyTuple_GET_SIZE(fargs)) : NULL;
        res = rest ? PyObject_Call(m, rest, fkw) : NULL;
        Py_XDECREF(m);
        Py_XDECREF(rest);
    }
    else if (op->kind == FJ_OP_ATTR)
        res = PyObject_GetAttr(PyTuple_GET_ITEM(fargs, 0), target);
    else
        res = PyObject_Call(target, fargs, fkw);
    if (res != NULL)
        return res;
    if (PyErr_ExceptionMatches(fj_Unsupported))
        return NULL;
    if (fj_current_tracer != NULL)
        fj_current_tracer->op_raised = 1;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyErr_NormalizeException(&et, &ev, &tb);
    PyObject *what = op_text(op, target);
    if (what != NULL) {
        /* the first line of torch's message: meta kernels' messages run long */
        PyObject *msg = ev ? PyObject_Str(ev) : NULL;
        PyObject *lines = msg ? PyUnicode_Splitlines(msg, 0) : NULL;
        PyObject *first = lines && PyList_GET_SIZE(lines) ? PyList_GET_ITEM(lines, 0) : Py_None;
        PyErr_Clear();
        fj_unsupported("%U raises %s while tracing: %.300S", what, ((PyTypeObject *)et)->tp_name, first);
        Py_XDECREF(msg);
        Py_XDECREF(lines);
        Py_DECREF(what);
    }
    Py_XDECREF(et);
    Py_XDECREF(ev);
    Py_XDECREF(tb);
    return NULL;
}

/* ---------------------------------------------------------- meta cache
**
** Many of torch's meta kernels are Python (torch._refs, through dynamo's
** own wrappers): a relu on meta tensors costs hundreds of microseconds.
** Models repeat the same op on the same metadata (a ResNet's blocks, every
** recompile), so results are cached by their signature: the op, its
** target, each tensor argument's (dtype, sizes, strides, requires_grad,
** is_leaf, is a view), every other argument by value, and torch's global
** state.  A hit gives a fresh copy of the cached result (fj_torch_non_leaf:
** a clone), so two nodes never share a fake.
*/
#define META_CACHE_MAX 8192
static PyObject *meta_cache = NULL; /* strong dict: key -> result fake */

static PyObject *sig_of(PyObject *a, int depth);

static PyObject *sig_items(PyObject *seq, const char *tag, int depth)
{
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *t = PyTuple_New(n + 1);
    if (t == NULL)
        return NULL;
    PyTuple_SET_ITEM(t, 0, PyUnicode_FromString(tag));
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = sig_of(PySequence_Fast_GET_ITEM(seq, i), depth + 1);
        if (x == NULL || PyTuple_GET_ITEM(t, 0) == NULL) {
            Py_XDECREF(x);
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i + 1, x);
    }
    return t;
}

/* A hashable description of a fake argument, or NULL (no exception: not
   cacheable; with one: an error). */
static PyObject *sig_of(PyObject *a, int depth)
{
    if (depth > 8)
        return NULL;
    if (fj_torch_is_tensor(a)) {
        PyObject *fast = fj_torch_fast_sig(a);
        if (fast != NULL || PyErr_Occurred())
            return fast;
        PyObject *shape = PyObject_GetAttrString(a, "shape");
        PyObject *stride = shape ? PyObject_CallMethod(a, "stride", NULL) : NULL;
        PyObject *dtype = stride ? PyObject_GetAttrString(a, "dtype") : NULL;
        PyObject *rg = dtype ? PyObject_GetAttrString(a, "requires_grad") : NULL;
        PyObject *leaf = rg ? PyObject_GetAttrString(a, "is_leaf") : NULL;
        PyObject *view = leaf ? PyObject_CallMethod(a, "_is_view", NULL) : NULL;
        PyObject *r = view ? PyTuple_Pack(7, Py_None, dtype, shape, stride, rg, leaf, view) : NULL;
        Py_XDECREF(shape);
        Py_XDECREF(stride);
        Py_XDECREF(dtype);
        Py_XDECREF(rg);
        Py_XDECREF(leaf);
        Py_XDECREF(view);
        return r;
    }
    if (a == Py_None || a == Py_Ellipsis || PyBool_Check(a) || PyLong_CheckExact(a) ||
        PyFloat_CheckExact(a) || PyUnicode_CheckExact(a) || fj_torch_is_value(a)) {
        /* the type too: 1 and 1.0 and True are equal keys but other arguments */
        return PyTuple_Pack(2, (PyObject *)Py_TYPE(a), a);
    }
    if (PyTuple_CheckExact(a) || PyList_CheckExact(a))
        return sig_items(a, PyTuple_CheckExact(a) ? "tuple" : "list", depth);
    if (PySlice_Check(a)) {
        PySliceObject *sl = (PySliceObject *)a;
        PyObject *t = PyTuple_Pack(3, sl->start, sl->stop, sl->step);
        PyObject *r = t ? sig_items(t, "slice", depth) : NULL;
        Py_XDECREF(t);
        return r;
    }
    return NULL;
}

/* The cache key of a call, or NULL (not cacheable, or an error set). */
static PyObject *meta_key(const fj_OpDef *op, PyObject *target, PyObject *fargs, PyObject *fkw)
{
    int fast;
    uint64_t bits;
    PyObject *state = NULL;
    if (fj_torch_global_state(1, &fast, &bits, &state) < 0)
        return NULL;
    if (fast && (state = PyLong_FromUnsignedLongLong(bits)) == NULL)
        return NULL;
    PyObject *a = sig_of(fargs, 0), *k = NULL, *key = NULL;
    if (a != NULL && fkw != NULL) {
        PyObject *items = PyDict_Items(fkw);
        if (items != NULL && PyList_Sort(items) == 0)
            k = sig_of(items, 0);
        Py_XDECREF(items);
    }
    if (a != NULL && (fkw == NULL || k != NULL)) {
        PyObject *opid = PyLong_FromVoidPtr((void *)op);
        key = opid ? PyTuple_Pack(5, opid, target, state, a, k ? k : Py_None) : NULL;
        Py_XDECREF(opid);
    }
    Py_XDECREF(state);
    Py_XDECREF(a);
    Py_XDECREF(k);
    if (key != NULL && PyObject_Hash(key) == -1) {
        PyErr_Clear(); /* a target that is not hashable: no caching */
        Py_CLEAR(key);
    }
    return key;
}

/* The Var of top-level argument args[i] whose node's fake is 'fake', or NULL. */
static int inplace_reads_overlap(PyObject *written, PyObject *const *args, Py_ssize_t n);

static PyObject *operand_with_fake(PyObject *const *args, Py_ssize_t n, PyObject *fake)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        fj_Var *a = VAR(args[i]);
        if (a->kind == FJ_VAR_NODE && ((fj_Node *)a->obj)->fake == fake)
            return args[i];
    }
    return NULL;
}

/* True when 'fake' is one of the fakes in (nested) 'a': an in-place or
   out= result, which is never cached. */
static int fake_among(PyObject *a, PyObject *fake)
{
    if (a == fake)
        return 1;
    if (PyTuple_CheckExact(a) || PyList_CheckExact(a))
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(a); i++)
            if (fake_among(PySequence_Fast_GET_ITEM(a, i), fake))
                return 1;
    return 0;
}

/* A tensor, or a tuple of tensors and Nones (torch.split, multi-head attention's (out, None)). */
static int cacheable_result(PyObject *res)
{
    if (fj_torch_is_tensor(res))
        return 1;
    if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) == 0)
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(res); i++)
        if (!fj_torch_is_tensor(PyTuple_GET_ITEM(res, i)) && PyTuple_GET_ITEM(res, i) != Py_None)
            return 0;
    return 1;
}

/* True when the result (or an item of it) is one of the inputs' fakes. */
static int aliases_input(PyObject *res, PyObject *const *args, Py_ssize_t n, PyObject *fargs,
                         PyObject *kwvals)
{
    Py_ssize_t k = PyTuple_Check(res) ? PyTuple_GET_SIZE(res) : 1;
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *r = PyTuple_Check(res) ? PyTuple_GET_ITEM(res, i) : res;
        if (r != Py_None && (operand_with_fake(args, n, r) != NULL || fake_among(fargs, r) ||
                             (kwvals != NULL && fake_among(kwvals, r))))
            return 1;
    }
    return 0;
}

/* A cached result made fresh: each tensor a new clone, so no two nodes
   share a fake. */
static PyObject *fresh_one(PyObject *t)
{
    PyObject *f = fj_torch_fresh_fake(t);
    return f != NULL || PyErr_Occurred() ? f : fj_torch_non_leaf(t);
}

static PyObject *fresh_alias(PyObject *hit)
{
    if (!PyTuple_Check(hit))
        return fresh_one(hit);
    if (!PyTuple_CheckExact(hit)) {
        /* torch.return_types.*: the same named tuple of fresh items */
        PyObject *plain = PySequence_Tuple(hit), *items = plain ? fresh_alias(plain) : NULL;
        PyObject *r = items ? PyObject_CallOneArg((PyObject *)Py_TYPE(hit), items) : NULL;
        Py_XDECREF(plain);
        Py_XDECREF(items);
        return r;
    }
    Py_ssize_t k = PyTuple_GET_SIZE(hit);
    PyObject *items = PyTuple_New(k);
    for (Py_ssize_t i = 0; items != NULL && i < k; i++) {
        PyObject *t = PyTuple_GET_ITEM(hit, i);
        PyObject *a = t == Py_None ? Py_NewRef(Py_None) : fresh_one(t);
        if (a == NULL)
            Py_CLEAR(items);
        else
            PyTuple_SET_ITEM(items, i, a);
    }
    return items; /* a plain tuple: the node reads items with getitem either way */
}

/* The result of a call no C rule answers: the meta cache's (a fresh copy),
   else torch's meta kernels' (cached when it is not an input).  New
   reference, NULL with fj_Unsupported or an error. */
static PyObject *cached_or_meta(const fj_OpDef *op, PyObject *target, PyObject *fargs, PyObject *fkw,
                                PyObject *const *args, Py_ssize_t n)
{
    PyObject *key = meta_key(op, target, fargs, fkw), *res;
    if (key == NULL && PyErr_Occurred())
        return NULL;
    PyObject *hit = key && meta_cache ? PyDict_GetItemWithError(meta_cache, key) : NULL;
    if (hit != NULL)
        res = fresh_alias(hit);
    else if (PyErr_Occurred())
        res = NULL;
    else {
        res = call_on_fakes(op, target, fargs, fkw);
        PyObject *kwvals = res != NULL && key != NULL && fkw != NULL ? PyDict_Values(fkw) : NULL;
        if (res != NULL && key != NULL && cacheable_result(res) && !aliases_input(res, args, n, fargs, kwvals)) {
            if (meta_cache == NULL || PyDict_GET_SIZE(meta_cache) >= META_CACHE_MAX)
                Py_XSETREF(meta_cache, PyDict_New());
            if (meta_cache == NULL || PyDict_SetItem(meta_cache, key, res) < 0)
                PyErr_Clear(); /* a cache that cannot grow changes nothing */
        }
        if (kwvals == NULL && res != NULL)
            PyErr_Clear(); /* PyDict_Values failing only means no caching */
        Py_XDECREF(kwvals);
    }
    Py_XDECREF(key);
    return res;
}

/*
** 1 when in-place arithmetic op/target on the fakes 'fargs' (x += y, x *= y,
** x.add_(y) ...) would raise torch's "result type ... can't be cast to the
** desired output type": the promoted type of its operands (a float for a
** true division) cannot be cast to x's dtype.  0 when it can or the op is
** no such op, -1 on error.
*/
static int inplace_cast_fails(const fj_OpDef *op, PyObject *target, PyObject *fargs)
{
    int truediv = 0;
    if (op->kind == FJ_OP_INPLACE)
        truediv = op->code == NB_INPLACE_TRUE_DIVIDE;
    else if (op->kind == FJ_OP_METHOD && PyUnicode_Check(target)) {
        static const char *const names[] = {"add_", "sub_", "mul_", "div_", "true_divide_", "pow_",
                                            "floor_divide_", "remainder_", "fmod_", NULL};
        int found = 0;
        for (int i = 0; names[i] != NULL && !found; i++)
            found = PyUnicode_CompareWithASCIIString(target, names[i]) == 0;
        if (!found)
            return 0;
        truediv = PyUnicode_CompareWithASCIIString(target, "div_") == 0 ||
                  PyUnicode_CompareWithASCIIString(target, "true_divide_") == 0;
    }
    else
        return 0;
    if (!PyTuple_Check(fargs) || PyTuple_GET_SIZE(fargs) < 2 || !fj_torch_is_tensor(PyTuple_GET_ITEM(fargs, 0)))
        return 0;
    PyObject *torch = PyDict_GetItemString(PyImport_GetModuleDict(), "torch");
    if (torch == NULL)
        return 0;
    PyObject *x = PyTuple_GET_ITEM(fargs, 0), *y = PyTuple_GET_ITEM(fargs, 1);
    if (!(fj_torch_is_tensor(y) || PyLong_Check(y) || PyFloat_Check(y) || PyComplex_Check(y)))
        return 0;
    PyObject *rt = PyObject_CallMethod(torch, "result_type", "OO", x, y);
    PyObject *xd = rt ? PyObject_GetAttrString(x, "dtype") : NULL;
    if (rt != NULL && xd != NULL && truediv) {
        PyObject *fp = PyObject_GetAttrString(rt, "is_floating_point");
        int isfp = fp ? PyObject_IsTrue(fp) : -1;
        Py_XDECREF(fp);
        PyObject *cx = isfp == 0 ? PyObject_GetAttrString(rt, "is_complex") : NULL;
        int iscx = cx ? PyObject_IsTrue(cx) : 0;
        Py_XDECREF(cx);
        if (isfp == 0 && iscx == 0)
            Py_SETREF(rt, PyObject_CallMethod(torch, "get_default_dtype", NULL));
    }
    PyObject *ok = rt && xd ? PyObject_CallMethod(torch, "can_cast", "OO", rt, xd) : NULL;
    int r = ok == NULL ? -1 : !PyObject_IsTrue(ok);
    Py_XDECREF(rt);
    Py_XDECREF(xd);
    Py_XDECREF(ok);
    if (r < 0) {
        PyErr_Clear(); /* not decidable here: torch decides when the graph runs, as before */
        return 0;
    }
    return r;
}

/* Unsupported, naming the op: "<op> <why>" (unless an error is set already). */
static void refuse(const fj_OpDef *op, PyObject *target, const char *why)
{
    if (PyErr_Occurred())
        return;
    PyObject *what = op_text(op, target);
    if (what != NULL)
        fj_unsupported_keyed(why, "%U %s", what, why);
    Py_XDECREF(what);
}

/* 1 when index key 'k' (fakes) is or holds an integer tensor (its values may be
   out of range), 0 if not, -1 on error. */
static int int_index_in(PyObject *k, int depth)
{
    if (fj_torch_is_tensor(k)) {
        PyObject *fp = PyObject_CallMethod(k, "is_floating_point", NULL);
        PyObject *dt = fp ? PyObject_GetAttrString(k, "dtype") : NULL;
        PyObject *name = dt ? PyObject_Str(dt) : NULL;
        int r = name == NULL ? -1 : !PyObject_IsTrue(fp) && PyUnicode_CompareWithASCIIString(name, "torch.bool") != 0;
        Py_XDECREF(fp);
        Py_XDECREF(dt);
        Py_XDECREF(name);
        return r;
    }
    if ((PyTuple_Check(k) || PyList_Check(k)) && depth < 8)
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(k); i++) {
            int r = int_index_in(PySequence_Fast_GET_ITEM(k, i), depth + 1);
            if (r != 0)
                return r;
        }
    return 0;
}

/*
** The dims of a torch op's tensor result 'res' when a dynamic operand or a
** symbolic size takes part and the op is not elementwise: its shape rule's
** (fj_dims_torch), or, where none models it (or the result is no tensor),
** the trace specializes, naming the op.  *dims: new tuple or NULL.  0 or -1.
*/
static int symbolic_dims(fj_Tracer *tx, const fj_OpDef *op, PyObject *target, PyObject *const *args, Py_ssize_t n,
                         PyObject *kwnames, PyObject *res, PyObject **dims)
{
    int r = 0;
    *dims = NULL;
    if (fj_torch_is_tensor(res)) {
        PyObject *size = PyObject_GetAttrString(res, "shape");
        r = size ? fj_dims_torch(tx, op, target, args, n, kwnames, size, dims) : -1;
        Py_XDECREF(size);
        if (r != 0)
            return r < 0 ? -1 : 0;
    }
    PyObject *what = op_text(op, target);
    const char *w = what ? PyUnicode_AsUTF8(what) : NULL;
    char why[240];
    snprintf(why, sizeof why, "%s on a dynamic tensor or size (a torch op whose sizes are not modelled)",
             w ? w : "a torch op");
    PyErr_Clear();
    Py_XDECREF(what);
    return fj_trace_specialize(tx, why);
}

PyObject *fj_trace_torch_node(fj_Tracer *tx, const fj_OpDef *op, PyObject *target, PyObject *targs,
                              PyObject *kwargs, PyObject *const *args, Py_ssize_t n, PyObject *kwnames)
{
    PyObject *fargs = NULL, *fkw = NULL, *res = NULL, *stem = NULL, *label = NULL, *out = NULL;
    PyObject *dims = NULL;
    if (fj_trace_torch_begin(tx) < 0)
        return NULL;
    if ((fargs = fake_arg(targs, NULL)) == NULL)
        return NULL;
    if (kwargs != NULL) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        if ((fkw = PyDict_New()) == NULL)
            goto done;
        while (PyDict_Next(kwargs, &pos, &k, &v)) {
            PyObject *fv = fake_arg(v, NULL);
            int bad = fv == NULL || PyDict_SetItem(fkw, k, fv) < 0;
            Py_XDECREF(fv);
            if (bad)
                goto done;
        }
        if (PyDict_GetItemString(fkw, "device") != NULL) {
            /* a creation op's device: the CPU's becomes the fakes' */
            PyObject *dev = PyDict_GetItemString(fkw, "device");
            int cpu = dev == Py_None ? 1 : PyUnicode_Check(dev) ? PyUnicode_CompareWithASCIIString(dev, "cpu") == 0
                                                               : PyObject_RichCompareBool(dev, fj_torch_cpu_device(), Py_EQ);
            if (cpu < 0)
                goto done;
            if (!cpu) {
                fj_unsupported("a tensor made on device %S: only the CPU is captured", dev);
                goto done;
            }
            if (PyDict_SetItemString(fkw, "device", fj_torch_meta_device()) < 0)
                goto done;
        }
    }
    if (op->kind == FJ_OP_METHOD && (PyUnicode_CompareWithASCIIString(target, "to") == 0 ||
                                     PyUnicode_CompareWithASCIIString(target, "cpu") == 0)) {
        /* t.to('cpu'), t.to(torch.device('cpu')), t.cpu() of a CPU tensor: on the fake, the
           meta device (the real one is the CPU; 'to' gives back the tensor itself) */
        if (PyUnicode_CompareWithASCIIString(target, "cpu") == 0) {
            PyObject *m = PyTuple_Pack(2, PyTuple_GET_ITEM(fargs, 0), fj_torch_meta_device());
            if (m == NULL)
                goto done;
            Py_SETREF(fargs, m);
            target = to_name();
            if (target == NULL)
                goto done;
        }
        for (Py_ssize_t i = 1; i < PyTuple_GET_SIZE(fargs); i++) {
            PyObject *a = PyTuple_GET_ITEM(fargs, i);
            int cpu = PyUnicode_Check(a) ? PyUnicode_CompareWithASCIIString(a, "cpu") == 0
                      : fj_torch_is_value(a) && Py_TYPE(a) == Py_TYPE(fj_torch_cpu_device())
                          ? PyObject_RichCompareBool(a, fj_torch_cpu_device(), Py_EQ)
                          : 0;
            if (cpu < 0)
                goto done;
            if (cpu) {
                PyObject *copy = PyTuple_GetSlice(fargs, 0, PyTuple_GET_SIZE(fargs));
                if (copy == NULL)
                    goto done;
                Py_SETREF(PyTuple_GET_ITEM(copy, i), Py_NewRef(fj_torch_meta_device()));
                Py_SETREF(fargs, copy);
            }
        }
    }
    /* creation ops with no tensor argument make their tensor on the meta device */
    if (op->kind == FJ_OP_FUNC) {
        int tensors = fj_trace_has_tensor(args, n);
        if (tensors < 0)
            goto done;
        if (!tensors && (fkw == NULL || PyDict_GetItemString(fkw, "device") == NULL)) {
            if (fkw == NULL && (fkw = PyDict_New()) == NULL)
                goto done;
            if (PyDict_SetItemString(fkw, "device", fj_torch_meta_device()) < 0)
                goto done;
        }
    }
    /* dynamic dims (automatic dynamic) pass only through elementwise ops;
       any other op on a dynamic tensor pins every dynamic input first */
    int dyn = 0;
    for (Py_ssize_t i = 0; !tx->specialized && i < n; i++) {
        int d = fj_trace_any_dynamic(args[i]);
        if (d < 0)
            goto done;
        dyn |= d;
    }
    if (fj_trace_effects_pending(tx) || tx->torch_inplace) {
        /* an error the graph raises from the data would lose the side effects it
           replays after its call (CPython has made them by then), and a backend
           that functionalizes the graph the writes into tensors before it */
        int raises = fj_torch_may_raise_on_data(op, target, fargs);
        if (!raises && (op == fj_ops_for_getitem() || op == fj_ops_for_setitem()) && PyTuple_GET_SIZE(fargs) >= 2)
            raises = int_index_in(PyTuple_GET_ITEM(fargs, 1), 0);
        if (raises < 0)
            goto done;
        if (raises) {
            refuse(op, target, "after side effects or a write into a tensor (an error it raises from the "
                               "data, such as an index out of range, would lose them)");
            goto done;
        }
    }
    if (inplace_cast_fails(op, target, fargs) != 0) {
        /* meta kernels do not check an in-place op's cast: the graph would raise
           after the side effects it replays (x *= y, x an int tensor, y a float one) */
        refuse(op, target, "of a tensor whose dtype cannot hold the result (torch raises \"result type "
                           "... can't be cast\")");
        goto done;
    }
    int pending = 0; /* the op's shape rule decides once its result's sizes are known */
    if (dyn) {
        int ew = fj_torch_is_elementwise(op, target, fargs, fkw);
        if (ew < 0 || (ew && fj_dims_broadcast(tx, args, n, &dims) < 0))
            goto done;
        pending = !ew;
    }
    /* the C rules first (torch_infer.h), then the cache, then torch's meta kernels */
    res = fj_torch_infer(op, target, fargs, fkw);
    if (res == NULL && PyErr_Occurred())
        goto done;
    if (res == NULL && (res = cached_or_meta(op, target, fargs, fkw, args, n)) == NULL)
        goto done;
    if (pending && !tx->specialized && symbolic_dims(tx, op, target, args, n, kwnames, res, &dims) < 0)
        goto done;
    if (op == &fj_torch_func_row) {
        if (func_names(target, &stem, &label) < 0)
            goto done;
    }
    else if (op->kind == FJ_OP_METHOD || op->kind == FJ_OP_ATTR)
        stem = Py_NewRef(target);
    else
        stem = PyUnicode_FromString(op->name);
    if (stem == NULL)
        goto done;
    if (res == Py_None && (op->flags & FJ_OPF_MUTATES) && n >= 1 && fj_trace_is_tensor_var(args[0])) {
        /* t[key] = v: an in-place node with t's metadata; the statement's value is None */
        fj_Node *node = fj_graph_torch_call(tx->graph, op, target, label, stem, targs, kwargs,
                                            ((fj_Node *)VAR(args[0])->obj)->fake);
        tx->torch_inplace = 1;
        if (node != NULL)
            out = (PyObject *)fj_var_const(Py_None);
        goto done;
    }
    if (fj_torch_is_tensor(res)) {
        PyObject *same = operand_with_fake(args, n, res);
        int ov = same != NULL ? inplace_reads_overlap(same, args, n) : 0;
        if (ov != 0) {
            if (ov > 0)
                refuse(op, target, "that writes a tensor another of its operands is a view of (eager torch "
                                   "raises or copies as it writes; a compiled graph reads the operand first)");
            goto done;
        }
        fj_Node *node = fj_graph_torch_call(tx->graph, op, target, label, stem, targs, kwargs, res);
        if (node == NULL) {
            PyObject *what = PyErr_ExceptionMatches(PyExc_ValueError) ? PyUnicode_FromFormat("%U's result", stem)
                                                                       : NULL;
            if (what != NULL)
                too_many_dims(what);
            Py_XDECREF(what);
            goto done;
        }
        /* an in-place op returns its operand: the same Var, so identity holds */
        if (same != NULL)
            tx->torch_inplace = 1;
        out = same != NULL ? Py_NewRef(same) : (PyObject *)fj_var_node((PyObject *)node);
        if (out != NULL && same == NULL && dims != NULL && !tx->specialized) {
            VAR(out)->dynamic = 1;
            VAR(out)->extra2 = dims;
            dims = NULL;
        }
        goto done;
    }
    if ((PyTuple_Check(res) || PyList_CheckExact(res)) && PySequence_Fast_GET_SIZE(res) > 0) {
        Py_ssize_t k = PySequence_Fast_GET_SIZE(res);
        for (Py_ssize_t i = 0; i < k; i++)
            if (!fj_torch_is_tensor(PySequence_Fast_GET_ITEM(res, i)) &&
                PySequence_Fast_GET_ITEM(res, i) != Py_None) {
                PyObject *what = op_text(op, target);
                if (what != NULL)
                    fj_unsupported("%U returns a sequence holding a %s: not captured", what,
                                   Py_TYPE(PySequence_Fast_GET_ITEM(res, i))->tp_name);
                Py_XDECREF(what);
                goto done;
            }
        /* a named tuple of torch's (torch.return_types.max) stays one: the
           node's value is it, its items and fields are read from it lazily */
        int named = PyTuple_Check(res) && !PyTuple_CheckExact(res);
        PyObject *fakes = named ? Py_NewRef(res) : PySequence_Tuple(res);
        fj_Node *node = fakes ? fj_graph_torch_call(tx->graph, op, target, label, stem, targs, kwargs, fakes)
                              : NULL;
        Py_XDECREF(fakes);
        if (node == NULL)
            goto done;
        if (named) {
            out = (PyObject *)fj_var_node((PyObject *)node);
            goto done;
        }
        const fj_OpDef *gi = fj_ops_for_getitem();
        PyObject *gt = gi ? fj_op_target(gi) : NULL, *gstem = PyUnicode_FromString("getitem");
        PyObject *items = gt && gstem ? PyList_New(k) : NULL;
        for (Py_ssize_t i = 0; items != NULL && i < k; i++) {
            if (PySequence_Fast_GET_ITEM(res, i) == Py_None) {
                /* (attn_output, None) of multi_head_attention_forward(need_weights=False) */
                fj_Var *nv = fj_var_const(Py_None);
                if (nv == NULL)
                    Py_CLEAR(items);
                else
                    PyList_SET_ITEM(items, i, (PyObject *)nv);
                continue;
            }
            PyObject *ga = Py_BuildValue("(On)", (PyObject *)node, i);
            fj_Node *item = ga ? fj_graph_torch_call(tx->graph, gi, gt, NULL, gstem, ga, NULL,
                                                     PySequence_Fast_GET_ITEM(res, i))
                               : NULL;
            Py_XDECREF(ga);
            fj_Var *iv = item ? fj_var_node((PyObject *)item) : NULL;
            if (iv == NULL)
                Py_CLEAR(items);
            else
                PyList_SET_ITEM(items, i, (PyObject *)iv);
        }
        Py_XDECREF(gstem);
        if (items != NULL)
            out = (PyObject *)fj_var_take(PyList_CheckExact(res) ? FJ_VAR_LIST : FJ_VAR_TUPLE, items);
        goto done;
    }
    {
        PyObject *what = op_text(op, target);
        if (what != NULL)
            fj_unsupported("%U returns a %s, not a tensor: not captured", what, Py_TYPE(res)->tp_name);
        Py_XDECREF(what);
    }
done:
    Py_XDECREF(dims);
    Py_XDECREF(fargs);
    Py_XDECREF(fkw);
    Py_XDECREF(res);
    Py_XDECREF(stem);
    Py_XDECREF(label);
    return out;
}

PyObject *fj_trace_torch_meta_call(fj_TFrame *fr, PyObject *fn, PyObject *const *args, Py_ssize_t n,
                                   PyObject *kwnames)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *stack[16], *res = NULL;
    Py_ssize_t filled = 0;
    if (n > 16)
        return fj_unsupported("too many arguments"), NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        /* torch.numel(t) of a dynamic tensor: pin its dims */
        int d = fj_trace_any_dynamic(args[i]);
        if (d < 0 || (d && fj_trace_specialize(fr->tx, "torch.numel of a dynamic tensor") < 0))
            return NULL;
    }
    for (; filled < n; filled++) {
        PyObject *g = fj_var_to_graph_arg(args[filled]);
        stack[filled] = g ? fake_arg(g, NULL) : NULL;
        Py_XDECREF(g);
        if (stack[filled] == NULL)
            goto done;
    }
    res = PyObject_Vectorcall(fn, stack, (size_t)(n - nkw), kwnames);
    if (res == NULL) {
        fj_trace_as_unsupported("a torch metadata function");
        goto done;
    }
    if (!fj_is_plain_constant(res)) {
        fj_unsupported("a torch metadata function returned a %s", Py_TYPE(res)->tp_name);
        Py_CLEAR(res);
        goto done;
    }
    Py_SETREF(res, (PyObject *)fj_var_const(res));
done:
    for (Py_ssize_t i = 0; i < filled; i++)
        Py_DECREF(stack[i]);
    return res;
}

/* Metadata a dynamic dim does not change (TENSOR_MATCH pins it either way). */
static int size_free(PyObject *name)
{
    static const char *const names[] = {"ndim", "dtype", "device", "requires_grad", "is_cpu", "is_meta",
                                        "is_cuda", "layout", "dim", "ndimension", "is_floating_point",
                                        "is_complex", "element_size", "itemsize", NULL};
    for (int i = 0; names[i] != NULL; i++)
        if (PyUnicode_CompareWithASCIIString(name, names[i]) == 0)
            return 1;
    return 0;
}

PyObject *fj_trace_torch_meta(PyObject *objv, PyObject *name, PyObject *const *args, Py_ssize_t n,
                              PyObject *kwnames, int attr)
{
    fj_Node *node = (fj_Node *)VAR(objv)->obj;
    PyObject *res;
    /* sizes, strides, numel of a dynamic tensor: pin its dims (the trace goes on with them) */
    if (VAR(objv)->dynamic && !size_free(name) &&
        fj_trace_specialize(fj_current_tracer, "the sizes of a dynamic tensor read") < 0)
        return NULL;
    if (attr) {
        /* the real tensor is on the CPU; its fake is on the meta device */
        const char *s = PyUnicode_AsUTF8(name);
        if (s == NULL)
            return NULL;
        if (strcmp(s, "device") == 0)
            return (PyObject *)fj_var_const(fj_torch_cpu_device());
        if (strcmp(s, "is_cpu") == 0)
            return (PyObject *)fj_var_const(Py_True);
        if (strcmp(s, "is_meta") == 0)
            return (PyObject *)fj_var_const(Py_False);
        res = PyObject_GetAttr(node->fake, name);
    }
    else {
        PyObject *stack[16];
        if (n > 15)
            return fj_unsupported("too many arguments"), NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            stack[i] = fj_var_as_const(args[i]);
            if (stack[i] == NULL || !(PyLong_CheckExact(stack[i]) || stack[i] == Py_None))
                return fj_unsupported("Tensor.%U() with an argument that is not a constant int",
                                      name),
                       NULL;
        }
        Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
        PyObject *m = PyObject_GetAttr(node->fake, name);
        res = m ? PyObject_Vectorcall(m, stack, (size_t)(n - nkw), kwnames) : NULL;
        Py_XDECREF(m);
    }
    if (res == NULL)
        return fj_trace_as_unsupported(attr ? "a tensor attribute" : "a tensor metadata method");
    PyObject *v = (PyObject *)fj_var_const(res);
    Py_DECREF(res);
    return v;
}

/* ------------------------------------------------------------ nn.Module */

/* Per-module hooks a call would run, guarded empty. */
static const char *const module_hooks[] = {"_forward_hooks", "_forward_pre_hooks", "_backward_hooks",
                                           "_backward_pre_hooks", NULL};

/* The value of 'name' in module m's instance dict, read the way guards read
   (new reference), or NULL with fj_Unsupported. */
static PyObject *module_slot(fj_Var *m, const char *name)
{
    PyObject *key = PyUnicode_FromString(name), *v = NULL;
    if (key == NULL)
        return NULL;
    int got = fj_safe_getattr(m->obj, key, &v);
    Py_DECREF(key);
    if (got <= 0) {
        if (got == 0)
            fj_unsupported("torch module %s has no %s", Py_TYPE(m->obj)->tp_name, name);
        return NULL;
    }
    return v;
}

/* Guards that the dict 'attr' of module m is empty (it is now); 0 or -1. */
static int guard_empty_dict(fj_Tracer *tx, fj_Var *m, const char *attr)
{
    PyObject *d = module_slot(m, attr);
    if (d == NULL)
        return -1;
    if (!PyDict_Check(d) || PyDict_GET_SIZE(d) > 0) {
        Py_DECREF(d);
        fj_unsupported("torch module %s has %s registered: calls of hooked modules are not "
                       "captured yet", Py_TYPE(m->obj)->tp_name, attr);
        return -1;
    }
    PyObject *name = PyUnicode_FromString(attr);
    fj_Source *src = name ? fj_source_attr(m->source, name) : NULL;
    Py_XDECREF(name);
    PyObject *mgr = src ? fj_guard_manager(tx->guards, src) : NULL;
    Py_XDECREF(src);
    PyObject *none = mgr ? PyList_New(0) : NULL;
    /* DICT_KEYS alone: a dict of any kind (torch keeps hooks in OrderedDicts)
       with no keys holds no hook */
    int r = none == NULL || fj_guard_add_dict_keys(mgr, none) < 0 ? -1 : 0;
    Py_XDECREF(none);
    Py_DECREF(d);
    return r;
}

/*
** The global module hooks (torch.nn.modules.module._global_*_hooks) stay
** empty: guarded through the module's class, whose Module._call_impl has
** torch's module as its __globals__:
** type(L['m'])._call_impl.__globals__['_global_forward_hooks'].  A hook
** registered later fails the guard, and the retrace breaks at the call.
*/
static int guard_global_hooks(fj_Tracer *tx, fj_Var *m)
{
    static const char *const names[] = {"_global_forward_hooks", "_global_forward_pre_hooks",
                                        "_global_backward_hooks", "_global_backward_pre_hooks",
                                        "_global_forward_hooks_with_kwargs",
                                        "_global_forward_hooks_always_called", NULL};
    PyObject *ci = PyUnicode_FromString("_call_impl"), *gl = PyUnicode_FromString("__globals__");
    fj_Source *tsrc = ci && gl ? fj_source_type_of(m->source) : NULL;
    fj_Source *fsrc = tsrc ? fj_source_attr(tsrc, ci) : NULL;
    fj_Source *gsrc = fsrc ? fj_source_attr(fsrc, gl) : NULL;
    int r = gsrc == NULL ? -1 : 0;
    for (int i = 0; r == 0 && names[i] != NULL; i++) {
        PyObject *key = PyUnicode_FromString(names[i]);
        fj_Source *src = key ? fj_source_item(gsrc, key) : NULL;
        PyObject *mgr = src ? fj_guard_manager(tx->guards, src) : NULL;
        PyObject *none = mgr ? PyList_New(0) : NULL;
        r = none == NULL || fj_guard_add_dict_keys(mgr, none) < 0 ? -1 : 0;
        Py_XDECREF(none);
        Py_XDECREF(src);
        Py_XDECREF(key);
    }
    Py_XDECREF(ci);
    Py_XDECREF(gl);
    Py_XDECREF(tsrc);
    Py_XDECREF(fsrc);
    Py_XDECREF(gsrc);
    if (r == 0)
        tx->torch_hooks_guarded = 1;
    return r;
}

PyObject *fj_trace_module_call(fj_TFrame *fr, fj_Var *m, PyObject *const *args, Py_ssize_t n,
                               PyObject *kwnames)
{
    fj_Tracer *tx = fr->tx;
    PyTypeObject *tp = Py_TYPE(m->obj);
    if (m->source == NULL)
        return fj_unsupported("call of a torch module with no source"), NULL;
    const char *global = fj_torch_global_hooks();
    if (global != NULL)
        return fj_unsupported("a global module hook is registered (torch.nn.modules.module.%s): "
                              "module calls are not captured", global),
               NULL;
    if (!tx->torch_hooks_guarded && guard_global_hooks(tx, m) < 0)
        return NULL;
    for (int i = 0; module_hooks[i] != NULL; i++)
        if (guard_empty_dict(tx, m, module_hooks[i]) < 0)
            return NULL;
    /* Module.__call__ with no hooks is forward(*args, **kwargs) */
    PyObject *fname = PyUnicode_FromString("forward");
    if (fname == NULL)
        return NULL;
    PyObject *fn = _PyType_Lookup(tp, fname);
    PyObject **dictp = fj_instance_dict_slot(m->obj);
    int shadowed = dictp != NULL && *dictp != NULL && PyDict_GetItemWithError(*dictp, fname) != NULL;
    if (fn == NULL || !PyFunction_Check(fn) || shadowed || PyErr_Occurred()) {
        Py_DECREF(fname);
        if (!PyErr_Occurred())
            fj_unsupported("torch module %s: its forward is not a plain Python method", tp->tp_name);
        return NULL;
    }
    /* guard: type(L['m']).forward is that function (the module's identity is guarded) */
    fj_Source *tsrc = fj_source_type_of(m->source);
    fj_Source *fsrc = tsrc ? fj_source_attr(tsrc, fname) : NULL;
    PyObject *fmgr = fsrc ? fj_guard_manager(tx->guards, fsrc) : NULL;
    Py_XDECREF(tsrc);
    Py_DECREF(fname);
    /* the function with its source: its module's globals are read through it */
    fj_Var *fv = fmgr != NULL && fj_guard_add_id_match(fmgr, fn) == 0 ? fj_var_const(fn) : NULL;
    if (fv == NULL) {
        Py_XDECREF(fsrc);
        return NULL;
    }
    fv->source = fsrc;
    PyObject *stack[FJ_MAX_METHOD_ARGS];
    PyObject *r = NULL;
    if (fj_trace_self_args(stack, (PyObject *)m, args, n) == 0) {
        tx->reentry_ok = 1; /* a Sequential inside a Sequential runs the same forward */
        r = fj_trace_inline(fr, (PyObject *)fv, stack, n + 1, kwnames);
        tx->reentry_ok = 0;
    }
    Py_DECREF(fv);
    return r;
}

PyObject *fj_trace_module_children(fj_Tracer *tx, PyObject *mv)
{
    fj_Var *m = VAR(mv);
    if (m->source == NULL)
        return fj_unsupported("a torch module with no source"), NULL;
    PyObject *d = module_slot(m, "_modules");
    if (d == NULL)
        return NULL;
    PyObject *name = PyUnicode_FromString("_modules");
    fj_Source *src = name ? fj_source_attr(m->source, name) : NULL;
    Py_XDECREF(name);
    PyObject *v = src ? (PyObject *)fj_trace_input(tx, src, d) : NULL;
    Py_XDECREF(src);
    Py_DECREF(d);
    if (v != NULL && VAR(v)->kind != FJ_VAR_DICT) {
        Py_DECREF(v);
        return fj_unsupported("torch module %s: _modules is not a plain dict", Py_TYPE(m->obj)->tp_name),
               NULL;
    }
    return v;
}

PyObject *fj_trace_module_getattr(fj_TFrame *fr, PyObject *mv, PyObject *name)
{
    /* Module.__getattr__ runs only when the generic lookup fails: it finds
       parameters, buffers and submodules in these dicts, in this order */
    static const char *const stores[] = {"_parameters", "_buffers", "_modules", NULL};
    fj_Var *m = VAR(mv);
    if (m->source == NULL)
        return fj_unsupported("attribute %U of a torch module with no source", name), NULL;
    for (int i = 0; stores[i] != NULL; i++) {
        PyObject *d = module_slot(m, stores[i]);
        if (d == NULL)
            return NULL;
        PyObject *value = PyDict_CheckExact(d) ? PyDict_GetItemWithError(d, name) : NULL;
        if (value == NULL) {
            Py_DECREF(d);
            if (PyErr_Occurred())
                return NULL;
            continue;
        }
        Py_INCREF(value);
        Py_DECREF(d);
        PyObject *sname = PyUnicode_FromString(stores[i]);
        fj_Source *ssrc = sname ? fj_source_attr(m->source, sname) : NULL;
        fj_Source *src = ssrc ? fj_source_item(ssrc, name) : NULL;
        PyObject *v = src ? (PyObject *)fj_trace_input(fr->tx, src, value) : NULL;
        Py_XDECREF(sname);
        Py_XDECREF(ssrc);
        Py_XDECREF(src);
        Py_DECREF(value);
        return v;
    }
    return fj_unsupported("torch module %s has no attribute %U", Py_TYPE(m->obj)->tp_name, name), NULL;
}

/* _testing.torch_meta_cache_clear(): forgets the cached metadata (benchmarks
   measure a process's first compiles with it). */
PyObject *fj_torch_meta_cache_clear(PyObject *mod, PyObject *unused);
PyObject *fj_torch_meta_cache_clear(PyObject *mod, PyObject *unused)
{
    Py_CLEAR(meta_cache);
    Py_RETURN_NONE;
}

int fj_trace_module_store_ok(fj_Tracer *tx, fj_Var *m, PyObject *name, PyObject *v)
{
    /* Module.__setattr__ of a value that is neither a Parameter nor a Module,
       under a name that is no parameter or submodule, stores it in __dict__
       (or in _buffers when the name is a buffer's): replaying the store with
       setattr after the graph does exactly that */
    static const char *const kept[] = {"_parameters", "_modules", NULL};
    fj_Var *vv = VAR(v);
    PyTypeObject *tp = Py_TYPE(m->obj);
    if (m->source == NULL)
        return fj_unsupported("attribute store on a torch module with no source");
    if (!fj_torch_module_setattr_is_torchs(tp))
        return fj_unsupported("attribute store on %s, whose __setattr__ is its own", tp->tp_name);
    if (fj_torch_global_hooks() != NULL)
        return fj_unsupported("attribute store on a torch module while a global module hook is registered");
    int plain = vv->kind == FJ_VAR_CONST ? fj_is_plain_constant(vv->obj) || fj_torch_is_value(vv->obj)
                : vv->kind == FJ_VAR_NODE ? 1
                : vv->kind == FJ_VAR_TUPLE || vv->kind == FJ_VAR_LIST || vv->kind == FJ_VAR_DICT;
    if (vv->kind == FJ_VAR_NODE && vv->source != NULL) {
        /* a tensor input (a buffer stored back after +=): plain unless a Parameter */
        PyObject *obj = NULL;
        int r = fj_source_fetch(vv->source, &tx->view, &obj);
        if (r < 0)
            return -1;
        plain = r > 0 && !fj_torch_is_parameter(obj);
        Py_XDECREF(obj);
    }
    if (!plain)
        return fj_unsupported("attribute store of %R on torch module %s (a parameter, module or object "
                              "whose registration is not captured)", v, tp->tp_name);
    for (int i = 0; kept[i] != NULL; i++) {
        PyObject *d = module_slot(m, kept[i]);
        if (d == NULL)
            return -1;
        int has = PyDict_Check(d) ? PyDict_Contains(d, name) : -1;
        Py_DECREF(d);
        if (has != 0) {
            if (has > 0)
                fj_unsupported("attribute store on torch module %s: %U is one of its %s", tp->tp_name,
                               name, kept[i] + 1);
            return -1;
        }
        /* and stays none of them */
        PyObject *sname = PyUnicode_FromString(kept[i]);
        fj_Source *src = sname ? fj_source_attr(m->source, sname) : NULL;
        PyObject *mgr = src ? fj_guard_manager(tx->guards, src) : NULL;
        Py_XDECREF(sname);
        Py_XDECREF(src);
        if (mgr == NULL || fj_guard_add_key_absent(mgr, name) < 0)
            return -1;
    }
    return 0;
}

PyObject *fj_trace_torch_items(fj_Tracer *tx, PyObject *v)
{
    fj_Node *node = (fj_Node *)VAR(v)->obj;
    PyObject *res = node->fake;
    Py_ssize_t k = PyTuple_GET_SIZE(res);
    const fj_OpDef *gi = fj_ops_for_getitem();
    PyObject *gt = gi ? fj_op_target(gi) : NULL, *gstem = PyUnicode_FromString("getitem");
    PyObject *items = gt && gstem ? PyList_New(k) : NULL;
    for (Py_ssize_t i = 0; items != NULL && i < k; i++) {
        fj_Var *iv;
        if (PyTuple_GET_ITEM(res, i) == Py_None) {
            iv = fj_var_const(Py_None);
        } else {
            PyObject *ga = Py_BuildValue("(On)", (PyObject *)node, i);
            fj_Node *item = ga ? fj_graph_torch_call(tx->graph, gi, gt, NULL, gstem, ga, NULL,
                                                     PyTuple_GET_ITEM(res, i))
                               : NULL;
            Py_XDECREF(ga);
            iv = item ? fj_var_node((PyObject *)item) : NULL;
        }
        if (iv == NULL)
            Py_CLEAR(items);
        else
            PyList_SET_ITEM(items, i, (PyObject *)iv);
    }
    Py_XDECREF(gstem);
    return items;
}

PyObject *fj_trace_torch_field(fj_Tracer *tx, PyObject *v, PyObject *name)
{
    /* a field of a named tuple of torch's: the item it names */
    fj_Node *node = (fj_Node *)VAR(v)->obj;
    PyObject *item = NULL;
    if (!PyTuple_CheckExact(node->fake) && fj_safe_getattr(node->fake, name, &item) == 1) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(node->fake); i++)
            if (PyTuple_GET_ITEM(node->fake, i) == item) {
                Py_DECREF(item);
                PyObject *items = fj_trace_torch_items(tx, v);
                PyObject *r = items ? Py_NewRef(PyList_GET_ITEM(items, i)) : NULL;
                Py_XDECREF(items);
                return r;
            }
        Py_DECREF(item);
    }
    PyErr_Clear();
    return fj_unsupported("attribute %U of a tuple of tensors", name), NULL;
}

/* Names of torch ops whose result is a view of their first operand. */
static const char *const view_ops[] = {
    "view", "view_as", "reshape", "reshape_as", "t", "T", "mT", "H", "mH", "transpose", "swapaxes",
    "swapdims", "permute", "movedim", "moveaxis", "squeeze", "unsqueeze", "expand", "expand_as", "narrow",
    "select", "flatten", "unflatten", "detach", "as_strided", "diagonal", "unfold", "real", "imag",
    "view_as_real", "view_as_complex", "split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit",
    "dsplit", "contiguous", "alias", "__getitem__", "getitem", NULL};

static int is_view_name(PyObject *name)
{
    for (int i = 0; name != NULL && PyUnicode_Check(name) && view_ops[i] != NULL; i++)
        if (PyUnicode_CompareWithASCIIString(name, view_ops[i]) == 0)
            return 1;
    return 0;
}

/* The node tensor node 'n' is a view of, through view ops (itself when none). */
static fj_Node *view_base(fj_Node *n)
{
    for (int depth = 0; depth < 64; depth++) {
        if (n->kind != FJ_NODE_CALL || n->op == NULL || !PyTuple_Check(n->args) || PyTuple_GET_SIZE(n->args) < 1)
            return n;
        PyObject *a0 = PyTuple_GET_ITEM(n->args, 0);
        if (!fj_Node_Check(a0) || ((fj_Node *)a0)->vkind != FJ_VAL_TENSOR)
            return n;
        int view = n->op == fj_ops_for_getitem();
        if (!view && n->op->kind == FJ_OP_METHOD)
            view = is_view_name(n->target);
        else if (!view && n->op == &fj_torch_func_row && n->target != NULL) {
            PyObject *name = PyObject_GetAttrString(n->target, "__name__");
            PyErr_Clear();
            view = is_view_name(name);
            Py_XDECREF(name);
        }
        if (!view)
            return n;
        n = (fj_Node *)a0;
    }
    return n;
}

/* True when node 'vn' is t[key] itself (x[k] += 1 stores x[k] back into x[k]). */
static int is_same_item(fj_Node *vn, fj_Node *tn, PyObject *key)
{
    if (key == NULL || vn->kind != FJ_NODE_CALL || vn->op != fj_ops_for_getitem() || !PyTuple_Check(vn->args) ||
        PyTuple_GET_SIZE(vn->args) != 2 || PyTuple_GET_ITEM(vn->args, 0) != (PyObject *)tn)
        return 0;
    PyObject *k = PyTuple_GET_ITEM(vn->args, 1);
    fj_Var *kv = (fj_Var *)key;
    if (kv->kind == FJ_VAR_NODE)
        return k == kv->obj;
    if (kv->kind != FJ_VAR_CONST || fj_Node_Check(k))
        return 0;
    /* (constant keys: ints, slices, Ellipsis, None, tuples of them: no program code runs) */
    int eq = PyObject_RichCompareBool(k, kv->obj, Py_EQ);
    if (eq < 0)
        PyErr_Clear();
    return eq > 0;
}

int fj_trace_torch_store_overlaps(PyObject *target, PyObject *value, PyObject *key)
{
    fj_Var *t = (fj_Var *)target, *v = (fj_Var *)value;
    if (t->kind != FJ_VAR_NODE || v->kind != FJ_VAR_NODE || t->obj == v->obj)
        return 0;
    fj_Node *tn = (fj_Node *)t->obj, *vn = (fj_Node *)v->obj;
    if (tn->vkind != FJ_VAL_TENSOR || vn->vkind != FJ_VAL_TENSOR || is_same_item(vn, tn, key))
        return 0;
    return view_base(tn) == view_base(vn);
}

/* An in-place op writing 'written' (a Var among args) reads another view of its
   storage: 1 (the trace refuses it: fj_trace_torch_store_overlaps), 0, -1. */
static int inplace_reads_overlap(PyObject *written, PyObject *const *args, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        int r = fj_trace_is_tensor_var(args[i]) ? fj_trace_torch_store_overlaps(written, args[i], NULL) : 0;
        if (r != 0)
            return r;
    }
    return 0;
}
