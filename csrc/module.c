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
#include "cache.h"
#include "evalframe.h"
#include "graph.h"
#include "guards.h"
#include "native.h"
#include "ops.h"
#include "source.h"
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

int fj_numpy_try(void)
{
    if (fj_numpy_loaded())
        return 1;
    /* only once NumPy's import finished: loading the table from inside it
       would import its C core out of order */
    PyObject *modules = PyImport_GetModuleDict();
    PyObject *np = PyDict_GetItemString(modules, "numpy");
    if (np == NULL)
        return 0;
    PyObject *spec = PyObject_GetAttrString(np, "__spec__");
    PyObject *busy = spec && spec != Py_None ? PyObject_GetAttrString(spec, "_initializing")
                                              : NULL;
    int initializing = busy != NULL && PyObject_IsTrue(busy) == 1;
    Py_XDECREF(spec);
    Py_XDECREF(busy);
    PyErr_Clear();
    if (initializing)
        return 0;
    if (fj_numpy_ensure() < 0) {
        PyErr_Clear();
        return 0;
    }
    return 1;
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
    if (fj_guards_init(m) < 0 || fj_cache_init(m) < 0 || fj_evalframe_init(m) < 0 ||
        fj_bytecode_init(m) < 0 || fj_graph_init(m) < 0 || fj_ops_init(m) < 0 ||
        fj_source_init(m) < 0 || fj_trace_init(m) < 0 || fj_compiler_init(m) < 0 ||
        fj_wrapper_init(m) < 0 || fj_native_init(m) < 0)
        goto error;
    return m;
error:
    Py_DECREF(m);
    return NULL;
}
