/*
** trace_call.c: the opcode families that can reach the graph: calls,
** attribute loads, subscripts, operators, truth tests.  See trace.h.
**
** An operation whose operand is an array node becomes a graph call through
** the op table (ops.c).  An operation on constants is folded here when the
** types involved are plain immutable builtins (so folding cannot run user
** code); anything else raises fj_Unsupported with the reason.
*/
#include "trace.h"
#include "torch_infer.h"

#include "builtin_ops.h"

#include "fj_numpy.h"
#include "graph.h"
#include "guard_values.h"
#include "guards.h"
#include "torchlib.h"
#include "walk.h"

#include <limits.h>

PyObject *fj_trace_var_items(fj_TFrame *fr, PyObject *v); /* trace.c */

#define VAR(o) ((fj_Var *)(o))

/* fj_unsupported("<before><repr of o><after>") without running o's __repr__. */
static int unsupported_obj(const char *before, PyObject *o, const char *after)
{
    PyObject *r = fj_trace_safe_repr(o);
    if (r == NULL)
        return -1;
    char key[128]; /* the template as the key: "call of %R is not supported" */
    PyOS_snprintf(key, sizeof(key), "%s%%R%s", before, after);
    fj_unsupported_keyed(key, "%s%U%s", before, r, after);
    Py_DECREF(r);
    return -1;
}

/* True if str 'u' equals the ASCII string 's' (PyUnicode_EqualToUTF8 is 3.13+). */

/* True for values whose operators and methods never run user code. */
static int is_safe_const(PyObject *v)
{
    if (v == Py_None || v == Py_Ellipsis || PyBool_Check(v) || PyLong_CheckExact(v) ||
        PyFloat_CheckExact(v) || PyUnicode_CheckExact(v) || PyComplex_CheckExact(v) ||
        PyBytes_CheckExact(v) || PySlice_Check(v) || PyRange_Check(v) ||
        PyArray_DescrCheck(v) || PyArray_IsScalar(v, Generic) || fj_torch_is_value(v))
        return 1;
    if (PyTuple_CheckExact(v) || PyFrozenSet_CheckExact(v)) {
        PyObject *seq = PySequence_Fast(v, "");
        if (seq == NULL) {
            PyErr_Clear();
            return 0;
        }
        int ok = 1;
        for (Py_ssize_t i = 0; ok && i < PySequence_Fast_GET_SIZE(seq); i++)
            ok = is_safe_const(PySequence_Fast_GET_ITEM(seq, i));
        Py_DECREF(seq);
        return ok;
    }
    return 0;
}

PyObject *fj_trace_as_unsupported(const char *what)
{
    if (PyErr_ExceptionMatches(fj_Unsupported))
        return NULL;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyErr_NormalizeException(&et, &ev, &tb);
    fj_unsupported("%s raises %s: %S", what, ((PyTypeObject *)et)->tp_name, ev ? ev : Py_None);
    Py_XDECREF(et);
    Py_XDECREF(ev);
    Py_XDECREF(tb);
    return NULL;
}

/*
** The Var for 'r', a value an operation folded at trace time made.  An
** immutable value is a CONST.  A list, dict or tuple of them is a container
** Var, so the code rebuilds a new object on every call (as CPython makes
** one): a mutable value is never a code constant (s.split('/') then
** del parts[-1] would change the constant).  'memo' (id -> Var) keeps
** shared and self-containing parts one Var.  Other mutable objects (sets,
** bytearrays, iterators...) are Unsupported.  New ref, NULL on error.
*/
static PyObject *folded_var(PyObject *r, PyObject *memo, int depth)
{
    if (is_safe_const(r) || PyType_Check(r) || PyModule_Check(r) || PyCFunction_Check(r) ||
        Py_TYPE(r) == &PyMethodDescr_Type)
        return (PyObject *)fj_var_const(r);
    int list = PyList_CheckExact(r), tuple = PyTuple_CheckExact(r), dict = PyDict_CheckExact(r);
    if (!list && !tuple && !dict)
        return unsupported_obj("folding makes a mutable ", (PyObject *)Py_TYPE(r), " object"), NULL;
    if (depth > 100)
        return fj_unsupported("a folded value nests too deep"), NULL;
    PyObject *key = PyLong_FromVoidPtr(r);
    if (key == NULL)
        return NULL;
    PyObject *seen = PyDict_GetItemWithError(memo, key);
    if (seen != NULL || PyErr_Occurred()) {
        Py_DECREF(key);
        return Py_XNewRef(seen);
    }
    PyObject *items = dict ? PyDict_New() : PyList_New(0);
    fj_Var *v = items ? fj_var_new(dict ? FJ_VAR_DICT : list ? FJ_VAR_LIST : FJ_VAR_TUPLE, NULL,
                                   items)
                      : NULL;
    if (v == NULL || PyDict_SetItem(memo, key, (PyObject *)v) < 0)
        goto error;
    if (dict) {
        Py_ssize_t pos = 0;
        PyObject *k, *val;
        while (PyDict_Next(r, &pos, &k, &val)) {
            if (!fj_is_plain_constant(k)) {
                unsupported_obj("folding makes a dict with key ", k, "");
                goto error;
            }
            PyObject *iv = folded_var(val, memo, depth + 1);
            int bad = iv == NULL || PyDict_SetItem(items, k, iv) < 0;
            Py_XDECREF(iv);
            if (bad)
                goto error;
        }
    }
    else {
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(r); i++) {
            PyObject *iv = folded_var(PySequence_Fast_GET_ITEM(r, i), memo, depth + 1);
            int bad = iv == NULL || PyList_Append(items, iv) < 0;
            Py_XDECREF(iv);
            if (bad)
                goto error;
        }
    }
    Py_DECREF(key);
    Py_DECREF(items);
    return (PyObject *)v;
error:
    Py_DECREF(key);
    Py_XDECREF(items);
    Py_XDECREF(v);
    return NULL;
}

/* The Var for the new reference 'r' (stolen), made by folding 'what', or NULL. */
static PyObject *const_result(PyObject *r, const char *what)
{
    if (r == NULL)
        return fj_trace_as_unsupported(what);
    if (PyArray_Check(r)) {
        /* an array folded from constants would be one mutable object shared by
           every call: let CPython make it */
        Py_DECREF(r);
        return fj_unsupported("%s makes an array from constants", what), NULL;
    }
    PyObject *memo = PyDict_New();
    PyObject *v = memo ? folded_var(r, memo, 0) : NULL;
    Py_XDECREF(memo);
    Py_DECREF(r);
    return v;
}

/* Unsupported: an argument nests tuples and lists past FJ_MAX_NEST.  NULL. */
static PyObject *nested_too_deep(void)
{
    return fj_unsupported("an array operation's argument nests lists or tuples more than %d "
                          "deep (a list that holds itself?)", FJ_MAX_NEST), NULL;
}

static PyObject *graph_arg(PyObject *v, int depth);

static PyObject *graph_arg_item(PyObject *v, void *depth)
{
    return graph_arg(v, *(int *)depth + 1);
}

/* fj_var_to_graph_arg of 'v' found 'depth' tuples and lists deep. */
static PyObject *graph_arg(PyObject *v, int depth)
{
    fj_Var *vv = VAR(v);
    switch (vv->kind) {
    case FJ_VAR_NODE:
    case FJ_VAR_CONST:
        return Py_NewRef(vv->obj);
    case FJ_VAR_TUPLE:
    case FJ_VAR_LIST:
        if (depth >= FJ_MAX_NEST)
            return nested_too_deep();
        return fj_map_items(vv->items, vv->kind == FJ_VAR_TUPLE, graph_arg_item, &depth);
    default:
        fj_unsupported("%R cannot be passed to an array operation", v);
        return NULL;
    }
}

PyObject *fj_var_to_graph_arg(PyObject *v)
{
    return graph_arg(v, 0);
}

typedef int (*NodePred)(fj_Var *);

/* fj_var_find's 'enter' for any_node (arg: a NodePred, NULL for any node). */
static int node_enter(fj_VarWalk *w, PyObject *v)
{
    fj_Var *vv = VAR(v);
    NodePred pred = *(NodePred *)w->arg;
    if (vv->kind == FJ_VAR_NODE)
        return pred == NULL || pred(vv) ? FJ_WALK_STOP : FJ_WALK_SKIP;
    return vv->kind == FJ_VAR_TUPLE || vv->kind == FJ_VAR_LIST ? FJ_WALK_INTO : FJ_WALK_SKIP;
}

/* 1 when 'v' is, or holds in tuples and lists, a NODE Var for which 'pred'
   (NULL: any) holds, 0 when not, -1 on error. */
static int any_node(PyObject *v, NodePred pred)
{
    return fj_var_find(v, FJ_PART_ITEMS, node_enter, &pred);
}

static int node_dynamic(fj_Var *node)
{
    return node->dynamic;
}

/* True for a symbolic Python int/float/bool (a Python-scalar graph node). */
static int node_pyscalar(fj_Var *node)
{
    return ((fj_Node *)node->obj)->vkind == FJ_VAL_PYSCALAR;
}

int fj_trace_any_dynamic(PyObject *v)
{
    return any_node(v, node_dynamic);
}

static int is_pyscalar(PyObject *v)
{
    return VAR(v)->kind == FJ_VAR_NODE && node_pyscalar(VAR(v));
}

/* 1 if a Python-scalar node sits somewhere in 'v', 0 if not, -1 on error. */
static int has_pyscalar(PyObject *v)
{
    return any_node(v, node_pyscalar);
}

/* A symbolic Python scalar whose value changes with a captured loop's
   iteration (the induction variable, arithmetic on it): never pinned. */
static int node_variant_scalar(fj_Var *node)
{
    return node_pyscalar(node) && ((fj_Node *)node->obj)->variant;
}

/*
** 'v' with every symbolic Python scalar replaced by its value, inside
** tuples and lists too (a tuple holding one made graph_call recurse without
** end: NumPy's arrayprint).  New reference, NULL on error.
*/
static PyObject *new_seq_var(fj_VarKind kind, PyObject *items);

static PyObject *pin_pyscalars(PyObject *v, int depth)
{
    fj_Var *a = VAR(v);
    if (depth >= FJ_MAX_NEST)
        return nested_too_deep();
    if (a->kind == FJ_VAR_NODE && ((fj_Node *)a->obj)->vkind == FJ_VAL_PYSCALAR) {
        if (((fj_Node *)a->obj)->variant)
            return fj_unsupported("a value that changes with each iteration of the loop, where a "
                                  "constant is needed"), NULL;
        return (PyObject *)fj_var_const(((fj_Node *)a->obj)->example);
    }
    int has = a->kind == FJ_VAR_TUPLE || a->kind == FJ_VAR_LIST ? has_pyscalar(v) : 0;
    if (has <= 0)
        return has < 0 ? NULL : Py_NewRef(v);
    Py_ssize_t n = PyList_GET_SIZE(a->items);
    PyObject *items = PyList_New(n);
    for (Py_ssize_t i = 0; items != NULL && i < n; i++) {
        PyObject *p = pin_pyscalars(PyList_GET_ITEM(a->items, i), depth + 1);
        if (p == NULL)
            Py_CLEAR(items);
        else
            PyList_SET_ITEM(items, i, p);
    }
    return (PyObject *)fj_var_take((fj_VarKind)a->kind, items);
}

/*
** Appends a call of 'op' to the graph with Var arguments args[0..n) of which
** the last len(kwnames) are keywords.  Returns a NODE Var (new ref) or NULL.
*/
static PyObject *graph_call(fj_TFrame *fr, const fj_OpDef *op, PyObject *const *args,
                            Py_ssize_t n, PyObject *kwnames);

PyObject *fj_trace_graph_call(fj_TFrame *fr, const struct fj_OpDef *op, PyObject *const *args,
                              Py_ssize_t n, PyObject *kwnames)
{
    return graph_call(fr, op, args, n, kwnames);
}

PyObject *fj_trace_out_arg(const fj_OpDef *op, PyObject *const *args, Py_ssize_t n,
                           PyObject *kwnames)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, npos = n - nkw;
    for (Py_ssize_t k = 0; k < nkw; k++)
        if (fj_str_is(PyTuple_GET_ITEM(kwnames, k), "out"))
            return args[npos + k];
    return npos > op->nin ? args[op->nin] : NULL;
}

/*
** True if the graph argument 'a' holds none of the program's objects: nodes,
** builtin values (fj_value_kind), dtypes, static types, NumPy scalars,
** slices, Ellipsis, and tuples/lists/dicts of these.  Anything else (an
** object, an object array's items, a class of the program's) would be run
** by the op at trace time (its __len__, __array__, __eq__ ...) and kept
** alive by the graph: sys.getrefcount and weak references would tell.
*/
static int graph_arg_is_value(PyObject *a, int depth)
{
    if (depth > 32)
        return 0;
    if (fj_Node_Check(a) || a == Py_Ellipsis || fj_value_kind(a, 0) != EQ_NONE ||
        PyArray_DescrCheck(a) || PyArray_IsScalar(a, Generic) || fj_torch_is_value(a) ||
        (PyType_Check(a) && !(((PyTypeObject *)a)->tp_flags & Py_TPFLAGS_HEAPTYPE)))
        return 1;
    if (PySlice_Check(a)) {
        PySliceObject *sl = (PySliceObject *)a;
        return graph_arg_is_value(sl->start, depth + 1) &&
               graph_arg_is_value(sl->stop, depth + 1) && graph_arg_is_value(sl->step, depth + 1);
    }
    if (PyTuple_CheckExact(a) || PyList_CheckExact(a)) {
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(a); i++)
            if (!graph_arg_is_value(PySequence_Fast_GET_ITEM(a, i), depth + 1))
                return 0;
        return 1;
    }
    if (PyDict_CheckExact(a)) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(a, &pos, &k, &v))
            if (!PyUnicode_CheckExact(k) || !graph_arg_is_value(v, depth + 1))
                return 0;
        return 1;
    }
    return 0;
}

/*
** The graph arguments of a call's Vars args[0..n) (the last len(kwnames)
** keywords): *targs a new tuple, *kwargs a new dict or NULL.  They must hold
** values only (graph_arg_is_value): an object of the program's would have
** its code run by the op at trace time and be kept alive by the graph.  0,
** or -1 (both NULL) with fj_Unsupported naming 'what'.
*/
static int graph_args(PyObject *const *args, Py_ssize_t n, PyObject *kwnames, const char *what,
                      PyObject **targs, PyObject **kwargs)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, npos = n - nkw;
    *kwargs = NULL;
    if ((*targs = PyTuple_New(npos)) == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < npos; i++) {
        PyObject *a = fj_var_to_graph_arg(args[i]);
        if (a == NULL)
            goto error;
        PyTuple_SET_ITEM(*targs, i, a);
    }
    if (nkw) {
        if ((*kwargs = PyDict_New()) == NULL)
            goto error;
        for (Py_ssize_t k = 0; k < nkw; k++) {
            PyObject *a = fj_var_to_graph_arg(args[npos + k]);
            int r = a ? PyDict_SetItem(*kwargs, PyTuple_GET_ITEM(kwnames, k), a) : -1;
            Py_XDECREF(a);
            if (r < 0)
                goto error;
        }
    }
    if (!graph_arg_is_value(*targs, 0) || (*kwargs != NULL && !graph_arg_is_value(*kwargs, 0))) {
        fj_unsupported("an argument of %s holds an object of the program's: the op would run "
                       "its code while tracing and the graph would keep it alive", what);
        goto error;
    }
    return 0;
error:
    Py_CLEAR(*targs);
    Py_CLEAR(*kwargs);
    return -1;
}

/* True for the tensor nodes among 'args' being all floating point (or complex). */
static int tensors_are_float(PyObject *const *args, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!fj_trace_is_tensor_var(args[i]))
            continue;
        PyObject *fake = ((fj_Node *)VAR(args[i])->obj)->fake;
        PyObject *f = PyObject_CallMethod(fake, "is_floating_point", NULL);
        PyObject *c = f == Py_False ? PyObject_CallMethod(fake, "is_complex", NULL) : NULL;
        int ok = f == Py_True || c == Py_True;
        Py_XDECREF(f);
        Py_XDECREF(c);
        if (PyErr_Occurred())
            return -1;
        if (!ok)
            return 0;
    }
    return 1;
}

/*
** A torch operation 'op' of 'target' on Var arguments (the last len(kwnames)
** keywords): trace_torch.c records it.  A symbolic Python scalar stays
** symbolic only as an operand of an arithmetic operator or comparison with
** floating-point tensors (its value decides no metadata there); anywhere
** else (shapes, dims, integer tensors that overflow, '**' whose type
** follows the sign) it is pinned.
*/
typedef PyObject *(*RetryFn)(fj_TFrame *fr, const fj_OpDef *op, PyObject *target, PyObject *const *args,
                             Py_ssize_t n, PyObject *kwnames);

/* True for Python int arithmetic that cannot raise on any int values: + - *
   // % (their divisor guarded != 0 by graph_call), comparisons, unary - +, on
   int constants and Python-int nodes only. */
static int int_arith_only(const fj_OpDef *op, PyObject *const *args, Py_ssize_t n)
{
    if (op->kind == FJ_OP_BINOP || op->kind == FJ_OP_INPLACE) {
        int code = op->kind == FJ_OP_INPLACE ? op->code - NB_INPLACE_ADD : op->code;
        if (code != NB_ADD && code != NB_SUBTRACT && code != NB_MULTIPLY && code != NB_FLOOR_DIVIDE &&
            code != NB_REMAINDER)
            return 0;
    }
    else if (op->kind == FJ_OP_UNARY) {
        if (op->code != FJ_UNARY_NEG && op->code != FJ_UNARY_POS)
            return 0;
    }
    else if (op->kind != FJ_OP_COMPARE)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        fj_Var *v = VAR(args[i]);
        PyObject *val = v->kind == FJ_VAR_CONST ? v->obj
                        : v->kind == FJ_VAR_NODE && ((fj_Node *)v->obj)->vkind == FJ_VAL_PYSCALAR
                            ? ((fj_Node *)v->obj)->example
                            : NULL;
        if (val == NULL || !PyLong_CheckExact(val))
            return 0;
    }
    return 1;
}

/* Pins the trace's symbolic scalars (specializing it) and calls 'fn' again
   with every symbolic scalar among the arguments replaced by its value. */
static PyObject *pinned_retry(fj_TFrame *fr, const fj_OpDef *op, PyObject *target, PyObject *const *args,
                              Py_ssize_t n, PyObject *kwnames, RetryFn fn)
{
    char why[200];
    snprintf(why, sizeof why, "%s takes a symbolic int where it needs its value", fj_op_qualname(op));
    if (fj_trace_specialize(fj_current_tracer, why) < 0)
        return NULL;
    PyObject *stack[32];
    if (n > 32)
        return fj_unsupported("too many arguments"), NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        stack[i] = pin_pyscalars(args[i], 0);
        if (stack[i] == NULL) {
            for (Py_ssize_t j = 0; j < i; j++)
                Py_DECREF(stack[j]);
            return NULL;
        }
    }
    PyObject *r = fn(fr, op, target, stack, n, kwnames);
    for (Py_ssize_t i = 0; i < n; i++)
        Py_DECREF(stack[i]);
    return r;
}

static PyObject *torch_call(fj_TFrame *fr, const fj_OpDef *op, PyObject *target, PyObject *const *args,
                            Py_ssize_t n, PyObject *kwnames)
{
    int pyscalar = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int p = has_pyscalar(args[i]);
        if (p < 0)
            return NULL;
        pyscalar |= p;
    }
    if (pyscalar) {
        int keep = (op->kind == FJ_OP_BINOP || op->kind == FJ_OP_COMPARE || op->kind == FJ_OP_UNARY ||
                    op->kind == FJ_OP_INPLACE) &&
                   op->code != NB_POWER && op->code != NB_INPLACE_POWER && !fj_current_tracer->specialized;
        for (Py_ssize_t i = 0; keep && i < n; i++)
            if (!is_pyscalar(args[i]) && VAR(args[i])->kind != FJ_VAR_NODE && has_pyscalar(args[i]))
                keep = 0;
        if (keep && (keep = tensors_are_float(args, n)) < 0)
            return NULL;
        if (!keep && !fj_current_tracer->specialized) {
            /* sizes of a view, a reshape, a new tensor: symbolic (trace_dims.c fj_dims_torch) */
            const char *params;
            int k = fj_torch_shape_rule(op, target, &params);
            keep = k == FJ_TSH_VIEW || k == FJ_TSH_CREATE || k == FJ_TSH_NEW || k == FJ_TSH_ARANGE;
            for (Py_ssize_t i = 0; keep && i < n; i++) {
                int p = has_pyscalar(args[i]);
                if (p < 0)
                    return NULL;
                keep = !p || fj_dims_shape_arg_symbolic(args[i]);
            }
        }
        if (!keep)
            return pinned_retry(fr, op, target, args, n, kwnames, torch_call);
    }
    PyObject *targs = NULL, *kwargs = NULL, *res = NULL;
    if (graph_args(args, n, kwnames, "a torch operation", &targs, &kwargs) == 0)
        res = fj_trace_torch_node(fr->tx, op, target, targs, kwargs, args, n, kwnames);
    Py_XDECREF(targs);
    Py_XDECREF(kwargs);
    return res;
}

static PyObject *graph_call(fj_TFrame *fr, const fj_OpDef *op, PyObject *const *args,
                            Py_ssize_t n, PyObject *kwnames);

static PyObject *graph_call_retry(fj_TFrame *fr, const fj_OpDef *op, PyObject *target, PyObject *const *args,
                                  Py_ssize_t n, PyObject *kwnames)
{
    (void)target; /* the row's own */
    return graph_call(fr, op, args, n, kwnames);
}

static PyObject *graph_call(fj_TFrame *fr, const fj_OpDef *op, PyObject *const *args,
                            Py_ssize_t n, PyObject *kwnames)
{
    int dynamic = 0, pyscalar = 0;
    int tensors = fj_trace_has_tensor(args, n);
    if (tensors < 0)
        return NULL;
    if (tensors) {
        /* operators and builtins reach torch's own methods; NumPy's functions do not take tensors */
        if (op->module != NULL && strcmp(op->module, "operator") != 0 && strcmp(op->module, "builtins") != 0)
            return fj_unsupported("%s on a torch tensor is not captured", fj_op_qualname(op)), NULL;
        if (op->kind == FJ_OP_METHOD || op->kind == FJ_OP_ATTR)
            return fj_unsupported("internal: a NumPy method row on a tensor"), NULL;
        return torch_call(fr, op, fj_op_target(op), args, n, kwnames);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int d = fj_trace_any_dynamic(args[i]), p = d < 0 ? -1 : has_pyscalar(args[i]);
        if (p < 0)
            return NULL;
        dynamic |= d;
        pyscalar |= p;
    }
    /* Symbolic ints flow through elementwise ops and operators; anything
       else (shapes, axes, indices) needs their value: pin them. */
    /* ** on Python scalars changes type with the sign of an operand (2 ** -1 is a
       float): specialize rather than guess */
    int sign_typed = (op->kind == FJ_OP_BINOP || op->kind == FJ_OP_INPLACE) &&
                     (op->code == NB_POWER || op->code == NB_INPLACE_POWER);
    if (sign_typed && n == 2 && VAR(args[1])->kind == FJ_VAR_CONST && PyLong_CheckExact(VAR(args[1])->obj)) {
        /* an exponent that is a non-negative int: the base's type (n ** 2) */
        int ovf = 0;
        long long e = PyLong_AsLongLongAndOverflow(VAR(args[1])->obj, &ovf);
        if (e == -1 && PyErr_Occurred())
            return NULL;
        sign_typed = ovf < 0 || (ovf == 0 && e < 0);
    }
    /* a Python int meeting an integer or bool array raises OverflowError for
       values out of the array's range (NEP 50; int64 too, from 2**63): the
       guards do not bound a symbolic int (nor Python arithmetic on one), so
       pin it */
    int narrow = 0, variant = 0;
    for (Py_ssize_t i = 0; pyscalar && i < n && !variant; i++)
        if ((variant = any_node(args[i], node_variant_scalar)) < 0)
            return NULL;
    if (variant) {
        /* a loop index flows through operators, elementwise ops and indexing
           (bounds checked by NumPy when the loop runs); a shape, an axis or
           '**' (whose type follows the sign) would need its value */
        if (sign_typed || (op->shape_rule != FJ_SH_BROADCAST && op->shape_rule != FJ_SH_GETITEM &&
                           op->shape_rule != FJ_SH_SETITEM))
            return fj_unsupported("%s needs the value of a number that changes with each iteration "
                                  "of the loop", fj_op_qualname(op)), NULL;
        pyscalar = 0;
    }
    for (Py_ssize_t i = 0; pyscalar && i < n; i++) {
        fj_Var *a = VAR(args[i]);
        fj_Node *an = a->kind == FJ_VAR_NODE ? (fj_Node *)a->obj : NULL;
        if (an != NULL && an->vkind != FJ_VAL_PYSCALAR && an->dtype != NULL && /* (an object input: none) */
            (an->dtype->kind == 'b' || an->dtype->kind == 'u' || an->dtype->kind == 'i'))
            narrow = 1;
    }
    /* a shape argument of sizes and ints (zeros(n), x.reshape(n, -1) with n =
       x.shape[0]): the result's dims are symbols (fj_dims_before_call) */
    int symshape = 0;
    Py_ssize_t slo = 0, shi = 0;
    if (pyscalar && !variant && !fj_current_tracer->specialized && fj_dims_shape_args(op, n, kwnames, &slo, &shi)) {
        symshape = 1;
        for (Py_ssize_t i = 0; symshape && i < n; i++) {
            if (i >= slo && i < shi) {
                symshape = fj_dims_shape_arg_symbolic(args[i]);
                continue;
            }
            int p = has_pyscalar(args[i]);
            if (p < 0)
                return NULL;
            symshape = !p;
        }
    }
    /* a Python-scalar divisor or shift count that is symbolic: a zero divisor
       (ZeroDivisionError) or a negative count (ValueError) would raise inside
       the graph, where the side effects it replays after the call would be
       lost; a RELATION guard keeps it away from those values (`n - 2 != 0`),
       else it is pinned */
    int raising = 0;
    if (pyscalar && !symshape && n == 2 && (op->kind == FJ_OP_BINOP || op->kind == FJ_OP_INPLACE)) {
        int code = op->kind == FJ_OP_INPLACE ? op->code - NB_INPLACE_ADD : op->code;
        fj_Var *d = VAR(args[1]), *l = VAR(args[0]);
        fj_Node *dn = d->kind == FJ_VAR_NODE ? (fj_Node *)d->obj : NULL;
        /* (an array's division by a Python scalar never raises: NumPy's inf/nan and warnings) */
        if (l->kind == FJ_VAR_NODE && ((fj_Node *)l->obj)->vkind != FJ_VAL_PYSCALAR)
            dn = NULL;
        int div = code == NB_FLOOR_DIVIDE || code == NB_TRUE_DIVIDE || code == NB_REMAINDER;
        int shift = code == NB_LSHIFT || code == NB_RSHIFT;
        if ((div || shift) && dn != NULL && dn->vkind == FJ_VAL_PYSCALAR) {
            int g = fj_current_tracer->specialized ? 1
                                                   : fj_shape_env_guard(fj_current_tracer, dn, div ? Py_NE : Py_GE, 0);
            if (g < 0)
                return NULL;
            raising = g == 0;
        }
    }
    /* after side effects the graph replays, a symbolic value must not reach an
       op that could raise for some of its values (it would lose them): Python
       int arithmetic that cannot raise (+ - *, // and % with the divisor
       guarded above, comparisons) stays symbolic; an int meeting floats or
       arrays (too big for a float above 2**1024) is guarded to fit int64; a
       shape argument (an array too big) pins */
    if (pyscalar && !raising && fj_trace_effects_pending(fj_current_tracer) && !int_arith_only(op, args, n)) {
        symshape = 0;
        for (Py_ssize_t i = 0; !raising && i < n; i++) {
            fj_Var *v = VAR(args[i]);
            fj_Node *vn = v->kind == FJ_VAR_NODE ? (fj_Node *)v->obj : NULL;
            if (vn == NULL || vn->vkind != FJ_VAL_PYSCALAR)
                continue;
            if (vn->example == NULL || !PyLong_CheckExact(vn->example)) {
                raising = 1; /* a symbolic float or bool: pinned */
                break;
            }
            int g = fj_shape_env_guard(fj_current_tracer, vn, Py_GE, LLONG_MIN);
            if (g < 0)
                return NULL;
            raising = g == 0;
        }
    }
    if (pyscalar && !symshape && (op->shape_rule != FJ_SH_BROADCAST || sign_typed || narrow || raising ||
                                  fj_current_tracer->specialized)) {
        return pinned_retry(fr, op, NULL, args, n, kwnames, graph_call_retry);
    }
    if (fj_trace_check_writeable(fr, op, args, n, kwnames) < 0)
        return NULL;
    if ((op->flags & FJ_OPF_RAISES) && fj_trace_effects_pending(fr->tx))
        return fj_unsupported("%s after side effects (an error it raises from the data would lose them)",
                              fj_op_qualname(op)), NULL;
    int datadep = 0; /* the result's data-dependent size (x[mask]): its symbol */
    int pinned_before = fj_current_tracer->specialized;
    int dd = fj_dims_datadep(fr, op, args, n, kwnames, &datadep);
    if (dd < 0)
        return NULL;
    if (dd && !pinned_before && fj_current_tracer->specialized && pyscalar)
        return graph_call(fr, op, args, n, kwnames); /* pinned just now: with the values as constants */
    PyObject *dims = NULL; /* the result's symbolic dims */
    int was_pinned = fj_current_tracer->specialized || dd; /* dd: the sizes were decided there */
    if (dynamic && !was_pinned && fj_dims_before_call(fr, op, args, n, kwnames, &dims) < 0)
        return NULL;
    if (dynamic && !was_pinned && fj_current_tracer->specialized && pyscalar) {
        /* pinned just now: run again with the values as constants */
        Py_XDECREF(dims);
        return graph_call(fr, op, args, n, kwnames);
    }
    PyObject *targs = NULL, *kwargs = NULL, *res = NULL;
    if (graph_args(args, n, kwnames, fj_op_qualname(op), &targs, &kwargs) < 0)
        goto done;
    fj_Node *node = fj_graph_call(fr->tx->body ? fr->tx->body : fr->tx->graph, op, targs, kwargs);
    if (node == NULL) {
        fr->tx->op_raised = 1;
        fj_trace_as_unsupported(fj_op_qualname(op));
        goto done;
    }
    if (node->dtype != NULL && PyDataType_REFCHK(node->dtype)) {
        /* an array of Python objects made in the frame: as for inputs (trace.c) */
        fj_unsupported("%s makes an array of Python objects (dtype %R): not captured",
                       fj_op_qualname(op), (PyObject *)node->dtype);
        goto done;
    }
    if (op->flags & FJ_OPF_OUT) {
        /* np.add(a, b, out=x) returns x itself: the same Var, so identity holds */
        PyObject *outv = fj_trace_out_arg(op, args, n, kwnames);
        if (outv != NULL && VAR(outv)->kind == FJ_VAR_NODE) {
            res = Py_NewRef(outv);
            goto done;
        }
    }
    if (datadep && node->vkind == FJ_VAL_ARRAY && node->ndim >= 1 && !(op->flags & FJ_OPF_MUTATES)) {
        node->datadep = datadep;
        node->shape[0] = FJ_DATADEP_SIZE;
    }
    res = (PyObject *)fj_var_node((PyObject *)node);
    if (res != NULL && !fj_current_tracer->specialized) {
        VAR(res)->dynamic = dynamic || node->vkind == FJ_VAL_PYSCALAR;
        if (dims != NULL && PyTuple_GET_SIZE(dims) == node->ndim)
            VAR(res)->extra2 = Py_NewRef(dims);
    }
    if (res != NULL && node->datadep) {
        /* every use that needs its sizes asks fj_trace_pin_sizes, which refuses */
        VAR(res)->dynamic = 1;
        Py_CLEAR(VAR(res)->extra2);
    }
done:
    Py_XDECREF(dims);
    Py_XDECREF(targs);
    Py_XDECREF(kwargs);
    return res;
}

static PyObject *deep_const_at(PyObject *v, int depth);
static PyObject *deep_const(PyObject *v);

/* True for a torch.Size tuple Var of symbolic sizes (t.shape of a dynamic tensor). */
static int is_size_tuple(fj_Var *v)
{
    return v->kind == FJ_VAR_TUPLE && v->extra == NULL && v->extra2 != NULL && v->extra2 == fj_torch_size_type();
}
static PyObject *symbolic_sizes(fj_TFrame *fr, PyObject *v, char what);

/* torch.Size([2, 3]) / torch.device('cpu') on constants: an immutable value. */
static PyObject *pinned_const(fj_TFrame *fr, PyObject *v);

static PyObject *torch_value_call(fj_TFrame *fr, PyObject *fn, PyObject *const *args, Py_ssize_t n)
{
    PyObject *stack[2] = {NULL, NULL};
    if (n > 2)
        return unsupported_obj("call of ", fn, " with more than 2 arguments"), NULL;
    if (fn == fj_torch_size_type() && n == 1 &&
        (VAR(args[0])->kind == FJ_VAR_TUPLE || VAR(args[0])->kind == FJ_VAR_LIST)) {
        /* torch.Size([s, 2, 3]) of ints and symbolic ints: a torch.Size of sizes */
        PyObject *items = VAR(args[0])->items;
        int ok = 1;
        for (Py_ssize_t i = 0; ok && i < PyList_GET_SIZE(items); i++) {
            fj_Var *it = VAR(PyList_GET_ITEM(items, i));
            PyObject *val = it->kind == FJ_VAR_CONST ? it->obj
                            : it->kind == FJ_VAR_NODE && node_pyscalar(it) && !((fj_Node *)it->obj)->variant
                                ? ((fj_Node *)it->obj)->example
                                : NULL;
            ok = val != NULL && PyLong_CheckExact(val);
        }
        if (ok) {
            fj_Var *r = fj_var_take(FJ_VAR_TUPLE, PyList_GetSlice(items, 0, PyList_GET_SIZE(items)));
            if (r != NULL)
                r->extra2 = Py_NewRef(fn);
            return (PyObject *)r;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if ((stack[i] = pinned_const(fr, args[i])) == NULL) {
            Py_XDECREF(stack[0]);
            return PyErr_Occurred() ? NULL
                                    : (unsupported_obj("call of ", fn, " with arguments that are not constants"),
                                       NULL);
        }
    PyObject *r = PyObject_Vectorcall(fn, stack, (size_t)n, NULL);
    for (Py_ssize_t i = 0; i < n; i++)
        Py_DECREF(stack[i]);
    return const_result(r, "a torch value");
}

/* Calls 'fn' on the constants of args (all CONST); kwnames as in CALL. */
static PyObject *fold_call(PyObject *fn, PyObject *const *args, Py_ssize_t n, PyObject *kwnames)
{
    PyObject *stack[16];
    if (n > 16)
        return fj_unsupported("too many arguments to fold"), NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        stack[i] = fj_var_as_const(args[i]);
        if (stack[i] == NULL || !is_safe_const(stack[i]))
            return unsupported_obj("call of ", fn, " with an argument that is not a plain constant"),
                   NULL;
    }
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *r = PyObject_Vectorcall(fn, stack, n - nkw, nkw ? kwnames : NULL);
    return const_result(r, "a constant call");
}

static int all_const(PyObject *const *args, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if (fj_var_as_const(args[i]) == NULL)
            return 0;
    return 1;
}

/* ---------------------------------------------------------- builtins */

static PyObject *builtin_named(const char *name)
{
    return PyDict_GetItemString(PyEval_GetBuiltins(), name);
}

static PyObject *new_seq_var(fj_VarKind kind, PyObject *items)
{
    return (PyObject *)fj_var_new(kind, NULL, items);
}

static PyObject *int_var(Py_ssize_t v)
{
    PyObject *o = PyLong_FromSsize_t(v);
    return o ? const_result(o, "len") : NULL;
}

/*
** zip(*args): an ITER Var of the rows, computed now as CPython's zip takes
** them (round robin over the argument iterators, stopping at the first
** exhausted one, after taking from those before it), so zip(it, it) pairs
** consecutive items.  The argument iterators are advanced lazily, row by
** row, through the steps in the result's 'extra' (fj_trace_iter_step).
** New ref, NULL on error.
*/
static PyObject *zip_iter(fj_TFrame *fr, PyObject *const *args, Py_ssize_t n)
{
    PyObject *its = PyList_New(0), *virt = PyDict_New(), *rows = PyList_New(0);
    PyObject *feeds = PyList_New(0), *result = NULL;
    if (its == NULL || virt == NULL || rows == NULL || feeds == NULL)
        goto done;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *it = fj_trace_make_iter(fr, args[k]);
        if (it != NULL && VAR(it)->obj != NULL && PyRange_Check(VAR(it)->obj)) {
            /* a lazy range iterator (items not listed: make_iter): listed here, as
               zip reads items; a long one is not unrolled */
            Py_ssize_t len = PyObject_Length(VAR(it)->obj);
            if (len < 0 || len > 4096) {
                Py_DECREF(it);
                if (len >= 0)
                    fj_unsupported("zip() over a range of %zd items", len);
                goto done;
            }
            if (fj_trace_iter_list(VAR(it)) < 0) /* its items listed (np.ndindex's too) */
                Py_CLEAR(it);
        }
        int bad = it == NULL || PyList_Append(its, it) < 0;
        Py_XDECREF(it);
        if (bad)
            goto done;
    }
    for (int end = n == 0; !end;) {
        PyObject *row = PyList_New(0), *feed = PyList_New(0);
        int bad = row == NULL || feed == NULL;
        for (Py_ssize_t k = 0; !bad && k < n; k++) {
            fj_Var *it = VAR(PyList_GET_ITEM(its, k));
            if (it->extra != NULL) {
                fj_unsupported("zip() over a zip()");
                bad = 1;
                break;
            }
            /* where this iterator is after the rows so far (one iterator may be
               given twice: zip(it, it)) */
            PyObject *key = PyLong_FromVoidPtr(it);
            PyObject *vp = key ? PyDict_GetItemWithError(virt, key) : NULL;
            Py_ssize_t at = vp ? PyLong_AsSsize_t(vp) : it->pos;
            PyObject *next_at = NULL, *step = NULL;
            if (key == NULL || PyErr_Occurred()) {
                bad = 1;
            }
            else if (at >= PyList_GET_SIZE(it->items)) {
                end = 1;
            }
            else {
                PyObject *item = PyList_GET_ITEM(it->items, at);
                next_at = PyLong_FromSsize_t(at + 1);
                step = next_at ? Py_BuildValue("(OnO)", (PyObject *)it, at, item) : NULL;
                bad = step == NULL || PyDict_SetItem(virt, key, next_at) < 0 ||
                      PyList_Append(feed, step) < 0 || PyList_Append(row, item) < 0;
            }
            Py_XDECREF(key);
            Py_XDECREF(next_at);
            Py_XDECREF(step);
            if (end)
                break;
        }
        PyObject *t = bad ? NULL : PyList_AsTuple(feed);
        if (t == NULL || PyList_Append(feeds, t) < 0)
            bad = 1;
        Py_XDECREF(t);
        if (!bad && !end) {
            PyObject *rv = new_seq_var(FJ_VAR_TUPLE, row);
            bad = rv == NULL || PyList_Append(rows, rv) < 0;
            Py_XDECREF(rv);
        }
        Py_XDECREF(row);
        Py_XDECREF(feed);
        if (bad)
            goto done;
    }
    if (n == 0) { /* zip(): empty, takes from nothing */
        PyObject *none = PyTuple_New(0);
        int bad = none == NULL || PyList_Append(feeds, none) < 0;
        Py_XDECREF(none);
        if (bad)
            goto done;
    }
    fj_Var *z = fj_var_new(FJ_VAR_ITER, NULL, rows);
    if (z != NULL)
        z->extra = Py_NewRef(feeds);
    result = (PyObject *)z;
done:
    Py_XDECREF(its);
    Py_XDECREF(virt);
    Py_XDECREF(rows);
    Py_XDECREF(feeds);
    return result;
}

/* The Python type a Var's runtime value will have (borrowed), or NULL. */
static PyObject *var_type(PyObject *v)
{
    fj_Var *vv = VAR(v);
    switch (vv->kind) {
    case FJ_VAR_CONST:
    case FJ_VAR_OBJ:
        return (PyObject *)Py_TYPE(vv->obj);
    case FJ_VAR_INST:
        return vv->obj;
    case FJ_VAR_TUPLE: /* (extra2: a named tuple's type, trace_multi.c) */
        return vv->extra2 != NULL ? vv->extra2 : (PyObject *)&PyTuple_Type;
    case FJ_VAR_LIST:
        return (PyObject *)&PyList_Type;
    case FJ_VAR_DICT:
        return (PyObject *)&PyDict_Type;
    case FJ_VAR_NODE: {
        fj_Node *n = (fj_Node *)vv->obj;
        if (n->vkind == FJ_VAL_ARRAY)
            return (PyObject *)&PyArray_Type;
        if (n->vkind == FJ_VAL_PYSCALAR) /* a symbolic Python int/float/bool */
            return (PyObject *)Py_TYPE(n->example);
        if (n->vkind == FJ_VAL_TENSOR) /* an op's result is a plain Tensor */
            return n->pytype != NULL ? n->pytype : fj_torch_tensor_type();
        if (n->dtype == NULL)
            return NULL;
        return (PyObject *)n->dtype->typeobj;
    }
    case FJ_VAR_FUNC:
        return (PyObject *)&PyFunction_Type;
    default:
        return NULL;
    }
}

/* 1 when 'tp' (or a base) defines __class__ (other than object's descriptor), 0 if not, -1. */
static int overrides_class_attr(PyTypeObject *tp)
{
    static PyObject *name = NULL;
    if (name == NULL && (name = PyUnicode_InternFromString("__class__")) == NULL)
        return -1;
    return _PyType_Lookup(tp, name) != _PyType_Lookup(&PyBaseObject_Type, name);
}

/*
** max(a, b, ...) and min(a, b, ...) of values of one type: NumPy scalars of
** one dtype, or Python floats, or Python ints (nodes, and constants of that
** type).  CPython's builtin keeps the first item and takes a later one when it
** compares greater (less) than the one it holds, so its result is one of its
** arguments, of their type whatever the data: the node calls the builtin
** itself (the same object, NaN kept or not as CPython keeps it).  Mixed types
** (max(m, 0.0) of a NumPy float) give a type that depends on the data: NULL,
** as for anything else it does not take.
*/
static PyObject *builtin_pick(fj_TFrame *fr, PyObject *fn, PyObject *const *args, Py_ssize_t n)
{
    PyTypeObject *tp = NULL;
    PyArray_Descr *dt = NULL;
    fj_Node *meta = NULL;
    int variant = 0, examples = 1;
    for (Py_ssize_t k = 0; k < n; k++) {
        fj_Var *v = VAR(args[k]);
        PyTypeObject *t;
        if (v->kind == FJ_VAR_NODE) {
            fj_Node *nd = (fj_Node *)v->obj;
            if (nd->vkind == FJ_VAL_NPSCALAR && nd->dtype != NULL && nd->ndim == 0 && !PyDataType_REFCHK(nd->dtype) &&
                PyArray_ISNBO(nd->dtype->byteorder) && !PyTypeNum_ISCOMPLEX(nd->dtype->type_num) &&
                (PyTypeNum_ISNUMBER(nd->dtype->type_num) || PyTypeNum_ISBOOL(nd->dtype->type_num))) {
                if (dt != NULL && !PyArray_EquivTypes(dt, nd->dtype))
                    return NULL;
                dt = nd->dtype;
                t = nd->dtype->typeobj;
                examples = 0;
            }
            else if (nd->vkind == FJ_VAL_PYSCALAR && nd->example != NULL &&
                     (PyFloat_CheckExact(nd->example) || PyLong_CheckExact(nd->example)))
                t = Py_TYPE(nd->example);
            else
                return NULL;
            if (meta == NULL)
                meta = nd;
            variant |= nd->variant;
        }
        else if (v->kind == FJ_VAR_CONST && (PyFloat_CheckExact(v->obj) || PyLong_CheckExact(v->obj)))
            t = Py_TYPE(v->obj);
        else
            return NULL;
        if (tp != NULL && t != tp)
            return NULL;
        tp = t;
    }
    if (meta == NULL)
        return NULL;
    int is_max = fn == builtin_named("max");
    PyObject *targs = PyTuple_New(n), *vals = examples ? PyTuple_New(n) : NULL;
    if (targs == NULL || (examples && vals == NULL)) {
        Py_XDECREF(targs);
        Py_XDECREF(vals);
        return NULL;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        fj_Var *v = VAR(args[k]);
        PyTuple_SET_ITEM(targs, k, Py_NewRef(v->obj));
        if (vals != NULL)
            PyTuple_SET_ITEM(vals, k, Py_NewRef(v->kind == FJ_VAR_NODE ? ((fj_Node *)v->obj)->example : v->obj));
    }
    PyObject *label = PyUnicode_FromString(is_max ? "max" : "min");
    fj_Node *node = label ? fj_graph_raw_call(fr->tx->body ? fr->tx->body : fr->tx->graph, &fj_builtin_pick_row, fn,
                                              label, label, targs, meta, 0)
                          : NULL;
    Py_XDECREF(label);
    Py_DECREF(targs);
    if (node != NULL && vals != NULL) {
        /* a Python number's value at trace time: the builtin on the arguments' */
        PyObject *ex = PyObject_Call(fn, vals, NULL);
        if (ex == NULL)
            node = NULL;
        else
            Py_XSETREF(node->example, ex);
    }
    Py_XDECREF(vals);
    if (node == NULL)
        return NULL;
    node->variant = variant;
    return (PyObject *)fj_var_node((PyObject *)node);
}

/*
** sum(a[, start]), max(a), min(a) of a 1-d NumPy array node: one graph node
** (builtin_ops.c computes what the builtin computes, item by item).  New
** ref; NULL with no error when 'a' is not such an array (the caller goes on).
*/
static PyObject *builtin_reduce(fj_TFrame *fr, PyObject *fn, PyObject *const *args, Py_ssize_t n)
{
    fj_Node *a = (fj_Node *)VAR(args[0])->obj;
    if (a->vkind != FJ_VAL_ARRAY || a->ndim != 1 || a->dtype == NULL || PyDataType_REFCHK(a->dtype))
        return NULL;
    int which = fn == builtin_named("sum") ? 0 : fn == builtin_named("max") ? 1 : 2;
    /* its length decides the result's type (an empty array's sum is 'start';
       max of one raises): a dynamic length is pinned */
    if (VAR(args[0])->dynamic && fj_trace_pin_sizes(fr->tx, args[0], which == 0 ? "builtin sum" : which == 1 ? "builtin max" : "builtin min") < 0)
        return NULL;
    if (a->shape[0] == 0)
        return which == 0 ? NULL : (fj_unsupported("%s() of an empty array raises", which == 1 ? "max" : "min"), NULL);
    if (which == 0 && a->shape[0] <= 16)
        return NULL; /* short: unrolled into the additions themselves */
    PyObject *start = n == 2 ? VAR(args[1])->obj : NULL;
    if (start != NULL && !PyLong_CheckExact(start) && !PyFloat_CheckExact(start))
        return NULL;
    /* the result's type: a NumPy scalar of the dtype (max, min), or what
       start + item gives (sum) */
    npy_intp one = 1;
    Py_INCREF(a->dtype);
    PyObject *z = PyArray_Zeros(1, &one, a->dtype, 0);
    PyObject *item = z ? PyArray_Scalar(PyArray_DATA((PyArrayObject *)z), a->dtype, z) : NULL;
    PyObject *zero = which == 0 && start == NULL ? PyLong_FromLong(0) : NULL;
    PyObject *res = item == NULL ? NULL : which == 0 ? PyNumber_Add(start ? start : zero, item) : Py_NewRef(item);
    Py_XDECREF(z);
    Py_XDECREF(item);
    Py_XDECREF(zero);
    if (res == NULL) {
        PyErr_Clear();
        return NULL;
    }
    int vkind = 0;
    PyArray_Descr *dtype = NULL;
    PyObject *example = NULL;
    int known = fj_value_meta(res, &vkind, &dtype, &example);
    Py_DECREF(res);
    Py_XDECREF(example);
    if (known <= 0 || vkind != FJ_VAL_NPSCALAR) {
        Py_XDECREF(dtype);
        if (known < 0)
            PyErr_Clear();
        return NULL;
    }
    static const char *names[] = {"sum", "max", "min"};
    PyObject *label = PyUnicode_FromString(names[which]);
    PyObject *targs = start ? PyTuple_Pack(2, (PyObject *)a, start) : PyTuple_Pack(1, (PyObject *)a);
    fj_Node *node = label && targs ? fj_graph_raw_call(fr->tx->body ? fr->tx->body : fr->tx->graph,
                                                      &fj_builtin_reduce_row, fj_builtin_reduce_fn(which), label,
                                                      label, targs, NULL, FJ_VAL_NPSCALAR)
                                   : NULL;
    Py_XDECREF(label);
    Py_XDECREF(targs);
    if (node == NULL) {
        Py_XDECREF(dtype);
        return NULL;
    }
    node->dtype = dtype;
    node->ndim = 0;
    return (PyObject *)fj_var_node((PyObject *)node);
}

/* True for a Var that is a Python int: a constant (not a bool) or a Python-int node. */
static int int_bound(PyObject *v, int *node)
{
    fj_Var *vv = VAR(v);
    *node = 0;
    if (vv->kind == FJ_VAR_CONST)
        return PyLong_CheckExact(vv->obj);
    if (vv->kind != FJ_VAR_NODE)
        return 0;
    fj_Node *nd = (fj_Node *)vv->obj;
    *node = 1;
    return nd->vkind == FJ_VAL_PYSCALAR && nd->example != NULL && PyLong_CheckExact(nd->example);
}

/*
** range(start, stop[, step]) with a Python-int node among start and stop (a
** loop index, a symbolic int): an FJ_VAR_RANGE Var (trace.h), or NULL
** without an exception when the arguments are constants (folded as usual)
** or not ints (the caller's break), NULL with Unsupported for a step that is
** not a nonzero constant.
*/
static PyObject *symbolic_range(PyObject *const *args, Py_ssize_t n)
{
    int nodes = 0, node;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (!int_bound(args[k], &node))
            return NULL;
        nodes += node;
    }
    if (nodes == 0)
        return NULL;
    PyObject *zero = PyLong_FromLong(0), *one = PyLong_FromLong(1);
    fj_Var *zv = zero ? fj_var_const(zero) : NULL, *ov = one ? fj_var_const(one) : NULL;
    Py_XDECREF(zero);
    Py_XDECREF(one);
    PyObject *start = n >= 2 ? args[0] : (PyObject *)zv, *stop = n >= 2 ? args[1] : args[0];
    PyObject *step = n == 3 ? args[2] : (PyObject *)ov;
    PyObject *r = NULL;
    if (zv == NULL || ov == NULL)
        goto done;
    if (VAR(step)->kind != FJ_VAR_CONST || PyObject_Not(VAR(step)->obj) != 0) {
        fj_unsupported("range() whose step is not a nonzero constant");
        goto done;
    }
    PyObject *t = PyTuple_Pack(3, start, stop, step);
    fj_Var *rv = t ? fj_var_new(FJ_VAR_RANGE, NULL, NULL) : NULL;
    if (rv != NULL)
        rv->extra = Py_NewRef(t);
    Py_XDECREF(t);
    r = (PyObject *)rv;
done:
    Py_XDECREF(zv);
    Py_XDECREF(ov);
    return r;
}

/* Handles a call of a builtin; returns NULL with no exception if not handled. */
static PyObject *call_builtin(fj_TFrame *fr, PyObject *fn, PyObject *const *args, Py_ssize_t n,
                              PyObject *kwnames)
{
    if (!PyCFunction_Check(fn) && !PyType_Check(fn))
        return NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (fn == builtin_named("len") && n == 1) {
        fj_Var *a = VAR(args[0]);
        if (a->kind == FJ_VAR_TUPLE || a->kind == FJ_VAR_LIST)
            return int_var(PyList_GET_SIZE(a->items));
        if (a->kind == FJ_VAR_DICT)
            return int_var(PyDict_GET_SIZE(a->items));
        if (a->kind == FJ_VAR_OBJ && a->source != NULL && PySet_CheckExact(a->obj))
            return fj_trace_set_len(fr, a);
        if (a->kind == FJ_VAR_NODE) {
            fj_Node *nd = (fj_Node *)a->obj;
            if (a->dynamic && nd->ndim > 0 && (nd->vkind == FJ_VAL_ARRAY || nd->vkind == FJ_VAL_TENSOR)) {
                PyObject *sz = symbolic_sizes(fr, (PyObject *)a, 'l');
                if (sz != NULL || PyErr_Occurred())
                    return sz;
            }
            if (a->dynamic && fj_trace_pin_sizes(fr->tx, (PyObject *)a, "len()") < 0)
                return NULL;
            if ((nd->vkind == FJ_VAL_ARRAY || nd->vkind == FJ_VAL_TENSOR) && nd->ndim > 0)
                return int_var(nd->shape[0]);
            return fj_unsupported("len() of a 0-d array, tensor or NumPy scalar"), NULL;
        }
        if (a->kind == FJ_VAR_OBJ && fj_torch_module_container(a->obj)) {
            PyObject *mods = fj_trace_module_children(fr->tx, (PyObject *)a);
            PyObject *r = mods ? int_var(PyDict_GET_SIZE(VAR(mods)->items)) : NULL;
            Py_XDECREF(mods);
            return r;
        }
        return fold_call(fn, args, n, kwnames);
    }
    if (fn == builtin_named("isinstance") && n == 2 && nkw == 0) {
        PyObject *cls = fj_var_as_const(args[1]);
        PyObject *tp = var_type(args[0]);
        if (cls == NULL || tp == NULL)
            return fj_unsupported("isinstance() with unknown type"), NULL;
        int ok = PyObject_IsSubclass(tp, cls);
        if (ok < 0)
            return fj_trace_as_unsupported("isinstance");
        /* when type(obj) is not a subclass, CPython's isinstance reads
           obj.__class__: a class that overrides it (a property) would run
           its code, which the tracer does not */
        int over = ok ? 0 : overrides_class_attr((PyTypeObject *)tp);
        if (over != 0)
            return over < 0 ? NULL
                            : (unsupported_obj("isinstance() of an instance of ", tp,
                                               ", which overrides __class__"),
                               NULL);
        return (PyObject *)fj_var_const(ok ? Py_True : Py_False);
    }
    if (fn == (PyObject *)&PyType_Type && n == 1) {
        PyObject *tp = var_type(args[0]);
        if (tp == NULL)
            return fj_unsupported("type() of %R", args[0]), NULL;
        return (PyObject *)fj_var_const(tp);
    }
    if (fn == (PyObject *)&PyTuple_Type && n == 1 && nkw == 0 &&
        ((fj_Var *)args[0])->kind == FJ_VAR_TUPLE && ((fj_Var *)args[0])->extra2 == NULL)
        return Py_NewRef(args[0]); /* an exact tuple: tuple(t) is t (a named tuple's is a new tuple) */
    if ((fn == (PyObject *)&PyTuple_Type || fn == (PyObject *)&PyList_Type) && n <= 1 &&
        nkw == 0) {
        PyObject *items = n ? fj_trace_var_items(fr, args[0]) : PyList_New(0);
        return (PyObject *)fj_var_take(
            fn == (PyObject *)&PyTuple_Type ? FJ_VAR_TUPLE : FJ_VAR_LIST, items);
    }
    if (fn == (PyObject *)&PyDict_Type && n == nkw) {
        PyObject *d = PyDict_New();
        for (Py_ssize_t k = 0; d && k < nkw; k++) {
            if (PyDict_SetItem(d, PyTuple_GET_ITEM(kwnames, k), args[k]) < 0)
                Py_CLEAR(d);
        }
        return (PyObject *)fj_var_take(FJ_VAR_DICT, d);
    }
    if (fn == (PyObject *)&PyEnum_Type && nkw == 0 && (n == 1 || n == 2)) {
        PyObject *start = n == 2 ? fj_var_as_const(args[1]) : NULL;
        Py_ssize_t s = 0;
        if (n == 2) {
            if (start == NULL || !PyLong_CheckExact(start))
                return fj_unsupported("enumerate() start is not a constant int"), NULL;
            s = PyLong_AsSsize_t(start);
        }
        PyObject *items = fj_trace_var_items(fr, args[0]);
        if (items == NULL)
            return NULL;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
            PyObject *pair = PyList_New(2);
            PyObject *iv = pair ? int_var(s + i) : NULL;
            if (iv == NULL) {
                Py_XDECREF(pair);
                Py_DECREF(items);
                return NULL;
            }
            PyList_SET_ITEM(pair, 0, iv);
            PyList_SET_ITEM(pair, 1, Py_NewRef(PyList_GET_ITEM(items, i)));
            PyObject *t = new_seq_var(FJ_VAR_TUPLE, pair);
            Py_DECREF(pair);
            if (t == NULL) {
                Py_DECREF(items);
                return NULL;
            }
            PyList_SetItem(items, i, t);
        }
        return (PyObject *)fj_var_take(FJ_VAR_ITER, items);
    }
    if (fn == (PyObject *)&PyZip_Type && nkw == 0)
        return zip_iter(fr, args, n);
    if (fn == (PyObject *)&PyReversed_Type && n == 1 && nkw == 0) {
        PyObject *items = fj_trace_var_items(fr, args[0]);
        if (items == NULL || PyList_Reverse(items) < 0) {
            Py_XDECREF(items);
            return NULL;
        }
        return (PyObject *)fj_var_take(FJ_VAR_ITER, items);
    }
    if (fn == builtin_named("iter") && n == 1) {
        PyObject *items = fj_trace_var_items(fr, args[0]);
        return (PyObject *)fj_var_take(FJ_VAR_ITER, items);
    }
    if ((fn == builtin_named("sum") || fn == builtin_named("max") || fn == builtin_named("min")) && nkw == 0 &&
        (n == 1 || (n == 2 && fn == builtin_named("sum") && VAR(args[1])->kind == FJ_VAR_CONST)) &&
        VAR(args[0])->kind == FJ_VAR_NODE) {
        PyObject *r = builtin_reduce(fr, fn, args, n);
        if (r != NULL || PyErr_Occurred())
            return r;
    }
    if (fn == builtin_named("sum") && n >= 1 && nkw == 0 && !all_const(args, n)) {
        PyObject *items = fj_trace_var_items(fr, args[0]);
        if (items == NULL)
            return NULL;
        PyObject *acc = NULL;
        if (n == 2)
            acc = Py_NewRef(args[1]);
        else {
            PyObject *zero = PyLong_FromLong(0);
            acc = zero ? const_result(zero, "sum") : NULL;
        }
        for (Py_ssize_t i = 0; acc && i < PyList_GET_SIZE(items); i++)
            Py_SETREF(acc, fj_trace_binop(fr, NB_ADD, acc, PyList_GET_ITEM(items, i)));
        Py_DECREF(items);
        return acc;
    }
    if ((fn == builtin_named("max") || fn == builtin_named("min")) && nkw == 0 && n >= 2 && !all_const(args, n)) {
        PyObject *r = builtin_pick(fr, fn, args, n);
        if (r != NULL || PyErr_Occurred())
            return r;
    }
    if ((fn == builtin_named("max") || fn == builtin_named("min")) && !all_const(args, n))
        return fj_unsupported(n >= 2 ? "%s() of values of different types or of arrays (its result, one of "
                                       "them, depends on the data)"
                                     : "%s() of arrays (a data-dependent comparison)",
                              fn == builtin_named("max") ? "max" : "min"),
               NULL;
    if (fn == builtin_named("getattr") && (n == 2) && nkw == 0) {
        PyObject *name = fj_var_as_const(args[1]);
        if (name == NULL || !PyUnicode_Check(name))
            return fj_unsupported("getattr() with a name that is not a constant str"), NULL;
        return fj_trace_getattr(fr, args[0], name);
    }
    if (fn == builtin_named("abs") && n == 1 && VAR(args[0])->kind == FJ_VAR_NODE)
        return fj_trace_unary(fr, -1, args[0]);
    if (fn == (PyObject *)&PyFloat_Type || fn == (PyObject *)&PyLong_Type ||
        fn == (PyObject *)&PyBool_Type || fn == (PyObject *)&PyComplex_Type ||
        fn == (PyObject *)&PyUnicode_Type) {
        for (Py_ssize_t i = 0; i < n; i++)
            if (VAR(args[i])->kind == FJ_VAR_NODE && !is_pyscalar(args[i]))
                return fj_unsupported("%s() of an array value (data-dependent)",
                                      ((PyTypeObject *)fn)->tp_name),
                       NULL;
        return fold_call(fn, args, n, kwnames);
    }
    if (PyType_Check(fn) && PyType_IsSubtype((PyTypeObject *)fn, &PyGenericArrType_Type)) {
        /* NumPy scalar types (np.float32(2.5), np.int64(n)): immutable results */
        for (Py_ssize_t i = 0; i < n; i++)
            if (VAR(args[i])->kind == FJ_VAR_NODE)
                return fj_unsupported("%s() of an array value", ((PyTypeObject *)fn)->tp_name),
                       NULL;
        return fold_call(fn, args, n, kwnames);
    }
    if (fn == builtin_named("range") && nkw == 0 && n >= 1 && n <= 3) {
        PyObject *r = symbolic_range(args, n);
        if (r != NULL || PyErr_Occurred())
            return r;
    }
    static const char *pure[] = {"abs",   "min",   "max",   "round", "divmod", "pow",
                                 "range", "slice", "hash",  "ord",   "chr",    "sorted",
                                 "any",   "all",   "repr",  "format", "callable", NULL};
    for (int k = 0; pure[k]; k++)
        if (fn == builtin_named(pure[k]))
            return fold_call(fn, args, n, kwnames);
    return NULL;
}

/* True for C functions of modules whose functions are pure on plain constants. */
static int is_pure_module_function(PyObject *fn)
{
    if (!PyCFunction_Check(fn))
        return 0;
    PyObject *self = PyCFunction_GET_SELF(fn);
    if (self == NULL || !PyModule_Check(self))
        return 0;
    const char *name = PyModule_GetName(self);
    if (name == NULL) {
        PyErr_Clear();
        return 0;
    }
    return strcmp(name, "math") == 0 || strcmp(name, "cmath") == 0 ||
           strcmp(name, "operator") == 0 || strcmp(name, "_operator") == 0;
}

/* ------------------------------------------------------------ methods */

static int nonzero_tuple(fj_TFrame *fr, PyObject *a, PyObject **out, PyObject *fn);

/* True when 'o' is a np.random.Generator (its exact type; numpy imported already). */
static int is_np_generator(PyObject *o)
{
    static PyObject *gen_type = NULL;
    if (gen_type == NULL) {
        PyObject *name = PyUnicode_FromString("numpy.random");
        PyObject *m = name ? PyImport_GetModule(name) : NULL;
        Py_XDECREF(name);
        gen_type = m ? PyObject_GetAttrString(m, "Generator") : NULL;
        Py_XDECREF(m);
        if (gen_type != NULL && !PyType_Check(gen_type))
            Py_CLEAR(gen_type);
        PyErr_Clear();
    }
    return gen_type != NULL && (PyObject *)Py_TYPE(o) == gen_type;
}

/*
** The graph input standing for the generator of OBJ Var 'g' (an input, its
** type guarded): an FJ_VAL_OBJECT placeholder whose value each call is the
** generator itself, made once per Var.  A NODE Var (borrowed: 'g' keeps it
** in extra2), or NULL with Unsupported.
*/
static PyObject *generator_input(fj_TFrame *fr, fj_Var *g)
{
    fj_Tracer *tx = fr->tx;
    if (g->extra2 != NULL)
        return g->extra2;
    if (g->source == NULL)
        return fj_unsupported("a np.random.Generator made in the frame is not a graph input"), NULL;
    PyObject *name = fj_source_placeholder_name(g->source);
    fj_Node *node = name ? fj_graph_placeholder(tx->graph, name, Py_Ellipsis) : NULL;
    Py_XDECREF(name);
    fj_Var *v = node ? fj_var_node((PyObject *)node) : NULL;
    if (v == NULL)
        return NULL;
    v->source = (fj_Source *)Py_NewRef((PyObject *)g->source);
    if (PyList_Append(tx->placeholders, (PyObject *)v) < 0) {
        Py_DECREF(v);
        return NULL;
    }
    g->extra2 = (PyObject *)v; /* the reference */
    return g->extra2;
}

/*
** t.size(), t.size(d), t.numel() of a dynamic tensor whose sizes are
** modelled: symbolic ints (a torch.Size of them), as symbolic_sizes; NULL
** with no error when not (the caller pins), NULL with an error on failure.
*/
static PyObject *tensor_size_call(fj_TFrame *fr, PyObject *self, PyObject *name, PyObject *const *args,
                                  Py_ssize_t n, PyObject *kwnames)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    int size = PyUnicode_CompareWithASCIIString(name, "size") == 0;
    if (n == 0 && (size || PyUnicode_CompareWithASCIIString(name, "numel") == 0))
        return symbolic_sizes(fr, self, size ? 's' : 'n');
    if (!size || n != 1 || (nkw == 1 && PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "dim") != 0))
        return NULL;
    PyObject *dv = fj_var_as_const(args[0]);
    if (dv == NULL || !PyLong_CheckExact(dv))
        return NULL;
    int nd = ((fj_Node *)VAR(self)->obj)->ndim, ovf = 0;
    long d = PyLong_AsLongAndOverflow(dv, &ovf);
    if (ovf || d < -nd || d >= nd)
        return NULL; /* out of range: torch raises (on the fake, after the pin) */
    return fj_dims_size(fr, self, (int)(d < 0 ? d + nd : d));
}

static PyObject *call_method(fj_TFrame *fr, fj_Var *m, PyObject *const *args, Py_ssize_t n,
                             PyObject *kwnames)
{
    fj_Var *self = VAR(m->extra);
    PyObject *name = m->obj;
    /* args[0] is self when the call came through LOAD_METHOD's two slots */
    if (fj_trace_is_tensor_var((PyObject *)self)) {
        const char *why = NULL;
        if (fj_torch_method_is_meta(name) && self->dynamic) {
            PyObject *sz = tensor_size_call(fr, (PyObject *)self, name, args, n, kwnames);
            if (sz != NULL || PyErr_Occurred())
                return sz;
        }
        if (fj_torch_method_is_meta(name))
            return fj_trace_torch_meta((PyObject *)self, name, args, n, kwnames, 0);
        if (!fj_torch_method_ok(name, &why)) {
            if (why != NULL)
                fj_unsupported_keyed(why, "%s", why);
            else
                fj_unsupported("Tensor.%U() is not captured", name);
            return NULL;
        }
        PyObject *stack[FJ_MAX_METHOD_ARGS];
        if (fj_trace_self_args(stack, (PyObject *)self, args, n) < 0)
            return NULL;
        return torch_call(fr, &fj_torch_method_row, name, stack, n + 1, kwnames);
    }
    if (self->kind == FJ_VAR_OBJ && is_np_generator(self->obj)) {
        const fj_OpDef *op = fj_ops_for_generator_method(name);
        PyObject *gv = op ? generator_input(fr, self) : NULL;
        if (gv == NULL)
            return op ? NULL : (fj_unsupported("method np.random.Generator.%U is not supported", name), NULL);
        PyObject *stack[FJ_MAX_METHOD_ARGS];
        if (fj_trace_self_args(stack, gv, args, n) < 0)
            return NULL;
        return graph_call(fr, op, stack, n + 1, kwnames);
    }
    if (self->kind == FJ_VAR_NODE) {
        if (n == 0 && (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0) && fj_str_is(name, "nonzero")) {
            PyObject *t = NULL;
            int r = nonzero_tuple(fr, (PyObject *)self, &t, NULL);
            if (r != 0)
                return t;
        }
        const fj_OpDef *op = fj_ops_for_method(name);
        if (op == NULL)
            return fj_unsupported("ndarray.%U is not supported", name), NULL;
        PyObject *stack[FJ_MAX_METHOD_ARGS];
        if (fj_trace_self_args(stack, (PyObject *)self, args, n) < 0)
            return NULL;
        return graph_call(fr, op, stack, n + 1, kwnames);
    }
    if (self->kind == FJ_VAR_INST)
        return fj_trace_inst_method(fr, self, name, args, n, kwnames);
    if (fj_trace_is_set_method((PyObject *)self, name))
        return fj_trace_set_method(fr, self, name, args, n, kwnames);
    if (self->kind == FJ_VAR_LIST)
        return fj_trace_list_method(fr, self, name, args, n, kwnames);
    if (self->kind == FJ_VAR_DICT)
        return fj_trace_dict_method(fr, self, name, args, n, kwnames);
    if (self->kind == FJ_VAR_TUPLE &&
        (fj_str_is(name, "index") || fj_str_is(name, "count"))) {
        PyObject *items = fj_trace_var_items(fr, (PyObject *)self);
        PyObject *consts = items ? PyTuple_New(PyList_GET_SIZE(items)) : NULL;
        for (Py_ssize_t i = 0; consts && i < PyList_GET_SIZE(items); i++) {
            PyObject *c = fj_var_as_const(PyList_GET_ITEM(items, i));
            if (c == NULL) {
                Py_CLEAR(consts);
                fj_unsupported("tuple.%U over non-constant items", name);
                break;
            }
            PyTuple_SET_ITEM(consts, i, Py_NewRef(c));
        }
        Py_XDECREF(items);
        if (consts == NULL)
            return NULL;
        PyObject *bound = PyObject_GetAttr(consts, name);
        Py_DECREF(consts);
        if (bound == NULL)
            return NULL;
        PyObject *r = fold_call(bound, args, n, kwnames);
        Py_DECREF(bound);
        return r;
    }
    if (self->kind == FJ_VAR_CONST && is_safe_const(self->obj)) {
        PyObject *bound = PyObject_GetAttr(self->obj, name);
        if (bound == NULL)
            return fj_trace_as_unsupported("attribute lookup");
        PyObject *r = fold_call(bound, args, n, kwnames);
        Py_DECREF(bound);
        return r;
    }
    if (self->kind == FJ_VAR_OBJ) {
        /* a plain Python method of the object's class: inline it with self */
        PyObject *fn = _PyType_Lookup(Py_TYPE(self->obj), name);
        if (fn != NULL && PyFunction_Check(fn) && self->source != NULL) {
            PyObject *stack[FJ_MAX_METHOD_ARGS];
            if (fj_trace_self_args(stack, (PyObject *)self, args, n) < 0)
                return NULL;
            /* guard: type(L['self']).name is that function */
            fj_Source *tsrc = fj_source_type_of(self->source);
            fj_Source *fsrc = tsrc ? fj_source_attr(tsrc, name) : NULL;
            PyObject *fmgr = fsrc ? fj_guard_manager(fr->tx->guards, fsrc) : NULL;
            Py_XDECREF(tsrc);
            /* with its source: a method from another module reads that module's globals */
            fj_Var *fv = fmgr != NULL && fj_guard_add_id_match(fmgr, fn) == 0 ? fj_var_const(fn) : NULL;
            if (fv == NULL) {
                Py_XDECREF(fsrc);
                return NULL;
            }
            fv->source = fsrc;
            PyObject *r = fj_trace_inline(fr, (PyObject *)fv, stack, n + 1, kwnames);
            Py_DECREF(fv);
            return r;
        }
    }
    return fj_unsupported("call of method %U on %R", name, (PyObject *)self), NULL;
}

/* numpy's own function 'name' of its core module 'sub' (numpy._core.<sub>, or
   numpy.core.<sub> before NumPy 2), never what the numpy namespace holds now (a
   program may have replaced that).  New reference, or NULL (no exception). */
static PyObject *numpy_own(const char *sub, const char *name)
{
    char path[64];
    PyObject *r = NULL;
    for (int k = 0; k < 2 && r == NULL; k++) {
        snprintf(path, sizeof path, "numpy.%s.%s", k == 0 ? "_core" : "core", sub);
        PyObject *m = PyImport_ImportModule(path);
        r = m ? PyObject_GetAttrString(m, name) : NULL;
        Py_XDECREF(m);
        PyErr_Clear();
    }
    return r;
}

/*
** np.nonzero(a), np.where(a) and a.nonzero() for a one-dimensional array 'a':
** the tuple (np.flatnonzero(a),), the array NumPy returns (flatnonzero is
** nonzero(ravel(a))[0]); its size depends on the data (trace_dims.c).  1 with
** *out the tuple Var, 0 when 'a' is not such an array, -1 on error.
*/
static int nonzero_tuple(fj_TFrame *fr, PyObject *a, PyObject **out, PyObject *fn)
{
    static PyObject *flat = NULL, *own_nonzero = NULL;
    fj_Node *an = VAR(a)->kind == FJ_VAR_NODE ? (fj_Node *)VAR(a)->obj : NULL;
    *out = NULL;
    if (an != NULL && an->vkind == FJ_VAL_ARRAY && an->ndim >= 2 && an->dtype != NULL) {
        /* a tuple of ndim index arrays: one call of NumPy's (trace_multi.c) */
        if (fn == NULL && own_nonzero == NULL && (own_nonzero = numpy_own("fromnumeric", "nonzero")) == NULL)
            return fj_unsupported("np.nonzero: numpy's nonzero not found");
        *out = fj_trace_nonzero_nd(fr, fn ? fn : own_nonzero, a);
        return *out ? 1 : -1;
    }
    if (an == NULL || an->vkind != FJ_VAL_ARRAY || an->ndim != 1 || an->dtype == NULL)
        return 0;
    if (flat == NULL && (flat = numpy_own("numeric", "flatnonzero")) == NULL)
        return fj_unsupported("np.nonzero: numpy's flatnonzero not found");
    const fj_OpDef *op = fj_ops_for_callable(flat);
    if (op == NULL)
        return fj_unsupported("np.nonzero: no flatnonzero row");
    PyObject *r = graph_call(fr, op, &a, 1, NULL);
    PyObject *items = r ? PyList_New(1) : NULL;
    if (items == NULL) {
        Py_XDECREF(r);
        return -1;
    }
    PyList_SET_ITEM(items, 0, r);
    *out = new_seq_var(FJ_VAR_TUPLE, items);
    Py_DECREF(items);
    return *out ? 1 : -1;
}

int fj_trace_is_np_nonzero(PyObject *fn)
{
    static PyObject *nz = NULL, *wh = NULL;
    if (nz == NULL) {
        PyObject *name = PyUnicode_FromString("numpy");
        PyObject *np = name ? PyImport_GetModule(name) : NULL; /* only once numpy is imported */
        Py_XDECREF(name);
        if (np != NULL) {
            Py_DECREF(np);
            nz = numpy_own("fromnumeric", "nonzero");
            wh = nz ? numpy_own("multiarray", "where") : NULL;
        }
        if (wh == NULL)
            Py_CLEAR(nz);
        PyErr_Clear();
    }
    return nz != NULL && (fn == nz || fn == wh);
}

PyObject *fj_trace_call(fj_TFrame *fr, PyObject *fnv, PyObject *const *args, Py_ssize_t n,
                        PyObject *kwnames)
{
    fj_Var *f = VAR(fnv);
    if (f->kind == FJ_VAR_METHOD) {
        /* LOAD_METHOD pushed (method, self): args[0] is self */
        if (n >= 1 && args[0] == f->extra)
            return call_method(fr, f, args + 1, n - 1, kwnames);
        return call_method(fr, f, args, n, kwnames);
    }
    if (f->kind == FJ_VAR_FUNC)
        return fj_trace_inline(fr, fnv, args, n, kwnames);
    if (f->kind == FJ_VAR_OBJ && fj_torch_is_module(f->obj))
        return fj_trace_module_call(fr, f, args, n, kwnames);
    if (f->kind != FJ_VAR_CONST)
        return fj_unsupported("call of %R is not supported", fnv), NULL;
    PyObject *fn = f->obj;
    int tk = fj_torch_callable_kind(fn);
    if (tk == FJ_TORCH_OP)
        return torch_call(fr, &fj_torch_func_row, fn, args, n, kwnames);
    if (tk == FJ_TORCH_META)
        return fj_trace_torch_meta_call(fr, fn, args, n, kwnames);
    if (PyType_Check(fn) && fj_torch_is_value_type(fn) && (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0))
        return torch_value_call(fr, fn, args, n);
    if (tk == FJ_TORCH_STATE_READ) {
        /* what it reads is pinned by GLOBAL_STATE */
        if (fj_trace_torch_begin(fr->tx) < 0 || !all_const(args, n))
            return PyErr_Occurred() ? NULL
                                    : (unsupported_obj("", fn, " with arguments that are not constants"), NULL);
        return fold_call(fn, args, n, kwnames);
    }
    if (tk == FJ_TORCH_STATEFUL)
        return unsupported_obj("", fn, " reads or changes torch's global state (or is not an "
                                   "operation on tensors): not captured"),
               NULL;
    if (n == 1 && (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0) && fj_trace_is_np_nonzero(fn)) {
        PyObject *t = NULL;
        int r = nonzero_tuple(fr, args[0], &t, fn);
        if (r != 0)
            return t;
    }
    {
        int handled = 0;
        PyObject *mr = fj_trace_multi_call(fr, fn, args, n, kwnames, &handled);
        if (handled)
            return mr;
        mr = fj_trace_nd_call(fr, fn, args, n, kwnames, &handled);
        if (handled)
            return mr;
    }
    const fj_OpDef *op = fj_trace_ops_for(fn);
    if (op != NULL) {
        int nodes = 0;
        for (Py_ssize_t i = 0; i < n && nodes == 0; i++)
            nodes = any_node(args[i], NULL);
        if (nodes < 0)
            return NULL;
        /* array creation functions make a fresh array on every call: always a graph op */
        if (nodes || (op->flags & FJ_OPF_CREATES))
            return graph_call(fr, op, args, n, kwnames);
        if (all_const(args, n)) {
            PyObject *r = fold_call(fn, args, n, kwnames);
            if (r != NULL && PyArray_Check(fj_var_as_const(r))) {
                /* a mutable array folded from constants would be one object shared
                   by every call: let CPython make it */
                Py_DECREF(r);
                return fj_unsupported("%s on constants makes an array", fj_op_qualname(op)), NULL;
            }
            return r;
        }
        return fj_unsupported("%s with arguments that are neither arrays nor constants",
                              fj_op_qualname(op)),
               NULL;
    }
    if (PyFunction_Check(fn))
        return fj_trace_inline(fr, fnv, args, n, kwnames);
    if (fj_trace_is_plain_class(fnv))
        return fj_trace_new_instance(fr, fnv, args, n, kwnames);
    if (PyMethod_Check(fn) && PyFunction_Check(PyMethod_GET_FUNCTION(fn)))
        return unsupported_obj("call of bound method ", fn, ""), NULL;
    PyObject *r = call_builtin(fr, fn, args, n, kwnames);
    if (r != NULL || PyErr_Occurred())
        return r;
    if (is_pure_module_function(fn))
        return fold_call(fn, args, n, kwnames);
    return unsupported_obj("call of ", fn, " is not supported"), NULL;
}

/* --------------------------------------------------------- attributes */

static PyObject *wrap_attr(fj_TFrame *fr, fj_Var *owner, PyObject *name, PyObject *value)
{
    /* an attribute of an immutable constant (its type and value are guarded,
       e.g. a NumPy scalar argument's .dtype) is itself a constant */
    if (owner->kind == FJ_VAR_CONST && is_safe_const(owner->obj) && is_safe_const(value))
        return (PyObject *)fj_var_const(value);
    if (owner->source != NULL) {
        fj_Source *src = fj_source_attr(owner->source, name);
        if (src == NULL)
            return NULL;
        PyObject *v = (PyObject *)fj_trace_input(fr->tx, src, value);
        Py_DECREF(src);
        return v;
    }
    if (is_safe_const(value) || PyModule_Check(value) || PyCFunction_Check(value) ||
        PyType_Check(value) || PyFunction_Check(value))
        return (PyObject *)fj_var_const(value);
    return fj_unsupported("attribute %U of a value with no source", name), NULL;
}

static PyObject *method_var(PyObject *self, PyObject *name)
{
    fj_Var *m = fj_var_new(FJ_VAR_METHOD, name, NULL);
    if (m != NULL)
        m->extra = Py_NewRef(self);
    return (PyObject *)m;
}


/* The break for attribute 'name' of an object of type 'tp' whose class holds
   descriptor 'd' (not a Python function): a method called by its public name
   (np.random.Generator.normal, torch.Tensor.sum), else the descriptor.  NULL. */
static PyObject *descriptor_unsupported(PyTypeObject *tp, PyObject *name, PyObject *d)
{
    PyObject *tname = fj_trace_public_name((PyObject *)tp);
    int method = Py_TYPE(d)->tp_call != NULL && Py_TYPE(d)->tp_descr_set == NULL;
    if (tname == NULL)
        tname = PyUnicode_FromString(tp->tp_name);
    if (tname == NULL)
        return NULL;
    if (method)
        fj_unsupported("method %U.%U is not supported", tname, name);
    else
        fj_unsupported("attribute %U of %U is a descriptor its class computes (a property)", name, tname);
    Py_DECREF(tname);
    return NULL;
}

/*
** The sizes of dynamic array Var 'v' read by the program, where its dims are
** modelled (trace_dims.c): 's' x.shape (a tuple of ints and symbolic ints),
** 'n' x.size (their product), 'l' len(x).  A symbolic size is the input's
** <source>.shape[d] (fj_trace_size_input): the graph serves every size the
** guards let through.  NULL with no error when not modelled (the caller
** pins), NULL with an error on failure.  A tensor's 's' is a torch.Size
** (the tuple Var's extra2), rebuilt as one where it leaves the trace.
*/
static PyObject *symbolic_sizes(fj_TFrame *fr, PyObject *v, char what)
{
    fj_Node *n = (fj_Node *)VAR(v)->obj;
    if (n->vkind != FJ_VAL_ARRAY && n->vkind != FJ_VAL_TENSOR)
        return NULL;
    if (what == 'l')
        return fj_dims_size(fr, v, 0);
    PyObject *items = PyList_New(0);
    for (int d = 0; items != NULL && d < n->ndim; d++) {
        PyObject *s = fj_dims_size(fr, v, d);
        if (s == NULL || PyList_Append(items, s) < 0)
            Py_CLEAR(items);
        Py_XDECREF(s);
    }
    if (items == NULL)
        return NULL;
    if (what == 's') {
        /* a tensor's is a torch.Size: rebuilt as one where it leaves the trace */
        fj_Var *t = fj_var_take(FJ_VAR_TUPLE, items);
        if (t != NULL && n->vkind == FJ_VAL_TENSOR)
            t->extra2 = Py_XNewRef(fj_torch_size_type());
        return (PyObject *)t;
    }
    PyObject *one = PyLong_FromLong(1);
    PyObject *r = one ? (PyObject *)fj_var_const(one) : NULL;
    Py_XDECREF(one);
    for (Py_ssize_t d = 0; r != NULL && d < PyList_GET_SIZE(items); d++)
        Py_SETREF(r, fj_trace_binop(fr, NB_MULTIPLY, r, PyList_GET_ITEM(items, d)));
    Py_DECREF(items);
    return r;
}

/*
** A symbolic Python int/float/bool used as a Python object (an attribute,
** a method, float(n)): pinned, then its value.  New ref to a CONST Var.
*/
static PyObject *pinned_scalar(fj_TFrame *fr, fj_Var *o)
{
    if (((fj_Node *)o->obj)->variant)
        return fj_unsupported("a value that changes with each iteration of the loop, used as a "
                              "Python object"), NULL;
    if (fj_trace_specialize(fr->tx, "a symbolic int used as a Python object") < 0)
        return NULL;
    return (PyObject *)fj_var_const(((fj_Node *)o->obj)->example);
}

/* A torch.Size Var of symbolic sizes (t.shape of a dynamic tensor) made a
   constant: the trace pinned, then the torch.Size of the items' values.  New
   ref to a CONST Var. */
static PyObject *pinned_size(fj_TFrame *fr, fj_Var *o)
{
    if (fj_trace_specialize(fr->tx, "a torch.Size of symbolic sizes used as a Python object") < 0)
        return NULL;
    Py_ssize_t k = PyList_GET_SIZE(o->items);
    PyObject *t = PyTuple_New(k);
    for (Py_ssize_t i = 0; t != NULL && i < k; i++) {
        fj_Var *it = VAR(PyList_GET_ITEM(o->items, i));
        PyObject *val = it->kind == FJ_VAR_CONST ? it->obj
                        : it->kind == FJ_VAR_NODE && !((fj_Node *)it->obj)->variant ? ((fj_Node *)it->obj)->example
                                                                                     : NULL;
        if (val == NULL || !PyLong_CheckExact(val)) {
            Py_DECREF(t);
            return fj_unsupported("a torch.Size whose sizes are not known ints"), NULL;
        }
        PyTuple_SET_ITEM(t, i, Py_NewRef(val));
    }
    PyObject *sz = t ? PyObject_CallOneArg(o->extra2, t) : NULL;
    Py_XDECREF(t);
    PyObject *r = sz ? (PyObject *)fj_var_const(sz) : NULL;
    Py_XDECREF(sz);
    return r;
}

PyObject *fj_trace_getattr(fj_TFrame *fr, PyObject *objv, PyObject *name)
{
    fj_Var *o = VAR(objv);
    if (is_pyscalar(objv)) {
        PyObject *c = pinned_scalar(fr, o);
        PyObject *r = c ? fj_trace_getattr(fr, c, name) : NULL;
        Py_XDECREF(c);
        return r;
    }
    if (o->kind == FJ_VAR_NODE && ((fj_Node *)o->obj)->vkind == FJ_VAL_TENSORS)
        return fj_trace_torch_field(fr->tx, objv, name);
    if (is_size_tuple(o) && o->source == NULL) {
        /* s.numel(), s.index(...) of a torch.Size of symbolic sizes: pinned, then the
           method of the torch.Size of their values */
        PyObject *c = pinned_size(fr, o);
        PyObject *r = c ? fj_trace_getattr(fr, c, name) : NULL;
        Py_XDECREF(c);
        return r;
    }
    if (o->kind == FJ_VAR_TUPLE && o->extra2 != NULL && o->source == NULL)
        return fj_trace_multi_field(o, name);
    if (fj_trace_is_tensor_var(objv)) {
        int ak = fj_torch_attr_kind(name);
        if (ak == 1 && o->dynamic && PyUnicode_CompareWithASCIIString(name, "shape") == 0) {
            PyObject *sz = symbolic_sizes(fr, objv, 's');
            if (sz != NULL || PyErr_Occurred())
                return sz;
        }
        if (ak == 1)
            return fj_trace_torch_meta(objv, name, NULL, 0, NULL, 1);
        if (ak == 2)
            return torch_call(fr, &fj_torch_attr_row, name, &objv, 1, NULL);
        const char *why = NULL;
        int ok = fj_torch_method_ok(name, &why);
        if (ok || why != NULL) {
            /* a refused method (backward, item) is refused at its call: the
               break then falls on the CALL, where the frame can resume */
            PyObject *m = PyObject_GetAttr(((fj_Node *)o->obj)->fake, name);
            int callable = m != NULL && PyCallable_Check(m);
            Py_XDECREF(m);
            PyErr_Clear();
            if (callable)
                return method_var(objv, name);
        }
        if (why != NULL)
            return fj_unsupported_keyed(why, "%s", why), NULL;
        return fj_unsupported("Tensor.%U is not captured (an attribute that is neither metadata "
                              "nor a tensor op)", name),
               NULL;
    }
    if (o->kind == FJ_VAR_NODE) {
        PyObject *st = fj_ops_static_attr((fj_Node *)o->obj, name);
        if (st != NULL && o->dynamic && (fj_str_is(name, "shape") || fj_str_is(name, "size"))) {
            PyObject *sz = symbolic_sizes(fr, objv, fj_str_is(name, "shape") ? 's' : 'n');
            if (sz != NULL || PyErr_Occurred()) {
                Py_DECREF(st);
                return sz;
            }
        }
        if (st != NULL) {
            /* shape, size, nbytes of a dynamic array whose sizes are not
               modelled: its dims must be pinned (ndim, dtype and itemsize
               never change under a dynamic guard) */
            if (o->dynamic && !fj_str_is(name, "ndim") && !fj_str_is(name, "dtype") &&
                !fj_str_is(name, "itemsize") && fj_trace_pin_sizes(fr->tx, (PyObject *)o, PyUnicode_AsUTF8(name)) < 0) {
                Py_DECREF(st);
                return NULL;
            }
            return const_result(st, "attribute");
        }
        if (PyErr_Occurred())
            return NULL;
        const fj_OpDef *op = fj_ops_for_attr(name);
        if (op != NULL)
            return graph_call(fr, op, &objv, 1, NULL);
        if (fj_ops_for_method(name) != NULL || fj_str_is(name, "nonzero"))
            return method_var(objv, name); /* (nonzero: call_method, one-dimensional arrays) */
        return fj_unsupported("ndarray attribute %U is not supported", name), NULL;
    }
    if (o->kind == FJ_VAR_CONST) {
        PyObject *obj = o->obj;
        if (PyModule_Check(obj) || PyType_Check(obj) || is_safe_const(obj)) {
            /* read the way guards read: never a module's __getattr__ (NumPy's
               deprecated aliases warn from theirs), a metaclass property or
               any other code of the program's */
            PyObject *v = NULL;
            int got = fj_safe_getattr(obj, name, &v);
            if (got < 0)
                return fj_trace_as_unsupported("attribute lookup");
            if (got == 0 && (v = fj_torch_vf_attr(obj, name)) != NULL) {
                /* the same function whatever the module's state: a constant */
                PyObject *r = (PyObject *)fj_var_const(v);
                Py_DECREF(v);
                return r;
            }
            if (got == 0) {
                /* named without repr(): a module's repr reads its __file__,
                   through its __getattr__ */
                PyObject *label = PyModule_Check(obj)  ? PyModule_GetNameObject(obj)
                                  : PyType_Check(obj) ? PyType_GetQualName((PyTypeObject *)obj)
                                                      : PyUnicode_FromString(Py_TYPE(obj)->tp_name);
                if (label == NULL) {
                    PyErr_Clear();
                    if ((label = PyUnicode_FromString("?")) == NULL)
                        return NULL;
                }
                fj_unsupported("attribute %U of %s %U is not readable without running the "
                               "program's code (a module __getattr__, a property, a metaclass)",
                               name, PyModule_Check(obj) ? "module" : "type", label);
                Py_DECREF(label);
                return NULL;
            }
            PyObject *r;
            if (is_safe_const(obj) && (PyCFunction_Check(v) || Py_TYPE(v) == &PyMethodDescr_Type ||
                                       PyObject_TypeCheck(v, &PyMethod_Type)))
                r = method_var(objv, name);
            else
                r = wrap_attr(fr, o, name, v);
            Py_DECREF(v);
            return r;
        }
        return fj_unsupported("attribute %U of %R", name, obj), NULL;
    }
    if (o->kind == FJ_VAR_OBJ) {
        PyObject *obj = o->obj;
        PyTypeObject *tp = Py_TYPE(obj);
        if (o->extra != NULL) {
            /* an attribute the trace itself stored: its new value */
            PyObject *stored = PyDict_GetItemWithError(o->extra, name);
            if (stored != NULL && VAR(stored)->kind == FJ_VAR_NULL)
                return fj_unsupported("attribute %U deleted by the trace", name), NULL;
            if (stored != NULL)
                return Py_NewRef(stored);
            if (PyErr_Occurred())
                return NULL;
        }
        if (fj_trace_is_set_method(objv, name))
            return method_var(objv, name);
        if (is_np_generator(obj) && fj_ops_for_generator_method(name) != NULL)
            return method_var(objv, name); /* a draw: call_method */
        if (fj_torch_is_module(obj) && tp->tp_getattro != PyObject_GenericGetAttr &&
            fj_only_getattr_hook(tp)) {
            PyObject *d = _PyType_Lookup(tp, name), *v = NULL;
            if (d != NULL && PyFunction_Check(d))
                return method_var(objv, name);
            int got = fj_safe_getattr(obj, name, &v);
            if (got < 0)
                return fj_trace_as_unsupported("attribute lookup");
            if (got == 0 && d != NULL)
                return descriptor_unsupported(tp, name, d);
            if (got == 0)
                return fj_trace_module_getattr(fr, objv, name);
            PyObject *r = wrap_attr(fr, o, name, v);
            Py_DECREF(v);
            return r;
        }
        if (tp->tp_getattro != PyObject_GenericGetAttr)
            return fj_unsupported("attribute %U of %s, which customizes attribute access", name,
                                  tp->tp_name),
                   NULL;
        PyObject *d = _PyType_Lookup(tp, name);
        if (d != NULL && PyFunction_Check(d))
            return method_var(objv, name);
        if (d != NULL && Py_TYPE(d)->tp_descr_get != NULL)
            return descriptor_unsupported(tp, name, d);
        PyObject *v = PyObject_GetAttr(obj, name);
        if (v == NULL)
            return fj_trace_as_unsupported("attribute lookup");
        PyObject *r = wrap_attr(fr, o, name, v);
        Py_DECREF(v);
        return r;
    }
    if ((o->kind == FJ_VAR_LIST || o->kind == FJ_VAR_DICT || o->kind == FJ_VAR_TUPLE))
        return method_var(objv, name);
    if (o->kind == FJ_VAR_INST)
        return fj_trace_inst_getattr(fr, o, name);
    return fj_unsupported("attribute %U of %R", name, objv), NULL;
}

int fj_trace_setattr(fj_TFrame *fr, PyObject *objv, PyObject *name, PyObject *v)
{
    fj_Var *o = VAR(objv), *vv = VAR(v);
    fj_Tracer *tx = fr->tx;
    if (tx->loop != NULL && !fj_loop_made_here(tx, o)) /* the body is traced once: a store to an
                                                          object from before it would happen once */
        return fj_unsupported("an attribute store in the loop's body");
    if (o->kind == FJ_VAR_INST)
        return fj_trace_inst_setattr(fr, o, name, v);
    if (o->kind == FJ_VAR_OBJ && fj_torch_is_module(o->obj)) {
        if (fj_trace_module_store_ok(tx, o, name, v) < 0)
            return -1;
    }
    else if (fj_trace_attr_in_dict(objv, name, "store", " (a side effect outside the frame)") < 0)
        return -1;
    if (vv->kind == FJ_VAR_ITER || vv->kind == FJ_VAR_METHOD || vv->kind == FJ_VAR_CELL ||
        vv->kind == FJ_VAR_NULL)
        return fj_unsupported("attribute store of %R", v);
    return fj_trace_record_store(tx, Py_BuildValue("(sOOO)", "attr", name, v, objv), objv, name,
                                 v);
}

/*
** True (Unsupported raised) if the input container 'c' holds an object with
** a finalizer (__del__) as a key or item: a mutation replayed after the graph
** that drops it would run the finalizer later than CPython does (test_dict:
** a __del__ that clears the dict being iterated).
*/
static int finalizes(PyObject *o)
{
    if (fj_Var_Check(o)) {
        fj_Var *v = (fj_Var *)o;
        if ((v->kind != FJ_VAR_CONST && v->kind != FJ_VAR_OBJ) || v->obj == NULL)
            return 0;
        o = v->obj;
    }
    PyTypeObject *t = Py_TYPE(o);
    if (t->tp_finalize == NULL && t->tp_del == NULL)
        return 0;
    fj_unsupported("mutating a container that holds a %s (its finalizer would run later than in CPython)",
                   t->tp_name);
    return 1;
}

static int finalizes_item(PyObject *item, PyObject *key, void *unused)
{
    return (key != NULL && finalizes(key)) || finalizes(item);
}

static int holds_finalizable(fj_Var *c)
{
    return fj_var_visit_items(c->items, finalizes_item, NULL);
}

int fj_trace_note_mutation(fj_Tracer *tx, fj_Var *c)
{
    if (tx->loop != NULL && !fj_loop_made_here(tx, c)) /* the body is traced once: the change would
                                                          happen once */
        return fj_unsupported("a list, dict or set made before the loop changes in its body");
    if (c->source == NULL)
        return 0; /* made in the frame: rebuilt after the graph if it escapes */
    if (c->kind != FJ_VAR_LIST && c->kind != FJ_VAR_DICT)
        return fj_unsupported("mutation of %R", (PyObject *)c);
    if (c->pos) {
        /* already recorded: its final contents are replayed once; note when its
           length has changed meanwhile (see FJ_VAR_LIST in fj_trace_list_resized) */
        if (c->kind == FJ_VAR_LIST && c->extra == NULL &&
            PyList_GET_SIZE(c->items) != PyLong_AsSsize_t(c->extra2))
            c->extra = Py_NewRef(Py_True);
        return 0;
    }
    if (holds_finalizable(c))
        return -1;
    if (c->split_dict)
        /* the replay (clear, then update) would leave another layout than
           CPython's own mutation does (sys.getsizeof: test_dict
           test_splittable_popitem) */
        return fj_unsupported("mutation of %U, a dict sharing its keys with other instances' __dict__",
                              c->source->text);
    c->pos = 1;
    if (c->kind == FJ_VAR_LIST && (c->extra2 = PyLong_FromSsize_t(PyList_GET_SIZE(c->items))) == NULL)
        return -1;
    PyObject *eff = Py_BuildValue("(sOO)", "container", Py_None, (PyObject *)c);
    int r = eff == NULL || PyList_Append(tx->effects, eff) < 0 ||
                    PyList_Append(tx->mutated, (PyObject *)c) < 0
                ? -1
                : 0;
    Py_XDECREF(eff);
    return r;
}

int fj_trace_list_resized(fj_Var *c)
{
    return c->kind == FJ_VAR_LIST && c->pos && c->extra2 != NULL &&
           (c->extra != NULL || PyList_GET_SIZE(c->items) != PyLong_AsSsize_t(c->extra2));
}

int fj_trace_alias_guards(fj_Tracer *tx)
{
    Py_ssize_t nm = tx->mutated ? PyList_GET_SIZE(tx->mutated) : 0;
    if (nm == 0)
        return 0;
    /* every mutable input the trace read: objects, lists, dicts */
    PyObject *others = PyList_New(0);
    if (others == NULL)
        return -1;
    Py_ssize_t pos = 0;
    PyObject *text, *var;
    while (PyDict_Next(tx->inputs, &pos, &text, &var)) {
        fj_Var *v = VAR(var);
        if ((v->kind == FJ_VAR_OBJ || v->kind == FJ_VAR_LIST || v->kind == FJ_VAR_DICT) &&
            v->source != NULL && PyList_Append(others, (PyObject *)v->source) < 0) {
            Py_DECREF(others);
            return -1;
        }
    }
    int r = 0;
    for (Py_ssize_t i = 0; r == 0 && i < nm; i++) {
        fj_Source *ms = VAR(PyList_GET_ITEM(tx->mutated, i))->source;
        for (Py_ssize_t j = 0; r == 0 && j < PyList_GET_SIZE(others); j++) {
            PyObject *os = PyList_GET_ITEM(others, j);
            if (os == (PyObject *)ms)
                continue;
            /* aliased right now: the trace's view of the other was wrong */
            PyObject *a = NULL, *b = NULL;
            int got = fj_source_fetch(ms, &tx->view, &a);
            if (got > 0)
                got = fj_source_fetch((fj_Source *)os, &tx->view, &b);
            int same_obj = got > 0 && a == b;
            Py_XDECREF(a);
            Py_XDECREF(b);
            if (got < 0) {
                r = -1;
                break;
            }
            if (same_obj) {
                r = fj_unsupported("%U is mutated and is the same object as %U", ms->text,
                                   ((fj_Source *)os)->text);
                break;
            }
            PyObject *pair = PyTuple_Pack(2, (PyObject *)ms, os);
            r = pair == NULL ? -1 : fj_guard_add_no_aliasing(tx->guards, pair);
            Py_XDECREF(pair);
        }
    }
    Py_DECREF(others);
    return r;
}

int fj_trace_load_method(fj_TFrame *fr, PyObject *obj, PyObject *name, PyObject **out)
{
    PyObject *m = fj_trace_getattr(fr, obj, name);
    if (m == NULL)
        return -1;
    if (VAR(m)->kind == FJ_VAR_METHOD && VAR(m)->extra == obj) {
        /* marked as the first half of a (method, self) pair: break code
           reloads the pair with LOAD_METHOD (a bound method value followed by
           its self, as in 'o.f = o.m', is not such a pair) */
        out[0] = method_var(obj, name);
        Py_DECREF(m);
        if (out[0] == NULL)
            return -1;
        VAR(out[0])->pos = 1;
        out[1] = Py_NewRef(obj);
    }
    else {
        /* a plain attribute (e.g. a module's function): NULL, callable */
        fj_Var *nv = fj_var_new(FJ_VAR_NULL, NULL, NULL);
        if (nv == NULL) {
            Py_DECREF(m);
            return -1;
        }
        out[0] = (PyObject *)nv;
        out[1] = m;
    }
    return 0;
}

/* ---------------------------------------------------------- operators */

static PyObject *fold_binop(int oparg, PyObject *a, PyObject *b)
{
    switch (oparg) {
    case NB_ADD: case NB_INPLACE_ADD: return PyNumber_Add(a, b);
    case NB_SUBTRACT: case NB_INPLACE_SUBTRACT: return PyNumber_Subtract(a, b);
    case NB_MULTIPLY: case NB_INPLACE_MULTIPLY: return PyNumber_Multiply(a, b);
    case NB_TRUE_DIVIDE: case NB_INPLACE_TRUE_DIVIDE: return PyNumber_TrueDivide(a, b);
    case NB_FLOOR_DIVIDE: case NB_INPLACE_FLOOR_DIVIDE: return PyNumber_FloorDivide(a, b);
    case NB_REMAINDER: case NB_INPLACE_REMAINDER: return PyNumber_Remainder(a, b);
    case NB_POWER: case NB_INPLACE_POWER: return PyNumber_Power(a, b, Py_None);
    case NB_MATRIX_MULTIPLY: case NB_INPLACE_MATRIX_MULTIPLY: return PyNumber_MatrixMultiply(a, b);
    case NB_LSHIFT: case NB_INPLACE_LSHIFT: return PyNumber_Lshift(a, b);
    case NB_RSHIFT: case NB_INPLACE_RSHIFT: return PyNumber_Rshift(a, b);
    case NB_AND: case NB_INPLACE_AND: return PyNumber_And(a, b);
    case NB_OR: case NB_INPLACE_OR: return PyNumber_Or(a, b);
    case NB_XOR: case NB_INPLACE_XOR: return PyNumber_Xor(a, b);
    }
    PyErr_SetString(PyExc_SystemError, "framejit: bad BINARY_OP arg");
    return NULL;
}

static PyObject *concat_seq(fj_Var *a, fj_Var *b)
{
    PyObject *items = PyList_GetSlice(a->items, 0, PyList_GET_SIZE(a->items));
    if (items == NULL || PyList_SetSlice(items, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, b->items) < 0) {
        Py_XDECREF(items);
        return NULL;
    }
    return (PyObject *)fj_var_take(a->kind, items);
}

PyObject *fj_trace_binop(fj_TFrame *fr, int oparg, PyObject *a, PyObject *b)
{
    fj_Var *va = VAR(a), *vb = VAR(b);
    if (va->kind == FJ_VAR_NODE || vb->kind == FJ_VAR_NODE) {
        int inplace = oparg >= NB_INPLACE_ADD;
        /* An in-place operator on an array is an in-place graph op: the eager
           graph runs ops in program order on the real objects, so the input
           (or the array a view shares memory with) changes as in CPython.
           On a Python operand it computes a new value, as CPython does. */
        int keep_inplace = inplace && va->kind == FJ_VAR_NODE;
        const fj_OpDef *op = fj_ops_for_binop(keep_inplace || !inplace ? oparg
                                                                       : oparg - NB_INPLACE_ADD);
        if (op == NULL)
            return fj_unsupported("operator %s on arrays is not supported", fj_ops_binop_symbol(oparg)),
                   NULL;
        PyObject *args[2] = {a, b};
        return graph_call(fr, op, args, 2, NULL);
    }
    PyObject *ca = fj_var_as_const(a), *cb = fj_var_as_const(b);
    if (ca != NULL && cb != NULL && is_safe_const(ca) && is_safe_const(cb))
        return const_result(fold_binop(oparg, ca, cb), "a constant operation");
    int base = oparg >= NB_INPLACE_ADD ? oparg - NB_INPLACE_ADD : oparg;
    if (base == NB_ADD && (is_size_tuple(va) || is_size_tuple(vb)) &&
        (va->kind == FJ_VAR_TUPLE || (ca != NULL && PyTuple_Check(ca))) &&
        (vb->kind == FJ_VAR_TUPLE || (cb != NULL && PyTuple_Check(cb)))) {
        /* s[:-1] + (2, 3) of a torch.Size of sizes: a torch.Size (either side's) */
        PyObject *ia = va->kind == FJ_VAR_TUPLE ? Py_NewRef(va->items) : fj_trace_const_items(ca);
        PyObject *ib = ia && vb->kind == FJ_VAR_TUPLE ? Py_NewRef(vb->items) : ia ? fj_trace_const_items(cb) : NULL;
        PyObject *items = ib ? PyList_GetSlice(ia, 0, PyList_GET_SIZE(ia)) : NULL;
        if (items != NULL && PyList_SetSlice(items, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, ib) < 0)
            Py_CLEAR(items);
        Py_XDECREF(ia);
        Py_XDECREF(ib);
        fj_Var *r = items ? fj_var_take(FJ_VAR_TUPLE, items) : NULL;
        if (r != NULL)
            r->extra2 = Py_XNewRef(fj_torch_size_type());
        return (PyObject *)r;
    }
    if (base == NB_ADD && (va->kind == FJ_VAR_TUPLE || va->kind == FJ_VAR_LIST) &&
        vb->kind == va->kind) {
        if (oparg == NB_INPLACE_ADD && va->kind == FJ_VAR_LIST) {
            if (fj_trace_note_mutation(fr->tx, va) < 0)
                return NULL;
            if (PyList_SetSlice(va->items, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, vb->items) < 0)
                return NULL;
            return Py_NewRef(a);
        }
        return concat_seq(va, vb);
    }
    if (base == NB_MULTIPLY && (va->kind == FJ_VAR_TUPLE || va->kind == FJ_VAR_LIST) && cb &&
        PyLong_CheckExact(cb)) {
        /* a repeat the trace models item by item: a small one (NumPy's
        ** test_huge_list_error makes (a,) * 2**31: CPython's run of it) */
        Py_ssize_t times = PyLong_AsSsize_t(cb);
        if (times == -1 && PyErr_Occurred())
            return NULL;
        if (times > 0 && PyList_GET_SIZE(va->items) > 4096 / times)
            return fj_unsupported("sequence repeat of more than 4096 items"), NULL;
        fj_Var *r = fj_var_take(va->kind, PySequence_Repeat(va->items, times));
        if (r != NULL && is_size_tuple(va))
            r->extra2 = Py_NewRef(va->extra2); /* a torch.Size repeated is one */
        return (PyObject *)r;
    }
    return fj_unsupported("operator %s on %R and %R", fj_ops_binop_symbol(oparg), a, b), NULL;
}

/*
** True for a class whose comparison cannot run user code: a static (non-heap)
** type whose metaclass is exactly 'type' (builtins, NumPy's scalar types).
** Comparing one with a dtype (x.dtype == np.float64) converts it in C.
*/
static int is_static_type(PyObject *v)
{
    return PyType_CheckExact(v) && !(((PyTypeObject *)v)->tp_flags & Py_TPFLAGS_HEAPTYPE);
}

static PyObject *deep_const_item(PyObject *v, void *depth)
{
    return deep_const_at(v, *(int *)depth + 1);
}

/* A Var's value as a plain constant, converting known tuples and lists of
   constants ('depth' deep so far; deeper than FJ_MAX_NEST is not one).
   New ref, or NULL (with no exception: not a constant). */
static PyObject *deep_const_at(PyObject *v, int depth)
{
    fj_Var *vv = VAR(v);
    if (vv->kind == FJ_VAR_CONST)
        return is_safe_const(vv->obj) || is_static_type(vv->obj) ? Py_NewRef(vv->obj) : NULL;
    if ((vv->kind == FJ_VAR_TUPLE || vv->kind == FJ_VAR_LIST) && depth < FJ_MAX_NEST)
        return fj_map_items(vv->items, vv->kind == FJ_VAR_TUPLE, deep_const_item, &depth);
    return NULL;
}

static PyObject *deep_const(PyObject *v)
{
    return deep_const_at(v, 0);
}

static int node_loop_scalar(fj_Var *node)
{
    return node_pyscalar(node) && ((fj_Node *)node->obj)->variant;
}

/* deep_const_at with symbolic scalars as their values and torch.Size tuple
   Vars as torch.Size (the trace pinned them first: pinned_const). */
static PyObject *pinned_item(PyObject *v, void *depth);
static PyObject *pinned_at(PyObject *v, int depth)
{
    fj_Var *vv = VAR(v);
    if (vv->kind == FJ_VAR_NODE && node_pyscalar(vv) && !((fj_Node *)vv->obj)->variant)
        return Py_XNewRef(((fj_Node *)vv->obj)->example);
    if ((vv->kind == FJ_VAR_TUPLE || vv->kind == FJ_VAR_LIST) && depth < FJ_MAX_NEST) {
        PyObject *t = fj_map_items(vv->items, vv->kind == FJ_VAR_TUPLE, pinned_item, &depth);
        if (t != NULL && is_size_tuple(vv))
            Py_SETREF(t, PyObject_CallOneArg(vv->extra2, t));
        return t;
    }
    return deep_const_at(v, depth);
}

static PyObject *pinned_item(PyObject *v, void *depth)
{
    return pinned_at(v, *(int *)depth + 1);
}

/*
** A Var's value as a plain constant where a tuple or list holds symbolic
** ints (x.shape == y.shape, s[0] in (3, 4), a torch.Size of sizes compared):
** the trace pins its dynamic inputs, then their values stand in.  As
** deep_const otherwise: NULL with no exception when not a constant.
*/
static PyObject *pinned_const(fj_TFrame *fr, PyObject *v)
{
    PyObject *c = deep_const(v);
    if (c != NULL || PyErr_Occurred() || (VAR(v)->kind != FJ_VAR_TUPLE && VAR(v)->kind != FJ_VAR_LIST))
        return c;
    int p = has_pyscalar(v), loop = p > 0 ? any_node(v, node_loop_scalar) : 0;
    if (p <= 0 || loop != 0)
        return NULL; /* (an error, or no symbolic int, or a captured loop's value: not a constant) */
    if (fj_trace_specialize(fr->tx, "a tuple of symbolic sizes used as a Python value") < 0)
        return NULL;
    return pinned_at(v, 0);
}

PyObject *fj_trace_compare(fj_TFrame *fr, int op, PyObject *a, PyObject *b)
{
    if (VAR(a)->kind == FJ_VAR_NODE || VAR(b)->kind == FJ_VAR_NODE) {
        const fj_OpDef *row = fj_ops_for_compare(op);
        if (row == NULL)
            return fj_unsupported("comparison %s on arrays", fj_rel_optext(op)), NULL;
        PyObject *args[2] = {a, b};
        return graph_call(fr, row, args, 2, NULL);
    }
    PyObject *ca = pinned_const(fr, a), *cb = ca ? pinned_const(fr, b) : NULL;
    if (ca == NULL || cb == NULL) {
        Py_XDECREF(ca);
        Py_XDECREF(cb);
        if (PyErr_Occurred())
            return NULL;
        return fj_unsupported("comparison of %R and %R", a, b), NULL;
    }
    PyObject *r = PyObject_RichCompare(ca, cb, op);
    Py_DECREF(ca);
    Py_DECREF(cb);
    return const_result(r, "a comparison");
}

PyObject *fj_trace_unary(fj_TFrame *fr, int opcode, PyObject *a)
{
    if (VAR(a)->kind == FJ_VAR_NODE) {
        int which = opcode == FJ_PI_UNARY_NEGATIVE ? FJ_UNARY_NEG
                    : opcode == FJ_PI_UNARY_POSITIVE ? FJ_UNARY_POS
                    : opcode == FJ_PI_UNARY_INVERT   ? FJ_UNARY_INVERT
                                               : FJ_UNARY_ABS;
        const fj_OpDef *op = fj_ops_for_unary(which);
        if (op == NULL)
            return fj_unsupported("unary operator on arrays"), NULL;
        return graph_call(fr, op, &a, 1, NULL);
    }
    PyObject *c = fj_var_as_const(a);
    if (c == NULL || !is_safe_const(c))
        return fj_unsupported("unary operator on %R", a), NULL;
    PyObject *r = opcode == FJ_PI_UNARY_NEGATIVE ? PyNumber_Negative(c)
                  : opcode == FJ_PI_UNARY_POSITIVE ? PyNumber_Positive(c)
                  : opcode == FJ_PI_UNARY_INVERT   ? PyNumber_Invert(c)
                                             : PyNumber_Absolute(c);
    return const_result(r, "a unary operation");
}

/* fj_var_find's 'enter' for key_has_int: an integer part of an index key. */
static int int_key_enter(fj_VarWalk *w, PyObject *keyv)
{
    fj_Var *k = VAR(keyv);
    if (k->kind == FJ_VAR_TUPLE)
        return FJ_WALK_INTO;
    PyObject *c = k->kind == FJ_VAR_CONST ? k->obj : NULL;
    if (c == NULL)
        return FJ_WALK_STOP; /* a node, or not known */
    if (PyTuple_Check(c)) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(c); i++)
            if (PyLong_Check(PyTuple_GET_ITEM(c, i)))
                return FJ_WALK_STOP;
        return FJ_WALK_SKIP;
    }
    return PyLong_Check(c) ? FJ_WALK_STOP : FJ_WALK_SKIP;
}

/* 1 if an index key (a Var) has an integer part (which can be out of range), 0 if not, -1. */
static int key_has_int(PyObject *keyv)
{
    return fj_var_find(keyv, FJ_PART_ITEMS, int_key_enter, NULL);
}

/* fj_var_find's 'enter' for fj_trace_index_may_raise: an integer array or
   NumPy integer node (its values are data). */
static int data_index_enter(fj_VarWalk *w, PyObject *v)
{
    fj_Var *k = VAR(v);
    if (k->kind == FJ_VAR_NODE) {
        fj_Node *n = (fj_Node *)k->obj;
        if (n->vkind == FJ_VAL_PYSCALAR) /* a loop's index or result: its value is not known */
            return n->variant ? FJ_WALK_STOP : FJ_WALK_SKIP;
        return (n->vkind == FJ_VAL_ARRAY || n->vkind == FJ_VAL_NPSCALAR) && n->dtype != NULL &&
                       PyTypeNum_ISINTEGER(n->dtype->type_num)
                   ? FJ_WALK_STOP
                   : FJ_WALK_SKIP;
    }
    return k->kind == FJ_VAR_TUPLE ? FJ_WALK_INTO : FJ_WALK_SKIP;
}

int fj_trace_effects_pending(fj_Tracer *tx)
{
    return PyList_GET_SIZE(tx->effects) > 0 || PyList_GET_SIZE(tx->mutated) > 0 ||
           PyDict_GET_SIZE(tx->global_overlay) > 0;
}

int fj_trace_index_may_raise(fj_Tracer *tx, PyObject *keyv)
{
    /* an index whose values are data may be out of bounds when the graph
       runs: side effects traced before it are replayed after the graph, so an
       IndexError would lose them (CPython has done them by then) */
    if (!fj_trace_effects_pending(tx))
        return 0;
    int r = fj_var_find(keyv, FJ_PART_ITEMS, data_index_enter, NULL);
    if (r <= 0)
        return r;
    return fj_unsupported("indexing with integer arrays after side effects (an IndexError would lose them)");
}

/* A bound of a symbolic slice: a constant None or int, or a Python int node
   (counted in *nodes); *o the object the slice holds (borrowed).  1 or 0. */
static int slice_bound(fj_Var *v, PyObject **o, int *nodes)
{
    if (v->kind == FJ_VAR_CONST) {
        *o = v->obj;
        return v->obj == Py_None || PyLong_CheckExact(v->obj);
    }
    fj_Node *n = v->kind == FJ_VAR_NODE ? (fj_Node *)v->obj : NULL;
    if (n == NULL || n->vkind != FJ_VAL_PYSCALAR || n->variant || n->example == NULL ||
        !PyLong_CheckExact(n->example))
        return 0;
    *o = v->obj;
    ++*nodes;
    return 1;
}

fj_Var *fj_trace_node_slice(fj_Tracer *tx, PyObject *start, PyObject *stop, PyObject *step)
{
    PyObject *lo = NULL, *hi = NULL;
    int nodes = 0;
    if (tx->specialized || tx->body != NULL ||
        (step != NULL && !(VAR(step)->kind == FJ_VAR_CONST && VAR(step)->obj == Py_None)) ||
        !slice_bound(VAR(start), &lo, &nodes) || !slice_bound(VAR(stop), &hi, &nodes) || nodes == 0)
        return NULL;
    /* (the graph's runner and torch's fakes read slices' bounds) */
    return fj_var_take(FJ_VAR_CONST, PySlice_New(lo, hi, Py_None));
}

PyObject *fj_trace_symbolic_slice(fj_TFrame *fr, PyObject *objv, PyObject *start, PyObject *stop, PyObject *step)
{
    fj_Var *o = VAR(objv);
    if (o->kind != FJ_VAR_NODE)
        return NULL;
    fj_Node *n = (fj_Node *)o->obj;
    if ((n->vkind != FJ_VAL_ARRAY && n->vkind != FJ_VAL_TENSOR) || n->datadep || n->ndim < 1)
        return NULL;
    fj_Var *kv = fj_trace_node_slice(fr->tx, start, stop, step);
    if (kv == NULL)
        return NULL;
    PyObject *res = fj_trace_symbolic_getitem(fr, objv, (PyObject *)kv);
    Py_DECREF(kv);
    return res;
}

int fj_slice_symbolic(PyObject *o)
{
    if (!PySlice_Check(o))
        return 0;
    PySliceObject *sl = (PySliceObject *)o;
    return fj_Node_Check(sl->start) || fj_Node_Check(sl->stop) || fj_Node_Check(sl->step);
}

int fj_trace_key_symbolic(PyObject *k)
{
    fj_Var *kv = VAR(k);
    if (kv->kind == FJ_VAR_CONST)
        return fj_slice_symbolic(kv->obj);
    if (kv->kind == FJ_VAR_TUPLE)
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(kv->items); i++) {
            fj_Var *it = VAR(PyList_GET_ITEM(kv->items, i));
            if (it->kind == FJ_VAR_CONST && fj_slice_symbolic(it->obj))
                return 1;
        }
    return 0;
}

/* A slice's bound with a node replaced by its value (borrowed). */
static PyObject *bound_value(PyObject *o)
{
    return fj_Node_Check(o) ? ((fj_Node *)o)->example : o;
}

/* The CONST Var 'v' itself, or a new one whose slice has its bounds' values. */
static PyObject *slice_pinned(PyObject *v)
{
    PyObject *o = VAR(v)->obj;
    if (VAR(v)->kind != FJ_VAR_CONST || !fj_slice_symbolic(o))
        return Py_NewRef(v);
    PySliceObject *sl = (PySliceObject *)o;
    return (PyObject *)fj_var_take(FJ_VAR_CONST,
                                   PySlice_New(bound_value(sl->start), bound_value(sl->stop), bound_value(sl->step)));
}

PyObject *fj_trace_key_pinned(fj_TFrame *fr, PyObject *k)
{
    if (fj_trace_specialize(fr->tx, "a slice bound used where the trace needs its value") < 0)
        return NULL;
    fj_Var *kv = VAR(k);
    if (kv->kind != FJ_VAR_TUPLE)
        return slice_pinned(k);
    PyObject *items = PyList_New(0);
    for (Py_ssize_t i = 0; items != NULL && i < PyList_GET_SIZE(kv->items); i++) {
        PyObject *it = slice_pinned(PyList_GET_ITEM(kv->items, i));
        if (it == NULL || PyList_Append(items, it) < 0)
            Py_CLEAR(items);
        Py_XDECREF(it);
    }
    return items ? (PyObject *)fj_var_take(FJ_VAR_TUPLE, items) : NULL;
}

PyObject *fj_trace_symbolic_getitem(fj_TFrame *fr, PyObject *objv, PyObject *keyv)
{
    fj_Var *o = VAR(objv);
    fj_Tracer *tx = fr->tx;
    fj_Node *n = o->kind == FJ_VAR_NODE ? (fj_Node *)o->obj : NULL;
    if (n == NULL || (n->vkind != FJ_VAL_ARRAY && n->vkind != FJ_VAL_TENSOR)) {
        /* not an array's subscript: the bounds' values */
        PyObject *k = fj_trace_key_pinned(fr, keyv);
        PyObject *r = k ? fj_trace_getitem(fr, objv, k) : NULL;
        Py_XDECREF(k);
        return r;
    }
    PyObject *dims = NULL, *res = NULL;
    int r = fj_dims_getitem(tx, objv, keyv, &dims);
    if (r == 0 && fj_trace_specialize(tx, "a slice with a symbolic bound whose sizes are not modelled") < 0)
        r = -1;
    if (r >= 0)
        res = fj_trace_getitem(fr, objv, keyv); /* (pinned: the graph reads the bounds it was traced with) */
    if (res != NULL && dims != NULL && VAR(res)->kind == FJ_VAR_NODE && !tx->specialized) {
        VAR(res)->dynamic = 1;
        Py_XSETREF(VAR(res)->extra2, Py_NewRef(dims));
    }
    Py_XDECREF(dims);
    return res;
}

PyObject *fj_trace_getitem(fj_TFrame *fr, PyObject *objv, PyObject *keyv)
{
    fj_Var *o = VAR(objv);
    if (o->kind == FJ_VAR_NODE) {
        if (VAR(keyv)->kind == FJ_VAR_NODE && ((fj_Node *)VAR(keyv)->obj)->vkind != FJ_VAL_PYSCALAR &&
            fj_trace_is_tensor_var(objv) != fj_trace_is_tensor_var(keyv))
            return fj_unsupported("indexing an array with an array of the other library"), NULL;
        /* an integer index is in range only for some sizes: with dynamic dims the
           graph raises IndexError at run time for the others, as NumPy does, before
           anything is visible; after side effects that come first in the program
           (replayed after the graph) it would lose them: then pin the sizes so the
           trace's check holds.  (A tensor's integer index into a symbolic dim pins
           in its shape rule, trace_dims.c fj_dims_torch; into a fixed one it is
           in range for every size.) */
        /* (a mask's sizes, and an index array's of a size that depends on the data, are
           decided with the graph call: fj_dims_datadep) */
        int has_int = o->dynamic && !fj_dims_key_decides(keyv) && !fj_trace_is_tensor_var(objv) &&
                              (fj_trace_effects_pending(fr->tx) || fj_dims_is_datadep(objv))
                          ? key_has_int(keyv)
                          : 0;
        if (has_int < 0 || (has_int && fj_trace_pin_sizes(fr->tx, objv, "an integer index") < 0))
            return NULL;
        if (!fj_trace_is_tensor_var(objv) && fj_trace_index_may_raise(fr->tx, keyv) < 0)
            return NULL;
        PyObject *args[2] = {objv, keyv};
        return graph_call(fr, fj_ops_for_getitem(), args, 2, NULL);
    }
    PyObject *key = fj_var_as_const(keyv);
    if (key == NULL)
        return fj_unsupported("subscript with a key that is not a constant"), NULL;
    if (o->kind == FJ_VAR_TUPLE || o->kind == FJ_VAR_LIST) {
        if (PyLong_CheckExact(key)) {
            Py_ssize_t n = PyList_GET_SIZE(o->items), ix = PyLong_AsSsize_t(key);
            if (ix < 0)
                ix += n;
            if (ix < 0 || ix >= n)
                return fj_unsupported("index out of range"), NULL;
            return Py_NewRef(PyList_GET_ITEM(o->items, ix));
        }
        if (PySlice_Check(key)) {
            PyObject *items = PyObject_GetItem(o->items, key);
            if (items == NULL)
                return fj_trace_as_unsupported("slicing");
            fj_Var *r = fj_var_take(o->kind, items);
            if (r != NULL && is_size_tuple(o))
                r->extra2 = Py_NewRef(o->extra2); /* a torch.Size's slice is one */
            return (PyObject *)r;
        }
        return fj_unsupported("subscript of a sequence with %R", key), NULL;
    }
    if (o->kind == FJ_VAR_DICT) {
        PyObject *v = PyDict_GetItemWithError(o->items, key);
        if (v == NULL)
            return PyErr_Occurred() ? fj_trace_as_unsupported("dict lookup")
                                    : (fj_unsupported("KeyError %R", key), NULL);
        return Py_NewRef(v);
    }
    if (o->kind == FJ_VAR_CONST && (is_safe_const(o->obj) || PyDict_CheckExact(o->obj) ||
                                    PyList_CheckExact(o->obj)) &&
        is_safe_const(key)) {
        PyObject *r = PyObject_GetItem(o->obj, key);
        if (r == NULL)
            return fj_trace_as_unsupported("subscript");
        if (!is_safe_const(r) && o->source == NULL) {
            Py_DECREF(r);
            return fj_unsupported("subscript giving a mutable value"), NULL;
        }
        return const_result(r, "subscript");
    }
    return fj_unsupported("subscript of %R", objv), NULL;
}

PyObject *fj_trace_contains(fj_TFrame *fr, PyObject *item, PyObject *container, int invert)
{
    fj_Var *c = VAR(container);
    if (c->kind == FJ_VAR_OBJ && c->source != NULL && PySet_CheckExact(c->obj)) {
        int found = fj_trace_set_contains(fr, c, item);
        return found < 0 ? NULL : (PyObject *)fj_var_const((found ^ invert) ? Py_True : Py_False);
    }
    PyObject *ci = pinned_const(fr, item);
    if (ci == NULL)
        return PyErr_Occurred() ? NULL
                                : (fj_unsupported("'in' test of a non-constant value"), NULL);
    int found = -1;
    /* hashing or comparing anything but builtin values would run the
       program's code (__hash__, __eq__) while tracing */
    if (fj_value_kind(ci, 0) == EQ_NONE) {
        fj_unsupported("'in' test of %.100s, which only its own code can compare",
                       Py_TYPE(ci)->tp_name);
        Py_DECREF(ci);
        return NULL;
    }
    if (c->kind == FJ_VAR_DICT) {
        found = PyDict_Contains(c->items, ci);
    }
    else {
        PyObject *cc = PyErr_Occurred() ? NULL : pinned_const(fr, container);
        if (cc != NULL && (PyTuple_CheckExact(cc) || PyList_CheckExact(cc) ||
                           PyFrozenSet_CheckExact(cc) || PySet_CheckExact(cc))) {
            PyObject *fast = PySequence_Fast(cc, "in");
            for (Py_ssize_t k = 0; fast && k < PySequence_Fast_GET_SIZE(fast); k++)
                if (fj_value_kind(PySequence_Fast_GET_ITEM(fast, k), 0) == EQ_NONE) {
                    Py_CLEAR(fast);
                    fj_unsupported("'in' test on a container holding objects only their own "
                                   "code can compare");
                }
            if (fast != NULL) {
                found = PySequence_Contains(cc, ci);
                Py_DECREF(fast);
            }
            Py_DECREF(cc);
        }
        else if (cc != NULL) {
            /* str, bytes and range answer in C; any other container's
               __contains__ is code of its own */
            if (PyUnicode_CheckExact(cc) || PyBytes_CheckExact(cc) || PyRange_Check(cc))
                found = PySequence_Contains(cc, ci);
            else
                fj_unsupported("'in' test on %.100s", Py_TYPE(cc)->tp_name);
            Py_DECREF(cc);
        }
        else if (!PyErr_Occurred())
            fj_unsupported("'in' test on a container with non-constant items");
    }
    Py_DECREF(ci);
    if (found < 0)
        return PyErr_ExceptionMatches(fj_Unsupported) ? NULL : fj_trace_as_unsupported("'in'");
    return (PyObject *)fj_var_const((found ^ invert) ? Py_True : Py_False);
}

int fj_trace_truth(fj_TFrame *fr, PyObject *v)
{
    fj_Var *vv = VAR(v);
    switch (vv->kind) {
    case FJ_VAR_CONST:
        if (is_safe_const(vv->obj) || PyModule_Check(vv->obj) || PyFunction_Check(vv->obj) ||
            PyType_Check(vv->obj) || PyCFunction_Check(vv->obj)) {
            int t = PyObject_IsTrue(vv->obj);
            if (t < 0)
                fj_trace_as_unsupported("truth test");
            return t;
        }
        return unsupported_obj("truth value of ", vv->obj, "");
    case FJ_VAR_TUPLE:
    case FJ_VAR_LIST:
        return PyList_GET_SIZE(vv->items) > 0;
    case FJ_VAR_DICT:
        return PyDict_GET_SIZE(vv->items) > 0;
    case FJ_VAR_FUNC:
    case FJ_VAR_METHOD:
        return 1;
    case FJ_VAR_INST:
        return fj_trace_inst_truth(vv);
    case FJ_VAR_NODE:
        if (((fj_Node *)vv->obj)->variant)
            return fj_unsupported("branch on a value that changes with each iteration of the loop");
        if (((fj_Node *)vv->obj)->vkind == FJ_VAL_PYSCALAR) {
            /* a branch on a symbolic int: a relation guard keeps the side
               (shape_env.c), else specialize (guards pin the inputs) */
            int truth = 0, rel = fj_shape_env_branch(fr->tx, (fj_Node *)vv->obj, &truth);
            if (rel != 0)
                return rel < 0 ? -1 : truth;
            if (fj_trace_specialize(fr->tx, "a branch on a symbolic value that is not an int relation") < 0)
                return -1;
            return PyObject_IsTrue(((fj_Node *)vv->obj)->example);
        }
        if (((fj_Node *)vv->obj)->vkind == FJ_VAL_TENSOR)
            return fj_unsupported("branch on the value of a tensor (data-dependent control flow: "
                                  "torch.where or torch.cond keep it in the graph)");
        return fj_unsupported("branch on the value of an array (data-dependent control flow)");
    default:
        return fj_unsupported("truth value of %R", v);
    }
}
