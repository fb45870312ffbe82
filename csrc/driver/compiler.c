/*
** compiler.c: the eval-frame callback that compiles a frame.
**
** Responsible for: framejit._C.Compiler, whose instances are the callbacks
** framejit.compile installs.  For each offered frame it decides skip /
** trace, runs the tracer, hands the graph to the backend, installs the
** compiled function as a constant of the new code (named __compiled_fn_N in
** the logs), builds the replacement
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
#include "arraylib.h"
#include "torchlib.h"

#include "fj_numpy.h"

#include "cache.h"
#include "codegen.h"
#include "config.h"
#include "evalframe.h"
#include "fj_numpy.h"
#include "graph.h"
#include "resume.h"
#include "trace.h"

#include <time.h>

typedef struct {
    PyObject_HEAD
    PyObject *backend; /* strong: backend(graph, example_inputs) -> callable */
    PyObject *hooks;   /* strong: the framejit._hooks module (see framejit/_hooks.py) */
    PyObject *marked;  /* strong dict: id(array) -> dims asked for by mark_dynamic */
    int fullgraph;
    int dynamic;       /* -1: automatic, 0: never, 1: every int and dim */
    fj_Config cfg;     /* framejit.config as read by this compiler (config.h) */
} Compiler;

static PyTypeObject *compiler_type = NULL;
static long next_frame_id = 0;
static long next_fn_id = 0;
/* strong dict: id(obj) -> (obj, name) of the compiled functions and resume
** functions the new code loads as constants, for the bytecode log only
** (filled while that channel is on). */
static PyObject *display_names = NULL;
static PyObject *installed = NULL; /* strong list of (globals, name): globals framejit added */
static PyObject *compiled_codes = NULL; /* strong list of weakrefs to code objects with entries */

/* ------------------------------------------------------------- hooks */

/* Whether log 'channel' is on (c->cfg, refreshed at the start of each compile). */
static int hook_enabled(Compiler *c, const char *channel)
{
    return (c->cfg.channels & fj_config_channel(channel)) != 0;
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

static void hook_log(Compiler *c, const char *channel, PyObject *cid, PyObject *text);

/* Logs make(arg) on 'channel' when it is on (one place for the text channels). */
static void log_made(Compiler *c, const char *channel, PyObject *cid,
                     PyObject *(*make)(PyObject *), PyObject *arg)
{
    if (!hook_enabled(c, channel))
        return;
    PyObject *t = make(arg);
    hook_log(c, channel, cid, t);
    Py_XDECREF(t);
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

/* A monotonic clock in seconds (the structured trace's compile phases). */
static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

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


static int remember_code(PyCodeObject *co)
{
    PyObject *ref = PyWeakref_NewRef((PyObject *)co, NULL);
    if (ref == NULL)
        return -1;
    PyObject_GC_UnTrack(ref); /* bookkeeping: not in gc.get_objects() (cache.c) */
    int r = PyList_Append(compiled_codes, ref);
    Py_DECREF(ref);
    return r;
}

/*
** 1 if the code's file lies under one of the hooks' skip prefixes, 0 if not,
** -1 (no exception set) if the hook failed: the frame then runs as it is
** this time (the program may have broken what the hooks use).
*/
static int should_skip(Compiler *c, PyCodeObject *co, PyObject *globals)
{
    /* code made by exec (<string>: a dataclass's __init__) is judged by the
       module whose globals it runs in: its __name__ if an exact str (a
       subclass's __hash__ would be the program's code) */
    PyObject *module = NULL;
    if (PyUnicode_GET_LENGTH(co->co_filename) > 0 && PyUnicode_READ_CHAR(co->co_filename, 0) == '<' &&
        globals != NULL && PyDict_Check(globals))
        module = PyDict_GetItemString(globals, "__name__"); /* borrowed */
    PyObject *r = hook_call(c, "should_skip", "(OO)", (PyObject *)co,
                            module != NULL && PyUnicode_CheckExact(module) ? module : Py_None);
    if (r == NULL) {
        PyErr_WriteUnraisable(c->hooks);
        return -1;
    }
    int skip = PyObject_IsTrue(r);
    Py_DECREF(r);
    if (skip < 0) {
        PyErr_Clear();
        return -1;
    }
    return skip;
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
        PyObject *v = NULL;
        int got = fj_source_fetch(p->source, &tx->view, &v);
        if (got == 0)
            PyErr_Format(PyExc_RuntimeError, "framejit: graph input %U has no value", p->source->text);
        if (got <= 0)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, v);
    }
    return out;
}

/* ----------------------------------------------------------- compile */

static int tracer_init(Compiler *c, fj_Tracer *tx, const fj_FrameView *view, PyCodeObject *co,
                       PyObject *cid, int stop_at, fj_ExtraState *es, PyObject *loop_policy)
{
    memset(tx, 0, sizeof(*tx));
    tx->view = *view;
    tx->graph = fj_graph_new();
    tx->guards = fj_guard_root_new();
    tx->code = co;
    tx->inputs = PyDict_New();
    tx->placeholders = PyList_New(0);
    tx->budget = 200000;
    tx->inline_depth_limit = c->cfg.inline_depth_limit;
    tx->compile_id = cid;
    tx->stop_at = stop_at;
    tx->break_index = -1;
    tx->loop_policy = loop_policy;
    tx->capture_loops = c->cfg.capture_loops;
    tx->loop_unroll_limit = c->cfg.loop_unroll_limit;
    (void)fj_torch_ready(); /* tensors are graph inputs from the first trace after torch's import */
    if (c->dynamic != 0) {
        if ((tx->dyn_inputs = PyList_New(0)) == NULL)
            return -1;
        tx->all_dynamic = c->dynamic == 1;
        tx->marked = c->marked;
        tx->dyn_ints = es->dyn.ints;
        tx->dyn_dims = es->dyn.dims;
    }
    if ((tx->effects = PyList_New(0)) == NULL || (tx->global_overlay = PyDict_New()) == NULL ||
        (tx->mutated = PyList_New(0)) == NULL || (tx->made = PyList_New(0)) == NULL)
        return -1;
    tx->log_trace = hook_enabled(c, "trace_bytecode");
    tx->log_dynamic = hook_enabled(c, "dynamic");
    if ((tx->log_trace || tx->log_dynamic) && (tx->log_fn = PyObject_GetAttrString(c->hooks, "log")) == NULL)
        return -1;
    if (tx->graph == NULL || tx->guards == NULL || tx->inputs == NULL ||
        tx->placeholders == NULL || fj_numpy_lib.add_global_state(tx->guards) < 0)
        return -1;
    return 0;
}

static void tracer_clear(fj_Tracer *tx)
{
    fj_trace_free(tx);
    Py_CLEAR(tx->effects); /* holds Vars: gone before they are cleared */
    Py_CLEAR(tx->global_overlay);
    Py_CLEAR(tx->mutated);
    fj_trace_clear_made(tx);
    Py_CLEAR(tx->graph);
    Py_CLEAR(tx->guards);
    Py_CLEAR(tx->inputs);
    Py_CLEAR(tx->placeholders);
    Py_CLEAR(tx->log_fn);
    Py_CLEAR(tx->break_reason);
    Py_CLEAR(tx->break_filename);
    Py_CLEAR(tx->dyn_inputs);
    Py_CLEAR(tx->effects);
    Py_CLEAR(tx->global_overlay);
    Py_CLEAR(tx->literal_ids);
    Py_CLEAR(tx->shared_values);
    Py_CLEAR(tx->mutated);
}

/*
** Names 'obj' (a constant the new code loads) 'name' in the bytecode log.
** Steals 'name'; 0 or -1.
*/
static int display_name(PyObject *obj, PyObject *name)
{
    PyObject *key = name ? PyLong_FromVoidPtr(obj) : NULL;
    PyObject *pair = key ? PyTuple_Pack(2, obj, name) : NULL;
    int r = pair ? PyDict_SetItem(display_names, key, pair) : -1;
    Py_XDECREF(key);
    Py_XDECREF(pair);
    Py_XDECREF(name);
    return r;
}

/*
** Installs 'obj' as global 'name' (new ref, or NULL) of 'globals', remembered
** so reset() takes it away again.  Steals 'name'.  Returns the name.
*/
static PyObject *install_global(PyObject *globals, PyObject *obj, PyObject *name)
{
    if (name == NULL)
        return NULL;
    PyObject *pair = PyTuple_Pack(2, globals, name);
    if (pair == NULL || PyDict_SetItem(globals, name, obj) < 0 ||
        PyList_Append(installed, pair) < 0) {
        Py_XDECREF(pair);
        Py_DECREF(name);
        return NULL;
    }
    Py_DECREF(pair);
    return name;
}

/* framejit.config.transparent: compiled and resume functions are constants of
** the new code and resume code keeps the original's name (run mode). */
static int transparent_mode(Compiler *c)
{
    return c->cfg.transparent;
}

/*
** Hands the graph (outputs 'outputs') to the backend.  Sets *fn_name to
** what the new code loads to call it (new ref): the name of the global
** __compiled_fn_N it installs, or in transparent mode (run) the compiled
** callable itself, a constant of the new code, so the program's globals do
** not change (doctest iterates over a module's __dict__ while its functions
** compile); NULL when the graph has no calls.  Returns 0, -1 on error.
*/
static int install_graph(Compiler *c, fj_Tracer *tx, PyCodeObject *co, PyObject *outputs,
                         PyObject *cid, PyObject **fn_name)
{
    PyObject *compiled = NULL, *inputs = NULL, *out_tuple = NULL;
    int rc = -1;
    *fn_name = NULL;
    Py_ssize_t ncalls = fj_graph_num_calls(tx->graph);
    if (ncalls == 0)
        return 0;
    if ((out_tuple = PyList_AsTuple(outputs)) == NULL || fj_graph_output(tx->graph, out_tuple) < 0)
        goto done;
    if (fj_trace_dynamic_meta(tx) < 0 || (inputs = example_inputs(tx)) == NULL)
        goto done;
    double t0 = c->cfg.trace ? now_seconds() : 0.0;
    compiled = PyObject_CallFunctionObjArgs(c->backend, tx->graph, inputs, NULL);
    if (c->cfg.trace)
        tx->backend_seconds += now_seconds() - t0;
    if (compiled == NULL) {
        PyObject *exc = fetch_exception();
        PyObject *r = exc ? hook_call(c, "backend_failed", "(OOO)", (PyObject *)co, c->backend, exc)
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
    long fn_id = next_fn_id++;
    if (!transparent_mode(c)) {
        /* the global __compiled_fn_N of the frame's module (seeds/000) */
        *fn_name = install_global(tx->view.globals, compiled,
                                  PyUnicode_FromFormat("__compiled_fn_%ld", fn_id));
        if (*fn_name == NULL)
            goto done;
    }
    else {
        if (hook_enabled(c, "bytecode") &&
            display_name(compiled, PyUnicode_FromFormat("__compiled_fn_%ld", fn_id)) < 0)
            goto done;
        *fn_name = Py_NewRef(compiled);
    }
    PyObject *r = hook_call(c, "count_graph", "(n)", ncalls);
    if (r == NULL)
        goto done;
    Py_DECREF(r);
    log_made(c, "graph", cid, fj_graph_tabular, tx->graph);
    log_made(c, "graph_code", cid, fj_graph_code, tx->graph);
    rc = 0;
done:
    if (rc < 0)
        Py_CLEAR(*fn_name);
    Py_XDECREF(compiled);
    Py_XDECREF(inputs);
    Py_XDECREF(out_tuple);
    return rc;
}

/* A recompile: automatic dynamic compares the inputs with what earlier
   compiles saw (dynamic.c) and logs each change on the 'dynamic' channel. */
static int update_dynamic(Compiler *c, fj_ExtraState *es, const fj_FrameView *view,
                          PyObject *cid)
{
    if (c->dynamic == 0)
        return 0;
    PyObject *messages = PyList_New(0);
    if (messages == NULL || fj_dynamic_update(&es->dyn, view, messages) < 0) {
        Py_XDECREF(messages);
        return -1;
    }
    if (hook_enabled(c, "dynamic"))
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(messages); i++)
            hook_log(c, "dynamic", cid, PyList_GET_ITEM(messages, i));
    Py_DECREF(messages);
    return 0;
}

/* Logs the new code and the guards, and builds the callback's result. */
static PyObject *finish(Compiler *c, PyCodeObject *co, PyObject *new_code, fj_Tracer *tx,
                        PyObject *cid)
{
#ifndef NDEBUG
    if (fj_guards_verify(tx->guards) < 0) /* the tree is complete now (debug builds) */
        return NULL;
#endif
    fj_ExtraState *es = fj_cache_get(co); /* made by compile_frame */
    if (c->dynamic != 0 && es != NULL && fj_dynamic_record(&es->dyn, tx->inputs, &tx->view) < 0)
        return NULL;
    if (hook_enabled(c, "bytecode")) {
        PyObject *text = hook_call(c, "format_code", "(sOO)", "MODIFIED BYTECODE", new_code,
                                   display_names);
        hook_log(c, "bytecode", cid, text);
        Py_XDECREF(text);
    }
    log_made(c, "guards", cid, fj_guards_format, tx->guards);
    if (remember_code(co) < 0)
        return NULL;
    PyObject *h = hook_call(c, "on_compile", "(OOOOO)", new_code, cid, tx->guards, tx->graph,
                              (PyObject *)co);
    if (h == NULL)
        return NULL;
    Py_DECREF(h);
    return Py_BuildValue("(OOO)", new_code, tx->guards, cid);
}

/* 1 if an array flowed into the trace: an input of the frame (arguments,
   free variables) or a graph input the trace read. */
static int trace_saw_arrays(fj_Tracer *tx, PyCodeObject *co)
{
    return PyList_GET_SIZE(tx->placeholders) > 0 || fj_view_has_arrays(co, &tx->view);
}

/* SKIP_CODE: the code is never offered again, until framejit.reset(). */
static PyObject *skip_code(PyCodeObject *co)
{
    if (remember_code(co) < 0)
        return NULL;
    return Py_NewRef(fj_skip_code_sentinel());
}

/* The frame runs whole in CPython for inputs like these (guards of the
   trace); when no array flowed into the trace ('arrays' 0), for every input
   without arrays (UNLESS_ARRAYS: no guards). */
static PyObject *run_as_is(PyCodeObject *co, fj_Tracer *tx, PyObject *cid, int arrays)
{
    if (remember_code(co) < 0) /* framejit.reset() forgets the mark too */
        return NULL;
    if (!arrays)
        return Py_NewRef(fj_unless_arrays_sentinel());
    return Py_BuildValue("(OOO)", (PyObject *)co, tx->guards, cid);
}

static PyObject *run_whole(Compiler *c, PyCodeObject *co, fj_Tracer *tx, PyObject *cid)
{
    return run_as_is(co, tx, cid, trace_saw_arrays(tx, co));
}

/*
** The trace captured no graph operation before it returned ('at_break' 0)
** or before its graph break: rewriting the frame would gain nothing, and
** would change what the program can observe (identities of values the trace
** rebuilt, tracebacks, introspection), so the frame runs its own code
** (docs/cpython-tests.md, "A frame that captures nothing runs its own
** code").  Without array inputs the code is marked UNLESS_ARRAYS: later
** calls cost the hook one scan of the arguments and no guards.  With array
** inputs, a return runs the original code under the trace's guards (other
** inputs are traced again) and a code that only ever ran as it is gets
** SKIP_CODE the second time; a break with array inputs is split as usual
** (returns NULL without an exception), so the continuation can capture.
*/
static PyObject *no_graph(Compiler *c, PyCodeObject *co, fj_Tracer *tx, PyObject *cid,
                          int at_break, PyObject *reason, PyObject *detail)
{
    int arrays = trace_saw_arrays(tx, co);
    if (arrays && at_break)
        return NULL;
    /* 'detail': the reason's (key, trace stack), as the graph_break hook gets it */
    PyObject *h = hook_call(c, "no_graph", "(OOOOO)", (PyObject *)co, cid,
                            arrays ? Py_True : Py_False, reason ? reason : Py_None,
                            detail ? detail : Py_None);
    if (h == NULL)
        return NULL;
    Py_DECREF(h);
    fj_ExtraState *es = arrays ? fj_cache_get(co) : NULL;
    int captured = 0;
    for (Py_ssize_t i = 0; es != NULL && i < es->n; i++)
        captured |= !es->entries[i]->own_code;
    if (es != NULL && es->n > 0 && !captured)
        return skip_code(co);
    return run_as_is(co, tx, cid, arrays);
}

/* What the break code needs beyond the graph (finish_break's plan). */
typedef struct {
    const fj_InstrList *il;
    const fj_BreakPlan *plan;
    const unsigned char *restore;
    PyObject *const *resume_names; /* borrowed: install_resume's results */
    PyObject *const *resume_args;  /* borrowed: the names each resume function takes */
} BreakCode;

/*
** Hands the graph of 'outputs' (a new reference it consumes; NULL: the
** error is set) to the backend, then emits the new code (the graph call
** and the return value; with 'brk', the break code) and finishes.  New ref
** or NULL.
*/
static PyObject *emit_and_finish(Compiler *c, PyCodeObject *co, fj_Tracer *tx, PyObject *cid,
                                 PyObject *outputs, const BreakCode *brk)
{
    PyObject *fn_name = NULL, *new_code = NULL, *result = NULL;
    if (outputs == NULL)
        goto done;
    if (tx->protected_seen && fj_graph_num_calls(tx->graph) > 0 &&
        !fj_codegen_can_rerun(co, tx->graph)) {
        fj_unsupported("a graph that covers a try or with block %s (an error inside it could "
                       "not reach the handler)",
                       fj_graph_mutates(tx->graph) ? "writes into an input array or a tensor" : "outside a function");
        goto done;
    }
    if (install_graph(c, tx, co, outputs, cid, &fn_name) < 0)
        goto done;
    if (brk == NULL)
        new_code = fj_codegen_graph_call(co, fn_name, tx, outputs, tx->top->retval);
    else
        new_code = fj_codegen_break(co, brk->il, tx, fn_name, outputs, brk->plan, brk->restore,
                                    brk->resume_names, brk->resume_args);
    if (new_code == NULL ||
        (brk != NULL && fj_evalframe_mark_code(new_code, FJ_CODE_ROLE_BREAK) < 0))
        goto done;
    result = finish(c, co, new_code, tx, cid);
done:
    Py_XDECREF(outputs);
    Py_XDECREF(fn_name);
    Py_XDECREF(new_code);
    return result;
}

/* The traced frame returned: graph call, rebuilt return value. New ref. */
static PyObject *finish_return(Compiler *c, PyCodeObject *co, fj_Tracer *tx, PyObject *cid)
{
    if (fj_graph_num_calls(tx->graph) == 0)
        return no_graph(c, co, tx, cid, 0, NULL, NULL);
    /* every guard is in the tree before any code is generated */
    if (fj_trace_alias_guards(tx) < 0)
        return NULL;
    return emit_and_finish(c, co, tx, cid, fj_codegen_outputs(tx->top->retval, tx), NULL);
}

/*
** The resume function for continuing 'co' (decoded 'il') at instruction
** 'index' with the stack layout 'nulls' (nstack slots) and live locals
** 'argnames', a function of 'globals' (named __resume_at_<offset>_<n> in the
** bytecode log when 'named').  Resume code is cached and always made from the
** original code, so breaks in resume functions do not multiply.  Returns the
** function (new ref; the break code loads it as a constant), or for code with
** free variables a tuple (code, names of its free variables) that the break
** code turns into a closure; NULL on error.
*/
static PyObject *install_resume(PyCodeObject *co, const fj_InstrList *il, int index, int nstack,
                                const unsigned char *nulls, PyObject *argnames, PyObject *globals,
                                int named, int transparent, int raise_at)
{
    fj_ResumeRef ref;
    PyObject *name = NULL, *fn = NULL;
    if (fj_resume_get(co, il, index, nstack, nulls, argnames, transparent, raise_at, &ref) < 0)
        return NULL;
    /* the hook tells a resume call from its break code by these roles */
    if (fj_evalframe_mark_code(ref.code, raise_at >= 0 ? FJ_CODE_ROLE_HANDLER
                                                      : FJ_CODE_ROLE_RESUME) < 0) {
        Py_DECREF(ref.code);
        return NULL;
    }
    PyCodeObject *rcode = (PyCodeObject *)ref.code;
    if (FJ_CODE_NFREEVARS(rcode) > 0) {
        /* a closure: the break code makes the function from the frame's cells */
        PyObject *fv = PyCode_GetFreevars(rcode);
        name = fv ? PyTuple_Pack(2, (PyObject *)rcode, fv) : NULL;
        Py_XDECREF(fv);
        goto done;
    }
    fn = PyFunction_New(ref.code, globals);
    if (fn == NULL)
        goto done;
    if (!transparent) {
        /* the global __resume_at_<offset>_<n> (seeds/000) */
        name = install_global(globals, fn,
                              PyUnicode_FromFormat("__resume_at_%d_%ld", ref.offset, ref.id));
        goto done;
    }
    if (named && display_name(fn, PyUnicode_FromFormat("__resume_at_%d_%ld", ref.offset,
                                                        ref.id)) < 0)
        goto done;
    name = Py_NewRef(fn);
done:
    Py_DECREF(ref.code);
    Py_XDECREF(fn);
    return name;
}

/* Names of the locals live at 'index' that hold a value at the break, or
   that what runs in CPython binds ('defs', or NULL). New tuple. */
static PyObject *bound_live_names(PyCodeObject *co, fj_TFrame *top, const unsigned char *live,
                                  const unsigned char *defs)
{
    PyObject *names = PyList_New(0);
    for (int i = 0; names && i < top->nlocals; i++) {
        if (!live[i] || (fj_code_local_kind(co, i) & (FJ_FAST_CELL | FJ_FAST_FREE)))
            continue;
        if (top->locals[i] == NULL && !fj_trace_arg_untouched(top, i) && !(defs && defs[i]))
            continue;
        if (PyList_Append(names, fj_code_local_name(co, i)) < 0)
            Py_CLEAR(names);
    }
    if (names == NULL)
        return NULL;
    PyObject *t = PyList_AsTuple(names);
    Py_DECREF(names);
    return t;
}

/*
** For a loop run in CPython (plan->maybe_defs): per fast local, 1 when the
** loop surely binds it: its target (the stores right after FOR_ITER) when
** the iterable on the trace's stack is a constant or a tuple/list of known,
** nonzero length.  A new array of FJ_CODE_NLOCALSPLUS(co) bytes, NULL on error.
*/
static unsigned char *loop_targets(PyCodeObject *co, const fj_InstrList *il, const fj_BreakPlan *plan,
                                   fj_TFrame *top)
{
    int n = FJ_CODE_NLOCALSPLUS(co);
    unsigned char *sure = PyMem_Calloc((size_t)(n ? n : 1), 1);
    if (sure == NULL)
        return (unsigned char *)PyErr_NoMemory();
    fj_Var *it = top->sp >= 1 ? (fj_Var *)top->stack[top->sp - 1] : NULL;
    Py_ssize_t len = -1;
    if (it != NULL && il->v[plan->first].p.op == FJ_PI_GET_ITER) {
        if (it->kind == FJ_VAR_CONST && (PyRange_Check(it->obj) || PyTuple_CheckExact(it->obj) ||
                                         PyList_CheckExact(it->obj) || PyUnicode_CheckExact(it->obj)))
            len = PyObject_Length(it->obj);
        else if ((it->kind == FJ_VAR_TUPLE || it->kind == FJ_VAR_LIST) && it->items != NULL)
            len = PyList_GET_SIZE(it->items);
        if (len < 0)
            PyErr_Clear();
    }
    if (len <= 0)
        return sure;
    for (int k = plan->first + 2; k <= plan->last; k++) {
        const fj_Instr *in = &il->v[k];
        if (in->p.op == FJ_PI_STORE_FAST && in->p.a < n)
            sure[in->p.a] = 1;
        else if (in->p.op == FJ_PI_STORE_FAST_STORE_FAST) {
            if (in->p.a < n)
                sure[in->p.a] = 1;
            if (in->p.b < n)
                sure[in->p.b] = 1;
        }
        else if (in->p.op != FJ_PI_UNPACK_SEQUENCE && in->p.op != FJ_PI_NOP)
            break;
    }
    return sure;
}

/* The trace stopped at the planned break: prefix graph, CPython part, resume calls. */
static PyObject *finish_break(Compiler *c, PyCodeObject *co, fj_Tracer *tx, PyObject *cid,
                              const fj_InstrList *il, const fj_BreakPlan *plan)
{
    fj_TFrame *top = tx->top;
    int nl = top->nlocals;
    PyObject *result = NULL;
    if (fj_graph_num_calls(tx->graph) == 0) {
        if ((result = no_graph(c, co, tx, cid, 1, NULL, NULL)) != NULL || PyErr_Occurred())
            return result;
    }
    /* every guard is in the tree before any code is generated */
    if (fj_trace_alias_guards(tx) < 0)
        return NULL;
    /* [0], [1]: the continuations; [2]: the handler's (plan->handler) */
    PyObject *rnames[3] = {NULL, NULL, NULL}, *rargs[3] = {NULL, NULL, NULL};
    unsigned char *restore = PyMem_Calloc(nl ? nl : 1, 1), *live = PyMem_Calloc(nl ? nl : 1, 1);
    /* locals a comprehension run in CPython binds (FJ_BREAK_REGION) */
    unsigned char *defs = PyMem_Calloc(FJ_CODE_NLOCALSPLUS(co) > 0 ? FJ_CODE_NLOCALSPLUS(co) : 1, 1);
    int base = top->sp - plan->npop, nstack = base + plan->npush;
    unsigned char *nulls = PyMem_Calloc(nstack > 0 ? nstack : 1, 1);
    if (restore == NULL || live == NULL || nulls == NULL || defs == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    fj_resume_region_defs(co, il, plan, defs);
    for (int i = 0; i < base; i++)
        nulls[i] = ((fj_Var *)top->stack[i])->kind == FJ_VAR_NULL;
    /* cell variables the resume functions would see unbound (as free variables) */
    for (int i = 0; i < nl; i++) {
        fj_Var *cell = (fj_Var *)top->locals[i];
        live[i] = cell == NULL || (cell->kind == FJ_VAR_CELL && PyList_GET_SIZE(cell->items) == 0);
    }
    if (fj_resume_cells_ok(co, il, plan->first, live) < 0)
        goto done;
    /* Run mode (transparent): every bound local is restored and handed on,
    ** live or not, so the frames hold what the function's own frame would
    ** (a traceback keeps them; `x = None` later frees x): the hook moves the
    ** break frame's references to the resume frame (evalframe.c). */
    int all = transparent_mode(c);
    if (fj_resume_liveness(co, il, plan->first, live) < 0)
        goto done;
    for (int i = 0; i < nl; i++)
        restore[i] |= live[i] | all;
    for (int r = 0; r < plan->nresume; r++) {
        if (fj_resume_liveness(co, il, plan->resume[r], live) < 0)
            goto done;
        for (int i = 0; i < nl; i++) {
            live[i] |= all;
            restore[i] |= live[i];
        }
        if (plan->maybe_defs) {
            /* a loop run in CPython binds its locals only if its body runs: one the
               trace saw unbound, read after it, would be passed unbound; but the
               loop's own targets are bound when the iterable is not empty */
            unsigned char *sure = loop_targets(co, il, plan, top);
            if (sure == NULL)
                goto done;
            int bad = -1;
            for (int i = 0; i < nl && bad < 0; i++)
                if (live[i] && defs[i] && !sure[i] && top->locals[i] == NULL && !fj_trace_arg_untouched(top, i) &&
                    !(fj_code_local_kind(co, i) & (FJ_FAST_CELL | FJ_FAST_FREE)))
                    bad = i;
            PyMem_Free(sure);
            if (bad >= 0) {
                fj_unsupported("local '%U' is bound only if the loop's body runs and is read after the "
                               "loop", fj_code_local_name(co, bad));
                goto done;
            }
        }
        if ((rargs[r] = bound_live_names(co, top, live, defs)) == NULL)
            goto done;
        rnames[r] = install_resume(co, il, plan->resume[r], nstack, nulls, rargs[r],
                                   tx->view.globals, hook_enabled(c, "bytecode"),
                                   transparent_mode(c), -1);
        if (rnames[r] == NULL)
            goto done;
    }
    if (plan->handler >= 0) {
        /* what runs in CPython raises into the handler: a resume function
           that starts there with the stack below (hdepth entries) and the
           exception (codegen.c, emit_handler_call) */
        if (plan->hdepth > base) {
            fj_unsupported("graph break under a handler that keeps operands of the break");
            goto done;
        }
        if (fj_resume_liveness(co, il, plan->handler, live) < 0)
            goto done;
        for (int i = 0; i < nl; i++) {
            live[i] |= all;
            restore[i] |= live[i];
        }
        unsigned char hnulls[plan->hdepth + 1];
        memcpy(hnulls, nulls, (size_t)plan->hdepth);
        hnulls[plan->hdepth] = 0;
        if ((rargs[2] = bound_live_names(co, top, live, NULL)) == NULL ||
            (rnames[2] = install_resume(co, il, plan->handler, plan->hdepth + 1, hnulls, rargs[2],
                                        tx->view.globals, hook_enabled(c, "bytecode"),
                                        transparent_mode(c), plan->last)) == NULL)
            goto done;
    }
    BreakCode brk = {il, plan, restore, rnames, rargs};
    result = emit_and_finish(c, co, tx, cid, fj_codegen_break_outputs(tx, restore), &brk);
done:
    PyMem_Free(restore);
    PyMem_Free(live);
    PyMem_Free(nulls);
    PyMem_Free(defs);
    for (int r = 0; r < 3; r++) {
        Py_XDECREF(rnames[r]);
        Py_XDECREF(rargs[r]);
    }
    return result;
}


/*
** Takes the pending fj_Unsupported as its message (new ref str), or NULL.
** With 'detail', also sets *detail to a new (key, stack) tuple from the
** exception (fj_unsupported), or a new ref to None.
*/
static PyObject *take_reason_detail(PyObject **detail)
{
    PyObject *exc = fetch_exception();
    if (exc == NULL)
        return NULL;
    PyObject *s = PyObject_Str(exc);
    if (s != NULL && detail != NULL) {
        PyObject *key = PyObject_GetAttrString(exc, "key");
        PyObject *stack = key ? PyObject_GetAttrString(exc, "stack") : NULL;
        PyErr_Clear(); /* a reason without key: the hook names it "other" */
        *detail = stack ? PyTuple_Pack(2, key, stack) : Py_NewRef(Py_None);
        Py_XDECREF(key);
        Py_XDECREF(stack);
        if (*detail == NULL)
            Py_CLEAR(s);
    }
    Py_DECREF(exc);
    return s;
}

static PyObject *take_reason(void)
{
    return take_reason_detail(NULL);
}

/* Calls the graph_break hook for a break at instruction 'in' (NULL: none). */
static PyObject *call_break_hook(Compiler *c, PyCodeObject *co, PyObject *cid, PyObject *reason,
                                 int lineno, int resumable, PyObject *detail, const fj_Instr *in)
{
    return hook_call(c, "graph_break", "(OOOiOOO(iii))", (PyObject *)co, cid, reason, lineno,
                     c->fullgraph ? Py_True : Py_False, resumable ? Py_True : Py_False,
                     detail ? detail : Py_None, in ? in->col : -1, in ? in->end_col : -1,
                     in ? in->end_line : -1);
}

/*
** The trace succeeded but its result cannot be emitted (fj_Unsupported is
** pending, e.g. a value that cannot be rebuilt): logs the reason and makes
** the frame run whole in CPython for inputs like these.  New ref or NULL.
*/
static PyObject *run_whole_after(Compiler *c, PyCodeObject *co, fj_Tracer *tx, PyObject *cid,
                                 const fj_Instr *in)
{
    PyObject *detail = NULL;
    PyObject *reason = take_reason_detail(&detail);
    PyObject *h = reason ? call_break_hook(c, co, cid, reason, in ? in->line : -1, 0, detail, in)
                         : NULL;
    Py_XDECREF(reason);
    Py_XDECREF(detail);
    if (h == NULL)
        return NULL;
    Py_DECREF(h);
    return run_whole(c, co, tx, cid);
}

/* What one compile tells the structured trace (config.trace_dir): filled by
   compile_frame when it is given one, reported by compile_traced. */
typedef struct {
    PyCodeObject *code;    /* borrowed: the frame's code; NULL until it is known */
    PyObject *cid;         /* strong: the last compile id made, or NULL */
    double trace_seconds;  /* in the tracer, over every attempt */
    double backend_seconds;/* in the backend call */
    int attempts;          /* traces run (restarts and loop retries included) */
} CompileReport;

/*
** Compiles the frame behind wrapper 'frame'; fills 'rep' when it is not NULL
** (the structured trace).  Returns the callback result (new reference) or
** NULL on a user-facing error (fullgraph, backend).
*/
static PyObject *compile_frame(Compiler *c, PyObject *frame, CompileReport *rep)
{
    fj_FrameView view;
    fj_Tracer tx;
    fj_InstrList il;
    fj_BreakPlan plan;
    PyCodeObject *co = NULL;
    PyObject *result = NULL, *cid = NULL, *loop_policy = NULL;
    memset(&tx, 0, sizeof(tx));
    fj_bc_init(&il);
    if (fj_frame_wrapper_view(frame, &view, &co) < 0)
        return NULL;
    if (rep != NULL)
        rep->code = co;
    /* module and class bodies (no CO_OPTIMIZED: LOAD_NAME, run once) are
       never captured, whatever the config (not remembered: exec'd code
       would grow the list without bound) */
    if (!(co->co_flags & CO_OPTIMIZED))
        return Py_NewRef(fj_skip_code_sentinel());
    int skip = should_skip(c, co, view.globals);
    if (skip < 0)
        Py_RETURN_NONE;
    if (skip)
        return skip_code(co);
    /* before the program imports NumPy nothing can be captured (and the
       tracer needs NumPy's API table: fj_numpy.h) */
    if (!fj_numpy_try()) {
        fj_ExtraState *pes = fj_cache_get_or_create(co);
        if (pes == NULL || remember_code(co) < 0)
            return NULL;
        pes->before_numpy = 1;
        return Py_NewRef(fj_unless_arrays_sentinel());
    }

    /* compile id: frame id assigned on first compile, compile count per code */
    fj_ExtraState *ces = fj_cache_get_or_create(co);
    if (ces == NULL)
        return NULL;
    if (ces->frame_id == 0)
        ces->frame_id = ++next_frame_id;
    long frame_id = ces->frame_id - 1, compile_no = ces->compiles++;
    /* a recompile: say which guard failed in each entry, stop past the limit */
    PyObject *failures = NULL;
    fj_ExtraState *es = fj_cache_get(co);
    if (es != NULL && es->n > 0) {
        if ((failures = fj_cache_guard_failures(es, &view)) == NULL)
            return NULL;
        if (es->n >= c->cfg.recompile_limit) {
            PyObject *h = hook_call(c, "recompile_limit_hit", "(OO)", (PyObject *)co, failures);
            Py_DECREF(failures);
            if (h == NULL)
                return NULL;
            Py_DECREF(h);
            return Py_NewRef(fj_run_only_sentinel());
        }
    }
    if (fj_bc_decode(co, &il) < 0) {
        Py_XDECREF(failures);
        return NULL;
    }
    if (failures != NULL) {
        PyObject *cid0 = make_compile_id(frame_id, compile_no, 0);
        PyObject *h = cid0 ? hook_call(c, "recompiling", "(OOO)", (PyObject *)co, cid0, failures)
                           : NULL;
        Py_DECREF(failures);
        if (h == NULL || update_dynamic(c, ces, &view, cid0) < 0) {
            Py_XDECREF(h);
            Py_XDECREF(cid0);
            fj_bc_free(&il);
            return NULL;
        }
        Py_DECREF(h);
        Py_XDECREF(cid0);
    }

    int stop_at = -1, pin_restart = 0, loop_retries = 0;
    /* what failed loop captures leave for the next trace (trace_loops.c) */
    loop_policy = PyDict_New();
    if (loop_policy == NULL)
        goto done;
    for (int attempt = 0; attempt < c->cfg.max_restarts; attempt++) {
        Py_XSETREF(cid, make_compile_id(frame_id, compile_no, attempt));
        if (cid == NULL || tracer_init(c, &tx, &view, co, cid, stop_at, ces, loop_policy) < 0)
            goto done;
        if (rep != NULL)
            Py_XSETREF(rep->cid, Py_NewRef(cid));
        /* the last attempt broke where an op raised on dynamic sizes (x + y
           with unequal ones): the guards it would have added never come,
           so this entry is for these sizes only, not a dynamic one that
           other (valid) sizes would hit before the entry serving them */
        tx.specialized = pin_restart;
        if (stop_at >= 0 && tx.log_trace) {
            /* a restart traces the same instructions up to the break again:
               logged once (trace_bytecode), not once per restart */
            tx.log_trace = 0;
            PyObject *t = PyUnicode_FromFormat("TRACE again up to the break at offset %d, to build "
                                               "the graph (not logged again)",
                                               stop_at < il.n ? il.v[stop_at].offset * 2 : -1);
            hook_log(c, "trace_bytecode", cid, t);
            Py_XDECREF(t);
        }
        if (attempt == 0 && hook_enabled(c, "bytecode")) {
            PyObject *text =
                hook_call(c, "format_code", "(sO)", "ORIGINAL BYTECODE", (PyObject *)co);
            hook_log(c, "bytecode", cid, text);
            Py_XDECREF(text);
        }
        double t0 = rep != NULL ? now_seconds() : 0.0;
        int r = fj_trace_run(&tx, co);
        if (rep != NULL) {
            rep->trace_seconds += now_seconds() - t0;
            rep->attempts++;
        }
        if (r == 0) {
            result = finish_return(c, co, &tx, cid);
            if (result == NULL && PyErr_ExceptionMatches(fj_Unsupported))
                result = run_whole_after(c, co, &tx, cid, NULL); /* return value not rebuildable */
            goto done;
        }
        if (r == 1) {
            result = finish_break(c, co, &tx, cid, &il, &plan);
            if (result == NULL && PyErr_ExceptionMatches(fj_Unsupported))
                result = run_whole_after(c, co, &tx, cid, &il.v[plan.first]);
            goto done;
        }
        if (tx.loop_retry && PyErr_ExceptionMatches(fj_Unsupported) && loop_retries++ < 1000) {
            /* a loop's capture failed: the same trace again, that loop unrolled */
            PyObject *why = take_reason();
            if (why == NULL)
                goto done;
            hook_log(c, "graph_breaks", cid, why);
            Py_DECREF(why);
            tracer_clear(&tx);
            attempt--;
            continue;
        }
        if (!PyErr_ExceptionMatches(fj_Unsupported)) {
            /* an internal error: never break the user's program for it */
            PyObject *exc = fetch_exception();
            PyObject *h = exc ? hook_call(c, "internal_error", "(OOO)", (PyObject *)co, cid, exc)
                              : NULL;
            Py_XDECREF(exc);
            if (h != NULL) {
                Py_DECREF(h);
                result = skip_code(co);
            }
            goto done;
        }
        PyObject *detail = NULL;
        PyObject *reason = take_reason_detail(&detail);
        if (reason == NULL)
            goto done;
        if (!c->fullgraph && fj_graph_num_calls(tx.graph) == 0 && !trace_saw_arrays(&tx, co)) {
            /* nothing captured and no array in sight: no restart, no split */
            result = no_graph(c, co, &tx, cid, 1, reason, detail);
            Py_DECREF(reason);
            Py_DECREF(detail);
            goto done;
        }
        int bindex = tx.break_index;
        int lineno = bindex >= 0 && bindex < il.n ? il.v[bindex].line : -1;
        int resumable = 0;
        if (stop_at < 0 && !c->fullgraph) {
            /* in a resume function, a break in its prologue (reading the saved
               stack) cannot be resumed from the original code */
            fj_ResumeOrigin origin;
            int is_resume = fj_resume_origin((PyObject *)co, &origin);
            if (is_resume < 0) {
                Py_DECREF(reason);
                Py_DECREF(detail);
                goto done;
            }
            if (is_resume && bindex < origin.prefix)
                fj_unsupported("graph break in the prologue of a resume function");
            else if (fj_resume_plan(co, &il, bindex, &plan) == 0)
                resumable = 1;
            if (!resumable) {
                PyObject *why = take_reason();
                if (why == NULL) {
                    Py_DECREF(reason);
                    Py_DECREF(detail);
                    goto done;
                }
                Py_SETREF(reason, PyUnicode_FromFormat("%U (the whole frame runs in CPython: %U)",
                                                       reason, why));
                Py_DECREF(why);
                if (reason == NULL) {
                    Py_DECREF(detail);
                    goto done;
                }
            }
        }
        PyObject *h = call_break_hook(c, co, cid, reason, lineno, resumable, detail,
                                      bindex >= 0 && bindex < il.n ? &il.v[bindex] : NULL);
        Py_DECREF(reason);
        Py_DECREF(detail);
        if (h == NULL)
            goto done; /* fullgraph: the hook raised the user-facing error */
        Py_DECREF(h);
        if (!resumable) {
            result = run_whole(c, co, &tx, cid);
            goto done;
        }
        /* restart, stopping before the break (compile id gets _<attempt>) */
        stop_at = plan.first;
        pin_restart = tx.op_raised && tx.dyn_inputs != NULL && PyList_GET_SIZE(tx.dyn_inputs) > 0;
        tracer_clear(&tx);
    }
    /* config.max_restarts traces, each stopped at a break: the frame runs as
       it is from now on (torch skips a frame past its restart limit too) */
    if (hook_enabled(c, "graph_breaks")) {
        PyObject *msg = PyUnicode_FromFormat("%U (%U:%d) was traced %d times, each ending at a graph "
                                             "break (config.max_restarts): it runs its own code",
                                             co->co_name, co->co_filename, co->co_firstlineno,
                                             c->cfg.max_restarts);
        hook_log(c, "graph_breaks", cid, msg);
        Py_XDECREF(msg);
    }
    result = skip_code(co);
done:
    if (result == NULL && PyErr_Occurred()) {
        /* errors meant for the user (framejit.FramejitError: fullgraph, a
           failing backend) propagate; anything else is ours: the frame runs
           uncompiled from now on and the error is reported, not raised */
        PyObject *user = PyObject_GetAttrString(c->hooks, "user_error_type");
        int mine = user != NULL && !PyErr_ExceptionMatches(user);
        Py_XDECREF(user);
        if (mine) {
            PyObject *exc = fetch_exception();
            PyObject *h = exc ? hook_call(c, "internal_error", "(OOO)", (PyObject *)co,
                                          cid ? cid : Py_None, exc)
                              : NULL;
            Py_XDECREF(exc);
            if (h != NULL) {
                Py_DECREF(h);
                result = skip_code(co);
            }
        }
    }
    if (rep != NULL)
        rep->backend_seconds += tx.backend_seconds;
    tracer_clear(&tx);
    fj_bc_free(&il);
    Py_XDECREF(cid);
    Py_XDECREF(loop_policy);
    return result;
}

/* What the callback's 'result' for a frame of 'co' tells the frame (the
   structured trace's words for it, docs/report.md). */
static const char *outcome_name(PyObject *result, PyCodeObject *co)
{
    if (result == NULL)
        return "error";
    if (result == Py_None)
        return "not_compiled";
    if (result == fj_skip_code_sentinel())
        return "skipped";
    if (result == fj_unless_arrays_sentinel())
        return "unless_arrays";
    if (result == fj_run_only_sentinel())
        return "run_only";
    if (PyTuple_Check(result) && PyTuple_GET_SIZE(result) == 3)
        return PyTuple_GET_ITEM(result, 0) == (PyObject *)co ? "own_code" : "compiled";
    return "other";
}

/*
** compile_frame with the structured trace on: hooks.trace_start() before,
** hooks.trace_done(code, compile_id, outcome, guards, seconds, trace_seconds,
** backend_seconds, attempts) after.  The trace never changes what the
** program sees: a failing hook is reported as unraisable and the result
** (or the pending user-facing error) is compile_frame's.
*/
static PyObject *compile_traced(Compiler *c, PyObject *frame)
{
    CompileReport rep = {NULL, NULL, 0.0, 0.0, 0};
    PyObject *h = hook_call(c, "trace_start", "()");
    if (h == NULL)
        PyErr_WriteUnraisable(c->hooks);
    Py_XDECREF(h);
    double t0 = now_seconds();
    PyObject *result = compile_frame(c, frame, &rep);
    double seconds = now_seconds() - t0;
    if (rep.code != NULL) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        PyObject *guards = result != NULL && PyTuple_Check(result) && PyTuple_GET_SIZE(result) == 3
                               ? PyTuple_GET_ITEM(result, 1)
                               : Py_None;
        h = hook_call(c, "trace_done", "(OOsOdddi)", (PyObject *)rep.code,
                      rep.cid ? rep.cid : Py_None, outcome_name(result, rep.code), guards,
                      seconds, rep.trace_seconds, rep.backend_seconds, rep.attempts);
        if (h == NULL)
            PyErr_WriteUnraisable(c->hooks);
        Py_XDECREF(h);
        PyErr_Restore(et, ev, tb);
    }
    Py_XDECREF(rep.cid);
    return result;
}

/* --------------------------------------------------------------- type */

static PyObject *compiler_call(Compiler *self, PyObject *args, PyObject *kwargs)
{
    PyObject *frame, *entry, *state;
    if (!PyArg_ParseTuple(args, "OOO:Compiler", &frame, &entry, &state))
        return NULL;
    /* Under a trace or profile function (a debugger, coverage, a profiler,
    ** sys.settrace in a test) nothing is compiled: the frame runs its own
    ** code and is offered again once the tracer is gone.  (Cache entries
    ** made before still run; `python -m framejit run` turns the callback off
    ** while a tracer is set: framejit/run.py.) */
    if (fj_thread_traced(PyThreadState_Get()))
        Py_RETURN_NONE;
    if (!PyDict_Check(state))
        return PyErr_Format(PyExc_TypeError, "frame_state must be a dict");
    if (fj_config_refresh(&self->cfg, self->hooks) < 0)
        return NULL;
    if (self->cfg.trace)
        return compile_traced(self, frame);
    return compile_frame(self, frame, NULL);
}

static int compiler_init(Compiler *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"backend", "hooks", "fullgraph", "dynamic", "marked", NULL};
    PyObject *backend, *hooks, *dynamic = Py_None, *marked = NULL;
    int fullgraph = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|pOO!:Compiler", kwlist, &backend, &hooks,
                                     &fullgraph, &dynamic, &PyDict_Type, &marked))
        return -1;
    if (dynamic != Py_None && dynamic != Py_True && dynamic != Py_False) {
        PyErr_Format(PyExc_TypeError, "dynamic must be None, True or False, not %R", dynamic);
        return -1;
    }
    self->dynamic = dynamic == Py_None ? -1 : dynamic == Py_True;
    Py_XSETREF(self->marked, Py_XNewRef(marked));
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

static int compiler_clear(Compiler *self)
{
    Py_CLEAR(self->backend);
    Py_CLEAR(self->hooks);
    Py_CLEAR(self->marked);
    return 0;
}

static void compiler_dealloc(Compiler *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    compiler_clear(self);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static int compiler_traverse(Compiler *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->backend);
    Py_VISIT(self->hooks);
    Py_VISIT(self->marked);
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
        PyObject *co = fj_weakref_object(PyList_GET_ITEM(compiled_codes, i));
        if (co != Py_None && PyCode_Check(co))
            fj_cache_reset((PyCodeObject *)co);
    }
    if (PyList_SetSlice(compiled_codes, 0, n, NULL) < 0)
        return NULL;
    PyDict_Clear(display_names);
    Py_ssize_t ni = PyList_GET_SIZE(installed);
    for (Py_ssize_t i = 0; i < ni; i++) {
        PyObject *pair = PyList_GET_ITEM(installed, i);
        if (PyDict_DelItem(PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1)) < 0)
            PyErr_Clear();
    }
    if (PyList_SetSlice(installed, 0, ni, NULL) < 0)
        return NULL;
    next_frame_id = 0;
    next_fn_id = 0;
    fj_resume_reset();
    Py_RETURN_NONE;
}

/* ----------------------------------------- run mode: tracers turn framejit off */

/* _resume_log_name(code): resume_in_<name>_at_<line> for resume code, else None. */
static PyObject *resume_log_name(PyObject *mod, PyObject *code)
{
    fj_ResumeOrigin origin;
    int r = fj_resume_origin(code, &origin);
    if (r < 0)
        return NULL;
    return Py_NewRef(r ? origin.log_name : Py_None);
}

static PyMethodDef compiler_methods[] = {
    {"_resume_log_name", resume_log_name, METH_O,
     "_resume_log_name(code): the name the logs give resume code "
     "(resume_in_<function>_at_<line>; its co_name is the original's), else None."},
    {"_reset_state", reset_state, METH_NOARGS,
     "Forget every cache entry and compiled function framejit installed."},
    {NULL},
};

/*
** Two compilers share cache entries when they would compile alike (same
** backend and options).  Other callbacks (tests, tools) share all entries.
*/
static int compilers_equal(PyObject *a, PyObject *b)
{
    if (Py_TYPE(a) != compiler_type || Py_TYPE(b) != compiler_type)
        return 1;
    Compiler *x = (Compiler *)a, *y = (Compiler *)b;
    return x->backend == y->backend && x->fullgraph == y->fullgraph && x->dynamic == y->dynamic;
}

int fj_compiler_init(PyObject *module)
{
    fj_cache_owner_eq = compilers_equal;
    compiler_type = (PyTypeObject *)PyType_FromSpec(&compiler_spec);
    if (compiler_type == NULL || PyModule_AddObjectRef(module, "Compiler", (PyObject *)compiler_type) < 0)
        return -1;
    display_names = PyDict_New();
    installed = PyList_New(0);
    if (installed == NULL)
        return -1;
    compiled_codes = PyList_New(0);
    if (display_names == NULL || compiled_codes == NULL || fj_resume_init() < 0)
        return -1;
    return PyModule_AddFunctions(module, compiler_methods);
}
