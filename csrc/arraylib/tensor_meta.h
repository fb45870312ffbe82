/*
** tensor_meta.h: a torch tensor's metadata, read in C.
**
** Responsible for: fj_TensorMeta (dtype, device, requires_grad, dispatch
** keys, sizes, strides, storage offset of a strided torch tensor) and the
** reader that fills it.  The reader is a small C++ library built at run
** time against the installed torch's headers (framejit/_torch_meta.cpp,
** built and installed by framejit/torch_meta.py), so framejit's own build
** never needs torch and a guard reads a tensor without a Python attribute
** call.  Until a reader is installed, fj_tensor_meta answers "not read".
**
** Not responsible for: deciding what to guard (the tracer) or building the
** reader (torch_meta.py).
*/
#ifndef FJ_TENSOR_META_H
#define FJ_TENSOR_META_H

#include "compat.h"

#include <stdint.h>

/* The layout _torch_meta.cpp fills; bump FJ_TENSOR_META_ABI on any change. */
#define FJ_TENSOR_META_ABI 1
#define FJ_TENSOR_MAX_DIMS 64

typedef struct {
    int32_t dtype;          /* c10::ScalarType */
    int32_t device_type;    /* c10::DeviceType */
    int32_t device_index;   /* -1 when the device has none */
    int32_t requires_grad;
    int32_t ndim;
    int32_t reserved;
    uint64_t dispatch_keys; /* c10::DispatchKeySet's raw bits */
    int64_t storage_offset;
    int64_t sizes[FJ_TENSOR_MAX_DIMS];
    int64_t strides[FJ_TENSOR_MAX_DIMS];
} fj_TensorMeta;

/*
** Reads the tensor 'o' into 'out' with the installed reader: 1 when read;
** 0 when 'o' is not a tensor the reader can read without running Python
** code (not a torch.Tensor, sparse or nested, symbolic sizes, a Python
** tensor subclass with its own dispatch, more than FJ_TENSOR_MAX_DIMS
** dimensions) or no reader is installed; -1 with an exception set on error.
*/
int fj_tensor_meta(PyObject *o, fj_TensorMeta *out);

/* True when m's strides are the contiguous ones of its sizes (a size-1 dim's
   stride is free, as torch's is_contiguous has it). */
static inline int fj_tensor_meta_contiguous(const fj_TensorMeta *m)
{
    int64_t st = 1;
    for (int i = m->ndim - 1; i >= 0; i--) {
        if (m->strides[i] != st && m->sizes[i] != 1)
            return 0;
        st *= m->sizes[i];
    }
    return 1;
}

/* A tuple of the ints v[0..n) (sizes, strides): new reference, NULL on error. */
static inline PyObject *fj_int64_tuple(int n, const int64_t *v)
{
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t != NULL && i < n; i++) {
        PyObject *x = PyLong_FromLongLong(v[i]);
        if (x == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

/* 1 once a reader is installed. */
int fj_tensor_meta_ready(void);

/* Adds _torch_meta_install to framejit._C and tensor_meta (the reader's
   answer as a dict, for tests) to framejit._C._testing.  0 or -1. */
int fj_tensor_meta_init(PyObject *module, PyObject *testing);

#endif
