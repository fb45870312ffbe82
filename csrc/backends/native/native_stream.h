/*
** native_stream.h: streaming (non-temporal) stores of the `native`
** backend's large elementwise outputs (see native_stream.c).
*/
#ifndef FJ_NATIVE_STREAM_H
#define FJ_NATIVE_STREAM_H

#include "native.h"

/* Bytes an elementwise call must move (array inputs read + outputs written)
   before its outputs are streamed; native_config(stream_min=...). */
extern Py_ssize_t fjn_stream_min;

/* What a streamed flat call needs besides the kernel's arguments. */
typedef struct {
    int nin, nout;          /* the kernel's data[]: nin inputs, then nout outputs */
    int step[FJN_MAX_IN];   /* bytes per element of each input: its itemsize, 0 for one loaded once */
    int isz[FJN_MAX_OUT];   /* itemsize of each output */
} fjn_Stream;

/* Sets the default fjn_stream_min from the cache sizes (module init). */
void fjn_stream_init(void);

/* 1 when this machine has streaming stores (x86-64), else 0: then
   fjn_run_streamed is never called. */
int fjn_stream_available(void);

/* The streaming copy: the widest store this CPU has of at most 'want' bytes
   (16, 32 or 64); returns the width chosen, 0 without streaming stores.
   fjn_stream_init selects 64. */
int fjn_stream_set_width(int want);
/* The width in use (0 without streaming stores). */
int fjn_stream_width(void);
/* Copies n bytes from s to d with the streaming copy in use and a store
   fence (for tests: every alignment of d); -1 without streaming stores. */
int fjn_stream_copy(char *d, const char *s, size_t n);

/* Runs the flat kernel 'fn' over [start, end) with every output written
   through streaming stores: the kernel computes each block as a run of its
   own (inputs advanced to the block, outputs pointed at a small staging
   buffer), which is then copied to the output with non-temporal stores, so
   the output's cache lines are never read for ownership.  The kernels'
   statuses ORed, as run_flat does for threads.  Ends with a store fence. */
int fjn_run_streamed(fjn_flat_fn fn, Py_ssize_t start, Py_ssize_t end, char *const *data, const fjn_Stream *s);

#endif
