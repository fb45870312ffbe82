/*
** dynamic.h: automatic dynamic shapes, the per-code memory (docs/dynamic.md).
**
** Responsible for: what earlier compiles of a code object saw of its int
** and array inputs, and, on a recompile, which of them changed: those ints
** become symbolic and those array dims stop being guarded in the next trace
** (torch's automatic_dynamic_shapes).  The state is a C struct embedded in
** the code's ExtraState (cache.h), so it lives and dies with the code.
**
** Not responsible for: the symbols of a trace and the guards they need
** (trace_dims.c), mark_dynamic and dynamic=True/False (the Compiler's
** options, applied with this state by the tracer: trace.c).
*/
#ifndef FJ_DYNAMIC_H
#define FJ_DYNAMIC_H
#include "source.h"

typedef struct {
    PyObject *seen; /* strong dict or NULL: source text -> (fj_Source, int, or tuple of sizes) */
    PyObject *ints; /* strong set or NULL: source texts of ints now symbolic */
    PyObject *dims; /* strong dict or NULL: source text -> tuple of dims now dynamic */
} fj_DynState;

/* Remembers the int inputs and array shapes among 'inputs' (dict: source
   text -> Var), read through 'view'.  0, or -1 with an exception. */
int fj_dynamic_record(fj_DynState *ds, PyObject *inputs, const fj_FrameView *view);

/* A recompile: compares the inputs in 'view' with what was recorded and
   marks those that changed.  Appends one message (str) per change to
   'messages' (the 'dynamic' log channel).  0, or -1 with an exception. */
int fj_dynamic_update(fj_DynState *ds, const fj_FrameView *view, PyObject *messages);

/* Drops everything (the code's cache is reset or freed). */
void fj_dynamic_clear(fj_DynState *ds);
#endif
