/*
** loop.c: the fj_Loop a captured loop's node calls (loop.h).
*/
#include "loop.h"

#include <structmember.h>

typedef struct {
    PyObject_HEAD
    PyObject *body;      /* strong: the body graph */
    PyObject *carried;   /* strong: tuple of int, the state slots the body reads */
    Py_ssize_t *slot;    /* PyMem: the same slots as C ints (read each iteration) */
    Py_ssize_t nstate;   /* outputs of the body: the state slots */
    Py_ssize_t nlifted;  /* values of the enclosing graph, passed to every iteration */
    int whilemode;       /* a while loop: its last argument is the test's first value, the
                            body's last output the test's value after each iteration */
    int neg0, negs;      /* the loop goes on while a test's truth is not neg0 / negs */
    vectorcallfunc vectorcall;
} fj_Loop;

static PyTypeObject *fj_LoopType;
static PyObject *fj_LoopExit;     /* raised by a loop_exit node, caught by its loop alone */
static PyObject *fj_loop_exit_fn; /* the loop_exit nodes' callable */

/* The pending LoopExit taken; *state's slots it names set to its values.  0 or -1. */
static int exit_state(PyObject **state, Py_ssize_t nstate)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyErr_NormalizeException(&et, &ev, &tb);
    PyObject *a = ev != NULL ? ((PyBaseExceptionObject *)ev)->args : NULL;
    int r = 0;
    if (a != NULL && PyTuple_GET_SIZE(a) == 2) {
        PyObject *slots = PyTuple_GET_ITEM(a, 0), *vals = PyTuple_GET_ITEM(a, 1);
        PyObject *st = PyTuple_GetSlice(*state, 0, nstate);
        r = st == NULL ? -1 : 0;
        for (Py_ssize_t k = 0; r == 0 && k < PyTuple_GET_SIZE(slots); k++) {
            Py_ssize_t s = PyLong_AsSsize_t(PyTuple_GET_ITEM(slots, k));
            if (s < 0 || s >= nstate) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_SystemError, "framejit loop: an exit's slot out of range");
                r = -1;
                break;
            }
            PyObject *was = PyTuple_GET_ITEM(st, s);
            PyTuple_SET_ITEM(st, s, Py_NewRef(PyTuple_GET_ITEM(vals, k)));
            Py_DECREF(was);
        }
        if (r == 0)
            Py_SETREF(*state, st);
        else
            Py_XDECREF(st);
    }
    Py_XDECREF(et);
    Py_XDECREF(ev);
    Py_XDECREF(tb);
    return r;
}

static PyObject *loop_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames);

PyObject *fj_loop_new(PyObject *body, PyObject *carried, Py_ssize_t nstate, Py_ssize_t nlifted)
{
    fj_Loop *l = PyObject_New(fj_Loop, fj_LoopType);
    if (l == NULL)
        return NULL;
    l->body = l->carried = NULL;
    Py_ssize_t nc = PyTuple_GET_SIZE(carried);
    l->slot = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(nc ? nc : 1));
    if (l->slot == NULL) {
        Py_DECREF(l);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t k = 0; k < nc; k++)
        l->slot[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(carried, k));
    l->body = Py_NewRef(body);
    l->carried = Py_NewRef(carried);
    l->nstate = nstate;
    l->nlifted = nlifted;
    l->whilemode = l->neg0 = l->negs = 0;
    l->vectorcall = loop_vectorcall;
    return (PyObject *)l;
}

PyObject *fj_loop_new_while(PyObject *body, PyObject *carried, Py_ssize_t nstate, Py_ssize_t nlifted, int neg0,
                            int negs)
{
    PyObject *o = fj_loop_new(body, carried, nstate, nlifted);
    if (o != NULL) {
        ((fj_Loop *)o)->whilemode = 1;
        ((fj_Loop *)o)->neg0 = neg0 != 0;
        ((fj_Loop *)o)->negs = negs != 0;
    }
    return o;
}

int fj_loop_while(PyObject *o, int *neg0, int *negs)
{
    if (o == NULL || Py_TYPE(o) != fj_LoopType || !((fj_Loop *)o)->whilemode)
        return 0;
    if (neg0)
        *neg0 = ((fj_Loop *)o)->neg0;
    if (negs)
        *negs = ((fj_Loop *)o)->negs;
    return 1;
}

PyObject *fj_loop_body(PyObject *o)
{
    return o != NULL && Py_TYPE(o) == fj_LoopType ? ((fj_Loop *)o)->body : NULL;
}

static void loop_dealloc(fj_Loop *l)
{
    PyTypeObject *tp = Py_TYPE(l);
    Py_XDECREF(l->body);
    Py_XDECREF(l->carried);
    PyMem_Free(l->slot);
    PyObject_Free(l);
    Py_DECREF(tp);
}

/* The induction variable's next value after 'i' (Python ints, as range
   makes them).  New reference. */
static PyObject *next_index(PyObject *i, PyObject *step)
{
    return PyNumber_Add(i, step);
}

static PyObject *loop_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    fj_Loop *l = (fj_Loop *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), ncarried = PyTuple_GET_SIZE(l->carried);
    Py_ssize_t want = 3 + l->nstate + l->nlifted + l->whilemode;
    if ((kwnames && PyTuple_GET_SIZE(kwnames)) || nargs != want) {
        PyErr_Format(PyExc_TypeError, "framejit loop takes %zd positional arguments", want);
        return NULL;
    }
    PyObject *start = args[0], *stop = args[1], *step = args[2];
    Py_ssize_t nin = 1 + ncarried + l->nlifted;
    PyObject *state = PyTuple_New(l->nstate), *i = NULL, *result = NULL;
    PyObject *small[16], **in = nin <= 16 ? small : PyMem_Malloc(sizeof(PyObject *) * (size_t)nin);
    if (state == NULL || in == NULL) {
        Py_XDECREF(state);
        if (in != small && in != NULL)
            PyMem_Free(in);
        return in == NULL ? PyErr_NoMemory() : NULL;
    }
    for (Py_ssize_t k = 0; k < l->nstate; k++)
        PyTuple_SET_ITEM(state, k, Py_NewRef(args[3 + k]));
    for (Py_ssize_t k = 0; k < l->nlifted; k++)
        in[1 + ncarried + k] = args[3 + l->nstate + k];
    PyObject *zero = PyLong_FromLong(0);
    int up = zero ? PyObject_RichCompareBool(step, zero, Py_GT) : -1;
    Py_XDECREF(zero);
    if (up < 0)
        goto done;
    i = Py_NewRef(start);
    if (l->whilemode) {
        int t = PyObject_IsTrue(args[nargs - 1]);
        if (t < 0)
            goto done;
        if (t == l->neg0)
            goto finish; /* the test's first value: no iteration */
    }
    for (Py_ssize_t count = 1;; count++) {
        int more = PyObject_RichCompareBool(i, stop, up ? Py_LT : Py_GT);
        if (more < 0)
            goto done;
        if (!more)
            break;
        /* a long loop can be interrupted (Ctrl-C), as CPython's would */
        if ((count & 4095) == 0 && PyErr_CheckSignals() < 0)
            goto done;
        in[0] = i;
        for (Py_ssize_t k = 0; k < ncarried; k++)
            in[1 + k] = PyTuple_GET_ITEM(state, l->slot[k]);
        PyObject *out = fj_graph_run(l->body, in, nin);
        if (out == NULL) {
            if (PyErr_ExceptionMatches(fj_LoopExit)) {
                /* an exit: a compound test's comes before anything the iteration
                   changes (the state stands); a for loop's break sets the slots
                   whose locals the iteration changed (its args: slots, values) */
                if (exit_state(&state, l->nstate) < 0)
                    goto done;
                break;
            }
            goto done;
        }
        if (l->whilemode) {
            /* the state, then the test's value */
            int t = PyObject_IsTrue(PyTuple_GET_ITEM(out, l->nstate));
            PyObject *st = t >= 0 ? PyTuple_GetSlice(out, 0, l->nstate) : NULL;
            Py_DECREF(out);
            if (st == NULL)
                goto done;
            Py_SETREF(state, st);
            if (t == l->negs)
                break;
        }
        else
            Py_SETREF(state, out);
        Py_SETREF(i, next_index(i, step));
        if (i == NULL)
            goto done;
    }
finish:
    result = Py_NewRef(state);
done:
    Py_XDECREF(i);
    Py_DECREF(state);
    if (in != small)
        PyMem_Free(in);
    return result;
}

/* exit(value, leave, previous exit[, slots, values...]): True, or the loop's
   exit (LoopExit, its args (slots, values) for a for loop's break) where the
   value's truth is 'leave'. */
static PyObject *loop_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 3 || (nargs > 3 && (!PyTuple_Check(args[3]) || PyTuple_GET_SIZE(args[3]) != nargs - 4))) {
        PyErr_SetString(PyExc_TypeError, "framejit loop_exit takes (value, leave, previous[, slots, values...])");
        return NULL;
    }
    int t = PyObject_IsTrue(args[0]), leave = PyObject_IsTrue(args[1]);
    if (t < 0 || leave < 0)
        return NULL;
    if (t != leave)
        Py_RETURN_TRUE;
    if (nargs == 3) {
        PyErr_SetNone(fj_LoopExit);
        return NULL;
    }
    PyObject *vals = PyTuple_New(nargs - 4);
    if (vals == NULL)
        return NULL;
    for (Py_ssize_t k = 4; k < nargs; k++)
        PyTuple_SET_ITEM(vals, k - 4, Py_NewRef(args[k]));
    PyObject *a = PyTuple_Pack(2, args[3], vals);
    Py_DECREF(vals);
    if (a == NULL)
        return NULL;
    PyErr_SetObject(fj_LoopExit, a);
    Py_DECREF(a);
    return NULL;
}

/* pick(returned, value returned in the loop, value after it): a for loop's
   return (trace_loops.c, fj_trace_loop_return). */
static PyObject *loop_pick(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "framejit loop_pick takes 3 arguments");
        return NULL;
    }
    int t = PyObject_IsTrue(args[0]);
    return t < 0 ? NULL : Py_NewRef(t ? args[1] : args[2]);
}

static PyMethodDef loop_pick_def = {"loop_pick", (PyCFunction)(void (*)(void))loop_pick, METH_FASTCALL,
                                    "A for loop's return or the value after it (framejit internal)."};
static PyObject *fj_loop_pick_fn;

PyObject *fj_loop_pick_callable(void)
{
    return fj_loop_pick_fn;
}

static PyMethodDef loop_exit_def = {"loop_exit", (PyCFunction)(void (*)(void))loop_exit, METH_FASTCALL,
                                    "A loop's exit: a compound while test's, a for loop's break (framejit internal)."};

PyObject *fj_loop_exit_callable(void)
{
    return fj_loop_exit_fn;
}

static PyObject *loop_repr(fj_Loop *l)
{
    return PyUnicode_FromFormat("<framejit loop: %zd state values, %zd lifted, body of %zd nodes>", l->nstate,
                                l->nlifted, PyObject_Length(l->body));
}

static PyObject *loop_get_body(fj_Loop *l, void *c)
{
    return Py_NewRef(l->body);
}

static PyObject *loop_get_carried(fj_Loop *l, void *c)
{
    return Py_NewRef(l->carried);
}

static PyGetSetDef loop_getset[] = {
    {"body", (getter)loop_get_body, NULL, "the loop body's graph", NULL},
    {"carried", (getter)loop_get_carried, NULL, "the state slots the body reads, in placeholder order", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef loop_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(fj_Loop, vectorcall), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot loop_slots[] = {
    {Py_tp_dealloc, loop_dealloc},
    {Py_tp_repr, loop_repr},
    {Py_tp_getset, loop_getset},
    {Py_tp_members, loop_members},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_doc, "A captured loop: calls its body graph once per iteration (docs/loops.md)."},
    {0, NULL},
};

static PyType_Spec loop_spec = {
    .name = "framejit._C.Loop",
    .basicsize = sizeof(fj_Loop),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = loop_slots,
};

int fj_loop_init(PyObject *module)
{
    fj_LoopType = (PyTypeObject *)PyType_FromSpec(&loop_spec);
    if (fj_LoopType == NULL)
        return -1;
    if (fj_LoopExit == NULL &&
        (fj_LoopExit = PyErr_NewException("framejit._C.LoopExit", PyExc_BaseException, NULL)) == NULL)
        return -1;
    if (fj_loop_pick_fn == NULL && (fj_loop_pick_fn = PyCFunction_New(&loop_pick_def, NULL)) == NULL)
        return -1;
    if (fj_loop_exit_fn == NULL && (fj_loop_exit_fn = PyCFunction_New(&loop_exit_def, NULL)) == NULL)
        return -1;
    return PyModule_AddObjectRef(module, "Loop", (PyObject *)fj_LoopType);
}
