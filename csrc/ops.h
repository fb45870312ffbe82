/*
** ops.h: (placeholder until the ops subsystem lands).
*/
#ifndef FJ_OPS_H
#define FJ_OPS_H
#include "compat.h"

/* Adds this subsystem's names to framejit._C. Returns -1 on error. */
int fj_ops_init(PyObject *module);

#endif
