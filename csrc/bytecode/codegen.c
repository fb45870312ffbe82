/*
** codegen.c: the code object that replaces a traced frame.  See codegen.h.
**
** Shape of the output (3.11's spelling; calls, NULLs and method loads are
** the dialect's, dialect.h):
**     <the original prologue: MAKE_CELL / COPY_FREE_VARS>
**     RESUME 0
**     LOAD_GLOBAL __compiled_fn_N (transparent mode: LOAD_CONST <fn>) with
**     the call's NULL; <load each input>; CALL n (the dialect's spelling)
**     UNPACK_SEQUENCE k; STORE_FAST ___graph_out_{k-1} ... ___graph_out_0
**     <rebuild the return value>; RETURN_VALUE
** When the return value is exactly the single output, the stores and loads
** are skipped: UNPACK_SEQUENCE 1; RETURN_VALUE.
*/
#include "codegen.h"

#include "evalframe.h"
#include "graph.h"
#include "walk.h"

#define VAR(o) ((fj_Var *)(o))

#define FJ_MAX_VALUE_DEPTH 100 /* deeper values are not rebuilt (a break), see emit_rebuild */

/*
** The state of the emission of one code object, made by codegen_begin,
** freed by codegen_end and passed down to what emits.
*/
typedef struct {
    fj_Builder *b;          /* borrowed: the builder of the new code */
    PyCodeObject *co;       /* borrowed: the code replaced */
    fj_Tracer *tx;          /* borrowed: its trace (identity of constants, shared values) */
    PyObject *outputs;      /* borrowed: list of fj_Node, the graph's output order */
    /*
    ** From tx->cyclic_values: a value contains itself, so lists and dicts are
    ** made empty and kept (memo) before their items are built, then filled
    ** (LIST_EXTEND / DICT_UPDATE); a tuple met again while its own items are
    ** built cannot be made and is a break.
    */
    int two_phase;
    PyObject *visiting;     /* strong set or NULL: id() of the tuples being built (two-phase) */
    int depth;              /* containers being rebuilt (emit_container) */
    /*
    ** Side effects change what a source loads: a global the trace stored, a
    ** cell it set.  Values read from such a source are loaded into
    ** temporaries before any effect is replayed, and values made in the frame
    ** are kept in one when first built (memo_store).
    */
    PyObject *preloaded;    /* strong dict or NULL (made by emit_effects): id(Var) -> temporary */
    /*
    ** Constants and identity (fj_trace_identity): id() of a computed value
    ** (FJ_ID_FRESH) -> the temporary that holds the object made for it, so
    ** every place holding it within a call gets one object, a new one on
    ** each call, as CPython makes.
    */
    PyObject *fresh_memo;   /* strong dict */
    /*
    ** Break code restores locals before it rebuilds values; an argument the
    ** trace reassigned would then no longer hold the value read from it.
    ** Such arguments are copied to ___orig_<name> first.
    */
    PyObject *saved_args;   /* strong dict or NULL (break code only): name -> temporary */
    /*
    ** Break code rebuilds values with a memo: a list, dict or function made
    ** in the frame is built once and kept in a temporary, so every place that
    ** held it sees the same object (the CPython part may mutate it).
    */
    PyObject *memo;         /* strong dict or NULL (break code only): id(Var) -> ___tmp_<n> */
    fj_TFrame *top;         /* borrowed: the top frame of the trace */
    /*
    ** The graph call runs under a handler (emit_graph_call): label of its
    ** code (emitted last, emit_raised_handler), or -1 when there is none.
    */
    int raised_label;
} CodegenCtx;

/* Adds id(v) to 'set': 1 when it was not there, 0 when it was, -1 on error. */
static int mark_once(PyObject *set, PyObject *v)
{
    PyObject *key = PyLong_FromVoidPtr(v);
    int has = key ? PySet_Contains(set, key) : -1;
    if (has == 0 && PySet_Add(set, key) < 0)
        has = -1;
    Py_XDECREF(key);
    return has < 0 ? -1 : !has;
}

/*
** The tuples being built (two-phase mode, see build_container): one met
** again while its items are built contains itself.  visit_begin: 1 first
** visit (marked), 0 already being visited, -1 on error; visit_end unmarks.
*/
static int visit_begin(CodegenCtx *cg, PyObject *v)
{
    if (cg->visiting == NULL && (cg->visiting = PySet_New(NULL)) == NULL)
        return -1;
    return mark_once(cg->visiting, v);
}

static void visit_end(CodegenCtx *cg, PyObject *v)
{
    PyObject *key = PyLong_FromVoidPtr(v);
    if (key == NULL || PySet_Discard(cg->visiting, key) < 0)
        PyErr_Clear();
    Py_XDECREF(key);
}

/*
** One walk (fj_var_walk) of fj_codegen_outputs / fj_codegen_break_outputs:
** the graph nodes a value needs, in first-use order, and which of its
** containers it holds in more than one place or inside themselves.
*/
typedef struct {
    fj_VarWalk w;
    PyObject *out;    /* strong: the list of fj_Node being filled */
    PyObject *shared; /* strong set: id(Var) of containers met more than once */
    int cyclic;       /* a container was met again on its own path */
    int for_break;    /* break code: it rebuilds the frame's cells and functions too */
} Collect;

static int collect_enter(fj_VarWalk *w, PyObject *v)
{
    Collect *c = w->arg;
    fj_Var *vv = VAR(v);
    switch (vv->kind) {
    case FJ_VAR_NODE: {
        fj_Node *n = (fj_Node *)vv->obj;
        if (vv->source != NULL || n->kind == FJ_NODE_PLACEHOLDER)
            return FJ_WALK_SKIP;
        int has = PySequence_Contains(c->out, (PyObject *)n);
        if (has < 0 || (!has && PyList_Append(c->out, (PyObject *)n) < 0))
            return -1;
        return FJ_WALK_SKIP;
    }
    case FJ_VAR_CONST:
    case FJ_VAR_OBJ:
        return FJ_WALK_SKIP;
    case FJ_VAR_CELL: /* the frame's cells are restored: their contents count */
    case FJ_VAR_FUNC:
        if (c->for_break)
            return FJ_WALK_INTO;
        break;
    case FJ_VAR_TUPLE:
        if (vv->source == NULL && vv->extra != NULL && fj_Node_Check(vv->extra)) {
            /* a named tuple NumPy returned (trace_multi.c): the call's own value */
            int has = PySequence_Contains(c->out, vv->extra);
            if (has < 0 || (!has && PyList_Append(c->out, vv->extra) < 0))
                return -1;
            return FJ_WALK_SKIP;
        }
        /* fall through */
    case FJ_VAR_LIST:
    case FJ_VAR_DICT:
        /* an input as it was is reloaded */
        return vv->source != NULL && !vv->pos ? FJ_WALK_SKIP : FJ_WALK_INTO;
    case FJ_VAR_INST: /* an instance made in the frame: its attributes */
    case FJ_VAR_RANGE: /* a range whose bounds are graph values: its bounds */
        return FJ_WALK_INTO;
    default:
        break;
    }
    return fj_unsupported("cannot return %R from a compiled frame", v);
}

static int collect_again(fj_VarWalk *w, PyObject *v, int on_path)
{
    Collect *c = w->arg;
    if (on_path)
        c->cyclic = 1;
    PyObject *key = PyLong_FromVoidPtr(v);
    int r = key == NULL ? -1 : PySet_Add(c->shared, key);
    Py_XDECREF(key);
    return r;
}

static int collect_init(Collect *c, int for_break)
{
    memset(c, 0, sizeof(*c));
    fj_var_walk_init(&c->w, FJ_PART_ITEMS | FJ_PART_ATTRS | FJ_PART_DEFAULTS, collect_enter,
                     collect_again, c, FJ_MAX_VALUE_DEPTH);
    c->for_break = for_break;
    c->out = PyList_New(0);
    c->shared = PySet_New(NULL);
    return c->out && c->shared ? 0 : -1;
}

static int collect(Collect *c, PyObject *v)
{
    return fj_var_walk(&c->w, v);
}

/* Ends a walk: returns the outputs list (new ref) or NULL when 'r' < 0.  The
** rebuild code needs to know whether a value contains itself: tx->cyclic_values. */
static PyObject *collect_end(Collect *c, fj_Tracer *tx, int r)
{
    PyObject *out = r < 0 ? NULL : Py_XNewRef(c->out);
    tx->cyclic_values = c->cyclic;
    Py_XSETREF(tx->shared_values, r < 0 ? NULL : Py_XNewRef(c->shared));
    Py_XDECREF(c->shared);
    Py_XDECREF(c->out);
    fj_var_walk_clear(&c->w);
    return out;
}

/* True for a free cell of the top frame that the trace set (STORE_DEREF). */
static int dirty_free_cell(PyObject *v)
{
    return v != NULL && VAR(v)->kind == FJ_VAR_CELL && VAR(v)->source != NULL && VAR(v)->pos &&
           PyList_GET_SIZE(VAR(v)->items) > 0;
}

PyObject *fj_codegen_outputs(PyObject *ret, fj_Tracer *tx)
{
    fj_TFrame *top = tx->top;
    Collect c;
    int r = collect_init(&c, 0) < 0 ? -1 : collect(&c, ret);
    for (Py_ssize_t i = 0; r == 0 && i < PyList_GET_SIZE(tx->effects); i++)
        r = collect(&c, PyTuple_GET_ITEM(PyList_GET_ITEM(tx->effects, i), 2));
    for (int i = 0; r == 0 && top != NULL && i < top->nlocals; i++)
        if (dirty_free_cell(top->locals[i]))
            r = collect(&c, PyList_GET_ITEM(VAR(top->locals[i])->items, 0));
    return collect_end(&c, tx, r);
}

#define EMIT(op, arg)                                                                              \
    do {                                                                                           \
        if (fj_bc_emit(&b->il, (op), (arg)) < 0)                                                   \
            return -1;                                                                             \
    } while (0)

/* Emits the loads that push the value at 'src' (an argument the break code
   saved: its temporary). */
static int emit_source(CodegenCtx *cg, fj_Source *src)
{
    fj_Builder *b = cg->b;
    int ix;
    switch (src->kind) {
    case FJ_SRC_LOCAL:
        if (cg->saved_args != NULL) {
            PyObject *tmp = PyDict_GetItemWithError(cg->saved_args, src->key);
            if (tmp != NULL)
                return fj_builder_load_fast(b, tmp) < 0 ? -1 : 0;
            if (PyErr_Occurred())
                return -1;
        }
        if (fj_code_local_kind(cg->co, (int)src->index) & FJ_FAST_CELL) {
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
        if (emit_source(cg, src->parent) < 0)
            return -1;
        return fj_builder_load_attr(b, src->key) < 0 ? -1 : 0;
    case FJ_SRC_ITEM:
    case FJ_SRC_INDEX: {
        if (emit_source(cg, src->parent) < 0)
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
    case FJ_SRC_SIZE: {
        /* x.shape[d]: an ndarray's or a plain tensor's (TENSOR_MATCH pinned its type) */
        PyObject *shape = PyUnicode_InternFromString("shape"), *d = PyLong_FromSsize_t(src->index);
        int r = shape != NULL && d != NULL ? emit_source(cg, src->parent) : -1;
        if (r >= 0)
            r = fj_builder_load_attr(b, shape);
        if (r >= 0)
            r = fj_builder_load_const(b, d);
        Py_XDECREF(shape);
        Py_XDECREF(d);
        if (r < 0)
            return -1;
        EMIT(BINARY_SUBSCR, 0);
        return 0;
    }
    case FJ_SRC_TYPE: /* guards only: no traced value is read as type(x) */
        break;
    case FJ_SRC_MODULE: {
        /* sys.modules[name], read as it is (an import with a fromlist would look up
           __path__, which a module's __getattr__ could answer): import sys (always
           in sys.modules; the frame's __import__ is guarded to be the builtin one) */
        PyObject *zero = PyLong_FromLong(0), *sys = PyUnicode_FromString("sys"),
                 *mods = PyUnicode_FromString("modules");
        int r = zero != NULL && sys != NULL && mods != NULL ? fj_builder_load_const(b, zero) : -1;
        if (r >= 0)
            r = fj_builder_load_const(b, Py_None);
        if (r >= 0)
            r = ix = fj_builder_name(b, sys);
        if (r >= 0)
            r = fj_bc_emit(&b->il, IMPORT_NAME, ix);
        if (r >= 0)
            r = fj_builder_load_attr(b, mods);
        if (r >= 0)
            r = fj_builder_load_const(b, src->key);
        Py_XDECREF(zero);
        Py_XDECREF(sys);
        Py_XDECREF(mods);
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

/* Emits the load of attribute 'name' of the top, or of its method pair
   (method).  0 or -1. */
static int emit_named(fj_Builder *b, int method, const char *name)
{
    PyObject *s = PyUnicode_FromString(name);
    int ix = s ? fj_builder_name(b, s) : -1;
    Py_XDECREF(s);
    if (ix < 0)
        return -1;
    return (method ? fj_dl_load_method(&b->il, ix) : fj_dl_load_attr(&b->il, ix)) < 0 ? -1 : 0;
}

/* Emits 'op' (LOAD_FAST, STORE_FAST, DELETE_FAST) on the local 'name', a new
   reference it consumes (NULL: the error is set).  0 or -1. */
static int emit_fast(fj_Builder *b, int op, PyObject *name)
{
    int ix = name ? fj_builder_varname(b, name) : -1;
    Py_XDECREF(name);
    return ix < 0 || fj_bc_emit(&b->il, op, ix) < 0 ? -1 : 0;
}

/* Emits code that pushes the runtime value of Var 'v'.  0 or -1. */
static int emit_rebuild(CodegenCtx *cg, PyObject *v);

/*
** Keeps the value on the stack in a new temporary <prefix><n> (n: the size
** of 'memo'), which 'memo' and, when not NULL, 'also' map 'key' to: emits
** COPY 1; STORE_FAST <prefix><n>.  0 or -1.
*/
static int keep_in_temp(fj_Builder *b, const char *prefix, PyObject *memo, PyObject *also,
                        PyObject *key)
{
    PyObject *tmp = PyUnicode_FromFormat("%s%zd", prefix, PyDict_GET_SIZE(memo));
    int r = tmp == NULL || PyDict_SetItem(memo, key, tmp) < 0 ||
                    (also != NULL && PyDict_SetItem(also, key, tmp) < 0) ||
                    fj_bc_emit(&b->il, COPY, 1) < 0 || fj_builder_store_fast(b, tmp) < 0
                ? -1
                : 0;
    Py_XDECREF(tmp);
    return r;
}

/*
** Lists, dicts and instances made in the frame are built once: the first
** build is kept in a temporary ___pre_<n> registered in 'preloaded', so a
** value held in two places (returned and stored into an input) is one
** object.  0 or -1.
*/
static int memo_store(CodegenCtx *cg, PyObject *v)
{
    if (cg->preloaded == NULL)
        return 0;
    PyObject *key = PyLong_FromVoidPtr(v);
    int r = key ? keep_in_temp(cg->b, "___pre_", cg->preloaded, NULL, key) : -1;
    Py_XDECREF(key);
    return r;
}

/* Pushes a Var (emit_rebuild, or emit_value in break code) or keeps one built.  0 or -1. */
typedef int (*EmitFn)(CodegenCtx *, PyObject *);

typedef struct {
    CodegenCtx *cg;
    EmitFn item;
} ItemsEmit;

static int emit_item(PyObject *v, PyObject *key, void *arg)
{
    ItemsEmit *ie = arg;
    return (key != NULL && fj_builder_load_const(ie->cg->b, key) < 0) || ie->item(ie->cg, v) < 0
               ? -1
               : 0;
}

/* Pushes 'items' (a list of Vars: each; a dict of constant keys to Vars:
   key, value pairs) with 'item', then builds them: BUILD_TUPLE/LIST/MAP n. */
static int emit_items(CodegenCtx *cg, PyObject *items, int build_op, EmitFn item)
{
    ItemsEmit ie = {cg, item};
    Py_ssize_t n = PyDict_Check(items) ? PyDict_GET_SIZE(items) : PyList_GET_SIZE(items);
    if (fj_var_visit_items(items, emit_item, &ie) < 0)
        return -1;
    return fj_bc_emit(&cg->b->il, build_op, (int)n) < 0 ? -1 : 0;
}

/*
** A tuple, list or dict made in the frame ('vv', no source), with 'item'
** pushing each item; 'memo' (a callback storing the container on the stack in
** a temporary that later loads reuse) runs once it exists: after the build,
** or in two-phase mode after the empty container is made (its items may then
** load it).  0, or -1 (Unsupported for a tuple that contains itself).
*/
static int build_container(CodegenCtx *cg, fj_Var *vv, EmitFn item, EmitFn memo)
{
    static const int build_ops[] = {[FJ_VAR_TUPLE] = BUILD_TUPLE, [FJ_VAR_LIST] = BUILD_LIST,
                                    [FJ_VAR_DICT] = BUILD_MAP};
    int op = build_ops[vv->kind];
    if (vv->kind == FJ_VAR_TUPLE && vv->extra == NULL && vv->extra2 != NULL && PyType_Check(vv->extra2))
        /* a torch.Size of symbolic sizes (t.shape of a dynamic tensor): torch.Size((...)),
           kept once made (it holds only ints: never itself) */
        return fj_dl_null_before(&cg->b->il) < 0 || fj_builder_load_const(cg->b, vv->extra2) < 0 ||
                       fj_dl_null_after(&cg->b->il) < 0 || emit_items(cg, vv->items, op, item) < 0 ||
                       fj_builder_call(cg->b, 1, NULL) < 0 || memo(cg, (PyObject *)vv) < 0
                   ? -1
                   : 0;
    if (!cg->two_phase)
        return emit_items(cg, vv->items, op, item) < 0 || memo(cg, (PyObject *)vv) < 0 ? -1 : 0;
    int r;
    if (vv->kind == FJ_VAR_TUPLE) {
        /* items before the tuple: it must not be met again while they are built */
        int first = visit_begin(cg, (PyObject *)vv);
        if (first <= 0)
            return first < 0 ? -1
                             : fj_unsupported("a tuple made in the frame contains itself");
        r = emit_items(cg, vv->items, op, item) < 0 || memo(cg, (PyObject *)vv) < 0 ? -1 : 0;
        visit_end(cg, (PyObject *)vv);
        return r;
    }
    /* [] or {}; kept; its items (which may load it); LIST_EXTEND / DICT_UPDATE */
    int list = vv->kind == FJ_VAR_LIST;
    if (fj_bc_emit(&cg->b->il, op, 0) < 0 || memo(cg, (PyObject *)vv) < 0 ||
        emit_items(cg, vv->items, list ? BUILD_TUPLE : BUILD_MAP, item) < 0 ||
        fj_bc_emit(&cg->b->il, list ? LIST_EXTEND : DICT_UPDATE, 1) < 0)
        return -1;
    return 0;
}

/* A tuple needs a memo only when the value holds it in more than one place. */
static int memo_needed(CodegenCtx *cg, PyObject *v)
{
    if (VAR(v)->kind != FJ_VAR_TUPLE || cg->two_phase)
        return 1;
    if (cg->tx->shared_values == NULL)
        return 1;
    PyObject *key = PyLong_FromVoidPtr(v);
    int shared = key == NULL ? -1 : PySet_Contains(cg->tx->shared_values, key);
    Py_XDECREF(key);
    return shared;
}

static int rebuild_memo(CodegenCtx *cg, PyObject *v)
{
    int need = memo_needed(cg, v);
    return need <= 0 ? need : memo_store(cg, v);
}

/* A tuple, list or dict made in the frame, built once (memo_store). */
static int emit_container(CodegenCtx *cg, fj_Var *vv)
{
    if (cg->depth > FJ_MAX_VALUE_DEPTH)
        return fj_unsupported("a value made in the frame nests deeper than %d levels",
                              FJ_MAX_VALUE_DEPTH);
    if (cg->two_phase && cg->preloaded == NULL)
        return fj_unsupported("a value that contains itself rebuilt without a memo");
    cg->depth++;
    int r = build_container(cg, vv, emit_rebuild, rebuild_memo);
    cg->depth--;
    return r;
}

/*
** An instance of a plain class made in the frame: object.__new__(cls), kept
** (so its attributes may refer back to it), then its __dict__ filled in the
** order the trace set it: tmp.__dict__.update({...}).  0 or -1.
*/
static int emit_instance(CodegenCtx *cg, fj_Var *inst)
{
    fj_Builder *b = cg->b;
    if (cg->preloaded == NULL)
        return fj_unsupported("an instance made in the frame rebuilt without a memo");
    PyObject *new_fn = PyObject_GetAttrString((PyObject *)&PyBaseObject_Type, "__new__");
    int r = new_fn == NULL || fj_dl_null_before(&b->il) < 0 ||
                    fj_builder_load_const(b, new_fn) < 0 || fj_dl_null_after(&b->il) < 0 ||
                    emit_rebuild(cg, inst->extra2) < 0 || fj_builder_call(b, 1, NULL) < 0 ||
                    memo_store(cg, (PyObject *)inst) < 0
                ? -1
                : 0;
    Py_XDECREF(new_fn);
    if (r < 0 || PyDict_GET_SIZE(inst->extra) == 0)
        return r;
    /* the temporary memo_store kept it in (borrowed from 'preloaded') */
    PyObject *key = PyLong_FromVoidPtr(inst);
    PyObject *tmp = key ? PyDict_GetItemWithError(cg->preloaded, key) : NULL;
    Py_XDECREF(key);
    return tmp == NULL || fj_builder_load_fast(b, tmp) < 0 ||
                   emit_named(b, 0, "__dict__") < 0 ||
                   emit_named(b, 1, "update") < 0 ||
                   emit_items(cg, inst->extra, BUILD_MAP, emit_rebuild) < 0 ||
                   fj_builder_call(b, 1, NULL) < 0 || fj_bc_emit(&b->il, POP_TOP, 0) < 0
               ? -1
               : 0;
}

static int const_identity(CodegenCtx *cg, PyObject *obj)
{
    fj_Var *tmp = fj_var_const(obj);
    int k = tmp == NULL ? -1 : fj_trace_identity(cg->tx, (PyObject *)tmp, obj);
    Py_XDECREF(tmp);
    return k;
}

/*
** Pushes a new object equal to the computed value 'obj' (FJ_ID_FRESH): a
** code constant would be one object for every call (and the code object
** interns name-like strings, making 'x' + str(n) the literal 'x1').
**   str, bytes: LOAD_CONST obj[:1]; LOAD_CONST obj[1:]; BINARY_OP +
**   int, float, complex: LOAD_CONST -obj; UNARY_NEGATIVE (bit-exact)
**   tuple: its items (constants, or made the same way); BUILD_TUPLE n
** 0, or -1 (Unsupported for an item of unknown identity).
*/
static int emit_fresh(CodegenCtx *cg, PyObject *obj, int depth)
{
    fj_Builder *b = cg->b;
    PyObject *key = PyLong_FromVoidPtr(obj), *tmp = NULL, *a = NULL, *c = NULL;
    int r = -1;
    if (key == NULL)
        return -1;
    if ((tmp = PyDict_GetItemWithError(cg->fresh_memo, key)) != NULL) {
        Py_DECREF(key);
        return fj_builder_load_fast(b, tmp) < 0 ? -1 : 0;
    }
    if (PyErr_Occurred() || depth > FJ_MAX_VALUE_DEPTH)
        goto done;
    if (PyUnicode_CheckExact(obj) || PyBytes_CheckExact(obj)) {
        Py_ssize_t n = PyObject_Length(obj);
        a = PySequence_GetSlice(obj, 0, 1);
        c = a ? PySequence_GetSlice(obj, 1, n) : NULL;
        if (c == NULL || fj_builder_load_const(b, a) < 0 || fj_builder_load_const(b, c) < 0 ||
            fj_bc_emit(&b->il, BINARY_OP, NB_ADD) < 0)
            goto done;
    }
    else if (PyTuple_CheckExact(obj)) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(obj); i++) {
            PyObject *item = PyTuple_GET_ITEM(obj, i);
            int k = const_identity(cg, item);
            if (k < 0)
                goto done;
            if (k == FJ_ID_UNKNOWN) {
                fj_unsupported("a tuple made in the frame holds an input's object");
                goto done;
            }
            if ((k == FJ_ID_FRESH ? emit_fresh(cg, item, depth + 1)
                                  : fj_builder_load_const(b, item)) < 0)
                goto done;
        }
        if (fj_bc_emit(&b->il, BUILD_TUPLE, (int)PyTuple_GET_SIZE(obj)) < 0)
            goto done;
    }
    else {
        if ((a = PyNumber_Negative(obj)) == NULL || fj_builder_load_const(b, a) < 0 ||
            fj_bc_emit(&b->il, UNARY_NEGATIVE, 0) < 0)
            goto done;
    }
    if (keep_in_temp(b, "___fresh_", cg->fresh_memo, NULL, key) < 0)
        goto done;
    r = 0;
done:
    Py_DECREF(key);
    Py_XDECREF(a);
    Py_XDECREF(c);
    return r;
}

/* A CONST Var: from its source when its identity is the input's, a new
   object when computed, else the constant itself.  0 or -1. */
static int emit_const(CodegenCtx *cg, fj_Var *vv)
{
    fj_Builder *b = cg->b;
    if (fj_trace_key_symbolic((PyObject *)vv))
        return fj_unsupported("a slice with symbolic bounds would leave the trace"); /* (trace.c
                                                                                      slice_feeds_subscript) */
    int k = fj_trace_identity(cg->tx, (PyObject *)vv, vv->obj);
    if (k < 0)
        return -1;
    if (vv->source != NULL && (k != FJ_ID_SHARED || !fj_is_plain_constant(vv->obj)))
        return emit_source(cg, vv->source);
    if (k == FJ_ID_UNKNOWN) {
        PyObject *r = fj_trace_safe_repr(vv->obj);
        if (r != NULL)
            fj_unsupported("%U is an input's object reached through an operation: its "
                           "identity is not known",
                           r);
        Py_XDECREF(r);
        return -1;
    }
    if (k == FJ_ID_FRESH)
        return emit_fresh(cg, vv->obj, 0);
    if (PySlice_Check(vv->obj)) {
        /* a new slice on each call, as CPython makes (and unhashable: no constant) */
        PySliceObject *sl = (PySliceObject *)vv->obj;
        return fj_builder_load_const(b, sl->start) < 0 || fj_builder_load_const(b, sl->stop) < 0 ||
                       fj_builder_load_const(b, sl->step) < 0 ||
                       fj_bc_emit(&b->il, BUILD_SLICE, 3) < 0
                   ? -1
                   : 0;
    }
    return fj_builder_load_const(b, vv->obj) < 0 ? -1 : 0;
}

static int emit_rebuild(CodegenCtx *cg, PyObject *v)
{
    fj_Var *vv = VAR(v);
    if (cg->preloaded != NULL && PyDict_GET_SIZE(cg->preloaded) > 0) {
        PyObject *key = PyLong_FromVoidPtr(v);
        PyObject *tmp = key ? PyDict_GetItemWithError(cg->preloaded, key) : NULL;
        Py_XDECREF(key);
        if (tmp != NULL)
            return fj_builder_load_fast(cg->b, tmp) < 0 ? -1 : 0;
        if (PyErr_Occurred())
            return -1;
    }
    if (vv->kind == FJ_VAR_CONST)
        return emit_const(cg, vv);
    if (vv->source != NULL)
        return emit_source(cg, vv->source);
    switch (vv->kind) {
    case FJ_VAR_NODE: {
        Py_ssize_t i = PySequence_Index(cg->outputs, vv->obj);
        return i < 0 ? -1 : emit_fast(cg->b, LOAD_FAST, out_name(i));
    }
    case FJ_VAR_TUPLE:
        if (vv->extra != NULL && fj_Node_Check(vv->extra)) { /* a named tuple NumPy returned */
            Py_ssize_t i = PySequence_Index(cg->outputs, vv->extra);
            return i < 0 ? -1 : emit_fast(cg->b, LOAD_FAST, out_name(i));
        }
        return emit_container(cg, vv);
    case FJ_VAR_LIST:
    case FJ_VAR_DICT:
        return emit_container(cg, vv);
    case FJ_VAR_INST:
        return emit_instance(cg, vv);
    case FJ_VAR_RANGE:
        /* range(start, stop, step) again, from the bounds' values (a fresh range is
           equal to it, and no program sees which range object it is) */
        if (fj_dl_null_before(&cg->b->il) < 0 || fj_builder_load_const(cg->b, (PyObject *)&PyRange_Type) < 0 ||
            fj_dl_null_after(&cg->b->il) < 0)
            return -1;
        for (Py_ssize_t k = 0; k < 3; k++)
            if (emit_rebuild(cg, PyTuple_GET_ITEM(vv->extra, k)) < 0)
                return -1;
        return fj_builder_call(cg->b, 3, NULL) < 0 ? -1 : 0;
    case FJ_VAR_METHOD:
        if (vv->pos) /* the method of a (method, self) pair is no value of its own */
            return fj_unsupported("cannot rebuild %R after the graph", v);
        /* a bound method value (LOAD_ATTR of a function of self's class): self.name
           makes the same bound method, as CPython's attribute read did */
        return emit_rebuild(cg, vv->extra) < 0 || fj_builder_load_attr(cg->b, vv->obj) < 0
                   ? -1
                   : 0;
    default:
        return fj_unsupported("cannot rebuild %R after the graph", v);
    }
}

/* Stores the free cells of the top frame that the trace set. 0 or -1. */
static int store_cells(CodegenCtx *cg)
{
    fj_TFrame *top = cg->top;
    for (int i = 0; top != NULL && i < top->nlocals; i++) {
        if (!dirty_free_cell(top->locals[i]))
            continue;
        int ix = fj_builder_deref(cg->b, fj_code_local_name(cg->co, i));
        if (ix < 0 || emit_rebuild(cg, PyList_GET_ITEM(VAR(top->locals[i])->items, 0)) < 0 ||
            fj_bc_emit(&cg->b->il, STORE_DEREF, ix) < 0)
            return -1;
    }
    return 0;
}

static int has_dirty_cells(fj_TFrame *top)
{
    for (int i = 0; top != NULL && i < top->nlocals; i++)
        if (dirty_free_cell(top->locals[i]))
            return 1;
    return 0;
}

/* The names of globals the trace stored, and the free cells it set. New set. */
static PyObject *unstable_roots(fj_Tracer *tx, PyCodeObject *co)
{
    PyObject *roots = PySet_New(NULL);
    for (Py_ssize_t i = 0; roots && i < PyList_GET_SIZE(tx->effects); i++) {
        PyObject *eff = PyList_GET_ITEM(tx->effects, i);
        PyObject *t;
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(eff, 0), "container") == 0)
            t = Py_NewRef(VAR(PyTuple_GET_ITEM(eff, 2))->source->text); /* its items change */
        else if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(eff, 0), "call") == 0)
            t = Py_NewRef(VAR(PyTuple_GET_ITEM(eff, 3))->source->text); /* its contents change */
        else if (PyTuple_GET_SIZE(eff) == 4) /* ("attr"/"delattr", name, value, obj): <obj>.name */
            t = PyUnicode_FromFormat("%U.%U", VAR(PyTuple_GET_ITEM(eff, 3))->source->text,
                                     PyTuple_GET_ITEM(eff, 1));
        else
            t = PyUnicode_FromFormat("G[%R]", PyTuple_GET_ITEM(eff, 1));
        if (t == NULL || PySet_Add(roots, t) < 0)
            Py_CLEAR(roots);
        Py_XDECREF(t);
    }
    fj_TFrame *top = tx->top;
    for (int i = 0; roots && top && i < top->nlocals; i++) {
        if (!dirty_free_cell(top->locals[i]))
            continue;
        PyObject *t = PyUnicode_FromFormat("L[%R]", fj_code_local_name(co, i));
        if (t == NULL || PySet_Add(roots, t) < 0)
            Py_CLEAR(roots);
        Py_XDECREF(t);
    }
    return roots;
}

/* The walk (fj_var_walk) of emit_effects that loads values before the effects. */
typedef struct {
    CodegenCtx *cg;
    PyObject *roots; /* borrowed: unstable_roots */
} Preload;

/* Loads into a temporary a Var read through a source an effect changes, and
   goes into what is rebuilt from its parts.  FJ_WALK_SKIP, FJ_WALK_INTO or -1. */
static int preload_enter(fj_VarWalk *w, PyObject *v)
{
    Preload *p = w->arg;
    CodegenCtx *cg = p->cg;
    fj_Var *vv = VAR(v);
    int loaded_as_const = 0; /* emit_const loads it with LOAD_CONST */
    if (vv->kind == FJ_VAR_CONST && fj_is_plain_constant(vv->obj)) {
        int k = fj_trace_identity(cg->tx, v, vv->obj);
        if (k < 0)
            return -1;
        loaded_as_const = k == FJ_ID_SHARED;
    }
    if (vv->source != NULL && vv->kind != FJ_VAR_CELL && !loaded_as_const) {
        /* unstable when any link of the chain is something an effect changes
           (a cell is not a value: its contents are walked) */
        int hit = 0;
        for (fj_Source *sv = vv->source; sv != NULL && hit == 0; sv = sv->parent)
            hit = PySet_Contains(p->roots, sv->text);
        if (hit <= 0)
            return hit;
        PyObject *key = PyLong_FromVoidPtr(v);
        if (key == NULL)
            return -1;
        int have = PyDict_Contains(cg->preloaded, key);
        int r = have;
        if (have == 0) {
            PyObject *tmp = PyUnicode_FromFormat("___pre_%zd", PyDict_GET_SIZE(cg->preloaded));
            r = tmp == NULL || emit_source(cg, vv->source) < 0 ||
                        fj_builder_store_fast(cg->b, tmp) < 0 ||
                        PyDict_SetItem(cg->preloaded, key, tmp) < 0
                    ? -1
                    : 0;
            Py_XDECREF(tmp);
        }
        Py_DECREF(key);
        if (r < 0)
            return -1;
        /* a mutated input container is replayed from its items: keep them too */
        if (!((vv->kind == FJ_VAR_LIST || vv->kind == FJ_VAR_DICT) && vv->pos))
            return FJ_WALK_SKIP;
    }
    return vv->kind != FJ_VAR_CONST && vv->kind != FJ_VAR_NODE ? FJ_WALK_INTO : FJ_WALK_SKIP;
}

/*
** The final contents of a mutated input list or dict, put back into the
** object: lst[:] = [items...] or d.clear(); d.update({...}).  0 or -1.
*/
static int emit_container_replay(CodegenCtx *cg, fj_Var *c)
{
    fj_Builder *b = cg->b;
    if (c->kind == FJ_VAR_LIST) {
        if (fj_trace_list_resized(c) &&
            PyList_GET_SIZE(c->items) == PyLong_AsSsize_t(c->extra2))
            /* lst[:] = <as many items> does not resize: the append then pop
               (or pop then append) the program made would be invisible */
            return fj_unsupported("%U grew or shrank and came back to its length: "
                                  "replaying its final contents would hide that",
                                  c->source->text);
        /* [:] made by BUILD_SLICE: a slice is unhashable, never a code constant */
        return emit_items(cg, c->items, BUILD_LIST, emit_rebuild) < 0 ||
                       emit_rebuild(cg, (PyObject *)c) < 0 ||
                       fj_builder_load_const(b, Py_None) < 0 ||
                       fj_builder_load_const(b, Py_None) < 0 ||
                       fj_bc_emit(&b->il, BUILD_SLICE, 2) < 0 || fj_bc_emit(&b->il, STORE_SUBSCR, 0) < 0
                   ? -1
                   : 0;
    }
    /* build the new contents first: they may read the old ones */
    return emit_items(cg, c->items, BUILD_MAP, emit_rebuild) < 0 ||
                   emit_rebuild(cg, (PyObject *)c) < 0 ||
                   emit_named(b, 1, "clear") < 0 || fj_builder_call(b, 0, NULL) < 0 ||
                   fj_bc_emit(&b->il, POP_TOP, 0) < 0 ||
                   emit_rebuild(cg, (PyObject *)c) < 0 || emit_named(b, 1, "update") < 0 || fj_bc_emit(&b->il, SWAP, 2) < 0 ||
                   fj_bc_emit(&b->il, SWAP, 3) < 0 || fj_builder_call(b, 1, NULL) < 0 ||
                   fj_bc_emit(&b->il, POP_TOP, 0) < 0
               ? -1
               : 0;
}

/*
** Replays the trace's side effects (global stores in program order, then
** the free cells it set), after loading every value read from a source they
** change: 'later' is a list of Vars emitted after the effects.  Starts
** 'preloaded' (the caller clears it when done).  0 or -1.
*/
static int emit_effects(CodegenCtx *cg, PyObject *later)
{
    fj_Builder *b = cg->b;
    fj_Tracer *tx = cg->tx;
    if (cg->preloaded == NULL && (cg->preloaded = PyDict_New()) == NULL)
        return -1;
    if (PyList_GET_SIZE(tx->effects) == 0 && !has_dirty_cells(tx->top))
        return 0;
    Preload p = {cg, unstable_roots(tx, cg->co)};
    fj_VarWalk w;
    fj_var_walk_init(&w, FJ_PART_ITEMS | FJ_PART_ATTRS | FJ_PART_DEFAULTS | FJ_PART_SELF,
                     preload_enter, NULL, &p, 0);
    int r = p.roots == NULL ? -1 : 0;
    for (Py_ssize_t i = 0; r == 0 && i < PyList_GET_SIZE(tx->effects); i++)
        r = fj_var_walk(&w, PyTuple_GET_ITEM(PyList_GET_ITEM(tx->effects, i), 2));
    for (int i = 0; r == 0 && tx->top && i < tx->top->nlocals; i++)
        if (dirty_free_cell(tx->top->locals[i]))
            r = fj_var_walk(&w, tx->top->locals[i]);
    for (Py_ssize_t i = 0; r == 0 && later && i < PyList_GET_SIZE(later); i++)
        r = fj_var_walk(&w, PyList_GET_ITEM(later, i));
    Py_XDECREF(p.roots);
    fj_var_walk_clear(&w);
    for (Py_ssize_t i = 0; r == 0 && i < PyList_GET_SIZE(tx->effects); i++) {
        PyObject *eff = PyList_GET_ITEM(tx->effects, i);
        PyObject *kind = PyTuple_GET_ITEM(eff, 0);
        if (PyUnicode_CompareWithASCIIString(kind, "container") == 0) {
            r = emit_container_replay(cg, VAR(PyTuple_GET_ITEM(eff, 2)));
            continue;
        }
        if (PyUnicode_CompareWithASCIIString(kind, "delglobal") == 0) {
            int ix = fj_builder_name(b, PyTuple_GET_ITEM(eff, 1));
            r = ix < 0 || fj_bc_emit(&b->il, DELETE_GLOBAL, ix) < 0 ? -1 : 0;
            continue;
        }
        if (PyUnicode_CompareWithASCIIString(kind, "delattr") == 0) {
            /* del obj.name */
            int ix = fj_builder_name(b, PyTuple_GET_ITEM(eff, 1));
            r = ix < 0 || emit_rebuild(cg, PyTuple_GET_ITEM(eff, 3)) < 0 ||
                        fj_bc_emit(&b->il, DELETE_ATTR, ix) < 0
                    ? -1
                    : 0;
            continue;
        }
        if (PyUnicode_CompareWithASCIIString(kind, "call") == 0) {
            /* obj.name(*args), its result dropped */
            fj_Var *argt = VAR(PyTuple_GET_ITEM(eff, 2));
            Py_ssize_t na = PyList_GET_SIZE(argt->items);
            r = emit_rebuild(cg, PyTuple_GET_ITEM(eff, 3)) < 0 ||
                        fj_builder_load_method(b, PyTuple_GET_ITEM(eff, 1)) < 0
                    ? -1
                    : 0;
            for (Py_ssize_t k = 0; r == 0 && k < na; k++)
                r = emit_rebuild(cg, PyList_GET_ITEM(argt->items, k));
            if (r == 0 && (fj_builder_call(b, (int)na, NULL) < 0 || fj_bc_emit(&b->il, POP_TOP, 0) < 0))
                r = -1;
            continue;
        }
        PyObject *name = PyTuple_GET_ITEM(eff, 1);
        int attr = PyTuple_GET_SIZE(eff) == 4;
        int ix = fj_builder_name(b, name);
        if (ix < 0 || emit_rebuild(cg, PyTuple_GET_ITEM(eff, 2)) < 0 ||
            (attr && emit_rebuild(cg, PyTuple_GET_ITEM(eff, 3)) < 0) ||
            fj_bc_emit(&b->il, attr ? STORE_ATTR : STORE_GLOBAL, ix) < 0)
            r = -1;
    }
    if (r == 0)
        r = store_cells(cg);
    return r;
}

int fj_codegen_can_rerun(PyCodeObject *co, PyObject *graph)
{
    int fn_flags = CO_OPTIMIZED | CO_NEWLOCALS;
    return (co->co_flags & fn_flags) == fn_flags && fj_graph_raised_fn() != NULL &&
           !fj_graph_mutates(graph);
}

/*
** Emits the call of the graph: LOAD_GLOBAL fn_name when it is a name
** (__compiled_fn_N), else LOAD_CONST of the compiled callable
** (framejit.config.transparent), with the NULL of the call pair, the loads
** of the placeholders, the call, UNPACK_SEQUENCE nout; with 'store', the
** outputs then go to ___graph_out_<i>.  0 or -1.
*/
static int emit_graph_call(CodegenCtx *cg, PyObject *fn_name, Py_ssize_t nout, int store)
{
    fj_Builder *b = cg->b;
    PyObject *placeholders = cg->tx->placeholders;
    Py_ssize_t nin = PyList_GET_SIZE(placeholders);
    if (fj_codegen_can_rerun(cg->co, cg->tx->graph)) {
        /* nothing before the call is visible, the stack is empty here */
        if ((cg->raised_label = fj_bc_new_label(&b->il)) < 0)
            return -1;
        fj_bc_set_handler(&b->il, FJ_LABEL_REF(cg->raised_label), 0, 0);
    }
    if (fj_dl_null_before(&b->il) < 0 ||
        (PyUnicode_Check(fn_name) ? fj_builder_load_global(b, fn_name, 0)
                                  : fj_builder_load_const(b, fn_name)) < 0 ||
        fj_dl_null_after(&b->il) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < nin; i++) {
        fj_Var *p = VAR(PyList_GET_ITEM(placeholders, i));
        if (emit_source(cg, p->source) < 0)
            return -1;
    }
    if (fj_builder_call(b, (int)nin, NULL) < 0)
        return -1;
    fj_bc_set_handler(&b->il, -1, 0, 0);
    if (fj_bc_emit(&b->il, UNPACK_SEQUENCE, (int)nout) < 0)
        return -1;
    for (Py_ssize_t i = 0; store && i < nout; i++)
        if (emit_fast(b, STORE_FAST, out_name(i)) < 0)
            return -1;
    return 0;
}

/*
** The handler around the graph call (emit_graph_call), after the code's
** last instruction:  [exc] -> framejit._C._graph_raised(exc); RERAISE 0.
** The hook then runs the frame's own code for the call when exc is an
** Exception (evalframe.c, "A graph that raised").  0 or -1.
*/
static int emit_raised_handler(CodegenCtx *cg)
{
    fj_InstrList *il = &cg->b->il;
    if (cg->raised_label < 0)
        return 0;
    fj_bc_set_handler(il, -1, 0, 0);
    if (fj_bc_place_label(il, cg->raised_label) < 0 || fj_dl_null_before(il) < 0 ||
        fj_builder_load_const(cg->b, fj_graph_raised_fn()) < 0 || fj_dl_null_after(il) < 0 ||
        fj_bc_emit(il, COPY, 3) < 0 || fj_builder_call(cg->b, 1, NULL) < 0 ||
        fj_bc_emit(il, POP_TOP, 0) < 0 || fj_bc_emit(il, RERAISE, 0) < 0)
        return -1;
    return 0;
}

/*
** The replacement code must be hashable like any code object (hash(f_code),
** code objects in sets and dict keys, the logging hooks): hash(code) hashes
** co_consts.  Unhashable values (lists, slices, arrays) are never loaded as
** constants: they are rebuilt on each call (BUILD_LIST, BUILD_SLICE) or
** loaded from their source.  Anything else that got in is a break: returns
** 'code', or NULL with Unsupported (the reference to 'code' is stolen).
*/
static PyObject *hashable_code(PyObject *code)
{
    if (code == NULL || PyObject_Hash(code) != -1)
        return code;
    Py_DECREF(code);
    /* TypeError for lists and the like; any other exception from a
       constant's own hash (a generic NumPy timedelta64 raises ValueError)
       means the same */
    if (PyErr_ExceptionMatches(PyExc_MemoryError))
        return NULL;
    PyErr_Clear();
    return fj_unsupported("the rewritten code would hold an unhashable constant"), NULL;
}

/* Copies the original's instructions before its first RESUME (cell setup). */
static int emit_prologue(fj_Builder *b, PyCodeObject *co)
{
    fj_InstrList orig;
    fj_bc_init(&orig);
    if (fj_bc_decode(co, &orig) < 0)
        return -1;
    int r = 0;
    for (int i = 0; i < orig.n; i++) {
        fj_Instr *in = &orig.v[i];
        fj_bc_set_pos(&b->il, in->line, in->end_line, in->col, in->end_col);
        if (in->op == RESUME)
            break;
        if (fj_bc_emit(&b->il, in->op, in->arg) < 0) {
            r = -1;
            break;
        }
    }
    fj_bc_free(&orig);
    return r;
}

/*
** Starts the code that replaces 'co' (traced by 'tx', 'outputs' the graph's)
** in 'cg': its emission state, the builder 'b', the original prologue and
** RESUME 0.  0 or -1; codegen_end ends it either way.
*/
static int codegen_begin(CodegenCtx *cg, fj_Builder *b, PyCodeObject *co, fj_Tracer *tx,
                         PyObject *outputs)
{
    memset(cg, 0, sizeof(*cg));
    memset(b, 0, sizeof(*b));
    cg->b = b;
    cg->co = co;
    cg->tx = tx;
    cg->top = tx->top;
    cg->outputs = outputs;
    cg->two_phase = tx->cyclic_values;
    cg->raised_label = -1;
    if ((cg->fresh_memo = PyDict_New()) == NULL || fj_builder_init(b, co) < 0 ||
        emit_prologue(b, co) < 0)
        return -1;
    return fj_bc_emit(&b->il, RESUME, 0);
}

/* Ends what codegen_begin started: frees the builder and the emission state. */
static void codegen_end(CodegenCtx *cg)
{
    fj_builder_clear(cg->b);
    Py_CLEAR(cg->visiting);
    Py_CLEAR(cg->preloaded);
    Py_CLEAR(cg->fresh_memo);
    Py_CLEAR(cg->saved_args);
    Py_CLEAR(cg->memo);
}

PyObject *fj_codegen_graph_call(PyCodeObject *co, PyObject *fn_name, fj_Tracer *tx,
                                PyObject *outputs, PyObject *ret)
{
    fj_TFrame *top = tx->top;
    fj_Builder bb, *b = &bb;
    CodegenCtx cgc, *cg = &cgc;
    PyObject *result = NULL;
    if (codegen_begin(cg, b, co, tx, outputs) < 0)
        goto done;
    Py_ssize_t nout = PyList_GET_SIZE(outputs);
    if (fn_name != NULL) {
        /* the value returned is exactly the single output: return it as unpacked */
        fj_Var *rv = VAR(ret);
        int direct = nout == 1 && rv->kind == FJ_VAR_NODE && rv->source == NULL &&
                     PyList_GET_ITEM(outputs, 0) == rv->obj && !has_dirty_cells(top) &&
                     PyList_GET_SIZE(tx->effects) == 0;
        if (emit_graph_call(cg, fn_name, nout, !direct) < 0)
            goto done;
        if (direct) {
            if (fj_bc_emit(&b->il, RETURN_VALUE, 0) < 0)
                goto done;
            goto assemble;
        }
    }
    PyObject *later = PyList_New(1);
    if (later == NULL)
        goto done;
    PyList_SET_ITEM(later, 0, Py_NewRef(ret));
    int r = emit_effects(cg, later);
    Py_DECREF(later);
    if (r < 0)
        goto done;
    if (emit_rebuild(cg, ret) < 0 || fj_bc_emit(&b->il, RETURN_VALUE, 0) < 0)
        goto done;
assemble:
    if (emit_raised_handler(cg) < 0)
        goto done;
    result = hashable_code(fj_builder_assemble(b, NULL));
done:
    codegen_end(cg);
    return result;
}

/* ------------------------------------------------------------ breaks */

/*
** A function made in the frame (MAKE_FUNCTION), rebuilt: its defaults, its
** closure from the frame's own cells (LOAD_CLOSURE of the slot holding each
** cell), its code.  0, or -1 (Unsupported when a cell is not the frame's).
*/
static int emit_value(CodegenCtx *cg, PyObject *v);

static int emit_function(CodegenCtx *cg, fj_Var *f)
{
    int flags = 0;
    if (f->extra != NULL) {
        if (emit_value(cg, f->extra) < 0)
            return -1;
        flags |= 0x01;
    }
    if (f->extra2 != NULL) {
        if (emit_value(cg, f->extra2) < 0)
            return -1;
        flags |= 0x02;
    }
    if (f->items != NULL) {
        fj_Var *cl = VAR(f->items);
        if (cl->kind != FJ_VAR_TUPLE)
            return fj_unsupported("closure of %R is not known", (PyObject *)f);
        Py_ssize_t n = PyList_GET_SIZE(cl->items);
        for (Py_ssize_t j = 0; j < n; j++) {
            PyObject *cell = PyList_GET_ITEM(cl->items, j);
            int slot = -1;
            for (int i = 0; i < cg->top->nlocals && slot < 0; i++)
                if (cg->top->locals[i] == cell)
                    slot = i;
            if (slot < 0)
                return fj_unsupported("closure cell of %R is not a cell of the frame", (PyObject *)f);
            int ix = fj_builder_deref(cg->b, fj_code_local_name(cg->co, slot));
            if (ix < 0 || fj_dl_load_closure(&cg->b->il, ix) < 0)
                return -1;
        }
        if (fj_bc_emit(&cg->b->il, BUILD_TUPLE, (int)n) < 0)
            return -1;
        flags |= 0x08;
    }
    if (fj_builder_load_const(cg->b, f->obj) < 0 || fj_dl_make_function(&cg->b->il, flags) < 0)
        return -1;
    return 0;
}

/* Keeps the value on the stack in a new ___tmp_<n> (COPY 1; STORE_FAST) that
   later loads of Var 'v' reuse.  0 or -1. */
static int value_memo(CodegenCtx *cg, PyObject *v)
{
    int need = memo_needed(cg, v);
    if (need <= 0)
        return need;
    PyObject *key = PyLong_FromVoidPtr(v);
    int r = key ? keep_in_temp(cg->b, "___tmp_", cg->memo, cg->preloaded, key) : -1;
    Py_XDECREF(key);
    return r;
}

static int emit_value(CodegenCtx *cg, PyObject *v)
{
    fj_Var *vv = VAR(v);
    /* containers made in the frame and functions are made once, so every
    ** place that holds one sees the same object (the CPython part may mutate
    ** it; the cell that holds a function and an attribute store on it:
    ** test.support.bigmemtest's wrapper.size) */
    int made = ((vv->kind == FJ_VAR_LIST || vv->kind == FJ_VAR_DICT || vv->kind == FJ_VAR_TUPLE) &&
                vv->source == NULL) ||
               vv->kind == FJ_VAR_FUNC;
    if (vv->kind == FJ_VAR_TUPLE && vv->extra != NULL && fj_Node_Check(vv->extra))
        made = 0; /* a named tuple NumPy returned: the call's own value (emit_rebuild) */
    if (!made)
        return emit_rebuild(cg, v);
    PyObject *key = PyLong_FromVoidPtr(v);
    if (key == NULL)
        return -1;
    PyObject *tmp = PyDict_GetItemWithError(cg->memo, key);
    if (tmp == NULL && !PyErr_Occurred() && cg->preloaded != NULL) /* built by emit_rebuild */
        tmp = PyDict_GetItemWithError(cg->preloaded, key);
    Py_DECREF(key);
    if (tmp != NULL)
        return fj_builder_load_fast(cg->b, tmp) < 0 ? -1 : 0;
    if (PyErr_Occurred())
        return -1;
    if (vv->kind == FJ_VAR_FUNC)
        return emit_function(cg, vv) < 0 || value_memo(cg, v) < 0 ? -1 : 0;
    return build_container(cg, vv, emit_value, value_memo);
}

static int collect_all(Collect *c, PyObject *v)
{
    fj_Var *vv = VAR(v);
    if (vv->kind == FJ_VAR_NULL)
        return 0;
    if (vv->kind == FJ_VAR_METHOD) /* (method, self): the break code reloads it from self */
        return collect(c, vv->extra);
    return collect(c, v);
}

PyObject *fj_codegen_break_outputs(fj_Tracer *tx, const unsigned char *restore)
{
    fj_TFrame *top = tx->top;
    Collect c;
    int r = collect_init(&c, 1);
    for (int i = 0; r == 0 && i < top->nlocals; i++) {
        PyObject *v = top->locals[i];
        if (v != NULL && (restore[i] || VAR(v)->kind == FJ_VAR_CELL))
            r = collect_all(&c, v);
    }
    for (int i = 0; r == 0 && i < top->sp; i++)
        r = collect_all(&c, top->stack[i]);
    for (Py_ssize_t i = 0; r == 0 && i < PyList_GET_SIZE(tx->effects); i++)
        r = collect_all(&c, PyTuple_GET_ITEM(PyList_GET_ITEM(tx->effects, i), 2));
    return collect_end(&c, tx, r);
}

/* drop_temporaries' walk goes into every Var rebuilding a value may emit. */
static int enter_all(fj_VarWalk *w, PyObject *v)
{
    return FJ_WALK_INTO;
}

/* Deletes (DELETE_FAST) the temporary named by each value of 'names' whose
   key is not in 'keep' (a set or dict), and forgets it.  0 or -1. */
static int delete_unkept(fj_Builder *b, PyObject *names, PyObject *keep)
{
    PyObject *drop = PyList_New(0), *k, *tmp;
    Py_ssize_t pos = 0;
    int r = -1;
    if (drop == NULL)
        return -1;
    while (PyDict_Next(names, &pos, &k, &tmp)) {
        int kept = PySequence_Contains(keep, k);
        if (kept < 0)
            goto done;
        if (kept)
            continue;
        if (emit_fast(b, DELETE_FAST, Py_NewRef(tmp)) < 0 || PyList_Append(drop, k) < 0)
            goto done;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(drop); i++)
        if (PyDict_DelItem(names, PyList_GET_ITEM(drop, i)) < 0)
            goto done;
    r = 0;
done:
    Py_DECREF(drop);
    return r;
}

/* See the call in fj_codegen_break.  0 or -1. */
static int drop_temporaries(CodegenCtx *cg, int base, int have_outputs)
{
    fj_Builder *b = cg->b;
    fj_TFrame *top = cg->top;
    fj_VarWalk w; /* w.seen: id(Var) -> Var of every Var reached (a walk cut short
                     would drop a needed temporary: too deep is Unsupported) */
    fj_var_walk_init(&w,
                     FJ_PART_ITEMS | FJ_PART_CLASS | FJ_PART_ATTRS | FJ_PART_DEFAULTS |
                         FJ_PART_CLOSURE | FJ_PART_SELF,
                     enter_all, NULL, NULL, 4 * FJ_MAX_VALUE_DEPTH);
    PyObject *keep_saved = PySet_New(NULL), *needed_out = PySet_New(NULL);
    int r = -1;
    if ((w.seen = PyDict_New()) == NULL || keep_saved == NULL || needed_out == NULL)
        goto done;
    for (int i = 0; i < base; i++)
        if (fj_var_walk(&w, top->stack[i]) < 0)
            goto done;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(w.seen, &pos, &k, &v)) {
        fj_Var *vv = VAR(v);
        for (fj_Source *src = vv->source; src != NULL; src = src->parent)
            if (src->kind == FJ_SRC_LOCAL && PySet_Add(keep_saved, src->key) < 0)
                goto done;
        if (vv->kind == FJ_VAR_NODE && PySet_Add(needed_out, vv->obj) < 0)
            goto done;
        if (vv->kind == FJ_VAR_TUPLE && vv->extra != NULL && fj_Node_Check(vv->extra) &&
            PySet_Add(needed_out, vv->extra) < 0) /* a named tuple: its call's output */
            goto done;
    }
    /* the entry values of reassigned arguments */
    if (delete_unkept(b, cg->saved_args, keep_saved) < 0)
        goto done;
    /* lists, dicts and functions made in the frame (memoized in ___tmp_<n>) */
    if (delete_unkept(b, cg->memo, w.seen) < 0)
        goto done;
    /* graph outputs (all stored to ___graph_out_<i> by the break code) */
    for (Py_ssize_t i = 0; have_outputs && i < PyList_GET_SIZE(cg->outputs); i++) {
        int keep = PySet_Contains(needed_out, PyList_GET_ITEM(cg->outputs, i));
        if (keep < 0 || (!keep && emit_fast(b, DELETE_FAST, out_name(i)) < 0))
            goto done;
    }
    r = 0;
done:
    fj_var_walk_clear(&w);
    Py_XDECREF(keep_saved);
    Py_XDECREF(needed_out);
    return r;
}

/* Emits 'op arg' with the position of original instruction 'in'. */
static int emit_at(fj_Builder *b, const fj_Instr *in, int op, int arg)
{
    fj_bc_set_pos(&b->il, in->line, in->end_line, in->col, in->end_col);
    return fj_bc_emit(&b->il, op, arg);
}

/*
** Emits the call of a resume function (callable and 'nargs' arguments on the
** stack) and the return of its result.  An exception out of the resume
** function leaves without this frame's traceback entry, so tracebacks show
** the function once, at the line that raised, as without framejit:
**     the call                         (handler: the cleanup below)
**     RETURN_VALUE
**   cleanup:                           [exc]
**     PUSH_EXC_INFO; COPY 1; COPY 1    [prev, exc, exc, exc]
**     LOAD_ATTR __traceback__; LOAD_ATTR tb_next
**     SWAP 2; STORE_ATTR __traceback__ [prev, exc]   exc.__traceback__ = tb.tb_next
**     SWAP 2; POP_EXCEPT; RERAISE 0    (RERAISE adds no traceback entry)
** This frame's entry is the head of the traceback when the handler runs.
** 0 or -1.
*/
static int emit_resume_call(fj_Builder *b, int nargs)
{
    fj_InstrList *il = &b->il;
    int label = fj_bc_new_label(il);
    if (label < 0)
        return -1;
    PyObject *tb = PyUnicode_FromString("__traceback__");
    PyObject *next = tb ? PyUnicode_FromString("tb_next") : NULL;
    int itb = next ? fj_builder_name(b, tb) : -1;
    int inext = itb >= 0 ? fj_builder_name(b, next) : -1;
    Py_XDECREF(tb);
    Py_XDECREF(next);
    if (inext < 0)
        return -1;
    fj_bc_set_handler(il, FJ_LABEL_REF(label), 0, 0);
    if (fj_builder_call(b, nargs, NULL) < 0)
        return -1;
    fj_bc_set_handler(il, -1, 0, 0);
    if (fj_bc_emit(il, RETURN_VALUE, 0) < 0 || fj_bc_place_label(il, label) < 0 ||
        fj_bc_emit(il, PUSH_EXC_INFO, 0) < 0 || fj_bc_emit(il, COPY, 1) < 0 ||
        fj_bc_emit(il, COPY, 1) < 0 || fj_dl_load_attr(il, itb) < 0 ||
        fj_dl_load_attr(il, inext) < 0 || fj_bc_emit(il, SWAP, 2) < 0 ||
        fj_bc_emit(il, STORE_ATTR, itb) < 0 || fj_bc_emit(il, SWAP, 2) < 0 ||
        fj_bc_emit(il, POP_EXCEPT, 0) < 0 || fj_bc_emit(il, RERAISE, 0) < 0)
        return -1;
    return 0;
}

/*
** What the memo dicts held at one point of the emission (a branch point of
** the break code): code emitted on one path must not load temporaries only
** another path stored, so each path starts again from the state saved.
*/
typedef struct {
    PyObject *memo, *preloaded, *fresh_memo; /* strong copies, or NULL */
} MemoState;

static int memo_save(CodegenCtx *cg, MemoState *st)
{
    st->memo = PyDict_Copy(cg->memo);
    st->preloaded = cg->preloaded ? PyDict_Copy(cg->preloaded) : NULL;
    st->fresh_memo = PyDict_Copy(cg->fresh_memo);
    return st->memo == NULL || (cg->preloaded != NULL && st->preloaded == NULL) ||
                   st->fresh_memo == NULL
               ? -1
               : 0;
}

/* Goes back to the state 'st' saved (which it hands over). */
static void memo_restore(CodegenCtx *cg, MemoState *st)
{
    Py_SETREF(cg->memo, st->memo);
    if (st->preloaded != NULL)
        Py_SETREF(cg->preloaded, st->preloaded);
    Py_SETREF(cg->fresh_memo, st->fresh_memo);
    st->memo = st->preloaded = st->fresh_memo = NULL;
}

static void memo_state_clear(MemoState *st)
{
    Py_CLEAR(st->memo);
    Py_CLEAR(st->preloaded);
    Py_CLEAR(st->fresh_memo);
}

/*
** Calls a resume function 'rname' (a function, its global's name, or (code,
** free variable names): a closure over the frame's cells) with the stack
** entries below the break (the first 'nbelow', NULLs left out: the resume
** function makes them), the break's results ___res_<j> (npush), the
** exception in local 'exc' (or NULL) and the locals 'rargs'; returns what
** it returns (emit_resume_call).  0 or -1.
*/
static int emit_continuation(CodegenCtx *cg, PyObject *rname, PyObject *rargs, int nbelow,
                             int npush, PyObject *exc)
{
    fj_Builder *b = cg->b;
    int nargs = 0;
    if (fj_dl_null_before(&b->il) < 0)
        return -1;
    if (PyTuple_Check(rname)) {
        PyObject *rcode = PyTuple_GET_ITEM(rname, 0), *fv = PyTuple_GET_ITEM(rname, 1);
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(fv); j++) {
            int ix = fj_builder_deref(b, PyTuple_GET_ITEM(fv, j));
            if (ix < 0 || fj_dl_load_closure(&b->il, ix) < 0)
                return -1;
        }
        if (fj_bc_emit(&b->il, BUILD_TUPLE, (int)PyTuple_GET_SIZE(fv)) < 0 ||
            fj_builder_load_const(b, rcode) < 0 || fj_dl_make_function(&b->il, 0x08) < 0)
            return -1;
    }
    else if ((PyUnicode_Check(rname) ? fj_builder_load_global(b, rname, 0)
                                     : fj_builder_load_const(b, rname)) < 0)
        return -1;
    if (fj_dl_null_after(&b->il) < 0)
        return -1;
    for (int i = 0; i < nbelow; i++) {
        fj_Var *vv = VAR(cg->top->stack[i]);
        if (vv->kind == FJ_VAR_NULL)
            continue;
        if (emit_value(cg, (PyObject *)vv) < 0)
            return -1;
        nargs++;
    }
    for (int j = 0; j < npush; j++, nargs++)
        if (emit_fast(b, LOAD_FAST, PyUnicode_FromFormat("___res_%d", j)) < 0)
            return -1;
    if (exc != NULL) {
        if (fj_builder_load_fast(b, exc) < 0)
            return -1;
        nargs++;
    }
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(rargs); j++) {
        if (fj_builder_load_fast(b, PyTuple_GET_ITEM(rargs, j)) < 0)
            return -1;
        nargs++;
    }
    return emit_resume_call(b, nargs);
}

PyObject *fj_codegen_break(PyCodeObject *co, const fj_InstrList *il, fj_Tracer *tx,
                           PyObject *fn_name, PyObject *outputs, const fj_BreakPlan *plan,
                           const unsigned char *restore, PyObject *const *resume_names,
                           PyObject *const *resume_args)
{
    fj_Builder bb, *b = &bb;
    CodegenCtx cgc, *cg = &cgc;
    fj_TFrame *top = tx->top;
    PyObject *result = NULL;
    /* at the break: for the second continuation, for the handler's */
    MemoState at_jump = {NULL, NULL, NULL}, at_handler = {NULL, NULL, NULL};
    if (codegen_begin(cg, b, co, tx, outputs) < 0 || (cg->memo = PyDict_New()) == NULL)
        goto done;
    /* keep the entry values of arguments the trace reassigned */
    if ((cg->saved_args = PyDict_New()) == NULL)
        goto done;
    for (int i = 0; i < top->nlocals && i < FJ_CODE_NLOCALSPLUS(co); i++) {
        /* a cell argument may be rebound through its cell (STORE_DEREF does not
           mark it touched): always keep its entry value, read from the cell */
        int cell = (fj_code_local_kind(co, i) & FJ_FAST_CELL) != 0;
        if (!fj_trace_is_arg_slot(top, i) || (!top->touched[i] && !cell))
            continue;
        PyObject *name = fj_code_local_name(co, i);
        PyObject *tmp = PyUnicode_FromFormat("___orig_%U", name);
        int ix = cell ? fj_builder_deref(b, name) : 0;
        int bad = tmp == NULL || ix < 0 ||
                  (cell ? fj_bc_emit(&b->il, LOAD_DEREF, ix) : fj_builder_load_fast(b, name)) < 0 ||
                  fj_builder_store_fast(b, tmp) < 0 || PyDict_SetItem(cg->saved_args, name, tmp) < 0;
        Py_XDECREF(tmp);
        if (bad)
            goto done;
    }
    if (fn_name != NULL &&
        emit_graph_call(cg, fn_name, PyList_GET_SIZE(outputs), 1) < 0)
        goto done;
    /* side effects before the CPython part runs */
    {
        PyObject *later = PyList_New(0);
        for (int i = 0; later && i < top->nlocals; i++)
            if (top->locals[i] != NULL && PyList_Append(later, top->locals[i]) < 0)
                Py_CLEAR(later);
        for (int i = 0; later && i < top->sp; i++)
            if (PyList_Append(later, top->stack[i]) < 0)
                Py_CLEAR(later);
        int r = later ? emit_effects(cg, later) : -1;
        Py_XDECREF(later);
        if (r < 0)
            goto done;
    }
    /* the frame's locals as the CPython part and the resume functions expect them */
    int nargs_total = fj_code_nargs(co);
    for (int i = 0; i < top->nlocals; i++) {
        if (!restore[i] || fj_trace_arg_untouched(top, i) ||
            (fj_code_local_kind(co, i) & (FJ_FAST_CELL | FJ_FAST_FREE)))
            continue;
        PyObject *name = fj_code_local_name(co, i);
        PyObject *v = top->locals[i];
        if (v == NULL) {
            if (i < nargs_total && fj_bc_emit(&b->il, DELETE_FAST, fj_builder_varname(b, name)) < 0)
                goto done;
            continue;
        }
        fj_Var *vv = VAR(v);
        if (vv->source != NULL && vv->source->kind == FJ_SRC_LOCAL && vv->source->index == i)
            continue; /* still the caller's argument */
        if (emit_value(cg, v) < 0 || fj_builder_store_fast(b, name) < 0)
            goto done;
    }
    /* cells of the frame whose contents the trace set (STORE_DEREF, cell arguments) */
    for (int i = 0; i < top->nlocals; i++) {
        fj_Var *cell = VAR(top->locals[i]);
        if (top->locals[i] == NULL || cell->kind != FJ_VAR_CELL ||
            PyList_GET_SIZE(cell->items) == 0)
            continue;
        if (cell->source != NULL || !(fj_code_local_kind(co, i) & FJ_FAST_CELL))
            continue; /* free cells the trace set were stored with the effects */
        fj_Var *contents = VAR(PyList_GET_ITEM(cell->items, 0));
        if (contents->source != NULL && contents->source->kind == FJ_SRC_LOCAL &&
            contents->source->index == i && !top->touched[i])
            continue; /* the argument the cell was made from */
        int ix = fj_builder_deref(b, fj_code_local_name(co, i));
        if (ix < 0 || emit_value(cg, (PyObject *)contents) < 0 ||
            fj_bc_emit(&b->il, STORE_DEREF, ix) < 0)
            goto done;
    }
    /* the operands of the instructions that run in CPython */
    int base = top->sp - plan->npop;
    if (base < 0) {
        fj_unsupported("graph break with a short stack");
        goto done;
    }
    for (int i = base; i < top->sp; i++) {
        fj_Var *vv = VAR(top->stack[i]);
        if (vv->kind == FJ_VAR_NULL) {
            if (fj_bc_emit(&b->il, PUSH_NULL, 0) < 0)
                goto done;
        }
        else if (vv->kind == FJ_VAR_METHOD && vv->pos && i + 1 < top->sp &&
                 top->stack[i + 1] == vv->extra) {
            /* (method, self) from LOAD_METHOD: load it again */
            if (emit_value(cg, vv->extra) < 0 || fj_builder_load_method(b, vv->obj) < 0)
                goto done;
            i++;
        }
        else if (emit_value(cg, (PyObject *)vv) < 0)
            goto done;
    }
    /* The break code's own temporaries (entry values of reassigned
       arguments, lists and functions made in the frame, graph outputs) hold
       references CPython's frame would not: drop them before the CPython part
       runs (a refcount or weakref it checks sees what it would without
       framejit), except those the stack handed to the resume function is
       rebuilt from after it. */
    if (drop_temporaries(cg, base, fn_name != NULL) < 0)
        goto done;
    int jump_label = -1, handler_label = -1;
    if (plan->handler >= 0) {
        /* what runs in CPython raises into the original's handler: here into
           the call of the handler's resume function (at the end); the stack
           holds only the operands, which CPython drops */
        if ((handler_label = fj_bc_new_label(&b->il)) < 0)
            goto done;
        fj_bc_set_handler(&b->il, FJ_LABEL_REF(handler_label), 0, plan->hlasti);
    }
    /* a comprehension run whole (FJ_BREAK_REGION): its jumps stay inside it
       (or go just past it), each to a label of the copy */
    int nregion = plan->last - plan->first + 2;
    int *region_labels = NULL;
    if (plan->kind == FJ_BREAK_REGION) {
        if ((region_labels = PyMem_Calloc((size_t)nregion, sizeof(int))) == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        for (int j = 0; j < nregion; j++)
            if ((region_labels[j] = fj_bc_new_label(&b->il)) < 0) {
                PyMem_Free(region_labels);
                goto done;
            }
    }
    for (int k = plan->first; k <= plan->last; k++) {
        const fj_Instr *in = &il->v[k];
        if (region_labels != NULL) {
            int bad = fj_bc_place_label(&b->il, region_labels[k - plan->first]) < 0;
            if (!bad && fj_opcode_jump_dir(in->op) != 0) {
                fj_bc_set_pos(&b->il, in->line, in->end_line, in->col, in->end_col);
                bad = fj_bc_emit_jump(&b->il, in->op, region_labels[in->target - plan->first]) < 0;
            }
            else if (!bad)
                bad = emit_at(b, in, in->op, in->arg) < 0;
            if (bad) {
                PyMem_Free(region_labels);
                goto done;
            }
            continue;
        }
        if (plan->kind == FJ_BREAK_JUMP && k == plan->last) {
            if ((jump_label = fj_bc_new_label(&b->il)) < 0)
                goto done;
            fj_bc_set_pos(&b->il, in->line, in->end_line, in->col, in->end_col);
            if (fj_bc_emit_jump(&b->il, in->op, jump_label) < 0)
                goto done;
        }
        else if (emit_at(b, in, in->op, in->arg) < 0)
            goto done;
    }
    if (region_labels != NULL) {
        int bad = fj_bc_place_label(&b->il, region_labels[nregion - 1]) < 0;
        PyMem_Free(region_labels);
        if (bad)
            goto done;
    }
    fj_bc_set_handler(&b->il, -1, 0, 0);
    /* each continuation: save the results, call the resume function; values
       first built in one branch's code are built again in the other's */
    if (memo_save(cg, &at_jump) < 0 || (plan->handler >= 0 && memo_save(cg, &at_handler) < 0))
        goto done;
    for (int r = 0; r < plan->nresume; r++) {
        if (r == 1)
            memo_restore(cg, &at_jump);
        if (r == 1 && fj_bc_place_label(&b->il, jump_label) < 0)
            goto done;
        for (int j = plan->npush - 1; j >= 0; j--)
            if (emit_fast(b, STORE_FAST, PyUnicode_FromFormat("___res_%d", j)) < 0)
                goto done;
        if (emit_continuation(cg, resume_names[r], resume_args[r], base, plan->npush, NULL) < 0)
            goto done;
    }
    if (plan->handler >= 0) {
        /* [lasti], exc: the handler's resume function takes the stack
           entries it keeps, rebuilt as at the break, and the exception */
        memo_restore(cg, &at_handler);
        const fj_Instr *raiser = &il->v[plan->last];
        fj_bc_set_pos(&b->il, raiser->line, raiser->end_line, raiser->col, raiser->end_col);
        PyObject *exc = PyUnicode_FromString("___exc");
        int bad = exc == NULL || fj_bc_place_label(&b->il, handler_label) < 0 ||
                  fj_builder_store_fast(b, exc) < 0 ||
                  (plan->hlasti && fj_bc_emit(&b->il, POP_TOP, 0) < 0) ||
                  emit_continuation(cg, resume_names[2], resume_args[2], plan->hdepth, 0, exc) < 0;
        Py_XDECREF(exc);
        if (bad)
            goto done;
    }
    if (emit_raised_handler(cg) < 0)
        goto done;
    result = hashable_code(fj_builder_assemble(b, NULL));
done:
    codegen_end(cg);
    memo_state_clear(&at_jump);
    memo_state_clear(&at_handler);
    return result;
}
