/*
** guard_values.c: reading and comparing the program's values without
** running the program's code.
**
** Responsible for: which values are builtin values a guard compares in C
** (value kinds), comparing them, reading a dict item or an attribute only
** when that runs none of the program's code (otherwise the answer is
** "unknown" and the guard fails), and the printer's text for a value.
**
** Not responsible for: guard trees, leaves and their checks (guards.c).
*/
#include "guard_values.h"
#include "guards.h"

#include <string.h>

/* True if repr(o) runs none of the program's code (no __repr__ or
** __getattribute__ of its classes: test_descr logs every attribute read of
** a module subclass). */
static int repr_is_safe(PyObject *o, int depth)
{
    PyTypeObject *t = Py_TYPE(o);
    if (o == Py_None || o == Py_Ellipsis || t == &PyBool_Type || t == &PyLong_Type ||
        t == &PyFloat_Type || t == &PyComplex_Type || t == &PyUnicode_Type ||
        t == &PyBytes_Type || t == &PyType_Type ||
        t == &PyFunction_Type || t == &PyCFunction_Type || t == &PyCode_Type)
        return 1;
    if ((t == &PyTuple_Type || t == &PyList_Type) && depth < 4) {
        for (Py_ssize_t i = 0; i < Py_SIZE(o); i++)
            if (!repr_is_safe(PySequence_Fast_GET_ITEM(o, i), depth + 1))
                return 0;
        return 1;
    }
    /* a static (C) type's repr of an object without items of the program's */
    return !(t->tp_flags & Py_TPFLAGS_HEAPTYPE) && t != &PyMethod_Type &&
           !PyType_IsSubtype(t, &PyTuple_Type) &&
           !PyType_IsSubtype(t, &PyList_Type) && !PyType_IsSubtype(t, &PyDict_Type) &&
           !PyType_IsSubtype(t, &PySet_Type) && !PyType_IsSubtype(t, &PyFrozenSet_Type) &&
           !PyType_IsSubtype(t, &PyModule_Type);
}

/*
** Ints past this many bits print in hex, cut in the middle: their decimal
** repr is slow and raises ValueError past sys.get_int_max_str_digits().
*/
#define INT_TEXT_MAX_BITS 256

/* "0x1234...cdef (N bits)" for a huge exact int.  New reference, NULL on error. */
static PyObject *bigint_text(PyObject *o)
{
    size_t bits = _PyLong_NumBits(o);
    PyObject *hex = PyNumber_ToBase(o, 16); /* power-of-two bases have no digit limit */
    if (hex == NULL)
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(hex);
    PyObject *head = PyUnicode_Substring(hex, 0, 20 < n ? 20 : n);
    PyObject *tail = head ? PyUnicode_Substring(hex, n > 8 ? n - 8 : n, n) : NULL;
    PyObject *r = tail ? PyUnicode_FromFormat("%U...%U (%zu bits)", head, tail, bits) : NULL;
    Py_DECREF(hex);
    Py_XDECREF(head);
    Py_XDECREF(tail);
    return r;
}

/*
** "<module 'name' from 'file'>" read from the module's dict: repr(module) is
** importlib's Python code, which reads __file__ through the module's
** __getattr__ and uses builtins.  New reference, NULL on error.
*/
static PyObject *module_text(PyObject *o)
{
    PyObject *d = PyModule_GetDict(o), *name = NULL, *file = NULL; /* borrowed */
    PyObject *name_key = PyUnicode_FromString("__name__");
    PyObject *file_key = name_key ? PyUnicode_FromString("__file__") : NULL;
    PyObject *r = NULL;
    if (file_key != NULL) {
        if (d == NULL || fj_guards_dict_get(d, name_key, &name) <= 0 || !PyUnicode_CheckExact(name))
            name = NULL;
        if (d == NULL || fj_guards_dict_get(d, file_key, &file) <= 0 || !PyUnicode_CheckExact(file))
            file = NULL;
        PyErr_Clear();
        r = name == NULL   ? PyUnicode_FromString("<module>")
            : file == NULL ? PyUnicode_FromFormat("<module %R>", name)
                           : PyUnicode_FromFormat("<module %R from %R>", name, file);
    }
    Py_XDECREF(name_key);
    Py_XDECREF(file_key);
    return r;
}

PyObject *fj_guards_value_text(PyObject *o, Py_ssize_t max)
{
    PyObject *r;
    if (PyLong_CheckExact(o) && _PyLong_NumBits(o) > INT_TEXT_MAX_BITS)
        return bigint_text(o);
    if (PyModule_CheckExact(o)) {
        r = module_text(o);
        goto cut;
    }
    if (!repr_is_safe(o, 0))
        return PyUnicode_FromFormat("<%s object>", Py_TYPE(o)->tp_name);
    r = PyObject_Repr(o);
    if (r == NULL) {
        PyErr_Clear();
        return PyUnicode_FromFormat("<%s object>", Py_TYPE(o)->tp_name);
    }
cut:
    if (r == NULL)
        return NULL;
    if (max > 0 && PyUnicode_GET_LENGTH(r) > max && max > 3) {
        PyObject *cut = PyUnicode_Substring(r, 0, max - 3);
        Py_DECREF(r);
        if (cut == NULL)
            return NULL;
        r = PyUnicode_FromFormat("%U...", cut);
        Py_DECREF(cut);
    }
    return r;
}

/*
** The EQ_* kind of 'v' when it is an exact builtin value a guard compares
** with C code alone, else EQ_NONE.  'depth' bounds nested tuples.
*/
int fj_value_kind(PyObject *v, int depth)
{
    PyTypeObject *t = Py_TYPE(v);
    if (v == Py_None || v == Py_True || v == Py_False || v == Py_Ellipsis)
        return EQ_IDENTITY;
    if (t == &PyLong_Type) {
        int overflow = 0;
        (void)PyLong_AsLongLongAndOverflow(v, &overflow);
        return overflow ? EQ_BIGINT : EQ_INT;
    }
    if (t == &PyFloat_Type)
        return EQ_FLOAT;
    if (t == &PyUnicode_Type)
        return EQ_STR;
    if (t == &PyBytes_Type || t == &PyComplex_Type)
        return EQ_VALUE;
    if (t == &PyTuple_Type && depth < 8) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(v); i++)
            if (fj_value_kind(PyTuple_GET_ITEM(v, i), depth + 1) == EQ_NONE)
                return EQ_NONE;
        return EQ_TUPLE;
    }
    return EQ_NONE;
}

/*
** v matches the expected value 'e' of a value kind (fj_value_kind != EQ_NONE):
** same exact type and equal, floats and complex by bit pattern.  1, 0 or
** -1 (memory error).  Runs no program code whatever 'v' is.
*/
int fj_value_same(PyObject *e, PyObject *v)
{
    if (e == v)
        return 1;
    PyTypeObject *t = Py_TYPE(e);
    if (Py_TYPE(v) != t)
        return 0;
    if (t == &PyLong_Type)
        return PyObject_RichCompareBool(e, v, Py_EQ); /* int compare: no user code */
    if (t == &PyFloat_Type)
        return fj_double_same(PyFloat_AS_DOUBLE(e), PyFloat_AS_DOUBLE(v));
    if (t == &PyUnicode_Type)
        return fj_unicode_eq(e, v);
    if (t == &PyBytes_Type)
        return PyBytes_GET_SIZE(e) == PyBytes_GET_SIZE(v) &&
               memcmp(PyBytes_AS_STRING(e), PyBytes_AS_STRING(v), (size_t)PyBytes_GET_SIZE(e)) == 0;
    if (t == &PyComplex_Type) {
        Py_complex a = ((PyComplexObject *)e)->cval, b = ((PyComplexObject *)v)->cval;
        return fj_double_same(a.real, b.real) && fj_double_same(a.imag, b.imag);
    }
    if (t == &PyTuple_Type) {
        Py_ssize_t n = PyTuple_GET_SIZE(e);
        if (PyTuple_GET_SIZE(v) != n)
            return 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            int r = fj_value_same(PyTuple_GET_ITEM(e, i), PyTuple_GET_ITEM(v, i));
            if (r <= 0)
                return r;
        }
        return 1;
    }
    return 0; /* True, False, None, Ellipsis: identity only */
}

/*
** d[key] for a dict, without running program code: 1 with *out borrowed,
** FJ_LOOKUP_ABSENT, FJ_LOOKUP_UNKNOWN or -1.  A lookup compares 'key' with the
** keys of equal hash: that runs no program code when 'keys_pinned' (a
** DICT_KEYS leaf just matched every key by value) or when 'key' is a str and
** every key is a str; otherwise the dict is scanned, value keys matched by
** C comparisons, and another key of the same hash makes the answer unknown.
*/
int fj_dict_lookup(PyObject *d, PyObject *key, int keys_pinned, PyObject **out)
{
    if (!PyDict_CheckExact(d))
        return FJ_LOOKUP_UNKNOWN; /* a __getitem__ would run code */
    /* the common case first: a str key in a dict of str keys (globals) */
    int fast = PyUnicode_CheckExact(key) && (keys_pinned || FJ_DICT_STR_KEYS_ONLY(d));
    if (!fast && fj_value_kind(key, 0) == EQ_NONE)
        return FJ_LOOKUP_UNKNOWN; /* hashing the key would run code */
    if (fast || keys_pinned) {
        *out = PyDict_GetItemWithError(d, key);
        return *out != NULL ? 1 : PyErr_Occurred() ? -1 : FJ_LOOKUP_ABSENT;
    }
    Py_hash_t h = PyObject_Hash(key); /* a value kind: a builtin hash */
    if (h == -1)
        return -1;
    Py_ssize_t pos = 0;
    PyObject *k, *val;
    Py_hash_t kh;
    while (fj_dict_next_hash(d, &pos, &k, &val, &kh)) {
        if (kh == -1 && k != key)
            return FJ_LOOKUP_UNKNOWN; /* a key whose hash cannot be read without its code */
        if (kh != h)
            continue;
        /* two builtin values compare in C (1 == 1.0 == True, as the dict does) */
        int r = k == key                      ? 1
                : fj_value_kind(k, 0) != EQ_NONE ? PyObject_RichCompareBool(k, key, Py_EQ)
                                              : FJ_LOOKUP_UNKNOWN;
        if (r == 1)
            *out = val;
        if (r != 0)
            return r;
    }
    return FJ_LOOKUP_ABSENT;
}

int fj_guards_dict_get(PyObject *d, PyObject *key, PyObject **out)
{
    int r = fj_dict_lookup(d, key, 0, out);
    return r == 1 ? 1 : r < 0 ? -1 : 0;
}

/*
** True if reading the descriptor 'd' (found on a type) runs only C code:
** slots, getsets, methods, functions (they bind), static methods, class
** methods of a function, and a property read from the class (it returns
** itself).  A property read from an instance, or any descriptor class of
** the program's, runs the program's code.  -1 on error.
*/
static int descr_is_safe(PyObject *d, int on_class)
{
    static PyObject *func_name = NULL; /* strong, interned "__func__" */
    PyTypeObject *t = Py_TYPE(d);
    if (t->tp_descr_get == NULL || t == &PyMemberDescr_Type || t == &PyGetSetDescr_Type ||
        t == &PyMethodDescr_Type || t == &PyClassMethodDescr_Type || t == &PyWrapperDescr_Type ||
        t == &PyFunction_Type || t == &PyStaticMethod_Type)
        return 1;
    if (t == &PyProperty_Type)
        return on_class;
    if (t == &PyClassMethod_Type) {
        /* 3.11's classmethod chains to the __get__ of what it wraps */
        if (func_name == NULL && (func_name = PyUnicode_InternFromString("__func__")) == NULL)
            return -1;
        PyObject *f = PyObject_GenericGetAttr(d, func_name); /* a member: C */
        if (f == NULL)
            return -1;
        int ok = PyFunction_Check(f) || Py_TYPE(f)->tp_descr_get == NULL;
        Py_DECREF(f);
        return ok;
    }
    return 0;
}

/*
** True when the heap type 'tp' finds __getattribute__ where 'base' has it
** (object's, or module's): its only attribute hook is then a class
** __getattr__, which CPython calls only after the generic (or module)
** lookup fails.
*/
static int getattribute_is(PyTypeObject *tp, PyTypeObject *base)
{
    static PyObject *getattribute = NULL; /* strong, interned */
    if (!(tp->tp_flags & Py_TPFLAGS_HEAPTYPE))
        return 0;
    if (getattribute == NULL && (getattribute = PyUnicode_InternFromString("__getattribute__")) == NULL) {
        PyErr_Clear();
        return 0;
    }
    PyObject *want = _PyType_Lookup(base, getattribute);
    return want != NULL && _PyType_Lookup(tp, getattribute) == want;
}

/* A module subclass with a class __getattr__ only (torch.backends'
   PropModule): its dict is read as a module's, and a class attribute must be
   a safe descriptor (a property is the program's code). */
static int module_hook_only(PyTypeObject *tp)
{
    return getattribute_is(tp, &PyModule_Type);
}

/* An object whose class has __getattr__ only (torch.nn.Module). */
static int only_getattr_hook(PyTypeObject *tp)
{
    return getattribute_is(tp, &PyBaseObject_Type);
}

int fj_only_getattr_hook(PyTypeObject *tp)
{
    return only_getattr_hook(tp);
}

/*
** getattr(o, name) when it runs none of the program's code: 1 with *out a
** new reference, 0 when missing or when only the program's code could tell
** (a __getattr__ or __getattribute__, a property, a descriptor class of the
** program's, a module's __getattr__, an instance dict with odd keys), -1 on
** error.
*/
int fj_safe_getattr(PyObject *o, PyObject *name, PyObject **out)
{
    PyTypeObject *tp = Py_TYPE(o);
    getattrofunc ga = tp->tp_getattro;
    if (!PyUnicode_CheckExact(name))
        return 0;
    if (tp == &PyMethod_Type) {
        /* a bound method's own members (the trace's bound_method_input) */
        PyObject *m = _PyUnicode_EqualToASCIIString(name, "__func__") ? PyMethod_GET_FUNCTION(o)
                      : _PyUnicode_EqualToASCIIString(name, "__self__") ? PyMethod_GET_SELF(o)
                                                                          : NULL;
        if (m == NULL)
            return 0;
        *out = Py_NewRef(m);
        return 1;
    }
    if (ga == PyModule_Type.tp_getattro || (PyModule_Check(o) && module_hook_only(tp))) {
        PyObject *descr = _PyType_Lookup(tp, name);
        if (descr == NULL) {
            /* the module's dict, never its __getattr__ */
            PyObject *d = PyModule_GetDict(o), *v = NULL; /* borrowed */
            int r = d != NULL ? fj_dict_lookup(d, name, 0, &v) : 0;
            if (r == 1)
                *out = Py_NewRef(v);
            return r == 1 ? 1 : r < 0 ? -1 : 0;
        }
        int safe = descr_is_safe(descr, 0);
        if (safe <= 0)
            return safe;
    }
    else if (ga == PyType_Type.tp_getattro) {
        PyObject *meta = _PyType_Lookup(tp, name);
        PyObject *attr = _PyType_Lookup((PyTypeObject *)o, name);
        if (meta == NULL && attr == NULL)
            return 0;
        int safe = meta != NULL ? descr_is_safe(meta, 0) : 1;
        if (safe > 0 && attr != NULL)
            safe = descr_is_safe(attr, 1);
        if (safe <= 0)
            return safe;
    }
    else if (ga == PyObject_GenericGetAttr) {
        PyObject *descr = _PyType_Lookup(tp, name);
        int safe = descr != NULL ? descr_is_safe(descr, 0) : 1;
        if (safe <= 0)
            return safe;
        PyObject **slot = fj_instance_dict_slot(o);
        if (slot != NULL && *slot != NULL && !FJ_DICT_STR_KEYS_ONLY(*slot))
            return 0; /* a key of the program's could answer to the name */
    }
    else if (only_getattr_hook(tp)) {
        /* a class with __getattr__ only (torch.nn.Module): CPython looks the
           generic way first and calls __getattr__ only when that fails, so
           the generic lookup alone finds what it finds, running no code */
        PyObject *descr = _PyType_Lookup(tp, name);
        int safe = descr != NULL ? descr_is_safe(descr, 0) : 1;
        if (safe <= 0)
            return safe;
        PyObject **slot = fj_instance_dict_slot(o);
        if (slot != NULL && *slot != NULL && !FJ_DICT_STR_KEYS_ONLY(*slot))
            return 0;
        *out = PyObject_GenericGetAttr(o, name);
        if (*out != NULL)
            return 1;
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    else
        return 0; /* a custom getattro (a proxy, __getattr__, __getattribute__) */
    *out = PyObject_GetAttr(o, name); /* from here, C code only */
    if (*out != NULL)
        return 1;
    if (!PyErr_ExceptionMatches(PyExc_AttributeError))
        return -1;
    PyErr_Clear();
    return 0;
}
