/*
** runmode.h: run mode's thread-level switches (see runmode.c).
*/
#ifndef FJ_RUNMODE_H
#define FJ_RUNMODE_H
#include "compat.h"

/* Adds _tracer_switch and _tracer_release to the module. */
int fj_runmode_init(PyObject *module);
#endif
