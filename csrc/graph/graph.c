/*
** graph.c: the operator graph (framejit._C.Graph, framejit._C.Node).
**
** Responsible for: building graphs (placeholders, calls whose metadata the
** op table infers, one output), unique node names, use counts and the last
** use of every node, printing (a torch.fx-like table, and Python source that
** computes the same when exec'd with `numpy` in its globals), and running a
** graph eagerly: each call node's target is vectorcalled with arguments
** resolved from an environment array, and every intermediate is released
** right after its last user ran.  Also the Python-side builder (Graph(),
** g.placeholder, g.call, g.output) used by tests.
**
** Not responsible for: what an operation does or what it produces (ops.c),
** tracing bytecode or deciding graph breaks (the tracer).
*/
#include "fj_numpy.h"
#include "graph.h"
#include "loop.h"

#include <math.h>
#include <structmember.h>
#include <string.h>

PyTypeObject *fj_NodeType;
static PyTypeObject *fj_GraphType;

typedef struct {
    PyObject_HEAD
    PyObject *nodes;        /* strong: list of fj_Node, in order */
    PyObject *used_names;   /* strong: dict name -> None */
    PyObject *name_counter; /* strong: dict stem -> next suffix */
    Py_ssize_t nplaceholders, ncalls;
    int has_output;
    int torch;              /* holds torch tensors */
    PyObject *parent;       /* borrowed, or NULL: the enclosing graph of a loop body being traced */
    PyObject *lifted;       /* strong list or NULL: the enclosing nodes lifted, in placeholder order */
    PyObject *lifted_to;    /* strong dict or NULL: id(enclosing node) -> placeholder */
    vectorcallfunc vectorcall;
} fj_Graph;

static PyObject *graph_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames);

int fj_Graph_Check(PyObject *o)
{
    return Py_TYPE(o) == fj_GraphType;
}

/* ---- Node --------------------------------------------------------------- */

static void node_dealloc(fj_Node *n)
{
    PyTypeObject *tp = Py_TYPE(n);
    Py_XDECREF(n->name);
    Py_XDECREF(n->target);
    Py_XDECREF(n->args);
    Py_XDECREF(n->kwargs);
    Py_XDECREF(n->dtype);
    Py_XDECREF(n->inputs);
    Py_XDECREF(n->kwnames);
    Py_XDECREF(n->kwvals);
    Py_XDECREF(n->example);
    Py_XDECREF(n->ufunc);
    Py_XDECREF(n->fake);
    Py_XDECREF(n->label);
    Py_XDECREF(n->pytype);
    Py_XDECREF(n->dynmeta);
    tp->tp_free((PyObject *)n);
    Py_DECREF(tp);
}

static const char *node_opname(fj_Node *n)
{
    if (n->kind == FJ_NODE_PLACEHOLDER)
        return "placeholder";
    if (n->kind == FJ_NODE_OUTPUT)
        return "output";
    if (n->op->kind == FJ_OP_METHOD)
        return "call_method";
    if (n->op->kind == FJ_OP_ATTR)
        return "call_attr";
    return "call_function";
}

static PyObject *node_get_op(fj_Node *n, void *c)
{
    return PyUnicode_FromString(node_opname(n));
}

static PyObject *node_get_name(fj_Node *n, void *c)
{
    return Py_NewRef(n->name);
}

static PyObject *node_get_target(fj_Node *n, void *c)
{
    return Py_NewRef(n->target ? n->target : Py_None);
}

static PyObject *node_get_args(fj_Node *n, void *c)
{
    return Py_NewRef(n->args);
}

static PyObject *node_get_kwargs(fj_Node *n, void *c)
{
    return n->kwargs ? PyDict_Copy(n->kwargs) : PyDict_New();
}

PyObject *fj_node_shape_tuple(fj_Node *n)
{
    PyObject *t = PyTuple_New(n->ndim);
    for (int i = 0; t && i < n->ndim; i++) {
        /* a size that depends on the data is not known: None */
        PyObject *d = i == 0 && n->datadep ? Py_NewRef(Py_None) : PyLong_FromSsize_t(n->shape[i]);
        if (!d) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, d);
    }
    return t;
}

static PyObject *node_meta(fj_Node *n);

/* meta: {'dtype': dtype, 'shape': (..), 'kind': 'array'|'scalar'}; {} for output;
   a placeholder's symbolic sizes too ('dynamic_dims', 'size_of'). */
static PyObject *node_get_meta(fj_Node *n, void *c)
{
    PyObject *d = node_meta(n);
    if (d != NULL && n->dynmeta != NULL && PyDict_Update(d, n->dynmeta) < 0)
        Py_CLEAR(d);
    return d;
}

static PyObject *node_meta(fj_Node *n)
{
    if (n->vkind == FJ_VAL_TENSORS)
        return Py_BuildValue("{s:s,s:O}", "kind", "tensors", "fake", n->fake);
    if (n->vkind == FJ_VAL_TENSOR) {
        PyObject *shape = fj_node_shape_tuple(n);
        PyObject *dtype = shape ? PyObject_GetAttrString(n->fake, "dtype") : NULL;
        PyObject *d = dtype ? Py_BuildValue("{s:s,s:O,s:O,s:O}", "kind", "tensor", "fake", n->fake,
                                            "shape", shape, "dtype", dtype)
                            : NULL;
        Py_XDECREF(shape);
        Py_XDECREF(dtype);
        return d;
    }
    if (!n->dtype)
        return PyDict_New();
    PyObject *shape = fj_node_shape_tuple(n);
    if (!shape)
        return NULL;
    PyObject *d = Py_BuildValue("{s:O,s:N,s:s}", "dtype", (PyObject *)n->dtype, "shape", shape, "kind",
                                n->vkind == FJ_VAL_NPSCALAR    ? "scalar"
                                : n->vkind == FJ_VAL_PYSCALAR ? "pyscalar"
                                                               : "array");
    if (d != NULL && n->example != NULL && PyDict_SetItemString(d, "example", n->example) < 0)
        Py_CLEAR(d);
    if (d != NULL && n->datadep) {
        PyObject *sym = PyLong_FromLong(n->datadep);
        if (sym == NULL || PyDict_SetItemString(d, "datadep", sym) < 0)
            Py_CLEAR(d);
        Py_XDECREF(sym);
    }
    return d;
}

static PyObject *node_get_index(fj_Node *n, void *c)
{
    return PyLong_FromSsize_t(n->index);
}

static PyObject *node_get_users(fj_Node *n, void *c)
{
    return PyLong_FromLong(n->users);
}

static PyObject *node_get_pos(fj_Node *n, void *c)
{
    if (n->pos < 0)
        Py_RETURN_NONE;
    return PyLong_FromLong(2L * n->pos);
}

static PyObject *node_repr(fj_Node *n)
{
    return Py_NewRef(n->name);
}

static PyGetSetDef node_getset[] = {
    {"op", (getter)node_get_op, NULL, "'placeholder', 'call_function', 'call_method', 'call_attr' or 'output'", NULL},
    {"name", (getter)node_get_name, NULL, "unique name in the graph", NULL},
    {"target", (getter)node_get_target, NULL, "callable, method/attribute name, or the placeholder name", NULL},
    {"args", (getter)node_get_args, NULL, "arguments (Nodes and constants)", NULL},
    {"kwargs", (getter)node_get_kwargs, NULL, "keyword arguments (a copy)", NULL},
    {"meta", (getter)node_get_meta, NULL, "inferred metadata: dtype, shape, kind", NULL},
    {"index", (getter)node_get_index, NULL, "position in the graph", NULL},
    {"users", (getter)node_get_users, NULL, "number of nodes using this one", NULL},
    {"offset", (getter)node_get_pos, NULL,
     "bytecode offset (as dis shows it) of the traced code's instruction that made the node "
     "(an inlined call's nodes: the call's), or None", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* node.static_attr(name): shape/ndim/dtype/size/itemsize/nbytes without a graph node. */
static PyObject *node_static_attr(fj_Node *n, PyObject *name)
{
    PyObject *r = n->kind == FJ_NODE_OUTPUT ? NULL : fj_ops_static_attr(n, name);
    if (!r && !PyErr_Occurred())
        PyErr_Format(PyExc_AttributeError, "%R is not a static attribute", name);
    return r;
}

static PyMethodDef node_methods[] = {
    {"static_attr", (PyCFunction)node_static_attr, METH_O,
     "static_attr(name): the constant value of .shape/.ndim/.dtype/.size/.itemsize/.nbytes"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot node_slots[] = {
    {Py_tp_methods, node_methods},
    {Py_tp_dealloc, node_dealloc},
    {Py_tp_repr, node_repr},
    {Py_tp_getset, node_getset},
    {Py_tp_doc, "A node of a framejit graph (created by Graph methods only)."},
    {0, NULL},
};

static PyType_Spec node_spec = {
    .name = "framejit._C.Node",
    .basicsize = sizeof(fj_Node),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = node_slots,
};

/* ---- building ----------------------------------------------------------- */

/* A unique name from 'stem' (new reference, NULL on error). */
static PyObject *unique_name(fj_Graph *g, PyObject *stem)
{
    PyObject *name = NULL;
    int used = PyDict_Contains(g->used_names, stem);
    if (used < 0)
        return NULL;
    if (!used) {
        name = Py_NewRef(stem);
    } else {
        PyObject *cnt = PyDict_GetItemWithError(g->name_counter, stem);
        long i = cnt ? PyLong_AsLong(cnt) : 1;
        if (PyErr_Occurred())
            return NULL;
        for (;; i++) {
            name = PyUnicode_FromFormat("%U_%ld", stem, i);
            if (!name)
                return NULL;
            used = PyDict_Contains(g->used_names, name);
            if (used < 0)
                goto error;
            if (!used)
                break;
            Py_CLEAR(name);
        }
        PyObject *next = PyLong_FromLong(i + 1);
        if (!next || PyDict_SetItem(g->name_counter, stem, next) < 0) {
            Py_XDECREF(next);
            goto error;
        }
        Py_DECREF(next);
    }
    if (PyDict_SetItem(g->used_names, name, Py_None) < 0)
        goto error;
    return name;
error:
    Py_XDECREF(name);
    return NULL;
}

_Thread_local int fj_graph_pos = -1;

static fj_Node *node_alloc(int kind)
{
    fj_Node *n = (fj_Node *)PyType_GenericAlloc(fj_NodeType, 0);
    if (!n)
        return NULL;
    n->kind = kind;
    n->last_use = -1;
    n->pos = fj_graph_pos;
    return n;
}

/* Collects the distinct nodes in 'o' (recursing into tuples, lists and
   dict values) into 'acc'; sets *deep when one is inside a container.
   Checks each belongs to 'g' (index below 'limit').  0 or -1. */
static int collect_inputs(fj_Graph *g, PyObject *o, PyObject *acc, int depth, int *deep, Py_ssize_t limit)
{
    if (fj_Node_Check(o)) {
        fj_Node *n = (fj_Node *)o;
        if (n->index >= limit || PyList_GET_ITEM(g->nodes, n->index) != o) {
            PyErr_Format(PyExc_ValueError, "framejit: node %U does not belong to this graph", n->name);
            return -1;
        }
        if (n->kind == FJ_NODE_OUTPUT) {
            PyErr_SetString(PyExc_ValueError, "framejit: the output node cannot be an argument");
            return -1;
        }
        if (depth > 0)
            *deep = 1;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(acc); i++)
            if (PyList_GET_ITEM(acc, i) == o)
                return 0;
        return PyList_Append(acc, o);
    }
    if (PyTuple_Check(o) || PyList_Check(o)) {
        if (depth > 50) {
            PyErr_SetString(PyExc_RecursionError, "framejit: arguments nested too deeply");
            return -1;
        }
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); i++)
            if (collect_inputs(g, PySequence_Fast_GET_ITEM(o, i), acc, depth + 1, deep, limit) < 0)
                return -1;
    }
    else if (PySlice_Check(o)) {
        /* x[:n] with a symbolic bound: the slice's bounds may be nodes */
        PySliceObject *sl = (PySliceObject *)o;
        PyObject *parts[3] = {sl->start, sl->stop, sl->step};
        for (int i = 0; i < 3; i++)
            if (collect_inputs(g, parts[i], acc, depth + 2, deep, limit) < 0)
                return -1;
        if (*deep)
            *deep = 2; /* (native loop bodies take no node nested this way) */
    }
    return 0;
}

/* A slice of 'sl' with each bound mapped by fn (new reference, NULL on error). */
static PyObject *map_slice(PyObject *o, PyObject *(*fn)(PyObject *, void *), void *arg)
{
    PySliceObject *sl = (PySliceObject *)o;
    PyObject *a = fn(sl->start, arg), *b = a ? fn(sl->stop, arg) : NULL, *c = b ? fn(sl->step, arg) : NULL;
    PyObject *r = c ? PySlice_New(a, b, c) : NULL;
    Py_XDECREF(a);
    Py_XDECREF(b);
    Py_XDECREF(c);
    return r;
}

static fj_Node *append_node(fj_Graph *g, fj_Node *n, PyObject *acc);

static PyObject *out_operand(fj_Node *n);

/* Counts the calls appended to any graph that may write into an array (see
   fj_graph_write_epoch). */
static unsigned long write_epoch = 0;

unsigned long fj_graph_write_epoch(void)
{
    return write_epoch;
}

/* Appends call node 'n' (stolen): variant when one of its inputs ('acc') is. */
static fj_Node *append_call(fj_Graph *g, fj_Node *n, PyObject *acc)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(acc) && !n->variant; i++)
        n->variant = ((fj_Node *)PyList_GET_ITEM(acc, i))->variant;
    /* an in-place operator, an item store, a ufunc's 'out', and every raw call (a
       loop, a torch op) may write into an array */
    if (n->op == NULL || n->op->kind == FJ_OP_INPLACE || (n->op->flags & FJ_OPF_MUTATES) ||
        n->fake != NULL || n->label != NULL || out_operand(n) != NULL)
        write_epoch++;
    g->ncalls++;
    return append_node(g, n, acc);
}

/* Appends node 'n' (stolen) using the inputs in 'acc'.  Borrowed node or NULL. */
static fj_Node *append_node(fj_Graph *g, fj_Node *n, PyObject *acc)
{
    n->index = PyList_GET_SIZE(g->nodes);
    n->inputs = PyList_AsTuple(acc);
    if (!n->inputs || PyList_Append(g->nodes, (PyObject *)n) < 0) {
        Py_DECREF(n);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(n->inputs); i++) {
        fj_Node *in = (fj_Node *)PyTuple_GET_ITEM(n->inputs, i);
        in->users++;
        in->last_use = n->index;
    }
    Py_DECREF(n); /* the list holds it */
    return n;
}

PyObject *fj_graph_new(void)
{
    fj_Graph *g = (fj_Graph *)PyType_GenericAlloc(fj_GraphType, 0);
    if (!g)
        return NULL;
    g->nodes = PyList_New(0);
    g->used_names = PyDict_New();
    g->name_counter = PyDict_New();
    g->vectorcall = graph_vectorcall;
    if (!g->nodes || !g->used_names || !g->name_counter) {
        Py_DECREF(g);
        return NULL;
    }
    /* names the printed code uses itself (or that are not assignable) */
    static const char *reserved[] = {"self", "numpy", "abs", "slice", "float", "complex", "Ellipsis", "None",
                                     "True", "False", "output", NULL};
    for (int i = 0; reserved[i]; i++) {
        PyObject *k = PyUnicode_FromString(reserved[i]);
        if (!k || PyDict_SetItem(g->used_names, k, Py_None) < 0) {
            Py_XDECREF(k);
            Py_DECREF(g);
            return NULL;
        }
        Py_DECREF(k);
    }
    return (PyObject *)g;
}

static int check_open(fj_Graph *g)
{
    if (g->has_output) {
        PyErr_SetString(PyExc_RuntimeError, "framejit: the graph already has its output node");
        return -1;
    }
    return 0;
}

fj_Node *fj_graph_placeholder(PyObject *gobj, PyObject *name, PyObject *example)
{
    fj_Graph *g = (fj_Graph *)gobj;
    fj_Node *n = NULL;
    PyObject *acc = NULL;
    if (check_open(g) < 0)
        return NULL;
    if (!PyUnicode_Check(name) || !PyUnicode_IsIdentifier(name)) {
        PyErr_Format(PyExc_ValueError, "framejit: placeholder name must be an identifier, not %R", name);
        return NULL;
    }
    n = node_alloc(FJ_NODE_PLACEHOLDER);
    if (!n)
        return NULL;
    if (PyArray_Check(example) && PyArray_NDIM((PyArrayObject *)example) > FJ_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "framejit: arrays with more than %d dimensions are not traced",
                     FJ_MAX_NDIM);
        goto error;
    }
    /* a Python scalar is a symbolic one (automatic dynamic): the example is its trace-time value;
       Ellipsis stands for an opaque object input (FJ_VAL_OBJECT) */
    int known = example == Py_Ellipsis ? (n->vkind = FJ_VAL_OBJECT, 1)
                                       : fj_value_meta(example, &n->vkind, &n->dtype, &n->example);
    if (known < 0)
        goto error;
    if (!known) {
        PyErr_Format(PyExc_TypeError, "framejit: a placeholder example must be an ndarray or a NumPy scalar, not %.100s",
                     Py_TYPE(example)->tp_name);
        goto error;
    }
    if (n->vkind == FJ_VAL_ARRAY) {
        n->ndim = PyArray_NDIM((PyArrayObject *)example);
        if (n->ndim > 0) /* 0-d arrays may have no dims pointer */
            memcpy(n->shape, PyArray_DIMS((PyArrayObject *)example), sizeof(npy_intp) * (size_t)n->ndim);
    }
    n->name = unique_name(g, name);
    if (!n->name)
        goto error;
    n->target = Py_NewRef(n->name);
    n->args = PyTuple_New(0);
    acc = PyList_New(0);
    if (!n->args || !acc)
        goto error;
    if (g->ncalls > 0) {
        /* The tracer meets inputs lazily: keep placeholders first by
           inserting after the last one and shifting the later nodes. */
        Py_ssize_t at = g->nplaceholders, total = PyList_GET_SIZE(g->nodes);
        n->index = at;
        n->inputs = PyTuple_New(0);
        if (!n->inputs || PyList_Insert(g->nodes, at, (PyObject *)n) < 0)
            goto error;
        for (Py_ssize_t i = at + 1; i <= total; i++) {
            fj_Node *m = (fj_Node *)PyList_GET_ITEM(g->nodes, i);
            m->index++;
            if (m->last_use >= at)
                m->last_use++;
        }
        for (Py_ssize_t i = 0; i < at; i++) {
            fj_Node *m = (fj_Node *)PyList_GET_ITEM(g->nodes, i);
            if (m->last_use >= at)
                m->last_use++;
        }
        g->nplaceholders++;
        Py_DECREF(n); /* the list holds it */
        Py_DECREF(acc);
        return n;
    }
    g->nplaceholders++;
    n = append_node(g, n, acc);
    Py_DECREF(acc);
    return n;
error:
    Py_XDECREF(n);
    Py_XDECREF(acc);
    return NULL;
}

/* n's kwargs, a copy of 'kwargs', and their names in order (the runner's kwnames).  0 or -1. */
static int set_kwargs(fj_Node *n, PyObject *kwargs)
{
    if (!(n->kwargs = PyDict_Copy(kwargs)))
        return -1;
    PyObject *keys = PyDict_Keys(n->kwargs), *vals = keys ? PyDict_Values(n->kwargs) : NULL;
    n->kwnames = vals ? PyList_AsTuple(keys) : NULL;
    n->kwvals = n->kwnames ? PyList_AsTuple(vals) : NULL;
    Py_XDECREF(keys);
    Py_XDECREF(vals);
    return n->kwvals ? 0 : -1;
}

/* Sets a torch node's metadata from 'fake' (a meta tensor or a tuple of them). */
static int set_torch_meta(fj_Node *n, PyObject *fake)
{
    n->fake = Py_NewRef(fake);
    if (PyTuple_Check(fake)) {
        n->vkind = FJ_VAL_TENSORS;
        return 0;
    }
    n->vkind = FJ_VAL_TENSOR;
    PyObject *shape = PyObject_GetAttrString(fake, "shape");
    if (shape == NULL)
        return -1;
    Py_ssize_t nd = PyTuple_Check(shape) ? PyTuple_GET_SIZE(shape) : -1;
    if (nd < 0 || nd > FJ_MAX_NDIM) {
        Py_DECREF(shape);
        PyErr_Format(PyExc_ValueError, "framejit: tensors with more than %d dimensions are not traced",
                     FJ_MAX_NDIM);
        return -1;
    }
    n->ndim = (int)nd;
    for (Py_ssize_t i = 0; i < nd; i++) {
        n->shape[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        if (n->shape[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(shape);
            return -1;
        }
    }
    Py_DECREF(shape);
    return 0;
}

fj_Node *fj_graph_tensor_placeholder(PyObject *gobj, PyObject *name, PyObject *fake)
{
    fj_Graph *g = (fj_Graph *)gobj;
    /* a placeholder of a Python int stands in for the example, then takes the fake's metadata */
    fj_Node *n = fj_graph_placeholder(gobj, name, Py_False);
    if (n == NULL)
        return NULL;
    Py_CLEAR(n->dtype);
    Py_CLEAR(n->example);
    if (set_torch_meta(n, fake) < 0)
        return NULL; /* the graph is discarded with the failed trace */
    g->torch = 1;
    return n;
}

int fj_graph_is_torch(PyObject *g)
{
    return ((fj_Graph *)g)->torch;
}

/* The nodes a call's arguments and keyword values hold, each once (a new
   list), *deep set when one sits inside a container; NULL on error. */
static PyObject *call_inputs(fj_Graph *g, PyObject *args, PyObject *kwargs, int *deep)
{
    PyObject *acc = PyList_New(0);
    /* depth -1: the arguments themselves are at depth 0 (not 'deep') */
    if (!acc || collect_inputs(g, args, acc, -1, deep, PyList_GET_SIZE(g->nodes)) < 0)
        goto error;
    if (kwargs) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(kwargs, &pos, &k, &v))
            if (collect_inputs(g, v, acc, 1, deep, PyList_GET_SIZE(g->nodes)) < 0)
                goto error;
    }
    return acc;
error:
    Py_XDECREF(acc);
    return NULL;
}

fj_Node *fj_graph_torch_call(PyObject *gobj, const fj_OpDef *op, PyObject *target, PyObject *label,
                             PyObject *stem, PyObject *args, PyObject *kwargs, PyObject *fake_result)
{
    fj_Graph *g = (fj_Graph *)gobj;
    fj_Node *n = NULL;
    PyObject *acc = NULL;
    int deep = 0;
    if (g->parent != NULL) {
        PyErr_SetString(PyExc_TypeError, "torch operations in a captured loop body are not supported");
        return NULL;
    }
    if (check_open(g) < 0)
        return NULL;
    if (kwargs && PyDict_GET_SIZE(kwargs) == 0)
        kwargs = NULL;
    if ((acc = call_inputs(g, args, kwargs, &deep)) == NULL)
        goto error;
    n = node_alloc(FJ_NODE_CALL);
    if (!n || set_torch_meta(n, fake_result) < 0)
        goto error;
    n->op = op;
    n->deep = deep;
    n->target = Py_NewRef(target);
    n->label = Py_XNewRef(label);
    n->args = Py_NewRef(args);
    if (kwargs && set_kwargs(n, kwargs) < 0)
        goto error;
    if (!(n->name = unique_name(g, stem)))
        goto error;
    g->ncalls++;
    g->torch = 1;
    n = append_node(g, n, acc);
    Py_DECREF(acc);
    return n;
error:
    Py_XDECREF(n);
    Py_XDECREF(acc);
    return NULL;
}

static PyObject *lift_all(fj_Graph *g, PyObject *o, int depth);

fj_Node *fj_graph_call(PyObject *gobj, const fj_OpDef *op, PyObject *args, PyObject *kwargs)
{
    fj_Graph *g = (fj_Graph *)gobj;
    fj_Meta m = {0};
    fj_Node *n = NULL;
    PyObject *acc = NULL, *stem = NULL, *lifted_args = NULL, *lifted_kwargs = NULL;
    int deep = 0;
    if (check_open(g) < 0)
        return NULL;
    if (!PyTuple_Check(args) || (kwargs && !PyDict_Check(kwargs))) {
        PyErr_SetString(PyExc_TypeError, "framejit: call args must be a tuple and kwargs a dict");
        return NULL;
    }
    if (kwargs && PyDict_GET_SIZE(kwargs) == 0)
        kwargs = NULL;
    if (g->parent != NULL) {
        /* a loop body: enclosing nodes become placeholders */
        if ((lifted_args = lift_all(g, args, 0)) == NULL ||
            (kwargs != NULL && (lifted_kwargs = lift_all(g, kwargs, 0)) == NULL))
            goto error;
        args = lifted_args;
        if (lifted_kwargs != NULL)
            kwargs = lifted_kwargs;
    }
    if ((acc = call_inputs(g, args, kwargs, &deep)) == NULL)
        goto error;
    if (fj_ops_infer(op, args, kwargs, &m) < 0)
        goto error;
    n = node_alloc(FJ_NODE_CALL);
    if (!n)
        goto error;
    n->op = op;
    n->vkind = m.vkind;
    n->dtype = m.dtype;
    m.dtype = NULL;
    n->example = m.example;
    m.example = NULL;
    n->ndim = m.ndim;
    if (m.ndim > 0)
        memcpy(n->shape, m.shape, sizeof(npy_intp) * (size_t)m.ndim);
    n->deep = deep;
    n->target = Py_XNewRef(fj_op_target(op));
    n->args = Py_NewRef(args);
    if (!deep && kwargs == NULL && m.vkind == FJ_VAL_ARRAY && m.ndim > 0)
        n->ufunc = fj_op_ufunc(op, PyTuple_GET_SIZE(args));
    if (kwargs && set_kwargs(n, kwargs) < 0)
        goto error;
    stem = PyUnicode_FromString(op->name);
    if (!stem || !(n->name = unique_name(g, stem)))
        goto error;
    Py_DECREF(stem);
    n = append_call(g, n, acc);
    Py_DECREF(acc);
    Py_XDECREF(lifted_args);
    Py_XDECREF(lifted_kwargs);
    return n;
error:
    Py_XDECREF(m.dtype);
    Py_XDECREF(m.example);
    Py_XDECREF(n);
    Py_XDECREF(acc);
    Py_XDECREF(stem);
    Py_XDECREF(lifted_args);
    Py_XDECREF(lifted_kwargs);
    return NULL;
}

/* ---- loop bodies -------------------------------------------------------- */

PyObject *fj_graph_sub_new(PyObject *parent)
{
    fj_Graph *g = (fj_Graph *)fj_graph_new();
    if (g == NULL)
        return NULL;
    g->parent = parent;
    g->lifted = PyList_New(0);
    g->lifted_to = PyDict_New();
    if (g->lifted == NULL || g->lifted_to == NULL) {
        Py_DECREF(g);
        return NULL;
    }
    return (PyObject *)g;
}

PyObject *fj_graph_lifted(PyObject *gobj)
{
    fj_Graph *g = (fj_Graph *)gobj;
    return g->lifted ? PyList_GetSlice(g->lifted, 0, PyList_GET_SIZE(g->lifted)) : PyList_New(0);
}

void fj_graph_detach(PyObject *gobj)
{
    fj_Graph *g = (fj_Graph *)gobj;
    g->parent = NULL;
    Py_CLEAR(g->lifted);
    Py_CLEAR(g->lifted_to);
}

static int owns_node(fj_Graph *g, fj_Node *n)
{
    return n->index < PyList_GET_SIZE(g->nodes) && PyList_GET_ITEM(g->nodes, n->index) == (PyObject *)n;
}

int fj_graph_owns(PyObject *g, fj_Node *n)
{
    return owns_node((fj_Graph *)g, n);
}

fj_Node *fj_graph_lift(PyObject *gobj, fj_Node *n)
{
    fj_Graph *g = (fj_Graph *)gobj;
    if (owns_node(g, n))
        return n;
    if (g->parent == NULL || g->lifted_to == NULL) {
        PyErr_Format(PyExc_ValueError, "framejit: node %U does not belong to this graph", n->name);
        return NULL;
    }
    PyObject *key = PyLong_FromVoidPtr(n);
    if (key == NULL)
        return NULL;
    PyObject *hit = PyDict_GetItemWithError(g->lifted_to, key);
    if (hit != NULL || PyErr_Occurred()) {
        Py_DECREF(key);
        return (fj_Node *)hit;
    }
    fj_Node *outer = fj_graph_lift(g->parent, n); /* through the enclosing bodies */
    fj_Node *ph = outer ? fj_graph_placeholder_like(gobj, n->name, (PyObject *)outer, outer->variant) : NULL;
    if (ph == NULL || PyDict_SetItem(g->lifted_to, key, (PyObject *)ph) < 0 ||
        PyList_Append(g->lifted, (PyObject *)outer) < 0) {
        Py_DECREF(key);
        return NULL;
    }
    Py_DECREF(key);
    return ph;
}

/* 'o' (an argument: nodes, constants, tuples, lists, dicts of them) with the
   enclosing graph's nodes replaced by this body's placeholders.  New ref. */
static PyObject *lift_all(fj_Graph *g, PyObject *o, int depth)
{
    if (fj_Node_Check(o)) {
        fj_Node *n = fj_graph_lift((PyObject *)g, (fj_Node *)o);
        return n ? Py_NewRef((PyObject *)n) : NULL;
    }
    if (depth > 50) {
        PyErr_SetString(PyExc_RecursionError, "framejit: arguments nested too deeply");
        return NULL;
    }
    if (PyTuple_Check(o) || PyList_Check(o)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        PyObject *out = PyTuple_Check(o) ? PyTuple_New(n) : PyList_New(n);
        for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
            PyObject *v = lift_all(g, PySequence_Fast_GET_ITEM(o, i), depth + 1);
            if (v == NULL)
                Py_CLEAR(out);
            else if (PyTuple_Check(out))
                PyTuple_SET_ITEM(out, i, v);
            else
                PyList_SET_ITEM(out, i, v);
        }
        return out;
    }
    if (PyDict_Check(o)) {
        PyObject *out = PyDict_New(), *k, *v;
        Py_ssize_t pos = 0;
        while (out != NULL && PyDict_Next(o, &pos, &k, &v)) {
            PyObject *lv = lift_all(g, v, depth + 1);
            if (lv == NULL || PyDict_SetItem(out, k, lv) < 0)
                Py_CLEAR(out);
            Py_XDECREF(lv);
        }
        return out;
    }
    if (PySlice_Check(o)) {
        PySliceObject *sl = (PySliceObject *)o;
        PyObject *a = lift_all(g, sl->start, depth + 1), *b = a ? lift_all(g, sl->stop, depth + 1) : NULL;
        PyObject *c = b ? lift_all(g, sl->step, depth + 1) : NULL;
        PyObject *r = c ? PySlice_New(a, b, c) : NULL;
        Py_XDECREF(a);
        Py_XDECREF(b);
        Py_XDECREF(c);
        return r;
    }
    return Py_NewRef(o);
}

fj_Node *fj_graph_placeholder_like(PyObject *gobj, PyObject *name, PyObject *like, int variant)
{
    fj_Node *ph;
    if (!fj_Node_Check(like)) {
        ph = fj_graph_placeholder(gobj, name, like);
        if (ph != NULL)
            ph->variant = variant;
        return ph;
    }
    fj_Node *src = (fj_Node *)like;
    if (src->vkind != FJ_VAL_ARRAY && src->vkind != FJ_VAL_NPSCALAR && src->vkind != FJ_VAL_PYSCALAR) {
        PyErr_Format(PyExc_TypeError, "framejit: %U is not a NumPy value", src->name);
        return NULL;
    }
    /* made from a stand-in value, then given the node's metadata */
    ph = fj_graph_placeholder(gobj, name, src->vkind == FJ_VAL_PYSCALAR ? src->example : Py_False);
    if (ph == NULL)
        return NULL;
    if (src->vkind != FJ_VAL_PYSCALAR) {
        Py_CLEAR(ph->example);
        Py_XSETREF(ph->dtype, (PyArray_Descr *)Py_XNewRef(src->dtype));
        ph->vkind = src->vkind;
        ph->ndim = src->ndim;
        memcpy(ph->shape, src->shape, sizeof(npy_intp) * (size_t)src->ndim);
        ph->datadep = src->datadep;
    }
    ph->variant = variant;
    return ph;
}

fj_Node *fj_graph_raw_call(PyObject *gobj, const fj_OpDef *op, PyObject *target, PyObject *label,
                           PyObject *stem, PyObject *args, fj_Node *meta, int vkind)
{
    fj_Graph *g = (fj_Graph *)gobj;
    fj_Node *n = NULL;
    PyObject *acc = NULL, *lifted = NULL;
    int deep = 0;
    if (check_open(g) < 0)
        return NULL;
    if (g->parent != NULL) { /* a loop body: enclosing nodes become placeholders */
        if ((lifted = lift_all(g, args, 0)) == NULL)
            return NULL;
        args = lifted;
    }
    acc = call_inputs(g, args, NULL, &deep);
    if (acc == NULL) {
        Py_XDECREF(lifted);
        return NULL;
    }
    if (!(n = node_alloc(FJ_NODE_CALL)))
        goto error;
    n->op = op;
    n->deep = deep;
    n->target = Py_NewRef(target);
    n->label = Py_XNewRef(label);
    n->args = Py_NewRef(args);
    Py_CLEAR(lifted);
    if (meta != NULL) {
        n->vkind = meta->vkind;
        n->dtype = (PyArray_Descr *)Py_XNewRef(meta->dtype);
        n->example = Py_XNewRef(meta->example);
        n->ndim = meta->ndim;
        memcpy(n->shape, meta->shape, sizeof(npy_intp) * (size_t)meta->ndim);
    } else
        n->vkind = vkind;
    if (!(n->name = unique_name(g, stem)))
        goto error;
    n = append_call(g, n, acc);
    Py_DECREF(acc);
    return n;
error:
    Py_XDECREF(n);
    Py_XDECREF(acc);
    Py_XDECREF(lifted);
    return NULL;
}

Py_ssize_t fj_graph_nplaceholders(PyObject *g)
{
    return ((fj_Graph *)g)->nplaceholders;
}

PyObject *fj_graph_outputs(PyObject *gobj)
{
    fj_Graph *g = (fj_Graph *)gobj;
    if (!g->has_output)
        return NULL;
    fj_Node *out = (fj_Node *)PyList_GET_ITEM(g->nodes, PyList_GET_SIZE(g->nodes) - 1);
    return PyTuple_GET_ITEM(out->args, 0);
}

#ifndef NDEBUG
/*
** The graph's invariants (debug builds, after its output node is added):
** node i sits at index i; names are unique; placeholders precede calls and
** the one output node is last; a call has an op row and metadata; every
** node an argument holds is an earlier node of this graph and listed in
** 'inputs' once; 'users' and 'last_use' agree with the later nodes' inputs.
** SystemError naming the broken invariant, or 0.
*/
static int graph_verify(fj_Graph *g)
{
    Py_ssize_t nn = PyList_GET_SIZE(g->nodes);
    PyObject *names = PySet_New(NULL), *acc = NULL;
    int *users = PyMem_Calloc(nn ? (size_t)nn : 1, sizeof(int));
    Py_ssize_t *last = PyMem_Malloc((nn ? (size_t)nn : 1) * sizeof(Py_ssize_t));
    const char *bad = NULL;
    Py_ssize_t at = -1;
    if (names == NULL || users == NULL || last == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int seen_call = 0;
    for (Py_ssize_t i = 0; i < nn && bad == NULL; i++) {
        fj_Node *n = (fj_Node *)PyList_GET_ITEM(g->nodes, i);
        at = i;
        last[i] = -1;
        int dup = PySet_Contains(names, n->name);
        if (dup < 0 || PySet_Add(names, n->name) < 0)
            goto done;
        int deep = 0;
        Py_XSETREF(acc, PyList_New(0));
        if (acc == NULL || collect_inputs(g, n->args, acc, 0, &deep, i) < 0)
            goto done;
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (n->kwargs != NULL && PyDict_Next(n->kwargs, &pos, &k, &v))
            if (collect_inputs(g, v, acc, 1, &deep, i) < 0)
                goto done;
        if (n->index != i)
            bad = "node index differs from its position";
        else if (dup)
            bad = "two nodes share a name";
        else if (n->kind == FJ_NODE_PLACEHOLDER && seen_call)
            bad = "a placeholder after a call";
        else if (n->kind == FJ_NODE_OUTPUT && i != nn - 1)
            bad = "the output node is not last";
        else if (n->kind == FJ_NODE_CALL && n->op == NULL)
            bad = "a call without its op row";
        else if (n->inputs == NULL || PyTuple_GET_SIZE(n->inputs) != PyList_GET_SIZE(acc))
            bad = "inputs do not list the nodes its arguments hold";
        seen_call |= n->kind == FJ_NODE_CALL;
        for (Py_ssize_t j = 0; bad == NULL && j < PyList_GET_SIZE(acc); j++) {
            fj_Node *in = (fj_Node *)PyList_GET_ITEM(acc, j);
            users[in->index]++;
            last[in->index] = i;
        }
    }
    if (bad == NULL && nn > 0 && ((fj_Node *)PyList_GET_ITEM(g->nodes, nn - 1))->kind != FJ_NODE_OUTPUT)
        bad = "no output node at the end";
    for (Py_ssize_t i = 0; bad == NULL && i < nn; i++) {
        fj_Node *n = (fj_Node *)PyList_GET_ITEM(g->nodes, i);
        at = i;
        if (n->users != users[i] || n->last_use != last[i])
            bad = "users or last_use disagree with the later nodes";
    }
    if (bad != NULL)
        PyErr_Format(PyExc_SystemError, "framejit: graph invariant broken at node %zd: %s", at, bad);
done:
    Py_XDECREF(names);
    Py_XDECREF(acc);
    PyMem_Free(users);
    PyMem_Free(last);
    return PyErr_Occurred() ? -1 : 0;
}
#endif

int fj_graph_output(PyObject *gobj, PyObject *outputs)
{
    fj_Graph *g = (fj_Graph *)gobj;
    fj_Node *n = NULL;
    PyObject *acc = NULL, *name = NULL;
    int deep = 0;
    if (check_open(g) < 0)
        return -1;
    if (!PyTuple_Check(outputs)) {
        PyErr_SetString(PyExc_TypeError, "framejit: graph outputs must be a tuple");
        return -1;
    }
    acc = PyList_New(0);
    if (!acc || collect_inputs(g, outputs, acc, 1, &deep, PyList_GET_SIZE(g->nodes)) < 0)
        goto error;
    n = node_alloc(FJ_NODE_OUTPUT);
    if (!n)
        goto error;
    n->deep = 1;
    n->name = PyUnicode_FromString("output"); /* reserved: no other node takes it */
    if (!n->name)
        goto error;
    n->args = PyTuple_Pack(1, outputs);
    if (!n->args)
        goto error;
    if (!append_node(g, n, acc)) {
        n = NULL;
        goto error;
    }
    g->has_output = 1;
    Py_DECREF(acc);
#ifndef NDEBUG
    return graph_verify(g);
#else
    return 0;
#endif
error:
    Py_XDECREF(n);
    Py_XDECREF(acc);
    Py_XDECREF(name);
    return -1;
}

Py_ssize_t fj_graph_num_calls(PyObject *g)
{
    return ((fj_Graph *)g)->ncalls;
}

/* True when 'fake' is the meta tensor of a node in (nested) 'a'. */
static int holds_fake(PyObject *a, PyObject *fake)
{
    if (fj_Node_Check(a))
        return ((fj_Node *)a)->fake == fake;
    if (PyTuple_Check(a) || PyList_Check(a))
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(a); i++)
            if (holds_fake(PySequence_Fast_GET_ITEM(a, i), fake))
                return 1;
    return 0;
}

/* A ufunc call node's 'out' operand (a node), or NULL when it has none. */
static PyObject *out_operand(fj_Node *n)
{
    const fj_OpDef *op = n->op;
    if (op == NULL || !(op->flags & FJ_OPF_OUT))
        return NULL;
    PyObject *out = n->kwargs ? PyDict_GetItemString(n->kwargs, "out") : NULL;
    if (out == NULL && PyTuple_GET_SIZE(n->args) > op->nin)
        out = PyTuple_GET_ITEM(n->args, op->nin);
    return out != NULL && out != Py_None ? out : NULL;
}

/*
** True when the NumPy node 'n' (or a constant) is an array the graph made
** for itself, never an input or a view of one: what an operator, a ufunc
** without 'out', a reduction, a product, a join, a sort or a creation
** returns, or an in-place write into such an array.  Views (indexing,
** reshape, transpose, ravel, broadcast_to, attributes, astype(copy=False))
** are not.
*/
static int fresh_array(PyObject *o, int depth)
{
    if (!fj_Node_Check(o) || depth > 1000)
        return 0;
    fj_Node *n = (fj_Node *)o;
    const fj_OpDef *op = n->op;
    if (n->kind != FJ_NODE_CALL || op == NULL || n->vkind != FJ_VAL_ARRAY)
        return 0;
    if (op->kind == FJ_OP_INPLACE)
        return PyTuple_GET_SIZE(n->args) > 0 && fresh_array(PyTuple_GET_ITEM(n->args, 0), depth + 1);
    PyObject *out = out_operand(n);
    if (out != NULL)
        return fresh_array(out, depth + 1);
    if (op->kind == FJ_OP_BINOP || op->kind == FJ_OP_COMPARE || op->kind == FJ_OP_UNARY ||
        (op->flags & (FJ_OPF_UFUNC | FJ_OPF_CREATES)))
        return 1;
    switch (op->shape_rule) {
    case FJ_SH_REDUCE: case FJ_SH_ARGREDUCE: case FJ_SH_MATMUL: case FJ_SH_DOT:
    case FJ_SH_CONCATENATE: case FJ_SH_STACK: case FJ_SH_CUMULATIVE: case FJ_SH_SORT:
    case FJ_SH_ARGSORT: case FJ_SH_CREATE: case FJ_SH_LIKE: case FJ_SH_ARANGE:
    case FJ_SH_LINSPACE: case FJ_SH_EYE:
        return 1;
    default:
        return 0;
    }
}

/* True when call node 'n' writes into an array or tensor the program could
   see if the graph stopped there: an in-place operator, an item store or a
   ufunc's 'out' into an input or a view of one (not into an array the graph
   made, fresh_array), a torch op returning an operand. */
static int node_mutates(fj_Node *n, int torch)
{
    const fj_OpDef *op = n->op;
    if (n->kind != FJ_NODE_CALL)
        return 0;
    if (op != NULL && (op->flags & FJ_OPF_EFFECT))
        return 1; /* a random draw: run again, it would draw again */
    if (op != NULL && op->kind == FJ_OP_INPLACE && PyTuple_GET_SIZE(n->args) > 0 &&
        fj_Node_Check(PyTuple_GET_ITEM(n->args, 0)) &&
        ((fj_Node *)PyTuple_GET_ITEM(n->args, 0))->vkind == FJ_VAL_PYSCALAR)
        return 0; /* n -= 2 on a Python scalar: a new value, nothing written */
    if (op != NULL && (op->kind == FJ_OP_INPLACE || (op->flags & FJ_OPF_MUTATES)))
        return torch || PyTuple_GET_SIZE(n->args) == 0 ||
               !fresh_array(PyTuple_GET_ITEM(n->args, 0), 0);
    PyObject *out = out_operand(n);
    if (out != NULL)
        return torch || !fresh_array(out, 0);
    if (n->fake != NULL) {
        if (holds_fake(n->args, n->fake))
            return 1;
        if (n->kwargs != NULL) {
            Py_ssize_t pos = 0;
            PyObject *k, *v;
            while (PyDict_Next(n->kwargs, &pos, &k, &v))
                if (holds_fake(v, n->fake))
                    return 1;
        }
    }
    return 0;
}

/*
** True when captured loop node 'n' writes into an array the program could
** see: a write of its body into an array the body made is none; into a
** placeholder, it is a write into the value the loop passes there (a lifted
** value, or the state a carried slot starts from while the slot keeps the
** same array), which counts unless the enclosing graph made it
** (fresh_array).  A body holding loops of its own counts every write.
*/
static int loop_mutates(fj_Node *n)
{
    PyObject *body = fj_loop_body(n->target);
    PyObject *carried = body ? PyObject_GetAttrString(n->target, "carried") : NULL;
    PyObject *outs = body ? fj_graph_outputs(body) : NULL;
    if (carried == NULL || outs == NULL) {
        PyErr_Clear();
        Py_XDECREF(carried);
        return 1;
    }
    fj_Graph *b = (fj_Graph *)body;
    Py_ssize_t nph = b->nplaceholders, ncarried = PyTuple_GET_SIZE(carried), nstate = PyTuple_GET_SIZE(outs);
    int r = 0;
    for (Py_ssize_t i = nph; i < PyList_GET_SIZE(b->nodes) && !r; i++) {
        fj_Node *m = (fj_Node *)PyList_GET_ITEM(b->nodes, i);
        if (m->kind != FJ_NODE_CALL)
            continue;
        if (m->op == &fj_loop_row) {
            r = fj_graph_mutates(fj_loop_body(m->target));
            continue;
        }
        const fj_OpDef *op = m->op;
        PyObject *target = NULL;
        if (op != NULL && (op->flags & FJ_OPF_EFFECT)) {
            r = 1;
            continue;
        }
        if (op != NULL && (op->kind == FJ_OP_INPLACE || (op->flags & FJ_OPF_MUTATES)))
            target = PyTuple_GET_SIZE(m->args) > 0 ? PyTuple_GET_ITEM(m->args, 0) : Py_None;
        else
            target = out_operand(m);
        if (target == NULL)
            continue;
        if (!fj_Node_Check(target)) {
            r = 1;
            continue;
        }
        fj_Node *t = (fj_Node *)target;
        if (t->kind != FJ_NODE_PLACEHOLDER) {
            r = !fresh_array(target, 0);
            continue;
        }
        Py_ssize_t k = t->index;
        PyObject *outer = NULL;
        if (k >= 1 && k <= ncarried) {
            Py_ssize_t slot = PyLong_AsSsize_t(PyTuple_GET_ITEM(carried, k - 1));
            if (slot >= 0 && slot < nstate && PyTuple_GET_ITEM(outs, slot) == target)
                outer = PyTuple_GET_ITEM(n->args, 3 + slot);
        }
        else if (k > ncarried && 3 + nstate + (k - 1 - ncarried) < PyTuple_GET_SIZE(n->args))
            outer = PyTuple_GET_ITEM(n->args, 3 + nstate + (k - 1 - ncarried));
        r = outer == NULL || !fresh_array(outer, 0);
    }
    Py_DECREF(carried);
    return r;
}

int fj_graph_mutates(PyObject *g)
{
    PyObject *ns = ((fj_Graph *)g)->nodes;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ns); i++) {
        fj_Node *n = (fj_Node *)PyList_GET_ITEM(ns, i);
        if (n->kind == FJ_NODE_CALL && n->op == &fj_loop_row && loop_mutates(n))
            return 1;
    }
    PyObject *nodes = ((fj_Graph *)g)->nodes;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(nodes); i++)
        if (node_mutates((fj_Node *)PyList_GET_ITEM(nodes, i), ((fj_Graph *)g)->torch))
            return 1;
    return 0;
}

/* ---- running ------------------------------------------------------------ */

PyObject *fj_map_items(PyObject *seq, int tuple, PyObject *(*f)(PyObject *, void *), void *ctx)
{
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    PyObject *r = tuple ? PyTuple_New(len) : PyList_New(len);
    for (Py_ssize_t i = 0; r && i < len; i++) {
        PyObject *v = f(PySequence_Fast_GET_ITEM(seq, i), ctx);
        if (!v) {
            Py_CLEAR(r);
            break;
        }
        if (tuple)
            PyTuple_SET_ITEM(r, i, v);
        else
            PyList_SET_ITEM(r, i, v);
    }
    return r;
}

static PyObject *resolve_item(PyObject *o, void *env)
{
    return fj_graph_resolve(o, env);
}

/* 'o' with nodes replaced by their values in env (new reference). */
PyObject *fj_graph_resolve(PyObject *o, PyObject **env)
{
    if (fj_Node_Check(o)) {
        PyObject *v = env[((fj_Node *)o)->index];
        if (!v) {
            PyErr_Format(PyExc_RuntimeError, "framejit internal: value of node %U was released early",
                         ((fj_Node *)o)->name);
            return NULL;
        }
        return Py_NewRef(v);
    }
    if (PyTuple_Check(o) || PyList_Check(o))
        return fj_map_items(o, PyTuple_Check(o), resolve_item, env);
    if (PySlice_Check(o))
        return map_slice(o, resolve_item, env);
    return Py_NewRef(o);
}

#define FJ_SMALL_ARGS 8

/* Runs one call node (new reference, NULL on error). */
PyObject *fj_graph_run_node(fj_Node *n, PyObject **env)
{
    Py_ssize_t nargs = PyTuple_GET_SIZE(n->args);
    Py_ssize_t nkw = n->kwnames ? PyTuple_GET_SIZE(n->kwnames) : 0, total = nargs + nkw;
    PyObject *small[FJ_SMALL_ARGS + 1], **stack = small, **argv, *res = NULL;
    Py_ssize_t filled = 0;
    if (total + 1 > FJ_SMALL_ARGS + 1) {
        stack = PyMem_Malloc(sizeof(PyObject *) * (size_t)(total + 1));
        if (!stack)
            return PyErr_NoMemory();
    }
    argv = stack + 1;
    for (Py_ssize_t i = 0; i < total; i++, filled++) {
        PyObject *a = i < nargs ? PyTuple_GET_ITEM(n->args, i) : PyTuple_GET_ITEM(n->kwvals, i - nargs);
        if (n->deep) {
            if (!(argv[i] = fj_graph_resolve(a, env)))
                goto done;
        } else if (fj_Node_Check(a)) {
            argv[i] = env[((fj_Node *)a)->index];
            if (!argv[i]) {
                PyErr_SetString(PyExc_RuntimeError, "framejit internal: value released early");
                goto done;
            }
        } else {
            argv[i] = a;
        }
    }
    size_t nf = (size_t)nargs | PY_VECTORCALL_ARGUMENTS_OFFSET;
    switch (n->op->kind) {
    case FJ_OP_METHOD:
        res = PyObject_VectorcallMethod(n->target, argv, nf, n->kwnames);
        break;
    case FJ_OP_ATTR:
        res = PyObject_GetAttr(argv[0], n->target);
        break;
    default:
        res = PyObject_Vectorcall(n->target, argv, nf, n->kwnames);
    }
done:
    if (n->deep)
        for (Py_ssize_t i = 0; i < filled; i++)
            Py_DECREF(argv[i]);
    if (stack != small)
        PyMem_Free(stack);
    return res;
}

/*
** NumPy's temporary elision, for the graph's own temporaries.  In
** `(a*b + c)*0.5` plain CPython, NumPy sees that `a*b` is referenced only by
** the interpreter's stack and adds `c` into it instead of allocating (for
** arrays of 256 KiB and more).  The runner keeps every value in 'env', which
** defeats NumPy's check, so it does the same itself: when node 'n' is an
** elementwise ufunc whose operand is a temporary the graph made, that dies
** here and is referenced by 'env' alone, owns its C-contiguous data and has
** the result's dtype and shape, the ufunc writes into it ('out='; for `**`,
** NumPy's in-place power, so `t ** 2` squares as the operator does).  The
** other operands must be exact ndarrays (broadcasting into the temporary's
** shape; any strides: a slice of an input) or plain scalars, so nothing can
** override the ufunc and the result is what NumPy returns without 'out'
** (same values, dtype, shape, warnings; and order: NumPy lays a new result
** out in C order when its operands disagree, and the C-contiguous
** temporary agrees with no other order).  None overlaps the temporary: a
** view of it would hold a reference to it.  Sets *res to the result (new reference) and returns 0,
** or leaves *res NULL when the node does not qualify; -1 on error.
*/
#define FJ_ELIDE_MIN_BYTES (256 * 1024) /* NumPy's NPY_MIN_ELIDE_BYTES */

/* The ** operator (its row has no ufunc: np.power lacks the operator's fast paths). */
static int is_power(const fj_Node *n)
{
    return n->op != NULL && n->op->kind == FJ_OP_BINOP && n->op->code == NB_POWER &&
           PyTuple_GET_SIZE(n->args) == 2 && n->vkind == FJ_VAL_ARRAY;
}

static int reuse_temporary(fj_Node *n, PyObject **env, PyObject **res)
{
    static PyObject *out_kw = NULL;
    Py_ssize_t nargs = PyTuple_GET_SIZE(n->args), at = n->index;
    PyObject *argv[3], *tmp = NULL;
    if (nargs > 2)
        return 0;
    for (Py_ssize_t j = 0; j < nargs; j++) {
        PyObject *a = PyTuple_GET_ITEM(n->args, j);
        if (!fj_Node_Check(a)) {
            argv[j] = a;
            continue;
        }
        fj_Node *in = (fj_Node *)a;
        argv[j] = env[in->index];
        if (argv[j] == NULL)
            return 0;
        if (tmp == NULL && in->kind == FJ_NODE_CALL && in->last_use == at && Py_REFCNT(argv[j]) == 1 &&
            PyArray_CheckExact(argv[j]))
            tmp = argv[j];
    }
    if (tmp == NULL)
        return 0;
    PyArrayObject *t = (PyArrayObject *)tmp;
    int nd = PyArray_NDIM(t);
    if (nd != n->ndim || PyArray_BASE(t) != NULL || PyArray_NBYTES(t) < FJ_ELIDE_MIN_BYTES ||
        !PyArray_CHKFLAGS(t, NPY_ARRAY_OWNDATA | NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_WRITEABLE | NPY_ARRAY_ALIGNED) ||
        (PyArray_DESCR(t) != n->dtype && !PyArray_EquivTypes(PyArray_DESCR(t), n->dtype)))
        return 0;
    for (Py_ssize_t j = 0; j < nargs; j++) {
        PyObject *o = argv[j];
        if (o == tmp)
            continue;
        if (PyArray_CheckExact(o)) {
            PyArrayObject *b = (PyArrayObject *)o;
            int bd = PyArray_NDIM(b);
            if (bd > nd)
                return 0;
            for (int d = 1; d <= bd; d++)
                if (PyArray_DIM(b, bd - d) != 1 && PyArray_DIM(b, bd - d) != PyArray_DIM(t, nd - d))
                    return 0;
        } else if (!(PyFloat_CheckExact(o) || PyLong_CheckExact(o) || PyBool_Check(o) ||
                     PyComplex_CheckExact(o) || PyArray_CheckAnyScalarExact(o))) {
            return 0;
        }
    }
    if (is_power(n)) {
        /* tmp ** e: NumPy's in-place power, with the operator's scalar fast path
           (e == 2: square) that the power ufunc has not; e ** tmp: not reused */
        if (argv[0] != tmp)
            return 0;
        *res = PyNumber_InPlacePower(tmp, argv[1], Py_None);
        return *res == NULL ? -1 : 0;
    }
    if (out_kw == NULL && (out_kw = Py_BuildValue("(s)", "out")) == NULL)
        return -1;
    argv[nargs] = tmp;
    *res = PyObject_Vectorcall(n->ufunc, argv, (size_t)nargs, out_kw);
    return *res == NULL ? -1 : 0;
}

PyObject **fj_env_new(PyObject **small, Py_ssize_t n)
{
    if (n <= FJ_ENV_SMALL) {
        memset(small, 0, sizeof(PyObject *) * (size_t)n);
        return small;
    }
    PyObject **env = PyMem_Calloc((size_t)n, sizeof(PyObject *));
    return env ? env : (PyObject **)PyErr_NoMemory();
}

void fj_env_free(PyObject **env, PyObject **small, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        Py_XDECREF(env[i]);
    if (env != small)
        PyMem_Free(env);
}

PyObject *fj_graph_run(PyObject *gobj, PyObject *const *inputs, Py_ssize_t ninputs)
{
    fj_Graph *g = (fj_Graph *)gobj;
    Py_ssize_t nnodes = PyList_GET_SIZE(g->nodes), k = 0;
    PyObject **env = NULL, *result = NULL;
    if (!g->has_output) {
        PyErr_SetString(PyExc_RuntimeError, "framejit: cannot run a graph without an output node");
        return NULL;
    }
    if (ninputs != g->nplaceholders) {
        PyErr_Format(PyExc_TypeError, "framejit graph takes %zd inputs but %zd were given", g->nplaceholders,
                     ninputs);
        return NULL;
    }
    PyObject *small[FJ_ENV_SMALL];
    if ((env = fj_env_new(small, nnodes + 1)) == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < nnodes; i++) {
        fj_Node *n = (fj_Node *)PyList_GET_ITEM(g->nodes, i);
        switch (n->kind) {
        case FJ_NODE_PLACEHOLDER:
            env[i] = Py_NewRef(inputs[k++]);
            break;
        case FJ_NODE_CALL:
            if ((n->ufunc != NULL || is_power(n)) && reuse_temporary(n, env, &env[i]) < 0)
                goto done;
            if (env[i] == NULL && !(env[i] = fj_graph_run_node(n, env)))
                goto done;
            break;
        case FJ_NODE_OUTPUT:
            result = fj_graph_resolve(PyTuple_GET_ITEM(n->args, 0), env);
            if (!result)
                goto done;
            break;
        }
        if (n->last_use < 0)
            Py_CLEAR(env[i]);
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(n->inputs); j++) {
            fj_Node *in = (fj_Node *)PyTuple_GET_ITEM(n->inputs, j);
            if (in->last_use == i)
                Py_CLEAR(env[in->index]);
        }
    }
done:
    fj_env_free(env, small, nnodes);
    return result;
}

static PyObject *graph_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (kwnames && PyTuple_GET_SIZE(kwnames)) {
        PyErr_SetString(PyExc_TypeError, "framejit graph takes no keyword arguments");
        return NULL;
    }
    return fj_graph_run(self, args, PyVectorcall_NARGS(nargsf));
}

/* ---- printing ----------------------------------------------------------- */

static PyObject *fmt_float(double d)
{
    if (isnan(d))
        return PyUnicode_FromString("float('nan')");
    if (isinf(d))
        return PyUnicode_FromString(d > 0 ? "float('inf')" : "float('-inf')");
    PyObject *f = PyFloat_FromDouble(d);
    PyObject *r = f ? PyObject_Repr(f) : NULL;
    Py_XDECREF(f);
    return r;
}

/* Python source text of a constant or node (new reference str). */
static PyObject *fmt_value(PyObject *o)
{
    if (fj_Node_Check(o))
        return Py_NewRef(((fj_Node *)o)->name);
    if (PyTuple_Check(o) || PyList_Check(o)) {
        int tup = PyTuple_Check(o);
        Py_ssize_t len = PySequence_Fast_GET_SIZE(o);
        PyObject *parts = PyList_New(len), *sep = NULL, *joined = NULL, *r = NULL;
        if (!parts)
            return NULL;
        for (Py_ssize_t i = 0; i < len; i++) {
            PyObject *s = fmt_value(PySequence_Fast_GET_ITEM(o, i));
            if (!s)
                goto seq_done;
            PyList_SET_ITEM(parts, i, s);
        }
        if (!(sep = PyUnicode_FromString(", ")) || !(joined = PyUnicode_Join(sep, parts)))
            goto seq_done;
        r = PyUnicode_FromFormat(tup ? (len == 1 ? "(%U,)" : "(%U)") : "[%U]", joined);
    seq_done:
        Py_XDECREF(parts);
        Py_XDECREF(sep);
        Py_XDECREF(joined);
        return r;
    }
    if (PySlice_Check(o)) {
        PySliceObject *s = (PySliceObject *)o;
        PyObject *a = fmt_value(s->start), *b = a ? fmt_value(s->stop) : NULL, *c = b ? fmt_value(s->step) : NULL;
        PyObject *r = c ? PyUnicode_FromFormat("slice(%U, %U, %U)", a, b, c) : NULL;
        Py_XDECREF(a);
        Py_XDECREF(b);
        Py_XDECREF(c);
        return r;
    }
    if (o == Py_Ellipsis)
        return PyUnicode_FromString("Ellipsis");
    if (PyFloat_CheckExact(o))
        return fmt_float(PyFloat_AS_DOUBLE(o));
    if (PyComplex_CheckExact(o)) {
        Py_complex c = PyComplex_AsCComplex(o);
        if (isfinite(c.real) && isfinite(c.imag))
            return PyObject_Repr(o);
        PyObject *a = fmt_float(c.real), *b = a ? fmt_float(c.imag) : NULL;
        PyObject *r = b ? PyUnicode_FromFormat("complex(%U, %U)", a, b) : NULL;
        Py_XDECREF(a);
        Py_XDECREF(b);
        return r;
    }
    if (PyArray_DescrCheck(o)) {
        PyObject *r = PyObject_Repr(o);
        Py_XSETREF(r, r ? PyUnicode_FromFormat("numpy.%U", r) : NULL);
        return r;
    }
    if (PyType_Check(o)) {
        PyTypeObject *t = (PyTypeObject *)o;
        if (strncmp(t->tp_name, "numpy.", 6) == 0)
            return PyUnicode_FromFormat("numpy.%s", _PyType_Name(t));
        return PyUnicode_FromString(_PyType_Name(t));
    }
    if (PyArray_IsScalar(o, Generic)) {
        PyObject *item = PyObject_CallMethod(o, "item", NULL);
        PyObject *s = item ? fmt_value(item) : NULL;
        PyObject *r = s ? PyUnicode_FromFormat("numpy.%s(%U)", _PyType_Name(Py_TYPE(o)), s) : NULL;
        Py_XDECREF(item);
        Py_XDECREF(s);
        return r;
    }
    return PyObject_Repr(o);
}

/* An operand of an infix operator: negative constants get parentheses. */
static PyObject *fmt_operand(PyObject *o)
{
    PyObject *s = fmt_value(o);
    if (s && !fj_Node_Check(o) && PyUnicode_GET_LENGTH(s) > 0 && PyUnicode_READ_CHAR(s, 0) == '-')
        Py_SETREF(s, PyUnicode_FromFormat("(%U)", s));
    return s;
}

/* "a, b, k=v" for args[start:] and kwargs (code form), new reference. */
static PyObject *fmt_call_args(fj_Node *n, Py_ssize_t start)
{
    PyObject *parts = PyList_New(0), *sep = NULL, *r = NULL, *s = NULL;
    if (!parts)
        return NULL;
    for (Py_ssize_t i = start; i < PyTuple_GET_SIZE(n->args); i++) {
        if (!(s = fmt_value(PyTuple_GET_ITEM(n->args, i))) || PyList_Append(parts, s) < 0)
            goto done;
        Py_CLEAR(s);
    }
    if (n->kwargs) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(n->kwargs, &pos, &k, &v)) {
            PyObject *vs = fmt_value(v);
            if (!vs)
                goto done;
            s = PyUnicode_FromFormat("%U=%U", k, vs);
            Py_DECREF(vs);
            if (!s || PyList_Append(parts, s) < 0)
                goto done;
            Py_CLEAR(s);
        }
    }
    if ((sep = PyUnicode_FromString(", ")))
        r = PyUnicode_Join(sep, parts);
done:
    Py_XDECREF(parts);
    Py_XDECREF(sep);
    Py_XDECREF(s);
    return r;
}

/* The expression (or statement tail) computing call node 'n'. */
static PyObject *fmt_call_expr(fj_Node *n)
{
    const fj_OpDef *op = n->op;
    PyObject *a = NULL, *b = NULL, *r = NULL;
    Py_ssize_t nargs = PyTuple_GET_SIZE(n->args);
    switch (op->kind) {
    case FJ_OP_BINOP:
    case FJ_OP_COMPARE:
    case FJ_OP_INPLACE:
        if (nargs != 2)
            break;
        if (!(a = fmt_operand(PyTuple_GET_ITEM(n->args, 0))) || !(b = fmt_operand(PyTuple_GET_ITEM(n->args, 1))))
            goto done;
        if (op->kind == FJ_OP_INPLACE) /* keep CPython's in-place semantics: name = a; name op= b */
            r = PyUnicode_FromFormat("%U;  %U %s %U", a, n->name, op->symbol, b);
        else
            r = PyUnicode_FromFormat("%U %s %U", a, op->symbol, b);
        goto done;
    case FJ_OP_UNARY:
        if (nargs != 1 || !(a = fmt_operand(PyTuple_GET_ITEM(n->args, 0))))
            goto done;
        r = op->symbol ? PyUnicode_FromFormat("%s%U", op->symbol, a) : PyUnicode_FromFormat("%s(%U)", op->attr, a);
        goto done;
    case FJ_OP_GETITEM:
        if (nargs != 2 || !(a = fmt_operand(PyTuple_GET_ITEM(n->args, 0))) ||
            !(b = fmt_value(PyTuple_GET_ITEM(n->args, 1))))
            goto done;
        r = PyUnicode_FromFormat("%U[%U]", a, b);
        goto done;
    case FJ_OP_ATTR:
        if (!(a = fmt_operand(PyTuple_GET_ITEM(n->args, 0))))
            goto done;
        r = PyUnicode_FromFormat("%U.%U", a, n->target);
        goto done;
    case FJ_OP_METHOD:
        if (!(a = fmt_operand(PyTuple_GET_ITEM(n->args, 0))) || !(b = fmt_call_args(n, 1)))
            goto done;
        r = PyUnicode_FromFormat(fj_Node_Check(PyTuple_GET_ITEM(n->args, 0)) ? "%U.%U(%U)" : "(%U).%U(%U)", a,
                                 n->target, b);
        goto done;
    default:
        break;
    }
    if (!(b = fmt_call_args(n, 0)))
        goto done;
    if (n->label != NULL)
        r = PyUnicode_FromFormat("%U(%U)", n->label, b);
    else if (strcmp(op->module, "builtins") == 0)
        r = PyUnicode_FromFormat("%s(%U)", op->attr, b);
    else
        r = PyUnicode_FromFormat("%s(%U)", fj_op_qualname(op), b);
done:
    Py_XDECREF(a);
    Py_XDECREF(b);
    return r;
}

PyObject *fj_graph_code(PyObject *gobj)
{
    fj_Graph *g = (fj_Graph *)gobj;
    PyObject *lines = PyList_New(0), *params = PyList_New(0), *s = NULL, *r = NULL, *sep = NULL;
    if (!lines || !params)
        goto done;
    if (!(s = PyUnicode_FromString("self")) || PyList_Append(params, s) < 0)
        goto done;
    Py_CLEAR(s);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(g->nodes); i++) {
        fj_Node *n = (fj_Node *)PyList_GET_ITEM(g->nodes, i);
        if (n->kind == FJ_NODE_PLACEHOLDER) {
            if (PyList_Append(params, n->name) < 0)
                goto done;
            continue;
        }
        PyObject *expr;
        if (n->kind == FJ_NODE_OUTPUT) {
            expr = fmt_value(PyTuple_GET_ITEM(n->args, 0));
            s = expr ? PyUnicode_FromFormat("    return %U", expr) : NULL;
        } else {
            expr = fmt_call_expr(n);
            s = expr ? PyUnicode_FromFormat("    %U = %U", n->name, expr) : NULL;
        }
        Py_XDECREF(expr);
        if (!s)
            goto done;
        /* release inputs whose last use this is, like torch.fx does */
        if (n->kind != FJ_NODE_OUTPUT) {
            int first = 1;
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(n->inputs); j++) {
                fj_Node *in = (fj_Node *)PyTuple_GET_ITEM(n->inputs, j);
                if (in->last_use != i)
                    continue;
                Py_SETREF(s, PyUnicode_FromFormat(first ? "%U;  %U" : "%U = %U", s, in->name));
                if (!s)
                    goto done;
                first = 0;
            }
            if (!first)
                Py_SETREF(s, PyUnicode_FromFormat("%U = None", s));
            if (!s)
                goto done;
        }
        if (PyList_Append(lines, s) < 0)
            goto done;
        Py_CLEAR(s);
    }
    if (!(sep = PyUnicode_FromString(", ")) || !(s = PyUnicode_Join(sep, params)))
        goto done;
    Py_SETREF(sep, PyUnicode_FromString("\n"));
    if (!sep)
        goto done;
    PyObject *body = PyUnicode_Join(sep, lines);
    if (body)
        r = PyUnicode_FromFormat("def forward(%U):\n%U\n", s, body);
    Py_XDECREF(body);
done:
    Py_XDECREF(lines);
    Py_XDECREF(params);
    Py_XDECREF(s);
    Py_XDECREF(sep);
    return r;
}

/* Text of the kwargs column: {'axis': 1}. */
static PyObject *fmt_kwargs(fj_Node *n)
{
    PyObject *parts = PyList_New(0), *sep = NULL, *j = NULL, *r = NULL;
    if (!parts)
        return NULL;
    if (n->kwargs) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(n->kwargs, &pos, &k, &v)) {
            PyObject *vs = fmt_value(v);
            PyObject *s = vs ? PyUnicode_FromFormat("%R: %U", k, vs) : NULL;
            Py_XDECREF(vs);
            if (!s || PyList_Append(parts, s) < 0) {
                Py_XDECREF(s);
                goto done;
            }
            Py_DECREF(s);
        }
    }
    if ((sep = PyUnicode_FromString(", ")) && (j = PyUnicode_Join(sep, parts)))
        r = PyUnicode_FromFormat("{%U}", j);
done:
    Py_XDECREF(parts);
    Py_XDECREF(sep);
    Py_XDECREF(j);
    return r;
}

PyObject *fj_graph_tabular(PyObject *gobj)
{
    fj_Graph *g = (fj_Graph *)gobj;
    Py_ssize_t nn = PyList_GET_SIZE(g->nodes);
    PyObject *rows = PyList_New(0), *lines = PyList_New(0), *r = NULL, *nl = NULL;
    Py_ssize_t width[5] = {0};
    if (!rows || !lines)
        goto done;
    {
        PyObject *hdr = Py_BuildValue("(sssss)", "opcode", "name", "target", "args", "kwargs");
        if (!hdr || PyList_Append(rows, hdr) < 0) {
            Py_XDECREF(hdr);
            goto done;
        }
        Py_DECREF(hdr);
    }
    for (Py_ssize_t i = 0; i < nn; i++) {
        fj_Node *n = (fj_Node *)PyList_GET_ITEM(g->nodes, i);
        PyObject *target, *args, *kw, *row;
        if (n->kind == FJ_NODE_CALL)
            target = n->label              ? Py_NewRef(n->label)
                     : n->op->module ? PyUnicode_FromString(fj_op_qualname(n->op))
                                     : PyObject_Str(n->target);
        else
            target = Py_NewRef(n->name);
        args = fmt_value(n->args);
        kw = fmt_kwargs(n);
        row = target && args && kw ? Py_BuildValue("(sOOOO)", node_opname(n), n->name, target, args, kw) : NULL;
        Py_XDECREF(target);
        Py_XDECREF(args);
        Py_XDECREF(kw);
        if (!row || PyList_Append(rows, row) < 0) {
            Py_XDECREF(row);
            goto done;
        }
        Py_DECREF(row);
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(rows); i++)
        for (int c = 0; c < 5; c++) {
            Py_ssize_t l = PyUnicode_GET_LENGTH(PyTuple_GET_ITEM(PyList_GET_ITEM(rows, i), c));
            if (l > width[c])
                width[c] = l;
        }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(rows); i++) {
        PyObject *row = PyList_GET_ITEM(rows, i);
        for (int pass = 0; pass < (i == 0 ? 2 : 1); pass++) {
            PyObject *line = PyUnicode_FromString("");
            for (int c = 0; line && c < 5; c++) {
                PyObject *cell = PyTuple_GET_ITEM(row, c);
                Py_ssize_t len = pass ? width[c] : PyUnicode_GET_LENGTH(cell);
                PyObject *txt = pass ? PyUnicode_New(len, 127) : Py_NewRef(cell);
                if (txt && pass)
                    for (Py_ssize_t k = 0; k < len; k++)
                        PyUnicode_WRITE(PyUnicode_1BYTE_KIND, PyUnicode_DATA(txt), k, '-');
                if (!txt) {
                    Py_CLEAR(line);
                    break;
                }
                Py_SETREF(line, PyUnicode_Concat(line, txt));
                Py_DECREF(txt);
                if (line && c < 4) {
                    PyObject *pad = PyUnicode_New(width[c] - len + 2, 127);
                    if (pad)
                        for (Py_ssize_t k = 0; k < width[c] - len + 2; k++)
                            PyUnicode_WRITE(PyUnicode_1BYTE_KIND, PyUnicode_DATA(pad), k, ' ');
                    Py_SETREF(line, pad ? PyUnicode_Concat(line, pad) : NULL);
                    Py_XDECREF(pad);
                }
            }
            if (!line || PyList_Append(lines, line) < 0) {
                Py_XDECREF(line);
                goto done;
            }
            Py_DECREF(line);
        }
    }
    if ((nl = PyUnicode_FromString("\n")))
        r = PyUnicode_Join(nl, lines);
    if (r)
        Py_SETREF(r, PyUnicode_FromFormat("%U\n", r));
    /* each captured loop's body, after the graph */
    for (Py_ssize_t i = 0; r != NULL && i < nn; i++) {
        fj_Node *n = (fj_Node *)PyList_GET_ITEM(g->nodes, i);
        PyObject *body = n->kind == FJ_NODE_CALL && n->op == &fj_loop_row ? fj_loop_body(n->target) : NULL;
        PyObject *text = body ? fj_graph_tabular(body) : NULL;
        if (body != NULL && text == NULL)
            Py_CLEAR(r);
        else if (text != NULL) {
            Py_SETREF(r, PyUnicode_FromFormat("%U\nbody of %U (placeholders: the index, the state it reads, "
                                              "the values it uses; output: the state):\n%U",
                                              r, n->name, text));
            Py_DECREF(text);
        }
    }
done:
    Py_XDECREF(rows);
    Py_XDECREF(lines);
    Py_XDECREF(nl);
    return r;
}

/* ---- Graph (Python surface) --------------------------------------------- */

static PyObject *graph_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    if (fj_numpy_ensure() < 0) /* fj_numpy.h: loaded lazily */
        return NULL;
    if (PyTuple_GET_SIZE(args) || (kw && PyDict_GET_SIZE(kw))) {
        PyErr_SetString(PyExc_TypeError, "Graph() takes no arguments");
        return NULL;
    }
    return fj_graph_new();
}

static void graph_dealloc(fj_Graph *g)
{
    PyTypeObject *tp = Py_TYPE(g);
    Py_XDECREF(g->nodes);
    Py_XDECREF(g->used_names);
    Py_XDECREF(g->name_counter);
    Py_XDECREF(g->lifted);
    Py_XDECREF(g->lifted_to);
    tp->tp_free((PyObject *)g);
    Py_DECREF(tp);
}

static Py_ssize_t graph_len(fj_Graph *g)
{
    return PyList_GET_SIZE(g->nodes);
}

static PyObject *graph_get_nodes(fj_Graph *g, void *c)
{
    return PyList_GetSlice(g->nodes, 0, PyList_GET_SIZE(g->nodes));
}

static PyObject *graph_get_placeholders(fj_Graph *g, void *c)
{
    return PyList_GetSlice(g->nodes, 0, g->nplaceholders);
}

static PyObject *graph_get_library(fj_Graph *g, void *c)
{
    return PyUnicode_FromString(g->torch ? "torch" : "numpy");
}

static PyObject *graph_get_num_calls(fj_Graph *g, void *c)
{
    return PyLong_FromSsize_t(g->ncalls);
}

static PyObject *graph_get_code(fj_Graph *g, void *c)
{
    return fj_graph_code((PyObject *)g);
}

static PyObject *graph_tabular(fj_Graph *g, PyObject *unused)
{
    return fj_graph_tabular((PyObject *)g);
}

static PyObject *graph_print_tabular(fj_Graph *g, PyObject *unused)
{
    PyObject *s = fj_graph_tabular((PyObject *)g);
    if (!s)
        return NULL;
    PyObject *out = PySys_GetObject("stdout"); /* borrowed */
    PyObject *r = out && out != Py_None ? PyObject_CallMethod(out, "write", "O", s) : NULL;
    if (!out || out == Py_None)
        PyErr_SetString(PyExc_RuntimeError, "framejit: sys.stdout is not available");
    Py_DECREF(s);
    Py_XSETREF(r, r ? Py_NewRef(Py_None) : NULL);
    return r;
}

static PyObject *graph_py_placeholder(fj_Graph *g, PyObject *args)
{
    PyObject *name, *example;
    if (!PyArg_ParseTuple(args, "UO:placeholder", &name, &example))
        return NULL;
    return Py_XNewRef((PyObject *)fj_graph_placeholder((PyObject *)g, name, example));
}

/* g.call(target, args=(), kwargs=None): target is a NumPy / operator
   callable, or a method or attribute name. */
static PyObject *graph_py_call(fj_Graph *g, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"target", "args", "kwargs", NULL};
    PyObject *target, *cargs = NULL, *ckw = NULL, *tup = NULL;
    const fj_OpDef *op;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO:call", kwlist, &target, &cargs, &ckw))
        return NULL;
    if (PyUnicode_Check(target)) {
        op = fj_ops_for_method(target);
        if (!op)
            op = fj_ops_for_attr(target);
        if (!op && PyUnicode_CompareWithASCIIString(target, "getitem") == 0)
            op = fj_ops_for_getitem();
    } else {
        op = fj_ops_for_callable(target);
    }
    if (!op) {
        PyErr_Format(PyExc_TypeError, "framejit: unknown operation %R", target);
        return NULL;
    }
    if (ckw == Py_None)
        ckw = NULL;
    if (ckw && !PyDict_Check(ckw)) {
        PyErr_SetString(PyExc_TypeError, "framejit: kwargs must be a dict");
        return NULL;
    }
    tup = cargs ? PySequence_Tuple(cargs) : PyTuple_New(0);
    if (!tup)
        return NULL;
    PyObject *r = Py_XNewRef((PyObject *)fj_graph_call((PyObject *)g, op, tup, ckw));
    Py_DECREF(tup);
    return r;
}

static PyObject *graph_py_output(fj_Graph *g, PyObject *outputs)
{
    PyObject *t = PyTuple_Check(outputs) ? Py_NewRef(outputs)
                  : PyList_Check(outputs) ? PyList_AsTuple(outputs)
                                          : PyTuple_Pack(1, outputs);
    if (!t)
        return NULL;
    int rc = fj_graph_output((PyObject *)g, t);
    Py_DECREF(t);
    if (rc < 0)
        return NULL;
    return Py_NewRef(PyList_GET_ITEM(g->nodes, PyList_GET_SIZE(g->nodes) - 1));
}

static PyObject *graph_repr(fj_Graph *g)
{
    return PyUnicode_FromFormat("<framejit graph: %zd inputs, %zd calls>", g->nplaceholders, g->ncalls);
}

static PyMethodDef graph_methods[] = {
    {"placeholder", (PyCFunction)graph_py_placeholder, METH_VARARGS,
     "placeholder(name, example) -> Node: an input whose metadata is read from 'example'."},
    {"call", (PyCFunction)(void (*)(void))graph_py_call, METH_VARARGS | METH_KEYWORDS,
     "call(target, args=(), kwargs=None) -> Node: a call of a known operation."},
    {"output", (PyCFunction)graph_py_output, METH_O, "output(values): the graph's output tuple."},
    {"tabular", (PyCFunction)graph_tabular, METH_NOARGS, "The nodes as a table (str)."},
    {"print_tabular", (PyCFunction)graph_print_tabular, METH_NOARGS, "Print the nodes as a table."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef graph_getset[] = {
    {"nodes", (getter)graph_get_nodes, NULL, "list of nodes in order", NULL},
    {"placeholders", (getter)graph_get_placeholders, NULL, "list of placeholder nodes", NULL},
    {"num_calls", (getter)graph_get_num_calls, NULL, "number of call nodes", NULL},
    {"library", (getter)graph_get_library, NULL, "'torch' for a graph of torch tensors, else 'numpy'", NULL},
    {"code", (getter)graph_get_code, NULL, "Python source of the graph (def forward(self, ...))", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef graph_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(fj_Graph, vectorcall), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot graph_slots[] = {
    {Py_tp_new, graph_new},
    {Py_tp_dealloc, graph_dealloc},
    {Py_tp_repr, graph_repr},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_methods, graph_methods},
    {Py_tp_getset, graph_getset},
    {Py_tp_members, graph_members},
    {Py_sq_length, graph_len},
    {Py_tp_doc, "A framejit operator graph; calling it runs it eagerly (node by node, in C)."},
    {0, NULL},
};

static PyType_Spec graph_spec = {
    .name = "framejit._C.Graph",
    .basicsize = sizeof(fj_Graph),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .slots = graph_slots,
};

int fj_graph_init(PyObject *module)
{
    fj_NodeType = (PyTypeObject *)PyType_FromSpec(&node_spec);
    if (!fj_NodeType)
        return -1;
    fj_GraphType = (PyTypeObject *)PyType_FromSpec(&graph_spec);
    if (!fj_GraphType)
        return -1;
    if (PyModule_AddObjectRef(module, "Node", (PyObject *)fj_NodeType) < 0 ||
        PyModule_AddObjectRef(module, "Graph", (PyObject *)fj_GraphType) < 0)
        return -1;
    return 0;
}
