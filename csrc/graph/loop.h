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
/* The body graph of an fj_Loop (borrowed), or NULL when 'o' is not one. */
PyObject *fj_loop_body(PyObject *o);
/* Adds the Loop type (framejit._C.Loop).  -1 on error. */
int fj_loop_init(PyObject *module);
#endif
