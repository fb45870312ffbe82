/*
** evalframe.h: the PEP 523 frame-evaluation hook.
**
** Responsible for: the per-thread callback (None: off; False: run-only; a
** callable: compile), installing the hook while any thread has a callback
** and restoring the previous eval-frame function after, chaining to that
** previous function, the reentrancy guard (no frame is offered while our
** callback or guards run), running a cache entry's code for a frame, the
** _PyInterpreterFrame wrapper the callback receives, and the
** framejit._C.eval_frame module with exactly the public names torch's has.
**
** Not responsible for: what the cache holds (cache.c) or how code is
** compiled (the callback's business).
*/
#ifndef FJ_EVALFRAME_H
#define FJ_EVALFRAME_H

#include "compat.h"

#include "guards.h"

/*
** For a _PyInterpreterFrame wrapper handed to the callback: fills 'view'
** with the frame's inputs and '*code' (borrowed) with its code object.
** Returns 0, or -1 with an exception when 'w' is not a live wrapper.
*/
int fj_frame_wrapper_view(PyObject *w, fj_FrameView *view, PyCodeObject **code);

/*
** Sets this thread's callback to 'callback' (None, False or a callable,
** not checked) and returns the previous one (new reference; None when off).
*/
PyObject *fj_swap_callback(PyObject *callback);

/* framejit._C.SKIP_CODE (borrowed). */
PyObject *fj_skip_code_sentinel(void);
/* framejit._C.RUN_ONLY (borrowed). */
PyObject *fj_run_only_sentinel(void);
/* framejit._C.UNLESS_ARRAYS (borrowed). */
PyObject *fj_unless_arrays_sentinel(void);
/*
** 1 if an input of the fresh frame 'view' of 'co' (an argument, an item of
** *args or **kwargs, a free variable's contents) is a NumPy array or scalar,
** else 0.  Runs no program code; never fails.
*/
int fj_view_has_arrays(PyCodeObject *co, const fj_FrameView *view);

/*
** Roles of code objects framejit makes, seen by the hook: the break code of
** a split frame and the resume code it calls.  A resume function called by
** break code takes the break frame's place on the call stack (f_back,
** sys._getframe, tracebacks) and its references (docs/cpython-tests.md).
*/
/* FJ_CODE_ROLE_HANDLER: resume code entered at an exception handler; the
   frame object the exception's traceback holds stays the break frame's. */
enum { FJ_CODE_ROLE_BREAK = 1, FJ_CODE_ROLE_RESUME = 2, FJ_CODE_ROLE_HANDLER = 3 };
/* Marks the code object 'code' with 'role'.  0, or -1 with an exception. */
int fj_evalframe_mark_code(PyObject *code, int role);

/* framejit._C._graph_raised (borrowed): what compiled code calls when its
   graph raised (codegen.c), so the frame's own code reruns the call. */
PyObject *fj_graph_raised_fn(void);

/* Creates framejit._C.eval_frame and the frame-action sentinels. */
int fj_evalframe_init(PyObject *module);

#endif
