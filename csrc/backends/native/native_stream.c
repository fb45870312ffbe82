/*
** native_stream.c: streaming stores for large elementwise outputs.
**
** A kernel that writes a fresh output with ordinary stores first reads
** every output cache line from memory (the write-allocate, or read for
** ownership) and writes it back later: for an output larger than the
** caches, c3 = (a*b + c)*0.5 moves five arrays' worth of bytes for four.
** Non-temporal stores write whole lines without reading them.  The kernels
** are not changed for this (their source, and so the disk cache, are the
** same): the flat kernel runs on blocks of a few KiB as runs of their own
** (inputs advanced to the block, outputs pointed at a staging buffer in
** L1), and each block is copied out with non-temporal stores (the widest
** the CPU has: 64, 32 or 16 bytes, fjn_stream_set_width).  The block's
** first element of output 0 is kept 64-byte aligned, so its copies are
** whole lines; other outputs may start mid-line (their head and tail bytes
** are ordinary stores).
**
** Used only from fjn_stream_min bytes moved per call (array inputs read +
** outputs written; default half the L3, at least 8 MiB, 24 MiB when the L3
** is not known; FRAMEJIT_NATIVE_STREAM_MIN or native_config(stream_min=)):
** below that the working set is served from the cache, the output lines
** are still cached from their last use (writing them costs no memory read)
** and stay there for whatever reads the result next; streaming them out was
** slower there.  Figures: docs/native.md, "Streaming stores".
*/
#include "native_stream.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define FJ_HAVE_NT 1
#else
#define FJ_HAVE_NT 0
#endif

#define FJ_STREAM_DEFAULT ((Py_ssize_t)24 << 20)
Py_ssize_t fjn_stream_min = FJ_STREAM_DEFAULT;

int fjn_stream_available(void)
{
    return FJ_HAVE_NT;
}

static int stream_width = 16;

void fjn_stream_init(void)
{
    /* half the L3: a working set that size is mostly served from the cache,
       and its output still there for the next reader.  At least 8 MiB; 24 MiB
       when the L3 is not known (an L2's half is where streaming loses) */
    long l3 = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
    l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    fjn_stream_min = l3 <= 0 ? FJ_STREAM_DEFAULT : l3 / 2 < (8L << 20) ? (Py_ssize_t)8 << 20 : (Py_ssize_t)(l3 / 2);
    /* FRAMEJIT_NATIVE_STREAM_MIN=bytes overrides (a non-number is ignored) */
    fjn_env_count("FRAMEJIT_NATIVE_STREAM_MIN", &fjn_stream_min);
    fjn_stream_set_width(64);
}

#if FJ_HAVE_NT
/* Copies n bytes from s (staging, any alignment) to d with non-temporal
   stores for d's whole 16-byte units; the unaligned head and the tail are
   ordinary stores. */
/* The ordinary-store head of a copy: the bytes before d's first 'unit'-aligned
   address (at most n); the pointers and the count advanced past them. */
static inline void nt_head(char **d, const char **s, size_t *n, size_t unit)
{
    size_t h = (size_t)(-(uintptr_t)*d & (unit - 1));
    if (h > *n)
        h = *n;
    memcpy(*d, *s, h);
    *d += h, *s += h, *n -= h;
}

static void nt_copy(char *d, const char *s, size_t n)
{
    nt_head(&d, &s, &n, 16);
    for (; n >= 64; n -= 64, d += 64, s += 64) {
        __m128i x0 = _mm_loadu_si128((const __m128i *)s), x1 = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i x2 = _mm_loadu_si128((const __m128i *)(s + 32)), x3 = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, x0);
        _mm_stream_si128((__m128i *)(d + 16), x1);
        _mm_stream_si128((__m128i *)(d + 32), x2);
        _mm_stream_si128((__m128i *)(d + 48), x3);
    }
    for (; n >= 16; n -= 16, d += 16, s += 16)
        _mm_stream_si128((__m128i *)d, _mm_loadu_si128((const __m128i *)s));
    memcpy(d, s, n);
}

#if defined(__GNUC__)
/* The same with 32-byte stores (AVX), for d's whole 32-byte units: half the
   instructions of the SSE copy. */
__attribute__((target("avx"))) static void nt_copy_avx(char *d, const char *s, size_t n)
{
    nt_head(&d, &s, &n, 32);
    for (; n >= 64; n -= 64, d += 64, s += 64) {
        __m256i x0 = _mm256_loadu_si256((const __m256i *)s), x1 = _mm256_loadu_si256((const __m256i *)(s + 32));
        _mm256_stream_si256((__m256i *)d, x0);
        _mm256_stream_si256((__m256i *)(d + 32), x1);
    }
    for (; n >= 32; n -= 32, d += 32, s += 32)
        _mm256_stream_si256((__m256i *)d, _mm256_loadu_si256((const __m256i *)s));
    memcpy(d, s, n);
}

/* The same with 64-byte stores (AVX-512F): one store per cache line. */
__attribute__((target("avx512f"))) static void nt_copy_avx512(char *d, const char *s, size_t n)
{
    nt_head(&d, &s, &n, 64);
    for (; n >= 64; n -= 64, d += 64, s += 64)
        _mm512_stream_si512((void *)d, _mm512_loadu_si512((const void *)s));
    memcpy(d, s, n);
}
#define FJ_NT_DISPATCH 1
#endif

typedef void (*nt_copy_t)(char *, const char *, size_t);
static nt_copy_t nt_copy_fn = nt_copy;

/* The copy in use (fjn_stream_set_width may change it from another thread). */
static nt_copy_t nt_current(void)
{
#ifdef FJ_NT_DISPATCH
    return __atomic_load_n(&nt_copy_fn, __ATOMIC_RELAXED);
#else
    return nt_copy_fn;
#endif
}
#endif

/* Selects the widest copy this CPU runs of at most 'want' bytes per store (16,
   32 or 64; the extension itself is built for baseline x86-64) and returns its
   width, 0 without streaming stores.  One 64-byte store per line instead of
   four 16-byte ones: a little faster (docs/native.md, "Streaming stores"). */
int fjn_stream_set_width(int want)
{
#if FJ_HAVE_NT
    nt_copy_t fn = nt_copy;
    int w = 16;
#ifdef FJ_NT_DISPATCH
    __builtin_cpu_init();
    if (want >= 64 && __builtin_cpu_supports("avx512f"))
        fn = nt_copy_avx512, w = 64;
    else if (want >= 32 && __builtin_cpu_supports("avx"))
        fn = nt_copy_avx, w = 32;
    __atomic_store_n(&nt_copy_fn, fn, __ATOMIC_RELAXED);
#else
    (void)want;
    nt_copy_fn = fn;
#endif
    stream_width = w;
    return w;
#else
    (void)want;
    return 0;
#endif
}

int fjn_stream_width(void)
{
    return FJ_HAVE_NT ? stream_width : 0;
}

int fjn_stream_copy(char *d, const char *s, size_t n)
{
#if FJ_HAVE_NT
    nt_current()(d, s, n);
    _mm_sfence();
    return 0;
#else
    (void)d, (void)s, (void)n;
    return -1;
#endif
}

/* Staging for all of a block's outputs together (L1-resident). */
#define FJ_STAGE_BYTES (16 << 10)

int fjn_run_streamed(fjn_flat_fn fn, Py_ssize_t start, Py_ssize_t end, char *const *data, const fjn_Stream *s)
{
#if FJ_HAVE_NT
    char *d2[FJN_MAX_IN + FJN_MAX_OUT];
    char *q[FJN_MAX_OUT];
    int row = 0, status = 0;
    for (int j = 0; j < s->nout; j++)
        row += s->isz[j];
    if (row <= 0 || row > FJ_STAGE_BYTES / 64)
        return fn(start, end, data);
    /* block: a multiple of 64 elements (whole lines of every output) */
    Py_ssize_t blk = (FJ_STAGE_BYTES / row) & ~(Py_ssize_t)63;
    /* the staging buffer on the heap: a Python thread's stack may be 32 KiB */
    char *stage = aligned_alloc(64, FJ_STAGE_BYTES);
    nt_copy_t copy = nt_current();
    if (!stage)
        return fn(start, end, data);
    for (int j = 0, off = 0; j < s->nout; j++) {
        q[j] = stage + off;
        off += (int)(blk * s->isz[j]);
        off = (off + 63) & ~63;
        if (off > FJ_STAGE_BYTES) { /* the rounding up left no room: ordinary stores */
            free(stage);
            return fn(start, end, data);
        }
        d2[s->nin + j] = q[j];
    }
    /* head: ordinary stores up to output 0's first 64-byte boundary (when its
       elements can reach one) */
    Py_ssize_t b = start;
    {
        uintptr_t a = (uintptr_t)(data[s->nin] + start * s->isz[0]);
        size_t gap = (size_t)(-a & 63);
        if (gap % (size_t)s->isz[0] == 0) {
            Py_ssize_t h = (Py_ssize_t)(gap / (size_t)s->isz[0]);
            b = end - start < h ? end : start + h;
        }
        if (b > start)
            status |= fn(start, b, data);
    }
    for (; end - b >= blk; b += blk) {
        /* the block as a run of its own: inputs from element b, outputs to
           the staging buffer */
        for (int k = 0; k < s->nin; k++)
            d2[k] = data[k] && s->step[k] ? data[k] + b * s->step[k] : data[k];
        status |= fn(0, blk, d2);
        for (int j = 0; j < s->nout; j++)
            copy(data[s->nin + j] + b * s->isz[j], q[j], (size_t)blk * (size_t)s->isz[j]);
    }
    if (b < end)
        status |= fn(b, end, data);
    _mm_sfence(); /* the streamed lines are visible before the result is used (or a thread joined) */
    free(stage);
    return status;
#else
    (void)s;
    return fn(start, end, data);
#endif
}
