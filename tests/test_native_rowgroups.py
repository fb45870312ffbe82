"""Row groups (csrc/backends/native/native.c row_join / finish_row_group /
run_rowk, native_emit.c emit_row_group; docs/native.md "Row groups").

A reduction along the last axis read back by the members after it (a
softmax, a layer norm, logsumexp, a row-norm normalisation) runs as one
kernel of passes over each row.  Every case compares with plain NumPy bit for
bit (values, dtype, shape, strides, warnings and exceptions, on a first and a
warm call), checks which groups the plan made, and that clean data ran the
kernel (``plan.fallbacks == 0``)."""
import numpy as np
import pytest

import framejit
from framejit import _C
from difftools import clone
from native_compare import compile_capturing, outcome, same, same_outcomes

@pytest.fixture(autouse=True, scope="module")
def _cache_dir(native_kernel_cache):
    yield


@pytest.fixture(autouse=True)
def _exact():
    old = framejit.config.native_exact
    yield
    framejit.config.native_exact = old
    framejit.reset()


def compile_src(body, params="x"):
    """(plain function, native-compiled function, its NativePlans) for a
    function of 'params' whose body is 'body' (lines; NumPy as np)."""
    return compile_capturing(body, params, "rowcase", body=True)


def close_outcomes(fn, cf, arg_sets, label):
    """As same_outcomes, values within a relative 1e-13 (float32: 1e-5;
    framejit/_vmath.h's functions are within a few ulp of NumPy's, not its bits)."""
    for args in arg_sets:
        exp = outcome(fn, [clone(a) for a in args])
        for _ in range(2):
            got = outcome(cf, [clone(a) for a in args])
            assert got[0][0] == exp[0][0] == "ok", (label, got, exp)
            g, e = got[0][1], exp[0][1]
            assert type(g) is type(e) and g.dtype == e.dtype and g.shape == e.shape and g.strides == e.strides
            np.testing.assert_allclose(g, e, rtol=1e-13 if e.dtype == np.float64 else 1e-5, atol=0, err_msg=label)
            assert got[1] == exp[1], (label, got[1], exp[1])


def check(body, arg_sets, params="x"):
    """Outcomes equal NumPy's (bit for bit; close when a transcendental
    function fuses, native_exact False).  The NativePlans."""
    fn, cf, plans = compile_src(body, params)
    approx = not framejit.config.native_exact and any(
        a.dtype.kind == "f" for args in arg_sets for a in args if isinstance(a, np.ndarray)) and any(
        f"np.{f}(" in body for f in ("exp", "log", "sin", "cos", "tanh"))
    (close_outcomes if approx else same_outcomes)(fn, cf, arg_sets, body, *(() if approx else (clone,)))
    return [p for p in plans if isinstance(p, _C.NativePlan)]


def fallbacks(plans):
    return sum(p.fallbacks for p in plans)


def data(dt, shape, seed=0, scale=3.0):
    rng = np.random.default_rng(seed + int(np.prod(shape)))
    if np.dtype(dt).kind == "f":
        return (rng.standard_normal(shape) * scale).astype(dt)
    if np.dtype(dt).kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, dtype=dt, endpoint=True)


SOFTMAX = """
e = np.exp(x - x.max(axis=-1, keepdims=True))
return e / e.sum(axis=-1, keepdims=True)
"""
LOG_SOFTMAX = """
s = x - x.max(axis=-1, keepdims=True)
return s - np.log(np.exp(s).sum(axis=-1, keepdims=True))
"""
LAYER_NORM = """
mu = x.mean(axis=-1, keepdims=True)
var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
return (x - mu) / np.sqrt(var + 1e-5) * g + b
"""
LOGSUMEXP = """
m = x.max(axis=-1, keepdims=True)
return m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True))
"""
ROW_NORM = """
return x / np.sqrt((x * x).sum(axis=-1, keepdims=True))
"""
CENTER = """
return (x - x.mean(axis=-1, keepdims=True)) * 2.0
"""

SHAPES = [(1, 5), (7, 13), (4, 128), (3, 129), (2, 1000), (5, 4100), (2, 3, 17), (2, 2, 2, 9)]


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("exact", [True, False])
def test_softmax(dt, shape, exact):
    framejit.config.native_exact = exact
    plans = check(SOFTMAX, [(data(dt, shape),), (data(dt, shape, 1, 30.0),)])
    assert fallbacks(plans) == 0
    # one group: NumPy's own exp loop called per row (float64 in both modes: faster on a
    # row than fj_exp64 inline), or float32 with native_exact False _vmath.h's fj_exp32
    assert plans[0].groups == [["max", "sub", "exp", "sum", "truediv"]], plans[0].groups
    inline = not exact and dt == np.float32
    assert ("fj_call1(calls" in plans[0].source) != inline and ("fj_exp32(" in plans[0].source) == inline


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("m", [1, 7, 8, 9, 15, 16, 17, 31, 100])
def test_padded_tail_of_a_vmath_pass(dt, m):
    """A pass computing fj_exp / fj_sin inline (native_exact False) runs a row's
    last M % V elements as one padded block (native_emit.c emit_row_pass): the
    values of every element, and the flags of the tail's own elements (the pad
    lanes repeat element M - 1): an overflow there, or a NaN, is NumPy's
    warning and value, and clean rows keep the kernel."""
    framejit.config.native_exact = False
    body = """
e = np.exp(x) * np.sin(x)
return e / e.sum(axis=-1, keepdims=True)
"""
    x = data(dt, (6, m), scale=2.0)
    plans = check(body, [(x,), (x[1:],)])
    assert fallbacks(plans) == 0
    # (a row of one element is a flat group; the kernel takes any M)
    assert ("if (Mv < M)" in plans[0].source) == (m > 1)
    big = 100.0 if dt == np.float32 else 800.0  # exp overflows
    for j in sorted({m - 1, m // 2, 0}):
        for v in (big, np.nan, -np.inf):
            y = x.copy()
            y[3, j] = v
            for mode in ("warn", "ignore"):
                with np.errstate(over=mode, invalid=mode):
                    check(body, [(y,)])


@pytest.mark.parametrize("m", [7, 9, 17])
def test_two_padded_passes_in_one_row_group(m):
    """Two passes of one row group that both pad their tail (a float sum is
    taken after its pass, so the passes before and after it compute exp and
    sin with no reduction in their loops): each pass's Mv is its own (the C
    compiled; it once said "redefinition of 'Mv'" and the graph ran eager)."""
    framejit.config.native_exact = False
    body = """
e = np.exp(x)
return np.sin(e / e.sum(axis=-1, keepdims=True))
"""
    x = data(np.float64, (6, m), scale=2.0)
    plans = check(body, [(x,), (x[1:],)])
    assert all(p.loaded for p in plans) and fallbacks(plans) == 0
    assert plans[0].source.count("if (Mv < M)") == 2


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("shape", SHAPES)
def test_layer_norm_one_group(dt, shape):
    g = data(dt, shape[-1:], 5)
    b = data(dt, shape[-1:], 6)
    plans = check(LAYER_NORM, [(data(dt, shape), g, b), (data(dt, shape, 2, 1e3), g, b)], "x, g, b")
    assert fallbacks(plans) == 0
    assert len(plans[0].groups) == 1, plans[0].groups
    assert plans[0].groups[0][:2] == ["mean", "sub"], plans[0].groups


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("body", [LOG_SOFTMAX, LOGSUMEXP, ROW_NORM, CENTER], ids=["logsoftmax", "lse", "rownorm", "center"])
@pytest.mark.parametrize("exact", [True, False])
def test_row_chains(dt, body, exact):
    framejit.config.native_exact = exact
    plans = check(body, [(data(dt, s),) for s in [(6, 50), (3, 300), (2, 2, 33)]])
    assert fallbacks(plans) == 0


def test_row_scalar_members_and_outputs():
    """var + eps and its sqrt are one value per row (RSC members), computed
    once per row; the reductions are outputs too (read outside the group)."""
    plans = check("""
mu = x.mean(axis=-1, keepdims=True)
var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
inv = 1.0 / np.sqrt(var + 1e-5)
return (x - mu) * inv, mu, var, inv
""", [(data(np.float64, (9, 77)),), (data(np.float32, (4, 3, 10)),)])
    assert fallbacks(plans) == 0
    assert all(len(p.groups) == 1 for p in plans)


@pytest.mark.parametrize("dt", [np.int8, np.int32, np.int64, np.uint16, np.uint64])
def test_integer_rows(dt):
    plans = check("""
c = x - x.min(axis=-1, keepdims=True)
return c * 2 + x.max(axis=-1, keepdims=True), c.sum(axis=-1)
""", [(data(dt, (5, 40)),), (data(dt, (2, 3, 9)),)])
    assert fallbacks(plans) == 0


def test_bool_any_all_read_back():
    plans = check("""
return (x & x.any(axis=-1, keepdims=True)) | x.all(axis=-1, keepdims=True)
""", [(data(np.bool_, (8, 20)),), (np.zeros((3, 5), bool),), (np.ones((3, 5), bool),)])
    assert fallbacks(plans) == 0


def test_two_sums_in_one_pass_and_a_third_level():
    plans = check("""
s1 = x.sum(axis=-1, keepdims=True)
s2 = (x * x).sum(axis=-1, keepdims=True)
v = s2 / x.shape[-1] - (s1 / x.shape[-1]) ** 2
y = (x - s1) / v
return y - y.max(axis=-1, keepdims=True)
""", [(data(np.float64, (6, 130)),), (data(np.float32, (3, 1025)),)])
    assert fallbacks(plans) == 0
    assert len(plans[0].groups) == 1, plans[0].groups


def test_one_dimensional_softmax():
    framejit.config.native_exact = False
    plans = check("""
e = np.exp(x - x.max())
return e / e.sum()
""", [(data(np.float64, (1000,)),), (data(np.float64, (3,)),)])
    assert fallbacks(plans) == 0
    assert plans[0].groups == [["max", "sub", "exp", "sum", "truediv"]], plans[0].groups


def test_broadcast_inputs_along_and_across_rows():
    """w varies along the row, c is one value per row, s one value in all."""
    x = data(np.float64, (6, 70))
    w = data(np.float64, (70,), 1)
    c = data(np.float64, (6, 1), 2)
    plans = check("""
y = x * w + c
return y / y.sum(axis=-1, keepdims=True) - c * s
""", [(x, w, c, 2.5), (x, w, c, np.float64(-1.0))], "x, w, c, s")
    assert fallbacks(plans) == 0


@pytest.mark.parametrize("layout", ["fortran", "transposed", "sliced_rows", "sliced_cols", "negative"])
def test_layouts(layout):
    """Non-C layouts: NumPy's order of the sums is its own (the group runs
    through NumPy) or the rows are still contiguous (the kernel)."""
    base = data(np.float64, (40, 60))
    x = {"fortran": np.asfortranarray(base), "transposed": base.T,
         "sliced_rows": base[::2], "sliced_cols": base[:, 5:50], "negative": base[::-1]}[layout]
    check(CENTER, [(x,)])
    check(SOFTMAX, [(x,)])


def test_special_values():
    """NaN and infinities (warnings: the group then runs through NumPy),
    signed zeros where NumPy's order picks the max's sign, all-equal rows."""
    x = data(np.float64, (6, 40))
    x[0, 3] = np.nan
    x[1, 7] = np.inf
    x[2, :] = 0.0
    x[2, 5] = -0.0
    x[3, :] = -0.0
    x[4, 9] = -np.inf
    x[5, :] = 1.5
    for body in (SOFTMAX, LOGSUMEXP, CENTER, ROW_NORM):
        for exact in (True, False):
            framejit.config.native_exact = exact
            check(body, [(x,), (x[2:4],), (x[3:],)])
    zeros = np.zeros((4, 8))
    zeros[1, 2] = -0.0
    zeros[3] = -0.0
    plans = check("return x.max(axis=-1, keepdims=True) + x * 0.0, x.min(axis=-1)", [(zeros,), (-zeros,)])
    assert plans


def test_errstate_and_division_by_zero_rows():
    x = data(np.float64, (5, 16))
    x[2] = 0.0
    body = "return x / np.abs(x).sum(axis=-1, keepdims=True)"
    check(body, [(x,)])

    def run(mode):
        fn, cf, _ = compile_src(f"""
with np.errstate(divide="{mode}", invalid="{mode}"):
    return x / np.abs(x).sum(axis=-1, keepdims=True)
""")
        same_outcomes(fn, cf, [(x,)], mode, clone)
    for mode in ("raise", "ignore", "warn"):
        run(mode)


def test_empty_and_unit_shapes():
    for shape in [(0, 5), (3, 0), (0, 0), (5, 1), (1, 1)]:
        x = np.ones(shape)
        check(CENTER, [(x,)])
        check(SOFTMAX, [(x,)])


def test_float_max_alone_and_other_axes():
    """A float max / min along rows fuses (a row group of one pass); along
    another axis it is left to NumPy's loops."""
    x = data(np.float64, (30, 50))
    plans = check("return x.max(axis=-1) * 2.0", [(x,)])
    assert plans[0].groups == [["max"], ["mul"]], plans[0].groups
    assert fallbacks(plans) == 0
    plans = check("return (x * 2.0).max(axis=0)", [(x,)])
    assert plans[0].groups == [["mul"]], plans[0].groups


def test_no_keepdims_result_is_not_read_back():
    """x.sum(-1) (no keepdims) broadcast against x aligns with the columns,
    not the rows: it is not a row value (the group closes)."""
    x = data(np.float64, (40, 40))
    plans = check("return x - x.sum(axis=-1)", [(x,)])
    assert [len(g) for g in plans[0].groups] == [1, 1], plans[0].groups


def test_dynamic_rows_compile_once():
    """Over changing row counts and lengths the kernel is reused (the sizes
    are parameters of the kernel, not constants)."""
    fn, cf, plans = compile_src(SOFTMAX)
    args = [(data(np.float64, (n, m), n),) for n, m in [(3, 20), (5, 33), (8, 100), (2, 7)]]
    same_outcomes(fn, cf, args, "dynamic", clone)
    nplans = [p for p in plans if isinstance(p, _C.NativePlan)]
    assert len(nplans) <= 2, len(nplans)
    assert fallbacks(nplans) == 0


CALLED = ["exp", "log", "sin", "cos", "tanh", "expm1", "log1p"]
# unary ufuncs the kernels never compute: always NumPy's loop inside a group
OTHER_CALLED = ["tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh", "exp2",
                "log2", "log10", "cbrt", "sign", "deg2rad", "rad2deg", "degrees", "radians", "spacing"]


def _call_arg(fname):
    """An argument within fname's domain, from c (any real)."""
    if fname.startswith("log") or fname == "arccosh":
        return "np.abs(c) + 1.0"
    if fname in ("arcsin", "arccos", "arctanh"):
        return "c / (np.abs(c) + 1.0)"
    return "c"
ROW_LENGTHS = [2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 65, 127, 129, 257, 1000, 4097]


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("fname", CALLED + OTHER_CALLED)
def test_numpy_loops_called_per_row(dt, fname):
    """With native_exact True, a transcendental function inside a row group
    is NumPy's own inner loop called on each row (the other unary ufuncs
    always): NumPy's bits for every row length (its SIMD loops' results do
    not depend on where a run starts)."""
    arg = _call_arg(fname)
    body = f"""
c = x - x.mean(axis=-1, keepdims=True)
y = np.{fname}({arg})
return y - y.sum(axis=-1, keepdims=True)
"""
    args = [(data(dt, (3, m), m, 1.0),) for m in ROW_LENGTHS]
    plans = check(body, args)
    assert fallbacks(plans) == 0
    assert any(fname in g or f"{fname}_1" in g for p in plans for g in p.groups), [p.groups for p in plans]
    assert all(len(p.groups) == 1 for p in plans), [p.groups for p in plans]


def test_called_loop_output_input_operand_and_warnings():
    """A called loop's row as an output (written into it), a called loop on
    an input's row, and overflow / invalid from NumPy's loop (the group then
    runs through NumPy: its warnings)."""
    plans = check("""
m = x.max(axis=-1, keepdims=True)
e = np.exp(x - m)
return e, e.sum(axis=-1)
""", [(data(np.float64, (5, 40)),), (data(np.float32, (2, 3, 70)),)])
    assert fallbacks(plans) == 0
    plans = check("""
s = x.sum(axis=-1, keepdims=True)
return np.exp(x) / s
""", [(data(np.float64, (4, 50), 0, 1.0) + 3.0,)])
    assert fallbacks(plans) == 0
    assert plans[0].groups == [["sum", "exp", "truediv"]], plans[0].groups
    big = data(np.float64, (4, 30), 0, 1.0)
    big[1, 3] = 800.0
    neg = data(np.float32, (4, 30), 0, 1.0)
    check("""
s = x.sum(axis=-1, keepdims=True)
return np.exp(x) / s + np.log(x - s)
""", [(big,), (neg,)])


@pytest.mark.parametrize("fname", CALLED)
def test_flags_raised_before_a_called_loop_survive_it(fname):
    """An overflow in the rows before a called loop (NumPy's tanh loop clears
    the status) still warns: the kernel raises the earlier flags again after
    each call, so the group runs through NumPy and NumPy warns."""
    x = data(np.float64, (4, 20), 0, 1.0)
    x[0, 5] = 1e300
    arg = "np.abs(c) + 0.5" if fname.startswith("log") else "c * 1e-300"
    check(f"""
c = x * 1e10 - x.max(axis=-1, keepdims=True)
return np.{fname}({arg}) + c
""", [(x,)])


def test_plans_with_called_loops_are_freed():
    """A plan holding NumPy's loop capsules goes with its function (no cycle)."""
    import gc
    import sys
    fn, cf, plans = compile_src(SOFTMAX)
    cf(data(np.float64, (3, 20)))
    nplans = [p for p in plans if isinstance(p, _C.NativePlan)]
    assert nplans
    del fn, cf
    plans.clear()
    framejit.reset()
    gc.collect()
    # the list, the loop variable and getrefcount's argument: nothing else holds a plan
    counts = [sys.getrefcount(p) for p in nplans]
    assert counts == [3] * len(nplans), counts


@pytest.mark.parametrize("dt", [np.int8, np.int16, np.int32, np.int64, np.uint32])
def test_integer_division_members(dt):
    """Signed // and % in a row group (their quotient's temporary once shadowed
    an output row's pointer: found by review)."""
    x = data(dt, (4, 5))
    x = np.where(x == 0, 1, x).astype(dt)
    plans = check("""
m = np.abs(x).max(axis=-1, keepdims=True) + 1
return x // m, x % m, x // 3 - x.max(axis=-1, keepdims=True)
""", [(x,), (data(dt, (3, 40), 1),)])
    assert all(len(p.groups) >= 1 for p in plans)


@pytest.mark.parametrize("mode", ["warn", "raise"])
def test_float32_exp_overflow_and_underflow_from_numpys_loop(mode):
    """NumPy's float32 exp raises overflow / underflow with feraiseexcept,
    which on x86-64 sets the x87 status, not MXCSR: the kernel reads both
    around a called loop (found by review)."""
    x = np.array([[0, 0, 0, 400], [1, 2, 3, 4]], np.float32)
    s = np.array([[0, 0, 0, -400], [1e30, 0, 1, 2]], np.float32)
    fn, cf, _ = compile_src(f"""
with np.errstate(over="{mode}", under="{mode}"):
    return np.exp(x - x.mean(axis=-1, keepdims=True))
""")
    same_outcomes(fn, cf, [(x,), (s,), (s.astype(np.float64),)], mode, clone)
    check("""
e = np.exp(x - x.max(axis=-1, keepdims=True))
return e / e.sum(axis=-1, keepdims=True)
""", [(s,)])


TCHAIN = "return (x * w + np.sin(x)) * 0.5 - np.exp(-x) / (1 + w * w)"


@pytest.mark.parametrize("n", [1, 7, 2047, 2048, 2049, 4097, 100003])
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_numpy_loops_in_blocks(n, dt):
    """A group without reductions calling NumPy's loops runs in blocks of
    2048 elements (and a shorter last one) when its operands are contiguous."""
    plans = check(TCHAIN, [(data(dt, (n,), 0, 2.0), data(dt, (n,), 1, 2.0))], "x, w")
    if n > 1:  # (a shape of one element has no rows to speak of: the calls stay NumPy's nodes)
        assert plans[0].groups == [["mul", "sin", "add", "mul_1", "neg", "exp", "mul_2", "add_1", "truediv", "sub"]], \
            plans[0].groups
    assert fallbacks(plans) == 0


@pytest.mark.parametrize("layout", ["c2d", "column", "row", "scalar", "fortran", "sliced", "threads"])
def test_numpy_loops_layouts(layout):
    """Blocks for contiguous operands; rows along the last axis for partly
    broadcast ones; NumPy for other layouts; threads split the rows."""
    x = data(np.float64, (300, 70), 0, 2.0)
    w = {"c2d": data(np.float64, (300, 70), 1), "column": data(np.float64, (300, 1), 1),
         "row": data(np.float64, (70,), 1), "scalar": 1.5, "fortran": np.asfortranarray(data(np.float64, (300, 70))),
         "sliced": data(np.float64, (300, 140), 1)[:, ::2], "threads": data(np.float64, (300, 70), 1)}[layout]
    if layout == "fortran":
        x = np.asfortranarray(x)
    old = _C.native_config()[0]
    if layout == "threads":
        _C.native_config(threads=2, thread_min=1000)
    try:
        plans = check(TCHAIN, [(x, w)], "x, w")
    finally:
        _C.native_config(threads=old, thread_min=1 << 16)
    assert fallbacks(plans) == (1 if layout in ("fortran", "sliced") else 0) * 2


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_log_softmax_one_group_and_per_row_calls(dt):
    """log of a row's sum is NumPy's loop on one value per row; an output
    member's row is what a call and a sum read (no buffer)."""
    plans = check(LOG_SOFTMAX, [(data(dt, s),) for s in [(5, 33), (2, 3, 129), (40, 2049)]])
    assert fallbacks(plans) == 0
    assert plans[0].groups == [["max", "sub", "exp", "sum", "log", "sub_1"]], plans[0].groups
    plans = check("""
s = x - x.max(axis=-1, keepdims=True)
e = np.exp(s)
return s, e.sum(axis=-1, keepdims=True), np.log(s.sum(axis=-1, keepdims=True) * -1.0 + 1.0)
""", [(data(dt, (6, 50)),), (data(dt, (3, 8), 2),)])
    assert fallbacks(plans) == 0
    # log of a negative row value: NumPy's invalid warning (the group runs through NumPy)
    check("""
t = x.sum(axis=-1, keepdims=True)
return x - np.log(t)
""", [(data(dt, (4, 9)),)])
    fn, cf, _ = compile_src("""
m = x.max()
return m + np.log(np.exp(x - m).sum())
""")
    same_outcomes(fn, cf, [(data(dt, (n,)),) for n in (2, 100, 5000)], "lse 1-d", clone)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_other_unary_ufuncs_in_blocks(dt):
    """tan, cbrt, arctan, log10 ... join a plain group as NumPy's loops (the
    group runs in blocks): one group, NumPy's bits, special values too."""
    x = data(dt, (5003,), 0, 3.0)
    x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30]
    plans = check("return x * 0.5 + np.cbrt(x) * np.arctan(x) - np.tan(x * 0.1) + np.log10(np.abs(x) + 1.0)",
                  [(x,), (x[:2047],), (x.reshape(7, 713) if x.size == 4991 else x[:4991].reshape(7, 713),)])
    assert len(plans[0].groups) == 1, plans[0].groups


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_a_call_opens_a_group(dt):
    """A NumPy-loop call no open group takes opens one (np.tanh(x) * 2.0 + 1.0
    is one group); a group of calls only stays NumPy's nodes."""
    xs = [(data(dt, (n,), n, 2.0),) for n in (2, 2047, 2049, 10000)] + [(data(dt, (30, 70)),)]
    plans = check("return np.tanh(x) * 2.0 + 1.0", xs)
    assert all(p.groups == [["tanh", "mul", "add"]] for p in plans), [p.groups for p in plans]
    assert fallbacks(plans) == 0
    fn, cf, raw = compile_src("return np.exp(np.sin(x))")
    same_outcomes(fn, cf, xs[:2], "calls only", clone)
    assert not [p for p in raw if isinstance(p, _C.NativePlan)]  # nothing fused: the graph runs eagerly


# ---- binary ufuncs as NumPy's loops (fj_call2) ----

BINARY_CALLED = ["np.power({a}, {b})", "np.arctan2({a}, {b})", "np.hypot({a}, {b})", "np.logaddexp({a}, {b})",
                 "np.logaddexp2({a}, {b})", "{a} ** {b}"]


def _binary(expr, form):
    """expr of operands a, b (from c, w): both arrays, or one a constant."""
    a, b = {"arrays": ("np.abs(c) + 0.5", "w"), "const2": ("np.abs(c) + 0.5", "1.75"),
            "const1": ("1.25", "w"), "int2": ("np.abs(c) + 0.5", "3")}[form]
    return expr.format(a=f"({a})", b=f"({b})")


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("form", ["arrays", "const2", "const1", "int2"])
@pytest.mark.parametrize("expr", BINARY_CALLED)
def test_binary_numpy_loops_called_per_row(dt, form, expr):
    """np.power, x ** y (but the exponents ndarray.__pow__ computes with other
    ufuncs), arctan2, hypot, logaddexp, logaddexp2 of float operands of the
    group's shape, or one a constant, are NumPy's own binary loop called on
    each row (the constant's stride 0): NumPy's bits for every row length."""
    call = _binary(expr, form)
    body = f"""
c = x - x.mean(axis=-1, keepdims=True)
w = x * 0.5
y = {call}
return y - y.sum(axis=-1, keepdims=True)
"""
    plans = check(body, [(data(dt, (3, m), m, 1.0),) for m in ROW_LENGTHS])
    assert fallbacks(plans) == 0
    name = "pow" if "**" in expr else expr[3:expr.index("(")]
    assert all(len(p.groups) == 1 and any(m == name or m.startswith(name + "_") for m in p.groups[0])
               for p in plans), [p.groups for p in plans]
    assert "fj_call2(calls" in plans[0].source


@pytest.mark.parametrize("n", [1, 7, 2047, 2049, 4097, 100003])
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_binary_numpy_loops_in_blocks(n, dt):
    body = "return np.arctan2(x, w) * 2.0 + np.power(np.abs(x) + 0.5, w) - (np.abs(w) + 1.0) ** 1.5"
    plans = check(body, [(data(dt, (n,), 0, 2.0), data(dt, (n,), 1, 2.0))], "x, w")
    assert fallbacks(plans) == 0
    if n > 1:
        assert len(plans[0].groups) == 1 and "fj_call2(calls" in plans[0].source, plans[0].groups


@pytest.mark.parametrize("mode", ["warn", "raise", "ignore"])
def test_binary_numpy_loops_special_values_and_warnings(mode):
    """Negative bases to fractional powers (invalid), overflow, infinities and
    NaN: NumPy's values, warnings and errors (the group runs through NumPy
    when the called loop raises a flag errstate does not ignore)."""
    x = data(np.float64, (4, 40), 0, 3.0)
    x[0, 3], x[1, 7], x[2, 9], x[3, 1] = np.inf, np.nan, 400.0, -np.inf
    for body in ("return np.power(x, 1.5) + x", "return (x * 2.0) ** 0.75 - np.hypot(x, 1.0)",
                 "return np.arctan2(x, x * 0.0) + np.logaddexp(x, 1e308)", "return 10.0 ** x + 1.0"):
        for dt in (np.float64, np.float32):
            fn, cf, _ = compile_src(f"with np.errstate(all='{mode}'):\n    " + body.replace("\n", "\n    "))
            same_outcomes(fn, cf, [(x.astype(dt),), (np.abs(x).astype(dt),)], body, clone)


def test_pow_exponents_numpy_computes_otherwise_are_not_calls():
    """x ** 2, ** 0.5, ** -1 are fused as square / sqrt / reciprocal (ndarray.__pow__'s);
    x ** 1.0 and x ** 0 are not taken as power's loop."""
    for body in ("return x ** 2 + 1.0", "return x ** 1.0 + 1.0", "return x ** 0 + x"):
        plans = check(body, [(data(np.float64, (200,)),)])
        assert all("fj_call2(calls" not in p.source for p in plans), body


# ---- float64 division by a value of the row (fj_qdiv64: native_emit.c emit_row_span) ----

DIV_BY_ROW_MAX = "return x / d.max(axis=-1, keepdims=True)"


def _qdiv_numerators(m, seed):
    """m float64 numerators: magnitudes over the whole range (subnormals too), zeros of
    both signs, and the bounds of fj_qdiv64 (2^-960, 2^960) and their neighbours."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 0x7FF0000000000000, m, dtype=np.int64).view(np.float64)
    x = np.where(rng.integers(0, 2, m) == 1, -bits, bits)
    special = np.array([0.0, -0.0, 2.0 ** -960, 2.0 ** 960, np.nextafter(2.0 ** -960, 0), np.nextafter(2.0 ** 960, np.inf),
                        5e-324, -2.0 ** -1022, 1.0, -3.0, np.finfo("f8").max])
    k = min(m, len(special))
    x[rng.permutation(m)[:k]] = special[:k]
    return x


def test_division_by_a_row_value_runs_fj_qdiv64():
    """A float64 division by a value of the row (a reduction, a row scalar, an
    input constant along the row) in a pass without reductions runs fj_qdiv64;
    float32, and a pass that also reduces, divide."""
    x = data(np.float64, (6, 40))
    c = data(np.float64, (6, 1), 1)
    for body, params, args in [(SOFTMAX, "x", (x,)), (ROW_NORM, "x", (x,)), (DIV_BY_ROW_MAX, "x, d", (x, x + 1.0)),
                               ("return (x - x.max(axis=-1, keepdims=True)) / c", "x, c", (x, c))]:
        plans = check(body, [args], params)
        assert fallbacks(plans) == 0
        assert "fj_qdiv64(qn" in plans[0].source, body
    plans = check(LAYER_NORM, [(x, x[0], x[1])], "x, g, b")
    assert "fj_qdiv64(qn" in plans[0].source and fallbacks(plans) == 0
    plans = check(SOFTMAX, [(x.astype(np.float32),)])
    assert "fj_qdiv64(qn" not in plans[0].source
    # the division and a max of its values in one pass: divided
    plans = check("y = x / x.sum(axis=-1, keepdims=True)\nreturn y.max(axis=-1)", [(x,)])
    assert "fj_qdiv64(qn" not in plans[0].source and fallbacks(plans) == 0


@pytest.mark.parametrize("m", [2, 7, 8, 9, 64, 1000, 4099])
def test_division_by_a_row_value_bits(m):
    """Every numerator magnitude (NumPy's quotients bit for bit, its warnings) over
    divisors in and out of fj_qdiv64's bounds: rows whose numerators leave the
    bounds run again with the division, the FP flags of the first run undone (no
    fallback: an inf numerator made fma's invalid, a subnormal one underflow)."""
    divisors = [1.0, -3.0, 0.1, 7e11, 2.0 ** -900, 2.0 ** 900, -2.0 ** 900, np.nextafter(2.0 ** -900, 0),
                np.nextafter(2.0 ** 900, np.inf), 1e-300, 1e300, 5e-324, 0.0, np.inf, -np.inf]
    n = len(divisors)
    fn, cf, plans = compile_src(DIV_BY_ROW_MAX, "x, d")
    d = np.repeat(np.array(divisors)[:, None], m, axis=1)
    for seed in range(3):
        x = np.stack([_qdiv_numerators(m, 100 * seed + r) for r in range(n)])
        same_outcomes(fn, cf, [(x, d)], f"m={m}", clone)
        # rows of numerators within the bounds, one row per divisor, then one numerator out of them
        y = data(np.float64, (n, m), seed, 1e3)
        same_outcomes(fn, cf, [(y, d)], f"m={m}", clone)
        for v in (np.inf, np.nan, -1e-310, 1e300):
            z = y.copy()
            z[:, (seed * 7) % m] = v
            same_outcomes(fn, cf, [(z, d)], f"m={m} {v}", clone)
    def nplans():
        return [p for p in plans if isinstance(p, _C.NativePlan)]
    assert "fj_qdiv64(qn" in nplans()[0].source
    # divisors in bounds only (rows of the shape above: the same plan)
    ok = np.resize(np.array([1.0, -3.0, 0.1, 1e-200, 1e200]), n)
    ok = np.repeat(ok[:, None], m, axis=1)
    for mode in ("raise", "warn", "ignore"):
        with np.errstate(all=mode):
            same_outcomes(fn, cf, [(x, d)], mode, clone)
            # every row's kernel kept: the flags of a first run that met an out-of-bounds
            # numerator are undone (an inf made fma's invalid, which would be hard)
            w = y.copy()
            w[0, 0] = np.inf
            w[1, m - 1] = 5e-324
            w[2, 0] = -1e-310
            before = fallbacks(nplans())
            same_outcomes(fn, cf, [(w, ok)], mode, clone)
            if mode == "ignore":
                assert fallbacks(nplans()) == before, mode


def test_division_by_a_row_value_near_halfway_quotients():
    """Numerators whose quotient is within a few ulp of a halfway point between two
    doubles (b (q + ulp/2) rounded, and its neighbours): fj_qdiv64's last
    correction decides them as the division does."""
    rng = np.random.default_rng(5)
    n, m = 64, 500
    b = np.ldexp(1.0 + rng.random(n), rng.integers(-800, 800, n)) * np.where(rng.random(n) < 0.5, -1.0, 1.0)
    q = np.ldexp(1.0 + rng.random((n, m)), rng.integers(-100, 100, (n, m)))
    half = np.ldexp(np.longdouble(1.0), np.frexp(q)[1] - 54)   # half an ulp of q
    a = (b[:, None].astype(np.longdouble) * (q.astype(np.longdouble) + half)).astype(np.float64)
    a = a.view(np.int64) + rng.integers(-2, 3, (n, m))
    fn, cf, plans = compile_src(DIV_BY_ROW_MAX, "x, d")
    same_outcomes(fn, cf, [(a.view(np.float64), np.repeat(b[:, None], m, axis=1))], "halfway", clone)
    assert fallbacks([p for p in plans if isinstance(p, _C.NativePlan)]) == 0


@pytest.mark.parametrize("mode", ["upward", "towardzero", "ftz_daz"])
def test_division_by_a_row_value_other_fp_modes(mode):
    """fj_qdiv64 takes rounding to nearest: in another mode the kernel divides."""
    from test_native import _set_fp_mode
    fn, cf, plans = compile_src(DIV_BY_ROW_MAX, "x, d")
    x = data(np.float64, (8, 300), 3)
    x[0, :5] = [1e-310, -5e-324, 2.0 ** -1000, 0.1, 1e-320]
    d = np.abs(data(np.float64, (8, 300), 4)) + 0.5
    same_outcomes(fn, cf, [(x, d)], mode, clone)
    restore = _set_fp_mode({"upward": 0x800, "towardzero": 0xC00}.get(mode), 0x8040 if mode == "ftz_daz" else 0)
    try:
        got, exp = cf(clone(x), clone(d)), fn(clone(x), clone(d))
    finally:
        restore()
    same(got, exp)


@pytest.mark.parametrize("m", [1, 7, 9, 17, 100])
def test_division_by_a_row_value_in_a_padded_vmath_pass(m):
    """With native_exact False, a pass computing fj_sin64 of the quotient: its
    whole vectors divide by fj_qdiv64, its padded tail divides."""
    framejit.config.native_exact = False
    body = "return np.sin(x / x.max(axis=-1, keepdims=True))"
    x = data(np.float64, (6, m), scale=2.0) + 7.0
    plans = check(body, [(x,), (x[1:],)])
    assert fallbacks(plans) == 0
    y = x.copy()
    y[2, m // 2] = 1e-310
    y[4, 0] = np.inf
    for mode in ("warn", "ignore"):
        with np.errstate(all=mode):
            check(body, [(y,)])
