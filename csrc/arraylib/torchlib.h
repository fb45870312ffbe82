/*
** torchlib.h: torch as framejit's second array library (issue 19).
**
** Responsible for: knowing when torch is imported (without importing it);
** recognising tensors; the meta tensors ("fakes") that stand for tensors
** while tracing, so output metadata comes from torch's own meta kernels and
** never from running on data; the names of dtypes for guard texts; the
** global state torch's graphs depend on (grad mode, inference mode,
** autocast, default dtype, deterministic algorithms); which torch callables
** and tensor methods may become graph operations.
**
** Not responsible for: reading a tensor's metadata fast (tensor_meta.h),
** the guard leaves (guards.c), the tracer's decisions (trace_torch.c).
**
** Only CPU tensors are captured: every fake lives on the 'meta' device and
** the real device of every tensor in a graph is the CPU (inputs on another
** device are a graph break with that reason).
*/
#ifndef FJ_TORCHLIB_H
#define FJ_TORCHLIB_H

#include "compat.h"

#include <stdint.h>

/*
** 1 once torch is imported (completely) and its types are known; until
** then each call looks at sys.modules only when it changed.  Never raises,
** never imports.
*/
int fj_torch_ready(void);
/* True (after fj_torch_ready) for a torch.Tensor or any subclass. */
int fj_torch_is_tensor(PyObject *o);
/* True for an exact torch.Tensor or torch.nn.Parameter: what the graph takes. */
int fj_torch_is_plain_tensor(PyObject *o);
/* torch.Size (borrowed; NULL before fj_torch_ready). */
PyObject *fj_torch_size_type(void);
/* True for torch.Size and torch.device: called on constants, they fold. */
int fj_torch_is_value_type(PyObject *tp);
/* torch._VF.<name> (a module whose __getattr__ forwards to
   torch._C._VariableFunctions): the function, new ref; NULL (no exception)
   when 'mod' is not torch._VF or has no such function. */
PyObject *fj_torch_vf_attr(PyObject *mod, PyObject *name);
/* True for a torch.nn.Parameter (or subclass). */
int fj_torch_is_parameter(PyObject *o);
/* True for a torch.Size / dtype / device / layout object (values a graph may hold). */
int fj_torch_is_value(PyObject *o);
/* True for a torch.dtype or torch.layout: singletons, matched by identity. */
int fj_torch_is_singleton(PyObject *o);
/* True for an instance of torch.nn.Module (any subclass). */
int fj_torch_is_module(PyObject *o);
/* True when the module class's __setattr__ is torch.nn.Module's own. */
int fj_torch_module_setattr_is_torchs(PyTypeObject *tp);
/* FJ_TORCH_SEQUENTIAL / FJ_TORCH_MODULELIST for exact nn.Sequential /
   nn.ModuleList (iterated over their _modules), else 0. */
enum { FJ_TORCH_SEQUENTIAL = 1, FJ_TORCH_MODULELIST = 2 };
int fj_torch_module_container(PyObject *o);
/* NULL when no global module hook is registered (torch.nn.modules.module's
   _global_*_hooks are empty), else the name of a non-empty one (static). */
const char *fj_torch_global_hooks(void);
/* Borrowed: torch.Tensor (NULL before torch is ready). */
PyObject *fj_torch_tensor_type(void);
/* Borrowed: torch.device('cpu'), torch.nn.Parameter, torch.Tensor. */
PyObject *fj_torch_cpu_device(void);

/*
** A meta tensor standing for the tensor 't' (sizes, strides, dtype,
** requires_grad): new reference.  NULL with fj_Unsupported (via the
** caller's message) when 't' is not on the CPU: *why receives a static
** reason then, else NULL with an exception.
*/
PyObject *fj_torch_fake(PyObject *t, const char **why);
/* A new non-leaf tensor with the metadata of the meta tensor 'fake' (its
   clone, or a view when cloning would change the strides); NULL on error. */
PyObject *fj_torch_non_leaf(PyObject *fake);
/* The meta device (borrowed). */
PyObject *fj_torch_meta_device(void);

/*
** The tensor 't''s metadata read through torch's Python methods (when no C
** reader is installed, and for failure messages): fills 'm' (its dtype
** field -1) and puts t.dtype (a new reference) into *dtype.  The device is
** FJ_TORCH_CPU for the CPU, else -1.  1, or -1 with an exception.
*/
#include "tensor_meta.h"
#define FJ_TORCH_CPU 0 /* c10::DeviceType::CPU */
int fj_torch_meta_slow(PyObject *t, fj_TensorMeta *m, PyObject **dtype);
/* The tensor 't''s metadata through the C reader, else fj_torch_meta_slow
   (dispatch keys 0 then): 1, 0 when 't' is not read, -1 on error. */
int fj_torch_meta_read(PyObject *t, fj_TensorMeta *m);

/* "torch.float32" for a torch.dtype (new reference), NULL on error. */
PyObject *fj_torch_dtype_text(PyObject *dtype);

/*
** The global state as one value: (grad mode, inference mode, autocast on
** the CPU and its dtype, default dtype, deterministic algorithms).  Read by
** the C reader when installed and 'use_reader' (*fast = 1, the state
** packed into *bits), else through torch's functions (*fast = 0, a new
** tuple into *tuple).  0, or -1 with an exception.
*/
int fj_torch_global_state(int use_reader, int *fast, uint64_t *bits, PyObject **tuple);
/* Installs the reader's global-state function (torch_meta.py). */
void fj_torch_set_state_reader(int (*fn)(uint64_t *));
int fj_torch_state_reader_ready(void);

/*
** What a callable met while tracing is, for torch: FJ_TORCH_OP (a function
** of torch's namespaces computing tensors: torch.sin, torch.nn.functional.relu,
** torch.Tensor.add), FJ_TORCH_STATEFUL (torch code that changes or reads
** global state, RNG seeds, files: never captured, never folded), or 0
** (not torch's).
*/
enum { FJ_TORCH_OP = 1, FJ_TORCH_STATEFUL = 2, FJ_TORCH_STATE_READ = 3, FJ_TORCH_META = 4 };
/* FJ_TORCH_META: torch.numel(t), torch.is_floating_point(t), torch.is_tensor(v):
   metadata, computed on fakes as constants. */
/* FJ_TORCH_STATE_READ: reads only what GLOBAL_STATE pins (torch.is_grad_enabled,
   torch.is_autocast_enabled, torch.get_default_dtype ...): folded to a
   constant once the trace guards torch's global state. */
int fj_torch_callable_kind(PyObject *fn);
/* True for a Tensor method name that may be a graph operation (not item,
   tolist, backward, data_ptr, register_hook, requires_grad_ ...). */
int fj_torch_method_ok(PyObject *name, const char **why);
/* Tensor methods whose result is metadata, a constant under TENSOR_MATCH:
   size, dim, numel, stride, is_contiguous ... */
int fj_torch_method_is_meta(PyObject *name);
/* Tensor attributes that are constants under TENSOR_MATCH (shape, dtype,
   ndim, requires_grad, layout, is_leaf, device, is_cuda ...): 1; attributes
   that are tensors (T, mT, H, mH, real, imag): 2; else 0. */
int fj_torch_attr_kind(PyObject *name);

/* Adds the torch part's names to framejit._C (_torch_state_install). 0 or -1. */
int fj_torchlib_init(PyObject *module, PyObject *testing);

#endif
