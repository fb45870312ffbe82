/*
** torch_infer.h: the output metadata of torch's common operations, in C.
**
** Responsible for: the result fake (a meta tensor with the result's dtype,
** sizes, strides and requires_grad, a leaf exactly when it does not
** require grad) of the operations models spend their trace time on:
** elementwise arithmetic and activations with broadcasting, comparisons,
** sum and mean, softmax and log_softmax, matmul, linear, conv2d, batch
** and layer norm, adaptive average pooling, tril/triu and masked_fill.
** A rule answers only where it is exact: every tensor operand a meta fake
** in canonical contiguous layout with plain dispatch keys, dtypes in the
** rule's set, no empty tensor, no out=, no in-place form, no autocast or inference mode.
** Anything else is "no rule", and the caller asks torch's meta kernels,
** which also raise torch's own errors: a rule never decides an error.
**
** Why: most of torch's meta kernels are Python decompositions costing
** 50 us to 3 ms a call (a layer_norm 0.9 ms, add 0.2 ms); a rule costs a
** few microseconds, most of it making the result's meta tensor
** (docs/torch.md, "Output metadata").  tests/test_torch_infer.py checks
** every rule against torch's meta kernels and against a real CPU run.
**
** Also here: the fakes made from the C reader's metadata without
** torch's Python attribute calls (below).
**
** Not responsible for: the meta cache and the fallback (trace_torch.c),
** reading tensors (tensor_meta.h: no rule answers until the reader is
** installed).
*/
#ifndef FJ_TORCH_INFER_H
#define FJ_TORCH_INFER_H

#include "compat.h"
#include "ops.h"

/*
** The result fake of op/target called on the fakes 'fargs' (a tuple; a
** method's self first) and 'fkw' (a dict or NULL): a new reference; NULL
** with no exception when no rule applies; NULL with an exception on error.
*/
PyObject *fj_torch_infer(const fj_OpDef *op, PyObject *target, PyObject *fargs, PyObject *fkw);

/* 1 when op/target on these fakes is an elementwise rule's op (activations,
   arithmetic, comparisons with broadcasting; no in-place form, no out=):
   its result has the broadcast shape of its operands and it fails for no
   size that broadcasts (automatic dynamic carries dynamic dims through
   it).  0 otherwise, -1 on error. */
int fj_torch_is_elementwise(const fj_OpDef *op, PyObject *target, PyObject *fargs, PyObject *fkw);

/*
** Shape rules of torch ops for symbolic sizes (trace_dims.c fj_dims_torch,
** docs/dynamic.md): the kind of size relation op/target has between its
** operands and its result (FJ_TSH_NONE: not modelled), and in *params its
** parameter names as Rule's (NULL: the sizes are positional varargs after
** the tensor, as x.view(n, -1), torch.zeros(n, 3)).  Found by the
** callable's identity (torch and torch.nn.functional) or a Tensor
** method's name.  fj_torch_bind: binds args (a tuple) and kw (a dict or
** NULL) to params' slots (FJ_TORCH_MAXP of them): 1, or 0 when they do
** not bind.
*/
enum {
    FJ_TSH_NONE = 0,
    FJ_TSH_SAME,        /* the input's sizes (activations, softmax, cumsum, clone, casts) */
    FJ_TSH_MASKED_FILL, /* self's sizes; the mask broadcasts to them */
    FJ_TSH_BROADCAST,   /* the tensor operands' broadcast sizes (where, maximum, pow, &, //...) */
    FJ_TSH_REDUCE,      /* dims reduced: dropped, or fixed 1s with keepdim */
    FJ_TSH_MATMUL,      /* a @ b, b 2-d: a's leading dims and b's columns, inner sizes equal */
    FJ_TSH_LINEAR,      /* F.linear: the input's leading dims, the weight's rows */
    FJ_TSH_CONV,        /* batched conv: the batch dim carried, the rest fixed */
    FJ_TSH_POOL,        /* pooling: the leading (batch, channel) dims carried, the rest fixed */
    FJ_TSH_BATCH_NORM,  /* the input's sizes; channels (dim 1) fixed */
    FJ_TSH_LAYER_NORM,  /* the input's sizes; the normalized trailing dims fixed */
    FJ_TSH_EMBEDDING,   /* the indices' sizes, then the weight's columns */
    FJ_TSH_VIEW,        /* view / reshape to a shape of ints and the tensor's own symbols */
    FJ_TSH_CREATE,      /* torch.zeros / ones / empty / rand / randn / full of a shape */
    FJ_TSH_NEW,         /* t.new_zeros / new_ones / new_empty of a shape */
    FJ_TSH_ARANGE,      /* torch.arange(n) */
    FJ_TSH_TRANSPOSE,   /* two dims swapped */
    FJ_TSH_T,           /* t(), .T: dims reversed */
    FJ_TSH_MT,          /* .mT: the last two swapped */
    FJ_TSH_PERMUTE,     /* dims permuted */
    FJ_TSH_UNSQUEEZE,   /* a fixed 1 inserted */
    FJ_TSH_SQUEEZE,     /* fixed 1s removed (a symbol is >= 2: never) */
    FJ_TSH_FLATTEN,     /* a run of dims collapsed (fixed, or one symbol among 1s) */
    FJ_TSH_CAT,         /* torch.cat along a dim */
    FJ_TSH_STACK        /* torch.stack along a new dim */
};
#define FJ_TORCH_MAXP 32
/* 1 when op/target on the fakes 'fargs' may raise from its operands' values
   when the graph runs (an index out of range: F.embedding, index_select,
   gather...; a singular matrix: linalg.inv; an integer // or % by zero). */
int fj_torch_may_raise_on_data(const fj_OpDef *op, PyObject *target, PyObject *fargs);
int fj_torch_shape_rule(const fj_OpDef *op, PyObject *target, const char **params);
int fj_torch_bind(const char *params, PyObject *args, PyObject *kw, PyObject **slots);

/*
** Fast fakes, from the C reader (each NULL with no exception when it
** cannot answer, and the caller takes torchlib.h's slower path):
** fj_torch_fast_fake: the fake of a CPU tensor input (fj_torch_fake's
** answer); fj_torch_fresh_fake: a fresh copy of a cached fake, a leaf when
** it does not require grad, else a non-leaf (a view of a non-leaf when it
** was a view in a non-contiguous layout; a contiguous one comes back as a
** clone, as torch's clone path gave it);
** fj_torch_fast_sig: a bytes key of a fake's metadata for the meta cache
** (dtype, device, sizes, strides, dispatch keys, requires_grad, is_leaf,
** is a view).  fj_torch_dtype_of: the torch.dtype of a c10::ScalarType
** code (borrowed), NULL when not known.
*/
PyObject *fj_torch_fast_fake(PyObject *t);
PyObject *fj_torch_fresh_fake(PyObject *fake);
PyObject *fj_torch_fast_sig(PyObject *t);
PyObject *fj_torch_dtype_of(int32_t st);

/* Adds torch_infer(target, args, kwargs=None) to framejit._C._testing:
   the rule's answer, None when no rule applies (target a callable, a
   Tensor method's name, or operator.add/lt/neg/matmul ...).  0 or -1. */
int fj_torch_infer_init(PyObject *testing);

#endif
