/*
** cache.h: the per-code-object cache of guarded code.
**
** Responsible for: the ExtraState stored in a code object's extra slot (the
** list of cache entries, most recently hit first; the per-code frame_state
** dict; the frame-execution strategy: default, skip, run-only), the
** _CacheEntry type (guard manager, code, compile id), lookup with
** move-to-front, and freeing all of it with the code object.
**
** Not responsible for: running code (evalframe.c) or evaluating a guard
** (guards.c); lookup calls fj_guards_check on each entry.
*/
#ifndef FJ_CACHE_H
#define FJ_CACHE_H

#include "dynamic.h"
#include "guards.h"

typedef enum {
    FJ_STRATEGY_DEFAULT = 0, /* offer the frame to the callback on a miss */
    FJ_STRATEGY_SKIP = 1,    /* never offer again; run as it is */
    FJ_STRATEGY_RUN_ONLY = 2, /* use cached entries; a miss runs as it is */
    FJ_STRATEGY_UNLESS_ARRAYS = 3 /* run as it is unless an input is an array
                                     (fj_view_has_arrays); then as DEFAULT */
} fj_Strategy;

typedef struct {
    PyObject_HEAD
    PyObject *guard_manager; /* strong: a RootGuardManager */
    PyObject *code;          /* strong: the code object to run on a hit; when own_code,
                                a weak reference to the cache's code object instead
                                (a strong one would be a cycle through co_extra) */
    int own_code;            /* the entry runs the frame's own code */
    PyObject *owner;         /* strong: the callback that made the entry (its backend) */
    PyObject *compile_id;    /* strong: str such as "0/1", or None */
} fj_CacheEntry;

typedef struct {
    fj_CacheEntry **entries; /* strong refs, entries[0] is the most recent hit */
    Py_ssize_t n;
    Py_ssize_t cap;
    PyObject *frame_state; /* strong: per-code dict handed to the callback */
    fj_Strategy strategy;
    /* the compile driver's counters, C values (ints in frame_state would
       hold shared small ints: sys.getrefcount(1) would change) */
    long frame_id;  /* compile-id frame number + 1; 0 until the first compile */
    long compiles;  /* compiles of this code so far */
    int before_numpy; /* UNLESS_ARRAYS given before NumPy was loaded, untraced:
                         offered once more when it is (evalframe.c) */
    fj_DynState dyn;  /* automatic dynamic: what earlier compiles saw (dynamic.h) */
} fj_ExtraState;

/* The code's ExtraState, or NULL when it has none. Borrowed. */
fj_ExtraState *fj_cache_get(PyCodeObject *co);

/* The code's ExtraState, created empty if missing. Borrowed; NULL on error. */
fj_ExtraState *fj_cache_get_or_create(PyCodeObject *co);

/* Why each entry of 'es' misses the frame 'view' (a recompile's
   diagnosis): a new list of (compile_id, text of the first failing guard),
   "(passes now)" or "(guard raised ...)".  NULL on error. */
PyObject *fj_cache_guard_failures(fj_ExtraState *es, const fj_FrameView *view);

/* Drops the code's ExtraState (entries, frame state, strategy). */
void fj_cache_reset(PyCodeObject *co);

/*
** Walks the entries of 'es' running each guard tree on 'view'.  On a hit,
** moves the entry to the front and returns it (a new reference).  Returns NULL with no exception on a
** miss, and NULL with an exception set when a guard raised (after calling
** the guard error hook, if one is set).
*/
fj_CacheEntry *fj_cache_lookup(fj_ExtraState *es, PyCodeObject *co, const fj_FrameView *view,
                               PyObject *callback);

/*
** Entries are used only under the callback that made them, or one equal to
** it by this test (compiler.c: two compilers with the same backend and
** options; other callbacks share everything); run-only (callback False)
** uses any entry.  Set by the compiler; NULL: identity.
*/
extern int (*fj_cache_owner_eq)(PyObject *owner, PyObject *callback);

/*
** Puts a new entry at the front of the cache of 'co'.  Returns the entry
** (borrowed) or NULL on error.
*/
fj_CacheEntry *fj_cache_add(PyCodeObject *co, PyObject *guard_manager, PyObject *code,
                            PyObject *compile_id, PyObject *owner);

/* The guard error hook (borrowed, may be NULL), and its setter. */
extern PyObject *fj_guard_error_hook;

/*
** Builds the dict of a frame's named locals from 'view' and 'co' (cells
** unboxed).  Returns a new reference, NULL on error.
*/
PyObject *fj_view_locals_dict(PyCodeObject *co, const fj_FrameView *view, int fresh);

/* Adds _CacheEntry to 'module'. Returns -1 on error. */
int fj_cache_init(PyObject *module);

/* The _CacheEntry type. Borrowed. */
extern PyTypeObject *fj_CacheEntry_Type;

#endif
