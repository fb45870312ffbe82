/*
** native_pool.h: reuse of large output buffers of the `native` backend
** (see native_pool.c).
*/
#ifndef FJ_NATIVE_POOL_H
#define FJ_NATIVE_POOL_H

#include "fj_numpy.h"

/* A new array like PyArray_NewFromDescr(&PyArray_Type, descr, nd, shape,
   NULL, NULL, flags, NULL) (steals descr); outputs of at least the pool's
   minimum size get their memory through the pool's NumPy memory handler. */
PyArrayObject *fjn_pool_new_array(PyArray_Descr *descr, int nd, npy_intp *shape, int flags);

/* native_pool(limit=None) -> dict: reads the pool's figures, sets its byte
   limit (0 disables the pool and frees what it holds). */
PyObject *fjn_pool_config(PyObject *mod, PyObject *args, PyObject *kw);

int fjn_pool_init(void);

#endif
