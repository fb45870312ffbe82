/*
** compat.h: every CPython-version-specific detail framejit relies on.
**
** Responsible for: the layout of the interpreter frame (_PyInterpreterFrame),
** the code object's extra slot, the frame-evaluation (PEP 523) function
** type, the thread state, dict and int internals, and the "is this frame
** fresh" test.  The bytecode of each version (opcode metadata, how an
** operation is spelt) is its dialect unit's (csrc/bytecode/dialect.h).
** Nothing else in csrc/ but the dialect units includes internal CPython
** headers or tests PY_VERSION_HEX; supporting a new CPython is an addition
** here and one new dialect unit, not a rewrite elsewhere (docs/porting.md).
**
** Not responsible for: policy (what to run), which lives in evalframe.c.
**
** Supported: CPython 3.11 (FJ_SUPPORTED == 1).  On other versions setup.py
** builds only csrc/runtime/unsupported.c: framejit._C imports, SUPPORTED is
** 0, no hook is installed and everything runs uncompiled (framejit warns
** once).
*/
#ifndef FJ_COMPAT_H
#define FJ_COMPAT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#define FJ_SUPPORTED 1
#ifndef Py_BUILD_CORE
#define Py_BUILD_CORE 1
#endif
#include <internal/pycore_frame.h>
#include <internal/pycore_code.h>
/* libpython 3.11 does not export _PyOpcode_Caches/_PyOpcode_Deopt: exactly
** one file (the dialect unit, dialect_311.c) defines FJ_DEFINE_OPCODE_TABLES
** so the extension carries its own copy of those tables. */
#ifdef FJ_DEFINE_OPCODE_TABLES
#define NEED_OPCODE_TABLES
#endif
#include <internal/pycore_opcode.h>
#include <internal/pycore_dict.h>
/* objimpl.h, included by Python.h before Py_BUILD_CORE, defines its own */
#undef _PyGC_FINALIZED
#include <internal/pycore_runtime.h> /* _PyRuntime.audit_hook_head */
#include <opcode.h> /* 3.11 opcode numbers (LOAD_FAST, ...) and NB_* BINARY_OP args */
#undef Py_BUILD_CORE
#else
#define FJ_SUPPORTED 0
#endif

#if FJ_SUPPORTED

typedef _PyInterpreterFrame fj_Frame;
typedef PyObject *(*fj_EvalFrameFunc)(PyThreadState *, fj_Frame *, int);

/* The frame's code object: borrowed, valid while the frame lives. */
#define FJ_FRAME_CODE(f) ((f)->f_code)
/* The frame's function: borrowed. */
#define FJ_FRAME_FUNC(f) ((f)->f_func)
#define FJ_FRAME_GLOBALS(f) ((f)->f_globals)
#define FJ_FRAME_BUILTINS(f) ((f)->f_builtins)
#define FJ_FRAME_LOCALSPLUS(f) ((f)->localsplus)
/* Index of the last instruction started, in code units (-1 if none yet). */
#define FJ_FRAME_LASTI(f) _PyInterpreterFrame_LASTI(f)

/* True for a frame whose first instruction has not run yet. */
static inline int fj_frame_is_fresh(fj_Frame *f)
{
    return f->prev_instr < _PyCode_CODE(f->f_code) + f->f_code->_co_firsttraceable;
}

/*
** Code extra slot.  Reading goes straight to the field (no call) because
** it runs on every frame; writing uses the API so the old value is freed.
*/
typedef struct {
    Py_ssize_t ce_size;
    void *ce_extras[1];
} fj_CodeExtra; /* mirrors _PyCodeObjectExtra of Objects/codeobject.c (3.11) */

static inline void *fj_code_get_extra(PyCodeObject *co, Py_ssize_t index)
{
    fj_CodeExtra *ce = (fj_CodeExtra *)co->co_extra;
    if (ce == NULL || index >= ce->ce_size)
        return NULL;
    return ce->ce_extras[index];
}
/*
** Sets the code's extra slot 'index' to 'v' (the old value goes to its free
** function).  0, or -1 with an exception.  The extra array is grown only to
** index + 1, not to the number of indices registered so far as
** _PyCode_SetExtra grows it: code_dealloc calls the free function of every
** index below the array's size, even for an empty slot, so arrays sized by
** framejit would make CPython call free functions registered later by other
** code (test_code registers a Python one, which then ran during the final
** garbage collection and crashed) on every code object framejit touched.
*/
static inline int fj_code_set_extra(PyCodeObject *co, Py_ssize_t index, void *v)
{
    fj_CodeExtra *ce = (fj_CodeExtra *)co->co_extra;
    if (index >= 0 && (ce == NULL || ce->ce_size <= index)) {
        Py_ssize_t old = ce == NULL ? 0 : ce->ce_size;
        ce = PyMem_Realloc(ce, sizeof(fj_CodeExtra) + (size_t)index * sizeof(void *));
        if (ce == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t i = old; i <= index; i++)
            ce->ce_extras[i] = NULL;
        ce->ce_size = index + 1;
        co->co_extra = ce;
    }
    return _PyCode_SetExtra((PyObject *)co, index, v);
}
/* The code's extra slot 'index' for a value with no free function (NULL when
   the code has no room for it yet: set it once with fj_code_set_extra). */
static inline void **fj_code_extra_slot(PyCodeObject *co, Py_ssize_t index)
{
    fj_CodeExtra *ce = (fj_CodeExtra *)co->co_extra;
    return ce == NULL || index >= ce->ce_size ? NULL : &ce->ce_extras[index];
}
#define fj_request_code_extra_index(free) _PyEval_RequestCodeExtraIndex(free)

static inline fj_EvalFrameFunc fj_get_eval_frame(PyInterpreterState *interp)
{
    return (fj_EvalFrameFunc)_PyInterpreterState_GetEvalFrameFunc(interp);
}
static inline void fj_set_eval_frame(PyInterpreterState *interp, fj_EvalFrameFunc f)
{
    _PyInterpreterState_SetEvalFrameFunc(interp, (_PyFrameEvalFunction)f);
}
#define fj_default_eval_frame ((fj_EvalFrameFunc)_PyEval_EvalFrameDefault)
/* Makes the thread state 'ts', created by another thread, the calling
   thread's (its thread ids), before the calling thread first takes the GIL
   with it (3.11 records the creating thread's ids). */
static inline void fj_tstate_adopt(PyThreadState *ts)
{
    ts->thread_id = PyThread_get_thread_ident();
#ifdef PY_HAVE_THREAD_NATIVE_ID
    ts->native_thread_id = PyThread_get_thread_native_id();
#endif
}

/*
** Watching imports: a C audit hook (PySys_AddAuditHook) sees the "import"
** event raised when a module is first loaded.  Python code cannot see a C
** hook, but every audited operation (id(), open(), sys._getframe, ...) pays
** for it, so the watcher takes itself out of the runtime's hook list once
** it is done (fj_unwatch_imports) and puts the same entry back if asked to
** watch again: no second "sys.addaudithook" event.  The entry is never
** freed while unlinked (kept in 'fj_audit_retired', reachable), and it is
** unlinked without freeing from inside its own call, where CPython's walk
** of the list still reads its 'next'.
**
** 3.11: the list is _PyRuntime.audit_hook_head, entries _Py_AuditHookEntry,
** changed only with the GIL held.  Defined in the one file that defines
** FJ_IMPORT_WATCH before its includes (evalframe.c).
*/
#ifdef FJ_IMPORT_WATCH
typedef int (*fj_ImportWatch)(PyObject *name); /* 1: done watching */
static fj_ImportWatch fj_import_watch = NULL;
static _Py_AuditHookEntry *fj_audit_retired = NULL;

static inline void fj_unwatch_imports(void);
static int fj_audit_import(const char *event, PyObject *args, void *data)
{
    (void)data;
    if (fj_import_watch == NULL || strcmp(event, "import") != 0)
        return 0;
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) < 1 ||
        !PyUnicode_Check(PyTuple_GET_ITEM(args, 0)))
        return 0;
    if (fj_import_watch(PyTuple_GET_ITEM(args, 0)))
        fj_unwatch_imports();
    return 0;
}

/* Calls 'watch' with the name of each module loaded from now on, until it
   returns 1 or fj_unwatch_imports.  0, or -1 with an exception. */
static inline int fj_watch_imports(fj_ImportWatch watch)
{
    fj_import_watch = watch;
    for (_Py_AuditHookEntry *e = _PyRuntime.audit_hook_head; e != NULL; e = e->next)
        if (e->hookCFunction == fj_audit_import)
            return 0;
    if (fj_audit_retired != NULL) { /* relinked at the tail, where it was added */
        _Py_AuditHookEntry **tail = &_PyRuntime.audit_hook_head;
        while (*tail != NULL)
            tail = &(*tail)->next;
        fj_audit_retired->next = NULL;
        *tail = fj_audit_retired;
        fj_audit_retired = NULL;
        return 0;
    }
    if (PySys_AddAuditHook(fj_audit_import, NULL) < 0) {
        fj_import_watch = NULL;
        return -1;
    }
    return 0;
}

static inline void fj_unwatch_imports(void)
{
    fj_import_watch = NULL;
    for (_Py_AuditHookEntry **p = &_PyRuntime.audit_hook_head; *p != NULL; p = &(*p)->next) {
        if ((*p)->hookCFunction == fj_audit_import) {
            fj_audit_retired = *p;
            *p = (*p)->next; /* the retired entry keeps its 'next' for a walk in progress */
            return;
        }
    }
}
#endif /* FJ_IMPORT_WATCH */

/* Nonzero once the runtime is finalizing (readable without the GIL). */
#define fj_is_finalizing() _Py_IsFinalizing()


/* Nonzero while thread 'ts' has a trace or profile function
** (sys.settrace/setprofile, PyEval_SetTrace/SetProfile). */
static inline int fj_thread_traced(PyThreadState *ts)
{
    return ts->c_tracefunc != NULL || ts->c_profilefunc != NULL;
}

/* If the exact int 'v' has at most one digit, stores its value in '*out'
   and returns 1 (no call); else 0.  (3.11's PyLongObject layout.) */
static inline int fj_long_compact(PyObject *v, long long *out)
{
    Py_ssize_t size = Py_SIZE(v);
    if (size < -1 || size > 1)
        return 0;
    *out = (long long)size * (long long)((PyLongObject *)v)->ob_digit[0];
    return 1;
}

/* The globals dict's version tag, bumped by every change to the dict. */
#define FJ_DICT_VERSION(d) (((PyDictObject *)(d))->ma_version_tag)

/*
** The slot holding obj's instance __dict__ (possibly NULL inside), or NULL
** when its type has none.  Never creates the dict: 3.11 keeps a managed
** dict's slot at a fixed offset before the object and the attributes in an
** inline values array until a dict is asked for.
*/
static inline PyObject **fj_instance_dict_slot(PyObject *obj)
{
    if (Py_TYPE(obj)->tp_flags & Py_TPFLAGS_MANAGED_DICT)
        return ((PyObject **)obj) - 3;
    return _PyObject_GetDictPtr(obj);
}

/* Nonzero when every key of dict 'd' is an exact str (3.11's unicode-keys
** table): looking a str up in it compares str to str, never a key's __eq__. */
#define FJ_DICT_STR_KEYS_ONLY(d) DK_IS_UNICODE(((PyDictObject *)(d))->ma_keys)

/*
** Makes a fresh frame run 'code' instead of its own code, keeping its
** function (so closure, globals, builtins and defaults stay the frame's) and
** its argument slots.  'code' must have the same argument layout as the
** frame's code.  Returns 0 on success, or -1 (no exception set) when the
** frame cannot be grown in place to the size 'code' needs; the frame is
** unchanged then.  On 3.11 the frame is the last allocation on the thread's
** data stack when the hook sees it, so growing means bumping the top.
*/
static inline int fj_frame_swap_code(PyThreadState *ts, fj_Frame *f, PyCodeObject *code)
{
    PyCodeObject *old = f->f_code;
    int old_n = old->co_nlocalsplus, new_n = code->co_nlocalsplus;
    PyObject **old_end = f->localsplus + old_n + old->co_stacksize;
    PyObject **new_end = f->localsplus + new_n + code->co_stacksize;
    if (new_end > old_end) {
        if (ts->datastack_top != old_end || new_end >= ts->datastack_limit)
            return -1;
        ts->datastack_top = new_end;
    }
    for (int i = old_n; i < new_n; i++)
        f->localsplus[i] = NULL;
    f->f_code = (PyCodeObject *)Py_NewRef(code);
    f->stacktop = new_n;
    f->prev_instr = _PyCode_CODE(code) - 1;
    Py_DECREF(old);
    return 0;
}

/*
** The frame running on 'ts' (borrowed; NULL if none).  When the hook is
** called, this is the frame that made the call (3.11: the frame of the
** cframe that _PyEval_Vector runs under; the new frame is not linked yet).
*/
static inline fj_Frame *fj_thread_current_frame(PyThreadState *ts)
{
    return ts->cframe->current_frame;
}
/*
** Hides 'caller' (the frame running on 'ts') from the frame the hook is
** about to evaluate and from everything that frame runs: 3.11's eval loop
** links a new frame to its cframe's current_frame on entry (frame->previous)
** and asserts it is unchanged on exit, so while 'caller' is hidden the new
** frame's f_back, sys._getframe, tracebacks and warnings see the caller's
** caller.  Undone by fj_frame_unhide (same 'ts' and 'caller') after the
** evaluation returns; 'caller' must stay suspended in between.
*/
static inline void fj_frame_hide(PyThreadState *ts, fj_Frame *caller)
{
    ts->cframe->current_frame = caller->previous;
    ts->recursion_remaining++; /* the hidden frame's level of the recursion limit */
}
static inline void fj_frame_unhide(PyThreadState *ts, fj_Frame *caller)
{
    ts->recursion_remaining--;
    ts->cframe->current_frame = caller;
}
/*
** Moves the frame object of 'from' (a suspended frame; none: nothing to do)
** to 'to' (a frame not evaluated yet, with no frame object), so that a frame
** object taken from 'from' (sys._getframe(1) in a callee, a traceback, a
** debugger) now reads 'to': its f_lineno, f_lasti, f_locals and f_back follow
** 'to', and 'to' takes ownership of it when it is cleared (3.11:
** frame->frame_obj and frame_obj->f_frame point at each other; f_locals is
** rebuilt from 'to' on the next access).
*/
static inline void fj_frame_move_frame_object(fj_Frame *from, fj_Frame *to)
{
    PyFrameObject *fo = from->frame_obj;
    if (fo == NULL || to->frame_obj != NULL)
        return;
    assert(fo->f_frame == from);
    from->frame_obj = NULL;
    to->frame_obj = fo;
    fo->f_frame = to;
    fo->f_fast_as_locals = 0;
}
/* The bottom slot of the frame's value stack, and its capacity. */
static inline PyObject **fj_frame_stack_base(fj_Frame *f)
{
    return f->localsplus + f->f_code->co_nlocalsplus;
}
#define FJ_FRAME_STACK_SIZE(f) ((f)->f_code->co_stacksize)

/* Untracks the code's constant and name tuples that hold nothing the
** garbage collector tracks (what a collection would do to them, 3.11). */
static inline void fj_code_untrack_tuples(PyCodeObject *co)
{
    _PyTuple_MaybeUntrack(co->co_consts);
    _PyTuple_MaybeUntrack(co->co_names);
    _PyTuple_MaybeUntrack(co->co_localsplusnames);
}

/* True if dict 'd' stores its values in a split table (keys shared with
** other instances' __dict__; 3.11: ma_values is set). */
static inline int fj_dict_is_split(PyObject *d)
{
    return ((PyDictObject *)d)->ma_values != NULL;
}

/* Names and kinds of the fast-local slots (localsplus order). */
#define FJ_FAST_LOCAL CO_FAST_LOCAL
#define FJ_FAST_CELL CO_FAST_CELL
#define FJ_FAST_FREE CO_FAST_FREE
static inline int fj_code_local_kind(PyCodeObject *co, int i)
{
    return _PyLocals_GetKind(co->co_localspluskinds, i);
}
/* Borrowed. */
static inline PyObject *fj_code_local_name(PyCodeObject *co, int i)
{
    return PyTuple_GET_ITEM(co->co_localsplusnames, i);
}
#define FJ_CODE_NLOCALSPLUS(co) ((co)->co_nlocalsplus)
#define FJ_CODE_NFREEVARS(co) ((co)->co_nfreevars)

#endif /* FJ_SUPPORTED */
#endif /* FJ_COMPAT_H */
