/*
** compiler.c: the eval-frame callback that compiles a frame.
**
** Responsible for: framejit._C.Compiler, whose instances are the callbacks
** framejit.compile installs.  For each offered frame it decides skip /
** trace, runs the tracer, hands the graph to the backend, installs the
** compiled function as the global __compiled_fn_N, builds the replacement
** code, logs (bytecode, guards, graph, graph_code, graph_breaks), bumps the
** counters, and returns (code, guards, compile_id) for the cache.  A frame
** that cannot be captured gets a cache entry that runs its own code behind
** the guards the failed trace used, so it is not traced again for inputs
** like these.  Compile ids are [frame/compile]: frame ids count code objects
** in the order first compiled, the compile count counts compiles of one
** code object.
**
** Not responsible for: tracing (trace*.c), code layout (codegen.c), the
** cache (cache.c).  Python-side helpers (logging, dis listings, counters,
** exception types) come in through the 'hooks' object.
*/
#include "compiler.h"

#include "cache.h"
#include "codegen.h"
#include "evalframe.h"
#include "fj_numpy.h"
#include "graph.h"
#include "trace.h"

typedef struct {
    PyObject_HEAD
    PyObject *backend; /* strong: backend(graph, example_inputs) -> callable */
    PyObject *hooks;   /* strong: the framejit._hooks module (see framejit/_hooks.py) */
    int fullgraph;
} Compiler;

static PyTypeObject *compiler_type = NULL;
static long next_frame_id = 0;
static long next_fn_id = 0;
static PyObject *installed = NULL; /* strong list of (globals, name): compiled fns we put in modules */
static PyObject *compiled_codes = NULL; /* strong list of weakrefs to code objects with entries */

/* ------------------------------------------------------------- hooks */

static int hook_enabled(Compiler *c, const char *channel)
{
    PyObject *enabled = PyObject_GetAttrString(c->hooks, "enabled");
    if (enabled == NULL) {
        PyErr_Clear();
        return 0;
    }
    PyObject *key = PyUnicode_FromString(channel);
    int r = key ? PySequence_Contains(enabled, key) : -1;
    Py_XDECREF(key);
    Py_DECREF(enabled);
    if (r < 0) {
        PyErr_Clear();
        return 0;
    }
    return r;
}

/* Calls hooks.<name>(*args); returns a new reference or NULL. */
static PyObject *hook_call(Compiler *c, const char *name, const char *fmt, ...)
{
    PyObject *fn = PyObject_GetAttrString(c->hooks, name);
    if (fn == NULL)
        return NULL;
    va_list va;
    va_start(va, fmt);
    PyObject *args = Py_VaBuildValue(fmt, va);
    va_end(va);
    PyObject *r = NULL;
    if (args != NULL) {
        if (!PyTuple_Check(args)) {
            Py_SETREF(args, PyTuple_Pack(1, args));
        }
        if (args != NULL)
            r = PyObject_Call(fn, args, NULL);
    }
    Py_XDECREF(args);
    Py_DECREF(fn);
    return r;
}

static void hook_log(Compiler *c, const char *channel, PyObject *cid, PyObject *text)
{
    if (text == NULL) {
        PyErr_WriteUnraisable(c->hooks);
        return;
    }
    PyObject *r = hook_call(c, "log", "(sOO)", channel, cid, text);
    if (r == NULL)
        PyErr_WriteUnraisable(c->hooks);
    Py_XDECREF(r);
}

/* ---------------------------------------------------------- helpers */

/* Takes the pending exception: a new reference to its value (NULL if none). */
static PyObject *fetch_exception(void)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (et == NULL)
        return NULL;
    PyErr_NormalizeException(&et, &ev, &tb);
    if (tb != NULL && ev != NULL)
        PyException_SetTraceback(ev, tb);
    Py_XDECREF(et);
    Py_XDECREF(tb);
    return ev;
}

static PyObject *frame_state_int(PyObject *state, const char *key, long dflt)
{
    PyObject *v = PyDict_GetItemString(state, key);
    if (v != NULL)
        return Py_NewRef(v);
    return PyLong_FromLong(dflt);
}

static int remember_code(PyCodeObject *co)
{
    PyObject *ref = PyWeakref_NewRef((PyObject *)co, NULL);
    if (ref == NULL)
        return -1;
    int r = PyList_Append(compiled_codes, ref);
    Py_DECREF(ref);
    return r;
}

/* True if the code's file lies under one of the hooks' skip prefixes. */
static int should_skip(Compiler *c, PyCodeObject *co)
{
    PyObject *r = hook_call(c, "should_skip", "(O)", (PyObject *)co);
    if (r == NULL) {
        PyErr_WriteUnraisable(c->hooks);
        return 0;
    }
    int skip = PyObject_IsTrue(r);
    Py_DECREF(r);
    if (skip < 0)
        PyErr_Clear();
    return skip > 0;
}

static PyObject *make_compile_id(long frame_id, long compile_no, int attempt)
{
    if (attempt > 0)
        return PyUnicode_FromFormat("%ld/%ld_%d", frame_id, compile_no, attempt);
    return PyUnicode_FromFormat("%ld/%ld", frame_id, compile_no);
}

static PyObject *example_inputs(fj_Tracer *tx)
{
    Py_ssize_t n = PyList_GET_SIZE(tx->placeholders);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out && i < n; i++) {
        fj_Var *p = (fj_Var *)PyList_GET_ITEM(tx->placeholders, i);
        PyObject *v = fj_source_eval(p->source, &tx->view);
        if (v == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, v);
    }
    return out;
}

/* ----------------------------------------------------------- compile */

/*
** Compiles the frame behind wrapper 'frame'.  Returns the callback result
** (new reference) or NULL on a user-facing error (fullgraph, backend).
*/
static PyObject *compile_frame(Compiler *c, PyObject *frame, PyObject *state)
{
    fj_Tracer tx;
    PyCodeObject *co = NULL;
    PyObject *result = NULL, *ret = NULL, *outputs = NULL, *cid = NULL, *fn_name = NULL;
    PyObject *compiled = NULL, *new_code = NULL, *inputs = NULL;
    memset(&tx, 0, sizeof(tx));
    if (fj_frame_wrapper_view(frame, &tx.view, &co) < 0)
        return NULL;
    if (should_skip(c, co))
        return Py_NewRef(fj_skip_code_sentinel());

    /* compile id: frame id assigned on first compile, compile count per code */
    PyObject *fid = PyDict_GetItemString(state, "_frame_id");
    long frame_id;
    if (fid == NULL) {
        frame_id = next_frame_id++;
        PyObject *o = PyLong_FromLong(frame_id);
        if (o == NULL || PyDict_SetItemString(state, "_frame_id", o) < 0) {
            Py_XDECREF(o);
            return NULL;
        }
        Py_DECREF(o);
    }
    else
        frame_id = PyLong_AsLong(fid);
    PyObject *ncomp = frame_state_int(state, "_compiles", 0);
    long compile_no = ncomp ? PyLong_AsLong(ncomp) : 0;
    Py_XDECREF(ncomp);
    PyObject *next = PyLong_FromLong(compile_no + 1);
    if (next == NULL || PyDict_SetItemString(state, "_compiles", next) < 0) {
        Py_XDECREF(next);
        return NULL;
    }
    Py_DECREF(next);
    cid = make_compile_id(frame_id, compile_no, 0);
    if (cid == NULL)
        return NULL;

    tx.graph = fj_graph_new();
    tx.guards = fj_guard_root_new();
    tx.code = co;
    tx.inputs = PyDict_New();
    tx.placeholders = PyList_New(0);
    tx.budget = 200000;
    tx.inline_depth_limit = 8;
    tx.compile_id = cid;
    tx.log_trace = hook_enabled(c, "trace_bytecode");
    tx.log_fn = NULL;
    if (tx.log_trace)
        tx.log_fn = PyObject_GetAttrString(c->hooks, "log");
    if (tx.graph == NULL || tx.guards == NULL || tx.inputs == NULL || tx.placeholders == NULL ||
        fj_guard_add_global_state(tx.guards) < 0)
        goto done;
    PyObject *limit = PyObject_GetAttrString(c->hooks, "inline_depth_limit");
    if (limit != NULL) {
        tx.inline_depth_limit = (int)PyLong_AsLong(limit);
        Py_DECREF(limit);
    }
    if (PyErr_Occurred())
        goto done;

    if (hook_enabled(c, "bytecode")) {
        PyObject *text = hook_call(c, "format_code", "(sO)", "ORIGINAL BYTECODE", (PyObject *)co);
        hook_log(c, "bytecode", cid, text);
        Py_XDECREF(text);
    }

    ret = fj_trace_run(&tx, co);
    if (ret != NULL && (outputs = fj_codegen_outputs(ret)) == NULL && !PyErr_Occurred())
        goto done;
    if (ret == NULL || outputs == NULL) {
        if (!PyErr_ExceptionMatches(fj_Unsupported)) {
            /* an internal error: never break the user's program for it */
            PyObject *exc = fetch_exception();
            PyObject *r = exc ? hook_call(c, "internal_error", "(OOO)", (PyObject *)co, cid, exc)
                              : NULL;
            Py_XDECREF(exc);
            Py_XDECREF(r);
            if (r == NULL)
                goto done; /* the hook re-raised (tests ask it to) */
            result = Py_NewRef(fj_skip_code_sentinel());
            goto done;
        }
        PyObject *et, *ev, *etb;
        PyErr_Fetch(&et, &ev, &etb);
        PyErr_NormalizeException(&et, &ev, &etb);
        PyObject *reason = ev ? PyObject_Str(ev) : PyUnicode_FromString("unsupported");
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(etb);
        if (reason == NULL)
            goto done;
        int lineno = tx.break_lineno;
        PyObject *r = hook_call(c, "graph_break", "(OOOiO)", (PyObject *)co, cid, reason, lineno,
                                c->fullgraph ? Py_True : Py_False);
        Py_DECREF(reason);
        if (r == NULL)
            goto done; /* fullgraph: the hook raised the user-facing error */
        Py_DECREF(r);
        /* run the frame's own code for inputs like these, without tracing again */
        if (remember_code(co) < 0)
            goto done;
        result = Py_BuildValue("(OOO)", (PyObject *)co, tx.guards, cid);
        goto done;
    }

    Py_ssize_t ncalls = fj_graph_num_calls(tx.graph);
    if (ncalls > 0) {
        PyObject *out_tuple = PyList_AsTuple(outputs);
        if (out_tuple == NULL || fj_graph_output(tx.graph, out_tuple) < 0) {
            Py_XDECREF(out_tuple);
            goto done;
        }
        Py_DECREF(out_tuple);
        if ((inputs = example_inputs(&tx)) == NULL)
            goto done;
        compiled = PyObject_CallFunctionObjArgs(c->backend, tx.graph, inputs, NULL);
        if (compiled == NULL) {
            PyObject *exc = fetch_exception();
            PyObject *r = exc ? hook_call(c, "backend_failed", "(OOO)", (PyObject *)co,
                                          c->backend, exc)
                              : NULL;
            Py_XDECREF(exc);
            Py_XDECREF(r);
            goto done;
        }
        if (!PyCallable_Check(compiled)) {
            PyErr_Format(PyExc_TypeError,
                         "framejit backend %R returned %.100s for %U (%U:%d); expected a callable",
                         c->backend, Py_TYPE(compiled)->tp_name, co->co_name, co->co_filename,
                         co->co_firstlineno);
            goto done;
        }
        fn_name = PyUnicode_FromFormat("__compiled_fn_%ld", next_fn_id++);
        PyObject *pair = fn_name ? PyTuple_Pack(2, tx.view.globals, fn_name) : NULL;
        int bad = pair == NULL || PyDict_SetItem(tx.view.globals, fn_name, compiled) < 0 ||
                  PyList_Append(installed, pair) < 0;
        Py_XDECREF(pair);
        if (bad)
            goto done;
        PyObject *r = hook_call(c, "count_graph", "(n)", ncalls);
        Py_XDECREF(r);
        if (r == NULL)
            goto done;
        if (hook_enabled(c, "graph")) {
            PyObject *t = fj_graph_tabular(tx.graph);
            hook_log(c, "graph", cid, t);
            Py_XDECREF(t);
        }
        if (hook_enabled(c, "graph_code")) {
            PyObject *t = fj_graph_code(tx.graph);
            hook_log(c, "graph_code", cid, t);
            Py_XDECREF(t);
        }
    }
    new_code = fj_codegen_graph_call(co, fn_name, tx.placeholders, outputs, ret);
    if (new_code == NULL) {
        if (!PyErr_ExceptionMatches(fj_Unsupported))
            goto done;
        PyErr_Clear();
        new_code = Py_NewRef(co);
    }
    if (hook_enabled(c, "bytecode")) {
        PyObject *text = hook_call(c, "format_code", "(sO)", "MODIFIED BYTECODE", new_code);
        hook_log(c, "bytecode", cid, text);
        Py_XDECREF(text);
    }
    if (hook_enabled(c, "guards")) {
        PyObject *t = fj_guards_format(tx.guards);
        hook_log(c, "guards", cid, t);
        Py_XDECREF(t);
    }
    if (remember_code(co) < 0)
        goto done;
    result = Py_BuildValue("(OOO)", new_code, tx.guards, cid);
done:
    Py_XDECREF(ret);
    Py_XDECREF(outputs);
    Py_XDECREF(cid);
    Py_XDECREF(fn_name);
    Py_XDECREF(compiled);
    Py_XDECREF(new_code);
    Py_XDECREF(inputs);
    Py_XDECREF(tx.graph);
    Py_XDECREF(tx.guards);
    Py_XDECREF(tx.inputs);
    Py_XDECREF(tx.placeholders);
    Py_XDECREF(tx.log_fn);
    Py_XDECREF(tx.break_reason);
    Py_XDECREF(tx.break_filename);
    return result;
}

/* --------------------------------------------------------------- type */

static PyObject *compiler_call(Compiler *self, PyObject *args, PyObject *kwargs)
{
    PyObject *frame, *entry, *state;
    if (!PyArg_ParseTuple(args, "OOO:Compiler", &frame, &entry, &state))
        return NULL;
    if (!PyDict_Check(state))
        return PyErr_Format(PyExc_TypeError, "frame_state must be a dict");
    return compile_frame(self, frame, state);
}

static int compiler_init(Compiler *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"backend", "hooks", "fullgraph", NULL};
    PyObject *backend, *hooks;
    int fullgraph = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|p:Compiler", kwlist, &backend, &hooks,
                                     &fullgraph))
        return -1;
    if (!PyCallable_Check(backend)) {
        PyErr_Format(PyExc_TypeError, "framejit backend must be callable, not %.100s",
                     Py_TYPE(backend)->tp_name);
        return -1;
    }
    Py_XSETREF(self->backend, Py_NewRef(backend));
    Py_XSETREF(self->hooks, Py_NewRef(hooks));
    self->fullgraph = fullgraph;
    return 0;
}

static void compiler_dealloc(Compiler *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->backend);
    Py_CLEAR(self->hooks);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static int compiler_traverse(Compiler *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->backend);
    Py_VISIT(self->hooks);
    return 0;
}

static int compiler_clear(Compiler *self)
{
    Py_CLEAR(self->backend);
    Py_CLEAR(self->hooks);
    return 0;
}

static PyObject *compiler_get_backend(Compiler *self, void *c)
{
    return Py_NewRef(self->backend ? self->backend : Py_None);
}

static PyGetSetDef compiler_getset[] = {
    {"backend", (getter)compiler_get_backend, NULL, "the backend callable", NULL},
    {NULL},
};

static PyType_Slot compiler_slots[] = {
    {Py_tp_call, compiler_call},
    {Py_tp_init, compiler_init},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_dealloc, compiler_dealloc},
    {Py_tp_traverse, compiler_traverse},
    {Py_tp_clear, compiler_clear},
    {Py_tp_getset, compiler_getset},
    {Py_tp_doc, "Compiler(backend, hooks, fullgraph=False): the eval-frame callback that "
                "traces a frame into a graph and returns its guarded replacement code."},
    {0, NULL},
};
static PyType_Spec compiler_spec = {"framejit._C.Compiler", sizeof(Compiler), 0,
                                    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, compiler_slots};

/* _reset_state(): drops every cache entry framejit made and its globals. */
static PyObject *reset_state(PyObject *mod, PyObject *unused)
{
    Py_ssize_t n = PyList_GET_SIZE(compiled_codes);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *co = PyWeakref_GetObject(PyList_GET_ITEM(compiled_codes, i));
        if (co != Py_None && PyCode_Check(co))
            fj_cache_reset((PyCodeObject *)co);
    }
    if (PyList_SetSlice(compiled_codes, 0, n, NULL) < 0)
        return NULL;
    n = PyList_GET_SIZE(installed);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyList_GET_ITEM(installed, i);
        PyObject *g = PyTuple_GET_ITEM(pair, 0), *name = PyTuple_GET_ITEM(pair, 1);
        if (PyDict_DelItem(g, name) < 0)
            PyErr_Clear();
    }
    if (PyList_SetSlice(installed, 0, n, NULL) < 0)
        return NULL;
    next_frame_id = 0;
    next_fn_id = 0;
    Py_RETURN_NONE;
}

static PyMethodDef compiler_methods[] = {
    {"_reset_state", reset_state, METH_NOARGS,
     "Forget every cache entry and compiled function framejit installed."},
    {NULL},
};

int fj_compiler_init(PyObject *module)
{
    compiler_type = (PyTypeObject *)PyType_FromSpec(&compiler_spec);
    if (compiler_type == NULL || PyModule_AddObjectRef(module, "Compiler", (PyObject *)compiler_type) < 0)
        return -1;
    installed = PyList_New(0);
    compiled_codes = PyList_New(0);
    if (installed == NULL || compiled_codes == NULL)
        return -1;
    return PyModule_AddFunctions(module, compiler_methods);
}
