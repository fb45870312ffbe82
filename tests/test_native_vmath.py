"""Transcendental functions inside the native backend's kernels (framejit/_vmath.h,
docs/native.md "Transcendental functions"; issue 23).

With config.native_exact False, np.exp, np.log, np.sin, np.cos, np.tanh, np.expm1
and np.log1p of float64 and float32 fuse into the kernels: each
value is within the bound docs/native.md gives of the correctly rounded one
(float64: 1 ulp, tanh and expm1 2; float32: 1 ulp, sin and cos 2;
tools/vmath_accuracy.py measures it, float32 on every input), so within a few
ulp of NumPy's own (log2, log10: tests/test_native_vmath_log.py).  Special values, the
warnings NumPy raises (overflow, divide, invalid) and errstate's "raise" are
exactly NumPy's.  With native_exact True (the default) the functions run
through NumPy: bit for bit NumPy's, as every other native test checks.
"""
import os
import re
import warnings

import numpy as np
import pytest

import framejit
from difftools import clone
from native_compare import capturing_backend, outcome


@pytest.fixture(autouse=True)
def _inexact(native_kernel_cache):
    """native_exact False for each test (the newer functions' files import it too)"""
    framejit.reset()
    framejit.config.native_exact = False
    yield
    framejit.config.native_exact = True
    framejit.reset()


_n = [0]


def make(expr, params="x"):
    _n[0] += 1
    src = f"def vm_{_n[0]}({params}):\n    return {expr}\n"
    ns = {"np": np}
    exec(compile(src, f"<vmath case {_n[0]}: {expr}>", "exec"), ns)
    return ns[f"vm_{_n[0]}"]


def ulp_apart(a, b):
    """Largest distance in ulp between same-dtype float arrays (NaN must match NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    it = np.int64 if a.dtype == np.float64 else np.int32
    na, nb = np.isnan(a), np.isnan(b)
    assert np.array_equal(na, nb), "NaN positions differ"
    ia, ib = a[~na].view(it).astype(np.int64), b[~nb].view(it).astype(np.int64)
    ia = np.where(ia < 0, np.iinfo(it).min - ia, ia)
    ib = np.where(ib < 0, np.iinfo(it).min - ib, ib)
    return int(np.abs(ia - ib).max()) if ia.size else 0


def close_outcomes(fn, args_list, ulps=2):
    """The compiled function (twice: cold, warm) against plain: the same kind
    of outcome and warnings, values within 'ulps' of NumPy's; returns the
    compiled function."""
    cf = framejit.compile(fn, backend="native")
    for args in args_list:
        exp = outcome(fn, [clone(a) for a in args])
        for _ in range(2):
            got = outcome(cf, [clone(a) for a in args])
            assert got[0][0] == exp[0][0], (got, exp)
            assert got[1] == exp[1], f"warnings {got[1]} vs NumPy {exp[1]}"
            if exp[0][0] == "raise":
                assert got[0][1:] == exp[0][1:]
                continue
            g, e = got[0][1], exp[0][1]
            assert type(g) is type(e) and g.dtype == e.dtype and g.shape == e.shape
            assert np.array_equal(np.isinf(g), np.isinf(e)) and np.array_equal(g[np.isinf(g)], e[np.isinf(e)])
            zero = e == 0   # a zero's sign is NumPy's (exp(-0.0) aside, whose value is 1)
            assert np.array_equal(g == 0, zero) and np.array_equal(np.signbit(g[zero]), np.signbit(e[zero]))
            assert ulp_apart(g, e) <= ulps, (fn, ulp_apart(g, e))
    return cf


def rng(k=0):
    return np.random.default_rng(k)


def one_special_each(base, special, at=500):
    """The argument sets: 'base' alone, then each special value at index 'at' of a copy."""
    cases = [(base,)]
    for v in special:   # one special value among ordinary ones, each a call of its own
        x = base.copy()
        x[at] = v
        cases.append((x,))
    return cases


def same_outcome_under_errstate(cf, fn, args, ulps=4):
    """Under the errstate in force: the compiled function raises what the plain one
    does, with the same warnings, or returns values within 'ulps' of it."""
    exp = outcome(fn, [a.copy() for a in args])
    got = outcome(cf, [a.copy() for a in args])
    assert got[0][0] == exp[0][0] and got[1] == exp[1], (got, exp)
    if exp[0][0] == "ok":
        assert ulp_apart(got[0][1], exp[0][1]) <= ulps
    else:
        assert got[0][1:] == exp[0][1:]


SPECIAL = [0.0, -0.0, 1.0, -1.0, -0.9999999, -1.0000001, -2.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1e-310, 710.0, -750.0, 88.8, -104.0,
           1e300, -1e300, 700.0, -708.5, 262144.0, 262145.0, -3e5, 22.0, -23.0, 1e-20]


def inputs(dtype):
    r = rng(1)
    return [r.standard_normal(5000).astype(dtype) * 20, r.uniform(-80, 80, 4099).astype(dtype),
            (r.standard_normal((64, 65)) * 3).astype(dtype)]


# each function's own result, computed from the same operand as NumPy's and
# then scaled exactly (a power of two, a sign): its ulp distance is the function's
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("expr", ["np.exp(x)", "np.exp(x * 0.5) * 2.0", "-np.exp(-x)", "np.log(np.abs(x) + 1.0)",
                                  "np.log(x * x + 1.0) * 4.0", "np.sin(x)", "np.cos(x * 1000.0)", "-np.sin(x * 3.0)",
                                  "np.tanh(x)", "np.tanh(x * 0.01) * 0.5", "np.expm1(x)", "np.expm1(x * 1e-4)",
                                  "np.log1p(np.abs(x))", "np.log1p(x * 1e-6)"])
def test_fused_functions_are_within_their_bound(expr, dtype):
    fname = expr.split("np.")[1].split("(")[0]
    if dtype == np.float64:
        bound = 3 if fname in ("tanh", "expm1") else 2   # tanh, expm1: 2 ulp of the correctly rounded value
    else:
        # ours within BOUND32 of the correctly rounded value, NumPy's float32 loops within
        # their own (docs/native.md's table, every float32: exp 3, log 4, expm1 3, log1p 2, sin / cos / tanh 1)
        bound = BOUND32.get(fname, 0) + {"exp": 3, "log": 4, "expm1": 3, "log1p": 2}.get(fname, 1) \
            if fname in BOUND32 else 0
    close_outcomes(make(expr), [(x,) for x in inputs(dtype)], ulps=bound)
    if dtype == np.float64 or fname in BOUND32:
        assert framejit.counters["native"]["nodes_fused"] >= 1


# float32 exp, log, sin, cos, tanh, expm1 and log1p are framejit/_vmath.h's own
# (float32 lanes): their maximum error in ulp over every float32 input
# (tools/vmath_accuracy.py --exhaustive)
BOUND32 = {"exp": 1, "log": 1, "sin": 2, "cos": 2, "tanh": 1, "expm1": 1, "log1p": 1}


def float32_domain(fname, n=200000):
    """Random float32 bit patterns over the range where the function's result is
    a normal number (log: positive normal; sin, cos: |x| <= 2^16)."""
    bits = rng(11).integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    keep = {"exp": lambda v: (v > -87.33) & (v < 88.72), "log": lambda v: v >= np.finfo(np.float32).tiny,
            "sin": lambda v: np.abs(v) <= 65536, "cos": lambda v: np.abs(v) <= 65536,
            "tanh": np.isfinite, "expm1": lambda v: v < 88.72, "log1p": lambda v: v > -1.0}[fname]
    x = x[np.isfinite(x)] if fname in ("expm1", "log1p") else x
    with np.errstate(invalid="ignore"):
        x = x[keep(x)]
    # and the ranges that matter most: near 0, and near multiples of pi/2 for sin and cos
    near = (rng(12).uniform(-3, 3, 5000) if fname not in ("log", "log1p") else
            rng(12).uniform(0.5 if fname == "log" else -0.9, 2, 5000)).astype(np.float32)
    if fname in ("sin", "cos"):
        near = (np.round(rng(13).uniform(-4e4, 4e4, 5000)) * (np.pi / 2)).astype(np.float32)
    return np.concatenate([x, near])


@pytest.mark.parametrize("fname", sorted(BOUND32))
def test_float32_functions_are_within_their_bound_of_the_correctly_rounded_value(fname):
    # the reference: NumPy's float64 function rounded once to float32 (off only within
    # 2^-29 of a rounding boundary; tools/vmath_accuracy.py uses mpmath there)
    fn = make(f"np.{fname}(x)")
    plans, capture = capturing_backend()
    cf = framejit.compile(fn, backend=capture)
    x = float32_domain(fname)
    got = cf(x)
    ref = getattr(np, fname)(x.astype(np.float64)).astype(np.float32)
    assert got.dtype == np.float32 and ulp_apart(got, ref) <= BOUND32[fname]
    stem = {"expm1": "expm1_"}.get(fname, fname)   # (the table's C stem)
    assert f"fj_{stem}32(" in plans[0].source and "fj_call1(calls" not in plans[0].source


# in a chain the other operations round the function's result again: within a
# few ulp of the largest term (cancellation makes any other bound meaningless)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("expr,terms", [
    ("np.exp(-x) * 0.5 + x", "np.abs(np.exp(-x) * 0.5) + np.abs(x)"),
    ("np.log(np.abs(x) + 1.0) * x - np.exp(x * 0.01)", "np.abs(np.log(np.abs(x) + 1.0) * x) + np.exp(x * 0.01)")])
def test_chains_with_fused_functions_are_close(expr, terms, dtype):
    fn, mag = make(expr), make(terms)
    cf = framejit.compile(fn, backend="native")
    eps = np.finfo(dtype).eps
    for x in inputs(dtype):
        got, exp = cf(x), fn(x)
        assert got.dtype == exp.dtype and got.shape == exp.shape
        fin = np.isfinite(exp)
        assert np.array_equal(fin, np.isfinite(got))
        assert np.all(np.abs(got - exp)[fin] <= 8 * eps * mag(x)[fin])
    assert framejit.counters["native"]["nodes_fused"] >= (3 if dtype == np.float64 else 1)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fname", ["exp", "log", "sin", "cos", "tanh", "expm1", "log1p"])
def test_special_values_flags_and_warnings_are_numpys(fname, dtype):
    fn = make(f"np.{fname}(x) + 0.0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        special = np.array(SPECIAL, dtype=np.float64).astype(dtype)
    close_outcomes(fn, one_special_each(rng(2).uniform(0.5, 3.0, 997).astype(dtype), special))


@pytest.mark.parametrize("mode", ["raise", "ignore", "warn"])
def test_errstate_is_numpys(mode):
    fn = make("np.log(x) * 2.0 + np.exp(x)")
    x = rng(3).uniform(0.1, 5.0, 2000)
    x[7], x[8], x[9] = -1.0, 0.0, 800.0    # invalid, divide, overflow
    cf = framejit.compile(fn, backend="native")
    with np.errstate(all=mode):
        exp = outcome(fn, [x.copy()])
        got = outcome(cf, [x.copy()])
    assert got[0][0] == exp[0][0] and got[1] == exp[1], (got, exp)
    if exp[0][0] == "ok":
        assert ulp_apart(got[0][1], exp[0][1]) <= 2
    else:
        assert got[0][1:] == exp[0][1:]


def test_int_and_reduction_groups():
    # an int array's exp is float64 (NumPy's loop); a sum of exps runs in the pairwise group
    x = rng(4).integers(-20, 20, 3001)
    close_outcomes(make("np.exp(x) * 2"), [(x,)])
    close_outcomes(make("np.log(np.abs(x) + 1)"), [(x,)])
    y = rng(5).standard_normal(100000)
    cf = framejit.compile(make("np.exp(x).sum()"), backend="native")
    got, exp = cf(y), np.exp(y).sum()
    assert abs(got - exp) <= 1e-12 * abs(exp)


def test_exact_mode_keeps_numpys_bits():
    framejit.config.native_exact = True
    fn = make("(x * 2.0 + np.sin(x)) * 0.5 - np.exp(-x) / (1.0 + np.log(x * x + 1.0))")
    x = rng(6).standard_normal(10000)
    plans, capture = capturing_backend()
    cf = framejit.compile(fn, backend=capture)
    assert np.array_equal(cf(x), fn(x))
    # NumPy's own sin / exp / log loops, called on blocks inside the kernel
    assert "fj_call1(calls" in plans[0].source and "fj_exp64(" not in plans[0].source
    framejit.reset()
    framejit.config.native_exact = False
    cf = framejit.compile(fn, backend=capture)
    assert ulp_apart(cf(x), fn(x)) < 1 << 20   # (cancellation: a few ulp of the terms)
    assert "fj_exp64(" in plans[1].source and "fj_call1(calls" not in plans[1].source  # _vmath.h's, in the kernel
    # float32 alike (fj_exp32 ...: float32 lanes)
    x32 = x.astype(np.float32)
    framejit.reset()
    framejit.config.native_exact = True
    cf = framejit.compile(fn, backend=capture)
    assert np.array_equal(cf(x32), fn(x32)) and "fj_call1(calls" in plans[2].source and "fj_exp32(" not in plans[2].source
    framejit.reset()
    framejit.config.native_exact = False
    cf = framejit.compile(fn, backend=capture)
    assert ulp_apart(cf(x32), fn(x32)) < 1 << 10
    assert "fj_exp32(" in plans[3].source and "fj_sin32(" in plans[3].source and "fj_call1(calls" not in plans[3].source


# ---- found by review: flags of members the compiler could skip ----
# (a recheck loop folded away when two members were one value; a where() arm
# computed under its mask; a member nothing reads dropped; exp's exact subnormal
# products without underflow) -- the first three also without native_exact

REVIEW = ["np.log(x).astype(np.float64)", "np.sin(x) * 1.0", "np.cos(x) - 0.0",
          "np.where(x > 0, np.log(x), 0.0)", "np.where(x < 700, np.exp(x), 0.0)",
          "np.where(np.isfinite(x), np.sin(x), 0.0)", "np.where(x != 0, 1.0 / x, 0.0)",
          "np.where(x > 0, np.sqrt(x), 0.0)", "np.exp(x)", "np.log(x).astype(np.float64).sum()"]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("expr", REVIEW)
def test_flags_of_every_member_are_numpys(expr, exact, dtype):
    framejit.config.native_exact = exact
    fn = make(expr)
    x = np.array([1.0, 2.0, 0.0, -1.0, np.inf, 4.0, 800.0, 3e5, -709.0, -710.0, -745.5, np.nan,
                  88.8, -87.4, -104.0, 7e4] * 50).astype(dtype)
    cf = close_outcomes(fn, [(x,)], ulps=0 if exact else 2 if dtype == np.float64 else 4)
    for mode in ("raise", "warn"):
        with np.errstate(all=mode):
            assert outcome(cf, [x.copy()]) [0][0] == outcome(fn, [x.copy()])[0][0]
            assert outcome(cf, [x.copy()])[1] == outcome(fn, [x.copy()])[1]


def test_a_member_nothing_reads_still_warns():
    def f(x):
        y = np.log(x)   # noqa: F841 - computed, warns, unused
        return x * 2.0
    close_outcomes(f, [(np.array([1.0, 0.0, -1.0, 2.0] * 100),)])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_exp_of_a_subnormal_result_raises_underflow(dtype):
    fn = make("np.exp(x)")
    cf = framejit.compile(fn, backend="native")
    lo, hi = (-745.0, -708.4) if dtype == np.float64 else (-103.9, -87.34)
    x = np.random.default_rng(7).uniform(lo, hi, 3000).astype(dtype)
    for mode in ("raise", "warn"):
        with np.errstate(under=mode):
            got, exp = outcome(cf, [x.copy()]), outcome(fn, [x.copy()])
        assert got[0][0] == exp[0][0] and got[1] == exp[1]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nan_arguments_keep_the_kernel(dtype):
    # exp clamps |x| with integer operations: a NaN is clamped to 0, not to the
    # largest argument (whose overflow flag, where the compiler does not mask the NaN
    # lanes' last product away, would send every call with a NaN through NumPy),
    # and the NaN is the result; tanh clamps a NaN to 10 (no flag either)
    plans, capture = capturing_backend()
    x = rng(9).standard_normal(4099).astype(dtype)
    x[::17] = np.nan
    for expr in ("np.exp(x) * 2.0", "np.tanh(x) * 0.5"):
        fn = make(expr)
        cf = framejit.compile(fn, backend=capture)
        close_outcomes(fn, [(x,)], ulps=2 + (dtype == np.float32))
        got = cf(x)
        assert np.array_equal(np.isnan(got), np.isnan(x))
    assert len(plans) == 2 and all(p.fallbacks == 0 for p in plans), [p.fallbacks for p in plans]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fname", ["exp", "log", "sin", "cos", "tanh", "expm1", "log1p"])
def test_signed_zeros(fname, dtype):
    # x * 1.0 keeps a zero's sign (+ 0.0 would not): sin, tanh, expm1, log1p of -0.0
    # are -0.0 (float32 sin's reduction once made it +0.0: found by review)
    x = np.array([-0.0, 0.0, 1.0, -0.0, 0.5] * 40, dtype=dtype)
    close_outcomes(make(f"np.{fname}(x) * 1.0"), [(x,)])


@pytest.mark.parametrize("fname", ["sin", "cos"])
def test_float64_sin_cos_near_multiples_of_half_pi(fname):
    """float64 sin and cos (fjv_rem_pio2's FMA reduction, the kernel picked per
    lane): arguments on and a few ulp around n pi/2 for every quadrant, both
    signs, up to 2^18, where the reduction cancels most; within 2 ulp of NumPy's
    (each within 1 of the correctly rounded value) and zeros' signs NumPy's."""
    r = rng(4)
    n = np.concatenate([np.arange(-40, 41), r.integers(-166000, 166000, 3000)]).astype(np.float64)
    x = n * (np.pi / 2)
    x = np.concatenate([x, np.nextafter(x, np.inf), np.nextafter(x, -np.inf), x * (1 + 1e-9), x * (1 - 1e-13), [-0.0]])
    x = x[np.abs(x) <= 2.0 ** 18]
    close_outcomes(make(f"np.{fname}(x) * 1.0"), [(x,), (x[::-1].copy(),)])
    assert framejit.counters["native"]["nodes_fused"] >= 1


# ---- every function of the table (framejit._C.native_vmath()) ----
# The kernels compute a function for the dtypes the table lists and call
# NumPy's loop for the others; each function's own tests (test_native_vmath_*.py)
# measure its bound on its hard regions.  These hold for every row, so a
# function added to the table is covered by them at once.

from framejit import _C  # noqa: E402

VMATH = _C.native_vmath()
BINARY = ("arctan2", "power")
LISTED = [(f, dt) for f, (_, dts, _) in sorted(VMATH.items()) for dt in dts]
UNLISTED = [(f, dt) for f, (_, dts, _) in sorted(VMATH.items()) for dt in ("float64", "float32") if dt not in dts]
_C.native_config(numpy_avx512=True)
# those left to NumPy's loop where NumPy runs AVX-512 loops (native.c numpy_avx512_faster)
LEFT = UNLISTED + [(f, dt) for f, (_, _, left) in sorted(_C.native_vmath().items()) for dt in left]
_C.native_config(numpy_avx512=False)


def _call(fname):
    return f"np.{fname}(x, y)" if fname in BINARY else f"np.{fname}(x)"


def _benign(dtype, k=0):
    """Arguments inside every function's domain (arcsin's and log's, a base of power)."""
    r = rng(20 + k)
    return r.uniform(0.05, 0.95, 3001).astype(dtype), r.uniform(0.5, 2.5, 3001).astype(dtype)


def test_the_table_and_the_header_agree():
    src = open(framejit.native.__file__.replace("native.py", "_vmath.h")).read()
    for fname, (stem, dts, _) in VMATH.items():
        for dt in dts:
            ctype, bits = ("double", "64") if dt == "float64" else ("float", "32")
            assert re.search(rf"^(static inline|FJV_INLINE) {ctype} fj_{stem}{bits}\(", src, re.M), (fname, dt)
        assert getattr(np, fname).nin == (2 if fname in BINARY else 1)


@pytest.mark.parametrize("fname,dtype", LISTED)
def test_every_listed_function_fuses_into_the_kernel(fname, dtype):
    stem = VMATH[fname][0]
    bits = "64" if dtype == "float64" else "32"
    plans, capture = capturing_backend()
    fn = make(f"{_call(fname)} * 0.5 + x", "x, y")
    x, y = _benign(np.dtype(dtype).type)
    cf = framejit.compile(fn, backend=capture)
    got, exp = cf(x, y), fn(x, y)
    # (within a few ulp of the terms: f * 0.5 + x may cancel)
    assert got.dtype == exp.dtype and np.all(np.abs(got - exp) <= 8 * np.finfo(dtype).eps * (np.abs(exp) + x))
    assert f"fj_{stem}{bits}(" in plans[0].source and "(calls" not in plans[0].source
    # exact mode: NumPy's loop, NumPy's bits
    framejit.reset()
    framejit.config.native_exact = True
    cf = framejit.compile(fn, backend=capture)
    assert np.array_equal(cf(x, y), exp) and f"fj_{stem}{bits}(" not in plans[1].source


@pytest.mark.parametrize("fname,dtype", LEFT)
def test_a_function_left_to_numpy_runs_its_loop(fname, dtype, monkeypatch):
    """A dtype the table does not list, or one NumPy's AVX-512 loop computes faster
    (where NumPy runs it): NumPy's loop inside the kernel, its bits."""
    monkeypatch.setattr(framejit.native, "NUMPY_AVX512", True)
    plans, capture = capturing_backend()
    fn = make(f"{_call(fname)} * 0.5 + x", "x, y")
    x, y = _benign(np.dtype(dtype).type)
    cf = framejit.compile(fn, backend=capture)
    assert np.array_equal(cf(x, y), fn(x, y))   # NumPy's loop inside the kernel: its bits
    assert f"fj_{VMATH[fname][0]}" not in "".join(p.source for p in plans)


SPECIAL_ALL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324,
               1e-310, 1e-40, -1e-40, 1e-20, 1e300, -1e300, 3e38, 710.0, -750.0, 89.0, -104.0, 1e5, 262145.0]


@pytest.mark.parametrize("fname,dtype", LISTED)
def test_special_values_of_every_function_are_numpys(fname, dtype):
    """Each special value alone among ordinary ones (and for a binary function,
    every pair of them): the value's class (NaN, inf with its sign, zero with its
    sign), the warnings and errstate's outcome are NumPy's; finite values within
    a few ulp."""
    dt = np.dtype(dtype).type
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        special = np.array(SPECIAL_ALL, dtype=np.float64).astype(dt)
    x0, y0 = _benign(dt, 1)
    fn = make(f"{_call(fname)} * 1.0", "x, y")
    cases = [(x0, y0)]
    if fname in BINARY:
        for i, a in enumerate(special):
            x, y = x0.copy(), y0.copy()
            x[100:100 + len(special)] = a       # a against every special value, and the reverse
            y[100:100 + len(special)] = special
            cases.append((x, y))
    else:
        cases += [(x, y0) for (x,) in one_special_each(x0, special)[1:]]
    close_outcomes(fn, cases, ulps=8)
    cf = framejit.compile(fn, backend="native")
    for mode in ("raise", "warn", "ignore"):
        for args in cases[1:]:
            with np.errstate(all=mode):
                same_outcome_under_errstate(cf, fn, args, ulps=8)


def test_where_numpy_runs_avx512_loops_the_faster_ones_stay_numpys(monkeypatch):
    """native.NUMPY_AVX512 (NumPy's CPU dispatch runs AVX-512 loops: SVML): the
    functions native.c's numpy_avx512_faster names (measured slower than NumPy's
    AVX-512 loop) are NumPy's loops in the kernels, bit for bit; the others fuse.
    tests/conftest.py sets it False for every other test."""
    plans, capture = capturing_backend()
    fn, other = make("np.power(x, y) * 0.5 + x", "x, y"), make("np.sin(x) * 0.5 + y", "x, y")
    x, y = _benign(np.float64)
    for avx512 in (True, False):
        framejit.reset()
        monkeypatch.setattr(framejit.native, "NUMPY_AVX512", avx512)
        got = framejit.compile(fn, backend=capture)(x, y)
        left = _C.native_vmath()["power"][2]
        assert ("float64" in left) == avx512 and ("float32" in left) == avx512
        if avx512:   # NumPy's loop inside the kernel: its bits
            assert "fj_pow64(" not in plans[-1].source and "fj_call2(calls" in plans[-1].source
            assert np.array_equal(got, fn(x, y))
        else:
            assert "fj_pow64(" in plans[-1].source and "(calls" not in plans[-1].source
            assert ulp_apart(got, fn(x, y)) <= 4
        framejit.compile(other, backend=capture)(x, y)
        assert "fj_sin64(" in plans[-1].source     # not named: fused either way


def test_numpy_avx512_follows_numpys_dispatch():
    """With NumPy's AVX-512 dispatch off (as on a CPU without AVX-512) the choice
    is _vmath.h's everywhere; with it on, it is what the dispatch says."""
    import subprocess
    import sys
    code = "import numpy, framejit.native as n; print(n._numpy_runs_avx512())"
    env = dict(os.environ, NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR")
    off = subprocess.run([sys.executable, "-W", "ignore", "-c", code], env=env, capture_output=True, text=True)
    assert off.returncode == 0 and off.stdout.strip() == "False", off.stderr
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    on = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert on.returncode == 0, on.stderr
    has = any(__cpu_features__.get(k) and k in __cpu_dispatch__ for k in ("X86_V4", "AVX512_SKX"))
    assert on.stdout.strip() == str(has and sys.platform.startswith("linux"))
