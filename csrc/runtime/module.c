/*
** module.c: the framejit._C extension module.
**
** Responsible for: creating the module and asking each subsystem to add its
** names (each subsystem's fj_<part>_init), and _C.realpath for framejit's
** Python hooks.  Holds no state of its own.
*/
#define _DEFAULT_SOURCE /* realpath(3) */
#include <limits.h>
#include <stdlib.h>

#define FJ_NUMPY_IMPORT
#include "fj_numpy.h"

#include "bytecode.h"
#include "compiler.h"
#include "config.h"
#include "cache.h"
#include "evalframe.h"
#include "graph.h"
#include "loop.h"
#include "builtin_ops.h"
#include "guards.h"
#include "native.h"
#include "ops.h"
#include "runmode.h"
#include "source.h"
#include "tensor_meta.h"
#include "torch_infer.h"
#include "torchlib.h"
#include "trace.h"
#include "wrapper.h"

/*
** realpath(path) -> str: the canonical path of an existing file, or 'path'
** unchanged when it cannot be resolved.  The skip rules run while a
** program's frame compiles; os.path.realpath is Python code that calls
** builtins (isinstance, ...) the program may have patched.  New reference.
*/
static PyObject *fj_realpath(PyObject *self, PyObject *path)
{
    PyObject *bytes = NULL;
    char buf[PATH_MAX];
    if (!PyUnicode_Check(path)) {
        PyErr_SetString(PyExc_TypeError, "realpath expects a str");
        return NULL;
    }
    if (!PyUnicode_FSConverter(path, &bytes))
        return NULL;
    const char *r = realpath(PyBytes_AS_STRING(bytes), buf);
    Py_DECREF(bytes);
    return r != NULL ? PyUnicode_DecodeFSDefault(r) : Py_NewRef(path);
}

static PyMethodDef fj_module_methods[] = {
    {"realpath", fj_realpath, METH_O,
     "realpath(path) -> canonical path of an existing file, else path (C: runs no Python)"},
    {NULL},
};

static struct PyModuleDef fj_module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "framejit._C",
    .m_doc = "framejit's C core: eval-frame hook, cache, guards, tracer, codegen.",
    .m_size = -1,
    .m_methods = fj_module_methods,
};

int fj_numpy_ensure(void)
{
    if (fj_numpy_loaded())
        return 0;
    return _import_array() < 0 ? -1 : 0;
}

/* sys.modules[name] when it is a module object, else NULL (borrowed). */
static PyObject *loaded_module(PyObject *modules, const char *name)
{
    PyObject *m = PyDict_GetItemString(modules, name);
    return m != NULL && PyModule_CheckExact(m) ? m : NULL;
}

/*
** Runs no program code: NumPy must be a real module whose import has
** finished (its spec's _initializing, read from the spec's __dict__, not
** through getattr: a lazily loaded module would load on any attribute read),
** and its C core must be in sys.modules already; the table comes from the
** core module's dict, with the version checks import_array makes, and no
** import (builtins.__import__ may be the program's).  The pending
** exception, if any, is kept.
*/
int fj_numpy_try(void)
{
    if (fj_numpy_loaded())
        return 1;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    int ok = 0;
    PyObject *modules = PyImport_GetModuleDict();
    PyObject *np = modules ? loaded_module(modules, "numpy") : NULL;
    PyObject *spec = np ? PyDict_GetItemString(PyModule_GetDict(np), "__spec__") : NULL;
    PyObject *sd = spec && spec != Py_None ? PyObject_GenericGetDict(spec, NULL) : NULL;
    int busy = sd != NULL && PyDict_GetItemString(sd, "_initializing") == Py_True;
    Py_XDECREF(sd);
    PyObject *core = np && !busy ? loaded_module(modules, "numpy._core._multiarray_umath") : NULL;
    if (np && !busy && core == NULL)
        core = loaded_module(modules, "numpy.core._multiarray_umath");
    PyObject *capsule = core ? PyDict_GetItemString(PyModule_GetDict(core), "_ARRAY_API") : NULL;
    void **api = capsule && PyCapsule_CheckExact(capsule) ? PyCapsule_GetPointer(capsule, NULL)
                                                           : NULL;
    if (api != NULL) {
        PyArray_API = api;
        PyArray_RUNTIME_VERSION = (int)PyArray_GetNDArrayCFeatureVersion();
        ok = NPY_VERSION >= PyArray_GetNDArrayCVersion() &&
             NPY_FEATURE_VERSION <= PyArray_RUNTIME_VERSION;
        if (!ok)
            PyArray_API = NULL; /* fj_numpy_ensure reports the mismatch */
    }
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
    return ok;
}

PyMODINIT_FUNC PyInit__C(void);

PyMODINIT_FUNC PyInit__C(void)
{
    PyObject *m = PyModule_Create(&fj_module_def);
    if (m == NULL)
        return NULL;
    /* NumPy's API table is loaded lazily (fj_numpy.h), now only if the
       program already imported NumPy */
    (void)fj_numpy_try();
    if (PyModule_AddIntConstant(m, "SUPPORTED", FJ_SUPPORTED) < 0)
        goto error;
    /* framejit._C._testing: entry points for tests and benchmarks only, out
       of the production module's names */
    PyObject *testing = PyModule_New("framejit._C._testing");
    if (testing == NULL || PyModule_AddObjectRef(m, "_testing", testing) < 0 ||
        PyDict_SetItemString(PyImport_GetModuleDict(), "framejit._C._testing", testing) < 0) {
        Py_XDECREF(testing);
        goto error;
    }
    Py_DECREF(testing); /* the module holds it */
    if (fj_guards_init(m) < 0 || fj_cache_init(m) < 0 || fj_evalframe_init(m) < 0 ||
        fj_bytecode_init(testing) < 0 || fj_graph_init(m) < 0 || fj_loop_init(m) < 0 || fj_builtin_ops_init(m) < 0 || fj_ops_init(testing) < 0 ||
        fj_source_init(m) < 0 || fj_trace_init(m) < 0 || fj_compiler_init(m) < 0 || fj_config_init(m) < 0 || fj_runmode_init(m) < 0 ||
        fj_wrapper_init(m) < 0 || fj_native_init(m, testing) < 0 || fj_tensor_meta_init(m, testing) < 0 ||
        fj_torchlib_init(m, testing) < 0 || fj_torch_infer_init(testing) < 0)
        goto error;
    return m;
error:
    Py_DECREF(m);
    return NULL;
}
