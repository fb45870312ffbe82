/*
** builtin_ops.c: sum(), max() and min() of a 1-d array (builtin_ops.h).
*/
#include "fj_numpy.h"
#include "builtin_ops.h"

#include <fenv.h>
#include <math.h>

const fj_OpDef fj_builtin_reduce_row = {"builtin", FJ_OP_FUNC, NULL, NULL, 0, NULL, 0, 0, 0, "", 0, NULL, 0};
const fj_OpDef fj_builtin_pick_row = {"builtin_pick", FJ_OP_FUNC, NULL, NULL, 0, NULL, 0, 0, 0, "", 0, NULL, 0};

static PyObject *fns[3];

PyObject *fj_builtin_reduce_fn(int which)
{
    return which >= 0 && which < 3 ? fns[which] : NULL;
}

/* builtins.<name>(*args): CPython's own answer (warnings and errors too). */
static PyObject *call_builtin(const char *name, PyObject *const *args, Py_ssize_t n)
{
    PyObject *b = PyEval_GetBuiltins(); /* borrowed */
    PyObject *fn = b ? PyDict_GetItemString(b, name) : NULL;
    if (fn == NULL) {
        PyErr_Format(PyExc_RuntimeError, "framejit: builtins.%s is missing", name);
        return NULL;
    }
    return PyObject_Vectorcall(fn, args, (size_t)n, NULL);
}

/* 'a' as an aligned 1-d exact ndarray in native byte order of float64,
   float32 or int64: its NumPy type number, else 0. */
static int kernel_type(PyObject *a)
{
    if (!PyArray_CheckExact(a))
        return 0;
    PyArrayObject *arr = (PyArrayObject *)a;
    if (PyArray_NDIM(arr) != 1 || PyArray_SIZE(arr) == 0 || !PyArray_ISALIGNED(arr) ||
        !PyArray_ISNBO(PyArray_DESCR(arr)->byteorder))
        return 0;
    int t = PyArray_TYPE(arr);
    return t == NPY_DOUBLE || t == NPY_FLOAT || t == NPY_LONGLONG || (t == NPY_LONG && sizeof(long) == 8) ? t : 0;
}

/* sum(a, start): start + a[0] + a[1] + ... in order, each '+' NumPy's
   scalar arithmetic (an int start is weak: the item's type wins). */
static PyObject *builtin_sum(PyObject *mod, PyObject *const *args, Py_ssize_t n)
{
    if (n < 1 || n > 2) {
        PyErr_SetString(PyExc_TypeError, "_builtin_sum(a[, start])");
        return NULL;
    }
    PyObject *a = args[0];
    PyObject *start = n == 2 ? args[1] : NULL;
    int t = kernel_type(a);
    long long s0 = 0;
    if (start != NULL) {
        int overflow = 0;
        s0 = PyLong_CheckExact(start) ? PyLong_AsLongLongAndOverflow(start, &overflow) : 0;
        if (!PyLong_CheckExact(start) || overflow || (s0 == -1 && PyErr_Occurred()) ||
            s0 > (1LL << 53) || s0 < -(1LL << 53))
            t = 0;
        PyErr_Clear();
    }
    if (t == 0)
        goto plain;
    PyArrayObject *arr = (PyArrayObject *)a;
    npy_intp len = PyArray_SIZE(arr), st = PyArray_STRIDES(arr)[0];
    const char *p = PyArray_BYTES(arr);
    feclearexcept(FE_OVERFLOW | FE_INVALID | FE_DIVBYZERO);
    if (t == NPY_DOUBLE) {
        double acc = (double)s0;
        for (npy_intp i = 0; i < len; i++, p += st)
            acc = acc + *(const double *)p;
        volatile double done = acc; /* computed before the test below */
        (void)done;
        if (fetestexcept(FE_OVERFLOW | FE_INVALID))
            goto plain; /* NumPy's scalar add warns: its own loop, then */
        return PyArray_Scalar(&acc, PyArray_DESCR(arr), NULL);
    }
    if (t == NPY_FLOAT) {
        float acc = (float)s0;
        for (npy_intp i = 0; i < len; i++, p += st)
            acc = acc + *(const float *)p;
        volatile float done = acc;
        (void)done;
        if (fetestexcept(FE_OVERFLOW | FE_INVALID))
            goto plain;
        return PyArray_Scalar(&acc, PyArray_DESCR(arr), NULL);
    }
    long long acc = s0;
    for (npy_intp i = 0; i < len; i++, p += st)
        if (__builtin_add_overflow(acc, *(const long long *)p, &acc))
            goto plain; /* NumPy warns and wraps */
    return PyArray_Scalar(&acc, PyArray_DESCR(arr), NULL);
plain:
    feclearexcept(FE_OVERFLOW | FE_INVALID | FE_DIVBYZERO);
    return call_builtin("sum", args, n);
}

/* max(a) / min(a): the first item, replaced by each later one that is
   greater (less): 'item > best' as NumPy compares (quietly: a NaN is never
   greater, and a NaN first stays). */
static PyObject *builtin_extreme(PyObject *const *args, Py_ssize_t n, int is_max)
{
    if (n != 1) {
        PyErr_SetString(PyExc_TypeError, "_builtin_max(a) / _builtin_min(a)");
        return NULL;
    }
    PyObject *a = args[0];
    int t = kernel_type(a);
    if (t == 0)
        return call_builtin(is_max ? "max" : "min", args, n);
    PyArrayObject *arr = (PyArrayObject *)a;
    npy_intp len = PyArray_SIZE(arr), st = PyArray_STRIDES(arr)[0];
    const char *p = PyArray_BYTES(arr), *best = p;
    if (t == NPY_DOUBLE) {
        double b = *(const double *)p;
        for (npy_intp i = 1; i < len; i++) {
            double v = *(const double *)(p + i * st);
            if (is_max ? __builtin_isgreater(v, b) : __builtin_isless(v, b)) {
                b = v;
                best = p + i * st;
            }
        }
    }
    else if (t == NPY_FLOAT) {
        float b = *(const float *)p;
        for (npy_intp i = 1; i < len; i++) {
            float v = *(const float *)(p + i * st);
            if (is_max ? __builtin_isgreater(v, b) : __builtin_isless(v, b)) {
                b = v;
                best = p + i * st;
            }
        }
    }
    else {
        long long b = *(const long long *)p;
        for (npy_intp i = 1; i < len; i++) {
            long long v = *(const long long *)(p + i * st);
            if (is_max ? v > b : v < b) {
                b = v;
                best = p + i * st;
            }
        }
    }
    return PyArray_Scalar((void *)best, PyArray_DESCR(arr), NULL);
}

static PyObject *builtin_max(PyObject *mod, PyObject *const *args, Py_ssize_t n)
{
    return builtin_extreme(args, n, 1);
}

static PyObject *builtin_min(PyObject *mod, PyObject *const *args, Py_ssize_t n)
{
    return builtin_extreme(args, n, 0);
}

static PyMethodDef methods[] = {
    {"_builtin_sum", (PyCFunction)(void (*)(void))builtin_sum, METH_FASTCALL,
     "sum(a[, start]) of a 1-d array, as CPython's builtin computes it (graph op)"},
    {"_builtin_max", (PyCFunction)(void (*)(void))builtin_max, METH_FASTCALL,
     "max(a) of a 1-d array, as CPython's builtin computes it (graph op)"},
    {"_builtin_min", (PyCFunction)(void (*)(void))builtin_min, METH_FASTCALL,
     "min(a) of a 1-d array, as CPython's builtin computes it (graph op)"},
    {NULL, NULL, 0, NULL},
};

int fj_builtin_ops_init(PyObject *module)
{
    for (int k = 0; k < 3; k++) {
        fns[k] = PyCFunction_NewEx(&methods[k], NULL, NULL);
        if (fns[k] == NULL || PyModule_AddObjectRef(module, methods[k].ml_name, fns[k]) < 0)
            return -1;
    }
    return 0;
}
