/*
** compiler.h: framejit._C.Compiler, the eval-frame callback that compiles.
** See compiler.c for what it is responsible for.
*/
#ifndef FJ_COMPILER_H
#define FJ_COMPILER_H
#include "compat.h"

/* Adds Compiler and _reset_state to framejit._C. Returns -1 on error. */
int fj_compiler_init(PyObject *module);

#endif
