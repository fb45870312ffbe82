/*
** native_pool.c: reuse of large output buffers (the `native` backend).
**
** A function that returns a fresh array of N bytes pays for the page faults
** of N bytes, and for the kernel zeroing those pages, whenever the allocator
** maps new memory for it, as glibc does for every block above its mmap
** threshold (32 MiB at most): on the development machine that alone holds a
** memory-bound kernel to ~70% of the triad bandwidth (bench/native/stream.py,
** "fresh malloc").  The native backend allocates outputs of at least
** FJP_MIN bytes through a NumPy memory handler (NEP 49,
** PyDataMem_SetHandler, set only around its own allocation) whose free keeps
** the block in a small pool: at most FJP_SLOTS blocks and at most `limit`
** bytes (default: 1/8 of the physical memory, at most 4 GiB; the oldest
** blocks go first).  The next output of a size the block fits (at most 1/8
** larger) takes it back, its pages already mapped.
**
** The arrays stay ordinary NumPy arrays: they own their data (base None,
** OWNDATA), `resize` reallocates, and NumPy frees them through this handler
** whenever they die (an array records its handler); only
** `np.core.multiarray.get_handler_name(a)` tells ("framejit_native_pool").
** A block is pooled only once NumPy frees it, so a pooled block is never in
** use.  `_C.native_pool(limit=0)` frees everything held and turns the pool
** off; `_C.native_pool()` reports hits, misses and the bytes held.
**
** Not responsible for: which arrays come here (native.c decides).
*/
#include "native_pool.h"
#include "native.h"

#include <pthread.h>
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#define FJP_MIN ((size_t)4 << 20) /* outputs of at least 4 MiB (NumPy's huge-page size too) */
#define FJP_SLOTS 8

static struct {
    void *ptr[FJP_SLOTS];
    size_t size[FJP_SLOTS]; /* oldest first */
    int n;
    size_t held, limit;
    unsigned long long hits, misses, released;
    pthread_mutex_t lock;
} fjp = {.lock = PTHREAD_MUTEX_INITIALIZER};

static PyObject *fjp_capsule; /* strong, never freed: arrays hold references to it */

/* Frees pooled block k (lock held). */
static void drop(int k)
{
    free(fjp.ptr[k]);
    fjp.held -= fjp.size[k];
    fjp.released++;
    memmove(&fjp.ptr[k], &fjp.ptr[k + 1], (size_t)(fjp.n - k - 1) * sizeof fjp.ptr[0]);
    memmove(&fjp.size[k], &fjp.size[k + 1], (size_t)(fjp.n - k - 1) * sizeof fjp.size[0]);
    fjp.n--;
}

static void *fjp_malloc(void *ctx, size_t size)
{
    (void)ctx;
    if (size >= FJP_MIN) {
        int best = -1;
        pthread_mutex_lock(&fjp.lock);
        for (int k = 0; k < fjp.n; k++)
            if (fjp.size[k] >= size && fjp.size[k] - size <= size / 8 && (best < 0 || fjp.size[k] < fjp.size[best]))
                best = k;
        if (best >= 0) {
            void *p = fjp.ptr[best];
            /* fjp.size is the block's capacity (fjp_free), at least 'size' */
            fjp.held -= fjp.size[best];
            memmove(&fjp.ptr[best], &fjp.ptr[best + 1], (size_t)(fjp.n - best - 1) * sizeof fjp.ptr[0]);
            memmove(&fjp.size[best], &fjp.size[best + 1], (size_t)(fjp.n - best - 1) * sizeof fjp.size[0]);
            fjp.n--;
            fjp.hits++;
            pthread_mutex_unlock(&fjp.lock);
            return p;
        }
        fjp.misses++;
        pthread_mutex_unlock(&fjp.lock);
    }
    void *p = malloc(size ? size : 1);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p && size >= FJP_MIN) {
        /* as NumPy's default allocator does for large arrays */
        uintptr_t a = ((uintptr_t)p + 4095) & ~(uintptr_t)4095, e = ((uintptr_t)p + size) & ~(uintptr_t)4095;
        if (e > a)
            (void)madvise((void *)a, e - a, MADV_HUGEPAGE);
    }
#endif
    return p;
}

static void *fjp_calloc(void *ctx, size_t nelem, size_t elsize)
{
    (void)ctx;
    return calloc(nelem, elsize);
}

static void *fjp_realloc(void *ctx, void *ptr, size_t new_size)
{
    (void)ctx;
    return realloc(ptr, new_size ? new_size : 1);
}

/* The block's real capacity: what malloc gave (never less than what was
   asked for it), not the byte count NumPy passes to free, which is the
   array's and may be smaller than the block it reuses (so the pool never
   trusts it for a block's size; without glibc it must). */
static size_t capacity(void *ptr, size_t size)
{
#if defined(__GLIBC__)
    size_t c = malloc_usable_size(ptr);
    return c >= size ? c : size;
#else
    return size;
#endif
}

static void fjp_free(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    if (!ptr)
        return;
    if (size < FJP_MIN) {
        free(ptr);
        return;
    }
    size = capacity(ptr, size);
    pthread_mutex_lock(&fjp.lock);
    if (size > fjp.limit) {
        pthread_mutex_unlock(&fjp.lock);
        free(ptr);
        return;
    }
    while (fjp.n > 0 && (fjp.n == FJP_SLOTS || fjp.held + size > fjp.limit))
        drop(0);
    fjp.ptr[fjp.n] = ptr;
    fjp.size[fjp.n] = size;
    fjp.n++;
    fjp.held += size;
    pthread_mutex_unlock(&fjp.lock);
}

static PyDataMem_Handler fjp_handler = {
    "framejit_native_pool",
    1,
    {NULL, fjp_malloc, fjp_calloc, fjp_realloc, fjp_free},
};

PyArrayObject *fjn_pool_new_array(PyArray_Descr *descr, int nd, npy_intp *shape, int flags)
{
    size_t nbytes = (size_t)PyDataType_ELSIZE(descr);
    for (int k = 0; k < nd; k++)
        nbytes *= (size_t)shape[k];
    if (nbytes < FJP_MIN || fjp.limit == 0 || !fjp_capsule)
        return (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, descr, nd, shape, NULL, NULL, flags, NULL);
    PyObject *old = PyDataMem_SetHandler(fjp_capsule);
    if (!old) {
        Py_DECREF(descr);
        return NULL;
    }
    PyArrayObject *a = (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, descr, nd, shape, NULL, NULL, flags, NULL);
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *mine = PyDataMem_SetHandler(old);
    if (!mine) {
        /* never leave the pool's handler installed for NumPy's other arrays */
        PyErr_Clear();
        mine = PyDataMem_SetHandler(NULL);
    }
    Py_DECREF(old);
    if (!mine) {
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
        Py_XDECREF(a);
        return NULL;
    }
    Py_DECREF(mine);
    PyErr_Restore(et, ev, tb);
    return a;
}

static void set_limit(size_t limit)
{
    pthread_mutex_lock(&fjp.lock);
    fjp.limit = limit;
    while (fjp.n > 0 && (fjp.held > fjp.limit || fjp.limit == 0))
        drop(0);
    pthread_mutex_unlock(&fjp.lock);
}

PyObject *fjn_pool_config(PyObject *mod, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"limit", NULL};
    PyObject *lim = Py_None;
    (void)mod;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:native_pool", kwlist, &lim))
        return NULL;
    if (lim != Py_None) {
        Py_ssize_t v = PyLong_AsSsize_t(lim);
        if (v == -1 && PyErr_Occurred())
            return NULL;
        if (v < 0) {
            PyErr_Format(PyExc_ValueError, "native_pool: limit must be a byte count >= 0, got %zd", v);
            return NULL;
        }
        set_limit((size_t)v);
    }
    pthread_mutex_lock(&fjp.lock);
    unsigned long long hits = fjp.hits, misses = fjp.misses, released = fjp.released;
    size_t held = fjp.held, limit = fjp.limit;
    int n = fjp.n;
    pthread_mutex_unlock(&fjp.lock);
    return Py_BuildValue("{s:K,s:K,s:K,s:n,s:i,s:n,s:n}", "hits", hits, "misses", misses, "released", released,
                         "held_bytes", (Py_ssize_t)held, "held_blocks", n, "limit", (Py_ssize_t)limit, "min_bytes",
                         (Py_ssize_t)FJP_MIN);
}

int fjn_pool_init(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    size_t ram = pages > 0 && psz > 0 ? (size_t)pages * (size_t)psz : ((size_t)8 << 30);
    size_t lim = ram / 8;
    if (lim > ((size_t)4 << 30))
        lim = (size_t)4 << 30;
    Py_ssize_t env;
    if (fjn_env_count("FRAMEJIT_NATIVE_POOL_BYTES", &env))
        lim = (size_t)env;
    fjp.limit = lim;
    fjp_capsule = PyCapsule_New(&fjp_handler, "mem_handler", NULL);
    return fjp_capsule ? 0 : -1;
}
