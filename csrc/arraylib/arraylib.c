/*
** arraylib.c: the rows of NumPy and torch.  See arraylib.h.
*/
#include "arraylib.h"

#include "fj_numpy.h"
#include "guards.h"
#include "torchlib.h"

static int numpy_ready(void)
{
    return fj_numpy_loaded() || fj_numpy_try();
}

static int numpy_is_array(PyObject *o)
{
    return fj_numpy_loaded() && (PyArray_Check(o) || PyArray_IsScalar(o, Generic));
}

const fj_ArrayLib fj_numpy_lib = {
    .name = "numpy",
    .ready = numpy_ready,
    .is_array = numpy_is_array,
    .add_tensor_match = fj_guard_add_tensor_match,
    .add_global_state = fj_guard_add_global_state,
};

const fj_ArrayLib fj_torch_lib = {
    .name = "torch",
    .ready = fj_torch_ready,
    .is_array = fj_torch_is_tensor,
    .add_tensor_match = fj_guard_add_torch_match,
    .add_global_state = fj_guard_add_torch_state,
};

static const fj_ArrayLib *const libs[] = {&fj_numpy_lib, &fj_torch_lib};

const fj_ArrayLib *fj_arraylib_of(PyObject *o)
{
    /* NumPy first: its check is a type compare once its table is loaded */
    if (fj_numpy_loaded() && (PyArray_Check(o) || PyArray_IsScalar(o, Generic)))
        return &fj_numpy_lib;
    if (fj_torch_is_tensor(o))
        return &fj_torch_lib;
    return NULL;
}

int fj_arraylib_any_ready(void)
{
    int any = 0;
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++)
        any |= libs[i]->ready(); /* each notes its import on its own */
    return any;
}
