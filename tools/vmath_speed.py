"""Speed of framejit/_vmath.h's functions against NumPy's own loops, per element.

Compiles the functions as tools/vmath_accuracy.py does (the kernels' flags:
-O3 -march=native, a vectorized loop per function and dtype) and times each
loop and NumPy's ufunc (with out=, so no allocation) on the same arguments
(bench/native/transcendental.py's FUNCTION_ARGS ranges), n = 2^16 elements
(in cache: the functions' own cost, as inside a kernel's block), best of
--rounds rounds.  Prints ns an element and which is faster; --json writes it.

NumPy's loops for many of these functions are AVX-512 ones (SVML) where the
CPU has AVX-512 and NumPy dispatches to it, else scalar libm calls: run it
also with NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR" (NumPy 2.4's
names; older NumPy: AVX512_SKX) to see the other case.  framejit leaves a
function to NumPy's loop where NumPy's AVX-512 loop is faster in a kernel
(csrc/backends/native/native.c numpy_avx512_faster) and NumPy dispatches to
it (framejit/native.py NUMPY_AVX512).

Run: python3 tools/vmath_speed.py [--rounds R] [--only f,g] [--json FILE]
"""
import argparse
import ctypes
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "bench", "native"))

import vmath_accuracy as va  # noqa: E402


def args_of(name, dt, n):
    from transcendental import FUNCTION_ARGS
    return [np.ascontiguousarray(a.astype(dt)) for a in FUNCTION_ARGS[name](np.random.default_rng(3), n)]


def best(fn, rounds, reps=20):
    t = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        t = min(t, (time.perf_counter() - t0) / reps)
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--n", type=int, default=1 << 16)
    ap.add_argument("--only")
    ap.add_argument("--json")
    a = ap.parse_args()
    funcs = va.available()
    if a.only:
        funcs = {k: v for k, v in funcs.items() if k in a.only.split(",")}
    lib = ctypes.CDLL(va.build(funcs, os.environ.get("CC", "cc")))
    from numpy._core._multiarray_umath import __cpu_features__ as feats
    rows, vp = [], ctypes.c_void_p
    print(f"NumPy {np.__version__}, AVX-512 loops dispatched: {bool(feats.get('X86_V4') or feats.get('AVX512_SKX'))}")
    print(f"{'function':10} {'dtype':8} {'ours ns':>8} {'NumPy ns':>9}  faster")
    for name, dts in funcs.items():
        npf = getattr(np, name)
        for tname, dt, _, bits, _ in va.TYPES:
            if tname not in dts:
                continue
            xs = args_of(name, dt, a.n)
            y = np.empty_like(xs[0])
            run = getattr(lib, f"run_{name}{bits}")
            ptrs = [x.ctypes.data_as(vp) for x in xs] + [y.ctypes.data_as(vp), ctypes.c_long(a.n)]
            ours = best(lambda: run(*ptrs), a.rounds)
            with np.errstate(all="ignore"):
                theirs = best(lambda: npf(*xs, out=y), a.rounds)
            r = {"function": name, "dtype": tname, "ours_ns": ours / a.n * 1e9, "numpy_ns": theirs / a.n * 1e9}
            rows.append(r)
            print(f"{name:10} {tname:8} {r['ours_ns']:>8.2f} {r['numpy_ns']:>9.2f}  "
                  f"{'ours' if ours <= theirs else 'NumPy'} ({max(ours, theirs) / min(ours, theirs):.2f}x)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"numpy": np.__version__, "n": a.n, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
