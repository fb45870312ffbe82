/*
** native_threads.h: the native backend's worker threads (see native_threads.c).
*/
#ifndef FJ_NATIVE_THREADS_H
#define FJ_NATIVE_THREADS_H

/* Runs fn(arg, t) for every t in [0, n): task 0 on the calling thread, the
   others on the pool's workers (started on first use, kept), and returns
   when all have finished.  Called without the GIL.  Never fails: tasks no
   worker takes (a pool busy with another thread's job, threads that could
   not be started) run on the calling thread. */
void fjn_parallel(void (*fn)(void *arg, int t), void *arg, int n);

/* Workers started so far (for tests). */
int fjn_parallel_workers(void);

#endif
