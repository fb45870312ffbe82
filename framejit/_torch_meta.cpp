// _torch_meta.cpp: framejit's reader of torch tensors, built at run time
// against the installed torch (framejit/torch_meta.py) and installed into
// framejit._C (csrc/arraylib/tensor_meta.h, whose fj_TensorMeta this file
// fills: keep the two layouts and FJ_TENSOR_META_ABI in step).
//
// It reads a tensor's TensorImpl directly, so a guard pays no Python
// attribute call.  It answers 0 ("not read") for anything whose metadata
// only Python code or a symbolic shape could give: not a torch.Tensor, a
// Python tensor subclass with its own dispatch, a layout other than
// strided, nested, symbolic sizes, too many dimensions, or metadata its
// TensorImpl refuses (an exception, which never crosses into C).
#include <Python.h>

#include <cstdint>

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/TensorImpl.h>
#include <torch/csrc/autograd/python_variable.h>

#define FJ_TENSOR_META_ABI 1
#define FJ_TENSOR_MAX_DIMS 64

extern "C" {

typedef struct {
    int32_t dtype;
    int32_t device_type;
    int32_t device_index;
    int32_t requires_grad;
    int32_t ndim;
    int32_t reserved;
    uint64_t dispatch_keys;
    int64_t storage_offset;
    int64_t sizes[FJ_TENSOR_MAX_DIMS];
    int64_t strides[FJ_TENSOR_MAX_DIMS];
} fj_TensorMeta;

void fj_torch_meta_abi(int64_t *abi, int64_t *size)
{
    *abi = FJ_TENSOR_META_ABI;
    *size = (int64_t)sizeof(fj_TensorMeta);
}

int fj_torch_meta_read(PyObject *o, fj_TensorMeta *out)
{
    try {
        if (!THPVariable_Check(o))
            return 0;
        const at::Tensor &t = THPVariable_Unpack(o);
        if (!t.defined())
            return 0;
        c10::TensorImpl *impl = t.unsafeGetTensorImpl();
        if (impl->is_python_dispatch() || impl->is_nested() || impl->layout() != c10::kStrided ||
            impl->has_symbolic_sizes_strides())
            return 0;
        int64_t nd = impl->dim();
        if (nd > FJ_TENSOR_MAX_DIMS)
            return 0;
        out->dtype = (int32_t)impl->dtype().toScalarType();
        c10::Device dev = impl->device();
        out->device_type = (int32_t)dev.type();
        out->device_index = (int32_t)dev.index();
        out->requires_grad = t.requires_grad() ? 1 : 0;
        out->ndim = (int32_t)nd;
        out->reserved = 0;
        out->dispatch_keys = impl->key_set().raw_repr();
        out->storage_offset = impl->storage_offset();
        c10::IntArrayRef sizes = impl->sizes(), strides = impl->strides();
        for (int64_t i = 0; i < nd; i++) {
            out->sizes[i] = sizes[i];
            out->strides[i] = strides[i];
        }
        return 1;
    }
    catch (...) {
        return 0; /* a TensorImpl whose sizes or strides its own code refuses: not read */
    }
}

// The global state a torch graph depends on, packed (csrc/arraylib/torchlib.h:
// the same facts its fallback reads through torch's Python functions).
int fj_torch_global_state(uint64_t *out)
{
    try {
        uint64_t s = 0;
        s |= c10::GradMode::is_enabled() ? 1u : 0u;
        s |= (uint64_t)(c10::InferenceMode::is_enabled() ? 1 : 0) << 1;
        s |= (uint64_t)(at::autocast::is_autocast_enabled(at::kCPU) ? 1 : 0) << 2;
        s |= (uint64_t)(uint8_t)at::autocast::get_autocast_dtype(at::kCPU) << 8;
        s |= (uint64_t)(uint8_t)c10::typeMetaToScalarType(c10::get_default_dtype()) << 16;
        s |= (uint64_t)(at::globalContext().deterministicAlgorithms() ? 1 : 0) << 24;
        s |= (uint64_t)(at::globalContext().deterministicAlgorithmsWarnOnly() ? 1 : 0) << 25;
        *out = s;
        return 0;
    }
    catch (...) {
        return -1;
    }
}

}  // extern "C"
