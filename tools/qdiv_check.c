/*
** qdiv_check.c: checks fj_qdiv64 (the native kernels' division by a value of
** the row, csrc/backends/native/native_emit.c; docs/native.md "Row groups")
** against the division, bit for bit, within its bounds: |b| in [2^-900,
** 2^900], |a| and |a / b| in [2^-960, 2^960].  Random quotients over every
** exponent in the bounds, and quotients within two ulp of a halfway point
** between doubles (a = b (q + ulp/2) rounded, and its neighbours), where
** a * y alone is wrong a quarter of the time.
**
**   cc -O2 -march=native -ffp-contract=off tools/qdiv_check.c -lm && ./a.out 100000000
**
** Not responsible for: the bounds' and flags' handling (the tests do that).
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the kernels' prologue's fj_qdiv64 */
static inline double fj_qdiv64(double a, double b, double y)
{
    double q0 = a * y, q = __builtin_fma(__builtin_fma(-b, q0, a), y, q0);
    q = __builtin_fma(__builtin_fma(-b, q, a), y, q);
    return __builtin_copysign(q, q0);
}

static uint64_t state = 88172645463325252ULL;

static uint64_t rnd(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

static uint64_t bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

/* a double of exponent e: a random significand, or (one time in four) a short one */
static double number(int e)
{
    double m = rnd() % 4 ? 1.0 + (double)(rnd() >> 12) * 0x1p-52 : 1.0 + (double)(rnd() % 64) * 0x1p-6;
    return ldexp(m, e) * (rnd() & 1 ? -1.0 : 1.0);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 10000000, bad = 0, badhalf = 0, naive = 0;
    for (long i = 0; i < n; i++) {
        int eb = (int)(rnd() % 1801) - 900, eq = (int)(rnd() % 1919) - 959;
        if (eb + eq < -959 || eb + eq > 959)
            eq = -eq / 2;
        double b = number(eb), y = 1.0 / b, a = number(eb + eq);
        bad += bits(fj_qdiv64(a, b, y)) != bits(a / b);
        /* b (q + ulp(q)/2), rounded: fma(b, q, b ulp(q)/2), and its neighbours */
        double q = fabs(number(eq < -900 ? -900 : eq > 900 ? 900 : eq));
        double h = fma(b, q, b * ldexp(1.0, ilogb(q) - 53));
        for (int d = -2; d <= 2; d++) {
            double ah;
            uint64_t u = bits(h) + (uint64_t)(int64_t)d;
            memcpy(&ah, &u, 8);
            badhalf += bits(fj_qdiv64(ah, b, y)) != bits(ah / b);
            naive += bits(ah * y) != bits(ah / b);
        }
    }
    printf("random: %ld of %ld differ; near halfway: %ld of %ld differ (a * y alone: %ld)\n", bad, n, badhalf, 5 * n,
           naive);
    return bad || badhalf;
}
