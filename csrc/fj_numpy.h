/*
** fj_numpy.h: the one way C files of framejit include NumPy's C API.
** module.c defines FJ_NUMPY_IMPORT and calls import_array(); every other
** file shares the API table through PY_ARRAY_UNIQUE_SYMBOL.
*/
#ifndef FJ_NUMPY_H
#define FJ_NUMPY_H
#include "compat.h"
#define PY_ARRAY_UNIQUE_SYMBOL framejit_ARRAY_API
#ifndef FJ_NUMPY_IMPORT
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>
#endif
