/*
** fused_ops.h: the operations a fused kernel computes (FJN_* codes).
**
** Responsible for: one code per elementwise operation or whole-array
** reduction that a fused C kernel can compute.  The op table gives each row
** its code (fj_OpDef.fused, ops.c), so a backend finds a node's operation by
** reading its row; the native backend (native.c) decides per node whether
** the code fuses for the node's types, and native_emit.c writes the C of
** each code.
**
** Not responsible for: what a code accepts (native.c's code_accepts) or how
** it is written in C (native_emit.c's op_expr).  This header sits with the
** op table, not the backend, so that ops.h need not include native.h.
*/
#ifndef FJ_FUSED_OPS_H
#define FJ_FUSED_OPS_H

/* Fused operations (0: the row does not fuse). */
enum {
    FJN_ADD = 1, FJN_SUB, FJN_MUL, FJN_TDIV, FJN_NEG, FJN_POS, FJN_ABS, FJN_SQUARE, FJN_RECIP, FJN_SQRT,
    FJN_MAX, FJN_MIN, FJN_LT, FJN_LE, FJN_EQ, FJN_NE, FJN_GT, FJN_GE, FJN_LAND, FJN_LOR, FJN_LXOR, FJN_LNOT,
    FJN_BAND, FJN_BOR, FJN_BXOR, FJN_INVERT, FJN_ISNAN, FJN_ISINF, FJN_ISFINITE, FJN_SIGNBIT, FJN_FLOOR,
    FJN_CEIL, FJN_TRUNC, FJN_RINT, FJN_WHERE, FJN_CAST, FJN_FLOORDIV, FJN_MOD,
    /* transcendental functions (framejit/_vmath.h): within a documented bound of the correctly
       rounded value, not NumPy's bits; fused only with config.native_exact False */
    FJN_EXP, FJN_LOG, FJN_SIN, FJN_COS, FJN_TANH, FJN_EXPM1, FJN_LOG1P, FJN_LOG2, FJN_LOG10, FJN_TAN,
    FJN_SINH, FJN_COSH, FJN_ARCTAN, FJN_ARCSIN, FJN_ARCCOS, FJN_CBRT,
    /* (binary: np.arctan2, np.power and x ** y where ndarray.__pow__ calls np.power) */
    FJN_ARCTAN2, FJN_POWER,
    /* a row's code only, never a kernel's: x ** c with a constant exponent c fuses as FJN_SQUARE (2),
       FJN_SQRT (0.5) or FJN_RECIP (-1), what ndarray.__pow__ runs for these (native.c's classify_pow) */
    FJN_POW,
    /* a row group's member computed by NumPy's own inner loop of its row's unary ufunc (tan, cbrt,
       log2, ...: native.c row_join_call), never a row's code */
    FJN_UCALL,
    /* reductions over every axis (their result is a 0-d value, always materialized) */
    FJN_RSUM, FJN_RMAX, FJN_RMIN, FJN_RANY, FJN_RALL, FJN_RMEAN,
};
#define FJN_IS_REDUCTION(code) ((code) >= FJN_RSUM)
#define FJN_IS_VMATH(code) ((code) >= FJN_EXP && (code) <= FJN_POWER)

#endif
