"""Accuracy of the native backend's transcendental functions (framejit/_vmath.h).

Compiles _vmath.h with the flags of the native backend's kernels (a loop per
function, as the kernels run it: vectorized), runs it over inputs drawn from
each function's domain, and measures the error in ulp (units in the last
place of the result's type) against the correctly rounded result (mpmath at
160 bits, rounded once to the type) and against NumPy's own result.  Prints
the table docs/native.md shows ("Transcendental functions").

Inputs per function and dtype (--n, default 200000): a third uniform over
the range where the result is a normal number, a third with log-uniform
magnitudes (exponents spread over the whole type), a third near the
points where the function is hardest (|x| < 1e-3 for exp and tanh; x near
1 for log; near multiples of pi/2 for sin and cos, |x| <= 2^18); plus the
edges of each range.  Special values (NaN, infinities,
zeros, subnormals, past the range) are checked against NumPy for values and
for the floating-point flags the kernel reports (tests/test_native_vmath.py
checks them in the kernels).

With --exhaustive, the float32 functions are measured on every float32
input of their domain instead (2^32 bit patterns filtered: exp's arguments
with a finite nonzero result, positive normal numbers for log, |x| <= 2^16
for sin and cos, every finite number for tanh); the reference is libm's
float64 function rounded once to float32, and mpmath where that float64 lies
within 2^-40 (relative) of a float32 rounding boundary.  About 5 minutes a
function.

Run: python3 tools/vmath_accuracy.py [--n N] [--seed S] [--json FILE] [--exhaustive]
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

HEADER = os.path.join(ROOT, "framejit", "_vmath.h")
FUNCS = [  # (name, C function stem, mpmath function, numpy function)
    ("exp", "exp", "exp", np.exp),
    ("log", "log", "log", np.log),
    ("sin", "sin", "sin", np.sin),
    ("cos", "cos", "cos", np.cos),
    ("tanh", "tanh", "tanh", np.tanh),
    ("expm1", "expm1_", "expm1", np.expm1),
    ("log1p", "log1p", "log1p", np.log1p),
]
F64_ONLY = ("expm1", "log1p")  # (their float32 stays NumPy's loops: docs/native.md)
TYPES = [("float64", np.float64, "double", "64", np.int64), ("float32", np.float32, "float", "32", np.int32)]


def build(cc="cc"):
    """The shared object of one loop per function and dtype; its path."""
    from framejit import native
    lines = [f'#include "{HEADER}"', "#include <fenv.h>"]
    for name, stem, _, _ in FUNCS:
        for _, _, ctype, bits, _ in TYPES:
            if bits == "32" and name in F64_ONLY:
                continue
            lines.append(
                f"int run_{name}{bits}(const {ctype} *restrict x, {ctype} *restrict y, long n)\n"
                f"{{ feclearexcept(FE_ALL_EXCEPT); for (long i = 0; i < n; i++) y[i] = fj_{stem}{bits}(x[i]);\n"
                f"  return fetestexcept(FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW); }}")
    for name, stem, _, _ in FUNCS:
        if name in F64_ONLY:
            continue
        # the exhaustive reference: libm's float64 function rounded once; amb[i] set where the
        # float64 lies within 2^-40 of a float32 rounding boundary (mpmath decides those)
        lines.append(
            f"long ref_{name}32(const float *restrict x, float *restrict y, unsigned char *restrict amb, long n)\n"
            f"{{ long c = 0; for (long i = 0; i < n; i++) {{ double d = {name}((double)x[i]); float r = (float)d;\n"
            f"  double lo = (double)nextafterf(r, -INFINITY), hi = (double)nextafterf(r, INFINITY);\n"
            f"  double mid = d < (double)r ? ((double)r + lo) / 2 : ((double)r + hi) / 2;\n"
            f"  amb[i] = isfinite(d) && fabs(d - mid) <= fabs(d) * 0x1p-40; c += amb[i]; y[i] = r; }} return c; }}")
    lines.insert(2, "#include <math.h>")
    d = tempfile.mkdtemp(prefix="fj_vmath_")
    src, so = os.path.join(d, "v.c"), os.path.join(d, "v.so")
    with open(src, "w") as f:
        f.write("\n".join(lines) + "\n")
    flags = [f for f in native.CFLAGS if f != "-shared"] + native.MARCH
    subprocess.run([cc, *flags, "-shared", "-o", so, src, "-lm"], check=True)
    return so


def domain(name, dt, n, rng):
    """Inputs whose results are normal numbers, as the header docstring says."""
    f64 = dt == np.float64
    k = n // 3
    if name in ("exp", "sin", "cos", "tanh", "expm1"):
        lo, hi = {"exp": (-708.39, 709.78) if f64 else (-87.33, 88.72), "tanh": (-25.0, 25.0),
                  "expm1": (-40.0, 709.78)}.get(
            name, (-2.0 ** 18, 2.0 ** 18) if f64 else (-2.0 ** 16, 2.0 ** 16))
        mags = np.clip(np.exp(rng.uniform(np.log(1e-30), np.log(hi), k)) * rng.choice([-1, 1], k), lo, hi)
        # where it is hardest: near 0 for exp and tanh; near multiples of pi/2 for sin, cos
        hard = (rng.uniform(-1e-3, 1e-3, n - 2 * k) if name in ("exp", "tanh", "expm1")
                else np.round(rng.uniform(-1e5 if f64 else -4e4, 1e5 if f64 else 4e4, n - 2 * k)) * (np.pi / 2)
                + rng.uniform(-1e-6, 1e-6, n - 2 * k))
        xs = [rng.uniform(lo, hi, k), mags, hard, [lo, hi, 0.0, -0.0, 1.0, -1.0]]
    elif name == "log1p":
        xs = [rng.uniform(-0.999, 10.0, k), 2.0 ** rng.uniform(-60, 1000 if f64 else 120, k) * rng.choice([-1, 1], k),
              rng.uniform(-1e-3, 1e-3, n - 2 * k), [-0.5, 0.0, -0.0, 1.0, 1e-300]]
    else:
        emax = 1020 if f64 else 125
        xs = [rng.uniform(0.0, 10.0, k) + 1e-300, 2.0 ** rng.uniform(-emax, emax, k),
              1.0 + rng.uniform(-1e-3, 1e-3, n - 2 * k),
              [np.finfo(dt).tiny, np.finfo(dt).max, 1.0, 2.0, 0.5]]
    with np.errstate(over="ignore", under="ignore"):
        x = np.concatenate([np.asarray(v, dtype=np.float64) for v in xs]).astype(dt)
    keep = (np.isfinite(x) & (x >= np.finfo(dt).tiny) if name == "log"
            else np.isfinite(x) & (x > -1) if name == "log1p" else np.isfinite(x))
    return x[keep]


def ulp_distance(a, b, it):
    """|a - b| in representable values between them (same-sign finite floats)."""
    ia, ib = a.view(it).astype(np.int64), b.view(it).astype(np.int64)
    # order the bit patterns so negative values compare as numbers
    ia = np.where(ia < 0, np.iinfo(it).min - ia, ia)
    ib = np.where(ib < 0, np.iinfo(it).min - ib, ib)
    return np.abs(ia - ib)


def correctly_rounded(fname, x, dt):
    import mpmath
    mpmath.mp.prec = 160
    f = getattr(mpmath, fname)
    out = np.empty(len(x), dtype=dt)
    for i, v in enumerate(x.tolist()):
        r = f(mpmath.mpf(v))
        # round once to the type: to float64 by mpmath, then to float32 exactly when the
        # float64 is not itself a float32 halfway point (checked: rounding through a
        # wider mpf keeps the single rounding)
        if dt == np.float32:
            with mpmath.workprec(24):
                out[i] = np.float32(float(+r))
        else:
            out[i] = float(r)
    return out


def measure(lib, n, seed):
    rng = np.random.default_rng(seed)
    rows = []
    for name, stem, mfun, npf in FUNCS:
        for tname, dt, ctype, bits, it in TYPES:
            if bits == "32" and name in F64_ONLY:
                continue
            x = domain(name, dt, n, rng)
            y = np.empty_like(x)
            fn = getattr(lib, f"run_{name}{bits}")
            flags = fn(x.ctypes.data_as(ctypes.c_void_p), y.ctypes.data_as(ctypes.c_void_p), ctypes.c_long(len(x)))
            cr = correctly_rounded(mfun, x, dt)
            with np.errstate(all="ignore"):
                ref = npf(x)
            d_cr, d_np, np_cr = ulp_distance(y, cr, it), ulp_distance(y, ref, it), ulp_distance(ref, cr, it)
            rows.append({"function": f"np.{name}", "dtype": tname, "inputs": int(len(x)),
                         "max_ulp_vs_correctly_rounded": int(d_cr.max()),
                         "share_correctly_rounded": float((d_cr == 0).mean()),
                         "max_ulp_vs_numpy": int(d_np.max()), "share_equal_to_numpy": float((d_np == 0).mean()),
                         "numpy_max_ulp_vs_correctly_rounded": int(np_cr.max()), "flags_in_domain": int(flags)})
    return rows


EXHAUSTIVE_DOMAIN = {  # float32 inputs measured by --exhaustive
    "exp": lambda x: (x > -103.97) & (x < 88.7228),
    "log": lambda x: np.isfinite(x) & (x >= np.finfo(np.float32).tiny),
    "sin": lambda x: np.abs(x) <= 65536.0,
    "cos": lambda x: np.abs(x) <= 65536.0,
    "tanh": np.isfinite,
}


def exhaustive32(lib, name, mfun, npf):
    """One row of the table over every float32 input of the function's domain."""
    vp, chunk = ctypes.c_void_p, 1 << 24
    hist, tot, worst, np_max, np_eq, np_cr, flags = np.zeros(8, np.int64), 0, (0, None), 0, 0, 0, 0
    ours, ref = getattr(lib, f"run_{name}32"), getattr(lib, f"ref_{name}32")
    ref.restype = ctypes.c_long
    for c in range((1 << 32) // chunk):
        x = np.arange(c * chunk, (c + 1) * chunk, dtype=np.uint64).astype(np.uint32).view(np.float32)
        with np.errstate(invalid="ignore"):
            x = x[EXHAUSTIVE_DOMAIN[name](x)]
        if not len(x):
            continue
        y, r, amb = np.empty_like(x), np.empty_like(x), np.empty(len(x), np.uint8)
        flags |= ours(x.ctypes.data_as(vp), y.ctypes.data_as(vp), ctypes.c_long(len(x)))
        if ref(x.ctypes.data_as(vp), r.ctypes.data_as(vp), amb.ctypes.data_as(vp), ctypes.c_long(len(x))):
            hard = np.nonzero(amb)[0]
            r[hard] = correctly_rounded(mfun, x[hard], np.float32)
        with np.errstate(all="ignore"):
            z = npf(x)
        d_cr, d_np = ulp_distance(y, r, np.int32), ulp_distance(y, z, np.int32)
        i = int(d_cr.argmax())
        if d_cr[i] > worst[0]:
            worst = (int(d_cr[i]), float(x[i]))
        hist += np.bincount(np.minimum(d_cr, 7), minlength=8)[:8]
        tot += len(x)
        np_max, np_eq = max(np_max, int(d_np.max())), np_eq + int((d_np == 0).sum())
        np_cr = max(np_cr, int(ulp_distance(z, r, np.int32).max()))
    return {"function": f"np.{name}", "dtype": "float32", "inputs": tot, "exhaustive": True,
            "max_ulp_vs_correctly_rounded": worst[0], "worst_input": worst[1],
            "share_correctly_rounded": float(hist[0] / tot), "max_ulp_vs_numpy": np_max,
            "share_equal_to_numpy": np_eq / tot, "numpy_max_ulp_vs_correctly_rounded": np_cr,
            "flags_in_domain": int(flags)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json")
    ap.add_argument("--exhaustive", action="store_true",
                    help="the float32 functions over every float32 input of their domain")
    args = ap.parse_args()
    lib = ctypes.CDLL(build(os.environ.get("CC", "cc")))
    if args.exhaustive:
        rows = [exhaustive32(lib, name, mfun, npf) for name, _, mfun, npf in FUNCS if name not in F64_ONLY]
    else:
        rows = measure(lib, args.n, args.seed)
    print(f"{'function':10} {'dtype':8} {'inputs':>8} {'max ulp (cr)':>12} {'cr share':>9} "
          f"{'max ulp (NumPy)':>15} {'= NumPy':>8} {'NumPy max ulp (cr)':>19} {'flags':>6}")
    for r in rows:
        print(f"{r['function']:10} {r['dtype']:8} {r['inputs']:>8} {r['max_ulp_vs_correctly_rounded']:>12} "
              f"{r['share_correctly_rounded']:>9.4f} {r['max_ulp_vs_numpy']:>15} {r['share_equal_to_numpy']:>8.4f} "
              f"{r['numpy_max_ulp_vs_correctly_rounded']:>19} {r['flags_in_domain']:>6}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"n": args.n, "seed": args.seed, "numpy": np.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
