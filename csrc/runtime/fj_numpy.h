/*
** fj_numpy.h: the one way C files of framejit include NumPy's C API.
** module.c defines FJ_NUMPY_IMPORT and the API table; every other file
** shares it through PY_ARRAY_UNIQUE_SYMBOL.
**
** The table is loaded lazily: importing framejit does not import NumPy (a
** program under `python -m framejit run` that never uses NumPy does not pay
** for its import).  Every entry point that can meet an array calls
** fj_numpy_ensure() first; the compile path calls fj_numpy_try() (load only
** if the program imported NumPy); the hook tests fj_numpy_loaded() (no array
** can exist before NumPy is imported, and the first compile after the
** program imports it loads the table).
*/
#ifndef FJ_NUMPY_H
#define FJ_NUMPY_H
#include "compat.h"
#define PY_ARRAY_UNIQUE_SYMBOL framejit_ARRAY_API
#ifndef FJ_NUMPY_IMPORT
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

/* 1 once the API table is loaded. */
#define fj_numpy_loaded() (PyArray_API != NULL)
/* Loads the API table, importing NumPy if needed.  0, or -1 with an exception. */
int fj_numpy_ensure(void);
/* Loads the API table if the program has imported NumPy (completely).
   1 if loaded, 0 if not; never raises. */
int fj_numpy_try(void);
#endif
