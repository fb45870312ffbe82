/*
** _vmath.h: transcendental functions of the native backend's fused kernels
** (docs/native.md "Transcendental functions"; issue 23).
**
** Appended to a kernel's source (csrc/backends/native/native_emit.c) when a
** group computes one of them and config.native_exact is False.  Each
** function is straight-line C (bit casts through memcpy, selects as bit
** operations or conditional expressions gcc turns into blends, no branch and
** no call) so that gcc vectorizes the loop around it; float32 versions
** compute in float32 lanes (sin and cos in float64 without FMA).
**
** Results are within the bounds docs/native.md measures
** (tools/vmath_accuracy.py; float32 on every input) of the correctly rounded
** value: not NumPy's bits (which differ between NumPy's own SIMD paths).
** Special values and floating-point conditions are NumPy's, where a flag
** NumPy does not raise may be raised (the kernel then checks again or runs
** the group through NumPy) but none NumPy raises is missing:
**   exp: |x| is clamped to 1400 (float32: 160; past it exp is 0 or inf), a
**   NaN to 0 (the NaN is the result), so overflow and underflow happen in
**   the final scaling and raise their flags as NumPy's exp does; results
**   below the smallest normal raise underflow explicitly too.
**   log: an argument that is not a positive normal finite number (0, < 0,
**   subnormal, inf, NaN) raises invalid on purpose; a group with a log
**   treats invalid as hard (native_emit.c), so such an element makes the
**   group run through NumPy, whose value, flag and warning then stand.
**   sin, cos: the same for |x| > 2^18 (float32: 2^16), inf and NaN.
**   tanh: every argument (|x| clamped to 22, float32 10, past which tanh
**   rounds to +-1); NaN gives NaN.  expm1: as exp.  log1p: as log, of 1 + x.
**   A zero argument keeps its sign where NumPy's does (sin, tanh, expm1,
**   log1p).
**
** log2, log10, tan, sinh, cosh, arctan, arcsin, arccos, arctan2, cbrt, power
** and float32 expm1, log1p: each section below says its algorithm, its special
** values and which arguments it leaves to NumPy through invalid (log2, log10,
** log1p, tan, arcsin, arccos, power: hard invalid, native_emit.c
** fjn_vmath_fns); all are within 1 ulp of the correctly rounded value
** (docs/native.md's table).  Every function is FJV_INLINE (always inlined).
**
** Algorithms (textbook; docs/native.md lists them): exp: x = k ln2 + r (k
** rounded with the 1.5 * 2^52 (2^23) shift, ln2 split in a head and a tail so
** k * head is exact), exp(r) = 1 + r + r^2 q(r) with q fitted (degree 9,
** float32 4; |r| <= ln2 / 2), times 2^k as 2^k2 added to the exponent bits
** and one product by 2^k1 (over/underflowing only there).  log: x = 2^e m, m
** in [sqrt(2)/2, sqrt(2)) from the bits, log(m) = log1p(f), f = m - 1, with
** s = f / (2 + f) and fdlibm's polynomial in s^2 (e_log.c, e_logf.c), plus e
** ln2 in two parts.  sin, cos float64: x = n pi/2 + r by fdlibm's three
** rounds of __rem_pio2 (r in double-double), then k_sin.c / k_cos.c, chosen
** and signed by n's bits; float32: x = n pi + r (cos: (2m + 1) pi/2 + r), one
** fitted odd polynomial, signed by the multiple's low bit.  tanh: expm1(2|x|)
** / (expm1(2|x|) + 2), expm1 from exp's reduction as (2^k - 1) + 2^k p;
** float32: a fitted odd polynomial below 0.55, else 1 - 2 / (exp(2|x|) + 1).
*/
#ifndef FJ_VMATH_H
#define FJ_VMATH_H
#include <stdint.h>
#include <string.h>

/* Every function is inlined whatever gcc's growth limits: a kernel calls it from
   its flat, strided and checking loops, and past the limits gcc leaves it a call,
   which does not vectorize (fj_pow64, fj_sinh64, arctan2: 7 to 25x slower) */
#if defined(__GNUC__)
#define FJV_INLINE static inline __attribute__((always_inline))
#else
#define FJV_INLINE static inline
#endif

/* a * b + c for the polynomials: one rounding with FMA (-march=native targets have it),
   two without (the command line's -ffp-contract=off keeps a * b + c as written) */
#ifdef __FMA__
#define FJV_MA(a, b, c) __builtin_fma((a), (b), (c))
#else
#define FJV_MA(a, b, c) ((a) * (b) + (c))
#endif
#ifdef __FMA__
#define FJV_MAF(a, b, c) __builtin_fmaf((a), (b), (c))
#else
#define FJV_MAF(a, b, c) ((a) * (b) + (c))
#endif

FJV_INLINE double fjv_d(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }
FJV_INLINE uint64_t fjv_u(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
FJV_INLINE float fjv_f(uint32_t u) { float d; memcpy(&d, &u, 4); return d; }
FJV_INLINE uint32_t fjv_uf(float d) { uint32_t u; memcpy(&u, &d, 4); return u; }

/* x with |x| clamped to the value of bits 'lim' (sign kept); a NaN stays.
   Bit operations: gcc if-converts no float select in a loop mixing float32
   and float64 lanes. */
FJV_INLINE double fjv_clamp_abs(double x, uint64_t lim)
{
    uint64_t u = fjv_u(x), a = u & 0x7fffffffffffffffULL;
    uint64_t m = 0 - (uint64_t)((a > lim) & (a <= 0x7ff0000000000000ULL));
    return fjv_d((u & ~m) | (((u & 0x8000000000000000ULL) | lim) & m));
}
FJV_INLINE float fjv_clamp_absf(float x, uint32_t lim)
{
    uint32_t u = fjv_uf(x), a = u & 0x7fffffffu;
    uint32_t m = 0u - (uint32_t)((a > lim) & (a <= 0x7f800000u));
    return fjv_f((u & ~m) | (((u & 0x80000000u) | lim) & m));
}

/* r, with underflow raised where x is a nonzero subnormal (2^-600 squared): the
   functions that are x itself near 0 (tan, sinh, arctan, arcsin, expm1, log1p)
   give an exact result there, but NumPy's loops where they are libm's (glibc:
   math_check_force_underflow; NumPy without AVX-512) raise underflow for a
   subnormal argument, and a flag NumPy raises must be raised here (where NumPy's
   loop raises none it is spurious: a rerun through NumPy where errstate does not
   ignore underflow).  r - w^2: a zero r keeps its sign */
FJV_INLINE double fjv_under_sub64(double r, double x)
{
    uint64_t a = fjv_u(x) & 0x7fffffffffffffffULL;
    double w = fjv_d(0x1a70000000000000ULL & (0 - (uint64_t)((a - 1) < 0x000fffffffffffffULL)));
    return r - w * w;
}
FJV_INLINE float fjv_under_sub32(float r, float x)
{
    uint32_t a = fjv_uf(x) & 0x7fffffffu;
    float w = fjv_f(0x0d800000u & (0u - (uint32_t)((a - 1u) < 0x007fffffu)));
    return r - w * w;
}

/* ---- exp ----------------------------------------------------------------- */

/* exp(r) - 1 for |r| <= ln2/2 + a little: the Taylor series to degree 13 */
FJV_INLINE double fjv_expm1_core(double r)
{
    double p = 1.0 / 6227020800.0;            /* 1/13! */
    p = FJV_MA(p, r, 1.0 / 479001600.0);            /* 1/12! */
    p = FJV_MA(p, r, 1.0 / 39916800.0);
    p = FJV_MA(p, r, 1.0 / 3628800.0);
    p = FJV_MA(p, r, 1.0 / 362880.0);
    p = FJV_MA(p, r, 1.0 / 40320.0);
    p = FJV_MA(p, r, 1.0 / 5040.0);
    p = FJV_MA(p, r, 1.0 / 720.0);
    p = FJV_MA(p, r, 1.0 / 120.0);
    p = FJV_MA(p, r, 1.0 / 24.0);
    p = FJV_MA(p, r, 1.0 / 6.0);
    p = FJV_MA(p, r, 0.5);
    return r + (r * r) * p;
}

/* x = k ln2 + r, |x| <= 1400: returns r and the bits of 2^k1, 2^k2, k1 + k2 = k
   (each within the normal exponents) */
FJV_INLINE double fjv_exp_reduce(double x, uint64_t *s1, uint64_t *s2)
{
    const double shift = 0x1.8p52, invln2 = 0x1.71547652b82fep0;
    const double ln2hi = 0x1.62e42fee00000p-1, ln2lo = 0x1.a39ef35793c76p-33;
    double z = x * invln2 + shift;
    double k = z - shift;
    double k1 = (k * 0.5 + shift) - shift; /* k / 2 rounded: k1 and k - k1 within +-1010 */
    uint64_t u1 = fjv_u(k1 + shift) - fjv_u(shift), u2 = fjv_u((k - k1) + shift) - fjv_u(shift);
    *s1 = (u1 + 1023) << 52;
    *s2 = (u2 + 1023) << 52;
    return (x - k * ln2hi) - k * ln2lo;
}

/* exp(r), |r| <= ln2/2 + a little: 1 + r + r^2 q(r), q of degree 9 (a Chebyshev fit,
   mpmath.chebyfit: 2^-55.7 relative to exp(r)) */
FJV_INLINE double fjv_exp64_poly(double r)
{
    double q = FJV_MA(0x1.af39789bfd689p-26, r, 0x1.28922d8c8d4fbp-22);
    q = FJV_MA(q, r, 0x1.71de0d573888bp-19);
    q = FJV_MA(q, r, 0x1.a019b87f7a6e9p-16);
    q = FJV_MA(q, r, 0x1.a01a01a7da98dp-13);
    q = FJV_MA(q, r, 0x1.6c16c178b0646p-10);
    q = FJV_MA(q, r, 0x1.1111111110996p-7);
    q = FJV_MA(q, r, 0x1.5555555553d05p-5);
    q = FJV_MA(q, r, 0x1.5555555555556p-3);
    q = FJV_MA(q, r, 0x1.0000000000001p-1);
    return 1.0 + FJV_MA(r * r, q, r);
}

/* exp(x): |x| clamped to 1400 (past it exp is 0 or inf; a NaN is the result for a
   NaN), x = k ln2 + r (k rounded with the 1.5 * 2^52 shift, ln2 in a 32-bit head
   and a tail), exp(r) by fjv_exp64_poly, times 2^k as 2^k2 added to the exponent
   bits (exact: |k2| <= 1010) and one product by 2^k1, which alone rounds, so
   overflow and underflow are raised there; results below 2^-1022 also raise
   underflow explicitly (2^-1075: NumPy's exp raises it for every such result,
   where the product is exact for some) */
FJV_INLINE double fj_exp64(double x)
{
    const double shift = 0x1.8p52, invln2 = 0x1.71547652b82fep0;
    const double ln2hi = 0x1.62e42fee00000p-1, ln2lo = 0x1.a39ef35793c76p-33;
    uint64_t u = fjv_u(x), a = u & 0x7fffffffffffffffULL;
    /* |x| <= 1400; a NaN: 0 (no overflow flag for it), put back last */
    a = a > 0x7ff0000000000000ULL ? 0 : a < 0x4095e00000000000ULL ? a : 0x4095e00000000000ULL;
    double c = fjv_d(a | (u & 0x8000000000000000ULL));
    double z = FJV_MA(c, invln2, shift);
    double k = z - shift;
    uint64_t ki = fjv_u(z) - fjv_u(shift);                     /* k, two's complement */
    uint64_t k1 = (uint64_t)((int64_t)ki >> 1), k2 = ki - k1;
    double r = FJV_MA(-k, ln2lo, FJV_MA(-k, ln2hi, c));
    double y = fjv_d(fjv_u(fjv_exp64_poly(r)) + (k2 << 52)) * fjv_d((k1 << 52) + 0x3ff0000000000000ULL);
    double w = c < -708.3964185322641 ? 0.5 : 0.0;
    y = y + w * 0x1p-1074;
    return x != x ? x : y;
}

/* float32 exp in float32 lanes: |x| clamped to 160 (past it exp is 0 or inf in
   float32; a NaN is the result for a NaN), x = k ln2 + r (k rounded with the
   1.5 * 2^23 shift; ln2 in a 15-bit head and a tail), exp(r) = 1 + r + r^2 q(r),
   q of degree 4 (fitted: 0.06 ulp), times 2^k as 2^k2 added to the exponent bits
   (exact: |k2| <= 116) and one product by 2^k1, which alone rounds, so overflow
   and underflow are raised there; results below 2^-126 also raise underflow
   explicitly (2^-150: NumPy's exp raises it for every such result) */
FJV_INLINE float fjv_exp32_core(float c) /* |c| <= 160, not NaN */
{
    const float shift = 0x1.8p23f, invln2 = 0x1.715476p0f;
    const float ln2hi = 0x1.62e4p-1f, ln2lo = 0x1.7f7d1cp-20f;
    float z = FJV_MAF(c, invln2, shift);
    float k = z - shift;
    uint32_t ki = fjv_uf(z) - fjv_uf(shift);             /* k, two's complement */
    uint32_t k1 = (uint32_t)((int32_t)ki >> 1), k2 = ki - k1;
    float r = FJV_MAF(-k, ln2lo, FJV_MAF(-k, ln2hi, c));
    float q = FJV_MAF(FJV_MAF(FJV_MAF(FJV_MAF(0x1.6a1a62p-10f, r, 0x1.123fc8p-7f), r, 0x1.555916p-5f), r,
                              0x1.55548ap-3f), r, 0x1.fffffcp-2f);
    float p = 1.0f + FJV_MAF(r * r, q, r);
    return fjv_f(fjv_uf(p) + (k2 << 23)) * fjv_f((k1 << 23) + 0x3f800000u);
}

FJV_INLINE float fj_exp32(float x)
{
    uint32_t u = fjv_uf(x), a = u & 0x7fffffffu;
    a = a > 0x7f800000u ? 0u : a < 0x43200000u ? a : 0x43200000u; /* |x| <= 160; a NaN: 0, put back last */
    float c = fjv_f(a | (u & 0x80000000u));
    float y = fjv_exp32_core(c);
    float w = c < -87.3365f ? 0.5f : 0.0f;
    y = y + w * 0x1p-149f;
    return x != x ? x : y;
}

/* ---- log ----------------------------------------------------------------- */

/* fdlibm's log of x = 2^e m (x positive, normal, finite), m in [sqrt(2)/2,
   sqrt(2)) from the bits: f = m - 1, e as a double, hfsq = f^2 / 2; returns
   s (hfsq + R(s^2)), s = f / (2 + f), so that log(m) = f - hfsq + that */
FJV_INLINE double fjv_log_parts(double x, double *f, double *dk, double *hfsq)
{
    const double Lg1 = 6.666666666666735130e-01, Lg2 = 3.999999999940941908e-01,
                 Lg3 = 2.857142874366239149e-01, Lg4 = 2.222219843214978396e-01,
                 Lg5 = 1.818357216161805012e-01, Lg6 = 1.531383769920937332e-01,
                 Lg7 = 1.479819860511658591e-01;
    /* e from the bits above those of sqrt(2)/2 */
    uint64_t ix = fjv_u(x);
    uint64_t eb = (ix - 0x3fe6a09e667f3bcdULL) >> 52; /* e in 12 bits, two's complement */
    double m = fjv_d(ix - (eb << 52));
    *f = m - 1.0;
    /* e as a double: its sign-extended bits in the low bits of 1.5 * 2^52 */
    *dk = fjv_d(0x4338000000000000ULL + ((eb ^ 0x800) - 0x800)) - 0x1.8p52;
    double s = *f / (2.0 + *f);
    double z = s * s, w = z * z;
    double t1 = w * FJV_MA(w, FJV_MA(w, Lg6, Lg4), Lg2);
    double t2 = z * FJV_MA(w, FJV_MA(w, FJV_MA(w, Lg7, Lg5), Lg3), Lg1);
    *hfsq = 0.5 * *f * *f;
    return s * (*hfsq + (t2 + t1));
}

/* log(x), x positive, normal, finite */
FJV_INLINE double fjv_log(double x)
{
    const double ln2hi = 0x1.62e42fee00000p-1, ln2lo = 0x1.a39ef35793c76p-33;
    double f, dk, hfsq;
    double r = fjv_log_parts(x, &f, &dk, &hfsq);
    return dk * ln2hi - ((hfsq - (r + dk * ln2lo)) - f);
}

/* all ones for a positive normal finite x, else 0 (the arguments log and its
   kin compute; the others they leave to NumPy) */
FJV_INLINE uint64_t fjv_pos_normal(double x)
{
    return 0 - (uint64_t)((fjv_u(x) - 0x0010000000000000ULL) < 0x7fe0000000000000ULL);
}

/* m ? a : b for a mask m of all ones or all zeros, as bit operations (conditional
   expressions, even of constants, became branches after gcc's jump threading, and
   a loop with branches is not vectorized; gcc if-converts no float select in a
   loop mixing float32 and float64 lanes) */
FJV_INLINE double fjv_bsel(uint64_t m, double a, double b) { return fjv_d((fjv_u(a) & m) | (fjv_u(b) & ~m)); }
FJV_INLINE uint64_t fjv_mask(int c) { return 0 - (uint64_t)c; }

/* 1.0, or for a 0 mask NaN with invalid raised (inf * 0: the special lanes of log) */
FJV_INLINE double fjv_invalid_unless(uint64_t m)
{
    double q = fjv_d((0x3ff0000000000000ULL & m) | (0x7ff0000000000000ULL & ~m));
    double w = fjv_d(0x3ff0000000000000ULL & m);
    return q * w;
}

FJV_INLINE double fj_log64(double x)
{
    uint64_t u = fjv_u(x);
    uint64_t m = fjv_pos_normal(x);
    return fjv_log(fjv_d((u & m) | (0x3ff0000000000000ULL & ~m))) * fjv_invalid_unless(m);
}

/* float32's fjv_invalid_unless: 1, or NaN with invalid raised where 'ok' is 0 */
FJV_INLINE float fjv_invalid_unlessf(uint32_t ok)
{
    return fjv_f((0x3f800000u & ok) | (0x7f800000u & ~ok)) * fjv_f(0x3f800000u & ok);
}

/* float32 log in float32 lanes (fdlibm's e_logf.c polynomial): x = 2^e m, m in
   [sqrt(2)/2, sqrt(2)) from the bits, f = m - 1, s = f / (2 + f); an argument
   that is not a positive normal finite float32 raises invalid as fj_log64's */
FJV_INLINE float fj_log32(float x)
{
    const float ln2hi = 6.9313812256e-01f, ln2lo = 9.0580006145e-06f;
    const float Lg1 = 0x1.555554p-1f, Lg2 = 0x1.999c26p-2f, Lg3 = 0x1.23d3dcp-2f, Lg4 = 0x1.f13c4cp-3f;
    uint32_t u = fjv_uf(x);
    uint32_t ok = 0u - (uint32_t)((u - 0x00800000u) < 0x7f000000u); /* positive normal float32 */
    uint32_t ix = (u & ok) | (0x3f800000u & ~ok);
    uint32_t eb = (ix - 0x3f3504f3u) >> 23;                          /* e in 9 bits */
    float m = fjv_f(ix - (eb << 23));
    float f = m - 1.0f;
    float dk = (float)(int32_t)((eb ^ 0x100u) - 0x100u);
    float s = f / (2.0f + f);
    float z = s * s, w = z * z;
    float R = z * FJV_MAF(w, Lg3, Lg1) + w * FJV_MAF(w, Lg4, Lg2);
    float hfsq = 0.5f * f * f;
    return (dk * ln2hi - ((hfsq - (s * (hfsq + R) + dk * ln2lo)) - f)) * fjv_invalid_unlessf(ok);
}

/* ---- sin, cos ------------------------------------------------------------ */

#ifdef __FMA__
/* |x| <= 2^18: x = n pi/2 + r, r = hi + lo in double-double: pi/2 = A + B + C in
   53-bit parts; x - n A is exact in one FMA (a multiple of 2^-53 below pi/4 + an
   ulp), n B subtracted with its product's and the subtraction's errors kept
   (fma, 2Sum), n C with the tail.  The same accuracy as fdlibm's three rounds of
   33-bit parts below, in 13 operations instead of 20 */
FJV_INLINE double fjv_rem_pio2(double x, double *lo, uint64_t *quadrant)
{
    const double shift = 0x1.8p52, invpio2 = 6.36619772367581382433e-01;
    const double A = 1.5707963267948966, B = 6.123233995736766e-17, C = -1.4973849048591698e-33;
    double z = __builtin_fma(x, invpio2, shift);
    double fn = z - shift;
    *quadrant = fjv_u(z); /* n in the low bits (two's complement: n & 3 is the quadrant) */
    double t = __builtin_fma(-fn, A, x);   /* exact */
    double p = fn * B, pe = __builtin_fma(fn, B, -p);
    double hi = t - p, bb = hi - t;
    double e = (t - (hi - bb)) - (p + bb); /* t - p = hi + e */
    double l = __builtin_fma(fn, C, pe - e); /* x - n pi/2 = hi - l */
    double y0 = hi - l;                      /* (a -0.0 x stays -0.0: -0.0 - +0.0) */
    *lo = (hi - y0) - l;
    return y0;
}
#else
/* |x| <= 2^18: x = n pi/2 + r, r = hi + lo in double-double: pi/2 in 33-bit
   parts (fdlibm's __rem_pio2 constants; n * part is exact for |n| < 2^20)
   subtracted one by one, each subtraction's rounding error kept (the three
   rounds fdlibm takes only on cancellation, always: no branch) */
FJV_INLINE double fjv_rem_pio2(double x, double *lo, uint64_t *quadrant)
{
    const double shift = 0x1.8p52, invpio2 = 6.36619772367581382433e-01;
    const double pio2_1 = 1.57079632673412561417e+00, pio2_2 = 6.07710050630396597660e-11,
                 pio2_3 = 2.02226624871116645580e-21, pio2_3t = 8.47842766036889956997e-32;
    double z = x * invpio2 + shift;
    double fn = z - shift;
    *quadrant = fjv_u(z); /* n in the low bits (two's complement: n & 3 is the quadrant) */
    double t = x - fn * pio2_1;          /* exact */
    double w2 = fn * pio2_2, r2 = t - w2;
    double e2 = (t - r2) - w2;           /* t - w2 = r2 + e2 */
    double w3 = fn * pio2_3, r3 = r2 - w3;
    double e3 = (r2 - r3) - w3;          /* r2 - w3 = r3 + e3 */
    double w = fn * pio2_3t - (e2 + e3); /* x - n pi/2 = r3 - w */
    double y0 = r3 - w;
    *lo = (r3 - y0) - w;
    return y0;
}
#endif

/* sin (which 0) or cos (1) of x = n pi/2 + hi + lo, |hi| <= pi/4: for odd n + which
   cos(hi + lo) (fdlibm k_cos.c), else sin(hi + lo) (k_sin.c), its sign from n's
   bits; |x| > 2^18, inf and NaN raise invalid (the group then runs through
   NumPy).  Each lane evaluates one kernel, not both: the two are written as
   a - (-b H(z) + t), H fdlibm's polynomial in z = hi^2 (C1..C6 or S1..S6, its
   coefficients picked per lane), a, b, t per kernel:
     sin: hi - (-hi z H + (z/2 lo - lo))       (k_sin: hi - ((z (lo/2 - v r) - lo) - v S1))
     cos: w - (-z^2 H + (hi lo - ((1 - w) - z/2))), w = 1 - z/2   (k_cos)
   (-0.0 gives -0.0: -0.0 - +0.0).  Computing both kernels and selecting took a
   fifth of the chain's time */
/* m ? a : b for the kernels' constants: a conditional expression, which gcc makes
   masked FMAs reading the constants from memory; as bit operations it re-broadcast
   them into registers every iteration (more constants than the 32 registers):
   133 instructions a vector in tchain's loop, 106 this way */
FJV_INLINE double fjv_pick(uint64_t m, double a, double b) { return m ? a : b; }
FJV_INLINE double fjv_sincos(double x, int which)
{
    const double S1 = -1.66666666666666324348e-01, S2 = 8.33333333332248946124e-03,
                 S3 = -1.98412698298579493134e-04, S4 = 2.75573137070700676789e-06,
                 S5 = -2.50507602534068634195e-08, S6 = 1.58969099521155010221e-10;
    const double C1 = 4.16666666666666019037e-02, C2 = -1.38888888888741095749e-03,
                 C3 = 2.48015872894767294178e-05, C4 = -2.75573143513906633035e-07,
                 C5 = 2.08757232129817482790e-09, C6 = -1.13596475577881948265e-11;
    uint64_t u = fjv_u(x);
    uint64_t m = 0 - (uint64_t)((u & 0x7fffffffffffffffULL) <= 0x4110000000000000ULL); /* |x| <= 2^18 */
    x = fjv_d(u & m); /* others: 0 */
    double lo;
    uint64_t q;
    double hi = fjv_rem_pio2(x, &lo, &q);
    q += (uint64_t)which;
    uint64_t c = q & 1; /* odd quadrant: the cos kernel */
    double z = hi * hi, hz = 0.5 * z, w = 1.0 - hz;
    double h = FJV_MA(z, FJV_MA(z, FJV_MA(z, FJV_MA(z, FJV_MA(z, fjv_pick(c, C6, S6), fjv_pick(c, C5, S5)),
                                                    fjv_pick(c, C4, S4)), fjv_pick(c, C3, S3)), fjv_pick(c, C2, S2)),
                      fjv_pick(c, C1, S1));
    double t = c ? FJV_MA(hi, lo, -((1.0 - w) - hz)) : FJV_MA(hz, lo, -lo);
    double d = FJV_MA(-(c ? z * z : z * hi), h, t);
    uint64_t v = fjv_u((c ? w : hi) - d);
    v ^= (q & 2) << 62; /* quadrants 2, 3: negated */
    return fjv_d(v) * fjv_invalid_unless(m);
}

FJV_INLINE double fj_sin64(double x) { return fjv_sincos(x, 0); }
FJV_INLINE double fj_cos64(double x) { return fjv_sincos(x, 1); }
#ifdef __FMA__
/* float32 sin and cos in float32 lanes: x = n pi + r (sin) or (2m + 1) pi/2 + r (cos),
   |r| <= pi/2, pi and pi/2 in three float32 parts (the first product exact in the
   FMA), sin(r) = r + r^3 q(r^2), q of degree 3 (fitted: 0.1 ulp), negated for odd
   n (sin) or even m (cos); |x| > 2^16, inf and NaN raise invalid (NumPy then
   computes the group) */
FJV_INLINE float fjv_sinpolyf(float r)
{
    float s = r * r;
    float q = FJV_MAF(FJV_MAF(FJV_MAF(0x1.5db39cp-19f, s, -0x1.9f6f4ep-13f), s, 0x1.110ed0p-7f), s,
                      -0x1.55554cp-3f);
    return FJV_MAF(r * s, q, r);
}
FJV_INLINE float fj_sin32(float x)
{
    const float shift = 0x1.8p23f, invpi = 0x1.45f306p-2f;
    const float P1 = 0x1.921fb6p1f, P2 = -0x1.777a5cp-24f, P3 = -0x1.ee59dap-49f;
    uint32_t u = fjv_uf(x);
    uint32_t ok = 0u - (uint32_t)((u & 0x7fffffffu) <= 0x47800000u); /* |x| <= 2^16 */
    x = fjv_f(u & ok);
    float z = FJV_MAF(x, invpi, shift);
    float n = z - shift;
    float r = FJV_MAF(-n, P3, FJV_MAF(-n, P2, FJV_MAF(-n, P1, x)));
    float y = fjv_f(fjv_uf(fjv_sinpolyf(r)) ^ (fjv_uf(z) << 31)) * fjv_invalid_unlessf(ok);
    /* sin(-0.0) is -0.0 (the reduction's n * P2 term made it +0.0) */
    return (u & 0x7fffffffu) == 0 ? fjv_f(u) : y;
}
FJV_INLINE float fj_cos32(float x)
{
    const float shift = 0x1.8p23f, invpi = 0x1.45f306p-2f;
    const float P1 = 0x1.921fb6p0f, P2 = -0x1.777a5cp-25f, P3 = -0x1.ee59dap-50f;
    uint32_t u = fjv_uf(x);
    uint32_t ok = 0u - (uint32_t)((u & 0x7fffffffu) <= 0x47800000u);
    x = fjv_f(u & ok);
    float z = FJV_MAF(x, invpi, -0.5f) + shift;                   /* m = rint(x / pi - 1/2) */
    float q = FJV_MAF(z - shift, 2.0f, 1.0f);                     /* 2m + 1 */
    float r = FJV_MAF(-q, P3, FJV_MAF(-q, P2, FJV_MAF(-q, P1, x)));
    float y = fjv_f(fjv_uf(fjv_sinpolyf(r)) ^ ((~fjv_uf(z)) << 31)) * fjv_invalid_unlessf(ok);
    /* NumPy's float32 cos raises underflow where x * x does (0 < |x| < 2^-63): so
       does this, adding it times 0 (+0.0: cos is never -0.0; gcc keeps x * 0.0) */
    return y + (x * x) * 0.0f;
}
#else
/* without FMA the three-part reduction is not exact in float32: float64 inside */
FJV_INLINE float fj_sin32(float x) { return (float)fjv_sincos((double)x, 0); }
FJV_INLINE float fj_cos32(float x) { return (float)fjv_sincos((double)x, 1) + (x * x) * 0.0f; } /* (underflow: above) */
#endif

/* ---- tanh ---------------------------------------------------------------- */

/* expm1(y), |y| <= 1400: 2^k (1 + p) - 1 as 2^k1 ((2^k2 - 2^-k1) + 2^k2 p): the
   difference of powers of two is exact while k <= 53, and 2^k itself (which
   overflows at k = 1024) is never formed */
FJV_INLINE double fjv_expm1(double y)
{
    uint64_t s1, s2;
    double r = fjv_exp_reduce(y, &s1, &s2);
    double p = fjv_expm1_core(r), a = fjv_d(s1), b = fjv_d(s2);
    double inv_a = fjv_d((2046ULL << 52) - s1); /* 2^-k1: exponent bits 2046 - (k1 + 1023) */
    return a * ((b - inv_a) + b * p);
}

/* tanh(x) = expm1(2|x|) / (expm1(2|x|) + 2), the sign put back; |x| clamped to 22
   (tanh is 1 in double past it); NaN stays NaN, no flag */
FJV_INLINE double fj_tanh64(double x)
{
    uint64_t u = fjv_u(x), sign = u & 0x8000000000000000ULL;
    double a = fjv_clamp_abs(fjv_d(u & 0x7fffffffffffffffULL), 0x4036000000000000ULL /* 22 */);
    double e = fjv_expm1(2.0 * a);
    double d = e + 2.0, q = e / d;
#ifdef __FMA__
    /* the sum's and the quotient's rounding errors corrected (one Newton step on
       the exact residual): what is left is expm1's error, scaled by 2 / (e + 2) < 1 */
    double dl = __builtin_isgreater(e, 2.0) ? (e - d) + 2.0 : (2.0 - d) + e; /* d + dl = e + 2 exactly */
    double r = __builtin_fma(-q, d, e) - q * dl;
    q = q + r / d;
#endif
    return fjv_d(fjv_u(q) | sign);
}

/* float32 tanh in float32 lanes: |x| < 0.55: x + x^3 q(x^2), q of degree 4
   (fitted: 0.02 ulp); else 1 - 2 / (exp(2|x|) + 1), |x| clamped to 10 (tanh rounds
   to 1 in float32 from 9.02 on); the sign put back; NaN gives NaN, no flag */
FJV_INLINE float fj_tanh32(float x)
{
    uint32_t u = fjv_uf(x), sign = u & 0x80000000u, a = u & 0x7fffffffu;
    a = a < 0x41200000u ? a : 0x41200000u;                 /* |x| <= 10; a NaN too, put back last */
    float v = fjv_f(a), z = v * v;
    float q = FJV_MAF(FJV_MAF(FJV_MAF(FJV_MAF(-0x1.9b2fd4p-8f, z, 0x1.593cf2p-6f), z, -0x1.b92878p-5f), z,
                              0x1.110d26p-3f), z, -0x1.55554ap-2f);
    float small = FJV_MAF(v * z, q, v);
    float big = 1.0f - 2.0f / (fjv_exp32_core(2.0f * v) + 1.0f);
    uint32_t m = 0u - (uint32_t)(a < 0x3f0ccccdu); /* |x| < 0.55 */
    float t = fjv_f(((fjv_uf(small) & m) | (fjv_uf(big) & ~m)) | sign);
    return x != x ? x : t;
}

/* ---- expm1, log1p -------------------------------------------------------- */

/* x where x is a zero (its sign kept: -0.0 -> -0.0, as NumPy's), else r */
FJV_INLINE double fjv_zero_keeps(double x, double r)
{
    uint64_t m = 0 - (uint64_t)(x == 0.0); /* (== is a quiet compare) */
    return fjv_d((fjv_u(x) & m) | (fjv_u(r) & ~m));
}

/* expm1(x): |x| clamped to 1400 as exp's; 0 <= |x| < ln2/2 is the series
   itself (k = 0), else (2^k - 1) + 2^k p */
FJV_INLINE double fj_expm1_64(double x)
{
    return fjv_zero_keeps(x, fjv_expm1(fjv_clamp_abs(x, 0x4095e00000000000ULL /* 1400 */)));
}

/* log1p(x) = log(u) - ((u - 1) - x) / u, u = 1 + x (the rounding of u corrected
   to first order); u not positive normal finite (x <= -1, inf, NaN) raises
   invalid as log does */
FJV_INLINE double fj_log1p64(double x)
{
    double u = 1.0 + x;
    uint64_t b = fjv_u(u);
    uint64_t m = fjv_pos_normal(u);
    double us = fjv_d((b & m) | (0x3ff0000000000000ULL & ~m));
    double r = fjv_log(us) - ((us - 1.0) - fjv_d(fjv_u(x) & m)) / us;
    return fjv_under_sub64(fjv_zero_keeps(x, r * fjv_invalid_unless(m)), x);
}

/* ---- log2, log10; float32 expm1, log1p ------------------------------------ */

/* log(m) of x = 2^e m, m in [sqrt(2)/2, sqrt(2)), as hi + lo (fdlibm's e_log2.c /
   e_log10.c split): hi = f - f^2/2 with its low 32 bits cleared, so that hi times a
   constant's 32-bit head is exact, lo the rest of f - f^2/2 + s (f^2/2 + R) (fjv_log's
   polynomial); e returned as a double.  x positive, normal, finite. */
FJV_INLINE double fjv_log_hilo(double x, double *lo, double *e)
{
    double f, hfsq;
    double r = fjv_log_parts(x, &f, e, &hfsq);
    double hi = fjv_d(fjv_u(f - hfsq) & 0xffffffff00000000ULL);
    *lo = ((f - hi) - hfsq) + r;
    return hi;
}


/* log2(x) = e + log(m) / ln2, fdlibm's e_log2.c: log(m) = hi + lo (fjv_log_hilo),
   1/ln2 = ivh + ivl (ivh 33 bits: hi * ivh exact), e + hi ivh summed exactly
   (|e| >= 1 > |hi ivh| or e = 0), the tails added last.  Exact for powers of two
   (f = 0); log2(1) = +0.0.  Not a positive normal finite x (0, < 0, subnormal,
   inf, NaN): invalid raised on purpose as fj_log64 (NumPy computes the group) */
FJV_INLINE double fj_log2_64(double x)
{
    const double ivh = 1.44269504072144627571e+00, ivl = 1.67517131648865118353e-10;
    uint64_t m = fjv_pos_normal(x);
    double lo, e;
    double hi = fjv_log_hilo(fjv_d((fjv_u(x) & m) | (0x3ff0000000000000ULL & ~m)), &lo, &e);
    double vh = hi * ivh;
    double vl = (lo + hi) * ivl + lo * ivh;
    double w = e + vh;
    vl += (e - w) + vh;
    return (vl + w) * fjv_invalid_unless(m);
}

/* log10(x) = e log10(2) + log(m) / ln10, fdlibm's e_log10.c: as log2 with
   1/ln10 = ivh + ivl (ivh 32 bits) and log10(2) = l2h + l2l (l2h 40 bits: e l2h
   exact) */
FJV_INLINE double fj_log10_64(double x)
{
    const double ivh = 4.34294481878168880939e-01, ivl = 2.50829467116452752298e-11,
                 l2h = 3.01029995663611771306e-01, l2l = 3.69423907715893078616e-13;
    uint64_t m = fjv_pos_normal(x);
    double lo, e;
    double hi = fjv_log_hilo(fjv_d((fjv_u(x) & m) | (0x3ff0000000000000ULL & ~m)), &lo, &e);
    double vh = hi * ivh, y2 = e * l2h;
    double vl = e * l2l + (lo + hi) * ivl + lo * ivh;
    double w = y2 + vh;
    vl += (y2 - w) + vh;
    return (vl + w) * fjv_invalid_unless(m);
}

/* float32: log(m) as hi + lo in float32 lanes (fdlibm's e_log2f.c / e_log10f.c:
   hi's low 12 bits cleared, fj_log32's polynomial); e returned as a float, and in
   *ok a mask of all ones for a positive normal finite x (other lanes computed as
   x = 1, their invalid raised by the caller) */
FJV_INLINE float fjv_log_hilof(float x, float *lo, float *e, uint32_t *ok)
{
    const float Lg1 = 0x1.555554p-1f, Lg2 = 0x1.999c26p-2f, Lg3 = 0x1.23d3dcp-2f, Lg4 = 0x1.f13c4cp-3f;
    uint32_t u = fjv_uf(x);
    *ok = 0u - (uint32_t)((u - 0x00800000u) < 0x7f000000u);
    uint32_t ix = (u & *ok) | (0x3f800000u & ~*ok);
    uint32_t eb = (ix - 0x3f3504f3u) >> 23;
    float m = fjv_f(ix - (eb << 23));
    float f = m - 1.0f;
    *e = (float)(int32_t)((eb ^ 0x100u) - 0x100u);
    float s = f / (2.0f + f);
    float z = s * s, w = z * z;
    float R = z * FJV_MAF(w, Lg3, Lg1) + w * FJV_MAF(w, Lg4, Lg2);
    float hfsq = 0.5f * f * f, r = s * (hfsq + R);
    float hi = fjv_f(fjv_uf(f - hfsq) & 0xfffff000u);
    *lo = ((f - hi) - hfsq) + r;
    return hi;
}

/* float32 log2 and log10 in float32 lanes: e_log2f.c / e_log10f.c's sums (the
   constants' heads short enough for their products with hi and e to be exact); 1 ulp on every float32, exact at powers
   of two (log2) and of ten (log10), +0.0 at 1; special arguments as fj_log2_64 */
FJV_INLINE float fj_log2_32(float x)
{
    const float ivh = 1.4428710938e+00f, ivl = -1.7605285393e-04f;
    float lo, e;
    uint32_t ok;
    float hi = fjv_log_hilof(x, &lo, &e, &ok);
    return ((((lo + hi) * ivl + lo * ivh) + hi * ivh) + e) * fjv_invalid_unlessf(ok);
}

FJV_INLINE float fj_log10_32(float x)
{
    const float ivh = 4.3432617188e-01f, ivl = -3.1689971365e-05f,
                l2h = 3.0102920532e-01f, l2l = 7.9034151668e-07f;
    float lo, e;
    uint32_t ok;
    float hi = fjv_log_hilof(x, &lo, &e, &ok);
    return ((((e * l2l + (lo + hi) * ivl) + lo * ivh) + hi * ivh) + e * l2h) * fjv_invalid_unlessf(ok);
}

/* float32 expm1 in float32 lanes: |x| clamped to 100 (expm1 overflows float32 from
   88.73 on, in the last product, as NumPy's; past -100 it rounds to -1); NaN and
   +inf computed as 0 and put back (no flag: NumPy raises none), a zero keeps its
   sign.  x = k ln2 + r as fj_exp32's reduction, expm1(r) = r + t, t = r^2 (1/2 +
   r q(r)), q Taylor's to degree 4; 2^k (1 + r + t) - 1 as 2^k1 ((2^k2 - 2^-k1) +
   2^k2 r + 2^k2 t) in two FMAs: the sum of the first two terms is exact where they
   cancel (k = 1, r near -ln2/2), so only t's and the last roundings count (1 ulp
   on every float32).  t is 0 for |x| < 2^-40 (r^2 would raise a spurious
   underflow; t is below 2^-41 r there) */
FJV_INLINE float fj_expm1_32(float x)
{
    const float shift = 0x1.8p23f, invln2 = 0x1.715476p0f;
    const float ln2hi = 0x1.62e4p-1f, ln2lo = 0x1.7f7d1cp-20f;
    uint32_t u = fjv_uf(x), a = u & 0x7fffffffu;
    uint32_t keep = 0u - (uint32_t)((a > 0x7f800000u) | (u == 0x7f800000u) | (a == 0u)); /* NaN, +inf, +-0 */
    a = (a < 0x42c80000u ? a : 0x42c80000u) & ~keep;                                    /* |x| <= 100 */
    float c = fjv_f(a | (u & 0x80000000u));
    float z = FJV_MAF(c, invln2, shift);
    float k = z - shift;
    uint32_t ki = fjv_uf(z) - fjv_uf(shift);             /* k, two's complement */
    uint32_t k1 = (uint32_t)((int32_t)ki >> 1), k2 = ki - k1;
    float r = FJV_MAF(-k, ln2lo, FJV_MAF(-k, ln2hi, c));
    float rt = fjv_f(fjv_uf(r) & (0u - (uint32_t)(a >= 0x2b800000u)));                 /* |x| >= 2^-40 */
    float q = FJV_MAF(FJV_MAF(FJV_MAF(FJV_MAF(1.0f / 5040.0f, rt, 1.0f / 720.0f), rt, 1.0f / 120.0f), rt,
                              1.0f / 24.0f), rt, 1.0f / 6.0f);
    float t = (rt * rt) * FJV_MAF(rt, q, 0.5f);
    float A = fjv_f((k1 << 23) + 0x3f800000u), B = fjv_f((k2 << 23) + 0x3f800000u);
    float invA = fjv_f(0x3f800000u - (k1 << 23));        /* 2^-k1 */
    float y = A * FJV_MAF(B, t, FJV_MAF(B, r, B - invA));
    return fjv_under_sub32(fjv_f((u & keep) | (fjv_uf(y) & ~keep)), x);
}

/* float32 log1p in float32 lanes, fj_log1p64's way: log(u) - ((u - 1) - x) / u,
   u = 1 + x, log by fj_log32 (1 ulp on every float32); u not positive normal
   finite (x <= -1, inf, NaN) raises invalid (NumPy computes the group); a zero
   keeps its sign */
FJV_INLINE float fj_log1p32(float x)
{
    float u = 1.0f + x;
    uint32_t b = fjv_uf(u);
    uint32_t m = 0u - (uint32_t)((b - 0x00800000u) < 0x7f000000u); /* u positive normal */
    float us = fjv_f((b & m) | (0x3f800000u & ~m));
    float r = fj_log32(us) - ((us - 1.0f) - fjv_f(fjv_uf(x) & m)) / us;
    uint32_t zero = 0u - (uint32_t)(x == 0.0f);
    return fjv_under_sub32(fjv_f((fjv_uf(x) & zero) | (fjv_uf(r * fjv_invalid_unlessf(m)) & ~zero)), x);
}

/* (each section below: its functions' algorithms, bounds and special values in
   its own comments; docs/native.md has the table) */

/* ---- tan, sinh, cosh ------------------------------------------------------- */

/* (sinh and cosh reuse exp's reduction above) */


/* tan(x), |x| <= 2^18: x = n pi/2 + hi + lo (fjv_rem_pio2), then fdlibm's
   k_tan.c on hi + lo with its branches made per-lane selects: |hi| >= 0.6744
   takes pi/4 - |hi| (and its tail) as the polynomial's argument, whose result
   gives tan or, for odd n, -1/tan through one formula; else the polynomial's
   w = tan(hi + lo) for even n, -1/w computed accurately (fdlibm's split
   product) for odd n; the two kernels' divisions are one division whose
   operands are picked per lane.  |x| < 2^-28: x itself (the polynomial sees 0:
   no underflow for subnormal x; -0.0 stays).  |x| > 2^18, inf and NaN raise
   invalid on purpose (NumPy computes the group) */
FJV_INLINE double fj_tan64(double x)
{
    const double T0 = 3.33333333333334091986e-01, T1 = 1.33333333333201242699e-01,
                 T2 = 5.39682539762260521377e-02, T3 = 2.18694882948595424599e-02,
                 T4 = 8.86323982359930005737e-03, T5 = 3.59207910759131235356e-03,
                 T6 = 1.45620945432529025516e-03, T7 = 5.88041240820264096874e-04,
                 T8 = 2.46463134818469906812e-04, T9 = 7.81794442939557092300e-05,
                 T10 = 7.14072491382608190305e-05, T11 = -1.85586374855275456654e-05,
                 T12 = 2.59073051863633712884e-05;
    const double pio4 = 7.85398163397448278999e-01, pio4lo = 3.06161699786838301793e-17;
    const uint64_t hi32 = 0xffffffff00000000ULL;
    uint64_t u = fjv_u(x), ax = u & 0x7fffffffffffffffULL;
    uint64_t m = 0 - (uint64_t)(ax <= 0x4110000000000000ULL);       /* |x| <= 2^18 */
    uint64_t tiny = 0 - (uint64_t)(ax < 0x3e30000000000000ULL);     /* |x| < 2^-28 */
    double lo;
    uint64_t q;
    double hi = fjv_rem_pio2(fjv_d(u & m & ~tiny), &lo, &q);
    uint64_t hb = fjv_u(hi), sgn = hb & 0x8000000000000000ULL;
    uint64_t big = 0 - (uint64_t)((hb & 0x7fffffffffffffffULL) >= 0x3fe5942800000000ULL); /* |hi| >= 0.6744 */
    uint64_t odd = 0 - (q & 1);
    /* big: pi/4 - |hi + lo| (its sign put back at the end), no tail */
    double xb = (pio4 - fjv_d(hb ^ sgn)) + (pio4lo - fjv_d(fjv_u(lo) ^ sgn));
    double xr = fjv_bsel(big, xb, hi), yr = fjv_d(fjv_u(lo) & ~big);
    double z = xr * xr, w = z * z;
    double r = FJV_MA(w, FJV_MA(w, FJV_MA(w, FJV_MA(w, FJV_MA(w, T11, T9), T7), T5), T3), T1);
    double v = z * FJV_MA(w, FJV_MA(w, FJV_MA(w, FJV_MA(w, FJV_MA(w, T12, T10), T8), T6), T4), T2);
    double s = z * xr;
    r = FJV_MA(T0, s, FJV_MA(z, FJV_MA(s, r + v, yr), yr));
    double W = xr + r;
    /* one division: big: W^2 / (W + v1), v1 = +-1 (odd n: -1); small and odd: -1 / W;
       small and even: none (1 / 1, no flag) */
    double v1 = fjv_d(0x3ff0000000000000ULL | (odd & 0x8000000000000000ULL));
    double num = fjv_bsel(big, W * W, fjv_bsel(odd, -1.0, 1.0));
    double den = fjv_bsel(big, W + v1, fjv_bsel(odd, W, 1.0));
    double a = num / den;
    /* big: +-(v1 - 2 (xr - (W^2 / (W + v1) - r))), the sign of hi */
    double rbig = fjv_d(fjv_u(v1 - 2.0 * (xr - (a - r))) ^ sgn);
    /* small, odd: -1 / (xr + r) = t + a (s + t v), t and W's head with 32 low bits cleared
       (their product exact) */
    double t = fjv_d(fjv_u(a) & hi32), zh = fjv_d(fjv_u(W) & hi32);
    double vv = r - (zh - xr);
    double rodd = t + a * ((1.0 + t * zh) + t * vv);
    double y = fjv_bsel(big, rbig, fjv_bsel(odd, rodd, W));
    return fjv_under_sub64(fjv_bsel(tiny, x, y) * fjv_invalid_unless(m), x);
}


/* e^a = 2^k (h + l) in double-double, 0 <= a <= 712 (k >= 0 in *kb as an integer):
   a = k ln2 + r with r = rh + rl (the reduction's last subtraction's error kept:
   2Sum), e^r = 1 + rh + (rh^2 p(rh) + rl (1 + rh)), p the Taylor series to 1/14!
   (truncation 2^-63), 1 + rh split exactly (Fast2Sum) and the sum renormalized */
FJV_INLINE double fjv_exp_dd(double a, double *l, uint64_t *kb)
{
    const double shift = 0x1.8p52, invln2 = 0x1.71547652b82fep0;
    const double ln2hi = 0x1.62e42fee00000p-1, ln2lo = 0x1.a39ef35793c76p-33;
    double zs = FJV_MA(a, invln2, shift);
    double k = zs - shift;
    *kb = fjv_u(zs) - fjv_u(shift);
    double t = FJV_MA(-k, ln2hi, a);       /* exact (k ln2hi has 44 bits) */
    double pl = k * ln2lo;                 /* (its rounding: < 2^-75) */
    double rh = t - pl, bb = rh - t;
    double rl = (t - (rh - bb)) - (pl + bb);
    double p = 1.0 / 87178291200.0;        /* 1/14! */
    p = FJV_MA(p, rh, 1.0 / 6227020800.0);
    p = FJV_MA(p, rh, 1.0 / 479001600.0);
    p = FJV_MA(p, rh, 1.0 / 39916800.0);
    p = FJV_MA(p, rh, 1.0 / 3628800.0);
    p = FJV_MA(p, rh, 1.0 / 362880.0);
    p = FJV_MA(p, rh, 1.0 / 40320.0);
    p = FJV_MA(p, rh, 1.0 / 5040.0);
    p = FJV_MA(p, rh, 1.0 / 720.0);
    p = FJV_MA(p, rh, 1.0 / 120.0);
    p = FJV_MA(p, rh, 1.0 / 24.0);
    p = FJV_MA(p, rh, 1.0 / 6.0);
    p = FJV_MA(p, rh, 0.5);
    double c = FJV_MA(rh * rh, p, FJV_MA(rl, rh, rl));
    double h = 1.0 + rh, e1 = (1.0 - h) + rh;  /* exact: |rh| < 1 */
    double cl = e1 + c;
    double hs = h + cl;
    *l = (h - hs) + cl;
    return hs;
}

/* 2^(k-1) (h + l + sg 2^-2k / (h + l)) rounded once (sinh: sg = -1, k >= 1;
   cosh: sg = +1), 2^-k / (h + l) in double-double (with FMA: the quotient's
   residual; without, its rounding stays: 1/4 ulp more), 2^-2k as 2^-2 min(k, 60)
   (past it the term is below the sum's last bit: no underflow), the sum of the
   heads exact (2Sum), 2^(k-1) in two products (k - 1 up to 1027): overflow
   raised by the last product alone */
FJV_INLINE double fjv_hyp_combine(double h, double l, uint64_t kb, double sg)
{
    double ih = 1.0 / h;
#ifdef __FMA__
    double il = ih * (__builtin_fma(-ih, h, 1.0) - ih * l);
#else
    double il = -ih * (ih * l);
#endif
    uint64_t kk = kb < 60 ? kb : 60;
    double s2 = sg * fjv_d((1023 - 2 * kk) << 52);
    double b = s2 * ih, bl = s2 * il;     /* exact */
    double H = h + b, bb = H - h;
    double He = (h - (H - bb)) + (b - bb);
    double R = H + (He + (l + bl));
    uint64_t km = kb - 1, k1 = (uint64_t)((int64_t)km >> 1), k2 = km - k1;
    return fjv_d(fjv_u(R) + (k2 << 52)) * fjv_d((k1 + 1023) << 52);
}

/* sinh(x): |x| < 1: x + x^3 q(x^2), q the Taylor series to 1/19! (truncation
   2^-65); |x| >= 1: (e^|x| - e^-|x|) / 2 from fjv_exp_dd and fjv_hyp_combine,
   |x| clamped to 712 (overflow raised by the final product from 710.4759 on);
   the sign put back.  |x| < 2^-28 (subnormals, +-0 too), +-inf and NaN: x
   itself, no flag (the other lanes compute on arguments that raise none) */
FJV_INLINE double fj_sinh64(double x)
{
    uint64_t u = fjv_u(x), ab = u & 0x7fffffffffffffffULL, sign = u & 0x8000000000000000ULL;
    uint64_t keep = 0 - (uint64_t)((ab < 0x3e30000000000000ULL) | (ab >= 0x7ff0000000000000ULL));
    uint64_t small = 0 - (uint64_t)(ab < 0x3ff0000000000000ULL);  /* |x| < 1 */
    /* the series' argument: |x| in [2^-28, 1), else 0 */
    double ap = fjv_d(ab & small & ~keep);
    double z = ap * ap;
    double q = FJV_MA(z, 1.0 / 121645100408832000.0, 1.0 / 355687428096000.0); /* 1/19!, 1/17! */
    q = FJV_MA(q, z, 1.0 / 1307674368000.0);
    q = FJV_MA(q, z, 1.0 / 6227020800.0);
    q = FJV_MA(q, z, 1.0 / 39916800.0);
    q = FJV_MA(q, z, 1.0 / 362880.0);
    q = FJV_MA(q, z, 1.0 / 5040.0);
    q = FJV_MA(q, z, 1.0 / 120.0);
    q = FJV_MA(q, z, 1.0 / 6.0);
    double ps = FJV_MA(ap * z, q, ap);
    /* exp's argument: |x| in [1, 712], 1 for the others */
    uint64_t ae = ab > 0x4086400000000000ULL ? 0x4086400000000000ULL : ab; /* 712 */
    ae = (small | keep) & 1 ? 0x3ff0000000000000ULL : ae;
    double l;
    uint64_t kb;
    double h = fjv_exp_dd(fjv_d(ae), &l, &kb);
    double pe = fjv_hyp_combine(h, l, kb, -1.0);
    double y = fjv_d(fjv_u(fjv_bsel(small, ps, pe)) | sign);
    return fjv_under_sub64(fjv_bsel(keep, x, y), x);
}

/* cosh(x) = (e^|x| + e^-|x|) / 2 from fjv_exp_dd and fjv_hyp_combine (no
   cancellation: every |x|), |x| clamped to 712 (overflow raised by the final
   product from 710.4759 on), |x| < 2^-30 taken as 0 (cosh is 1; no underflow
   for subnormals); +-inf gives +inf, NaN NaN, no flag */
FJV_INLINE double fj_cosh64(double x)
{
    uint64_t ab = fjv_u(x) & 0x7fffffffffffffffULL;
    uint64_t nf = 0 - (uint64_t)(ab >= 0x7ff0000000000000ULL);
    uint64_t ae = ab > 0x4086400000000000ULL ? 0x4086400000000000ULL : ab;
    ae = ab < 0x3e10000000000000ULL ? 0 : ae;
    ae &= ~nf;
    double l;
    uint64_t kb;
    double h = fjv_exp_dd(fjv_d(ae), &l, &kb);
    double y = fjv_hyp_combine(h, l, kb, 1.0);
    return fjv_bsel(nf, fjv_d(ab), y);
}

/* The float32 functions compute in float64 lanes to about 2^-42 (relative), then
   round once to float32: at most 1 ulp off the correctly rounded value (only
   within 2^-18 ulp of a float32 halfway point), with terms and no double-double
   (2.5x faster than the float64 functions rounded).  Overflow is raised by the
   rounding to float32 (sinh, cosh from 89.416 on, as NumPy's), a subnormal
   float32 argument is a normal double (no underflow on the way). */

/* e^r in even and odd parts, |r| <= ln2/2 + a little: e^r = ev + r od, e^-r = ev - r od
   (the Taylor series to r^11: truncation 2^-42) */
FJV_INLINE void fjv_exp_eo(double r, double *ev, double *od)
{
    double z = r * r;
    *ev = FJV_MA(FJV_MA(FJV_MA(FJV_MA(FJV_MA(z, 1.0 / 3628800.0, 1.0 / 40320.0), z, 1.0 / 720.0), z, 1.0 / 24.0), z, 0.5), z, 1.0);
    *od = FJV_MA(FJV_MA(FJV_MA(FJV_MA(FJV_MA(z, 1.0 / 39916800.0, 1.0 / 362880.0), z, 1.0 / 5040.0), z, 1.0 / 120.0), z, 1.0 / 6.0), z, 1.0);
}

/* (e^a + sg e^-a) / 2, 0 <= a <= 100: a = k ln2 + r (exp's reduction), e^r 2^(k-1)
   + sg e^-r 2^(-k-1), the powers of two normal doubles (|k| <= 145) */
FJV_INLINE double fjv_hyp32(double a, double sg)
{
    const double shift = 0x1.8p52, invln2 = 0x1.71547652b82fep0;
    const double ln2hi = 0x1.62e42fee00000p-1, ln2lo = 0x1.a39ef35793c76p-33;
    double zs = FJV_MA(a, invln2, shift);
    double k = zs - shift;
    uint64_t kb = fjv_u(zs) - fjv_u(shift);
    double r = FJV_MA(-k, ln2lo, FJV_MA(-k, ln2hi, a));
    double ev, od;
    fjv_exp_eo(r, &ev, &od);
    double up = fjv_d((kb + 1022) << 52), dn = sg * fjv_d((1022 - kb) << 52);
    return FJV_MA(ev + r * od, up, (ev - r * od) * dn);
}

/* float32 sinh: |x| < 1: x + x^3 q(x^2), q the Taylor series to 1/13! (2^-40), its
   argument 0 past 1; else fjv_hyp32 of |x| clamped to 100 (1 for |x| < 1, inf and
   NaN); the sign put back; +-inf and NaN: x itself, no flag */
FJV_INLINE float fj_sinh32(float x)
{
    double d = (double)x;
    uint64_t u = fjv_u(d), ab = u & 0x7fffffffffffffffULL, sign = u & 0x8000000000000000ULL;
    uint64_t nf = 0 - (uint64_t)(ab >= 0x7ff0000000000000ULL);
    uint64_t small = 0 - (uint64_t)(ab < 0x3ff0000000000000ULL);
    double a = fjv_d(ab & small);
    double z = a * a;
    double q = FJV_MA(FJV_MA(FJV_MA(FJV_MA(FJV_MA(z, 1.0 / 6227020800.0, 1.0 / 39916800.0), z,
                                           1.0 / 362880.0), z, 1.0 / 5040.0), z, 1.0 / 120.0), z, 1.0 / 6.0);
    double ps = FJV_MA(a * z, q, a);
    uint64_t ae = ab > 0x4059000000000000ULL ? 0x4059000000000000ULL : ab;    /* 100 */
    ae = (ae & ~(small | nf)) | (0x3ff0000000000000ULL & (small | nf));
    double pe = fjv_hyp32(fjv_d(ae), -1.0);
    double y = fjv_d(fjv_u(fjv_bsel(small, ps, pe)) | sign);
    return fjv_under_sub32((float)fjv_bsel(nf, d, y), x);
}

/* float32 cosh: fjv_hyp32 of |x| clamped to 100 (0 for inf and NaN); +-inf gives
   inf, NaN NaN, no flag */
FJV_INLINE float fj_cosh32(float x)
{
    double d = (double)x;
    uint64_t ab = fjv_u(d) & 0x7fffffffffffffffULL;
    uint64_t nf = 0 - (uint64_t)(ab >= 0x7ff0000000000000ULL);
    uint64_t ae = ab > 0x4059000000000000ULL ? 0x4059000000000000ULL : ab;
    ae &= ~nf;
    return (float)fjv_bsel(nf, fjv_d(ab), fjv_hyp32(fjv_d(ae), 1.0));
}

/* float32 tan: x = n pi/2 + r in float64 (pi/2 in fdlibm's 33-bit parts: n times the
   first two exact, the differences exact (Sterbenz), one rounding in the last FMA:
   2^-52 of r even next to a multiple of pi/2), sin r and cos r by their Taylor
   series (to r^13 and r^14: 2^-45 at pi/4), tan = s / c for even n, -c / s for odd
   n: one division; a zero is its own result.  |x| > 2^18, inf and NaN raise
   invalid as fj_tan64's */
FJV_INLINE float fj_tan32(float x)
{
    const double shift = 0x1.8p52, invpio2 = 6.36619772367581382433e-01;
    const double P1 = 1.57079632673412561417e+00, P2 = 6.07710050630396597660e-11, P3 = 2.02226624871116645580e-21;
    double d = (double)x;
    uint64_t u = fjv_u(d);
    uint64_t m = 0 - (uint64_t)((u & 0x7fffffffffffffffULL) <= 0x4110000000000000ULL);
    d = fjv_d(u & m);
    double zs = FJV_MA(d, invpio2, shift);
    double n = zs - shift;
    uint64_t odd = 0 - (fjv_u(zs) & 1);
    double r = FJV_MA(-n, P3, (d - n * P1) - n * P2);
    double z = r * r;
    double s = FJV_MA(r * z, FJV_MA(FJV_MA(FJV_MA(FJV_MA(FJV_MA(z, 1.0 / 6227020800.0, -1.0 / 39916800.0), z, 1.0 / 362880.0), z, -1.0 / 5040.0), z, 1.0 / 120.0), z, -1.0 / 6.0), r);
    double c = FJV_MA(FJV_MA(FJV_MA(FJV_MA(FJV_MA(FJV_MA(FJV_MA(z, -1.0 / 87178291200.0, 1.0 / 479001600.0), z, -1.0 / 3628800.0), z, 1.0 / 40320.0), z, -1.0 / 720.0), z, 1.0 / 24.0), z, -0.5), z, 1.0);
    double num = fjv_bsel(odd, fjv_d(fjv_u(c) ^ 0x8000000000000000ULL), s), den = fjv_bsel(odd, s, c);
    /* tan(-0.0) is -0.0 (the series' negative terms made it +0.0) */
    uint64_t zero = 0 - (uint64_t)((u & 0x7fffffffffffffffULL) == 0);
    return fjv_under_sub32((float)(fjv_bsel(zero, d, num / den) * fjv_invalid_unless(m)), x);
}

/* ---- arctan, arcsin, arccos, arctan2 --------------------------------------- */

/* (arcsin and arccos of |x| <= 1; arctan2 of two operands) */

/* (the lanes' choices below are fjv_bsel's bit operations) */

/* atan of |x| by fdlibm's s_atan.c, branch-free: the interval of |x| (below
   7/16, 11/16, 19/16, 39/16, above) picks per lane the reduced argument
   t = (|x| - B) / (1 + B |x|) (B = 0, 1/2, 1, 3/2; above 39/16 t = -1 / |x|) and the
   constant atan(B) = H + L (fdlibm's atanhi, atanlo; pi/2 above) added back;
   one polynomial (aT[]) per lane: atan(|x|) = H - (((t S(t^2) - L) - corr) - t),
   'corr' a correction added to the argument's atan by the caller (0 for atan).
   Returns H and the rest v (atan = H - v).  |x| must be at most 2^66 (atan rounds
   to pi/2 past it) and at least 2^-62 (no underflow). */
/* fdlibm's s_atan.c polynomial: v = ((t S(t^2) - L) - corr) - t, so that
   atan(B) + atan(t + corr) = H - v for atan(B) = H + L (|t| <= 7/16) */
FJV_INLINE double fjv_atan_poly(double t, double corr, double L)
{
    const double aT0 = 3.33333333333329318027e-01, aT1 = -1.99999999998764832476e-01,
                 aT2 = 1.42857142725034663711e-01, aT3 = -1.11111104054623557880e-01,
                 aT4 = 9.09088713343650656196e-02, aT5 = -7.69187620504482999495e-02,
                 aT6 = 6.66107313738753120669e-02, aT7 = -5.83357013379057348645e-02,
                 aT8 = 4.97687799461593236017e-02, aT9 = -3.65315727442169155270e-02,
                 aT10 = 1.62858201153657823623e-02;
    double z = t * t, w = z * z;
    double s1 = z * FJV_MA(w, FJV_MA(w, FJV_MA(w, FJV_MA(w, FJV_MA(w, aT10, aT8), aT6), aT4), aT2), aT0);
    double s2 = w * FJV_MA(w, FJV_MA(w, FJV_MA(w, FJV_MA(w, aT9, aT7), aT5), aT3), aT1);
    return ((t * (s1 + s2) - L) - corr) - t;
}

FJV_INLINE double fjv_atan_hv(double ax, double corr, double *H)
{
    /* atanhi[], atanlo[] of fdlibm (atan(1/2), atan(1), atan(3/2), pi/2) */
    const uint64_t h0 = 0x3fddac670561bb4fULL, h1 = 0x3fe921fb54442d18ULL, h2 = 0x3fef730bd281f69bULL,
                   h3 = 0x3ff921fb54442d18ULL, l0 = 0x3c7a2b7f222f65e2ULL, l1 = 0x3c81a62633145c07ULL,
                   l2 = 0x3c7007887af0cbbdULL, l3 = 0x3c91a62633145c07ULL;
    uint64_t a = fjv_u(ax);
    uint64_t m0 = fjv_mask(a >= 0x3fdc000000000000ULL), m1 = fjv_mask(a >= 0x3fe6000000000000ULL), /* 7/16, 11/16 */
             m2 = fjv_mask(a >= 0x3ff3000000000000ULL), m3 = fjv_mask(a >= 0x4003800000000000ULL); /* 19/16, 39/16 */
    /* the interval's constants (the masks are nested: m3 implies m2 ...) */
    uint64_t hb = (m0 & h0) ^ (m1 & (h0 ^ h1)) ^ (m2 & (h1 ^ h2)) ^ (m3 & (h2 ^ h3));
    uint64_t lb = (m0 & l0) ^ (m1 & (l0 ^ l1)) ^ (m2 & (l1 ^ l2)) ^ (m3 & (l2 ^ l3));
    /* t = (A |x| - B) / (B |x| + A): A = 1, B = 0, 1/2, 1, 3/2 below 39/16; A = 0, B = 1 above */
    uint64_t k = (m0 & 1) + (m1 & 1) + (m2 & 1);
    double B = fjv_bsel(m3, 1.0, (fjv_d(0x4330000000000000ULL + k) - 0x1p52) * 0.5);
    double A = fjv_d(0x3ff0000000000000ULL & ~m3);
    double num = FJV_MA(A, ax, -B);               /* exact (Sterbenz) */
    double den = FJV_MA(B, ax, A);
    *H = fjv_d(hb);
    return fjv_atan_poly(num / den, corr, fjv_d(lb));
}

/* arctan(x): |x| below 2^-27 is x itself (no t^2 underflow; NumPy raises no flag
   either), |x| clamped to [2^-27, 2^66] (inf, past which it is pi/2 rounded), the
   sign put back; NaN gives NaN.  No flag.  (The clamps are integer min and max and
   x is put back last: masking the argument itself made the loop 2.7x slower) */
FJV_INLINE double fj_atan64(double x)
{
    uint64_t u = fjv_u(x), a = u & 0x7fffffffffffffffULL;
    uint64_t c = a < 0x4410000000000000ULL ? a : 0x4410000000000000ULL;
    c = c > 0x3e40000000000000ULL ? c : 0x3e40000000000000ULL;
    double H, v = fjv_atan_hv(fjv_d(c), 0.0, &H);
    uint64_t r = fjv_u(H - v) | (u & 0x8000000000000000ULL);
    uint64_t keep = fjv_mask(a < 0x3e40000000000000ULL) | fjv_mask(a > 0x7ff0000000000000ULL); /* tiny, NaN */
    return fjv_under_sub64(fjv_d((r & ~keep) | (u & keep)), x);
}

/* float32 arctan in float64 lanes (fj_atan64's formulas; 1 rounding to float32) */
FJV_INLINE float fj_atan32(float x) { return fjv_under_sub32((float)fj_atan64((double)x), x); }

/* fdlibm's rational function of e_asin.c / e_acos.c: R(t) = p(t) / q(t),
   asin(s) = s + s^3 R(s^2) */
FJV_INLINE double fjv_asin_r(double t)
{
    const double pS0 = 1.66666666666666657415e-01, pS1 = -3.25565818622400915405e-01,
                 pS2 = 2.01212532134862925881e-01, pS3 = -4.00555345006794114027e-02,
                 pS4 = 7.91534994289814532176e-04, pS5 = 3.47933107596021167570e-05,
                 qS1 = -2.40339491173441421878e+00, qS2 = 2.02094576023350569471e+00,
                 qS3 = -6.88283971605453293030e-01, qS4 = 7.70381505559019352791e-02;
    double p = t * FJV_MA(t, FJV_MA(t, FJV_MA(t, FJV_MA(t, FJV_MA(t, pS5, pS4), pS3), pS2), pS1), pS0);
    double q = FJV_MA(t, FJV_MA(t, FJV_MA(t, FJV_MA(t, qS4, qS3), qS2), qS1), 1.0);
    return p / q;
}

/* Near |x| = 1 (|x| >= 1/2): t = (1 - |x|) / 2 (exact), s = sqrt(t) = w + c in two
   parts (w: s with its low 32 bits cleared, so w^2 is exact; c = (t - w^2) / (s + w)),
   as both fdlibm files do; t = 0 (|x| = 1) gives c = 0, not 0 / 0 */
FJV_INLINE double fjv_sqrt_hl(double t, double *w, double *c)
{
    double s = __builtin_sqrt(t);
    double wh = fjv_d(fjv_u(s) & 0xffffffff00000000ULL);
    double d = s + wh;
    *w = wh;
    *c = (t - wh * wh) / fjv_bsel(fjv_mask(fjv_u(t) == 0), 1.0, d);
    return s;
}

/* arcsin(x), fdlibm's e_asin.c branch-free: |x| < 1/2: t = x^2,
   |x| + |x| R(t); else t = (1 - |x|) / 2 and fdlibm's second form for every |x| in
   [1/2, 1] (its hi/lo square root: pi/4 - ((2 s R(t) - (pio2_lo - 2c)) - (pi/4 - 2w))),
   one R(t) per lane, the sign put back.  |x| < 2^-27 is x itself (no t underflow;
   NumPy raises no flag; |x| is clamped to [2^-27, 1] and x put back last).  |x| > 1 (inf too) raises invalid on purpose (NaN; the
   group then runs through NumPy, whose arcsin raises invalid there); a NaN gives
   NaN, no flag (the lane classes are integer compares) */
FJV_INLINE double fj_asin64(double x)
{
    const double pio2_lo = 6.12323399573676603587e-17, pio4_hi = 7.85398163397448278999e-01;
    uint64_t u = fjv_u(x), a = u & 0x7fffffffffffffffULL;
    uint64_t ok = 0 - (uint64_t)((a <= 0x3ff0000000000000ULL) | (a > 0x7ff0000000000000ULL)); /* |x| <= 1, NaN */
    uint64_t tiny = fjv_mask(a < 0x3e40000000000000ULL) | fjv_mask(a > 0x7ff0000000000000ULL); /* x itself */
    uint64_t ca = a < 0x3ff0000000000000ULL ? a : 0x3ff0000000000000ULL; /* [2^-27, 1]: integer min, max */
    ca = ca > 0x3e40000000000000ULL ? ca : 0x3e40000000000000ULL;
    uint64_t big = fjv_mask(ca >= 0x3fe0000000000000ULL); /* |x| >= 1/2 */
    double ax = fjv_d(ca);
    double t = fjv_bsel(big, FJV_MA(ax, -0.5, 0.5), ax * ax);
    double R = fjv_asin_r(t), w, c;
    double s = fjv_sqrt_hl(t, &w, &c);
    /* H - ((M R - L) - Q): small: |x| - ((-|x| R - 0) - 0); big: fdlibm's (the choices
       as bit operations, see fjv_bsel) */
    double H = fjv_bsel(big, pio4_hi, ax), M = fjv_bsel(big, 2.0 * s, -ax);
    double L = fjv_d(fjv_u(pio2_lo - 2.0 * c) & big), Q = fjv_d(fjv_u(pio4_hi - 2.0 * w) & big);
    uint64_t r = fjv_u(H - ((M * R - L) - Q)) | (u & 0x8000000000000000ULL);
    return fjv_under_sub64(fjv_d((r & ~tiny) | (u & tiny)) * fjv_invalid_unless(ok), x);
}

/* arccos(x), fdlibm's e_acos.c branch-free, A - (B - (C - D R(t))) with per lane
   |x| < 1/2: t = x^2, pio2_hi - (x - (pio2_lo - x R));  x <= -1/2: t = (1 + x) / 2,
   pi - 2 (s - (pio2_lo - s R)) (s = sqrt(t));  x >= 1/2: t = (1 - x) / 2,
   2 (w + (c + s R)) (s = w + c as in arcsin).  |x| < 2^-57 computes x = 0 (pi/2
   rounded, as fdlibm: |x| is clamped to it; no t underflow); |x| > 1 raises invalid on
   purpose, a NaN gives NaN (as arcsin) */
FJV_INLINE double fj_acos64(double x)
{
    const double pio2_hi = 1.57079632679489655800e+00, pio2_lo = 6.12323399573676603587e-17,
                 pi = 3.14159265358979311600e+00;
    uint64_t u = fjv_u(x), a = u & 0x7fffffffffffffffULL;
    uint64_t ok = 0 - (uint64_t)((a <= 0x3ff0000000000000ULL) | (a > 0x7ff0000000000000ULL));
    /* |x| clamped to [2^-57, 1] (integer min, max; below 2^-57 arccos is pi/2 rounded),
       a NaN put back last */
    uint64_t ca = a < 0x3ff0000000000000ULL ? a : 0x3ff0000000000000ULL;
    ca = ca > 0x3c60000000000000ULL ? ca : 0x3c60000000000000ULL;
    uint64_t big = fjv_mask(ca >= 0x3fe0000000000000ULL), neg = big & fjv_mask(u >> 63), pos = big & ~neg;
    double xs = fjv_d(ca | (u & 0x8000000000000000ULL)), ax = fjv_d(ca);
    double t = fjv_bsel(big, FJV_MA(ax, -0.5, 0.5), xs * xs);
    double R = fjv_asin_r(t), w, c;
    double s = fjv_sqrt_hl(t, &w, &c);
    /* (the choices as bit operations, see fjv_bsel) */
    double A = fjv_d((fjv_u(pi) & neg) | (fjv_u(pio2_hi) & ~big));
    double B = fjv_bsel(neg, 2.0 * s, fjv_bsel(pos, -2.0 * w, xs));
    double C = fjv_bsel(neg, 2.0 * pio2_lo, fjv_bsel(pos, 2.0 * c, pio2_lo));
    double D = fjv_bsel(neg, 2.0 * s, fjv_bsel(pos, -2.0 * s, xs));
    return fjv_bsel(fjv_mask(a > 0x7ff0000000000000ULL), x, A - (B - (C - D * R))) * fjv_invalid_unless(ok);
}

/* float32 arcsin, arccos in float64 lanes (the float64 formulas; 1 rounding to
   float32); |x| > 1 raises invalid as theirs */
FJV_INLINE float fj_asin32(float x) { return fjv_under_sub32((float)fj_asin64((double)x), x); }
FJV_INLINE float fj_acos32(float x) { return (float)fj_acos64((double)x); }

/* arctan2(y, x), fdlibm's e_atan2.c reorganized for lanes: n = min(|y|, |x|),
   d = max(|y|, |x|) (two zeros: 0 and 1, two infinities: 1 and 1; scaled by a power
   of two where small or large), atan(n / d) = atan(B) + atan(tr) with
   tr = (n - B d) / (d + B n), B = 0, 1/2, 1 by n / d's interval (fdlibm's, below
   7/16, 11/16, above), tr's division tail (FMA) added as corr = e / (1 + tr^2), one
   polynomial (fjv_atan_poly); then per lane K + s atan(n / d): K = 0, pi/2 (|y| > |x|)
   or pi (x's sign bit set, |y| <= |x|), s = -1 for |y| > |x| xor x's sign, K + s H
   summed exactly first (Fast2Sum), and y's sign put on.  A quotient below about
   2^-60 skips the polynomial: atan2 is n / d itself there (its division raising
   underflow where NumPy's arctan2 does), or K (the dividend replaced by 0: no
   spurious underflow).  A result below 2^-1022 of a nonzero y and a finite x raises
   underflow explicitly (NumPy's arctan2 does, also where the quotient is exact;
   NumPy's raises it for some of those results only, so ours may be spurious there).
   A NaN operand gives NaN, no flag (but a signaling NaN's invalid, which NumPy's
   raises too). */
FJV_INLINE double fj_atan2_64(double y, double x)
{
    const double pio2_hi = 1.57079632679489655800e+00, pio2_lo = 6.12323399573676603587e-17,
                 pi_hi = 3.14159265358979311600e+00, pi_lo = 1.2246467991473532e-16;
    const uint64_t AB = 0x7fffffffffffffffULL, INF = 0x7ff0000000000000ULL, ONE = 0x3ff0000000000000ULL;
    uint64_t uy = fjv_u(y), ux = fjv_u(x), ay = uy & AB, ax = ux & AB;
    uint64_t swap = fjv_mask(ay > ax), neg = fjv_mask(ux >> 63);
    uint64_t mn = (ax & swap) | (ay & ~swap), mx = (ay & swap) | (ax & ~swap);
    uint64_t infs = fjv_mask(ay == INF) & fjv_mask(ax == INF), xinf = fjv_mask(mx == INF) & ~infs;
    uint64_t gap = fjv_mask(mx - mn > (60ULL << 52)) | xinf;  /* quotient below about 2^-60 (0 / inf too) */
    uint64_t plain = gap & ~(swap | neg);                      /* there atan2 is the quotient itself */
    /* (a NaN in mx: the dividend 0, no underflow in its scaling; the result is NaN) */
    mn = (ONE & infs) | (mn & ~(infs | xinf | (gap & (swap | neg)) | fjv_mask(mx > INF)));
    mx = (ONE & (infs | xinf | fjv_mask(mx == 0))) | (mx & ~(infs | xinf | fjv_mask(mx == 0)));
    /* operands below 2^-900 scaled by 2^1000, from 2^1000 on by 2^-100 (exact: no
       underflow in the tail, no overflow in n + d) */
    double sc = fjv_d(0x7e70000000000000ULL & fjv_mask(mx < 0x0830000000000000ULL)) +
                fjv_d(0x3630000000000000ULL & fjv_mask(mx >= 0x7e70000000000000ULL)) +
                fjv_d(ONE & fjv_mask((mx >= 0x0830000000000000ULL) & (mx < 0x7e70000000000000ULL)));
    double n = fjv_d(mn) * sc, d = fjv_d(mx) * sc;
    double gz = fjv_d(ONE & ~gap);   /* 0 where the quotient is tiny (no polynomial, no underflow) */
    double t = n / d;                /* (the result where the quotient is tiny) */
    /* atan(n / d) = atan(B) + atan(tr), tr = (n - B d) / (d + B n), B = 0, 1/2, 1 for n / d
       below 7/16, 11/16, above (fdlibm's intervals; n - B d exact, Sterbenz), from n and
       d themselves: no rounded quotient in between (two divisions a lane, not three) */
    uint64_t m0 = fjv_mask(n >= d * 0.4375), m1 = fjv_mask(n >= d * 0.6875);
    double B = fjv_d((0x3fe0000000000000ULL & m0 & ~m1) | (ONE & m1));
    double num = FJV_MA(-B, d, n) * gz, den = FJV_MA(B, n, d);
    double tr = num / den;
#ifdef __FMA__
    /* the division's tail e = (num - tr den) / den, and its atan, e / (1 + tr^2): one
       division, both halved (den (1 + tr^2) may pass the largest double) */
    double corr = (0.5 * __builtin_fma(-tr, den, num)) / (den * FJV_MA(0.5 * tr, tr, 0.5));
#else
    double corr = 0.0;
#endif
    double H = fjv_d((0x3fddac670561bb4fULL & m0 & ~m1) | (0x3fe921fb54442d18ULL & m1)); /* atan(1/2), pi/4 */
    double v = fjv_atan_poly(tr, corr, fjv_d((0x3c7a2b7f222f65e2ULL & m0 & ~m1) | (0x3c81a62633145c07ULL & m1)));
    double K = fjv_d((fjv_u(pio2_hi) & swap) | (fjv_u(pi_hi) & neg & ~swap));
    double Kl = fjv_d((fjv_u(pio2_lo) & swap) | (fjv_u(pi_lo) & neg & ~swap));
    uint64_t sm = (swap ^ neg) & 0x8000000000000000ULL;
    double sH = fjv_d(fjv_u(H) ^ sm), sv = fjv_d(fjv_u(v) ^ sm);
    double S = K + sH, err = (K - S) + sH;                   /* |K| >= |H| or K = 0 */
    double r = fjv_bsel(plain, t, S + ((err + Kl) - sv));
    uint64_t ur = fjv_u(r);
    /* w s: 0, or below 2^-1075 (underflow, rounded to 0): s a normal number from r's
       bits, so that no compiler folds the product of two constants away */
    uint64_t und = fjv_mask((ur & AB) < 0x0010000000000000ULL) & fjv_mask(ay != 0) & fjv_mask(ax < INF);
    double w = fjv_d(0x3c30000000000000ULL & und);           /* 2^-60 or 0 */
    double s = fjv_d((ur & 0x000fffffffffffffULL) | 0x0010000000000000ULL);
    r = fjv_d(ur | (uy & 0x8000000000000000ULL));
    r = r - w * s;                                           /* (-0.0 - +0.0 is -0.0) */
    return fjv_bsel(fjv_mask(ay > INF) | fjv_mask(ax > INF), fjv_d(0x7ff8000000000000ULL), r); /* NaN operand */
}

/* float32 arctan2 in float64 lanes (fj_atan2_64's formulas, no overflow or underflow
   for float32 operands; 1 rounding to float32, which raises underflow for an
   inexact subnormal); a float32 result below 2^-126 of a nonzero y and a finite x
   raises underflow explicitly as fj_atan2_64's */
FJV_INLINE float fj_atan2_32(float y, float x)
{
    float r = (float)fj_atan2_64((double)y, (double)x);
    uint32_t ur = fjv_uf(r), ay = fjv_uf(y) & 0x7fffffffu, ax = fjv_uf(x) & 0x7fffffffu;
    uint32_t und = 0u - (uint32_t)(((ur & 0x7fffffffu) < 0x00800000u) & (ay != 0) & (ax < 0x7f800000u));
    float w = fjv_f(0x30800000u & und);                      /* 2^-30 or 0 */
    return r - w * fjv_f((ur & 0x007fffffu) | 0x00800000u);
}

/* ---- cbrt, power ------------------------------------------------------------ */

/* cbrt(x) (FreeBSD's s_cbrt.c, branch-free): |x| = 2^e m; a 5-bit estimate t of
   cbrt(|x|) from the high 32 bits (their third plus a bias; a subnormal |x| is
   scaled by 2^54 first, its bias taking 18 from the exponent), a polynomial in
   t^3 / |x| to 23 bits, t rounded away from zero to 22 bits (t * t exact), one
   Newton step t + t (|x| / t^2 - t) / (2t + |x| / t^2): < 0.667 ulp; the sign
   put back.  +-0, +-inf and NaN are the result themselves (computed on 1.0:
   no flag) */
FJV_INLINE double fj_cbrt64(double x)
{
    const double P0 = 1.87595182427177009643, P1 = -1.88497979543377169875, P2 = 1.621429720105354466140,
                 P3 = -0.758397934778766047437, P4 = 0.145996192886612446982;
    uint64_t u = fjv_u(x), sign = u & 0x8000000000000000ULL, a = u ^ sign;
    uint64_t fin = 0 - (uint64_t)((a - 1) < 0x7fefffffffffffffULL); /* nonzero finite */
    a = (a & fin) | (0x3ff0000000000000ULL & ~fin);                  /* others: 1.0 */
    uint64_t sub = 0 - (uint64_t)(a < 0x0010000000000000ULL);
    double ax = fjv_d(a);
    double as = ax * fjv_d((0x4350000000000000ULL & sub) | (0x3ff0000000000000ULL & ~sub)); /* 2^54 |x| */
    uint64_t hx = fjv_u(as) >> 32;
    /* (1023 - 1023/3 - 0.03306235651) 2^20, the same less 54/3 2^20 for a scaled subnormal */
    uint64_t bias = (715094163ULL & ~sub) | (696219795ULL & sub);
    double t = fjv_d((((hx * 0xaaaaaaabULL) >> 33) + bias) << 32); /* hx / 3 + bias (hx < 2^31) */
    double r = (t * t) * (t / ax);
    t = t * ((P0 + r * (P1 + r * P2)) + ((r * r) * r) * (P3 + r * P4));
    t = fjv_d((fjv_u(t) + 0x80000000ULL) & 0xffffffffc0000000ULL);
    double s = t * t;        /* exact */
    r = ax / s;
    double w = t + t;
    r = (r - t) / (w + r);
    t = t + t * r;
    return fjv_d((fjv_u(t) & fin) | (u & ~fin) | sign);
}

/* float32 cbrt in float64 lanes (FreeBSD's s_cbrtf.c): the 5-bit estimate from
   the float64's high bits (a float32 subnormal is a normal float64), two Halley
   steps t (t^3 + 2|x|) / (2 t^3 + |x|) to 47 bits, rounded once to float32;
   +-0, +-inf and NaN are the result themselves */
FJV_INLINE float fj_cbrt32(float x)
{
    uint32_t u = fjv_uf(x), sign = u & 0x80000000u, a = u ^ sign;
    uint32_t fin = 0u - (uint32_t)((a - 1u) < 0x7f7fffffu);          /* nonzero finite */
    double ax = (double)fjv_f((a & fin) | (0x3f800000u & ~fin));
    uint64_t hx = fjv_u(ax) >> 32;
    double t = fjv_d((((hx * 0xaaaaaaabULL) >> 33) + 715094163ULL) << 32);
    double r = t * t * t;
    t = t * (ax + ax + r) / (ax + r + r);
    r = t * t * t;
    t = t * (ax + ax + r) / (ax + r + r);
    return fjv_f((fjv_uf((float)t) & fin) | (u & ~fin) | sign);
}

/* (power of two operands: np.power and x ** y) */

/* a * b - p exactly, p = a * b rounded (FMA; else Dekker's product of Veltkamp
   halves: |a|, |b| < 2^970) */
FJV_INLINE double fjv_prod_err(double a, double b, double p)
{
#ifdef __FMA__
    return __builtin_fma(a, b, -p);
#else
    const double c = 134217729.0; /* 2^27 + 1 */
    double ta = c * a, ah = ta - (ta - a), al = a - ah;
    double tb = c * b, bh = tb - (tb - b), bl = b - bh;
    return ((ah * bh - p) + ah * bl + al * bh) + al * bl;
#endif
}

/* log(x) = hi + lo in double-double (2^-67 relative), x positive normal finite
   (an input scaled by 2^54 from a subnormal: esub 54): x = 2^e m, m in
   [sqrt(3)/2, sqrt(3)) from the bits, c = 1 or 1.5 (m above sqrt(3/2): fdlibm's
   e_pow.c split), log(m) = log(c) + 2 atanh(s), s = (m - c) / (m + c) in
   double-double (|s| < 0.102), 2 atanh(s) = 2s + (2/3) s^3 + s^5 t(s^2): the
   first two terms in double-double, t (a fit of degree 6, 2^-54 relative) in
   double; the sum renormalized (|lo| <= ulp(hi) / 2) */
FJV_INLINE double fjv_log_dd(double x, double esub, double *lo_out)
{
    const double ln2hi = 0x1.62e42fee00000p-1, ln2lo = 0x1.a39ef35793c76p-33;
    const double c3h = 0x1.5555555555555p-1, c3l = 0x1.5555555555555p-55; /* 2/3 */
    uint64_t ix = fjv_u(x);
    uint64_t eb = (ix - 0x3febb67ae8584caaULL) >> 52; /* e in 12 bits, two's complement */
    uint64_t im = ix - (eb << 52);
    double m = fjv_d(im);
    double dk = (fjv_d(0x4338000000000000ULL + ((eb ^ 0x800) - 0x800)) - 0x1.8p52) - esub;
    uint64_t hc = 0 - (uint64_t)(im >= 0x3ff3988e1409212eULL); /* m >= sqrt(3/2): c = 1.5 */
    double c = fjv_d(0x3ff0000000000000ULL | (0x0008000000000000ULL & hc));
    double lch = fjv_d(0x3fd9f323ecbf984cULL & hc), lcl = fjv_d(0xbc4a92e513217f5cULL & hc); /* log(c) */
    double f = m - c;                                  /* exact */
    double dh = c + m, dl = m - (dh - c);              /* m + c = dh + dl exactly */
    double inv = 1.0 / dh;
    double sh = f * inv, p = sh * dh;
    double sl = (((f - p) - fjv_prod_err(sh, dh, p)) - sh * dl) * inv; /* f - s (m + c) = 0 */
    double zh = sh * sh, zl = fjv_prod_err(sh, sh, zh) + 2.0 * sh * sl;
    double p3h = sh * zh, p3l = fjv_prod_err(sh, zh, p3h) + (sh * zl + sl * zh);
    double t3h = c3h * p3h, t3l = fjv_prod_err(c3h, p3h, t3h) + (c3h * p3l + c3l * p3h);
    double tz2 = zh * zh, tz4 = tz2 * tz2;
    double tza0 = FJV_MA(0x1.2492492492478p-2, zh, 0x1.999999999999ap-2);
    double tza1 = FJV_MA(0x1.745d17175ada7p-3, zh, 0x1.c71c71c730b1ep-3);
    double tza2 = FJV_MA(0x1.10f4acae2f37ap-3, zh, 0x1.3b13e3f591640p-3);
    double tza3 = 0x1.f196d8117a154p-4;
    double tzb0 = FJV_MA(tza1, tz2, tza0);
    double tzb1 = FJV_MA(tza3, tz2, tza2);
    double tzc0 = FJV_MA(tzb1, tz4, tzb0);
    double t = tzc0; /* (Estrin: a shorter chain than Horner's) */
    double s2 = 2.0 * sh, t5 = FJV_MA(p3h, zh, FJV_MA(p3h, zl, p3l * zh)) * t; /* s^5 t */
    double l3 = s2 + t3h;                               /* |2s| > |t3h| > |t5| */
    double lh = l3 + t5;
    double ll = (((s2 - l3) + t3h) + ((l3 - lh) + t5)) + (2.0 * sl + t3l);
    double b = lch + lh, bc = b - lch;                  /* log(c) + lh = b + its error (2Sum) */
    double eh = dk * ln2hi;                             /* exact */
    double hi = eh + b, bb = hi - eh;
    double lo = ((eh - (hi - bb)) + (b - bb)) + ((((lch - (b - bc)) + (lh - bc)) + ll) + FJV_MA(dk, ln2lo, lcl));
    double h = hi + lo;                                 /* |lo| <= ulp(h) / 2 */
    *lo_out = (hi - h) + lo;
    return h;
}

/* exp(ph + pl), |ph| <= 746, |pl| <= ulp(ph): ph = k ln2 + t (t exact, |t| <= ln2/2
   + a little), exp(t + c), c = pl - k ln2lo, = exp(rh + rl) as
   1 + rh + (rh^2 q(rh) + rl (1 + rh)) (q a fit of degree 10: 2^-61.3 relative), the
   sum 1 + rh's rounding error kept; times 2^k as 2^k2 added to the exponent bits
   and one product by 2^k1, which alone rounds (overflow, underflow) */
FJV_INLINE double fjv_pow_exp_dd(double ph, double pl)
{
    const double shift = 0x1.8p52, invln2 = 0x1.71547652b82fep0;
    const double ln2hi = 0x1.62e42fee00000p-1, ln2lo = 0x1.a39ef35793c76p-33;
    double z = FJV_MA(ph, invln2, shift);
    double k = z - shift;
    uint64_t ki = fjv_u(z) - fjv_u(shift);
    uint64_t k1 = (uint64_t)((int64_t)ki >> 1), k2 = ki - k1;
    double t = FJV_MA(-k, ln2hi, ph);                   /* exact */
    double c = pl - k * ln2lo;
    double rh = t + c, rl = (t - rh) + c;
    /* (the even powers from |rh| floored to 2^-60: rh^8 would underflow for a tiny
       rh, whose higher terms are nothing anyway) */
    uint64_t qru = fjv_u(rh) & 0x7fffffffffffffffULL;
    double qrs = fjv_d(qru > 0x3c30000000000000ULL ? qru : 0x3c30000000000000ULL);
    double qr2 = qrs * qrs, qr4 = qr2 * qr2;
    double qra0 = FJV_MA(0x1.5555555555557p-3, rh, 0x1.0000000000000p-1);
    double qra1 = FJV_MA(0x1.11111111100dfp-7, rh, 0x1.5555555555556p-5);
    double qra2 = FJV_MA(0x1.a01a01abe63b3p-13, rh, 0x1.6c16c16c162d6p-10);
    double qra3 = FJV_MA(0x1.71de02372bdd3p-19, rh, 0x1.a01a01a6d7883p-16);
    double qra4 = FJV_MA(0x1.af4ddddcf06d6p-26, rh, 0x1.27e4db679bec4p-22);
    double qra5 = 0x1.1f72fca58cc92p-29;
    double qrb0 = FJV_MA(qra1, qr2, qra0);
    double qrb1 = FJV_MA(qra3, qr2, qra2);
    double qrb2 = FJV_MA(qra5, qr2, qra4);
    double qrc0 = FJV_MA(qrb1, qr4, qrb0);
    double qr8 = qr4 * qr4;
    double q = FJV_MA(qrb2, qr8, qrc0); /* (Estrin: a shorter chain than Horner's) */
    double w = FJV_MA(rh * rh, q, FJV_MA(rl, rh, rl));
    double a1 = 1.0 + rh, e1 = (1.0 - a1) + rh;
    double v = a1 + (e1 + w);
    return fjv_d(fjv_u(v) + (k2 << 52)) * fjv_d((k1 << 52) + 0x3ff0000000000000ULL);
}

/* x ** y: exp(y log x), log in double-double (fjv_log_dd), y log x = ph + pl
   (exact product's error kept), ph = k ln2 + t (t exact, |t| <= ln2/2 + a
   little), exp(t + c), c = pl - k ln2lo, as 1 + rh + (rh^2 q(rh) + rl (1 + rh))
   (q exp's polynomial), the sum 1 + rh's rounding error kept; times 2^k as 2^k2
   added to the exponent bits and one product by 2^k1, which alone rounds, so
   overflow and underflow are raised there (|y log x| clamped to 746, past which
   the result is inf or 0); results below 2^-1022 raise underflow explicitly, as
   NumPy's do.  Natively: x positive finite (subnormal: scaled by 2^54), or
   negative with an integer y (the sign y's parity: |y| >= 2^53 is even), y
   finite (|y| clamped into [2^-80, 2^900]: the same results, no overflow of the
   product); y = +-0 or x = 1: 1 (NaN or not); a NaN: NaN; x = +-0, y > 0: +-0.
   Others (a negative x with a non-integer y, x = +-0 with y < 0, an infinite x
   or y, and -0.0 ** 0.5, whose sign depends on NumPy's loop) raise invalid on
   purpose: NumPy computes the group */
FJV_INLINE double fj_pow64(double x, double y)
{
    const double shift = 0x1.8p52, invln2 = 0x1.71547652b82fep0;
    const double ln2hi = 0x1.62e42fee00000p-1, ln2lo = 0x1.a39ef35793c76p-33;
    const uint64_t SIGN = 0x8000000000000000ULL, ABS = 0x7fffffffffffffffULL, INF = 0x7ff0000000000000ULL;
    uint64_t ux = fjv_u(x), uy = fjv_u(y), ax = ux & ABS, ay = uy & ABS;
    /* |y| into [2^-80, 2^900] (a NaN or inf: 2^900; integer compares raise nothing) */
    uint64_t ac = ay < 0x3af0000000000000ULL ? 0x3af0000000000000ULL
                  : ay > 0x7830000000000000ULL ? 0x7830000000000000ULL : ay;
    double yc = fjv_d(ac | (uy & SIGN));
    /* y an integer, odd: |y| + 2^52 rounds |y| < 2^52 to an integer, its units'
       bit the last; from 2^52 every double is an integer, from 2^53 even (a
       variable shift of the bits would not vectorize: gcc narrows its count) */
    double ya = fjv_d(ac), yr = ya + 0x1p52;
    uint64_t lo52 = 0 - (uint64_t)(ac < 0x4330000000000000ULL);
    uint64_t yint = (uint64_t)((ac >= 0x4330000000000000ULL) | (yr - 0x1p52 == ya));
    uint64_t yodd = yint & ((fjv_u(yr) & lo52) | (ac & ~lo52 & (0 - (uint64_t)(ac < 0x4340000000000000ULL)))) & 1;
    uint64_t neg = (ux >> 63) & yodd;
    /* |x|: a nonzero finite one (a subnormal times 2^54), others and those of a
       y inf or NaN 1.0 */
    uint64_t fin = 0 - (uint64_t)(((ax - 1) < 0x7fefffffffffffffULL) & (ay < INF));
    uint64_t a = (ax & fin) | (0x3ff0000000000000ULL & ~fin);
    uint64_t sub = 0 - (uint64_t)(a < 0x0010000000000000ULL);
    double xs = fjv_d(a) * fjv_d((0x4350000000000000ULL & sub) | (0x3ff0000000000000ULL & ~sub));
    double Ll, Lh = fjv_log_dd(xs, fjv_d(0x404b000000000000ULL & sub) /* 54 */, &Ll);
    double ph = yc * Lh, pl = fjv_prod_err(yc, Lh, ph) + yc * Ll;
    /* |ph| <= 746 (past it: inf or 0 whatever pl) */
    uint64_t uph = fjv_u(ph), big = 0 - (uint64_t)((uph & ABS) > 0x4087500000000000ULL);
    ph = fjv_d((uph & ~big) | (((uph & SIGN) | 0x4087500000000000ULL) & big));
    pl = fjv_d(fjv_u(pl) & ~big);
    double r = fjv_pow_exp_dd(ph, pl);
    /* below 2^-1022: underflow, from 2^-600 squared (a product of normal numbers:
       a subnormal operand costs a microcode assist in every vector) */
    double wu = fjv_d(0x1a70000000000000ULL & (0 - (uint64_t)(fjv_u(r) < 0x0010000000000000ULL)));
    r = r + wu * wu;
    /* the cases */
    uint64_t one = 0 - (uint64_t)((ay == 0) | (ux == 0x3ff0000000000000ULL));
    uint64_t nan = 0 - (uint64_t)((ax > INF) | (ay > INF));
    /* y in (0, inf]; but -0.0 ** 0.5: NumPy's power loop takes sqrt for an exponent
       of stride 0 (a scalar: -0.0, its sign kept), pow otherwise (+0.0): left to NumPy */
    uint64_t zpos = 0 - (uint64_t)((ax == 0) & ((uy - 1) < INF) & ((ux != SIGN) | (uy != 0x3fe0000000000000ULL)));
    uint64_t ok = fin & (0 - (uint64_t)((ay < INF) & ((ux >> 63 == 0) | yint)));
    r = r * fjv_invalid_unless(one | nan | zpos | ok);
    uint64_t ur = (fjv_u(r) & ~zpos) ^ (neg << 63);
    ur = (ur & ~nan) | (((ax > INF) ? ux : uy) & nan);
    return fjv_d((ur & ~one) | (0x3ff0000000000000ULL & one));
}

/* float32 x ** y in float64 lanes, no division: x = 2^(e + j/4) (1 + f), j from the
   mantissa's bits (thresholds 2^(1/8), 2^(3/8), 2^(5/8)), f = m 2^(-j/4) - 1 (one
   FMA; |f| < 0.0906), log2(1 + f) = f p(f), p a fit of degree 8 (2^-43 relative);
   2^(y log2 x) = 2^k 2^r, |r| <= 1/2, 2^r a fit of degree 9 (2^-45.6), 2^k added
   to the exponent bits (|y log2 x| clamped to 300: the float32 result is inf or 0
   past 150), rounded once to float32 (the conversion raises overflow and
   underflow); results below 2^-126 raise underflow explicitly; the cases and
   what is left to NumPy as fj_pow64's */
FJV_INLINE float fj_pow32(float x, float y)
{
    uint32_t ux = fjv_uf(x), uy = fjv_uf(y), ax = ux & 0x7fffffffu, ay = uy & 0x7fffffffu;
    uint32_t yfin = 0u - (uint32_t)(ay < 0x7f800000u);
    uint32_t fin = (0u - (uint32_t)((ax - 1u) < 0x7f7fffffu)) & yfin; /* x nonzero finite, y finite */
    double yd = (double)fjv_f((uy & yfin) | (0x3f800000u & ~yfin)); /* a non-finite y: 1.0 */
    uint32_t ey = ay >> 23, sig = (ay & 0x007fffffu) | 0x00800000u; /* as fj_pow64's */
    uint32_t sh = ey >= 150 ? 0 : ey < 126 ? 24 : 150 - ey;
    uint32_t yint = (uint32_t)((sig & ((1u << sh) - 1u)) == 0);
    uint32_t yodd = yint & (sig >> sh) & (uint32_t)(ey <= 150);
    uint32_t neg = (ux >> 31) & yodd;
    uint64_t ix = fjv_u((double)fjv_f((ax & fin) | (0x3f800000u & ~fin)));
    uint64_t eb = (ix - 0x3fed5818dcfba487ULL) >> 52;   /* m in [2^(-1/8), 2^(7/8)) */
    uint64_t im = ix - (eb << 52);
    double dk = fjv_d(0x4338000000000000ULL + ((eb ^ 0x800) - 0x800)) - 0x1.8p52;
    double ic = 1.0, jq = 0.0;                          /* 2^(-j/4), j/4 */
    ic = im >= 0x3ff172b83c7d517bULL ? 0x1.ae89f995ad3adp-1 : ic;
    jq = im >= 0x3ff172b83c7d517bULL ? 0.25 : jq;
    ic = im >= 0x3ff4bfdad5362a27ULL ? 0x1.6a09e667f3bcdp-1 : ic;
    jq = im >= 0x3ff4bfdad5362a27ULL ? 0.5 : jq;
    ic = im >= 0x3ff8ace5422aa0dbULL ? 0x1.306fe0a31b715p-1 : ic;
    jq = im >= 0x3ff8ace5422aa0dbULL ? 0.75 : jq;
    double f = FJV_MA(fjv_d(im), ic, -1.0);
    double qf2 = f * f, qf4 = qf2 * qf2;
    double qfa0 = FJV_MA(-0x1.7154765297768p-1, f, 0x1.71547652b81f6p+0);
    double qfa1 = FJV_MA(-0x1.7154781e24d0ep-2, f, 0x1.ec709dc8c3392p-2);
    double qfa2 = FJV_MA(-0x1.ec69c45d790efp-3, f, 0x1.2776b5e3760fcp-2);
    double qfa3 = FJV_MA(-0x1.7632b824da8e8p-3, f, 0x1.a631f4aaebf31p-3);
    double qfa4 = 0x1.42e53d4ced15cp-3;
    double qfb0 = FJV_MA(qfa1, qf2, qfa0);
    double qfb1 = FJV_MA(qfa3, qf2, qfa2);
    double qfc0 = FJV_MA(qfb1, qf4, qfb0);
    double qf8 = qf4 * qf4;
    double q = FJV_MA(qfa4, qf8, qfc0); /* (Estrin: a shorter chain than Horner's) */
    double p = yd * FJV_MA(f, q, dk + jq);
    p = fjv_clamp_abs(p, 0x4072c00000000000ULL /* 300 */);
    double z = p + 0x1.8p52;
    uint64_t k = fjv_u(z) - fjv_u(0x1.8p52);
    double t = p - (z - 0x1.8p52);                      /* exact, |t| <= 1/2 */
    uint64_t etu = fjv_u(t) & 0x7fffffffffffffffULL;   /* (even powers: |t| floored to 2^-60) */
    double ets = fjv_d(etu > 0x3c30000000000000ULL ? etu : 0x3c30000000000000ULL);
    double et2 = ets * ets, et4 = et2 * et2;
    double eta0 = FJV_MA(0x1.62e42fefa39f7p-1, t, 0x1.000000000003dp+0);
    double eta1 = FJV_MA(0x1.c6b08d7044119p-5, t, 0x1.ebfbdff8149f2p-3);
    double eta2 = FJV_MA(0x1.5d87fe908f88ap-10, t, 0x1.3b2ab72b175efp-7);
    double eta3 = FJV_MA(0x1.ffcb7678984efp-17, t, 0x1.43088e257f223p-13);
    double eta4 = FJV_MA(0x1.b6571de306c29p-24, t, 0x1.63ef969a7938cp-20);
    double etb0 = FJV_MA(eta1, et2, eta0);
    double etb1 = FJV_MA(eta3, et2, eta2);
    double etc0 = FJV_MA(etb1, et4, etb0);
    double et8 = et4 * et4;
    double e = FJV_MA(eta4, et8, etc0); /* (Estrin: a shorter chain than Horner's) */
    float r = (float)fjv_d(fjv_u(e) + (k << 52));
    float wu = fjv_f(0x0d800000u & (0u - (uint32_t)(fjv_uf(r) < 0x00800000u)));
    r = r + wu * wu;                                    /* below 2^-126: underflow (2^-100 squared) */
    uint32_t one = 0u - (uint32_t)((ay == 0) | (ux == 0x3f800000u));
    uint32_t nan = 0u - (uint32_t)((ax > 0x7f800000u) | (ay > 0x7f800000u));
    uint32_t zpos = 0u - (uint32_t)((ax == 0) & ((uy - 1u) < 0x7f800000u) &
                                    ((ux != 0x80000000u) | (uy != 0x3f000000u))); /* (-0.0 ** 0.5: fj_pow64's) */
    uint32_t ok = fin & (0u - (uint32_t)(((ux >> 31) == 0) | yint));
    r = r * fjv_invalid_unlessf(one | nan | zpos | ok);
    uint32_t ur = (fjv_uf(r) & ~zpos) ^ (neg << 31);
    ur = (ur & ~nan) | (((ax > 0x7f800000u) ? ux : uy) & nan);
    return fjv_f((ur & ~one) | (0x3f800000u & one));
}

#endif
