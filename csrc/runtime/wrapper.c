/*
** wrapper.c: framejit._C.CompiledFunction.  See wrapper.h.
*/
#include "wrapper.h"

#include "evalframe.h"
#include "fj_numpy.h"

#include <stddef.h>
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    PyObject *fn;       /* strong: the wrapped callable */
    PyObject *callback; /* strong: the eval-frame callback to set */
    PyObject *dict;     /* strong or NULL: attributes (__name__, __wrapped__, ...) */
    vectorcallfunc vectorcall;
} CompiledFunction;

static PyObject *cf_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames)
{
    CompiledFunction *cf = (CompiledFunction *)self;
    if (!fj_numpy_loaded())
        (void)fj_numpy_try(); /* the hook sees arrays only once the table is loaded */
    PyObject *prior = fj_swap_callback(cf->callback);
    if (prior == NULL)
        return NULL;
    PyObject *r = PyObject_Vectorcall(cf->fn, args, nargsf, kwnames);
    /* restore even when the call raised: keep the pending exception */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *mine = fj_swap_callback(prior);
    Py_XDECREF(mine);
    Py_DECREF(prior);
    PyErr_Restore(et, ev, tb);
    return r;
}

static int cf_init(CompiledFunction *self, PyObject *args, PyObject *kw)
{
    PyObject *fn, *callback;
    if (!PyArg_ParseTuple(args, "OO:CompiledFunction", &fn, &callback))
        return -1;
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "framejit.compile expects a callable, not %.100s",
                     Py_TYPE(fn)->tp_name);
        return -1;
    }
    if (callback != Py_None && callback != Py_False && !PyCallable_Check(callback)) {
        PyErr_Format(PyExc_TypeError, "callback must be a callable, None or False, not %.100s",
                     Py_TYPE(callback)->tp_name);
        return -1;
    }
    Py_XSETREF(self->fn, Py_NewRef(fn));
    Py_XSETREF(self->callback, Py_NewRef(callback));
    self->vectorcall = cf_vectorcall;
    return 0;
}

static PyObject *cf_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static int cf_traverse(CompiledFunction *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->fn);
    Py_VISIT(self->callback);
    Py_VISIT(self->dict);
    return 0;
}

static int cf_clear(CompiledFunction *self)
{
    Py_CLEAR(self->fn);
    Py_CLEAR(self->callback);
    Py_CLEAR(self->dict);
    return 0;
}

static void cf_dealloc(CompiledFunction *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    cf_clear(self);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyObject *cf_repr(CompiledFunction *self)
{
    return PyUnicode_FromFormat("<framejit compiled %R>", self->fn);
}

static PyObject *cf_get_fn(CompiledFunction *self, void *c)
{
    return Py_NewRef(self->fn ? self->fn : Py_None);
}

static PyObject *cf_get_callback(CompiledFunction *self, void *c)
{
    return Py_NewRef(self->callback ? self->callback : Py_None);
}

static PyGetSetDef cf_getset[] = {
    {"_framejit_orig", (getter)cf_get_fn, NULL, "the wrapped callable", NULL},
    {"_framejit_callback", (getter)cf_get_callback, NULL, "the eval-frame callback", NULL},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL},
};

static PyMemberDef cf_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(CompiledFunction, dict), READONLY},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(CompiledFunction, vectorcall), READONLY},
    {NULL},
};

static PyType_Slot cf_slots[] = {
    {Py_tp_init, cf_init},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_descr_get, cf_descr_get},
    {Py_tp_traverse, cf_traverse},
    {Py_tp_clear, cf_clear},
    {Py_tp_dealloc, cf_dealloc},
    {Py_tp_repr, cf_repr},
    {Py_tp_getset, cf_getset},
    {Py_tp_members, cf_members},
    {Py_tp_doc, "CompiledFunction(fn, callback): calls fn with the eval-frame callback set."},
    {0, NULL},
};

static PyType_Spec cf_spec = {"framejit._C.CompiledFunction", sizeof(CompiledFunction), 0,
                              Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
                                  Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
                              cf_slots};

int fj_wrapper_init(PyObject *module)
{
    PyObject *tp = PyType_FromSpec(&cf_spec);
    if (tp == NULL)
        return -1;
    int r = PyModule_AddObjectRef(module, "CompiledFunction", tp);
    Py_DECREF(tp);
    return r;
}
