/*
** bytecode.c: (placeholder until the bytecode subsystem lands).
*/
#include "bytecode.h"

int fj_bytecode_init(PyObject *module)
{
    (void)module;
    return 0;
}
