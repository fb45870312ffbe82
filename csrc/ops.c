/*
** ops.c: (placeholder until the ops subsystem lands).
*/
#include "ops.h"

int fj_ops_init(PyObject *module)
{
    (void)module;
    return 0;
}
