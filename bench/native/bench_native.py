"""The native backend against NumPy, numexpr, Numba and torch.compile (issue #8).

Kernels (the same function in each system; inputs a, b, c of one dtype, 1-D):

    c3    (a*b + c)*0.5                                        3 ops
    c5    maximum((a*b + c)*0.5 - a, 0)                        5 ops
    c7    sqrt(maximum((a*b + c)*0.5 - a, 0)) + c              7 ops
    c10   t = c7; where(t > 1, t, b)*2                         10 ops
    rsum  sum(maximum((a*b + c)*0.5 - a, 0))                   5 ops + sum
    rmax  max(a*b + c)                                         2 ops + max

at 1e3 .. 1e8 elements (--quick stops at 1e7), float32 and float64.

Columns, each timed warm (compiles excluded), best of rounds, variants
interleaved within a round, all in one process per thread mode:

    NumPy        the plain function
    numexpr      ne.evaluate of the same expression (one call)
    Numba        @njit loop over prange (serial loop when parallel=False);
                 reductions with fastmath=True (reassociated, so they vectorize)
    Numba, no fastmath   the reductions only, fastmath=False: an IEEE loop in
                 one order (NumPy's and the native backend's sums keep NumPy's
                 pairwise order bit for bit)
    Numba again (A/A)    the target's Numba function (the elementwise loop,
                 or the reduction without fastmath) timed a second time as
                 its own column: identical work, so its ratio to the first
                 is the run's timing noise.  The 90th percentile of
                 |ratio - 1| over a mode's cells is the noise band; a native
                 cell below its peer by less than the band is reported as
                 "at" the peer (the run cannot tell it from equal), and the
                 strict count (faster or equal) is printed beside it; a run
                 whose band exceeds 5% shows nothing for such cells.  Runs
                 with per-round times (session 5 on) decide each cell below
                 1.00x by a paired sign test over its rounds instead: native
                 is "slower" when it lost so many of the back-to-back rounds
                 that equal speed would do so with p < 0.05.  With
                 --procs K (K >= 5) each mode runs in K processes and the
                 test is across them instead (see merge_procs: a process's
                 memory placement biases all its rounds alike), each process
                 voting with the median of its paired rounds; then every cell of
                 the mode is tested (not only those below 1.00x by their best
                 round) and the p-values are Holm-adjusted over the cells
                 (24 cells at parity would otherwise give about even odds of
                 one "slower" by chance); K >= 9 gives the test power there
    torch        torch.compile(default backend = inductor) of the same function
                 in torch ops, on torch.from_numpy inputs
    torch.compile (NumPy fn)   torch.compile (inductor) of the NumPy function
                 itself, called with the ndarrays (TorchDynamo traces NumPy
                 code into torch ops and returns ndarrays)
    fj eager     framejit.compile(f, backend="eager")
    fj native    framejit.compile(f, backend="native")

Thread modes, each in its own child process (thread pools read the
environment at import):  "one" sets OMP/MKL/OPENBLAS/NUMEXPR/NUMBA thread
counts to 1, torch.set_num_threads(1), numba.set_num_threads(1) and the
native backend's framejit._C.native_config(threads=1) (and Numba compiles
the serial loop);  "all" uses os.cpu_count() threads everywhere.

Each round times every variant once (reps calls each, back to back, after
one untimed call), in an order shuffled from round to round (seeded, and
per process with --procs): a variant inherits the caches and heap its
predecessor leaves, which the untimed call absorbs and the shuffle spreads.
Reported: time per call, speedup over NumPy (NumPy time / its time: above 1
is faster), and for kernels on >= 1e7 elements the fraction of the measured
STREAM-like triad bandwidth (bench/native/stream.py, same thread count,
measured before and after the mode's run, the better one),
counting inputs read once + outputs written once.  Then the native
backend's compile times: first compile of one graph in a fresh cache
directory, and its reuse from the disk cache in a second process (just the
backend call on a captured graph).  Then the issue's targets, MET / NOT MET.

Then (unless --no-streaming) streaming stores against ordinary stores: the
same native-compiled c3 and c7, the setting alternated between rounds in one
process (native_config(stream_min=0) against a threshold nothing reaches),
best of STREAM_ROUNDS, at the run's sizes from 1e5 to 1e7, per thread mode.
And (unless --no-rows, with the one-core mode) rows with an input constant
along them against NumPy, by row length (bench/native/rows.py).

Run: python3 bench/native/bench_native.py [--quick] [--modes one,all]
     [--sizes 1e3,1e6] [--kernels c5,rsum] [--dtypes float64] [--no-torch]
     [--no-streaming] [--no-rows] [--procs K] [--json FILE] [--report FILE]
Writes bench/results/native.json (bench/_results.py) after a run (not with
--report, nor when a subset of kernels or modes is asked for: then --json
keeps the figures).
"""
import argparse
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import _results  # noqa: E402

perf = time.perf_counter_ns

KERNELS = ("c3", "c5", "c7", "c10", "rsum", "rmax")
OPS = {"c3": 3, "c5": 5, "c7": 7, "c10": 10, "rsum": 6, "rmax": 3}
REDUCTIONS = ("rsum", "rmax")
SIZES_FULL = (10**3, 10**4, 10**5, 10**6, 10**7, 10**8)
BW_CALLS = 10  # native's calls at 1e8 for the bandwidth figure (the triad: best of 10)
VARIANTS = ("numpy", "numexpr", "numba", "numba_ieee", "numba_aa", "torch", "torch_np", "eager", "native")
LABEL = {"numpy": "NumPy", "numexpr": "numexpr", "numba": "Numba", "numba_ieee": "Numba, no fastmath",
         "numba_aa": "Numba again (A/A)", "torch_np": "torch.compile (NumPy fn)",
         "torch": "torch.compile", "eager": "fj eager", "native": "fj native"}
FUSED = ("numexpr", "numba", "numba_ieee", "torch", "torch_np", "native")

# the native backend's knobs (framejit/native.py, csrc/backends/native/native.c): threads are
# set with framejit._C.native_config(threads=N) (default: the cpu count, at
# most 8), the kernel cache directory with this variable
NATIVE_CACHE_ENV = "FRAMEJIT_CACHE_DIR"

TARGET_SPEEDUP_C5 = 2.0
TARGET_BW = 0.80
TARGET_FIRST_COMPILE_MS = 300.0
TARGET_DISK_REUSE_MS = 1.0
# the A/A noise band decides "at" only when the run was this quiet: a
# noisier run shows nothing either way for cells below 1.00x
MAX_TIE_BAND = 0.05
# streaming stores against ordinary ones: these kernels, sizes in this range
STREAM_KERNELS = ("c3", "c7")
STREAM_SIZES = (10**5, 10**6, 10**7)
STREAM_ROUNDS = 15


# ------------------------------------------------------------------ kernels

def np_kernels():
    import numpy as np

    def c3(a, b, c):
        return (a * b + c) * 0.5

    def c5(a, b, c):
        return np.maximum((a * b + c) * 0.5 - a, 0.0)

    def c7(a, b, c):
        return np.sqrt(np.maximum((a * b + c) * 0.5 - a, 0.0)) + c

    def c10(a, b, c):
        t = np.sqrt(np.maximum((a * b + c) * 0.5 - a, 0.0)) + c
        return np.where(t > 1.0, t, b) * 2.0

    def rsum(a, b, c):
        return np.sum(np.maximum((a * b + c) * 0.5 - a, 0.0))

    def rmax(a, b, c):
        return np.max(a * b + c)

    return {"c3": c3, "c5": c5, "c7": c7, "c10": c10, "rsum": rsum, "rmax": rmax}


def ne_expressions(dtype):
    """numexpr source per kernel; constants are passed typed (h, z, one, two)
    so float32 stays float32.  numexpr's maximum() computes float32 in
    float64, so float32 uses where(x > z, x, z) (numexpr merges the repeated
    subtree)."""
    def max0(x):
        return f"maximum({x}, z)" if dtype == "float64" else f"where({x} > z, {x}, z)"
    inner = "(a*b + c)*h - a"
    t7 = f"sqrt({max0(inner)}) + c"
    return {"c3": "(a*b + c)*h",
            "c5": max0(inner),
            "c7": t7,
            "c10": f"where(({t7}) > one, {t7}, b)*two",
            "rsum": f"sum({max0(inner)})",
            "rmax": "max(a*b + c)"}


def numba_kernels(np_dtype, parallel, fastmath=True):
    """@njit loops; constants closed over as np_dtype scalars (typed as such).
    fastmath=False: the reductions without reassociation (the "Numba, no
    fastmath" column, reductions only: an IEEE loop in one order, as NumPy's
    and the native backend's sums are)."""
    import numpy as np
    from numba import njit, prange

    H, Z, ONE, TWO = np_dtype(0.5), np_dtype(0.0), np_dtype(1.0), np_dtype(2.0)
    NEG_INF = np_dtype(-np.inf)
    jit = njit(parallel=parallel)
    # reductions: allow reassociation so the serial loop can vectorize
    # (NumPy's pairwise sum reassociates too); accumulate in float64
    rjit = njit(parallel=parallel, fastmath=fastmath)

    @jit
    def c3(a, b, c):
        out = np.empty_like(a)
        for i in prange(a.shape[0]):
            out[i] = (a[i] * b[i] + c[i]) * H
        return out

    @jit
    def c5(a, b, c):
        out = np.empty_like(a)
        for i in prange(a.shape[0]):
            out[i] = max((a[i] * b[i] + c[i]) * H - a[i], Z)
        return out

    @jit
    def c7(a, b, c):
        out = np.empty_like(a)
        for i in prange(a.shape[0]):
            out[i] = np.sqrt(max((a[i] * b[i] + c[i]) * H - a[i], Z)) + c[i]
        return out

    @jit
    def c10(a, b, c):
        out = np.empty_like(a)
        for i in prange(a.shape[0]):
            t = np.sqrt(max((a[i] * b[i] + c[i]) * H - a[i], Z)) + c[i]
            out[i] = (t if t > ONE else b[i]) * TWO
        return out

    @rjit
    def rsum(a, b, c):
        s = 0.0
        for i in prange(a.shape[0]):
            s += max((a[i] * b[i] + c[i]) * H - a[i], Z)
        return s

    @rjit
    def rmax(a, b, c):
        m = NEG_INF
        for i in prange(a.shape[0]):
            m = max(m, a[i] * b[i] + c[i])
        return m

    return {"c3": c3, "c5": c5, "c7": c7, "c10": c10, "rsum": rsum, "rmax": rmax}


def torch_kernels(torch):
    def c3(a, b, c):
        return (a * b + c) * 0.5

    def c5(a, b, c):
        return torch.clamp_min((a * b + c) * 0.5 - a, 0.0)

    def c7(a, b, c):
        return torch.sqrt(torch.clamp_min((a * b + c) * 0.5 - a, 0.0)) + c

    def c10(a, b, c):
        t = torch.sqrt(torch.clamp_min((a * b + c) * 0.5 - a, 0.0)) + c
        return torch.where(t > 1.0, t, b) * 2.0

    def rsum(a, b, c):
        return torch.sum(torch.clamp_min((a * b + c) * 0.5 - a, 0.0))

    def rmax(a, b, c):
        return torch.max(a * b + c)

    return {"c3": c3, "c5": c5, "c7": c7, "c10": c10, "rsum": rsum, "rmax": rmax}


def bytes_moved(kernel, n, itemsize):
    """Inputs read once + outputs written once."""
    outputs = 0 if kernel in REDUCTIONS else 1
    return (3 + outputs) * n * itemsize


# ------------------------------------------------------------------ child: one thread mode

def thread_env(mode):
    nth = "1" if mode == "one" else str(os.cpu_count() or 1)
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
              "NUMEXPR_NUM_THREADS", "NUMEXPR_MAX_THREADS", "NUMBA_NUM_THREADS"):
        env[k] = nth
    # several thread pools share one process (torch's and Numba's OpenMP,
    # numexpr's, the native backend's) on cores other jobs use too: threads
    # that spin after a parallel region steal the core the next pool needs
    # (measured: Numba and torch.compile 10-100x slower on 2 threads with
    # spinning).  Passive waiting makes each pool yield when idle.
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    env.setdefault("KMP_BLOCKTIME", "0")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def to_np(x):
    import numpy as np
    if hasattr(x, "numpy"):
        x = x.numpy()
    return np.asarray(x)


def close(kernel, dtype, got, want):
    """(ok, max relative error) of a variant's result against NumPy's."""
    import numpy as np
    got = to_np(got).astype(np.float64)
    want = np.asarray(want).astype(np.float64)
    if got.shape != want.shape:
        return False, float("inf")
    if kernel in REDUCTIONS:
        rtol = 1e-3 if dtype == "float32" else 1e-9
    else:
        rtol = 2e-6 if dtype == "float32" else 1e-12
    denom = np.maximum(np.abs(want), 1e-30)
    err = float(np.max(np.abs(got - want) / denom)) if want.size else 0.0
    return bool(err <= rtol or np.allclose(got, want, rtol=rtol, atol=rtol)), err


def run_mode(args):
    """Time every variant for every (kernel, dtype, size); JSON to args.out."""
    import numpy as np
    import numexpr as ne
    mode = args.mode
    nth = 1 if mode == "one" else (os.cpu_count() or 1)
    notes = []
    ne.set_num_threads(nth)

    have = {"numpy": True, "numexpr": True, "eager": True}
    try:
        import numba
        numba.set_num_threads(nth)
        have["numba"] = have["numba_ieee"] = have["numba_aa"] = True
    except Exception as e:  # noqa: BLE001 - any import failure skips the column
        have["numba"] = have["numba_ieee"] = have["numba_aa"] = False
        notes.append(f"Numba unavailable: {e!r}")
    torch = None
    if not args.no_torch:
        try:
            import torch
            torch.set_num_threads(nth)
            have["torch"] = have["torch_np"] = True
        except Exception as e:  # noqa: BLE001
            notes.append(f"torch unavailable: {e!r}")
    have.setdefault("torch", False)
    have.setdefault("torch_np", False)

    import framejit
    from framejit import backends
    try:
        backends.lookup("native")
        have["native"] = True
        threads, thread_min = framejit._C.native_config(threads=nth)[:2]
        notes.append(f"native backend: threads={threads}, thread_min={thread_min} elements")
    except ValueError as e:
        have["native"] = False
        notes.append(f"native backend unavailable: {e}")

    npk = np_kernels()
    tk = torch_kernels(torch) if have["torch"] else {}
    tcomp = {k: torch.compile(f) for k, f in tk.items()} if have["torch"] else {}
    # the NumPy functions themselves (fresh function objects: torch.compile
    # and framejit each hook their own)
    tcomp_np = {k: torch.compile(f) for k, f in np_kernels().items()} if have["torch"] else {}
    fj_eager = {k: framejit.compile(f, backend="eager") for k, f in npk.items()}
    fj_native = {k: framejit.compile(f, backend="native") for k, f in npk.items()} if have["native"] else {}

    results = []
    for dtype in args.dtypes:
        npdt = np.dtype(dtype).type
        nbk = numba_kernels(npdt, parallel=(mode == "all")) if have["numba"] else {}
        nbk_ieee = numba_kernels(npdt, parallel=(mode == "all"), fastmath=False) if have["numba"] else {}
        exprs = ne_expressions(dtype)
        consts = {"h": npdt(0.5), "z": npdt(0.0), "one": npdt(1.0), "two": npdt(2.0)}
        for n in args.sizes:
            rng = np.random.default_rng(n)
            a, b, c = (rng.random(n, dtype=np.float64).astype(dtype) * 2 for _ in range(3))
            ta, tb, tc = ((torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(c))
                          if have["torch"] else (None, None, None))
            ne_vars = dict(consts, a=a, b=b, c=c)
            for kernel in args.kernels:
                expr = exprs[kernel]
                calls = {"numpy": (lambda f=npk[kernel]: f(a, b, c)),
                         "numexpr": (lambda e=expr: ne.evaluate(e, local_dict=ne_vars)),
                         "eager": (lambda f=fj_eager[kernel]: f(a, b, c))}
                if have["numba"]:
                    calls["numba"] = lambda f=nbk[kernel]: f(a, b, c)
                    if kernel in REDUCTIONS:
                        calls["numba_ieee"] = lambda f=nbk_ieee[kernel]: f(a, b, c)
                    # the A/A control: the target's Numba function timed again
                    # as its own column; its spread from the first is the noise
                    calls["numba_aa"] = (lambda f=(nbk_ieee if kernel in REDUCTIONS else nbk)[kernel]:
                                         f(a, b, c))
                if have["torch"]:
                    calls["torch"] = lambda f=tcomp[kernel]: f(ta, tb, tc)
                    calls["torch_np"] = lambda f=tcomp_np[kernel]: f(a, b, c)
                if have["native"]:
                    calls["native"] = lambda f=fj_native[kernel]: f(a, b, c)
                row = time_row(kernel, dtype, n, calls, args)
                row.update(kernel=kernel, dtype=dtype, n=n, mode=mode)
                results.append(row)
                print_row(row, flush=True)
            del a, b, c, ta, tb, tc, ne_vars
    with open(args.out, "w") as fh:
        json.dump({"mode": mode, "threads": nth, "have": have, "notes": notes,
                   "results": results}, fh)
    return 0


def run_stream_ab(args):
    """Streaming stores against ordinary stores for the native backend, the
    setting alternated between rounds in this process; JSON to args.out."""
    import numpy as np
    import framejit
    mode = args.mode.split(":", 1)[1]
    nth = 1 if mode == "one" else (os.cpu_count() or 1)
    cfg = framejit._C.native_config(threads=nth)
    rows = []
    if cfg[3] >= 0:
        settings = {"ordinary": sys.maxsize, "streamed": 0}
        npk = np_kernels()
        for kernel in STREAM_KERNELS:
            f = framejit.compile(npk[kernel], backend="native")
            for dtype in args.dtypes:
                for n in [s for s in args.sizes if STREAM_SIZES[0] <= s <= STREAM_SIZES[-1]]:
                    rng = np.random.default_rng(n)
                    a, b, c = (rng.random(n).astype(dtype) * 2 for _ in range(3))
                    f(a, b, c)
                    f(a, b, c)
                    t0 = perf()
                    f(a, b, c)
                    reps = max(1, min(2000, int(10e6 / max(perf() - t0, 1))))
                    best = {k: math.inf for k in settings}
                    for i in range(STREAM_ROUNDS):
                        for name in (("ordinary", "streamed") if i % 2 == 0 else ("streamed", "ordinary")):
                            framejit._C.native_config(stream_min=settings[name])
                            f(a, b, c)
                            t0 = perf()
                            for _ in range(reps):
                                f(a, b, c)
                            best[name] = min(best[name], (perf() - t0) / reps)
                    framejit._C.native_config(stream_min=cfg[3])
                    rows.append({"kernel": kernel, "dtype": dtype, "n": n, "mode": mode,
                                 "ordinary_ns": best["ordinary"], "streamed_ns": best["streamed"],
                                 "ratio": best["ordinary"] / best["streamed"]})
                    print(f"  streaming {mode}: {kernel} {dtype} {n:.0e}: ordinary "
                          f"{fmt_time(best['ordinary'])}, streamed {fmt_time(best['streamed'])}, "
                          f"ordinary / streamed {rows[-1]['ratio']:.2f}", flush=True)
    with open(args.out, "w") as fh:
        json.dump({"mode": mode, "available": cfg[3] >= 0, "default_stream_min": cfg[3],
                   "rows": rows}, fh)
    return 0


def time_row(kernel, dtype, n, calls, args):
    """Warm each variant (twice: compile, then the recompile to dynamic shapes
    settles), check it against NumPy, then time best-of-rounds interleaved."""
    want = calls["numpy"]()
    errors = {}
    live = {}
    for name, fn in calls.items():
        try:
            got = fn()
            got = fn()
        except Exception as e:  # noqa: BLE001 - a failing variant is reported, not fatal
            errors[name] = f"raised {type(e).__name__}: {str(e)[:200]}"
            continue
        ok, err = close(kernel, dtype, got, want)
        if not ok:
            errors[name] = f"wrong result (max rel err {err:.3g})"
        live[name] = fn
        del got
    del want
    # calls per round: about args.round_ms of NumPy time
    t0 = perf()
    calls["numpy"]()
    one = max(perf() - t0, 1)
    reps = max(1, min(20000, int(args.round_ms * 1e6 / one)))
    rounds = args.rounds if n < 10**8 else max(2, args.rounds // 2)
    best = {k: math.inf for k in live}
    per_round = {k: [] for k in live}
    r = range(reps)
    order = list(live.items())
    for i in range(rounds):
        # each round in its own random order (seeded; per process with --procs):
        # a variant inherits the caches and heap state its predecessor leaves
        # (NumPy's and eager's temporaries), so no variant may always follow
        # the same one.  Rotating the start (session 5) did not do that: a
        # rotation keeps every variant's predecessor, and the A/A pair read
        # 0.70-0.95 at 1e6
        random.Random(7919 * i + 104729 * args.seed + 17).shuffle(order)
        for name, fn in order:
            # and one untimed call first: it takes the heap state and the page
            # faults the predecessor left (after NumPy's or eager's temporaries
            # the next variant's calls were 10-25% slower at 1e6), so the timed
            # calls follow the variant's own
            fn()
            t0 = perf()
            for _ in r:
                fn()
            t = (perf() - t0) / reps
            per_round[name].append(t)
            best[name] = min(best[name], t)
    out = {"ns": best, "rounds_ns": per_round, "errors": errors, "reps": reps, "rounds": rounds}
    if n >= 10**8 and "native" in live:
        # the bandwidth figure: native's best of BW_CALLS calls, as the triad
        # it is compared with is its best of 10 passes (stream.py).  The
        # rounds above give 1e8 two single calls per variant, and one call
        # here moves by up to a third between calls (15-23 GB/s, two threads,
        # the same kernel and process, session 7): best of two compared with
        # best of ten read 68-104% for one cell in two runs
        fn = live["native"]
        fn()
        ts = []
        for _ in range(BW_CALLS):
            t0 = perf()
            fn()
            ts.append(perf() - t0)
        out["bw_ns"] = {"native": min(ts)}
    return out


def fmt_time(ns):
    if ns is None or ns == math.inf:
        return "-"
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.1f} µs"
    if ns < 1e9:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e9:.2f} s"


def print_row(row, flush=False):
    ns = row["ns"]
    base = ns.get("numpy")
    cells = []
    for v in VARIANTS[1:]:
        if v in row["errors"] and v not in ns:
            cells.append("ERR")
        elif v in ns:
            cells.append(f"{base / ns[v]:.2f}x" + ("!" if v in row["errors"] else ""))
        else:
            cells.append("-")
    print(f"| {row['kernel']} | {row['dtype']} | {row['n']:.0e} | {fmt_time(base)} | " + " | ".join(cells)
          + " |", flush=flush)
    for v, msg in row["errors"].items():
        print(f"    ! {LABEL[v]} {row['kernel']} {row['dtype']} n={row['n']}: {msg}", flush=flush)


# ------------------------------------------------------------------ compile-time probe

PROBE = r"""
import os, sys, time, json
import numpy as np
sys.path.insert(0, {root!r})
import framejit
from framejit import backends
captured = []
def grab(graph, example_inputs):
    captured.append((graph, list(example_inputs)))
    return graph
def warm(a, b, c):
    return (a - b) * c + 1.0
def {name}(a, b, c):
{body}
x = np.full({n}, 1.5, dtype=np.{dtype})
framejit.compile(warm, backend=grab)(x, x, x)
framejit.compile({name}, backend=grab)(x, x, x)
native = backends.lookup("native")
res = {{}}
for label, (graph, ex) in zip(("warm", "kernel"), captured):
    t0 = time.perf_counter_ns()
    fn = native(graph, ex)
    res[label] = time.perf_counter_ns() - t0
ref = {name}(x, x, x)
out = fn(*ex)
got = out[0] if isinstance(out, (tuple, list)) else out
res["ok"] = bool(np.array_equal(np.asarray(got), np.asarray(ref)))
res["counters"] = dict(framejit.counters["native"])
print(json.dumps(res))
"""

PROBE_BODIES = {
    "c5": "    return np.maximum((a * b + c) * 0.5 - a, 0.0)",
    "c10": "    t = np.sqrt(np.maximum((a * b + c) * 0.5 - a, 0.0)) + c\n"
           "    return np.where(t > 1.0, t, b) * 2.0",
    "rsum": "    return np.sum(np.maximum((a * b + c) * 0.5 - a, 0.0))",
}


def compile_times(repeats=3):
    """The native backend's call on one captured graph, timed in two fresh
    processes sharing a fresh cache directory: the first compiles, the
    second loads from the disk cache.  Each process first calls the backend
    on a small other graph ("warm": finding the C compiler, once per
    process, is timed there), then on the kernel's graph (timed alone).
    {kernel: {'first_ms', 'reuse_ms', 'first_proc_ms', 'reuse_proc_ms', 'ok'}}"""
    out = {}
    for kernel, body in PROBE_BODIES.items():
        src = PROBE.format(root=ROOT, name=kernel, body=body, n=1000, dtype="float64")
        rec = {"first_ms": [], "reuse_ms": [], "first_proc_ms": [], "reuse_proc_ms": [], "ok": True}
        for _ in range(repeats):
            with tempfile.TemporaryDirectory(prefix="fj-native-cache-") as d:
                env = dict(os.environ, **{NATIVE_CACHE_ENV: d})
                # as on a user's machine: modules load from cached bytecode (with
                # PYTHONDONTWRITEBYTECODE, as set on the development machine,
                # every process compiles framejit/native.py again: ~2 ms)
                env.pop("PYTHONDONTWRITEBYTECODE", None)
                env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
                for phase in ("first", "reuse"):
                    p = subprocess.run([sys.executable, "-c", src], env=env, capture_output=True,
                                       text=True, cwd=ROOT)
                    if p.returncode:
                        return {"error": p.stderr.strip().splitlines()[-1] if p.stderr else "failed"}
                    res = json.loads(p.stdout.strip().splitlines()[-1])
                    rec[phase + "_ms"].append(res["kernel"] / 1e6)
                    rec[phase + "_proc_ms"].append(res["warm"] / 1e6)
                    rec["ok"] = rec["ok"] and res["ok"]
                    want = "kernels_compiled" if phase == "first" else "kernels_loaded_from_cache"
                    if res["counters"].get(want, 0) < 2:
                        out.setdefault("notes", []).append(
                            f"{kernel} {phase}: counters {res['counters']} (expected {want} 2)")
        out[kernel] = rec
    return out


# ------------------------------------------------------------------ parent: report

def l3_text():
    """This machine's L3 size as the system reports it (getconf)."""
    try:
        out = subprocess.run(["getconf", "LEVEL3_CACHE_SIZE"], capture_output=True, text=True, timeout=5).stdout
        size = int(out.strip() or 0)
    except (OSError, ValueError, subprocess.SubprocessError):
        size = 0
    return f"{size >> 20} MiB" if size > 0 else "(size unknown)"


def table(mode_res, triad_gbs, fresh_gbs, markdown_title):
    print()
    print(f"### {markdown_title}")
    print()
    print("Speedup over NumPy (NumPy time / time; > 1 is faster), NumPy time per call; "
          "`!` = result differs from NumPy (listed below)")
    print()
    have = mode_res["have"]
    cols = [v for v in VARIANTS[1:] if have.get(v)]
    print("| kernel | dtype | n | NumPy | " + " | ".join(LABEL[v] for v in cols) + " |")
    print("| --- | --- | ---: | ---: | " + " | ".join("---:" for _ in cols) + " |")
    for row in mode_res["results"]:
        ns = row["ns"]
        base = ns["numpy"]
        cells = []
        for v in cols:
            if v in ns:
                cells.append(f"{base / ns[v]:.2f}" + ("!" if v in row["errors"] else ""))
            else:
                cells.append("ERR" if v in row["errors"] else "-")
        print(f"| {row['kernel']} | {row['dtype']} | {row['n']:.0e} | {fmt_time(base)} | "
              + " | ".join(cells) + " |")
    errs = [(row, v, m) for row in mode_res["results"] for v, m in row["errors"].items()]
    for row, v, m in errs:
        print(f"- {LABEL[v]} {row['kernel']} {row['dtype']} n={row['n']:.0e}: {m}")
    big = [row for row in mode_res["results"] if row["n"] >= 10**7]
    if big:
        print()
        print(f"Fraction of the triad bandwidth ({triad_gbs:.1f} GB/s, {mode_res['threads']} "
              "thread(s); the triad's best of 10 passes, fj native's best of "
              f"{BW_CALLS} calls at 1e8, the other columns' best round), inputs read once + "
              "outputs written once.  The triad with its output "
              f"malloc'ed in each pass (as every column here returns a new array) reached "
              f"{fresh_gbs:.1f} GB/s = {100 * fresh_gbs / triad_gbs:.0f}%: the ceiling for "
              "elementwise rows whose output memory the allocator maps anew on each call (the "
              "native backend reuses its large output buffers: docs/native.md, Output buffer "
              f"pool); at 1e7, 3-4 arrays of 40-80 MB partly stay in the {l3_text()} L3 "
              "(reductions there can pass 100%).")
        print()
        cols_bw = ["numpy"] + [v for v in FUSED if have.get(v)]
        print("| kernel | dtype | n | " + " | ".join(LABEL[v] for v in cols_bw) + " |")
        print("| --- | --- | ---: | " + " | ".join("---:" for _ in cols_bw) + " |")
        for row in big:
            nb = bytes_moved(row["kernel"], row["n"], 4 if row["dtype"] == "float32" else 8)
            cells = []
            for v in cols_bw:
                t = bw_time(row, v)
                cells.append(f"{100 * nb / t / triad_gbs:.0f}%" if t else "-")
            print(f"| {row['kernel']} | {row['dtype']} | {row['n']:.0e} | " + " | ".join(cells) + " |")


def bw_time(row, variant):
    """The time a cell's bandwidth figure uses: native's best of BW_CALLS calls
    at 1e8 when measured (time_row), else the variant's best round."""
    return row.get("bw_ns", {}).get(variant) or row["ns"].get(variant)


def merge_procs(runs):
    """One mode's results from several child processes: per cell, each
    variant's best time over all of them, and each process's per-round times
    kept apart ("proc_rounds_ns"), for slower_p.  Why: where the arrays and
    the outputs land in memory is fixed for a process's life and moves a
    memory-bound cell by a few percent, the same way in every round of that
    process (session 5: twelve processes of one 1e5 cell averaged 1.003x,
    each consistently above or below 1 by up to 6-11%), so rounds within one
    process are not independent samples of "is native slower"."""
    merged = runs[0]
    if len(runs) == 1:
        return merged
    for i, row in enumerate(merged["results"]):
        rows = [run["results"][i] for run in runs]
        row["ns"] = {v: min(r["ns"][v] for r in rows if v in r["ns"])
                     for v in row["ns"] if all(v in r["ns"] for r in rows)}
        row["proc_rounds_ns"] = [r.get("rounds_ns", {}) for r in rows]
        bws = [r["bw_ns"]["native"] for r in rows if "native" in r.get("bw_ns", {})]
        if bws:
            row["bw_ns"] = {"native": min(bws)}
        row["errors"] = {v: msg for r in reversed(rows) for v, msg in r.get("errors", {}).items()}
    merged["procs"] = len(runs)
    return merged


def _sign_p(wins, n):
    """P(at most 'wins' wins in n fair coin flips)."""
    return sum(math.comb(n, k) for k in range(wins + 1)) / 2 ** n


def holm(ps):
    """Holm's step-down adjustment of p-values (same order as given): the
    chance that any of the family's true "equal" cells is called slower stays
    at the level used, however many cells are tested."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    adj = [1.0] * len(ps)
    run = 0.0
    for rank, i in enumerate(order):
        run = max(run, min(1.0, (len(ps) - rank) * ps[i]))
        adj[i] = run
    return adj


def slower_p(r, peer_key):
    """With results from several processes (--procs >= 5): the sign test across
    processes, each process's vote being the median over its rounds of native's
    time / the peer's in the same round (native wins the process when <= 1).
    Otherwise the paired sign test over the cell's rounds."""
    procs = r.get("proc_rounds_ns")
    if procs and len(procs) >= 5:
        meds = []
        for rn in procs:
            a, b = rn.get("native"), rn.get(peer_key)
            if not a or not b or len(a) != len(b):
                return None
            meds.append(statistics.median(x / y for x, y in zip(a, b)))
        return _sign_p(sum(m <= 1.0 for m in meds), len(meds))
    return slower_p_rounds(r, peer_key)


def slower_p_rounds(r, peer_key):
    """Paired sign test over a cell's rounds (each round times the variants
    back to back): the probability, were native and the peer equally fast,
    of native winning this few rounds or fewer.  None without per-round
    times (runs before session 5) or with fewer than 5 rounds."""
    a = r.get("rounds_ns", {}).get("native")
    b = r.get("rounds_ns", {}).get(peer_key)
    if not a or not b or len(a) != len(b) or len(a) < 5:
        return None
    return _sign_p(sum(x <= y for x, y in zip(a, b)), len(a))


def noise_band(m):
    """The timing noise of a mode's run, from its A/A control: the same Numba
    function timed as two columns ("numba" or "numba_ieee", and "numba_aa")
    in every cell.  Their ratio would be 1.00 on a quiet machine; the band is
    the 90th percentile of |ratio - 1| over the mode's cells (nearest rank).
    A native cell within the band of its peer is "at" the peer: the run
    cannot tell it from equal.  None when the run has no A/A column."""
    devs = []
    for r in m["results"]:
        ns = r["ns"]
        ref = ns.get("numba_ieee" if r["kernel"] in REDUCTIONS else "numba")
        if ref and ns.get("numba_aa"):
            devs.append(abs(ref / ns["numba_aa"] - 1.0))
    if not devs:
        return None
    devs.sort()
    return devs[min(len(devs) - 1, math.ceil(0.9 * len(devs)) - 1)]


def targets(modes, triads, comp):
    """Print the issue's targets, MET / NOT MET; returns them as
    _results.target records (the line's text as the measured figure)."""
    print()
    print("### Targets")
    print()
    lines = []
    one = modes.get("one")
    if one and one["have"].get("native"):
        rows = [r for r in one["results"] if r["kernel"] == "c5" and r["n"] >= 10**6 and "native" in r["ns"]]
        if rows:
            sp = [r["ns"]["numpy"] / r["ns"]["native"] for r in rows]
            ok = min(sp) >= TARGET_SPEEDUP_C5 and not any("native" in r["errors"] for r in rows)
            lines.append(f"- >= {TARGET_SPEEDUP_C5:g}x NumPy on 5-op chains from 1e6, one core: "
                         f"{min(sp):.2f}x .. {max(sp):.2f}x over {len(rows)} cells: "
                         f"**{'MET' if ok else 'NOT MET'}**")
    for mname, m in modes.items():
        if not m["have"].get("native"):
            continue
        band = noise_band(m)
        if band is not None:
            lines.append(f"- timing noise ({mname}): the A/A control (the same Numba function "
                         f"timed twice per cell) differs from itself by up to {100 * band:.1f}% "
                         f"in 90% of the cells")
        # Numba computing NumPy's results: the elementwise @njit loops (IEEE)
        # and, for the reductions, the same loops without fastmath; the
        # fastmath reductions (reassociated, so not NumPy's sums) are shown
        # for information, not as the target
        for peer in ("numexpr", "numba_same", "numba"):
            key = {"numba_same": "numba_ieee"}.get(peer, peer)
            if not m["have"].get(key):
                continue

            def ref(r):
                if peer == "numba_same" and r["kernel"] not in REDUCTIONS:
                    return r["ns"].get("numba")
                return r["ns"].get(key)
            rows = [r for r in m["results"] if "native" in r["ns"] and ref(r)]
            if not rows:
                continue
            rel = [(ref(r) / r["ns"]["native"], r) for r in rows]
            worse = [(x, r) for x, r in rel if x < 1.0]
            big = [(x, r) for x, r in rel if r["n"] >= 10**6]
            wb = [(x, r) for x, r in big if x < 1.0]
            worst = min(rel, key=lambda t: t[0])
            band = noise_band(m)
            quiet = band is not None and band <= MAX_TIE_BAND

            def peer_key(r):
                return ("numba" if peer == "numba_same" and r["kernel"] not in REDUCTIONS else key)
            tests = [slower_p(r, peer_key(r)) for _, r in worse]
            if worse and all(t is not None for t in tests):
                # per cell: slower only when the paired rounds say so (sign test, p < 0.05)
                under = [(x, r) for (x, r), t in zip(worse, tests) if t < 0.05]
                paired = True
            else:
                under = [(x, r) for x, r in worse if not quiet or x < 1.0 - band]
                paired = False
            label = {"numba_same": "Numba computing NumPy's results (elementwise loops; reductions without fastmath)",
                     "numba": "(information) Numba with fastmath reductions (reassociated: not NumPy's sums)",
                     "numexpr": LABEL["numexpr"]}[peer]
            unit = (f"{m['procs']} processes (median paired round of each)" if m.get("procs", 1) >= 5
                    else "paired rounds")
            multi = m.get("procs", 1) >= 5
            procp = [slower_p(r, peer_key(r)) for _, r in rel] if multi else []
            if peer == "numba":
                verdict = "not a target"
            elif multi and all(t is not None for t in procp):
                # every cell tested (not only those below 1.00x by their best round),
                # the family's error rate held at 5% by Holm's step-down
                adj = holm(procp)
                under = [r for (_, r), a in zip(rel, adj) if a < 0.05]
                lost = [r for (_, r), t in zip(rel, procp) if t <= 0.5 ** m["procs"]]
                verdict = (f"**{'NOT MET' if under else 'MET'}** (each of the {len(rel)} cells tested across "
                           f"{unit}, one-sided sign test, Holm-adjusted over the cells: "
                           + (f"{len(under)} slower: " + ", ".join(f"{r['kernel']} {r['dtype']} {r['n']:.0e}"
                                                                   for r in under)
                              if under else "none slower at 5%")
                           + (f"; native's median lost in every process in: "
                              + ", ".join(f"{r['kernel']} {r['dtype']} {r['n']:.0e}" for r in lost)
                              if lost and not under else "") + ")")
            elif not worse:
                verdict = "**MET**"
            elif not under and paired:
                verdict = (f"**MET** (the {len(worse)} cell(s) below 1.00x by their best round are not "
                           f"slower by their {unit}: sign test p >= 0.05 in each, "
                           f"{', '.join(f'{t:.2f}' for t in tests)}: at, not below)")
            elif not under:
                verdict = (f"**MET** (the {len(worse)} cell(s) below 1.00x are within the A/A "
                           f"noise band, {100 * band:.1f}%: at, not below)")
            elif paired:
                verdict = (f"**NOT MET** ({len(under)} cell(s) slower by their {unit}, sign test "
                           f"p < 0.05: " + ", ".join(f"{r['kernel']} {r['dtype']} {r['n']:.0e}"
                                                      for _, r in under) + ")")
            elif quiet:
                verdict = f"**NOT MET** ({len(under)} cell(s) below the A/A noise band {100 * band:.1f}%)"
            elif band is not None:
                verdict = (f"**NOT SHOWN** (the run is too noisy to tell cells below 1.00x from equal: "
                           f"A/A band {100 * band:.1f}% > {100 * MAX_TIE_BAND:.0f}%)")
            else:
                verdict = "**NOT MET**"
            lines.append(
                f"- at or above {label} ({mname} core{'s' if mname == 'all' else ''}): "
                f"native faster or equal in {len(rel) - len(worse)}/{len(rel)} cells "
                f"({len(big) - len(wb)}/{len(big)} from 1e6); worst {worst[0]:.2f}x "
                f"({worst[1]['kernel']} {worst[1]['dtype']} {worst[1]['n']:.0e}): {verdict}")
    for mname, m in modes.items():
        if not m["have"].get("native"):
            continue
        rows = [r for r in m["results"] if r["n"] >= 10**8 and "native" in r["ns"]]
        label = "1e8"
        if not rows:
            rows = [r for r in m["results"] if r["n"] >= 10**7 and "native" in r["ns"]]
            label = f"1e7 (in the {l3_text()} L3 or not: see notes)"
        if rows:
            fr = [bytes_moved(r["kernel"], r["n"], 4 if r["dtype"] == "float32" else 8)
                  / bw_time(r, "native") / triads[mname] for r in rows]
            lines.append(f"- >= {TARGET_BW:.0%} of triad bandwidth ({mname}, {triads[mname]:.1f} GB/s; "
                         f"with a fresh output {triads[mname + '_fresh']:.1f}) "
                         f"at {label}: {min(fr):.0%} .. {max(fr):.0%}: "
                         f"**{'MET' if min(fr) >= TARGET_BW else 'NOT MET'}**"
                         + ("" if min(fr) >= TARGET_BW else
                            f" (met in {sum(f >= TARGET_BW for f in fr)}/{len(fr)} cells)"))
    if comp and "error" not in comp:
        firsts = [x for k, v in comp.items() if k != "notes" for x in v["first_ms"]]
        reuses = [x for k, v in comp.items() if k != "notes" for x in v["reuse_ms"]]
        lines.append(f"- first compile < {TARGET_FIRST_COMPILE_MS:g} ms: median "
                     f"{statistics.median(firsts):.1f} ms, max {max(firsts):.1f} ms: "
                     f"**{'MET' if max(firsts) < TARGET_FIRST_COMPILE_MS else 'NOT MET'}**")
        lines.append(f"- reuse from the disk cache < {TARGET_DISK_REUSE_MS:g} ms: median "
                     f"{statistics.median(reuses):.3f} ms, max {max(reuses):.3f} ms: "
                     f"**{'MET' if max(reuses) < TARGET_DISK_REUSE_MS else 'NOT MET'}**")
        procs = [x for k, v in comp.items() if k != "notes" for x in v["reuse_proc_ms"]]
        lines.append(f"  (but the first backend call of a process, served from the disk cache, "
                     f"takes {statistics.median(procs):.1f} ms: finding the compiler, "
                     f"{'NOT MET' if statistics.median(procs) >= TARGET_DISK_REUSE_MS else 'met'} for that call)")
    elif comp:
        lines.append(f"- compile times: not measured ({comp['error']})")
    if not lines:
        lines.append("- native backend unavailable: no target can be judged")
    print("\n".join(lines))
    records = []
    for line in lines:
        text = line.strip().lstrip("- ")
        if line.startswith("  ") and records:  # a continuation of the line before
            records[-1]["measured"] += " " + text
            continue
        met = (False if "**NOT MET**" in text else True if "**MET**" in text else None)
        head, rest = _split_outside_parens(text)
        rest = re.sub(r":? ?\*\*(NOT MET|MET)\*\*", "", rest).replace("**", "").strip()
        records.append(_results.target(head, rest, met))
    return records


def _split_outside_parens(text, sep=": "):
    """(before, after) the first 'sep' outside parentheses; (text, "") if none."""
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and text.startswith(sep, i):
            return text[:i], text[i + len(sep):]
    return text, ""


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="sizes up to 1e7, fewer rounds")
    p.add_argument("--modes", default="one,all")
    p.add_argument("--sizes", default=None, help="comma list, e.g. 1e3,1e6")
    p.add_argument("--kernels", default=",".join(KERNELS))
    p.add_argument("--dtypes", default="float32,float64")
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--round-ms", type=float, default=None, help="NumPy time per round")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--no-compile-times", action="store_true")
    p.add_argument("--no-streaming", action="store_true",
                   help="skip streaming stores against ordinary stores")
    p.add_argument("--no-rows", action="store_true",
                   help="skip rows with an input constant along them (bench/native/rows.py)")
    p.add_argument("--procs", type=int, default=1,
                   help="child processes per mode (each times every cell; with >= 5 a cell's "
                        "'slower' is decided across processes: see merge_procs)")
    p.add_argument("--json", default=None, help="write all results here")
    p.add_argument("--report", default=None, metavar="JSON",
                   help="print the tables and targets of a --json file again (no run)")
    p.add_argument("--mode", default=None, help=argparse.SUPPRESS)   # child
    p.add_argument("--out", default=None, help=argparse.SUPPRESS)    # child
    p.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)   # child: the process's index
    args = p.parse_args()
    args.sizes = ([int(float(s)) for s in args.sizes.split(",")] if args.sizes
                  else [s for s in SIZES_FULL if not (args.quick and s > 10**7)])
    args.kernels = args.kernels.split(",")
    args.dtypes = args.dtypes.split(",")
    if args.rounds is None:
        args.rounds = 3 if args.quick else 5
    if args.round_ms is None:
        args.round_ms = 20.0 if args.quick else 50.0
    if args.mode and args.mode.startswith("stream:"):
        return run_stream_ab(args)
    if args.mode == "rows":
        import rows
        with open(args.out, "w") as fh:
            json.dump(rows.measure(threads=1), fh)
        return 0
    if args.mode:
        return run_mode(args)
    if args.report:
        with open(args.report) as fh:
            saved = json.load(fh)
        report(saved["modes"], saved["triad_gbs"], saved["compile"])
        return 0

    _results.start()
    import platform
    import numpy as np
    import stream
    print(f"native backend benchmark: CPython {platform.python_version()}, NumPy {np.__version__}, "
          f"{platform.machine()}, {os.cpu_count()} cpus; sizes {[f'{s:.0e}' for s in args.sizes]}")
    for mod in ("numexpr", "numba", "torch"):
        try:
            print(f"  {mod} {__import__(mod).__version__}")
        except Exception as e:  # noqa: BLE001
            print(f"  {mod}: unavailable ({e!r})")
    modes = {}
    triads = {}
    for mode in args.modes.split(","):
        nth = 1 if mode == "one" else (os.cpu_count() or 1)
        tri = stream.measure(nth)
        fresh = stream.measure(nth, fresh=True)
        triads[mode] = tri["best_gbs"]
        triads[mode + "_fresh"] = fresh["best_gbs"]
        print(f"\n===== mode {mode}: {nth} thread(s); triad {tri['best_gbs']:.1f} GB/s "
              f"(median {tri['median_gbs']:.1f}; bus incl. write-allocate {tri['bus_gbs']:.1f}); "
              f"with a fresh output per pass {fresh['best_gbs']:.1f} GB/s; load average "
              f"{os.getloadavg()[0]:.2f}", flush=True)
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
            out = fh.name
        cmd = [sys.executable, os.path.abspath(__file__), "--mode", mode, "--out", out,
               "--sizes", ",".join(str(s) for s in args.sizes), "--kernels", ",".join(args.kernels),
               "--dtypes", ",".join(args.dtypes), "--rounds", str(args.rounds),
               "--round-ms", str(args.round_ms)] + (["--no-torch"] if args.no_torch else [])
        runs = []
        for k in range(args.procs):
            if args.procs > 1:
                print(f"\nprocess {k + 1} of {args.procs}", flush=True)
            print("| kernel | dtype | n | NumPy | " + " | ".join(LABEL[v] for v in VARIANTS[1:]) + " |", flush=True)
            rc = subprocess.call(cmd + ["--seed", str(k)], env=thread_env(mode), cwd=ROOT)
            if rc:
                print(f"mode {mode}: child exited {rc}")
                break
            with open(out) as fh:
                runs.append(json.load(fh))
        if os.path.exists(out):
            os.unlink(out)
        if len(runs) < args.procs:
            continue
        modes[mode] = merge_procs(runs)
        # the triad again after the mode's run: on a shared machine the
        # bandwidth moves; the better of the two is the reference
        tri2, fresh2 = stream.measure(nth), stream.measure(nth, fresh=True)
        triads[mode] = max(triads[mode], tri2["best_gbs"])
        triads[mode + "_fresh"] = max(triads[mode + "_fresh"], fresh2["best_gbs"])
        print(f"  triad after the run: {tri2['best_gbs']:.1f} GB/s, fresh output {fresh2['best_gbs']:.1f}; "
              f"reference: the better ones ({triads[mode]:.1f}, {triads[mode + '_fresh']:.1f})")
        for note in modes[mode]["notes"]:
            print(f"  note: {note}")
    comp = None
    if not args.no_compile_times and any(m["have"].get("native") for m in modes.values()):
        comp = compile_times()
        print("\n### Native compile times (one graph, backend call only)\n")
        if "error" in comp:
            print(f"failed: {comp['error']}")
        else:
            print("| kernel | first compile (fresh cache dir), ms | reuse from disk (2nd process), ms | "
                  "1st backend call of a process: compile / reuse, ms | result ok |")
            print("| --- | ---: | ---: | ---: | --- |")
            for k, v in comp.items():
                if k == "notes":
                    continue
                print(f"| {k} | {' / '.join(f'{x:.1f}' for x in v['first_ms'])} | "
                      f"{' / '.join(f'{x:.3f}' for x in v['reuse_ms'])} | "
                      f"{' / '.join(f'{x:.0f}' for x in v['first_proc_ms'])} ; "
                      f"{' / '.join(f'{x:.1f}' for x in v['reuse_proc_ms'])} | {v['ok']} |")
            for note in comp.get("notes", []):
                print(f"- {note}")
    streaming = {}
    if not args.no_streaming and any(m["have"].get("native") for m in modes.values()):
        print("\n### Streaming stores against ordinary stores (fj native)\n", flush=True)
        for mode in modes:
            with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
                out = fh.name
            rc = subprocess.call([sys.executable, os.path.abspath(__file__), "--mode", "stream:" + mode,
                                  "--out", out, "--sizes", ",".join(str(s) for s in args.sizes),
                                  "--dtypes", ",".join(args.dtypes)], env=thread_env(mode), cwd=ROOT)
            if rc == 0:
                with open(out) as fh:
                    streaming[mode] = json.load(fh)
            os.unlink(out)
    row_runs = []
    if not args.no_rows and modes.get("one", {}).get("have", {}).get("native"):
        print("\n### Rows with an input constant along them, one core (fj native against NumPy)\n",
              flush=True)
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
            out = fh.name
        if subprocess.call([sys.executable, os.path.abspath(__file__), "--mode", "rows", "--out", out],
                           env=thread_env("one"), cwd=ROOT) == 0:
            with open(out) as fh:
                row_runs = json.load(fh)
        os.unlink(out)
        for r in row_runs:
            print(f"  {r['group']:32s} {r['shape']:>12s} {r['path']:12s} NumPy {fmt_time(r['numpy_ns'])}, "
                  f"native {fmt_time(r['native_ns'])}: {r['speedup']:.2f}x")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"modes": modes, "triad_gbs": triads, "compile": comp, "streaming": streaming,
                       "rows": row_runs}, fh, indent=1)
    verdicts = report(modes, triads, comp)
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.kernels == list(KERNELS) and modes:
        write_result(args, modes, triads, comp, streaming, row_runs, verdicts)
    return 0


def write_result(args, modes, triads, comp, streaming, row_runs, verdicts):
    """bench/results/native.json: the speedup tables, the bandwidth, the compile
    times, streaming against ordinary stores, and the targets."""
    C = _results.column
    tables = []
    for mode, m in modes.items():
        cols = [v for v in VARIANTS[1:] if m["have"].get(v)]
        rows = []
        for row in m["results"]:
            ns = row["ns"]
            cells = {"kernel": row["kernel"], "dtype": row["dtype"], "n": f"{row['n']:.0e}",
                     "numpy": fmt_time(ns["numpy"])}
            for v in cols:
                cells[v] = (f"{ns['numpy'] / ns[v]:.2f}" + ("!" if v in row["errors"] else "")
                            if v in ns else "ERR" if v in row["errors"] else "-")
            rows.append(cells)
        errs = [f"{LABEL[v]} {r['kernel']} {r['dtype']} n={r['n']:.0e}: {msg}"
                for r in m["results"] for v, msg in r["errors"].items()]
        tables.append(_results.table(
            f"{'one core' if mode == 'one' else 'all cores'} ({m['threads']} thread"
            f"{'s' if m['threads'] > 1 else ''}): speedup over NumPy (> 1 is faster), NumPy's time "
            "per call; `!` = result out of tolerance",
            [C("kernel", "kernel"), C("dtype", "dtype"), C("n", "n"), C("numpy", "NumPy")]
            + [C(v, LABEL[v]) for v in cols], rows, note="; ".join(errs + m.get("notes", []))))
        big = [r for r in m["results"] if r["n"] >= 10**7]
        if big:
            cols_bw = ["numpy"] + [v for v in FUSED if m["have"].get(v)]
            bw_rows = []
            for r in big:
                nb = bytes_moved(r["kernel"], r["n"], 4 if r["dtype"] == "float32" else 8)
                cells = {"kernel": r["kernel"], "dtype": r["dtype"], "n": f"{r['n']:.0e}"}
                for v in cols_bw:
                    t = bw_time(r, v)
                    cells[v] = f"{100 * nb / t / triads[mode]:.0f}%" if t else "-"
                bw_rows.append(cells)
            tables.append(_results.table(
                f"{'one core' if mode == 'one' else 'all cores'}: fraction of the triad bandwidth "
                f"({triads[mode]:.1f} GB/s; {triads[mode + '_fresh']:.1f} with a fresh output per "
                "pass), inputs read once + outputs written once",
                [C("kernel", "kernel"), C("dtype", "dtype"), C("n", "n")]
                + [C(v, LABEL[v]) for v in cols_bw], bw_rows))
    if comp and "error" not in comp:
        tables.append(_results.table(
            "native compile times, one graph, backend call only (float64, 1e3), ms per repeat",
            [C("kernel", "kernel"), C("first", "first compile (fresh cache dir)"),
             C("reuse", "reuse from disk (2nd process)"),
             C("proc", "1st backend call of a process: compile ; reuse")],
            [{"kernel": k, "first": " / ".join(f"{x:.1f}" for x in v["first_ms"]),
              "reuse": " / ".join(f"{x:.3f}" for x in v["reuse_ms"]),
              "proc": " / ".join(f"{x:.0f}" for x in v["first_proc_ms"]) + " ; "
                      + " / ".join(f"{x:.1f}" for x in v["reuse_proc_ms"])}
             for k, v in comp.items() if k != "notes"]))
    for mode, st in streaming.items():
        if st.get("rows"):
            tables.append(_results.table(
                f"streaming stores against ordinary stores, fj native, {mode} "
                f"core{'s' if mode == 'all' else ''}: best of {STREAM_ROUNDS} alternated rounds, "
                "ordinary time / streamed time (> 1: streaming faster); by default a run streams "
                f"from {st['default_stream_min'] / 2**20:.0f} MiB moved",
                [C("kernel", "kernel"), C("dtype", "dtype"), C("n", "n"),
                 C("ordinary", "ordinary"), C("streamed", "streamed"), C("ratio", "ratio", ".2f")],
                [{"kernel": r["kernel"], "dtype": r["dtype"], "n": f"{r['n']:.0e}",
                  "ordinary": fmt_time(r["ordinary_ns"]), "streamed": fmt_time(r["streamed_ns"]),
                  "ratio": r["ratio"]} for r in st["rows"]]))
    if row_runs:
        import rows
        tables.append(_results.table(
            "rows with an input constant along them (`x` float64 of the shape, `w` of shape "
            f"(rows, 1)), fj native, one core: best of {rows.ROUNDS} alternated rounds, speedup over "
            f"NumPy; the row path is taken where row length x operations >= {rows.ROW_WORK}, the "
            "strided scalar loop below",
            [C("group", "group"), C("shape", "shape"), C("path", "path"), C("numpy", "NumPy"),
             C("native", "fj native"), C("speedup", "speedup", ".2f")],
            [{"group": r["group"], "shape": r["shape"], "path": r["path"],
              "numpy": fmt_time(r["numpy_ns"]), "native": fmt_time(r["native_ns"]),
              "speedup": r["speedup"]} for r in row_runs]))
    notes = []
    for mode, m in modes.items():
        notes.append(f"{mode}: triad {triads[mode]:.1f} GB/s; " + "; ".join(m.get("notes", [])))
    size = (f"sizes {', '.join(f'{s:.0e}' for s in args.sizes)}; {args.rounds} rounds of "
            f"{args.round_ms:g} ms; dtypes {', '.join(args.dtypes)}; modes {', '.join(modes)}"
            + (f"; {args.procs} processes per mode" if args.procs > 1 else "")
            + ("; torch left out" if args.no_torch else ""))
    _results.write("native", "Native backend against NumPy, numexpr, Numba and torch.compile",
                   size=size, tables=tables, targets=verdicts, notes=notes,
                   data={"modes": modes, "triad_gbs": triads, "compile": comp,
                         "streaming": streaming, "rows": row_runs})


def report(modes, triads, comp):
    """The per-mode tables and the targets; returns the targets (_results.target records)."""
    for mode, m in modes.items():
        table(m, triads[mode], triads[mode + "_fresh"], f"{'One core' if mode == 'one' else 'All cores'} "
              f"({m['threads']} thread{'s' if m['threads'] > 1 else ''})")
    return targets(modes, triads, comp)


if __name__ == "__main__":
    sys.exit(main())
