"""np.tan, np.sinh and np.cosh inside the native backend's kernels
(framejit/_vmath.h's fj_tan64 / 32, fj_sinh64 / 32, fj_cosh64 / 32; issue 23).

With config.native_exact False they fuse into the kernels: each value within
1 ulp of the correctly rounded one (float64 and float32; tools/vmath_accuracy.py
measures it, float32 on every input; the float32 functions compute in float64
lanes to about 2^-42 and round once), so within that plus NumPy's own error of
NumPy's.
tan of |x| > 2^18, inf or NaN raises invalid on purpose: the group then runs
through NumPy (tan's invalid is hard).  sinh and cosh compute every argument:
overflow where NumPy's overflows (float64 from 710.4759, float32 from 89.416),
+-inf and NaN without a flag, sinh of a zero keeps its sign.
"""
import glob
import os
import shutil
import subprocess
import warnings

import numpy as np
import pytest

import framejit
from native_compare import capturing_backend
from test_native_vmath import (_inexact, close_outcomes, make, one_special_each, rng,  # noqa: F401
                               same_outcome_under_errstate, ulp_apart)


FNAMES = ["tan", "sinh", "cosh"]

# ours: max ulp from the correctly rounded value (tools/vmath_accuracy.py: float64
# 10^6 inputs, float32 every input); NumPy's own: the tool's table on an AVX-512
# machine (float64 1; float32, every input: tan 4, sinh 2, cosh 2), at least 2
# (glibc's documented bounds)
OURS = {"tan": 1, "sinh": 1, "cosh": 1}
NUMPY64 = {"tan": 2, "sinh": 2, "cosh": 2}
NUMPY32 = {"tan": 4, "sinh": 2, "cosh": 2}


def bound(fname, dtype):
    return OURS[fname] + (NUMPY64 if dtype == np.float64 else NUMPY32)[fname]


def domain(fname, dtype, n):
    """Random inputs over the function's computed range, with its hard regions:
    tan: |x| <= 2^16 and near multiples of pi/2; sinh, cosh: below overflow, near 0
    and around 1 (sinh's series / exp boundary) and near the top."""
    r = rng(21)
    k = n // 4
    if fname == "tan":
        top = 2.0 ** 16
        xs = [r.uniform(-4, 4, k), r.uniform(-top, top, k),
              np.exp(r.uniform(np.log(1e-30), np.log(top), k)) * r.choice([-1, 1], k),
              np.round(r.uniform(-4e4, 4e4, k)) * (np.pi / 2) + r.uniform(-1e-6, 1e-6, k)]
    else:
        top = 710.47 if dtype == np.float64 else 89.41
        xs = [r.uniform(-top, top, k), np.exp(r.uniform(np.log(1e-30), np.log(top), k)) * r.choice([-1, 1], k),
              r.uniform(-1.5, 1.5, k), top - r.uniform(0, 5, k)]
    return np.concatenate(xs).astype(dtype)


# each function's own result, scaled exactly (a power of two, a sign) or of an exact
# argument: its ulp distance from NumPy's is the function's
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fname", FNAMES)
def test_fused_functions_are_within_their_bound(fname, dtype):
    exprs = {"tan": ["np.tan(x)", "-np.tan(x) * 0.5"], "sinh": ["np.sinh(x)", "np.sinh(x) * 0.25"],
             "cosh": ["np.cosh(x)", "-np.cosh(x) * 2.0"]}[fname]
    x = domain(fname, dtype, 40000)
    r = rng(22)
    more = [(r.standard_normal(5000) * 3).astype(dtype), (r.standard_normal((64, 65)) * 20).astype(dtype)]
    for expr in exprs:
        plans, capture = capturing_backend()
        framejit.reset()
        fn = make(expr)
        cf = framejit.compile(fn, backend=capture)
        got, exp = cf(x), fn(x)
        assert got.dtype == exp.dtype and ulp_apart(got, exp) <= bound(fname, dtype), (expr, ulp_apart(got, exp))
        bits = "64" if dtype == np.float64 else "32"
        assert f"fj_{fname}{bits}(" in plans[0].source and "fj_call1(calls" not in plans[0].source
        assert framejit.counters["native"]["nodes_fused"] >= 1
        close_outcomes(fn, [(v,) for v in more], ulps=bound(fname, dtype))


@pytest.mark.parametrize("fname", FNAMES)
def test_float32_functions_are_within_1_ulp_of_the_correctly_rounded_value(fname):
    # ~200k random float32 bit patterns of the domain; the reference: NumPy's float64
    # function rounded once to float32 (off only within 2^-29 of a rounding boundary;
    # tools/vmath_accuracy.py --exhaustive uses mpmath there)
    bits = rng(23).integers(0, 1 << 32, 200000, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    with np.errstate(invalid="ignore"):
        x = x[np.abs(x) <= (65536 if fname == "tan" else 89.41)]
    x = np.concatenate([x, domain(fname, np.float32, 20000)])
    plans, capture = capturing_backend()
    cf = framejit.compile(make(f"np.{fname}(x)"), backend=capture)
    got = cf(x)
    ref = getattr(np, fname)(x.astype(np.float64)).astype(np.float32)
    assert got.dtype == np.float32 and ulp_apart(got, ref) <= 1
    assert f"fj_{fname}32(" in plans[0].source and "fj_call1(calls" not in plans[0].source


SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1e-310, -2.2250738585072014e-308, 1e-45, 1e-20,
           -3e-9, 1.0, -1.0, 0.9999999999, 89.4, 89.415985, 89.41599, -89.42, 90.0, 709.0, 710.4758600739439,
           710.475860073944, -710.48, 711.0, 712.0, 713.0, 1e300, -1e300, 262144.0, 262145.0, -3e5, 65536.0,
           1e22, 1.5707963267948966, -4.71238898038469, 0.6744, -0.67434]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fname", FNAMES)
def test_special_values_flags_and_warnings_are_numpys(fname, dtype):
    fn = make(f"np.{fname}(x) * 1.0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        special = np.array(SPECIAL, dtype=np.float64).astype(dtype)
    base = rng(24).uniform(0.5, 3.0, 997).astype(dtype)
    cases = one_special_each(base, special)
    cases.append((special.copy(),))
    close_outcomes(fn, cases, ulps=bound(fname, dtype))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("mode", ["raise", "ignore", "warn"])
def test_errstate_is_numpys(mode, dtype):
    fn = make("np.sinh(x) * 2.0 + np.cosh(x) - np.tan(x)")
    x = rng(25).uniform(-5.0, 5.0, 2000).astype(dtype)
    cf = framejit.compile(fn, backend="native")
    over = 800.0 if dtype == np.float64 else 95.0
    for bad in ([(7, over)], [(8, -over)], [(9, np.inf)], [(10, np.nan)], [(11, 3e5)], [(7, over), (9, np.inf)]):
        xx = x.copy()
        for i, v in bad:
            xx[i] = v
        with np.errstate(all=mode):
            same_outcome_under_errstate(cf, fn, [xx], ulps=1 << 8)  # (three terms: a few ulp of the largest)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fname", FNAMES)
def test_signed_zeros_and_tiny_arguments(fname, dtype):
    # x * 1.0 keeps a zero's sign: tan and sinh of -0.0 are -0.0, cosh 1; tiny and
    # subnormal arguments give themselves (tan, sinh) without underflow
    tiny = np.finfo(dtype).smallest_subnormal
    x = np.array([-0.0, 0.0, 1.0, -0.0, 0.5, tiny, -tiny, np.finfo(dtype).tiny, 1e-30, -1e-9] * 40, dtype=dtype)
    for mode in ("ignore", "raise"):
        with np.errstate(all=mode):
            close_outcomes(make(f"np.{fname}(x) * 1.0"), [(x,)], ulps=bound(fname, dtype))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nan_and_inf_arguments_keep_the_kernel_for_sinh_and_cosh(dtype):
    # sinh and cosh take NaN and +-inf without a flag: no call runs through NumPy
    plans, capture = capturing_backend()
    x = rng(26).standard_normal(4099).astype(dtype) * 10
    x[::17] = np.nan
    x[5::31] = np.inf
    x[7::31] = -np.inf
    for expr in ("np.sinh(x) * 2.0", "np.cosh(x) * 0.5"):
        fn = make(expr)
        cf = framejit.compile(fn, backend=capture)
        with np.errstate(all="raise"):
            close_outcomes(fn, [(x,)], ulps=bound("sinh", dtype))
        got = cf(x)
        assert np.array_equal(np.isnan(got), np.isnan(x))
    assert len(plans) == 2 and all(p.fallbacks == 0 for p in plans), [p.fallbacks for p in plans]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_overflow_thresholds_are_numpys(dtype):
    # the last finite results and the first infinite ones (each call with one of them)
    top = dtype(710.4758600739439 if dtype == np.float64 else 89.415985)
    xs = [top]
    for _ in range(3):
        xs.insert(0, np.nextafter(xs[0], dtype(0)))
        xs.append(np.nextafter(xs[-1], dtype(np.inf)))
    base = rng(27).uniform(-2.0, 2.0, 300).astype(dtype)
    cases = []
    for v in xs:
        for s in (1, -1):
            x = base.copy()
            x[100] = s * v
            cases.append((x,))
    for fname in ("sinh", "cosh"):
        close_outcomes(make(f"np.{fname}(x) * 1.0"), cases, ulps=bound(fname, dtype))


def test_float64_tan_near_multiples_of_half_pi():
    """fjv_rem_pio2's reduction and k_tan's branches as per-lane selects: arguments on
    and a few ulp around n pi/2 for every quadrant (tan's poles and zeros), both
    signs, up to 2^18, and around |hi| = 0.6744 (k_tan's switch)."""
    r = rng(28)
    n = np.concatenate([np.arange(-40, 41), r.integers(-166000, 166000, 3000)]).astype(np.float64)
    x = n * (np.pi / 2)
    x = np.concatenate([x, np.nextafter(x, np.inf), np.nextafter(x, -np.inf), x * (1 + 1e-9), x * (1 - 1e-13),
                        x + 0.6744, x - 0.67439, x + np.pi / 4, [-0.0]])
    x = x[np.abs(x) <= 2.0 ** 18]
    close_outcomes(make("np.tan(x) * 1.0"), [(x,), (x[::-1].copy(),)], ulps=bound("tan", np.float64))
    assert framejit.counters["native"]["nodes_fused"] >= 1


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_strided_and_chained(dtype):
    # the kernels' strided loop (its own copy of each function, compiled cold) and a
    # chain of the three with other members
    r = rng(30)
    x = (r.standard_normal((130, 67)) * 4).astype(dtype)
    fn = make("np.sinh(x) * 0.5 + np.cosh(x * 0.5) - np.tan(x) * 2.0")
    close_outcomes(make("np.tan(x) * 1.0"), [(x.T,), (x[::3, ::2],)], ulps=bound("tan", dtype))
    close_outcomes(make("np.sinh(x) * 1.0"), [(x.T,), (x[::3, ::2],)], ulps=bound("sinh", dtype))
    close_outcomes(make("np.cosh(x) * 1.0"), [(x.T,), (x[::3, ::2],)], ulps=bound("cosh", dtype))
    mag = make("np.abs(np.sinh(x) * 0.5) + np.cosh(x * 0.5) + np.abs(np.tan(x) * 2.0)")
    cf = framejit.compile(fn, backend="native")
    for v in (x, x.T, x[::2]):
        got, exp = cf(v), fn(v)
        assert got.dtype == exp.dtype
        assert np.all(np.abs(got - exp) <= 8 * np.finfo(dtype).eps * mag(v))
    assert framejit.counters["native"]["nodes_fused"] >= 3


def test_exact_mode_keeps_numpys_bits():
    framejit.config.native_exact = True
    fn = make("np.tan(x) + np.sinh(x) * 0.5 - np.cosh(x)")
    x = rng(29).standard_normal(5000)
    plans, capture = capturing_backend()
    cf = framejit.compile(fn, backend=capture)
    for v in (x, x.astype(np.float32)):
        assert np.array_equal(cf(v), fn(v))
    assert all("fj_tan64(" not in p.source and "fj_tan32(" not in p.source for p in plans)


@pytest.mark.skipif(shutil.which("nm") is None, reason="no nm")
def test_the_functions_are_inlined_into_the_kernels(native_kernel_cache):
    # a kernel calls the function in its flat, strided and checking loops: left to
    # gcc's inliner, fj_sinh64 stayed a call there and the flat loop scalar (25x
    # slower); always inlined, no symbol of theirs is in a kernel's object
    old = framejit.config.native_background
    framejit.config.native_background = False
    try:
        x = rng(31).uniform(-3, 3, 5000)
        for dtype in (np.float64, np.float32):
            cf = framejit.compile(make("np.tan(x) * 0.5 + np.sinh(x) - np.cosh(x)"), backend="native")
            cf(x.astype(dtype))
    finally:
        framejit.config.native_background = old
    ours = {"fj_tan64", "fj_tan32", "fj_sinh64", "fj_sinh32", "fj_cosh64", "fj_cosh32", "fjv_exp_dd",
            "fjv_hyp_combine", "fjv_hyp32", "fjv_exp_eo", "fjv_tsh_sel"}
    objs = glob.glob(os.path.join(native_kernel_cache, "**", "*.so"), recursive=True)
    assert objs
    for so in objs:
        syms = {ln.split()[-1].split(".")[0] for ln in subprocess.run(["nm", so], capture_output=True,
                                                                       text=True).stdout.splitlines() if ln.strip()}
        assert not (syms & ours), (so, syms & ours)
