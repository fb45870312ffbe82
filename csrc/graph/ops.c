/*
** ops.c: the op table, its lookups, argument binding and dtype inference.
**
** Responsible for: the rows (one per way an operation is met: a NumPy
** callable, an ndarray method, an operator), resolving each row's target
** object once (lazily, importing numpy/operator), the identity and name
** lookups, binding call arguments to a row's parameters, and the dtype /
** result-kind inference: the operation runs once on tiny stand-ins (ones of
** shape (1,)*ndim with the input dtypes; Python scalars passed as they are,
** so NEP 50 weak-scalar promotion applies) with warnings silenced, and the
** result is cached per signature.  Also the static attributes (shape, ndim,
** dtype, size) that are not graph nodes.
**
** Not responsible for: shape rules (ops_shape.c), nodes and graphs (graph.c).
**
** Adding a NumPy function is one row in fj_op_table below.
*/
#include "fj_numpy.h"
#include "ops.h"
#include "graph.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

/* ---- the table ---------------------------------------------------------- */

#define UFUNC_KW "dtype,where?,casting,order?,subok?,signature?"
/* ufuncs: numpy.<n> is the ufunc itself; with UF1K/UF2K a fused kernel computes it ('fused': FJN_*) */
#define UFN(n, nin, params, fused)                                                                           \
    {n, FJ_OP_FUNC, "numpy", n, 0, NULL, FJ_SH_BROADCAST, FJ_DT_RUN, nin, params ",out," UFUNC_KW,           \
     FJ_OPF_OUT | FJ_OPF_UFUNC, n, fused}
#define UF1(n) UFN(n, 1, "x", 0)
#define UF2(n) UFN(n, 2, "x1,x2", 0)
#define UF1K(n, fused) UFN(n, 1, "x", fused)
#define UF2K(n, fused) UFN(n, 2, "x1,x2", fused)
/* operators: 'ufunc' is the ufunc ndarray's operator runs, 'fused' the kernel's code (0: none) */
#define BINOP(n, code, sym, ufunc, fused)                                                                    \
    {n, FJ_OP_BINOP, "operator", n, code, sym, FJ_SH_BROADCAST, FJ_DT_RUN, 2, "a,b", FJ_OPF_UFUNC, ufunc, fused}
#define RND(n, params, dt)                                                                                      \
    {n, FJ_OP_FUNC, "numpy.random", n, 0, NULL, FJ_SH_RANDOM, FJ_DT_RANDOM, 0, params,                          \
     FJ_OPF_CREATES | FJ_OPF_EFFECT | FJ_OPF_RAISES, NULL, 0, dt}
#define GEN(n, params, dt)                                                                                      \
    {n, FJ_OP_METHOD, NULL, n, 0, NULL, FJ_SH_RANDOM, FJ_DT_RANDOM, 0, "self," params,                          \
     FJ_OPF_CREATES | FJ_OPF_EFFECT | FJ_OPF_RAISES | FJ_OPF_GENERATOR, NULL, 0, dt}
#define INPLACE(n, code, sym) {n, FJ_OP_INPLACE, "operator", n, code, sym, FJ_SH_BROADCAST, FJ_DT_RUN, 2, "a,b", 0}
#define CMP(n, code, sym, ufunc, fused)                                                                      \
    {n, FJ_OP_COMPARE, "operator", n, code, sym, FJ_SH_BROADCAST, FJ_DT_RUN, 2, "a,b", 0, ufunc, fused}
#define UNARY(n, mod, code, sym, ufunc, fused)                                                               \
    {n, FJ_OP_UNARY, mod, n, code, sym, FJ_SH_BROADCAST, FJ_DT_RUN, 1, "a", FJ_OPF_UFUNC, ufunc, fused}
/* reductions: as numpy functions (first param 'a') and as methods ('self'); the trailing
   columns are the flags, then (where they apply) the ufunc reduced with and the fused code */
#define RED(n, rule, params, ...)                                                          \
    {n, FJ_OP_FUNC, "numpy", n, 0, NULL, rule, FJ_DT_RUN, 1, "a," params, __VA_ARGS__},    \
    {n, FJ_OP_METHOD, NULL, n, 0, NULL, rule, FJ_DT_RUN, 1, "self," params, __VA_ARGS__}
#define SUM_P "axis,dtype,out?,keepdims,initial?,where?"
#define MEAN_P "axis,dtype,out?,keepdims,where?"
#define STD_P "axis,dtype,out?,ddof,keepdims,where?,mean?,correction"
#define MAX_P "axis,out?,keepdims,initial?,where?"
#define ARG_P "axis,out?,keepdims"
#define ANY_P "axis,out?,keepdims,where?"
#define CREATE_P "dtype,order,device?,like?"
#define LIKE_P "dtype,order,subok,shape,device?"

#ifndef NB_ADD /* 3.11 BINARY_OP opargs (Include/opcode.h); compat.h brings them in when supported */
#define NB_ADD 0
#define NB_AND 1
#define NB_FLOOR_DIVIDE 2
#define NB_LSHIFT 3
#define NB_MATRIX_MULTIPLY 4
#define NB_MULTIPLY 5
#define NB_REMAINDER 6
#define NB_OR 7
#define NB_POWER 8
#define NB_RSHIFT 9
#define NB_SUBTRACT 10
#define NB_TRUE_DIVIDE 11
#define NB_XOR 12
#define NB_INPLACE_ADD 13
#define NB_INPLACE_AND 14
#define NB_INPLACE_FLOOR_DIVIDE 15
#define NB_INPLACE_LSHIFT 16
#define NB_INPLACE_MATRIX_MULTIPLY 17
#define NB_INPLACE_MULTIPLY 18
#define NB_INPLACE_REMAINDER 19
#define NB_INPLACE_OR 20
#define NB_INPLACE_POWER 21
#define NB_INPLACE_RSHIFT 22
#define NB_INPLACE_SUBTRACT 23
#define NB_INPLACE_TRUE_DIVIDE 24
#define NB_INPLACE_XOR 25
#endif

static const fj_OpDef fj_op_table[] = {
    /* Python operators (BINARY_OP, COMPARE_OP, unary opcodes) */
    BINOP("add", NB_ADD, "+", "add", FJN_ADD), BINOP("sub", NB_SUBTRACT, "-", "subtract", FJN_SUB),
    BINOP("mul", NB_MULTIPLY, "*", "multiply", FJN_MUL),
    BINOP("truediv", NB_TRUE_DIVIDE, "/", "true_divide", FJN_TDIV),
    BINOP("floordiv", NB_FLOOR_DIVIDE, "//", "floor_divide", FJN_FLOORDIV),
    BINOP("mod", NB_REMAINDER, "%", "remainder", FJN_MOD),
    {"pow", FJ_OP_BINOP, "operator", "pow", NB_POWER, "**", FJ_SH_BROADCAST, FJ_DT_RUN, 2, "a,b", 0, "power", FJN_POW},
    BINOP("and_", NB_AND, "&", "bitwise_and", FJN_BAND), BINOP("or_", NB_OR, "|", "bitwise_or", FJN_BOR),
    BINOP("xor", NB_XOR, "^", "bitwise_xor", FJN_BXOR),
    BINOP("lshift", NB_LSHIFT, "<<", "left_shift", 0), BINOP("rshift", NB_RSHIFT, ">>", "right_shift", 0),
    {"matmul", FJ_OP_BINOP, "operator", "matmul", NB_MATRIX_MULTIPLY, "@", FJ_SH_MATMUL, FJ_DT_RUN, 2, "a,b", 0},
    INPLACE("iadd", NB_INPLACE_ADD, "+="), INPLACE("isub", NB_INPLACE_SUBTRACT, "-="),
    INPLACE("imul", NB_INPLACE_MULTIPLY, "*="), INPLACE("itruediv", NB_INPLACE_TRUE_DIVIDE, "/="),
    INPLACE("ifloordiv", NB_INPLACE_FLOOR_DIVIDE, "//="), INPLACE("imod", NB_INPLACE_REMAINDER, "%="),
    INPLACE("ipow", NB_INPLACE_POWER, "**="), INPLACE("iand", NB_INPLACE_AND, "&="),
    INPLACE("ior", NB_INPLACE_OR, "|="), INPLACE("ixor", NB_INPLACE_XOR, "^="),
    INPLACE("ilshift", NB_INPLACE_LSHIFT, "<<="), INPLACE("irshift", NB_INPLACE_RSHIFT, ">>="),
    {"imatmul", FJ_OP_INPLACE, "operator", "imatmul", NB_INPLACE_MATRIX_MULTIPLY, "@=", FJ_SH_MATMUL, FJ_DT_RUN, 2, "a,b", 0},
    CMP("lt", Py_LT, "<", "less", FJN_LT), CMP("le", Py_LE, "<=", "less_equal", FJN_LE),
    CMP("eq", Py_EQ, "==", "equal", FJN_EQ), CMP("ne", Py_NE, "!=", "not_equal", FJN_NE),
    CMP("gt", Py_GT, ">", "greater", FJN_GT), CMP("ge", Py_GE, ">=", "greater_equal", FJN_GE),
    UNARY("neg", "operator", FJ_UNARY_NEG, "-", "negative", FJN_NEG),
    UNARY("pos", "operator", FJ_UNARY_POS, "+", "positive", FJN_POS),
    UNARY("invert", "operator", FJ_UNARY_INVERT, "~", "invert", FJN_INVERT),
    UNARY("abs", "builtins", FJ_UNARY_ABS, NULL, "absolute", FJN_ABS),
    /* unary ufuncs */
    UF1K("sin", FJN_SIN), UF1K("cos", FJN_COS), UF1K("tan", FJN_TAN), UF1K("arcsin", FJN_ARCSIN),
    UF1K("arccos", FJN_ARCCOS), UF1K("arctan", FJN_ARCTAN), UF1K("sinh", FJN_SINH), UF1K("cosh", FJN_COSH), UF1K("tanh", FJN_TANH), UF1("arcsinh"), UF1("arccosh"), UF1("arctanh"),
    UF1K("exp", FJN_EXP), UF1("exp2"), UF1K("expm1", FJN_EXPM1), UF1K("log", FJN_LOG), UF1K("log1p", FJN_LOG1P), UF1K("log2", FJN_LOG2),
    UF1K("log10", FJN_LOG10),
    UF1K("sqrt", FJN_SQRT), UF1K("cbrt", FJN_CBRT), UF1K("square", FJN_SQUARE), UF1K("reciprocal", FJN_RECIP),
    UF1K("abs", FJN_ABS), UF1K("absolute", FJN_ABS), UF1K("fabs", FJN_ABS), UF1("sign"),
    UF1K("floor", FJN_FLOOR), UF1K("ceil", FJN_CEIL), UF1K("trunc", FJN_TRUNC), UF1K("rint", FJN_RINT),
    UF1K("negative", FJN_NEG), UF1K("positive", FJN_POS), UF1K("invert", FJN_INVERT),
    UF1K("bitwise_not", FJN_INVERT), UF1K("logical_not", FJN_LNOT),
    UF1K("isnan", FJN_ISNAN), UF1K("isinf", FJN_ISINF), UF1K("isfinite", FJN_ISFINITE),
    UF1K("signbit", FJN_SIGNBIT), UF1("conjugate"), UF1("conj"),
    UF1("deg2rad"), UF1("rad2deg"), UF1("degrees"), UF1("radians"), UF1("spacing"),
    {"round", FJ_OP_FUNC, "numpy", "round", 0, NULL, FJ_SH_BROADCAST, FJ_DT_RUN, 1, "a,decimals,out?", 0},
    {"around", FJ_OP_FUNC, "numpy", "around", 0, NULL, FJ_SH_BROADCAST, FJ_DT_RUN, 1, "a,decimals,out?", 0},
    {"round", FJ_OP_METHOD, NULL, "round", 0, NULL, FJ_SH_BROADCAST, FJ_DT_RUN, 1, "self,decimals,out?", 0},
    {"real", FJ_OP_FUNC, "numpy", "real", 0, NULL, FJ_SH_BROADCAST, FJ_DT_RUN, 1, "val", 0},
    {"imag", FJ_OP_FUNC, "numpy", "imag", 0, NULL, FJ_SH_BROADCAST, FJ_DT_RUN, 1, "val", 0},
    /* binary ufuncs */
    UF2K("add", FJN_ADD), UF2K("subtract", FJN_SUB), UF2K("multiply", FJN_MUL), UF2K("divide", FJN_TDIV),
    UF2K("true_divide", FJN_TDIV), UF2K("floor_divide", FJN_FLOORDIV), UF2K("power", FJN_POWER), UF2("float_power"),
    UF2K("remainder", FJN_MOD), UF2K("mod", FJN_MOD), UF2("fmod"), UF2K("maximum", FJN_MAX),
    UF2K("minimum", FJN_MIN), UF2("fmax"), UF2("fmin"), UF2K("arctan2", FJN_ARCTAN2),
    UF2("hypot"), UF2("logaddexp"), UF2("logaddexp2"), UF2("copysign"), UF2("nextafter"),
    UF2K("bitwise_and", FJN_BAND), UF2K("bitwise_or", FJN_BOR), UF2K("bitwise_xor", FJN_BXOR),
    UF2("left_shift"), UF2("right_shift"), UF2K("logical_and", FJN_LAND), UF2K("logical_or", FJN_LOR),
    UF2K("logical_xor", FJN_LXOR), UF2K("equal", FJN_EQ), UF2K("not_equal", FJN_NE), UF2K("less", FJN_LT),
    UF2K("less_equal", FJN_LE), UF2K("greater", FJN_GT), UF2K("greater_equal", FJN_GE),
    UF2("heaviside"), UF2("gcd"), UF2("lcm"), UF2("ldexp"),
    /* selection */
    {"where", FJ_OP_FUNC, "numpy", "where", 0, NULL, FJ_SH_BROADCAST, FJ_DT_RUN, 3, "condition,x,y", FJ_OPF_SELECT,
     NULL, FJN_WHERE},
    {"clip", FJ_OP_FUNC, "numpy", "clip", 0, NULL, FJ_SH_BROADCAST, FJ_DT_RUN, 6, "a,a_min,a_max,out?,min,max,dtype,casting", 0},
    {"clip", FJ_OP_METHOD, NULL, "clip", 0, NULL, FJ_SH_BROADCAST, FJ_DT_RUN, 3, "self,min,max,out?,dtype,casting", 0},
    /* reductions */
    RED("sum", FJ_SH_REDUCE, SUM_P, FJ_OPF_AXIS0D, "add", FJN_RSUM),
    RED("prod", FJ_SH_REDUCE, SUM_P, FJ_OPF_AXIS0D, "multiply", 0),
    RED("mean", FJ_SH_REDUCE, MEAN_P, 0, NULL, FJN_RMEAN), RED("std", FJ_SH_REDUCE, STD_P, 0),
    RED("var", FJ_SH_REDUCE, STD_P, 0),
    RED("max", FJ_SH_REDUCE, MAX_P, FJ_OPF_NO_IDENTITY | FJ_OPF_AXIS0D, "maximum", FJN_RMAX),
    RED("min", FJ_SH_REDUCE, MAX_P, FJ_OPF_NO_IDENTITY | FJ_OPF_AXIS0D, "minimum", FJN_RMIN),
    {"amax", FJ_OP_FUNC, "numpy", "amax", 0, NULL, FJ_SH_REDUCE, FJ_DT_RUN, 1, "a," MAX_P,
     FJ_OPF_NO_IDENTITY | FJ_OPF_AXIS0D, "maximum", FJN_RMAX},
    {"amin", FJ_OP_FUNC, "numpy", "amin", 0, NULL, FJ_SH_REDUCE, FJ_DT_RUN, 1, "a," MAX_P,
     FJ_OPF_NO_IDENTITY | FJ_OPF_AXIS0D, "minimum", FJN_RMIN},
    RED("argmax", FJ_SH_ARGREDUCE, ARG_P, FJ_OPF_NO_IDENTITY | FJ_OPF_ARGMSG),
    RED("argmin", FJ_SH_ARGREDUCE, ARG_P, FJ_OPF_NO_IDENTITY | FJ_OPF_ARGMSG),
    RED("any", FJ_SH_REDUCE, ANY_P, FJ_OPF_AXIS0D, "logical_or", FJN_RANY),
    RED("all", FJ_SH_REDUCE, ANY_P, FJ_OPF_AXIS0D, "logical_and", FJN_RALL),
    /* linear algebra */
    {"matmul", FJ_OP_FUNC, "numpy", "matmul", 0, NULL, FJ_SH_MATMUL, FJ_DT_RUN, 2, "x1,x2,out?," UFUNC_KW, 0},
    {"dot", FJ_OP_FUNC, "numpy", "dot", 0, NULL, FJ_SH_DOT, FJ_DT_RUN, 2, "a,b,out?", 0},
    {"dot", FJ_OP_METHOD, NULL, "dot", 0, NULL, FJ_SH_DOT, FJ_DT_RUN, 2, "self,b,out?", 0},
    /* shape manipulation */
    {"reshape", FJ_OP_FUNC, "numpy", "reshape", 0, NULL, FJ_SH_RESHAPE, FJ_DT_SAME, 1, "a!,shape,order,copy", 0},
    {"reshape", FJ_OP_METHOD, NULL, "reshape", 0, NULL, FJ_SH_RESHAPE, FJ_DT_SAME, 1, "self,shape!,order,copy", FJ_OPF_VARARGS},
    {"transpose", FJ_OP_FUNC, "numpy", "transpose", 0, NULL, FJ_SH_TRANSPOSE, FJ_DT_SAME, 1, "a,axes", 0},
    {"transpose", FJ_OP_METHOD, NULL, "transpose", 0, NULL, FJ_SH_TRANSPOSE, FJ_DT_SAME, 1, "self,axes!", FJ_OPF_VARARGS},
    {"T", FJ_OP_ATTR, NULL, "T", 0, NULL, FJ_SH_TRANSPOSE, FJ_DT_SAME, 1, "self", 0},
    {"swapaxes", FJ_OP_FUNC, "numpy", "swapaxes", 0, NULL, FJ_SH_SWAPAXES, FJ_DT_SAME, 1, "a,axis1,axis2", 0},
    {"swapaxes", FJ_OP_METHOD, NULL, "swapaxes", 0, NULL, FJ_SH_SWAPAXES, FJ_DT_SAME, 1, "self,axis1!,axis2!", 0},
    {"expand_dims", FJ_OP_FUNC, "numpy", "expand_dims", 0, NULL, FJ_SH_EXPAND_DIMS, FJ_DT_SAME, 1, "a,axis", 0},
    {"squeeze", FJ_OP_FUNC, "numpy", "squeeze", 0, NULL, FJ_SH_SQUEEZE, FJ_DT_SAME, 1, "a,axis", FJ_OPF_AXIS0D},
    {"squeeze", FJ_OP_METHOD, NULL, "squeeze", 0, NULL, FJ_SH_SQUEEZE, FJ_DT_SAME, 1, "self,axis", FJ_OPF_AXIS0D},
    {"concatenate", FJ_OP_FUNC, "numpy", "concatenate", 0, NULL, FJ_SH_CONCATENATE, FJ_DT_RUN, 1, "arrays,axis,out?,dtype,casting", 0},
    {"stack", FJ_OP_FUNC, "numpy", "stack", 0, NULL, FJ_SH_STACK, FJ_DT_RUN, 1, "arrays,axis,out?,dtype,casting", 0},
    {"broadcast_to", FJ_OP_FUNC, "numpy", "broadcast_to", 0, NULL, FJ_SH_BROADCAST_TO, FJ_DT_SAME, 1, "array,shape,subok?", 0},
    {"astype", FJ_OP_METHOD, NULL, "astype", 0, NULL, FJ_SH_SAME, FJ_DT_RUN, 1, "self,dtype,order,casting,subok?,copy", 0,
     NULL, FJN_CAST},
    {"astype", FJ_OP_FUNC, "numpy", "astype", 0, NULL, FJ_SH_SAME, FJ_DT_RUN, 1, "x,dtype,copy,device?", 0},
    /* flattening and copies */
    {"ravel", FJ_OP_FUNC, "numpy", "ravel", 0, NULL, FJ_SH_RAVEL, FJ_DT_RUN, 1, "a,order", 0},
    {"ravel", FJ_OP_METHOD, NULL, "ravel", 0, NULL, FJ_SH_RAVEL, FJ_DT_RUN, 1, "self,order", 0},
    {"flatten", FJ_OP_METHOD, NULL, "flatten", 0, NULL, FJ_SH_RAVEL, FJ_DT_RUN, 1, "self,order", 0},
    {"copy", FJ_OP_FUNC, "numpy", "copy", 0, NULL, FJ_SH_SAME, FJ_DT_RUN, 1, "a,order,subok", 0},
    {"copy", FJ_OP_METHOD, NULL, "copy", 0, NULL, FJ_SH_SAME, FJ_DT_RUN, 1, "self,order", 0},
    /* rearranging and differencing (validated by the dtype run on stand-ins) */
    {"roll", FJ_OP_FUNC, "numpy", "roll", 0, NULL, FJ_SH_SAME, FJ_DT_RUN, 1, "a,shift!,axis", 0},
    {"flip", FJ_OP_FUNC, "numpy", "flip", 0, NULL, FJ_SH_SAME, FJ_DT_RUN, 1, "m,axis", 0},
    {"fliplr", FJ_OP_FUNC, "numpy", "fliplr", 0, NULL, FJ_SH_SAME, FJ_DT_RUN, 1, "m", 0},
    {"flipud", FJ_OP_FUNC, "numpy", "flipud", 0, NULL, FJ_SH_SAME, FJ_DT_RUN, 1, "m", 0},
    /* sizes that depend on the data (trace_dims.c gives the result its symbol) */
    {"flatnonzero", FJ_OP_FUNC, "numpy", "flatnonzero", 0, NULL, FJ_SH_NONZERO, FJ_DT_RUN, 1, "a", 0},
    {"argwhere", FJ_OP_FUNC, "numpy", "argwhere", 0, NULL, FJ_SH_NONZERO, FJ_DT_RUN, 1, "a", 0},
    {"diff", FJ_OP_FUNC, "numpy", "diff", 0, NULL, FJ_SH_DIFF, FJ_DT_RUN, 1, "a,n,axis,prepend,append", 0},
    {"tile", FJ_OP_FUNC, "numpy", "tile", 0, NULL, FJ_SH_TILE, FJ_DT_SAME, 1, "A,reps", 0},
    {"repeat", FJ_OP_FUNC, "numpy", "repeat", 0, NULL, FJ_SH_REPEAT, FJ_DT_SAME, 1, "a,repeats,axis", 0},
    {"repeat", FJ_OP_METHOD, NULL, "repeat", 0, NULL, FJ_SH_REPEAT, FJ_DT_SAME, 1, "self,repeats,axis", 0},
    {"average", FJ_OP_FUNC, "numpy", "average", 0, NULL, FJ_SH_AVERAGE, FJ_DT_RUN, 1,
     "a,axis,weights,returned?,keepdims", FJ_OPF_RAISES},
    {"real", FJ_OP_ATTR, NULL, "real", 0, NULL, FJ_SH_SAME, FJ_DT_RUN, 1, "self", 0},
    {"imag", FJ_OP_ATTR, NULL, "imag", 0, NULL, FJ_SH_SAME, FJ_DT_RUN, 1, "self", 0},
    /* cumulative ops and sorting (ndarray.sort sorts in place: not a row) */
    RED("cumsum", FJ_SH_CUMULATIVE, "axis,dtype,out?", 0), RED("cumprod", FJ_SH_CUMULATIVE, "axis,dtype,out?", 0),
    {"sort", FJ_OP_FUNC, "numpy", "sort", 0, NULL, FJ_SH_SORT, FJ_DT_RUN, 1, "a,axis,kind,order,stable", 0},
    RED("argsort", FJ_SH_ARGSORT, "axis,kind,order,stable", 0),
    /* array creation: a graph op even on constants (a fresh array per call) */
    {"zeros", FJ_OP_FUNC, "numpy", "zeros", 0, NULL, FJ_SH_CREATE, FJ_DT_CREATE, 0, "shape," CREATE_P, FJ_OPF_CREATES},
    {"ones", FJ_OP_FUNC, "numpy", "ones", 0, NULL, FJ_SH_CREATE, FJ_DT_CREATE, 0, "shape," CREATE_P, FJ_OPF_CREATES},
    {"empty", FJ_OP_FUNC, "numpy", "empty", 0, NULL, FJ_SH_CREATE, FJ_DT_CREATE, 0, "shape," CREATE_P, FJ_OPF_CREATES},
    {"full", FJ_OP_FUNC, "numpy", "full", 0, NULL, FJ_SH_CREATE, FJ_DT_CREATE, 0, "shape,fill_value," CREATE_P,
     FJ_OPF_CREATES},
    {"zeros_like", FJ_OP_FUNC, "numpy", "zeros_like", 0, NULL, FJ_SH_LIKE, FJ_DT_CREATE, 1, "a," LIKE_P, FJ_OPF_CREATES},
    {"ones_like", FJ_OP_FUNC, "numpy", "ones_like", 0, NULL, FJ_SH_LIKE, FJ_DT_CREATE, 1, "a," LIKE_P, FJ_OPF_CREATES},
    {"empty_like", FJ_OP_FUNC, "numpy", "empty_like", 0, NULL, FJ_SH_LIKE, FJ_DT_CREATE, 1, "prototype!," LIKE_P,
     FJ_OPF_CREATES},
    {"full_like", FJ_OP_FUNC, "numpy", "full_like", 0, NULL, FJ_SH_LIKE, FJ_DT_CREATE, 1, "a,fill_value," LIKE_P,
     FJ_OPF_CREATES},
    {"arange", FJ_OP_FUNC, "numpy", "arange", 0, NULL, FJ_SH_ARANGE, FJ_DT_CREATE, 0,
     "start,stop,step,dtype,device?,like?", FJ_OPF_CREATES},
    {"linspace", FJ_OP_FUNC, "numpy", "linspace", 0, NULL, FJ_SH_LINSPACE, FJ_DT_CREATE, 2,
     "start,stop,num,endpoint,retstep,dtype,axis,device?", FJ_OPF_CREATES},
    {"eye", FJ_OP_FUNC, "numpy", "eye", 0, NULL, FJ_SH_EYE, FJ_DT_CREATE, 0, "N,M,k,dtype,order,device?,like?",
     FJ_OPF_CREATES},
    /* np.linalg: LAPACK through NumPy when the graph runs (a singular matrix raises there:
       not after side effects the graph would lose) */
    {"inv", FJ_OP_FUNC, "numpy.linalg", "inv", 0, NULL, FJ_SH_LINALG, FJ_DT_RUN, 1, "a", FJ_OPF_RAISES},
    {"pinv", FJ_OP_FUNC, "numpy.linalg", "pinv", 0, NULL, FJ_SH_LINALG, FJ_DT_RUN, 1, "a,rcond,hermitian,rtol",
     FJ_OPF_RAISES},
    {"det", FJ_OP_FUNC, "numpy.linalg", "det", 0, NULL, FJ_SH_LINALG, FJ_DT_RUN, 1, "a", 0},
    {"solve", FJ_OP_FUNC, "numpy.linalg", "solve", 0, NULL, FJ_SH_LINALG, FJ_DT_RUN, 2, "a,b", FJ_OPF_RAISES},
    {"norm", FJ_OP_FUNC, "numpy.linalg", "norm", 0, NULL, FJ_SH_LINALG, FJ_DT_RUN, 1, "x,ord,axis,keepdims",
     FJ_OPF_RAISES},
    {"matrix_power", FJ_OP_FUNC, "numpy.linalg", "matrix_power", 0, NULL, FJ_SH_LINALG, FJ_DT_RUN, 1, "a,n",
     FJ_OPF_RAISES},
    /* np.random's legacy functions (the module's RandomState): each call draws when the graph runs,
       in the program's order, so the generator's state advances as it does in plain Python */
    RND("rand", "d0,d1,d2,d3,d4,d5", "float64"), RND("randn", "d0,d1,d2,d3,d4,d5", "float64"),
    RND("random", "size", "float64"), RND("random_sample", "size", "float64"),
    RND("standard_normal", "size", "float64"), RND("standard_exponential", "size", "float64"),
    RND("uniform", "low,high,size", "float64"), RND("normal", "loc,scale,size", "float64"),
    RND("exponential", "scale,size", "float64"), RND("poisson", "lam,size", "int64"),
    RND("randint", "low,high,size,dtype", "int64"),
    /* np.random.Generator's draws, on a generator that is a graph input */
    GEN("normal", "loc,scale,size", "float64"), GEN("uniform", "low,high,size", "float64"),
    GEN("random", "size,dtype,out?", "float64"), GEN("standard_normal", "size,dtype,out?", "float64"),
    GEN("exponential", "scale,size", "float64"), GEN("standard_exponential", "size,dtype,method,out?", "float64"),
    GEN("integers", "low,high,size,dtype,endpoint", "int64"), GEN("poisson", "lam,size", "int64"),
    /* indexing */
    {"getitem", FJ_OP_GETITEM, "operator", "getitem", 0, NULL, FJ_SH_GETITEM, FJ_DT_SAME, 1, "a,index", 0},
    /* item stores into an array (STORE_SUBSCR): in place, returns None */
    {"setitem", FJ_OP_FUNC, "operator", "setitem", 0, NULL, FJ_SH_SETITEM, FJ_DT_SAME, 1, "a!,index!,value!",
     FJ_OPF_MUTATES},
};
#define FJ_NROWS ((Py_ssize_t)(sizeof(fj_op_table) / sizeof(fj_op_table[0])))

/* Per-row state resolved at first use (parallel to fj_op_table). */
typedef struct {
    PyObject *target;                   /* strong: callable or name str; NULL if the module lacks it */
    char qualname[64];                  /* "numpy.sin" / "ndarray.sum" / "operator.add" */
    int nparams;
    char pname[FJ_OP_MAXPARAMS][16];    /* parameter names */
    unsigned char pnone[FJ_OP_MAXPARAMS]; /* accepted only as None */
    unsigned char pposonly[FJ_OP_MAXPARAMS]; /* positional-only */
} fj_OpInfo;

static fj_OpInfo fj_info[FJ_NROWS];
static int fj_ops_ready;
/* strong: dict id(callable) -> row index.  Keyed by identity: a lookup of
   a program object must not run its __hash__ or __eq__ (a weakref.ref hashes
   its referent, and raises once it died); the targets are held by fj_info. */
static PyObject *fj_by_callable;
static PyObject *fj_by_method;   /* strong: dict str -> row index */
static PyObject *fj_by_attr;     /* strong: dict str -> row index */
static PyObject *fj_by_gen;      /* strong: dict str -> row index (FJ_OPF_GENERATOR) */
/* torch operations (trace_torch.c): the node's target and label say which;
   metadata comes from torch's meta tensors, never from these rows' rules */
const fj_OpDef fj_torch_func_row = {"call", FJ_OP_FUNC, NULL, NULL, 0, NULL, 0, 0, 0, "", 0, NULL, 0};
const fj_OpDef fj_torch_method_row = {"method", FJ_OP_METHOD, NULL, NULL, 0, NULL, 0, 0, 0, "", 0, NULL, 0};
const fj_OpDef fj_torch_attr_row = {"attr", FJ_OP_ATTR, NULL, NULL, 0, NULL, 0, 0, 0, "", 0, NULL, 0};
const fj_OpDef fj_loop_row = {"loop", FJ_OP_FUNC, NULL, NULL, 0, NULL, 0, 0, 0, "", 0, NULL, 0};
const fj_OpDef fj_loop_item_row = {"loop_item", FJ_OP_FUNC, NULL, NULL, 0, NULL, 0, 0, 0, "", 0, NULL, 0};
const fj_OpDef fj_loop_exit_row = {"loop_exit", FJ_OP_FUNC, NULL, NULL, 0, NULL, 0, 0, 0, "", 0, NULL, 0};
const fj_OpDef fj_loop_pick_row = {"loop_pick", FJ_OP_FUNC, NULL, NULL, 0, NULL, 0, 0, 0, "", 0, NULL, 0};
/* NumPy calls of several results (trace_multi.c): the call (a tuple, or one array) and
   the reading of one of its items (operator.getitem); what they run is their target */
const fj_OpDef fj_multi_row = {"multi", FJ_OP_FUNC, NULL, NULL, 0, NULL, 0, 0, 0, "", FJ_OPF_RAISES, NULL, 0};
const fj_OpDef fj_multi_item_row = {"multi_item", FJ_OP_FUNC, NULL, NULL, 0, NULL, 0, 0, 0, "", 0, NULL, 0};

static const fj_OpDef *fj_by_binop[32];
static const fj_OpDef *fj_by_compare[6];
static const fj_OpDef *fj_by_unary[8];
static const fj_OpDef *fj_getitem_row;
static const fj_OpDef *fj_setitem_row;
static PyObject *fj_dtype_cache; /* strong: dict signature -> (dtype, vkind) */
static PyObject *fj_numpy;       /* strong: the numpy module */
static PyObject *fj_warnings;    /* strong: the warnings module */
static PyObject *fj_axis_error;  /* strong: numpy.exceptions.AxisError (or ValueError) */

#define ROW_INDEX(op) ((Py_ssize_t)((op) - fj_op_table))
/* A row of the table (not one of the torch rows, which have no info). */
#define IN_TABLE(op) ((op) >= fj_op_table && (op) < fj_op_table + FJ_NROWS)

static int parse_params(const fj_OpDef *op, fj_OpInfo *info)
{
    const char *p = op->params;
    info->nparams = 0;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        int optional = len > 0 && p[len - 1] == '?';
        int posonly = len > 0 && p[len - 1] == '!';
        size_t nlen = optional || posonly ? len - 1 : len;
        if (info->nparams >= FJ_OP_MAXPARAMS || nlen >= sizeof(info->pname[0])) {
            PyErr_Format(PyExc_SystemError, "framejit: bad params of op row %s", op->name);
            return -1;
        }
        memcpy(info->pname[info->nparams], p, nlen);
        info->pname[info->nparams][nlen] = '\0';
        info->pnone[info->nparams] = (unsigned char)optional;
        info->pposonly[info->nparams] = (unsigned char)posonly;
        info->nparams++;
        p = e ? e + 1 : p + len;
    }
    return 0;
}

#ifndef NDEBUG
/* A row's columns agree with what their readers rely on (debug builds). */
static int row_consistent(const fj_OpDef *op)
{
    int f = op->fused;
    int elementwise = f && !FJN_IS_REDUCTION(f) && f != FJN_WHERE && f != FJN_CAST && f != FJN_POW;
    return (!(op->flags & FJ_OPF_UFUNC) || (op->ufunc && op->shape_rule == FJ_SH_BROADCAST)) &&
           (!elementwise || op->ufunc) &&
           ((op->flags & (FJ_OPF_NO_IDENTITY | FJ_OPF_ARGMSG)) != FJ_OPF_NO_IDENTITY || op->ufunc);
}
#endif

/* Resolves every row's target and builds the lookup dicts.  0 or -1. */
static int ops_ready(void)
{
    PyObject *mod = NULL, *idx = NULL;
    if (fj_ops_ready)
        return 0;
    fj_by_callable = PyDict_New();
    fj_by_method = PyDict_New();
    fj_by_gen = PyDict_New();
    fj_by_attr = PyDict_New();
    fj_dtype_cache = PyDict_New();
    if (!fj_by_callable || !fj_by_method || !fj_by_attr || !fj_by_gen || !fj_dtype_cache)
        goto error;
    if (!(fj_numpy = PyImport_ImportModule("numpy")) || !(fj_warnings = PyImport_ImportModule("warnings")))
        goto error;
    mod = PyImport_ImportModule("numpy.exceptions");
    if (mod) {
        fj_axis_error = PyObject_GetAttrString(mod, "AxisError");
        Py_CLEAR(mod);
    }
    if (!fj_axis_error) {
        PyErr_Clear();
        fj_axis_error = Py_NewRef(PyExc_ValueError);
    }
    for (Py_ssize_t i = 0; i < FJ_NROWS; i++) {
        const fj_OpDef *op = &fj_op_table[i];
        fj_OpInfo *info = &fj_info[i];
        assert(row_consistent(op));
        if (parse_params(op, info) < 0)
            goto error;
        idx = PyLong_FromSsize_t(i);
        if (!idx)
            goto error;
        if (op->module) {
            snprintf(info->qualname, sizeof info->qualname, "%s.%s", op->module, op->attr);
            mod = PyImport_ImportModule(op->module);
            if (!mod)
                goto error;
            info->target = PyObject_GetAttrString(mod, op->attr);
            Py_CLEAR(mod);
            if (!info->target) { /* this NumPy lacks it: the row is inert */
                PyErr_Clear();
                Py_CLEAR(idx);
                continue;
            }
            PyObject *id = PyLong_FromVoidPtr(info->target);
            int has = id ? PyDict_Contains(fj_by_callable, id) : -1;
            if (has < 0 || (!has && PyDict_SetItem(fj_by_callable, id, idx) < 0)) {
                Py_XDECREF(id);
                goto error;
            }
            Py_DECREF(id);
        } else {
            int gen = (op->flags & FJ_OPF_GENERATOR) != 0;
            snprintf(info->qualname, sizeof info->qualname, gen ? "np.random.Generator.%s" : "ndarray.%s", op->attr);
            info->target = PyUnicode_InternFromString(op->attr);
            if (!info->target)
                goto error;
            PyObject *d = gen ? fj_by_gen : op->kind == FJ_OP_ATTR ? fj_by_attr : fj_by_method;
            if (PyDict_SetItem(d, info->target, idx) < 0)
                goto error;
        }
        Py_CLEAR(idx);
        switch (op->kind) {
        case FJ_OP_BINOP:
        case FJ_OP_INPLACE:
            if (op->code >= 0 && op->code < 32)
                fj_by_binop[op->code] = op;
            break;
        case FJ_OP_COMPARE:
            if (op->code >= 0 && op->code < 6)
                fj_by_compare[op->code] = op;
            break;
        case FJ_OP_UNARY:
            if (op->code >= 0 && op->code < 8)
                fj_by_unary[op->code] = op;
            break;
        case FJ_OP_GETITEM:
            fj_getitem_row = op;
            break;
        }
        if (op->flags & FJ_OPF_MUTATES)
            fj_setitem_row = op;
    }
    fj_ops_ready = 1;
    return 0;
error:
    Py_XDECREF(mod);
    Py_XDECREF(idx);
    return -1;
}

/* ---- lookups ------------------------------------------------------------ */

static const fj_OpDef *lookup_in(PyObject *d, PyObject *key)
{
    if (ops_ready() < 0) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *v = PyDict_GetItemWithError(d, key); /* borrowed */
    if (!v) {
        PyErr_Clear(); /* unhashable keys are simply unknown */
        return NULL;
    }
    return &fj_op_table[PyLong_AsSsize_t(v)];
}

const fj_OpDef *fj_ops_for_callable(PyObject *fn)
{
    if (ops_ready() < 0) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *id = PyLong_FromVoidPtr(fn);
    if (id == NULL) {
        PyErr_Clear();
        return NULL;
    }
    const fj_OpDef *op = lookup_in(fj_by_callable, id);
    Py_DECREF(id);
    return op;
}

const fj_OpDef *fj_ops_for_method(PyObject *name)
{
    if (ops_ready() < 0) {
        PyErr_Clear();
        return NULL;
    }
    return PyUnicode_Check(name) ? lookup_in(fj_by_method, name) : NULL;
}

const fj_OpDef *fj_ops_for_generator_method(PyObject *name)
{
    if (ops_ready() < 0) {
        PyErr_Clear();
        return NULL;
    }
    return PyUnicode_Check(name) ? lookup_in(fj_by_gen, name) : NULL;
}

const fj_OpDef *fj_ops_for_attr(PyObject *name)
{
    if (ops_ready() < 0) {
        PyErr_Clear();
        return NULL;
    }
    return PyUnicode_Check(name) ? lookup_in(fj_by_attr, name) : NULL;
}

static const fj_OpDef *ready_or_null(const fj_OpDef *op)
{
    if (ops_ready() < 0) {
        PyErr_Clear();
        return NULL;
    }
    return op && fj_info[ROW_INDEX(op)].target ? op : NULL;
}

const fj_OpDef *fj_ops_for_binop(int nb_oparg)
{
    if (ops_ready() < 0 || nb_oparg < 0 || nb_oparg >= 32) {
        PyErr_Clear();
        return NULL;
    }
    return ready_or_null(fj_by_binop[nb_oparg]);
}

const char *fj_ops_binop_symbol(int nb_oparg)
{
    /* the table itself (no import needed: a message about an operator the
       index could not load still names it) */
    for (Py_ssize_t i = 0; i < FJ_NROWS; i++)
        if ((fj_op_table[i].kind == FJ_OP_BINOP || fj_op_table[i].kind == FJ_OP_INPLACE) &&
            fj_op_table[i].code == nb_oparg && fj_op_table[i].symbol != NULL)
            return fj_op_table[i].symbol;
    return "?";
}

const fj_OpDef *fj_ops_for_compare(int op)
{
    if (ops_ready() < 0 || op < 0 || op >= 6) {
        PyErr_Clear();
        return NULL;
    }
    return ready_or_null(fj_by_compare[op]);
}

const fj_OpDef *fj_ops_for_unary(int which)
{
    if (ops_ready() < 0 || which < 0 || which >= 8) {
        PyErr_Clear();
        return NULL;
    }
    return ready_or_null(fj_by_unary[which]);
}

const fj_OpDef *fj_ops_for_getitem(void)
{
    if (ops_ready() < 0) {
        PyErr_Clear();
        return NULL;
    }
    return ready_or_null(fj_getitem_row);
}

const fj_OpDef *fj_ops_for_setitem(void)
{
    if (ops_ready() < 0) {
        PyErr_Clear();
        return NULL;
    }
    return ready_or_null(fj_setitem_row);
}

PyObject *fj_op_target(const fj_OpDef *op)
{
    if (ops_ready() < 0) {
        PyErr_Clear();
        return NULL;
    }
    return IN_TABLE(op) ? fj_info[ROW_INDEX(op)].target : NULL;
}

/* The ufunc of an FJ_OPF_UFUNC row, by its 'ufunc' column, when it takes
   'nargs' inputs and gives one output: new reference, or NULL (no
   exception set) for every other row. */
static PyObject *lookup_ufunc(const fj_OpDef *op, Py_ssize_t nargs)
{
    static PyTypeObject *ufunc_type = NULL;
    PyObject *u = NULL;
    if (!(op->flags & FJ_OPF_UFUNC) || fj_numpy == NULL)
        return NULL;
    if (ufunc_type == NULL) {
        PyObject *add = PyObject_GetAttrString(fj_numpy, "add");
        if (add == NULL) {
            PyErr_Clear();
            return NULL;
        }
        ufunc_type = Py_TYPE(add); /* numpy.ufunc: a static type of NumPy's */
        Py_DECREF(add);
    }
    if ((u = PyObject_GetAttrString(fj_numpy, op->ufunc)) == NULL)
        PyErr_Clear();
    if (u == NULL || Py_TYPE(u) != ufunc_type)
        goto no;
    PyObject *nin = PyObject_GetAttrString(u, "nin"), *nout = PyObject_GetAttrString(u, "nout");
    int ok = nin && nout && PyLong_AsSsize_t(nin) == nargs && PyLong_AsSsize_t(nout) == 1;
    Py_XDECREF(nin);
    Py_XDECREF(nout);
    PyErr_Clear();
    if (ok)
        return u;
no:
    Py_XDECREF(u);
    return NULL;
}

/* fj_op_ufunc's answers per row and operand count (1 or 2): the ufunc
   (strong), Py_None for "none", NULL for "not looked up yet". */
static PyObject *ufunc_of_row[FJ_NROWS][2];

PyObject *fj_op_ufunc(const fj_OpDef *op, Py_ssize_t nargs)
{
    Py_ssize_t row = op - fj_op_table;
    if (row < 0 || row >= FJ_NROWS || nargs < 1 || nargs > 2)
        return NULL;
    PyObject **slot = &ufunc_of_row[row][nargs - 1];
    if (*slot == NULL) {
        PyObject *u = lookup_ufunc(op, nargs);
        *slot = u != NULL ? u : Py_NewRef(Py_None);
    }
    return *slot == Py_None ? NULL : Py_NewRef(*slot);
}

const char *fj_op_qualname(const fj_OpDef *op)
{
    if (!IN_TABLE(op))
        return op == &fj_torch_method_row ? "a torch.Tensor method"
               : op == &fj_torch_attr_row ? "a torch.Tensor attribute"
                                          : "a torch function";
    return fj_info[ROW_INDEX(op)].qualname;
}

Py_ssize_t fj_ops_count(void)
{
    return FJ_NROWS;
}

const fj_OpDef *fj_ops_row(Py_ssize_t i)
{
    return i >= 0 && i < FJ_NROWS ? &fj_op_table[i] : NULL;
}

int fj_ops_param_index(const fj_OpDef *op, const char *name)
{
    const fj_OpInfo *info = &fj_info[ROW_INDEX(op)];
    for (int i = 0; i < info->nparams; i++)
        if (strcmp(info->pname[i], name) == 0)
            return i;
    return -1;
}

int fj_ops_axis_error(const char *fmt, ...)
{
    va_list va;
    va_start(va, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, va);
    va_end(va);
    if (msg) {
        PyErr_SetObject(fj_axis_error ? fj_axis_error : PyExc_ValueError, msg);
        Py_DECREF(msg);
    }
    return -1;
}

/* ---- binding ------------------------------------------------------------ */

/* Binds args/kwargs to the row's parameters (see fj_Bound).  0 or -1. */
static int bind(const fj_OpDef *op, PyObject *args, PyObject *kwargs, fj_Bound *b)
{
    const fj_OpInfo *info = &fj_info[ROW_INDEX(op)];
    const char *qn = info->qualname;
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    memset(b, 0, sizeof *b);
    if ((op->flags & FJ_OPF_VARARGS) && nargs > 2) {
        b->varargs = PyTuple_GetSlice(args, 1, nargs);
        if (!b->varargs)
            return -1;
        b->v[0] = PyTuple_GET_ITEM(args, 0);
        b->v[1] = b->varargs;
    } else {
        if (nargs > info->nparams) {
            PyErr_Format(PyExc_TypeError, "%s() takes at most %d positional arguments (%zd given)",
                         qn, info->nparams, nargs);
            return -1;
        }
        for (Py_ssize_t i = 0; i < nargs; i++)
            b->v[i] = PyTuple_GET_ITEM(args, i);
    }
    if (kwargs) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(kwargs, &pos, &k, &v)) {
            const char *ks = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
            if (!ks) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "%s(): keywords must be strings", qn);
                return -1;
            }
            int i = fj_ops_param_index(op, ks);
            if (i < 0 || (i == 0 && op->kind != FJ_OP_FUNC) || info->pposonly[i]) {
                PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%s'", qn, ks);
                return -1;
            }
            if (b->v[i]) {
                PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", qn, ks);
                return -1;
            }
            b->v[i] = v;
        }
    }
    for (int i = 0; i < info->nparams; i++) {
        if (info->pnone[i] && b->v[i]) {
            if (b->v[i] != Py_None) {
                PyErr_Format(PyExc_TypeError, "%s(): argument '%s' is not supported by framejit",
                             qn, info->pname[i]);
                return -1;
            }
            b->v[i] = NULL;
        }
    }
    return 0;
}

/* ---- dtype inference by a tiny run -------------------------------------- */

/* Signature of one argument for the cache (new reference; NULL with an
   exception when the value is unhashable). */
static PyObject *sig_of(PyObject *o)
{
    if (fj_Node_Check(o) && ((fj_Node *)o)->vkind == FJ_VAL_PYSCALAR)
        return sig_of(((fj_Node *)o)->example); /* a Python scalar: by value */
    if (fj_Node_Check(o)) {
        fj_Node *n = (fj_Node *)o;
        return Py_BuildValue("(iiO)", n->vkind, n->ndim, (PyObject *)n->dtype);
    }
    if (PyTuple_Check(o) || PyList_Check(o)) {
        Py_ssize_t len = PySequence_Fast_GET_SIZE(o);
        PyObject *t = PyTuple_New(len + 1);
        if (!t)
            return NULL;
        PyTuple_SET_ITEM(t, 0, Py_NewRef(PyTuple_Check(o) ? (PyObject *)&PyTuple_Type : (PyObject *)&PyList_Type));
        for (Py_ssize_t i = 0; i < len; i++) {
            PyObject *s = sig_of(PySequence_Fast_GET_ITEM(o, i));
            if (!s) {
                Py_DECREF(t);
                return NULL;
            }
            PyTuple_SET_ITEM(t, i + 1, s);
        }
        return t;
    }
    /* A constant: the key never holds the program's object (a shared small
       int or string held by the cache would change what sys.getrefcount
       says, and keep it alive) and never runs its code (__hash__, __eq__).
       Builtin scalars and NumPy scalars are keyed by type and repr (C code;
       ints in hex: no digit limit, and NaNs then match); singletons and
       dtypes by themselves; anything else is not cached. */
    PyTypeObject *t = Py_TYPE(o);
    if (o == Py_None || o == Py_True || o == Py_False || o == Py_Ellipsis ||
        PyArray_DescrCheck(o) ||
        (t == &PyType_Type && !(((PyTypeObject *)o)->tp_flags & Py_TPFLAGS_HEAPTYPE)))
        return PyTuple_Pack(2, (PyObject *)t, o); /* static types (np.float32) live forever */
    PyObject *r = NULL;
    if (t == &PyLong_Type)
        r = PyNumber_ToBase(o, 16);
    else if (t == &PyFloat_Type || t == &PyComplex_Type || t == &PyUnicode_Type ||
             t == &PyBytes_Type || (PyArray_IsScalar(o, Generic) && PyArray_IsScalar(o, Number)))
        r = PyObject_Repr(o);
    else {
        PyErr_SetString(PyExc_TypeError, "not a value constant");
        return NULL;
    }
    PyObject *key = r ? PyTuple_Pack(2, (PyObject *)t, r) : NULL;
    Py_XDECREF(r);
    return key;
}

static PyObject *standin(PyObject *o);

static PyObject *standin_item(PyObject *o, void *unused)
{
    return standin(o);
}

/* A stand-in for 'o': nodes become ones of shape (1,)*ndim (NumPy scalars
   for NPSCALAR nodes), containers are mapped, constants kept.  New ref. */
static PyObject *standin(PyObject *o)
{
    if (fj_Node_Check(o) && ((fj_Node *)o)->vkind == FJ_VAL_PYSCALAR)
        return Py_NewRef(((fj_Node *)o)->example);
    if (fj_Node_Check(o)) {
        fj_Node *n = (fj_Node *)o;
        npy_intp dims[FJ_MAX_NDIM];
        int nd = n->vkind == FJ_VAL_NPSCALAR ? 0 : n->ndim;
        for (int i = 0; i < nd; i++)
            dims[i] = 1;
        Py_INCREF(n->dtype);
        PyObject *arr = PyArray_NewFromDescr(&PyArray_Type, n->dtype, nd, dims, NULL, NULL, 0, NULL);
        if (!arr)
            return NULL;
        PyObject *one = PyLong_FromLong(1);
        if (!one || PyArray_FillWithScalar((PyArrayObject *)arr, one) < 0) {
            PyErr_Clear();
            memset(PyArray_DATA((PyArrayObject *)arr), 0, PyArray_NBYTES((PyArrayObject *)arr));
            if (PyDataType_REFCHK(n->dtype)) { /* object arrays must hold objects */
                Py_XDECREF(one);
                Py_DECREF(arr);
                PyErr_Format(PyExc_TypeError, "unsupported dtype %R", (PyObject *)n->dtype);
                return NULL;
            }
        }
        Py_XDECREF(one);
        if (n->vkind == FJ_VAL_NPSCALAR)
            return PyArray_Return((PyArrayObject *)arr);
        return arr;
    }
    if (PyTuple_Check(o) || PyList_Check(o))
        return fj_map_items(o, PyTuple_Check(o), standin_item, NULL);
    return Py_NewRef(o);
}

/*
** Swaps warnings.filters for 'filters' (a new reference, stolen) and tells
** the C warnings machinery; *old receives the previous list (new ref).
** What warnings.catch_warnings + simplefilter do, without their Python
** code (which calls builtins the program may have patched).  0 or -1.
*/
static int swap_warning_filters(PyObject *filters, PyObject **old)
{
    if (filters == NULL)
        return -1;
    if (old != NULL && (*old = PyObject_GetAttrString(fj_warnings, "filters")) == NULL) {
        Py_DECREF(filters);
        return -1;
    }
    int r = PyObject_SetAttrString(fj_warnings, "filters", filters);
    Py_DECREF(filters);
    PyObject *done = r < 0 ? NULL : PyObject_CallMethod(fj_warnings, "_filters_mutated", NULL);
    Py_XDECREF(done);
    if (done == NULL && old != NULL)
        Py_CLEAR(*old);
    return done == NULL ? -1 : 0;
}

/* Calls 'fn' (a method name when 'is_method') inside numpy.errstate(all=
   'ignore') with warnings ignored (warnings.filters swapped).  New ref. */
static PyObject *call_quietly(PyObject *fn, int is_attr, int is_method, PyObject *args, PyObject *kwargs)
{
    PyObject *es = NULL, *cw = NULL, *res = NULL, *tmp = NULL;
    PyObject *et, *ev, *tb;
    es = PyObject_GetAttrString(fj_numpy, "errstate");
    if (!es)
        goto error;
    tmp = Py_BuildValue("{s:s}", "all", "ignore");
    if (!tmp)
        goto error;
    Py_SETREF(es, PyObject_VectorcallDict(es, NULL, 0, tmp));
    Py_CLEAR(tmp);
    if (!es)
        goto error;
    if (!(tmp = PyObject_CallMethod(es, "__enter__", NULL)))
        goto error;
    Py_CLEAR(tmp);
    /* cw: the program's warnings.filters, put back below */
    if (swap_warning_filters(Py_BuildValue("[(sOOOi)]", "ignore", Py_None, PyExc_Warning,
                                           Py_None, 0),
                             &cw) < 0) {
        PyErr_Fetch(&et, &ev, &tb);
        Py_XDECREF(PyObject_CallMethod(es, "__exit__", "OOO", Py_None, Py_None, Py_None));
        PyErr_Restore(et, ev, tb);
        goto error;
    }
    if (is_attr) {
        res = PyObject_GetAttr(PyTuple_GET_ITEM(args, 0), fn);
    } else if (is_method) {
        PyObject *m = PyObject_GetAttr(PyTuple_GET_ITEM(args, 0), fn);
        PyObject *rest = m ? PyTuple_GetSlice(args, 1, PyTuple_GET_SIZE(args)) : NULL;
        res = rest ? PyObject_Call(m, rest, kwargs) : NULL;
        Py_XDECREF(m);
        Py_XDECREF(rest);
    } else {
        res = PyObject_Call(fn, args, kwargs);
    }
    PyErr_Fetch(&et, &ev, &tb);
    if (swap_warning_filters(Py_NewRef(cw), NULL) < 0)
        PyErr_WriteUnraisable(fj_warnings);
    Py_XDECREF(PyObject_CallMethod(es, "__exit__", "OOO", Py_None, Py_None, Py_None));
    if (et) {
        PyErr_Restore(et, ev, tb);
        Py_CLEAR(res);
    } else if (PyErr_Occurred()) {
        Py_CLEAR(res);
    }
    Py_DECREF(es);
    Py_DECREF(cw);
    return res;
error:
    Py_XDECREF(es);
    Py_XDECREF(cw);
    Py_XDECREF(tmp);
    return NULL;
}

/* Re-raises the current exception as "qualname: message" with the nearest
   builtin exception type (so numpy's own subclasses with special
   constructors still work); the original is the __cause__. */
static void prefix_error(const fj_OpDef *op)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (!et)
        return;
    PyErr_NormalizeException(&et, &ev, &tb);
    PyTypeObject *t = (PyTypeObject *)et;
    while (t && (t->tp_flags & Py_TPFLAGS_HEAPTYPE))
        t = t->tp_base;
    if (!t)
        t = (PyTypeObject *)PyExc_TypeError;
    if (PyType_IsSubtype((PyTypeObject *)et, (PyTypeObject *)fj_axis_error))
        t = (PyTypeObject *)fj_axis_error;
    PyObject *msg = ev ? PyObject_Str(ev) : NULL;
    if (!msg) {
        PyErr_Clear();
        msg = PyUnicode_FromString("?");
    }
    PyErr_Format((PyObject *)t, "%s: %U", fj_op_qualname(op), msg);
    Py_XDECREF(msg);
    PyObject *et2, *ev2, *tb2;
    PyErr_Fetch(&et2, &ev2, &tb2);
    PyErr_NormalizeException(&et2, &ev2, &tb2);
    if (ev2 && ev) {
        if (tb)
            PyException_SetTraceback(ev, tb);
        PyException_SetCause(ev2, Py_NewRef(ev));
    }
    PyErr_Restore(et2, ev2, tb2);
    Py_DECREF(et);
    Py_XDECREF(ev);
    Py_XDECREF(tb);
}

/* True when 'o' is, or holds in tuples, lists and dict values, an array or
   NumPy-scalar node (data, not a Python scalar's known value). */
static int holds_data(PyObject *o, int depth)
{
    if (fj_Node_Check(o))
        return ((fj_Node *)o)->vkind != FJ_VAL_PYSCALAR;
    if (depth > 64)
        return 1;
    if (PyTuple_Check(o) || PyList_Check(o)) {
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); i++)
            if (holds_data(PySequence_Fast_GET_ITEM(o, i), depth + 1))
                return 1;
    } else if (PyDict_Check(o)) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(o, &pos, &k, &v))
            if (holds_data(v, depth + 1))
                return 1;
    }
    return 0;
}

/* Dtype and kind of the result by running the op on stand-ins (cached). */
static int infer_by_running(const fj_OpDef *op, PyObject *args, PyObject *kwargs, fj_Meta *out)
{
    PyObject *key = NULL, *sargs = NULL, *skw = NULL, *res = NULL, *val = NULL;
    PyObject *k = sig_of(args);
    PyObject *kk = k ? (kwargs ? sig_of(kwargs) : Py_NewRef(Py_None)) : NULL;
    if (kwargs && kk == NULL && k) { /* dicts: signature of the items */
        PyErr_Clear();
        PyObject *items = PyDict_Items(kwargs);
        kk = items ? sig_of(items) : NULL;
        Py_XDECREF(items);
    }
    if (k && kk)
        key = Py_BuildValue("(nOO)", ROW_INDEX(op), k, kk);
    Py_XDECREF(k);
    Py_XDECREF(kk);
    if (!key)
        PyErr_Clear(); /* unhashable constant: no caching */
    if (key) {
        PyObject *hit = PyDict_GetItemWithError(fj_dtype_cache, key);
        if (hit) {
            out->dtype = (PyArray_Descr *)Py_NewRef(PyTuple_GET_ITEM(hit, 0));
            out->vkind = (int)PyLong_AsLong(PyTuple_GET_ITEM(hit, 1));
            Py_DECREF(key);
            return 0;
        }
        if (PyErr_Occurred())
            goto error;
    }
    sargs = standin(args);
    if (!sargs)
        goto error;
    if (kwargs) {
        skw = PyDict_New();
        if (!skw)
            goto error;
        Py_ssize_t pos = 0;
        PyObject *kw, *v;
        while (PyDict_Next(kwargs, &pos, &kw, &v)) {
            PyObject *s = standin(v);
            if (!s || PyDict_SetItem(skw, kw, s) < 0) {
                Py_XDECREF(s);
                goto error;
            }
            Py_DECREF(s);
        }
    }
    res = call_quietly(fj_op_target(op), op->kind == FJ_OP_ATTR, op->kind == FJ_OP_METHOD, sargs, skw);
    if (!res)
        goto error;
    int known = fj_value_meta(res, &out->vkind, &out->dtype, &out->example);
    if (known < 0)
        goto error;
    if (!known) {
        PyErr_Format(PyExc_TypeError, "result of type %.100s is not an array", Py_TYPE(res)->tp_name);
        goto error;
    }
    if (out->vkind == FJ_VAL_PYSCALAR) {
        /* arithmetic on Python scalars (symbolic ints): never cached, the
           value is the point; a Python number computed from an array's data
           (1j * a.sum() is a Python complex) has no such value here, only
           the stand-ins' */
        if (holds_data(args, 0) || (kwargs != NULL && holds_data(kwargs, 0))) {
            Py_CLEAR(out->dtype);
            Py_CLEAR(out->example);
            PyErr_Format(PyExc_TypeError, "a Python %.100s computed from an array's data is not traced",
                         Py_TYPE(res)->tp_name);
            goto error;
        }
        Py_CLEAR(key);
    }
    if (key) {
        if (PyDict_GET_SIZE(fj_dtype_cache) > 20000)
            PyDict_Clear(fj_dtype_cache);
        val = Py_BuildValue("(Oi)", (PyObject *)out->dtype, out->vkind);
        if (!val || PyDict_SetItem(fj_dtype_cache, key, val) < 0) {
            Py_CLEAR(out->dtype);
            goto error;
        }
    }
    Py_XDECREF(key);
    Py_DECREF(sargs);
    Py_XDECREF(skw);
    Py_DECREF(res);
    Py_XDECREF(val);
    return 0;
error:
    prefix_error(op);
    Py_XDECREF(key);
    Py_XDECREF(sargs);
    Py_XDECREF(skw);
    Py_XDECREF(res);
    Py_XDECREF(val);
    return -1;
}

/* ---- creation functions ------------------------------------------------ */

/* The argument bound to parameter 'name' in (args, kwargs): borrowed, NULL
   when absent. */
static PyObject *get_param(const fj_OpDef *op, PyObject *args, PyObject *kwargs, const char *name)
{
    int i = fj_ops_param_index(op, name);
    if (i < 0)
        return NULL;
    if (i < PyTuple_GET_SIZE(args))
        return PyTuple_GET_ITEM(args, i);
    return kwargs ? PyDict_GetItemString(kwargs, name) : NULL;
}

/* Replaces the argument bound to 'name' (present) by 'v' (stolen) in the
   private copies 'args' (a fresh tuple) and 'kwargs'.  0 or -1. */
static int set_param(const fj_OpDef *op, PyObject *args, PyObject *kwargs, const char *name, PyObject *v)
{
    int i = fj_ops_param_index(op, name);
    if (!v)
        return -1;
    if (i >= 0 && i < PyTuple_GET_SIZE(args)) {
        Py_SETREF(PyTuple_GET_ITEM(args, i), v);
        return 0;
    }
    int r = kwargs ? PyDict_SetItemString(kwargs, name, v) : 0;
    Py_DECREF(v);
    return r;
}

/* (1,)*nd: new reference. */
static PyObject *ones_tuple(int nd)
{
    PyObject *t = PyTuple_New(nd);
    for (int i = 0; t && i < nd; i++)
        PyTuple_SET_ITEM(t, i, PyLong_FromLong(1));
    for (int i = 0; t && i < nd; i++)
        if (!PyTuple_GET_ITEM(t, i))
            Py_CLEAR(t);
    return t;
}

/* 'val' as an object of the type of 'like' (int, float, bool or a NumPy
   scalar type): new reference. */
static PyObject *same_type_value(PyObject *like, long val)
{
    if (PyBool_Check(like))
        return PyBool_FromLong(val);
    if (PyLong_CheckExact(like))
        return PyLong_FromLong(val);
    if (PyFloat_CheckExact(like))
        return PyFloat_FromDouble((double)val);
    PyObject *v = PyLong_FromLong(val);
    PyObject *r = v ? PyObject_CallOneArg((PyObject *)Py_TYPE(like), v) : NULL;
    Py_XDECREF(v);
    return r;
}

static PyObject *py_value(PyObject *o, int *is_node);

/*
** Dtype of a creation function: NumPy runs on the same call with every size
** shrunk (shape -> (1,)*ndim, arange's bounds -> a length-0 range of the
** same types, linspace's num -> at most 2, eye's N and M -> 1), so the trace
** cost never grows with the array size and the cache is shared by sizes.
** Checks the result is an array and not too big.  0 or -1.
*/
static int infer_create(const fj_OpDef *op, PyObject *args, PyObject *kwargs, fj_Meta *out)
{
    PyObject *targs = NULL, *tkw = NULL, *v;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (!(targs = PyTuple_New(n)))
        goto error;
    for (Py_ssize_t i = 0; i < n; i++)
        PyTuple_SET_ITEM(targs, i, Py_NewRef(PyTuple_GET_ITEM(args, i)));
    if (kwargs && !(tkw = PyDict_Copy(kwargs)))
        goto error;
    switch (op->shape_rule) {
    case FJ_SH_CREATE:
    case FJ_SH_LIKE:
        v = get_param(op, targs, tkw, "shape");
        if (v && v != Py_None && set_param(op, targs, tkw, "shape", ones_tuple(out->ndim)) < 0)
            goto error;
        break;
    case FJ_SH_ARANGE: {
        static const char *names[] = {"start", "stop", "step"};
        for (int i = 0; i < 3; i++) {
            v = get_param(op, targs, tkw, names[i]);
            int is_node = 0;
            PyObject *pv = v ? py_value(v, &is_node) : NULL;
            if (is_node && pv != NULL)
                v = pv; /* a symbolic int (np.arange(n)): its value's type */
            if (v && v != Py_None && set_param(op, targs, tkw, names[i], same_type_value(v, i == 2)) < 0)
                goto error;
        }
        break;
    }
    case FJ_SH_LINSPACE:
        v = get_param(op, targs, tkw, "num");
        if (v) {
            Py_ssize_t num = PyNumber_AsSsize_t(v, PyExc_OverflowError);
            if (num == -1 && PyErr_Occurred())
                goto error;
            if (set_param(op, targs, tkw, "num", PyLong_FromSsize_t(num < 2 ? num : 2)) < 0)
                goto error;
        }
        break;
    case FJ_SH_EYE:
        if (set_param(op, targs, tkw, "N", PyLong_FromLong(1)) < 0)
            goto error;
        v = get_param(op, targs, tkw, "M");
        if (v && v != Py_None && set_param(op, targs, tkw, "M", PyLong_FromLong(1)) < 0)
            goto error;
        break;
    }
    if (infer_by_running(op, targs, tkw, out) < 0)
        goto error;
    Py_CLEAR(targs);
    Py_CLEAR(tkw);
    if (out->vkind != FJ_VAL_ARRAY) {
        PyErr_Format(PyExc_TypeError, "%s: the result is not an array", fj_op_qualname(op));
        goto error;
    }
    if (op->shape_rule == FJ_SH_ARANGE && out->dtype->type_num == NPY_BOOL && out->shape[0] > 2) {
        PyErr_Format(PyExc_TypeError,
                     "%s: arange() is only supported for booleans when the result has at most length 2.",
                     fj_op_qualname(op));
        goto error;
    }
    npy_intp size = PyDataType_ELSIZE(out->dtype);
    for (int i = 0; i < out->ndim; i++) {
        if (out->shape[i] != 0 && size > NPY_MAX_INTP / out->shape[i]) {
            int zero = 0;
            for (int j = 0; j < out->ndim; j++)
                zero |= out->shape[j] == 0;
            if (zero)
                break;
            PyErr_Format(PyExc_ValueError,
                         "%s: array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum "
                         "possible size.",
                         fj_op_qualname(op));
            goto error;
        }
        size *= out->shape[i];
    }
    return 0;
error:
    Py_CLEAR(out->dtype);
    Py_XDECREF(targs);
    Py_XDECREF(tkw);
    return -1;
}

/* ---- Python-scalar powers ----------------------------------------------- */

/* The Python value of 'o' when it is a Python int/float/bool constant or a
   Python-scalar node (its example); NULL otherwise.  Borrowed. */
static PyObject *py_value(PyObject *o, int *is_node)
{
    *is_node = 0;
    if (fj_Node_Check(o)) {
        if (((fj_Node *)o)->vkind != FJ_VAL_PYSCALAR)
            return NULL;
        *is_node = 1;
        return ((fj_Node *)o)->example;
    }
    return PyLong_Check(o) || PyFloat_CheckExact(o) ? o : NULL;
}

/*
** Python's '**' on Python scalars has a result type that can depend on the
** operands' values (2 ** n is a float for n < 0, x ** 0.5 is complex for
** x < 0).  A traced Python scalar is guarded by type only, so refuse the
** combinations whose type its value could change.  0, or -1 with a
** TypeError.
*/
static int check_pow(const fj_OpDef *op, PyObject *args)
{
    int bnode, enode;
    if (PyTuple_GET_SIZE(args) != 2)
        return 0;
    PyObject *base = py_value(PyTuple_GET_ITEM(args, 0), &bnode);
    PyObject *ex = py_value(PyTuple_GET_ITEM(args, 1), &enode);
    if (!base || !ex || !(bnode || enode))
        return 0;
    int stable;
    if (PyLong_Check(ex)) {
        /* int exponent: a float base stays float; an int base gives int or
           float by the exponent's sign, fixed if the exponent is a constant */
        stable = !enode || PyFloat_Check(base);
    } else {
        /* float exponent: complex for a negative base unless integral */
        double e = PyFloat_AS_DOUBLE(ex), bv = PyFloat_Check(base) ? PyFloat_AS_DOUBLE(base) : 0.0;
        int integral = !enode && isfinite(e) && floor(e) == e;
        int base_nonneg = 0;
        if (!bnode && PyLong_Check(base)) {
            PyObject *zero = PyLong_FromLong(0);
            base_nonneg = zero ? PyObject_RichCompareBool(base, zero, Py_GE) : -1;
            Py_XDECREF(zero);
            if (base_nonneg < 0)
                return -1;
        } else if (!bnode) {
            base_nonneg = bv >= 0.0;
        }
        stable = integral || base_nonneg;
    }
    if (stable)
        return 0;
    PyErr_Format(PyExc_TypeError,
                 "%s: the type of a power of Python scalars here depends on the sign of a traced value",
                 fj_op_qualname(op));
    return -1;
}

/*
** A ufunc's 'out' argument (FJ_OPF_OUT rows): absent or None, or an array
** node the result is written into.  The operands must broadcast to exactly
** its shape (NumPy never broadcasts 'out'); the result is 'out' itself, so
** its shape is out's.  Casting (same_kind) is checked by the tiny run, which
** passes out's stand-in.  0 or -1.
*/
static int out_param(const fj_OpDef *op, fj_Bound *b, fj_Meta *out)
{
    int i = fj_ops_param_index(op, "out");
    PyObject *o = i >= 0 ? b->v[i] : NULL;
    if (o == NULL || o == Py_None)
        return 0;
    if (!fj_Node_Check(o) || ((fj_Node *)o)->vkind != FJ_VAL_ARRAY) {
        PyErr_Format(PyExc_TypeError, "%s: 'out' must be a traced array (a tuple or other value is not traced)",
                     fj_op_qualname(op));
        return -1;
    }
    fj_Node *n = (fj_Node *)o;
    int same = n->ndim >= out->ndim;
    for (int d = 0; same && d < out->ndim; d++) {
        npy_intp r = out->shape[out->ndim - 1 - d], w = n->shape[n->ndim - 1 - d];
        same = r == w || r == 1;
    }
    if (!same) {
        PyErr_Format(PyExc_ValueError, "%s: non-broadcastable output operand", fj_op_qualname(op));
        return -1;
    }
    out->ndim = n->ndim;
    memcpy(out->shape, n->shape, sizeof(npy_intp) * (size_t)n->ndim);
    return 0;
}

/*
** a[index] = value casts the value into a's dtype the way NumPy's item
** assignment does (unsafe casting, but a Python int out of range or a NaN
** into an integer array raises): runs the assignment once into a 0-d array
** of a's dtype with the value's stand-in (constants as they are).  0 or -1.
*/
static int setitem_cast_check(const fj_OpDef *op, fj_Bound *b)
{
    fj_Node *a = b->v[0] && fj_Node_Check(b->v[0]) ? (fj_Node *)b->v[0] : NULL;
    if (a == NULL || b->v[2] == NULL) {
        PyErr_Format(PyExc_TypeError, "%s: expected a traced array and a value", fj_op_qualname(op));
        return -1;
    }
    fj_Node *vn = fj_Node_Check(b->v[2]) ? (fj_Node *)b->v[2] : NULL;
    if (vn != NULL && vn->vkind == FJ_VAL_NPSCALAR && (a->dtype->kind == 'i' || a->dtype->kind == 'u') &&
        !PyArray_CanCastTypeTo(vn->dtype, a->dtype, NPY_SAFE_CASTING)) {
        /* a NumPy scalar is converted by value (a NaN, an infinity or an int out of
           range raises), unlike an array: whether it raises depends on data */
        PyErr_Format(PyExc_TypeError, "%s: storing a %S scalar into a %S array may raise for some values",
                     fj_op_qualname(op), (PyObject *)vn->dtype, (PyObject *)a->dtype);
        return -1;
    }
    Py_INCREF(a->dtype);
    PyObject *t = PyArray_Zeros(0, NULL, a->dtype, 0);
    PyObject *sv = t ? standin(b->v[2]) : NULL;
    PyObject *args = sv ? PyTuple_Pack(3, t, Py_Ellipsis, sv) : NULL;
    PyObject *r = args ? call_quietly(fj_op_target(op), 0, 0, args, NULL) : NULL;
    Py_XDECREF(t);
    Py_XDECREF(sv);
    Py_XDECREF(args);
    if (r == NULL) {
        prefix_error(op);
        return -1;
    }
    Py_DECREF(r);
    return 0;
}

int fj_value_meta(PyObject *v, int *vkind, PyArray_Descr **dtype, PyObject **example)
{
    if (PyArray_Check(v)) {
        *vkind = FJ_VAL_ARRAY;
        *dtype = (PyArray_Descr *)Py_NewRef(PyArray_DESCR((PyArrayObject *)v));
    } else if (PyArray_IsScalar(v, Generic)) {
        *vkind = FJ_VAL_NPSCALAR;
        *dtype = PyArray_DescrFromScalar(v);
    } else if (PyBool_Check(v) || PyLong_CheckExact(v) || PyFloat_CheckExact(v)) {
        *vkind = FJ_VAL_PYSCALAR;
        *dtype = PyArray_DescrFromType(PyBool_Check(v)       ? NPY_BOOL
                                       : PyLong_CheckExact(v) ? NPY_LONG
                                                              : NPY_DOUBLE);
        *example = Py_NewRef(v);
    } else {
        return 0;
    }
    return *dtype == NULL ? -1 : 1;
}

int fj_ops_infer(const fj_OpDef *op, PyObject *args, PyObject *kwargs, fj_Meta *out)
{
    fj_Bound b;
    memset(out, 0, sizeof *out);
    if (ops_ready() < 0)
        return -1;
    if (!fj_info[ROW_INDEX(op)].target) {
        PyErr_Format(PyExc_TypeError, "%s is not available in this NumPy", fj_op_qualname(op));
        return -1;
    }
    if (!PyTuple_Check(args) || (kwargs && !PyDict_Check(kwargs))) {
        PyErr_SetString(PyExc_TypeError, "framejit: args must be a tuple and kwargs a dict");
        return -1;
    }
    if (bind(op, args, kwargs, &b) < 0)
        goto error;
    if (fj_ops_shape(op, args, &b, out) < 0)
        goto error;
    if ((op->flags & FJ_OPF_OUT) && out_param(op, &b, out) < 0)
        goto error;
    if ((op->kind == FJ_OP_BINOP && op->code == NB_POWER) || (op->kind == FJ_OP_INPLACE && op->code == NB_INPLACE_POWER)) {
        if (check_pow(op, args) < 0)
            goto error;
    }
    if ((op->flags & FJ_OPF_MUTATES) && setitem_cast_check(op, &b) < 0)
        goto error;
    if (op->dtype_rule == FJ_DT_SAME) {
        PyObject *a = PyTuple_GET_SIZE(args) ? PyTuple_GET_ITEM(args, 0) : NULL;
        if (!a || !fj_Node_Check(a)) {
            PyErr_Format(PyExc_TypeError, "%s: the first argument must be a traced array", fj_op_qualname(op));
            goto error;
        }
        if (!out->vkind && ((fj_Node *)a)->vkind != FJ_VAL_ARRAY) {
            /* a NumPy-scalar input: NumPy decides whether the result is a
               scalar or an array (np.transpose(s) is a scalar, s.reshape(1) an array) */
            fj_Meta m;
            memset(&m, 0, sizeof m);
            if (infer_by_running(op, args, kwargs, &m) < 0)
                goto error;
            out->vkind = m.vkind;
            Py_XDECREF(m.dtype);
            Py_XDECREF(m.example);
            if (out->vkind == FJ_VAL_PYSCALAR) {
                PyErr_Format(PyExc_TypeError, "%s: the result is a Python scalar", fj_op_qualname(op));
                goto error;
            }
        }
        out->dtype = (PyArray_Descr *)Py_NewRef(((fj_Node *)a)->dtype);
        if (!out->vkind)
            out->vkind = FJ_VAL_ARRAY;
        if (out->vkind == FJ_VAL_NPSCALAR && !PyArray_ISNBO(out->dtype->byteorder)) {
            /* an element of a byte-swapped array (x[i] of a '>f8' array) is a
               NumPy scalar: scalars are always in native byte order */
            PyArray_Descr *nat = PyArray_DescrNewByteorder(out->dtype, NPY_NATIVE);
            Py_SETREF(out->dtype, nat);
            if (nat == NULL)
                goto error;
        }
        if (out->vkind == FJ_VAL_NPSCALAR && PyDataType_REFCHK(out->dtype)) {
            /* an element of an object array is an arbitrary Python object */
            PyErr_Format(PyExc_TypeError, "%s: elements of object arrays are not traced", fj_op_qualname(op));
            Py_CLEAR(out->dtype);
            goto error;
        }
    } else if (op->dtype_rule == FJ_DT_CREATE) {
        if (infer_create(op, args, kwargs, out) < 0)
            goto error;
    } else if (op->dtype_rule == FJ_DT_RANDOM) {
        /* never run: the 'dtype' argument (randint's), else the row's */
        int idt = fj_ops_param_index(op, "dtype");
        PyObject *dt = idt >= 0 && b.v[idt] != NULL && b.v[idt] != Py_None ? Py_NewRef(b.v[idt])
                                                                           : PyUnicode_FromString(op->rdtype);
        PyArray_Descr *d = NULL;
        int ok = dt != NULL && PyArray_DescrConverter(dt, &d) == NPY_SUCCEED;
        Py_XDECREF(dt);
        if (!ok)
            goto error;
        if (!(PyDataType_ISINTEGER(d) || PyDataType_ISFLOAT(d)) || (op->rdtype[0] == 'i' && !PyDataType_ISINTEGER(d))) {
            PyErr_Format(PyExc_TypeError, "%s: dtype %R is not traced", fj_op_qualname(op), (PyObject *)d);
            Py_DECREF(d);
            goto error;
        }
        out->dtype = d;
        out->vkind = FJ_VAL_ARRAY;
    } else {
        if (infer_by_running(op, args, kwargs, out) < 0)
            goto error;
    }
    if (out->vkind == FJ_VAL_NPSCALAR && out->ndim != 0) {
        PyErr_Format(PyExc_RuntimeError, "framejit internal: %s gives a NumPy scalar but %d dims were inferred",
                     fj_op_qualname(op), out->ndim);
        Py_CLEAR(out->dtype);
        goto error;
    }
    Py_XDECREF(b.varargs);
    return 0;
error:
    Py_CLEAR(out->example);
    Py_XDECREF(b.varargs);
    return -1;
}

/* ---- static attributes -------------------------------------------------- */

PyObject *fj_ops_static_attr(fj_Node *n, PyObject *name)
{
    if (!PyUnicode_Check(name) || !n->dtype)
        return NULL;
    npy_intp size = 1;
    for (int i = 0; i < n->ndim; i++)
        size *= n->shape[i];
    if (PyUnicode_CompareWithASCIIString(name, "shape") == 0)
        return fj_node_shape_tuple(n);
    if (PyUnicode_CompareWithASCIIString(name, "ndim") == 0)
        return PyLong_FromLong(n->ndim);
    if (PyUnicode_CompareWithASCIIString(name, "size") == 0)
        return PyLong_FromSsize_t(size);
    if (PyUnicode_CompareWithASCIIString(name, "dtype") == 0)
        return Py_NewRef((PyObject *)n->dtype);
    if (PyUnicode_CompareWithASCIIString(name, "itemsize") == 0)
        return PyLong_FromSsize_t(PyDataType_ELSIZE(n->dtype));
    if (PyUnicode_CompareWithASCIIString(name, "nbytes") == 0)
        return PyLong_FromSsize_t(size * PyDataType_ELSIZE(n->dtype));
    return NULL;
}

/* ---- Python surface ----------------------------------------------------- */

/* _C._testing.op_rows() -> list of (name, kind, qualname): the table, for tests. */
static PyObject *py_op_rows(PyObject *self, PyObject *unused)
{
    if (fj_numpy_ensure() < 0) /* fj_numpy.h: loaded lazily */
        return NULL;
    static const char *kinds[] = {"?", "func", "method", "binop", "inplace", "compare", "unary", "attr", "getitem"};
    if (ops_ready() < 0)
        return NULL;
    PyObject *l = PyList_New(0);
    for (Py_ssize_t i = 0; l && i < FJ_NROWS; i++) {
        const fj_OpDef *op = &fj_op_table[i];
        PyObject *t = Py_BuildValue("(sssO)", op->name, kinds[op->kind], fj_info[i].qualname,
                                    fj_info[i].target ? Py_True : Py_False);
        if (!t || PyList_Append(l, t) < 0)
            Py_CLEAR(l);
        Py_XDECREF(t);
    }
    return l;
}

/* _C._testing.op_cache_clear(): forgets the cached dtype resolutions. */
static PyObject *py_op_cache_clear(PyObject *self, PyObject *unused)
{
    if (fj_numpy_ensure() < 0) /* fj_numpy.h: loaded lazily */
        return NULL;
    if (fj_dtype_cache)
        PyDict_Clear(fj_dtype_cache);
    Py_RETURN_NONE;
}

static PyMethodDef ops_methods[] = {
    {"op_rows", py_op_rows, METH_NOARGS, "The op table rows: (name, kind, target, available)."},
    {"op_cache_clear", py_op_cache_clear, METH_NOARGS, "Forget the cached dtype resolutions."},
    {NULL, NULL, 0, NULL},
};

int fj_ops_init(PyObject *module)
{
    return PyModule_AddFunctions(module, ops_methods);
}
