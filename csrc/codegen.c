/*
** codegen.c: the code object that replaces a traced frame.  See codegen.h.
**
** Shape of the output (3.11):
**     <the original prologue: MAKE_CELL / COPY_FREE_VARS>
**     RESUME 0
**     PUSH_NULL; LOAD_GLOBAL __compiled_fn_N; <load each input>; PRECALL n; CALL n
**     UNPACK_SEQUENCE k; STORE_FAST ___graph_out_{k-1} ... ___graph_out_0
**     <rebuild the return value>; RETURN_VALUE
** When the return value is exactly the single output, the stores and loads
** are skipped: UNPACK_SEQUENCE 1; RETURN_VALUE.
*/
#include "codegen.h"

#include "graph.h"

#define VAR(o) ((fj_Var *)(o))

static int collect(PyObject *v, PyObject *out)
{
    fj_Var *vv = VAR(v);
    switch (vv->kind) {
    case FJ_VAR_NODE: {
        fj_Node *n = (fj_Node *)vv->obj;
        if (vv->source != NULL || n->kind == FJ_NODE_PLACEHOLDER)
            return 0;
        int has = PySequence_Contains(out, (PyObject *)n);
        if (has < 0)
            return -1;
        return has ? 0 : PyList_Append(out, (PyObject *)n);
    }
    case FJ_VAR_CONST:
    case FJ_VAR_OBJ:
        return 0;
    case FJ_VAR_TUPLE:
    case FJ_VAR_LIST:
        if (vv->source != NULL)
            return 0;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(vv->items); i++)
            if (collect(PyList_GET_ITEM(vv->items, i), out) < 0)
                return -1;
        return 0;
    case FJ_VAR_DICT: {
        if (vv->source != NULL)
            return 0;
        Py_ssize_t pos = 0;
        PyObject *k, *val;
        while (PyDict_Next(vv->items, &pos, &k, &val))
            if (collect(val, out) < 0)
                return -1;
        return 0;
    }
    default:
        return fj_unsupported("cannot return %R from a compiled frame", v);
    }
}

PyObject *fj_codegen_outputs(PyObject *ret)
{
    PyObject *out = PyList_New(0);
    if (out != NULL && collect(ret, out) < 0)
        Py_CLEAR(out);
    return out;
}

#define EMIT(op, arg)                                                                              \
    do {                                                                                           \
        if (fj_bc_emit(&b->il, (op), (arg)) < 0)                                                   \
            return -1;                                                                             \
    } while (0)

/* Emits the loads that push the value at 'src'. */
static int emit_source(fj_Builder *b, PyCodeObject *co, fj_Source *src)
{
    int ix;
    switch (src->kind) {
    case FJ_SRC_LOCAL:
        if (fj_code_local_kind(co, (int)src->index) & FJ_FAST_CELL) {
            if ((ix = fj_builder_deref(b, src->key)) < 0)
                return -1;
            EMIT(LOAD_DEREF, ix);
            return 0;
        }
        return fj_builder_load_fast(b, src->key) < 0 ? -1 : 0;
    case FJ_SRC_CLOSURE:
        if ((ix = fj_builder_deref(b, src->key)) < 0)
            return -1;
        EMIT(LOAD_DEREF, ix);
        return 0;
    case FJ_SRC_GLOBAL:
    case FJ_SRC_BUILTIN:
        return fj_builder_load_global(b, src->key, 0) < 0 ? -1 : 0;
    case FJ_SRC_ATTR:
        if (emit_source(b, co, src->parent) < 0)
            return -1;
        return fj_builder_load_attr(b, src->key) < 0 ? -1 : 0;
    case FJ_SRC_ITEM:
    case FJ_SRC_INDEX: {
        if (emit_source(b, co, src->parent) < 0)
            return -1;
        PyObject *key = src->kind == FJ_SRC_ITEM ? Py_NewRef(src->key)
                                                 : PyLong_FromSsize_t(src->index);
        int r = key ? fj_builder_load_const(b, key) : -1;
        Py_XDECREF(key);
        if (r < 0)
            return -1;
        EMIT(BINARY_SUBSCR, 0);
        return 0;
    }
    }
    PyErr_SetString(PyExc_SystemError, "framejit: bad source kind");
    return -1;
}

static PyObject *out_name(Py_ssize_t i)
{
    return PyUnicode_FromFormat("___graph_out_%zd", i);
}

/* Emits code that pushes the runtime value of Var 'v'. */
static int emit_rebuild(fj_Builder *b, PyCodeObject *co, PyObject *v, PyObject *outputs)
{
    fj_Var *vv = VAR(v);
    if (vv->source != NULL && vv->kind != FJ_VAR_CONST)
        return emit_source(b, co, vv->source);
    switch (vv->kind) {
    case FJ_VAR_CONST:
        return fj_builder_load_const(b, vv->obj) < 0 ? -1 : 0;
    case FJ_VAR_NODE: {
        Py_ssize_t i = PySequence_Index(outputs, vv->obj);
        if (i < 0)
            return -1;
        PyObject *name = out_name(i);
        int r = name ? fj_builder_load_fast(b, name) : -1;
        Py_XDECREF(name);
        return r < 0 ? -1 : 0;
    }
    case FJ_VAR_TUPLE:
    case FJ_VAR_LIST: {
        Py_ssize_t n = PyList_GET_SIZE(vv->items);
        for (Py_ssize_t i = 0; i < n; i++)
            if (emit_rebuild(b, co, PyList_GET_ITEM(vv->items, i), outputs) < 0)
                return -1;
        EMIT(vv->kind == FJ_VAR_TUPLE ? BUILD_TUPLE : BUILD_LIST, (int)n);
        return 0;
    }
    case FJ_VAR_DICT: {
        Py_ssize_t pos = 0;
        PyObject *k, *val;
        while (PyDict_Next(vv->items, &pos, &k, &val)) {
            if (fj_builder_load_const(b, k) < 0 || emit_rebuild(b, co, val, outputs) < 0)
                return -1;
        }
        EMIT(BUILD_MAP, (int)PyDict_GET_SIZE(vv->items));
        return 0;
    }
    default:
        return fj_unsupported("cannot rebuild %R after the graph", v);
    }
}

/* Copies the original's instructions before its first RESUME (cell setup). */
static int emit_prologue(fj_Builder *b, PyCodeObject *co, int *firstline)
{
    fj_InstrList orig;
    fj_bc_init(&orig);
    if (fj_bc_decode(co, &orig) < 0)
        return -1;
    int r = 0;
    for (int i = 0; i < orig.n; i++) {
        fj_Instr *in = &orig.v[i];
        if (in->op == RESUME) {
            fj_bc_set_pos(&b->il, in->line, in->end_line, in->col, in->end_col);
            *firstline = in->line;
            break;
        }
        fj_bc_set_pos(&b->il, in->line, in->end_line, in->col, in->end_col);
        if (fj_bc_emit(&b->il, in->op, in->arg) < 0) {
            r = -1;
            break;
        }
    }
    fj_bc_free(&orig);
    return r;
}

PyObject *fj_codegen_graph_call(PyCodeObject *co, PyObject *fn_name, PyObject *placeholders,
                                PyObject *outputs, PyObject *ret)
{
    fj_Builder bb, *b = &bb;
    PyObject *result = NULL;
    int firstline = co->co_firstlineno;
    memset(b, 0, sizeof(*b));
    if (fj_builder_init(b, co) < 0)
        goto done;
    if (emit_prologue(b, co, &firstline) < 0)
        goto done;
    if (fj_bc_emit(&b->il, RESUME, 0) < 0)
        goto done;
    Py_ssize_t nout = PyList_GET_SIZE(outputs);
    if (fn_name != NULL) {
        Py_ssize_t nin = PyList_GET_SIZE(placeholders);
        if (fj_bc_emit(&b->il, PUSH_NULL, 0) < 0 || fj_builder_load_global(b, fn_name, 0) < 0)
            goto done;
        for (Py_ssize_t i = 0; i < nin; i++) {
            fj_Var *p = VAR(PyList_GET_ITEM(placeholders, i));
            if (emit_source(b, co, p->source) < 0)
                goto done;
        }
        if (fj_builder_call(b, (int)nin, NULL) < 0 ||
            fj_bc_emit(&b->il, UNPACK_SEQUENCE, (int)nout) < 0)
            goto done;
        fj_Var *rv = VAR(ret);
        if (nout == 1 && rv->kind == FJ_VAR_NODE && rv->source == NULL &&
            PyList_GET_ITEM(outputs, 0) == rv->obj) {
            if (fj_bc_emit(&b->il, RETURN_VALUE, 0) < 0)
                goto done;
            goto assemble;
        }
        for (Py_ssize_t i = 0; i < nout; i++) {
            PyObject *name = out_name(i);
            int r = name ? fj_builder_store_fast(b, name) : -1;
            Py_XDECREF(name);
            if (r < 0)
                goto done;
        }
    }
    if (emit_rebuild(b, co, ret, outputs) < 0 || fj_bc_emit(&b->il, RETURN_VALUE, 0) < 0)
        goto done;
assemble:
    (void)firstline;
    result = fj_builder_assemble(b, NULL);
done:
    fj_builder_clear(b);
    return result;
}
