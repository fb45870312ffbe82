"""The ``native`` backend: fused C kernels compiled with the system C compiler.

The engine is C (csrc/backends/native/native.c: partitioning and the per-call runner;
csrc/backends/native/native_emit.c: the kernel source).  This module is the toolchain
side, run once per graph at backend-call time, never per call: it finds
the C compiler, builds the generated source into a shared object, and keeps
built objects in an on-disk cache keyed by a hash of the source, the flags,
the compiler's version and the machine, so another process never compiles
the same kernels again.  See docs/native.md.

Environment: ``CC`` (the compiler, default ``cc``), ``FRAMEJIT_CACHE_DIR``
(default ``$XDG_CACHE_HOME/framejit/kernels`` or ``~/.cache/framejit/kernels``).
Counters: ``framejit.counters["native"]``: graphs, graphs_unfused, groups,
nodes_fused, kernels_compiled, kernels_loaded_from_cache, no_compiler, backend_failures,
compiler_probes (runs of ``cc --version`` and the flag probe; 0 in a process
that finds the compiler's probe remembered in the cache directory),
background_compiles (graphs whose kernels were built by a background thread
while their first calls ran eager: ``config.native_background``).
"""
import marshal
import os
import shutil
import sys
import _thread
import threading
import time
from _queue import Empty as _QueueEmpty, SimpleQueue as _SimpleQueue  # (C: no import of queue.py on a first call)
import warnings
import weakref

try:  # already loaded by `random` (which NumPy imports): no import cost at all;
    # _sha256 costs a dlopen (0.3 ms), hashlib loads OpenSSL (ms)
    from _sha512 import sha512 as _hash
except ImportError:  # pragma: no cover
    from hashlib import sha512 as _hash

# subprocess, tempfile and shlex are imported where the compiler runs or a
# file is built, json not at all: a process whose kernels are all cached
# never needs them (importing them cost several ms of its first backend call).

from . import _C, config, tracefile
from .api import counters as _all_counters

# Builtins bound at import: framejit's code runs while the program's frames
# compile, when the program may have patched builtins (len, isinstance, open...).
from builtins import (  # noqa: A004
    BaseException, EOFError, Exception, ImportError, KeyError, OSError, RuntimeError,
    RuntimeWarning, TypeError, ValueError, enumerate, len, list, max, open, repr, set, sum,
    type
)

#: flags of every kernel build (part of the cache key).  -ffp-contract=off:
#: no fused multiply-add, so a*b+c rounds twice as NumPy's loops do.
CFLAGS = ["-O3", "-std=c11", "-fPIC", "-shared", "-fno-math-errno", "-ffp-contract=off",
          "-fno-semantic-interposition"]
MARCH = ["-march=native"]
#: taken when the compiler accepts it (gcc): partial redundancy elimination
#: turns sqrt(where(c, x, 0)) into where(c, sqrt(x), 0), whose sqrt of the
#: unselected negative lanes sets FE_INVALID spuriously, which makes every
#: block run its checking loop (c7 float32 1e4: 8.2 us -> 2.5 us without it)
NO_PRE = ["-fno-tree-pre"]
#: added for a source with loop kernels (native_loop.c; its prologue defines
#: FJL_AMAX): unrolled, a reduction's or a recurrence's scalar chain overlaps the
#: next one's (matmul_loops 0.87 -> 1.04x Numba, mandelbrot 0.91 -> 1.06x,
#: escape_time 0.89 -> 1.08x; the kernels' compile takes about a third longer).
#: gcc and clang both take it.
LOOP_FLAGS = ["-funroll-loops"]
#: also for loop kernels, on a CPU with AVX-512 and a compiler that takes it:
#: 8 lanes of float64/int64 where gcc's tuning would keep 4 (life_step 0.70 ->
#: 0.82x Numba, conv2d3x3 0.86 -> 0.89x, jacobi2d 0.93 -> 0.99x).
LOOP_VEC = ["-mprefer-vector-width=512"]

_toolchain = None       # (argv, version text, flags, loop kernels' extra flags) or False: no compiler
_toolchain_env = None   # the CC value _toolchain was found for
_toolchain_lock = threading.Lock()
_machine = None         # _machine_id(), read once per process
_warned_no_cc = False


def cache_dir():
    d = os.environ.get("FRAMEJIT_CACHE_DIR")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "framejit", "kernels")
    return d


def _machine_id():
    """The machine part of the cache key: architecture and (for -march=native) the CPU's flags."""
    global _machine
    if _machine is not None:
        return _machine
    parts = [os.uname().machine]
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features", "model name")):
                    parts.append(line.strip())
                    if line.startswith(("flags", "Features")):
                        break
    except OSError:
        pass
    _machine = "\n".join(parts)
    return _machine


def _compiler_identity(argv):
    """What identifies the compiler 'argv' on disk without running it: each word
    found on PATH as (resolved path, size, mtime); None when argv[0] is not found."""
    ident = [argv]
    for i, word in enumerate(argv):
        exe = shutil.which(word)
        if exe is None:
            if i == 0:
                return None
            continue
        real = os.path.realpath(exe)
        try:
            st = os.stat(real)
        except OSError:
            return None
        ident.append([real, st.st_size, st.st_mtime_ns])
    return ident


def _toolchain_file(ident):
    """The file in the cache directory remembering the probe of compiler 'ident'."""
    key = _hash(repr((ident, CFLAGS, MARCH, NO_PRE, LOOP_FLAGS, LOOP_VEC)).encode()).hexdigest()[:32]
    return os.path.join(cache_dir(), f"toolchain_{key}.bin")


def _avx512():
    """True when the CPU has AVX-512F (from /proc/cpuinfo's flags)."""
    return " avx512f" in _machine_id()


def _probe(argv):
    """(version, flags, loop flags) of compiler argv by running it (--version, a
    -march=native probe), or None when it does not work."""
    import subprocess
    try:
        out = subprocess.run(argv + ["--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    _count("compiler_probes")
    version = (out.stdout or out.stderr).strip()
    flags = list(CFLAGS)
    if _accepts(argv, MARCH):
        flags += MARCH
    if "clang" not in version.lower() and _accepts(argv, NO_PRE):
        flags += NO_PRE
    loop_flags = list(LOOP_FLAGS)
    if MARCH[0] in flags and _avx512() and _accepts(argv, LOOP_VEC):
        loop_flags += LOOP_VEC
    return version, flags, loop_flags


def _find_toolchain():
    """(argv, version, flags, loop flags) of the C compiler, or False.  Found once per CC value.

    The probe (``cc --version`` and a test compile, tens of milliseconds) is
    remembered in the cache directory under the compiler's identity (resolved
    path, size, mtime), so a process whose kernels are all cached runs no
    subprocess at all."""
    global _toolchain, _toolchain_env
    env = os.environ.get("CC")
    if _toolchain is not None and _toolchain_env == env:
        return _toolchain
    with _toolchain_lock:  # (worker threads look it up too: one probe, published when found)
        if _toolchain is None or _toolchain_env != env:
            found = _probe_toolchain(env)
            _toolchain_env, _toolchain = env, found
        return _toolchain


def _probe_toolchain(env):
    """The toolchain of CC value 'env' (the remembered probe, else a new one), or False."""
    found = False
    if env:
        import shlex
    candidates = [shlex.split(env)] if env else [["cc"], ["gcc"], ["clang"]]
    for argv in candidates:
        ident = argv and _compiler_identity(argv)
        if not ident:
            continue
        tfile = _toolchain_file(ident)
        try:
            with open(tfile, "rb") as f:
                saved = marshal.loads(f.read())
            if saved["ident"] == ident:
                found = (argv, saved["version"], saved["flags"], saved["loop_flags"])
                break
        except (OSError, ValueError, KeyError, TypeError, EOFError):
            pass
        probed = _probe(argv)
        if probed is None:
            continue
        found = (argv, probed[0], probed[1], probed[2])
        try:
            import tempfile
            os.makedirs(os.path.dirname(tfile), exist_ok=True)
            fd, tmp = tempfile.mkstemp(suffix=".bin", prefix=".fj_tmp_", dir=os.path.dirname(tfile))
            with os.fdopen(fd, "wb") as f:
                f.write(marshal.dumps({"ident": ident, "version": probed[0], "flags": probed[1],
                                       "loop_flags": probed[2]}))
            os.replace(tmp, tfile)
        except OSError:
            pass
        break
    return found


def _accepts(argv, flags):
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory(prefix="framejit-cc-") as d:
        src = os.path.join(d, "t.c")
        with open(src, "w") as f:
            f.write("int fj_probe(void) { return 0; }\n")
        try:
            r = subprocess.run(argv + flags + ["-c", src, "-o", os.path.join(d, "t.o")],
                               capture_output=True, timeout=120)
        except (OSError, subprocess.SubprocessError):
            return False
        return r.returncode == 0


def _count(key, n=1):
    """counters["native"][key] += n; made while a frame compiles on this
    thread, also noted for that compile's frame record (the structured
    trace, tracefile.note_native): not another thread's compile nor a
    background build."""
    _all_counters["native"][key] += n
    if config.trace_dir:
        tracefile.note_native(key, n)


def _warn_no_compiler():
    global _warned_no_cc
    _count("no_compiler")
    if not _warned_no_cc:
        _warned_no_cc = True
        cc = os.environ.get("CC") or "cc"
        warnings.warn(f"framejit native backend: no working C compiler found (CC={cc!r}); "
                      "graphs run with the eager backend instead", RuntimeWarning, stacklevel=2)


def cached_path(source, argv, flags, libs=(), version=""):
    """Where compile_cached keeps the shared object of these arguments."""
    key = _hash("\0".join([source, " ".join(flags), " ".join(argv), version, _machine_id()] +
                           list(libs)).encode()).hexdigest()
    return os.path.join(cache_dir(), f"fj_{key[:40]}.so")


_processes = set()      # compilers running (stopped at exit: _stop_background)
_processes_lock = threading.Lock()


#: a compiler running longer than this many seconds says so (the logger
#: "framejit": a warning when the program waits for it, info from a background
#: build), then every PROGRESS_EVERY seconds
PROGRESS_AFTER = 1.0
PROGRESS_EVERY = 10.0


def _communicate(pr, what, nbytes, background):
    """pr.communicate(), saying so while the compiler runs long."""
    import subprocess
    t0, wait, said = time.monotonic(), PROGRESS_AFTER, False
    while True:
        try:
            return pr.communicate(timeout=wait)
        except subprocess.TimeoutExpired:
            import logging
            text = (f"{what}: the C compiler has run {time.monotonic() - t0:.1f} s on "
                    f"{nbytes / 1024:.0f} KB of generated C")
            if background:
                text += " (in the background: calls run eagerly meanwhile)"
            elif not said:
                text += (" (this call waits for it: framejit.config.native_background = True "
                         "runs first calls eagerly meanwhile)")
            log = logging.getLogger("framejit")
            (log.info if background or said else log.warning)("%s", text)
            said, wait = True, PROGRESS_EVERY


def compile_cached(source, argv, flags, suffix, what, libs=(), version="", background=False):
    """The path of the shared object 'argv + flags' builds from 'source' (a
    'suffix' file: ".c" or ".cpp"), linked with 'libs', in cache_dir(); from
    the cache when it is there (keyed by all of these, the compiler's
    'version' text and the machine).  Returns (path, compiled).  Raises
    RuntimeError naming 'what' when the compiler fails or cannot run.  A
    compiler that runs longer than PROGRESS_AFTER seconds is logged
    ('background': a build no call waits for)."""
    path = cached_path(source, argv, flags, libs, version)
    d = os.path.dirname(path)
    key = os.path.basename(path)[3:-3]
    if os.path.exists(path):
        return path, False
    import subprocess
    import tempfile
    try:
        os.makedirs(d, exist_ok=True)
    except OSError:
        d = tempfile.mkdtemp(prefix="framejit-kernels-")
        path = os.path.join(d, f"fj_{key[:40]}.so")
    fd, tmp_src = tempfile.mkstemp(suffix=suffix, prefix=".fj_tmp_", dir=d)
    tmp_so = tmp_src[:-len(suffix)] + ".so"
    try:
        with os.fdopen(fd, "w") as f:
            f.write(source)
        if _stopping:
            raise _Stopped(what)
        try:
            # its own process group: stopped with cc1 and as (_kill), whose
            # pipes would otherwise keep communicate() waiting
            pr = subprocess.Popen(argv + flags + [tmp_src, "-o", tmp_so] + list(libs),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  start_new_session=True)
        except OSError as e:
            raise RuntimeError(f"{what}: the compiler ({' '.join(argv)}) cannot run: {e}") from None
        with _processes_lock:
            _processes.add(pr)
        try:
            if _stopping:  # (the exit's sweep may have run before this compiler was registered)
                _kill(pr)
            out, err = _communicate(pr, what, len(source), background)
        except BaseException:
            _kill(pr)  # an interrupt (Ctrl-C) while a blocking build waits: no orphan compiler
            pr.wait()
            raise
        finally:
            with _processes_lock:
                _processes.discard(pr)
        if _stopping:
            raise _Stopped(what)
        if pr.returncode != 0:
            raise RuntimeError(f"{what}: the compiler failed ({' '.join(argv)}):\n"
                               f"{(err or out)[-4000:]}")
        os.replace(tmp_so, path)  # atomic: other processes see a whole file or none
        try:
            os.replace(tmp_src, path[:-3] + suffix)  # kept next to it, for reading
        except OSError:
            pass
    finally:
        for t in (tmp_src, tmp_so):
            try:
                os.unlink(t)
            except OSError:
                pass
    return path, True


def build(source, toolchain, background=False):
    """The path of the shared object built from 'source' (from the cache when
    it is there); the structured trace gets a "kernel" record."""
    argv, version, flags, loop_flags = toolchain
    if "\n#define FJL_AMAX " in source:
        flags = flags + loop_flags
    t0 = time.monotonic()
    path, compiled = compile_cached(source, argv, flags, ".c", "framejit native",
                                    version=version, background=background)
    _count("kernels_compiled" if compiled else "kernels_loaded_from_cache")
    if config.trace_dir:
        tracefile.emit({"kind": "kernel", "compile_id": None, "path": path, "compiled": bool(compiled),
                        "seconds": round(time.monotonic() - t0, 6), "background": bool(background),
                        "source_bytes": len(source)})
    return path


def backend(graph, example_inputs):
    """The native backend: a NativePlan running fused kernels, or the graph itself (eager).

    A failure to plan, build or load the kernels (a bug of this backend, or a
    compiler that rejects the generated C) runs that graph with the eager
    backend: a RuntimeWarning once per process, the reason in the
    ``framejit`` log, counters["native"]["backend_failures"].  With
    ``framejit.config.raise_internal_errors`` (the test suite) it raises."""
    background = config.native_background and _toolchain is not False
    toolchain = None
    if not background:
        toolchain = _find_toolchain()
        if not toolchain:
            _warn_no_compiler()
            return graph
    try:
        return _plan(graph, toolchain)
    except Exception as e:  # noqa: BLE001 - any failure here must not fail the user's call
        if config.raise_internal_errors:
            raise
        _backend_failed(e)
        return graph


_warned_failure = False


def _backend_failed(exc):
    global _warned_failure
    import logging
    _count("backend_failures")
    text = f"{type(exc).__name__}: {exc}"
    logging.getLogger("framejit").warning("native backend failed on a graph, which runs eager: %s", text)
    if not _warned_failure:
        _warned_failure = True
        warnings.warn(f"framejit native backend failed on a graph, which runs with the eager backend "
                      f"(later failures are counted in framejit.counters['native']['backend_failures'] "
                      f"and logged): {text[:500]}", RuntimeWarning, stacklevel=3)


_vmath = None  # the text of _vmath.h, read once (config.native_exact False)


def _vmath_text():
    global _vmath
    if _vmath is None:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_vmath.h")) as f:
            _vmath = f.read()
    return _vmath


def _numpy_runs_avx512():
    """Whether NumPy runs its AVX-512 loops (SVML for tan, power, cbrt ...) on this
    CPU: its runtime dispatch has AVX-512 (NumPy 2.4 names the level X86_V4,
    earlier ones AVX512_SKX; NPY_DISABLE_CPU_FEATURES turns it off) on Linux
    x86-64, the only builds NumPy links SVML into.  Where it does, the functions
    those loops run faster than framejit/_vmath.h's stay NumPy's loops in the
    kernels (native.c numpy_avx512_faster)."""
    import platform
    if not sys.platform.startswith("linux") or platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:
        try:
            from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__
        except ImportError:
            return False
    return any(__cpu_features__.get(k) and k in __cpu_dispatch__ for k in ("X86_V4", "AVX512_SKX"))


# asked once, at the first graph (not at import: framejit imports no NumPy a
# program has not imported, tests/test_dormant.py); tests set it False to measure
# _vmath.h's functions on any CPU
NUMPY_AVX512 = None


def _plan(graph, toolchain):
    _count("graphs")
    global NUMPY_AVX512
    exact = bool(config.native_exact)
    if NUMPY_AVX512 is None:
        NUMPY_AVX512 = _numpy_runs_avx512()
    _C.native_config(exact=exact, vmath=None if exact else _vmath_text(), numpy_avx512=NUMPY_AVX512)
    if toolchain is None:
        # tiered: the plan runs the graph with the eager runner until a thread
        # has partitioned it, found the compiler, built (or found in the disk
        # cache) and loaded the kernels (docs/native.md, "Tiered compilation")
        plan = _C.native_plan_deferred(graph)
        _start_background(plan)
        return plan
    plan, source = _C.native_plan(graph)
    if plan is None:
        _count("graphs_unfused")
        return graph
    groups = plan.groups
    _count("groups", len(groups))
    _count("nodes_fused", sum(len(g) for g in groups))
    _load_built(plan, source, toolchain)
    return plan


def _load_built(plan, source, toolchain, background=False):
    path = build(source, toolchain, background)
    try:
        plan._load(path)
    except OSError:
        # a damaged cache file: build it again once
        try:
            os.unlink(path)
        except OSError:
            pass
        plan._load(build(source, toolchain, background))


# ---- tiered compilation -------------------------------------------------------

_pending = {}           # builds under way: their 'done' lock (released when done) -> plan
_once = weakref.WeakSet()  # deferred plans not submitted yet: built after their second call, or by wait()
_pending_lock = threading.Lock()
_atexit_set = False
_stopping = False       # the interpreter is exiting: no build starts any more
_jobs = None            # SimpleQueue of builds for the worker threads
_nworkers = 0           # worker threads running (they exit when idle: _worker)
_WORKERS = 2            # compilers at once


class _Stopped(RuntimeError):
    """A build given up because the interpreter is exiting."""


def _start_background(plan):
    # the build starts when the graph's second call has run: a graph run once
    # (setup code, a whole program's one-shot frames) never pays a compiler,
    # and the worker thread's start (0.05-0.15 ms, a first call's 5-15%) and
    # its Python work, which holds the GIL, stay out of both calls; the plan
    # counts its calls itself (no Python runs in its first)
    with _pending_lock:
        _once.add(plan)
    plan._after_calls(2, _ran_twice)


def _ran_twice(plan):
    if _claim(plan):
        _submit(plan)


def _claim(plan):
    """True for the one caller that takes 'plan' out of the plans not submitted yet."""
    with _pending_lock:
        if plan in _once:
            _once.discard(plan)
            return True
        return False


def _submit(plan, done=None):
    """Queues the build of 'plan' (called by the plan after its first call)."""
    global _atexit_set, _jobs, _nworkers
    if done is None:
        _count("background_compiles")
        done = _thread.allocate_lock()  # held until the build is over (wait())
        done.acquire()
    with _pending_lock:
        _pending[done] = plan
        if not _atexit_set:
            import atexit
            atexit.register(_stop_background)
            _atexit_set = True
        if _jobs is None:
            _jobs = _SimpleQueue()
        _jobs.put((plan, done))
        # workers start with the first build of a burst and exit when idle, so
        # a process forks without threads unless a build is under way (Python
        # 3.12 warns about fork() in a process with threads); bare threads:
        # threading.Thread.start waits until the new thread runs
        if _nworkers < _WORKERS:
            _nworkers += 1
            _thread.start_new_thread(_worker, (_jobs,))


def _worker(jobs):
    global _nworkers
    while True:
        try:
            job = jobs.get(True, 1.0)
        except _QueueEmpty:
            with _pending_lock:
                if jobs.empty():
                    _nworkers -= 1
                    return
            continue
        try:
            _background(*job)
        except BaseException:  # noqa: BLE001 - (_background reports its errors) the worker stays
            pass
        del job  # (the plan is not kept alive by an idle worker)


def _after_fork():
    """In a child: no worker thread exists; the builds the parent had under
    way are submitted again (new workers, new locks: a lock a parent's worker
    held at the fork stays held in the child, by no one -- the compiler lookup's
    did, and the child's build waited on it for good)."""
    global _jobs, _nworkers, _pending_lock, _processes_lock, _pending, _processes, _toolchain_lock
    pending = list(_pending.items())
    _jobs = None
    _nworkers = 0
    _pending = {}
    _processes = set()
    _pending_lock = threading.Lock()
    _processes_lock = threading.Lock()
    _toolchain_lock = threading.Lock()  # (a lookup under way in the parent: the child does its own)
    for done, plan in pending:
        _submit(plan, done)


os.register_at_fork(after_in_child=_after_fork)


def _background(plan, done):
    try:
        if _stopping:
            return
        if plan.loaded:
            return  # (built before a fork, loaded in this child too)
        if plan.partitioned:  # (before a fork: this is the child)
            source = plan.source
            if source is None:
                return
        else:
            source = plan._partition()
            if source is None:
                _count("graphs_unfused")  # the plan keeps running eager
                return
            groups = plan.groups
            _count("groups", len(groups))
            _count("nodes_fused", sum(len(g) for g in groups))
        toolchain = _find_toolchain()
        if not toolchain:
            _warn_no_compiler()  # the plan keeps running eager
            return
        _load_built(plan, source, toolchain, background=True)
    except Exception as e:  # noqa: BLE001 - the plan keeps running eager; reported once
        if not _stopping:
            _backend_failed(e)
    finally:
        with _pending_lock:
            _pending.pop(done, None)
        done.release()


def wait(timeout=None):
    """Waits until the kernels being built in the background
    (``config.native_background``) are loaded; True when none is left (False
    when 'timeout' seconds passed first).  Graphs called once, whose builds
    would start at their second call, are built now."""
    with _pending_lock:  # (other threads' plans add to it and claim from it)
        once = [p for p in _once if p.eager_runs >= 1]  # (a plan never called is never built)
    for plan in once:
        if _claim(plan):  # (its second call then finds it claimed)
            _submit(plan)
    del once
    end = None if timeout is None else time.monotonic() + timeout
    while True:
        with _pending_lock:
            locks = list(_pending)
        if not locks:
            return True
        for lk in locks:
            left = -1 if end is None else max(0.0, end - time.monotonic())
            if lk.acquire(True, left):
                lk.release()
            if end is not None and time.monotonic() >= end:
                with _pending_lock:
                    return not _pending


def _stop_background():
    """At exit: no build starts any more; compilers still running are killed
    with their process group (cc1, as), their threads remove their temporary
    files (waited for up to 2 s each); queued builds are dropped."""
    global _stopping
    _stopping = True
    with _processes_lock:
        procs = list(_processes)
    for pr in procs:
        _kill(pr)
    with _pending_lock:
        locks = list(_pending)
    for lk in locks:
        if lk.acquire(True, 2.0):
            lk.release()


def _kill(pr):
    import signal
    try:
        os.killpg(pr.pid, signal.SIGKILL)
    except OSError:
        try:
            pr.kill()
        except OSError:
            pass