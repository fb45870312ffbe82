/*
** unsupported.c: framejit._C for CPython versions framejit does not support
** yet (everything but 3.11).  setup.py builds only this file there.
**
** Responsible for: importing fine and running everything uncompiled:
** SUPPORTED = 0, and framejit._C.eval_frame with the same public names as on
** 3.11, where setting a callback does nothing (framejit.compile returns the
** function itself, with one warning: framejit/api.py).
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *noop_none(PyObject *mod, PyObject *arg)
{
    Py_RETURN_NONE;
}

static PyObject *empty_list(PyObject *mod, PyObject *arg)
{
    return PyList_New(0);
}

static PyObject *unsupported_py(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2)
        return PyErr_Format(PyExc_TypeError, "unsupported expects 2 arguments, got %zd", nargs);
    return Py_NewRef(args[1]);
}

static PyMethodDef ef_methods[] = {
    {"set_eval_frame", noop_none, METH_O, "no-op on this Python (framejit unsupported)"},
    {"skip_code", noop_none, METH_O, "no-op on this Python"},
    {"reset_code", noop_none, METH_O, "no-op on this Python"},
    {"_debug_get_cache_entry_list", empty_list, METH_O, "always empty on this Python"},
    {"set_guard_error_hook", noop_none, METH_O, "no-op on this Python"},
    {"unsupported", (PyCFunction)(void (*)(void))unsupported_py, METH_FASTCALL,
     "unsupported(a, b) -> b"},
    {NULL},
};

static struct PyModuleDef ef_def = {PyModuleDef_HEAD_INIT, "framejit._C.eval_frame",
                                    "framejit is not supported on this Python", -1, ef_methods};
static struct PyModuleDef c_def = {PyModuleDef_HEAD_INIT, "framejit._C",
                                   "framejit is not supported on this Python", -1, NULL};

static PyType_Slot empty_slots[] = {{0, NULL}};
static PyType_Spec cache_entry_spec = {"framejit._C.eval_frame._CacheEntry", sizeof(PyObject), 0,
                                       Py_TPFLAGS_DEFAULT, empty_slots};
static PyType_Spec frame_spec = {"framejit._C.eval_frame._PyInterpreterFrame", sizeof(PyObject),
                                 0, Py_TPFLAGS_DEFAULT, empty_slots};

PyMODINIT_FUNC PyInit__C(void);

PyMODINIT_FUNC PyInit__C(void)
{
    PyObject *m = PyModule_Create(&c_def), *ef = NULL, *t1 = NULL, *t2 = NULL;
    if (m == NULL || PyModule_AddIntConstant(m, "SUPPORTED", 0) < 0 ||
        (ef = PyModule_Create(&ef_def)) == NULL ||
        (t1 = PyType_FromSpec(&cache_entry_spec)) == NULL ||
        (t2 = PyType_FromSpec(&frame_spec)) == NULL ||
        PyModule_AddObjectRef(ef, "_CacheEntry", t1) < 0 ||
        PyModule_AddObjectRef(ef, "_PyInterpreterFrame", t2) < 0 ||
        PyModule_AddObjectRef(m, "eval_frame", ef) < 0 ||
        PyDict_SetItemString(PyImport_GetModuleDict(), "framejit._C.eval_frame", ef) < 0) {
        Py_XDECREF(t1);
        Py_XDECREF(t2);
        Py_XDECREF(ef);
        Py_XDECREF(m);
        return NULL;
    }
    Py_DECREF(t1);
    Py_DECREF(t2);
    Py_DECREF(ef);
    return m;
}
