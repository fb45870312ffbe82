/*
** rearm.h: a one-shot timer that runs a function in the interpreter a
** little later.
**
** Responsible for: one background C thread (started on first use, not a
** Python thread: threading does not see it), which, FJ_REARM_DELAY_MS after
** fj_rearm_after() was called, schedules the function with
** Py_AddPendingCall (the main thread runs it at its next eval-breaker check,
** with the GIL).  Stopped at interpreter exit (atexit) and forgotten in a
** forked child.
**
** Not responsible for: what the function does (evalframe.c: putting the
** hook back on after a quiet tail, docs/cpython-tests.md "Quiet regions").
*/
#ifndef FJ_REARM_H
#define FJ_REARM_H
#include "compat.h"

#define FJ_REARM_DELAY_MS 10

/*
** Arms the timer: 'fn' runs (once, with the GIL, on the timer's thread)
** about FJ_REARM_DELAY_MS from now, unless it is already armed.  Never
** fails: when no thread can be started, 'fn' simply never runs.  Called
** with the GIL held.
*/
void fj_rearm_after(int (*fn)(void *));

/* Registers the exit and fork handlers.  0, or -1 with an exception. */
int fj_rearm_init(void);

#endif
