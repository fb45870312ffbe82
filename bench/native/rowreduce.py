"""Reductions along rows fused with the elementwise work around them (issue
23's row groups: docs/native.md "Row groups"), one core, in one run.

Functions (x of shape rows x cols, one dtype, standard normal; g, b of cols):

    softmax      e = exp(x - max(x, -1)); e / sum(e, -1)
    log_softmax  s = x - max(x, -1); s - log(sum(exp(s), -1))
    layer_norm   mu = mean(x, -1); var = mean((x - mu)**2, -1); (x - mu) / sqrt(var + 1e-5) * g + b
    logsumexp    m = max(x, -1); m + log(sum(exp(x - m), -1))
    row_norm     x / sqrt(sum(x * x, -1))

(every reduction keepdims) over 1e5 to 1e7 elements, float64 and float32.
Columns, warm (compiles excluded), best of ROUNDS rounds, variants
interleaved within a round:

    NumPy              the plain function
    fj native          framejit native backend, config.native_exact = True (the
                       default: exp and log run through NumPy, results are NumPy's bits)
    fj native vmath    config.native_exact = False (exp / log fused: framejit/_vmath.h,
                       float64 and float32; the targets are judged here, as inductor's
                       results are not NumPy's bits either)
    fj eager           framejit's eager backend (NumPy's operations, dead temporaries reused),
                       timed against NumPy in rounds of their own (3x ROUNDS: _harness.pair_ratio)
    torch.compile      inductor, on torch.from_numpy inputs, torch's own
                       softmax / log_softmax / layer_norm / logsumexp

Threads: OMP/MKL at 1, torch.set_num_threads(1), native threads=1.
Results are checked: fj native bit for bit against NumPy, the others within
a relative 1e-6 (float32 1e-3).

Run: python3 bench/native/rowreduce.py [--quick]
Writes bench/results/native_rows.json (bench/_results.py).
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
SHAPES = [(1000, 100), (1000, 1000)] if QUICK else [(1000, 100), (100, 1000), (10000, 100), (1000, 1000),
                                                      (100, 10000), (10000, 1000)]


def softmax(x, g, b):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def log_softmax(x, g, b):
    s = x - x.max(axis=-1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=-1, keepdims=True))


def layer_norm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


def logsumexp(x, g, b):
    m = x.max(axis=-1, keepdims=True)
    return m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def row_norm(x, g, b):
    return x / np.sqrt((x * x).sum(axis=-1, keepdims=True))


KERNELS = {"softmax": softmax, "log_softmax": log_softmax, "layer_norm": layer_norm, "logsumexp": logsumexp,
           "row_norm": row_norm}


def torch_fns(torch):
    F = torch.nn.functional
    return {"softmax": lambda x, g, b: torch.softmax(x, -1),
            "log_softmax": lambda x, g, b: torch.log_softmax(x, -1),
            "layer_norm": lambda x, g, b: F.layer_norm(x, (x.shape[-1],), g, b, 1e-5),
            "logsumexp": lambda x, g, b: torch.logsumexp(x, -1, keepdim=True),
            "row_norm": lambda x, g, b: x / torch.sqrt((x * x).sum(-1, keepdim=True))}


def close(got, want, dtype):
    got = np.asarray(got)
    tol = 1e-6 if dtype == np.float64 else 1e-3
    return got.dtype == want.dtype and np.allclose(got, want, rtol=tol, atol=tol * 1e-3)





def main():
    _results.start()
    framejit._C.native_config(threads=1)
    try:
        import torch
        torch.set_num_threads(1)
        tfns = torch_fns(torch)
    except ImportError:
        torch, tfns = None, {}
    rows = []
    print(f"{'kernel':12} {'dtype':8} {'shape':>12} {'NumPy':>9} {'native':>7} {'vmath':>7} {'inductor':>9}"
          "   (speed vs NumPy)")
    for name, fn in KERNELS.items():
        for dtype in (np.float64, np.float32):
            for shape in SHAPES:
                rng = np.random.default_rng(1)
                args = (rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape[-1:]).astype(dtype),
                        rng.standard_normal(shape[-1:]).astype(dtype))
                want = fn(*args)
                calls = {"numpy": (fn, args)}
                for key, exact in (("native", True), ("vmath", False)):
                    framejit.config.native_exact = exact
                    cf = framejit.compile(fresh(fn), backend="native")
                    got = cf(*args)
                    assert close(got, want, dtype), (name, key)
                    if exact:
                        assert np.array_equal(got, want), (name, "exact mode must be NumPy's bits")
                    calls[key] = (cf, args)
                framejit.config.native_exact = True
                ce = framejit.compile(fresh(fn), backend="eager")
                assert np.array_equal(ce(*args), want), (name, "eager")
                calls["eager"] = (ce, args)
                if torch is not None:
                    targs = tuple(torch.from_numpy(a) for a in args)
                    tc = torch.compile(tfns[name])
                    assert close(tc(*targs).numpy(), want, dtype), (name, "inductor")
                    calls["inductor"] = (tc, targs)
                n = shape[0] * shape[1]
                reps = max(2, int(2e6 // n))
                best = best_interleaved(calls, ROUNDS, reps)
                row = {"kernel": name, "dtype": np.dtype(dtype).name, "shape": f"{shape[0]}x{shape[1]}",
                       "n": f"{n:.0e}", "numpy_us": best["numpy"] * 1e6}
                for k in ("eager", "native", "vmath", "inductor"):
                    row[k] = best["numpy"] / best[k] if k in best else None
                row["eager"] = pair_ratio(calls, "numpy", "eager", ROUNDS, reps)
                rows.append(row)
                print(f"{name:12} {row['dtype']:8} {row['shape']:>12} {row['numpy_us']:>7.0f}us {row['native']:>7.2f} "
                      f"{row['vmath']:>7.2f} {row['inductor'] or 0:>9.2f}", flush=True)
    C = _results.column
    targets = []
    # judged with native_exact False (exp / log fused, within their documented ulp: not
    # NumPy's bits, as inductor's are not); the default exact mode's figures beside them
    for name in ("softmax", "layer_norm"):
        for dt in ("float64", "float32"):
            ch = [r for r in rows if r["kernel"] == name and r["dtype"] == dt]
            targets.append(_results.target(
                f"{name} {dt} at least 1.5x NumPy (fj native, native_exact False), one core",
                f"{min(r['vmath'] for r in ch):.2f}x .. {max(r['vmath'] for r in ch):.2f}x "
                f"(default exact mode: {min(r['native'] for r in ch):.2f}x .. {max(r['native'] for r in ch):.2f}x)",
                all(r["vmath"] >= 1.5 for r in ch)))
            if all(r["inductor"] for r in ch):
                targets.append(_results.target(
                    f"{name} {dt} at or above torch.compile's inductor (fj native, native_exact False), one core",
                    f"{sum(r['vmath'] >= r['inductor'] for r in ch)}/{len(ch)} cells "
                    f"(default exact mode: {sum(r['native'] >= r['inductor'] for r in ch)}/{len(ch)})",
                    all(r["vmath"] >= r["inductor"] for r in ch)))
    worst = min(rows, key=lambda r: r["eager"])
    targets.append(_results.target(
        "eager backend at least 0.95x NumPy on every function and size (one core)",
        f"worst {worst['eager']:.2f}x ({worst['kernel']} {worst['dtype']} {worst['shape']})",
        all(r["eager"] >= 0.95 for r in rows)))
    _results.write(
        "native_rows", "Reductions along rows in native kernels", size="--quick" if QUICK else "full",
        tables=[_results.table(
            f"one core, best of {ROUNDS} interleaved rounds (fj eager: against NumPy alone, {3 * ROUNDS} rounds); speed relative to NumPy (higher is faster)",
            [C("kernel", "function"), C("dtype", "dtype"), C("shape", "shape"), C("numpy_us", "NumPy µs", ".0f"),
             C("eager", "fj eager", ".2f"), C("native", "fj native", ".2f"),
             C("vmath", "fj native, native_exact False", ".2f"),
             C("inductor", "torch.compile", ".2f")], rows)],
        targets=targets, data={"rows": rows})


if __name__ == "__main__":
    main()
