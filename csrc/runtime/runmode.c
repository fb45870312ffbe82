/*
** runmode.c: what `python -m framejit run` adds at the thread level.
**
** Responsible for: turning a thread's eval-frame callback off while a trace
** or profile function is set on it, and back on when both are cleared (run
** mode replaces sys.settrace and sys.setprofile with C wrappers, so a
** debugger or coverage sees the program's own frames, never break code or
** resume functions).
**
** Not responsible for: the hook's own policies (evalframe.c: tracers,
** quiet regions, dormancy) or the Python side (framejit/run.py).
*/
#include "runmode.h"

#include "evalframe.h"

/* Key, in the thread's state dict, of the callback put aside while traced. */
#define FJ_HELD_KEY "framejit.held_callback"

/*
** After a trace/profile function changed: while one is set on this thread
** the eval-frame callback is off (held in the thread's state dict); it comes
** back once both are cleared ('release': put it back now).  0 or -1.
*/
static int sync_tracer_switch(int release)
{
    PyObject *tdict = PyThreadState_GetDict();
    if (tdict == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "framejit: no thread state dict");
        return -1;
    }
    PyObject *held = PyDict_GetItemString(tdict, FJ_HELD_KEY); /* borrowed */
    int traced = !release && fj_thread_traced(PyThreadState_Get());
    if (traced && held == NULL) {
        PyObject *prev = fj_swap_callback(Py_None);
        int r = prev ? PyDict_SetItemString(tdict, FJ_HELD_KEY, prev) : -1;
        Py_XDECREF(prev);
        return r;
    }
    if (!traced && held != NULL) {
        PyObject *cur = fj_swap_callback(held);
        Py_XDECREF(cur);
        if (cur == NULL)
            return -1;
        return PyDict_DelItemString(tdict, FJ_HELD_KEY);
    }
    return 0;
}

/* sys.settrace/sys.setprofile as run mode installs them: 'orig' is the
** original.  A C function, so the tracer sees no frame of its own. */
static PyObject *tracer_switch_call(PyObject *orig, PyObject *function)
{
    PyObject *r = PyObject_CallOneArg(orig, function);
    if (r == NULL || sync_tracer_switch(0) < 0) {
        Py_XDECREF(r);
        return NULL;
    }
    return r;
}

static PyMethodDef tracer_switch_defs[2] = {
    {"settrace", (PyCFunction)tracer_switch_call, METH_O,
     "sys.settrace; framejit is off on this thread while a trace function is set."},
    {"setprofile", (PyCFunction)tracer_switch_call, METH_O,
     "sys.setprofile; framejit is off on this thread while a profile function is set."},
};

/* _tracer_switch(orig): the wrapper of sys.settrace or sys.setprofile. New ref. */
static PyObject *tracer_switch(PyObject *mod, PyObject *orig)
{
    if (!PyCallable_Check(orig)) {
        PyErr_SetString(PyExc_TypeError, "_tracer_switch expects a callable");
        return NULL;
    }
    PyObject *name = PyObject_GetAttrString(orig, "__name__");
    if (name == NULL)
        PyErr_Clear();
    int profile = name && PyUnicode_Check(name) &&
                  PyUnicode_CompareWithASCIIString(name, "setprofile") == 0;
    Py_XDECREF(name);
    return PyCFunction_NewEx(&tracer_switch_defs[profile], orig, NULL);
}

/* _tracer_release(): this thread's held callback, if any, is set again. */
static PyObject *tracer_release(PyObject *mod, PyObject *unused)
{
    if (sync_tracer_switch(1) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef runmode_methods[] = {
    {"_tracer_switch", tracer_switch, METH_O,
     "_tracer_switch(orig): a sys.settrace/sys.setprofile replacement that turns the "
     "thread's eval-frame callback off while a trace or profile function is set "
     "(python -m framejit run)."},
    {"_tracer_release", tracer_release, METH_NOARGS,
     "Puts back the callback this thread holds aside because of a tracer."},
    {NULL},
};

int fj_runmode_init(PyObject *module)
{
    return PyModule_AddFunctions(module, runmode_methods);
}
