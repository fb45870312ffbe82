"""Transcendental chains in the native backend (issue 23), one core, in one run.

Functions (inputs a, b, c of one dtype, 1-D, standard normal):

    tchain   (a*b + sin(c))*0.5 - exp(-a)/(1 + c*c)        the issue's chain
    texplog  log(a*a + 1) * tanh(b) + cos(c)               log, tanh, cos

at 1e5, 1e6 and 1e7 elements, float64 and float32.  Columns, warm (compiles
excluded), best of ROUNDS rounds, all variants interleaved within a round:

    NumPy              the plain function
    fj eager           framejit's eager backend, timed against NumPy in rounds of
                       their own (3x ROUNDS: _harness.pair_ratio)
    fj native exact    framejit native backend, config.native_exact = True
                       (the default: the functions run through NumPy)
    fj native          config.native_exact = False (framejit/_vmath.h fused)
    torch.compile      inductor, on torch.from_numpy inputs (torch ops)
    Numba              @njit serial loop (no fastmath)

Threads: OMP/MKL/NUMBA at 1, torch.set_num_threads(1), native threads=1.
Results are checked against NumPy (native exact: bit for bit; the others
within 1e-6 relative of the largest term, float32 1e-3... see close()).

A second table times each function of framejit/_vmath.h alone in a small
chain, `f(a) * 0.5 + b` (binary: `f(a, c) * 0.5 + b`), at 1e6 elements, with
arguments in the function's usual range (FUNCTION_ARGS), same columns but eager.

Run: python3 bench/native/transcendental.py [--quick]
Writes bench/results/native_vmath.json (bench/_results.py).
"""
import os
import sys

for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[v] = "1"

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.dirname(HERE))

import _results  # noqa: E402
from _harness import best_interleaved, fresh, pair_ratio  # noqa: E402
import framejit  # noqa: E402

QUICK = "--quick" in sys.argv
ROUNDS = 3 if QUICK else 7
SIZES = [10**5, 10**6] if QUICK else [10**5, 10**6, 10**7]


def tchain(a, b, c):
    return (a * b + np.sin(c)) * 0.5 - np.exp(-a) / (1 + c * c)


def texplog(a, b, c):
    return np.log(a * a + 1) * np.tanh(b) + np.cos(c)


KERNELS = {"tchain": tchain, "texplog": texplog}


def torch_fns(torch):
    return {"tchain": lambda a, b, c: (a * b + torch.sin(c)) * 0.5 - torch.exp(-a) / (1 + c * c),
            "texplog": lambda a, b, c: torch.log(a * a + 1) * torch.tanh(b) + torch.cos(c)}


def numba_fns():
    from numba import njit

    @njit(cache=False)
    def nb_tchain(a, b, c):
        out = np.empty_like(a)
        for i in range(a.shape[0]):
            out[i] = (a[i] * b[i] + np.sin(c[i])) * 0.5 - np.exp(-a[i]) / (1 + c[i] * c[i])
        return out

    @njit(cache=False)
    def nb_texplog(a, b, c):
        out = np.empty_like(a)
        for i in range(a.shape[0]):
            out[i] = np.log(a[i] * a[i] + 1) * np.tanh(b[i]) + np.cos(c[i])
        return out

    return {"tchain": nb_tchain, "texplog": nb_texplog}


# each function of framejit/_vmath.h: (NumPy function, torch function name, arguments' generator)
FUNCTION_ARGS = {
    "exp": lambda r, n: (r.uniform(-20, 20, n),), "expm1": lambda r, n: (r.uniform(-3, 3, n),),
    "log": lambda r, n: (r.uniform(0.01, 100, n),), "log1p": lambda r, n: (r.uniform(-0.5, 10, n),),
    "log2": lambda r, n: (r.uniform(0.01, 100, n),), "log10": lambda r, n: (r.uniform(0.01, 100, n),),
    "sin": lambda r, n: (r.uniform(-100, 100, n),), "cos": lambda r, n: (r.uniform(-100, 100, n),),
    "tan": lambda r, n: (r.uniform(-100, 100, n),), "tanh": lambda r, n: (r.uniform(-5, 5, n),),
    "sinh": lambda r, n: (r.uniform(-20, 20, n),), "cosh": lambda r, n: (r.uniform(-20, 20, n),),
    "arctan": lambda r, n: (r.standard_normal(n) * 10,), "arcsin": lambda r, n: (r.uniform(-1, 1, n),),
    "arccos": lambda r, n: (r.uniform(-1, 1, n),), "cbrt": lambda r, n: (r.standard_normal(n) * 100,),
    "arctan2": lambda r, n: (r.standard_normal(n), r.standard_normal(n)),
    "power": lambda r, n: (r.uniform(0.1, 10, n), r.uniform(-3, 3, n)),
}
TORCH_NAMES = {"arctan": "atan", "arcsin": "asin", "arccos": "acos", "arctan2": "atan2", "power": "pow",
               "cbrt": None}  # (torch has no cbrt)


def function_rows(torch):
    """One row per function and dtype: f(a) * 0.5 + b at 1e6 elements."""
    n, rows = 10**6, []
    print(f"{'function':8} {'dtype':8} {'NumPy':>9} {'exact':>7} {'native':>7} {'inductor':>9}   (1e6, speed vs NumPy)")
    listed = framejit._C.native_vmath()
    for fname, gen in FUNCTION_ARGS.items():
        npf = getattr(np, fname)
        src = (f"def f_{fname}(a, b, c):\n    return np.{fname}(a{', c' if npf.nin == 2 else ''}) * 0.5 + b\n")
        ns = {"np": np}
        exec(src, ns)
        fn = ns[f"f_{fname}"]
        for dtype in (np.float64, np.float32):
            rng = np.random.default_rng(2)
            xs = gen(rng, n)
            a = xs[0].astype(dtype)
            c = (xs[1] if len(xs) > 1 else xs[0]).astype(dtype)
            b = rng.standard_normal(n).astype(dtype)
            args = (a, b, c)
            want = fn(*args)
            calls = native_calls(fn, args, want, dtype, fname)
            if torch is not None and TORCH_NAMES.get(fname, fname):
                tf = getattr(torch, TORCH_NAMES.get(fname, fname))
                targs = tuple(torch.from_numpy(x) for x in args)
                tc = torch.compile((lambda a, b, c: tf(a, c) * 0.5 + b) if npf.nin == 2 else
                                   (lambda a, b, c: tf(a) * 0.5 + b))
                assert close(tc(*targs).numpy(), want, dtype), (fname, "inductor")
                calls["inductor"] = (tc, targs)
            best = best_interleaved(calls, ROUNDS, 3)
            row = {"function": f"np.{fname}", "dtype": np.dtype(dtype).name, "numpy_us": best["numpy"] * 1e6,
                   "fused": np.dtype(dtype).name in listed[fname][1] and np.dtype(dtype).name not in listed[fname][2]}
            row["by"] = "_vmath.h" if row["fused"] else "NumPy's loop"
            for k in ("exact", "native", "inductor"):
                row[k] = best["numpy"] / best[k] if k in best else None
            rows.append(row)
            print(f"{fname:8} {row['dtype']:8} {row['numpy_us']:>7.0f}us {row['exact']:>7.2f} {row['native']:>7.2f} "
                  f"{row['inductor'] or 0:>9.2f}{'' if row['fused'] else '   (NumPy loop)'}",
                  flush=True)
    return rows


def native_calls(fn, args, want, dtype, label):
    """{"numpy", "exact", "native"}: (callable, args), the native backend compiled with
    native_exact True and False, each checked against NumPy's result 'want' (exact mode:
    its bits; with the functions NumPy's loops compute inside the kernel, inexact mode's
    too, but close() is what it promises)."""
    calls = {"numpy": (fn, args)}
    for key, exact in (("exact", True), ("native", False)):
        framejit.config.native_exact = exact
        cf = framejit.compile(fresh(fn), backend="native")
        got = cf(*args)
        assert close(got, want, dtype), (label, key)
        if exact:
            assert np.array_equal(got, want), (label, "exact mode must be NumPy's bits")
        calls[key] = (cf, args)
    framejit.config.native_exact = True
    return calls


def close(got, want, dtype):
    got = np.asarray(got)
    tol = 1e-12 if dtype == np.float64 else 1e-4
    return got.dtype == want.dtype and np.allclose(got, want, rtol=tol, atol=tol)



def main():
    _results.start()
    framejit._C.native_config(threads=1)
    try:
        import torch
        torch.set_num_threads(1)
        tfns = torch_fns(torch)
    except ImportError:
        torch, tfns = None, {}
    try:
        nbf = numba_fns()
    except ImportError:
        nbf = {}
    rows = []
    print(f"{'kernel':8} {'dtype':8} {'n':>6} {'NumPy':>9} {'exact':>7} {'native':>7} {'inductor':>9} {'Numba':>7}"
          "   (speed vs NumPy)")
    for name, fn in KERNELS.items():
        for dtype in (np.float64, np.float32):
            for n in SIZES:
                rng = np.random.default_rng(1)
                args = tuple(rng.standard_normal(n).astype(dtype) for _ in range(3))
                want = fn(*args)
                calls = native_calls(fn, args, want, dtype, name)
                ce = framejit.compile(fresh(fn), backend="eager")
                assert np.array_equal(ce(*args), want), (name, "eager")
                calls["eager"] = (ce, args)
                if torch is not None:
                    targs = tuple(torch.from_numpy(x) for x in args)
                    tc = torch.compile(tfns[name])
                    assert close(tc(*targs).numpy(), want, dtype)
                    calls["inductor"] = (tc, targs)
                if nbf:
                    assert close(nbf[name](*args), want, dtype)
                    calls["numba"] = (nbf[name], args)
                reps = max(2, int(3e6 // n))
                best = best_interleaved(calls, ROUNDS, reps)
                row = {"kernel": name, "dtype": np.dtype(dtype).name, "n": f"{n:.0e}",
                       "numpy_us": best["numpy"] * 1e6}
                for k in ("eager", "exact", "native", "inductor", "numba"):
                    row[k] = best["numpy"] / best[k] if k in best else None
                row["eager"] = pair_ratio(calls, "numpy", "eager", ROUNDS, reps)
                rows.append(row)
                print(f"{name:8} {row['dtype']:8} {row['n']:>6} {row['numpy_us']:>7.0f}us {row['exact']:>7.2f} "
                      f"{row['native']:>7.2f} {row['inductor'] or 0:>9.2f} {row['numba'] or 0:>7.2f}", flush=True)
    frows = function_rows(torch)
    C = _results.column
    targets = []
    for dt in ("float64", "float32"):
        ch = [r for r in rows if r["kernel"] == "tchain" and r["dtype"] == dt]
        targets.append(_results.target(
            f"tchain {dt} at least 3x NumPy (fj native, native_exact False), one core",
            f"{min(r['native'] for r in ch):.2f}x .. {max(r['native'] for r in ch):.2f}x",
            all(r["native"] >= 3 for r in ch)))
        if all(r["inductor"] for r in ch):
            targets.append(_results.target(
                f"tchain {dt} at or above torch.compile's inductor, one core",
                f"{sum(r['native'] >= r['inductor'] for r in ch)}/{len(ch)} cells",
                all(r["native"] >= r["inductor"] for r in ch)))
    worst = min(rows, key=lambda r: r["eager"])
    targets.append(_results.target(
        "eager backend at least 0.95x NumPy on every chain and size (one core)",
        f"worst {worst['eager']:.2f}x ({worst['kernel']} {worst['dtype']} {worst['n']})",
        all(r["eager"] >= 0.95 for r in rows)))
    _results.write(
        "native_vmath", "Transcendental functions in native kernels", size="--quick" if QUICK else "full",
        tables=[_results.table(
            f"one core, best of {ROUNDS} interleaved rounds (fj eager: against NumPy alone, {3 * ROUNDS} rounds); speed relative to NumPy (higher is faster)",
            [C("kernel", "kernel"), C("dtype", "dtype"), C("n", "n"), C("numpy_us", "NumPy µs", ".0f"),
             C("eager", "fj eager", ".2f"), C("exact", "fj native, exact", ".2f"), C("native", "fj native", ".2f"),
             C("inductor", "torch.compile", ".2f"), C("numba", "Numba", ".2f")], rows),
            _results.table(
                f"each function alone: f(a) * 0.5 + b (binary: f(a, c) * 0.5 + b), 1e6 elements, one core, best of "
                f"{ROUNDS} interleaved rounds; speed relative to NumPy; fj native computes the function with "
                "framejit/_vmath.h's, or NumPy's loop inside the kernel (where NumPy runs AVX-512 loops, those "
                "measured faster stay NumPy's: docs/native.md)",
                [C("function", "function"), C("dtype", "dtype"), C("by", "fj native computes it with"),
                 C("numpy_us", "NumPy µs", ".0f"), C("exact", "fj native, exact", ".2f"),
                 C("native", "fj native", ".2f"), C("inductor", "torch.compile", ".2f")], frows)],
        targets=targets, data={"rows": rows, "functions": frows})




if __name__ == "__main__":
    main()
