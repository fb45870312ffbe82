/*
** rearm.c: a one-shot timer that runs a function in the interpreter a
** little later.  See rearm.h.
*/
#include "rearm.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int started = 0;          /* the thread runs (in this process) */
static int (*armed)(void *) = NULL; /* the function to schedule, NULL when idle */
static int stopping = 0;         /* the interpreter is exiting */
static pthread_t thread;
/* The timer thread's thread state, made by fj_rearm_after with the GIL held
   (made on the timer thread by PyGILState_Ensure, its allocation went
   through tracemalloc's hook without the GIL and crashed test_tracemalloc) */
static PyThreadState *timer_ts = NULL;

static void *timer_main(void *unused)
{
    (void)unused;
    fj_tstate_adopt(timer_ts);
    pthread_mutex_lock(&mu);
    while (!stopping) {
        if (armed == NULL) {
            pthread_cond_wait(&cv, &mu);
            continue;
        }
        struct timespec at;
        clock_gettime(CLOCK_MONOTONIC, &at);
        at.tv_nsec += FJ_REARM_DELAY_MS * 1000000L;
        at.tv_sec += at.tv_nsec / 1000000000L;
        at.tv_nsec %= 1000000000L;
        while (!stopping && pthread_cond_timedwait(&cv, &mu, &at) != ETIMEDOUT)
            ;
        if (stopping)
            break;
        int (*fn)(void *) = armed;
        armed = NULL;
        if (fj_is_finalizing()) /* atexit did not stop us (atexit._clear()) */
            break;
        pthread_mutex_unlock(&mu);
        /* Run 'fn' with the GIL.  (Py_AddPendingCall from this thread would
           not make 3.11's main thread look at its pending calls: it sets the
           eval breaker only if the *calling* thread can run them.)  Asking
           for the GIL makes the running thread drop it at its next check. */
        PyEval_RestoreThread(timer_ts);
        (void)fn(NULL);
        (void)PyEval_SaveThread();
        pthread_mutex_lock(&mu);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

void fj_rearm_after(int (*fn)(void *))
{
    pthread_mutex_lock(&mu);
    if (!started && !stopping && timer_ts == NULL)
        timer_ts = PyThreadState_New(PyInterpreterState_Get());
    if (!started && !stopping && timer_ts != NULL) {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_destroy(&cv);
        pthread_cond_init(&cv, &ca);
        pthread_condattr_destroy(&ca);
        /* the thread takes no signal: process-directed signals go to the
           program's threads as before */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        started = pthread_create(&thread, NULL, timer_main, NULL) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (started && armed == NULL) {
        armed = fn;
        pthread_cond_signal(&cv);
    }
    pthread_mutex_unlock(&mu);
}

/* atexit: stop and join the thread (it holds no GIL and no Python state). */
static PyObject *rearm_stop(PyObject *mod, PyObject *unused)
{
    pthread_mutex_lock(&mu);
    int join = started;
    stopping = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    if (join) {
        Py_BEGIN_ALLOW_THREADS
        pthread_join(thread, NULL);
        Py_END_ALLOW_THREADS
    }
    started = 0;
    if (timer_ts != NULL) {
        PyThreadState_Clear(timer_ts);
        PyThreadState_Delete(timer_ts);
        timer_ts = NULL;
    }
    Py_RETURN_NONE;
}

/* In a forked child the thread does not exist: start afresh. */
static void rearm_child(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    mu = m;
    cv = c;
    started = 0;
    armed = NULL;
    timer_ts = NULL; /* the child's runtime deleted the states of the other threads */
}

static PyMethodDef stop_def = {"_rearm_stop", rearm_stop, METH_NOARGS,
                               "Stops framejit's rearm timer thread (registered with atexit)."};

int fj_rearm_init(void)
{
    if (pthread_atfork(NULL, NULL, rearm_child) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "framejit: pthread_atfork failed");
        return -1;
    }
    PyObject *fn = PyCFunction_New(&stop_def, NULL);
    PyObject *atexit = fn ? PyImport_ImportModule("atexit") : NULL;
    PyObject *r = atexit ? PyObject_CallMethod(atexit, "register", "O", fn) : NULL;
    Py_XDECREF(fn);
    Py_XDECREF(atexit);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}
