/*
** torch_infer.c: output metadata of torch's common operations.  See
** torch_infer.h.
**
** Every rule reads its tensor operands with the C reader, accepts them
** only in the layout where the result's layout is known without asking
** torch (canonical contiguous strides, plain dispatch keys, a dtype in
** the rule's set), computes the result's sizes, dtype and requires_grad,
** and makes the result's meta tensor with torch.empty (and a clone when
** it requires grad, so it is no leaf, as an op's result is not).
*/
#include "torch_infer.h"

#include "tensor_meta.h"
#include "torchlib.h"

#include <string.h>

/* c10::ScalarType codes */
enum { ST_BYTE = 0, ST_CHAR, ST_SHORT, ST_INT, ST_LONG, ST_HALF, ST_FLOAT, ST_DOUBLE, ST_BOOL = 11, ST_BFLOAT16 = 15 };
#define ST_MAX 32

enum {
    K_UNARY = 1,      /* x -> same sizes and dtype (float dtypes) */
    K_BINARY,         /* broadcasting arithmetic with Python scalars */
    K_CMP,            /* broadcasting comparison: bool, no grad */
    K_MASKED_FILL,    /* self.masked_fill(mask, scalar) */
    K_MATMUL,         /* both operands at least 2-d */
    K_REDUCE,         /* sum / mean over dims, keepdim */
    K_SOFTMAX,        /* softmax / log_softmax along an int dim */
    K_TRI,            /* tril / triu */
    K_LINEAR,         /* F.linear */
    K_CONV2D,         /* F.conv2d, 4-d input */
    K_BATCH_NORM,     /* F.batch_norm */
    K_LAYER_NORM,     /* F.layer_norm */
    K_ADAPTIVE_AVG2D, /* F.adaptive_avg_pool2d */
    K_MHA,            /* F.multi_head_attention_forward, packed projections, no masks */
};
/* K_UNARY / K_BINARY variants */
enum { S_PLAIN = 0, S_INPLACE_ARG, S_GELU, S_ADD, S_SUB, S_MUL, S_DIV, S_POW };

typedef struct {
    const char *where; /* "torch", "F" (torch.nn.functional) or "T" (a Tensor method) */
    const char *name;
    int kind, sub;
    const char *params; /* parameter names in order; keywords must be among them; a name
                           starting with '*' (and every one after it) is keyword-only */
} Rule;

#define UN(n) {"torch", n, K_UNARY, S_PLAIN, "input"}, {"T", n, K_UNARY, S_PLAIN, "self"}
#define BIN(n, s) {"torch", n, K_BINARY, s, "input,other"}, {"T", n, K_BINARY, s, "self,other"}
#define CMPR(n) {"torch", n, K_CMP, 0, "input,other"}, {"T", n, K_CMP, 0, "self,other"}

static const Rule rules[] = {
    UN("relu"), UN("sigmoid"), UN("tanh"), UN("sin"), UN("cos"), UN("exp"), UN("log"), UN("sqrt"),
    UN("rsqrt"), UN("neg"), UN("abs"), UN("erf"),
    {"F", "relu", K_UNARY, S_INPLACE_ARG, "input,inplace"},
    {"F", "silu", K_UNARY, S_INPLACE_ARG, "input,inplace"},
    {"F", "gelu", K_UNARY, S_GELU, "input,*approximate"},
    {"F", "sigmoid", K_UNARY, S_PLAIN, "input"},
    {"F", "tanh", K_UNARY, S_PLAIN, "input"},
    BIN("add", S_ADD), BIN("sub", S_SUB), BIN("mul", S_MUL), BIN("div", S_DIV),
    CMPR("eq"), CMPR("ne"), CMPR("lt"), CMPR("le"), CMPR("gt"), CMPR("ge"),
    {"torch", "masked_fill", K_MASKED_FILL, 0, "input,mask,value"},
    {"T", "masked_fill", K_MASKED_FILL, 0, "self,mask,value"},
    {"torch", "matmul", K_MATMUL, 0, "input,other"},
    {"T", "matmul", K_MATMUL, 0, "self,other"},
    {"torch", "sum", K_REDUCE, 0, "input,dim,keepdim"},
    {"T", "sum", K_REDUCE, 0, "self,dim,keepdim"},
    {"torch", "mean", K_REDUCE, 0, "input,dim,keepdim"},
    {"T", "mean", K_REDUCE, 0, "self,dim,keepdim"},
    {"torch", "softmax", K_SOFTMAX, 0, "input,dim,*dtype"},
    {"torch", "log_softmax", K_SOFTMAX, 0, "input,dim,*dtype"},
    {"T", "softmax", K_SOFTMAX, 0, "self,dim,*dtype"},
    {"T", "log_softmax", K_SOFTMAX, 0, "self,dim,*dtype"},
    {"F", "softmax", K_SOFTMAX, 0, "input,dim,_stacklevel,dtype"},
    {"F", "log_softmax", K_SOFTMAX, 0, "input,dim,_stacklevel,dtype"},
    {"torch", "tril", K_TRI, 0, "input,diagonal"},
    {"torch", "triu", K_TRI, 0, "input,diagonal"},
    {"T", "tril", K_TRI, 0, "self,diagonal"},
    {"T", "triu", K_TRI, 0, "self,diagonal"},
    {"F", "linear", K_LINEAR, 0, "input,weight,bias"},
    {"F", "conv2d", K_CONV2D, 0, "input,weight,bias,stride,padding,dilation,groups"},
    {"F", "batch_norm", K_BATCH_NORM, 0, "input,running_mean,running_var,weight,bias,training,momentum,eps"},
    {"F", "layer_norm", K_LAYER_NORM, 0, "input,normalized_shape,weight,bias,eps"},
    {"F", "adaptive_avg_pool2d", K_ADAPTIVE_AVG2D, 0, "input,output_size"},
    {"F", "multi_head_attention_forward", K_MHA, 0,
     "query,key,value,embed_dim_to_check,num_heads,in_proj_weight,in_proj_bias,bias_k,bias_v,add_zero_attn,"
     "dropout_p,out_proj_weight,out_proj_bias,training,key_padding_mask,need_weights,attn_mask,"
     "use_separate_proj_weight,q_proj_weight,k_proj_weight,v_proj_weight,static_k,static_v,"
     "average_attn_weights,is_causal"},
};
#define NRULES ((Py_ssize_t)(sizeof(rules) / sizeof(rules[0])))

/* The operator rows' rules (the tracer meets x + y as ops.c's BINOP row). */
static const Rule op_add = {NULL, "add", K_BINARY, S_ADD, "a,b"}, op_sub = {NULL, "sub", K_BINARY, S_SUB, "a,b"},
                  op_mul = {NULL, "mul", K_BINARY, S_MUL, "a,b"}, op_div = {NULL, "div", K_BINARY, S_DIV, "a,b"},
                  op_pow = {NULL, "pow", K_BINARY, S_POW, "a,b"}, op_matmul = {NULL, "matmul", K_MATMUL, 0, "a,b"},
                  op_cmp = {NULL, "cmp", K_CMP, 0, "a,b"}, op_neg = {NULL, "neg", K_UNARY, S_PLAIN, "a"};

/*
** Shape rules (symbolic sizes, trace_dims.c's fj_dims_torch): which ops
** carry a dynamic dim through, by the kind of relation between their
** operands' sizes and their result's.  A separate table: these rules give
** no fakes, and an op here may have no output rule above.
*/
typedef struct {
    const char *where, *name;
    int kind;
    const char *params; /* as Rule's; NULL: positional sizes after the tensor (varargs) */
} ShapeRule;

#define SH2(n, k, p) {"torch", n, k, "input," p}, {"T", n, k, "self," p}
static const ShapeRule shape_rules[] = {
    SH2("clone", FJ_TSH_SAME, "*memory_format"),
    {"T", "contiguous", FJ_TSH_SAME, "self,memory_format"},
    SH2("detach", FJ_TSH_SAME, ""),
    {"T", "float", FJ_TSH_SAME, "self"}, {"T", "double", FJ_TSH_SAME, "self"},
    {"T", "half", FJ_TSH_SAME, "self"}, {"T", "bfloat16", FJ_TSH_SAME, "self"},
    {"T", "long", FJ_TSH_SAME, "self"}, {"T", "int", FJ_TSH_SAME, "self"},
    {"T", "bool", FJ_TSH_SAME, "self"},
    SH2("cumsum", FJ_TSH_SAME, "dim,*dtype"), SH2("cumprod", FJ_TSH_SAME, "dim,*dtype"),
    SH2("softmax", FJ_TSH_SAME, "dim,*dtype"), SH2("log_softmax", FJ_TSH_SAME, "dim,*dtype"),
    {"F", "softmax", FJ_TSH_SAME, "input,dim,_stacklevel,dtype"},
    {"F", "log_softmax", FJ_TSH_SAME, "input,dim,_stacklevel,dtype"},
    SH2("tril", FJ_TSH_SAME, "diagonal"), SH2("triu", FJ_TSH_SAME, "diagonal"),
    SH2("clamp", FJ_TSH_SAME, "min,max"),
    {"F", "normalize", FJ_TSH_SAME, "input,p,dim,eps"},
    {"F", "dropout", FJ_TSH_SAME, "input,p,training,inplace"},
    {"F", "leaky_relu", FJ_TSH_SAME, "input,negative_slope,inplace"},
    {"F", "elu", FJ_TSH_SAME, "input,alpha,inplace"},
    {"F", "softplus", FJ_TSH_SAME, "input,beta,threshold"},
    {"F", "hardtanh", FJ_TSH_SAME, "input,min_val,max_val,inplace"},
    SH2("masked_fill", FJ_TSH_MASKED_FILL, "mask,value"),
    /* elementwise ops without an output rule of their own: the input's sizes */
    SH2("exp2", FJ_TSH_SAME, ""), SH2("expm1", FJ_TSH_SAME, ""), SH2("log1p", FJ_TSH_SAME, ""),
    SH2("log2", FJ_TSH_SAME, ""), SH2("log10", FJ_TSH_SAME, ""), SH2("square", FJ_TSH_SAME, ""),
    SH2("reciprocal", FJ_TSH_SAME, ""), SH2("sign", FJ_TSH_SAME, ""), SH2("floor", FJ_TSH_SAME, ""),
    SH2("ceil", FJ_TSH_SAME, ""), SH2("round", FJ_TSH_SAME, "*decimals"), SH2("trunc", FJ_TSH_SAME, ""),
    SH2("frac", FJ_TSH_SAME, ""), SH2("tan", FJ_TSH_SAME, ""), SH2("sinh", FJ_TSH_SAME, ""),
    SH2("cosh", FJ_TSH_SAME, ""), SH2("asin", FJ_TSH_SAME, ""), SH2("acos", FJ_TSH_SAME, ""),
    SH2("atan", FJ_TSH_SAME, ""), SH2("asinh", FJ_TSH_SAME, ""), SH2("acosh", FJ_TSH_SAME, ""),
    SH2("atanh", FJ_TSH_SAME, ""), SH2("erfc", FJ_TSH_SAME, ""), SH2("lgamma", FJ_TSH_SAME, ""),
    SH2("digamma", FJ_TSH_SAME, ""), SH2("isnan", FJ_TSH_SAME, ""), SH2("isinf", FJ_TSH_SAME, ""),
    SH2("isfinite", FJ_TSH_SAME, ""), SH2("logical_not", FJ_TSH_SAME, ""),
    SH2("bitwise_not", FJ_TSH_SAME, ""), SH2("nan_to_num", FJ_TSH_SAME, "nan,posinf,neginf"),
    SH2("clamp_min", FJ_TSH_SAME, "min"), SH2("clamp_max", FJ_TSH_SAME, "max"), SH2("clip", FJ_TSH_SAME, "min,max"),
    SH2("flip", FJ_TSH_SAME, "dims"), SH2("roll", FJ_TSH_SAME, "shifts,dims"),
    SH2("relu", FJ_TSH_SAME, ""), SH2("sigmoid", FJ_TSH_SAME, ""), SH2("tanh", FJ_TSH_SAME, ""),
    SH2("exp", FJ_TSH_SAME, ""), SH2("log", FJ_TSH_SAME, ""), SH2("sqrt", FJ_TSH_SAME, ""),
    SH2("rsqrt", FJ_TSH_SAME, ""), SH2("abs", FJ_TSH_SAME, ""), SH2("neg", FJ_TSH_SAME, ""),
    SH2("sin", FJ_TSH_SAME, ""), SH2("cos", FJ_TSH_SAME, ""), SH2("erf", FJ_TSH_SAME, ""),
    {"T", "to", FJ_TSH_SAME, "self,a,b,c,d,*dtype,device,non_blocking,copy,memory_format"},
    {"T", "type", FJ_TSH_SAME, "self,dtype,non_blocking"},
    {"F", "relu6", FJ_TSH_SAME, "input,inplace"}, {"F", "hardswish", FJ_TSH_SAME, "input,inplace"},
    {"F", "hardsigmoid", FJ_TSH_SAME, "input,inplace"}, {"F", "mish", FJ_TSH_SAME, "input,inplace"},
    {"F", "selu", FJ_TSH_SAME, "input,inplace"}, {"F", "celu", FJ_TSH_SAME, "input,alpha,inplace"},
    {"F", "logsigmoid", FJ_TSH_SAME, "input"}, {"F", "softsign", FJ_TSH_SAME, "input"},
    {"F", "tanhshrink", FJ_TSH_SAME, "input"}, {"F", "silu", FJ_TSH_SAME, "input,inplace"},
    {"F", "gelu", FJ_TSH_SAME, "input,*approximate"}, {"F", "relu", FJ_TSH_SAME, "input,inplace"},
    {"F", "softmin", FJ_TSH_SAME, "input,dim,_stacklevel,dtype"},
    {"torch", "zeros_like", FJ_TSH_SAME, "input,*dtype,layout,device,pin_memory,requires_grad,memory_format"},
    {"torch", "ones_like", FJ_TSH_SAME, "input,*dtype,layout,device,pin_memory,requires_grad,memory_format"},
    {"torch", "empty_like", FJ_TSH_SAME, "input,*dtype,layout,device,pin_memory,requires_grad,memory_format"},
    {"torch", "rand_like", FJ_TSH_SAME, "input,*dtype,layout,device,pin_memory,requires_grad,memory_format"},
    {"torch", "randn_like", FJ_TSH_SAME, "input,*dtype,layout,device,pin_memory,requires_grad,memory_format"},
    {"torch", "full_like", FJ_TSH_SAME,
     "input,fill_value,*dtype,layout,device,pin_memory,requires_grad,memory_format"},
    /* broadcasting ops: the operands' broadcast sizes (two symbols meeting: guarded equal) */
    SH2("maximum", FJ_TSH_BROADCAST, "other"), SH2("minimum", FJ_TSH_BROADCAST, "other"),
    SH2("fmax", FJ_TSH_BROADCAST, "other"), SH2("fmin", FJ_TSH_BROADCAST, "other"),
    SH2("pow", FJ_TSH_BROADCAST, "exponent"), SH2("atan2", FJ_TSH_BROADCAST, "other"),
    SH2("fmod", FJ_TSH_BROADCAST, "other"), SH2("remainder", FJ_TSH_BROADCAST, "other"),
    SH2("hypot", FJ_TSH_BROADCAST, "other"), SH2("logaddexp", FJ_TSH_BROADCAST, "other"),
    SH2("copysign", FJ_TSH_BROADCAST, "other"), SH2("floor_divide", FJ_TSH_BROADCAST, "other"),
    SH2("lerp", FJ_TSH_BROADCAST, "end,weight"), SH2("addcmul", FJ_TSH_BROADCAST, "tensor1,tensor2,*value"),
    SH2("addcdiv", FJ_TSH_BROADCAST, "tensor1,tensor2,*value"),
    SH2("logical_and", FJ_TSH_BROADCAST, "other"), SH2("logical_or", FJ_TSH_BROADCAST, "other"),
    SH2("logical_xor", FJ_TSH_BROADCAST, "other"), SH2("bitwise_and", FJ_TSH_BROADCAST, "other"),
    SH2("bitwise_or", FJ_TSH_BROADCAST, "other"), SH2("bitwise_xor", FJ_TSH_BROADCAST, "other"),
    SH2("isclose", FJ_TSH_BROADCAST, "other,rtol,atol,equal_nan"),
    {"torch", "where", FJ_TSH_BROADCAST, "condition,input,other"},
    {"T", "where", FJ_TSH_BROADCAST, "self,condition,other"},
    SH2("sum", FJ_TSH_REDUCE, "dim,keepdim,*dtype"), SH2("mean", FJ_TSH_REDUCE, "dim,keepdim,*dtype"),
    SH2("nansum", FJ_TSH_REDUCE, "dim,keepdim,*dtype"), SH2("nanmean", FJ_TSH_REDUCE, "dim,keepdim,*dtype"),
    SH2("amax", FJ_TSH_REDUCE, "dim,keepdim"), SH2("amin", FJ_TSH_REDUCE, "dim,keepdim"),
    SH2("logsumexp", FJ_TSH_REDUCE, "dim,keepdim"), SH2("prod", FJ_TSH_REDUCE, "dim,keepdim,*dtype"),
    SH2("argmax", FJ_TSH_REDUCE, "dim,keepdim"), SH2("argmin", FJ_TSH_REDUCE, "dim,keepdim"),
    SH2("all", FJ_TSH_REDUCE, "dim,keepdim"), SH2("any", FJ_TSH_REDUCE, "dim,keepdim"),
    SH2("std", FJ_TSH_REDUCE, "dim,unbiased,keepdim,*correction"),
    SH2("var", FJ_TSH_REDUCE, "dim,unbiased,keepdim,*correction"),
    SH2("norm", FJ_TSH_REDUCE, "p,dim,keepdim,dtype"),
    SH2("matmul", FJ_TSH_MATMUL, "other"), SH2("mm", FJ_TSH_MATMUL, "mat2"),
    {"F", "linear", FJ_TSH_LINEAR, "input,weight,bias"},
    {"F", "conv1d", FJ_TSH_CONV, "input,weight,bias,stride,padding,dilation,groups"},
    {"F", "conv2d", FJ_TSH_CONV, "input,weight,bias,stride,padding,dilation,groups"},
    {"F", "max_pool1d", FJ_TSH_POOL, "input,kernel_size,stride,padding,dilation,ceil_mode,return_indices"},
    {"F", "max_pool2d", FJ_TSH_POOL, "input,kernel_size,stride,padding,dilation,ceil_mode,return_indices"},
    {"F", "avg_pool1d", FJ_TSH_POOL, "input,kernel_size,stride,padding,ceil_mode,count_include_pad"},
    {"F", "avg_pool2d", FJ_TSH_POOL,
     "input,kernel_size,stride,padding,ceil_mode,count_include_pad,divisor_override"},
    {"F", "adaptive_avg_pool1d", FJ_TSH_POOL, "input,output_size"},
    {"F", "adaptive_avg_pool2d", FJ_TSH_POOL, "input,output_size"},
    {"F", "batch_norm", FJ_TSH_BATCH_NORM, "input,running_mean,running_var,weight,bias,training,momentum,eps"},
    {"F", "layer_norm", FJ_TSH_LAYER_NORM, "input,normalized_shape,weight,bias,eps"},
    {"F", "embedding", FJ_TSH_EMBEDDING,
     "input,weight,padding_idx,max_norm,norm_type,scale_grad_by_freq,sparse"},
    {"T", "view", FJ_TSH_VIEW, NULL}, {"T", "reshape", FJ_TSH_VIEW, NULL},
    {"torch", "reshape", FJ_TSH_VIEW, "input,shape"},
    {"torch", "zeros", FJ_TSH_CREATE, NULL}, {"torch", "ones", FJ_TSH_CREATE, NULL},
    {"torch", "empty", FJ_TSH_CREATE, NULL}, {"torch", "rand", FJ_TSH_CREATE, NULL},
    {"torch", "randn", FJ_TSH_CREATE, NULL},
    {"torch", "full", FJ_TSH_CREATE, "size,fill_value,*out,dtype,layout,device,pin_memory,requires_grad"},
    {"T", "new_zeros", FJ_TSH_NEW, NULL}, {"T", "new_ones", FJ_TSH_NEW, NULL},
    {"T", "new_empty", FJ_TSH_NEW, NULL},
    {"torch", "arange", FJ_TSH_ARANGE, NULL},
    SH2("transpose", FJ_TSH_TRANSPOSE, "dim0,dim1"), SH2("swapaxes", FJ_TSH_TRANSPOSE, "axis0,axis1"),
    SH2("t", FJ_TSH_T, ""),
    {"T", "permute", FJ_TSH_PERMUTE, NULL}, {"torch", "permute", FJ_TSH_PERMUTE, "input,dims"},
    SH2("unsqueeze", FJ_TSH_UNSQUEEZE, "dim"), SH2("squeeze", FJ_TSH_SQUEEZE, "dim"),
    SH2("flatten", FJ_TSH_FLATTEN, "start_dim,end_dim"),
    {"torch", "cat", FJ_TSH_CAT, "tensors,dim"}, {"torch", "concat", FJ_TSH_CAT, "tensors,dim"},
    {"torch", "stack", FJ_TSH_STACK, "tensors,dim"},
};
#define NSHAPE ((Py_ssize_t)(sizeof(shape_rules) / sizeof(shape_rules[0])))

/*
** Ops that may raise from the values of their operands when the graph runs
** (an index out of range, a singular matrix, an integer division by zero):
** after side effects the graph replays they are not captured
** (fj_torch_may_raise_on_data).  "L": torch.linalg.
*/
static const struct {
    const char *where, *name;
} raising_rules[] = {
    {"F", "embedding"}, {"F", "embedding_bag"}, {"F", "one_hot"}, {"F", "cross_entropy"}, {"F", "nll_loss"},
    {"torch", "index_select"}, {"T", "index_select"}, {"torch", "gather"}, {"T", "gather"},
    {"torch", "take"}, {"T", "take"}, {"torch", "take_along_dim"}, {"T", "take_along_dim"},
    {"torch", "scatter"}, {"T", "scatter"}, {"T", "scatter_"}, {"torch", "scatter_add"}, {"T", "scatter_add"},
    {"T", "scatter_add_"}, {"torch", "scatter_reduce"}, {"T", "scatter_reduce"}, {"T", "scatter_reduce_"},
    {"torch", "index_add"}, {"T", "index_add"}, {"T", "index_add_"}, {"torch", "index_copy"},
    {"T", "index_copy"}, {"T", "index_copy_"}, {"torch", "index_fill"}, {"T", "index_fill"},
    {"T", "index_fill_"}, {"torch", "index_put"}, {"T", "index_put"}, {"T", "index_put_"},
    {"torch", "bincount"}, {"T", "bincount"}, {"torch", "multinomial"}, {"T", "multinomial"},
    {"torch", "inverse"}, {"T", "inverse"}, {"torch", "cholesky"}, {"T", "cholesky"},
    {"L", "inv"}, {"L", "cholesky"}, {"L", "solve"}, {"L", "cholesky_ex"}, {"L", "inv_ex"},
    {"torch", "repeat_interleave"}, {"T", "repeat_interleave"},
};
#define NRAISING ((Py_ssize_t)(sizeof(raising_rules) / sizeof(raising_rules[0])))
static PyObject *raising_callables = NULL; /* id(callable) -> None */
static PyObject *raising_methods = NULL;   /* method name -> None */

/* ---------------------------------------------------------------- state */

static int state = 0;                  /* 0 not yet, 1 ready, -1 unavailable */
static PyObject *by_callable = NULL;   /* id(callable) -> rule index */
static PyObject *by_method = NULL;     /* method name -> rule index */
static PyObject *sh_by_callable = NULL; /* id(callable) -> shape rule index */
static PyObject *sh_by_method = NULL;   /* method name -> shape rule index */
static PyObject *callables = NULL;     /* keeps the callables (and so their ids) alive */
static PyObject *dtypes[ST_MAX];       /* ScalarType code -> torch.dtype */
static PyObject *torch_empty = NULL;   /* torch.empty */
static PyObject *kw_plain = NULL;      /* ("dtype", "device") */
static PyObject *kw_grad = NULL;       /* ("dtype", "device", "requires_grad") */
static PyObject *clone_name = NULL;    /* "clone" */
static PyObject *empty_strided = NULL; /* torch.empty_strided */
static PyObject *view_as_name = NULL;  /* "view_as" */
static PyObject *is_view_name = NULL;  /* "_is_view" */
static PyObject *is_leaf_name = NULL;  /* "is_leaf" */
static int32_t meta_device_type = -1;
static uint64_t plain_keys[4];      /* meta fakes: plain, requiring grad, results */
static int n_plain_keys = 0;
static uint64_t cpu_keys[8];        /* CPU tensors: plain, requiring grad, results, views */
static int n_cpu_keys = 0;

static int is_float(int32_t st)
{
    return st == ST_HALF || st == ST_FLOAT || st == ST_DOUBLE || st == ST_BFLOAT16;
}

static int is_int(int32_t st)
{
    return st >= ST_BYTE && st <= ST_LONG;
}

/* Adds 'k' to the set keys[0..*n) of at most 'cap'.  0 or -1 (full). */
static int add_keys(uint64_t *keys, int *n, int cap, uint64_t k)
{
    for (int i = 0; i < *n; i++)
        if (keys[i] == k)
            return 0;
    if (*n == cap)
        return -1;
    keys[(*n)++] = k;
    return 0;
}

/* Records the dispatch keys of the meta tensor 't' as plain.  0 or -1. */
static int add_plain_keys(PyObject *t)
{
    fj_TensorMeta m;
    if (t == NULL || fj_tensor_meta(t, &m) <= 0)
        return -1;
    meta_device_type = m.device_type;
    return add_keys(plain_keys, &n_plain_keys, 4, m.dispatch_keys);
}

/* The same for CPU tensors: 't' and a view of it.  0 or -1. */
static int add_cpu_keys(PyObject *t)
{
    fj_TensorMeta m;
    PyObject *v = t ? PyObject_CallMethodOneArg(t, view_as_name, t) : NULL;
    int ok = v != NULL && fj_tensor_meta(t, &m) > 0 && m.device_type == FJ_TORCH_CPU &&
             add_keys(cpu_keys, &n_cpu_keys, 8, m.dispatch_keys) == 0 && fj_tensor_meta(v, &m) > 0 &&
             add_keys(cpu_keys, &n_cpu_keys, 8, m.dispatch_keys) == 0;
    Py_XDECREF(v);
    return ok ? 0 : -1;
}

/*
** The rule table's lookups (by callable, by method name): they need torch
** imported, not the C reader of tensors, so whether an op is elementwise
** (fj_torch_is_elementwise, which decides whether a symbolic int stays
** symbolic) never depends on whether the reader is built yet.  1, 0 (not
** yet), -1 with an exception.
*/
/*
** Registers the rule of 'where' ("T": a Tensor method, by name in
** 'methods'; "torch", "F", "L": the callable of torch, torch.nn.functional
** or torch.linalg, by its id in 'ids', kept alive in 'callables') with
** index 'idx' (None for idx -1: a membership).  A torch without the
** callable has no such rule.  0 or -1.
*/
static int register_rule(const char *where, const char *name, Py_ssize_t idx, PyObject *methods, PyObject *ids,
                         PyObject *tm, PyObject *fm, PyObject *lm)
{
    PyObject *key, *val = idx >= 0 ? PyLong_FromSsize_t(idx) : Py_NewRef(Py_None);
    int bad = val == NULL;
    if (bad)
        return -1;
    if (where[0] == 'T') {
        key = PyUnicode_InternFromString(name);
        bad = key == NULL || PyDict_SetItem(methods, key, val) < 0;
    }
    else {
        PyObject *mod = where[0] == 'F' ? fm : where[0] == 'L' ? lm : tm;
        PyObject *fn = mod ? PyObject_GetAttrString(mod, name) : NULL;
        key = fn ? PyLong_FromVoidPtr(fn) : NULL;
        if (fn == NULL)
            PyErr_Clear(); /* a torch without it (or torch.linalg not imported yet): no rule */
        else
            bad = key == NULL || PyList_Append(callables, fn) < 0 || PyDict_SetItem(ids, key, val) < 0;
        Py_XDECREF(fn);
    }
    Py_XDECREF(key);
    Py_DECREF(val);
    return bad ? -1 : 0;
}

/* The entry of a method (by name in 'methods') or a function (by its id in
   'ids') for op/target: borrowed, or NULL (no error) when it has none. */
static PyObject *rule_entry(const fj_OpDef *op, PyObject *target, PyObject *methods, PyObject *ids)
{
    PyObject *e = NULL;
    if (op->kind == FJ_OP_METHOD)
        e = PyUnicode_Check(target) ? PyDict_GetItemWithError(methods, target) : NULL;
    else if (op->kind == FJ_OP_FUNC) {
        PyObject *id = PyLong_FromVoidPtr(target);
        e = id ? PyDict_GetItemWithError(ids, id) : NULL;
        Py_XDECREF(id);
    }
    if (e == NULL)
        PyErr_Clear();
    return e;
}

static int rules_done = 0;
static int setup_rules(void)
{
    if (rules_done)
        return 1;
    PyObject *modules = PyImport_GetModuleDict();
    PyObject *tm = PyDict_GetItemString(modules, "torch");
    PyObject *fm = PyDict_GetItemString(modules, "torch.nn.functional");
    PyObject *tensor = fj_torch_tensor_type();
    if (tm == NULL || fm == NULL || tensor == NULL)
        return 0; /* not yet: torch.nn.functional is imported with torch.nn */
    Py_CLEAR(by_callable);
    Py_CLEAR(by_method);
    Py_CLEAR(callables);
    by_callable = PyDict_New();
    by_method = PyDict_New();
    callables = PyList_New(0);
    Py_XSETREF(kw_plain, Py_BuildValue("(ss)", "dtype", "device"));
    Py_XSETREF(kw_grad, Py_BuildValue("(sss)", "dtype", "device", "requires_grad"));
    Py_XSETREF(clone_name, PyUnicode_InternFromString("clone"));
    Py_XSETREF(torch_empty, PyObject_GetAttrString(tm, "empty"));
    Py_XSETREF(empty_strided, PyObject_GetAttrString(tm, "empty_strided"));
    Py_XSETREF(view_as_name, PyUnicode_InternFromString("view_as"));
    Py_XSETREF(is_view_name, PyUnicode_InternFromString("_is_view"));
    Py_XSETREF(is_leaf_name, PyUnicode_InternFromString("is_leaf"));
    if (!by_callable || !by_method || !callables || !kw_plain || !kw_grad || !clone_name || !torch_empty ||
        !empty_strided || !view_as_name || !is_view_name || !is_leaf_name)
        return -1;
    PyObject *lm = PyDict_GetItemString(modules, "torch.linalg");
    Py_XSETREF(raising_callables, PyDict_New());
    Py_XSETREF(raising_methods, PyDict_New());
    Py_XSETREF(sh_by_callable, PyDict_New());
    Py_XSETREF(sh_by_method, PyDict_New());
    if (raising_callables == NULL || raising_methods == NULL || sh_by_callable == NULL || sh_by_method == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < NRULES; i++)
        if (register_rule(rules[i].where, rules[i].name, i, by_method, by_callable, tm, fm, lm) < 0)
            return -1;
    for (Py_ssize_t i = 0; i < NRAISING; i++)
        if (register_rule(raising_rules[i].where, raising_rules[i].name, -1, raising_methods, raising_callables, tm,
                          fm, lm) < 0)
            return -1;
    for (Py_ssize_t i = 0; i < NSHAPE; i++)
        if (register_rule(shape_rules[i].where, shape_rules[i].name, i, sh_by_method, sh_by_callable, tm, fm, lm) < 0)
            return -1;
    rules_done = 1;
    return 1;
}

static int setup(void)
{
    int rr = setup_rules();
    if (rr <= 0)
        return rr;
    PyObject *modules = PyImport_GetModuleDict();
    PyObject *tm = PyDict_GetItemString(modules, "torch");
    /* dtype codes as the reader reports them, and the plain keys of meta fakes */
    static const char *names[] = {"float16", "bfloat16", "float32", "float64", "uint8", "int8",
                                  "int16",   "int32",    "int64",   "bool"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        PyObject *dt = PyObject_GetAttrString(tm, names[i]);
        PyObject *shape = dt ? Py_BuildValue("(i)", 2) : NULL;
        PyObject *argv[3] = {shape, dt, fj_torch_meta_device()};
        PyObject *t = shape ? PyObject_Vectorcall(torch_empty, argv, 1, kw_plain) : NULL;
        fj_TensorMeta m;
        int ok = t != NULL && fj_tensor_meta(t, &m) > 0 && m.dtype >= 0 && m.dtype < ST_MAX;
        if (ok) {
            Py_XSETREF(dtypes[m.dtype], Py_NewRef(dt));
            ok = add_plain_keys(t) == 0;
            for (int dev = 0; ok && dev < 2; dev++) {
                PyObject *device = dev ? fj_torch_cpu_device() : fj_torch_meta_device();
                PyObject *pargv[3] = {shape, dt, device};
                PyObject *p = dev ? PyObject_Vectorcall(torch_empty, pargv, 1, kw_plain) : NULL;
                ok = !dev || add_cpu_keys(p) == 0;
                Py_XDECREF(p);
                if (ok && is_float(m.dtype)) {
                    /* a leaf that requires grad, and a result that does */
                    PyObject *gargv[4] = {shape, dt, device, Py_True};
                    PyObject *g = PyObject_Vectorcall(torch_empty, gargv, 1, kw_grad);
                    PyObject *c = g ? PyObject_CallMethodNoArgs(g, clone_name) : NULL;
                    ok = dev ? add_cpu_keys(g) == 0 && add_cpu_keys(c) == 0
                             : add_plain_keys(g) == 0 && add_plain_keys(c) == 0;
                    Py_XDECREF(g);
                    Py_XDECREF(c);
                }
            }
        }
        Py_XDECREF(dt);
        Py_XDECREF(shape);
        Py_XDECREF(t);
        if (!ok) {
            PyErr_Clear();
            return -1;
        }
    }
    return 1;
}

/* 1 when rules may answer now. */
static int ready(void)
{
    if (state != 0)
        return state > 0;
    if (!fj_torch_ready() || !fj_tensor_meta_ready())
        return 0;
    int r = setup();
    if (r == 0)
        return 0;
    if (r < 0)
        PyErr_Clear(); /* rules stay off: every call asks torch */
    state = r > 0 ? 1 : -1;
    return state > 0;
}

/* ------------------------------------------------------------- operands */

#define MAXP 32

/* Binds positional 'fargs' and keyword 'fkw' to the names in 'params':
   1, or 0 when they do not fit (more positionals than names, an unknown
   or repeated keyword: torch decides). */
static int bind(const char *params, PyObject *fargs, PyObject *fkw, PyObject **slot)
{
    const char *name[MAXP];
    size_t len[MAXP];
    int np = 0, npos = -1;
    for (const char *p = params; *p && np < MAXP;) {
        if (*p == '*') {
            npos = npos < 0 ? np : npos;
            p++;
        }
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        name[np] = p;
        len[np++] = l;
        p += l + (e != NULL);
    }
    for (int i = 0; i < MAXP; i++)
        slot[i] = NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(fargs);
    if (n > (npos < 0 ? np : npos))
        return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        slot[i] = PyTuple_GET_ITEM(fargs, i);
    if (fkw == NULL)
        return 1;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(fkw, &pos, &k, &v)) {
        Py_ssize_t kl;
        const char *ks = PyUnicode_Check(k) ? PyUnicode_AsUTF8AndSize(k, &kl) : NULL;
        if (ks == NULL) {
            PyErr_Clear();
            return 0;
        }
        int j = 0;
        while (j < np && !(len[j] == (size_t)kl && memcmp(name[j], ks, (size_t)kl) == 0))
            j++;
        if (j == np || slot[j] != NULL)
            return 0;
        slot[j] = v;
    }
    return 1;
}

static int absent(PyObject *o)
{
    return o == NULL || o == Py_None;
}

/* Python scalars an operand may be: 1 bool, 2 int (within int64), 3 float; 0 otherwise. */
static int scalar_kind(PyObject *o)
{
    if (PyBool_Check(o))
        return 1;
    if (PyLong_CheckExact(o)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        (void)v;
        return overflow ? 0 : 2;
    }
    return PyFloat_CheckExact(o) ? 3 : 0;
}

/* Reads the fake 'o': 1 when it is a plain meta tensor in canonical
   contiguous layout with a known dtype; 0 when not (no rule); -1 error. */
static int read_layout(PyObject *o, fj_TensorMeta *m, int any_strides)
{
    if (o == NULL || (PyObject *)Py_TYPE(o) != fj_torch_tensor_type())
        return 0;
    int r = fj_tensor_meta(o, m);
    if (r <= 0)
        return r;
    if (m->device_type != meta_device_type || m->dtype < 0 || m->dtype >= ST_MAX || dtypes[m->dtype] == NULL)
        return 0;
    int plain = 0;
    for (int i = 0; i < n_plain_keys; i++)
        plain |= plain_keys[i] == m->dispatch_keys;
    if (!plain)
        return 0; /* conj or neg bits, a wrapper's keys: torch decides */
    int64_t s = 1;
    for (int i = m->ndim - 1; i >= 0; i--) {
        /* an empty tensor's results take TensorIterator's own strides */
        if ((m->strides[i] != s && !any_strides) || m->sizes[i] == 0)
            return 0;
        s *= m->sizes[i] > 1 ? m->sizes[i] : 1;
    }
    return 1;
}

static int read_t(PyObject *o, fj_TensorMeta *m)
{
    return read_layout(o, m, 0);
}

/* Broadcasts 'm''s sizes into out[0..*nd): 1, or 0 when they do not broadcast. */
static int bcast(int *nd, int64_t *out, const fj_TensorMeta *m)
{
    int rn = *nd > m->ndim ? *nd : m->ndim;
    int64_t tmp[FJ_TENSOR_MAX_DIMS];
    for (int i = 0; i < rn; i++) {
        int64_t x = i < *nd ? out[*nd - 1 - i] : 1, y = i < m->ndim ? m->sizes[m->ndim - 1 - i] : 1;
        if (x != y && x != 1 && y != 1)
            return 0;
        tmp[rn - 1 - i] = x == 1 ? y : x;
    }
    memcpy(out, tmp, sizeof(int64_t) * (size_t)rn);
    *nd = rn;
    return 1;
}

/* An exact int (not bool) into *v: 1, else 0. */
static int int_arg(PyObject *o, int64_t *v)
{
    if (o == NULL || !PyLong_CheckExact(o))
        return 0;
    int overflow;
    *v = PyLong_AsLongLongAndOverflow(o, &overflow);
    return !overflow;
}

/* An int or a tuple/list of two ints (conv2d's stride, padding, dilation):
   1 with out[2] filled ('dflt' when absent), else 0. */
static int pair_arg(PyObject *o, int64_t dflt, int64_t *out)
{
    if (o == NULL) {
        out[0] = out[1] = dflt;
        return 1;
    }
    if (int_arg(o, &out[0])) {
        out[1] = out[0];
        return 1;
    }
    if ((PyTuple_Check(o) || PyList_CheckExact(o)) && PySequence_Fast_GET_SIZE(o) == 2)
        return int_arg(PySequence_Fast_GET_ITEM(o, 0), &out[0]) && int_arg(PySequence_Fast_GET_ITEM(o, 1), &out[1]);
    return 0;
}

/* True for an optional 1-d tensor of 'n' elements and dtype 'dt' (absent
   or None counts); *rg |= its requires_grad.  -1 on error. */
static int vec_ok(PyObject *o, int64_t n, int32_t dt, int *rg)
{
    if (absent(o))
        return 1;
    fj_TensorMeta m;
    int r = read_t(o, &m);
    if (r <= 0)
        return r;
    *rg |= m.requires_grad;
    return m.ndim == 1 && m.sizes[0] == n && m.dtype == dt;
}

/* ---------------------------------------------------------------- result */

/* A fake of sizes[0..nd), dtype 'st': a leaf, or (rg) a non-leaf that
   requires grad.  New reference or NULL with an exception. */
static PyObject *make(int32_t st, int nd, const int64_t *sizes, int rg)
{
    PyObject *shape = fj_int64_tuple(nd, sizes);
    if (shape == NULL)
        return NULL;
    PyObject *argv[4] = {shape, dtypes[st], fj_torch_meta_device(), Py_True};
    PyObject *t = PyObject_Vectorcall(torch_empty, argv, 1, rg ? kw_grad : kw_plain);
    Py_DECREF(shape);
    if (t != NULL && rg)
        Py_SETREF(t, PyObject_CallMethodNoArgs(t, clone_name));
    return t;
}

/* ---------------------------------------------------------------- rules */

/* Each rule: 1 with *st, *nd, sizes and *rg filled; 0 no rule; -1 error.
   'grad' is torch's grad mode. */
typedef struct {
    int32_t st;
    int nd;
    int rg;
    int64_t sizes[FJ_TENSOR_MAX_DIMS];
} Out;

static int same_as(Out *o, const fj_TensorMeta *m, int grad)
{
    o->st = m->dtype;
    o->nd = m->ndim;
    memcpy(o->sizes, m->sizes, sizeof(int64_t) * (size_t)m->ndim);
    o->rg = grad && m->requires_grad && is_float(m->dtype);
    return 1;
}

static int r_unary(const Rule *r, PyObject **s, int grad, Out *o)
{
    fj_TensorMeta m;
    int k = read_t(s[0], &m);
    if (k <= 0)
        return k;
    if (r->kind == K_TRI) {
        int64_t diag;
        if (m.ndim < 2 || !(is_float(m.dtype) || is_int(m.dtype) || m.dtype == ST_BOOL) ||
            (s[1] != NULL && !int_arg(s[1], &diag)))
            return 0;
        return same_as(o, &m, grad);
    }
    if (!is_float(m.dtype))
        return 0;
    if (r->sub == S_INPLACE_ARG && !(s[1] == NULL || s[1] == Py_False))
        return 0;
    if (r->sub == S_GELU && s[1] != NULL &&
        !(PyUnicode_CheckExact(s[1]) && (PyUnicode_CompareWithASCIIString(s[1], "none") == 0 ||
                                         PyUnicode_CompareWithASCIIString(s[1], "tanh") == 0)))
        return 0;
    return same_as(o, &m, grad);
}

static int r_binary(const Rule *r, PyObject **s, int grad, Out *o)
{
    if (s[0] == NULL || s[1] == NULL)
        return 0;
    int32_t dt = -1;
    int nt = 0, rg = 0, kinds[2] = {0, 0};
    o->nd = 0;
    for (int i = 0; i < 2; i++) {
        if (fj_torch_is_tensor(s[i])) {
            fj_TensorMeta m;
            int k = read_t(s[i], &m);
            if (k <= 0)
                return k;
            if (dt >= 0 && m.dtype != dt)
                return 0; /* promotion between tensors: torch decides */
            dt = m.dtype;
            rg |= m.requires_grad;
            nt++;
            if (!bcast(&o->nd, o->sizes, &m))
                return 0;
        }
        else if ((kinds[i] = scalar_kind(s[i])) == 0)
            return 0;
    }
    if (nt == 0)
        return 0;
    if (r->kind == K_CMP && r->where != NULL && r->where[0] == 't' && kinds[0] != 0)
        return 0; /* torch.lt(2, t): no overload takes a scalar input */
    for (int i = 0; i < 2; i++) {
        if (kinds[i] == 1 && r->sub == S_SUB)
            return 0; /* subtracting a bool is torch's error */
        if (kinds[i] != 0 && r->sub == S_POW && i == 1 && (dt == ST_HALF || dt == ST_BFLOAT16)) {
            /* a half exponent past the dtype's range is the CPU kernel's overflow error */
            double v = kinds[i] == 3 ? PyFloat_AS_DOUBLE(s[i]) : PyLong_AsDouble(s[i]);
            if (!(v >= -60000.0 && v <= 60000.0)) {
                PyErr_Clear();
                return 0;
            }
        }
    }
    for (int i = 0; i < 2; i++) {
        if (kinds[i] == 0 || is_float(dt))
            continue;
        /* an integer tensor meets a scalar: int64 with ints, or a comparison */
        if (!(r->kind == K_CMP || (dt == ST_LONG && kinds[i] == 2)))
            return 0;
    }
    if (r->kind == K_CMP) {
        if (!is_float(dt) && !is_int(dt))
            return 0;
        o->st = ST_BOOL;
        o->rg = 0;
        return 1;
    }
    if (!is_float(dt) && !(is_int(dt) && (r->sub == S_ADD || r->sub == S_SUB || r->sub == S_MUL)))
        return 0;
    o->st = dt;
    o->rg = grad && rg && is_float(dt);
    return 1;
}

static int r_masked_fill(PyObject **s, int grad, Out *o)
{
    fj_TensorMeta m, mask;
    int k = read_t(s[0], &m);
    if (k <= 0 || (k = read_t(s[1], &mask)) <= 0)
        return k;
    if (s[2] == NULL || (m.dtype != ST_FLOAT && m.dtype != ST_DOUBLE) || mask.dtype != ST_BOOL || !scalar_kind(s[2]))
        return 0;
    if (m.dtype == ST_FLOAT && PyFloat_CheckExact(s[2])) {
        /* a finite value past float32's range is torch's overflow error */
        double v = PyFloat_AS_DOUBLE(s[2]);
        if (v == v && v > -3.4e38 && v < 3.4e38)
            ;
        else if (!(v != v || v == 1.0 / 0.0 || v == -1.0 / 0.0))
            return 0;
    }
    int nd = m.ndim;
    int64_t sizes[FJ_TENSOR_MAX_DIMS];
    memcpy(sizes, m.sizes, sizeof(int64_t) * (size_t)nd);
    if (!bcast(&nd, sizes, &mask) || nd != m.ndim || memcmp(sizes, m.sizes, sizeof(int64_t) * (size_t)nd) != 0)
        return 0;
    return same_as(o, &m, grad);
}

static int r_matmul(PyObject **s, int grad, Out *o)
{
    fj_TensorMeta a, b;
    int k = read_t(s[0], &a);
    if (k <= 0 || (k = read_t(s[1], &b)) <= 0)
        return k;
    if (a.dtype != b.dtype || !is_float(a.dtype) || a.ndim < 2 || b.ndim < 2 ||
        a.sizes[a.ndim - 1] != b.sizes[b.ndim - 2])
        return 0;
    fj_TensorMeta bb = b;
    bb.ndim = b.ndim - 2;
    o->nd = a.ndim - 2;
    memcpy(o->sizes, a.sizes, sizeof(int64_t) * (size_t)o->nd);
    if (!bcast(&o->nd, o->sizes, &bb))
        return 0;
    o->sizes[o->nd++] = a.sizes[a.ndim - 2];
    o->sizes[o->nd++] = b.sizes[b.ndim - 1];
    if (o->nd > 2 && (a.sizes[a.ndim - 2] == 1 || b.sizes[b.ndim - 1] == 1))
        return 0; /* matmul's folding paths leave other strides on a size-1 dim */
    o->st = a.dtype;
    o->rg = grad && (a.requires_grad || b.requires_grad);
    return 1;
}

/* A dim argument wrapped into [0, nd): 1, else 0. */
static int wrap_dim(PyObject *o, int nd, int *d)
{
    int64_t v;
    if (!int_arg(o, &v) || v < -nd || v >= nd)
        return 0;
    *d = (int)(v < 0 ? v + nd : v);
    return 1;
}

static int r_reduce(PyObject **s, int grad, Out *o)
{
    fj_TensorMeta m;
    int k = read_t(s[0], &m);
    if (k <= 0)
        return k;
    if (!is_float(m.dtype) || m.ndim == 0 || (s[2] != NULL && (!PyBool_Check(s[2]) || s[1] == NULL)))
        return 0; /* keepdim needs a dim (no overload takes it alone) */
    int keep = s[2] == Py_True;
    char red[FJ_TENSOR_MAX_DIMS] = {0};
    if (absent(s[1]))
        memset(red, 1, (size_t)m.ndim);
    else if (PyLong_CheckExact(s[1])) {
        int d;
        if (!wrap_dim(s[1], m.ndim, &d))
            return 0;
        red[d] = 1;
    }
    else if ((PyTuple_CheckExact(s[1]) || PyList_CheckExact(s[1])) && PySequence_Fast_GET_SIZE(s[1]) > 0) {
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(s[1]); i++) {
            int d;
            if (!wrap_dim(PySequence_Fast_GET_ITEM(s[1], i), m.ndim, &d) || red[d])
                return 0;
            red[d] = 1;
        }
    }
    else
        return 0;
    o->nd = 0;
    for (int i = 0; i < m.ndim; i++)
        if (!red[i])
            o->sizes[o->nd++] = m.sizes[i];
        else if (keep)
            o->sizes[o->nd++] = 1;
    o->st = m.dtype;
    o->rg = grad && m.requires_grad;
    return 1;
}

static int r_softmax(const Rule *r, PyObject **s, int grad, Out *o)
{
    fj_TensorMeta m;
    int k = read_t(s[0], &m);
    if (k <= 0)
        return k;
    int d, dtype_slot = r->where != NULL && r->where[0] == 'F' ? 3 : 2;
    if (!is_float(m.dtype) || m.ndim == 0 || !wrap_dim(s[1], m.ndim, &d) || !absent(s[dtype_slot]))
        return 0;
    return same_as(o, &m, grad);
}

static int r_linear(PyObject **s, int grad, Out *o)
{
    fj_TensorMeta x, w;
    int k = read_t(s[0], &x);
    if (k <= 0 || (k = read_t(s[1], &w)) <= 0)
        return k;
    if (!is_float(x.dtype) || w.dtype != x.dtype || x.ndim < 1 || w.ndim != 2 || x.sizes[x.ndim - 1] != w.sizes[1])
        return 0;
    int rg = x.requires_grad || w.requires_grad;
    if ((k = vec_ok(s[2], w.sizes[0], x.dtype, &rg)) <= 0)
        return k;
    o->nd = x.ndim;
    memcpy(o->sizes, x.sizes, sizeof(int64_t) * (size_t)x.ndim);
    o->sizes[x.ndim - 1] = w.sizes[0];
    o->st = x.dtype;
    o->rg = grad && rg;
    return 1;
}

static int r_conv2d(PyObject **s, int grad, Out *o)
{
    fj_TensorMeta x, w;
    int k = read_t(s[0], &x);
    if (k <= 0 || (k = read_t(s[1], &w)) <= 0)
        return k;
    int64_t st[2], pad[2], dil[2], groups = 1;
    if (!is_float(x.dtype) || w.dtype != x.dtype || x.ndim != 4 || w.ndim != 4 || !pair_arg(s[3], 1, st) ||
        !pair_arg(s[4], 0, pad) || !pair_arg(s[5], 1, dil) || (s[6] != NULL && !int_arg(s[6], &groups)))
        return 0;
    for (int i = 0; i < 4; i++)
        if (x.sizes[i] < 1 || w.sizes[i] < 1)
            return 0;
    if (groups < 1 || x.sizes[1] % groups != 0 || w.sizes[0] % groups != 0 || x.sizes[1] / groups != w.sizes[1])
        return 0;
    int rg = x.requires_grad || w.requires_grad;
    if ((k = vec_ok(s[2], w.sizes[0], x.dtype, &rg)) <= 0)
        return k;
    o->nd = 4;
    o->sizes[0] = x.sizes[0];
    o->sizes[1] = w.sizes[0];
    for (int i = 0; i < 2; i++) {
        /* bounded, so the size arithmetic below cannot overflow */
        if (st[i] < 1 || pad[i] < 0 || dil[i] < 1 || st[i] > (1 << 30) || pad[i] > (1 << 30) || dil[i] > (1 << 30))
            return 0;
        int64_t span = x.sizes[2 + i] + 2 * pad[i] - dil[i] * (w.sizes[2 + i] - 1) - 1;
        if (span < 0)
            return 0;
        o->sizes[2 + i] = span / st[i] + 1;
    }
    o->st = x.dtype;
    o->rg = grad && rg;
    return 1;
}

static int r_batch_norm(PyObject **s, int grad, Out *o)
{
    fj_TensorMeta x;
    int k = read_t(s[0], &x);
    if (k <= 0)
        return k;
    if (!is_float(x.dtype) || x.ndim < 2 || s[1] == NULL || s[2] == NULL || (s[5] != NULL && !PyBool_Check(s[5])))
        return 0; /* running_mean and running_var are required (None allowed) */
    for (int i = 6; i < 8; i++)
        if (s[i] != NULL && !PyFloat_CheckExact(s[i]) && !PyLong_CheckExact(s[i]))
            return 0;
    int training = s[5] == Py_True, rg = x.requires_grad, unused = 0;
    int64_t c = x.sizes[1], per = x.sizes[0];
    for (int i = 2; i < x.ndim; i++)
        per *= x.sizes[i];
    if (training ? per <= 1 : (absent(s[1]) || absent(s[2])))
        return 0; /* F.batch_norm's error, or aten's */
    if ((k = vec_ok(s[1], c, x.dtype, &unused)) <= 0 || (k = vec_ok(s[2], c, x.dtype, &unused)) <= 0 ||
        (k = vec_ok(s[3], c, x.dtype, &rg)) <= 0 || (k = vec_ok(s[4], c, x.dtype, &rg)) <= 0)
        return k;
    if (unused)
        return 0; /* running statistics that require grad: torch decides */
    same_as(o, &x, grad);
    o->rg = grad && rg;
    return 1;
}

static int r_layer_norm(PyObject **s, int grad, Out *o)
{
    fj_TensorMeta x;
    int k = read_t(s[0], &x);
    if (k <= 0)
        return k;
    if (!is_float(x.dtype) || s[1] == NULL || (s[4] != NULL && !PyFloat_CheckExact(s[4]) && !PyLong_CheckExact(s[4])))
        return 0;
    int64_t ns[FJ_TENSOR_MAX_DIMS];
    int nn = 0;
    if ((PyTuple_Check(s[1]) || PyList_CheckExact(s[1])) && PySequence_Fast_GET_SIZE(s[1]) <= x.ndim) {
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(s[1]); i++)
            if (!int_arg(PySequence_Fast_GET_ITEM(s[1], i), &ns[nn++]))
                return 0;
    }
    if (nn < 1 || nn > x.ndim)
        return 0;
    for (int i = 0; i < nn; i++)
        if (ns[i] != x.sizes[x.ndim - nn + i])
            return 0;
    int rg = x.requires_grad;
    for (int j = 2; j < 4; j++) {
        if (absent(s[j]))
            continue;
        fj_TensorMeta p;
        if ((k = read_t(s[j], &p)) <= 0)
            return k;
        if (p.dtype != x.dtype || p.ndim != nn || memcmp(p.sizes, ns, sizeof(int64_t) * (size_t)nn) != 0)
            return 0;
        rg |= p.requires_grad;
    }
    same_as(o, &x, grad);
    o->rg = grad && rg;
    return 1;
}

static int r_adaptive_avg2d(PyObject **s, int grad, Out *o)
{
    fj_TensorMeta x;
    int k = read_t(s[0], &x);
    if (k <= 0)
        return k;
    if (!is_float(x.dtype) || (x.ndim != 3 && x.ndim != 4) || s[1] == NULL)
        return 0;
    for (int i = 0; i < x.ndim; i++)
        if (x.sizes[i] < 1)
            return 0;
    int64_t out[2];
    if (int_arg(s[1], &out[0]))
        out[1] = out[0];
    else if ((PyTuple_Check(s[1]) || PyList_CheckExact(s[1])) && PySequence_Fast_GET_SIZE(s[1]) == 2) {
        for (int i = 0; i < 2; i++) {
            PyObject *v = PySequence_Fast_GET_ITEM(s[1], i);
            if (v == Py_None)
                out[i] = x.sizes[x.ndim - 2 + i];
            else if (!int_arg(v, &out[i]))
                return 0;
        }
    }
    else
        return 0;
    if (out[0] < 1 || out[1] < 1)
        return 0;
    same_as(o, &x, grad);
    o->sizes[x.ndim - 2] = out[0];
    o->sizes[x.ndim - 1] = out[1];
    return 1;
}

/* An optional bool argument: 1 with *v (dflt when absent), else 0. */
static int bool_arg(PyObject *o, int dflt, int *v)
{
    if (o == NULL) {
        *v = dflt;
        return 1;
    }
    if (!PyBool_Check(o))
        return 0;
    *v = o == Py_True;
    return 1;
}

/* F.multi_head_attention_forward with batched (L, N, E) query and (S, N, E)
   key and value, packed in-projection, no masks, no extra key/value bias:
   (output (L, N, E), weights (N, L, S) / (N, H, L, S) or None).  Its
   output comes from reshapes and linear, so any input strides give a
   contiguous result.  The tuple (new reference); NULL with no exception
   when no rule applies, with one on error. */
static PyObject *r_mha(PyObject **s, int grad)
{
    fj_TensorMeta q, k, v, w, ow;
    int r;
    for (int i = 0; i < 13; i++)
        if (s[i] == NULL)
            return NULL; /* a required argument missing: torch's TypeError */
    if ((r = read_layout(s[0], &q, 1)) <= 0 || (r = read_layout(s[1], &k, 1)) <= 0 ||
        (r = read_layout(s[2], &v, 1)) <= 0 || (r = read_t(s[5], &w)) <= 0 || (r = read_t(s[11], &ow)) <= 0)
        return NULL;
    int64_t e, heads;
    int add_zero = 0, training, need, average, sep = 0, causal = 0;
    if (!int_arg(s[3], &e) || !int_arg(s[4], &heads) || !bool_arg(s[9], 0, &add_zero) || add_zero ||
        !bool_arg(s[13], 1, &training) || !bool_arg(s[15], 1, &need) || !bool_arg(s[17], 0, &sep) || sep ||
        !bool_arg(s[23], 1, &average) || !bool_arg(s[24], 0, &causal) || causal)
        return NULL;
    if (!(PyFloat_CheckExact(s[10]) || PyLong_CheckExact(s[10])))
        return NULL;
    double p = PyFloat_AsDouble(s[10]);
    if (p == -1.0 && PyErr_Occurred())
        return NULL;
    if (training && !(p >= 0.0 && p <= 1.0))
        return NULL; /* dropout's own error */
    static const int must_be_none[] = {7, 8, 14, 16, 18, 19, 20, 21, 22};
    for (size_t i = 0; i < sizeof(must_be_none) / sizeof(must_be_none[0]); i++)
        if (!absent(s[must_be_none[i]]))
            return NULL;
    int32_t dt = q.dtype;
    if (!is_float(dt) || k.dtype != dt || v.dtype != dt || w.dtype != dt || ow.dtype != dt || q.ndim != 3 ||
        k.ndim != 3 || v.ndim != 3)
        return NULL;
    int64_t L = q.sizes[0], N = q.sizes[1], S = k.sizes[0];
    if (q.sizes[2] != e || heads < 1 || e % heads != 0 || k.sizes[1] != N || v.sizes[1] != N || k.sizes[2] != e ||
        v.sizes[2] != e || v.sizes[0] != S || w.ndim != 2 || w.sizes[0] != 3 * e || w.sizes[1] != e ||
        ow.ndim != 2 || ow.sizes[0] != e || ow.sizes[1] != e)
        return NULL;
    /* the weights come from the query and key projections; the output from all */
    int wrg = q.requires_grad || k.requires_grad || w.requires_grad;
    if ((r = vec_ok(s[6], 3 * e, dt, &wrg)) <= 0)
        return NULL;
    int rg = wrg || v.requires_grad || ow.requires_grad;
    if ((r = vec_ok(s[12], e, dt, &rg)) <= 0)
        return NULL;
    int64_t osz[3] = {L, N, e}, wsz[4] = {N, heads, L, S};
    PyObject *out = make(dt, 3, osz, grad && rg), *wt = NULL;
    if (out == NULL)
        return NULL;
    if (!need)
        wt = Py_NewRef(Py_None);
    else if (average) {
        int64_t asz[3] = {N, L, S};
        wt = make(dt, 3, asz, grad && wrg);
    }
    else
        wt = make(dt, 4, wsz, grad && wrg);
    PyObject *res = wt ? PyTuple_Pack(2, out, wt) : NULL;
    Py_DECREF(out);
    Py_XDECREF(wt);
    return res;
}

/* ------------------------------------------------------------ entry */

static const Rule *rule_of(const fj_OpDef *op, PyObject *target)
{
    switch (op->kind) {
    case FJ_OP_BINOP:
        switch (op->code) {
        case NB_ADD:
            return &op_add;
        case NB_SUBTRACT:
            return &op_sub;
        case NB_MULTIPLY:
            return &op_mul;
        case NB_TRUE_DIVIDE:
            return &op_div;
        case NB_POWER:
            return &op_pow;
        case NB_MATRIX_MULTIPLY:
            return &op_matmul;
        }
        return NULL;
    case FJ_OP_COMPARE:
        return &op_cmp;
    case FJ_OP_UNARY:
        return op->code == FJ_UNARY_NEG ? &op_neg : NULL;
    case FJ_OP_METHOD:
    case FJ_OP_FUNC: {
        PyObject *i = rule_entry(op, target, by_method, by_callable);
        return i ? &rules[PyLong_AsSsize_t(i)] : NULL;
    }
    }
    return NULL;
}

PyObject *fj_torch_infer(const fj_OpDef *op, PyObject *target, PyObject *fargs, PyObject *fkw)
{
    if (!ready() || !PyTuple_Check(fargs))
        return NULL;
    const Rule *r = rule_of(op, target);
    if (r == NULL)
        return NULL;
    if (PyErr_Occurred())
        return NULL;
    PyObject *s[MAXP];
    if (!bind(r->params, fargs, fkw, s))
        return NULL;
    int fast;
    uint64_t bits;
    PyObject *tuple = NULL;
    if (fj_torch_global_state(1, &fast, &bits, &tuple) < 0)
        return NULL;
    Py_XDECREF(tuple);
    if (!fast || (bits & 0x6))
        return NULL; /* no reader, inference mode or autocast: torch decides */
    int grad = (int)(bits & 1), k = 0;
    if (r->kind == K_MHA) {
        PyObject *res = r_mha(s, grad);
        if (res == NULL)
            PyErr_Clear(); /* no rule; an error here is torch's to report */
        return res;
    }
    Out o;
    switch (r->kind) {
    case K_UNARY:
    case K_TRI:
        k = r_unary(r, s, grad, &o);
        break;
    case K_BINARY:
    case K_CMP:
        k = r_binary(r, s, grad, &o);
        break;
    case K_MASKED_FILL:
        k = r_masked_fill(s, grad, &o);
        break;
    case K_MATMUL:
        k = r_matmul(s, grad, &o);
        break;
    case K_REDUCE:
        k = r_reduce(s, grad, &o);
        break;
    case K_SOFTMAX:
        k = r_softmax(r, s, grad, &o);
        break;
    case K_LINEAR:
        k = r_linear(s, grad, &o);
        break;
    case K_CONV2D:
        k = r_conv2d(s, grad, &o);
        break;
    case K_BATCH_NORM:
        k = r_batch_norm(s, grad, &o);
        break;
    case K_LAYER_NORM:
        k = r_layer_norm(s, grad, &o);
        break;
    case K_ADAPTIVE_AVG2D:
        k = r_adaptive_avg2d(s, grad, &o);
        break;
    }
    if (k <= 0)
        return NULL;
    PyObject *res = make(o.st, o.nd, o.sizes, o.rg);
    if (res == NULL)
        PyErr_Clear(); /* a size torch refuses (storage overflow): torch reports it */
    return res;
}

int fj_torch_is_elementwise(const fj_OpDef *op, PyObject *target, PyObject *fargs, PyObject *fkw)
{
    /* the rules only (not the reader: see setup_rules) */
    int rr = state > 0 ? 1 : fj_torch_ready() ? setup_rules() : 0;
    if (rr < 0)
        PyErr_Clear();
    if (rr <= 0 || !PyTuple_Check(fargs))
        return 0;
    const Rule *r = rule_of(op, target);
    if (r == NULL)
        return PyErr_Occurred() ? -1 : 0;
    PyObject *s[MAXP];
    if ((r->kind != K_UNARY && r->kind != K_BINARY && r->kind != K_CMP) || !bind(r->params, fargs, fkw, s))
        return 0;
    if (r->kind == K_UNARY)
        return s[0] != NULL && (r->sub != S_INPLACE_ARG || s[1] == NULL || s[1] == Py_False) &&
               (r->sub != S_GELU || s[1] == NULL || PyUnicode_CheckExact(s[1]));
    return s[0] != NULL && s[1] != NULL;
}

/* ------------------------------------------------------------ fast fakes */

static int keys_in(const uint64_t *keys, int n, uint64_t k)
{
    for (int i = 0; i < n; i++)
        if (keys[i] == k)
            return 1;
    return 0;
}

/* torch.empty_strided(m's sizes, strides, dtype=, device=meta, requires_grad=rg): a leaf. */
static PyObject *strided(const fj_TensorMeta *m, int rg)
{
    PyObject *size = fj_int64_tuple(m->ndim, m->sizes), *stride = size ? fj_int64_tuple(m->ndim, m->strides) : NULL;
    PyObject *argv[5] = {size, stride, dtypes[m->dtype], fj_torch_meta_device(), rg ? Py_True : Py_False};
    PyObject *t = stride ? PyObject_Vectorcall(empty_strided, argv, 2, kw_grad) : NULL;
    Py_XDECREF(size);
    Py_XDECREF(stride);
    return t;
}

static int known_dtype(const fj_TensorMeta *m)
{
    return m->dtype >= 0 && m->dtype < ST_MAX && dtypes[m->dtype] != NULL;
}

PyObject *fj_torch_dtype_of(int32_t st)
{
    return ready() && st >= 0 && st < ST_MAX ? dtypes[st] : NULL;
}

PyObject *fj_torch_fast_fake(PyObject *t)
{
    fj_TensorMeta m;
    if (!ready())
        return NULL;
    int r = fj_tensor_meta(t, &m);
    if (r <= 0 || m.device_type != FJ_TORCH_CPU || !known_dtype(&m) || !keys_in(cpu_keys, n_cpu_keys, m.dispatch_keys))
        return NULL;
    PyObject *fake = strided(&m, m.requires_grad);
    if (fake != NULL && m.requires_grad) {
        /* an intermediate result (not a leaf) takes in-place ops a leaf refuses */
        PyObject *leaf = PyObject_GetAttr(t, is_leaf_name);
        if (leaf == NULL)
            Py_CLEAR(fake);
        else if (leaf == Py_False)
            Py_SETREF(fake, fj_torch_non_leaf(fake));
        Py_XDECREF(leaf);
    }
    return fake;
}

PyObject *fj_torch_fresh_fake(PyObject *fake)
{
    fj_TensorMeta m;
    if (!ready() || (PyObject *)Py_TYPE(fake) != fj_torch_tensor_type())
        return NULL;
    int r = fj_tensor_meta(fake, &m);
    if (r <= 0 || m.device_type != meta_device_type || !known_dtype(&m) ||
        !keys_in(plain_keys, n_plain_keys, m.dispatch_keys))
        return NULL;
    if (!m.requires_grad)
        return strided(&m, 0); /* a leaf, as every tensor not requiring grad is */
    int64_t s = 1, canonical = 1;
    for (int i = m.ndim - 1; i >= 0; i--) {
        canonical &= m.strides[i] == s || m.sizes[i] == 1;
        s *= m.sizes[i] > 1 ? m.sizes[i] : 1;
    }
    if (canonical) {
        /* an op's result: the clone of a leaf is no leaf, no view */
        PyObject *leaf = strided(&m, 1), *c = leaf ? PyObject_CallMethodNoArgs(leaf, clone_name) : NULL;
        Py_XDECREF(leaf);
        return c;
    }
    PyObject *view = PyObject_CallMethodNoArgs(fake, is_view_name);
    if (view != Py_True) {
        Py_XDECREF(view);
        return NULL; /* a dense result in another layout: the caller's clone */
    }
    Py_DECREF(view);
    /* a view of a non-leaf (in-place ops on it are allowed, as on the
       original): as_strided over a fresh result of the storage's extent */
    int64_t extent = 1;
    for (int i = 0; i < m.ndim; i++) {
        if (m.sizes[i] < 1 || m.strides[i] < 0)
            return NULL;
        extent += (m.sizes[i] - 1) * m.strides[i];
    }
    fj_TensorMeta flat = m;
    flat.ndim = 1;
    flat.sizes[0] = extent;
    flat.strides[0] = 1;
    PyObject *leaf = strided(&flat, 1), *base = leaf ? PyObject_CallMethodNoArgs(leaf, clone_name) : NULL;
    PyObject *size = base ? fj_int64_tuple(m.ndim, m.sizes) : NULL, *stride = size ? fj_int64_tuple(m.ndim, m.strides) : NULL;
    PyObject *v = stride ? PyObject_CallMethod(base, "as_strided", "OO", size, stride) : NULL;
    Py_XDECREF(leaf);
    Py_XDECREF(base);
    Py_XDECREF(size);
    Py_XDECREF(stride);
    return v;
}

PyObject *fj_torch_fast_sig(PyObject *t)
{
    fj_TensorMeta m;
    if (!ready())
        return NULL;
    int r = fj_tensor_meta(t, &m);
    if (r <= 0)
        return NULL;
    int64_t buf[5 + 2 * FJ_TENSOR_MAX_DIMS];
    int64_t flags = m.requires_grad ? 1 : 0;
    if (m.requires_grad) {
        PyObject *leaf = PyObject_GetAttr(t, is_leaf_name);
        if (leaf == NULL)
            return NULL;
        flags |= leaf == Py_True ? 2 : 0;
        Py_DECREF(leaf);
    }
    PyObject *view = PyObject_CallMethodNoArgs(t, is_view_name);
    if (view == NULL)
        return NULL;
    flags |= view == Py_True ? 4 : 0;
    Py_DECREF(view);
    buf[0] = m.dtype;
    buf[1] = m.device_type;
    buf[2] = m.ndim;
    buf[3] = flags;
    buf[4] = (int64_t)m.dispatch_keys;
    memcpy(buf + 5, m.sizes, sizeof(int64_t) * (size_t)m.ndim);
    memcpy(buf + 5 + m.ndim, m.strides, sizeof(int64_t) * (size_t)m.ndim);
    return PyBytes_FromStringAndSize((const char *)buf, (Py_ssize_t)(sizeof(int64_t) * (size_t)(5 + 2 * m.ndim)));
}

/* _testing.torch_infer(target, args, kwargs=None) */
static PyObject *infer_py(PyObject *mod, PyObject *args)
{
    PyObject *target, *fargs, *fkw = NULL;
    if (!PyArg_ParseTuple(args, "OO!|O", &target, &PyTuple_Type, &fargs, &fkw))
        return NULL;
    if (fkw == Py_None)
        fkw = NULL;
    if (fkw != NULL && !PyDict_Check(fkw)) {
        PyErr_SetString(PyExc_TypeError, "torch_infer: kwargs must be a dict or None");
        return NULL;
    }
    const fj_OpDef *op = PyUnicode_Check(target) ? &fj_torch_method_row : fj_ops_for_callable(target);
    if (op == NULL || op->kind == FJ_OP_FUNC)
        op = &fj_torch_func_row;
    PyObject *r = fj_torch_infer(op, target, fargs, fkw);
    if (r == NULL && !PyErr_Occurred())
        Py_RETURN_NONE;
    return r;
}

/* _testing.torch_fast_fake(t) / torch_fresh_fake(fake) / torch_fast_sig(t): None when they do not answer */
static PyObject *or_none(PyObject *r)
{
    if (r == NULL && !PyErr_Occurred())
        Py_RETURN_NONE;
    return r;
}

static PyObject *fast_fake_py(PyObject *mod, PyObject *t)
{
    return or_none(fj_torch_fast_fake(t));
}

static PyObject *fresh_fake_py(PyObject *mod, PyObject *t)
{
    return or_none(fj_torch_fresh_fake(t));
}

static PyObject *fast_sig_py(PyObject *mod, PyObject *t)
{
    return or_none(fj_torch_fast_sig(t));
}

static PyMethodDef methods[] = {
    {"torch_fast_fake", fast_fake_py, METH_O, "torch_fast_fake(t): the reader-made fake of a CPU tensor, or None"},
    {"torch_fresh_fake", fresh_fake_py, METH_O, "torch_fresh_fake(fake): a fresh copy of a meta fake, or None"},
    {"torch_fast_sig", fast_sig_py, METH_O, "torch_fast_sig(t): the meta cache's bytes key of a tensor, or None"},
    {"torch_infer", infer_py, METH_VARARGS,
     "torch_infer(target, args, kwargs=None): the C rule's result fake for target(*args, **kwargs) on "
     "meta tensors, None when no rule applies"},
    {NULL, NULL, 0, NULL},
};

int fj_torch_infer_init(PyObject *testing)
{
    return PyModule_AddFunctions(testing, methods);
}

/* ------------------------------------------------------------ shape rules */

int fj_torch_shape_rule(const fj_OpDef *op, PyObject *target, const char **params)
{
    *params = NULL;
    int rr = state > 0 ? 1 : fj_torch_ready() ? setup_rules() : 0;
    if (rr <= 0) {
        if (rr < 0)
            PyErr_Clear();
        return FJ_TSH_NONE;
    }
    PyObject *i = NULL;
    switch (op->kind) {
    case FJ_OP_BINOP:
        *params = "a,b";
        if (op->code == NB_MATRIX_MULTIPLY)
            return FJ_TSH_MATMUL;
        /* & | ^ // % << >> **: broadcasting (the elementwise rules take + - * /) */
        return op->code == NB_AND || op->code == NB_OR || op->code == NB_XOR || op->code == NB_FLOOR_DIVIDE ||
                       op->code == NB_REMAINDER || op->code == NB_LSHIFT || op->code == NB_RSHIFT ||
                       op->code == NB_POWER || op->code == NB_ADD || op->code == NB_SUBTRACT ||
                       op->code == NB_MULTIPLY || op->code == NB_TRUE_DIVIDE
                   ? FJ_TSH_BROADCAST
                   : FJ_TSH_NONE;
    case FJ_OP_COMPARE:
        *params = "a,b";
        return FJ_TSH_BROADCAST;
    case FJ_OP_ATTR:
        if (PyUnicode_Check(target) && PyUnicode_CompareWithASCIIString(target, "T") == 0)
            return FJ_TSH_T;
        if (PyUnicode_Check(target) && PyUnicode_CompareWithASCIIString(target, "mT") == 0)
            return FJ_TSH_MT;
        return FJ_TSH_NONE;
    case FJ_OP_METHOD:
    case FJ_OP_FUNC:
        i = rule_entry(op, target, sh_by_method, sh_by_callable);
        break;
    default:
        return FJ_TSH_NONE;
    }
    if (i == NULL)
        return FJ_TSH_NONE;
    const ShapeRule *r = &shape_rules[PyLong_AsSsize_t(i)];
    *params = r->params;
    return r->kind;
}

int fj_torch_bind(const char *params, PyObject *args, PyObject *kw, PyObject **slots)
{
    return bind(params, args, kw, slots);
}

int fj_torch_may_raise_on_data(const fj_OpDef *op, PyObject *target, PyObject *fargs)
{
    int rr = state > 0 ? 1 : fj_torch_ready() ? setup_rules() : 0;
    if (rr <= 0) {
        if (rr < 0)
            PyErr_Clear();
        return 0;
    }
    if (op->kind == FJ_OP_BINOP || op->kind == FJ_OP_INPLACE) {
        /* // and % of integer tensors: a zero divisor raises */
        int code = op->kind == FJ_OP_INPLACE && op->code >= NB_INPLACE_ADD ? op->code - NB_INPLACE_ADD : op->code;
        if (code != NB_FLOOR_DIVIDE && code != NB_REMAINDER)
            return 0;
        if (!PyTuple_Check(fargs) || PyTuple_GET_SIZE(fargs) != 2)
            return 1;
        /* only an integer division can raise, and only by a divisor that may be
           zero: an integer tensor's values, or the constant 0 */
        int isint = 1;
        for (Py_ssize_t i = 0; i < 2 && isint; i++) {
            PyObject *a = PyTuple_GET_ITEM(fargs, i);
            if (fj_torch_is_tensor(a)) {
                PyObject *fp = PyObject_CallMethod(a, "is_floating_point", NULL);
                int isfp = fp == NULL ? -1 : PyObject_IsTrue(fp);
                Py_XDECREF(fp);
                if (isfp < 0) {
                    PyErr_Clear();
                    return 1;
                }
                isint = !isfp;
            }
            else
                isint = PyLong_Check(a);
        }
        if (!isint)
            return 0;
        PyObject *d = PyTuple_GET_ITEM(fargs, 1);
        if (fj_torch_is_tensor(d))
            return 1;
        int ovf = 0;
        long long v = PyLong_AsLongLongAndOverflow(d, &ovf);
        if (v == -1 && PyErr_Occurred())
            PyErr_Clear();
        return v == 0 && !ovf;
    }
    return rule_entry(op, target, raising_methods, raising_callables) != NULL;
}
