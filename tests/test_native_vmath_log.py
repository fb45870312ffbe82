"""np.log2 and np.log10 (float64, float32) and float32 np.expm1 and np.log1p inside
the native backend's kernels (framejit/_vmath.h: fj_log2_64, fj_log10_64,
fj_log2_32, fj_log10_32, fj_expm1_32, fj_log1p32; issue 23), with
config.native_exact False.

Each value is within 1 ulp of the correctly rounded one (tools/vmath_accuracy.py:
float64 sampled, float32 on every input), so within that plus NumPy's own error
of NumPy's value; log2 of a power of two and log10 of a power of ten are exact,
log2(1) and log10(1) are +0.0.  Arguments log2 and log10 (and log1p) leave to
NumPy (0, negative, subnormal, inf, NaN; log1p: x <= -1, inf, NaN) raise invalid
on purpose and the group runs through NumPy: values, warnings and errstate's
"raise" are NumPy's.  float32 expm1 overflows (from 88.73 on) with NumPy's
warning; zeros keep their sign.
"""
import warnings

import numpy as np
import pytest

import framejit
from native_compare import capturing_backend, outcome
from test_native_vmath import (_inexact, close_outcomes, make, one_special_each, rng,  # noqa: F401
                               same_outcome_under_errstate, ulp_apart)


# C stem of each function (fj_<stem>64 / fj_<stem>32)
STEM = {f: framejit._C.native_vmath()[f][0] for f in ("log2", "log10", "expm1", "log1p")}
# (function, dtype): ours within OURS of the correctly rounded value (tools/vmath_accuracy.py,
# float32 --exhaustive), NumPy's within NUMPY of it (the same tool's table, NumPy 2.x's
# SIMD loops on an AVX-512 machine; a margin of one for other builds)
OURS = {("log2", np.float64): 1, ("log10", np.float64): 1, ("log2", np.float32): 1, ("log10", np.float32): 1,
        ("expm1", np.float32): 1, ("log1p", np.float32): 1}
NUMPY = {("log2", np.float64): 2, ("log10", np.float64): 2, ("log2", np.float32): 3, ("log10", np.float32): 3,
         ("expm1", np.float32): 4, ("log1p", np.float32): 3}
CASES = sorted(OURS, key=lambda c: (c[0], c[1].__name__))
IDS = [f"{f}-{d.__name__}" for f, d in CASES]


def domain(fname, dtype, n=20000, seed=0):
    """Ordinary arguments over the function's range and its hard regions."""
    r = rng(seed)
    emax = 1020 if dtype == np.float64 else 125
    if fname in ("log2", "log10"):
        xs = [r.uniform(0.0, 10.0, n) + 1e-30, 2.0 ** r.uniform(-emax, emax, n), 1.0 + r.uniform(-1e-3, 1e-3, n),
              1.0 + r.uniform(-1e-7, 1e-7, n), np.sqrt(0.5) * (1.0 + r.uniform(-1e-6, 1e-6, n)),
              np.sqrt(2.0) * (1.0 + r.uniform(-1e-6, 1e-6, n))]
    elif fname == "expm1":
        xs = [r.uniform(-20.0, 88.7, n), r.uniform(-1e-3, 1e-3, n), r.uniform(-0.5, 0.5, n),
              2.0 ** r.uniform(-140, 6, n) * r.choice([-1, 1], n), r.uniform(-110.0, -15.0, n)]
    else:   # log1p
        xs = [r.uniform(-0.999, 10.0, n), 2.0 ** r.uniform(-140, 120, n) * r.choice([-1, 1], n),
              r.uniform(-1e-3, 1e-3, n), -1.0 + 2.0 ** r.uniform(-23, -1, n)]
    with np.errstate(over="ignore", under="ignore"):
        x = np.concatenate(xs).astype(dtype)
    with np.errstate(all="ignore"):
        y = getattr(np, fname)(x.astype(np.float64))
    keep = np.isfinite(x) & np.isfinite(y) & (np.abs(y) <= np.finfo(dtype).max)
    if fname in ("log2", "log10"):
        keep &= x >= np.finfo(dtype).tiny
    return x[keep]


@pytest.mark.parametrize("fname,dtype", CASES, ids=IDS)
def test_values_are_within_the_bound_of_numpys(fname, dtype):
    # x * 1.0 after the function: an exact operation, so the distance is the function's
    fn = make(f"np.{fname}(x) * 1.0")
    plans, capture = capturing_backend()
    cf = framejit.compile(fn, backend=capture)
    x = domain(fname, dtype)
    got, exp = cf(x), fn(x)
    assert got.dtype == exp.dtype == dtype
    assert ulp_apart(got, exp) <= OURS[fname, dtype] + NUMPY[fname, dtype]
    bits = "64" if dtype == np.float64 else "32"
    assert f"fj_{STEM[fname]}{bits}(" in plans[0].source and "fj_call1(calls" not in plans[0].source
    assert framejit.counters["native"]["nodes_fused"] >= 1
    # the same through close_outcomes (warnings, zeros' signs), in blocks of odd sizes
    close_outcomes(fn, [(x[:4099],), (x[-777:],), (x[5000:5000 + 64 * 65].reshape(64, 65),)],
                   ulps=OURS[fname, dtype] + NUMPY[fname, dtype])


def float32_bits(fname, n=200000):
    """Random float32 bit patterns of the function's domain (normal results)."""
    x = rng(11).integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    with np.errstate(invalid="ignore"):
        keep = {"log2": lambda v: v >= np.finfo(np.float32).tiny, "log10": lambda v: v >= np.finfo(np.float32).tiny,
                "expm1": lambda v: v < 88.72, "log1p": lambda v: v > -1.0}[fname](x) & np.isfinite(x)
    near = {"log2": rng(12).uniform(0.5, 2.0, 5000), "log10": rng(12).uniform(0.5, 2.0, 5000),
            "expm1": rng(12).uniform(-3, 3, 5000), "log1p": rng(12).uniform(-0.9, 3, 5000)}[fname]
    return np.concatenate([x[keep], near.astype(np.float32)])


@pytest.mark.parametrize("fname", ["log2", "log10", "expm1", "log1p"])
def test_float32_is_within_one_ulp_of_the_correctly_rounded_value(fname):
    # the reference: NumPy's float64 function rounded once to float32 (off only within
    # 2^-29 of a rounding boundary; tools/vmath_accuracy.py --exhaustive uses mpmath there)
    fn = make(f"np.{fname}(x)")
    plans, capture = capturing_backend()
    cf = framejit.compile(fn, backend=capture)
    x = float32_bits(fname)
    got = cf(x)
    ref = getattr(np, fname)(x.astype(np.float64)).astype(np.float32)
    assert got.dtype == np.float32 and ulp_apart(got, ref) <= OURS[fname, np.float32]
    assert f"fj_{STEM[fname]}32(" in plans[0].source and "fj_call1(calls" not in plans[0].source


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_exact_powers(dtype):
    # log2(2^k) = k (every normal power of two); log10(10^k) = k for the powers of ten
    # NumPy's float64 loop also gives exactly (all of float64's); log2(1) = log10(1) = +0.0
    tiny, big = np.finfo(dtype).tiny, np.finfo(dtype).max
    k = np.arange(-1100, 1100)
    with np.errstate(over="ignore", under="ignore"):
        p2 = np.ldexp(1.0, k).astype(dtype)
    keep = (p2 >= tiny) & (p2 <= big)
    got = framejit.compile(make("np.log2(x) * 1.0"), backend="native")(p2[keep])
    assert np.array_equal(got, k[keep].astype(dtype))
    k10 = np.arange(-307, 309) if dtype == np.float64 else np.arange(-37, 39)
    p10 = np.array([float(f"1e{j}") for j in k10]).astype(dtype)
    got = framejit.compile(make("np.log10(x) * 1.0"), backend="native")(p10)
    assert np.array_equal(got, k10.astype(dtype))
    ones = np.ones(1000, dtype)
    for f in ("log2", "log10"):
        r = framejit.compile(make(f"np.{f}(x) * 1.0"), backend="native")(ones)
        assert np.all(r == 0) and not np.signbit(r).any()


SPECIAL = [0.0, -0.0, 1.0, -1.0, -0.9999999, -1.0000001, -2.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1e-310,
           1e-40, -1e-40, 1e-45, 1.2e-38, 710.0, -750.0, 88.72, 88.7228, 88.73, 89.0, 100.0, -104.0, -120.0, 1e300,
           -1e300, 3e38, 700.0, -708.5, 1e-20, 2.0, 0.5, 10.0, 1000.0]


@pytest.mark.parametrize("fname,dtype", CASES, ids=IDS)
def test_special_values_flags_and_warnings_are_numpys(fname, dtype):
    fn = make(f"np.{fname}(x) + 0.0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        special = np.array(SPECIAL, dtype=np.float64).astype(dtype)
    base = rng(2).uniform(0.5, 3.0, 997).astype(dtype)
    cases = one_special_each(base, special)
    close_outcomes(fn, cases, ulps=OURS[fname, dtype] + NUMPY[fname, dtype])


@pytest.mark.parametrize("mode", ["raise", "ignore", "warn"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("expr,bad", [
    ("np.log2(x) * 2.0 + 1.0", [-1.0, 0.0, np.inf]),        # invalid, divide, none
    ("np.log10(x) * 2.0 + 1.0", [-1.0, 0.0, np.nan]),
    ("np.expm1(x) * 0.5", [100.0, np.inf, -np.inf]),          # overflow (float32; float64 none)
    ("np.log1p(x) * 0.5", [-1.0, -2.0, np.inf])])             # divide, invalid
def test_errstate_is_numpys(expr, bad, mode, dtype):
    fn = make(expr)
    x = rng(3).uniform(0.1, 5.0, 2000).astype(dtype)
    x[7], x[8], x[9] = bad
    cf = framejit.compile(fn, backend="native")
    with np.errstate(all=mode):
        same_outcome_under_errstate(cf, fn, [x], ulps=4)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fname", ["log2", "log10", "expm1", "log1p"])
def test_signed_zeros(fname, dtype):
    # x * 1.0 keeps a zero's sign: expm1 and log1p of -0.0 are -0.0; log2 and log10 of
    # +-0.0 are -inf with divide (NumPy's, through invalid)
    x = np.array([-0.0, 0.0, 1.0, -0.0, 0.5] * 40, dtype=dtype)
    close_outcomes(make(f"np.{fname}(x) * 1.0"), [(x,), (x[:3].copy(),)], ulps=4)
    if fname in ("expm1", "log1p"):
        y = np.array([-0.0, 0.0] * 100, dtype=dtype)
        got = framejit.compile(make(f"np.{fname}(x) * 1.0"), backend="native")(y)
        assert np.array_equal(np.signbit(got), np.signbit(y)) and np.all(got == 0)


def test_float32_expm1_overflow_and_limits():
    # overflow from 88.73 on as NumPy's float32 loop (in the last product), +inf
    # without a flag, -inf and large negatives -1
    fn = make("np.expm1(x) * 1.0")
    cf = framejit.compile(fn, backend="native")
    x = np.array([88.7, 88.72, 88.7228, 88.723, 88.73, 89.0, 1e30, 3.4e38, -3.4e38, -1e30, -104.0, -17.5, -16.0,
                  np.inf, -np.inf, np.nan, 20.0, 50.0] * 30, dtype=np.float32)
    for mode in ("raise", "warn", "ignore"):
        with np.errstate(all=mode):
            got, exp = outcome(cf, [x.copy()]), outcome(fn, [x.copy()])
        assert got[0][0] == exp[0][0] and got[1] == exp[1], (got, exp)
    for v in (np.inf, -np.inf, -1e30, 50.0, -0.0):
        y = np.full(100, v, np.float32)
        with np.errstate(all="raise"):
            got, exp = outcome(cf, [y.copy()]), outcome(fn, [y.copy()])
        assert got[0][0] == exp[0][0] == "ok" and ulp_apart(got[0][1], exp[0][1]) <= 4


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_chain_with_all_four(dtype):
    # in a chain: within a few ulp of the largest term
    expr = "np.log2(x + 1.0) - np.log10(x * 3.0 + 1.0) + np.expm1(x * 0.1) * np.log1p(x)"
    terms = "np.abs(np.log2(x + 1.0)) + np.abs(np.log10(x * 3.0 + 1.0)) + np.abs(np.expm1(x * 0.1) * np.log1p(x))"
    fn, mag = make(expr), make(terms)
    cf = framejit.compile(fn, backend="native")
    x = rng(8).uniform(0.0, 30.0, 5001).astype(dtype)
    got, exp = cf(x), fn(x)
    eps = np.finfo(dtype).eps
    assert got.dtype == exp.dtype and np.all(np.abs(got - exp) <= 8 * eps * mag(x))
    assert framejit.counters["native"]["nodes_fused"] >= 4


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_exact_mode_keeps_numpys_bits(dtype):
    framejit.config.native_exact = True
    fn = make("np.log2(x) + np.log10(x) + np.expm1(x) + np.log1p(x)")
    x = rng(6).uniform(0.01, 20.0, 3001).astype(dtype)
    plans, capture = capturing_backend()
    cf = framejit.compile(fn, backend=capture)
    assert np.array_equal(cf(x), fn(x))
    assert "fj_call1(calls" in plans[0].source and "fj_log2_" not in plans[0].source


def test_float32_expm1_nan_inf_and_tiny_keep_the_kernel():
    # NaN gives NaN, +inf gives +inf, tiny x give x, all without a flag (errstate
    # raise): no call reruns through NumPy.  (A subnormal x raises underflow, as libm's
    # expm1f does where NumPy calls it: tests/test_native_vmath.py
    # test_subnormal_arguments_raise_underflow_as_libm)
    plans, capture = capturing_backend()
    x = rng(9).standard_normal(4099).astype(np.float32)
    x[::17] = np.nan
    x[::23] = np.inf
    x[::29] = -np.inf
    x[5::31] = [1.5e-38, -1.2e-38, 1e-30, -2.0 ** -41, 2.0 ** -39, 1.2e-38, -3e-37] * 19
    fn = make("np.expm1(x) * 2.0")
    cf = framejit.compile(fn, backend=capture)
    close_outcomes(fn, [(x,)], ulps=OURS["expm1", np.float32] + NUMPY["expm1", np.float32])
    with np.errstate(all="raise"):
        got = cf(x)
    assert np.array_equal(np.isnan(got), np.isnan(x))
    assert len(plans) == 1 and plans[0].fallbacks == 0, plans[0].fallbacks
