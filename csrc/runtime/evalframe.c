/*
** evalframe.c: the PEP 523 frame-evaluation hook.  See evalframe.h.
**
** Per call the hot path is: read the thread's callback, read the code's
** ExtraState, run the guard trees of its entries, and on a hit make the
** frame run the entry's code (fj_frame_swap_code) before evaluating it.
** The callback protocol (what the callback returns):
**   None                      run the frame as it is (offer it again later)
**   (code, guard_manager[, compile_id])
**                             store a cache entry at the front and run it
**   framejit._C.SKIP_CODE     never offer this code again; run it as it is
**   framejit._C.RUN_ONLY      from now on use cached entries only
**   framejit._C.UNLESS_ARRAYS run it as it is, and offer it again only when
**                             an argument or free variable holds an array
**                             (its trace captured no graph operation)
*/
#define FJ_IMPORT_WATCH /* compat.h: the import watcher is defined here */
#include "evalframe.h"
#include "arraylib.h"
#include "torchlib.h"

#include "cache.h"
#include "fj_numpy.h"
#include "guards.h"
#include "rearm.h"

#include <pthread.h>
#include <stdbool.h>

/* Sets '*hook' (named 'what' in errors) to 'fn', a callable or None (unset). */
static PyObject *set_hook(PyObject **hook, const char *what, PyObject *fn)
{
    if (fn != Py_None && !PyCallable_Check(fn))
        return PyErr_Format(PyExc_TypeError, "%s expects a callable or None, not %.100s", what,
                            Py_TYPE(fn)->tp_name);
    Py_XSETREF(*hook, fn == Py_None ? NULL : Py_NewRef(fn));
    Py_RETURN_NONE;
}

static PyObject *skip_code_sentinel = NULL; /* strong */
static PyObject *run_only_sentinel = NULL;  /* strong */
static PyObject *unless_arrays_sentinel = NULL; /* strong */
static PyTypeObject *frame_wrapper_type = NULL;

#if FJ_SUPPORTED

/*
** Thread-local state.  The initial-exec TLS model makes each access a
** single %fs-relative load instead of a __tls_get_addr call (the extension
** is a shared object); the hook reads these on every frame.
*/
#if defined(__GNUC__)
#define FJ_TLS _Thread_local __attribute__((tls_model("initial-exec")))
#else
#define FJ_TLS _Thread_local
#endif
/* The thread's callback: NULL (off), Py_False (run-only) or a callable. */
static FJ_TLS PyObject *tls_callback = NULL; /* strong */
/* Nonzero while our callback or guards run on this thread. */
static FJ_TLS int tls_busy = 0;

static PyObject *fj_eval_frame(PyThreadState *ts, fj_Frame *f, int throw_flag);
#define fj_eval_frame_ptr ((fj_EvalFrameFunc)fj_eval_frame)

/* Threads with a callback set; the hook is installed while this is > 0. */
static Py_ssize_t active_threads = 0;
static fj_EvalFrameFunc previous_eval_frame = NULL;

/* ------------------------------------------------------------ resume calls */

/*
** The code objects framejit makes carry their role in a code-extra slot of
** their own (a small integer, nothing to free): break code (the code a split
** frame runs) and resume code (the continuation it calls).
*/
static Py_ssize_t role_index = -1;

static inline int code_role(PyCodeObject *co)
{
    return (int)(intptr_t)fj_code_get_extra(co, role_index);
}

int fj_evalframe_mark_code(PyObject *code, int role)
{
    if (role_index < 0)
        return 0;
    return fj_code_set_extra((PyCodeObject *)code, role_index, (void *)(intptr_t)role);
}

/*
** The frame 'f' runs a resume function called by the break code of its
** split function: returns that caller (suspended in the CALL whose result it
** returns, its value stack [NULL, resume function, arguments...], or on 3.13
** [resume function, NULL, arguments...]), else NULL.
** The layout is checked slot by slot, so anything else runs as usual.
*/
static fj_Frame *resume_caller(PyThreadState *ts, fj_Frame *f)
{
    PyFunctionObject *fn = FJ_FRAME_FUNC(f);
    PyCodeObject *rc = (PyCodeObject *)fn->func_code;
    if (code_role(rc) != FJ_CODE_ROLE_RESUME && code_role(rc) != FJ_CODE_ROLE_HANDLER)
        return NULL;
    fj_Frame *caller = fj_thread_current_frame(ts);
    if (caller == NULL || code_role(FJ_FRAME_CODE(caller)) != FJ_CODE_ROLE_BREAK)
        return NULL;
    int nargs = rc->co_argcount;
    if (nargs + 2 > FJ_FRAME_STACK_SIZE(caller))
        return NULL;
    PyObject **stack = fj_frame_stack_base(caller), **args = FJ_FRAME_LOCALSPLUS(f);
    if (!((stack[0] == NULL && stack[1] == (PyObject *)fn) ||
          (stack[0] == (PyObject *)fn && stack[1] == NULL)))
        return NULL;
    for (int i = 0; i < nargs; i++)
        if (stack[2 + i] != args[i])
            return NULL;
    return caller;
}

/* True if 'name' (interned) names a fast local of 'co'. */
static int has_local(PyCodeObject *co, PyObject *name, int from, int to)
{
    for (int i = from; i < to; i++)
        if (fj_code_local_name(co, i) == name)
            return 1;
    return 0;
}

/*
** A resume call is a tail call: the break code returns what the resume
** function returns.  The references the break frame would keep during the
** call go to the resume frame, which holds its own: the argument slots of
** the caller's value stack become None, and the caller's locals passed as
** arguments or made by the break code (names its function's code does not
** have: ___tmp_0, ___res_0, ...) are cleared.  So `del x` / `x = None` in
** the continuation frees x as it does without framejit.  Locals the
** continuation does not read stay until the caller returns, as they would
** in the function's own frame.
*/
static void hand_over_references(fj_Frame *caller, fj_Frame *f)
{
    /* held: clearing a local below may run a finalizer, which may rebind
       either function's __code__ */
    PyCodeObject *rc = (PyCodeObject *)Py_NewRef(FJ_FRAME_FUNC(f)->func_code);
    PyCodeObject *cc = FJ_FRAME_CODE(caller);
    PyCodeObject *oc = (PyCodeObject *)Py_NewRef(FJ_FRAME_FUNC(caller)->func_code);
    PyObject **stack = fj_frame_stack_base(caller), **locals = FJ_FRAME_LOCALSPLUS(caller);
    for (int i = 0; i < rc->co_argcount; i++) {
        PyObject *o = stack[2 + i];
        stack[2 + i] = Py_NewRef(Py_None);
        Py_DECREF(o); /* the resume frame holds its own reference */
    }
    for (int i = 0; i < FJ_CODE_NLOCALSPLUS(cc); i++) {
        if (locals[i] == NULL || fj_code_local_kind(cc, i) != FJ_FAST_LOCAL)
            continue;
        PyObject *name = fj_code_local_name(cc, i);
        if (has_local(rc, name, 0, rc->co_argcount) ||
            !has_local(oc, name, 0, FJ_CODE_NLOCALSPLUS(oc)))
            Py_CLEAR(locals[i]);
    }
    Py_DECREF(rc);
    Py_DECREF(oc);
}

static inline PyObject *eval_default(PyThreadState *ts, fj_Frame *f, int throw_flag)
{
    fj_Frame *caller = throw_flag ? NULL : resume_caller(ts, f);
    if (caller == NULL)
        return previous_eval_frame(ts, f, throw_flag);
    /* the resume frame takes the break frame's place on the call stack */
    hand_over_references(caller, f);
    /* the function's frame object (kept by a callee, a traceback or a
       debugger before the break) goes on as the resume frame's; not into a
       handler's: the traceback of the exception it handles points into the
       break code (tb_lasti), whose positions it must keep */
    if (code_role((PyCodeObject *)FJ_FRAME_FUNC(f)->func_code) != FJ_CODE_ROLE_HANDLER)
        fj_frame_move_frame_object(caller, f);
    fj_frame_hide(ts, caller);
    PyObject *r = previous_eval_frame(ts, f, throw_flag);
    fj_frame_unhide(ts, caller);
    return r;
}

/* ------------------------------------------------------ frame wrapper type */

typedef struct {
    PyObject_HEAD
    fj_Frame *frame; /* borrowed: valid only while the callback runs, then NULL */
    PyObject *locals; /* strong, built on first access */
} FrameWrapper;

static fj_Frame *wrapper_frame(FrameWrapper *self)
{
    if (self->frame == NULL)
        PyErr_SetString(PyExc_RuntimeError,
                        "_PyInterpreterFrame is only valid while the callback runs");
    return self->frame;
}

static void view_of_frame(fj_Frame *f, fj_FrameView *v)
{
    v->localsplus = FJ_FRAME_LOCALSPLUS(f);
    v->nlocalsplus = FJ_CODE_NLOCALSPLUS(FJ_FRAME_CODE(f));
    v->closure = FJ_FRAME_FUNC(f)->func_closure;
    v->globals = FJ_FRAME_GLOBALS(f);
    v->builtins = FJ_FRAME_BUILTINS(f);
}

static PyObject *wrapper_f_code(FrameWrapper *self, void *c)
{
    fj_Frame *f = wrapper_frame(self);
    return f ? Py_NewRef(FJ_FRAME_CODE(f)) : NULL;
}
static PyObject *wrapper_f_globals(FrameWrapper *self, void *c)
{
    fj_Frame *f = wrapper_frame(self);
    return f ? Py_NewRef(FJ_FRAME_GLOBALS(f)) : NULL;
}
static PyObject *wrapper_f_builtins(FrameWrapper *self, void *c)
{
    fj_Frame *f = wrapper_frame(self);
    return f ? Py_NewRef(FJ_FRAME_BUILTINS(f)) : NULL;
}
static PyObject *wrapper_f_locals(FrameWrapper *self, void *c)
{
    if (self->locals == NULL) {
        fj_Frame *f = wrapper_frame(self);
        if (f == NULL)
            return NULL;
        fj_FrameView v;
        view_of_frame(f, &v);
        self->locals = fj_view_locals_dict(FJ_FRAME_CODE(f), &v, fj_frame_is_fresh(f));
        if (self->locals == NULL)
            return NULL;
    }
    return Py_NewRef(self->locals);
}
static PyObject *wrapper_f_lasti(FrameWrapper *self, void *c)
{
    fj_Frame *f = wrapper_frame(self);
    if (f == NULL)
        return NULL;
    int lasti = FJ_FRAME_LASTI(f);
    return PyLong_FromLong(lasti < 0 ? -1 : lasti * (int)sizeof(_Py_CODEUNIT));
}
static PyObject *wrapper_f_lineno(FrameWrapper *self, void *c)
{
    fj_Frame *f = wrapper_frame(self);
    if (f == NULL)
        return NULL;
    int lasti = FJ_FRAME_LASTI(f);
    return PyLong_FromLong(PyCode_Addr2Line(FJ_FRAME_CODE(f), lasti * (int)sizeof(_Py_CODEUNIT)));
}
static PyObject *wrapper_closure(FrameWrapper *self, void *c)
{
    fj_Frame *f = wrapper_frame(self);
    if (f == NULL)
        return NULL;
    PyObject *cl = FJ_FRAME_FUNC(f)->func_closure;
    return Py_NewRef(cl ? cl : Py_None);
}
static PyObject *wrapper_f_func(FrameWrapper *self, void *c)
{
    fj_Frame *f = wrapper_frame(self);
    return f ? Py_NewRef(FJ_FRAME_FUNC(f)) : NULL;
}

static PyGetSetDef wrapper_getset[] = {
    {"f_code", (getter)wrapper_f_code, NULL, "the frame's code object", NULL},
    {"f_globals", (getter)wrapper_f_globals, NULL, "the frame's globals", NULL},
    {"f_builtins", (getter)wrapper_f_builtins, NULL, "the frame's builtins", NULL},
    {"f_locals", (getter)wrapper_f_locals, NULL, "a dict of the frame's named locals", NULL},
    {"f_lasti", (getter)wrapper_f_lasti, NULL, "offset of the last instruction, -1 if none",
     NULL},
    {"f_lineno", (getter)wrapper_f_lineno, NULL, "the current line", NULL},
    {"closure", (getter)wrapper_closure, NULL, "the function's closure tuple or None", NULL},
    {"f_func", (getter)wrapper_f_func, NULL, "the function being called", NULL},
    {NULL},
};

static void wrapper_dealloc(FrameWrapper *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    Py_CLEAR(self->locals);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyObject *wrapper_repr(FrameWrapper *self)
{
    if (self->frame == NULL)
        return PyUnicode_FromString("<_PyInterpreterFrame (finished)>");
    PyCodeObject *co = FJ_FRAME_CODE(self->frame);
    return PyUnicode_FromFormat("<_PyInterpreterFrame %U %U:%d>", co->co_name, co->co_filename,
                                co->co_firstlineno);
}

static PyObject *wrapper_new_py(PyTypeObject *tp, PyObject *a, PyObject *k)
{
    PyErr_SetString(PyExc_TypeError, "_PyInterpreterFrame objects are made by the hook");
    return NULL;
}

static PyType_Slot wrapper_slots[] = {
    {Py_tp_dealloc, wrapper_dealloc},
    {Py_tp_getset, wrapper_getset},
    {Py_tp_repr, wrapper_repr},
    {Py_tp_new, wrapper_new_py},
    {Py_tp_doc, "A frame about to run, as the eval-frame callback sees it."},
    {0, NULL},
};
static PyType_Spec wrapper_spec = {"framejit._C.eval_frame._PyInterpreterFrame",
                                   sizeof(FrameWrapper), 0, Py_TPFLAGS_DEFAULT, wrapper_slots};

int fj_frame_wrapper_view(PyObject *w, fj_FrameView *view, PyCodeObject **code)
{
    if (Py_TYPE(w) != frame_wrapper_type) {
        PyErr_Format(PyExc_TypeError, "expected a _PyInterpreterFrame, not %.100s",
                     Py_TYPE(w)->tp_name);
        return -1;
    }
    fj_Frame *f = wrapper_frame((FrameWrapper *)w);
    if (f == NULL)
        return -1;
    view_of_frame(f, view);
    *code = FJ_FRAME_CODE(f);
    return 0;
}

/* ----------------------------------------------------------------- helpers */

/*
** True if 'code' can run in place of the frame's code 'orig': same argument
** layout and free variables, so the frame's argument slots and its
** function's closure mean the same to both.
*/
static int code_is_compatible(PyCodeObject *orig, PyCodeObject *code)
{
    const int flags = CO_VARARGS | CO_VARKEYWORDS;
    if (orig->co_argcount != code->co_argcount ||
        orig->co_posonlyargcount != code->co_posonlyargcount ||
        orig->co_kwonlyargcount != code->co_kwonlyargcount ||
        (orig->co_flags & flags) != (code->co_flags & flags) ||
        FJ_CODE_NFREEVARS(orig) != FJ_CODE_NFREEVARS(code))
        return 0;
    int nargs = fj_code_nargs(orig);
    for (int i = 0; i < nargs; i++) {
        if (PyUnicode_Compare(fj_code_local_name(orig, i), fj_code_local_name(code, i)) != 0)
            return 0;
    }
    int no = FJ_CODE_NLOCALSPLUS(orig), nc = FJ_CODE_NLOCALSPLUS(code);
    for (int i = 0; i < FJ_CODE_NFREEVARS(orig); i++) {
        PyObject *a = fj_code_local_name(orig, no - 1 - i), *b = fj_code_local_name(code, nc - 1 - i);
        if (PyUnicode_Compare(a, b) != 0)
            return 0;
    }
    return 1;
}

static inline int is_array(PyObject *o)
{
    return o != NULL && fj_arraylib_of(o) != NULL;
}

/*
** 1 once NumPy's API table is loaded.  Until then, each time sys.modules
** changed (its version tag: one compare per call) it looks whether the
** program has finished importing NumPy and loads the table, so arrays are
** seen from the first call after the import, not from the next compile.
*/
static int numpy_ready(void)
{
    static uint64_t modules_seen = 0;
    if (fj_numpy_loaded())
        return 1;
    PyObject *modules = PyImport_GetModuleDict();
    if (modules == NULL || FJ_DICT_VERSION(modules) == modules_seen)
        return 0;
    PyObject *np = PyDict_GetItemString(modules, "numpy");
    if (np == NULL || !PyModule_CheckExact(np)) {
        modules_seen = FJ_DICT_VERSION(modules); /* not imported (or lazily): look again on change */
        return 0;
    }
    /* imported, maybe still importing: look again on the next call */
    int busy = tls_busy;
    tls_busy = 1; /* loading imports NumPy's C core: no frame is offered meanwhile */
    int r = fj_numpy_try();
    tls_busy = busy;
    return r;
}

/*
** True if one of the inputs of the fresh frame 'view' of 'co' is a NumPy
** array or scalar: an argument, an item of *args, a value of **kwargs, or
** the contents of a free variable (TorchDynamo's has_tensor_in_frame).  It
** reads only the frame's slots and the exact types' items, never program
** code.  Arrays are any library's (arraylib.h: NumPy's, torch's).
*/
int fj_view_has_arrays(PyCodeObject *co, const fj_FrameView *view)
{
    if (!numpy_ready()) /* no array exists before NumPy is imported */
        return 0;
    (void)fj_torch_ready(); /* tensors are seen from the first call after torch's import */
    int nargs = co->co_argcount + co->co_kwonlyargcount;
    int varargs = !!(co->co_flags & CO_VARARGS), varkw = !!(co->co_flags & CO_VARKEYWORDS);
    for (int i = 0; i < nargs && i < view->nlocalsplus; i++)
        if (is_array(view->localsplus[i]))
            return 1;
    if (varargs && nargs < view->nlocalsplus) {
        PyObject *t = view->localsplus[nargs];
        if (t != NULL && PyTuple_CheckExact(t))
            for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(t); k++)
                if (is_array(PyTuple_GET_ITEM(t, k)))
                    return 1;
    }
    if (varkw && nargs + varargs < view->nlocalsplus) {
        PyObject *d = view->localsplus[nargs + varargs], *key, *value;
        Py_ssize_t pos = 0;
        if (d != NULL && PyDict_CheckExact(d))
            while (PyDict_Next(d, &pos, &key, &value))
                if (is_array(value))
                    return 1;
    }
    PyObject *closure = view->closure;
    if (closure != NULL && PyTuple_Check(closure))
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(closure); k++) {
            PyObject *cell = PyTuple_GET_ITEM(closure, k);
            if (PyCell_Check(cell) && is_array(PyCell_GET(cell)))
                return 1;
        }
    return 0;
}

/*
** A graph that raised.  Compiled code calls its graph under a handler that
** calls framejit._C._graph_raised(exc) and re-raises (codegen.c,
** emit_graph_call): nothing the frame does is visible before that call, so
** when the graph raises an Exception the frame's own code runs instead,
** from the start, with the same arguments, and raises (or handles) exactly
** what CPython does, at its own line (docs/side-effects.md, "Errors inside
** the graph").  Code generation adds the handler only where that holds: a
** function's code whose graph writes into no input array (fj_graph_mutates).
** KeyboardInterrupt, SystemExit and the like are never swallowed.
**
** RerunCall: the call to run again, taken by _graph_raised while the frame
** is alive (3.12+ clear and pop a frame as its evaluation ends): the frame,
** its function and arguments.
*/
typedef struct {
    fj_Frame *frame;  /* the frame whose graph raised, compared only */
    PyObject *func;   /* strong */
    PyObject *args;   /* strong tuple */
    PyObject *kwargs; /* strong dict */
} RerunCall;
static FJ_TLS RerunCall tls_rerun = {NULL, NULL, NULL, NULL};
static FJ_TLS PyCodeObject *tls_own_code = NULL; /* the next frame of this code runs as is */
static PyObject *graph_raised_fn = NULL;         /* strong: framejit._C._graph_raised */
static PyObject *rerun_hook = NULL;              /* strong or NULL: hook(code, exc) */

static void rerun_clear(RerunCall *rc)
{
    rc->frame = NULL;
    Py_CLEAR(rc->func);
    Py_CLEAR(rc->args);
    Py_CLEAR(rc->kwargs);
}

/*
** The arguments the frame 'f' of 'co' was called with, read from its fast
** locals before its code stored any (cell arguments from their cells): a
** tuple and a dict for PyObject_Call.  0, or -1 (an error set, or none
** when an argument is missing).
*/
static int frame_call_args(fj_Frame *f, PyCodeObject *co, PyObject **args, PyObject **kwargs)
{
    int npos = co->co_argcount, nkw = co->co_kwonlyargcount, nall = fj_code_nargs(co);
    PyObject *v[nall > 0 ? nall : 1];
    for (int i = 0; i < nall; i++) {
        v[i] = f->localsplus[i];
        if (v[i] != NULL && (fj_code_local_kind(co, i) & FJ_FAST_CELL))
            v[i] = PyCell_Check(v[i]) ? PyCell_GET(v[i]) : NULL;
        if (v[i] == NULL)
            return -1;
    }
    PyObject *star = (co->co_flags & CO_VARARGS) ? v[npos + nkw] : NULL;
    PyObject *dstar = (co->co_flags & CO_VARKEYWORDS) ? v[npos + nkw + !!star] : NULL;
    if ((star != NULL && !PyTuple_Check(star)) || (dstar != NULL && !PyDict_Check(dstar)))
        return -1;
    Py_ssize_t nstar = star ? PyTuple_GET_SIZE(star) : 0;
    *args = PyTuple_New(npos + nstar);
    *kwargs = dstar ? PyDict_Copy(dstar) : PyDict_New();
    if (*args == NULL || *kwargs == NULL)
        goto fail;
    for (int i = 0; i < npos; i++)
        PyTuple_SET_ITEM(*args, i, Py_NewRef(v[i]));
    for (Py_ssize_t i = 0; i < nstar; i++)
        PyTuple_SET_ITEM(*args, npos + i, Py_NewRef(PyTuple_GET_ITEM(star, i)));
    for (int i = 0; i < nkw; i++)
        if (PyDict_SetItem(*kwargs, fj_code_local_name(co, npos + i), v[npos + i]) < 0)
            goto fail;
    return 0;
fail:
    Py_CLEAR(*args);
    Py_CLEAR(*kwargs);
    return -1;
}

/* Compiled code's handler: takes the call to run again when 'exc' is an
   Exception (a failure to take it leaves the graph's error standing). */
static PyObject *graph_raised_py(PyObject *mod, PyObject *exc)
{
    PyThreadState *ts = PyThreadState_Get();
    fj_Frame *f = fj_thread_current_frame(ts);
    if (f == NULL || !PyExceptionInstance_Check(exc) ||
        !PyErr_GivenExceptionMatches(exc, PyExc_Exception))
        Py_RETURN_NONE;
    PyFunctionObject *fn = FJ_FRAME_FUNC(f);
    if (fn == NULL || !PyFunction_Check((PyObject *)fn))
        Py_RETURN_NONE;
    rerun_clear(&tls_rerun);
    PyObject *args, *kwargs;
    if (frame_call_args(f, FJ_FRAME_CODE(f), &args, &kwargs) < 0) {
        if (PyErr_ExceptionMatches(PyExc_MemoryError))
            return NULL;
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    tls_rerun.frame = f;
    tls_rerun.func = Py_NewRef((PyObject *)fn);
    tls_rerun.args = args;
    tls_rerun.kwargs = kwargs;
    Py_RETURN_NONE;
}

PyObject *fj_graph_raised_fn(void)
{
    return graph_raised_fn;
}

static PyObject *set_rerun_hook_py(PyObject *mod, PyObject *fn)
{
    return set_hook(&rerun_hook, "_set_rerun_hook", fn);
}

/* The frame of 'own' ran compiled code whose graph raised: runs 'own' for
   the call 'rc' took instead (the error stands if that cannot be done). */
static PyObject *rerun_own_code(RerunCall *rc, PyCodeObject *own)
{
    if (((PyFunctionObject *)rc->func)->func_code != (PyObject *)own)
        return NULL;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (rerun_hook != NULL && value != NULL) {
        PyObject *r = PyObject_CallFunctionObjArgs(rerun_hook, (PyObject *)own, value, NULL);
        if (r == NULL) /* a logging hook's own failure: the call still runs */
            PyErr_WriteUnraisable(rerun_hook);
        Py_XDECREF(r);
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    tls_own_code = own;
    PyObject *r = PyObject_Call(rc->func, rc->args, rc->kwargs);
    tls_own_code = NULL;
    return r;
}

/* Runs 'code' for the fresh frame 'f' (its code when swapping is impossible). */
static PyObject *run_code(PyThreadState *ts, fj_Frame *f, PyCodeObject *code, int throw_flag)
{
    PyCodeObject *own = FJ_FRAME_CODE(f); /* kept alive by the caller (fj_eval_frame) */
    if (code == own || fj_frame_swap_code(ts, f, code) < 0) /* on failure the original runs */
        return eval_default(ts, f, throw_flag);
    PyObject *r = eval_default(ts, f, throw_flag); /* 3.12+: 'f' is gone after this */
    if (tls_rerun.frame == f) {
        RerunCall rc = tls_rerun;
        tls_rerun.frame = NULL;
        tls_rerun.func = tls_rerun.args = tls_rerun.kwargs = NULL;
        if (r == NULL)
            r = rerun_own_code(&rc, own);
        rerun_clear(&rc);
    }
    return r;
}

/*
** Offers the missed frame 'f' to 'callback'.  Returns a new reference to the
** code to run (the frame's own when nothing was compiled), NULL on error.
*/
static PyCodeObject *offer_frame(PyObject *callback, fj_Frame *f, fj_ExtraState *es)
{
    PyCodeObject *co = FJ_FRAME_CODE(f);
    PyObject *result = NULL;
    PyCodeObject *run = NULL;
    FrameWrapper *w = PyObject_New(FrameWrapper, frame_wrapper_type);
    if (w == NULL)
        return NULL;
    Py_INCREF(frame_wrapper_type);
    w->frame = f;
    w->locals = NULL;
    if (es == NULL && (es = fj_cache_get_or_create(co)) == NULL)
        goto done;
    PyObject *first = es->n ? (PyObject *)es->entries[0] : Py_None;
    result = PyObject_CallFunctionObjArgs(callback, (PyObject *)w, first, es->frame_state, NULL);
    w->frame = NULL;
    if (result == NULL)
        goto done;
    if (result == Py_None) {
        run = (PyCodeObject *)Py_NewRef(co);
    }
    else if (result == skip_code_sentinel || result == run_only_sentinel ||
             result == unless_arrays_sentinel) {
        if ((es = fj_cache_get_or_create(co)) == NULL)
            goto done;
        es->strategy = result == skip_code_sentinel   ? FJ_STRATEGY_SKIP
                       : result == run_only_sentinel ? FJ_STRATEGY_RUN_ONLY
                                                     : FJ_STRATEGY_UNLESS_ARRAYS;
        run = (PyCodeObject *)Py_NewRef(co);
    }
    else if (PyTuple_Check(result) &&
             (PyTuple_GET_SIZE(result) == 2 || PyTuple_GET_SIZE(result) == 3)) {
        PyObject *code = PyTuple_GET_ITEM(result, 0), *gm = PyTuple_GET_ITEM(result, 1);
        PyObject *cid = PyTuple_GET_SIZE(result) == 3 ? PyTuple_GET_ITEM(result, 2) : Py_None;
        if (!PyCode_Check(code) || !fj_RootGuardManager_Check(gm)) {
            PyErr_Format(PyExc_TypeError,
                         "eval-frame callback for %U (%U:%d) returned (%.50s, %.50s): expected "
                         "(code, RootGuardManager[, compile_id])",
                         co->co_name, co->co_filename, co->co_firstlineno,
                         Py_TYPE(code)->tp_name, Py_TYPE(gm)->tp_name);
            goto done;
        }
        if (!code_is_compatible(co, (PyCodeObject *)code)) {
            PyErr_Format(PyExc_ValueError,
                         "eval-frame callback for %U (%U:%d) returned a code object whose "
                         "arguments or free variables differ from the frame's",
                         co->co_name, co->co_filename, co->co_firstlineno);
            goto done;
        }
        fj_CacheEntry *e = fj_cache_add(co, gm, code, cid, callback);
        if (e == NULL)
            goto done;
        run = (PyCodeObject *)Py_NewRef(code);
    }
    else {
        PyErr_Format(PyExc_TypeError,
                     "eval-frame callback for %U (%U:%d) returned %.100s; expected None, "
                     "(code, guard_manager[, compile_id]), SKIP_CODE or RUN_ONLY",
                     co->co_name, co->co_filename, co->co_firstlineno, Py_TYPE(result)->tp_name);
    }
done:
    w->frame = NULL;
    Py_XDECREF(result);
    Py_DECREF(w);
    return run;
}

/* ---------------------------------------------------------- quiet regions */

/*
** Quiet regions (docs/cpython-tests.md, "Quiet regions").  On 3.11 the hook
** itself costs a pure-Python call about half its time: with an eval-frame
** function set, CPython does not inline Python-to-Python calls.  A code that
** runs its own code (SKIP or UNLESS_ARRAYS), whose every observed callee,
** transitively, ran its own code too, and whose last executions met no code
** that was new to the hook, is "quiet": when the hook sees a fresh frame of
** a quiet code with no array input, it takes itself off the interpreter for
** that frame's evaluation, so the whole subtree runs at plain speed, and
** puts itself back after.
**
** What is learned, per code, in a code-extra word of its own (no
** allocation, nothing to free):
**   TAINTED  the code was seen calling code that ran compiled code, or a
**            tainted code (sticky: never quiet);
**   DIRTY    during its current execution a callee was offered to the
**            callback (code new to the hook, or a guard miss), or a dirty
**            callee returned: at its return the clean count restarts, and
**            a quiet code loses quiet and gains a strike;
**   CLEAN    consecutive executions without either; quiet after
**            FJ_QUIET_AFTER << STRIKES of them (a code whose callees keep
**            changing, such as a test runner's dispatch loop, backs off);
**   CALLS    entries while quiet: every FJ_QUIET_PROBE-th one is observed
**            with the hook on, its whole subtree included (no region starts
**            inside it), so code below that is new or starts capturing is
**            seen within a few calls.
** A quiet region only ever costs compiles, never behaviour: the frames in it
** run their own code, exactly as without framejit.  Regions are used only
** while this thread is the only one with a callback (another thread's
** frames would run without the hook meanwhile).
*/
#define FJ_QUIET_TAINTED ((uintptr_t)1)
#define FJ_QUIET_ON ((uintptr_t)2)
#define FJ_QUIET_DIRTY ((uintptr_t)4)
#define FJ_QUIET_STRIKE ((uintptr_t)8) /* 3 bits */
#define FJ_QUIET_STRIKES ((uintptr_t)7 * FJ_QUIET_STRIKE)
#define FJ_QUIET_CLEAN ((uintptr_t)64) /* 13 bits */
#define FJ_QUIET_CLEANS ((uintptr_t)8191 * FJ_QUIET_CLEAN)
#define FJ_QUIET_CALL ((uintptr_t)1 << 19)
#define FJ_QUIET_AFTER 32
#define FJ_QUIET_PROBE 16 /* power of two */
static Py_ssize_t quiet_index = -1;
/* Nonzero while an observed entry of a quiet code runs on this thread. */
static FJ_TLS int tls_probing = 0;

static inline uintptr_t quiet_word(PyCodeObject *co)
{
    return (uintptr_t)fj_code_get_extra(co, quiet_index);
}

static inline void quiet_set(PyCodeObject *co, uintptr_t w)
{
    void **slot = fj_code_extra_slot(co, quiet_index);
    if (slot != NULL)
        *slot = (void *)w;
    else if (fj_code_set_extra(co, quiet_index, (void *)w) < 0)
        PyErr_Clear(); /* no room: the code is simply never quiet */
}

/* Sets 'bits' in the word of the caller's code. */
static inline void quiet_mark_caller(fj_Frame *caller, uintptr_t bits)
{
    if (caller == NULL)
        return;
    PyCodeObject *pc = FJ_FRAME_CODE(caller);
    uintptr_t pw = quiet_word(pc);
    if ((pw & bits) != bits) {
        if (bits & FJ_QUIET_TAINTED)
            pw &= ~FJ_QUIET_ON;
        quiet_set(pc, pw | bits);
    }
}

/* True if code 'co' (its ExtraState 'es') only ever runs its own code. */
static inline int runs_own_code(fj_ExtraState *es)
{
    return es != NULL &&
           (es->strategy == FJ_STRATEGY_SKIP || es->strategy == FJ_STRATEGY_UNLESS_ARRAYS);
}

/*
** Quiet tails.  A frame that runs for long (a main loop, a scheduler's run)
** never returns often enough to become quiet itself; its calls pay the hook
** each.  So each evaluation the hook makes keeps an activation record, and
** after FJ_TAIL_AFTER consecutive clean callee returns (the callee ran its
** own code, was not offered, met nothing new) in a frame that runs its own
** code, the hook takes itself off for the rest of that frame's evaluation.
** A timer (rearm.c) puts it back FJ_REARM_DELAY_MS later, so the rest of the
** frame is observed again for FJ_TAIL_AFTER calls: code that is new or
** starts capturing below it is seen within that delay.
*/
#define FJ_TAIL_AFTER 256
typedef struct fj_Activation {
    struct fj_Activation *up; /* the enclosing evaluation on this thread */
    fj_Frame *frame;          /* borrowed: the frame being evaluated */
    unsigned clean;           /* consecutive clean callee returns */
    unsigned long epoch;      /* tail_epoch when the hook went off for it */
    int off;                  /* the hook went off for the rest of this frame */
} fj_Activation;
static FJ_TLS fj_Activation *tls_act = NULL;
static unsigned long tail_epoch = 0;

/*
** Stepping aside.  While 'stepped_aside' is set the interpreter's function
** is previous_eval_frame because a quiet region, a quiet tail or a deep
** stack took the hook off; step_back puts it back.  The hook steps aside
** only if it is the interpreter's function (a hook chained over framejit
** stays), and steps back only if nothing replaced previous_eval_frame
** meanwhile.  fj_swap_callback steps back whenever a callback is set (a
** framejit.compile'd function called inside a region, a thread starting):
** the region then goes on with the hook on.
*/
static int stepped_aside = 0;

/*
** Dormant (run mode): until the program imports an array library (NumPy,
** torch) no frame can hold an array, so no frame can capture a graph: the
** hook is off the interpreter altogether (stepped aside), and CPython runs
** and specializes as without framejit (it does not specialize Python calls
** while any hook is set: test_dis's test_loop_quicken).  compat.h's import
** watcher wakes it when such an import starts; setting a callback other than
** the one that went dormant (a framejit.compile'd function) wakes it too.
** step_back does nothing while dormant.
*/
static const void *dormant_callback = NULL; /* identity only, never dereferenced */
static PyObject *wake_names = NULL;        /* strong tuple of str while dormant, else NULL */
#define dormant (wake_names != NULL)

static void step_back(PyInterpreterState *interp);

static void wake_up(void)
{
    if (!dormant)
        return;
    dormant_callback = NULL;
    Py_CLEAR(wake_names);
    fj_unwatch_imports();
    step_back(PyInterpreterState_Get());
}

/* True if module name 'name' (str) is one of 'names' (tuple of str) or a
   submodule of one. */
static int names_module(PyObject *name, PyObject *names)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(name);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++) {
        PyObject *w = PyTuple_GET_ITEM(names, i);
        Py_ssize_t wn = PyUnicode_GET_LENGTH(w);
        if (n >= wn && PyUnicode_Tailmatch(name, w, 0, wn, -1) == 1 &&
            (n == wn || PyUnicode_READ_CHAR(name, wn) == '.'))
            return 1;
    }
    return 0;
}

/* compat.h's import watcher: a module is being loaded.  1 when done. */
static int wake_on_import(PyObject *name)
{
    if (!dormant)
        return 1;
    if (!names_module(name, wake_names))
        return 0;
    wake_up();
    return 1;
}

static int step_aside(PyInterpreterState *interp)
{
    if (stepped_aside || fj_get_eval_frame(interp) != fj_eval_frame_ptr)
        return 0;
    fj_set_eval_frame(interp, previous_eval_frame);
    stepped_aside = 1;
    return 1;
}

static void step_back(PyInterpreterState *interp)
{
    if (!stepped_aside || dormant)
        return;
    stepped_aside = 0;
    if (active_threads > 0 && fj_get_eval_frame(interp) == previous_eval_frame)
        fj_set_eval_frame(interp, fj_eval_frame_ptr);
}

/* rearm.c, with the GIL: the hook back on after a quiet tail. */
static int tail_rearm(void *unused)
{
    (void)unused;
    tail_epoch++;
    step_back(PyInterpreterState_Get());
    return 0;
}

/* A callee of the frame of 'act' returned; 'clean' as above. */
static void tail_count(fj_Activation *act, PyCodeObject *pc, int clean)
{
    if (!clean) {
        act->clean = 0;
        return;
    }
    if (act->off && act->epoch != tail_epoch) { /* the timer put the hook back */
        act->off = 0;
        act->clean = 0;
    }
    if (act->off || ++act->clean < FJ_TAIL_AFTER || active_threads != 1 || tls_probing ||
        (quiet_word(pc) & FJ_QUIET_TAINTED) || !runs_own_code(fj_cache_get(pc)) ||
        !step_aside(PyInterpreterState_Get()))
        return;
    act->off = 1;
    act->epoch = tail_epoch;
    fj_rearm_after(tail_rearm);
}

/*
** A frame of 'co' called by 'caller' (NULL at the bottom) returned; it ran
** compiled code itself if 'compiled', and was offered to the callback if
** 'offered'.  Updates the words of 'co' and of the caller's code.
*/
static void quiet_learn(fj_Frame *caller, PyCodeObject *co, int compiled, int offered)
{
    uintptr_t w = quiet_word(co);
    /* the record must lie above this C frame (stack-switching libraries
       such as greenlet could leave tls_act pointing elsewhere) */
    if (caller != NULL && tls_act != NULL &&
        (uintptr_t)tls_act > (uintptr_t)__builtin_frame_address(0) && tls_act->frame == caller)
        tail_count(tls_act, FJ_FRAME_CODE(caller),
                   !compiled && !offered && !(w & (FJ_QUIET_TAINTED | FJ_QUIET_DIRTY)));
    if (compiled || (w & FJ_QUIET_TAINTED)) {
        quiet_mark_caller(caller, FJ_QUIET_TAINTED);
        return;
    }
    if (offered)
        quiet_mark_caller(caller, FJ_QUIET_DIRTY);
    if (w & FJ_QUIET_DIRTY) {
        w &= ~(FJ_QUIET_DIRTY | FJ_QUIET_CLEANS);
        if ((w & FJ_QUIET_ON) && (w & FJ_QUIET_STRIKES) != FJ_QUIET_STRIKES)
            w += FJ_QUIET_STRIKE;
        quiet_set(co, w & ~FJ_QUIET_ON);
        quiet_mark_caller(caller, FJ_QUIET_DIRTY);
        return;
    }
    if ((w & FJ_QUIET_ON) || !runs_own_code(fj_cache_get(co)))
        return;
    if ((w & FJ_QUIET_CLEANS) != FJ_QUIET_CLEANS)
        w += FJ_QUIET_CLEAN;
    uintptr_t need = (uintptr_t)FJ_QUIET_AFTER << ((w & FJ_QUIET_STRIKES) / FJ_QUIET_STRIKE);
    if ((w & FJ_QUIET_CLEANS) / FJ_QUIET_CLEAN >= (need < 8191 ? need : 8191))
        w |= FJ_QUIET_ON;
    quiet_set(co, w);
}

/* Evaluates 'f' with the hook off the interpreter (only while this thread
   is the only one with a callback), then puts the hook back. */
static PyObject *run_hook_off(PyThreadState *ts, fj_Frame *f, int throw_flag)
{
    if (!step_aside(ts->interp))
        return eval_default(ts, f, throw_flag);
    PyObject *r = eval_default(ts, f, throw_flag);
    step_back(ts->interp);
    return r;
}

/*
** Runs the fresh frame 'f' of quiet code 'co' with the hook off, unless this
** entry is one to observe.  Returns 1 with '*result' set (NULL on error)
** when it ran the frame, 0 when the frame should be handled as usual.
*/
static int quiet_run(PyThreadState *ts, fj_Frame *f, PyCodeObject *co, PyObject **result)
{
    uintptr_t w = quiet_word(co);
    if ((w & (FJ_QUIET_ON | FJ_QUIET_TAINTED)) != FJ_QUIET_ON || active_threads != 1)
        return 0;
    if (tls_probing) /* inside an observed entry: observe the whole subtree */
        return 0;
    w += FJ_QUIET_CALL;
    quiet_set(co, w);
    if (((w / FJ_QUIET_CALL) & (FJ_QUIET_PROBE - 1)) == 0) {
        tls_probing = 1;
        *result = eval_default(ts, f, 0);
        tls_probing = 0;
        return 1;
    }
    *result = run_hook_off(ts, f, 0);
    return 1;
}

/*
** Deep recursion.  Without a hook, 3.11 runs a Python-to-Python call in the
** same C activation; with one, every call nests a C activation (ours and
** the eval loop's), so a recursion CPython survives (a high
** sys.setrecursionlimit) could overflow the C stack.  Once this thread's C
** stack is half used, the hook steps aside for the frame's whole subtree
** (its calls are inlined again), so only CPython's own limits apply.  3.12+
** also step aside at half their C recursion budget (fj_c_recursion_deep).
** The hook is per interpreter: while one thread's deep subtree runs, other
** threads' frames run their own code too.  Another thread's step back puts
** the hook on again; the deep thread's next call then steps aside again.
*/
#if defined(__linux__)
static FJ_TLS uintptr_t tls_stack_half = 0; /* 0: not read yet */

static int stack_is_deep(void)
{
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    if (tls_stack_half == 0) {
        pthread_attr_t attr;
        void *lo = NULL;
        size_t size = 0;
        tls_stack_half = 1; /* unknown: never deep */
        if (pthread_getattr_np(pthread_self(), &attr) == 0) {
            if (pthread_attr_getstack(&attr, &lo, &size) == 0 && lo != NULL)
                tls_stack_half = (uintptr_t)lo + size / 2;
            pthread_attr_destroy(&attr);
        }
    }
    return here < tls_stack_half;
}
#else
static int stack_is_deep(void)
{
    return 0;
}
#endif

/* ------------------------------------------------------------- the hook */

/*
** The hook's decision for frame 'f' of 'co' (the callback is set and not
** busy).  Sets '*compiled' when the frame runs code other than its own and
** '*offered' when it was offered to the callback.
*/
static PyObject *dispatch(PyThreadState *ts, fj_Frame *f, PyCodeObject *co, int throw_flag,
                          PyObject *callback, int *compiled, int *offered)
{
    fj_ExtraState *es = fj_cache_get(co);
    if ((es != NULL && es->strategy == FJ_STRATEGY_SKIP) ||
        (co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)) || throw_flag ||
        !fj_frame_is_fresh(f)) {
        PyObject *r;
        if (es != NULL && !throw_flag && fj_frame_is_fresh(f) && quiet_run(ts, f, co, &r))
            return r;
        return eval_default(ts, f, throw_flag);
    }
    if (es != NULL && es->strategy == FJ_STRATEGY_UNLESS_ARRAYS && es->before_numpy &&
        numpy_ready() && (es = fj_cache_get(co)) != NULL) {
        /* marked untraced before the program imported NumPy: trace it now */
        es->before_numpy = 0;
        es->strategy = FJ_STRATEGY_DEFAULT;
    }
    if (es != NULL && es->strategy == FJ_STRATEGY_UNLESS_ARRAYS) {
        fj_FrameView view;
        view_of_frame(f, &view);
        if (!fj_view_has_arrays(co, &view)) {
            PyObject *r;
            if (quiet_run(ts, f, co, &r))
                return r;
            return eval_default(ts, f, throw_flag);
        }
    }

    tls_busy = 1;
    if (es != NULL && es->n > 0) {
        fj_FrameView view;
        view_of_frame(f, &view);
        fj_CacheEntry *hit = fj_cache_lookup(es, co, &view, callback);
        if (hit != NULL) {
            PyCodeObject *code =
                (PyCodeObject *)Py_NewRef(hit->own_code ? (PyObject *)co : hit->code);
            *compiled = !hit->own_code;
            Py_DECREF(hit);
            tls_busy = 0;
            PyObject *r = run_code(ts, f, code, throw_flag);
            Py_DECREF(code);
            return r;
        }
        if (PyErr_Occurred()) {
            tls_busy = 0;
            return NULL;
        }
        es = fj_cache_get(co); /* a guard may have reset it */
    }
    if (callback == Py_False || (es != NULL && es->strategy == FJ_STRATEGY_RUN_ONLY)) {
        tls_busy = 0;
        return eval_default(ts, f, throw_flag);
    }
    Py_INCREF(callback); /* the callback may replace itself */
    *offered = 1;
    PyCodeObject *code = offer_frame(callback, f, es);
    Py_DECREF(callback);
    tls_busy = 0;
    if (code == NULL)
        return NULL;
    *compiled = code != co;
    PyObject *r = run_code(ts, f, code, throw_flag);
    Py_DECREF(code);
    return r;
}

static PyObject *fj_eval_frame(PyThreadState *ts, fj_Frame *f, int throw_flag)
{
    PyObject *callback = tls_callback;
    /* under a trace or profile function every frame runs its own code, cached
       compiled code included (framejit.compile's callback stays set while a
       tracer runs; run mode puts its callback aside): the tracer sees the
       function's lines, not break code and resume functions */
    if (callback == NULL || tls_busy || fj_thread_traced(ts))
        return eval_default(ts, f, throw_flag);
    if (tls_own_code != NULL && FJ_FRAME_CODE(f) == tls_own_code) {
        tls_own_code = NULL; /* rerun_own_code's call: its own code, its callees hooked */
        return eval_default(ts, f, throw_flag);
    }
    /* with other threads holding callbacks too: they run uncompiled while
       this deep subtree runs (compiles lost, never behaviour) */
    if (stack_is_deep() || fj_c_recursion_deep(ts))
        return run_hook_off(ts, f, throw_flag);
    fj_Frame *caller = fj_thread_current_frame(ts);
    PyCodeObject *co = (PyCodeObject *)Py_NewRef(FJ_FRAME_CODE(f));
    int compiled = 0, offered = 0;
    fj_Activation act = {tls_act, f, 0, 0, 0};
    tls_act = &act;
    PyObject *r = dispatch(ts, f, co, throw_flag, callback, &compiled, &offered);
    tls_act = act.up;
    if (act.off) /* the rest of the frame ran with the hook off */
        step_back(ts->interp);
    quiet_learn(caller, co, compiled, offered);
    Py_DECREF(co);
    return r;
}

/*
** In a forked child only the forking thread exists: it alone may have a
** callback, and a region or tail that stepped aside will not return there
** to step back (a multiprocessing child started from a main loop).
*/
static void after_fork_child(void)
{
    active_threads = tls_callback != NULL ? 1 : 0; /* NULL when off */
    tls_act = NULL;
    tls_probing = 0;
    if (stepped_aside && !dormant) {
        stepped_aside = 0;
        if (active_threads > 0)
            fj_set_eval_frame(PyInterpreterState_Main(), fj_eval_frame_ptr);
    }
}

/* ----------------------------------------------------- module functions */

static int callback_is_on(PyObject *cb)
{
    return cb != NULL && cb != Py_None;
}

PyObject *fj_swap_callback(PyObject *callback)
{
    PyObject *old = tls_callback ? tls_callback : Py_NewRef(Py_None);
    int was_on = callback_is_on(old), now_on = callback_is_on(callback);
    tls_callback = now_on ? Py_NewRef(callback) : NULL;
    PyInterpreterState *interp = PyThreadState_Get()->interp;
    if (now_on && dormant && (const void *)callback != dormant_callback)
        wake_up(); /* a framejit.compile'd function: its frames must be seen */
    if (!was_on && now_on && active_threads++ == 0) {
        fj_EvalFrameFunc cur = fj_get_eval_frame(interp);
        previous_eval_frame = cur == fj_eval_frame ? fj_default_eval_frame : cur;
        if (dormant)
            stepped_aside = 1; /* on when it wakes */
        else
            fj_set_eval_frame(interp, fj_eval_frame);
    }
    else if (was_on && !now_on && --active_threads == 0) {
        /* Put back what was there, unless someone chained over us since. */
        if (fj_get_eval_frame(interp) == fj_eval_frame)
            fj_set_eval_frame(interp, previous_eval_frame);
        stepped_aside = 0; /* the interpreter has previous_eval_frame either way */
    }
    if (now_on && stepped_aside) /* a callback must see its frames: hook back on */
        step_back(interp);
    return old; /* the reference tls_callback held */
}

static PyObject *set_eval_frame_py(PyObject *mod, PyObject *callback)
{
    if (callback != Py_None && callback != Py_False && !PyCallable_Check(callback)) {
        PyErr_Format(PyExc_TypeError,
                     "set_eval_frame expects a callable, None or False, not %.100s",
                     Py_TYPE(callback)->tp_name);
        return NULL;
    }
    return fj_swap_callback(callback);
}

/* _sleep_until_import(callback, names): see "Dormant".  Goes dormant if
   'callback' is the calling thread's, the hook is on the interpreter, and
   no module named in 'names' (or a submodule) is in sys.modules.  True if it
   did. */
static PyObject *sleep_until_import_py(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "_sleep_until_import(callback, names: tuple of str)");
        return NULL;
    }
    PyObject *names = args[1];
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++)
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(names, i)) ||
            PyUnicode_GET_LENGTH(PyTuple_GET_ITEM(names, i)) == 0) {
            PyErr_SetString(PyExc_TypeError, "_sleep_until_import: names must be non-empty str");
            return NULL;
        }
    PyInterpreterState *interp = PyThreadState_Get()->interp;
    if (dormant || stepped_aside || args[0] != tls_callback || tls_callback == NULL ||
        fj_get_eval_frame(interp) != fj_eval_frame_ptr)
        Py_RETURN_FALSE;
    /* a loaded library, or one of its submodules, means arrays may exist */
    PyObject *modules = PyImport_GetModuleDict(), *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(modules, &pos, &key, &value))
        if (PyUnicode_CheckExact(key) && names_module(key, names))
            Py_RETURN_FALSE;
    if (fj_watch_imports(wake_on_import) < 0)
        return NULL;
    wake_names = Py_NewRef(names);
    dormant_callback = tls_callback;
    step_aside(interp);
    Py_RETURN_TRUE;
}

/* _dormant(): True while the hook waits for an array library (run mode). */
static PyObject *dormant_py(PyObject *mod, PyObject *unused)
{
    return PyBool_FromLong(dormant);
}

/* _wake(): ends dormancy (the hook back on if a callback is set). */
static PyObject *wake_py(PyObject *mod, PyObject *unused)
{
    wake_up();
    Py_RETURN_NONE;
}

static PyObject *skip_code_py(PyObject *mod, PyObject *code)
{
    if (!PyCode_Check(code))
        return PyErr_Format(PyExc_TypeError, "skip_code expects a code object, not %.100s",
                            Py_TYPE(code)->tp_name);
    fj_ExtraState *es = fj_cache_get_or_create((PyCodeObject *)code);
    if (es == NULL)
        return NULL;
    es->strategy = FJ_STRATEGY_SKIP;
    Py_RETURN_NONE;
}

static PyObject *reset_code_py(PyObject *mod, PyObject *code)
{
    if (!PyCode_Check(code))
        return PyErr_Format(PyExc_TypeError, "reset_code expects a code object, not %.100s",
                            Py_TYPE(code)->tp_name);
    fj_cache_reset((PyCodeObject *)code);
    Py_RETURN_NONE;
}

#else /* !FJ_SUPPORTED: everything runs uncompiled */

int fj_frame_wrapper_view(PyObject *w, fj_FrameView *view, PyCodeObject **code)
{
    PyErr_SetString(PyExc_RuntimeError, "framejit does not support this Python");
    return -1;
}

static PyType_Slot wrapper_slots[] = {{0, NULL}};
static PyType_Spec wrapper_spec = {"framejit._C.eval_frame._PyInterpreterFrame",
                                   sizeof(PyObject), 0, Py_TPFLAGS_DEFAULT, wrapper_slots};
PyObject *fj_swap_callback(PyObject *callback)
{
    Py_RETURN_NONE;
}
static PyObject *set_eval_frame_py(PyObject *mod, PyObject *callback)
{
    Py_RETURN_NONE;
}
static PyObject *skip_code_py(PyObject *mod, PyObject *code)
{
    Py_RETURN_NONE;
}
static PyObject *reset_code_py(PyObject *mod, PyObject *code)
{
    Py_RETURN_NONE;
}
static PyObject *sleep_until_import_py(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    Py_RETURN_FALSE;
}
static PyObject *dormant_py(PyObject *mod, PyObject *unused)
{
    Py_RETURN_FALSE;
}
static PyObject *wake_py(PyObject *mod, PyObject *unused)
{
    Py_RETURN_NONE;
}
int fj_view_has_arrays(PyCodeObject *co, const fj_FrameView *view)
{
    return 0;
}

#endif

static PyObject *get_cache_entry_list_py(PyObject *mod, PyObject *code)
{
    if (!PyCode_Check(code))
        return PyErr_Format(PyExc_TypeError,
                            "_debug_get_cache_entry_list expects a code object, not %.100s",
                            Py_TYPE(code)->tp_name);
    PyObject *list = PyList_New(0);
#if FJ_SUPPORTED
    fj_ExtraState *es = fj_cache_get((PyCodeObject *)code);
    for (Py_ssize_t i = 0; list && es && i < es->n; i++) {
        if (PyList_Append(list, (PyObject *)es->entries[i]) < 0)
            Py_CLEAR(list);
    }
#endif
    return list;
}

static PyObject *set_guard_error_hook_py(PyObject *mod, PyObject *fn)
{
    return set_hook(&fj_guard_error_hook, "set_guard_error_hook", fn);
}

static PyObject *unsupported_py(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2)
        return PyErr_Format(PyExc_TypeError, "unsupported expects 2 arguments, got %zd", nargs);
    return Py_NewRef(args[1]);
}

static PyMethodDef eval_frame_methods[] = {
    {"set_eval_frame", set_eval_frame_py, METH_O,
     "set_eval_frame(callback) -> previous: set this thread's callback (None: off, False: "
     "run-only, callable: compile)."},
    {"skip_code", skip_code_py, METH_O, "skip_code(code): never offer this code object again."},
    {"reset_code", reset_code_py, METH_O, "reset_code(code): drop the code object's cache."},
    {"_debug_get_cache_entry_list", get_cache_entry_list_py, METH_O,
     "_debug_get_cache_entry_list(code) -> list of _CacheEntry, most recent hit first."},
    {"set_guard_error_hook", set_guard_error_hook_py, METH_O,
     "set_guard_error_hook(fn): fn(guard_manager, code, f_locals, index, is_last) is called "
     "when a guard raises."},
    {"unsupported", (PyCFunction)(void (*)(void))unsupported_py, METH_FASTCALL,
     "unsupported(a, b) -> b (a marker for tests)."},
    {NULL},
};

#if FJ_SUPPORTED
static PyMethodDef graph_raised_def = {
    "_graph_raised", graph_raised_py, METH_O,
    "_graph_raised(exc): compiled code's handler around its graph call: the frame's own code "
    "reruns the call when exc is an Exception (evalframe.c)."};
#endif

/* framejit._C, not eval_frame (whose names are exactly torch's). */
static PyMethodDef dormant_methods[] = {
    {"_sleep_until_import", (PyCFunction)(void (*)(void))sleep_until_import_py, METH_FASTCALL,
     "_sleep_until_import(callback, names) -> bool: run mode: the hook off the interpreter "
     "until a module in names (or a submodule) is imported (see evalframe.c, Dormant)."},
    {"_dormant", dormant_py, METH_NOARGS, "_dormant() -> bool: the hook waits for an import."},
    {"_wake", wake_py, METH_NOARGS, "_wake(): the hook back on now, if it was dormant."},
#if FJ_SUPPORTED
    {"_set_rerun_hook", set_rerun_hook_py, METH_O,
     "_set_rerun_hook(fn): fn(code, exc) is called when a compiled frame's graph raised exc "
     "and the frame's own code reruns the call."},
#endif
    {NULL},
};

static struct PyModuleDef eval_frame_def = {
    PyModuleDef_HEAD_INIT, "framejit._C.eval_frame",
    "The frame-evaluation hook and the per-code cache.", -1, eval_frame_methods,
};

PyObject *fj_skip_code_sentinel(void)
{
    return skip_code_sentinel;
}

PyObject *fj_run_only_sentinel(void)
{
    return run_only_sentinel;
}

PyObject *fj_unless_arrays_sentinel(void)
{
    return unless_arrays_sentinel;
}

static PyObject *sentinel_repr(PyObject *self)
{
    return PyUnicode_FromString(self == skip_code_sentinel  ? "framejit._C.SKIP_CODE"
                                : self == run_only_sentinel ? "framejit._C.RUN_ONLY"
                                                            : "framejit._C.UNLESS_ARRAYS");
}
static PyType_Slot sentinel_slots[] = {{Py_tp_repr, sentinel_repr}, {0, NULL}};
static PyType_Spec sentinel_spec = {"framejit._C.FrameAction", sizeof(PyObject), 0,
                                    Py_TPFLAGS_DEFAULT, sentinel_slots};

int fj_evalframe_init(PyObject *module)
{
    if (PyModule_AddFunctions(module, dormant_methods) < 0)
        return -1;
    PyObject *sub = PyModule_Create(&eval_frame_def);
    if (sub == NULL)
        return -1;
    if (PyModule_AddObject(module, "eval_frame", sub) < 0) {
        Py_DECREF(sub);
        return -1;
    }
    frame_wrapper_type = (PyTypeObject *)PyType_FromSpec(&wrapper_spec);
    if (frame_wrapper_type == NULL ||
        PyModule_AddObjectRef(sub, "_PyInterpreterFrame", (PyObject *)frame_wrapper_type) < 0)
        return -1;
#if FJ_SUPPORTED
    if (PyModule_AddObjectRef(sub, "_CacheEntry", (PyObject *)fj_CacheEntry_Type) < 0)
        return -1;
#endif
#if FJ_SUPPORTED
    graph_raised_fn = PyCFunction_New(&graph_raised_def, NULL);
    if (graph_raised_fn == NULL || PyModule_AddObjectRef(module, "_graph_raised", graph_raised_fn) < 0)
        return -1;
    role_index = fj_request_code_extra_index(NULL);
    quiet_index = fj_request_code_extra_index(NULL);
    if (fj_rearm_init() < 0)
        return -1;
    if (pthread_atfork(NULL, NULL, after_fork_child) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "framejit: pthread_atfork failed");
        return -1;
    }
    if (role_index < 0 || quiet_index < 0) {
        PyErr_SetString(PyExc_RuntimeError, "framejit: no code extra index available");
        return -1;
    }
#endif
    PyTypeObject *st = (PyTypeObject *)PyType_FromSpec(&sentinel_spec);
    if (st == NULL)
        return -1;
    skip_code_sentinel = PyType_GenericAlloc(st, 0);
    run_only_sentinel = PyType_GenericAlloc(st, 0);
    unless_arrays_sentinel = PyType_GenericAlloc(st, 0);
    Py_DECREF(st);
    if (skip_code_sentinel == NULL || run_only_sentinel == NULL || unless_arrays_sentinel == NULL ||
        PyModule_AddObjectRef(module, "SKIP_CODE", skip_code_sentinel) < 0 ||
        PyModule_AddObjectRef(module, "RUN_ONLY", run_only_sentinel) < 0 ||
        PyModule_AddObjectRef(module, "UNLESS_ARRAYS", unless_arrays_sentinel) < 0)
        return -1;
    /* Make `import framejit._C.eval_frame` work too. */
    PyObject *modules = PyImport_GetModuleDict();
    return PyDict_SetItemString(modules, "framejit._C.eval_frame", sub);
}
