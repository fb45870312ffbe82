/*
** loop.h: a captured loop (docs/loops.md).
**
** Responsible for: the fj_Loop object that is a loop node's target: the
** body graph traced once, and running it (the eager backend's loop, and
** the native backend's until it compiles loops): for i in range(start,
** stop, step), the body graph on (i, the carried state, the lifted values),
** its outputs the next state.  A loop node's value is the final state as a
** tuple; loop_item nodes read its entries.
**
** Not responsible for: deciding which loops are captured, tracing the
** body (trace.c, "Captured loops"), or the graph itself (graph.c).
**
** Ownership: an fj_Loop owns its body graph and its tuple of carried slot
** indices.
*/
#ifndef FJ_LOOP_H
#define FJ_LOOP_H
#include "graph.h"

/*
** A new fj_Loop running 'body' (a finished graph, not stolen) whose
** placeholders are, in order: the induction variable, one per entry of
** 'carried' (a tuple of ints: the state slots whose value the body reads),
** then 'nlifted' values of the enclosing graph; its outputs are the 'nstate'
** state slots.  Called as loop(start, stop, step, *state, *lifted) it
** returns the final state (a tuple of nstate values; a slot never set is
** None).  New reference, NULL on error.
*/
PyObject *fj_loop_new(PyObject *body, PyObject *carried, Py_ssize_t nstate, Py_ssize_t nlifted);
/*
** A captured while loop (trace_loops.c): as fj_loop_new, called with one more
** argument, the loop test's first value; the body has one more output, the
** test's value after the iteration.  It runs no iteration when the first
** value's truth is neg0, and stops after the iteration whose test's truth is
** negs (range(start, stop) only counts iterations: stop is out of reach).
*/
PyObject *fj_loop_new_while(PyObject *body, PyObject *carried, Py_ssize_t nstate, Py_ssize_t nlifted, int neg0,
                            int negs);
/*
** A compound test's exit (`while a and b:`, trace_loops.c): the callable of
** a loop_exit node (fj_loop_exit_row) in a while loop's body, called as
** exit(value, leave, previous exit or None).  Where the value's truth is
** 'leave' the iteration ends there, the loop with it, its state the one the
** iteration began with (the body has stored and set nothing before its
** exits); else it returns True (the body's last output is its last exit).
** Borrowed; NULL before fj_loop_init.
*/
PyObject *fj_loop_exit_callable(void);
/* The loop_pick nodes' callable: pick(flag, a, b) is a when flag, else b
   (a for loop's return, trace_loops.c).  Borrowed; NULL before fj_loop_init. */
PyObject *fj_loop_pick_callable(void);
/* 1 when 'o' is a while loop's fj_Loop (*neg0, *negs its tests' polarities), else 0. */
int fj_loop_while(PyObject *o, int *neg0, int *negs);
/* The body graph of an fj_Loop (borrowed), or NULL when 'o' is not one. */
PyObject *fj_loop_body(PyObject *o);
/* Adds the Loop type (framejit._C.Loop).  -1 on error. */
int fj_loop_init(PyObject *module);
#endif
