"""Rows with an input constant along them (csrc/backends/native/native.c, run_rows).

A partly broadcast input whose last-axis stride is 0 (x * w[:, None], a
keepdims mean) used to send every row of the strided form to its scalar
loop; such rows now run the flat (vectorized) kernel on chunks of the row,
the constant input's value repeated into a buffer.  The tests compare with
NumPy bit for bit (values, dtype, order, warnings) around the chunk and the
row-length threshold, over dtypes, several constant inputs of different
item sizes, three axes, stride-0 views, threads, and check with
``plan.row_runs`` which path ran."""
import numpy as np
import pytest

import framejit
from framejit import _C
from difftools import clone
from native_compare import compile_capturing, same_outcomes

ROW_WORK = 512    # FJN_ROW_WORK: row length x the group's operations
CHUNK = 1024      # FJN_ROW_CHUNK
CHAIN_OPS = 7     # the float chain below: one group of seven operations
ROW_MIN = -(-ROW_WORK // CHAIN_OPS)  # its shortest row on the row path: 74


@pytest.fixture(autouse=True, scope="module")
def _cache_dir(native_kernel_cache):
    yield


_last_plans = []


def check(expr, arg_sets, params="x, w"):
    """Each argument set: the compiled function's outcome (twice) equals
    NumPy's.  Returns the group runs that took the row path."""
    fn, cf, plans = compile_capturing(expr, params, "rows_case")
    same_outcomes(fn, cf, arg_sets, expr, clone)
    _last_plans[:] = [p for p in plans if isinstance(p, _C.NativePlan)]
    return sum(p.row_runs for p in plans if isinstance(p, _C.NativePlan))


def values(dt, shape, seed=0, special=None):
    """Random values; special="quiet" puts NaNs and -0.0 in (no warning in
    these chains: the kernel's results are kept), "loud" infinities too (an
    inf - inf warns: the group runs, then NumPy computes the values)."""
    rng = np.random.default_rng(seed + int(np.prod(shape)))
    n = int(np.prod(shape))
    if np.dtype(dt).kind == "f":
        x = (rng.standard_normal(n) * 8).astype(dt)
        if special == "quiet" and n >= 8:
            x[rng.integers(0, n, 4)] = [np.nan, -0.0, np.nan, -0.0]
        elif special == "loud" and n >= 8:
            x[rng.integers(0, n, 4)] = [np.nan, np.inf, -np.inf, -0.0]
        return x.reshape(shape)
    if np.dtype(dt).kind == "b":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True).reshape(shape)


@pytest.mark.parametrize("dt", ["f8", "f4"])
@pytest.mark.parametrize("m", [ROW_MIN - 1, ROW_MIN, ROW_MIN + 1, 300, CHUNK - 1, CHUNK, CHUNK + 1,
                               2 * CHUNK + 37])
def test_column_broadcast_float_chain(dt, m):
    w = values(dt, (5,), 1)[:, None]
    w[1, 0] = np.nan
    w[3, 0] = -0.0
    expr = "np.sqrt(np.maximum((x * w + 1.5) * 0.5 - x, 0.0)) + w"
    runs = check(expr, [(values(dt, (5, m), special="quiet"), w)])
    assert runs == (2 if m >= ROW_MIN else 0)  # a first and a warm call
    assert len(_last_plans[0].groups[0]) == CHAIN_OPS
    check(expr, [(values(dt, (5, m), 2, special="loud"), w)])


@pytest.mark.parametrize("dt", ["i1", "u2", "i4", "i8", "u8"])
def test_integers_wrap_and_divide_by_a_column(dt):
    x = values(dt, (7, 300))
    w = values(dt, (7, 1), 1)
    w[w == 0] = 3
    w0 = w.copy()
    w0[2, 0] = 0  # NumPy's integer division by zero: 0 and a warning
    runs = check("x * w + x // w - (x % w)", [(x, w), (x, w0)])
    assert runs == 2  # w0's calls warn: NumPy computes those (counted only when kept)


def test_several_constant_inputs_of_different_item_sizes():
    """Constants of 8, 4, 1 and 2 bytes along the row, outputs of several sizes
    (no NaN in x: its cast to int8 would warn)."""
    x = values("f8", (9, 700))
    x[2, 5] = -0.0
    a = values("f4", (9, 1), 1)
    b = values("?", (9, 1), 2)
    c = values("i2", (9, 1), 3)
    sets = [(x, a, b, c)]
    runs = check("(x * a + c, np.where(b, x, a), (x > a) & b, (x * 3).astype(np.int8) + c)", sets,
                 params="x, a, b, c")
    assert runs == 2


def test_three_axes_and_mixed_broadcasts():
    """(a, b, c) with inputs (a, b, 1), (a, 1, 1), (1, 1, c) and a scalar.  The
    plan has three groups ((x - u) * v; r * 2.0 at r's shape; their sum): the
    first takes the row path, the sum's rows are contiguous (the kernel's own
    flat rows)."""
    x = values("f8", (4, 6, 600), special="quiet")
    u = values("f8", (4, 6, 1), 1)
    v = values("f8", (4, 1, 1), 2)
    r = values("f8", (1, 1, 600), 3)
    runs = check("(x - u) * v + r * 2.0", [(x, u, v, r)], params="x, u, v, r")
    assert runs == 2


def test_keepdims_mean_centering():
    """x - x.mean(axis=1, keepdims=True): the reduction is a group of its own,
    the subtraction's and the division's rows run flat with the mean and the
    divisor repeated."""
    x = values("f8", (50, 1100))
    runs = check("(x - x.mean(axis=1, keepdims=True)) / (x.std(axis=1, keepdims=True) + 1.0)", [(x,)],
                 params="x")
    assert runs >= 2


def test_short_rows_of_cheap_groups_keep_the_scalar_loop():
    """x * w has one operation: rows under ROW_WORK elements stay scalar."""
    w = values("f8", (40, 1), 1)
    assert check("x * w", [(values("f8", (40, ROW_WORK - 1)), w)]) == 0
    assert check("x * w", [(values("f8", (40, ROW_WORK)), w)]) == 2


def test_stride_zero_views_and_non_contiguous_rows():
    """A full-shape view with stride 0 along the row (broadcast_to) takes the
    row path; rows of a non-contiguous operand keep the scalar loop."""
    x = values("f8", (6, 400), special="quiet")
    col = np.broadcast_to(values("f8", (6, 1), 1), (6, 400))
    assert check("x * w - 1.0", [(x, col)]) == 2
    assert check("x * w - 1.0", [(values("f8", (6, 800))[:, ::2], values("f8", (6, 1), 2))]) == 0


def test_warnings_and_errstate_raise():
    """Divide and invalid flags are the row calls' own, ORed: the same
    warnings, and under errstate(all='raise') the same exception."""
    from native_compare import outcome
    x = values("f8", (8, 200))
    w = values("f8", (8, 1), 1)
    w[3, 0] = 0.0
    x[5, 7] = np.inf
    assert check("x / w + np.sqrt(x - w)", [(x, w)]) == 0  # warned: NumPy computed the values
    assert check("x / w + np.sqrt(x - w)", [(np.abs(x) + 100.0, np.abs(w) + 1.0)]) == 2  # no warning

    def f(x, w):
        return x / w + np.sqrt(x - w)
    cf = framejit.compile(f, backend="native")
    with np.errstate(all="raise"):
        exp = outcome(f, (x, w))
        got = outcome(cf, (x, w))
    assert exp[0][0] == "raise" and got[0][:2] == exp[0][:2]


@pytest.mark.parametrize("threads", [2, 3])
def test_threads(threads):
    old = _C.native_config()
    try:
        _C.native_config(threads=threads, thread_min=1000)
        x = values("f8", (64, 1500), special="quiet")
        w = values("f8", (64, 1), 1)
        assert check("np.sqrt(np.abs(x * w)) - w", [(x, w)]) == 2
    finally:
        _C.native_config(threads=old[0], thread_min=old[1], float_axis_minmax=old[2],
                         stream_min=old[3] if old[3] >= 0 else None)
