/*
** graph.h: (placeholder until the graph subsystem lands).
*/
#ifndef FJ_GRAPH_H
#define FJ_GRAPH_H
#include "compat.h"

/* Adds this subsystem's names to framejit._C. Returns -1 on error. */
int fj_graph_init(PyObject *module);

#endif
