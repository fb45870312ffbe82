/*
** native_threads.c: the worker threads that run large kernels of the
** `native` backend in parallel.
**
** Starting and joining a thread per chunk per call costs tens of
** microseconds, which made a second thread pay off only for very large
** arrays.  Workers are started once
** (lazily, as many as a call needs, at most FJNT_MAX) and then wait on a
** condition variable; a call publishes its job (function, argument, task
** count) under the pool's mutex, runs task 0 itself, takes any task no
** worker has taken yet, and waits until every task is done.  Workers sleep
** while idle (no spinning: spinning pools of two libraries fight over the
** cores, see BENCHMARKS.md on OMP_WAIT_POLICY).
**
** One job at a time: a second thread calling while a job runs does not wait
** for the pool, it runs its tasks itself (trylock).  After fork() the child
** has no workers: an atfork handler resets the pool (fresh mutexes, no
** workers) so the child starts its own.
**
** Not responsible for: splitting work or combining results (native.c).
*/
#define _POSIX_C_SOURCE 200809L /* pthread_sigmask, sigfillset under -std=c11 */
#include "native_threads.h"

#include <fenv.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#define FJNT_MAX 15

static struct {
    pthread_mutex_t run; /* held by the thread whose job the pool runs */
    pthread_mutex_t m;   /* the fields below */
    pthread_cond_t go, done;
    int nworkers;
    unsigned long gen;
    void (*fn)(void *, int);
    void *arg;
    fenv_t env; /* the caller's floating-point environment, for the job's tasks */
    int ntasks, next, pending;
    int atfork;
} P = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER};

static void after_fork_child(void)
{
    pthread_mutex_init(&P.run, NULL);
    pthread_mutex_init(&P.m, NULL);
    pthread_cond_init(&P.go, NULL);
    pthread_cond_init(&P.done, NULL);
    P.nworkers = 0;
    P.gen = 0;
    P.fn = NULL;
    P.arg = NULL;
    P.ntasks = P.next = P.pending = 0;
}

/* Takes and runs tasks of the current job until none is left (P.m held on
   entry and on return).  A worker first takes the caller's floating-point
   environment (rounding, flush-to-zero: a library loaded later may have
   changed the caller's), so every chunk computes as the caller would. */
static void take_tasks(int worker)
{
    while (P.next < P.ntasks) {
        int t = P.next++;
        void (*fn)(void *, int) = P.fn;
        void *arg = P.arg;
        fenv_t env = P.env;
        pthread_mutex_unlock(&P.m);
        if (worker)
            fesetenv(&env);
        fn(arg, t);
        pthread_mutex_lock(&P.m);
        if (--P.pending == 0)
            pthread_cond_signal(&P.done);
    }
}

/* 'gen0' is the job count when the worker was started, before the job that
   started it was published, so that job is not missed. */
static void *worker(void *gen0)
{
    unsigned long seen = (unsigned long)(uintptr_t)gen0;
    pthread_mutex_lock(&P.m);
    for (;;) {
        while (P.gen == seen)
            pthread_cond_wait(&P.go, &P.m);
        seen = P.gen;
        take_tasks(1);
    }
    return NULL;
}

/* Starts workers up to 'want' (P.m held).  Failures leave fewer workers. */
static void start_workers(int want)
{
    if (!P.atfork) {
        P.atfork = 1;
        (void)pthread_atfork(NULL, NULL, after_fork_child);
    }
    if (want > FJNT_MAX)
        want = FJNT_MAX;
    /* workers block every signal (they inherit the mask): signals go to the
       threads that handle them, as without the pool */
    sigset_t all, saved;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    while (P.nworkers < want) {
        pthread_t tid;
        pthread_attr_t attr;
        if (pthread_attr_init(&attr) != 0)
            break;
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&tid, &attr, worker, (void *)(uintptr_t)P.gen);
        pthread_attr_destroy(&attr);
        if (rc != 0)
            break;
        P.nworkers++;
    }
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
}

void fjn_parallel(void (*fn)(void *arg, int t), void *arg, int n)
{
    if (n <= 1 || pthread_mutex_trylock(&P.run) != 0) {
        for (int t = 0; t < n; t++)
            fn(arg, t);
        return;
    }
    pthread_mutex_lock(&P.m);
    start_workers(n - 1);
    fegetenv(&P.env);
    P.fn = fn;
    P.arg = arg;
    P.ntasks = n;
    P.next = 1;
    P.pending = n - 1;
    P.gen++;
    pthread_cond_broadcast(&P.go);
    pthread_mutex_unlock(&P.m);
    fn(arg, 0);
    pthread_mutex_lock(&P.m);
    take_tasks(0); /* tasks no worker took (too few workers, or they are slow to wake) */
    while (P.pending > 0)
        pthread_cond_wait(&P.done, &P.m);
    P.fn = NULL;
    P.arg = NULL;
    pthread_mutex_unlock(&P.m);
    pthread_mutex_unlock(&P.run);
}

int fjn_parallel_workers(void)
{
    pthread_mutex_lock(&P.m);
    int n = P.nworkers;
    pthread_mutex_unlock(&P.m);
    return n;
}
