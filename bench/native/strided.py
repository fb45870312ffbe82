"""Stencils over strided slices (issue 23: "a stencil over slices of a
(500, 500, 3) array runs 0.18x NumPy"), one core, in one run.

Functions (one dtype, uniform in [0, 1)):

    lap_hwc   a of shape (N, N, 3), a 5-point stencil over the first two axes of
              an image with its channels last: the slices' rows are runs of
              3 (N - 2) elements with a gap of 6 between them
                  (a[1:-1, 1:-1]*4 - a[:-2, 1:-1] - a[2:, 1:-1] - a[1:-1, :-2] - a[1:-1, 2:]) * 0.25
    lap_chw   the same over the last two axes of a of shape (3, N, N)
    cols      every other column against the next one, a of shape (N, 2 N):
              non-unit inner strides  a[:, ::2] * 2 + a[:, 1::2] * 0.5

with N chosen so that a has about 1e5, 1e6 and 1e7 elements, float64 and
float32.  Columns, warm (compiles excluded), best of ROUNDS rounds,
variants interleaved within a round:

    NumPy              the plain function
    fj native          framejit native backend (default config)
    fj eager           framejit's eager backend, timed against NumPy in rounds of
                       their own (3x ROUNDS: _harness.pair_ratio)
    torch.compile      inductor, the same function on torch.from_numpy(a)

Threads: OMP/MKL at 1, torch.set_num_threads(1), native threads=1.
Results are checked: fj native and fj eager bit for bit against NumPy,
torch.compile within a relative 1e-6 (float32 1e-4).

Run: python3 bench/native/strided.py [--quick]
Writes bench/results/native_strided.json (bench/_results.py).
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
ROUNDS = 3 if QUICK else 9
SIZES = (1e5, 1e6) if QUICK else (1e5, 1e6, 1e7)


def lap_hwc(a):
    return (a[1:-1, 1:-1] * 4 - a[:-2, 1:-1] - a[2:, 1:-1] - a[1:-1, :-2] - a[1:-1, 2:]) * 0.25


def lap_chw(a):
    return (a[:, 1:-1, 1:-1] * 4 - a[:, :-2, 1:-1] - a[:, 2:, 1:-1] - a[:, 1:-1, :-2] - a[:, 1:-1, 2:]) * 0.25


def cols(a):
    return a[:, ::2] * 2 + a[:, 1::2] * 0.5


def shape_of(name, n):
    if name == "cols":
        side = int(round((n / 2) ** 0.5))
        return (side, 2 * side)
    side = int(round((n / 3) ** 0.5))
    return {"lap_hwc": (side, side, 3), "lap_chw": (3, side, side)}[name]


KERNELS = {"lap_hwc": lap_hwc, "lap_chw": lap_chw, "cols": cols}


def main():
    _results.start()
    framejit._C.native_config(threads=1)
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    rows = []
    print(f"{'kernel':8} {'dtype':8} {'shape':>14} {'NumPy':>9} {'native':>7} {'eager':>7} {'inductor':>9}"
          "   (speed vs NumPy)")
    for name, fn in KERNELS.items():
        for dtype in (np.float64, np.float32):
            for n in SIZES:
                shape = shape_of(name, n)
                a = np.random.default_rng(1).random(shape).astype(dtype)
                want = fn(a)
                calls = {"numpy": (fn, (a,))}
                cn = framejit.compile(fresh(fn), backend="native")
                assert np.array_equal(cn(a), want), (name, "native")
                calls["native"] = (cn, (a,))
                ce = framejit.compile(fresh(fn), backend="eager")
                assert np.array_equal(ce(a), want), (name, "eager")
                calls["eager"] = (ce, (a,))
                if torch is not None:
                    ta = torch.from_numpy(a)
                    tc = torch.compile(fresh(fn))
                    tol = 1e-6 if dtype == np.float64 else 1e-4
                    assert np.allclose(tc(ta).numpy(), want, rtol=tol, atol=tol), (name, "inductor")
                    calls["inductor"] = (tc, (ta,))
                size = int(np.prod(shape))
                reps = max(2, int(2e6 // size))
                best = best_interleaved(calls, ROUNDS, reps)
                row = {"kernel": name, "dtype": np.dtype(dtype).name, "shape": "x".join(map(str, shape)),
                       "n": f"{size:.0e}", "numpy_us": best["numpy"] * 1e6,
                       "native": best["numpy"] / best["native"],
                       "eager": pair_ratio(calls, "numpy", "eager", ROUNDS, reps),
                       "inductor": best["numpy"] / best["inductor"] if "inductor" in best else None}
                rows.append(row)
                print(f"{name:8} {row['dtype']:8} {row['shape']:>14} {row['numpy_us']:>7.0f}us {row['native']:>7.2f} "
                      f"{row['eager']:>7.2f} {row['inductor'] or 0:>9.2f}", flush=True)
    C = _results.column
    worst = min(rows, key=lambda r: r["native"])
    worst_e = min(rows, key=lambda r: r["eager"])
    targets = [
        _results.target("strided stencils at least 1.0x NumPy (fj native), one core",
                        f"worst {worst['native']:.2f}x ({worst['kernel']} {worst['dtype']} {worst['shape']})",
                        all(r["native"] >= 1.0 for r in rows)),
        _results.target("eager backend at least 0.95x NumPy on every stencil and size (one core)",
                        f"worst {worst_e['eager']:.2f}x ({worst_e['kernel']} {worst_e['dtype']} {worst_e['shape']})",
                        all(r["eager"] >= 0.95 for r in rows))]
    _results.write(
        "native_strided", "Strided stencils in native kernels", size="--quick" if QUICK else "full",
        tables=[_results.table(
            f"one core, best of {ROUNDS} interleaved rounds (fj eager: against NumPy alone, {3 * ROUNDS} rounds); "
            "speed relative to NumPy (higher is faster)",
            [C("kernel", "function"), C("dtype", "dtype"), C("shape", "shape"), C("numpy_us", "NumPy µs", ".0f"),
             C("eager", "fj eager", ".2f"), C("native", "fj native", ".2f"),
             C("inductor", "torch.compile", ".2f")], rows)],
        targets=targets, data={"rows": rows})


if __name__ == "__main__":
    main()
