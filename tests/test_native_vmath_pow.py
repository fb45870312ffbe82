"""np.cbrt and np.power (x ** y) inside the native backend's kernels
(framejit/_vmath.h fj_cbrt64 / fj_cbrt32, fj_pow64 / fj_pow32; issue 23).

With config.native_exact False they fuse for float64 and float32: each value
within 1 ulp of the correctly rounded one (tools/vmath_accuracy.py: cbrt
float64 1, float32 0 over every float32; power float64 1 (max 0.61 measured
against mpmath), float32 1 sampled), so within 2 ulp of NumPy's own (NumPy's
float64 cbrt and power are within 1 ulp, its float32 cbrt 2, power 1).
Special values, warnings and errstate's "raise" are NumPy's: power computes
positive bases, negative bases with integer exponents (the sign by the
exponent's parity), y = 0 and x = 1 (1), NaNs, and a zero base with a
positive exponent natively; a negative base with a non-integer exponent, a
zero base with a negative exponent and infinities raise invalid on purpose,
and NumPy computes the group.  x ** 2, x ** 0.5, x ** -1 (square, sqrt,
reciprocal) and integer powers stay NumPy's exactly.
"""
import warnings

import numpy as np
import pytest

import framejit
from native_compare import capturing_backend, outcome
from test_native_vmath import (_inexact, close_outcomes, make, one_special_each, rng,  # noqa: F401
                               same_outcome_under_errstate, ulp_apart)


# ours within 1 ulp of the correctly rounded value; NumPy's float64 within 1 and
# its float32 cbrt within 2 (tools/vmath_accuracy.py): their sum
BOUND = {("cbrt", np.float64): 2, ("cbrt", np.float32): 3, ("pow", np.float64): 2, ("pow", np.float32): 2}


def calls(plans, stem, bits):
    """Whether a kernel of 'plans' calls fj_<stem><bits> (not only _vmath.h's definition)."""
    return any(p.source and f"= fj_{stem}{bits}(" in p.source for p in plans)


def numpy_loops(plans):
    return any(p.source and ("fj_call1(calls" in p.source or "fj_call2(calls" in p.source) for p in plans)


def bases(dtype, n=5000):
    r = rng(21)
    x = np.concatenate([r.uniform(0.0, 10.0, n // 2), 2.0 ** r.uniform(-30, 30, n - n // 2)])
    return x.astype(dtype)


# ---- values ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("expr", ["np.cbrt(x) * 1.0", "np.cbrt(x * 1e-300) * 1.0", "-np.cbrt(-x)",
                                  "np.cbrt(x * 1e30) * 2.0"])
def test_cbrt_is_within_its_bound(expr, dtype):
    plans, capture = capturing_backend()
    fn = make(expr)
    r = rng(22)
    xs = [(r.standard_normal(5000) * 100).astype(dtype), (2.0 ** r.uniform(-60, 60, 4099)).astype(dtype),
          (r.standard_normal((64, 65)) * 3).astype(dtype)]
    with np.errstate(under="ignore", over="ignore"):
        close_outcomes(fn, [(x,) for x in xs], ulps=BOUND["cbrt", dtype])
    cf = framejit.compile(fn, backend=capture)
    cf(xs[0])
    assert calls(plans, "cbrt", 64 if dtype == np.float64 else 32) and not numpy_loops(plans)
    assert framejit.counters["native"]["nodes_fused"] >= 1


def test_cbrt_of_subnormals_and_extremes():
    for dtype, tiny in ((np.float64, 5e-324), (np.float32, np.float32(1e-45))):
        fi = np.finfo(dtype)
        x = np.array([tiny, -tiny, fi.tiny, -fi.tiny, fi.tiny / 3, fi.max, -fi.max, 8.0, -27.0, 1.0, 0.125] * 50,
                     dtype=dtype)
        x = np.concatenate([x, (np.arange(1, 2000) * tiny).astype(dtype)])
        close_outcomes(make("np.cbrt(x) * 1.0"), [(x,)], ulps=BOUND["cbrt", dtype])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_power_of_arrays_is_within_its_bound(dtype):
    plans, capture = capturing_backend()
    r = rng(23)
    x = bases(dtype)
    y = r.uniform(-4.0, 4.0, len(x)).astype(dtype)
    for expr in ("x ** y * 1.0", "np.power(x, y) * 1.0", "np.power(x, y) + x"):
        fn = make(expr, "x, y")
        close_outcomes(fn, [(x, y), (x[::-1].copy(), y)], ulps=BOUND["pow", dtype] + ("+" in expr))
        framejit.reset()
        framejit.config.native_exact = False
        framejit.compile(fn, backend=capture)(x, y)
    assert calls(plans, "pow", 64 if dtype == np.float64 else 32) and not numpy_loops(plans)
    assert framejit.counters["native"]["nodes_fused"] >= 1


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("expr", ["x ** 3.0 * 1.0", "x ** 2.5 * 1.0", "x ** 3 * 1.0", "x ** -2.5 * 1.0",
                                  "x ** 7 * 1.0", "np.power(x, 3.0) * 1.0", "np.power(x, -0.75) * 1.0",
                                  "(x * 2.0) ** 1.5 * 1.0", "x ** np.float64(2.5) * 1.0",
                                  "x ** np.float64(2.0) * 1.0"])
def test_power_by_scalars(expr, dtype):
    # a float32 array ** a Python float is float32 (NEP 50); a NumPy float64 scalar makes it float64
    x = bases(dtype)
    neg = -x[:1000]
    cf = close_outcomes(make(expr), [(x,), (neg,) if "2.5" not in expr and "1.5" not in expr and "0.75" not in expr
                                     else (x[1000:2000].copy(),)], ulps=BOUND["pow", dtype])
    assert cf(x).dtype == make(expr)(x).dtype


def test_float32_power_of_python_floats_stays_float32():
    plans, capture = capturing_backend()
    x = bases(np.float32)
    fn = make("x ** 2.5 * 1.0")
    cf = framejit.compile(fn, backend=capture)
    got = cf(x)
    assert got.dtype == np.float32 and ulp_apart(got, fn(x)) <= BOUND["pow", np.float32]
    assert calls(plans, "pow", 32) and not numpy_loops(plans)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_power_broadcasts(dtype):
    r = rng(24)
    x = r.uniform(0.1, 10.0, (70, 1)).astype(dtype)
    y = r.uniform(-5.0, 5.0, (1, 80)).astype(dtype)
    fn = make("x ** y * 1.0", "x, y")
    close_outcomes(fn, [(x, y), (y.T.copy() + 6, x.T.copy() - 5)], ulps=BOUND["pow", dtype])
    close_outcomes(make("np.power(x, y) * 1.0", "x, y"), [(x[:, 0].copy(), np.float64(1.75) if dtype == np.float64
                                                          else np.float32(1.75))], ulps=BOUND["pow", dtype])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_negative_bases(dtype):
    # integer exponents: the sign by their parity (large ones, past 2^53 / 2^24, even);
    # non-integer ones: NaN and invalid, NumPy's (the group runs through NumPy)
    r = rng(25)
    x = -bases(dtype, 3000)
    yi = r.integers(-40, 41, 3000).astype(dtype)
    close_outcomes(make("x ** y * 1.0", "x, y"), [(x, yi)], ulps=BOUND["pow", dtype])
    big = 2.0 ** 53 if dtype == np.float64 else 2.0 ** 24
    xs = np.array([-1.0, -1.0, -1.0, -1.0, -1.0000001, -0.9999999, -1.0, -1.0] * 100, dtype=dtype)
    ys = np.array([big, big + 2, big - 1, 3.0, 1001.0, 1001.0, -7.0, 1e30] * 100, dtype=dtype)
    close_outcomes(make("x ** y * 1.0", "x, y"), [(xs, ys)], ulps=BOUND["pow", dtype])
    yf = (yi + 0.5).astype(dtype)
    for mode in ("warn", "raise", "ignore"):
        with np.errstate(invalid=mode):
            close_outcomes(make("x ** y * 1.0", "x, y"), [(x, yf), (x, yi)], ulps=BOUND["pow", dtype])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_power_hard_regions(dtype):
    # x near 1 with large exponents, |y log x| near the overflow and underflow
    # thresholds, subnormal bases and results, huge and tiny exponents
    r = rng(26)
    f64 = dtype == np.float64
    lim = 709.0 if f64 else 88.0
    x1 = 1.0 + r.uniform(-1e-6, 1e-6, 3000)
    y1 = r.uniform(-lim, lim, 3000) / np.log(x1)
    x2 = np.concatenate([r.uniform(0.6, 1.8, 2000), 2.0 ** r.uniform(-50, 50, 2000)])
    y2 = r.uniform(-lim - (36 if f64 else 14), lim, 4000) / np.log(x2)
    sub = (r.uniform(1, 1000, 2000) * (5e-324 if f64 else 1e-45))
    y3 = r.uniform(0.001, 0.9, 2000)
    xs = np.concatenate([x1, x2, sub]).astype(dtype)
    ys = np.concatenate([y1, y2, y3]).astype(dtype)
    keep = np.isfinite(ys)
    with np.errstate(all="ignore"):
        close_outcomes(make("x ** y * 1.0", "x, y"), [(xs[keep], ys[keep])], ulps=BOUND["pow", dtype])
    tiny_y = np.array([1e-30, -1e-30, 1e-45, 1e30, -1e30, 3e38] * 300, dtype=dtype)
    xb = np.tile(np.array([2.0, 0.5, 1e10, 1e-10, 1.0 + 1e-7, 1.0], dtype=dtype), 300)
    with np.errstate(all="ignore"):
        close_outcomes(make("x ** y * 1.0", "x, y"), [(xb, tiny_y)], ulps=BOUND["pow", dtype])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_power_float32_bound_of_the_correctly_rounded_value(dtype):
    # float32: ~200k random float32 bases (bit patterns: every exponent, subnormals too)
    # with exponents keeping the result finite and nonzero, against NumPy's float64
    # power rounded once to float32; float64: against NumPy within BOUND
    plans, capture = capturing_backend()
    fn = make("np.power(x, y)", "x, y")
    cf = framejit.compile(fn, backend=capture)
    r = rng(27)
    if dtype == np.float32:
        bits = r.integers(1, 0x7f800000, 200000, dtype=np.uint64).astype(np.uint32)
        x = bits.view(np.float32)
        lx = np.abs(np.log2(x.astype(np.float64)))
        y = (r.uniform(-1, 1, len(x)) * np.minimum(1e3, 100.0 / np.maximum(lx, 1e-9))).astype(np.float32)
        neg = r.random(len(x)) < 0.2
        x = np.where(neg, -x, x)
        y = np.where(neg, np.round(y), y).astype(np.float32)
        with np.errstate(all="ignore"):
            r64 = np.abs(np.power(x.astype(np.float64), y.astype(np.float64)))
        keep = (r64 >= np.finfo(np.float32).tiny) & (r64 <= np.finfo(np.float32).max)
        x, y = x[keep], y[keep]
        got = cf(x, y)
        ref = np.power(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
        assert got.dtype == np.float32 and ulp_apart(got, ref) <= 1
    else:
        x = 2.0 ** r.uniform(-1000, 1000, 200000)
        y = r.uniform(-1, 1, len(x)) * np.minimum(1e4, 1000.0 / np.abs(np.log2(x)))
        assert ulp_apart(cf(x, y), fn(x, y)) <= BOUND["pow", dtype]
    assert calls(plans, "pow", 32 if dtype == np.float32 else 64) and not numpy_loops(plans)
    assert all(p.fallbacks == 0 for p in plans)


def test_cbrt_float32_bound_of_the_correctly_rounded_value():
    plans, capture = capturing_backend()
    fn = make("np.cbrt(x)")
    cf = framejit.compile(fn, backend=capture)
    bits = rng(28).integers(0, 1 << 32, 200000, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    x = x[np.isfinite(x)]
    got = cf(x)
    ref = np.cbrt(x.astype(np.float64)).astype(np.float32)
    assert got.dtype == np.float32 and ulp_apart(got, ref) <= 1
    assert calls(plans, "cbrt", 32) and not numpy_loops(plans)


# ---- special values, flags, warnings ------------------------------------------------

SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, 2.5, -2.5, np.inf, -np.inf, np.nan, 5e-324, -5e-324,
           1e-310, 1e300, -1e300, 1e-300, 1e38, -1e-45, 1023.5, 1024.0, -1074.0, -1075.0, 127.0, -149.0, -150.0,
           9007199254740993.0, 16777217.0, 1e-20]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cbrt_special_values(dtype):
    fn = make("np.cbrt(x) * 1.0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        special = np.array(SPECIAL, dtype=np.float64).astype(dtype)
    base = rng(29).uniform(0.5, 3.0, 997).astype(dtype)
    cases = one_special_each(base, special)
    close_outcomes(fn, cases, ulps=BOUND["cbrt", dtype])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("which", ["x", "y"])
def test_power_special_values_one_per_call(which, dtype):
    # one special base (exponents 0.5 .. 3 and their integer roundings) or one special
    # exponent (bases 0.5 .. 3, negated where the exponent is an integer) per call
    fn = make("x ** y * 1.0", "x, y")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        special = np.array(SPECIAL, dtype=np.float64).astype(dtype)
    r = rng(30)
    bx = r.uniform(0.5, 3.0, 997).astype(dtype)
    by = r.uniform(-3.0, 3.0, 997).astype(dtype)
    by[::2] = np.round(by[::2])
    bx[::4] = -bx[::4]
    by[::4] = np.round(by[::4])
    cases = []
    for v in special:
        x, y = bx.copy(), by.copy()
        (x if which == "x" else y)[500] = v
        cases.append((x, y))
        x, y = x.copy(), y.copy()
        (y if which == "x" else x)[500] = (-2.0, 3.0, 0.5, -1.0)[len(cases) % 4]
        cases.append((x, y))
    close_outcomes(fn, cases, ulps=BOUND["pow", dtype])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_power_special_pairs(dtype):
    # every pair of special values, all in one array (its outcome and warnings
    # NumPy's whatever the group's path) and each with ordinary values around
    vals = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, np.inf, -np.inf, np.nan, 3.0, -3.0, 2.5, 1e-310, -1e-40]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v = np.array(vals, dtype=np.float64).astype(dtype)
    x, y = np.repeat(v, len(v)), np.tile(v, len(v))
    fn = make("x ** y * 1.0", "x, y")
    close_outcomes(fn, [(x, y)], ulps=BOUND["pow", dtype])
    r = rng(31)
    bx, by = r.uniform(0.5, 3.0, 300).astype(dtype), r.uniform(-3.0, 3.0, 300).astype(dtype)
    cases = []
    for a, b in zip(x, y):
        cx, cy = bx.copy(), by.copy()
        cx[150], cy[150] = a, b
        cases.append((cx, cy))
    close_outcomes(fn, cases, ulps=BOUND["pow", dtype])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("mode", ["raise", "ignore", "warn"])
def test_power_errstate_is_numpys(mode, dtype):
    fn = make("x ** y * 2.0 + np.cbrt(x)", "x, y")
    r = rng(32)
    x = r.uniform(0.1, 5.0, 2000).astype(dtype)
    y = r.uniform(-3.0, 3.0, 2000).astype(dtype)
    big = 2000.0 if dtype == np.float64 else 200.0
    cases = []
    for i, (a, b) in enumerate([(-2.0, 0.5), (0.0, -1.0), (10.0, big), (10.0, -big), (2.0, -1074.0 if dtype == np.float64
                                                                                        else -149.0), (None, None)]):
        cx, cy = x.copy(), y.copy()
        if a is not None:
            cx[7 + i], cy[7 + i] = a, b
        cases.append((cx, cy))
    cf = framejit.compile(fn, backend="native")
    for cx, cy in cases:
        with np.errstate(all=mode):
            same_outcome_under_errstate(cf, fn, [cx, cy], ulps=4)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_underflow_and_overflow_of_results(dtype):
    # subnormal results raise underflow even where exact (2^-1074), as NumPy's
    fn = make("x ** y * 1.0", "x, y")
    f64 = dtype == np.float64
    y = np.arange(-1080, -1015) if f64 else np.arange(-155, -120)
    y = np.concatenate([y, y + 0.5, np.arange(1020, 1030) if f64 else np.arange(125, 130)]).astype(dtype)
    for mode in ("raise", "warn"):
        with np.errstate(under=mode, over=mode):
            for k in range(len(y)):
                close_outcomes(fn, [(np.full(64, 2.0, dtype=dtype), np.full(64, y[k], dtype=dtype))],
                               ulps=BOUND["pow", dtype])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_signed_zeros(dtype):
    x = np.array([-0.0, 0.0, 1.0, -0.0, 0.5, -0.0, 0.0] * 40, dtype=dtype)
    close_outcomes(make("np.cbrt(x) * 1.0"), [(x,)])
    for expr in ("x ** 3.0 * 1.0", "x ** 2.5 * 1.0", "x ** 4 * 1.0", "x ** 0.0 * 1.0", "x ** 1.0 * 1.0",
                 "x ** 3 * 1.0", "x ** -3.0 * 1.0"):
        close_outcomes(make(expr), [(x,)], ulps=BOUND["pow", dtype])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nans_and_zero_bases_keep_the_kernel(dtype):
    # NaN arguments, zero bases with positive exponents (relu(x) ** 1.5), y = 0 and
    # x = 1 are computed in the kernel: no run through NumPy
    plans, capture = capturing_backend()
    r = rng(33)
    x = np.maximum(r.standard_normal(4099), 0.0).astype(dtype)
    y = r.uniform(0.5, 3.0, 4099).astype(dtype)
    x[::17] = np.nan
    y[::19] = np.nan
    y[::23] = 0.0
    x[::29] = 1.0
    fn = make("x ** y * 1.0", "x, y")
    cf = framejit.compile(fn, backend=capture)
    close_outcomes(fn, [(x, y)], ulps=BOUND["pow", dtype])
    with np.errstate(all="raise"):
        got = cf(x, y)
    assert np.array_equal(np.isnan(got), np.isnan(fn(x, y)))
    assert plans and all(p.fallbacks == 0 for p in plans), [p.fallbacks for p in plans]


# ---- what stays NumPy's -----------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("expr", ["x ** 2 + 1.0", "x ** 0.5 + 1.0", "x ** -1 + 1.0", "x ** 2.0 * 3.0",
                                  "x ** 1 + 1.0", "x ** 0 + 1.0"])
def test_square_sqrt_reciprocal_stay_numpys(expr, dtype):
    # ndarray.__pow__ computes these with other ufuncs: NumPy's bits and warnings
    plans, capture = capturing_backend()
    fn = make(expr)
    x = np.concatenate([rng(34).uniform(-3, 3, 3000), [0.0, -0.0, np.inf, np.nan, -1.0, 1e200, 1e-200]]).astype(dtype)
    cf = framejit.compile(fn, backend=capture)
    for mode in ("warn", "raise", "ignore"):
        with np.errstate(all=mode):
            got, exp = outcome(cf, [x.copy()]), outcome(fn, [x.copy()])
        assert got[0][0] == exp[0][0] and got[1] == exp[1]
        if exp[0][0] == "ok":
            g, e = got[0][1], exp[0][1]
            assert g.dtype == e.dtype and np.array_equal(g.view(np.uint8), e.view(np.uint8))
    assert not calls(plans, "pow", 64) and not calls(plans, "pow", 32)


def test_integer_powers_stay_numpys():
    plans, capture = capturing_backend()
    r = rng(35)
    x = r.integers(-9, 10, 5000)
    y = r.integers(0, 12, 5000)
    for expr, args in (("x ** y + 1", (x, y)), ("np.power(x, y) * 2", (x, y)), ("x ** 3 + 1", (x,)),
                       ("x.astype(np.int32) ** 2 + 1", (x,))):
        fn = make(expr, "x, y" if len(args) == 2 else "x")
        cf = framejit.compile(fn, backend=capture)
        got, exp = cf(*args), fn(*args)
        assert got.dtype == exp.dtype and np.array_equal(got, exp)
    assert not any(calls(plans, "pow", b) for b in (32, 64))


def test_exact_mode_keeps_numpys_bits():
    framejit.config.native_exact = True
    plans, capture = capturing_backend()
    fn = make("x ** y * 2.0 + np.cbrt(x)", "x, y")
    r = rng(36)
    x, y = r.uniform(0.1, 5.0, 5000), r.uniform(-3.0, 3.0, 5000)
    cf = framejit.compile(fn, backend=capture)
    assert np.array_equal(cf(x, y), fn(x, y))
    assert not calls(plans, "pow", 64) and not calls(plans, "cbrt", 64)


def test_mixed_dtypes_and_strided_operands():
    # int ** float and float32 ** float64 are float64 powers; strided and
    # transposed operands take the kernels' strided loops
    r = rng(37)
    xi = r.integers(0, 50, 4000)
    x32 = r.uniform(0.1, 5.0, 4000).astype(np.float32)
    y64 = r.uniform(-2.0, 2.0, 4000)
    close_outcomes(make("x ** 2.5 * 1.0"), [(xi,)], ulps=BOUND["pow", np.float64])
    close_outcomes(make("x ** y * 1.0", "x, y"), [(x32, y64), (xi, y64), (x32, y64.astype(np.float32))],
                   ulps=BOUND["pow", np.float64])
    x = r.uniform(0.1, 5.0, (300, 200))
    y = r.uniform(-2.0, 2.0, (200, 300))
    close_outcomes(make("x[::2, ::3] ** y.T[::2, ::3] * 1.0 + np.cbrt(x[::2, ::3])", "x, y"), [(x, y)],
                   ulps=BOUND["pow", np.float64] + 1)
    close_outcomes(make("np.cbrt(x.T) * 1.0"), [(x.astype(np.float32),)], ulps=BOUND["cbrt", np.float32])


def test_large_calls_with_one_special_element_late():
    # (the kernels may split a large call between threads: the flag raised on
    # purpose in the last block still sends the call through NumPy)
    r = rng(38)
    x = r.uniform(0.1, 5.0, 1 << 21)
    y = r.uniform(-2.0, 2.0, 1 << 21)
    fn = make("x ** y * 1.0", "x, y")
    cases = [(x, y)]
    for i, (a, b) in enumerate([(-2.0, 0.5), (0.0, -1.0), (10.0, 400.0)]):
        cx = x.copy()
        cy = y.copy()
        cx[-3 - i], cy[-3 - i] = a, b
        cases.append((cx, cy))
    close_outcomes(fn, cases, ulps=BOUND["pow", np.float64])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_tiny_exponents_raise_no_flag(dtype):
    # y log x tiny (x near 1, y down to the smallest subnormal): the result is 1 and
    # no flag is raised (the polynomials' powers of a tiny argument once underflowed:
    # spurious, so every such call ran through NumPy under errstate(under="raise"))
    plans, capture = capturing_backend()
    fn = make("x ** y * 1.0", "x, y")
    cf = framejit.compile(fn, backend=capture)
    tiny = 5e-324 if dtype == np.float64 else 1e-45
    one_up = np.nextafter(dtype(1), dtype(2))
    x = np.tile(np.array([one_up, 1.0 - 1e-7, 2.0, 1e30, 3.0], dtype=dtype), 200)
    y = np.tile(np.array([tiny, -tiny, 1e-30, -1e-30, 1e-20, 1e-38], dtype=dtype), 200)[:len(x)]
    with np.errstate(all="raise"):
        got = cf(x, y)
    assert np.array_equal(got, fn(x, y)) and all(p.fallbacks == 0 for p in plans), [p.fallbacks for p in plans]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_negative_zero_to_the_half_is_numpys(dtype):
    # np.power's loop computes an exponent of stride 0 equal to 0.5 as sqrt (sqrt(-0.0)
    # is -0.0) and others by pow (pow(-0.0, 0.5) is +0.0): fj_pow leaves -0.0 ** 0.5
    # to NumPy (found by review: the kernel gave +0.0 for np.power(x, 0.5))
    x = np.array([-0.0, 0.0, 4.0, 2.0] * 16, dtype=dtype)
    for expr, args in (("np.power(x, 0.5) * 1.0", (x,)), ("np.power(x, 0.5) + x", (x,)),
                       ("x ** s * 1.0", (x, np.array(0.5, dtype=dtype))),
                       ("x ** s * 1.0", (x, np.array([0.5], dtype=dtype))),
                       ("np.power(x, y) * 1.0", (x, np.full(len(x), 0.5, dtype=dtype))),
                       ("np.power(x, y) * 1.0", (x, np.where(np.arange(len(x)) % 2 == 0, 0.5, 2.5).astype(dtype)))):
        fn = make(expr, "x, s" if "s" in expr else "x, y" if "y" in expr else "x")
        got, exp = framejit.compile(fn, backend="native")(*args), fn(*args)
        assert got.dtype == exp.dtype and np.array_equal(np.signbit(got), np.signbit(exp)), (expr, got[:4], exp[:4])
        assert ulp_apart(got, exp) <= BOUND["pow", dtype]
