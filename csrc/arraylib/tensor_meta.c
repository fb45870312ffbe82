/*
** tensor_meta.c: the installed torch tensor reader.  See tensor_meta.h.
*/
#include "tensor_meta.h"

#include <time.h>

typedef int (*ReadFn)(PyObject *o, fj_TensorMeta *out);
typedef int (*AbiFn)(int64_t *abi, int64_t *size);

/* The reader's entry point, from a library that stays loaded for the
   process (torch_meta.py keeps its handle); NULL until installed. */
static ReadFn reader = NULL;

int fj_tensor_meta(PyObject *o, fj_TensorMeta *out)
{
    if (reader == NULL)
        return 0;
    int r = reader(o, out);
    if (r < 0 && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "framejit: the torch tensor reader failed");
    return r;
}

int fj_tensor_meta_ready(void)
{
    return reader != NULL;
}

/* _torch_meta_install(read_address, abi_address): installs the reader after
   checking that it fills this build's fj_TensorMeta.  None, NULL on error. */
static PyObject *install_py(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyLong_Check(args[0]) || !PyLong_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError,
                        "_torch_meta_install(read_address, abi_address) takes two int addresses");
        return NULL;
    }
    void *read = PyLong_AsVoidPtr(args[0]), *abi = PyLong_AsVoidPtr(args[1]);
    if (PyErr_Occurred())
        return NULL;
    if (read == NULL || abi == NULL) {
        PyErr_SetString(PyExc_ValueError, "_torch_meta_install: a NULL address");
        return NULL;
    }
    int64_t version = 0, size = 0;
    ((AbiFn)abi)(&version, &size);
    if (version != FJ_TENSOR_META_ABI || size != (int64_t)sizeof(fj_TensorMeta)) {
        PyErr_Format(PyExc_ImportError,
                     "framejit: the torch tensor reader fills layout %lld of %lld bytes; this "
                     "build needs layout %d of %zu bytes (rebuild it: framejit.torch_meta)",
                     (long long)version, (long long)size, FJ_TENSOR_META_ABI, sizeof(fj_TensorMeta));
        return NULL;
    }
    reader = (ReadFn)read;
    Py_RETURN_NONE;
}

/* _testing.tensor_meta(o): the reader's answer as a dict, None when it does
   not read 'o'. */
static PyObject *tensor_meta_py(PyObject *mod, PyObject *o)
{
    fj_TensorMeta m;
    int r = fj_tensor_meta(o, &m);
    if (r <= 0)
        return r < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *sizes = PyTuple_New(m.ndim), *strides = PyTuple_New(m.ndim);
    for (int i = 0; sizes != NULL && strides != NULL && i < m.ndim; i++) {
        PyTuple_SET_ITEM(sizes, i, PyLong_FromLongLong(m.sizes[i]));
        PyTuple_SET_ITEM(strides, i, PyLong_FromLongLong(m.strides[i]));
    }
    PyObject *d = NULL;
    if (sizes != NULL && strides != NULL && !PyErr_Occurred())
        d = Py_BuildValue("{s:i,s:i,s:i,s:O,s:K,s:L,s:O,s:O}", "dtype", (int)m.dtype,
                          "device_type", (int)m.device_type, "device_index", (int)m.device_index,
                          "requires_grad", m.requires_grad ? Py_True : Py_False, "dispatch_keys",
                          (unsigned long long)m.dispatch_keys, "storage_offset",
                          (long long)m.storage_offset, "sizes", sizes, "strides", strides);
    Py_XDECREF(sizes);
    Py_XDECREF(strides);
    return d;
}

/* _testing.tensor_meta_bench(o, n): seconds for n reads of 'o' (benchmarks). */
static PyObject *tensor_meta_bench_py(PyObject *mod, PyObject *args)
{
    PyObject *o;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "On:tensor_meta_bench", &o, &n))
        return NULL;
    fj_TensorMeta m;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (Py_ssize_t i = 0; i < n; i++)
        if (fj_tensor_meta(o, &m) < 0)
            return NULL;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return PyFloat_FromDouble((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
}

static PyMethodDef testing_methods[] = {
    {"tensor_meta", tensor_meta_py, METH_O, "tensor_meta(o): the torch reader's answer, or None"},
    {"tensor_meta_bench", tensor_meta_bench_py, METH_VARARGS,
     "tensor_meta_bench(o, n): seconds for n reads of o"},
    {NULL},
};

static PyMethodDef methods[] = {
    {"_torch_meta_install", (PyCFunction)(void (*)(void))install_py, METH_FASTCALL,
     "_torch_meta_install(read_address, abi_address): the C reader of torch tensors"},
    {NULL},
};

int fj_tensor_meta_init(PyObject *module, PyObject *testing)
{
    return PyModule_AddFunctions(module, methods) < 0 ? -1
                                                       : PyModule_AddFunctions(testing, testing_methods);
}
