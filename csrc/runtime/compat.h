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
** Supported: CPython 3.11, 3.12 and 3.13 (FJ_SUPPORTED == 1; not the
** free-threaded 3.13 build, whose objects, dicts and thread states differ).
** Where a detail changed, the definition has one #if per function body (or
** per small group), newest version first, saying what changed in that
** version; 3.11 is the shipping version and its branch is unchanged.  On
** other versions setup.py builds only csrc/runtime/unsupported.c:
** framejit._C imports, SUPPORTED is 0, no hook is installed and everything
** runs uncompiled (framejit warns once).
*/
#ifndef FJ_COMPAT_H
#define FJ_COMPAT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000 && !defined(Py_GIL_DISABLED)
#define FJ_SUPPORTED 1
#ifndef Py_BUILD_CORE
#define Py_BUILD_CORE 1
#endif
/* objimpl.h, included by Python.h before Py_BUILD_CORE, defines its own
   (3.11, 3.12; 3.12's pycore_frame.h already brings pycore_gc.h in) */
#undef _PyGC_FINALIZED
/* Python.h, included before Py_BUILD_CORE, marks ma_version_tag deprecated
   (3.12): the internal headers' own uses of it must not warn */
_Py_COMP_DIAG_PUSH
_Py_COMP_DIAG_IGNORE_DEPR_DECLS
#include <internal/pycore_frame.h>
#include <internal/pycore_code.h>
/* libpython does not export _PyOpcode_Caches/_PyOpcode_Deopt (3.11-3.13):
** exactly one file (the dialect unit of the version) defines
** FJ_DEFINE_OPCODE_TABLES so the extension carries its own copy of those
** tables.  3.13 moved them, with the rest of the opcode metadata, to
** pycore_opcode_metadata.h, whose definitions NEED_OPCODE_METADATA asks for
** (3.11, 3.12: pycore_opcode.h and NEED_OPCODE_TABLES). */
#if PY_VERSION_HEX >= 0x030D0000
#ifdef FJ_DEFINE_OPCODE_TABLES
#define NEED_OPCODE_METADATA
#endif
#include <internal/pycore_opcode_metadata.h>
#else
#ifdef FJ_DEFINE_OPCODE_TABLES
#define NEED_OPCODE_TABLES
#endif
#include <internal/pycore_opcode.h>
#endif
#include <internal/pycore_dict.h>
#include <internal/pycore_runtime.h> /* _PyRuntime's audit hook list */
#if PY_VERSION_HEX >= 0x030C0000
/* 3.12's cpython/object.h maps this old name to _PyObject_LookupSpecialId
   outside the core; pycore_object.h declares it with its own signature */
#undef _PyObject_LookupSpecial
#include <internal/pycore_object.h> /* the managed dict slot (3.12: PyDictOrValues) */
#endif
#if PY_VERSION_HEX >= 0x030D0000
#include <internal/pycore_setobject.h> /* _PySet_NextEntry left the public headers (3.13) */
#endif
_Py_COMP_DIAG_POP
#include <opcode.h> /* opcode numbers (LOAD_FAST, ...) and NB_* BINARY_OP args */
#undef Py_BUILD_CORE
#else
#define FJ_SUPPORTED 0
#endif

#if FJ_SUPPORTED

typedef _PyInterpreterFrame fj_Frame;
typedef PyObject *(*fj_EvalFrameFunc)(PyThreadState *, fj_Frame *, int);

/* The frame's code object: borrowed, valid while the frame lives.  3.13:
   the frame holds it as f_executable, a PyObject * (a code object for every
   frame framejit sees; None only in the eval loop's own entry frame). */
#if PY_VERSION_HEX >= 0x030D0000
#define FJ_FRAME_CODE(f) ((PyCodeObject *)(f)->f_executable)
#else
#define FJ_FRAME_CODE(f) ((f)->f_code)
#endif
/* The frame's function: borrowed.  3.12: f_func became f_funcobj, a
   PyObject *. */
#if PY_VERSION_HEX >= 0x030C0000
#define FJ_FRAME_FUNC(f) ((PyFunctionObject *)(f)->f_funcobj)
#else
#define FJ_FRAME_FUNC(f) ((f)->f_func)
#endif
#define FJ_FRAME_GLOBALS(f) ((f)->f_globals)
#define FJ_FRAME_BUILTINS(f) ((f)->f_builtins)
#define FJ_FRAME_LOCALSPLUS(f) ((f)->localsplus)

/*
** Index of the last instruction started, in code units (-1 if none yet).
** 3.11, 3.12: prev_instr is the last instruction started (the code's start
** - 1 on a new frame).  3.13: prev_instr became instr_ptr, the instruction
** executing or about to begin: the first one on a new frame, which reads as
** -1 here (so does a frame seen from inside its own instruction 0, a RESUME
** with no prologue before it: a trace or monitoring callback of its start).
** A suspended generator's frame reads as the instruction it resumes at, as
** 3.13's own f_lasti does, one past the YIELD_VALUE 3.11 gives (same line).
*/
#if PY_VERSION_HEX >= 0x030D0000
static inline int fj_frame_lasti(fj_Frame *f)
{
    int i = (int)(f->instr_ptr - _PyCode_CODE(FJ_FRAME_CODE(f)));
    return i == 0 ? -1 : i;
}
#define FJ_FRAME_LASTI(f) fj_frame_lasti(f)
#else
#define FJ_FRAME_LASTI(f) _PyInterpreterFrame_LASTI(f)
#endif

/*
** True for a frame whose first instruction has not run yet: RESUME, the
** first traceable instruction (after the MAKE_CELL, COPY_FREE_VARS and
** RETURN_GENERATOR prologue), has not started.  A generator made but not
** started is fresh: its frame stopped in the prologue.
*/
static inline int fj_frame_is_fresh(fj_Frame *f)
{
#if PY_VERSION_HEX >= 0x030D0000
    /* 3.13: instr_ptr is the next instruction, the first one on a new frame
       even when that is the RESUME (no prologue) */
    PyCodeObject *co = FJ_FRAME_CODE(f);
    Py_ssize_t next = f->instr_ptr - _PyCode_CODE(co);
    return next == 0 || next < co->_co_firsttraceable;
#else
    /* 3.11, 3.12: prev_instr is the last instruction started */
    return f->prev_instr < _PyCode_CODE(f->f_code) + f->f_code->_co_firsttraceable;
#endif
}

/*
** Code extra slot.  Reading goes straight to the field (no call) because
** it runs on every frame; writing uses the API so the old value is freed.
*/
typedef struct {
    Py_ssize_t ce_size;
    void *ce_extras[1];
} fj_CodeExtra; /* mirrors _PyCodeObjectExtra of Objects/codeobject.c (3.11;
                   unchanged in 3.12 and 3.13, as are the setter's growth to
                   co_extra_user_count and code_dealloc's walk below) */

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
#if PY_VERSION_HEX >= 0x030C0000
    return PyUnstable_Code_SetExtra((PyObject *)co, index, v); /* 3.12's name */
#else
    return _PyCode_SetExtra((PyObject *)co, index, v);
#endif
}
/* The code's extra slot 'index' for a value with no free function (NULL when
   the code has no room for it yet: set it once with fj_code_set_extra). */
static inline void **fj_code_extra_slot(PyCodeObject *co, Py_ssize_t index)
{
    fj_CodeExtra *ce = (fj_CodeExtra *)co->co_extra;
    return ce == NULL || index >= ce->ce_size ? NULL : &ce->ce_extras[index];
}
/* 3.12 renamed _PyEval_RequestCodeExtraIndex (the old name is deprecated). */
#if PY_VERSION_HEX >= 0x030C0000
#define fj_request_code_extra_index(free) PyUnstable_Eval_RequestCodeExtraIndex(free)
#else
#define fj_request_code_extra_index(free) _PyEval_RequestCodeExtraIndex(free)
#endif

static inline fj_EvalFrameFunc fj_get_eval_frame(PyInterpreterState *interp)
{
    return (fj_EvalFrameFunc)_PyInterpreterState_GetEvalFrameFunc(interp);
}
static inline void fj_set_eval_frame(PyInterpreterState *interp, fj_EvalFrameFunc f)
{
    _PyInterpreterState_SetEvalFrameFunc(interp, (_PyFrameEvalFunction)f);
}
/* (3.11-3.13: the same _PyFrameEvalFunction type and accessors; setting the
   default function stores NULL, reading NULL gives the default) */
#define fj_default_eval_frame ((fj_EvalFrameFunc)_PyEval_EvalFrameDefault)
/* Makes the thread state 'ts', created by another thread, the calling
   thread's (its thread ids), before the calling thread first takes the GIL
   with it (3.11-3.13 record the creating thread's ids in PyThreadState_New;
   3.12 and 3.13 bind the calling thread's gilstate when it takes the GIL). */
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
** changed only with the GIL held.  3.12 moved it to
** _PyRuntime.audit_hooks.head, next to a mutex that PySys_AddAuditHook holds
** while it appends (interpreters with a GIL of their own share the list): a
** PyThread lock in 3.12, a PyMutex in 3.13.  Unlinking and relinking here
** take it too.  Walks (sys_audit_tstate, every version) take no lock: the
** retired entry keeps its 'next' as before.  Entries are the same
** _Py_AuditHookEntry in 3.11-3.13.  Defined in the one file that defines
** FJ_IMPORT_WATCH before its includes (evalframe.c).
*/
#ifdef FJ_IMPORT_WATCH
#if PY_VERSION_HEX >= 0x030D0000
#define FJ_AUDIT_HEAD (_PyRuntime.audit_hooks.head)
#define fj_audit_lock() PyMutex_Lock(&_PyRuntime.audit_hooks.mutex)
#define fj_audit_unlock() PyMutex_Unlock(&_PyRuntime.audit_hooks.mutex)
#elif PY_VERSION_HEX >= 0x030C0000
/* (the lock is made with the runtime, before any extension can run) */
#define FJ_AUDIT_HEAD (_PyRuntime.audit_hooks.head)
#define fj_audit_lock() ((void)PyThread_acquire_lock(_PyRuntime.audit_hooks.mutex, WAIT_LOCK))
#define fj_audit_unlock() PyThread_release_lock(_PyRuntime.audit_hooks.mutex)
#else
#define FJ_AUDIT_HEAD (_PyRuntime.audit_hook_head)
#define fj_audit_lock() ((void)0)
#define fj_audit_unlock() ((void)0)
#endif
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
    fj_audit_lock();
    for (_Py_AuditHookEntry *e = FJ_AUDIT_HEAD; e != NULL; e = e->next)
        if (e->hookCFunction == fj_audit_import) {
            fj_audit_unlock();
            return 0;
        }
    if (fj_audit_retired != NULL) { /* relinked at the tail, where it was added */
        _Py_AuditHookEntry **tail = &FJ_AUDIT_HEAD;
        while (*tail != NULL)
            tail = &(*tail)->next;
        fj_audit_retired->next = NULL;
        *tail = fj_audit_retired;
        fj_audit_retired = NULL;
        fj_audit_unlock();
        return 0;
    }
    fj_audit_unlock(); /* PySys_AddAuditHook takes it */
    if (PySys_AddAuditHook(fj_audit_import, NULL) < 0) {
        fj_import_watch = NULL;
        return -1;
    }
    return 0;
}

static inline void fj_unwatch_imports(void)
{
    fj_import_watch = NULL;
    fj_audit_lock();
    for (_Py_AuditHookEntry **p = &FJ_AUDIT_HEAD; *p != NULL; p = &(*p)->next) {
        if ((*p)->hookCFunction == fj_audit_import) {
            fj_audit_retired = *p;
            *p = (*p)->next; /* the retired entry keeps its 'next' for a walk in progress */
            fj_audit_unlock();
            return;
        }
    }
    fj_audit_unlock();
}
#endif /* FJ_IMPORT_WATCH */

/* Nonzero once the runtime is finalizing (readable without the GIL).  3.13
   made it public as Py_IsFinalizing and dropped _Py_IsFinalizing. */
#if PY_VERSION_HEX >= 0x030D0000
#define fj_is_finalizing() Py_IsFinalizing()
#else
#define fj_is_finalizing() _Py_IsFinalizing()
#endif


/*
** Nonzero while thread 'ts' has a trace or profile function
** (sys.settrace/setprofile, PyEval_SetTrace/SetProfile), and from 3.12 also
** while a sys.monitoring tool has events set for the whole interpreter.
** 3.12 runs settrace/setprofile as monitoring tools 7 and 6, whose events are
** on for every thread while any thread traces: for those the thread's own
** c_tracefunc/c_profilefunc answer.  The other tools (0-5) are checked in
** interp->monitors (one byte of tool bits per event, set_events'), so any
** global event of any tool says yes.  Not seen: events a tool sets on single
** code objects only (sys.monitoring.set_local_events), which live in those
** code objects.
*/
#if PY_VERSION_HEX >= 0x030C0000
#define FJ_MONITORING_USER_TOOLS \
    (0xFF & ~((1 << PY_MONITORING_SYS_PROFILE_ID) | (1 << PY_MONITORING_SYS_TRACE_ID)))
#endif
static inline int fj_thread_traced(PyThreadState *ts)
{
#if PY_VERSION_HEX >= 0x030C0000
    if (ts->c_tracefunc != NULL || ts->c_profilefunc != NULL)
        return 1;
    const uint8_t *tools = ts->interp->monitors.tools;
    unsigned any = 0;
    for (int e = 0; e < _PY_MONITORING_UNGROUPED_EVENTS; e++)
        any |= tools[e];
    return (any & FJ_MONITORING_USER_TOOLS) != 0;
#else
    return ts->c_tracefunc != NULL || ts->c_profilefunc != NULL;
#endif
}

/* If the exact int 'v' has at most one digit, stores its value in '*out'
   and returns 1 (no call); else 0.  3.12 keeps sign and digit count in
   long_value.lv_tag ("compact": at most one digit), not in ob_size. */
static inline int fj_long_compact(PyObject *v, long long *out)
{
#if PY_VERSION_HEX >= 0x030C0000
    const PyLongObject *l = (const PyLongObject *)v;
    if (!_PyLong_IsCompact(l))
        return 0;
    *out = (long long)_PyLong_CompactValue(l);
    return 1;
#else
    Py_ssize_t size = Py_SIZE(v);
    if (size < -1 || size > 1)
        return 0;
    *out = (long long)size * (long long)((PyLongObject *)v)->ob_digit[0];
    return 1;
#endif
}

/*
** The globals dict's version tag, bumped by every change to the dict.
** 3.12 and 3.13 still give ma_version_tag a new, interpreter-wide unique
** value on every change (dictobject.c, _PyDict_NotifyEvent's result), but
** its low bits are no version: dict watchers (bits 0-7, set and cleared by
** PyDict_Watch/Unwatch without a change) and, in 3.13, a counter of changes
** to watched dicts (bits 8-11).  Those bits are masked off, so watching a
** dict does not look like a change.  (The field is deprecated outside the
** core from 3.12: read here only.)
** 3.13 caveat: an object's __dict__ that still shares the object's inline
** values (Py_TPFLAGS_INLINE_VALUES, dict->ma_values embedded) is not
** re-versioned when an attribute in those values is set or deleted through
** the object (obj.x = v: _PyObject_StoreInstanceAttribute writes the values
** directly).  Globals, builtins, a module's __dict__ and sys.modules are
** never such dicts; for an instance __dict__ on 3.13 the tag is reliable
** only while d->ma_values is NULL or not ma_values->embedded (else compare
** contents).
*/
#if PY_VERSION_HEX >= 0x030D0000
#define FJ_DICT_VERSION_NOISE ((uint64_t)DICT_WATCHER_AND_MODIFICATION_MASK)
#elif PY_VERSION_HEX >= 0x030C0000
#define FJ_DICT_VERSION_NOISE ((uint64_t)DICT_VERSION_MASK)
#endif
#if PY_VERSION_HEX >= 0x030C0000
_Py_COMP_DIAG_PUSH
_Py_COMP_DIAG_IGNORE_DEPR_DECLS
static inline uint64_t fj_dict_version(PyObject *d)
{
    return ((PyDictObject *)d)->ma_version_tag & ~FJ_DICT_VERSION_NOISE;
}
_Py_COMP_DIAG_POP
#define FJ_DICT_VERSION(d) fj_dict_version((PyObject *)(d))
#else
#define FJ_DICT_VERSION(d) (((PyDictObject *)(d))->ma_version_tag)
#endif

/*
** The slot holding obj's instance __dict__ (possibly NULL inside), or NULL
** when its type has none.  Never creates the dict; read it, never store into
** it.  NULL inside does not mean "no attributes": a managed dict's
** attributes stay in a values array, with no dict, until a dict is asked for
** (obj.__dict__, vars(obj), ...); those keys are always exact str.
** 3.11: the managed dict's slot is at a fixed offset before the object
** (values pointer in the slot before it).  3.12: that slot holds either the
** dict or the tagged values pointer (PyDictOrValues): while it holds values
** the answer is a slot holding NULL (a read-only one, not the object's).
** 3.13: the slot (PyManagedDictPointer, same offset) holds the dict or NULL,
** the values living inline after the object (Py_TPFLAGS_INLINE_VALUES).
** Types with a __dict__ at tp_dictoffset: _PyObject_GetDictPtr, which
** creates nothing for them in any version.
*/
static inline PyObject **fj_instance_dict_slot(PyObject *obj)
{
#if PY_VERSION_HEX >= 0x030D0000
    if (Py_TYPE(obj)->tp_flags & Py_TPFLAGS_MANAGED_DICT)
        return (PyObject **)&_PyObject_ManagedDictPointer(obj)->dict;
#elif PY_VERSION_HEX >= 0x030C0000
    if (Py_TYPE(obj)->tp_flags & Py_TPFLAGS_MANAGED_DICT) {
        static PyObject *const no_dict = NULL;
        PyDictOrValues *dorv = _PyObject_DictOrValuesPointer(obj);
        return _PyDictOrValues_IsValues(*dorv) ? (PyObject **)&no_dict : &dorv->dict;
    }
#else
    if (Py_TYPE(obj)->tp_flags & Py_TPFLAGS_MANAGED_DICT)
        return ((PyObject **)obj) - 3;
#endif
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
** unchanged then.  On 3.11-3.13 the frame is the last allocation on the
** thread's data stack when the hook sees it (_PyEval_Vector pushes it and
** calls the hook), so growing means bumping the top.  The frame then starts
** at the new code's first instruction: 3.11, 3.12 set prev_instr just
** before it; 3.13 sets instr_ptr (the next instruction) to it, and
** f_executable holds the new code (a strong reference, as f_code did).
*/
static inline int fj_frame_swap_code(PyThreadState *ts, fj_Frame *f, PyCodeObject *code)
{
    PyCodeObject *old = FJ_FRAME_CODE(f);
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
#if PY_VERSION_HEX >= 0x030D0000
    f->f_executable = Py_NewRef(code);
    f->stacktop = new_n;
    f->instr_ptr = _PyCode_CODE(code);
#else
    f->f_code = (PyCodeObject *)Py_NewRef(code);
    f->stacktop = new_n;
    f->prev_instr = _PyCode_CODE(code) - 1;
#endif
    Py_DECREF(old);
    return 0;
}

/*
** The thread's running-frame pointer: 3.11 and 3.12 keep it in the C frame
** (_PyCFrame) of the innermost eval loop, 3.13 dropped cframes and keeps it
** in the thread state.  And the recursion budget a Python frame takes one
** level of: 3.12 split recursion_remaining into py_recursion_remaining (a
** level per Python frame, _Py_EnterRecursivePy) and c_recursion_remaining.
*/
#if PY_VERSION_HEX >= 0x030D0000
#define FJ_TS_CURRENT_FRAME(ts) ((ts)->current_frame)
#else
#define FJ_TS_CURRENT_FRAME(ts) ((ts)->cframe->current_frame)
#endif
#if PY_VERSION_HEX >= 0x030C0000
#define FJ_TS_PY_RECURSION(ts) ((ts)->py_recursion_remaining)
#else
#define FJ_TS_PY_RECURSION(ts) ((ts)->recursion_remaining)
#endif
/*
** The frame running on 'ts' (borrowed; NULL if none).  When the hook is
** called, this is the frame that made the call (3.11, 3.12: the frame of the
** cframe that _PyEval_Vector runs under; 3.13: ts->current_frame; the new
** frame is not linked yet).
*/
static inline fj_Frame *fj_thread_current_frame(PyThreadState *ts)
{
    return FJ_TS_CURRENT_FRAME(ts);
}
/*
** Hides 'caller' (the frame running on 'ts') from the frame the hook is
** about to evaluate and from everything that frame runs: the eval loop
** links a new frame to the thread's current frame on entry (3.11: frame->
** previous; 3.12, 3.13: through the loop's entry frame, whose previous it
** is) and restores it on exit, so while 'caller' is hidden the new frame's
** f_back, sys._getframe, tracebacks and warnings see the caller's caller.
** Undone by fj_frame_unhide (same 'ts' and 'caller') after the evaluation
** returns; 'caller' must stay suspended in between.
*/
static inline void fj_frame_hide(PyThreadState *ts, fj_Frame *caller)
{
    FJ_TS_CURRENT_FRAME(ts) = caller->previous;
    FJ_TS_PY_RECURSION(ts)++; /* the hidden frame's level of the recursion limit */
}
static inline void fj_frame_unhide(PyThreadState *ts, fj_Frame *caller)
{
    FJ_TS_PY_RECURSION(ts)--;
    FJ_TS_CURRENT_FRAME(ts) = caller;
}
/*
** Moves the frame object of 'from' (a suspended frame; none: nothing to do)
** to 'to' (a frame not evaluated yet, with no frame object), so that a frame
** object taken from 'from' (sys._getframe(1) in a callee, a traceback, a
** debugger) now reads 'to': its f_lineno, f_lasti, f_locals and f_back follow
** 'to', and 'to' takes ownership of it when it is cleared (3.11-3.13:
** frame->frame_obj and frame_obj->f_frame point at each other; f_locals is
** rebuilt from 'to' on the next access: 3.11, 3.12 build the dict from the
** fast locals again once f_fast_as_locals is clear; 3.13's f_locals is a
** proxy reading the frame, and the dict PyEval_GetLocals keeps on the frame
** object, f_locals_cache, is dropped).
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
#if PY_VERSION_HEX >= 0x030D0000
    Py_CLEAR(fo->f_locals_cache);
#else
    fo->f_fast_as_locals = 0;
#endif
}
/* The bottom slot of the frame's value stack, and its capacity. */
static inline PyObject **fj_frame_stack_base(fj_Frame *f)
{
    return f->localsplus + FJ_FRAME_CODE(f)->co_nlocalsplus;
}
#define FJ_FRAME_STACK_SIZE(f) (FJ_FRAME_CODE(f)->co_stacksize)

/* Untracks the code's constant and name tuples that hold nothing the
** garbage collector tracks (what a collection would do to them, 3.11).
** 3.13 no longer exports _PyTuple_MaybeUntrack: the same test, with the
** exported untrack. */
#if PY_VERSION_HEX >= 0x030D0000
static inline void fj_tuple_maybe_untrack(PyObject *t)
{
    if (!PyTuple_CheckExact(t) || !_PyObject_GC_IS_TRACKED(t))
        return;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); i++) {
        PyObject *item = PyTuple_GET_ITEM(t, i);
        if (item == NULL || _PyObject_GC_MAY_BE_TRACKED(item))
            return;
    }
    PyObject_GC_UnTrack(t);
}
#define FJ_TUPLE_MAYBE_UNTRACK(t) fj_tuple_maybe_untrack(t)
#else
#define FJ_TUPLE_MAYBE_UNTRACK(t) _PyTuple_MaybeUntrack(t)
#endif
static inline void fj_code_untrack_tuples(PyCodeObject *co)
{
    FJ_TUPLE_MAYBE_UNTRACK(co->co_consts);
    FJ_TUPLE_MAYBE_UNTRACK(co->co_names);
    FJ_TUPLE_MAYBE_UNTRACK(co->co_localsplusnames);
}

/* True if dict 'd' stores its values in a split table (keys shared with
** other instances' __dict__; 3.11-3.13: ma_values is set; in 3.13 they may
** be the owning object's inline values). */
static inline int fj_dict_is_split(PyObject *d)
{
    return ((PyDictObject *)d)->ma_values != NULL;
}

/* Names and kinds of the fast-local slots (localsplus order).  The kind is
** CPython's bits as they are: 3.12 adds CO_FAST_HIDDEN (0x10) to the fast
** locals of a comprehension inlined in a module or class body (PEP 709),
** which have FJ_FAST_LOCAL too. */
#define FJ_FAST_LOCAL CO_FAST_LOCAL
#define FJ_FAST_CELL CO_FAST_CELL
#define FJ_FAST_FREE CO_FAST_FREE
/* Number of argument slots of 'co' (positional, keyword-only, *args, **kwargs). */
static inline int fj_code_nargs(PyCodeObject *co)
{
    return co->co_argcount + co->co_kwonlyargcount + !!(co->co_flags & CO_VARARGS) +
           !!(co->co_flags & CO_VARKEYWORDS);
}

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

/*
** Iterates dict 'd' as PyDict_Next does and also gives each key's hash as
** the dict stored it, without calling the key's __hash__: -1 when it is not
** known that way (3.13 does not export _PyDict_Next: there the hash is the
** cached one of an exact str, or the builtin hash of an exact int, float,
** bytes, bool or None, and -1 for any other key).
*/
static inline int fj_dict_next_hash(PyObject *d, Py_ssize_t *pos, PyObject **k, PyObject **v,
                                    Py_hash_t *h)
{
#if PY_VERSION_HEX >= 0x030D0000
    if (!PyDict_Next(d, pos, k, v))
        return 0;
    PyObject *key = *k;
    if (PyUnicode_CheckExact(key))
        *h = ((PyASCIIObject *)key)->hash;
    else if (PyLong_CheckExact(key) || PyFloat_CheckExact(key) || PyBytes_CheckExact(key) ||
             PyBool_Check(key) || key == Py_None)
        *h = PyObject_Hash(key);
    else
        *h = -1;
    if (*h == -1)
        PyErr_Clear();
    return 1;
#else
    return _PyDict_Next(d, pos, k, v, h);
#endif
}

/*
** Nonzero once thread 'ts' has used half of CPython's C recursion budget.
** 3.12+ counts every C-level entry of the eval loop against
** c_recursion_remaining (C_RECURSION_LIMIT, 1500 in 3.12; Py_C_RECURSION_LIMIT,
** 10000 in 3.13), and a PEP 523 hook makes each Python call such an entry:
** past the budget a recursion plain CPython survives raises RecursionError.
** 3.11 has no such budget (0).
*/
static inline int fj_c_recursion_deep(PyThreadState *ts)
{
#if PY_VERSION_HEX >= 0x030D0000
    return ts->c_recursion_remaining < Py_C_RECURSION_LIMIT / 2;
#elif PY_VERSION_HEX >= 0x030C0000
    return ts->c_recursion_remaining < C_RECURSION_LIMIT / 2;
#else
    (void)ts;
    return 0;
#endif
}

/* A new code object from its parts (PyCode_NewWithPosOnlyArgs; 3.12 renamed
   it PyUnstable_Code_NewWithPosOnlyArgs and deprecated the old name). */
#if PY_VERSION_HEX >= 0x030C0000
#define fj_code_new PyUnstable_Code_NewWithPosOnlyArgs
#else
#define fj_code_new PyCode_NewWithPosOnlyArgs
#endif

/* The referent of weak reference 'ref', borrowed (Py_None once it is dead).
** 3.13 deprecates PyWeakref_GET_OBJECT for PyWeakref_GetRef, which returns
** a new reference; with the GIL held and no code run in between, the
** referent keeps the reference it had, so the borrowed pointer stays valid
** as long as the caller runs no Python code. */
static inline PyObject *fj_weakref_object(PyObject *ref)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *o = NULL;
    if (PyWeakref_GetRef(ref, &o) <= 0) {
        PyErr_Clear();
        return Py_None;
    }
    Py_DECREF(o);
    return o;
#else
    return PyWeakref_GET_OBJECT(ref);
#endif
}

#endif /* FJ_SUPPORTED */
#endif /* FJ_COMPAT_H */
