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

Run: python3 tools/vmath_accuracy.py [--n N] [--seed S] [--json FILE] [--exhaustive] [--only f,g:64]
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


def _mp(name):
    def f(*a):
        import mpmath
        return getattr(mpmath, name)(*a)
    return f


def _mp_cbrt(x):
    import mpmath
    return mpmath.cbrt(x) if x >= 0 else -mpmath.cbrt(-x)  # the real root (mpmath's is complex for x < 0)


def _mp_log2(x):
    import mpmath
    return mpmath.log(x, 2)


# name: (correctly rounded reference (mpmath), NumPy function, libm name of the
# float64 reference of --exhaustive (None: binary, sampled only)); the C stem is
# the table's (framejit._C.native_vmath())
FUNCS = {
    "exp": (_mp("exp"), np.exp, "exp"),
    "log": (_mp("log"), np.log, "log"),
    "sin": (_mp("sin"), np.sin, "sin"),
    "cos": (_mp("cos"), np.cos, "cos"),
    "tanh": (_mp("tanh"), np.tanh, "tanh"),
    "expm1": (_mp("expm1"), np.expm1, "expm1"),
    "log1p": (_mp("log1p"), np.log1p, "log1p"),
    "log2": (_mp_log2, np.log2, "log2"),
    "log10": (_mp("log10"), np.log10, "log10"),
    "tan": (_mp("tan"), np.tan, "tan"),
    "sinh": (_mp("sinh"), np.sinh, "sinh"),
    "cosh": (_mp("cosh"), np.cosh, "cosh"),
    "arctan": (_mp("atan"), np.arctan, "atan"),
    "arcsin": (_mp("asin"), np.arcsin, "asin"),
    "arccos": (_mp("acos"), np.arccos, "acos"),
    "cbrt": (_mp_cbrt, np.cbrt, "cbrt"),
    "arctan2": (_mp("atan2"), np.arctan2, None),
    "power": (_mp("power"), np.power, None),
}
TYPES = [("float64", np.float64, "double", "64", np.int64), ("float32", np.float32, "float", "32", np.int32)]


def available():
    """{name: dtypes} of the functions the kernels compute (framejit._C.native_vmath())."""
    from framejit import _C
    return {name: dts for name, (_, dts, _) in _C.native_vmath().items() if dts}


def build(funcs, cc="cc"):
    """The shared object of one loop per function and dtype in 'funcs' ({name: dtypes}); its path."""
    from framejit import _C, native
    lines = [f'#include "{HEADER}"', "#include <fenv.h>", "#include <math.h>"]
    for name, dts in funcs.items():
        stem, libm = _C.native_vmath()[name][0], FUNCS[name][2]
        for tname, _, ctype, bits, _ in TYPES:
            if tname not in dts:
                continue
            if libm is None:
                lines.append(
                    f"int run_{name}{bits}(const {ctype} *restrict x, const {ctype} *restrict x2, {ctype} *restrict y,"
                    f" long n)\n{{ feclearexcept(FE_ALL_EXCEPT); for (long i = 0; i < n; i++) y[i] = "
                    f"fj_{stem}{bits}(x[i], x2[i]);\n"
                    f"  return fetestexcept(FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW); }}")
                continue
            lines.append(
                f"int run_{name}{bits}(const {ctype} *restrict x, {ctype} *restrict y, long n)\n"
                f"{{ feclearexcept(FE_ALL_EXCEPT); for (long i = 0; i < n; i++) y[i] = fj_{stem}{bits}(x[i]);\n"
                f"  return fetestexcept(FE_INVALID | FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW); }}")
        if libm is not None and "float32" in dts:
            # the exhaustive reference: libm's float64 function rounded once; amb[i] set where the
            # float64 lies within 2^-40 of a float32 rounding boundary (mpmath decides those)
            lines.append(
                f"long ref_{name}32(const float *restrict x, float *restrict y, unsigned char *restrict amb, long n)\n"
                f"{{ long c = 0; for (long i = 0; i < n; i++) {{ double d = {libm}((double)x[i]); float r = (float)d;\n"
                f"  double lo = (double)nextafterf(r, -INFINITY), hi = (double)nextafterf(r, INFINITY);\n"
                f"  double mid = d < (double)r ? ((double)r + lo) / 2 : ((double)r + hi) / 2;\n"
                f"  amb[i] = isfinite(d) && fabs(d - mid) <= fabs(d) * 0x1p-40; c += amb[i]; y[i] = r; }} return c; }}")
    d = tempfile.mkdtemp(prefix="fj_vmath_")
    src, so = os.path.join(d, "v.c"), os.path.join(d, "v.so")
    with open(src, "w") as f:
        f.write("\n".join(lines) + "\n")
    flags = [f for f in native.CFLAGS if f != "-shared"] + native.MARCH
    subprocess.run([cc, *flags, "-shared", "-o", so, src, "-lm"], check=True)
    return so


def _logmags(rng, k, lo_exp, hi_exp):
    """k values with magnitudes 2^e, e uniform in [lo_exp, hi_exp], random signs."""
    return 2.0 ** rng.uniform(lo_exp, hi_exp, k) * rng.choice([-1, 1], k)


def _near_multiples(rng, k, step, nmax):
    """k values within a few ulp-ish of n * step, |n| <= nmax (where reductions cancel)."""
    return np.round(rng.uniform(-nmax, nmax, k)) * step + rng.uniform(-1e-6, 1e-6, k)


def domain(name, dt, n, rng):
    """Inputs whose results are normal numbers, as the header docstring says: a
    third uniform over the function's main range, a third log-uniform magnitudes,
    a third where it is hardest, plus edges.  Binary functions: a tuple (x1, x2)."""
    f64 = dt == np.float64
    k, h = n // 3, n - 2 * (n // 3)
    emax = 1020 if f64 else 125
    big = 2.0 ** 18 if f64 else 2.0 ** 16          # sin, cos, tan: the reduced range
    if name in ("exp", "sin", "cos", "tanh", "expm1", "tan", "sinh", "cosh"):
        lo, hi = {"exp": (-708.39, 709.78) if f64 else (-87.33, 88.72), "tanh": (-25.0, 25.0),
                  "expm1": (-40.0, 709.78) if f64 else (-20.0, 88.72),
                  "sinh": (-710.47, 710.47) if f64 else (-89.41, 89.41),
                  "cosh": (-710.47, 710.47) if f64 else (-89.41, 89.41)}.get(name, (-big, big))
        mags = np.clip(np.exp(rng.uniform(np.log(1e-30), np.log(hi), k)) * rng.choice([-1, 1], k), lo, hi)
        # where it is hardest: near 0 for exp, tanh, sinh ...; near multiples of pi/2 for sin, cos, tan
        hard = (_near_multiples(rng, h, np.pi / 2, 1e5 if f64 else 4e4) if name in ("sin", "cos", "tan")
                else rng.uniform(-1e-3, 1e-3, h))
        xs = [rng.uniform(lo, hi, k), mags, hard, [lo, hi, 0.0, -0.0, 1.0, -1.0]]
    elif name == "log1p":
        xs = [rng.uniform(-0.999, 10.0, k), 2.0 ** rng.uniform(-60, 1000 if f64 else 120, k) * rng.choice([-1, 1], k),
              rng.uniform(-1e-3, 1e-3, h), [-0.5, 0.0, -0.0, 1.0, 1e-300 if f64 else 1e-30]]
    elif name in ("log", "log2", "log10"):
        xs = [rng.uniform(0.0, 10.0, k) + 1e-300, 2.0 ** rng.uniform(-emax, emax, k),
              1.0 + rng.uniform(-1e-3, 1e-3, h),
              [np.finfo(dt).tiny, np.finfo(dt).max, 1.0, 2.0, 0.5, 10.0, 1000.0]]
    elif name in ("arcsin", "arccos"):
        xs = [rng.uniform(-1.0, 1.0, k), _logmags(rng, k, -emax, 0),
              np.concatenate([1.0 - 2.0 ** rng.uniform(-52 if f64 else -23, -1, h // 2),
                              -1.0 + 2.0 ** rng.uniform(-52 if f64 else -23, -1, h - h // 2)]),
              [1.0, -1.0, 0.5, -0.5, 0.0, -0.0]]
    elif name in ("arctan", "cbrt"):
        xs = [rng.uniform(-10.0, 10.0, k), _logmags(rng, k, -emax, emax),
              rng.uniform(-2.0, 2.0, h) if name == "arctan" else _logmags(rng, h, -1074 if f64 else -149, -emax),
              [1.0, -1.0, 0.0, -0.0, np.finfo(dt).max, -np.finfo(dt).max, 8.0, 27.0]]
    elif name == "arctan2":
        y = np.concatenate([rng.uniform(-10, 10, k), _logmags(rng, k, -emax, emax), rng.uniform(-1, 1, h)])
        x = np.concatenate([rng.uniform(-10, 10, k), _logmags(rng, k, -emax, emax),
                            y[2 * k:] * (1.0 + rng.uniform(-1e-3, 1e-3, h)) * rng.choice([-1, 1], h)])
        with np.errstate(over="ignore", under="ignore"):
            y, x = y.astype(dt), x.astype(dt)
        with np.errstate(all="ignore"):
            ref = np.arctan2(y.astype(np.float64), x.astype(np.float64))
        # results that are normal numbers of the type, as below (a zero result here is an underflow)
        keep = np.isfinite(y) & np.isfinite(x) & (np.abs(ref) >= np.finfo(dt).tiny)
        return y[keep], x[keep]
    elif name == "power":
        # x > 0 with |y log2(x)| below the exponent range; negative x with integer y; x near 1, large y
        x = np.concatenate([rng.uniform(0.0, 10.0, k), 2.0 ** rng.uniform(-emax, emax, k),
                            1.0 + rng.uniform(-1e-3, 1e-3, h)])
        lx = np.abs(np.log2(np.maximum(x, 1e-300)))
        y = rng.uniform(-1, 1, n) * np.minimum(1e4 if f64 else 1e3, (emax - 2) / np.maximum(lx, 1e-9))
        neg = rng.random(n) < 0.1
        x = np.where(neg, -x, x)
        y = np.where(neg, np.round(y), y)
        with np.errstate(over="ignore", under="ignore"):
            x, y = x.astype(dt), y.astype(dt)
        with np.errstate(all="ignore"):
            r = np.power(x.astype(np.float64), y.astype(np.float64))
        keep = np.isfinite(x) & np.isfinite(y) & np.isfinite(r) & (np.abs(r) >= np.finfo(dt).tiny) & \
            (np.abs(r) <= np.finfo(dt).max)
        return x[keep], y[keep]
    else:
        raise KeyError(name)
    with np.errstate(over="ignore", under="ignore"):
        x = np.concatenate([np.asarray(v, dtype=np.float64) for v in xs]).astype(dt)
    keep = np.isfinite(x)
    if name in ("log", "log2", "log10"):
        keep &= x >= np.finfo(dt).tiny
    elif name == "log1p":
        keep &= x > -1
    elif name in ("arcsin", "arccos"):
        keep &= np.abs(x) <= 1
    with np.errstate(all="ignore"):
        ref = FUNCS[name][1](x.astype(np.float64))
    # results that are normal numbers of the type (a subnormal result's ulp is not the function's)
    keep &= np.isfinite(ref) & ((np.abs(ref) >= np.finfo(dt).tiny) | (ref == 0)) & (np.abs(ref) <= np.finfo(dt).max)
    return x[keep]


def ulp_distance(a, b, it):
    """|a - b| in representable values between them (same-sign finite floats)."""
    ia, ib = a.view(it).astype(np.int64), b.view(it).astype(np.int64)
    # order the bit patterns so negative values compare as numbers
    ia = np.where(ia < 0, np.iinfo(it).min - ia, ia)
    ib = np.where(ib < 0, np.iinfo(it).min - ib, ib)
    return np.abs(ia - ib)


def correctly_rounded(mfun, x, dt, x2=None):
    import mpmath
    mpmath.mp.prec = 160
    out = np.empty(len(x), dtype=dt)
    args = zip(x.tolist(), x2.tolist()) if x2 is not None else ((v,) for v in x.tolist())
    for i, a in enumerate(args):
        r = mfun(*[mpmath.mpf(v) for v in a])
        # round once to the type: to float64 by mpmath, then to float32 exactly when the
        # float64 is not itself a float32 halfway point (checked: rounding through a
        # wider mpf keeps the single rounding)
        if dt == np.float32:
            with mpmath.workprec(24):
                out[i] = np.float32(float(+r))
        else:
            out[i] = float(r)
    return out


def measure(lib, funcs, n, seed):
    rng = np.random.default_rng(seed)
    rows = []
    vp = ctypes.c_void_p
    for name, dts in funcs.items():
        mfun, npf, libm = FUNCS[name]
        for tname, dt, ctype, bits, it in TYPES:
            if tname not in dts:
                continue
            d = domain(name, dt, n, rng)
            x, x2 = (d, None) if libm is not None else d
            y = np.empty_like(x)
            fn = getattr(lib, f"run_{name}{bits}")
            ptrs = [x.ctypes.data_as(vp)] + ([x2.ctypes.data_as(vp)] if x2 is not None else [])
            flags = fn(*ptrs, y.ctypes.data_as(vp), ctypes.c_long(len(x)))
            cr = correctly_rounded(mfun, x, dt, x2)
            with np.errstate(all="ignore"):
                ref = npf(x) if x2 is None else npf(x, x2)
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
    "log2": lambda x: np.isfinite(x) & (x >= np.finfo(np.float32).tiny),
    "log10": lambda x: np.isfinite(x) & (x >= np.finfo(np.float32).tiny),
    "sin": lambda x: np.abs(x) <= 65536.0,
    "cos": lambda x: np.abs(x) <= 65536.0,
    "tan": lambda x: np.abs(x) <= 65536.0,
    "tanh": np.isfinite,
    "expm1": lambda x: (x > -1e30) & (x < 88.7228),
    "log1p": lambda x: np.isfinite(x) & (x > -1.0),
    "sinh": lambda x: np.abs(x) < 89.41,
    "cosh": lambda x: np.abs(x) < 89.41,
    "arctan": np.isfinite,
    "arcsin": lambda x: np.abs(x) <= 1.0,
    "arccos": lambda x: np.abs(x) <= 1.0,
    "cbrt": np.isfinite,
}


def exhaustive32(lib, name):
    """One row of the table over every float32 input of the function's domain."""
    mfun, npf, _ = FUNCS[name]
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
    ap.add_argument("--only", help="comma-separated functions (default: every one the kernels compute, "
                    "framejit._C.native_vmath()), e.g. log2,log10:64 (log2 in both dtypes, log10 in float64)")
    args = ap.parse_args()
    funcs = available()
    if args.only:
        want = [w.partition(":") for w in args.only.split(",")]
        unknown = [w for w, _, b in want if w not in FUNCS or b not in ("", "64", "32")]
        if unknown:
            ap.error(f"--only: unknown function(s) {', '.join(unknown)} (known: {', '.join(FUNCS)}; "
                     "a suffix :64 or :32 for one dtype)")
        funcs = {}
        for w, _, b in want:
            funcs[w] = funcs.get(w, ()) + ((("float64",) if b != "32" else ()) + (("float32",) if b != "64" else ()))
    lib = ctypes.CDLL(build(funcs, os.environ.get("CC", "cc")))
    if args.exhaustive:
        rows = [exhaustive32(lib, name) for name, dts in funcs.items() if "float32" in dts and FUNCS[name][2]]
    else:
        rows = measure(lib, funcs, args.n, args.seed)
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
