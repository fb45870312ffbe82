/*
** codegen.h: the code object that replaces a traced frame's code.
**
** Responsible for: emitting, through the bytecode builder, the instructions
** that load the graph's inputs from their sources, call the global
** __compiled_fn_N, unpack its output tuple and rebuild the frame's return
** value from graph outputs, constants and sources.
**
** Not responsible for: tracing (trace.c) or assembling bytes (bytecode.c).
*/
#ifndef FJ_CODEGEN_H
#define FJ_CODEGEN_H

#include "trace.h"

/*
** Collects, in first-use order, the graph-computed nodes (not placeholders)
** that the Var 'ret', the side effects and the free cells the trace set
** contain.  Returns a new list of fj_Node, NULL on error
** (fj_Unsupported when 'ret' holds something that cannot be rebuilt).
*/
PyObject *fj_codegen_outputs(PyObject *ret, fj_Tracer *tx);

/*
** True when the call of 'graph' in code replacing 'co' runs under a handler
** that makes the frame's own code run the call if the graph raises
** (evalframe.c, "A graph that raised"): 'co' is a function's code and the
** graph writes into no array or tensor (fj_graph_mutates).  A trace through
** a try or with block needs it: the graph's error then reaches the handler.
*/
int fj_codegen_can_rerun(PyCodeObject *co, PyObject *graph);

/*
** Builds the replacement for 'co': calls 'fn_name' (the compiled callable,
** loaded as a constant; or no graph when
** fn_name is NULL) with the graph inputs (tx->placeholders), unpacks
** 'outputs' (list of fj_Node, the graph's output order), replays the side
** effects of the trace (global stores, nonlocal assignments) and returns
** the rebuilt 'ret'.  Returns a new code object, NULL on
** error.
*/
PyObject *fj_codegen_graph_call(PyCodeObject *co, PyObject *fn_name, fj_Tracer *tx,
                                PyObject *outputs, PyObject *ret);

/*
** Builds the replacement for 'co' when the trace stopped at a graph break
** (tracer 'tx', stopped before plan->first).  Calls the graph 'fn_name' (or
** none), restores the locals in 'restore' (per-slot 0/1), rebuilds the
** break instruction's operands, runs the original instructions
** [plan->first, plan->last] from 'il', then for each resume point r calls
** resume_names[r] (a function loaded as a constant, or (code, free variable
** names) made into a closure) with the stack entries left (NULL slots skipped)
** and the locals named in resume_args[r], and returns its result.  The
** 'outputs' list must contain every graph node those values use (see
** fj_codegen_break_outputs).  Returns a new code object, NULL on error.
*/
#include "resume.h"
PyObject *fj_codegen_break(PyCodeObject *co, const fj_InstrList *il, fj_Tracer *tx,
                           PyObject *fn_name, PyObject *outputs, const fj_BreakPlan *plan,
                           const unsigned char *restore, PyObject *const *resume_names,
                           PyObject *const *resume_args);

/* The graph nodes the break code needs: in the stack and the restored locals. */
PyObject *fj_codegen_break_outputs(fj_Tracer *tx, const unsigned char *restore);

#endif
