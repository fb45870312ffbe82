/*
** trace_effects.c: the side effects the symbolic interpreter models
** (docs/side-effects.md): item stores and deletes (arrays, lists, dicts),
** the mutating methods of lists, dicts and input sets, attribute deletes on
** input objects, and instances of plain user classes made in the frame.
**
** How each is replayed after the graph is codegen.c's business; this file
** only keeps the symbolic state exact and records effects in tx->effects:
**     ("container", None, c)          an input list/dict: final contents put back once
**     ("delattr", name, None, obj)    del obj.name on an input object
**     ("call", name, args, obj)       obj.name(*args) replayed as is (input sets)
** Array item stores are in-place graph ops (operator.setitem, FJ_OPF_MUTATES).
** What cannot be modelled exactly raises fj_Unsupported (a graph break).
**
** Not responsible for: the other opcodes (trace.c, trace_call.c), codegen.
*/
#include "trace.h"

#include "fj_numpy.h"
#include "graph.h"
#include "walk.h"

#define VAR(o) ((fj_Var *)(o))

PyObject *fj_trace_var_items(fj_TFrame *fr, PyObject *v); /* trace.c */


static PyObject *none_var(void)
{
    return (PyObject *)fj_var_const(Py_None);
}


/* The plain constant a Var stands for (borrowed), or NULL (no exception). */
static PyObject *plain_const(PyObject *v)
{
    fj_Var *vv = VAR(v);
    if (vv->kind != FJ_VAR_CONST || !fj_is_plain_constant(vv->obj))
        return NULL;
    return vv->obj;
}

static PyObject *new_method_var(PyObject *self, PyObject *name)
{
    fj_Var *m = fj_var_new(FJ_VAR_METHOD, name, NULL);
    if (m != NULL)
        m->extra = Py_NewRef(self);
    return (PyObject *)m;
}

/* ------------------------------------------------------------ arrays */

/*
** a[key] = v on an array: an in-place graph op.  The eager graph runs it in
** program order on the real array, so the input and every view of it change
** as in CPython.  With dynamic shapes the selection's size decides whether
** the store raises (IndexError, a broadcast ValueError): the graph raises
** then as NumPy does, at the store, after the stores before it as in
** CPython; only after side effects the graph replays (which the error would
** lose), and for tensors (torch's rules), the sizes are pinned first.  0 or -1.
*/
static int array_setitem(fj_TFrame *fr, PyObject *a, PyObject *key, PyObject *v)
{
    const fj_OpDef *op = fj_ops_for_setitem();
    if (op == NULL)
        return fj_unsupported("item assignment on an array (no setitem op)");
    int dynamic = fj_trace_any_dynamic(a);
    if (dynamic == 0)
        dynamic = fj_trace_key_symbolic(key) ? 1 : fj_trace_any_dynamic(key); /* x[:n] = v: n symbolic */
    if (dynamic == 0)
        dynamic = fj_trace_any_dynamic(v);
    /* a store through a mask, or of a size that depends on the data: its sizes are
       decided with the graph call (fj_dims_datadep) */
    if (dynamic > 0 && (fj_dims_key_decides(key) || fj_dims_is_datadep(a) || fj_dims_is_datadep(v)))
        dynamic = 0;
    if (dynamic > 0 && !fj_trace_effects_pending(fr->tx) && !fj_trace_is_tensor_var(a))
        dynamic = 0;
    if (dynamic < 0 || (dynamic && fj_trace_specialize(fr->tx, "an item store with dynamic sizes") < 0))
        return -1;
    if (!fj_trace_is_tensor_var(a) && fj_trace_index_may_raise(fr->tx, key) < 0)
        return -1;
    int overlap = fj_trace_torch_store_overlaps(a, v, key);
    if (overlap != 0)
        return overlap < 0 ? -1
                           : fj_unsupported("a tensor store whose value is a view of the tensor it writes (compiled "
                                            "torch reads the value before the store; eager torch copies as it "
                                            "writes)");
    PyObject *args[3] = {a, key, v};
    PyObject *r = fj_trace_graph_call(fr, op, args, 3, NULL);
    if (r == NULL)
        return -1;
    Py_DECREF(r); /* operator.setitem returns None: nothing holds the node */
    return 0;
}

/* 1 if 'v' stands for an input array that is not writeable, 0 if not, -1 on error. */
static int read_only_input(fj_TFrame *fr, PyObject *v)
{
    fj_Var *av = VAR(v);
    if (av->kind != FJ_VAR_NODE || av->source == NULL)
        return 0;
    PyObject *real = NULL;
    int got = fj_source_fetch(av->source, &fr->tx->view, &real);
    if (got <= 0)
        return got;
    int ro = PyArray_Check(real) && !PyArray_ISWRITEABLE((PyArrayObject *)real);
    Py_DECREF(real);
    return ro;
}

int fj_trace_check_writeable(fj_TFrame *fr, const fj_OpDef *op, PyObject *const *args,
                             Py_ssize_t n, PyObject *kwnames)
{
    int r = 0; /* 1 once a written array is read-only, -1 on error */
    if ((op->kind == FJ_OP_INPLACE || (op->flags & FJ_OPF_MUTATES)) && n >= 1)
        r = read_only_input(fr, args[0]);
    PyObject *out = r == 0 && (op->flags & FJ_OPF_OUT) ? fj_trace_out_arg(op, args, n, kwnames) : NULL;
    if (out != NULL)
        r = read_only_input(fr, out);
    if (r > 0)
        return fj_unsupported("%s writes into a read-only array", fj_op_qualname(op));
    return r;
}

/* --------------------------------------------------------- subscripts */

/* A list index: the constant int 'key' normalized into [0, n), or -1 with Unsupported. */
static Py_ssize_t list_index(PyObject *key, Py_ssize_t n, const char *what)
{
    Py_ssize_t ix = PyLong_AsSsize_t(key);
    if (ix == -1 && PyErr_Occurred())
        return (Py_ssize_t)(fj_trace_as_unsupported(what), -1);
    if (ix < 0)
        ix += n;
    if (ix < 0 || ix >= n)
        return fj_unsupported("%s index out of range", what);
    return ix;
}

/* The constant key 'k' of an item store or delete ('what') on the list or
   dict Var 'o'.  Borrowed, or NULL (Unsupported for another kind of Var or
   key). */
static PyObject *item_key(PyObject *o, PyObject *k, const char *what)
{
    fj_Var *ov = VAR(o);
    if (ov->kind != FJ_VAR_LIST && ov->kind != FJ_VAR_DICT)
        return fj_unsupported("%s on %R", what, o), NULL;
    PyObject *key = fj_var_as_const(k);
    if (key == NULL && !PyErr_Occurred())
        fj_unsupported("%s with a non-constant key", what);
    return key;
}

int fj_trace_store_subscr(fj_TFrame *fr, PyObject *o, PyObject *k, PyObject *v)
{
    fj_Var *ov = VAR(o);
    if (ov->kind == FJ_VAR_NODE && (((fj_Node *)ov->obj)->vkind == FJ_VAL_ARRAY ||
                                     ((fj_Node *)ov->obj)->vkind == FJ_VAL_TENSOR))
        return array_setitem(fr, o, k, v);
    if (fj_trace_key_symbolic(k)) {
        /* xs[:n] = ... on a list: the bounds' values */
        PyObject *kp = fj_trace_key_pinned(fr, k);
        int r = kp != NULL ? fj_trace_store_subscr(fr, o, kp, v) : -1;
        Py_XDECREF(kp);
        return r;
    }
    PyObject *key = item_key(o, k, "item assignment");
    if (key == NULL)
        return -1;
    if (ov->kind == FJ_VAR_DICT) {
        if (fj_trace_note_mutation(fr->tx, ov) < 0)
            return -1;
        /* an unhashable key (a slice before 3.12): the program's TypeError, in CPython */
        return PyDict_SetItem(ov->items, key, v) < 0 ? (fj_trace_as_unsupported("dict item assignment"), -1) : 0;
    }
    if (PyLong_CheckExact(key)) {
        Py_ssize_t ix = list_index(key, PyList_GET_SIZE(ov->items), "list assignment");
        if (ix < 0 || fj_trace_note_mutation(fr->tx, ov) < 0)
            return -1;
        return PyList_SetItem(ov->items, ix, Py_NewRef(v));
    }
    if (PySlice_Check(key)) {
        /* xs[a:b] = iterable: the real list's slice semantics on the Var list */
        PyObject *items = fj_trace_var_items(fr, v);
        if (items == NULL || fj_trace_note_mutation(fr->tx, ov) < 0) {
            Py_XDECREF(items);
            return -1;
        }
        int r = PyObject_SetItem(ov->items, key, items);
        Py_DECREF(items);
        return r < 0 ? (fj_trace_as_unsupported("slice assignment"), -1) : 0;
    }
    return fj_unsupported("list assignment with key %R", k);
}

int fj_trace_delete_subscr(fj_TFrame *fr, PyObject *o, PyObject *k)
{
    fj_Var *ov = VAR(o);
    PyObject *key = item_key(o, k, "item deletion");
    if (key == NULL)
        return -1;
    if (ov->kind == FJ_VAR_DICT) {
        int has = PyDict_Contains(ov->items, key);
        if (has < 0)
            return (fj_trace_as_unsupported("del d[k]"), -1);
        if (!has)
            return fj_unsupported("del d[%R]: KeyError", k);
        if (fj_trace_note_mutation(fr->tx, ov) < 0)
            return -1;
        return PyDict_DelItem(ov->items, key);
    }
    if (PyLong_CheckExact(key)) {
        Py_ssize_t ix = list_index(key, PyList_GET_SIZE(ov->items), "list deletion");
        if (ix < 0 || fj_trace_note_mutation(fr->tx, ov) < 0)
            return -1;
        return PySequence_DelItem(ov->items, ix);
    }
    if (PySlice_Check(key)) {
        if (fj_trace_note_mutation(fr->tx, ov) < 0)
            return -1;
        return PyObject_DelItem(ov->items, key) < 0 ? (fj_trace_as_unsupported("del xs[a:b]"), -1) : 0;
    }
    return fj_unsupported("list deletion with key %R", k);
}

/* ------------------------------------------------------------- lists */

/*
** The permutation list.sort(reverse=rev) applies to the constants 'consts':
** sorted(range(n), key=consts.__getitem__, reverse=rev) makes exactly the
** comparisons the sort of the values makes, so ties, NaNs and stability come
** out as in CPython.  New list of ints, NULL on error.
*/
static PyObject *sort_permutation(PyObject *consts, int rev)
{
    PyObject *sorted = PyDict_GetItemString(PyEval_GetBuiltins(), "sorted");
    PyObject *getitem = PyObject_GetAttrString(consts, "__getitem__");
    PyObject *rng = getitem ? PyObject_CallFunction((PyObject *)&PyRange_Type, "n",
                                                     PyList_GET_SIZE(consts))
                            : NULL;
    PyObject *kw = rng ? Py_BuildValue("{s:O,s:O}", "key", getitem, "reverse",
                                       rev ? Py_True : Py_False)
                       : NULL;
    PyObject *args = kw ? PyTuple_Pack(1, rng) : NULL;
    PyObject *perm = args && sorted ? PyObject_Call(sorted, args, kw) : NULL;
    Py_XDECREF(getitem);
    Py_XDECREF(rng);
    Py_XDECREF(kw);
    Py_XDECREF(args);
    return perm;
}

static PyObject *list_sort(fj_TFrame *fr, fj_Var *self, PyObject *const *args, Py_ssize_t n,
                           PyObject *kwnames)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    int rev = 0;
    if (n != nkw)
        return fj_unsupported("list.sort() takes no positional arguments"), NULL;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *kn = PyTuple_GET_ITEM(kwnames, k), *c = fj_var_as_const(args[k]);
        if (fj_str_is(kn, "key") && c == Py_None)
            continue;
        if (fj_str_is(kn, "reverse") && c != NULL && (PyBool_Check(c) || PyLong_CheckExact(c))) {
            rev = PyObject_IsTrue(c);
            continue;
        }
        return fj_unsupported("list.sort() with %U=%R", kn, args[k]), NULL;
    }
    Py_ssize_t len = PyList_GET_SIZE(self->items);
    PyObject *consts = PyList_New(len);
    for (Py_ssize_t i = 0; consts && i < len; i++) {
        PyObject *c = plain_const(PyList_GET_ITEM(self->items, i));
        if (c == NULL || c == Py_None || c == Py_Ellipsis) {
            Py_DECREF(consts);
            return fj_unsupported("list.sort() of values that are not known numbers or strings"),
                   NULL;
        }
        PyList_SET_ITEM(consts, i, Py_NewRef(c));
    }
    if (consts == NULL)
        return NULL;
    PyObject *perm = sort_permutation(consts, rev);
    Py_DECREF(consts);
    if (perm == NULL)
        return fj_trace_as_unsupported("list.sort()");
    if (fj_trace_note_mutation(fr->tx, self) < 0) {
        Py_DECREF(perm);
        return NULL;
    }
    PyObject *out = PyList_New(len);
    for (Py_ssize_t i = 0; out && i < len; i++) {
        Py_ssize_t j = PyLong_AsSsize_t(PyList_GET_ITEM(perm, i));
        PyList_SET_ITEM(out, i, Py_NewRef(PyList_GET_ITEM(self->items, j)));
    }
    Py_DECREF(perm);
    if (out == NULL || PyList_SetSlice(self->items, 0, len, out) < 0) {
        Py_XDECREF(out);
        return NULL;
    }
    Py_DECREF(out);
    return none_var();
}

/* list.remove(v): the first item equal to v; every item compared must be a known constant. */
static PyObject *list_remove(fj_TFrame *fr, fj_Var *self, PyObject *v)
{
    PyObject *cv = plain_const(v);
    if (cv == NULL)
        return fj_unsupported("list.remove() of a value that is not a plain constant"), NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(self->items); i++) {
        PyObject *item = PyList_GET_ITEM(self->items, i);
        PyObject *ci = plain_const(item);
        if (ci == NULL)
            return fj_unsupported("list.remove() past an item that is not a plain constant"), NULL;
        int eq = ci == cv ? 1 : PyObject_RichCompareBool(ci, cv, Py_EQ);
        if (eq < 0)
            return fj_trace_as_unsupported("list.remove()");
        if (eq) {
            if (fj_trace_note_mutation(fr->tx, self) < 0 || PySequence_DelItem(self->items, i) < 0)
                return NULL;
            return none_var();
        }
    }
    return fj_unsupported("list.remove(x): x not in list"), NULL;
}

PyObject *fj_trace_list_method(fj_TFrame *fr, fj_Var *self, PyObject *name, PyObject *const *args,
                               Py_ssize_t n, PyObject *kwnames)
{
    if (fj_str_is(name, "sort"))
        return list_sort(fr, self, args, n, kwnames);
    if (kwnames != NULL)
        return fj_unsupported("list.%U with keywords", name), NULL;
    if (fj_str_is(name, "remove") && n == 1)
        return list_remove(fr, self, args[0]);
    static const char *mutators[] = {"append", "extend", "pop", "insert", "reverse", "clear", NULL};
    for (int k = 0; mutators[k]; k++)
        if (fj_str_is(name, mutators[k]) && fj_trace_note_mutation(fr->tx, self) < 0)
            return NULL;
    if (fj_str_is(name, "append") && n == 1) {
        if (PyList_Append(self->items, args[0]) < 0)
            return NULL;
        return none_var();
    }
    if (fj_str_is(name, "extend") && n == 1) {
        PyObject *items = fj_trace_var_items(fr, args[0]);
        if (items == NULL)
            return NULL;
        int r = PyList_SetSlice(self->items, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, items);
        Py_DECREF(items);
        return r < 0 ? NULL : none_var();
    }
    if (fj_str_is(name, "pop") && n <= 1) {
        Py_ssize_t len = PyList_GET_SIZE(self->items), ix = len - 1;
        if (n == 1) {
            PyObject *c = fj_var_as_const(args[0]);
            if (c == NULL || !PyLong_CheckExact(c))
                return fj_unsupported("list.pop with a non-constant index"), NULL;
            ix = PyLong_AsSsize_t(c);
            if (ix < 0)
                ix += len;
        }
        if (ix < 0 || ix >= len)
            return fj_unsupported("pop from empty list or index out of range"), NULL;
        PyObject *v = Py_NewRef(PyList_GET_ITEM(self->items, ix));
        if (PySequence_DelItem(self->items, ix) < 0) {
            Py_DECREF(v);
            return NULL;
        }
        return v;
    }
    if (fj_str_is(name, "insert") && n == 2) {
        PyObject *c = fj_var_as_const(args[0]);
        if (c == NULL || !PyLong_CheckExact(c))
            return fj_unsupported("list.insert with a non-constant index"), NULL;
        if (PyList_Insert(self->items, PyLong_AsSsize_t(c), args[1]) < 0)
            return NULL;
        return none_var();
    }
    if (fj_str_is(name, "reverse") && n == 0) {
        if (PyList_Reverse(self->items) < 0)
            return NULL;
        return none_var();
    }
    if (fj_str_is(name, "clear") && n == 0) {
        if (PyList_SetSlice(self->items, 0, PyList_GET_SIZE(self->items), NULL) < 0)
            return NULL;
        return none_var();
    }
    return fj_unsupported("list.%U", name), NULL;
}

/* ------------------------------------------------------------- dicts */

/* A key argument: a plain constant (borrowed) or NULL with Unsupported. */
static PyObject *dict_key(PyObject *k, PyObject *name)
{
    PyObject *key = fj_var_as_const(k);
    if (key == NULL || !fj_is_plain_constant(key)) {
        if (!PyErr_Occurred())
            fj_unsupported("dict.%U with a key that is not a plain constant", name);
        return NULL;
    }
    return key;
}

/* d.update(other, **kw) on the symbolic dict.  0 or -1. */
static int dict_update(fj_TFrame *fr, fj_Var *self, PyObject *const *args, Py_ssize_t n,
                       PyObject *kwnames)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, npos = n - nkw;
    PyObject *pairs = PyList_New(0); /* (key, Var) in insertion order */
    if (pairs == NULL)
        return -1;
    int r = 0;
    if (npos > 1)
        r = fj_unsupported("dict.update expected at most 1 argument");
    else if (npos == 1) {
        fj_Var *ov = VAR(args[0]);
        PyObject *c = ov->kind == FJ_VAR_CONST ? ov->obj : NULL;
        if (ov->kind == FJ_VAR_DICT) {
            Py_ssize_t pos = 0;
            PyObject *k, *v;
            while (r == 0 && PyDict_Next(ov->items, &pos, &k, &v)) {
                PyObject *p = fj_is_plain_constant(k) ? PyTuple_Pack(2, k, v) : NULL;
                r = p == NULL ? (PyErr_Occurred() ? -1 : fj_unsupported("dict.update with a key "
                                                                        "that is not a plain "
                                                                        "constant"))
                              : PyList_Append(pairs, p);
                Py_XDECREF(p);
            }
        }
        else if (c != NULL && PyDict_CheckExact(c)) {
            Py_ssize_t pos = 0;
            PyObject *k, *v;
            while (r == 0 && PyDict_Next(c, &pos, &k, &v)) {
                fj_Var *cv = fj_is_plain_constant(k) && fj_is_plain_constant(v) ? fj_var_const(v)
                                                                                  : NULL;
                PyObject *p = cv ? PyTuple_Pack(2, k, (PyObject *)cv) : NULL;
                Py_XDECREF(cv);
                r = p == NULL ? (PyErr_Occurred() ? -1 : fj_unsupported("dict.update from a "
                                                                        "constant dict of "
                                                                        "non-plain values"))
                              : PyList_Append(pairs, p);
                Py_XDECREF(p);
            }
        }
        else
            r = fj_unsupported("dict.update from %R", args[0]);
    }
    for (Py_ssize_t k = 0; r == 0 && k < nkw; k++) {
        PyObject *p = PyTuple_Pack(2, PyTuple_GET_ITEM(kwnames, k), args[npos + k]);
        r = p == NULL ? -1 : PyList_Append(pairs, p);
        Py_XDECREF(p);
    }
    if (r == 0 && PyList_GET_SIZE(pairs) > 0)
        r = fj_trace_note_mutation(fr->tx, self);
    for (Py_ssize_t i = 0; r == 0 && i < PyList_GET_SIZE(pairs); i++) {
        PyObject *p = PyList_GET_ITEM(pairs, i);
        r = PyDict_SetItem(self->items, PyTuple_GET_ITEM(p, 0), PyTuple_GET_ITEM(p, 1));
    }
    Py_DECREF(pairs);
    return r;
}

static PyObject *dict_keys_view(fj_TFrame *fr, fj_Var *self, PyObject *name)
{
    /* the view is modelled as a tuple of its items: right only when it
    ** is iterated at once (for k in d.keys()); as a value it is a set-like
    ** view (d.keys() | e.keys(): pytest's config), not a tuple */
    if (fr->ip + 1 >= fr->il.n || fr->il.v[fr->ip + 1].p.op != FJ_PI_GET_ITER)
        return fj_unsupported("dict.%U() used other than in a for loop", name), NULL;
    PyObject *keys = PyDict_Keys(self->items);
    if (keys == NULL)
        return NULL;
    Py_ssize_t nk = PyList_GET_SIZE(keys);
    PyObject *out = PyList_New(nk);
    for (Py_ssize_t i = 0; out && i < nk; i++) {
        PyObject *k = PyList_GET_ITEM(keys, i);
        PyObject *kv = (PyObject *)fj_var_const(k);
        PyObject *vv = Py_XNewRef(PyDict_GetItem(self->items, k));
        PyObject *item = NULL;
        if (kv && vv) {
            if (fj_str_is(name, "keys"))
                item = Py_NewRef(kv);
            else if (fj_str_is(name, "values"))
                item = Py_NewRef(vv);
            else {
                PyObject *pair = PyList_New(2);
                if (pair) {
                    PyList_SET_ITEM(pair, 0, Py_NewRef(kv));
                    PyList_SET_ITEM(pair, 1, Py_NewRef(vv));
                    item = (PyObject *)fj_var_new(FJ_VAR_TUPLE, NULL, pair);
                    Py_DECREF(pair);
                }
            }
        }
        Py_XDECREF(kv);
        Py_XDECREF(vv);
        if (item == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, item);
    }
    Py_DECREF(keys);
    /* a view behaves like a list for iteration and len() here */
    return (PyObject *)fj_var_take(FJ_VAR_TUPLE, out);
}

PyObject *fj_trace_dict_method(fj_TFrame *fr, fj_Var *self, PyObject *name, PyObject *const *args,
                               Py_ssize_t n, PyObject *kwnames)
{
    if (fj_str_is(name, "update"))
        return dict_update(fr, self, args, n, kwnames) < 0 ? NULL : none_var();
    if (kwnames != NULL)
        return fj_unsupported("dict.%U with keywords", name), NULL;
    if (fj_str_is(name, "get") && (n == 1 || n == 2)) {
        PyObject *key = fj_var_as_const(args[0]);
        if (key == NULL)
            return fj_unsupported("dict.get with a non-constant key"), NULL;
        PyObject *v = PyDict_GetItemWithError(self->items, key);
        if (v != NULL)
            return Py_NewRef(v);
        if (PyErr_Occurred())
            return fj_trace_as_unsupported("dict.get");
        return n == 2 ? Py_NewRef(args[1]) : none_var();
    }
    if (n == 0 && (fj_str_is(name, "keys") || fj_str_is(name, "values") || fj_str_is(name, "items")))
        return dict_keys_view(fr, self, name);
    if ((fj_str_is(name, "pop") && (n == 1 || n == 2)) || (fj_str_is(name, "setdefault") && (n == 1 || n == 2))) {
        PyObject *key = dict_key(args[0], name);
        if (key == NULL)
            return NULL;
        PyObject *v = PyDict_GetItemWithError(self->items, key);
        if (v == NULL && PyErr_Occurred())
            return fj_trace_as_unsupported("dict lookup");
        if (fj_str_is(name, "pop")) {
            if (v == NULL) {
                if (n == 2)
                    return Py_NewRef(args[1]);
                return fj_unsupported("dict.pop(%R): KeyError", args[0]), NULL;
            }
            Py_INCREF(v);
            if (fj_trace_note_mutation(fr->tx, self) < 0 || PyDict_DelItem(self->items, key) < 0) {
                Py_DECREF(v);
                return NULL;
            }
            return v;
        }
        if (v != NULL)
            return Py_NewRef(v);
        PyObject *dflt = n == 2 ? Py_NewRef(args[1]) : none_var();
        if (dflt == NULL || fj_trace_note_mutation(fr->tx, self) < 0 ||
            PyDict_SetItem(self->items, key, dflt) < 0) {
            Py_XDECREF(dflt);
            return NULL;
        }
        return dflt;
    }
    if (fj_str_is(name, "popitem") && n == 0) {
        Py_ssize_t nk = PyDict_GET_SIZE(self->items);
        if (nk == 0)
            return fj_unsupported("popitem(): dictionary is empty"), NULL;
        PyObject *keys = PyDict_Keys(self->items);
        if (keys == NULL)
            return NULL;
        PyObject *k = Py_NewRef(PyList_GET_ITEM(keys, nk - 1));
        Py_DECREF(keys);
        PyObject *pair = PyList_New(2);
        fj_Var *kv = pair ? fj_var_const(k) : NULL;
        PyObject *r = NULL;
        if (kv != NULL) {
            PyList_SET_ITEM(pair, 0, (PyObject *)kv);
            PyList_SET_ITEM(pair, 1, Py_NewRef(PyDict_GetItem(self->items, k)));
            if (fj_trace_note_mutation(fr->tx, self) == 0 && PyDict_DelItem(self->items, k) == 0)
                r = (PyObject *)fj_var_new(FJ_VAR_TUPLE, NULL, pair);
        }
        Py_XDECREF(pair);
        Py_DECREF(k);
        return r;
    }
    if (fj_str_is(name, "clear") && n == 0) {
        if (fj_trace_note_mutation(fr->tx, self) < 0)
            return NULL;
        PyDict_Clear(self->items);
        return none_var();
    }
    return fj_unsupported("dict.%U", name), NULL;
}

/* -------------------------------------------------------- input sets */

/* fj_var_find's 'enter' for hash_safe: a part whose hash may run the program's code. */
static int unhashable_enter(fj_VarWalk *w, PyObject *v)
{
    fj_Var *vv = VAR(v);
    int safe = 0;
    if (vv->kind == FJ_VAR_TUPLE)
        return FJ_WALK_INTO;
    if (vv->kind == FJ_VAR_CONST)
        safe = fj_is_plain_constant(vv->obj) || PyArray_IsScalar(vv->obj, Generic);
    else if (vv->kind == FJ_VAR_NODE)
        safe = ((fj_Node *)vv->obj)->vkind != FJ_VAL_ARRAY;
    return safe ? FJ_WALK_SKIP : FJ_WALK_STOP;
}

/* 1 for a Var whose hash cannot run the program's code, 0 for another, -1 on error. */
static int hash_safe(PyObject *v)
{
    int found = fj_var_find(v, FJ_PART_ITEMS, unhashable_enter, NULL);
    return found < 0 ? -1 : !found;
}

int fj_trace_is_set_method(PyObject *objv, PyObject *name)
{
    fj_Var *o = VAR(objv);
    return o->kind == FJ_VAR_OBJ && o->source != NULL && PySet_CheckExact(o->obj) &&
           (fj_str_is(name, "add") || fj_str_is(name, "discard") || fj_str_is(name, "update") ||
            fj_str_is(name, "clear") || fj_str_is(name, "remove"));
}

/* The plain constants of a Var (a const, or a tuple/list of consts) as a new list, or NULL. */
static PyObject *const_args(PyObject *argt)
{
    PyObject *out = PyList_New(0);
    fj_Var *t = VAR(argt);
    for (Py_ssize_t i = 0; out != NULL && i < PyList_GET_SIZE(t->items); i++) {
        fj_Var *a = VAR(PyList_GET_ITEM(t->items, i));
        PyObject *c = NULL;
        if (a->kind == FJ_VAR_CONST && (fj_is_plain_constant(a->obj) || PyTuple_CheckExact(a->obj) ||
                                        PyFrozenSet_CheckExact(a->obj)))
            c = Py_NewRef(a->obj);
        else if (a->kind == FJ_VAR_TUPLE || a->kind == FJ_VAR_LIST) {
            c = PyList_New(0);
            for (Py_ssize_t j = 0; c != NULL && j < PyList_GET_SIZE(a->items); j++) {
                PyObject *ic = plain_const(PyList_GET_ITEM(a->items, j));
                if (ic == NULL || PyList_Append(c, ic) < 0)
                    Py_CLEAR(c);
            }
        }
        if (c == NULL || PyList_Append(out, c) < 0)
            Py_CLEAR(out);
        Py_XDECREF(c);
    }
    PyErr_Clear();
    return out;
}

/* Applies s.name(*args) to the model set 'model' (constants only).  0, or -1 (no exception: unknown). */
static int model_apply(PyObject *model, PyObject *name, PyObject *argt)
{
    PyObject *args = const_args(argt);
    if (args == NULL)
        return -1;
    PyObject *m = PyObject_GetAttr(model, name);
    PyObject *targs = m ? PyList_AsTuple(args) : NULL;
    PyObject *r = targs ? PyObject_Call(m, targs, NULL) : NULL;
    Py_XDECREF(m);
    Py_XDECREF(targs);
    Py_DECREF(args);
    Py_XDECREF(r);
    if (r == NULL) {
        PyErr_Clear();
        return -1;
    }
    return 0;
}

/*
** The trace's model of an input set's contents (borrowed), built on first
** need: the set's items must be plain constants (then an EQUALS_MATCH guard
** on a copy pins its contents) and the mutations recorded so far are applied
** to the copy.  NULL with Unsupported when it cannot be modelled.
*/
static PyObject *set_model(fj_TFrame *fr, fj_Var *self)
{
    if (self->items != NULL)
        return self->items;
    PyObject *real = self->obj;
    if (PySet_GET_SIZE(real) > 256)
        return fj_unsupported("contents of a set of more than 256 items"), NULL;
    PyObject *copy = PySet_New(real), *copy2 = copy ? PySet_New(real) : NULL;
    if (copy2 == NULL) {
        Py_XDECREF(copy);
        return NULL;
    }
    PyObject *it = PyObject_GetIter(copy), *key;
    int plain = it != NULL;
    while (plain && (key = PyIter_Next(it)) != NULL) {
        plain = fj_is_plain_constant(key);
        Py_DECREF(key);
    }
    Py_XDECREF(it);
    if (!plain || PyErr_Occurred()) {
        Py_DECREF(copy);
        Py_DECREF(copy2);
        if (PyErr_Occurred())
            return NULL;
        return fj_unsupported("contents of a set holding values that are not plain constants"), NULL;
    }
    PyObject *mgr = fj_guard_manager(fr->tx->guards, self->source);
    if (mgr == NULL || fj_guard_add_equals_match(mgr, copy2) < 0) {
        Py_DECREF(copy);
        Py_DECREF(copy2);
        return NULL;
    }
    Py_DECREF(copy2);
    PyObject *effects = fr->tx->effects;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(effects); i++) {
        PyObject *eff = PyList_GET_ITEM(effects, i);
        if (PyTuple_GET_SIZE(eff) != 4 || PyTuple_GET_ITEM(eff, 3) != (PyObject *)self ||
            PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(eff, 0), "call") != 0)
            continue;
        if (model_apply(copy, PyTuple_GET_ITEM(eff, 1), PyTuple_GET_ITEM(eff, 2)) < 0) {
            Py_DECREF(copy);
            return fj_unsupported("contents of a set after adding values that are not constants"),
                   NULL;
        }
    }
    self->items = copy;
    return copy;
}

PyObject *fj_trace_set_len(fj_TFrame *fr, fj_Var *self)
{
    PyObject *m = set_model(fr, self);
    PyObject *n = m ? PyLong_FromSsize_t(PySet_GET_SIZE(m)) : NULL;
    PyObject *r = n ? (PyObject *)fj_var_const(n) : NULL;
    Py_XDECREF(n);
    return r;
}

int fj_trace_set_contains(fj_TFrame *fr, fj_Var *self, PyObject *item)
{
    PyObject *c = plain_const(item);
    if (c == NULL)
        return fj_unsupported("'in' test of a set with a value that is not a plain constant");
    PyObject *m = set_model(fr, self);
    return m == NULL ? -1 : PySet_Contains(m, c);
}

/*
** s.add(v) / s.discard(v) / s.update(items...) / s.clear() on an input set:
** recorded and replayed as is after the graph, in program order (the set is
** opaque to the trace: reading it is a break, so nothing traced depends on
** its contents, and the replay keeps every item's identity).
*/
PyObject *fj_trace_set_method(fj_TFrame *fr, fj_Var *self, PyObject *name, PyObject *const *args,
                              Py_ssize_t n, PyObject *kwnames)
{
    fj_Tracer *tx = fr->tx;
    if (kwnames != NULL)
        return fj_unsupported("set.%U with keywords", name), NULL;
    int one = fj_str_is(name, "add") || fj_str_is(name, "discard") || fj_str_is(name, "remove");
    if (fj_str_is(name, "remove") && n == 1) {
        /* raises KeyError when absent: the trace must know the contents */
        int has = fj_trace_set_contains(fr, self, args[0]);
        if (has < 0)
            return NULL;
        if (!has)
            return fj_unsupported("set.remove(%R): KeyError", args[0]), NULL;
    }
    if ((one && n != 1) || (fj_str_is(name, "clear") && n != 0))
        return fj_unsupported("set.%U with %zd arguments", name, n), NULL;
    PyObject *items = PyList_New(0);
    if (items == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        fj_Var *a = VAR(args[i]);
        int ok = one ? hash_safe(args[i]) : 0;
        if (!one && (a->kind == FJ_VAR_TUPLE || a->kind == FJ_VAR_LIST)) {
            ok = 1;
            for (Py_ssize_t j = 0; ok == 1 && j < PyList_GET_SIZE(a->items); j++)
                ok = hash_safe(PyList_GET_ITEM(a->items, j));
        }
        if (ok < 0) {
            Py_DECREF(items);
            return NULL;
        }
        if (!one && a->kind == FJ_VAR_CONST &&
            (PyTuple_CheckExact(a->obj) || PyFrozenSet_CheckExact(a->obj))) {
            /* a constant tuple or frozenset of plain constants */
            PyObject *seq = PySequence_List(a->obj);
            ok = seq != NULL;
            for (Py_ssize_t j = 0; ok && j < PyList_GET_SIZE(seq); j++)
                ok = fj_is_plain_constant(PyList_GET_ITEM(seq, j));
            Py_XDECREF(seq);
            PyErr_Clear();
        }
        if (!ok) {
            Py_DECREF(items);
            return fj_unsupported("set.%U of %R (not a known hashable value)", name, args[i]), NULL;
        }
        if (PyList_Append(items, args[i]) < 0) {
            Py_DECREF(items);
            return NULL;
        }
    }
    fj_Var *argt = fj_var_new(FJ_VAR_TUPLE, NULL, items);
    Py_DECREF(items);
    if (argt == NULL)
        return NULL;
    int r = 0;
    if (!self->pos) {
        self->pos = 1; /* mutated: the aliasing guards cover it */
        r = PyList_Append(tx->mutated, (PyObject *)self);
    }
    PyObject *eff = r == 0 ? Py_BuildValue("(sOOO)", "call", name, (PyObject *)argt, (PyObject *)self)
                           : NULL;
    r = eff == NULL || PyList_Append(tx->effects, eff) < 0 ? -1 : 0;
    if (r == 0 && self->items != NULL && model_apply(self->items, name, (PyObject *)argt) < 0)
        Py_CLEAR(self->items); /* contents no longer known: rebuilt (and refused) on need */
    Py_XDECREF(eff);
    Py_DECREF(argt);
    return r < 0 ? NULL : none_var();
}

/* ------------------------------------------ attribute stores and deletes */

int fj_trace_record_store(fj_Tracer *tx, PyObject *eff, PyObject *objv, PyObject *name,
                          PyObject *value)
{
    fj_Var *o = objv ? VAR(objv) : NULL;
    int r = eff == NULL ? -1 : 0;
    if (r == 0 && o != NULL && o->extra == NULL &&
        ((o->extra = PyDict_New()) == NULL || PyList_Append(tx->mutated, objv) < 0))
        r = -1;
    if (r == 0 && (PyList_Append(tx->effects, eff) < 0 ||
                   PyDict_SetItem(o ? o->extra : tx->global_overlay, name, value) < 0))
        r = -1;
    Py_XDECREF(eff);
    return r;
}

int fj_trace_attr_in_dict(PyObject *objv, PyObject *name, const char *verb, const char *outside)
{
    fj_Var *o = VAR(objv);
    if (o->kind != FJ_VAR_OBJ || o->source == NULL)
        return fj_unsupported("attribute %s on %R%s", verb, objv, outside);
    PyTypeObject *tp = Py_TYPE(o->obj);
    if (tp->tp_setattro != PyObject_GenericSetAttr || tp->tp_getattro != PyObject_GenericGetAttr ||
        tp->tp_dictoffset == 0)
        return fj_unsupported("attribute %s on %s, which customizes attribute access", verb,
                              tp->tp_name);
    PyObject *d = _PyType_Lookup(tp, name);
    if (d != NULL && Py_TYPE(d)->tp_descr_set != NULL)
        return fj_unsupported("attribute %s through descriptor %U of %s", verb, name, tp->tp_name);
    return 0;
}

int fj_trace_delattr(fj_TFrame *fr, PyObject *objv, PyObject *name)
{
    fj_Var *o = VAR(objv);
    fj_Tracer *tx = fr->tx;
    if (tx->loop != NULL && !fj_loop_made_here(tx, o))
        return fj_unsupported("an attribute deletion in the loop's body");
    if (o->kind == FJ_VAR_INST) {
        int has = PyDict_Contains(o->extra, name);
        if (has <= 0)
            return has < 0 ? -1 : fj_unsupported("del of attribute %U that is not set", name);
        return PyDict_DelItem(o->extra, name);
    }
    if (fj_trace_attr_in_dict(objv, name, "delete", "") < 0)
        return -1;
    PyObject *stored = o->extra ? PyDict_GetItemWithError(o->extra, name) : NULL;
    if (stored == NULL && PyErr_Occurred())
        return -1;
    if (stored != NULL && VAR(stored)->kind == FJ_VAR_NULL)
        return fj_unsupported("del of attribute %U deleted before", name);
    if (stored == NULL) {
        /* it must be in the instance's __dict__ now; reading it guards that it stays there */
        PyObject *dict = PyObject_GenericGetDict(o->obj, NULL);
        int has = dict ? PyDict_Contains(dict, name) : -1;
        Py_XDECREF(dict);
        if (has <= 0)
            return has < 0 ? -1 : fj_unsupported("del of attribute %U not in the instance dict", name);
        PyObject *cur = fj_trace_getattr(fr, objv, name);
        if (cur == NULL)
            return -1;
        Py_DECREF(cur);
    }
    fj_Var *gone = fj_var_new(FJ_VAR_NULL, NULL, NULL); /* "deleted" in o->extra */
    PyObject *nv = none_var();
    int r = fj_trace_record_store(
        tx, gone && nv ? Py_BuildValue("(sOOO)", "delattr", name, nv, objv) : NULL, objv, name,
        (PyObject *)gone);
    Py_XDECREF(nv);
    Py_XDECREF(gone);
    return r;
}

/* ------------------------------------------- instances of plain classes */

/*
** A class whose instances the trace can make and rebuild: metaclass type,
** object's __new__, a Python __init__ or object's, plain attribute access,
** an instance __dict__ and no __slots__, no finalizer.
*/
static int plain_class(PyTypeObject *tp)
{
    if (Py_TYPE(tp) != &PyType_Type || !(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) ||
        tp->tp_new != PyBaseObject_Type.tp_new || tp->tp_setattro != PyObject_GenericSetAttr ||
        tp->tp_getattro != PyObject_GenericGetAttr || tp->tp_dictoffset == 0 ||
        tp->tp_finalize != NULL || tp->tp_del != NULL)
        return 0;
    PyObject *slots = PyUnicode_FromString("__slots__");
    int plain = slots != NULL && _PyType_Lookup(tp, slots) == NULL;
    Py_XDECREF(slots);
    PyErr_Clear();
    return plain;
}

int fj_trace_is_plain_class(PyObject *fnv)
{
    fj_Var *f = VAR(fnv);
    return f->kind == FJ_VAR_CONST && PyType_Check(f->obj) && plain_class((PyTypeObject *)f->obj);
}

/* The class attribute 'name' of an instance's class, guarded through the class's source. */
static PyObject *class_attr(fj_TFrame *fr, fj_Var *inst, PyObject *name, PyObject *value)
{
    fj_Var *cls = VAR(inst->extra2);
    if (cls->source == NULL)
        return fj_unsupported("attribute %U of a class with no source", name), NULL;
    fj_Source *src = fj_source_attr(cls->source, name);
    if (src == NULL)
        return NULL;
    PyObject *v = (PyObject *)fj_trace_input(fr->tx, src, value);
    Py_DECREF(src);
    return v;
}

PyObject *fj_trace_new_instance(fj_TFrame *fr, PyObject *clsv, PyObject *const *args,
                                Py_ssize_t n, PyObject *kwnames)
{
    fj_Var *cls = VAR(clsv);
    PyTypeObject *tp = (PyTypeObject *)cls->obj;
    if (cls->source == NULL)
        return fj_unsupported("instance of %s, a class with no source", tp->tp_name), NULL;
    PyObject *init_name = PyUnicode_FromString("__init__");
    if (init_name == NULL)
        return NULL;
    PyObject *init = _PyType_Lookup(tp, init_name);
    PyObject *base_init = _PyType_Lookup(&PyBaseObject_Type, init_name);
    fj_Var *inst = NULL;
    PyObject *attrs = PyDict_New();
    if (attrs == NULL)
        goto error;
    inst = fj_var_new(FJ_VAR_INST, (PyObject *)tp, NULL);
    if (inst == NULL)
        goto error;
    inst->extra = attrs;
    attrs = NULL;
    inst->extra2 = Py_NewRef(clsv);
    if (init == base_init) {
        if (n > 0) {
            fj_unsupported("%s() takes no arguments", tp->tp_name);
            goto error;
        }
    }
    else if (init != NULL && PyFunction_Check(init)) {
        PyObject *fv = class_attr(fr, inst, init_name, init); /* guards the __init__ */
        if (fv == NULL)
            goto error;
        Py_DECREF(fv);
        PyObject *stack[FJ_MAX_METHOD_ARGS];
        if (fj_trace_self_args(stack, (PyObject *)inst, args, n) < 0)
            goto error;
        PyObject *r = fj_trace_inline(fr, init, stack, n + 1, kwnames);
        if (r == NULL)
            goto error;
        int none = fj_var_as_const(r) == Py_None;
        Py_DECREF(r);
        if (!none) {
            fj_unsupported("__init__() of %s returns a value", tp->tp_name);
            goto error;
        }
    }
    else {
        fj_unsupported("instance of %s whose __init__ is not a Python function", tp->tp_name);
        goto error;
    }
    Py_DECREF(init_name);
    return (PyObject *)inst;
error:
    Py_XDECREF(attrs);
    Py_XDECREF(inst);
    Py_DECREF(init_name);
    return NULL;
}

PyObject *fj_trace_inst_getattr(fj_TFrame *fr, fj_Var *inst, PyObject *name)
{
    PyTypeObject *tp = (PyTypeObject *)inst->obj;
    PyObject *d = _PyType_Lookup(tp, name);
    if (d != NULL && Py_TYPE(d)->tp_descr_set != NULL)
        return fj_unsupported("attribute %U of %s is a data descriptor", name, tp->tp_name), NULL;
    PyObject *v = PyDict_GetItemWithError(inst->extra, name);
    if (v != NULL)
        return Py_NewRef(v);
    if (PyErr_Occurred())
        return NULL;
    if (d == NULL)
        return fj_unsupported("'%s' object has no attribute '%U'", tp->tp_name, name), NULL;
    if (PyFunction_Check(d)) {
        PyObject *fv = class_attr(fr, inst, name, d);
        if (fv == NULL)
            return NULL;
        Py_DECREF(fv);
        return new_method_var((PyObject *)inst, name);
    }
    if (Py_TYPE(d)->tp_descr_get != NULL)
        return fj_unsupported("attribute %U of %s is a descriptor", name, tp->tp_name), NULL;
    return class_attr(fr, inst, name, d);
}

int fj_trace_inst_setattr(fj_TFrame *fr, fj_Var *inst, PyObject *name, PyObject *v)
{
    (void)fr;
    PyTypeObject *tp = (PyTypeObject *)inst->obj;
    PyObject *d = _PyType_Lookup(tp, name);
    fj_Var *vv = VAR(v);
    if (d != NULL && Py_TYPE(d)->tp_descr_set != NULL)
        return fj_unsupported("attribute store through descriptor %U of %s", name, tp->tp_name);
    if (vv->kind == FJ_VAR_ITER || vv->kind == FJ_VAR_METHOD || vv->kind == FJ_VAR_CELL ||
        vv->kind == FJ_VAR_NULL)
        return fj_unsupported("attribute store of %R", v);
    return PyDict_SetItem(inst->extra, name, v);
}

PyObject *fj_trace_inst_method(fj_TFrame *fr, fj_Var *inst, PyObject *name, PyObject *const *args,
                               Py_ssize_t n, PyObject *kwnames)
{
    PyObject *fn = _PyType_Lookup((PyTypeObject *)inst->obj, name);
    if (fn == NULL || !PyFunction_Check(fn))
        return fj_unsupported("call of method %U of %s", name, ((PyTypeObject *)inst->obj)->tp_name),
               NULL;
    PyObject *stack[FJ_MAX_METHOD_ARGS];
    if (fj_trace_self_args(stack, (PyObject *)inst, args, n) < 0)
        return NULL;
    return fj_trace_inline(fr, fn, stack, n + 1, kwnames);
}

int fj_trace_inst_truth(fj_Var *inst)
{
    PyTypeObject *tp = (PyTypeObject *)inst->obj;
    if ((tp->tp_as_number && tp->tp_as_number->nb_bool) ||
        (tp->tp_as_mapping && tp->tp_as_mapping->mp_length) ||
        (tp->tp_as_sequence && tp->tp_as_sequence->sq_length))
        return fj_unsupported("truth value of a %s instance (__bool__/__len__)", tp->tp_name);
    return 1;
}
