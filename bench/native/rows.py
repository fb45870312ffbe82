"""Rows with an input constant along them (``x * w`` with ``w`` of shape
(rows, 1)): the native backend against NumPy, by row length.

The backend runs such a group row by row through its flat kernel when the
row length times the group's operations is at least 512 (docs/native.md,
Kernels: FJN_ROW_WORK), and its strided scalar loop below that; this
measures where each path lands against NumPy on the same shapes (about a
million elements each), one process, NumPy and native interleaved, best of
ROUNDS.  Used by bench_native.py (its --rows part); runs alone too:

    python3 bench/native/rows.py [--threads N]
"""
import math
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

ROW_WORK = 512  # FJN_ROW_WORK in csrc/backends/native/native.c
ROUNDS = 15
SHAPES = ((20000, 32), (10000, 64), (5000, 128), (2500, 256), (1000, 1000), (100, 10000))


def groups():
    import numpy as np

    def g1(x, w):
        return x * w

    def g2(x, w):
        return (x - w) * 2.0

    def g3(x, w):
        return (x * w + 1.0) * 0.5

    def g7(x, w):
        return np.sqrt(np.maximum((x * w + w) * 0.5 - x, 0.0)) + w

    # (label, function, operations)
    return (("`x * w`", g1, 1), ("`(x - w) * 2.0`", g2, 2), ("`(x * w + 1.0) * 0.5`", g3, 3),
            ("c7 with `w` for `b` and `c`", g7, 7))


def measure(threads=1, rounds=ROUNDS):
    """[{group, ops, shape, path, numpy_ns, native_ns, speedup}] for float64."""
    import numpy as np
    import framejit
    framejit._C.native_config(threads=threads)
    perf = time.perf_counter_ns
    out = []
    for label, fn, ops in groups():
        cf = framejit.compile(fn, backend="native")
        for rows, cols in SHAPES:
            rng = np.random.default_rng(rows)
            x = rng.random((rows, cols)) * 2
            w = rng.random((rows, 1)) * 2
            np.testing.assert_allclose(cf(x, w), fn(x, w))
            cf(x, w)
            t0 = perf()
            fn(x, w)
            reps = max(1, int(10e6 / max(perf() - t0, 1)))
            best = {"numpy": math.inf, "native": math.inf}
            for i in range(rounds):
                for name, f in ((("numpy", fn), ("native", cf)) if i % 2 == 0 else
                                (("native", cf), ("numpy", fn))):
                    f(x, w)
                    t0 = perf()
                    for _ in range(reps):
                        f(x, w)
                    best[name] = min(best[name], (perf() - t0) / reps)
            out.append({"group": label, "ops": ops, "shape": f"{rows} x {cols}",
                        "path": "rows" if cols * ops >= ROW_WORK else "scalar loop",
                        "numpy_ns": best["numpy"], "native_ns": best["native"],
                        "speedup": best["numpy"] / best["native"]})
    return out


def main():
    threads = int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else 1
    for r in measure(threads):
        print(f"{r['group']:32s} {r['shape']:>12s} {r['path']:12s} NumPy {r['numpy_ns'] / 1e3:9.1f} µs"
              f"  native {r['native_ns'] / 1e3:9.1f} µs  {r['speedup']:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
