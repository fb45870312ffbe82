/* A STREAM-like triad a[i] = b[i] + s*c[i] over doubles, in C, for
 * bench/native/stream.py: measures the memory bandwidth the native backend's
 * memory-bound kernels are compared with.  Not part of framejit; built by
 * stream.py with gcc -O3 -march=native -fopenmp into build/.
 *
 * Usage: stream N REPS [fresh] -> prints "best_seconds median_seconds threads"
 * (threads from OMP_NUM_THREADS).  Arrays are first-touched in parallel with
 * the same static schedule as the timed loop.  With "fresh", the output a
 * is malloc'ed before and freed after each timed pass (inside the timing),
 * as a compiled function that returns a new array does: its pages are
 * faulted in (and zeroed by the kernel) during the pass; like NumPy's
 * allocator, it asks for transparent huge pages (madvise) on large blocks. */
#define _DEFAULT_SOURCE
#include <omp.h>
#include <stdint.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 80000000L;
    int reps = argc > 2 ? atoi(argv[2]) : 10;
    int fresh = argc > 3 && argv[3][0] == 'f';
    double check = 0.0;
    double *a = aligned_alloc(64, (size_t)n * sizeof(double));
    double *b = aligned_alloc(64, (size_t)n * sizeof(double));
    double *c = aligned_alloc(64, (size_t)n * sizeof(double));
    double *t = malloc((size_t)reps * sizeof(double));
    const double s = 3.0;
    if (!a || !b || !c || !t) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        a[i] = 0.0;
        b[i] = 1.0;
        c[i] = 2.0;
    }
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        double *out = a;
        if (fresh && !(out = malloc((size_t)n * sizeof(double)))) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        if (fresh) {
            uintptr_t off = 4096u - (uintptr_t)out % 4096u;
            madvise((char *)out + off, (size_t)n * sizeof(double) - off, MADV_HUGEPAGE);
        }
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++)
            out[i] = b[i] + s * c[i];
        check += out[n / 2];
        if (fresh)
            free(out);
        t[r] = now() - t0;
    }
    /* checked so the loop cannot be dropped */
    if (check != 7.0 * reps) {
        fprintf(stderr, "wrong result %g\n", check / reps);
        return 1;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp);
    printf("%.9f %.9f %d\n", t[0], t[reps / 2], omp_get_max_threads());
    free(a);
    free(b);
    free(c);
    free(t);
    return 0;
}
