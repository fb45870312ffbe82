"""np.arctan, np.arcsin, np.arccos and np.arctan2 inside the native backend's
kernels (framejit/_vmath.h fj_atan*, fj_asin*, fj_acos*, fj_atan2_*; docs/native.md
"Transcendental functions").

With config.native_exact False they fuse for float64 and float32 (float32 in
float64 lanes): each value within 1 ulp of the correctly rounded one
(tools/vmath_accuracy.py; float32 on every input for the unary ones), so within
that plus NumPy's own error of NumPy's.  Special values (signed zeros, infinities,
NaN, subnormal arguments and results, |x| = 1 and past it) are NumPy's values, and
the warnings NumPy gives (arcsin / arccos invalid past |x| = 1; arctan2 underflow
of subnormal results) are NumPy's under every errstate: arcsin and arccos raise
invalid on purpose past |x| = 1 (the group then runs through NumPy); arctan2 may
raise underflow where NumPy's does not (then too), never the other way.
"""
import itertools
import warnings

import numpy as np
import pytest

import framejit
from native_compare import capturing_backend, outcome
from test_native_vmath import (_inexact, close_outcomes, make, one_special_each, rng,  # noqa: F401
                               same_outcome_under_errstate, ulp_apart)

HEADER = open(framejit.native.__file__.replace("native.py", "_vmath.h")).read()


STEM = {f: framejit._C.native_vmath()[f][0] for f in ("arctan", "arcsin", "arccos", "arctan2")}

# ours: at most 1 ulp from the correctly rounded value (float64: 10^6 inputs a
# function; float32: every input of arctan, arcsin, arccos, 10^6 of arctan2);
# NumPy's own maximum error (the same tool): float64 1; float32 arctan 2, arcsin 3,
# arccos 2, arctan2 3
OURS = 1
NUMPY32 = {"arctan": 2, "arcsin": 3, "arccos": 2, "arctan2": 3}


def bound(fname, dtype):
    return OURS + (1 if dtype == np.float64 else NUMPY32[fname])


def kernel_calls(src, name):
    """Calls of 'name' in a kernel source beyond those of _vmath.h's own text."""
    return src.count(name) - HEADER.count(name)


def assert_kernel_computes(plan, fname, dtype):
    name = f"fj_{STEM[fname]}{'64' if dtype == np.float64 else '32'}("
    assert kernel_calls(plan.source, name) >= 1, name
    assert "fj_call1(calls" not in plan.source and "fj_call2(calls" not in plan.source


def unary_inputs(fname, dtype):
    r = rng(21)
    if fname == "arctan":
        # the interval ends of the reduction (7/16 ... 39/16), 2^66 (pi/2 past it), 2^-27 (x itself below)
        ends = np.array([7 / 16, 11 / 16, 19 / 16, 39 / 16, 1.0, 2.0 ** 66, 2.0 ** -27])
        hard = np.outer(1 + r.uniform(-1e-6, 1e-6, 300), ends).ravel() * r.choice([-1, 1], 300 * len(ends))
        return [r.standard_normal(4001) * 10, 2.0 ** r.uniform(-60, 80, 3001) * r.choice([-1, 1], 3001), hard,
                r.uniform(-3, 3, 3000)]
    # arcsin, arccos: |x| <= 1; near 0, near 1/2 (the two forms meet), near +-1
    edge = 2.0 ** -r.uniform(1, 52 if dtype == np.float64 else 23, 2000)
    return [r.uniform(-1, 1, 4001), 2.0 ** r.uniform(-60, 0, 3001) * r.choice([-1, 1], 3001),
            np.concatenate([1 - edge, edge - 1, 0.5 + r.uniform(-1e-3, 1e-3, 500), -0.5 + r.uniform(-1e-3, 1e-3, 500)])]


def binary_inputs(dtype):
    r = rng(22)
    y = r.standard_normal(3000) * 5
    near = y * (1 + r.uniform(-1e-4, 1e-4, 3000)) * r.choice([-1, 1], 3000)   # |y| ~ |x|: the diagonals
    mags = 2.0 ** r.uniform(-40, 40, (2, 3000)) * r.choice([-1, 1], (2, 3000))
    return [(y, r.standard_normal(3000) * 5), (y, near), (near, y), (mags[0], mags[1]),
            (r.uniform(-1e-3, 1e-3, 3000), r.uniform(-10, 10, 3000))]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fname", ["arctan", "arcsin", "arccos"])
def test_unary_values_are_within_their_bound(fname, dtype):
    plans, capture = capturing_backend()
    fn = make(f"np.{fname}(x) * 1.0")
    cases = [(np.asarray(x, dtype=np.float64).astype(dtype),) for x in unary_inputs(fname, dtype)]
    close_outcomes(fn, cases, ulps=bound(fname, dtype))
    assert framejit.counters["native"]["nodes_fused"] >= 1
    framejit.reset()
    cf = framejit.compile(fn, backend=capture)
    cf(*cases[0])
    assert_kernel_computes(plans[0], fname, dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_arctan2_values_are_within_their_bound(dtype):
    plans, capture = capturing_backend()
    fn = make("np.arctan2(y, x) * 1.0", "y, x")
    cases = [(y.astype(dtype), x.astype(dtype)) for y, x in binary_inputs(dtype)]
    close_outcomes(fn, cases, ulps=bound("arctan2", dtype))
    assert framejit.counters["native"]["nodes_fused"] >= 1
    framejit.reset()
    cf = framejit.compile(fn, backend=capture)
    cf(*cases[0])
    assert_kernel_computes(plans[0], "arctan2", dtype)


def float32_bits(n, seed):
    return rng(seed).integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)


@pytest.mark.parametrize("fname", ["arctan", "arcsin", "arccos", "arctan2"])
def test_float32_is_within_1_ulp_of_the_correctly_rounded_value(fname):
    # the reference: NumPy's float64 function rounded once to float32 (off only within
    # 2^-29 of a rounding boundary; tools/vmath_accuracy.py uses mpmath there)
    plans, capture = capturing_backend()
    if fname == "arctan2":
        fn = make("np.arctan2(y, x)", "y, x")
        y, x = float32_bits(200000, 31), float32_bits(200000, 32)
        keep = np.isfinite(y) & np.isfinite(x)
        args = (y[keep], x[keep])
    else:
        fn = make(f"np.{fname}(x)")
        x = float32_bits(400000, 33)
        with np.errstate(invalid="ignore"):
            x = x[np.isfinite(x) & ((np.abs(x) <= 1) if fname != "arctan" else True)]
        near = (1 - 2.0 ** -rng(34).uniform(1, 24, 5000)) * rng(35).choice([-1, 1], 5000)
        args = (np.concatenate([x, near.astype(np.float32)]),)
    cf = framejit.compile(fn, backend=capture)
    got = cf(*args)
    with np.errstate(under="ignore"):
        ref = getattr(np, fname)(*[a.astype(np.float64) for a in args]).astype(np.float32)
    assert got.dtype == np.float32 and len(got) > 100000
    assert ulp_apart(got, ref) <= 1
    assert np.array_equal(np.signbit(got), np.signbit(ref))
    assert_kernel_computes(plans[0], fname, np.float32)


UNARY_SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 0.4375, 2.4375, -1.0000001, 1.0000001, 1.5, -2.0, np.inf, -np.inf,
                 np.nan, 5e-324, -5e-324, 1e-310, 1e-45, -1e-40, 1e-300, -1e-20, 3e-9, 1e300, -1e300, 3e38, 2.0 ** 66,
                 1 - 2.0 ** -53, -1 + 2.0 ** -53, 1 - 2.0 ** -24, 1 + 2.0 ** -52]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fname", ["arctan", "arcsin", "arccos"])
def test_special_values_flags_and_warnings_are_numpys(fname, dtype):
    fn = make(f"np.{fname}(x) * 1.0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        special = np.array(UNARY_SPECIAL).astype(dtype)
    base = rng(23).uniform(-0.9, 0.9, 997).astype(dtype)
    cases = one_special_each(base, special)
    cf = close_outcomes(fn, cases, ulps=bound(fname, dtype))
    # and every special value's result bit for bit (ours is NumPy's there), under each errstate
    for mode in ("raise", "warn", "ignore"):
        with np.errstate(all=mode):
            for (x,) in cases[1:]:
                got, exp = outcome(cf, [x.copy()]), outcome(fn, [x.copy()])
                assert got[0][0] == exp[0][0] and got[1] == exp[1], (x[500], got, exp)
                if exp[0][0] == "ok":
                    g, e = got[0][1][500], exp[0][1][500]
                    assert (np.isnan(g) and np.isnan(e)) or g.tobytes() == e.tobytes() or \
                        (0 < abs(e) and ulp_apart(g, e) <= bound(fname, dtype)), (x[500], g, e)
    assert framejit.counters["native"]["nodes_fused"] >= 1


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fname", ["arctan", "arcsin", "arccos"])
def test_signed_zeros_and_exact_points(fname, dtype):
    x = np.array([-0.0, 0.0, 1.0, -1.0, 0.5, -0.5, -0.0, 1e-30] * 40, dtype=dtype)
    cf = close_outcomes(make(f"np.{fname}(x) * 1.0"), [(x,)])
    got, exp = cf(x), getattr(np, fname)(x)
    # at 0, +-1 and tiny x (0, pi/2, pi, pi/4 rounded, x itself, the zeros' signs): NumPy's bits;
    # at +-1/2 NumPy's float64 arccos is 1 ulp from the correctly rounded pi/3 (ours is not)
    k = np.abs(x) != 0.5
    assert got[k].tobytes() == exp[k].tobytes()


def special_pairs(dtype):
    fi = np.finfo(dtype)
    s = [0.0, -0.0, float(fi.smallest_subnormal), -float(fi.smallest_subnormal), 1.0, -1.0, float(fi.max),
         -float(fi.max), np.inf, -np.inf, np.nan]
    return np.array(list(itertools.product(s, s)), dtype=dtype).T


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_arctan2_special_pairs_are_numpys(dtype):
    # {+-0, +-tiny subnormal, +-1, +-huge, +-inf, nan} x the same: NumPy's bits (zeros'
    # signs, +-pi, +-pi/2, +-pi/4, +-3pi/4, NaN, subnormal results) except where both are
    # finite nonzero numbers of the same magnitude (atan2(1, 1): each within its bound),
    # and NumPy's warnings under every errstate, each pair a call of its own among
    # ordinary pairs
    fn = make("np.arctan2(y, x) * 1.0", "y, x")
    ys, xs = special_pairs(dtype)
    cf = framejit.compile(fn, backend="native")
    got, exp = cf(ys, xs), fn(ys, xs)
    general = np.isfinite(ys) & np.isfinite(xs) & (ys != 0) & (xs != 0) & (np.abs(ys) == np.abs(xs))
    assert got[~general].tobytes() == exp[~general].tobytes(), [
        (y, x, g, e) for y, x, g, e in zip(ys, xs, got, exp) if g.tobytes() != e.tobytes()]
    assert ulp_apart(got[general], exp[general]) <= bound("arctan2", dtype)
    by, bx = rng(24).uniform(-2, 2, (2, 333)).astype(dtype)
    for mode in ("raise", "warn", "ignore"):
        with np.errstate(all=mode):
            for y, x in zip(ys, xs):
                a, b = by.copy(), bx.copy()
                a[100], b[100] = y, x
                g, e = outcome(cf, [a, b]), outcome(fn, [a, b])
                assert g[0][0] == e[0][0] and g[1] == e[1], (y, x, mode, g, e)
                if e[0][0] == "ok":
                    gv, ev = g[0][1][100], e[0][1][100]
                    assert (np.isnan(gv) and np.isnan(ev)) or gv.tobytes() == ev.tobytes() or \
                        ulp_apart(gv, ev) <= bound("arctan2", dtype), (y, x, gv, ev)
    assert framejit.counters["native"]["nodes_fused"] >= 1


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_arctan2_subnormal_results_warn_as_numpys(dtype):
    # quotients |y / x| across the bottom of the exponent range, x of both signs
    # and y / x overflowing (|y| huge, |x| tiny): NumPy warns about underflow for
    # (some of) the subnormal and zero results; ours warns for each, and then the
    # group's NumPy run decides
    fi = np.finfo(dtype)
    r = rng(25)
    lo = np.log2(float(fi.smallest_subnormal))
    y = (2.0 ** r.uniform(lo, lo + 60, 4000) * r.choice([-1, 1], 4000)).astype(dtype)
    x = (2.0 ** r.uniform(-20, 60, 4000) * r.choice([-1, 1], 4000)).astype(dtype)
    fn = make("np.arctan2(y, x) + 0.0", "y, x")
    cf = close_outcomes(fn, [(y, x), (x, y)], ulps=bound("arctan2", dtype))
    for mode in ("raise", "warn"):
        with np.errstate(under=mode):
            for k in range(0, 4000, 500):
                args = [y[k:k + 500].copy(), x[k:k + 500].copy()]
                g, e = outcome(cf, args), outcome(fn, args)
                assert g[0][0] == e[0][0] and g[1] == e[1], (mode, k, g, e)
    big = np.array([fi.max, -fi.max, 1e30, 3.0] * 50, dtype=dtype)
    tiny = np.array([fi.smallest_subnormal, -fi.tiny, 1e-30, -0.0] * 50, dtype=dtype)
    close_outcomes(fn, [(big, tiny), (tiny, big), (big, big), (tiny, tiny)], ulps=bound("arctan2", dtype))


@pytest.mark.parametrize("mode", ["raise", "ignore", "warn"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_errstate_is_numpys(mode, dtype):
    fn = make("np.arcsin(x) * 2.0 + np.arccos(x * 0.5) + np.arctan(x) + np.arctan2(x, x - 0.25)")
    x = rng(26).uniform(-1, 1, 2000).astype(dtype)
    cf = framejit.compile(fn, backend="native")
    for bad in (None, 1.5, -np.inf, np.nan):
        a = x.copy()
        if bad is not None:
            a[7] = bad
        with np.errstate(all=mode):
            same_outcome_under_errstate(cf, fn, [a], ulps=16)  # (a sum of terms: a few ulp of them)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nan_arguments_keep_the_kernel(dtype):
    # a NaN gives NaN with no flag NumPy would raise: no call runs through NumPy
    # (arcsin, arccos: their classes are integer compares; a signaling vector
    # compare's invalid is confirmed by the scalar recheck, which raises none)
    plans, capture = capturing_backend()
    x = rng(27).uniform(-1, 1, 4099).astype(dtype)
    x[::17] = np.nan
    for expr in ("np.arctan(x) * 2.0", "np.arcsin(x) * 0.5", "np.arccos(x) + 1.0", "np.arctan2(x, 0.5) * 2.0",
                 "np.arctan2(0.5, x) * 2.0"):
        fn = make(expr)
        cf = framejit.compile(fn, backend=capture)
        close_outcomes(fn, [(x,)], ulps=4)
        assert np.array_equal(np.isnan(cf(x)), np.isnan(x))
    assert len(plans) == 5 and all(p.fallbacks == 0 for p in plans), [p.fallbacks for p in plans]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_arctan2_operands(dtype):
    # both operands are cast to the common float type by the kernel: arrays of both
    # dtypes, a Python float constant on either side, broadcasting (n, 1) with (1, m),
    # 0-d arrays and NumPy scalars
    r = rng(28)
    other = np.float32 if dtype == np.float64 else np.float64
    y, x = r.standard_normal((2, 2001)).astype(dtype)
    col, row = r.standard_normal((40, 1)).astype(dtype), r.standard_normal((1, 53)).astype(dtype)
    b = bound("arctan2", np.float32 if dtype == np.float32 else np.float64)
    f2 = "np.arctan2(y, x) * 1.0"   # (a function of its own per kind of operands: guards recompile)
    close_outcomes(make(f2, "y, x"), [(y, x), (y, x.astype(other)), (x.astype(other), y)], ulps=b)
    assert framejit.counters["native"]["nodes_fused"] >= 1
    close_outcomes(make(f2, "y, x"), [(col, row), (row, col), (y[:1], x), (y[:, None][:5], x[:7])], ulps=b)
    for expr in ("np.arctan2(y, 0.75) * 1.0", "np.arctan2(-2.5, y) * 1.0", "np.arctan2(y, -0.0) + 1.0",
                 "np.arctan2(0.0, y) * 1.0"):
        close_outcomes(make(expr, "y"), [(y,), (col,)], ulps=b)
    for args in [(y, np.array(0.5, dtype=dtype)), (np.array(-0.0, dtype=dtype), x), (y, np.array(3.0)),
                 (y, dtype(-2.0)), (dtype(0.5), x), (y, np.float64(7.0))]:
        close_outcomes(make(f2, "y, x"), [args], ulps=b)


def test_exact_mode_keeps_numpys_bits():
    framejit.config.native_exact = True
    fn = make("np.arctan2(y, x) * 0.5 + np.arcsin(y * 0.1) - np.arccos(x * 0.1) + np.arctan(y)", "y, x")
    y, x = rng(29).standard_normal((2, 10000))
    for dt in (np.float64, np.float32):
        plans, capture = capturing_backend()
        framejit.reset()
        framejit.config.native_exact = True
        cf = framejit.compile(fn, backend=capture)
        a, b = y.astype(dt), x.astype(dt)
        assert cf(a, b).tobytes() == fn(a, b).tobytes()
        assert "fj_call" in plans[0].source and kernel_calls(plans[0].source, "fj_atan2_") <= 0
        framejit.reset()
        framejit.config.native_exact = False
        cf = framejit.compile(fn, backend=capture)
        # a sum of terms below 2 pi each: a few ulp of them (cancellation makes ulp of the sum meaningless)
        assert np.max(np.abs(cf(a, b) - fn(a, b))) <= 16 * np.finfo(dt).eps * 8
        for f in ("arctan2", "arcsin", "arccos", "arctan"):
            assert_kernel_computes(plans[1], f, dt)


def test_reductions_and_row_groups():
    # a sum of arcsin runs in the pairwise group, a row mean of arctan2 in a row group
    r = rng(30)
    x = r.uniform(-1, 1, 100000)
    cf = framejit.compile(make("np.arcsin(x).sum()"), backend="native")
    got, exp = cf(x), np.arcsin(x).sum()
    assert abs(got - exp) <= 1e-12 * np.abs(np.arcsin(x)).sum()
    y, z = r.standard_normal((2, 300, 257))
    fn = make("np.arctan2(y, z).mean(axis=1) + np.arctan(y).sum(axis=1)", "y, z")
    cf = framejit.compile(fn, backend="native")
    for dt in (np.float64, np.float32):
        a, b = y.astype(dt), z.astype(dt)
        got, exp = cf(a, b), fn(a, b)
        assert got.dtype == exp.dtype and got.shape == exp.shape
        assert np.all(np.abs(got - exp) <= 300 * np.finfo(dt).eps * 257)
    assert framejit.counters["native"]["nodes_fused"] >= 2
