/*
** bytecode.h: (placeholder until the bytecode subsystem lands).
*/
#ifndef FJ_BYTECODE_H
#define FJ_BYTECODE_H
#include "compat.h"

/* Adds this subsystem's names to framejit._C. Returns -1 on error. */
int fj_bytecode_init(PyObject *module);

#endif
