/*
** bytecode_hooks.c: Python-visible test hooks of the bytecode layer.
**
** Responsible for: framejit._C._testing.bc_decode, bc_roundtrip, bc_assemble,
** bc_stackdepth, bc_insert_nops and bc_build, thin wrappers that let tests/test_bytecode.py
** drive bytecode.c and bytecode_builder.c, and fj_bytecode_init.
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
**   (line, end_line, col, end_col), (handler, depth, lasti)|None)].
** offset_bytes is that of the opcode itself (after EXTENDED_ARGs), as dis
** reports it.  New reference, NULL on error. */
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
                   : Py_BuildValue("(iiiN(NNNN)N)", 2 * (in->offset + in->ext), in->op, in->arg,
                                   int_or_none(in->target), int_or_none(in->line),
                                   int_or_none(in->end_line), int_or_none(in->col),
                                   int_or_none(in->end_col), handler);
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
** ("load", name), ("store", name), ("deref", op, name),
** ("call", nargs[, kwnames]), ("line", n), ("handler", label|None, depth,
** lasti).  Labels are any hashable keys.  New reference, NULL on error. */
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
    {"bc_stackdepth", bc_stackdepth, METH_O, "The stack depth the assembler computes."},
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
