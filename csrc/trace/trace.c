/*
** trace.c: the symbolic interpreter's loop, its frames, and the opcode
** families that never reach the graph: loads and stores, building and
** unpacking containers, control flow, function creation.  The families that
** can reach the graph (calls, attributes, subscripts, operators) are in
** trace_call.c.  See trace.h.
**
** Every handler follows one rule: what the trace cannot reproduce exactly
** raises fj_Unsupported with a reason; nothing is guessed.
*/
#include "trace.h"

#include "fj_numpy.h"
#include "graph.h"
#include "arraylib.h"
#include "torchlib.h"

#include <stdarg.h>

PyTypeObject *fj_Var_Type = NULL;
/* per thread: a trace may run Python code that lets another thread trace */
_Thread_local fj_Tracer *fj_current_tracer = NULL;
PyObject *fj_Unsupported = NULL;
#define VAR(o) ((fj_Var *)(o))

static fj_Var *null_var = NULL; /* strong: the NULL marker */
static PyObject *opnames = NULL;  /* strong: opcode.opname (list of str) */

/* The name of opcode 'op' (static storage of the opcode module's list). */
const char *fj_trace_opname(int op)
{
    if (opnames != NULL && op >= 0 && op < PyList_GET_SIZE(opnames)) {
        const char *s = PyUnicode_AsUTF8(PyList_GET_ITEM(opnames, op));
        if (s != NULL)
            return s;
        PyErr_Clear();
    }
    return "<opcode>";
}

/* ---------------------------------------------------------------- Vars */

static int var_clear(fj_Var *self)
{
    Py_CLEAR(self->obj);
    Py_CLEAR(self->items);
    Py_CLEAR(self->extra);
    Py_CLEAR(self->extra2);
    Py_CLEAR(self->source);
    return 0;
}

static void var_dealloc(fj_Var *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    var_clear(self);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static int var_traverse(fj_Var *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->obj);
    Py_VISIT(self->items);
    Py_VISIT(self->extra);
    Py_VISIT(self->extra2);
    Py_VISIT(self->source);
    return 0;
}

/*
** repr(o) for messages, without running the program's code: objects other
** than builtin scalars, strings, modules, types, functions and exact arrays
** show as <T object at 0x...> (test_class logs every __repr__ call; a
** container's repr would call its items').  New reference, NULL on error.
*/
PyObject *fj_trace_safe_repr(PyObject *o)
{
    if (!PyFunction_Check(o)) {
        PyObject *name = fj_trace_public_name(o);
        if (name != NULL)
            return name;
    }
    if (o == Py_None || o == Py_Ellipsis || PyBool_Check(o) || PyLong_CheckExact(o) ||
        PyFloat_CheckExact(o) || PyComplex_CheckExact(o) || PyModule_CheckExact(o) ||
        PyType_Check(o) || PyFunction_Check(o) || PyCFunction_Check(o) || PyCode_Check(o) ||
        PyArray_CheckExact(o) || PyArray_DescrCheck(o))
        return PyObject_Repr(o);
    if (PyUnicode_CheckExact(o) || PyBytes_CheckExact(o)) {
        PyObject *r = PyObject_Repr(o);
        if (r != NULL && PyUnicode_GET_LENGTH(r) > 80) {
            PyObject *cut = PyUnicode_Substring(r, 0, 77);
            Py_DECREF(r);
            r = cut ? PyUnicode_FromFormat("%U...", cut) : NULL;
            Py_XDECREF(cut);
        }
        return r;
    }
    return PyUnicode_FromFormat("<%s object at %p>", Py_TYPE(o)->tp_name, (void *)o);
}

/* __module__ as users spell it: "numpy" and "numpy.linalg" as "np" and
   "np.linalg", cut before the first private part ("numpy._core.umath" is
   "np", "torch._C._VariableFunctions" is "torch"); "builtins" is "". */
static PyObject *public_module(PyObject *mod)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(mod), start = 0, keep = 0;
    int parts = 0;
    int numpy = n >= 5 && PyUnicode_READ_CHAR(mod, 0) == 'n' && PyUnicode_READ_CHAR(mod, 1) == 'u' &&
                PyUnicode_READ_CHAR(mod, 2) == 'm' && PyUnicode_READ_CHAR(mod, 3) == 'p' &&
                PyUnicode_READ_CHAR(mod, 4) == 'y' && (n == 5 || PyUnicode_READ_CHAR(mod, 5) == '.');
    while (start < n) {
        Py_ssize_t dot = PyUnicode_FindChar(mod, '.', start, n, 1);
        if (dot == -2)
            return NULL;
        if (dot < 0)
            dot = n;
        if (PyUnicode_READ_CHAR(mod, start) == '_' || (numpy && parts == 2))
            break; /* numpy.random.mtrand: np.random */
        keep = dot;
        parts++;
        start = dot + 1;
    }
    PyObject *head = PyUnicode_Substring(mod, 0, keep);
    if (head == NULL || !numpy)
        return head;
    PyObject *tail = PyUnicode_Substring(head, 5, keep);
    Py_DECREF(head);
    if (tail == NULL)
        return NULL;
    PyObject *out = PyUnicode_FromFormat("np%U", tail);
    Py_DECREF(tail);
    return out;
}

static int is_ufunc(PyObject *o)
{
    return strcmp(Py_TYPE(o)->tp_name, "numpy.ufunc") == 0;
}

/* 'o'.name when a str read without the program's code, else NULL (no error). */
static PyObject *safe_str_attr(PyObject *o, const char *name)
{
    PyObject *v = NULL, *key = PyUnicode_FromString(name);
    int r = key ? fj_safe_getattr(o, key, &v) : -1;
    Py_XDECREF(key);
    if (r <= 0) {
        PyErr_Clear();
        return NULL;
    }
    if (!PyUnicode_Check(v))
        Py_CLEAR(v);
    return v;
}

/* True when 'o' is the builtin named 'name' (builtins.open is io.open). */
static int is_builtin_named(PyObject *o, PyObject *name)
{
    PyObject *key = PyUnicode_FromString("builtins");
    PyObject *mod = key != NULL ? PyImport_GetModule(key) : NULL;
    Py_XDECREF(key);
    PyObject *d = mod != NULL && PyModule_Check(mod) ? PyModule_GetDict(mod) : NULL;
    int hit = d != NULL && PyDict_GetItemWithError(d, name) == o;
    Py_XDECREF(mod);
    PyErr_Clear();
    return hit;
}

PyObject *fj_trace_public_name(PyObject *o)
{
    PyObject *self = NULL, *qual = NULL, *mod = NULL, *out = NULL;
    if (PyModule_CheckExact(o)) {
        PyObject *name = PyModule_GetNameObject(o);
        if (name == NULL) {
            PyErr_Clear();
            return NULL;
        }
        out = public_module(name);
        Py_DECREF(name);
        if (out == NULL)
            PyErr_Clear();
        return out;
    }
    if (PyCFunction_Check(o) || PyMethod_Check(o)) {
        self = PyCFunction_Check(o) ? PyCFunction_GET_SELF(o) : PyMethod_GET_SELF(o);
        if (self != NULL && PyModule_Check(self))
            self = NULL;
    }
    if (self != NULL && is_ufunc(self)) {
        /* np.add.reduce: the ufunc's name, then the method's */
        PyObject *uname = safe_str_attr(self, "__name__");
        PyObject *mname = safe_str_attr(o, "__name__");
        if (uname != NULL && mname != NULL)
            out = PyUnicode_FromFormat("np.%U.%U", uname, mname);
        Py_XDECREF(uname);
        Py_XDECREF(mname);
        if (out == NULL)
            PyErr_Clear();
        return out;
    }
    if (!PyType_Check(o) && Py_TYPE(o)->tp_call == NULL)
        return NULL; /* neither a class nor a callable */
    if (PyMethod_Check(o)) {
        /* a bound method: named by its function (np.random.rand, a method of the
           module's RandomState, as the module's attribute it is) */
        PyObject *fn = PyMethod_GET_FUNCTION(o), *fname = safe_str_attr(fn, "__name__");
        PyObject *key = PyUnicode_FromString("numpy.random");
        PyObject *npr = key != NULL ? PyImport_GetModule(key) : NULL;
        Py_XDECREF(key);
        PyObject *d = npr != NULL && PyModule_Check(npr) ? PyModule_GetDict(npr) : NULL;
        PyObject *same = d != NULL && fname != NULL ? PyDict_GetItemWithError(d, fname) : NULL;
        if (same == o)
            out = PyUnicode_FromFormat("np.random.%U", fname);
        Py_XDECREF(npr);
        if (out == NULL) {
            PyErr_Clear();
            qual = safe_str_attr(fn, "__qualname__");
        }
        Py_XDECREF(fname);
        if (out != NULL)
            return out;
    }
    if (qual == NULL)
        qual = safe_str_attr(o, "__qualname__");
    if (qual == NULL && (qual = safe_str_attr(o, "__name__")) == NULL)
        return NULL;
    /* a bound method's class names its module (ndarray.sum, Generator.normal) */
    PyObject *owner = self != NULL ? (PyObject *)Py_TYPE(self) : o;
    PyObject *raw = safe_str_attr(owner, "__module__");
    if (raw == NULL && self == NULL && PyObject_TypeCheck(o, &PyMethodDescr_Type))
        raw = safe_str_attr((PyObject *)PyDescr_TYPE(o), "__module__");
    if (raw == NULL && (PyType_Check(owner) && ((PyTypeObject *)owner)->tp_name != NULL)) {
        /* a C type without __module__: its tp_name's dotted prefix */
        const char *tn = ((PyTypeObject *)owner)->tp_name, *dot = strrchr(tn, '.');
        raw = dot ? PyUnicode_FromStringAndSize(tn, dot - tn) : NULL;
    }
    if (raw != NULL) {
        mod = public_module(raw);
        Py_DECREF(raw);
        if (mod == NULL)
            PyErr_Clear();
    }
    if (self == NULL && is_builtin_named(o, qual))
        out = Py_NewRef(qual); /* open, not io.open: the builtin the program calls */
    else if (mod != NULL && PyUnicode_GET_LENGTH(mod) > 0 && PyUnicode_CompareWithASCIIString(mod, "builtins") != 0)
        out = PyUnicode_FromFormat("%U.%U", mod, qual);
    else
        out = Py_NewRef(qual);
    Py_XDECREF(mod);
    Py_DECREF(qual);
    if (out == NULL)
        PyErr_Clear();
    return out;
}

/* "float64 array of shape (4,)" and the like: what a node holds. */
static PyObject *node_text(fj_Node *n)
{
    switch (n->vkind) {
    case FJ_VAL_ARRAY: {
        PyObject *shape = fj_node_shape_tuple(n);
        PyObject *out = shape && n->dtype
                            ? PyUnicode_FromFormat("%s array of shape %R (%U)",
                                                   n->dtype->typeobj->tp_name + (strncmp(n->dtype->typeobj->tp_name, "numpy.", 6) == 0 ? 6 : 0),
                                                   shape, n->name)
                            : NULL;
        Py_XDECREF(shape);
        return out;
    }
    case FJ_VAL_NPSCALAR:
        return PyUnicode_FromFormat("NumPy %s scalar (%U)",
                                    n->dtype ? n->dtype->typeobj->tp_name + (strncmp(n->dtype->typeobj->tp_name, "numpy.", 6) == 0 ? 6 : 0) : "?",
                                    n->name);
    case FJ_VAL_PYSCALAR:
        return PyUnicode_FromFormat("%s computed in the graph (%U)",
                                    n->example ? Py_TYPE(n->example)->tp_name : "number", n->name);
    case FJ_VAL_TENSOR:
        return PyUnicode_FromFormat("tensor (%U)", n->name);
    case FJ_VAL_TENSORS:
        return PyUnicode_FromFormat("tuple of tensors (%U)", n->name);
    }
    return PyUnicode_FromFormat("graph value %U", n->name);
}

/*
** What a Var stands for, in the words of the program's source (messages,
** break reasons): "np.roll", "float64 array of shape (4,) (sin)", "a list
** of 3 items", "a Foo object".  Never an internal representation.
*/
static PyObject *var_repr(fj_Var *self)
{
    switch (self->kind) {
    case FJ_VAR_NODE:
        return node_text((fj_Node *)self->obj);
    case FJ_VAR_CONST:
    case FJ_VAR_OBJ: {
        PyObject *name = fj_trace_public_name(self->obj);
        if (name != NULL) {
            if (PyModule_CheckExact(self->obj))
                Py_SETREF(name, PyUnicode_FromFormat("module %U", name));
            return name;
        }
        if (self->kind == FJ_VAR_CONST || PyArray_CheckExact(self->obj))
            return fj_trace_safe_repr(self->obj);
        return PyUnicode_FromFormat("%s object", Py_TYPE(self->obj)->tp_name);
    }
    case FJ_VAR_TUPLE:
    case FJ_VAR_LIST: {
        Py_ssize_t n = self->items ? PyList_GET_SIZE(self->items) : 0;
        return PyUnicode_FromFormat("%s of %zd item%s", self->kind == FJ_VAR_TUPLE ? "tuple" : "list",
                                    n, n == 1 ? "" : "s");
    }
    case FJ_VAR_DICT:
        return PyUnicode_FromString("dict");
    case FJ_VAR_ITER:
        if (self->obj != NULL && !PyRange_Check(self->obj)) {
            PyObject *name = fj_trace_public_name((PyObject *)Py_TYPE(self->obj));
            if (name != NULL) {
                Py_SETREF(name, PyUnicode_FromFormat("%U iterator", name));
                return name;
            }
            return PyUnicode_FromFormat("%s iterator", Py_TYPE(self->obj)->tp_name);
        }
        return PyUnicode_FromString(self->obj != NULL ? "range iterator" : "iterator");
    case FJ_VAR_RANGE:
        return PyUnicode_FromString("range() whose bounds change with the data or the loop");
    case FJ_VAR_FUNC:
        return PyUnicode_FromFormat("function %U", ((PyCodeObject *)self->obj)->co_qualname);
    case FJ_VAR_CELL:
        return PyUnicode_FromString("closure cell");
    case FJ_VAR_METHOD:
        return PyUnicode_FromFormat("method %R", self->obj);
    case FJ_VAR_NULL:
        return PyUnicode_FromString("NULL");
    case FJ_VAR_INST:
        return PyUnicode_FromFormat("%s object made in the frame",
                                    PyType_Check(self->obj) ? ((PyTypeObject *)self->obj)->tp_name : "?");
    }
    return PyUnicode_FromString("value");
}

static PyType_Slot var_slots[] = {
    {Py_tp_dealloc, var_dealloc}, {Py_tp_traverse, var_traverse}, {Py_tp_clear, var_clear},
    {Py_tp_repr, var_repr},       {0, NULL},
};
static PyType_Spec var_spec = {"framejit._C._Var", sizeof(fj_Var), 0,
                               Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, var_slots};

fj_Var *fj_var_new(fj_VarKind kind, PyObject *obj, PyObject *items)
{
    fj_Var *v = PyObject_GC_New(fj_Var, fj_Var_Type);
    if (v == NULL)
        return NULL;
    Py_INCREF(fj_Var_Type);
    v->kind = kind;
    v->obj = Py_XNewRef(obj);
    v->items = Py_XNewRef(items);
    v->extra = v->extra2 = NULL;
    v->source = NULL;
    v->pos = 0;
    v->split_dict = 0;
    v->dynamic = 0;
    v->size_input = 0;
    PyObject_GC_Track(v);
    fj_Tracer *tx = fj_current_tracer;
    if (tx != NULL && tx->made != NULL && kind != FJ_VAR_CONST && kind != FJ_VAR_NODE &&
        kind != FJ_VAR_NULL && PyList_Append(tx->made, (PyObject *)v) < 0) {
        Py_DECREF(v);
        return NULL;
    }
    return v;
}

void fj_trace_clear_made(fj_Tracer *tx)
{
    PyObject *made = tx->made;
    tx->made = NULL;
    if (made == NULL)
        return;
    /* break the cycles: every Var clears what it holds, then the list goes */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(made); i++)
        var_clear((fj_Var *)PyList_GET_ITEM(made, i));
    Py_DECREF(made);
}

fj_Var *fj_var_const(PyObject *obj)
{
    return fj_var_new(FJ_VAR_CONST, obj, NULL);
}

fj_Var *fj_var_node(PyObject *node)
{
    return fj_var_new(FJ_VAR_NODE, node, NULL);
}

fj_Var *fj_var_take(fj_VarKind kind, PyObject *ref)
{
    if (ref == NULL)
        return NULL;
    fj_Var *v = kind == FJ_VAR_CONST ? fj_var_const(ref) : fj_var_new(kind, NULL, ref);
    Py_DECREF(ref);
    return v;
}

/* " at 0x", made once (fj_trace_init) */
static PyObject *ADDRESS_MARK = NULL;

/*
** 'msg' with every " at 0x<hex>" cut (a default repr's address: "<Foo
** object at 0x7f..>" reads "<Foo object>"), so no reason carries an
** address, whatever repr a %R ran.  Steals 'msg'; new reference or NULL.
*/
static int is_hex_digit(Py_UCS4 c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static PyObject *drop_addresses(PyObject *msg)
{
    Py_ssize_t first = msg == NULL ? -1 : PyUnicode_Find(msg, ADDRESS_MARK, 0, PY_SSIZE_T_MAX, 1);
    if (first == -2)
        Py_CLEAR(msg); /* (an error: NULL with it set) */
    if (first < 0)
        return msg;
    Py_ssize_t n = PyUnicode_GET_LENGTH(msg), i = 0;
    PyObject *parts = PyList_New(0), *out = NULL;
    while (parts != NULL && i < n) {
        Py_ssize_t at = PyUnicode_Find(msg, ADDRESS_MARK, i, n, 1);
        if (at == -2) {
            Py_CLEAR(parts);
            break;
        }
        /* an address is " at 0x" and hex digits up to a non-word character: a
           user's text that reads "meet at 0xford" is kept as it is */
        Py_ssize_t end = at < 0 ? n : at + PyUnicode_GET_LENGTH(ADDRESS_MARK), stop = at < 0 ? n : at;
        while (at >= 0 && end < n && is_hex_digit(PyUnicode_READ_CHAR(msg, end)))
            end++;
        if (at >= 0 && (end == at + PyUnicode_GET_LENGTH(ADDRESS_MARK) ||
                        (end < n && (Py_UNICODE_ISALNUM(PyUnicode_READ_CHAR(msg, end)) ||
                                     PyUnicode_READ_CHAR(msg, end) == '_'))))
            stop = end; /* not an address: kept */
        PyObject *piece = PyUnicode_Substring(msg, i, stop);
        if (piece == NULL || PyList_Append(parts, piece) < 0)
            Py_CLEAR(parts);
        Py_XDECREF(piece);
        if (at < 0)
            break;
        i = end;
    }
    if (parts != NULL) {
        PyObject *empty = PyUnicode_FromStringAndSize(NULL, 0);
        out = empty ? PyUnicode_Join(empty, parts) : NULL;
        Py_XDECREF(empty);
    }
    Py_XDECREF(parts);
    Py_DECREF(msg);
    return out;
}

/*
** Where the trace is when it gives up: a tuple of (code, line, col,
** end_col, end_line) for the frame whose instruction runs and each frame that
** inlined it, innermost first (empty outside a trace).  New reference.
*/
static PyObject *trace_stack(void)
{
    fj_Tracer *tx = fj_current_tracer;
    PyObject *out = PyList_New(0);
    for (fj_TFrame *f = tx ? tx->cur : NULL; out != NULL && f != NULL; f = f->parent) {
        if (f->ip < 0 || f->ip >= f->il.n)
            continue;
        fj_Instr *in = &f->il.v[f->ip];
        PyObject *e = Py_BuildValue("(Oiiii)", (PyObject *)f->code, in->line, in->col, in->end_col,
                                    in->end_line);
        if (e == NULL || PyList_Append(out, e) < 0)
            Py_CLEAR(out);
        Py_XDECREF(e);
    }
    if (out == NULL)
        return NULL;
    Py_SETREF(out, PyList_AsTuple(out));
    return out;
}

/* fj_unsupported with 'key' (static storage) as the reason's stable key. */
static int raise_unsupported(const char *key, const char *fmt, va_list va)
{
    PyObject *msg = drop_addresses(PyUnicode_FromFormatV(fmt, va));
    if (msg == NULL)
        return -1;
    /* the key (the reason's template) is what framejit/breaks.py maps to a
       break kind; the stack says where in the inlined calls the trace was */
    PyObject *exc = PyObject_CallOneArg(fj_Unsupported, msg);
    PyObject *pkey = exc ? PyUnicode_FromString(key) : NULL;
    PyObject *stack = pkey ? trace_stack() : NULL;
    if (stack == NULL || PyObject_SetAttrString(exc, "key", pkey) < 0 ||
        PyObject_SetAttrString(exc, "stack", stack) < 0) {
        PyErr_Clear(); /* the reason still reaches the user, without its key */
        Py_CLEAR(exc);
    }
    PyErr_SetObject(fj_Unsupported, exc ? exc : msg);
    Py_XDECREF(exc);
    Py_XDECREF(pkey);
    Py_XDECREF(stack);
    Py_DECREF(msg);
    return -1;
}

int fj_unsupported(const char *fmt, ...)
{
    va_list va;
    va_start(va, fmt);
    raise_unsupported(fmt, fmt, va);
    va_end(va);
    return -1;
}

int fj_unsupported_keyed(const char *key, const char *fmt, ...)
{
    va_list va;
    va_start(va, fmt);
    raise_unsupported(key, fmt, va);
    va_end(va);
    return -1;
}

/* --------------------------------------------------------------- inputs */

int fj_is_plain_constant(PyObject *v)
{
    return v == Py_None || v == Py_Ellipsis || PyBool_Check(v) || PyLong_CheckExact(v) ||
           PyFloat_CheckExact(v) || PyUnicode_CheckExact(v) || PyComplex_CheckExact(v) ||
           PyBytes_CheckExact(v);
}

int fj_is_cached_value(PyObject *o)
{
    if (o == Py_None || o == Py_Ellipsis || o == Py_NotImplemented || PyBool_Check(o))
        return 1;
    if (PyLong_CheckExact(o)) {
        int overflow = 0;
        long v = PyLong_AsLongAndOverflow(o, &overflow);
        return !overflow && v >= -5 && v <= 256;
    }
    if (PyUnicode_CheckExact(o))
        return PyUnicode_GET_LENGTH(o) == 0 ||
               (PyUnicode_GET_LENGTH(o) == 1 && PyUnicode_READ_CHAR(o, 0) < 256);
    if (PyBytes_CheckExact(o))
        return PyBytes_GET_SIZE(o) <= 1;
    if (PyTuple_CheckExact(o))
        return PyTuple_GET_SIZE(o) == 0;
    return 0;
}

/* Values: objects whose identity CPython does not keep across equal results. */
static int is_value_object(PyObject *o)
{
    return (PyLong_CheckExact(o) || PyFloat_CheckExact(o) || PyComplex_CheckExact(o) ||
            PyUnicode_CheckExact(o) || PyBytes_CheckExact(o) || PyTuple_CheckExact(o)) &&
           !fj_is_cached_value(o);
}

/* Adds id() of 'consts' items (nested tuples, frozensets, code objects' constants). */
static int add_literal_ids(PyObject *ids, PyObject *consts, int depth)
{
    if (depth > 20)
        return 0;
    PyObject *seq = PySequence_Fast(consts, "constants");
    if (seq == NULL)
        return -1;
    int r = 0;
    for (Py_ssize_t i = 0; r == 0 && i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *c = PySequence_Fast_GET_ITEM(seq, i), *key = PyLong_FromVoidPtr(c);
        r = key == NULL || PySet_Add(ids, key) < 0 ? -1 : 0;
        Py_XDECREF(key);
        if (r == 0 && (PyTuple_CheckExact(c) || PyFrozenSet_CheckExact(c)))
            r = add_literal_ids(ids, c, depth + 1);
        else if (r == 0 && PyCode_Check(c))
            r = add_literal_ids(ids, ((PyCodeObject *)c)->co_consts, depth + 1);
    }
    Py_DECREF(seq);
    return r;
}

/* 1 if 'obj' is the object of an input Var (any read source), 0 if not, -1. */
static int is_input_object(fj_Tracer *tx, PyObject *obj)
{
    Py_ssize_t pos = 0;
    PyObject *text, *var;
    while (tx->inputs != NULL && PyDict_Next(tx->inputs, &pos, &text, &var))
        if (((fj_Var *)var)->obj == obj && ((fj_Var *)var)->kind == FJ_VAR_CONST)
            return 1;
    return 0;
}

int fj_trace_identity(fj_Tracer *tx, PyObject *v, PyObject *obj)
{
    fj_Var *vv = (fj_Var *)v;
    if (!is_value_object(obj))
        return FJ_ID_SHARED;
    if (vv->kind != FJ_VAR_CONST || vv->source != NULL)
        return FJ_ID_UNKNOWN;
    if (tx->literal_ids == NULL) {
        if ((tx->literal_ids = PySet_New(NULL)) == NULL ||
            add_literal_ids(tx->literal_ids, tx->code->co_consts, 0) < 0) {
            Py_CLEAR(tx->literal_ids);
            return -1;
        }
    }
    PyObject *key = PyLong_FromVoidPtr(obj);
    int lit = key ? PySet_Contains(tx->literal_ids, key) : -1;
    Py_XDECREF(key);
    if (lit != 0)
        return lit < 0 ? -1 : FJ_ID_SHARED;
    int in = is_input_object(tx, obj);
    return in < 0 ? -1 : in ? FJ_ID_UNKNOWN : FJ_ID_FRESH;
}

/* Records a dynamic input (for fj_trace_specialize). 0 or -1. */
static int note_dynamic(fj_Tracer *tx, fj_Var *v, PyObject *value)
{
    PyObject *pair = PyTuple_Pack(2, (PyObject *)v, value);
    int r = pair ? PyList_Append(tx->dyn_inputs, pair) : -1;
    Py_XDECREF(pair);
    return r;
}

/* An array or tensor input whose dims 'dims' (a tuple, maybe empty) are
   dynamic: its Var carries their symbols and a pin adds its full guard.  0 or -1. */
static int dynamic_input(fj_Tracer *tx, fj_Var *v, fj_Source *src, PyObject *dims, PyObject *value)
{
    if (PyTuple_GET_SIZE(dims) == 0)
        return 0;
    v->dynamic = 1;
    v->extra2 = fj_dims_for_input(src, dims, ((fj_Node *)v->obj)->ndim);
    return v->extra2 == NULL || note_dynamic(tx, v, value) < 0 ? -1 : 0;
}

/* True if the int input at 'src' is to be symbolic (never once pinned). */
static int is_dynamic_int(fj_Tracer *tx, fj_Source *src, PyObject *value)
{
    (void)value;
    if (tx->specialized || tx->dyn_inputs == NULL)
        return 0;
    if (tx->all_dynamic)
        return 1;
    if (tx->dyn_ints == NULL)
        return 0;
    int in = PySet_Contains(tx->dyn_ints, src->text);
    if (in < 0)
        PyErr_Clear();
    return in > 0;
}

/*
** The dims of array 'value' at 'src' to leave unguarded: those automatic
** dynamic found changing, or mark_dynamic asked for, or all with
** dynamic=True, except dims of size 0 or 1 (specialized as the reference
** does).  Returns a new tuple (empty when static), NULL on error.
*/
static PyObject *dynamic_dims_of(fj_Tracer *tx, fj_Source *src, PyObject *value)
{
    int64_t sizes[FJ_TENSOR_MAX_DIMS];
    int nd = 0;
    PyObject *want = NULL, *out = PyList_New(0);
    if (out == NULL || tx->specialized || tx->dyn_inputs == NULL)
        goto done;
    /* a torch tensor: dynamic dims only on a contiguous one */
    int r = fj_trace_input_sizes(value, &nd, sizes);
    if (r < 0)
        goto error;
    if (r == 0)
        goto done;
    if (tx->dyn_dims != NULL && (want = PyDict_GetItemWithError(tx->dyn_dims, src->text)) == NULL &&
        PyErr_Occurred())
        goto error;
    PyObject *marked = NULL;
    if (tx->marked != NULL && PyDict_GET_SIZE(tx->marked) > 0) {
        PyObject *key = PyLong_FromVoidPtr(value);
        marked = key ? PyDict_GetItemWithError(tx->marked, key) : NULL;
        Py_XDECREF(key);
        if (marked == NULL && PyErr_Occurred())
            goto error;
    }
    for (int d = 0; d < nd; d++) {
        int64_t size = sizes[d];
        if (size == 0 || size == 1)
            continue;
        PyObject *dobj = PyLong_FromLong(d);
        if (dobj == NULL)
            goto error;
        int yes = tx->all_dynamic;
        if (!yes && want != NULL && (yes = PySequence_Contains(want, dobj)) < 0)
            yes = 0;
        if (!yes && marked != NULL && (yes = PySequence_Contains(marked, dobj)) < 0)
            yes = 0;
        PyErr_Clear();
        if (yes && PyList_Append(out, dobj) < 0) {
            Py_DECREF(dobj);
            goto error;
        }
        Py_DECREF(dobj);
    }
done:
    if (out == NULL)
        return NULL;
    Py_SETREF(out, PyList_AsTuple(out));
    return out;
error:
    Py_XDECREF(out);
    return NULL;
}

/* The 'dynamic' log line of a pin: which inputs, why, where (the
   instruction being traced, in its own file).  Errors are cleared. */
static void log_pin(fj_Tracer *tx, const char *why)
{
    PyObject *names = PyList_New(0), *sep = NULL, *joined = NULL, *text = NULL;
    for (Py_ssize_t i = 0; names != NULL && i < PyList_GET_SIZE(tx->dyn_inputs); i++) {
        fj_Var *v = (fj_Var *)PyTuple_GET_ITEM(PyList_GET_ITEM(tx->dyn_inputs, i), 0);
        if (v->source != NULL && PyList_Append(names, v->source->text) < 0)
            Py_CLEAR(names);
    }
    if (names != NULL && PyList_GET_SIZE(names) > 0 && (sep = PyUnicode_FromString(", ")) != NULL &&
        (joined = PyUnicode_Join(sep, names)) != NULL) {
        fj_TFrame *fr = tx->cur;
        int line = fr != NULL && fr->ip >= 0 && fr->ip < fr->il.n ? fr->il.v[fr->ip].line : -1;
        PyObject *file = fr != NULL ? fr->code->co_filename : tx->code->co_filename;
        text = PyUnicode_FromFormat("specializing %U (every dynamic input of this compile): %s at %U:%d",
                                    joined, why, file, line);
    }
    if (text != NULL) {
        PyObject *r = PyObject_CallFunction(tx->log_fn, "sOO", "dynamic", tx->compile_id, text);
        Py_XDECREF(r);
    }
    Py_XDECREF(names);
    Py_XDECREF(sep);
    Py_XDECREF(joined);
    Py_XDECREF(text);
    PyErr_Clear();
}

int fj_trace_specialize(fj_Tracer *tx, const char *why)
{
    if (tx->specialized || tx->dyn_inputs == NULL)
        return 0;
    tx->specialized = 1;
    if (tx->log_dynamic && tx->log_fn != NULL)
        log_pin(tx, why);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(tx->dyn_inputs); i++) {
        PyObject *pair = PyList_GET_ITEM(tx->dyn_inputs, i);
        fj_Var *v = (fj_Var *)PyTuple_GET_ITEM(pair, 0);
        PyObject *value = PyTuple_GET_ITEM(pair, 1);
        PyObject *mgr = fj_guard_manager(tx->guards, v->source);
        if (mgr == NULL)
            return -1;
        const fj_ArrayLib *lib = fj_arraylib_of(value);
        int r = lib != NULL ? lib->add_tensor_match(mgr, value, NULL) : fj_guard_add_equals_match(mgr, value);
        if (r < 0)
            return -1;
    }
    return 0;
}

int fj_trace_pin_sizes(fj_Tracer *tx, PyObject *v, const char *what)
{
    fj_Var *vv = (fj_Var *)v;
    if (vv->kind == FJ_VAR_NODE && ((fj_Node *)vv->obj)->datadep)
        return fj_unsupported("%s of an array whose size depends on the data (x[mask], np.nonzero) is not "
                              "traced", what);
    char why[200];
    snprintf(why, sizeof why, "%s needs the sizes of an array whose sizes are not modelled", what);
    return fj_trace_specialize(tx, why);
}

/*
** Lists, tuples and dicts longer than this are not unpacked into one guarded
** input per item: they are opaque objects (type-guarded; operations on them
** break the graph).  Guarding a million-item list item by item takes time
** quadratic in its length (test_list's repr of [0] * 1000000 hung).
*/
#define FJ_MAX_INPUT_ITEMS 256

/* Longest access path of an input (guards.c allows trees 200 deep). */
#define FJ_MAX_SOURCE_DEPTH 64

const fj_OpDef *fj_trace_ops_for(PyObject *v)
{
    PyTypeObject *tp = Py_TYPE(v);
    /* a class statement's own __hash__ or __eq__ (slot wrappers) */
    if (PyType_HasFeature(tp, Py_TPFLAGS_HEAPTYPE) &&
        (tp->tp_hash != PyBaseObject_Type.tp_hash ||
         tp->tp_richcompare != PyBaseObject_Type.tp_richcompare))
        return NULL;
    return fj_ops_for_callable(v);
}

static fj_Var *trace_input(fj_Tracer *tx, fj_Source *src, PyObject *value);

/*
** Callers pass values borrowed from dicts, lists and frames; building guards
** allocates, which can run a collection, whose gc.callbacks can run Python
** that rebinds a global (hypothesis' gc_callback: `_gc_cumulative_time +=
** ...`) and frees the value.  So the value is held for the whole call.
*/
fj_Var *fj_trace_input(fj_Tracer *tx, fj_Source *src, PyObject *value)
{
    Py_INCREF(value);
    fj_Var *v = trace_input(tx, src, value);
    Py_DECREF(value);
    return v;
}

/* A graph input for the value at 'src': its placeholder (named after the
   source) and Var, listed in tx->placeholders.  New reference, NULL on error. */
static fj_Var *placeholder_input(fj_Tracer *tx, fj_Source *src, PyObject *value)
{
    PyObject *name = fj_source_placeholder_name(src);
    PyObject *node = name ? (PyObject *)fj_graph_placeholder(tx->graph, name, value) : NULL;
    Py_XDECREF(name);
    fj_Var *v = node ? fj_var_node(node) : NULL;
    if (v != NULL && PyList_Append(tx->placeholders, (PyObject *)v) < 0)
        Py_CLEAR(v);
    return v;
}

fj_Var *fj_trace_placeholder_var(fj_Tracer *tx, PyObject *node)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(tx->placeholders); i++)
        if (((fj_Var *)PyList_GET_ITEM(tx->placeholders, i))->obj == node)
            return (fj_Var *)PyList_GET_ITEM(tx->placeholders, i);
    return NULL;
}

/* trace.h: the placeholders' symbolic sizes in their node meta, for backends. */
int fj_trace_dynamic_meta(fj_Tracer *tx)
{
    if (tx->specialized)
        return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(tx->placeholders); i++) {
        fj_Var *v = (fj_Var *)PyList_GET_ITEM(tx->placeholders, i);
        fj_Node *n = (fj_Node *)v->obj;
        PyObject *meta = NULL;
        if (v->kind != FJ_VAR_NODE || !v->dynamic || n->dynmeta != NULL)
            continue;
        if (v->size_input && v->source != NULL && v->source->kind == FJ_SRC_SIZE) {
            PyObject *arr = PyDict_GetItemWithError(tx->inputs, v->source->parent->text);
            if (arr == NULL) {
                if (PyErr_Occurred())
                    return -1;
                continue;
            }
            if (VAR(arr)->kind != FJ_VAR_NODE)
                continue;
            meta = Py_BuildValue("{s:(On)}", "size_of", ((fj_Node *)VAR(arr)->obj)->name, v->source->index);
        }
        else if ((n->vkind == FJ_VAL_ARRAY || n->vkind == FJ_VAL_TENSOR) && v->extra2 != NULL &&
                 PyTuple_Check(v->extra2) && PyTuple_GET_SIZE(v->extra2) == n->ndim) {
            PyObject *dims = PyList_New(0);
            for (Py_ssize_t d = 0; dims != NULL && d < n->ndim; d++) {
                if (PyTuple_GET_ITEM(v->extra2, d) == Py_None)
                    continue;
                PyObject *o = PyLong_FromSsize_t(d);
                if (o == NULL || PyList_Append(dims, o) < 0)
                    Py_CLEAR(dims);
                Py_XDECREF(o);
            }
            if (dims == NULL)
                return -1;
            if (PyList_GET_SIZE(dims) > 0) {
                PyObject *t = PyList_AsTuple(dims);
                meta = t ? Py_BuildValue("{s:N}", "dynamic_dims", t) : NULL;
            }
            else
                meta = Py_None; /* nothing to say */
            Py_DECREF(dims);
        }
        else
            continue;
        if (meta == NULL)
            return -1;
        if (meta != Py_None)
            n->dynmeta = meta;
    }
    return 0;
}

/*
** The size of an input array's dynamic dim 'dim' (at 'asrc'), read by the
** program (x.shape[0], len(x)): a symbolic int, the graph input
** <asrc>.shape[dim] (a SIZE source) (docs/dynamic.md, "Sizes read by the program").  It needs
** no guard of its own: the array's TENSOR_MATCH keeps that dim >= 2, and a
** pin fixes it.  Never recorded for automatic dynamic (the array's dim is).
** Returns a new reference, NULL on error.
*/
fj_Var *fj_trace_size_input(fj_Tracer *tx, fj_Source *asrc, Py_ssize_t dim)
{
    fj_Source *src = fj_source_size_of(asrc, dim);
    if (src == NULL)
        return NULL;
    fj_Var *v = NULL;
    PyObject *known = PyDict_GetItemWithError(tx->inputs, src->text), *value = NULL;
    if (known != NULL) {
        v = (fj_Var *)Py_NewRef(known);
        goto done;
    }
    if (PyErr_Occurred())
        goto done;
    int got = fj_source_fetch(src, &tx->view, &value);
    if (got <= 0 || !PyLong_CheckExact(value)) {
        if (got >= 0)
            fj_unsupported("%U is not readable as an int", src->text);
        goto done;
    }
    if ((v = placeholder_input(tx, src, value)) == NULL)
        goto done;
    v->dynamic = 1;
    v->size_input = 1;
    v->source = (fj_Source *)Py_NewRef((PyObject *)src);
    if (PyDict_SetItem(tx->inputs, src->text, (PyObject *)v) < 0)
        Py_CLEAR(v);
done:
    Py_XDECREF(value);
    Py_DECREF(src);
    return v;
}

/*
** A bound method of a plain function of its object's class (a with
** statement's cm.__exit__ reaching a resume function): a new object on every
** call, so it is guarded by type, its __func__ by identity and its __self__
** as an input of its own.  The Var is the method of self (FJ_VAR_METHOD):
** calling it inlines the function with self.  NULL with an error, or NULL
** with none when the method is not such a one (*handled stays 0).
*/
static fj_Var *bound_method_input(fj_Tracer *tx, fj_Source *src, PyObject *mgr, PyObject *value,
                                  int *handled)
{
    PyObject *func = PyMethod_GET_FUNCTION(value), *self = PyMethod_GET_SELF(value);
    *handled = 0;
    if (!PyFunction_Check(func) || PyType_Check(self) || PyModule_Check(self))
        return NULL;
    PyObject *name = ((PyFunctionObject *)func)->func_name;
    if (!PyUnicode_Check(name) || _PyType_Lookup(Py_TYPE(self), name) != func)
        return NULL;
    *handled = 1;
    if (fj_guard_add_type_match(mgr, (PyObject *)&PyMethod_Type) < 0)
        return NULL;
    PyObject *fname = PyUnicode_FromString("__func__"), *sname = PyUnicode_FromString("__self__");
    fj_Source *fs = fname ? fj_source_attr(src, fname) : NULL;
    fj_Source *ss = sname ? fj_source_attr(src, sname) : NULL;
    fj_Var *fv = fs && ss ? fj_trace_input(tx, fs, func) : NULL;
    fj_Var *sv = fv ? fj_trace_input(tx, ss, self) : NULL;
    fj_Var *v = NULL;
    if (sv != NULL && sv->kind != FJ_VAR_OBJ)
        fj_unsupported("%U is a method of a %.100s: not captured", src->text, Py_TYPE(self)->tp_name);
    else if (sv != NULL && (v = fj_var_new(FJ_VAR_METHOD, name, NULL)) != NULL)
        v->extra = Py_NewRef((PyObject *)sv);
    Py_XDECREF(fname);
    Py_XDECREF(sname);
    Py_XDECREF(fs);
    Py_XDECREF(ss);
    Py_XDECREF(fv);
    Py_XDECREF(sv);
    return v;
}

static fj_Var *trace_input(fj_Tracer *tx, fj_Source *src, PyObject *value)
{
    PyObject *known = PyDict_GetItemWithError(tx->inputs, src->text);
    if (known != NULL) {
        /* one text, one path: keys the guards print shortened (ints past
           256 bits) could make two paths print alike */
        int same = fj_source_same(((fj_Var *)known)->source, src);
        if (same == 0)
            fj_unsupported("two inputs print as %.200U", src->text);
        return same > 0 ? (fj_Var *)Py_NewRef(known) : NULL;
    }
    if (PyErr_Occurred())
        return NULL;
    fj_Var *v = NULL;
    int handled = 0;
    /* inputs are told apart by their access path, so an object that refers
       to itself (signal._globals = globals()) would nest without end */
    int depth = 0;
    for (fj_Source *p = src; p != NULL; p = p->parent)
        if (++depth > FJ_MAX_SOURCE_DEPTH) {
            fj_unsupported("%.200U: access path more than %d steps long (an object that refers to itself?)",
                           src->text, FJ_MAX_SOURCE_DEPTH);
            return NULL;
        }
    PyObject *mgr = fj_guard_manager(tx->guards, src);
    if (mgr == NULL)
        return NULL;
    if (PyArray_Check(value) && PyDataType_REFCHK(PyArray_DESCR((PyArrayObject *)value))) {
        /* its items are the program's objects: ops on it run their code, and
           the graph's metadata would keep its dtype alive */
        fj_unsupported("%U is an array of Python objects (dtype %R): not captured", src->text,
                       (PyObject *)PyArray_DESCR((PyArrayObject *)value));
        return NULL;
    }
    if (PyArray_CheckExact(value) && PyArray_NDIM((PyArrayObject *)value) > FJ_MAX_NDIM) {
        fj_unsupported("%U has %d dimensions (framejit traces up to %d)", src->text,
                       PyArray_NDIM((PyArrayObject *)value), FJ_MAX_NDIM);
        return NULL;
    }
    if (PyArray_CheckExact(value)) {
        PyObject *dims = dynamic_dims_of(tx, src, value);
        if (dims == NULL || fj_guard_add_tensor_match(mgr, value, dims) < 0) {
            Py_XDECREF(dims);
            return NULL;
        }
        v = placeholder_input(tx, src, value);
        if (v != NULL && dynamic_input(tx, v, src, dims, value) < 0)
            Py_CLEAR(v);
        Py_DECREF(dims);
    }
    else if (fj_torch_is_tensor(value)) {
        PyObject *dims = dynamic_dims_of(tx, src, value);
        if (dims == NULL)
            return NULL;
        v = fj_trace_tensor_input(tx, src, mgr, value, dims);
        if (v != NULL && dynamic_input(tx, v, src, dims, value) < 0)
            Py_CLEAR(v);
        Py_DECREF(dims);
        if (v == NULL)
            return NULL;
    }
    else if (PyLong_CheckExact(value) && is_dynamic_int(tx, src, value)) {
        /* a symbolic int: a graph input, guarded to stay an int (any value:
           as in torch, 0 and 1 are specialized for sizes only; a use that
           needs the value pins it) */
        if (fj_guard_add_type_match(mgr, (PyObject *)&PyLong_Type) < 0)
            return NULL;
        v = placeholder_input(tx, src, value);
        if (v != NULL) {
            v->dynamic = 1;
            if (note_dynamic(tx, v, value) < 0)
                Py_CLEAR(v);
        }
    }
    else if (PyArray_Check(value)) {
        fj_unsupported("%U is an instance of ndarray subclass %s", src->text,
                       Py_TYPE(value)->tp_name);
        return NULL;
    }
    else if (value == Py_None) {
        if (fj_guard_add_none_match(mgr) < 0)
            return NULL;
        v = fj_var_const(value);
    }
    else if (fj_is_plain_constant(value) ||
             (PyArray_IsScalar(value, Generic) && !PyArray_IsScalar(value, Void))) {
        /* not np.void: a record of a structured array is a view that keeps
           the whole array alive in the guard (NumPy test_multiarray
           TestPickling test_roundtrip's weakrefs) */
        if (fj_guard_add_equals_match(mgr, value) < 0)
            return NULL;
        v = fj_var_const(value);
    }
    else if ((PyTuple_CheckExact(value) || PyList_CheckExact(value)) &&
             PySequence_Fast_GET_SIZE(value) <= FJ_MAX_INPUT_ITEMS) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(value);
        if (fj_guard_add_type_match(mgr, (PyObject *)Py_TYPE(value)) < 0 ||
            fj_guard_add_sequence_length(mgr, n) < 0)
            return NULL;
        PyObject *items = PyList_New(n);
        if (items == NULL)
            return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (PySequence_Fast_GET_SIZE(value) != n) {
                /* code the tracer ran (a __hash__) changed the list */
                Py_DECREF(items);
                fj_unsupported("%U changed while it was traced", src->text);
                return NULL;
            }
            fj_Source *isrc = fj_source_index(src, i);
            fj_Var *iv = isrc ? fj_trace_input(tx, isrc, PySequence_Fast_GET_ITEM(value, i)) : NULL;
            Py_XDECREF(isrc);
            if (iv == NULL) {
                Py_DECREF(items);
                return NULL;
            }
            PyList_SET_ITEM(items, i, (PyObject *)iv);
        }
        v = fj_var_new(PyTuple_CheckExact(value) ? FJ_VAR_TUPLE : FJ_VAR_LIST, NULL, items);
        Py_DECREF(items);
    }
    else if (PyDict_CheckExact(value) && PyDict_GET_SIZE(value) <= FJ_MAX_INPUT_ITEMS) {
        PyObject *keys = PyDict_Keys(value);
        if (keys == NULL)
            return NULL;
        Py_ssize_t nk = PyList_GET_SIZE(keys);
        for (Py_ssize_t i = 0; i < nk; i++) {
            if (!fj_is_plain_constant(PyList_GET_ITEM(keys, i))) {
                Py_DECREF(keys);
                fj_unsupported("%U has a key that is not a plain constant", src->text);
                return NULL;
            }
        }
        if (fj_guard_add_type_match(mgr, (PyObject *)&PyDict_Type) < 0 ||
            fj_guard_add_dict_keys(mgr, keys) < 0) {
            Py_DECREF(keys);
            return NULL;
        }
        PyObject *items = PyDict_New();
        for (Py_ssize_t i = 0; items && i < nk; i++) {
            PyObject *k = PyList_GET_ITEM(keys, i);
            fj_Source *isrc = fj_source_item(src, k);
            PyObject *val = PyDict_GetItemWithError(value, k);
            if (val == NULL && !PyErr_Occurred())
                fj_unsupported("%U changed while it was traced", src->text);
            fj_Var *iv = (isrc && val) ? fj_trace_input(tx, isrc, val) : NULL;
            Py_XDECREF(isrc);
            if (iv == NULL || PyDict_SetItem(items, k, (PyObject *)iv) < 0)
                Py_CLEAR(items);
            Py_XDECREF(iv);
        }
        Py_DECREF(keys);
        if (items == NULL)
            return NULL;
        v = fj_var_new(FJ_VAR_DICT, NULL, items);
        Py_DECREF(items);
        if (v != NULL)
            v->split_dict = fj_dict_is_split(value);
    }
    else if (PyMethod_Check(value) &&
             ((v = bound_method_input(tx, src, mgr, value, &handled)) != NULL || handled)) {
        if (v == NULL)
            return NULL;
    }
    else if (PyModule_Check(value) || PyFunction_Check(value) || PyCFunction_Check(value) ||
             PyType_Check(value) || PyArray_DescrCheck(value) || fj_torch_is_singleton(value) ||
             fj_trace_ops_for(value) != NULL || fj_trace_is_np_nonzero(value) || fj_trace_is_multi(value) ||
             strcmp(Py_TYPE(value)->tp_name, "numpy.ufunc") == 0 || PyMethod_Check(value) ||
             (Py_TYPE(value) == &PyMethodDescr_Type && fj_torch_callable_kind(value) != 0)) {
        if (fj_guard_add_id_match(mgr, value) < 0)
            return NULL;
        v = fj_var_const(value);
    }
    else {
        /* a torch module is guarded by identity: its forward, hooks and
           submodules are then what the trace saw, and what it read of its
           state (training, parameters) is guarded on its own */
        int r = fj_torch_is_module(value) ? fj_guard_add_id_match(mgr, value)
                                          : fj_guard_add_type_match(mgr, (PyObject *)Py_TYPE(value));
        if (r < 0)
            return NULL;
        v = fj_var_new(FJ_VAR_OBJ, value, NULL);
    }
    if (v == NULL)
        return NULL;
    v->source = (fj_Source *)Py_NewRef((PyObject *)src);
    if (PyDict_SetItem(tx->inputs, src->text, (PyObject *)v) < 0) {
        Py_DECREF(v);
        return NULL;
    }
    return v;
}

/* ---------------------------------------------------------- frame stack */

static int push(fj_TFrame *fr, PyObject *v) /* steals v */
{
    if (v == NULL)
        return -1;
    if (fr->sp >= fr->stack_cap) {
        Py_DECREF(v);
        PyErr_SetString(PyExc_SystemError, "framejit: traced stack overflow");
        return -1;
    }
    fr->stack[fr->sp++] = v;
    return 0;
}

#define POP() (fr->stack[--fr->sp])
#define TOP() (fr->stack[fr->sp - 1])
#define PEEK(n) (fr->stack[fr->sp - (n)])
/* Pushes 'v' (a new reference it consumes); NULL (the error is set) goes to error. */
#define PUSH(v)                                                                                    \
    do {                                                                                           \
        if (push(fr, (PyObject *)(v)) < 0)                                                         \
            goto error;                                                                            \
    } while (0)

static void frame_free(fj_TFrame *fr)
{
    for (int i = 0; i < fr->nlocals; i++)
        Py_XDECREF(fr->locals[i]);
    while (fr->sp > 0)
        Py_XDECREF(fr->stack[--fr->sp]);
    PyMem_Free(fr->locals);
    PyMem_Free(fr->stack);
    PyMem_Free(fr->touched);
    fr->locals = fr->stack = NULL;
    fr->touched = NULL;
    fr->nlocals = 0;
    Py_CLEAR(fr->kwnames);
    Py_CLEAR(fr->retval);
    Py_CLEAR(fr->loop_stay);
    Py_CLEAR(fr->loop_ret);
    Py_CLEAR(fr->while_seen);
    PyMem_Free(fr->and_arm);
    fr->and_arm = NULL;
    fj_bc_free(&fr->il);
}

static int frame_setup(fj_TFrame *fr, fj_Tracer *tx, PyCodeObject *co)
{
    memset(fr, 0, sizeof(*fr));
    fr->tx = tx;
    fr->code = co;
    fr->nlocals = FJ_CODE_NLOCALSPLUS(co);
    fr->stack_cap = co->co_stacksize + 4;
    fr->locals = PyMem_Calloc(fr->nlocals ? fr->nlocals : 1, sizeof(PyObject *));
    fr->stack = PyMem_Calloc(fr->stack_cap, sizeof(PyObject *));
    fr->touched = PyMem_Calloc(fr->nlocals ? fr->nlocals : 1, 1);
    fr->loop_head = fr->loop_end = fr->loop_test = -1;
    fr->loop_hole_lo = fr->loop_hole_hi = -1;
    fr->loop_wrap = 0;
    fr->loop_tail = -1;
    if (fr->locals == NULL || fr->stack == NULL || fr->touched == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (fj_bc_decode(co, &fr->il) < 0)
        return -1;
    return fj_trace_and_arms(fr);
}

static PyObject *local_name(fj_TFrame *fr, int i)
{
    return fj_code_local_name(fr->code, i);
}


/* The Var in local slot i, wrapping a top-frame argument on first use. New ref. */
static PyObject *load_local(fj_TFrame *fr, int i)
{
    PyObject *v = fr->locals[i];
    if (v == NULL && fr->lazy_args && i < fj_code_nargs(fr->code) &&
        i < fr->tx->view.nlocalsplus && fr->tx->view.localsplus[i] != NULL) {
        fj_Source *src = fj_source_local(i, local_name(fr, i));
        if (src == NULL)
            return NULL;
        v = (PyObject *)fj_trace_input(fr->tx, src, fr->tx->view.localsplus[i]);
        Py_DECREF(src);
        if (v == NULL)
            return NULL;
        fr->locals[i] = v;
    }
    if (v == NULL) {
        fj_unsupported("local variable '%U' referenced before assignment", local_name(fr, i));
        return NULL;
    }
    if (fr->tx->loop != NULL)
        fj_loop_note_load(fr, i);
    return Py_NewRef(v);
}

PyObject *fj_trace_load_local(fj_TFrame *fr, int i)
{
    return load_local(fr, i);
}

/*
** True (Unsupported raised) if rebinding or deleting local slot i may drop
** the last reference to a known object with a finalizer (__del__, an open
** file, a generator) or with weak references (their callbacks): CPython runs
** that code at the store, while a captured store is only replayed when the
** graph's frame hands its locals on, after the effects traced after it.
** Values made in the frame (lists, dicts, arrays) have neither.
*/
static int drops_finalizable(fj_TFrame *fr, int i)
{
    PyObject *v = fr->locals[i];
    PyObject *o = NULL;
    if (v == NULL) {
        if (fr->lazy_args && i < fj_code_nargs(fr->code) && i < fr->tx->view.nlocalsplus)
            o = fr->tx->view.localsplus[i];
    } else if (fj_Var_Check(v)) {
        fj_Var *var = (fj_Var *)v;
        if (var->kind == FJ_VAR_CONST || var->kind == FJ_VAR_OBJ)
            o = var->obj;
    }
    if (o == NULL)
        return 0;
    /* still held by the frame (the resume prologue's `LOAD_FAST ___stack0;
       DELETE_FAST ___stack0`, `b = o; del o`): nothing is dropped */
    for (int k = 0; v != NULL && k < fr->sp; k++)
        if (fr->stack[k] == v)
            return 0;
    for (int k = 0; v != NULL && k < fr->nlocals; k++)
        if (k != i && fr->locals[k] == v)
            return 0;
    /* an input read out of another object (m._modules['0'], d['k']) that
       nothing in the trace has changed yet: that object still holds it */
    if (v != NULL && fj_Var_Check(v) && ((fj_Var *)v)->source != NULL &&
        ((fj_Var *)v)->source->parent != NULL && PyList_GET_SIZE(fr->tx->effects) == 0 &&
        PyList_GET_SIZE(fr->tx->mutated) == 0)
        return 0;
    PyTypeObject *t = Py_TYPE(o);
    int weak = PyType_SUPPORTS_WEAKREFS(t) && *PyObject_GET_WEAKREFS_LISTPTR(o) != NULL;
    if (t->tp_finalize == NULL && t->tp_del == NULL && !weak)
        return 0;
    fj_unsupported("rebinding or deleting local '%U', a %s with a %s: CPython runs it at the store",
                   local_name(fr, i), t->tp_name, weak ? "weak reference" : "finalizer");
    return 1;
}

static void store_local(fj_TFrame *fr, int i, PyObject *v) /* steals v */
{
    if (fr->tx->loop != NULL)
        fj_loop_note_store(fr, i);
    fr->touched[i] = 1;
    Py_XSETREF(fr->locals[i], v);
}

int fj_trace_is_arg_slot(fj_TFrame *fr, int i)
{
    return fr->lazy_args && i < fj_code_nargs(fr->code);
}

int fj_trace_arg_untouched(fj_TFrame *fr, int i)
{
    return fr->lazy_args && !fr->touched[i] && i < fj_code_nargs(fr->code);
}

/* The contents of a CELL Var (new ref), reading a top-frame free variable lazily. */
static PyObject *cell_get(fj_TFrame *fr, fj_Var *cell, int slot)
{
    if (PyList_GET_SIZE(cell->items) > 0)
        return Py_NewRef(PyList_GET_ITEM(cell->items, 0));
    if (cell->source != NULL) {
        /* a free variable of the top frame: the closure cell's contents */
        fj_Tracer *tx = fr->tx;
        Py_ssize_t j = cell->source->index;
        PyObject *c = tx->view.closure ? PyTuple_GET_ITEM(tx->view.closure, j) : NULL;
        PyObject *val = c ? PyCell_GET(c) : NULL;
        if (val != NULL) {
            fj_Var *v = fj_trace_input(tx, cell->source, val);
            if (v == NULL || PyList_Append(cell->items, (PyObject *)v) < 0) {
                Py_XDECREF(v);
                return NULL;
            }
            return (PyObject *)v;
        }
    }
    fj_unsupported("free variable '%U' referenced before assignment", local_name(fr, slot));
    return NULL;
}

static fj_Var *new_cell(PyObject *contents) /* contents borrowed, may be NULL */
{
    PyObject *items = contents ? PyList_New(1) : PyList_New(0);
    if (items == NULL)
        return NULL;
    if (contents)
        PyList_SET_ITEM(items, 0, Py_NewRef(contents));
    return fj_var_take(FJ_VAR_CELL, items);
}

/* ------------------------------------------------------------ globals */

/*
** import name / from name import a, b (IMPORT_NAME) of a module already
** imported: what __import__ returns without running anything, sys.modules'
** entries, each guarded by identity (their sources sys.modules['a'],
** sys.modules['a.b'] ...), with the frame's __import__ guarded to be the
** builtin one.  Refused (the statement runs in CPython) for a relative
** import, a module not yet imported (importing runs its code), and a
** 'from' name a package does not hold yet (it would import a submodule).
** New reference, NULL with a break reason.
*/
/* The C function of the builtins module's own __import__ (its method table's
   entry: a replacement, even a C one, is another function).  NULL if none. */
static PyCFunction builtin_import_meth(void)
{
    static PyCFunction meth = NULL;
    if (meth != NULL)
        return meth;
    PyObject *key = PyUnicode_FromString("builtins");
    PyObject *bm = key != NULL ? PyImport_GetModule(key) : NULL;
    Py_XDECREF(key);
    PyModuleDef *def = bm != NULL ? PyModule_GetDef(bm) : NULL;
    for (PyMethodDef *m = def != NULL ? def->m_methods : NULL; m != NULL && m->ml_name != NULL; m++)
        if (strcmp(m->ml_name, "__import__") == 0)
            meth = m->ml_meth;
    Py_XDECREF(bm);
    PyErr_Clear();
    return meth;
}

static PyObject *trace_import(fj_TFrame *fr, PyObject *name, PyObject *levelv, PyObject *fromlistv)
{
    fj_Tracer *tx = fr->tx;
    PyObject *level = VAR(levelv)->kind == FJ_VAR_CONST ? VAR(levelv)->obj : NULL;
    PyObject *fromlist = VAR(fromlistv)->kind == FJ_VAR_CONST ? VAR(fromlistv)->obj : NULL;
    if (level == NULL || !PyLong_CheckExact(level) || PyLong_AsLong(level) != 0 ||
        !(fromlist == Py_None || PyTuple_CheckExact(fromlist))) {
        PyErr_Clear();
        return fj_unsupported("relative import of %U", name), NULL;
    }
    if (fr->builtins != tx->view.builtins || fr->globals_src != NULL)
        return fj_unsupported("import of %U in a function of another module", name), NULL;
    /* the frame's __import__ is the builtin one (a replacement runs the program's code) */
    PyObject *key = PyUnicode_FromString("__import__");
    PyObject *imp = key ? Py_XNewRef(PyDict_GetItemWithError(fr->builtins, key)) : NULL;
    if (imp == NULL || !PyCFunction_Check(imp) || ((PyCFunctionObject *)imp)->m_ml->ml_meth != builtin_import_meth()) {
        Py_XDECREF(key);
        Py_XDECREF(imp);
        if (PyErr_Occurred())
            return NULL;
        return fj_unsupported("import of %U with a replaced __import__", name), NULL;
    }
    fj_Source *isrc = fj_source_builtin(key);
    fj_Var *iv = isrc ? fj_trace_input(tx, isrc, imp) : NULL;
    Py_XDECREF(isrc);
    Py_DECREF(key);
    Py_DECREF(imp);
    if (iv == NULL)
        return NULL;
    Py_DECREF(iv);
    /* every prefix of the dotted name imported: its sys.modules entry */
    PyObject *modules = PyImport_GetModuleDict(), *top = NULL, *last = NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(name), at = 0;
    while (at <= n) {
        Py_ssize_t dot = PyUnicode_FindChar(name, '.', at, n, 1);
        Py_ssize_t end = dot < 0 ? n : dot;
        PyObject *prefix = PyUnicode_Substring(name, 0, end);
        PyObject *m = prefix ? Py_XNewRef(PyDict_GetItemWithError(modules, prefix)) : NULL;
        if (m == NULL || !PyModule_Check(m)) {
            Py_XDECREF(m);
            Py_XDECREF(top);
            Py_XDECREF(last);
            if (prefix != NULL && !PyErr_Occurred())
                fj_unsupported("import of %U, which is not imported yet (importing runs its code)", prefix);
            Py_XDECREF(prefix);
            return NULL;
        }
        fj_Source *src = fj_source_module(prefix);
        fj_Var *v = src ? fj_trace_input(tx, src, m) : NULL;
        Py_XDECREF(src);
        Py_DECREF(prefix);
        Py_DECREF(m);
        if (v == NULL) {
            Py_XDECREF(top);
            Py_XDECREF(last);
            return NULL;
        }
        if (top == NULL)
            top = Py_NewRef((PyObject *)v);
        Py_XSETREF(last, (PyObject *)v);
        at = end + 1;
    }
    if (fromlist == Py_None || PyTuple_GET_SIZE(fromlist) == 0) {
        Py_XDECREF(last);
        return top;
    }
    /* from name import x: x already in the module's namespace */
    PyObject *mod = VAR(last)->obj, *d = PyModule_GetDict(mod);
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(fromlist); k++) {
        PyObject *x = PyTuple_GET_ITEM(fromlist, k);
        int has = PyUnicode_Check(x) && d != NULL ? PyDict_Contains(d, x) : 0;
        if (has <= 0 || PyUnicode_CompareWithASCIIString(x, "*") == 0) {
            Py_DECREF(top);
            Py_DECREF(last);
            if (has < 0)
                return NULL;
            return fj_unsupported("from %U import %R: not in the module yet (it would import a submodule)", name, x),
                   NULL;
        }
    }
    Py_DECREF(top);
    return last;
}

static PyObject *load_global(fj_TFrame *fr, PyObject *name)
{
    fj_Tracer *tx = fr->tx;
    if (fr->globals == tx->view.globals && tx->global_overlay != NULL) {
        /* a global the trace itself stored: its new value */
        PyObject *stored = PyDict_GetItemWithError(tx->global_overlay, name);
        if (stored != NULL && VAR(stored)->kind == FJ_VAR_NULL) {
            fj_unsupported("name '%U' deleted by the trace", name);
            return NULL;
        }
        if (stored != NULL)
            return Py_NewRef(stored);
        if (PyErr_Occurred())
            return NULL;
    }
    /* strong: making the source and the guards allocates, and a collection's
       gc.callbacks may rebind the global meanwhile (see fj_trace_input) */
    PyObject *val = Py_XNewRef(PyDict_GetItemWithError(fr->globals, name));
    fj_Source *src = NULL;
    if (val != NULL) {
        if (fr->globals_src == NULL)
            src = fj_source_global(name);
        else
            src = fj_source_item(fr->globals_src, name);
    }
    else {
        if (PyErr_Occurred())
            return NULL;
        val = Py_XNewRef(PyDict_GetItemWithError(fr->builtins, name));
        if (val == NULL) {
            if (!PyErr_Occurred())
                fj_unsupported("name '%U' is not defined", name);
            return NULL;
        }
        /* The global must stay absent for the builtin to be what is loaded. */
        if (fr->globals_src == NULL) {
            if (fj_guard_add_global_absent(tx->guards, name) == 0)
                src = fj_source_builtin(name);
        }
        else {
            /* the name must stay absent from that module's globals */
            PyObject *gmgr = fj_guard_manager(tx->guards, fr->globals_src);
            if (gmgr != NULL && fj_guard_add_key_absent(gmgr, name) == 0)
                src = fj_source_builtin(name);
        }
    }
    if (src == NULL) {
        Py_DECREF(val);
        return NULL;
    }
    PyObject *v = (PyObject *)fj_trace_input(tx, src, val);
    Py_DECREF(src);
    Py_DECREF(val);
    return v;
}

/* --------------------------------------------------------- containers */

static PyObject *build_seq(fj_TFrame *fr, fj_VarKind kind, int n)
{
    PyObject *items = PyList_New(n);
    if (items == NULL)
        return NULL;
    for (int i = n - 1; i >= 0; i--)
        PyList_SET_ITEM(items, i, POP());
    return (PyObject *)fj_var_take(kind, items);
}

/* The items of a sequence-like Var as a new list of Vars, or NULL with Unsupported. */
static PyObject *var_items(fj_TFrame *fr, PyObject *v);

/* MAP_ADD: dv[k] = v for the DICT Var 'dv' (the container can be an input:
   a resume function's saved stack), 'k' a plain constant.  0 or -1. */
static int map_add(fj_TFrame *fr, fj_Var *dv, PyObject *k, PyObject *v)
{
    PyObject *key = fj_var_as_const(k);
    return key != NULL && fj_is_plain_constant(key) && dv->kind == FJ_VAR_DICT &&
                   fj_trace_note_mutation(fr->tx, dv) == 0
               ? PyDict_SetItem(dv->items, key, v)
               : fj_unsupported("dict comprehension with a non-constant key");
}

/* DICT_UPDATE / DICT_MERGE: the DICT Var 'dv' updated from 'src', a DICT
   Var or a constant dict.  0 or -1. */
static int dict_update(fj_TFrame *fr, fj_Var *dv, PyObject *src)
{
    if (dv->kind == FJ_VAR_DICT && fj_trace_note_mutation(fr->tx, dv) < 0)
        return -1;
    if (dv->kind == FJ_VAR_DICT && VAR(src)->kind == FJ_VAR_DICT)
        return PyDict_Update(dv->items, VAR(src)->items);
    PyObject *d = fj_var_as_const(src), *key, *val;
    if (dv->kind != FJ_VAR_DICT || d == NULL || !PyDict_CheckExact(d))
        return fj_unsupported("dict update from %R", src);
    Py_ssize_t pos = 0;
    int ok = 0;
    while (ok == 0 && PyDict_Next(d, &pos, &key, &val)) {
        fj_Var *cv = fj_var_const(val);
        ok = cv ? PyDict_SetItem(dv->items, key, (PyObject *)cv) : -1;
        Py_XDECREF(cv);
    }
    return ok;
}

/* LIST_APPEND (the item 'src') / LIST_EXTEND ('extend': the items of the
   Var 'src') on the list Var 'lv'.  0 or -1. */
static int list_add(fj_TFrame *fr, fj_Var *lv, PyObject *src, int extend)
{
    if (fj_trace_note_mutation(fr->tx, lv) < 0)
        return -1;
    if (!extend)
        return PyList_Append(lv->items, src);
    PyObject *items = var_items(fr, src);
    int ok = items ? PyList_SetSlice(lv->items, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, items) : -1;
    Py_XDECREF(items);
    return ok;
}

PyObject *fj_trace_const_items(PyObject *obj)
{
    PyObject *seq = PySequence_List(obj);
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        fj_Var *iv = fj_var_const(PyList_GET_ITEM(seq, i));
        if (iv == NULL) {
            Py_DECREF(seq);
            return NULL;
        }
        PyList_SetItem(seq, i, (PyObject *)iv);
    }
    return seq;
}

static int iter_fill(fj_Var *it);

static PyObject *var_items(fj_TFrame *fr, PyObject *vo)
{
    fj_Var *v = (fj_Var *)vo;
    switch (v->kind) {
    case FJ_VAR_TUPLE:
    case FJ_VAR_LIST:
        return PyList_GetSlice(v->items, 0, PyList_GET_SIZE(v->items));
    case FJ_VAR_DICT: {
        PyObject *keys = PyDict_Keys(v->items);
        if (keys == NULL)
            return NULL;
        PyObject *r = fj_trace_const_items(keys);
        Py_DECREF(keys);
        return r;
    }
    case FJ_VAR_CONST:
        if (PyTuple_CheckExact(v->obj) || PyList_CheckExact(v->obj) ||
            (PyTuple_Check(v->obj) && fj_torch_is_value(v->obj)) ||
            PyUnicode_CheckExact(v->obj) || PyRange_Check(v->obj) || PyBytes_CheckExact(v->obj) ||
            PyFrozenSet_CheckExact(v->obj))
            return fj_trace_const_items(v->obj);
        break;
    case FJ_VAR_ITER: {
        if (iter_fill(v) < 0)
            return NULL;
        PyObject *out = PyList_New(0);
        while (out != NULL) {
            PyObject *next = NULL;
            if (fj_trace_iter_step(v) < 0) {
                Py_CLEAR(out);
                break;
            }
            if (v->pos >= PyList_GET_SIZE(v->items))
                break;
            next = PyList_GET_ITEM(v->items, v->pos++);
            if (PyList_Append(out, next) < 0)
                Py_CLEAR(out);
        }
        return out;
    }
    case FJ_VAR_OBJ:
        if (fj_torch_module_container(v->obj)) {
            PyObject *mods = fj_trace_module_children(fr->tx, vo);
            if (mods == NULL)
                return NULL;
            PyObject *out = PyDict_Values(VAR(mods)->items);
            Py_DECREF(mods);
            return out;
        }
        break;
    case FJ_VAR_NODE: {
        fj_Node *n = (fj_Node *)v->obj;
        if (n->vkind == FJ_VAL_TENSORS)
            return fj_trace_torch_items(fr->tx, vo);
        if (v->dynamic && fj_trace_pin_sizes(fr->tx, vo, "iteration") < 0)
            return NULL;
        if ((n->vkind == FJ_VAL_ARRAY || n->vkind == FJ_VAL_TENSOR) && n->ndim >= 1) {
            PyObject *out = PyList_New(n->shape[0]);
            for (npy_intp i = 0; out && i < n->shape[0]; i++) {
                PyObject *key = PyLong_FromSsize_t(i);
                fj_Var *kv = key ? fj_var_const(key) : NULL;
                Py_XDECREF(key);
                PyObject *item = kv ? fj_trace_getitem(fr, vo, (PyObject *)kv) : NULL;
                Py_XDECREF(kv);
                if (item == NULL)
                    Py_CLEAR(out);
                else
                    PyList_SET_ITEM(out, i, item);
            }
            return out;
        }
        fj_unsupported("iteration over a 0-d array or NumPy scalar");
        return NULL;
    }
    default:
        break;
    }
    fj_unsupported("iteration over %R", vo);
    return NULL;
}

/* Exposed to trace_call.c through a tiny wrapper. */
PyObject *fj_trace_var_items(fj_TFrame *fr, PyObject *v);
PyObject *fj_trace_var_items(fj_TFrame *fr, PyObject *v)
{
    return var_items(fr, v);
}

static PyObject *make_iter(fj_TFrame *fr, PyObject *vo);

PyObject *fj_trace_make_iter(fj_TFrame *fr, PyObject *vo)
{
    return make_iter(fr, vo);
}

static int iter_fill(fj_Var *it);

int fj_trace_iter_list(fj_Var *it)
{
    return iter_fill(it);
}

int fj_trace_iter_step(fj_Var *it)
{
    if (it->extra == NULL)
        return 0;
    Py_ssize_t n = PyList_GET_SIZE(it->items);
    Py_ssize_t i = it->pos < n ? it->pos : n;
    PyObject *feed = PyList_GET_ITEM(it->extra, i);
    if (feed == Py_None)
        return fj_unsupported("a zip() advanced again after it was exhausted");
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(feed); k++) {
        PyObject *step = PyTuple_GET_ITEM(feed, k);
        fj_Var *arg = (fj_Var *)PyTuple_GET_ITEM(step, 0);
        Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(step, 1));
        if (arg->pos != at || at >= PyList_GET_SIZE(arg->items) ||
            PyList_GET_ITEM(arg->items, at) != PyTuple_GET_ITEM(step, 2))
            return fj_unsupported("an iterator given to zip() was used elsewhere meanwhile");
        if (fj_trace_iter_step(arg) < 0)
            return -1;
        arg->pos++;
    }
    if (i == n) /* the end: CPython's zip would take from the iterators again */
        return PyList_SetItem(it->extra, i, Py_NewRef(Py_None));
    return 0;
}

/* A lazy range iterator (obj: the range, items: empty) made a plain one:
   its items from 'pos' on listed.  0 or -1. */
static int iter_fill(fj_Var *it)
{
    if (it->obj == NULL || !PyRange_Check(it->obj))
        return 0;
    if (it->extra2 != NULL) {
        /* np.ndindex / np.ndenumerate used otherwise than by a for loop: their items,
           as constants (an ndenumerate's values are read now: no store can come
           between, as list() or unpacking takes them all at once) */
        Py_ssize_t n = PyObject_Length(it->obj);
        PyObject *all = n >= 0 ? PyList_New(0) : NULL;
        for (Py_ssize_t k = it->pos; all != NULL && k < n; k++) {
            PyObject *kv = PyLong_FromSsize_t(k), *kvar = kv ? (PyObject *)fj_var_take(FJ_VAR_CONST, kv) : NULL;
            PyObject *item = kvar ? fj_trace_nd_item(NULL, it, kvar) : NULL;
            Py_XDECREF(kvar);
            if (item == NULL || PyList_Append(all, item) < 0)
                Py_CLEAR(all);
            Py_XDECREF(item);
        }
        if (all == NULL)
            return -1;
        Py_SETREF(it->items, all);
        Py_CLEAR(it->obj);
        Py_CLEAR(it->extra2);
        it->pos = 0;
        return 0;
    }
    PyObject *all = fj_trace_const_items(it->obj);
    if (all == NULL)
        return -1;
    Py_SETREF(it->items, all);
    Py_CLEAR(it->obj);
    return 0;
}

/*
** np.ndindex(*shape) and np.ndenumerate(a): an ITER Var over range(size) (so a
** for loop over it is captured as a loop over the flat index, trace_loops.c,
** or unrolled) whose extra2 is (shape, a's Var or None).  Its item for flat
** index 'kv' (a Var: a constant, or the loop's induction placeholder): the
** index tuple in C order (divisions and remainders of the flat index), and
** for ndenumerate the tuple (index, a[index]) read then.  'fr' NULL: only
** constants (iter_fill; an ndenumerate's value then is a constant too only
** when a is one, else Unsupported).  New reference, or NULL.
*/
PyObject *fj_trace_nd_item(fj_TFrame *fr, fj_Var *it, PyObject *kv)
{
    PyObject *shape = PyTuple_GET_ITEM(it->extra2, 0), *arr = PyTuple_GET_ITEM(it->extra2, 1);
    Py_ssize_t nd = PyTuple_GET_SIZE(shape);
    PyObject *items = PyList_New(nd), *idx = NULL, *out = NULL;
    int cst = VAR(kv)->kind == FJ_VAR_CONST;
    Py_ssize_t flat = cst ? PyLong_AsSsize_t(VAR(kv)->obj) : 0, stride = 1;
    if (items == NULL || (cst && flat == -1 && PyErr_Occurred()))
        goto done;
    for (Py_ssize_t d = nd - 1; d >= 0; d--) {
        Py_ssize_t sd = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
        PyObject *v;
        if (cst) {
            PyObject *c = PyLong_FromSsize_t((flat / stride) % sd);
            v = c ? (PyObject *)fj_var_take(FJ_VAR_CONST, c) : NULL;
        }
        else {
            /* (k // stride) % sd; the first index k // stride (k < size) */
            PyObject *st = PyLong_FromSsize_t(stride), *sz = st ? PyLong_FromSsize_t(sd) : NULL;
            PyObject *stv = sz ? (PyObject *)fj_var_take(FJ_VAR_CONST, st) : NULL;
            PyObject *szv = stv ? (PyObject *)fj_var_take(FJ_VAR_CONST, sz) : NULL;
            if (stv == NULL)
                Py_XDECREF(st);
            if (szv == NULL)
                Py_XDECREF(sz);
            PyObject *q = szv == NULL ? NULL : stride == 1 ? Py_NewRef(kv) : fj_trace_binop(fr, NB_FLOOR_DIVIDE, kv, stv);
            v = q == NULL || d == 0 ? q : fj_trace_binop(fr, NB_REMAINDER, q, szv);
            if (d != 0)
                Py_XDECREF(q);
            Py_XDECREF(stv);
            Py_XDECREF(szv);
        }
        if (v == NULL)
            goto done;
        PyList_SET_ITEM(items, d, v);
        stride *= sd;
    }
    idx = (PyObject *)fj_var_new(FJ_VAR_TUPLE, NULL, items);
    if (idx == NULL || arr == Py_None) {
        out = Py_XNewRef(idx);
        goto done;
    }
    if (cst) {
        /* a constant tuple Var of constants: the key as one constant */
        PyObject *key = PyTuple_New(nd);
        for (Py_ssize_t d = 0; key != NULL && d < nd; d++)
            PyTuple_SET_ITEM(key, d, Py_NewRef(VAR(PyList_GET_ITEM(items, d))->obj));
        if (key == NULL)
            goto done;
        Py_SETREF(idx, (PyObject *)fj_var_take(FJ_VAR_CONST, key));
        if (idx == NULL)
            goto done;
    }
    if (fr == NULL) {
        fj_unsupported("np.ndenumerate's items taken all at once (list(), unpacking)");
        goto done;
    }
    PyObject *val = fj_trace_getitem(fr, arr, idx);
    if (val == NULL)
        goto done;
    PyObject *pair = PyList_New(2);
    if (pair != NULL) {
        PyList_SET_ITEM(pair, 0, Py_NewRef(idx));
        PyList_SET_ITEM(pair, 1, val);
        out = (PyObject *)fj_var_new(FJ_VAR_TUPLE, NULL, pair);
        Py_DECREF(pair);
    }
    else
        Py_DECREF(val);
done:
    Py_XDECREF(items);
    Py_XDECREF(idx);
    return out;
}

static PyObject *make_iter(fj_TFrame *fr, PyObject *vo)
{
    fj_Var *v = (fj_Var *)vo;
    if (v->kind == FJ_VAR_ITER && v->extra2 != NULL && v->pos == 0)
        return Py_NewRef(vo); /* np.ndindex / ndenumerate: iter() of it is it, still lazy */
    if (v->kind == FJ_VAR_ITER)
        return iter_fill(v) < 0 ? NULL : Py_NewRef(vo);
    if (v->kind == FJ_VAR_RANGE)
        return Py_NewRef(vo); /* its own iterator: FOR_ITER captures the loop */
    if (v->kind == FJ_VAR_CONST && PyRange_Check(v->obj)) {
        /* lazily: a range of a million items is one Var, not a million */
        PyObject *empty = PyList_New(0);
        fj_Var *it = empty ? fj_var_new(FJ_VAR_ITER, v->obj, empty) : NULL;
        Py_XDECREF(empty);
        return (PyObject *)it;
    }
    if (v->kind == FJ_VAR_LIST) {
        /* A list iterator sees appends made while iterating: share the item list. */
        fj_Var *it = fj_var_new(FJ_VAR_ITER, NULL, v->items);
        return (PyObject *)it;
    }
    return (PyObject *)fj_var_take(FJ_VAR_ITER, var_items(fr, vo));
}

/*
** True when the slice BUILD_SLICE at instruction i builds is only a
** subscript's key: what follows is loads, operators on the values above it,
** other BUILD_SLICEs and at most one BUILD_TUPLE holding it, then the
** BINARY_SUBSCR or STORE_SUBSCR that takes it (x[:n, 0], x[..., n:],
** x[n:-m, :n + 1], x[:, :n] = v), and no graph break stops the trace in
** between (tx->stop_at: the trace that stops there keeps a plain slice).  So
** the slice (holding nodes: fj_trace_node_slice) never leaves the trace.
*/
static int slice_feeds_subscript(const fj_TFrame *fr, Py_ssize_t i)
{
    int p = 0, in_tuple = 0; /* p: the slot of the slice (or its tuple), 0 the top */
    for (Py_ssize_t j = i + 1; j < fr->il.n && j <= i + 32; j++) {
        const fj_Pseudo *ps = &fr->il.v[j].p;
        if (fr->parent == NULL && j == fr->tx->stop_at)
            return 0; /* a graph break there: the slice is rebuilt on the stack */
        switch (ps->op) {
        case FJ_PI_LOAD_CONST:
        case FJ_PI_LOAD_FAST:
            p++;
            break;
        case FJ_PI_LOAD_FAST_LOAD_FAST:
            p += 2;
            break;
        case FJ_PI_LOAD_DEREF:
            p++;
            break;
        case FJ_PI_UNARY_NEGATIVE:
        case FJ_PI_UNARY_POSITIVE:
        case FJ_PI_UNARY_INVERT:
            if (p < 1)
                return 0;
            break;
        case FJ_PI_BINARY_OP: /* x[n:-m, :n + 1] */
            if (p < 2)
                return 0;
            p--;
            break;
        case FJ_PI_BUILD_SLICE:
            if (p < ps->a)
                return 0;
            p -= ps->a - 1;
            break;
        case FJ_PI_BUILD_TUPLE:
            if (p >= ps->a)
                p -= ps->a - 1;
            else if (in_tuple++)
                return 0;
            else
                p = 0;
            break;
        case FJ_PI_BINARY_SUBSCR:
        case FJ_PI_STORE_SUBSCR:
            return p == 0;
        default:
            return 0;
        }
    }
    return 0;
}

/* A CONST Var holding slice(start, stop, step) (step NULL: None) from Vars
   that are constants; NULL with Unsupported otherwise.  New reference. */
static fj_Var *make_slice(PyObject *start, PyObject *stop, PyObject *step)
{
    PyObject *c1 = fj_var_as_const(start), *c2 = fj_var_as_const(stop),
             *c3 = step ? fj_var_as_const(step) : Py_None;
    if (c1 == NULL || c2 == NULL || c3 == NULL) {
        fj_unsupported("slice with bounds that are not constants");
        return NULL;
    }
    return fj_var_take(FJ_VAR_CONST, PySlice_New(c1, c2, c3));
}

/* ---------------------------------------------------------- functions */

/* MAKE_FUNCTION: builds a FUNC Var from the code and the flagged parts. */
static PyObject *make_function(fj_TFrame *fr, int flags)
{
    PyObject *codev = POP();
    PyObject *closure = NULL, *annotations = NULL, *kwdefaults = NULL, *defaults = NULL;
    if (flags & 0x08)
        closure = POP();
    if (flags & 0x04)
        annotations = POP();
    if (flags & 0x02)
        kwdefaults = POP();
    if (flags & 0x01)
        defaults = POP();
    fj_Var *f = NULL;
    PyObject *code = fj_var_as_const(codev);
    if (code == NULL || !PyCode_Check(code)) {
        fj_unsupported("MAKE_FUNCTION with a code object that is not a constant");
        goto done;
    }
    if (annotations != NULL) {
        /* not kept by the Var: a function rebuilt at a break would lose them
           (functools.singledispatch register, update_wrapper) */
        fj_unsupported("a function with annotations");
        goto done;
    }
    f = fj_var_new(FJ_VAR_FUNC, code, closure);
    if (f == NULL)
        goto done;
    f->extra = Py_XNewRef(defaults);
    f->extra2 = Py_XNewRef(kwdefaults);
done:
    Py_DECREF(codev);
    Py_XDECREF(closure);
    Py_XDECREF(annotations);
    Py_XDECREF(kwdefaults);
    Py_XDECREF(defaults);
    return (PyObject *)f;
}

/*
** Binds a call's arguments to the parameters of 'co' into 'locals'.
** defaults: a Var (TUPLE) or a tuple of Python objects or NULL; same for
** kwdefaults (DICT Var or dict).  Returns 0, or -1 with Unsupported when the
** call would not bind (CPython then raises the TypeError itself).
*/
static PyObject *default_var(PyObject *d, Py_ssize_t i) /* new ref */
{
    if (fj_Var_Check(d)) {
        fj_Var *dv = (fj_Var *)d;
        if (dv->kind == FJ_VAR_TUPLE)
            return Py_NewRef(PyList_GET_ITEM(dv->items, i));
        PyObject *t = fj_var_as_const(d);
        return t ? (PyObject *)fj_var_const(PyTuple_GET_ITEM(t, i)) : NULL;
    }
    return (PyObject *)fj_var_const(PyTuple_GET_ITEM(d, i));
}

static Py_ssize_t defaults_len(PyObject *d)
{
    if (d == NULL)
        return 0;
    if (fj_Var_Check(d)) {
        fj_Var *dv = (fj_Var *)d;
        if (dv->kind == FJ_VAR_TUPLE)
            return PyList_GET_SIZE(dv->items);
        PyObject *t = fj_var_as_const(d);
        return t && PyTuple_Check(t) ? PyTuple_GET_SIZE(t) : 0;
    }
    return PyTuple_GET_SIZE(d);
}

static PyObject *kwdefault_var(PyObject *kd, PyObject *name) /* new ref or NULL (no error) */
{
    if (kd == NULL)
        return NULL;
    if (fj_Var_Check(kd)) {
        fj_Var *kv = (fj_Var *)kd;
        if (kv->kind == FJ_VAR_DICT)
            return Py_XNewRef(PyDict_GetItemWithError(kv->items, name));
        PyObject *d = fj_var_as_const(kd);
        PyObject *v = d && PyDict_Check(d) ? PyDict_GetItemWithError(d, name) : NULL;
        return v ? (PyObject *)fj_var_const(v) : NULL;
    }
    PyObject *v = PyDict_GetItemWithError(kd, name);
    return v ? (PyObject *)fj_var_const(v) : NULL;
}

static int bind_args(fj_TFrame *fr, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                     PyObject *defaults, PyObject *kwdefaults)
{
    PyCodeObject *co = fr->code;
    int argc = co->co_argcount, kwc = co->co_kwonlyargcount, posonly = co->co_posonlyargcount;
    int has_varargs = !!(co->co_flags & CO_VARARGS), has_varkw = !!(co->co_flags & CO_VARKEYWORDS);
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    Py_ssize_t npos = nargs - nkw;
    PyObject *varkw = NULL;
    if (npos > argc && !has_varargs)
        return fj_unsupported("%U() takes %d positional arguments but %zd were given",
                              co->co_name, argc, npos);
    for (Py_ssize_t i = 0; i < npos && i < argc; i++)
        fr->locals[i] = Py_NewRef(args[i]);
    if (has_varargs) {
        Py_ssize_t nextra = npos > argc ? npos - argc : 0;
        PyObject *items = PyList_New(nextra);
        if (items == NULL)
            return -1;
        for (Py_ssize_t i = 0; i < nextra; i++)
            PyList_SET_ITEM(items, i, Py_NewRef(args[argc + i]));
        fj_Var *t = fj_var_new(FJ_VAR_TUPLE, NULL, items);
        Py_DECREF(items);
        if (t == NULL)
            return -1;
        fr->locals[argc + kwc] = (PyObject *)t;
    }
    if (has_varkw) {
        PyObject *d = PyDict_New();
        varkw = d ? (PyObject *)fj_var_new(FJ_VAR_DICT, NULL, d) : NULL;
        Py_XDECREF(d);
        if (varkw == NULL)
            return -1;
        fr->locals[argc + kwc + has_varargs] = varkw;
    }
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k);
        int found = -1;
        for (int i = posonly; i < argc + kwc; i++) {
            if (PyUnicode_Compare(name, local_name(fr, i)) == 0) {
                found = i;
                break;
            }
        }
        if (found < 0) {
            if (varkw == NULL)
                return fj_unsupported("%U() got an unexpected keyword argument '%U'",
                                      co->co_name, name);
            if (PyDict_SetItem(((fj_Var *)varkw)->items, name, args[npos + k]) < 0)
                return -1;
            continue;
        }
        if (fr->locals[found] != NULL)
            return fj_unsupported("%U() got multiple values for argument '%U'", co->co_name,
                                  name);
        fr->locals[found] = Py_NewRef(args[npos + k]);
    }
    Py_ssize_t ndef = defaults_len(defaults);
    for (int i = 0; i < argc; i++) {
        if (fr->locals[i] != NULL)
            continue;
        Py_ssize_t di = i - (argc - ndef);
        if (di < 0)
            return fj_unsupported("%U() missing required argument '%U'", co->co_name,
                                  local_name(fr, i));
        if ((fr->locals[i] = default_var(defaults, di)) == NULL)
            return -1;
    }
    for (int i = argc; i < argc + kwc; i++) {
        if (fr->locals[i] != NULL)
            continue;
        fr->locals[i] = kwdefault_var(kwdefaults, local_name(fr, i));
        if (fr->locals[i] == NULL) {
            if (PyErr_Occurred())
                return -1;
            return fj_unsupported("%U() missing required keyword-only argument '%U'",
                                  co->co_name, local_name(fr, i));
        }
    }
    return 0;
}

/* ------------------------------------------------------------- the loop */

static int run_frame(fj_TFrame *fr);

int fj_trace_self_args(PyObject **stack, PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    if (n + 1 > FJ_MAX_METHOD_ARGS)
        return fj_unsupported("too many arguments");
    stack[0] = self;
    for (Py_ssize_t i = 0; i < n; i++)
        stack[i + 1] = args[i];
    return 0;
}

PyObject *fj_trace_inline(fj_TFrame *parent, PyObject *fn, PyObject *const *args,
                          Py_ssize_t nargs, PyObject *kwnames)
{
    fj_Tracer *tx = parent->tx;
    PyCodeObject *co;
    PyObject *defaults = NULL, *kwdefaults = NULL, *globals = parent->globals;
    fj_Var *fv = fj_Var_Check(fn) ? (fj_Var *)fn : NULL;
    PyObject *func = NULL;
    if (fv != NULL && fv->kind == FJ_VAR_FUNC) {
        co = (PyCodeObject *)fv->obj;
        defaults = fv->extra;
        kwdefaults = fv->extra2;
    }
    else {
        func = fv ? fv->obj : fn;
        if (!PyFunction_Check(func)) {
            PyObject *r = fj_trace_safe_repr(fn);
            if (r != NULL) {
                fj_unsupported("call of %U", r);
                Py_DECREF(r);
            }
            return NULL;
        }
        co = (PyCodeObject *)PyFunction_GET_CODE(func);
        defaults = PyFunction_GET_DEFAULTS(func);
        kwdefaults = PyFunction_GET_KW_DEFAULTS(func);
        globals = PyFunction_GET_GLOBALS(func);
    }
    if (co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)) {
        fj_unsupported("call of generator function %U", co->co_name);
        return NULL;
    }
    if (parent->depth + 1 > tx->inline_depth_limit) {
        fj_unsupported("inlining %U exceeds the depth limit (%d)", co->co_name,
                       tx->inline_depth_limit);
        return NULL;
    }
    int reentry_ok = tx->reentry_ok;
    tx->reentry_ok = 0;
    for (fj_TFrame *p = parent; p != NULL && !reentry_ok; p = p->parent) {
        if (p->code == co) {
            fj_unsupported("recursive call of %U", co->co_name);
            return NULL;
        }
    }
    fj_TFrame fr;
    PyObject *result = NULL;
    fj_Source *own_globals_src = NULL; /* strong: the function's module's G, when another */
    if (frame_setup(&fr, tx, co) < 0)
        goto done;
    fr.parent = parent;
    fr.depth = parent->depth + 1;
    fr.builtins = parent->builtins;
    fr.globals = globals;
    fr.globals_src = parent->globals_src;
    fr.closure = fv && fv->kind == FJ_VAR_FUNC ? fv->items : NULL;
    if (func != NULL) {
        fr.func = func;
        fr.func_src = fv ? fv->source : NULL;
        if (globals == tx->view.globals)
            fr.globals_src = NULL; /* back in the top frame's module: G */
        else if (globals != parent->globals) {
            /* names resolve in the function's module: G['f'].__globals__['name'] */
            if (fr.func_src == NULL) {
                fj_unsupported("call of %U from another module with no source", co->co_name);
                goto done;
            }
            if (((PyFunctionObject *)func)->func_builtins != parent->builtins) {
                fj_unsupported("call of %U, whose module has builtins of its own", co->co_name);
                goto done;
            }
            PyObject *gname = PyUnicode_FromString("__globals__");
            own_globals_src = gname ? fj_source_attr(fr.func_src, gname) : NULL;
            Py_XDECREF(gname);
            if (own_globals_src == NULL)
                goto done;
            fr.globals_src = own_globals_src;
        }
        if (PyFunction_GET_CLOSURE(func) != NULL && fr.func_src == NULL) {
            fj_unsupported("call of closure %U with no source", co->co_name);
            goto done;
        }
    }
    if (bind_args(&fr, args, nargs, kwnames, defaults, kwdefaults) < 0)
        goto done;
    if (run_frame(&fr) < 0)
        goto done;
    result = Py_NewRef(fr.retval);
done:
    frame_free(&fr);
    Py_XDECREF(own_globals_src);
    return result;
}

/*
** The top frame's CELL Var for the real cell object 'c' when 'c' is one of
** the top frame's free variables (borrowed), else NULL.
*/
static fj_Var *top_frame_cell(fj_Tracer *tx, PyObject *c)
{
    fj_TFrame *top = tx->top;
    PyObject *cl = tx->view.closure;
    if (top == NULL || cl == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(cl);
    for (Py_ssize_t k = 0; k < n; k++) {
        if (PyTuple_GET_ITEM(cl, k) != c)
            continue;
        PyObject *v = top->locals[top->nlocals - n + k];
        return v != NULL && ((fj_Var *)v)->kind == FJ_VAR_CELL ? (fj_Var *)v : NULL;
    }
    return NULL;
}

/* Copies a real inlined function's closure cells into CELL Vars. */
static int copy_free_vars(fj_TFrame *fr, int n)
{
    int first = fr->nlocals - n;
    for (int j = 0; j < n; j++) {
        fj_Var *cell = NULL;
        if (fr->closure != NULL) {
            fj_Var *cl = (fj_Var *)fr->closure;
            PyObject *items = cl->kind == FJ_VAR_TUPLE ? cl->items : NULL;
            if (items == NULL || j >= PyList_GET_SIZE(items))
                return fj_unsupported("closure of %U is not known", fr->code->co_name);
            cell = (fj_Var *)Py_NewRef(PyList_GET_ITEM(items, j));
        }
        else if (fr->parent == NULL) {
            /* top frame: contents come from the frame's closure, lazily */
            cell = new_cell(NULL);
            if (cell == NULL)
                return -1;
            cell->source = fj_source_closure(j, local_name(fr, first + j));
            if (cell->source == NULL) {
                Py_DECREF(cell);
                return -1;
            }
        }
        else if ((cell = top_frame_cell(fr->tx, PyTuple_GET_ITEM(PyFunction_GET_CLOSURE(fr->func),
                                                                 j))) != NULL) {
            /* the same cell object as a free variable of the top frame: share
               its symbolic cell, which the trace may have set */
            Py_INCREF(cell);
        }
        else {
            /* a real function: G['f'].__closure__[j].cell_contents */
            PyObject *cl = PyFunction_GET_CLOSURE(fr->func);
            PyObject *contents = PyCell_GET(PyTuple_GET_ITEM(cl, j));
            if (contents == NULL)
                return fj_unsupported("empty closure cell in %U", fr->code->co_name);
            PyObject *s1 = NULL, *s2 = NULL, *s3 = NULL;
            PyObject *n_closure = PyUnicode_FromString("__closure__");
            PyObject *n_contents = PyUnicode_FromString("cell_contents");
            if (n_closure && n_contents && (s1 = (PyObject *)fj_source_attr(fr->func_src, n_closure)) &&
                (s2 = (PyObject *)fj_source_index((fj_Source *)s1, j)) &&
                (s3 = (PyObject *)fj_source_attr((fj_Source *)s2, n_contents))) {
                fj_Var *v = fj_trace_input(fr->tx, (fj_Source *)s3, contents);
                if (v != NULL) {
                    cell = new_cell((PyObject *)v);
                    Py_DECREF(v);
                }
            }
            Py_XDECREF(n_closure);
            Py_XDECREF(n_contents);
            Py_XDECREF(s1);
            Py_XDECREF(s2);
            Py_XDECREF(s3);
            if (cell == NULL)
                return -1;
        }
        store_local(fr, first + j, (PyObject *)cell);
    }
    return 0;
}

static void log_instruction(fj_TFrame *fr, fj_Instr *in)
{
    fj_Tracer *tx = fr->tx;
    PyObject *stack = PyList_New(0);
    for (int i = 0; stack && i < fr->sp; i++) {
        if (PyList_Append(stack, fr->stack[i]) < 0)
            Py_CLEAR(stack);
    }
    PyObject *text = stack ? PyUnicode_FromFormat("TRACE %s %d [depth %d] %R", fj_trace_opname(in->op),
                                                  in->arg, fr->depth, stack)
                           : NULL;
    if (text != NULL) {
        PyObject *r = PyObject_CallFunction(tx->log_fn, "sOO", "trace_bytecode", tx->compile_id,
                                            text);
        Py_XDECREF(r);
    }
    Py_XDECREF(text);
    Py_XDECREF(stack);
    PyErr_Clear();
}

/* Pops a, pushes 'call' (an expression using a_; a new reference or NULL). */
#define POP1_APPLY(call)                                                                           \
    do {                                                                                           \
        PyObject *a_ = POP();                                                                      \
        PyObject *r_ = (call);                                                                     \
        Py_DECREF(a_);                                                                             \
        PUSH(r_);                                                                                  \
    } while (0)

/* Pops b and a, pushes 'call' (an expression using a_ and b_; a new reference or NULL). */
#define POP2_APPLY(call)                                                                           \
    do {                                                                                           \
        PyObject *b_ = POP(), *a_ = POP();                                                         \
        PyObject *r_ = (call);                                                                     \
        Py_DECREF(a_);                                                                             \
        Py_DECREF(b_);                                                                             \
        PUSH(r_);                                                                                  \
    } while (0)

/* 'v is None' for a Var: 1 or 0, or -1 (Unsupported: an input object
   whose identity is not guarded). */
static int var_is_none(PyObject *v)
{
    PyObject *c = fj_var_as_const(v);
    if (c == Py_None)
        return 1;
    if (c != NULL || VAR(v)->kind != FJ_VAR_OBJ)
        return 0;
    /* an input object is guarded by its type (or identity), which is not NoneType's */
    if (VAR(v)->source != NULL && VAR(v)->obj != Py_None)
        return 0;
    return fj_unsupported("'is None' test on a value whose identity is not known");
}

/* Pops n values (1 to 3; o_[0] the top), runs 'call' (an int expression
   using them: 0, or -1 with an exception), then drops them. */
#define POPN_RUN(n, call)                                                                          \
    do {                                                                                           \
        PyObject *o_[3];                                                                           \
        for (int k_ = 0; k_ < (n); k_++)                                                           \
            o_[k_] = POP();                                                                        \
        int ok_ = (call);                                                                          \
        for (int k_ = 0; k_ < (n); k_++)                                                           \
            Py_DECREF(o_[k_]);                                                                     \
        if (ok_ < 0)                                                                               \
            goto error;                                                                            \
    } while (0)

/* Jump to instruction index 't'. */
#define JUMPTO(t)                                                                                  \
    do {                                                                                           \
        next = (t);                                                                                \
    } while (0)

static int run_frame_at(fj_TFrame *fr, int first);

static int run_frame(fj_TFrame *fr)
{
    return run_frame_at(fr, 0);
}

int fj_trace_run_body(fj_TFrame *fr, int start)
{
    return run_frame_at(fr, start);
}

static int run_instructions(fj_TFrame *fr, int first);

/*
** Runs the frame's instructions from 'start'.  0 when the frame returned,
** 1 when the top frame reached tx->stop_at, 2 when a captured loop's body
** (fr->loop_head >= 0) jumped back to its head; -1 on error.  tx->cur is
** the frame whose instruction runs; an inlined frame (a stack local of
** fj_trace_inline) is no longer it once it returns.
*/
static int run_frame_at(fj_TFrame *fr, int first)
{
    struct fj_TFrame *prev = fr->tx->cur;
    int r = run_instructions(fr, first);
    fr->tx->cur = prev;
    return r;
}

static int run_instructions(fj_TFrame *fr, int first)
{
    fj_Tracer *tx = fr->tx;
    PyCodeObject *co = fr->code;
    int next = first;
    /* a while loop's body starts at its head (a for loop's after its FOR_ITER) */
    int at_head = fr->loop_head >= 0 && first == fr->loop_head;
    while (next < fr->il.n) {
        if (fr->loop_head >= 0) {
            if ((next == fr->loop_head && !at_head) || next == fr->loop_tail) {
                if (fr->loop_wrap != 1)
                    return 2;
                fr->loop_wrap = 2; /* a rotated body's jump back: the part before its test follows */
            }
            at_head = 0;
            if (next < fr->loop_head || next >= fr->loop_end || (next >= fr->loop_hole_lo && next < fr->loop_hole_hi))
                return fj_unsupported("the loop's body leaves it (break)");
        }
        if (fr->parent == NULL)
            fj_graph_set_pos(fr->il.v[next].offset); /* the nodes' source (an inlined call's: the call's) */
        if (fr->and_arm != NULL && fr->and_arm[next] && next != fr->loop_head &&
            !(fr->parent == NULL && next == tx->stop_at)) {
            /* a compound test's loop, captured from its test's start (no part of the
               test traced before the loop node, which runs it) */
            int a = fj_trace_and_arrive(fr, next, &next);
            if (a < 0)
                return -1;
            if (a > 0)
                continue;
        }
        int i = next;
        fj_Instr *in = &fr->il.v[i];
        /* the pseudo-instruction (dialect.h); in->op is the real opcode, for messages */
        int op = in->p.op, arg = in->p.a, argb = in->p.b;
        next = i + 1;
        fr->ip = i;
        tx->cur = fr;
        if (fr->parent == NULL && i == tx->stop_at)
            return fr->loop_ret != NULL ? fj_trace_loop_return_lost(fr) : 1;
        if (--tx->budget < 0) {
            fj_unsupported("trace too long (instruction budget exhausted)");
            goto error;
        }
        if (tx->log_trace)
            log_instruction(fr, in);
        /* under a try or with block: a graph op here could raise at run time,
           which the handler must see (fj_codegen_can_rerun); a break here
           resumes at the handler too (fj_resume_plan) */
        if (in->exc_target >= 0 && op != FJ_PI_NOP &&
            !fj_bc_handler_transparent(&fr->il, in->exc_target))
            tx->protected_seen = 1;
        switch (op) {
        case FJ_PI_NOP:
        case FJ_PI_PRECALL:
            break;
        case FJ_PI_POP_TOP:
            Py_DECREF(POP());
            break;
        case FJ_PI_PUSH_NULL:
            PUSH(Py_NewRef(null_var));
            break;
        case FJ_PI_COPY: {
            PyObject *v = PEEK(arg);
            PUSH(Py_NewRef(v));
            break;
        }
        case FJ_PI_SWAP: {
            PyObject *t = TOP();
            fr->stack[fr->sp - 1] = PEEK(arg);
            fr->stack[fr->sp - arg] = t;
            break;
        }
        case FJ_PI_LOAD_CONST:
            PUSH(fj_var_const(PyTuple_GET_ITEM(co->co_consts, arg)));
            break;
        case FJ_PI_LOAD_FAST:
            PUSH(load_local(fr, arg));
            break;
        case FJ_PI_LOAD_FAST_LOAD_FAST:
            PUSH(load_local(fr, arg));
            PUSH(load_local(fr, argb));
            break;
        case FJ_PI_LOAD_FAST_AND_CLEAR:
            /* an inlined comprehension saves the outer binding (or NULL) */
            if (fr->locals[arg] == NULL && !(fr->lazy_args && arg < fj_code_nargs(co))) {
                PUSH(Py_NewRef(null_var));
            }
            else {
                PUSH(load_local(fr, arg));
                if (drops_finalizable(fr, arg))
                    goto error;
                Py_CLEAR(fr->locals[arg]);
                fr->touched[arg] = 1;
            }
            break;
        case FJ_PI_STORE_FAST:
        case FJ_PI_STORE_FAST_LOAD_FAST:
        case FJ_PI_STORE_FAST_STORE_FAST:
            if (drops_finalizable(fr, arg))
                goto error;
            store_local(fr, arg, POP());
            if (op == FJ_PI_STORE_FAST_LOAD_FAST) {
                PUSH(load_local(fr, argb));
            }
            else if (op == FJ_PI_STORE_FAST_STORE_FAST) {
                if (drops_finalizable(fr, argb))
                    goto error;
                store_local(fr, argb, POP());
            }
            break;
        case FJ_PI_DELETE_FAST:
            if (fr->locals[arg] == NULL) {
                fj_unsupported("local variable '%U' referenced before assignment",
                               local_name(fr, arg));
                goto error;
            }
            if (drops_finalizable(fr, arg))
                goto error;
            Py_CLEAR(fr->locals[arg]);
            fr->touched[arg] = 1;
            break;
        case FJ_PI_MAKE_CELL: {
            PyObject *init = NULL;
            if (fr->locals[arg] != NULL || (fr->lazy_args && arg < fj_code_nargs(co))) {
                if ((init = load_local(fr, arg)) == NULL)
                    goto error;
            }
            fj_Var *cell = new_cell(init);
            Py_XDECREF(init);
            if (cell == NULL)
                goto error;
            store_local(fr, arg, (PyObject *)cell);
            break;
        }
        case FJ_PI_COPY_FREE_VARS:
            if (copy_free_vars(fr, arg) < 0)
                goto error;
            break;
        case FJ_PI_LOAD_CLOSURE: {
            PyObject *c = fr->locals[arg];
            if (c == NULL) {
                fj_unsupported("LOAD_CLOSURE of an empty slot");
                goto error;
            }
            PUSH(Py_NewRef(c));
            break;
        }
        case FJ_PI_LOAD_DEREF: {
            fj_Var *cell = (fj_Var *)fr->locals[arg];
            if (cell == NULL || cell->kind != FJ_VAR_CELL) {
                fj_unsupported("LOAD_DEREF of a non-cell");
                goto error;
            }
            PUSH(cell_get(fr, cell, arg));
            break;
        }
        case FJ_PI_STORE_DEREF: {
            fj_Var *cell = (fj_Var *)fr->locals[arg];
            if (tx->loop != NULL) {
                fj_unsupported("a closure cell changes in the loop's body");
                goto error;
            }
            if (cell == NULL || cell->kind != FJ_VAR_CELL) {
                PyObject *v = POP();
                Py_DECREF(v);
                fj_unsupported("STORE_DEREF of a non-cell");
                goto error;
            }
            if (cell->source != NULL && fr->parent != NULL) {
                Py_DECREF(POP());
                fj_unsupported("assignment to free variable '%U' of the compiled frame",
                               local_name(fr, arg));
                goto error;
            }
            if (cell->source != NULL)
                cell->pos = 1; /* a free cell of the top frame changed: codegen stores it */
            PyObject *v = POP();
            if (PyList_GET_SIZE(cell->items) == 0) {
                int r = PyList_Append(cell->items, v);
                Py_DECREF(v);
                if (r < 0)
                    goto error;
            }
            else {
                PyList_SetItem(cell->items, 0, v);
            }
            break;
        }
        case FJ_PI_LOAD_GLOBAL: {
            PyObject *name = PyTuple_GET_ITEM(co->co_names, arg);
            if (argb && !fj_dialect.null_after)
                PUSH(Py_NewRef(null_var));
            PUSH(load_global(fr, name));
            if (argb && fj_dialect.null_after)
                PUSH(Py_NewRef(null_var));
            break;
        }
        case FJ_PI_STORE_GLOBAL: {
            /* a side effect: recorded, replayed after the graph, seen by later loads */
            if (tx->loop != NULL) {
                fj_unsupported("a global store in the loop's body");
                goto error;
            }
            PyObject *v = POP();
            PyObject *name = PyTuple_GET_ITEM(co->co_names, arg);
            int ok = -1;
            if (fr->globals != tx->view.globals)
                fj_unsupported("global store into another module");
            else if (VAR(v)->kind == FJ_VAR_ITER || VAR(v)->kind == FJ_VAR_METHOD ||
                     VAR(v)->kind == FJ_VAR_CELL || VAR(v)->kind == FJ_VAR_NULL)
                fj_unsupported("global store of %R", v);
            else
                ok = fj_trace_record_store(tx, Py_BuildValue("(sOO)", "global", name, v), NULL,
                                           name, v);
            Py_DECREF(v);
            if (ok < 0)
                goto error;
            break;
        }
        case FJ_PI_STORE_ATTR: /* [value, obj] */
            POPN_RUN(2, fj_trace_setattr(fr, o_[0], PyTuple_GET_ITEM(co->co_names, arg), o_[1]));
            break;
        case FJ_PI_DELETE_GLOBAL: {
            /* del name: replayed after the graph; the name must exist now (read, so guarded) */
            if (tx->loop != NULL) {
                fj_unsupported("a global deletion in the loop's body");
                goto error;
            }
            PyObject *name = PyTuple_GET_ITEM(co->co_names, arg);
            if (fr->globals != tx->view.globals) {
                fj_unsupported("global delete in another module");
                goto error;
            }
            if (PyDict_GetItemWithError(fr->globals, name) == NULL &&
                PyDict_GetItemWithError(tx->global_overlay, name) == NULL) {
                if (!PyErr_Occurred())
                    fj_unsupported("del of global '%U' that is not defined", name);
                goto error;
            }
            PyObject *cur = load_global(fr, name);
            if (cur == NULL)
                goto error;
            Py_DECREF(cur);
            fj_Var *gone = fj_var_new(FJ_VAR_NULL, NULL, NULL), *nv = fj_var_const(Py_None);
            int ok = fj_trace_record_store(
                tx, gone && nv ? Py_BuildValue("(sOO)", "delglobal", name, (PyObject *)nv) : NULL,
                NULL, name, (PyObject *)gone);
            Py_XDECREF(gone);
            Py_XDECREF(nv);
            if (ok < 0)
                goto error;
            break;
        }
        case FJ_PI_DELETE_DEREF:
            fj_unsupported("%s (a side effect outside the frame)", fj_trace_opname(in->op));
            goto error;
        case FJ_PI_LOAD_ATTR:
            POP1_APPLY(fj_trace_getattr(fr, a_, PyTuple_GET_ITEM(co->co_names, arg)));
            break;
        case FJ_PI_IMPORT_NAME: { /* [level, fromlist] -> module */
            PyObject *fromlist = POP(), *level = POP();
            PyObject *m = trace_import(fr, PyTuple_GET_ITEM(co->co_names, arg), level, fromlist);
            Py_DECREF(fromlist);
            Py_DECREF(level);
            if (m == NULL)
                goto error;
            PUSH(m);
            break;
        }
        case FJ_PI_IMPORT_FROM: { /* [module] -> [module, module.name] */
            PyObject *a = fj_trace_getattr(fr, TOP(), PyTuple_GET_ITEM(co->co_names, arg));
            if (a == NULL)
                goto error;
            PUSH(a);
            break;
        }
        case FJ_PI_LOAD_METHOD: {
            PyObject *obj = POP();
            PyObject *out[2] = {NULL, NULL};
            int r = fj_trace_load_method(fr, obj, PyTuple_GET_ITEM(co->co_names, arg), out);
            Py_DECREF(obj);
            if (r < 0)
                goto error;
            if (fj_dialect.null_after && VAR(out[0])->kind == FJ_VAR_NULL) {
                PyObject *t = out[0]; /* (NULL, attr) is spelt (attr, NULL) */
                out[0] = out[1];
                out[1] = t;
            }
            PUSH(out[0]);
            PUSH(out[1]);
            break;
        }
        case FJ_PI_KW_NAMES:
            Py_XSETREF(fr->kwnames, Py_NewRef(PyTuple_GET_ITEM(co->co_consts, arg)));
            break;
        case FJ_PI_CALL: {
            /* stack: [NULL, callable] or [callable, NULL] or [method, self], then the
               args (and with argb, the keyword names tuple) */
            PyObject *kw = fr->kwnames;
            fr->kwnames = NULL;
            if (argb) {
                PyObject *kwv = POP();
                Py_XSETREF(kw, Py_XNewRef(fj_var_as_const(kwv)));
                Py_DECREF(kwv);
                if (kw == NULL || !PyTuple_Check(kw)) {
                    Py_XDECREF(kw);
                    fj_unsupported("call with keyword names that are not a constant tuple");
                    goto error;
                }
            }
            int lo_null = VAR(PEEK(arg + 2))->kind == FJ_VAR_NULL;
            int hi_null = VAR(PEEK(arg + 1))->kind == FJ_VAR_NULL;
            int is_meth = !lo_null && !hi_null;
            PyObject *callable = lo_null ? PEEK(arg + 1) : PEEK(arg + 2);
            PyObject *const *args = &fr->stack[fr->sp - arg - is_meth];
            PyObject *r = fj_trace_call(fr, callable, args, arg + is_meth, kw);
            Py_XDECREF(kw);
            for (int k = 0; k < arg + 2; k++)
                Py_DECREF(POP());
            PUSH(r);
            break;
        }
        case FJ_PI_CALL_FUNCTION_EX: {
            PyObject *kwargs = (arg & 1) ? POP() : NULL;
            PyObject *posargs = POP();
            PyObject *fn = POP();
            PyObject *nullv = POP();
            if (VAR(fn)->kind == FJ_VAR_NULL) { /* [fn, NULL] (3.13) */
                PyObject *t = fn;
                fn = nullv;
                nullv = t;
            }
            PyObject *r = NULL, *items = var_items(fr, posargs), *names = NULL;
            if (items != NULL && kwargs != NULL) {
                fj_Var *kv = (fj_Var *)kwargs;
                PyObject *d = kv->kind == FJ_VAR_DICT ? kv->items : NULL;
                if (d == NULL) {
                    fj_unsupported("**kwargs that is not a known dict");
                }
                else {
                    names = PyTuple_New(PyDict_GET_SIZE(d));
                    Py_ssize_t pos = 0, k = 0;
                    PyObject *key, *val;
                    while (names && PyDict_Next(d, &pos, &key, &val)) {
                        PyTuple_SET_ITEM(names, k++, Py_NewRef(key));
                        if (PyList_Append(items, val) < 0)
                            Py_CLEAR(names);
                    }
                    if (names == NULL)
                        Py_CLEAR(items);
                }
                if (names == NULL)
                    Py_CLEAR(items);
            }
            if (items != NULL)
                r = fj_trace_call(fr, fn, &PyList_GET_ITEM(items, 0), PyList_GET_SIZE(items),
                                  names);
            Py_XDECREF(items);
            Py_XDECREF(names);
            Py_XDECREF(kwargs);
            Py_DECREF(posargs);
            Py_DECREF(fn);
            Py_DECREF(nullv);
            PUSH(r);
            break;
        }
        case FJ_PI_SET_FUNCTION_ATTRIBUTE: { /* [attr, func] -> func (3.13) */
            fj_Var *f = (fj_Var *)POP();
            PyObject *attr = POP();
            if (f->kind != FJ_VAR_FUNC || f->source != NULL || (arg & 0x04)) {
                Py_DECREF(f);
                Py_DECREF(attr);
                fj_unsupported(arg & 0x04 ? "a function with annotations"
                                          : "SET_FUNCTION_ATTRIBUTE on a function not made here");
                goto error;
            }
            PyObject **slot = arg == 0x08 ? &f->items : arg == 0x01 ? &f->extra : &f->extra2;
            Py_XSETREF(*slot, attr);
            PUSH((PyObject *)f);
            break;
        }
        case FJ_PI_MAKE_FUNCTION:
            PUSH(make_function(fr, arg));
            break;
        case FJ_PI_RETURN_VALUE:
            if (fr->loop_head >= 0)
                return fj_unsupported("the loop's body returns");
            fr->retval = POP();
            return fr->loop_ret != NULL ? fj_trace_loop_return(fr, &fr->retval) : 0;
        case FJ_PI_RETURN_CONST:
            if (fr->loop_head >= 0)
                return fj_unsupported("the loop's body returns");
            fr->retval = (PyObject *)fj_var_const(PyTuple_GET_ITEM(co->co_consts, arg));
            if (fr->retval == NULL)
                return -1;
            return fr->loop_ret != NULL ? fj_trace_loop_return(fr, &fr->retval) : 0;
        case FJ_PI_BINARY_OP:
            POP2_APPLY(fj_trace_binop(fr, arg, a_, b_));
            break;
        case FJ_PI_COMPARE_OP:
            POP2_APPLY(fj_trace_compare(fr, arg, a_, b_));
            if (argb) /* the result converted to bool (3.13) */
                goto to_bool;
            break;
        case FJ_PI_TO_BOOL:
        to_bool: {
            PyObject *v = POP();
            if (((fj_Var *)v)->kind == FJ_VAR_NODE && next < fr->il.n && fr->il.v[next].p.op == FJ_PI_POP_JUMP_IF) {
                /* 3.13 converts a test's value to bool before its jump.  A captured while
                   loop's bottom test: the value itself is the loop's "go on" (the jump
                   takes its truth; the body's trace never reaches CPython).  A while
                   loop's test on data: the loop captured from here.  Else the value is
                   converted here, as before (a break here leaves CPython the bool
                   conversion the jump needs) */
                if (fr->loop_head >= 0 && ((next == fr->loop_test && fr->loop_wrap != 1) ||
                                           fj_trace_loop_exit_part(fr, next) || fj_trace_loop_is_break(fr, next))) {
                    PUSH(v);
                    break;
                }
                if (fj_trace_while_break_arm(fr, next, v) < 0) {
                    Py_DECREF(v);
                    goto error;
                }
                int wr = fj_trace_capture_while(fr, next, v, &next); /* (1: next is its exit) */
                if (wr != 0) {
                    Py_DECREF(v);
                    if (wr < 0)
                        goto error;
                    break;
                }
            }
            int t = fj_trace_truth(fr, v);
            Py_DECREF(v);
            if (t < 0)
                goto error;
            PUSH(fj_var_const(t ? Py_True : Py_False));
            break;
        }
        case FJ_PI_IS_OP: {
            PyObject *b = POP(), *a = POP();
            fj_Var *va = (fj_Var *)a, *vb = (fj_Var *)b;
            int same = -1;
            PyObject *ca = fj_var_as_const(a), *cb = fj_var_as_const(b);
            if (a == b)
                same = 1;
            else if (ca != NULL && cb != NULL) {
                /* by trace-time identity only when it is the run-time one */
                int ka = fj_trace_identity(fr->tx, a, ca), kb = fj_trace_identity(fr->tx, b, cb);
                if (ka < 0 || kb < 0) {
                    Py_DECREF(a);
                    Py_DECREF(b);
                    goto error;
                }
                if (ka != FJ_ID_UNKNOWN && kb != FJ_ID_UNKNOWN)
                    same = ca == cb;
            }
            else if ((ca == Py_None && cb == NULL && vb->kind != FJ_VAR_OBJ) ||
                     (cb == Py_None && ca == NULL && va->kind != FJ_VAR_OBJ))
                same = 0; /* a made value (array, container) is never None */
            else if (va->kind == FJ_VAR_OBJ && vb->kind == FJ_VAR_OBJ && va->source != NULL &&
                     vb->source != NULL && va->obj != vb->obj) {
                /* two inputs, distinct now: guard that they stay distinct
                ** (unittest's assertIsNot(thing, thing) after (thing, object())) */
                PyObject *pair = PyTuple_Pack(2, (PyObject *)va->source, (PyObject *)vb->source);
                int r = pair == NULL ? -1 : fj_guard_add_no_aliasing(fr->tx->guards, pair);
                Py_XDECREF(pair);
                if (r < 0) {
                    Py_DECREF(a);
                    Py_DECREF(b);
                    goto error;
                }
                same = 0;
            }
            else if ((va->kind == FJ_VAR_INST || vb->kind == FJ_VAR_INST) &&
                     (va->kind == FJ_VAR_INST || va->kind == FJ_VAR_OBJ || ca != NULL) &&
                     (vb->kind == FJ_VAR_INST || vb->kind == FJ_VAR_OBJ || cb != NULL))
                same = 0; /* an instance made in the frame is no other object */
            /* otherwise (the same object under two names, a value made in
            ** the frame) the answer would not be guarded: a break */
            Py_DECREF(a);
            Py_DECREF(b);
            if (same < 0) {
                fj_unsupported("'is' between values whose identity is not known");
                goto error;
            }
            PUSH(fj_var_const((same ^ arg) ? Py_True : Py_False));
            break;
        }
        case FJ_PI_CONTAINS_OP:
            POP2_APPLY(fj_trace_contains(fr, a_, b_, arg));
            break;
        case FJ_PI_UNARY_NOT: {
            PyObject *a = POP();
            int t = fj_trace_truth(fr, a);
            Py_DECREF(a);
            if (t < 0)
                goto error;
            PUSH(fj_var_const(t ? Py_False : Py_True));
            break;
        }
        case FJ_PI_UNARY_NEGATIVE:
        case FJ_PI_UNARY_POSITIVE:
        case FJ_PI_UNARY_INVERT:
            POP1_APPLY(fj_trace_unary(fr, op, a_));
            break;
        case FJ_PI_BINARY_SUBSCR:
            POP2_APPLY(fj_trace_key_symbolic(b_) ? fj_trace_symbolic_getitem(fr, a_, b_) : fj_trace_getitem(fr, a_, b_));
            break;
        case FJ_PI_BINARY_SLICE: { /* [obj, start, stop] -> obj[start:stop] */
            PyObject *stop = POP(), *start = POP();
            PyObject *sym = fj_trace_symbolic_slice(fr, TOP(), start, stop, NULL);
            if (sym != NULL || PyErr_Occurred()) {
                Py_DECREF(start);
                Py_DECREF(stop);
                Py_DECREF(POP());
                PUSH(sym);
                break;
            }
            fj_Var *sl = make_slice(start, stop, NULL);
            PyObject *obj = POP();
            PyObject *r = sl == NULL ? NULL : fj_trace_getitem(fr, obj, (PyObject *)sl);
            Py_XDECREF(sl);
            Py_DECREF(obj);
            PUSH(r);
            break;
        }
        case FJ_PI_STORE_SLICE: { /* [value, obj, start, stop] */
            PyObject *stop = POP(), *start = POP();
            fj_Var *sl = fj_trace_node_slice(fr->tx, start, stop, NULL); /* x[:n] = v */
            if (sl == NULL && !PyErr_Occurred())
                sl = make_slice(start, stop, NULL);
            PyObject *obj = POP(), *v = POP();
            int r = sl == NULL ? -1 : fj_trace_store_subscr(fr, obj, (PyObject *)sl, v);
            Py_XDECREF(sl);
            Py_DECREF(obj);
            Py_DECREF(v);
            if (r < 0)
                goto error;
            break;
        }
        case FJ_PI_STORE_SUBSCR: /* [value, obj, key] */
            POPN_RUN(3, fj_trace_store_subscr(fr, o_[1], o_[0], o_[2]));
            break;
        case FJ_PI_DELETE_SUBSCR: /* [obj, key] */
            POPN_RUN(2, fj_trace_delete_subscr(fr, o_[1], o_[0]));
            break;
        case FJ_PI_DELETE_ATTR:
            POPN_RUN(1, fj_trace_delattr(fr, o_[0], PyTuple_GET_ITEM(co->co_names, arg)));
            break;
        case FJ_PI_BUILD_TUPLE:
            PUSH(build_seq(fr, FJ_VAR_TUPLE, arg));
            break;
        case FJ_PI_BUILD_LIST:
            PUSH(build_seq(fr, FJ_VAR_LIST, arg));
            break;
        case FJ_PI_BUILD_MAP:
        case FJ_PI_BUILD_CONST_KEY_MAP: {
            PyObject *d = PyDict_New();
            if (d == NULL)
                goto error;
            int bad = 0;
            if (op == FJ_PI_BUILD_MAP) {
                for (int k = arg; k >= 1; k--) {
                    PyObject *key = fj_var_as_const(PEEK(2 * k));
                    if (key == NULL || !fj_is_plain_constant(key))
                        bad = 1;
                    else if (PyDict_SetItem(d, key, PEEK(2 * k - 1)) < 0)
                        bad = 2;
                }
                for (int k = 0; k < 2 * arg; k++)
                    Py_DECREF(POP());
            }
            else {
                PyObject *keysv = POP();
                PyObject *keys = fj_var_as_const(keysv);
                for (int k = 0; !bad && k < arg; k++) {
                    if (PyDict_SetItem(d, PyTuple_GET_ITEM(keys, k), PEEK(arg - k)) < 0)
                        bad = 2;
                }
                for (int k = 0; k < arg; k++)
                    Py_DECREF(POP());
                Py_DECREF(keysv);
            }
            if (bad) {
                Py_DECREF(d);
                if (bad == 1)
                    fj_unsupported("dict with a key that is not a plain constant");
                goto error;
            }
            PUSH(fj_var_take(FJ_VAR_DICT, d));
            break;
        }
        case FJ_PI_MAP_ADD: /* [dict, ..., key, value] */
            POPN_RUN(2, map_add(fr, (fj_Var *)PEEK(arg), o_[1], o_[0]));
            break;
        case FJ_PI_DICT_UPDATE:
        case FJ_PI_DICT_MERGE:
            POPN_RUN(1, dict_update(fr, (fj_Var *)PEEK(arg), o_[0]));
            break;
        case FJ_PI_LIST_APPEND:
        case FJ_PI_LIST_EXTEND:
            POPN_RUN(1, list_add(fr, (fj_Var *)PEEK(arg), o_[0], op == FJ_PI_LIST_EXTEND));
            break;
        case FJ_PI_LIST_TO_TUPLE: {
            fj_Var *lv = (fj_Var *)POP();
            fj_Var *t = fj_var_new(FJ_VAR_TUPLE, NULL, lv->items);
            Py_DECREF(lv);
            PUSH(t);
            break;
        }
        case FJ_PI_BUILD_SLICE: {
            PyObject *step = arg == 3 ? POP() : NULL;
            PyObject *stop = POP(), *start = POP();
            if (i + 1 < fr->il.n && fr->il.v[i + 1].p.op == FJ_PI_BINARY_SUBSCR && fr->sp >= 1) {
                /* x[:n] (BUILD_SLICE; BINARY_SUBSCR) with a symbolic n: one getitem */
                PyObject *sym = fj_trace_symbolic_slice(fr, TOP(), start, stop, step);
                if (sym != NULL || PyErr_Occurred()) {
                    Py_DECREF(start);
                    Py_DECREF(stop);
                    Py_XDECREF(step);
                    Py_DECREF(POP());
                    PUSH(sym);
                    next = i + 2;
                    break;
                }
            }
            /* x[:n, 0], x[..., n:], x[:, :n] = v: a key holding n's node */
            fj_Var *sl = slice_feeds_subscript(fr, i) ? fj_trace_node_slice(fr->tx, start, stop, step) : NULL;
            if (sl == NULL && !PyErr_Occurred())
                sl = make_slice(start, stop, step);
            Py_DECREF(start);
            Py_DECREF(stop);
            Py_XDECREF(step);
            PUSH(sl);
            break;
        }
        case FJ_PI_CONVERT_VALUE:
        case FJ_PI_FORMAT: {
            /* CONVERT_VALUE: str/repr/ascii of the top; FORMAT: convert (a), then
               format with the spec on top (b) or none */
            PyObject *spec = op == FJ_PI_FORMAT && argb ? POP() : NULL;
            PyObject *v = POP();
            PyObject *c = fj_var_as_const(v), *cs = spec ? fj_var_as_const(spec) : NULL;
            PyObject *r = NULL;
            if (c != NULL && fj_is_plain_constant(c) && (spec == NULL || cs != NULL)) {
                PyObject *conv = Py_NewRef(c);
                if (arg == 1)
                    Py_SETREF(conv, PyObject_Str(c));
                else if (arg == 2)
                    Py_SETREF(conv, PyObject_Repr(c));
                else if (arg == 3)
                    Py_SETREF(conv, PyObject_ASCII(c));
                if (conv != NULL && op == FJ_PI_FORMAT)
                    r = PyObject_Format(conv, cs);
                else
                    r = Py_XNewRef(conv);
                Py_XDECREF(conv);
            }
            else
                fj_unsupported("f-string of a value that is not a plain constant");
            Py_DECREF(v);
            Py_XDECREF(spec);
            PUSH(fj_var_take(FJ_VAR_CONST, r));
            break;
        }
        case FJ_PI_BUILD_STRING: {
            PyObject *parts = PyTuple_New(arg);
            if (parts == NULL)
                goto error;
            int bad = 0;
            for (int k = 0; k < arg; k++) {
                PyObject *c = fj_var_as_const(PEEK(arg - k));
                if (c == NULL || !PyUnicode_Check(c))
                    bad = 1;
                else
                    PyTuple_SET_ITEM(parts, k, Py_NewRef(c));
            }
            for (int k = 0; k < arg; k++)
                Py_DECREF(POP());
            PyObject *empty = PyUnicode_New(0, 0);
            PyObject *s = !bad && empty ? PyUnicode_Join(empty, parts) : NULL;
            Py_XDECREF(empty);
            Py_DECREF(parts);
            if (s == NULL && bad)
                fj_unsupported("string built from values that are not constants");
            PUSH(fj_var_take(FJ_VAR_CONST, s));
            break;
        }
        case FJ_PI_UNPACK_SEQUENCE: {
            PyObject *seq = POP();
            PyObject *items = var_items(fr, seq);
            Py_DECREF(seq);
            if (items == NULL)
                goto error;
            if (PyList_GET_SIZE(items) != arg) {
                Py_DECREF(items);
                fj_unsupported("unpacking %d values from a sequence of %zd", arg,
                               PyList_GET_SIZE(items));
                goto error;
            }
            for (int k = arg - 1; k >= 0; k--)
                PUSH(Py_NewRef(PyList_GET_ITEM(items, k)));
            Py_DECREF(items);
            break;
        }
        case FJ_PI_UNPACK_EX: {
            int before = arg & 0xFF, after = arg >> 8;
            PyObject *seq = POP();
            PyObject *items = var_items(fr, seq);
            Py_DECREF(seq);
            if (items == NULL)
                goto error;
            Py_ssize_t n = PyList_GET_SIZE(items);
            if (n < before + after) {
                Py_DECREF(items);
                fj_unsupported("not enough values to unpack");
                goto error;
            }
            for (Py_ssize_t k = n - 1; k >= n - after; k--)
                PUSH(Py_NewRef(PyList_GET_ITEM(items, k)));
            fj_Var *mv = fj_var_take(FJ_VAR_LIST, PyList_GetSlice(items, before, n - after));
            if (mv == NULL) {
                Py_DECREF(items);
                goto error;
            }
            PUSH(mv);
            for (int k = before - 1; k >= 0; k--)
                PUSH(Py_NewRef(PyList_GET_ITEM(items, k)));
            Py_DECREF(items);
            break;
        }
        case FJ_PI_GET_ITER:
            POP1_APPLY(make_iter(fr, a_));
            break;
        case FJ_PI_FOR_ITER: {
            fj_Var *it = (fj_Var *)TOP();
            if (it->kind == FJ_VAR_RANGE) {
                /* its length is not known: the loop is captured; else its bounds are made
                   constants (symbolic ints pinned; a loop index among them: a break) */
                int cr = fj_trace_capture_loop(fr, i);
                if (cr < 0)
                    goto error;
                if (cr == 1) {
                    Py_DECREF(POP());
                    JUMPTO(in->target + argb);
                    break;
                }
                if (fj_trace_range_pin(fr) < 0)
                    goto error;
                it = (fj_Var *)TOP();
            }
            if (it->kind != FJ_VAR_ITER) {
                fj_unsupported("FOR_ITER over %R", (PyObject *)it);
                goto error;
            }
            if (fj_trace_iter_step(it) < 0)
                goto error;
            /* a loop over a long range(): its body traced once, as one loop node
               (trace_loops.c); the iterator is then exhausted */
            if (fj_trace_capture_loop(fr, i) < 0)
                goto error;
            if (it->obj != NULL && PyRange_Check(it->obj)) { /* a lazy range (make_iter) */
                Py_ssize_t len = PyObject_Length(it->obj);
                if (len < 0)
                    goto error;
                if (it->pos < len) {
                    PyObject *item = PySequence_GetItem(it->obj, it->pos++);
                    fj_Var *iv = item ? fj_var_take(FJ_VAR_CONST, item) : NULL;
                    if (iv != NULL && it->extra2 != NULL) { /* np.ndindex / ndenumerate */
                        PyObject *nv = fj_trace_nd_item(fr, it, (PyObject *)iv);
                        Py_DECREF(iv);
                        iv = (fj_Var *)nv;
                    }
                    if (iv == NULL)
                        goto error;
                    PUSH(iv);
                }
                else {
                    Py_DECREF(POP());
                    JUMPTO(in->target + argb);
                }
                break;
            }
            if (it->pos < PyList_GET_SIZE(it->items)) {
                PUSH(Py_NewRef(PyList_GET_ITEM(it->items, it->pos++)));
            }
            else {
                Py_DECREF(POP());
                JUMPTO(in->target + argb); /* past the loop's END_FOR (3.12+) */
            }
            break;
        }
        case FJ_PI_JUMP:
            JUMPTO(in->target);
            break;
        case FJ_PI_POP_JUMP_IF: {
            /* jumps when the popped value's truth, or its being None, is the one named */
            int none = arg == FJ_IF_NONE || arg == FJ_IF_NOT_NONE;
            int want = arg == FJ_IF_TRUE || arg == FJ_IF_NONE;
            PyObject *v = POP();
            if (fr->loop_head >= 0 && i == fr->loop_test) {
                /* a captured while loop's bottom test: the iteration's end, its value
                   the loop's "go on" (a rotated body: after its jump back only) */
                if (fr->loop_wrap == 1) {
                    Py_DECREF(v);
                    fj_unsupported("the loop's test is reached again before its body ends");
                    goto error;
                }
                Py_XSETREF(fr->loop_stay, v);
                return 2;
            }
            int bstay, br = !none && ((fj_Var *)v)->kind == FJ_VAR_NODE ? fj_trace_loop_break(fr, i, want, v, &bstay) : 0;
            if (br != 0) {
                /* a break on data in a captured for loop: an exit, then the other side */
                Py_DECREF(v);
                if (br < 0)
                    goto error;
                JUMPTO(bstay);
                break;
            }
            if (!none && ((fj_Var *)v)->kind == FJ_VAR_NODE && fj_trace_loop_exit_part(fr, i)) {
                /* a part of a compound test on data: the loop ends there where it says */
                int xr = fj_trace_loop_exit_if(fr, v, want);
                Py_DECREF(v);
                if (xr < 0)
                    goto error;
                break;
            }
            if (!none && fj_trace_while_break_arm(fr, i, v) < 0) {
                /* a break of a while loop unrolled around it: captured at its test */
                Py_DECREF(v);
                goto error;
            }
            int wr = none ? 0 : fj_trace_capture_while(fr, i, v, &next); /* (1: next is its exit) */
            if (wr != 0) {
                Py_DECREF(v);
                if (wr < 0)
                    goto error;
                break;
            }
            int t = none ? var_is_none(v) : fj_trace_truth(fr, v);
            Py_DECREF(v);
            if (t < 0)
                goto error;
            if (t == want)
                JUMPTO(in->target);
            break;
        }
        case FJ_PI_JUMP_IF_OR_POP: {
            int t = fj_trace_truth(fr, TOP());
            if (t < 0)
                goto error;
            if (t == (arg == FJ_IF_TRUE))
                JUMPTO(in->target);
            else
                Py_DECREF(POP());
            break;
        }
        case FJ_PI_PUSH_EXC_INFO:
            /* a resume function entered at a handler (a break under a try or
               with block raised): the handler and what follows run in CPython */
            fj_unsupported("exception handler (except, finally, or a with block's exit "
                           "on an error) runs in CPython");
            goto error;
        case FJ_PI_BEFORE_WITH:
            /* the context manager's __enter__ runs in CPython; the with body
               continues in a resume function, under its handler */
            fj_unsupported("with statement (the context manager's __enter__ runs in CPython)");
            goto error;
        default:
            fj_unsupported("opcode %s is not supported", fj_trace_opname(in->op));
            goto error;
        }
    }
    return fj_unsupported("fell off the end of %U", co->co_name);
error:
    if (fr->loop_ret != NULL && PyErr_ExceptionMatches(fj_Unsupported) && !tx->loop_retry) {
        /* a loop with a return inside is not followed by its return: a break here
           would lose the loop's return (CPython runs on after the loop) */
        PyErr_Clear();
        fj_trace_loop_return_lost(fr);
    }
    return -1;
}

/* ----------------------------------------------------------- top level */

/*
** True for code whose graph breaks are not split (it then runs whole in
** CPython): module and class bodies (no CO_NEWLOCALS: names live in a
** dict), code with a __class__ free variable (zero-argument super() reads
** the frame's first local, which a resume function does not have there),
** and code that may look at its own frame (frame_readers above: locals(),
** vars(), dir(), eval/exec without a namespace, sys._getframe,
** inspect.currentframe see only a resume function's live locals;
** getrefcount, settrace, setprofile).
*/
static int uses_class_cell(PyCodeObject *co);

/* Names that, in co_names, mean the code may read its own frame's locals;
** getrefcount: compiling a resume function between two reads of a
** reference count adds references (guards and constants of the new code;
** NumPy's test_for_reference_leak counts the references of 1); settrace and
** setprofile: a tracer set in the frame sees no event of the frame itself
** in CPython, but the resume function's frame starts after the break and a
** tracer sees its call, lines and return. */
static const char *const frame_readers[] = {"locals", "vars", "dir", "eval", "exec",
                                            "_getframe", "currentframe", "getrefcount",
                                            "settrace", "setprofile", NULL};

static int reads_own_frame(PyCodeObject *co)
{
    PyObject *names = co->co_names;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++) {
        PyObject *n = PyTuple_GET_ITEM(names, i);
        for (int k = 0; frame_readers[k] != NULL; k++)
            if (PyUnicode_CompareWithASCIIString(n, frame_readers[k]) == 0)
                return 1;
    }
    return 0;
}

static int unsplittable(PyCodeObject *co)
{
    /* module and class bodies run with a locals dict a function cannot have */
    if (!(co->co_flags & CO_NEWLOCALS))
        return 1;
    return uses_class_cell(co) || reads_own_frame(co);
}

/* True for code with a __class__ free variable (zero-argument super()). */
static int uses_class_cell(PyCodeObject *co)
{
    PyObject *fv = PyCode_GetFreevars(co);
    if (fv == NULL) {
        PyErr_Clear();
        return 1;
    }
    int hit = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fv) && !hit; i++)
        hit = PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(fv, i), "__class__") == 0;
    Py_DECREF(fv);
    return hit;
}

/* Remembers where the top frame stopped when tracing failed. */
static void note_break(fj_Tracer *tx, fj_TFrame *top)
{
    tx->break_index = top->ip;
    tx->break_lineno = top->il.n ? top->il.v[top->ip].line : -1;
}

int fj_trace_run(fj_Tracer *tx, PyCodeObject *co)
{
    tx->break_index = -1;
    tx->top = PyMem_Calloc(1, sizeof(fj_TFrame));
    if (tx->top == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    fj_TFrame *fr = tx->top;
    if (frame_setup(fr, tx, co) < 0)
        return -1;
    fr->globals = tx->view.globals;
    fr->builtins = tx->view.builtins;
    fr->lazy_args = 1;
    fj_Tracer *outer = fj_current_tracer;
    int outer_pos = fj_graph_get_pos();
    fj_current_tracer = tx;
    int r = run_frame(fr);
    fj_current_tracer = outer;
    fj_graph_set_pos(outer_pos); /* (-1 outside a trace; a nested one's caller's place) */
    if (r < 0) {
        note_break(tx, fr);
        /* no resume point: such code runs whole in CPython at a break */
        if (PyErr_ExceptionMatches(fj_Unsupported)) {
            PyObject *et, *ev, *etb;
            PyErr_Fetch(&et, &ev, &etb);
            if (unsplittable(co))
                tx->break_index = -1;
            PyErr_Restore(et, ev, etb);
        }
    }
    return r;
}

void fj_trace_free(fj_Tracer *tx)
{
    if (tx->top != NULL) {
        frame_free(tx->top);
        PyMem_Free(tx->top);
        tx->top = NULL;
    }
}

PyObject *fj_var_as_const(PyObject *v)
{
    if (!fj_Var_Check(v))
        return NULL;
    fj_Var *vv = (fj_Var *)v;
    if (vv->kind == FJ_VAR_NODE && ((fj_Node *)vv->obj)->variant)
        return NULL; /* changes with a captured loop's iteration: no value */
    if (vv->kind == FJ_VAR_NODE && ((fj_Node *)vv->obj)->vkind == FJ_VAL_PYSCALAR &&
        fj_current_tracer != NULL) {
        /* a symbolic int used where the trace needs its value: pin it */
        if (fj_trace_specialize(fj_current_tracer, "a symbolic int used where the trace needs its value") < 0)
            return NULL;
        return ((fj_Node *)vv->obj)->example;
    }
    return vv->kind == FJ_VAR_CONST ? vv->obj : NULL;
}

int fj_trace_init(PyObject *module)
{
    fj_Var_Type = (PyTypeObject *)PyType_FromSpec(&var_spec);
    if (fj_Var_Type == NULL)
        return -1;
    fj_Unsupported = PyErr_NewExceptionWithDoc(
        "framejit._C.Unsupported", "Raised inside the tracer for what cannot be captured.",
        PyExc_Exception, NULL);
    if (fj_Unsupported == NULL || PyModule_AddObjectRef(module, "Unsupported", fj_Unsupported) < 0)
        return -1;
    null_var = fj_var_new(FJ_VAR_NULL, NULL, NULL);
    ADDRESS_MARK = PyUnicode_InternFromString(" at 0x");
    if (ADDRESS_MARK == NULL)
        return -1;
    PyObject *opmod = PyImport_ImportModule("opcode");
    if (opmod == NULL)
        return -1;
    opnames = PyObject_GetAttrString(opmod, "opname");
    Py_DECREF(opmod);
    return null_var == NULL || opnames == NULL ? -1 : 0;
}
