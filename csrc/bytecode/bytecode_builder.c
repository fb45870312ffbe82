/*
** bytecode_builder.c: the code generator's builder (fj_Builder).
**
** Responsible for: interning constants, names and locals into growable
** copies of a template's tables, the emitting helpers for common
** instruction shapes (through the dialect where versions differ: a global
** with its NULL, attribute and method loads, calls with keyword names), and
** assembling with those tables.
**
** Not responsible for: the instruction list, labels and the assembler
** themselves (bytecode.c).
*/
#include "bytecode.h"

#if FJ_SUPPORTED

#include <string.h>

int fj_builder_init(fj_Builder *b, PyCodeObject *tmpl)
{
    PyObject *v = NULL;
    memset(b, 0, sizeof(*b));
    fj_bc_init(&b->il);
    b->tmpl = (PyCodeObject *)Py_NewRef(tmpl);
    b->consts = PySequence_List(tmpl->co_consts);
    b->names = b->consts ? PySequence_List(tmpl->co_names) : NULL;
    v = b->names ? PyCode_GetVarnames(tmpl) : NULL;
    b->varnames = v ? PySequence_List(v) : NULL;
    Py_XDECREF(v);
    return b->varnames == NULL ? -1 : 0;
}

void fj_builder_clear(fj_Builder *b)
{
    fj_bc_free(&b->il);
    Py_CLEAR(b->tmpl);
    Py_CLEAR(b->consts);
    Py_CLEAR(b->names);
    Py_CLEAR(b->varnames);
}

/* True if constant 'a' may stand for 'v': same object, or an equal
** int/str/bytes of the same exact type.  -1 on error. */
static int const_same(PyObject *a, PyObject *v)
{
    if (a == v)
        return 1;
    if (Py_TYPE(a) != Py_TYPE(v))
        return 0;
    if (PyLong_CheckExact(v) || PyUnicode_CheckExact(v) || PyBytes_CheckExact(v))
        return PyObject_RichCompareBool(a, v, Py_EQ);
    return 0;
}

/* Index of 'v' in list 'l' under 'same', appending it if absent; -1 on error. */
static int intern_in(PyObject *l, PyObject *v, int (*same)(PyObject *, PyObject *))
{
    Py_ssize_t n = PyList_GET_SIZE(l);
    for (Py_ssize_t i = 0; i < n; i++) {
        int r = same(PyList_GET_ITEM(l, i), v);
        if (r < 0)
            return -1;
        if (r)
            return (int)i;
    }
    if (n >= INT_MAX / 2) {
        PyErr_SetString(PyExc_OverflowError, "bytecode: table too large");
        return -1;
    }
    if (PyList_Append(l, v) < 0)
        return -1;
    return (int)n;
}

static int name_same(PyObject *a, PyObject *v)
{
    return a == v || PyUnicode_Compare(a, v) == 0;
}

/* 'name' must be a str; -1 with TypeError otherwise. */
static int check_name(PyObject *name)
{
    if (PyUnicode_Check(name))
        return 0;
    PyErr_Format(PyExc_TypeError, "bytecode: name must be str, not %.100s", Py_TYPE(name)->tp_name);
    return -1;
}

int fj_builder_const(fj_Builder *b, PyObject *v)
{
    return intern_in(b->consts, v, const_same);
}

int fj_builder_name(fj_Builder *b, PyObject *name)
{
    return check_name(name) < 0 ? -1 : intern_in(b->names, name, name_same);
}

int fj_builder_varname(fj_Builder *b, PyObject *name)
{
    return check_name(name) < 0 ? -1 : intern_in(b->varnames, name, name_same);
}

int fj_builder_deref(fj_Builder *b, PyObject *name)
{
    PyCodeObject *co = b->tmpl;
    if (check_name(name) < 0)
        return -1;
    for (int i = 0; i < FJ_CODE_NLOCALSPLUS(co); i++) {
        int kind = fj_code_local_kind(co, i);
        if ((kind & (FJ_FAST_CELL | FJ_FAST_FREE)) &&
            PyUnicode_Compare(fj_code_local_name(co, i), name) == 0)
            return i;
    }
    PyErr_Format(PyExc_ValueError, "bytecode: %R is not a cell or free variable of %R", name,
                 co->co_name);
    return -1;
}

/* Emits 'op' with 'arg', or passes on the -1 of the table lookup that gave it. */
static int emit_indexed(fj_Builder *b, int op, int arg)
{
    return arg < 0 ? -1 : fj_bc_emit(&b->il, op, arg);
}

int fj_builder_load_const(fj_Builder *b, PyObject *v)
{
    return emit_indexed(b, LOAD_CONST, fj_builder_const(b, v));
}

int fj_builder_load_global(fj_Builder *b, PyObject *name, int push_null)
{
    int i = fj_builder_name(b, name);
    return i < 0 ? -1 : fj_dl_load_global(&b->il, i, push_null);
}

int fj_builder_load_attr(fj_Builder *b, PyObject *name)
{
    int i = fj_builder_name(b, name);
    return i < 0 ? -1 : fj_dl_load_attr(&b->il, i);
}

int fj_builder_load_method(fj_Builder *b, PyObject *name)
{
    int i = fj_builder_name(b, name);
    return i < 0 ? -1 : fj_dl_load_method(&b->il, i);
}

int fj_builder_load_fast(fj_Builder *b, PyObject *name)
{
    return emit_indexed(b, LOAD_FAST, fj_builder_varname(b, name));
}

int fj_builder_store_fast(fj_Builder *b, PyObject *name)
{
    return emit_indexed(b, STORE_FAST, fj_builder_varname(b, name));
}

int fj_builder_call(fj_Builder *b, int nargs, PyObject *kwnames)
{
    if (kwnames != NULL && kwnames != Py_None) {
        if (!PyTuple_Check(kwnames) || PyTuple_GET_SIZE(kwnames) > nargs) {
            PyErr_SetString(PyExc_ValueError,
                            "bytecode: kwnames must be a tuple no longer than nargs");
            return -1;
        }
        if (PyTuple_GET_SIZE(kwnames) > 0) {
            int k = fj_builder_const(b, kwnames);
            return k < 0 ? -1 : fj_dl_call(&b->il, nargs, k);
        }
    }
    return fj_dl_call(&b->il, nargs, -1);
}

PyObject *fj_builder_assemble(fj_Builder *b, const fj_AsmOpts *opts)
{
    fj_AsmOpts o;
    if (opts != NULL)
        o = *opts;
    else
        fj_bc_opts_init(&o);
    o.consts = b->consts;
    o.names = b->names;
    o.varnames = b->varnames;
    return fj_bc_assemble(b->tmpl, &b->il, &o);
}

#endif /* FJ_SUPPORTED */
