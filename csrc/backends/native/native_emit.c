/*
** native_emit.c: the C source of fused kernels (the `native` backend).
**
** Responsible for: the value types kernels compute with (FJT_*) and their
** mapping from NumPy dtypes, and turning one fused group (fjn_Group, built
** by native.c) into two C functions:
**
**   int fj_g<N>_flat(intptr_t start, intptr_t end, char *const *data)
**       every operand is either contiguous with the group's full shape or
**       one element; elements [start, end) in memory order.
**   int fj_g<N>_strided(int ndim, const intptr_t *shape, char *const *data,
**                       const intptr_t *strides)
**       any strides (strides[slot * ndim + axis], 0 for broadcast axes).
**
** data[k] is group input k (unused for constants), data[nin + j] output j.
** Both return 0, or non-zero when the caller must discard the results and
** run the group through NumPy instead: a floating-point exception flag was
** raised (so NumPy's warnings and errstate behave exactly as in eager) or
** an integer division by zero / overflow happened.  The source is plain C11
** with no Python or NumPy header (fast to compile, deterministic text for
** the on-disk cache key).
**
** Each operation is written to equal NumPy's loop bit for bit: integer
** arithmetic wraps (done in uint64_t), comparisons of floats are the quiet
** IEEE ones, maximum/minimum propagate the first NaN and return the second
** operand on ties (NumPy's loops do), casts are C casts (NumPy's casts are).
**
** Not responsible for: deciding what fuses (native.c), compiling (Python).
*/
#include "native.h"

#include <string.h>

static const struct {
    const char *ctype;
    int type_num;
    int size;
    int is_int, is_signed, is_float;
    const char *umax; /* minimum value literal of signed ints (for division overflow) */
    const char *lo, *hi; /* the smallest and largest value (initial values of max / min) */
} fjt_info[FJT_COUNT] = {
    [FJT_BOOL] = {"unsigned char", NPY_BOOL, 1, 0, 0, 0, NULL, "0", "1"},
    [FJT_I8] = {"int8_t", NPY_INT8, 1, 1, 1, 0, "INT8_MIN", "INT8_MIN", "INT8_MAX"},
    [FJT_I16] = {"int16_t", NPY_INT16, 2, 1, 1, 0, "INT16_MIN", "INT16_MIN", "INT16_MAX"},
    [FJT_I32] = {"int32_t", NPY_INT32, 4, 1, 1, 0, "INT32_MIN", "INT32_MIN", "INT32_MAX"},
    [FJT_I64] = {"int64_t", NPY_INT64, 8, 1, 1, 0, "INT64_MIN", "INT64_MIN", "INT64_MAX"},
    [FJT_U8] = {"uint8_t", NPY_UINT8, 1, 1, 0, 0, NULL, "0", "UINT8_MAX"},
    [FJT_U16] = {"uint16_t", NPY_UINT16, 2, 1, 0, 0, NULL, "0", "UINT16_MAX"},
    [FJT_U32] = {"uint32_t", NPY_UINT32, 4, 1, 0, 0, NULL, "0", "UINT32_MAX"},
    [FJT_U64] = {"uint64_t", NPY_UINT64, 8, 1, 0, 0, NULL, "0", "UINT64_MAX"},
    [FJT_F32] = {"float", NPY_FLOAT32, 4, 0, 0, 1, NULL, "(-__builtin_inff())", "__builtin_inff()"},
    [FJT_F64] = {"double", NPY_FLOAT64, 8, 0, 0, 1, NULL, "(-__builtin_inf())", "__builtin_inf()"},
};

int fjn_type_of_descr(PyArray_Descr *d)
{
    if (d == NULL || !PyArray_ISNBO(d->byteorder) || d->type_num >= NPY_NTYPES_LEGACY)
        return FJT_NONE;
    Py_ssize_t sz = PyDataType_ELSIZE(d);
    switch (d->kind) {
    case 'b':
        return sz == 1 ? FJT_BOOL : FJT_NONE;
    case 'i':
        return sz == 1 ? FJT_I8 : sz == 2 ? FJT_I16 : sz == 4 ? FJT_I32 : sz == 8 ? FJT_I64 : FJT_NONE;
    case 'u':
        return sz == 1 ? FJT_U8 : sz == 2 ? FJT_U16 : sz == 4 ? FJT_U32 : sz == 8 ? FJT_U64 : FJT_NONE;
    case 'f':
        return sz == 4 ? FJT_F32 : sz == 8 ? FJT_F64 : FJT_NONE;
    default:
        return FJT_NONE;
    }
}

int fjn_type_num(int t)
{
    return fjt_info[t].type_num;
}

int fjn_type_size(int t)
{
    return fjt_info[t].size;
}

/* ---- a tiny string builder over a list of str ---------------------------- */

static int put(PyObject *buf, const char *fmt, ...)
{
    char small[1024], *text = small;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        PyErr_SetString(PyExc_SystemError, "framejit native: cannot format a generated line");
        return -1;
    }
    if ((size_t)n >= sizeof small) {
        if (!(text = PyMem_Malloc((size_t)n + 1)))
            return PyErr_NoMemory(), -1;
        va_start(ap, fmt);
        vsnprintf(text, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    PyObject *s = PyUnicode_FromStringAndSize(text, n);
    if (text != small)
        PyMem_Free(text);
    if (!s)
        return -1;
    int r = PyList_Append(buf, s);
    Py_DECREF(s);
    return r;
}

PyObject *fjn_emit_prologue(void)
{
    return PyUnicode_FromString(
        "/* framejit native kernels (generated) */\n"
        "#include <stdint.h>\n#include <stdlib.h>\n#include <string.h>\n#include <fenv.h>\n"
        "#define FJ_FPE (FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID)\n"
        "#define FJ_FPE_SOFT (FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW)\n"
        "#define FJ_HARD " FJN_ST_HARD_STR "\n"
        "/* the kernels' float arithmetic is SSE/AVX on x86-64, whose flags are MXCSR's (the\n"
        "   FE_* bits are MXCSR's bits there): reading and clearing MXCSR alone costs a fraction\n"
        "   of glibc's fe*except, which also stores and reloads the x87 environment */\n"
        "#if defined(__x86_64__) && defined(__SSE2__)\n"
        "_Static_assert(FE_INVALID == 0x01 && FE_DIVBYZERO == 0x04 && FE_OVERFLOW == 0x08 && FE_UNDERFLOW == 0x10,\n"
        "               \"FE_* bits are not MXCSR's\");\n"
        "static inline int fj_fetest(int m) { return (int)(__builtin_ia32_stmxcsr() & (unsigned)m); }\n"
        "static inline void fj_feclear(int m) { __builtin_ia32_ldmxcsr(__builtin_ia32_stmxcsr() & ~(unsigned)m); }\n"
        "static inline void fj_feset(int m) { __builtin_ia32_ldmxcsr(__builtin_ia32_stmxcsr() | (unsigned)m); }\n"
        "/* the x87 status (its exception bits are the FE_* bits there too): glibc's feraiseexcept\n"
        "   raises overflow and underflow in it; fnstsw and fnclex are a few cycles, where\n"
        "   feclearexcept stores and reloads the whole x87 environment */\n"
        "static inline int fj_x87test(void) { unsigned short sw; __asm__ volatile(\"fnstsw %0\" : \"=m\"(sw)); return sw & FJ_FPE; }\n"
        "static inline void fj_x87clear(void) { __asm__ volatile(\"fnclex\"); }\n"
        "/* round to nearest, no flush-to-zero, no denormals-are-zero (the float sums' leaves start\n"
        "   at -0.0, which is NumPy's first element for every value in that mode only) */\n"
        "static inline int fj_fpstd(void) { return (__builtin_ia32_stmxcsr() & 0xE040u) == 0; }\n"
        "#else\n#define fj_fetest fetestexcept\n#define fj_feclear feclearexcept\n"
        "static inline void fj_feset(int m) { if (m) feraiseexcept(m); }\n"
        "static inline int fj_x87test(void) { return 0; }\nstatic inline void fj_x87clear(void) { }\n"
        "static inline int fj_fpstd(void) { return fegetround() == FE_TONEAREST; }\n#endif\n"
        "static inline double fj_f64(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }\n"
        "/* c ? a : b as bit operations, for a float select whose value reaches a sqrt or a float\n"
        "   to int cast.  An optimizer may turn op(c ? x : k), k constant, into c ? op(x) : op(k)\n"
        "   (gcc's partial redundancy elimination does: the build passes -fno-tree-pre where it\n"
        "   can), computing op on lanes NumPy does not: a sqrt of a negative or a cast of a NaN\n"
        "   raises invalid there (every block then reruns with its checks, a cast's group goes\n"
        "   through NumPy).  Bit operations cannot be split that way */\n"
        "static inline double fj_bsel64(int c, double a, double b)\n"
        "{ uint64_t x, y, m = (uint64_t)0 - (uint64_t)(c != 0); memcpy(&x, &a, 8); memcpy(&y, &b, 8);\n"
        "  x = (x & m) | (y & ~m); memcpy(&a, &x, 8); return a; }\n"
        "static inline float fj_bsel32(int c, float a, float b)\n"
        "{ uint32_t x, y, m = (uint32_t)0 - (uint32_t)(c != 0); memcpy(&x, &a, 4); memcpy(&y, &b, 4);\n"
        "  x = (x & m) | (y & ~m); memcpy(&a, &x, 4); return a; }\n"
        "/* the same with the mask XORed with o, a 0 the compiler cannot see (fj_opaque0, read\n"
        "   once per kernel: fjo), for a where() whose arm is a member computed from the data:\n"
        "   with a mask it knows to be all ones or zeros per lane, gcc computed the arm under it\n"
        "   (AVX-512 masked operations), raising no flag for the lanes not selected, where NumPy\n"
        "   computes (and warns) on every element: np.where(x != 0, 1.0 / x, 0.0) */\n"
        "static volatile uint64_t fj_opaque0 = 0;\n"
        "static inline double fj_osel64(int c, double a, double b, uint64_t o)\n"
        "{ uint64_t x, y, m = ((uint64_t)0 - (uint64_t)(c != 0)) ^ o; memcpy(&x, &a, 8); memcpy(&y, &b, 8);\n"
        "  x = (x & m) | (y & ~m); memcpy(&a, &x, 8); return a; }\n"
        "static inline float fj_osel32(int c, float a, float b, uint64_t o)\n"
        "{ uint32_t x, y, m = ((uint32_t)0 - (uint32_t)(c != 0)) ^ (uint32_t)o; memcpy(&x, &a, 4); memcpy(&y, &b, 4);\n"
        "  x = (x & m) | (y & ~m); memcpy(&a, &x, 4); return a; }\n"
        "/* isfinite / isinf from the exponent bits: gcc vectorizes __builtin_isfinite as a\n"
        "   signaling compare, which raises invalid for a NaN (NumPy's isfinite does not) */\n"
        "static inline int fj_fin64(double a) { uint64_t x; memcpy(&x, &a, 8); return (x & 0x7ff0000000000000ULL) != 0x7ff0000000000000ULL; }\n"
        "static inline int fj_fin32(float a) { uint32_t x; memcpy(&x, &a, 4); return (x & 0x7f800000u) != 0x7f800000u; }\n"
        "static inline int fj_inf64(double a) { uint64_t x; memcpy(&x, &a, 8); return (x & 0x7fffffffffffffffULL) == 0x7ff0000000000000ULL; }\n"
        "static inline int fj_inf32(float a) { uint32_t x; memcpy(&x, &a, 4); return (x & 0x7fffffffu) == 0x7f800000u; }\n"
        "static inline uint64_t fj_b64(double a) { uint64_t x; memcpy(&x, &a, 8); return x; }\n"
        "static inline uint64_t fj_b32(float a) { uint32_t x; memcpy(&x, &a, 4); return x; }\n"
        "/* a / b from y = 1 / b (rounded to nearest) with fused multiply-adds, for a zero a, or a\n"
        "   and a / b within [2^-960, 2^960], and |b| within [2^-900, 2^900], rounding to nearest:\n"
        "   a y is within 1.5 ulp of a / b, one correction brings it within one ulp, and then\n"
        "   (Markstein's theorem) the remainder a - b q is exact and q + (a - b q) y rounds to\n"
        "   a / b, the quotient the division gives, raising no flag but inexact; its sign is a y's\n"
        "   (a zero a's quotient's sign too).  A row pass dividing by a value of its row (native_emit.c\n"
        "   emit_row_span) runs it on any numerator, and again with the division, the FP status put\n"
        "   back (fj_csr), when one was out of bounds (MXCSR's flags: x86-64 only).  float64 only:\n"
        "   a float32 division costs about what this does */\n"
        "#if defined(__x86_64__) && defined(__SSE2__) && defined(__FMA__)\n#define FJ_QDIV 1\n"
        "static inline unsigned fj_csr(void) { return __builtin_ia32_stmxcsr(); }\n"
        "static inline void fj_setcsr(unsigned c) { __builtin_ia32_ldmxcsr(c); }\n"
        "#else\n#define FJ_QDIV 0\nstatic inline unsigned fj_csr(void) { return 0; }\n"
        "static inline void fj_setcsr(unsigned c) { (void)c; }\n#endif\n"
        "static inline double fj_qdiv64(double a, double b, double y)\n"
        "{ double q0 = a * y, q = __builtin_fma(__builtin_fma(-b, q0, a), y, q0);\n"
        "  q = __builtin_fma(__builtin_fma(-b, q, a), y, q); return __builtin_copysign(q, q0); }\n"
        "/* ordered integer keys of floats: a < b (not NaN) iff key(a) < key(b), -0.0 < 0.0 */\n"
        "static inline int32_t fj_key32(float x) { int32_t b; memcpy(&b, &x, 4); return b ^ ((b >> 31) & INT32_MAX); }\n"
        "static inline float fj_unkey32(int32_t k) { int32_t b = k ^ ((k >> 31) & INT32_MAX); float x; memcpy(&x, &b, 4); return x; }\n"
        "static inline int64_t fj_key64(double x) { int64_t b; memcpy(&b, &x, 8); return b ^ ((b >> 63) & INT64_MAX); }\n"
        "static inline double fj_unkey64(int64_t k) { int64_t b = k ^ ((k >> 63) & INT64_MAX); double x; memcpy(&x, &b, 8); return x; }\n"
        "/* the status: FJ_HARD (run through NumPy), else the FE_* conditions NumPy's loops would\n"
        "   raise; invalid is computed from the operands (inv), not read from the flags, which\n"
        "   vectorized signaling compares and speculated sqrt set spuriously (hardinv: a float to\n"
        "   int cast, whose invalid only the flags tell, makes the invalid flag FJ_HARD) */\n"
        "/* NumPy's pairwise sum of a contiguous x[0..n) (numpy/_core/src/umath/loops_utils.h.src),\n"
        "   value for value: leaves of at most 128 elements (r[j] = x[j], r[j] += x[i + j] per block\n"
        "   of 8, the tree ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), then the rest added one\n"
        "   by one; fewer than 8: 0 + x[0] + ...), longer runs split at a multiple of 8.  A node whose\n"
        "   two children are split into two leaves each, all four of whole blocks, runs its four\n"
        "   leaves together, each leaf's eight accumulators a vector (GCC / clang vector extensions,\n"
        "   lowered to what the target has): one leaf's accumulators are one chain of dependent\n"
        "   adds, four interleaved run at the adds' throughput; each leaf's adds are its own.  float32\n"
        "   sums compute their elements into a buffer this sums (faster for float32 than summing\n"
        "   inside the leaves, which float64 sums do: see docs/native.md) */\n"
        "typedef float fj_v8f __attribute__((vector_size(32)));\n"
        "#define FJ_PWS(T, V, S) \\\n"
        "static inline T fj_leaf##S(const T *x, intptr_t n) \\\n"
        "{ \\\n"
        "    T r[8], res; \\\n"
        "    intptr_t i; \\\n"
        "    if (n < 8) { \\\n"
        "        res = 0; \\\n"
        "        for (i = 0; i < n; i++) res += x[i]; \\\n"
        "        return res; \\\n"
        "    } \\\n"
        "    for (int j = 0; j < 8; j++) r[j] = x[j]; \\\n"
        "    for (i = 8; i < n - n % 8; i += 8) \\\n"
        "        for (int j = 0; j < 8; j++) r[j] += x[i + j]; \\\n"
        "    res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7])); \\\n"
        "    for (; i < n; i++) res += x[i]; \\\n"
        "    return res; \\\n"
        "} \\\n"
        "static inline V fj_ld##S(const T *p) \\\n"
        "{ \\\n"
        "    V v; \\\n"
        "    memcpy(&v, p, sizeof v); \\\n"
        "    return v; \\\n"
        "} \\\n"
        "static inline T fj_tree##S(V r) \\\n"
        "{ \\\n"
        "    return ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7])); \\\n"
        "} \\\n"
        "/* four leaves of whole blocks of 8 (each >= 64 elements) starting at a, b, c, d */ \\\n"
        "static inline void fj_leaf4##S(const T *a, intptr_t na, const T *b, intptr_t nb, const T *c, intptr_t nc, \\\n"
        "                                const T *d, intptr_t nd, T *res) \\\n"
        "{ \\\n"
        "    V ra = fj_ld##S(a), rb = fj_ld##S(b), rc = fj_ld##S(c), rd = fj_ld##S(d); \\\n"
        "    intptr_t m = na < nb ? na : nb; \\\n"
        "    m = nc < m ? nc : m; \\\n"
        "    m = nd < m ? nd : m; \\\n"
        "    for (intptr_t k = 8; k < m; k += 8) { \\\n"
        "        ra += fj_ld##S(a + k); \\\n"
        "        rb += fj_ld##S(b + k); \\\n"
        "        rc += fj_ld##S(c + k); \\\n"
        "        rd += fj_ld##S(d + k); \\\n"
        "    } \\\n"
        "    for (intptr_t k = m; k < na; k += 8) ra += fj_ld##S(a + k); \\\n"
        "    for (intptr_t k = m; k < nb; k += 8) rb += fj_ld##S(b + k); \\\n"
        "    for (intptr_t k = m; k < nc; k += 8) rc += fj_ld##S(c + k); \\\n"
        "    for (intptr_t k = m; k < nd; k += 8) rd += fj_ld##S(d + k); \\\n"
        "    res[0] = fj_tree##S(ra); \\\n"
        "    res[1] = fj_tree##S(rb); \\\n"
        "    res[2] = fj_tree##S(rc); \\\n"
        "    res[3] = fj_tree##S(rd); \\\n"
        "} \\\n"
        "static T fj_pws##S(const T *x, intptr_t n) \\\n"
        "{ \\\n"
        "    if (n <= 128) return fj_leaf##S(x, n); \\\n"
        "    intptr_t n2 = n / 2; \\\n"
        "    n2 -= n2 % 8; \\\n"
        "    intptr_t m2 = n - n2, a2 = n2 / 2, b2 = m2 / 2; \\\n"
        "    a2 -= a2 % 8; \\\n"
        "    b2 -= b2 % 8; \\\n"
        "    if (n2 > 128 && m2 > 128 && n2 - a2 <= 128 && m2 - b2 <= 128 && m2 % 8 == 0) { \\\n"
        "        T l[4]; \\\n"
        "        fj_leaf4##S(x, a2, x + a2, n2 - a2, x + n2, b2, x + n2 + b2, m2 - b2, l); \\\n"
        "        return (l[0] + l[1]) + (l[2] + l[3]); \\\n"
        "    } \\\n"
        "    T s = fj_pws##S(x, n2); \\\n"
        "    return s + fj_pws##S(x + n2, m2); \\\n"
        "}\n"
        "FJ_PWS(float, fj_v8f, 32)\n"
        "/* float64 rows of row groups, summed from their row buffer (native_emit.c fjn_emit_row_group) */\n"
        "typedef double fj_v8d __attribute__((vector_size(64)));\n"
        "FJ_PWS(double, fj_v8d, 64)\n"
        "/* a function whose loops are not worth vectorizing (gcc; others vectorize it) */\n"
        "#if defined(__GNUC__) && !defined(__clang__)\n#define FJ_NOVEC __attribute__((optimize(\"no-tree-vectorize\")))\n"
        "/* a scalar loop compiled at -O1 (an elementwise group's strided rows: -O3 made them no\n"
        "   faster, for a fifth of the file's compile time); no contraction into FMAs, as on the\n"
        "   command line (NumPy rounds a * b before adding) */\n"
        "#define FJ_COLD __attribute__((optimize(\"O1\", \"fp-contract=off\")))\n"
        "#else\n#define FJ_NOVEC\n#define FJ_COLD\n#endif\n"
        "/* the tree of a leaf of NumPy's pairwise sum over its eight accumulators */\n"
        "#define FJ_TREE(r) (((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7])))\n"
        "/* float64 sums of at most this many elements run four leaves per loop (in cache: four\n"
        "   chains of adds at once); longer ones one leaf at a time (from memory: three input\n"
        "   streams, not twelve, which the prefetchers follow better) */\n"
        "#define FJ_IL_MAX 32768\n"
        "/* a float sum's invalid, once the FE invalid flag was raised (by an add's inf - inf, which\n"
        "   always raises it, by a member's invalid operation, or spuriously by a vectorized compare\n"
        "   of a NaN), from fj_g<N>_chk's bits (4: a member's invalid condition, 8: a NaN element,\n"
        "   16: an infinite element), whether the total is NaN and whether an overflow was raised:\n"
        "   without NaN elements a NaN total is an inf - inf of the sum; with NaN and infinite\n"
        "   elements (or overflowed partial sums) whether NumPy's adds also met an inf - inf only\n"
        "   NumPy tells (FJ_HARD); NaN elements among finite ones never make one */\n"
        "static inline int fj_suminv(int sc, int nan, int ovf)\n{\n"
        "    if (sc & 4)\n        return FE_INVALID;\n"
        "    if (sc & 8)\n        return (sc & 16) || ovf ? FJ_HARD : 0;\n"
        "    return nan ? FE_INVALID : 0;\n}\n"
        "/* NumPy's own inner loop c = {function, context, auxdata} (ufunc._get_strided_loop's) on n\n"
        "   contiguous items of size isz: 0, or -1 (its error: the group then runs through NumPy).\n"
        "   The flags raised before it are raised again after it: some of NumPy's loops clear the\n"
        "   status (tanh does), which NumPy reads around each loop but a kernel after all of them */\n"
        "typedef int (*fj_loop_t)(void *, char *const *, const intptr_t *, const intptr_t *, void *);\n"
        "static inline int fj_calln(void *const *c, char *const *d, const intptr_t *s, intptr_t n)\n"
        "{ int f = fj_fetest(FJ_FPE);\n"
        "  int r = ((fj_loop_t)c[0])(c[1], d, &n, s, c[2]);\n"
        "  /* the x87 status too (cleared when the kernel starts): glibc's feraiseexcept (NumPy's\n"
        "     npy_set_floatstatus_*: float32 exp's overflow) raises there on x86-64; MXCSR is\n"
        "     written only when something is to be added back (ldmxcsr is the slow part) */\n"
        "  int g = fj_x87test(), now = fj_fetest(FJ_FPE);\n"
        "  if ((now | g) != now || (now & f) != f)\n"
        "      fj_feset(f | g);\n"
        "  return r; }\n"
        "static inline int fj_call1(void *const *c, const void *src, void *dst, intptr_t n, intptr_t isz)\n"
        "{ char *d[2] = {(char *)src, (char *)dst}; intptr_t s[2] = {isz, isz}; return fj_calln(c, d, s, n); }\n"
        "/* a binary loop: an operand's stride 0 for a constant */\n"
        "static inline int fj_call2(void *const *c, const void *a, intptr_t sa, const void *b, intptr_t sb, void *dst,\n"
        "                           intptr_t n, intptr_t isz)\n"
        "{ char *d[3] = {(char *)a, (char *)b, (char *)dst}; intptr_t s[3] = {sa, sb, isz}; return fj_calln(c, d, s, n); }\n"
        "static inline int fj_ret(int st, int inv, int hardinv)\n{\n"
        "    int f = fj_fetest(FJ_FPE);\n"
        "    int r = (st ? FJ_HARD : 0) | (f & FJ_FPE_SOFT) | (inv ? FE_INVALID : 0);\n"
        "    return (hardinv && (f & FE_INVALID)) ? (r | FJ_HARD) : r;\n}\n");
}

/* ---- expressions ---------------------------------------------------------- */

typedef struct {
    char s[384];
} fjn_Expr;

static int operand_type(const fjn_Group *g, int ref)
{
    return ref >= 0 ? g->in[ref].type : g->ops[-ref - 1].type;
}

/* The operand's value cast to type 'to'.  A bool input is read as its truth
   (v<k>: NumPy reads a byte other than 0 or 1, from a view of uint8 as bool,
   as True), or 'raw' as its byte (w<k>), where NumPy copies it: a select's
   arms, a cast to bool. */
static void operand_expr_as(const fjn_Group *g, int ref, int to, fjn_Expr *e, int raw)
{
    char name[32];
    int from = operand_type(g, ref);
    if (ref >= 0)
        snprintf(name, sizeof name, "%c%d", raw && from == FJT_BOOL && g->in[ref].kind != FJN_IN_CONST ? 'w' : 'v', ref);
    else
        snprintf(name, sizeof name, "m%d", -ref - 1);
    if (from == to)
        snprintf(e->s, sizeof e->s, "%s", name);
    else if (to == FJT_BOOL)
        snprintf(e->s, sizeof e->s, "((unsigned char)(%s != 0))", name);
    else
        snprintf(e->s, sizeof e->s, "((%s)%s)", fjt_info[to].ctype, name);
}

static void operand_expr(const fjn_Group *g, int ref, int to, fjn_Expr *e)
{
    operand_expr_as(g, ref, to, e, 0);
}

/* Is member op a cast of a float to an integer (whose invalid only the FE flag tells)? */
static int is_float_int_cast(const fjn_Op *op)
{
    return op->code == FJN_CAST && fjt_info[op->argtype[0]].is_float && !fjt_info[op->type].is_float &&
           op->type != FJT_BOOL;
}

/* framejit/_vmath.h's functions (native.h); a 0 dtype column leaves that dtype
   to NumPy's loop */
const fjn_VmathFn fjn_vmath_fns[] = {
    [FJN_EXP - FJN_EXP] = {"exp", "exp", 1, 1, 0},
    [FJN_LOG - FJN_EXP] = {"log", "log", 1, 1, 1},
    [FJN_SIN - FJN_EXP] = {"sin", "sin", 1, 1, 1},
    [FJN_COS - FJN_EXP] = {"cos", "cos", 1, 1, 1},
    [FJN_TANH - FJN_EXP] = {"tanh", "tanh", 1, 1, 0},
    [FJN_EXPM1 - FJN_EXP] = {"expm1", "expm1_", 1, 1, 0},
    [FJN_LOG1P - FJN_EXP] = {"log1p", "log1p", 1, 1, 1},

    [FJN_LOG2 - FJN_EXP] = {"log2", "log2_", 1, 1, 1},

    [FJN_LOG10 - FJN_EXP] = {"log10", "log10_", 1, 1, 1},

    [FJN_TAN - FJN_EXP] = {"tan", "tan", 1, 1, 1},

    [FJN_SINH - FJN_EXP] = {"sinh", "sinh", 1, 1, 0},

    [FJN_COSH - FJN_EXP] = {"cosh", "cosh", 1, 1, 0},

    [FJN_ARCTAN - FJN_EXP] = {"arctan", "atan", 1, 1, 0},

    [FJN_ARCSIN - FJN_EXP] = {"arcsin", "asin", 1, 1, 1},

    [FJN_ARCCOS - FJN_EXP] = {"arccos", "acos", 1, 1, 1},

    [FJN_CBRT - FJN_EXP] = {"cbrt", "cbrt", 1, 1, 0},

    [FJN_ARCTAN2 - FJN_EXP] = {"arctan2", "atan2_", 1, 1, 0},

    [FJN_POWER - FJN_EXP] = {"power", "pow", 1, 1, 1},
};

/* Is member op one whose invalid flag is hard: a float to int cast, or a
   function of framejit/_vmath.h that raises invalid on purpose for an argument
   it leaves to NumPy (log, sin, ...: fjn_vmath_fns)?  A group with one runs
   through NumPy when the flag is raised (its values, flags and warnings are
   then NumPy's). */
static int is_hard_invalid(const fjn_Op *op)
{
    return is_float_int_cast(op) || (FJN_IS_VMATH(op->code) && FJN_VMATH_FN(op->code)->hard_invalid);
}

static int has_hard_invalid(const fjn_Group *g)
{
    for (int m = 0; m < g->nops; m++)
        if (is_hard_invalid(&g->ops[m]))
            return 1;
    return 0;
}

int fjn_group_uses_vmath(const fjn_Group *g)
{
    for (int m = 0; m < g->nops; m++)
        if (FJN_IS_VMATH(g->ops[m].code) && !g->ops[m].call)
            return 1;
    return 0;
}

/* Whether member m's value reaches, through the members after it, one that raises
   invalid on values NumPy would not give it, were it computed on both arms of a
   select (a float sqrt, a float to int cast): then a float select at m is written
   as bit operations (fj_bsel*); other selects stay a compare and a blend */
static int feeds_invalid_op(const fjn_Group *g, int m)
{
    unsigned char reach[FJN_MAX_OPS] = {0};
    reach[m] = 1;
    for (int k = m + 1; k < g->nops; k++) {
        const fjn_Op *op = &g->ops[k];
        for (int j = 0; j < op->nargs && !reach[k]; j++)
            reach[k] = op->arg[j] < 0 && reach[-op->arg[j] - 1];
        if (!reach[k])
            continue;
        if ((op->code == FJN_SQRT && fjt_info[op->argtype[0]].is_float) || is_hard_invalid(op))
            return 1;
    }
    return 0;
}

/*
** The C of the codes whose value is a bool (unsigned char) computed the same
** way for every operand type: 'any' (a format of the operands a, b; LNOT's
** reads a only), or for float operands 'flt' where it is not NULL (the
** quiet compare builtins: no invalid on a NaN, as NumPy).
*/
static const struct {
    const char *any, *flt;
} predicate_c[] = {
    [FJN_LT] = {"((unsigned char)(%s < %s))", "((unsigned char)__builtin_isless(%s, %s))"},
    [FJN_LE] = {"((unsigned char)(%s <= %s))", "((unsigned char)__builtin_islessequal(%s, %s))"},
    [FJN_GT] = {"((unsigned char)(%s > %s))", "((unsigned char)__builtin_isgreater(%s, %s))"},
    [FJN_GE] = {"((unsigned char)(%s >= %s))", "((unsigned char)__builtin_isgreaterequal(%s, %s))"},
    [FJN_EQ] = {"((unsigned char)(%s == %s))", NULL},
    [FJN_NE] = {"((unsigned char)(%s != %s))", NULL},
    [FJN_LAND] = {"((unsigned char)((%s != 0) & (%s != 0)))", NULL},
    [FJN_LOR] = {"((unsigned char)((%s != 0) | (%s != 0)))", NULL},
    [FJN_LXOR] = {"((unsigned char)((%s != 0) ^ (%s != 0)))", NULL},
    [FJN_LNOT] = {"((unsigned char)(%s == 0))", NULL},
};

/* The codes that are one C builtin of a float (__builtin_<name>, <name>f for float32). */
static const char *const float_builtin[] = {
    [FJN_SQRT] = "sqrt", [FJN_FLOOR] = "floor", [FJN_CEIL] = "ceil", [FJN_TRUNC] = "trunc", [FJN_RINT] = "rint",
};

/* Writes the expression of member 'op' into 'out'.  0, or -1 (unsupported: a bug in native.c). */
static int op_expr(const fjn_Group *g, const fjn_Op *op, char *out, size_t cap)
{
    fjn_Expr A = {{0}}, B = {{0}}, C = {{0}};
    int t = op->argtype[0], rt = op->type;
    const char *ct = fjt_info[t].ctype, *rct = fjt_info[rt].ctype;
    int isf = fjt_info[t].is_float, isi = fjt_info[t].is_int, sg = fjt_info[t].is_signed;
    const char *a = A.s, *b = B.s, *c = C.s;
    const char *f32 = t == FJT_F32 ? "f" : "";
    if (op->code == FJN_CAST) {
        operand_expr_as(g, op->arg[0], rt, &A, rt == FJT_BOOL);
        snprintf(out, cap, "%s", a);
        return 0;
    }
    if (FJN_IS_VMATH(op->code)) {
        /* framejit/_vmath.h's fj_<stem>64 / fj_<stem>32 of one or two operands */
        const fjn_VmathFn *vf = FJN_VMATH_FN(op->code);
        if (!(t == FJT_F64 ? vf->f64 : t == FJT_F32 ? vf->f32 : 0) || (op->nargs == 2 && op->argtype[1] != t))
            return -1;
        operand_expr(g, op->arg[0], t, &A);
        if (op->nargs == 2) {
            operand_expr(g, op->arg[1], t, &B);
            snprintf(out, cap, "fj_%s%s(%s, %s)", vf->stem, t == FJT_F64 ? "64" : "32", a, b);
        } else {
            snprintf(out, cap, "fj_%s%s(%s)", vf->stem, t == FJT_F64 ? "64" : "32", a);
        }
        return 0;
    }
    int sel = op->code == FJN_WHERE;
    operand_expr(g, op->arg[0], op->argtype[0], &A);
    if (op->nargs > 1)
        operand_expr_as(g, op->arg[1], op->argtype[1], &B, sel);
    if (op->nargs > 2)
        operand_expr_as(g, op->arg[2], op->argtype[2], &C, sel);
#define W(...) snprintf(out, cap, __VA_ARGS__)
    switch (op->code) {
    case FJN_ADD:
    case FJN_SUB:
    case FJN_MUL: {
        char sym = op->code == FJN_ADD ? '+' : op->code == FJN_SUB ? '-' : '*';
        if (isf)
            W("(%s %c %s)", a, sym, b);
        else if (isi)
            W("((%s)((uint64_t)%s %c (uint64_t)%s))", ct, a, sym, b);
        else if (op->code == FJN_ADD)
            W("((unsigned char)(%s | %s))", a, b);
        else if (op->code == FJN_MUL)
            W("((unsigned char)(%s & %s))", a, b);
        else
            return -1;
        return 0;
    }
    case FJN_TDIV:
        return isf ? (W("(%s / %s)", a, b), 0) : -1;
    case FJN_NEG:
        if (isf)
            W("(-%s)", a);
        else if (isi)
            W("((%s)(0 - (uint64_t)%s))", ct, a);
        else
            return -1;
        return 0;
    case FJN_POS:
        W("%s", a);
        return 0;
    case FJN_ABS:
        if (isf)
            W("__builtin_fabs%s(%s)", f32, a);
        else if (sg)
            W("(%s < 0 ? (%s)(0 - (uint64_t)%s) : %s)", a, ct, a, a);
        else
            W("%s", a);
        return 0;
    case FJN_SQUARE:
        if (isf)
            W("(%s * %s)", a, a);
        else if (isi)
            W("((%s)((uint64_t)%s * (uint64_t)%s))", ct, a, a);
        else
            return -1;
        return 0;
    case FJN_RECIP:
        return isf ? (W("(%s / %s)", t == FJT_F32 ? "1.0f" : "1.0", a), 0) : -1;
    case FJN_SQRT:
    case FJN_FLOOR:
    case FJN_CEIL:
    case FJN_TRUNC:
    case FJN_RINT:
        return isf ? (W("__builtin_%s%s(%s)", float_builtin[op->code], f32, a), 0) : -1;
    case FJN_MAX:
    case FJN_MIN: {
        const char *cmp = op->code == FJN_MAX ? "__builtin_isgreater" : "__builtin_isless";
        int r1 = op->arg[1];
        char cond[sizeof A.s * 4];
        if (isf && r1 >= 0 && g->in[r1].kind == FJN_IN_CONST && !(g->in[r1].type == FJT_F64 && g->in[r1].dval != g->in[r1].dval))
            /* the second operand is a constant, never NaN: "a is NaN or beats b"
               is one unordered compare (a NaN a fails a <= b) */
            snprintf(cond, sizeof cond, "!%s(%s, %s)",
                     op->code == FJN_MAX ? "__builtin_islessequal" : "__builtin_isgreaterequal", a, b);
        else
            snprintf(cond, sizeof cond, "(__builtin_isnan(%s) | %s(%s, %s))", a, cmp, a, b);
        int n;
        if (isf && feeds_invalid_op(g, (int)(op - g->ops)))
            n = W("fj_bsel%s(%s, %s, %s)", t == FJT_F32 ? "32" : "64", cond, a, b);
        else if (isf)
            n = W("(%s ? %s : %s)", cond, a, b);
        else
            n = W("(%s %c %s ? %s : %s)", a, op->code == FJN_MAX ? '>' : '<', b, a, b);
        return n >= 0 && (size_t)n < cap ? 0 : -1;
    }
    case FJN_LT:
    case FJN_LE:
    case FJN_GT:
    case FJN_GE:
    case FJN_EQ:
    case FJN_NE:
    case FJN_LAND:
    case FJN_LOR:
    case FJN_LXOR:
    case FJN_LNOT:
        W(isf && predicate_c[op->code].flt ? predicate_c[op->code].flt : predicate_c[op->code].any, a, b);
        return 0;
    case FJN_BAND:
    case FJN_BOR:
    case FJN_BXOR: {
        char sym = op->code == FJN_BAND ? '&' : op->code == FJN_BOR ? '|' : '^';
        if (!isi && t != FJT_BOOL)
            return -1;
        W("((%s)(%s %c %s))", ct, a, sym, b);
        return 0;
    }
    case FJN_INVERT:
        if (t == FJT_BOOL)
            W("((unsigned char)(%s == 0))", a);
        else if (isi)
            W("((%s)~%s)", ct, a);
        else
            return -1;
        return 0;
    case FJN_ISNAN:
        return isf ? (W("((unsigned char)(__builtin_isnan(%s) != 0))", a), 0) : -1;
    case FJN_ISINF:
        return isf ? (W("((unsigned char)fj_inf%s(%s))", t == FJT_F32 ? "32" : "64", a), 0) : -1;
    case FJN_ISFINITE:
        return isf ? (W("((unsigned char)fj_fin%s(%s))", t == FJT_F32 ? "32" : "64", a), 0) : -1;
    case FJN_SIGNBIT:
        return isf ? (W("((unsigned char)(__builtin_signbit(%s) != 0))", a), 0) : -1;
    case FJN_WHERE:
        if (fjt_info[rt].is_float && (op->arg[1] < 0 || op->arg[2] < 0))
            W("fj_osel%s(%s, %s, %s, fjo)", rt == FJT_F32 ? "32" : "64", a, b, c); /* an arm is a member */
        else if (fjt_info[rt].is_float && feeds_invalid_op(g, (int)(op - g->ops)))
            W("fj_bsel%s(%s, %s, %s)", rt == FJT_F32 ? "32" : "64", a, b, c);
        else
            W("(%s ? %s : %s)", a, b, c);
        return 0;
    case FJN_FLOORDIV:
    case FJN_MOD:
        /* written as statements by emit_body */
        return isi ? 0 : -1;
    default:
        break;
    }
#undef W
    (void)rct;
    return -1;
}

/* Integer floor division / remainder as NumPy computes them; a zero divisor
   (or MIN // -1) sets st so the group runs through NumPy (its warnings, its values). */
static int emit_intdiv(PyObject *buf, const fjn_Group *g, const fjn_Op *op, int m)
{
    fjn_Expr A = {{0}}, B = {{0}};
    int t = op->argtype[0];
    const char *ct = fjt_info[t].ctype;
    operand_expr(g, op->arg[0], t, &A);
    operand_expr(g, op->arg[1], t, &B);
    if (fjt_info[t].is_signed) {
        if (put(buf, "            const %s a%d = %s, b%d = %s;\n", ct, m, A.s, m, B.s) < 0 ||
            put(buf, "            const int bad%d = (b%d == 0) | ((a%d == %s) & (b%d == -1));\n", m, m, m,
                fjt_info[t].umax, m) < 0 ||
            put(buf, "            st |= bad%d;\n            const %s d%d = bad%d ? 1 : b%d;\n", m, ct, m, m, m) <
                0 ||
            put(buf, "            const %s q%d = a%d / d%d, r%d = a%d %% d%d;\n", ct, m, m, m, m, m, m) < 0)
            return -1;
        if (op->code == FJN_FLOORDIV)
            return put(buf, "            const %s m%d = (r%d != 0 && ((r%d < 0) != (d%d < 0))) ? q%d - 1 : q%d;\n",
                       ct, m, m, m, m, m, m);
        return put(buf, "            const %s m%d = (r%d != 0 && ((r%d < 0) != (d%d < 0))) ? r%d + d%d : r%d;\n", ct,
                   m, m, m, m, m, m, m);
    }
    if (put(buf, "            const %s a%d = %s, b%d = %s;\n", ct, m, A.s, m, B.s) < 0 ||
        put(buf, "            st |= (b%d == 0);\n            const %s d%d = b%d == 0 ? 1 : b%d;\n", m, ct, m, m,
            m) < 0)
        return -1;
    return put(buf, "            const %s m%d = a%d %c d%d;\n", ct, m, m, op->code == FJN_FLOORDIV ? '/' : '%', m);
}

/* ---- reductions: an accumulator r<m> per reduction member ------------------- */

static int emit_reduce_init(PyObject *buf, const fjn_Group *g)
{
    for (int m = 0; m < g->nops; m++) {
        const fjn_Op *op = &g->ops[m];
        const char *init;
        if (!FJN_IS_REDUCTION(op->code) || m == g->pw || op->axis >= 0)
            continue;
        switch (op->code) {
        case FJN_RMAX:
            init = fjt_info[op->type].lo;
            break;
        case FJN_RMIN:
            init = fjt_info[op->type].hi;
            break;
        case FJN_RALL:
            init = "1";
            break;
        default:
            init = "0";
        }
        if (put(buf, "    %s r%d = %s;\n", fjt_info[op->type].ctype, m, init) < 0)
            return -1;
        if ((op->code == FJN_RMAX || op->code == FJN_RMIN) && fjt_info[op->type].is_float &&
            put(buf, "    %s k%d = fj_key%s(r%d);\n", op->type == FJT_F32 ? "int32_t" : "int64_t", m,
                op->type == FJT_F32 ? "32" : "64", m) < 0)
            return -1;
    }
    return 0;
}

/* The updated accumulator 'acc' of one-axis reduction 'op' with element 'x' (a C expression).
   Float max/min: the larger / smaller, NaN ignored (a NaN element is flagged apart). */
static int fjn_red_update(char *out, size_t cap, const fjn_Op *op, const char *acc, const char *x)
{
    const char *ct = fjt_info[op->type].ctype;
    int isf = fjt_info[op->type].is_float;
    switch (op->code) {
    case FJN_RSUM:
        snprintf(out, cap, "(%s)((uint64_t)%s + (uint64_t)%s)", ct, acc, x);
        return 0;
    case FJN_RMAX:
    case FJN_RMIN:
        if (isf)
            snprintf(out, cap, "%s(%s, %s) ? %s : %s", op->code == FJN_RMAX ? "__builtin_isgreater" : "__builtin_isless",
                     x, acc, x, acc);
        else
            snprintf(out, cap, "%s %c %s ? %s : %s", x, op->code == FJN_RMAX ? '>' : '<', acc, x, acc);
        return 0;
    case FJN_RANY:
        snprintf(out, cap, "%s | (unsigned char)(%s != 0)", acc, x);
        return 0;
    case FJN_RALL:
        snprintf(out, cap, "%s & (unsigned char)(%s != 0)", acc, x);
        return 0;
    default:
        return -1;
    }
}

static int emit_acc_update(PyObject *buf, const fjn_Op *op, int m, const char *r);

static int emit_reduce_step(PyObject *buf, const fjn_Group *g, const fjn_Op *op, int m, const char *pwstmt,
                            int mode)
{
    fjn_Expr A = {{0}};
    const char *ct = fjt_info[op->type].ctype;
    int isf = fjt_info[op->type].is_float;
    operand_expr(g, op->arg[0], op->argtype[0], &A);
    if (op->axis >= 0 && m != g->pw) {
        /* over one axis: accumulate in the (identity-filled) output, whose
           stride along the reduced axis is 0; strided form only */
        int slot = g->nin + op->out;
        int k = op->code == FJN_RSUM ? 0 : op->code == FJN_RMAX ? 1 : op->code == FJN_RMIN ? 2
                : op->code == FJN_RANY ? 3 : op->code == FJN_RALL ? 4 : -1;
        char acc[32], stmt[256];
        if (mode == 0)
            return 0; /* never run: the host uses the strided form for these groups */
        if (k < 0 || (isf && k != 1 && k != 2))
            return -1;
        /* mode 1: the accumulator is the output element; mode 2: register lane j */
        if (mode == 2)
            snprintf(acc, sizeof acc, "acc%d[j]", m);
        else
            snprintf(acc, sizeof acc, "*o");
        if (fjn_red_update(stmt, sizeof stmt, op, acc, "x") < 0)
            return -1;
        /* a float NaN makes the group run through NumPy (its payload rules) */
        const char *nan = isf ? " st |= (x != x) << 1;" : "";
        if (mode == 2)
            return put(buf, "            { const %s x = %s; %s = %s;%s }\n", fjt_info[op->argtype[0]].ctype, A.s, acc,
                       stmt, nan);
        return put(buf, "            { const %s x = %s; %s *o = (%s *)(p%d + i * s%d); *o = %s;%s }\n",
                   fjt_info[op->argtype[0]].ctype, A.s, ct, ct, slot, slot, stmt, nan);
    }
    if (put(buf, "            const %s x%d = %s;\n", fjt_info[op->argtype[0]].ctype, m, A.s) < 0)
        return -1;
    if (m == g->pw)
        return pwstmt ? put(buf, "            %s x%d;\n", pwstmt, m) : -1;
    char r[32];
    snprintf(r, sizeof r, "r%d", m);
    return emit_acc_update(buf, op, m, r);
}

/* The update of accumulator 'r' of reduction member m over every axis with element x<m>. */
static int emit_acc_update(PyObject *buf, const fjn_Op *op, int m, const char *r)
{
    const char *ct = fjt_info[op->type].ctype;
    int isf = fjt_info[op->type].is_float;
    switch (op->code) {
    case FJN_RSUM:
        if (isf)
            return -1;
        return put(buf, "            %s = (%s)((uint64_t)%s + (uint64_t)x%d);\n", r, ct, r, m);
    case FJN_RMAX:
    case FJN_RMIN:
        /* floats: the max / min of the elements' ordered integer keys (fj_key*,
           kept in k<m>: an integer max / min reduction, which compilers vectorize;
           the float compare-select is not); a NaN element is flagged (st: NumPy
           decides, the payload is its order's) */
        if (isf)
            return put(buf, "            { const %s kx = fj_key%s(x%d); k%d = kx %c k%d ? kx : k%d; }\n"
                            "            st |= (x%d != x%d) << 1;\n",
                       op->type == FJT_F32 ? "int32_t" : "int64_t", op->type == FJT_F32 ? "32" : "64", m, m,
                       op->code == FJN_RMAX ? '>' : '<', m, m, m, m);
        return put(buf, "            %s = x%d %c %s ? x%d : %s;\n", r, m, op->code == FJN_RMAX ? '>' : '<', r, m, r);
    case FJN_RANY:
        return put(buf, "            %s |= (unsigned char)(x%d != 0);\n", r, m);
    case FJN_RALL:
        return put(buf, "            %s &= (unsigned char)(x%d != 0);\n", r, m);
    default:
        return -1;
    }
}

/* Stores the accumulators; a float max/min that is NaN or zero (where NumPy's
   order decides the payload or the sign) makes the group run through NumPy. */
static int emit_reduce_store(PyObject *buf, const fjn_Group *g)
{
    for (int m = 0; m < g->nops; m++) {
        const fjn_Op *op = &g->ops[m];
        if (!FJN_IS_REDUCTION(op->code) || m == g->pw || op->axis >= 0)
            continue;
        if ((op->code == FJN_RMAX || op->code == FJN_RMIN) && fjt_info[op->type].is_float &&
            put(buf, "    r%d = fj_unkey%s(k%d);\n    st |= (__builtin_isnan(r%d) || r%d == 0) ? 2 : 0;\n", m,
                op->type == FJT_F32 ? "32" : "64", m, m, m) < 0)
            return -1;
        if (put(buf, "    *(%s *)data[%d] = r%d;\n", fjt_info[op->type].ctype, g->nin + op->out, m) < 0)
            return -1;
    }
    return 0;
}

/* Whether emitted bodies compute the invalid conditions (0 while the
   unchecked loops are written: the pairwise sum's leaves, the fast loops of
   flat / strided kernels), and whether a body only computes them (1 for the
   checking loops, which store nothing and update no accumulator). */
static int fjn_checks = 1;
static int fjn_checkonly = 0;

static int has_invalid_check(const fjn_Op *op)
{
    if (!fjn_checks)
        return 0;
    switch (op->code) {
    case FJN_ADD:
    case FJN_SUB:
    case FJN_MUL:
    case FJN_TDIV:
    case FJN_SQRT:
        return fjt_info[op->argtype[0]].is_float;
    default:
        return 0;
    }
}

/* Does any member of the group have an invalid condition to compute? */
static int group_has_checks(const fjn_Group *g)
{
    int saved = fjn_checks, r = 0;
    fjn_checks = 1;
    for (int m = 0; m < g->nops && !r; m++)
        r = has_invalid_check(&g->ops[m]);
    fjn_checks = saved;
    return r;
}

/* The accumulators iv<m> of the members' invalid conditions, one per member
   and as wide as the member's float (several conditions ORed into one
   variable per iteration, or an int beside doubles, keep gcc 12 from
   vectorizing the loop), and their fold into inv. */
static int emit_inv_decls(PyObject *buf, const fjn_Group *g)
{
    for (int m = 0; m < g->nops; m++)
        if (has_invalid_check(&g->ops[m]) &&
            put(buf, "    %s iv%d = 0;\n", fjt_info[g->ops[m].argtype[0]].size == 4 ? "int32_t" : "int64_t", m) < 0)
            return -1;
    return 0;
}

static int emit_inv_fold(PyObject *buf, const fjn_Group *g)
{
    for (int m = 0; m < g->nops; m++)
        if (has_invalid_check(&g->ops[m]) && put(buf, "    inv |= iv%d != 0;\n", m) < 0)
            return -1;
    return 0;
}

/* NumPy's invalid condition of float member m, from its operands (not the FE
   flag): a NaN result of + - * / from non-NaN operands, sqrt of a value < 0. */
static int emit_invalid_check(PyObject *buf, const fjn_Group *g, const fjn_Op *op, int m)
{
    fjn_Expr A = {{0}}, B = {{0}};
    if (!has_invalid_check(op))
        return 0;
    operand_expr(g, op->arg[0], op->argtype[0], &A);
    switch (op->code) {
    case FJN_ADD:
    case FJN_SUB:
    case FJN_MUL:
    case FJN_TDIV:
        operand_expr(g, op->arg[1], op->argtype[1], &B);
        return put(buf, "            iv%d |= __builtin_isnan(m%d) & !__builtin_isunordered(%s, %s);\n", m, m, A.s, B.s);
    case FJN_SQRT:
        return put(buf, "            iv%d |= __builtin_isless(%s, 0);\n", m, A.s);
    default:
        return 0;
    }
}

/* The statements computing member m (elementwise): const <type> m<m> = ...; */
static int emit_member(PyObject *buf, const fjn_Group *g, int m)
{
    char e[2048];
    const fjn_Op *op = &g->ops[m];
    if (op->code == FJN_FLOORDIV || op->code == FJN_MOD)
        return emit_intdiv(buf, g, op, m);
    if (op_expr(g, op, e, sizeof e) < 0) {
        PyErr_Format(PyExc_SystemError, "framejit native: cannot emit op %d on type %d", op->code, op->argtype[0]);
        return -1;
    }
    return put(buf, "            const %s m%d = %s;\n", fjt_info[op->type].ctype, m, e);
}

/* The loop body: loads (by 'mode'), members, stores. mode 0: flat, 1: strided.
   'pwstmt' is the statement that takes the pairwise-summed value ("res +="). */
static int emit_body(PyObject *buf, const fjn_Group *g, int mode, const char *pwstmt)
{
    for (int k = 0; k < g->nin; k++) {
        const fjn_Input *in = &g->in[k];
        const char *ct = fjt_info[in->type].ctype;
        if (in->kind == FJN_IN_CONST)
            continue;
        if (mode == 0 && in->bcast == 0)
            continue; /* loaded once before the loop */
        /* (a bool element: its byte w<k>, its truth v<k>, see operand_expr_as) */
        int bl = in->type == FJT_BOOL;
        if (mode == 0) {
            if (put(buf, "            const %s %c%d = p%d[i];\n", ct, bl ? 'w' : 'v', k, k) < 0)
                return -1;
        } else if (put(buf, "            const %s %c%d = *(const %s *)(p%d + i * s%d);\n", ct, bl ? 'w' : 'v', k, ct, k, k) < 0) {
            return -1;
        }
        if (bl && put(buf, "            const unsigned char v%d = w%d != 0; (void)v%d; (void)w%d;\n", k, k, k, k) < 0)
            return -1;
    }
    for (int m = 0; m < g->nops; m++) {
        const fjn_Op *op = &g->ops[m];
        if (FJN_IS_REDUCTION(op->code)) {
            if (fjn_checkonly) {
                /* the pairwise-summed operand: is it NaN (fj_g<N>_chk) */
                fjn_Expr A = {{0}};
                operand_expr(g, op->arg[0], op->argtype[0], &A);
                if (m == g->pw && put(buf, "            en |= __builtin_isnan(%s);\n            ei |= __builtin_isinf(%s);\n",
                                      A.s, A.s) < 0)
                    return -1;
                continue;
            }
            if (emit_reduce_step(buf, g, op, m, pwstmt, mode) < 0)
                return -1;
            continue;
        }
        if (emit_member(buf, g, m) < 0 || emit_invalid_check(buf, g, op, m) < 0)
            return -1;
    }
    for (int j = 0; j < g->nout && !fjn_checkonly; j++) {
        int m = g->out_op[j];
        const char *ct = fjt_info[g->ops[m].type].ctype;
        int slot = g->nin + j;
        if (FJN_IS_REDUCTION(g->ops[m].code))
            continue; /* stored after the loop */
        if (mode == 0) {
            if (put(buf, "            p%d[i] = m%d;\n", slot, m) < 0)
                return -1;
        } else if (put(buf, "            *(%s *)(p%d + i * s%d) = m%d;\n", ct, slot, slot, m) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Declarations of constants (both modes). */
static int emit_consts(PyObject *buf, const fjn_Group *g)
{
    if (put(buf, "    const uint64_t fjo = fj_opaque0; /* (fj_osel*) */\n    (void)fjo;\n") < 0)
        return -1;
    for (int k = 0; k < g->nin; k++) {
        const fjn_Input *in = &g->in[k];
        if (in->kind != FJN_IN_CONST)
            continue;
        if (in->type == FJT_F64) {
            uint64_t bits;
            memcpy(&bits, &in->dval, 8);
            if (put(buf, "    const double v%d = fj_f64(0x%016llxULL);\n", k, (unsigned long long)bits) < 0)
                return -1;
        } else if (in->type == FJT_I64) {
            if (in->ival == INT64_MIN) {
                if (put(buf, "    const int64_t v%d = INT64_MIN;\n", k) < 0)
                    return -1;
            } else if (put(buf, "    const int64_t v%d = (int64_t)%lldLL;\n", k, in->ival) < 0) {
                return -1;
            }
        } else if (put(buf, "    const unsigned char v%d = %d;\n", k, in->ival ? 1 : 0) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Declarations of the flat form: constants, inputs (pointers or loaded scalars), outputs. */
static int emit_flat_decls(PyObject *buf, const fjn_Group *g)
{
    if (emit_consts(buf, g) < 0)
        return -1;
    for (int k = 0; k < g->nin; k++) {
        const fjn_Input *in = &g->in[k];
        const char *ct = fjt_info[in->type].ctype;
        if (in->kind == FJN_IN_CONST)
            continue;
        if (in->bcast == 0) {
            if (put(buf, "    const %s %c%d = *(const %s *)data[%d];\n", ct, in->type == FJT_BOOL ? 'w' : 'v', k, ct, k) < 0 ||
                (in->type == FJT_BOOL && put(buf, "    const unsigned char v%d = w%d != 0; (void)v%d; (void)w%d;\n", k, k, k, k) < 0))
                return -1;
        } else if (put(buf, "    const %s *restrict p%d = (const %s *)data[%d];\n", ct, k, ct, k) < 0) {
            return -1;
        }
    }
    for (int j = 0; j < g->nout; j++) {
        const char *ct = fjt_info[g->ops[g->out_op[j]].type].ctype;
        if (FJN_IS_REDUCTION(g->ops[g->out_op[j]].code))
            continue;
        if (put(buf, "    %s *restrict p%d = (%s *)data[%d];\n", ct, g->nin + j, ct, g->nin + j) < 0)
            return -1;
    }
    return 0;
}

/*
** A group with a float sum or mean: NumPy's order, which is
** out = 0 + pairwise_sum(all elements in memory order), pairwise_sum being
** NumPy's (numpy/_core/src/umath/loops_utils.h.src): blocks of at most 128
** elements summed with 8 accumulators, longer runs split in two at a
** multiple of 8.  Every element is visited once, in increasing order, in
** the leaves, which also store the group's other outputs.  Only the flat
** (contiguous) form: the strided one asks for NumPy (returns 2).  A mean
** divides as numpy.mean does: by the element count as an intp, in double
** (float32: the double quotient rounded to float).
*/
/* One copy of the body for element 'idx' (an expression of i0, k, j), the
   pairwise-summed value taken by 'pwstmt'. */
static int emit_body_at(PyObject *buf, const fjn_Group *g, const char *idx, const char *pwstmt)
{
    return put(buf, "        {\n            const intptr_t i = %s;\n", idx) < 0 || emit_body(buf, g, 0, pwstmt) < 0 ||
                   put(buf, "        }\n") < 0
               ? -1
               : 0;
}

/* float64 sums run four leaves per loop when the summed expression has at most
   this many elementwise members (see emit_pairwise_group) */
#define FJN_IL_OPS 3

static int emit_pairwise_group(PyObject *buf, const fjn_Group *g, int gi)
{
    const fjn_Op *op = &g->ops[g->pw];
    const char *T = fjt_info[op->type].ctype;
    int slot = g->nin + op->out, hardinv = has_hard_invalid(g);
    /* float64: the group's elements are computed inside NumPy's leaves (no buffer):
       a leaf's eight accumulators start at -0.0 (-0.0 + x is x, bit for bit,
       so the first block's adds are NumPy's r[j] = x[j]), fj_g<N>_acc adds
       whole blocks of 8 into them (the loop over the 8 lanes is what gcc's
       SLP vectorizer turns into vector adds: one chain per leaf), fj_g<N>_tail
       adds the rest one by one, and a node whose two children split into
       two leaves each, all four of whole blocks, runs its four leaves in one
       loop (four independent chains of adds: the adds' throughput, not their
       latency).  Every element is visited once, in the leaves, which also
       store the group's other outputs.  No invalid condition is computed
       here: fj_g<N>_chk computes them, and whether an element is NaN, in a
       plain loop (both are independent of the order), only when the FE
       invalid flag (set also spuriously by vectorized compares) says they
       may matter. */
    fjn_checks = 0;
    if (op->type == FJT_F32) {
        /* float32: the group's elements of a run of at most 4096 (a subtree of
           NumPy's recursion) are computed by a plain loop (fj_g<N>_fill, which
           also stores the group's other outputs) into a buffer, which the
           prologue's fj_pws32 sums in NumPy's order */
        if (put(buf, "\nstatic void fj_g%d_fill(intptr_t lo, intptr_t n, char *const *data, %s *restrict xb, int *stp)\n"
                     "{\n    int st = 0;\n", gi, T) < 0 ||
            emit_flat_decls(buf, g) < 0 || put(buf, "    for (intptr_t i = lo; i < lo + n; i++) {\n") < 0 ||
            emit_body(buf, g, 0, "xb[i - lo] =") < 0 || put(buf, "    }\n    *stp |= st ? 1 : 0;\n}\n") < 0 ||
            put(buf, "\nstatic %s fj_g%d_pwb(intptr_t lo, intptr_t n, char *const *data, int *stp, %s *xb)\n{\n"
                     "    if (n <= 4096) {\n        fj_g%d_fill(lo, n, data, xb, stp);\n        return fj_pws32(xb, n);\n"
                     "    }\n    intptr_t n2 = n / 2;\n    n2 -= n2 %% 8;\n    %s a = fj_g%d_pwb(lo, n2, data, stp, xb);\n"
                     "    return a + fj_g%d_pwb(lo + n2, n - n2, data, stp, xb);\n}\n",
                T, gi, T, gi, T, gi, gi) < 0)
            goto error;
        goto checks;
    }
    if (put(buf, "\nstatic __attribute__((noinline)) void fj_g%d_acc(intptr_t b, intptr_t nb, char *const *data, "
                 "%s *restrict rp, int *stp)\n{\n    int st = 0;\n    %s r[8];\n    memcpy(r, rp, sizeof r);\n",
            gi, T, T) < 0 ||
        emit_flat_decls(buf, g) < 0 ||
        put(buf, "    for (intptr_t i0 = b; i0 < b + nb; i0 += 8)\n    for (int j = 0; j < 8; j++)\n") < 0 ||
        emit_body_at(buf, g, "i0 + j", "r[j] +=") < 0 ||
        put(buf, "    memcpy(rp, r, sizeof r);\n    *stp |= st ? 1 : 0;\n}\n") < 0)
        goto error;
    if (put(buf, "\nstatic __attribute__((noinline)) %s fj_g%d_tail(intptr_t i0, intptr_t e, char *const *data, %s res, "
                 "int *stp)\n{\n    int st = 0;\n", T, gi, T) < 0 ||
        emit_flat_decls(buf, g) < 0 || put(buf, "    for (; i0 < e; i0++)\n") < 0 ||
        emit_body_at(buf, g, "i0", "res +=") < 0 || put(buf, "    *stp |= st ? 1 : 0;\n    return res;\n}\n") < 0)
        goto error;
    if (put(buf, "\nstatic %s fj_g%d_leaf(intptr_t lo, intptr_t n, char *const *data, int *stp)\n{\n"
                 "    %s r[8], res = 0;\n    intptr_t w = n - n %% 8;\n"
                 "    if (n >= 8) {\n        for (int j = 0; j < 8; j++) r[j] = -0.0;\n"
                 "        fj_g%d_acc(lo, w, data, r, stp);\n        res = FJ_TREE(r);\n    }\n"
                 "    return w < n ? fj_g%d_tail(lo + w, lo + n, data, res, stp) : res;\n}\n",
            T, gi, T, gi, gi) < 0)
        goto error;
    /* four leaves per loop (four chains of adds at once) pay when the summed
       expression is cheap, but four copies of a longer body cost more compile
       time than they save; so only for up to FJN_IL_OPS elementwise members
       (docs/native.md) */
    int il_ok = 0;
    for (int m = 0; m < g->nops; m++)
        il_ok += !FJN_IS_REDUCTION(g->ops[m].code);
    il_ok = il_ok <= FJN_IL_OPS;
    if (il_ok &&
        (put(buf, "\nstatic void fj_g%d_leaf4(intptr_t a, intptr_t na, intptr_t b, intptr_t nb, intptr_t c, intptr_t nc, "
                  "intptr_t d, intptr_t nd, char *const *data, %s *res, int *stp)\n{\n    int st = 0;\n"
                  "    %s ra[8], rb[8], rc[8], rd[8];\n    for (int j = 0; j < 8; j++) ra[j] = rb[j] = rc[j] = rd[j] = -0.0;\n"
                  "    intptr_t m = na < nb ? na : nb;\n    m = nc < m ? nc : m;\n    m = nd < m ? nd : m;\n",
             gi, T, T) < 0 ||
         emit_flat_decls(buf, g) < 0 ||
         put(buf, "    for (intptr_t k = 0; k < m; k += 8)\n    for (int j = 0; j < 8; j++) {\n") < 0 ||
         emit_body_at(buf, g, "a + k + j", "ra[j] +=") < 0 || emit_body_at(buf, g, "b + k + j", "rb[j] +=") < 0 ||
         emit_body_at(buf, g, "c + k + j", "rc[j] +=") < 0 || emit_body_at(buf, g, "d + k + j", "rd[j] +=") < 0 ||
         put(buf, "    }\n    *stp |= st ? 1 : 0;\n"
                  "    if (m < na) fj_g%d_acc(a + m, na - m, data, ra, stp);\n"
                  "    if (m < nb) fj_g%d_acc(b + m, nb - m, data, rb, stp);\n"
                  "    if (m < nc) fj_g%d_acc(c + m, nc - m, data, rc, stp);\n"
                  "    if (m < nd) fj_g%d_acc(d + m, nd - m, data, rd, stp);\n"
                  "    res[0] = FJ_TREE(ra);\n    res[1] = FJ_TREE(rb);\n    res[2] = FJ_TREE(rc);\n"
                  "    res[3] = FJ_TREE(rd);\n}\n", gi, gi, gi, gi) < 0))
        goto error;
    /* NumPy's recursion (pairwise_sum in numpy/_core/src/umath/loops_utils.h.src) */
    if (put(buf, "\nstatic %s fj_g%d_pw(intptr_t lo, intptr_t n, char *const *data, int *stp, int il)\n{\n"
                 "    if (n <= 128)\n        return fj_g%d_leaf(lo, n, data, stp);\n"
                 "    intptr_t n2 = n / 2;\n    n2 -= n2 %% 8;\n", T, gi, gi) < 0 ||
        (il_ok &&
         put(buf, "    intptr_t m2 = n - n2, a2 = n2 / 2, b2 = m2 / 2;\n    a2 -= a2 %% 8;\n    b2 -= b2 %% 8;\n"
                  "    if (il && n2 > 128 && m2 > 128 && n2 - a2 <= 128 && m2 - b2 <= 128 && m2 %% 8 == 0) {\n"
                  "        %s l[4];\n        fj_g%d_leaf4(lo, a2, lo + a2, n2 - a2, lo + n2, b2, lo + n2 + b2, m2 - b2, "
                  "data, l, stp);\n        return (l[0] + l[1]) + (l[2] + l[3]);\n    }\n", T, gi) < 0) ||
        (!il_ok && put(buf, "    intptr_t m2 = n - n2;\n    (void)il;\n") < 0) ||
        put(buf, "    %s s = fj_g%d_pw(lo, n2, data, stp, il);\n    return s + fj_g%d_pw(lo + n2, m2, data, stp, il);\n}\n",
            T, gi, gi) < 0)
        goto error;
checks:
    /* the checks: bit 4 a member's invalid condition, bit 8 a NaN element.
       Run only when the sum raised FE_INVALID (NaN or infinite elements, or
       an invalid member), so not vectorized (FJ_NOVEC): it was an eighth of
       the compile time of a sum's file (rsum 0.34-0.37 -> 0.27-0.33 s of gcc) */
    fjn_checks = 1;
    fjn_checkonly = 1;
    if (put(buf, "\nFJ_NOVEC static int fj_g%d_chk(intptr_t lo, intptr_t n, char *const *data)\n{\n    int st = 0, inv = 0, en = 0, ei = 0;\n",
            gi) < 0 ||
        emit_flat_decls(buf, g) < 0 || emit_inv_decls(buf, g) < 0 ||
        put(buf, "    for (intptr_t i = lo; i < lo + n; i++) {\n") < 0 || emit_body(buf, g, 0, NULL) < 0 ||
        put(buf, "    }\n") < 0 || emit_inv_fold(buf, g) < 0 ||
        put(buf, "    (void)st;\n    return (inv ? 4 : 0) | (en ? 8 : 0) | (ei ? 16 : 0);\n}\n") < 0)
        goto error;
    fjn_checkonly = 0;
    /* invalid: a member's condition, or the sum's own inf - inf (a NaN total
       from no NaN element; whether the total is NaN depends on the order, so
       it is the fast pass's total that tells) */
    /* the calls of the pairwise recursion: float32 passes a buffer of 4096
       the entry allocates once (stack up to 512 elements), float64 the
       four-leaves flag */
    int f32 = op->type == FJT_F32;
    const char *xbfree = f32 ? "    if (xb != sb)\n        free(xb);\n" : "";
    char rowcall[160], rowcheck[160], flatcall[160], partcall[160];
    if (f32) {
        snprintf(rowcall, sizeof rowcall, "fj_g%d_pwb(q * len, len, data, &st, xb)", gi);
        snprintf(rowcheck, sizeof rowcheck, "fj_g%d_pwb(q * len, len, data, &d, xb)", gi);
        snprintf(flatcall, sizeof flatcall, "fj_g%d_pwb(start, end - start, data, &st, xb)", gi);
        snprintf(partcall, sizeof partcall, "fj_g%d_pwb(lo, n, data, &st, xb)", gi);
    } else {
        snprintf(rowcall, sizeof rowcall, "fj_g%d_pw(q * len, len, data, &st, len <= FJ_IL_MAX)", gi);
        snprintf(rowcheck, sizeof rowcheck, "fj_g%d_pw(q * len, len, data, &d, len <= FJ_IL_MAX)", gi);
        snprintf(flatcall, sizeof flatcall, "fj_g%d_pw(start, end - start, data, &st, end - start <= FJ_IL_MAX)", gi);
        snprintf(partcall, sizeof partcall, "fj_g%d_pw(lo, n, data, &st, n <= FJ_IL_MAX)", gi);
    }
    if (op->axis >= 0) {
        /* over the last axis of C-contiguous operands: one pairwise sum per row
           (NumPy's order there); the host calls the strided entry for it */
        if (put(buf, "\nint fj_g%d_flat(intptr_t start, intptr_t end, char *const *data)\n"
                     "{\n    (void)start; (void)end; (void)data;\n    return FJ_HARD;\n}\n", gi) < 0 ||
            put(buf, "\nint fj_g%d_strided(int nd, const intptr_t *shape, char *const *data, const intptr_t *strides)\n"
                     "{\n    int st = 0;\n    (void)strides;\n    if (!fj_fpstd())\n        return FJ_HARD;\n    intptr_t len = nd > 0 ? shape[nd - 1] : 1, rows = 1;\n"
                     "    for (int k = 0; k + 1 < nd; k++) rows *= shape[k];\n    %s *out = (%s *)data[%d];\n",
                gi, T, T, slot) < 0 ||
            (f32 && put(buf, "    %s sb[512], *xb = len <= 512 ? sb : (%s *)malloc(4096 * sizeof(%s));\n"
                             "    if (!xb)\n        return FJ_HARD;\n", T, T, T) < 0) ||
            put(buf, "    fj_feclear(FJ_FPE);\n    for (intptr_t q = 0; q < rows; q++) {\n"
                     "        %s total = %s;\n        %s r = (%s)0 + total;\n",
                T, rowcall, T, T) < 0)
            return -1;
        if (op->code == FJN_RMEAN && put(buf, "        r = (%s)((double)r / (double)(int64_t)len);\n", T) < 0)
            return -1;
        return put(buf, "        out[q] = r;\n    }\n    int v = 0;\n"
                        "    if (fj_fetest(FE_INVALID))\n        for (intptr_t q = 0; q < rows && !v; q++) {\n"
                        "            int sc = fj_g%d_chk(q * len, len, data), d = 0;\n"
                        "            v = fj_suminv(sc, !(sc & 12) && __builtin_isnan(%s), fj_fetest(FE_OVERFLOW) != 0);\n"
                        "        }\n%s    return fj_ret((st & 1) || v == FJ_HARD, v == FE_INVALID, %d);\n}\n",
                   gi, rowcheck, xbfree, hardinv);
    }
    if (put(buf, "\nint fj_g%d_flat(intptr_t start, intptr_t end, char *const *data)\n{\n    int st = 0;\n"
                 "    if (!fj_fpstd())\n        return FJ_HARD;\n", gi) < 0 ||
        (f32 && put(buf, "    %s sb[512], *xb = end - start <= 512 ? sb : (%s *)malloc(4096 * sizeof(%s));\n"
                         "    if (!xb)\n        return FJ_HARD;\n", T, T, T) < 0) ||
        put(buf, "    fj_feclear(FJ_FPE);\n    %s total = %s;\n%s"
                 "    %s r = (%s)0 + total;\n", T, flatcall, xbfree, T, T) < 0)
        return -1;
    if (op->code == FJN_RMEAN &&
        put(buf, "    r = (%s)((double)r / (double)(int64_t)(end - start));\n", T) < 0)
        return -1;
    if (put(buf, "    int v = fj_fetest(FE_INVALID) ? fj_suminv(fj_g%d_chk(start, end - start, data), "
                    "__builtin_isnan(total), fj_fetest(FE_OVERFLOW) != 0) : 0;\n"
                    "    *(%s *)data[%d] = r;\n    return fj_ret((st & 1) || v == FJ_HARD, v == FE_INVALID, %d);\n}\n"
                    "\nint fj_g%d_strided(int nd, const intptr_t *shape, char *const *data, const intptr_t *strides)\n"
                    "{\n    (void)nd; (void)shape; (void)data; (void)strides;\n    return FJ_HARD;\n}\n",
               gi, T, slot, hardinv, gi) < 0)
        return -1;
    /* the parallel form (native.c run_pw_parallel): a subtree's raw total */
    if (put(buf, "\nint fj_g%d_part(intptr_t lo, intptr_t n, char *const *data, void *total)\n{\n    int st = 0;\n"
                 "    if (!fj_fpstd())\n        return FJ_HARD;\n", gi) < 0 ||
        (f32 && put(buf, "    %s sb[512], *xb = n <= 512 ? sb : (%s *)malloc(4096 * sizeof(%s));\n"
                         "    if (!xb)\n        return FJ_HARD;\n", T, T, T) < 0) ||
        put(buf, "    fj_feclear(FJ_FPE);\n    %s t = %s;\n%s"
                 "    memcpy(total, &t, sizeof t);\n    return fj_ret(st & 1, fj_fetest(FE_INVALID) != 0, %d);\n}\n"
                 "\nint fj_g%d_check(intptr_t lo, intptr_t n, char *const *data, int nan, int ovf)\n{\n"
                 "    return fj_suminv(fj_g%d_chk(lo, n, data), nan, ovf);\n}\n",
            T, partcall, xbfree, hardinv, gi, gi) < 0)
        return -1;
    return 0;
error:
    fjn_checks = 1;
    fjn_checkonly = 0;
    return -1;
}

/*
** Invalid conditions cost as much as the arithmetic (two compares per float
** member and element), so the fast loop of a kernel computes none.  The FE
** invalid flag is set by every genuine invalid operation (and spuriously by
** vectorized signaling compares of NaN or a speculated sqrt), so after each
** block (flat: FJN_BLOCK elements; strided: one row) a set flag runs a
** checking loop over that block, whose data is still in cache: it recomputes
** the members and their exact invalid conditions, and stores nothing.  A
** group that casts a float to an integer needs no check (fj_ret makes any
** invalid flag hard there).
*/
#define FJN_BLOCK 4096

/* The check after a block of the fast loop ('lo' .. 'hi', body form 'mode'). */
static int emit_block_check(PyObject *buf, const fjn_Group *g, int mode, const char *lo, const char *hi)
{
    int r;
    if (put(buf, "        if (fj_fetest(FE_INVALID)) {\n            if (!inv) {\n"
                 "            for (intptr_t i = %s; i < %s; i++) {\n", lo, hi) < 0)
        return -1;
    fjn_checkonly = 1;
    r = emit_body(buf, g, mode, NULL);
    fjn_checkonly = 0;
    if (r < 0 || put(buf, "            }\n") < 0 || emit_inv_fold(buf, g) < 0 ||
        put(buf, "            }\n            fj_feclear(FE_INVALID);\n        }\n") < 0)
        return -1;
    return 0;
}

static int emit_group_loops(PyObject *buf, const fjn_Group *g, int gi, int checks);

/* The flat loop of a group with a float to int cast (whose invalid flag is hard: a
   cast's invalid only the flag tells) confirms a set flag block by block with
   fj_g<N>_hinv(b, be, data): the members over elements b .. be-1 again, in scalar
   code (FJ_NOVEC: scalar compares are the quiet ucomis, where gcc's vectorized ones
   were signaling and raised invalid for any NaN), storing nothing (every member's
   value goes into a sink, so none is dropped); 1 when invalid was raised, i.e. by a
   cast of a NaN or out of range value or an invalid operation NumPy meets too.  The
   flag is cleared before and after.  Reductions are skipped (integer sums, max / min,
   any / all raise no invalid; float sums are emit_pairwise_group's). */
static int emit_hinv(PyObject *buf, const fjn_Group *g, int gi)
{
    int r;
    if (put(buf, "\nFJ_NOVEC static int fj_g%d_hinv(intptr_t b, intptr_t be, char *const *data)\n{\n"
                 "    int st = 0;\n    uint64_t sk = 0;\n", gi) < 0 ||
        emit_flat_decls(buf, g) < 0 ||
        put(buf, "    fj_feclear(FE_INVALID);\n    for (intptr_t i = b; i < be; i++) {\n") < 0)
        return -1;
    fjn_checks = 0;
    fjn_checkonly = 1;
    r = emit_body(buf, g, 0, NULL);
    fjn_checkonly = 0;
    fjn_checks = 1;
    if (r < 0)
        return -1;
    for (int m = 0; m < g->nops; m++) {
        if (FJN_IS_REDUCTION(g->ops[m].code))
            continue; /* not computed here */
        /* a volatile store of each member: an XOR of their bits folded to 0 when two
           members were the same value (x.astype(float64) of a float64, x * 1), and
           gcc then dropped every operation of the loop (found by review) */
        if (put(buf, "            { volatile %s keep%d = m%d; (void)keep%d; }\n", fjt_info[g->ops[m].type].ctype,
                m, m, m) < 0)
            return -1;
    }
    return put(buf, "    }\n    (void)sk;\n    (void)st;\n"
                    "    const int r = fj_fetest(FE_INVALID) != 0;\n    fj_feclear(FE_INVALID);\n    return r;\n}\n");
}

/*
** A row group (native.c row_join, finish_row_group; docs/native.md "Row
** groups") as one function
**
**   int fj_g<N>_rows(intptr_t r0, intptr_t r1, intptr_t M, char *const *data,
**                    const intptr_t *rs, void *scratch)
**
** over rows r0 .. r1-1 of M elements: slot k's row r starts at data[k] +
** r * rs[k]; an input that varies along the row is contiguous there (p<k>),
** one that does not is read once per row (v<k>).  Per row, pass L (0 ..
** npass-1) is one loop over the row computing the VEC members it needs
** (those of level L that are outputs, kept in a row buffer or reduced in this
** pass, and what they read: recomputed, or loaded from the buffer of a kept
** member of an earlier pass), storing outputs and buffers and accumulating
** the pass's reductions; after it, its reductions' values, then the RSC
** members of level L + 1.  Float sums and means sum their row buffer (or
** the input's row) with the prologue's fj_pws32 / fj_pws64: NumPy's pairwise
** order over a C-ordered row.  Float max / min are the max / min of ordered
** keys; a NaN element, or a zero result where the row also holds the other
** zero (NumPy's order picks the sign), makes the status FJ_HARD.  Any
** invalid flag is hard too (no invalid conditions are computed here: data
** with NaN or inf may run through NumPy, with NumPy's values and warnings).
*/
static int emit_row_load(PyObject *buf, const fjn_Group *g, int k, const char *src)
{
    const char *ct = fjt_info[g->in[k].type].ctype;
    if (g->in[k].type == FJT_BOOL)
        return put(buf, "        const unsigned char w%d = %s; const unsigned char v%d = w%d != 0; (void)v%d; (void)w%d;\n",
                   k, src, k, k, k, k);
    return put(buf, "        const %s v%d = %s; (void)v%d;\n", ct, k, src, k);
}

static int emit_row_body(PyObject *buf, const fjn_Group *g, int L, const unsigned char *need, const char *n,
                         const char *pfx, const char *ix, int qfast);

/* Whether member 'op' is a float64 division by a value constant along the row (a
   reduction, a row scalar, an input or constant that does not vary along the
   row): in a pass without reductions it is computed by fj_qdiv64 from the
   divisor's reciprocal (its comment has the argument; docs/native.md, "Row groups"). */
static int is_row_qdiv(const fjn_Group *g, const fjn_Op *op)
{
    if (op->rk != FJN_RK_VEC || op->code != FJN_TDIV || op->type != FJT_F64 || op->argtype[0] != FJT_F64 ||
        op->argtype[1] != FJT_F64)
        return 0;
    int d = op->arg[1];
    if (d >= 0)
        return !g->in[d].rowvec;
    return g->ops[-d - 1].rk == FJN_RK_RED || g->ops[-d - 1].rk == FJN_RK_RSC;
}

/* Whether pass L computes member m (rather than loading its kept row or a NumPy call's). */
static int row_computes(const fjn_Op *op, int L)
{
    return op->rk != FJN_RK_CALL && !(fjn_has_row(op) && op->level < L);
}

/* Member m is a division pass L computes from its divisor's reciprocal. */
static int pass_qdiv(const fjn_Group *g, int L, const unsigned char *need, int m)
{
    return need[m] && row_computes(&g->ops[m], L) && is_row_qdiv(g, &g->ops[m]);
}

/* Pass L's divisions by a value of the row (is_row_qdiv), once per row: the
   divisor qb<m>, its reciprocal qy<m>, the magnitudes of the numerators it takes
   (as bits: ql<m> .. qh<m>, or zero), and qok, whether every one can run fj_qdiv
   (the bounds of fj_qdiv64's comment: the divisor's magnitude within them,
   rounding to nearest, FMA instructions).  Returns how many there are, or -1. */
static int emit_qdiv_setup(PyObject *buf, const fjn_Group *g, int L, const unsigned char *need)
{
    int nq = 0;
    for (int m = 0; m < g->nops; m++) {
        if (!pass_qdiv(g, L, need, m))
            continue;
        fjn_Expr B = {{0}};
        operand_expr(g, g->ops[m].arg[1], FJT_F64, &B);
        int r = put(buf, "        const double qb%d = %s;\n        const uint64_t qd%d = fj_b64(qb%d) & INT64_MAX;\n"
                         "        const int qo%d = qd%d - 0x07B0000000000000ULL <= 0x7080000000000000ULL;\n"
                         "        const double qy%d = 1.0 / (qo%d ? qb%d : 1.0);\n"
                         "        const double qm%d = fj_f64(qo%d ? qd%d : 0x3FF0000000000000ULL);\n"
                         "        const uint64_t ql%d = fj_b64(0x1p-960 * (2 * qm%d > 1 ? 2 * qm%d : 1));\n"
                         "        const uint64_t qh%d = fj_b64(0x1p960 * (qm%d / 2 < 1 ? qm%d / 2 : 1));\n",
                    m, B.s, m, m, m, m, m, m, m, m, m, m, m, m, m, m, m, m);
        if (r < 0)
            return -1;
        nq++;
    }
    if (!nq)
        return 0;
    /* (and every FP exception masked: an unmasked one would trap on an FMA
       of an out-of-bounds numerator where the division does not) */
    if (put(buf, "        const int qok = FJ_QDIV && fj_fpstd() && (fj_csr() & 0x1F80u) == 0x1F80u") < 0)
        return -1;
    for (int m = 0; m < g->nops; m++)
        if (pass_qdiv(g, L, need, m) && put(buf, " && qo%d", m) < 0)
            return -1;
    return put(buf, ";\n") < 0 ? -1 : nq;
}

/* The numerators' bounds of the divisions emit_qdiv computed in a span: each
   one's largest magnitude qx<m> and smallest but zero qv<m> + 1 (as bits: declare
   them, or, after the loop, the condition that one is out of bounds). */
static int emit_qdiv_bounds(PyObject *buf, const fjn_Group *g, int L, const unsigned char *need, int test)
{
    const char *sep = "";
    for (int m = 0; m < g->nops; m++) {
        if (!pass_qdiv(g, L, need, m))
            continue;
        int r = test ? put(buf, "%sqx%d > qh%d || qv%d < ql%d - 1", sep, m, m, m, m)
                     : put(buf, "            uint64_t qx%d = 0, qv%d = UINT64_MAX;\n", m, m);
        if (r < 0)
            return -1;
        sep = " || ";
    }
    return 0;
}

/* Pass L over elements 0 .. n-1 of the row, closed.  With nq divisions by a
   value of the row (emit_qdiv_setup's qok): the loop runs them by fj_qdiv64 (any
   numerator) and notes their numerators' bounds; when one was out of them, the FP
   status is put back as it was before the loop and the loop runs again with the
   divisions (the same values elsewhere, so NumPy's flags). */
static int emit_row_span(PyObject *buf, const fjn_Group *g, int L, const unsigned char *need, const char *n, int nq)
{
    if (!nq)
        return emit_row_body(buf, g, L, need, n, "", "i", 0) < 0 ? -1 : put(buf, "        }\n");
    if (put(buf, "        {\n        int qrun = qok;\n        if (qrun) {\n            const unsigned qcsr = fj_csr();\n") < 0 ||
        emit_qdiv_bounds(buf, g, L, need, 0) < 0 || emit_row_body(buf, g, L, need, n, "", "i", 1) < 0 ||
        put(buf, "        }\n            if (") < 0 || emit_qdiv_bounds(buf, g, L, need, 1) < 0 ||
        put(buf, ") {\n                fj_setcsr(qcsr);\n                qrun = 0;\n            }\n        }\n"
                 "        if (!qrun) {\n") < 0 ||
        emit_row_body(buf, g, L, need, n, "", "i", 0) < 0)
        return -1;
    return put(buf, "        }\n        }\n        }\n");
}

static int emit_row_pass(PyObject *buf, const fjn_Group *g, int L)
{
    unsigned char need[FJN_MAX_OPS] = {0};
    int any = 0;
    for (int m = g->nops - 1; m >= 0; m--) {
        const fjn_Op *op = &g->ops[m];
        if (op->level == L && ((op->rk == FJN_RK_VEC && (op->out >= 0 || op->buf >= 0)) ||
                               (op->rk == FJN_RK_RED && !(fjt_info[op->type].is_float &&
                                                          (op->code == FJN_RSUM || op->code == FJN_RMEAN)))))
            need[m] = 1;
        any |= need[m];
        /* a kept row or a NumPy call's row is loaded, not computed */
        if (!need[m] || !row_computes(op, L))
            continue;
        for (int j = 0; j < op->nargs; j++) {
            int a = -op->arg[j] - 1;
            if (op->arg[j] < 0 && (g->ops[a].rk == FJN_RK_VEC || g->ops[a].rk == FJN_RK_CALL))
                need[a] = 1;
        }
    }
    if (!any)
        return 0;
    /* the accumulators of this pass's reductions (float sums: after the loop) */
    for (int m = 0; m < g->nops; m++) {
        const fjn_Op *op = &g->ops[m];
        if (!need[m] || op->rk != FJN_RK_RED)
            continue;
        const char *ct = fjt_info[op->type].ctype;
        int f = fjt_info[op->type].is_float, f32 = op->type == FJT_F32;
        const char *init = op->code == FJN_RMAX ? fjt_info[op->type].lo : op->code == FJN_RMIN ? fjt_info[op->type].hi
                         : op->code == FJN_RALL ? "1" : "0";
        if (f) {
            if (put(buf, "        %s k%d = fj_key%s(%s), nn%d = 0, zz%d = 0;\n", f32 ? "int32_t" : "int64_t", m,
                    f32 ? "32" : "64", init, m, m) < 0)
                return -1;
        } else if (put(buf, "        %s r%d = %s;\n", ct, m, init) < 0) {
            return -1;
        }
    }
    /* a pass computing a vmath function (and no reduction) over rows whose length
       is not a multiple of the vector: its last M % V elements run as one padded
       block rather than gcc's scalar epilogue (a float32 exp a lane there cost rows
       of 100 elements 15% of their time): copies of the inputs' last elements, the
       pad lanes repeating element M - 1 (so they raise the flags it raises, no
       other), the body over the block, its first M - Mv values stored */
    int costly = 0, reduces = 0, minsize = 8;
    for (int m = 0; m < g->nops; m++) {
        const fjn_Op *op = &g->ops[m];
        if (!need[m])
            continue;
        reduces |= op->rk == FJN_RK_RED;
        costly |= op->rk == FJN_RK_VEC && FJN_IS_VMATH(op->code) && row_computes(op, L);
        if (fjt_info[op->type].size < minsize)
            minsize = fjt_info[op->type].size;
    }
    if (reduces)
        return emit_row_body(buf, g, L, need, "M", "", "i", 0) < 0 ? -1 : put(buf, "        }\n");
    /* (a block of its own: several passes may divide by a row's value, or pad, each
       its own qok, Mv) */
    if (put(buf, "        {\n") < 0)
        return -1;
    int nq = emit_qdiv_setup(buf, g, L, need);
    if (nq < 0)
        return -1;
    if (!costly)
        return emit_row_span(buf, g, L, need, "M", nq) < 0 ? -1 : put(buf, "        }\n");
    const int V = minsize <= 4 ? 16 : 8;
    if (put(buf, "        const intptr_t Mv = M & ~(intptr_t)%d;\n", V - 1) < 0 ||
        emit_row_span(buf, g, L, need, "Mv", nq) < 0 || put(buf, "        if (Mv < M) {\n") < 0)
        return -1;
    /* the block's arrays: each input row and kept row read, each row written */
    for (int k = 0; k < g->nin; k++)
        if (g->in[k].rowvec &&
            put(buf, "            %s tp%d[%d];\n            for (int j = 0; j < %d; j++) tp%d[j] = p%d[Mv + j < M ? Mv + j : M - 1];\n",
                fjt_info[g->in[k].type].ctype, k, V, V, k, k) < 0)
            return -1;
    for (int m = 0; m < g->nops; m++) {
        const fjn_Op *op = &g->ops[m];
        if (!need[m] || !(op->rk == FJN_RK_CALL || fjn_has_row(op)))
            continue;
        int read = op->rk == FJN_RK_CALL || op->level < L;
        if (put(buf, "            %s tkb%d[%d];\n", fjt_info[op->type].ctype, m, V) < 0 ||
            (read && put(buf, "            for (int j = 0; j < %d; j++) tkb%d[j] = kb%d[Mv + j < M ? Mv + j : M - 1];\n",
                         V, m, m) < 0))
            return -1;
    }
    char vs[16];
    snprintf(vs, sizeof vs, "%d", V);
    if (emit_row_body(buf, g, L, need, vs, "t", "j", 0) < 0 || put(buf, "            }\n") < 0)
        return -1;
    for (int m = 0; m < g->nops; m++) {
        const fjn_Op *op = &g->ops[m];
        if (need[m] && op->rk == FJN_RK_VEC && fjn_has_row(op) && op->level == L &&
            put(buf, "            for (intptr_t j = 0; j < M - Mv; j++) kb%d[Mv + j] = tkb%d[j];\n", m, m) < 0)
            return -1;
    }
    return put(buf, "        }\n        }\n");
}

/* Member m = a / b by fj_qdiv64 (emit_qdiv_setup's qb<m>, qy<m>), the numerator's
   magnitude noted in qx<m>, qv<m> (emit_qdiv_bounds). */
static int emit_qdiv(PyObject *buf, const fjn_Group *g, int m)
{
    fjn_Expr A = {{0}};
    operand_expr(g, g->ops[m].arg[0], FJT_F64, &A);
    return put(buf, "            const double qn%d = %s;\n            const uint64_t qu%d = fj_b64(qn%d) & INT64_MAX;\n"
                    "            qx%d = qu%d > qx%d ? qu%d : qx%d;\n            qv%d = qu%d - 1 < qv%d ? qu%d - 1 : qv%d;\n"
                    "            const double m%d = fj_qdiv64(qn%d, qb%d, qy%d);\n",
               m, A.s, m, m, m, m, m, m, m, m, m, m, m, m, m, m, m, m);
}

/* The loop of a row pass over elements 0 .. n-1 ('n' an expression), its arrays
   named <pfx>p<k> and <pfx>kb<m>, indexed by 'ix': from "for" to the body's last
   statement (the caller closes it).  'qfast': divisions by a value of the row
   by emit_qdiv (in a block of emit_row_span). */
static int emit_row_body(PyObject *buf, const fjn_Group *g, int L, const unsigned char *need, const char *n,
                         const char *pfx, const char *ix, int qfast)
{
    if (put(buf, "        for (intptr_t %s = 0; %s < %s; %s++) {\n", ix, ix, n, ix) < 0)
        return -1;
    for (int k = 0; k < g->nin; k++) {
        char src[32];
        if (!g->in[k].rowvec)
            continue;
        snprintf(src, sizeof src, "%sp%d[%s]", pfx, k, ix);
        if (put(buf, "    ") < 0 || emit_row_load(buf, g, k, src) < 0)
            return -1;
    }
    for (int m = 0; m < g->nops; m++) {
        const fjn_Op *op = &g->ops[m];
        if (!need[m])
            continue;
        if (op->rk == FJN_RK_RED) {
            fjn_Expr A = {{0}};
            const char *xt = fjt_info[op->argtype[0]].ctype;
            int f32 = op->type == FJT_F32;
            operand_expr(g, op->arg[0], op->argtype[0], &A);
            if (put(buf, "            { const %s x = %s;\n", xt, A.s) < 0)
                return -1;
            int r;
            if (fjt_info[op->type].is_float) {
                const char *kt = f32 ? "int32_t" : "int64_t", *sz = f32 ? "32" : "64";
                /* max: is there a -0.0 (a +0.0 result is then NumPy's order's); min: a +0.0 */
                const char *zb = op->code == FJN_RMAX ? (f32 ? "0x80000000u" : "0x8000000000000000ULL") : "0";
                r = put(buf, "              const %s kx = fj_key%s(x); k%d = kx %c k%d ? kx : k%d;\n"
                             "              nn%d |= (%s)(__builtin_isnan(x) != 0); zz%d |= (%s)(fj_b%s(x) == %s); }\n",
                        kt, sz, m, op->code == FJN_RMAX ? '>' : '<', m, m, m, kt, m, kt, sz, zb);
            } else if (op->code == FJN_RSUM) {
                r = put(buf, "              r%d = (%s)((uint64_t)r%d + (uint64_t)x); }\n", m, fjt_info[op->type].ctype, m);
            } else if (op->code == FJN_RMAX || op->code == FJN_RMIN) {
                r = put(buf, "              r%d = x %c r%d ? x : r%d; }\n", m, op->code == FJN_RMAX ? '>' : '<', m, m);
            } else if (op->code == FJN_RANY || op->code == FJN_RALL) {
                r = put(buf, "              r%d %s= (unsigned char)(x != 0); }\n", m, op->code == FJN_RANY ? "|" : "&");
            } else {
                PyErr_SetString(PyExc_SystemError, "framejit native: a row reduction of no known kind");
                return -1;
            }
            if (r < 0)
                return -1;
            continue;
        }
        if (op->rk == FJN_RK_CALL || (fjn_has_row(op) && op->level < L)) {
            if (put(buf, "            const %s m%d = %skb%d[%s];\n", fjt_info[op->type].ctype, m, pfx, m, ix) < 0)
                return -1;
            continue;
        }
        if (qfast && is_row_qdiv(g, op) ? emit_qdiv(buf, g, m) < 0 : emit_member(buf, g, m) < 0)
            return -1;
        /* its row: a buffer or the output's */
        if (op->level == L && fjn_has_row(op) && put(buf, "            %skb%d[%s] = m%d;\n", pfx, m, ix, m) < 0)
            return -1;
    }
    return 0;
}

/* After pass L: its reductions' values (m<N>) and outputs. */
static int emit_row_reduced(PyObject *buf, const fjn_Group *g, int L)
{
    for (int m = 0; m < g->nops; m++) {
        const fjn_Op *op = &g->ops[m];
        if (op->rk != FJN_RK_RED || op->level != L)
            continue;
        const char *ct = fjt_info[op->type].ctype;
        int f32 = op->type == FJT_F32;
        const char *sz = f32 ? "32" : "64";
        if (fjt_info[op->type].is_float && (op->code == FJN_RSUM || op->code == FJN_RMEAN)) {
            char src[32];
            if (op->arg[0] >= 0)
                snprintf(src, sizeof src, "p%d", op->arg[0]);
            else
                snprintf(src, sizeof src, "kb%d", -op->arg[0] - 1);
            if (put(buf, "        %s m%d = (%s)0 + fj_pws%s(%s, M);\n", ct, m, ct, sz, src) < 0)
                return -1;
            if (op->code == FJN_RMEAN && put(buf, "        m%d = (%s)((double)m%d / (double)(int64_t)M);\n", m, ct, m) < 0)
                return -1;
        } else if (fjt_info[op->type].is_float) {
            const char *rb = op->code == FJN_RMAX ? "0" : (f32 ? "0x80000000u" : "0x8000000000000000ULL");
            if (put(buf, "        const %s m%d = fj_unkey%s(k%d);\n"
                         "        st |= (nn%d != 0) | ((fj_b%s(m%d) == %s) & (zz%d != 0));\n",
                    ct, m, sz, m, m, sz, m, rb, m) < 0)
                return -1;
        } else if (put(buf, "        const %s m%d = r%d;\n", ct, m, m) < 0) {
            return -1;
        }
        if (op->out >= 0 && put(buf, "        *(%s *)(data[%d] + r * rs[%d]) = m%d;\n", ct, g->nin + op->out,
                                g->nin + op->out, m) < 0)
            return -1;
    }
    return 0;
}

/* The RSC members of level L (computed once per row) and their outputs. */
static int emit_row_scalars(PyObject *buf, const fjn_Group *g, int L)
{
    for (int m = 0; m < g->nops; m++) {
        const fjn_Op *op = &g->ops[m];
        if (op->rk != FJN_RK_RSC || op->level != L)
            continue;
        if (op->call) {
            /* NumPy's loop on the row's one value */
            if (put(buf, "        %s m%d;\n        st |= fj_call1(calls + %d, &m%d, &m%d, 1, %d) < 0;\n",
                    fjt_info[op->type].ctype, m, 3 * (op->call - 1), -op->arg[0] - 1, m, fjt_info[op->type].size) < 0)
                return -1;
        } else if (emit_member(buf, g, m) < 0) {
            return -1;
        }
        if (op->out >= 0 && put(buf, "        *(%s *)(data[%d] + r * rs[%d]) = m%d;\n", fjt_info[op->type].ctype,
                                g->nin + op->out, g->nin + op->out, m) < 0)
            return -1;
    }
    return 0;
}

/* The NumPy calls of level L: each on its operand's row (a buffer, or the input's row). */
static int emit_row_calls(PyObject *buf, const fjn_Group *g, int L)
{
    for (int m = 0; m < g->nops; m++) {
        const fjn_Op *op = &g->ops[m];
        char src[32];
        if (op->rk != FJN_RK_CALL || op->level != L)
            continue;
        if (op->nargs == 2) {
            /* each operand's row (stride the item size), or a constant's value (stride 0) */
            const char *ct = fjt_info[op->type].ctype;
            char a[2][32];
            int st[2];
            for (int j = 0; j < 2; j++) {
                int r = op->arg[j];
                int cst = r >= 0 && g->in[r].kind == FJN_IN_CONST;
                if (cst)
                    snprintf(a[j], sizeof a[j], "&c%d_%d", r, m);
                else
                    snprintf(a[j], sizeof a[j], r >= 0 ? "p%d" : "kb%d", r >= 0 ? r : -r - 1);
                st[j] = cst ? 0 : fjt_info[op->type].size;
                if (cst && put(buf, "        const %s c%d_%d = (%s)v%d;\n", ct, r, m, ct, r) < 0)
                    return -1;
            }
            if (put(buf, "        st |= fj_call2(calls + %d, %s, %d, %s, %d, kb%d, M, %d) < 0;\n", 3 * (op->call - 1),
                    a[0], st[0], a[1], st[1], m, fjt_info[op->type].size) < 0)
                return -1;
            continue;
        }
        snprintf(src, sizeof src, op->arg[0] >= 0 ? "p%d" : "kb%d", op->arg[0] >= 0 ? op->arg[0] : -op->arg[0] - 1);
        if (put(buf, "        st |= fj_call1(calls + %d, %s, kb%d, M, %d) < 0;\n", 3 * (op->call - 1), src, m,
                fjt_info[op->type].size) < 0)
            return -1;
    }
    return 0;
}

static int emit_row_group(PyObject *buf, const fjn_Group *g, int gi)
{
    if (put(buf, "\nint fj_g%d_rows(intptr_t r0, intptr_t r1, intptr_t M, char *const *data, const intptr_t *rs, "
                 "void *scratch, void *const *calls)\n{\n    int st = 0;\n    (void)scratch;\n    (void)calls;\n", gi) < 0 ||
        emit_consts(buf, g) < 0)
        return -1;
    for (int k = 0; k < g->nin; k++) {
        const fjn_Input *in = &g->in[k];
        char src[64];
        if (in->kind == FJN_IN_CONST || (in->kind == FJN_IN_ARRAY && in->bcast != 0))
            continue;
        snprintf(src, sizeof src, "*(const %s *)data[%d]", fjt_info[in->type].ctype, k);
        if (emit_row_load(buf, g, k, src) < 0)
            return -1;
    }
    if (put(buf, "    fj_feclear(FJ_FPE);\n%s    for (intptr_t r = r0; r < r1; r++) {\n",
            g->ncall ? "    fj_x87clear();\n" : "") < 0)
        return -1;
    for (int k = 0; k < g->nin; k++) {
        const fjn_Input *in = &g->in[k];
        const char *ct = fjt_info[in->type].ctype;
        char src[96];
        if (in->kind != FJN_IN_ARRAY || in->bcast == 0)
            continue;
        if (in->rowvec) {
            if (put(buf, "        const %s *restrict p%d = (const %s *)(data[%d] + r * rs[%d]);\n", ct, k, ct, k, k) < 0)
                return -1;
            continue;
        }
        snprintf(src, sizeof src, "*(const %s *)(data[%d] + r * rs[%d])", ct, k, k);
        if (emit_row_load(buf, g, k, src) < 0)
            return -1;
    }
    for (int m = 0; m < g->nops; m++) {
        const fjn_Op *op = &g->ops[m];
        const char *ct = fjt_info[op->type].ctype;
        if (op->buf >= 0 && put(buf, "        %s *restrict kb%d = (%s *)((char *)scratch + (size_t)%d * (size_t)M * 8);\n",
                                ct, m, ct, op->buf) < 0)
            return -1;
        /* an output's row (a NumPy call's result is computed there) */
        if ((op->rk == FJN_RK_CALL || op->rk == FJN_RK_VEC) && op->buf < 0 && op->out >= 0 &&
            put(buf, "        %s *restrict kb%d = (%s *)(data[%d] + r * rs[%d]);\n", ct, m, ct, g->nin + op->out,
                g->nin + op->out) < 0)
            return -1;
    }
    for (int L = 0; L <= g->npass; L++) {
        if (emit_row_scalars(buf, g, L) < 0)
            return -1;
        if (L == g->npass)
            break;
        if (emit_row_pass(buf, g, L) < 0 || emit_row_reduced(buf, g, L) < 0 || emit_row_calls(buf, g, L) < 0)
            return -1;
    }
    return put(buf, "    }\n    return fj_ret(st, 0, 1);\n}\n");
}

int fjn_emit_group(PyObject *buf, const fjn_Group *g, int gi)
{
    if (g->rowk)
        return emit_row_group(buf, g, gi);
    if (g->pw >= 0)
        return emit_pairwise_group(buf, g, gi);
    int checks = group_has_checks(g) && !has_hard_invalid(g);
    int r = emit_group_loops(buf, g, gi, checks);
    fjn_checks = 1;
    fjn_checkonly = 0;
    return r;
}

static int emit_group_loops(PyObject *buf, const fjn_Group *g, int gi, int checks)
{
    int nslot = g->nin + g->nout, hardinv = has_hard_invalid(g), hb = hardinv;
    /* flat */
    if ((hb && emit_hinv(buf, g, gi) < 0) ||
        put(buf, "\nint fj_g%d_flat(intptr_t start, intptr_t end, char *const *data)\n{\n    int st = 0, inv = 0%s;\n",
            gi, hb ? ", hard = 0" : "") < 0 ||
        emit_flat_decls(buf, g) < 0 || (checks && emit_inv_decls(buf, g) < 0))
        return -1;
    if (emit_reduce_init(buf, g) < 0 || put(buf, "    fj_feclear(FJ_FPE);\n") < 0)
        return -1;
    fjn_checks = 0;
    if (checks) {
        if (put(buf, "    for (intptr_t b = start; b < end; b += %d) {\n"
                     "        const intptr_t be = end - b > %d ? b + %d : end;\n"
                     "        for (intptr_t i = b; i < be; i++) {\n", FJN_BLOCK, FJN_BLOCK, FJN_BLOCK) < 0 ||
            emit_body(buf, g, 0, NULL) < 0 || put(buf, "        }\n") < 0)
            return -1;
        fjn_checks = 1;
        if (emit_block_check(buf, g, 0, "b", "be") < 0 || put(buf, "    }\n") < 0)
            return -1;
    } else if (hb) {
        if (put(buf, "    for (intptr_t b = start; b < end; b += %d) {\n"
                     "        const intptr_t be = end - b > %d ? b + %d : end;\n"
                     "        for (intptr_t i = b; i < be; i++) {\n", FJN_BLOCK, FJN_BLOCK, FJN_BLOCK) < 0 ||
            emit_body(buf, g, 0, NULL) < 0 ||
            put(buf, "        }\n        if (fj_fetest(FE_INVALID))\n            hard |= fj_g%d_hinv(b, be, data);\n    }\n",
                gi) < 0)
            return -1;
    } else if (put(buf, "    for (intptr_t i = start; i < end; i++) {\n        {\n") < 0 ||
               emit_body(buf, g, 0, NULL) < 0 || put(buf, "        }\n    }\n") < 0) {
        return -1;
    }
    fjn_checks = 1;
    if (emit_reduce_store(buf, g) < 0 ||
        put(buf, hb ? "    return fj_ret(st | hard, inv, %d);\n}\n" : "    return fj_ret(st, inv, %d);\n}\n", hardinv) < 0)
        return -1;
    /* strided.  An elementwise group's rows whose operands are all contiguous
       along the row (broadcast scalars aside) run the flat kernel on the row
       (vectorized once, there); the other rows run the scalar loop here,
       which is not vectorized (half of a kernel's compile time went into
       vectorizing it for unknown strides) and is compiled at -O1 (FJ_COLD:
       -O3's unswitching and peeling of these loops cost a good part of the
       file's compile time and made strided rows no faster; docs/native.md) */
    int rows = !g->has_red;
    if (put(buf,
            "\n%sint fj_g%d_strided(int nd, const intptr_t *shape, char *const *data, const intptr_t *strides)\n{\n"
            "    int st = 0, inv = 0, acc = 0;\n    intptr_t idx[64];\n    intptr_t inner = nd > 0 ? shape[nd - 1] : 1, outer = 1;\n"
            "    for (int k = 0; k + 1 < nd; k++) { outer *= shape[k]; idx[k] = 0; }\n",
            rows ? "FJ_COLD " : "", gi) < 0 ||
        emit_consts(buf, g) < 0 || (checks && emit_inv_decls(buf, g) < 0))
        return -1;
    for (int k = 0; k < nslot; k++) {
        if (k < g->nin && g->in[k].kind == FJN_IN_CONST)
            continue;
        if (put(buf, "    const intptr_t s%d = nd > 0 ? strides[%d * nd + nd - 1] : 0;\n", k, k) < 0)
            return -1;
    }
    if (emit_reduce_init(buf, g) < 0 ||
        put(buf, "    fj_feclear(FJ_FPE);\n    for (intptr_t o = 0; o < outer; o++) {\n") < 0)
        return -1;
    for (int k = 0; k < nslot; k++) {
        if (k < g->nin && g->in[k].kind == FJN_IN_CONST)
            continue;
        if (put(buf, "        char *p%d = data[%d];\n", k, k) < 0 ||
            put(buf, "        for (int k = 0; k + 1 < nd; k++) p%d += idx[k] * strides[%d * nd + k];\n", k, k) < 0)
            return -1;
    }
    fjn_checks = 0;
    if (g->has_axisred) {
        /* when every one-axis reduction reduces the innermost axis here (its
           output stride is 0 along the loop), accumulate in registers */
        if (put(buf, "        if (1") < 0)
            return -1;
        for (int m = 0; m < g->nops; m++)
            if (FJN_IS_REDUCTION(g->ops[m].code) && g->ops[m].axis >= 0 && m != g->pw &&
                put(buf, " && s%d == 0", g->nin + g->ops[m].out) < 0)
                return -1;
        if (put(buf, ") {\n") < 0)
            return -1;
        /* eight independent lanes (vectorizable, any order is exact for these kinds) */
        for (int m = 0; m < g->nops; m++) {
            const fjn_Op *op = &g->ops[m];
            if (FJN_IS_REDUCTION(op->code) && op->axis >= 0 && m != g->pw &&
                put(buf, "        %s acc%d[8];\n        for (int j = 0; j < 8; j++) acc%d[j] = *(%s *)p%d;\n",
                    fjt_info[op->type].ctype, m, m, fjt_info[op->type].ctype, g->nin + op->out) < 0)
                return -1;
        }
        if (put(buf, "        intptr_t i0 = 0;\n        for (; i0 + 8 <= inner; i0 += 8)\n"
                     "        for (int j = 0; j < 8; j++) {\n            const intptr_t i = i0 + j;\n") < 0 ||
            emit_body(buf, g, 2, NULL) < 0 ||
            put(buf, "        }\n        for (; i0 < inner; i0++) {\n            const intptr_t i = i0;\n"
                     "            const int j = 0;\n") < 0 ||
            emit_body(buf, g, 2, NULL) < 0 || put(buf, "        }\n") < 0)
            return -1;
        for (int m = 0; m < g->nops; m++) {
            const fjn_Op *op = &g->ops[m];
            char acc[32], lane[32], stmt[256];
            if (!FJN_IS_REDUCTION(op->code) || op->axis < 0 || m == g->pw)
                continue;
            snprintf(acc, sizeof acc, "r%d", m);
            snprintf(lane, sizeof lane, "acc%d[j]", m);
            if (fjn_red_update(stmt, sizeof stmt, op, acc, lane) < 0 ||
                put(buf, "        %s r%d = acc%d[0];\n        for (int j = 1; j < 8; j++) r%d = %s;\n"
                         "        *(%s *)p%d = r%d;\n",
                    fjt_info[op->type].ctype, m, m, m, stmt, fjt_info[op->type].ctype, g->nin + op->out, m) < 0)
                return -1;
        }
        if (put(buf, "        } else\n") < 0)
            return -1;
    }
    if (rows) {
        /* the row's operands contiguous: the flat kernel on it (its status,
           its FE flags included, goes into acc: rows of one call all take this
           path or all the scalar one; its invalid flag is then cleared) */
        if (put(buf, "        if (inner > 0") < 0)
            return -1;
        for (int k = 0; k < nslot; k++) {
            if (k < g->nin && g->in[k].kind == FJN_IN_CONST)
                continue;
            int scalar = k < g->nin && g->in[k].bcast == 0;
            int t = k < g->nin ? g->in[k].type : g->ops[g->out_op[k - g->nin]].type;
            if (put(buf, scalar ? " && s%d == 0" : " && s%d == %d", k, fjt_info[t].size) < 0)
                return -1;
        }
        if (put(buf, ") {\n            char *const rp[%d] = {", nslot) < 0)
            return -1;
        for (int k = 0; k < nslot; k++) {
            int cst = k < g->nin && g->in[k].kind == FJN_IN_CONST;
            if (put(buf, cst ? "%sNULL" : "%sp%d", k ? ", " : "", k) < 0)
                return -1;
        }
        if (put(buf, "};\n            acc |= fj_g%d_flat(0, inner, rp);\n"
                     "            fj_feclear(FE_INVALID);\n        } else {\n", gi) < 0)
            return -1;
    }
    if (put(buf, "        for (intptr_t i = 0; i < inner; i++) {\n") < 0 || emit_body(buf, g, 1, NULL) < 0 ||
        put(buf, "        }\n") < 0)
        return -1;
    fjn_checks = 1;
    if (checks && emit_block_check(buf, g, 1, "0", "inner") < 0)
        return -1;
    if (rows && put(buf, "        }\n") < 0)
        return -1;
    if (put(buf, "        for (int k = nd - 2; k >= 0; k--) {\n"
                 "            if (++idx[k] < shape[k]) break;\n            idx[k] = 0;\n        }\n    }\n") < 0 ||
        emit_reduce_store(buf, g) < 0 || put(buf, "    return fj_ret(st, inv, %d) | acc;\n}\n", hardinv) < 0)
        return -1;
    return 0;
}
