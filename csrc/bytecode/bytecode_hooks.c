/*
** bytecode_hooks.c: Python-visible test hooks of the bytecode layer.
**
** Responsible for: framejit._C._testing.bc_decode, bc_roundtrip, bc_assemble,
** bc_stackdepth, bc_insert_nops, bc_split_pairs, bc_build, bc_real_opcode and
** bc_dialect, thin wrappers that let tests/test_bytecode.py drive bytecode.c,
** bytecode_builder.c and the dialect unit, and fj_bytecode_init.
**
** Not responsible for: any bytecode logic (bytecode.c, bytecode_builder.c).
** The hooks are for tests; the compiler calls the C API directly.
*/
#include "bytecode.h"

#if FJ_SUPPORTED

/* int or None (for -1).  New reference, NULL on error. */
static PyObject *int_or_none(int v)
{
    if (v < 0)
        Py_RETURN_NONE;
    return PyLong_FromLong(v);
}

/* Names of the pseudo-instruction kinds, for tests (a kind added to dialect.h
** and not here reads as "PI_<number>"). */
static const char *const pi_names[FJ_PI__COUNT] = {
    [FJ_PI_OTHER] = "OTHER",
    [FJ_PI_NOP] = "NOP",
    [FJ_PI_PRECALL] = "PRECALL",
    [FJ_PI_POP_TOP] = "POP_TOP",
    [FJ_PI_PUSH_NULL] = "PUSH_NULL",
    [FJ_PI_COPY] = "COPY",
    [FJ_PI_SWAP] = "SWAP",
    [FJ_PI_LOAD_CONST] = "LOAD_CONST",
    [FJ_PI_RETURN_VALUE] = "RETURN_VALUE",
    [FJ_PI_RETURN_CONST] = "RETURN_CONST",
    [FJ_PI_LOAD_FAST] = "LOAD_FAST",
    [FJ_PI_LOAD_FAST_AND_CLEAR] = "LOAD_FAST_AND_CLEAR",
    [FJ_PI_LOAD_FAST_LOAD_FAST] = "LOAD_FAST_LOAD_FAST",
    [FJ_PI_STORE_FAST] = "STORE_FAST",
    [FJ_PI_STORE_FAST_LOAD_FAST] = "STORE_FAST_LOAD_FAST",
    [FJ_PI_STORE_FAST_STORE_FAST] = "STORE_FAST_STORE_FAST",
    [FJ_PI_DELETE_FAST] = "DELETE_FAST",
    [FJ_PI_MAKE_CELL] = "MAKE_CELL",
    [FJ_PI_COPY_FREE_VARS] = "COPY_FREE_VARS",
    [FJ_PI_LOAD_CLOSURE] = "LOAD_CLOSURE",
    [FJ_PI_LOAD_DEREF] = "LOAD_DEREF",
    [FJ_PI_STORE_DEREF] = "STORE_DEREF",
    [FJ_PI_DELETE_DEREF] = "DELETE_DEREF",
    [FJ_PI_LOAD_GLOBAL] = "LOAD_GLOBAL",
    [FJ_PI_STORE_GLOBAL] = "STORE_GLOBAL",
    [FJ_PI_DELETE_GLOBAL] = "DELETE_GLOBAL",
    [FJ_PI_LOAD_ATTR] = "LOAD_ATTR",
    [FJ_PI_LOAD_METHOD] = "LOAD_METHOD",
    [FJ_PI_STORE_ATTR] = "STORE_ATTR",
    [FJ_PI_DELETE_ATTR] = "DELETE_ATTR",
    [FJ_PI_KW_NAMES] = "KW_NAMES",
    [FJ_PI_CALL] = "CALL",
    [FJ_PI_CALL_FUNCTION_EX] = "CALL_FUNCTION_EX",
    [FJ_PI_MAKE_FUNCTION] = "MAKE_FUNCTION",
    [FJ_PI_SET_FUNCTION_ATTRIBUTE] = "SET_FUNCTION_ATTRIBUTE",
    [FJ_PI_BINARY_OP] = "BINARY_OP",
    [FJ_PI_COMPARE_OP] = "COMPARE_OP",
    [FJ_PI_IS_OP] = "IS_OP",
    [FJ_PI_CONTAINS_OP] = "CONTAINS_OP",
    [FJ_PI_UNARY_NOT] = "UNARY_NOT",
    [FJ_PI_UNARY_NEGATIVE] = "UNARY_NEGATIVE",
    [FJ_PI_UNARY_POSITIVE] = "UNARY_POSITIVE",
    [FJ_PI_UNARY_INVERT] = "UNARY_INVERT",
    [FJ_PI_TO_BOOL] = "TO_BOOL",
    [FJ_PI_BINARY_SUBSCR] = "BINARY_SUBSCR",
    [FJ_PI_STORE_SUBSCR] = "STORE_SUBSCR",
    [FJ_PI_DELETE_SUBSCR] = "DELETE_SUBSCR",
    [FJ_PI_BINARY_SLICE] = "BINARY_SLICE",
    [FJ_PI_STORE_SLICE] = "STORE_SLICE",
    [FJ_PI_BUILD_TUPLE] = "BUILD_TUPLE",
    [FJ_PI_BUILD_LIST] = "BUILD_LIST",
    [FJ_PI_BUILD_MAP] = "BUILD_MAP",
    [FJ_PI_BUILD_CONST_KEY_MAP] = "BUILD_CONST_KEY_MAP",
    [FJ_PI_BUILD_SLICE] = "BUILD_SLICE",
    [FJ_PI_BUILD_STRING] = "BUILD_STRING",
    [FJ_PI_MAP_ADD] = "MAP_ADD",
    [FJ_PI_DICT_UPDATE] = "DICT_UPDATE",
    [FJ_PI_DICT_MERGE] = "DICT_MERGE",
    [FJ_PI_LIST_APPEND] = "LIST_APPEND",
    [FJ_PI_LIST_EXTEND] = "LIST_EXTEND",
    [FJ_PI_LIST_TO_TUPLE] = "LIST_TO_TUPLE",
    [FJ_PI_FORMAT] = "FORMAT",
    [FJ_PI_CONVERT_VALUE] = "CONVERT_VALUE",
    [FJ_PI_UNPACK_SEQUENCE] = "UNPACK_SEQUENCE",
    [FJ_PI_UNPACK_EX] = "UNPACK_EX",
    [FJ_PI_GET_ITER] = "GET_ITER",
    [FJ_PI_BEFORE_WITH] = "BEFORE_WITH",
    [FJ_PI_PUSH_EXC_INFO] = "PUSH_EXC_INFO",
    [FJ_PI_FOR_ITER] = "FOR_ITER",
    [FJ_PI_JUMP] = "JUMP",
    [FJ_PI_POP_JUMP_IF] = "POP_JUMP_IF",
    [FJ_PI_JUMP_IF_OR_POP] = "JUMP_IF_OR_POP",
    [FJ_PI_IMPORT_NAME] = "IMPORT_NAME",
    [FJ_PI_IMPORT_FROM] = "IMPORT_FROM",
    [FJ_PI_RAISE_VARARGS] = "RAISE_VARARGS",
    [FJ_PI_RERAISE] = "RERAISE",
};

/* The name of pseudo kind 'k' as a new str, NULL on error. */
static PyObject *pi_name(int k)
{
    if (k >= 0 && k < FJ_PI__COUNT && pi_names[k] != NULL)
        return PyUnicode_FromString(pi_names[k]);
    return PyUnicode_FromFormat("PI_%d", k);
}

static PyObject *check_code(PyObject *o)
{
    if (!PyCode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "expected a code object, not %.100s", Py_TYPE(o)->tp_name);
        return NULL;
    }
    return o;
}

/* Decodes the code object 'co' into 'il' (initialized here).  0, or -1 with
   an exception (a TypeError for another object). */
static int decode_code(PyObject *co, fj_InstrList *il)
{
    fj_bc_init(il);
    return check_code(co) == NULL || fj_bc_decode((PyCodeObject *)co, il) < 0 ? -1 : 0;
}

/* bc_decode(code) -> [(offset_bytes, op, arg, target|None,
**   (line, end_line, col, end_col), (handler, depth, lasti)|None,
**   pseudo_kind, pseudo_a, pseudo_b)].
** offset_bytes is that of the opcode itself (after EXTENDED_ARGs), as dis
** reports it; op is the list's opcode (3.13: LOAD_CLOSURE where co_code has
** the LOAD_FAST of a cell, see bc_real_opcode); pseudo_kind is the name of
** the lifted pseudo-instruction kind (FJ_PI_* without the prefix).  New
** reference, NULL on error. */
static PyObject *bc_decode(PyObject *self, PyObject *arg)
{
    fj_InstrList il;
    PyObject *list = NULL, *item = NULL;
    if (decode_code(arg, &il) < 0)
        return NULL;
    list = PyList_New(il.n);
    if (list == NULL)
        goto error;
    for (int i = 0; i < il.n; i++) {
        fj_Instr *in = &il.v[i];
        PyObject *handler;
        if (in->exc_target >= 0)
            handler = Py_BuildValue("(iii)", in->exc_target, in->exc_depth, in->exc_lasti);
        else
            handler = Py_NewRef(Py_None);
        item = handler == NULL
                   ? NULL
                   : Py_BuildValue("(iiiN(NNNN)NNii)", 2 * (in->offset + in->ext), in->op,
                                   in->arg, int_or_none(in->target), int_or_none(in->line),
                                   int_or_none(in->end_line), int_or_none(in->col),
                                   int_or_none(in->end_col), handler, pi_name(in->p.op),
                                   in->p.a, in->p.b);
        if (item == NULL)
            goto error;
        PyList_SET_ITEM(list, i, item);
    }
    fj_bc_free(&il);
    return list;
error:
    Py_XDECREF(list);
    fj_bc_free(&il);
    return NULL;
}

/* bc_roundtrip(code) -> code: decode then assemble on itself.  New reference. */
static PyObject *bc_roundtrip(PyObject *self, PyObject *arg)
{
    fj_InstrList il;
    if (decode_code(arg, &il) < 0)
        return NULL;
    PyObject *res = fj_bc_assemble((PyCodeObject *)arg, &il, NULL);
    fj_bc_free(&il);
    return res;
}

/* bc_split_pairs(code) -> code: decode, fj_dl_split_fast_pairs, assemble.
** New reference. */
static PyObject *bc_split_pairs(PyObject *self, PyObject *arg)
{
    fj_InstrList il;
    if (decode_code(arg, &il) < 0)
        return NULL;
    PyObject *res = NULL;
    if (fj_dl_split_fast_pairs(&il) == 0)
        res = fj_bc_assemble((PyCodeObject *)arg, &il, NULL);
    fj_bc_free(&il);
    return res;
}

/* bc_insert_nops(code, at, count) -> code: decode, fj_bc_insert 'count'
** NOPs before instruction 'at' (with the position of the instruction they
** precede, so the line table stays monotonic), assemble.  New reference. */
static PyObject *bc_insert_nops(PyObject *self, PyObject *args)
{
    PyObject *co;
    int at, count;
    fj_InstrList il;
    if (!PyArg_ParseTuple(args, "Oii:bc_insert_nops", &co, &at, &count) ||
        decode_code(co, &il) < 0)
        return NULL;
    PyObject *res = NULL;
    if (fj_bc_insert(&il, at, count) == 0) {
        if (at + count < il.n)
            for (int i = at; i < at + count; i++) {
                il.v[i].line = il.v[at + count].line;
                il.v[i].end_line = il.v[at + count].end_line;
            }
        res = fj_bc_assemble((PyCodeObject *)co, &il, NULL);
    }
    fj_bc_free(&il);
    return res;
}

/* bc_stackdepth(code) -> int: the stack depth the assembler computes. */
static PyObject *bc_stackdepth(PyObject *self, PyObject *arg)
{
    fj_InstrList il;
    if (decode_code(arg, &il) < 0)
        return NULL;
    int d = fj_bc_stackdepth(&il);
    fj_bc_free(&il);
    return d < 0 ? NULL : PyLong_FromLong(d);
}

/* bc_real_opcode(op) -> int: the opcode the assembler writes for list opcode op. */
static PyObject *bc_real_opcode(PyObject *self, PyObject *arg)
{
    long op = PyLong_AsLong(arg);
    if (op == -1 && PyErr_Occurred())
        return NULL;
    if (op < 0 || op > INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "opcode out of range");
        return NULL;
    }
    return PyLong_FromLong(fj_opcode_real((int)op));
}

/* bc_dialect() -> {"name": str, "null_after": bool}: the compiled dialect. */
static PyObject *bc_dialect(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("{s:s,s:N}", "name", fj_dialect.name, "null_after",
                         PyBool_FromLong(fj_dialect.null_after));
}

/* Reads an int or None (-> -1) into *out.  0, or -1 with an exception. */
static int get_opt_int(PyObject *o, int *out)
{
    if (o == Py_None) {
        *out = -1;
        return 0;
    }
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < INT_MIN || v > INT_MAX) {
        PyErr_SetString(PyExc_OverflowError, "value out of int range");
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Fills 'o' from keyword arguments of bc_assemble/bc_build.  0 or -1. */
static int opts_from_kwargs(PyObject *kw, fj_AsmOpts *o)
{
    fj_bc_opts_init(o);
    if (kw == NULL)
        return 0;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kw, &pos, &key, &value)) {
        const char *k = PyUnicode_AsUTF8(key);
        if (k == NULL)
            return -1;
        PyObject **obj = NULL;
        int *num = NULL;
        if (!strcmp(k, "consts")) obj = &o->consts;
        else if (!strcmp(k, "names")) obj = &o->names;
        else if (!strcmp(k, "varnames")) obj = &o->varnames;
        else if (!strcmp(k, "cellvars")) obj = &o->cellvars;
        else if (!strcmp(k, "freevars")) obj = &o->freevars;
        else if (!strcmp(k, "name")) obj = &o->name;
        else if (!strcmp(k, "qualname")) obj = &o->qualname;
        else if (!strcmp(k, "argcount")) num = &o->argcount;
        else if (!strcmp(k, "posonlyargcount")) num = &o->posonlyargcount;
        else if (!strcmp(k, "kwonlyargcount")) num = &o->kwonlyargcount;
        else if (!strcmp(k, "flags")) num = &o->flags;
        else if (!strcmp(k, "firstlineno")) num = &o->firstlineno;
        else if (!strcmp(k, "deref_final")) {
            int t = PyObject_IsTrue(value);
            if (t < 0)
                return -1;
            o->deref_layout = t ? FJ_DEREF_FINAL : FJ_DEREF_TEMPLATE;
            continue;
        }
        else {
            PyErr_Format(PyExc_TypeError, "unexpected keyword argument %R", key);
            return -1;
        }
        if (obj != NULL) {
            if ((obj == &o->name || obj == &o->qualname) && !PyUnicode_Check(value)) {
                PyErr_Format(PyExc_TypeError, "%s must be str", k);
                return -1;
            }
            *obj = value; /* borrowed from the kwargs dict */
        }
        else if (get_opt_int(value, num) < 0)
            return -1;
    }
    return 0;
}

/* Reads a position: None, a line int, or (line, end_line, col, end_col). */
static int get_pos(PyObject *p, fj_Instr *in)
{
    in->line = in->end_line = in->col = in->end_col = -1;
    if (p == Py_None)
        return 0;
    if (PyTuple_Check(p)) {
        if (PyTuple_GET_SIZE(p) != 4) {
            PyErr_SetString(PyExc_ValueError, "position must be (line, end_line, col, end_col)");
            return -1;
        }
        return (get_opt_int(PyTuple_GET_ITEM(p, 0), &in->line) < 0 ||
                get_opt_int(PyTuple_GET_ITEM(p, 1), &in->end_line) < 0 ||
                get_opt_int(PyTuple_GET_ITEM(p, 2), &in->col) < 0 ||
                get_opt_int(PyTuple_GET_ITEM(p, 3), &in->end_col) < 0)
                   ? -1
                   : 0;
    }
    if (get_opt_int(p, &in->line) < 0)
        return -1;
    in->end_line = in->line;
    return 0;
}

/* Reads a handler: None or (target_index, depth, lasti). */
static int get_handler(PyObject *h, fj_Instr *in)
{
    in->exc_target = -1;
    in->exc_depth = in->exc_lasti = 0;
    if (h == Py_None)
        return 0;
    if (!PyTuple_Check(h) || PyTuple_GET_SIZE(h) != 3) {
        PyErr_SetString(PyExc_ValueError, "handler must be (target_index, depth, lasti) or None");
        return -1;
    }
    if (get_opt_int(PyTuple_GET_ITEM(h, 0), &in->exc_target) < 0 ||
        get_opt_int(PyTuple_GET_ITEM(h, 1), &in->exc_depth) < 0 ||
        get_opt_int(PyTuple_GET_ITEM(h, 2), &in->exc_lasti) < 0)
        return -1;
    if (in->exc_target < 0) {
        PyErr_SetString(PyExc_ValueError, "bytecode: handler target out of range");
        return -1;
    }
    return 0;
}

/* bc_assemble(template, [(op, arg, target|None, pos|None[, handler|None])],
** **overrides) -> code.  New reference, NULL on error. */
static PyObject *bc_assemble(PyObject *self, PyObject *args, PyObject *kw)
{
    PyObject *tmpl, *instrs, *seq = NULL, *res = NULL;
    fj_InstrList il;
    fj_AsmOpts o;
    fj_bc_init(&il);
    if (!PyArg_ParseTuple(args, "OO:bc_assemble", &tmpl, &instrs))
        return NULL;
    if (check_code(tmpl) == NULL || opts_from_kwargs(kw, &o) < 0)
        return NULL;
    seq = PySequence_Fast(instrs, "instructions must be a sequence");
    if (seq == NULL)
        goto error;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *t = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) < 4 || PyTuple_GET_SIZE(t) > 5) {
            PyErr_Format(PyExc_ValueError,
                         "instruction %zd must be (op, arg, target, pos[, handler])", i);
            goto error;
        }
        int op, arg;
        if (get_opt_int(PyTuple_GET_ITEM(t, 0), &op) < 0 ||
            get_opt_int(PyTuple_GET_ITEM(t, 1), &arg) < 0)
            goto error;
        int idx = fj_bc_emit(&il, op, PyTuple_GET_ITEM(t, 1) == Py_None ? 0 : arg);
        if (idx < 0)
            goto error;
        fj_Instr *in = &il.v[idx];
        if (get_opt_int(PyTuple_GET_ITEM(t, 2), &in->target) < 0 ||
            get_pos(PyTuple_GET_ITEM(t, 3), in) < 0 ||
            (PyTuple_GET_SIZE(t) == 5 && get_handler(PyTuple_GET_ITEM(t, 4), in) < 0))
            goto error;
        if (in->target < -1) {
            PyErr_Format(PyExc_ValueError, "bytecode: jump target %d out of range", in->target);
            goto error;
        }
    }
    res = fj_bc_assemble((PyCodeObject *)tmpl, &il, &o);
error:
    Py_XDECREF(seq);
    fj_bc_free(&il);
    return res;
}

/* The builder label for Python key 'key' (made on first use), or -1. */
static int label_for(fj_Builder *b, PyObject *labels, PyObject *key)
{
    PyObject *v = PyDict_GetItemWithError(labels, key);
    if (v != NULL)
        return (int)PyLong_AsLong(v);
    if (PyErr_Occurred())
        return -1;
    int l = fj_bc_new_label(&b->il);
    if (l < 0)
        return -1;
    PyObject *lv = PyLong_FromLong(l);
    if (lv == NULL || PyDict_SetItem(labels, key, lv) < 0) {
        Py_XDECREF(lv);
        return -1;
    }
    Py_DECREF(lv);
    return l;
}

/* Runs one bc_build step 't' on 'b'.  0, or -1 with an exception set. */
static int build_step(fj_Builder *b, PyObject *labels, PyObject *t)
{
    Py_ssize_t n = PyTuple_Check(t) ? PyTuple_GET_SIZE(t) : 0;
    const char *k = n > 0 && PyUnicode_Check(PyTuple_GET_ITEM(t, 0))
                        ? PyUnicode_AsUTF8(PyTuple_GET_ITEM(t, 0))
                        : NULL;
    if (k == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "build step must be a tuple (kind, ...)");
        return -1;
    }
#define A(i) PyTuple_GET_ITEM(t, (i))
#define NEED(m) \
    if (n != (m)) goto arity
    int x, y, z;
    if (!strcmp(k, "op")) {
        NEED(3);
        if (get_opt_int(A(1), &x) < 0 || get_opt_int(A(2), &y) < 0)
            return -1;
        return fj_bc_emit(&b->il, x, y) < 0 ? -1 : 0;
    }
    if (!strcmp(k, "jump")) {
        NEED(3);
        if (get_opt_int(A(1), &x) < 0 || (y = label_for(b, labels, A(2))) < 0)
            return -1;
        return fj_bc_emit_jump(&b->il, x, y) < 0 ? -1 : 0;
    }
    if (!strcmp(k, "label")) {
        NEED(2);
        if ((x = label_for(b, labels, A(1))) < 0)
            return -1;
        return fj_bc_place_label(&b->il, x);
    }
    if (!strcmp(k, "global")) {
        NEED(3);
        int pn = PyObject_IsTrue(A(2));
        return pn < 0 || fj_builder_load_global(b, A(1), pn) < 0 ? -1 : 0;
    }
    /* the builder's emitters of one constant or name */
    static const struct {
        const char *kind;
        int (*emit)(fj_Builder *, PyObject *);
    } one_arg[] = {
        {"const", fj_builder_load_const}, {"attr", fj_builder_load_attr},
        {"method", fj_builder_load_method}, {"load", fj_builder_load_fast},
        {"store", fj_builder_store_fast},
    };
    for (size_t i = 0; i < sizeof one_arg / sizeof one_arg[0]; i++) {
        if (!strcmp(k, one_arg[i].kind)) {
            NEED(2);
            return one_arg[i].emit(b, A(1)) < 0 ? -1 : 0;
        }
    }
    if (!strcmp(k, "deref")) {
        NEED(3);
        if (get_opt_int(A(1), &x) < 0 || (y = fj_builder_deref(b, A(2))) < 0)
            return -1;
        return fj_bc_emit(&b->il, x, y) < 0 ? -1 : 0;
    }
    if (!strcmp(k, "closure")) {
        NEED(2);
        if ((x = fj_builder_deref(b, A(1))) < 0)
            return -1;
        return fj_dl_load_closure(&b->il, x) < 0 ? -1 : 0;
    }
    if (!strcmp(k, "make_function")) {
        NEED(2);
        if (get_opt_int(A(1), &x) < 0)
            return -1;
        return fj_dl_make_function(&b->il, x) < 0 ? -1 : 0;
    }
    if (!strcmp(k, "null_before") || !strcmp(k, "null_after")) {
        NEED(1);
        return (k[5] == 'b' ? fj_dl_null_before(&b->il) : fj_dl_null_after(&b->il)) < 0 ? -1 : 0;
    }
    if (!strcmp(k, "call")) {
        if (n != 2 && n != 3)
            goto arity;
        if (get_opt_int(A(1), &x) < 0)
            return -1;
        return fj_builder_call(b, x, n == 3 ? A(2) : NULL) < 0 ? -1 : 0;
    }
    if (!strcmp(k, "line")) {
        NEED(2);
        if (get_opt_int(A(1), &x) < 0)
            return -1;
        fj_bc_set_pos(&b->il, x, x, -1, -1);
        return 0;
    }
    if (!strcmp(k, "handler")) {
        NEED(4);
        if (A(1) == Py_None)
            x = -1;
        else if ((x = label_for(b, labels, A(1))) < 0)
            return -1;
        else
            x = FJ_LABEL_REF(x);
        if (get_opt_int(A(2), &y) < 0 || get_opt_int(A(3), &z) < 0)
            return -1;
        fj_bc_set_handler(&b->il, x, y, z);
        return 0;
    }
    PyErr_Format(PyExc_ValueError, "unknown build step %R", A(0));
    return -1;
arity:
    PyErr_Format(PyExc_ValueError, "build step %R has the wrong number of fields", A(0));
    return -1;
#undef A
#undef NEED
}

/* bc_build(template, steps, **overrides) -> code: drives fj_Builder.  Steps:
** ("op", op, arg), ("jump", op, label), ("label", label), ("const", v),
** ("global", name, push_null), ("attr", name), ("method", name),
** ("load", name), ("store", name), ("deref", op, name), ("closure", name)
** (fj_dl_load_closure), ("make_function", flags) (fj_dl_make_function),
** ("null_before",), ("null_after",) (the NULL of a call pair, around the
** callable's load), ("call", nargs[, kwnames]), ("line", n), ("handler",
** label|None, depth, lasti).  Labels are any hashable keys.  New reference,
** NULL on error. */
static PyObject *bc_build(PyObject *self, PyObject *args, PyObject *kw)
{
    PyObject *tmpl, *steps, *seq = NULL, *labels = NULL, *res = NULL;
    fj_Builder b;
    fj_AsmOpts o;
    memset(&b, 0, sizeof(b));
    if (!PyArg_ParseTuple(args, "OO:bc_build", &tmpl, &steps))
        return NULL;
    if (check_code(tmpl) == NULL || opts_from_kwargs(kw, &o) < 0)
        return NULL;
    if (fj_builder_init(&b, (PyCodeObject *)tmpl) < 0)
        goto error;
    seq = PySequence_Fast(steps, "steps must be a sequence");
    labels = PyDict_New();
    if (seq == NULL || labels == NULL)
        goto error;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++)
        if (build_step(&b, labels, PySequence_Fast_GET_ITEM(seq, i)) < 0)
            goto error;
    res = fj_builder_assemble(&b, &o);
error:
    Py_XDECREF(seq);
    Py_XDECREF(labels);
    fj_builder_clear(&b);
    return res;
}

static PyMethodDef bc_methods[] = {
    {"bc_decode", bc_decode, METH_O, "Decode a code object into instruction tuples."},
    {"bc_roundtrip", bc_roundtrip, METH_O, "Decode and re-assemble a code object."},
    {"bc_insert_nops", bc_insert_nops, METH_VARARGS, "Insert NOPs into a code object."},
    {"bc_split_pairs", bc_split_pairs, METH_O, "Split two-local instructions (3.13)."},
    {"bc_stackdepth", bc_stackdepth, METH_O, "The stack depth the assembler computes."},
    {"bc_real_opcode", bc_real_opcode, METH_O, "The opcode written for a list opcode."},
    {"bc_dialect", bc_dialect, METH_NOARGS, "The compiled bytecode dialect."},
    {"bc_assemble", (PyCFunction)(void (*)(void))bc_assemble, METH_VARARGS | METH_KEYWORDS,
     "Assemble instruction tuples on a template code object."},
    {"bc_build", (PyCFunction)(void (*)(void))bc_build, METH_VARARGS | METH_KEYWORDS,
     "Build a code object through the builder API."},
    {NULL, NULL, 0, NULL},
};

int fj_bytecode_init(PyObject *module)
{
    return PyModule_AddFunctions(module, bc_methods);
}

#else /* !FJ_SUPPORTED */

int fj_bytecode_init(PyObject *module)
{
    (void)module;
    return 0;
}

#endif /* FJ_SUPPORTED */
