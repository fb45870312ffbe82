/*
** _vmath.h: transcendental functions of the native backend's fused kernels
** (docs/native.md "Transcendental functions"; issue 23).
**
** Appended to a kernel's source (csrc/backends/native/native_emit.c) when a
** group computes one of them and config.native_exact is False.  Each
** function is straight-line C (no branches, bit casts through memcpy,
** int64 arithmetic on the bits) so that gcc vectorizes the loop around it.
** Each has a domain, fj_<f>_ok: inside it the function raises no
** floating-point flag and its result is within the bound measured in
** docs/native.md (tools/vmath_accuracy.py); an element outside it (NaN,
** infinities, overflow, results in the subnormal range, log of 0 or of a
** negative) makes the kernel's status FJ_HARD, and the group runs through
** NumPy, whose values, flags and warnings are then the program's.  The
** functions clamp their argument into the domain first, so the lanes a
** vectorized loop computes for other elements raise no flag either.
**
** Algorithms (textbook; constants are the usual ones): exp: x = k ln2 + r
** (k rounded with the 1.5 * 2^52 shift, ln2 split in a 32-bit head and a
** tail so k * head is exact), exp(r) by its Taylor series (degree 13 for
** float64, |r| <= ln2 / 2), scaled by 2^k in two exact steps.  log: x = 2^e
** m, m in [sqrt(2)/2, sqrt(2)) from the bits, log(m) = log1p(f) with s =
** f / (2 + f) and fdlibm's polynomial in s^2, plus e ln2 in two parts.
** float32 versions compute in float64 and round once.
*/
#ifndef FJ_VMATH_H
#define FJ_VMATH_H
#include <stdint.h>
#include <string.h>

static inline double fjv_d(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }
static inline uint64_t fjv_u(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }

/* ---- exp ----------------------------------------------------------------- */

/* exp(x) normal and finite: x in [-708.39, 709.78] (quiet compares: a NaN is outside) */
static inline int fj_exp64_ok(double x) { return __builtin_isgreaterequal(x, -708.39) & __builtin_islessequal(x, 709.78); }
static inline int fj_exp32_ok(float x) { return __builtin_isgreaterequal(x, -87.33f) & __builtin_islessequal(x, 88.72f); }

/* exp(r) - 1 for |r| <= ln2/2 + a little: the Taylor series to degree 13 */
static inline double fjv_expm1_core(double r)
{
    double p = 1.0 / 6227020800.0;            /* 1/13! */
    p = p * r + 1.0 / 479001600.0;            /* 1/12! */
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    return r + (r * r) * p;
}

/* exp(r) - 1 for |r| <= ln2/2: degree 7, enough for a float32 result */
static inline double fjv_expm1_core32(double r)
{
    double p = 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    return r + (r * r) * p;
}

/* x = k ln2 + r; returns r and the bits of 2^(k/2) and 2^(k - k/2) */
static inline double fjv_exp_reduce(double x, uint64_t *s1, uint64_t *s2)
{
    const double shift = 0x1.8p52, invln2 = 0x1.71547652b82fep0;
    const double ln2hi = 0x1.62e42fee00000p-1, ln2lo = 0x1.a39ef35793c76p-33;
    double z = x * invln2 + shift;
    double k = z - shift;
    int64_t ki = (int64_t)(fjv_u(z) - fjv_u(shift)); /* k as an integer, from the bits */
    int64_t k1 = ki >> 1, k2 = ki - k1;
    *s1 = (uint64_t)(k1 + 1023) << 52;
    *s2 = (uint64_t)(k2 + 1023) << 52;
    return (x - k * ln2hi) - k * ln2lo;
}

static inline double fj_exp64(double x)
{
    x = __builtin_fmin(__builtin_fmax(x, -708.39), 709.78); /* (fmin/fmax: no flag for a NaN) */
    uint64_t s1, s2;
    double r = fjv_exp_reduce(x, &s1, &s2);
    return ((1.0 + fjv_expm1_core(r)) * fjv_d(s1)) * fjv_d(s2);
}

static inline float fj_exp32(float xf)
{
    double x = __builtin_fmin(__builtin_fmax((double)xf, -87.33), 88.72);
    uint64_t s1, s2;
    double r = fjv_exp_reduce(x, &s1, &s2);
    return (float)(((1.0 + fjv_expm1_core32(r)) * fjv_d(s1)) * fjv_d(s2));
}

/* ---- log ----------------------------------------------------------------- */

/* log(x) computed here: x positive, normal and finite */
static inline int fj_log64_ok(double x) { return __builtin_isgreaterequal(x, 0x1p-1022) & __builtin_islessequal(x, 0x1.fffffffffffffp1023); }
static inline int fj_log32_ok(float x) { return __builtin_isgreaterequal(x, 0x1p-126f) & __builtin_islessequal(x, 0x1.fffffep127f); }

/* log(x), x positive, normal, finite (fdlibm's e_log.c polynomial) */
static inline double fjv_log(double x)
{
    const double ln2hi = 0x1.62e42fee00000p-1, ln2lo = 0x1.a39ef35793c76p-33;
    const double Lg1 = 6.666666666666735130e-01, Lg2 = 3.999999999940941908e-01,
                 Lg3 = 2.857142874366239149e-01, Lg4 = 2.222219843214978396e-01,
                 Lg5 = 1.818357216161805012e-01, Lg6 = 1.531383769920937332e-01,
                 Lg7 = 1.479819860511658591e-01;
    /* x = 2^e m, m in [sqrt(2)/2, sqrt(2)): e from the bits above 0.7071... */
    uint64_t ix = fjv_u(x);
    uint64_t tmp = ix - 0x3fe6a09e667f3bcdULL;
    int64_t e = (int64_t)tmp >> 52;
    double m = fjv_d(ix - ((uint64_t)e << 52));
    double f = m - 1.0;
    double dk = (double)e;
    double s = f / (2.0 + f);
    double z = s * s, w = z * z;
    double t1 = w * (Lg2 + w * (Lg4 + w * Lg6));
    double t2 = z * (Lg1 + w * (Lg3 + w * (Lg5 + w * Lg7)));
    double R = t2 + t1, hfsq = 0.5 * f * f;
    return dk * ln2hi - ((hfsq - (s * (hfsq + R) + dk * ln2lo)) - f);
}

static inline double fj_log64(double x)
{
    return fjv_log(__builtin_fmin(__builtin_fmax(x, 0x1p-1022), 0x1.fffffffffffffp1023));
}

static inline float fj_log32(float x)
{
    return (float)fjv_log((double)__builtin_fminf(__builtin_fmaxf(x, 0x1p-126f), 0x1.fffffep127f));
}
#endif
