"""The graph IR: building, naming, printing (table and Python source), the
eager runner (results, freeing intermediates, errors) and leaks."""
import gc
import operator
import sys
import tracemalloc

import numpy as np
import pytest

from framejit import _C

pytestmark = pytest.mark.filterwarnings("ignore")


def sin_mul_add(example):
    g = _C.Graph()
    x = g.placeholder("l_x_", example)
    s = g.call(np.sin, (x,))
    m = g.call(operator.mul, (s, 2))
    a = g.call(operator.add, (m, 1))
    g.output((a,))
    return g


GOLDEN_TABULAR = """\
opcode         name    target        args       kwargs
-------------  ------  ------------  ---------  ------
placeholder    l_x_    l_x_          ()         {}
call_function  sin     numpy.sin     (l_x_,)    {}
call_function  mul     operator.mul  (sin, 2)   {}
call_function  add     operator.add  (mul, 1)   {}
output         output  output        ((add,),)  {}
"""

GOLDEN_CODE = """\
def forward(self, l_x_):
    sin = numpy.sin(l_x_);  l_x_ = None
    mul = sin * 2;  sin = None
    add = mul + 1;  mul = None
    return (add,)
"""


def test_golden_tabular_and_code(capsys):
    g = sin_mul_add(np.zeros((4,), np.float32))
    assert g.tabular() == GOLDEN_TABULAR
    assert g.code == GOLDEN_CODE
    g.print_tabular()
    assert capsys.readouterr().out == GOLDEN_TABULAR


def test_run_and_exec_code_agree():
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    g = sin_mul_add(x)
    (r,) = g(x)
    np.testing.assert_array_equal(r, np.sin(x) * 2 + 1)
    assert r.dtype == np.float32
    ns = {"numpy": np}
    exec(g.code, ns)
    (r2,) = ns["forward"](None, x)
    assert r2.tobytes() == r.tobytes()


def test_nodes_and_metadata():
    x0 = np.zeros((2, 3), np.int8)
    g = _C.Graph()
    x = g.placeholder("l_x_", x0)
    y = g.placeholder("l_x_", np.float64(2.0))  # name taken: made unique
    a = g.call(operator.add, (x, 1))
    b = g.call(operator.add, (a, y))
    c = g.call("sum", (b,), {"axis": 0})
    g.output((c, b))
    assert [n.name for n in g.nodes] == ["l_x_", "l_x__1", "add", "add_1", "sum", "output"]
    assert [n.op for n in g.nodes] == ["placeholder", "placeholder", "call_function", "call_function",
                                       "call_method", "output"]
    assert len(g) == 6 and g.num_calls == 3
    assert g.placeholders == [x, y]
    assert x.meta == {"dtype": np.dtype("int8"), "shape": (2, 3), "kind": "array"}
    assert y.meta == {"dtype": np.dtype("float64"), "shape": (), "kind": "scalar"}
    assert a.meta["dtype"] == np.dtype("int8")  # NEP 50: weak Python int
    assert b.meta["dtype"] == np.dtype("float64")
    assert c.meta == {"dtype": np.dtype("float64"), "shape": (3,), "kind": "array"}
    assert a.target is operator.add and c.target == "sum"
    assert b.args == (a, y) and c.kwargs == {"axis": 0}
    assert [n.users for n in g.nodes] == [1, 1, 1, 2, 1, 0]
    assert [n.index for n in g.nodes] == list(range(6))
    assert repr(a) == "add"
    out = g(x0, np.float64(2.0))
    assert out[0].dtype == np.float64 and out[0].shape == (3,)
    assert out[1].dtype == np.float64 and out[1].shape == (2, 3)


def rich_graph():
    """A graph using most printing paths: methods, kwargs, getitem with
    slices/None/Ellipsis, .T, unary, in-place, lists of nodes, non-finite
    and negative constants, dtype arguments."""
    x0 = np.arange(24, dtype=np.float64).reshape(2, 3, 4) - 7
    y0 = np.arange(4, dtype=np.int32)
    g = _C.Graph()
    x = g.placeholder("l_x_", x0)
    y = g.placeholder("l_y_", y0)
    n1 = g.call(operator.getitem, (x, (Ellipsis, slice(None, None, -2), None, 1)))
    n2 = g.call("reshape", (x, 6, -1))
    n3 = g.call("T", (n2,))
    n4 = g.call(operator.matmul, (n2, n3))
    n5 = g.call(np.clip, (n4, -5, float("inf")))
    n6 = g.call(operator.neg, (n5,))
    n7 = g.call(abs, (n6,))
    n8 = g.call(operator.pow, (-2, y))
    n9 = g.call(np.concatenate, ([y, n8],), {"axis": 0})
    n10 = g.call("astype", (n9, np.dtype("float32")))
    n11 = g.call(operator.iadd, (n10, 0.5))
    n12 = g.call(np.where, (g.call(operator.lt, (n11, 3)), n11, float("nan")))
    n13 = g.call(np.sum, (n7,), {"axis": (0, 1), "keepdims": True, "dtype": np.float32})
    n14 = g.call(operator.getitem, (n1, 0))
    g.output((n7, n12, n13, n14, n1, 3))
    return g, (x0, y0)


def assert_same(a, b):
    assert type(a) is type(b)
    if isinstance(a, (np.ndarray, np.generic)):
        assert a.dtype == b.dtype and np.shape(a) == np.shape(b)
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    else:
        assert a == b


def test_rich_graph_code_is_valid_python_and_agrees():
    g, inputs = rich_graph()
    out = g(*inputs)
    ns = {"numpy": np}
    exec(g.code, ns)
    out2 = ns["forward"](None, *inputs)
    assert len(out) == len(out2) == 6
    for a, b in zip(out, out2):
        assert_same(a, b)
    # the metadata of every output node equals what ran
    for node, val in zip(g.nodes[-1].args[0][:5], out[:5]):
        assert node.meta["dtype"] == val.dtype
        assert node.meta["shape"] == np.shape(val)
        assert node.meta["kind"] == ("array" if isinstance(val, np.ndarray) else "scalar")
    code = g.code
    assert "float('inf')" in code and "float('nan')" in code and "(-2) ** l_y_" in code
    assert "numpy.dtype('float32')" in code and "numpy.float32" in code
    assert "l_x_[(Ellipsis, slice(None, None, -2), None, 1)]" in code
    assert "reshape = l_x_.reshape(6, -1)" in code and "T = reshape.T" in code
    assert "abs_1 = abs(neg)" in code and "iadd = astype;  iadd += 0.5" in code
    table = g.tabular()
    assert "call_method" in table and "call_attr" in table and "{'axis': 0}" in table


def test_inplace_mutates_like_python():
    x0 = np.ones(3)
    g = _C.Graph()
    x = g.placeholder("l_x_", x0)
    n = g.call(operator.iadd, (x, 1))
    g.output((n,))
    a = np.ones(3)
    (r,) = g(a)
    assert r is a and a.tolist() == [2, 2, 2]


def test_intermediates_freed_after_last_use():
    n = 1 << 20  # 8 MB of float64 per intermediate
    x0 = np.ones(n)
    g = _C.Graph()
    x = g.placeholder("l_x_", x0)
    a = g.call(operator.add, (x, 1))
    sa = g.call("sum", (a,))
    b = g.call(operator.mul, (x, 2))
    sb = g.call("sum", (b,))
    c = g.call(operator.sub, (x, 3))
    sc = g.call("sum", (c,))
    g.output((sa, sb, sc))
    g(x0)
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        out = g(x0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out == (2.0 * n, 2.0 * n, -2.0 * n)
    # only one 8 MB intermediate alive at a time (all three would be 24 MB)
    assert peak < 8 * n * 1.5, peak


def test_inputs_and_outputs_refcounts():
    x0 = np.ones(5)
    g = sin_mul_add(x0)
    before = sys.getrefcount(x0)
    for _ in range(10):
        g(x0)
    assert sys.getrefcount(x0) == before
    (r,) = g(x0)
    assert sys.getrefcount(r) == 2  # only 'r' (and the call's argument)


def test_dead_nodes_and_constant_outputs():
    x0 = np.ones(3)
    g = _C.Graph()
    x = g.placeholder("l_x_", x0)
    g.placeholder("l_unused_", x0)
    g.call(np.sin, (x,))  # unused
    g.output((x, None, 1.5))
    r = g(x0, x0)
    assert r[0] is x0 and r[1] is None and r[2] == 1.5
    assert "l_unused_" in g.code


def test_run_errors():
    x0 = np.arange(3)
    g = _C.Graph()
    x = g.placeholder("l_x_", x0)
    p = g.call(operator.pow, (x, x))
    s = g.call("sum", (p,))
    with pytest.raises(RuntimeError, match="output"):
        g(x0)
    g.output((s,))
    with pytest.raises(TypeError, match="takes 1 inputs"):
        g()
    with pytest.raises(TypeError, match="keyword"):
        g(x0, y=1)
    assert g(x0) == (0 ** 0 + 1 + 4,)
    with pytest.raises(ValueError, match="negative"):  # NumPy's own error, at run time
        g(np.array([1, -1, 2]))
    with pytest.raises(RuntimeError, match="already has its output"):
        g.output((s,))
    with pytest.raises(RuntimeError, match="already has its output"):
        g.call(np.sin, (x,))


def test_builder_errors_leave_graph_unchanged():
    g = _C.Graph()
    x = g.placeholder("l_x_", np.ones((2, 3)))
    w = g.placeholder("l_w_", np.ones(4))
    for bad in [(operator.add, (x, w)), ("reshape", (x, 4)), ("sum", (x, 5)),
                (operator.getitem, (x, 7))]:
        with pytest.raises((ValueError, IndexError)):
            g.call(*bad)
    assert len(g) == 2
    other = _C.Graph()
    y = other.placeholder("l_y_", np.ones(3))
    with pytest.raises(ValueError, match="does not belong"):
        g.call(np.sin, (y,))
    with pytest.raises(TypeError, match="ndarray or a NumPy scalar"):
        g.placeholder("l_z_", [1, 2])
    with pytest.raises(ValueError, match="identifier"):
        g.placeholder("not valid", np.ones(1))
    s = g.call(np.sin, (x,))
    # the tracer meets inputs lazily: a late placeholder goes after the others
    late = g.placeholder("late", np.ones(1))
    assert [n.name for n in g.nodes] == ["l_x_", "l_w_", "late", s.name]
    assert [n.index for n in g.nodes] == [0, 1, 2, 3]
    out = g.call(operator.add, (s, late))
    g.output((out,))
    np.testing.assert_array_equal(g(np.ones((2, 3)), np.ones(4), np.full(1, 2.0)),
                                  (np.sin(np.ones((2, 3))) + 2.0,))
    with pytest.raises(TypeError):
        _C.Node()


def test_eager_backend_returns_the_graph():
    from framejit import backends
    g = sin_mul_add(np.ones(2))
    assert backends.lookup("eager")(g, [np.ones(2)]) is g


def test_reserved_names_do_not_shadow():
    g = _C.Graph()
    x = g.placeholder("numpy", np.ones(2))
    a = g.call(abs, (x,))
    g.call(np.sin, (a,))
    g.output((a,))
    assert [n.name for n in g.nodes][:2] == ["numpy_1", "abs_1"]
    ns = {"numpy": np}
    exec(g.code, ns)
    assert ns["forward"](None, -np.ones(2))[0].tolist() == [1, 1]


def _build_and_run(x0):
    g, inputs = rich_graph()
    g(*inputs)
    g.code
    g.tabular()
    g2 = sin_mul_add(x0)
    g2(x0)
    try:
        g2.call(np.sin, (g2.nodes[0],))
    except RuntimeError:
        pass
    g3 = _C.Graph()
    x = g3.placeholder("l_x_", x0)
    for bad in [(operator.add, (x, np.ones(7))), (np.sin, (np.array(["a"]),)), (operator.add, (x, [1]))]:
        try:
            g3.call(*bad)
        except (TypeError, ValueError):
            pass


def test_no_leaks_over_many_builds_and_runs():
    x0 = np.ones((3, 4))
    for _ in range(50):
        _build_and_run(x0)
    gc.collect()
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        for _ in range(1000):
            _build_and_run(x0)
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after - base < 64 * 1024, after - base


# ---- the runner reuses dead temporaries (NumPy's temporary elision) --------

BIG = 1 << 16  # 512 KiB of float64: above NumPy's 256 KiB elision threshold


def _peak(fn, *args):
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        out = fn(*args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return out, peak


def test_dead_temporary_is_written_in_place():
    import framejit

    def f(a, b, c):
        return np.sqrt(np.maximum((a * b + c) * 0.5 - a, 0.0)) + c

    a, b, c = (np.random.default_rng(i).random(BIG) for i in range(3))
    saved = [x.copy() for x in (a, b, c)]
    cf = framejit.compile(f)
    cf(a, b, c)
    out, peak = _peak(cf, a, b, c)
    expect = f(a, b, c)
    assert out.dtype == expect.dtype and out.flags.c_contiguous and out.flags.owndata
    np.testing.assert_array_equal(out, expect)
    for x, s in zip((a, b, c), saved):
        np.testing.assert_array_equal(x, s)
    # six temporaries, one buffer: the result is the first product, reused
    assert peak < 8 * BIG * 1.5, peak
    _, plain_peak = _peak(f, a, b, c)
    assert plain_peak > 8 * BIG * 1.5  # np.maximum/np.sqrt calls: NumPy cannot elide


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.complex128])
def test_a_dead_temporary_is_raised_to_a_power_in_place(dtype):
    # t ** 2 is NumPy's in-place power (its square fast path), not np.power
    # with out= (the generic pow loop: np.abs(x)**2 ran 0.37x plain)
    import framejit

    def f(x):
        return np.abs(x) ** 2

    x = (np.random.default_rng(1).standard_normal(BIG) * 50).astype(dtype)
    cf = framejit.compile(f, backend="eager")
    cf(x)
    out, peak = _peak(cf, x)
    expect = f(x)
    assert out.dtype == expect.dtype and out.shape == expect.shape
    np.testing.assert_array_equal(out, expect)
    assert peak < x.nbytes * 1.5, peak   # one buffer: abs's result, squared in place


@pytest.mark.parametrize("order", ["slices", "transposed", "fortran_temp", "negative_steps"])
def test_a_dead_temporary_takes_a_strided_operand(order):
    """NumPy's elision does not ask the other operand to be contiguous
    (a stencil over slices: a[1:-1] * 4 - a[:-2] - a[2:] ... writes into the
    product); the eager runner neither, and its result has NumPy's values,
    dtype, shape and strides (a C-contiguous temporary: C order, as NumPy
    lays out a new result whose operands disagree)."""
    import framejit
    a = np.random.default_rng(2).random((3, 260, 260))
    if order == "slices":
        def f(a):
            return (a[:, 1:-1, 1:-1] * 4 - a[:, :-2, 1:-1] - a[:, 2:, 1:-1] - a[:, 1:-1, :-2]
                    - a[:, 1:-1, 2:]) * 0.25
    elif order == "transposed":
        a = a[0]

        def f(a):
            return (a * 2) - a.T        # the other operand in Fortran order
    elif order == "fortran_temp":
        a = np.asfortranarray(a[0])

        def f(a):
            return (a * 2) - a[::-1]    # an F-ordered temporary: not reused
    else:
        def f(a):
            return (a[:, 1:, 1:] + 1) * a[:, :0:-1, :0:-1]
    cf = framejit.compile(f, backend="eager")
    for _ in range(2):
        a0 = a.copy(order="K")
        got, want = cf(a), f(a0)
        assert got.dtype == want.dtype and got.shape == want.shape and got.strides == want.strides
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(a, a0)
    if order == "slices":
        cf(a)
        _, peak = _peak(cf, a)
        assert peak < want.nbytes * 1.5, peak   # one buffer: the product, written in place
        # (as NumPy's own elision does in plain CPython, where it can check its
        # callers: not under a sanitizer's malloc)


@pytest.mark.parametrize("case", [
    "view_alive", "used_later", "returned", "dtype_changes", "broadcast_grows", "fortran",
    "subclass_operand", "small", "int_overflow", "same_temp_twice", "pow_rhs", "pow_float",
    "pow_int_negative", "pow_int_by_float", "pow_array"])
def test_reuse_only_when_invisible(case):
    import framejit
    rng = np.random.default_rng(0)
    a = rng.random(BIG)
    b = rng.random(BIG)
    if case == "view_alive":
        def f(a, b):
            t = a * b
            v = t[::2]
            return t + 1, v
    elif case == "used_later":
        def f(a, b):
            t = a * b
            u = t + 1
            return u * t
    elif case == "returned":
        def f(a, b):
            t = a * b
            return t, t - 1
    elif case == "dtype_changes":
        a = (a * 100).astype(np.int64)

        def f(a, b):
            return (a * 3) / 2
    elif case == "broadcast_grows":
        a = a[:256]
        b = b.reshape(256, 256)

        def f(a, b):
            return (a * 2) + b
    elif case == "fortran":
        a = np.asfortranarray(a.reshape(256, 256))
        b = np.asfortranarray(b.reshape(256, 256))

        def f(a, b):
            return (a * 2) + b
    elif case == "subclass_operand":
        b = b.view(np.ma.MaskedArray)

        def f(a, b):
            return (a * 2) + b
    elif case == "small":
        a, b = a[:100], b[:100]

        def f(a, b):
            return -(a * b)
    elif case == "int_overflow":
        a = np.full(BIG, 100, np.int8)

        def f(a, b):
            return (a + a) * 3
    elif case == "same_temp_twice":
        def f(a, b):
            t = a - b
            return t * t
    elif case == "pow_rhs":
        def f(a, b):
            return 2.0 ** (a + b)
    elif case == "pow_float":
        def f(a, b):
            return (a * b) ** 2.5
    elif case == "pow_int_negative":
        a = np.full(BIG, 3, np.int64)

        def f(a, b):
            return (a + 1) ** -1          # ValueError, as plain
    elif case == "pow_int_by_float":
        a = np.full(BIG, 3, np.int64)

        def f(a, b):
            return (a + 1) ** 2.0         # float64: a new array
    elif case == "pow_array":
        def f(a, b):
            return (a + 1) ** b
    cf = framejit.compile(f)
    if case == "pow_int_negative":
        for _ in range(2):
            with pytest.raises(ValueError) as got:
                cf(a, b)
            with pytest.raises(ValueError) as want:
                f(a, b)
            assert str(got.value) == str(want.value)
        return
    with np.errstate(all="ignore"):
        for _ in range(2):
            a0, b0 = a.copy(order="K"), b.copy(order="K")
            got, want = cf(a, b), f(a0, b0)
            got = got if isinstance(got, tuple) else (got,)
            want = want if isinstance(want, tuple) else (want,)
            for g_, w_ in zip(got, want):
                assert type(g_) is type(w_) and g_.dtype == w_.dtype and g_.shape == w_.shape
                assert g_.strides == w_.strides
                np.testing.assert_array_equal(g_, w_)
            np.testing.assert_array_equal(a, a0)
            np.testing.assert_array_equal(b, b0)
