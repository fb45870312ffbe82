"""Loops captured as one loop node (issue 21, docs/loops.md): each function
compiled and plain CPython side by side (results, inputs after the call,
exceptions), and what the graph holds: one loop node whose body is traced
once, so compile time does not grow with the trip count."""
import io
import contextlib
import warnings

import numpy as np
import pytest

import framejit

from difftools import _copy, check_with_inputs, native_loop_plans, outcome, same


def run_both(fn, args_list, backend="eager"):
    """Compiled against plain, inputs compared too (difftools.check_with_inputs)."""
    return check_with_inputs(fn, args_list, backend)


def loop_nodes(fn, *args):
    """The number of loop nodes in the graphs compiling fn(*args) makes, and
    the total number of nodes."""
    graphs = []
    framejit.reset()
    cf = framejit.compile(fn, backend=lambda g, ex: graphs.append(g) or g)
    cf(*_copy(args))
    loops = sum(1 for g in graphs for n in g.nodes if n.op == "call_function" and
                isinstance(n.target, framejit._C.Loop))
    return loops, sum(len(g.nodes) for g in graphs)


# ---------------------------------------------------------------- kernels

def recurrence(a):
    for i in range(1, a.shape[0]):
        a[i] = a[i - 1] + 0.3
    return a


def accumulate(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i]
    return s


def accumulate_int(a):
    s = 0
    for i in range(len(a)):
        s = s + a[i]
    return s


def count_index(n):
    t = 0
    for i in range(n):
        t += i * i - 3
    return t, i


def array_carry(x):
    for k in range(100):
        x = x * 0.5 + 1
    return x


def array_carry_long(x):
    for k in range(400):
        x = x * 0.999 + 0.5
    return x


def stencil(u):
    n = u.shape[0]
    v = np.zeros_like(u)
    for i in range(1, n - 1):
        v[i] = (u[i - 1] + u[i + 1]) * 0.5 - u[i]
    return v, i


def stencil2d(u):
    v = u.copy()
    for i in range(1, u.shape[0] - 1):
        for j in range(1, u.shape[1] - 1):
            v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])
    return v


def row_loop(m):
    out = np.empty(m.shape[0])
    for i in range(m.shape[0]):
        out[i] = np.sqrt((m[i] ** 2).sum())
    return out


def backwards(a):
    for i in range(a.shape[0] - 2, -1, -2):
        a[i] += a[i + 1]
    return a


def two_carried(a):
    x, y = 0.0, 1.0
    for i in range(a.shape[0]):
        x, y = y, x + y * a[i]
    return x, y


def temps_after(a):
    for i in range(a.shape[0]):
        t = a[i] * 2
        u = t + 1
    return t, u, i


def nested_in_function(a):
    def step(v, k):
        return v * 0.9 + k
    acc = np.zeros_like(a)
    for k in range(40):
        acc = step(acc, k) + a
    return acc


def float32_carry(a):
    s = np.float32(0)
    for i in range(a.shape[0]):
        s = s + a[i]
    return s


def mandel_point(c_re, c_im, n):
    x = 0.0
    y = 0.0
    for k in range(n):
        x, y = x * x - y * y + c_re, 2.0 * x * y + c_im
    return x, y


def integer_array_store(idx, vals):
    out = np.zeros(10)
    for k in range(idx.shape[0]):
        out[idx[k]] += vals[k]
    return out


def uses_global_array(a):
    for i in range(a.shape[0]):
        a[i] = a[i] * G_SCALE[i % 4]
    return a


G_SCALE = np.array([1.0, 2.0, 3.0, 4.0])

V50 = np.linspace(-1.0, 2.0, 50)
I40 = np.arange(40, dtype=np.int64) - 7
M = np.random.default_rng(5).standard_normal((12, 9))
M2 = np.random.default_rng(6).standard_normal((30, 20))
F32 = np.linspace(0, 1, 33, dtype=np.float32)

CASES = [
    (recurrence, [(np.zeros(50),), (np.zeros(20),)]),
    (accumulate, [(V50,), (V50[::2].copy(),)]),
    (accumulate_int, [(I40,)]),
    (count_index, [(30,), (100,)]),
    (array_carry, [(np.arange(5.0),), (M,)]),
    (stencil, [(V50,), (np.arange(30.0),)]),
    (stencil2d, [(M,), (M2,)]),
    (row_loop, [(M,), (M.T.copy(),), (M2,)]),
    (backwards, [(V50.copy(),), (np.arange(41.0),)]),
    (two_carried, [(V50,)]),
    (temps_after, [(V50,)]),
    (nested_in_function, [(V50,)]),
    (float32_carry, [(F32,)]),
    (mandel_point, [(0.25, 0.5, 50), (-1.5, 0.0, 64)]),
    (integer_array_store, [(np.arange(30) % 10, np.linspace(0, 1, 30))]),
    (uses_global_array, [(V50.copy(),)]),
]


@pytest.mark.parametrize("fn,args_list", CASES, ids=[c[0].__name__ for c in CASES])
@pytest.mark.parametrize("backend", ["eager", "native"])
def test_loop_differential(fn, args_list, backend):
    c = run_both(fn, args_list, backend)
    assert c["stats"]["unique_graphs"] >= 1
    assert dict(c["graph_break"]) == {}


@pytest.mark.parametrize("fn,args", [(recurrence, (np.zeros(50),)), (accumulate, (V50,)),
                                     (array_carry_long, (np.arange(5.0),)), (stencil, (V50,)),
                                     (row_loop, (np.ones((300, 4)),)), (count_index, (30,)),
                                     (mandel_point, (0.2, 0.1, 40))],
                         ids=lambda p: getattr(p, "__name__", ""))
def test_loop_is_one_node(fn, args):
    loops, nodes = loop_nodes(fn, *args)
    assert loops == 1
    assert nodes < 25


def test_nested_loops_are_nested_nodes():
    loops, nodes = loop_nodes(stencil2d, M2)
    assert loops == 1      # the outer one; the inner is a node of its body
    assert nodes < 15


def test_graph_size_does_not_grow_with_the_trip_count():
    sizes = [loop_nodes(recurrence, np.zeros(n))[1] for n in (20, 200, 2000, 20000)]
    assert len(set(sizes)) == 1, sizes


def test_short_loops_unroll():
    def f(a):
        s = a[0]
        for i in range(4):
            s = s + a[i]
        return s

    loops, _ = loop_nodes(f, np.arange(5.0))
    assert loops == 0
    framejit.config.loop_unroll_limit = 2
    try:
        loops, _ = loop_nodes(f, np.arange(5.0))
        assert loops == 1
    finally:
        framejit.config.loop_unroll_limit = 16


def test_short_loops_of_array_operations_unroll_to_fuse():
    # 100 iterations of two array operations: unrolled (the native backend fuses
    # them into one pass); 400 of them: one loop node
    assert loop_nodes(array_carry, np.arange(5.0))[0] == 0
    assert loop_nodes(array_carry_long, np.arange(5.0))[0] == 1


def test_capture_loops_off_unrolls():
    framejit.config.capture_loops = False
    try:
        loops, nodes = loop_nodes(recurrence, np.zeros(30))
        assert loops == 0 and nodes > 80
    finally:
        framejit.config.capture_loops = True


def test_carried_type_change_peels_the_first_iteration():
    # s starts as a Python float and becomes a NumPy float64 after one iteration
    graphs = []
    framejit.reset()
    framejit.compile(accumulate, backend=lambda g, ex: graphs.append(g) or g)(V50)
    g = graphs[0]
    names = [n.name for n in g.nodes]
    assert "loop" in names
    loop = next(n for n in g.nodes if n.name == "loop")
    assert loop.args[:3] == (1, 50, 1)  # iteration 0 unrolled before it


# ---------------------------------------------------------------- what is not captured

def data_dependent_branch(a):
    s = 0.0
    for i in range(a.shape[0]):
        if a[i] > 0:
            s += a[i]
    return s


def index_branch(a):
    for i in range(a.shape[0]):
        if i % 2:
            a[i] = 0.0
    return a


def body_prints(a):
    for i in range(20):
        print(i)
        a = a + 1
    return a


def body_breaks(a):
    for i in range(a.shape[0]):
        a = a + 1
        if i == 25:
            break
    return a


def body_appends(a):
    out = []
    for i in range(20):
        out.append(a[i])
    return out


def body_returns(a):
    for i in range(a.shape[0]):
        a = a * 2
        if i == 3:
            return a
    return a


@pytest.mark.parametrize("fn", [data_dependent_branch, index_branch, body_prints, body_breaks, body_appends,
                                body_returns], ids=lambda f: f.__name__)
def test_uncapturable_bodies_fall_back_and_stay_exact(fn):
    with contextlib.redirect_stdout(io.StringIO()):
        run_both(fn, [(V50.copy(),)])


def test_refusal_is_logged(logs):
    framejit.reset()
    framejit.set_logs(graph_breaks=True)
    framejit.compile(index_branch, backend="eager")(V50.copy())
    err = "\n".join(logs.lines)
    assert "not captured (branch on a value that changes with each iteration of the loop)" in err
    assert "it is unrolled" in err


# ---------------------------------------------------------------- errors inside the loop

def out_of_bounds(a, n):
    for i in range(n):
        a[i] = a[i] + 1
    return a


def divide_warns(a):
    s = np.float64(1.0)
    for i in range(a.shape[0]):
        s = s / a[i]
    return s


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_index_error_in_an_iteration_is_cpythons(backend):
    # IndexError at i == 30, after 30 stores: the same error and the same array
    run_both(out_of_bounds, [(np.zeros(30), 40), (np.zeros(50), 40)], backend)


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_warnings_in_the_loop_are_numpys(backend):
    import warnings
    a = np.array([1.0, 2.0, 0.0, 4.0] * 6)
    framejit.reset()
    cf = framejit.compile(divide_warns, backend=backend)
    with warnings.catch_warnings(record=True) as w1:
        warnings.simplefilter("always")
        r1 = divide_warns(a)
    with warnings.catch_warnings(record=True) as w2:
        warnings.simplefilter("always")
        r2 = cf(a)
    same(r2, r1)
    assert [str(x.message) for x in w2] == [str(x.message) for x in w1]


# ---------------------------------------------------------------- exactness at the edges
# (the native backend compiles these bodies into C loops; each runs under both)

def big_int_sum(n):
    t = 2 ** 62
    for i in range(n):
        t = t + i * 1000003      # passes 2**63: Python's big ints from there on
    return t


def int32_wrap(a):
    for i in range(a.shape[0]):
        a[i] = a[i] + np.int32(2 ** 30)   # NumPy's int32 overflow warns and wraps
    return a


def float_into_int(a, b):
    for i in range(a.shape[0]):
        a[i] = b[i] * 1.5
    return a


def py_zero_division(a):
    s = 1.0
    for i in range(a.shape[0]):
        s = s / float(i - 20)
    return s


def negative_indices(a):
    for i in range(a.shape[0]):
        a[-i - 1] = a[i] * 2 + i
    return a


def read_after_store(a):
    s = 0.0
    for i in range(a.shape[0]):
        a[i] = a[i] + 1.0
        s = s + a[i]
    return s, a


def two_views(a, b):
    for i in range(1, a.shape[0]):
        a[i] = b[i - 1] + 1.0   # b is a view of a: each store is read back
    return a


def strided_2d(m):
    t = 0.0
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            t = t + m[i, j] * (i - j)
    return t


def float32_stores(a):
    for i in range(1, a.shape[0]):
        a[i] = a[i - 1] * np.float32(1.1) + 0.1
    return a


def bool_and_compare(a, flags):
    c = 0
    for i in range(a.shape[0]):
        flags[i] = a[i] > 0.5
        c = c + (a[i] < 0.25)
    return c, flags


def mixed_int_float(a):
    s = 0
    for i in range(a.shape[0]):
        s = s + a[i] * 2       # int64 array elements: a NumPy int64 accumulator
    return s, s / 7


def modulo_index(a, w):
    for i in range(a.shape[0]):
        a[i] = a[i] * w[i % 4] + (i // 3)
    return a


def nan_paths(a):
    m = 0.0
    for i in range(a.shape[0]):
        m = m + np.sqrt(a[i]) - abs(a[i])
    return m


RNG = np.random.default_rng(11)
EDGE = [
    (big_int_sum, [(40,), (10,)]),
    (int32_wrap, [(np.arange(30, dtype=np.int32) * 2 ** 25,)]),
    (float_into_int, [(np.zeros(20, np.int64), np.linspace(-5, 5, 20)),
                      (np.zeros(20, np.int64), np.array([1.0, np.nan] * 10)),
                      (np.zeros(20, np.int32), np.linspace(0, 3e9, 20))]),
    (py_zero_division, [(np.zeros(30),), (np.zeros(19),)]),
    (negative_indices, [(np.arange(25.0),)]),
    (read_after_store, [(RNG.standard_normal(40),)]),
    (strided_2d, [(RNG.standard_normal((20, 30))[::2, ::3],), (np.asfortranarray(RNG.standard_normal((18, 17))),)]),
    (float32_stores, [(np.ones(50, np.float32),)]),
    (bool_and_compare, [(RNG.random(30), np.zeros(30, bool))]),
    (mixed_int_float, [(np.arange(-10, 30),)]),
    (modulo_index, [(np.arange(40.0), np.array([1.0, -2.0, 0.5, 3.0]))]),
    (nan_paths, [(np.linspace(-1, 4, 30),), (np.linspace(0, 4, 30),)]),
]


@pytest.mark.parametrize("fn,args_list", EDGE, ids=[c[0].__name__ for c in EDGE])
@pytest.mark.parametrize("backend", ["eager", "native"])
def test_loop_edges(fn, args_list, backend):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_both(fn, args_list, backend)


def test_views_of_one_array():
    def run(f):
        a = np.arange(30.0)
        return f(a, a[:])
    framejit.reset()
    cf = framejit.compile(two_views, backend="native")
    same(run(cf), run(two_views))
    same(run(cf), run(two_views))


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("mode", ["ignore", "warn", "raise"])
def test_errstate_decides(backend, mode):
    import warnings
    a = np.array([1.0, 2.0, 0.0, 4.0] * 6)

    def run(f):
        with warnings.catch_warnings(record=True) as w, np.errstate(divide=mode):
            warnings.simplefilter("always")
            out = outcome(f, (a,))
        return out, [str(x.message) for x in w]

    framejit.reset()
    cf = framejit.compile(divide_warns, backend=backend)
    for _ in range(2):
        (g, gw), (p, pw) = run(cf), run(divide_warns)
        assert g[0] == p[0] and gw == pw
        if g[0] == "ok":
            same(g[1], p[1])
        else:
            assert g[1:] == p[1:]


def test_read_only_store_raises_as_numpy():
    a = np.zeros(30)
    a.flags.writeable = False
    run_both(recurrence, [(a,)], "native")


def test_native_loop_counts_as_compiled():
    from framejit import _C
    framejit.reset()
    plans = []

    def backend(g, ex):
        plan, src = _C.native_plan(g)
        plans.append(src)
        return g

    framejit.compile(recurrence, backend=backend)(np.zeros(40))
    assert plans[0] is not None and "int fj_l0(" in plans[0]


def swap_arrays(u, v):
    for t in range(30):
        for i in range(1, u.shape[0] - 1):
            v[i] = (u[i - 1] + u[i + 1]) * 0.5
        u, v = v, u
    return u, v


def bitwise_life(g):
    out = np.zeros_like(g)
    for i in range(1, g.shape[0] - 1):
        for j in range(1, g.shape[1] - 1):
            n = (g[i - 1, j - 1] + g[i - 1, j] + g[i - 1, j + 1] + g[i, j - 1] + g[i, j + 1] +
                 g[i + 1, j - 1] + g[i + 1, j] + g[i + 1, j + 1])
            out[i, j] = (n == 3) | ((n == 2) & (g[i, j] == 1))
    return out


def escape_counts(w, h, maxiter):
    out = np.zeros((h, w), dtype=np.int64)
    for r in range(h):
        for c in range(w):
            cx = -2.0 + 3.0 * c / w
            cy = -1.5 + 3.0 * r / h
            x = 0.0
            y = 0.0
            count = 0
            for k in range(maxiter):
                x, y = x * x - y * y + cx, 2.0 * x * y + cy
                count += x * x + y * y <= 4.0
            out[r, c] = count
    return out


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_swapped_arrays(backend):
    run_both(swap_arrays, [(np.linspace(0, 1, 40), np.zeros(40))], backend)


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_bitwise_life(backend):
    g = (np.random.default_rng(3).random((24, 24)) > 0.6).astype(np.int64)
    run_both(bitwise_life, [(g,)], backend)


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_python_float_overflow_is_not_a_stop(backend):
    # x and y overflow to inf and nan: Python's floats say nothing, nor may we
    c = run_both(escape_counts, [(24, 20, 40)], backend)
    assert dict(c["graph_break"]) == {}


# ---------------------------------------------------------------- errors after side effects

LOG = []


def effect_then_loop(a):
    LOG.append(len(a))
    s = 1.0
    for i in range(a.shape[0]):
        s = s / (i - 20)         # ZeroDivisionError at i == 20
    return s


def effect_then_index(a, idx):
    LOG.append(1)
    a[idx] = 5.0                 # IndexError for an index out of bounds
    return a


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_effects_before_a_loop_that_raises(backend):
    LOG.clear()
    framejit.reset()
    cf = framejit.compile(effect_then_loop, backend=backend)
    for f in (effect_then_loop, cf, cf):
        with pytest.raises(ZeroDivisionError):
            f(np.zeros(30))
    assert LOG == [30, 30, 30]


def test_effects_before_an_index_that_raises():
    LOG.clear()
    framejit.reset()
    cf = framejit.compile(effect_then_index, backend="eager")
    for f in (effect_then_index, cf, cf):
        with pytest.raises(IndexError):
            f(np.zeros(5), np.array([1, 9]))
    assert LOG == [1, 1, 1]


def fresh_then_raise(n, idx):
    v = np.zeros(40)
    for i in range(1, 30):
        v[i] = v[i - 1] + i
    return v[idx]          # IndexError from a loop-made array: the frame reruns in CPython


def test_loop_into_a_fresh_array_can_rerun():
    framejit.reset()
    cf = framejit.compile(fresh_then_raise, backend="eager")
    for f in (fresh_then_raise, cf, cf):
        with pytest.raises(IndexError, match="index 99 is out of bounds"):
            f(40, np.array([1, 99]))
    assert framejit.counters["stats"].get("graph_raised_reruns", 0) >= 1


def wraps_at_start(a, b):
    for i in range(a.shape[0]):
        b[i] = a[i - 1] * 2.0      # a[-1] on the first iteration: no hoisting, the wrap is NumPy's
    return b


def inner_partial(m, out):
    for i in range(1, m.shape[0] - 1):
        for j in range(2, m.shape[1] - 2):
            out[i, j] = m[i - 1, j + 2] - m[i + 1, j - 2] + m[0, j]
    return out


def inner_overrun(m, out, k):
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            out[i, j] = m[i, j + k]    # out of bounds when k > 0: IndexError, CPython's
    return out


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_hoisted_bounds(backend):
    a = np.arange(40.0)
    m = np.random.default_rng(2).random((30, 25))
    run_both(wraps_at_start, [(a, np.zeros(40))], backend)
    run_both(inner_partial, [(m, np.zeros((30, 25))), (m[::2], np.zeros((15, 25)))], backend)
    run_both(inner_overrun, [(m, np.zeros((30, 25)), 0), (m, np.zeros((30, 25)), 1)], backend)


# ---------------------------------------------------------------- the C loops' fast versions
# (native_loop.c): stores of a hoisted range log one saved range per loop run,
# or per block, instead of an entry per store; a NumPy float operation is kept
# only where nothing else forces it; int overflow of a level without inner
# loops is sticky and tested after the loop.  Each kernel fails (a float
# condition, an int overflow) in the middle of a loop, past the first block,
# under every errstate mode: the results, the inputs after the call, the
# exceptions and the warnings are NumPy's.

def heat_blowup(u, tmp, steps, r):
    # explicit diffusion written as weights (r on the neighbours), copied back scaled
    for t in range(steps):
        for i in range(1, u.shape[0] - 1):
            tmp[i] = r * (u[i + 1] + u[i - 1]) + (1.0 - 2.0 * r) * u[i]
        for i in range(1, u.shape[0] - 1):
            u[i] = tmp[i] * 1.0
    return u


def flat_blowup(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * x[i] * 1e300
    return out


def recurrence_blowup(a, b):
    for i in range(1, a.shape[0]):
        a[i] = a[i - 1] * 3.0 + b[i]
    return a


def dead_operation(x, out):
    for i in range(x.shape[0]):
        t = x[i] * 1e308
        out[i] = x[i]
    return out


def overwritten_store(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * 1e308
        out[i] = x[i]
    return out


def fixed_store(x, out):
    for i in range(x.shape[0]):
        out[0] = x[i] * 1e308
    return out


def neighbour_sums(g, out):
    for i in range(1, g.shape[0] - 1):
        for j in range(1, g.shape[1] - 1):
            out[i, j] = g[i - 1, j] + g[i + 1, j] + g[i, j - 1] + g[i, j + 1]
    return out


def nested_offsets(img, out):
    for i in range(img.shape[0]):
        for j in range(img.shape[1]):
            out[i, j] = img[i + 0 - 1, j + 1 - 1] * 2.0
    return out


def stencil_into(u, v):
    for i in range(1, u.shape[0] - 1):
        v[i] = (u[i - 1] + u[i + 1]) * 1e300 - u[i]
    return v


def run_modes(fn, make_args, mode, backend="native"):
    """fn compiled and plain under np.errstate(all=mode): outcome, inputs after
    the call and warnings equal, twice (the second call warm)."""
    import warnings

    def run(f):
        args = make_args()
        with warnings.catch_warnings(record=True) as w, np.errstate(all=mode):
            warnings.simplefilter("always")
            out = outcome(f, args)
        return out, args, [str(x.message) for x in w]

    framejit.reset()
    cf = framejit.compile(fn, backend=backend)
    for _ in range(2):
        (g, ga, gw), (p, pa, pw) = run(cf), run(fn)
        assert g[0] == p[0], (g, p)
        if g[0] == "ok":
            same(g[1], p[1])
        else:
            assert g[1:] == p[1:]
        for x, y in zip(ga, pa):
            same(x, y)
        assert gw == pw


def _heat_args():
    u = np.random.default_rng(5).random(300)
    u[150] = 1e300
    return u, np.zeros(300), 6, 40.0


def _big_at(n, k, v=1e10):
    def make():
        x = np.random.default_rng(k).random(n)
        x[k] = v
        return x, np.zeros(n)
    return make


def _recurrence_args():
    return np.ones(2000), np.random.default_rng(9).random(2000)


def _int_grid():
    g = np.random.default_rng(3).integers(0, 5, (40, 70)).astype(np.int64)
    g[25, 40] = 2**62
    g[27, 40] = 2**62
    return g, np.zeros((40, 70), dtype=np.int64)


@pytest.mark.parametrize("mode", ["ignore", "warn", "raise"])
@pytest.mark.parametrize("fn,make", [
    (heat_blowup, _heat_args),
    (flat_blowup, _big_at(2000, 700)),
    (flat_blowup, _big_at(2000, 1900)),
    (recurrence_blowup, _recurrence_args),
    (dead_operation, _big_at(1500, 900)),
    (overwritten_store, _big_at(1500, 600)),
    (fixed_store, _big_at(1500, 1100)),
    (neighbour_sums, _int_grid),
    (stencil_into, _big_at(1200, 800, 1e9)),
], ids=["heat", "flat-700", "flat-1900", "recurrence", "dead", "overwritten", "fixed", "int-overflow", "stencil"])
def test_fast_versions_stop_where_numpy_does(fn, make, mode):
    run_modes(fn, make, mode)


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_fast_versions_without_conditions(backend):
    img = np.random.default_rng(4).random((30, 40))
    run_both(nested_offsets, [(img, np.zeros((30, 40)))], backend)
    run_both(neighbour_sums, [(np.arange(2800).reshape(40, 70), np.zeros((40, 70), dtype=np.int64))], backend)
    run_both(flat_blowup, [(np.linspace(0, 1e-5, 3000), np.zeros(3000))], backend)


@pytest.mark.parametrize("fn,args", [
    (nested_offsets, (np.random.default_rng(4).random((30, 40)), np.zeros((30, 40)))),
    (neighbour_sums, (np.arange(2800).reshape(40, 70), np.zeros((40, 70), dtype=np.int64))),
    (flat_blowup, (np.linspace(0, 1e-5, 3000), np.zeros(3000))),
    (heat_blowup, (np.random.default_rng(5).random(300), np.zeros(300), 6, 0.25)),
    (recurrence_blowup, (np.ones(200), np.random.default_rng(9).random(200))),
    (stencil_into, (np.random.default_rng(8).random(1200) * 1e-10, np.zeros(1200))),
], ids=["offsets", "int-sums", "flat", "heat", "recurrence", "stencil"])
def test_clean_data_runs_the_c_loop_whole(fn, args):
    """No condition, no overflow, indices in bounds: the C loop runs every
    iteration (no iteration handed to the eager loop)."""
    plans = native_loop_plans(fn, args)
    assert any("int fj_l" in p.source for p in plans)
    assert all(p.fallbacks == 0 for p in plans), [p.fallbacks for p in plans]


def test_fast_version_source():
    """What the version without checks is made of: a range saved per loop run
    (no undo entry per store), sticky int overflow, no FJL_KEEP on a stored
    value (vectorizable), FJL_KEEP on an unused one."""
    src = native_loop_plans(heat_blowup, (np.random.default_rng(5).random(300), np.zeros(300), 6, 0.25))[0].source
    assert "fjl_save(&lg" in src and "FJL_KEEP(n" not in src
    src = native_loop_plans(neighbour_sums, (np.arange(2800).reshape(40, 70),
                                             np.zeros((40, 70), dtype=np.int64)))[0].source
    assert "ovf_ |=" in src
    src = native_loop_plans(dead_operation, (np.random.default_rng(1).random(100), np.zeros(100)))[0].source
    assert "FJL_KEEP(n" in src


def test_fast_versions_on_views_of_one_array():
    def make():
        a = np.random.default_rng(6).random(1500)
        a[1000] = 1e9
        return a, a
    run_modes(stencil_into, make, "warn")
    run_modes(stencil_into, make, "raise")

    def make_shifted():
        a = np.random.default_rng(7).random(1500)
        a[1000] = 1e9
        return a[2:], a[:-2]
    run_modes(stencil_into, make_shifted, "warn")
    run_modes(stencil_into, make_shifted, "raise")


# A body whose store's index is data (histograms, grouping) has no undo log:
# its iterations stop before their store, float conditions told from the
# values (overflow, invalid, divide, underflow), so every condition and error
# still stops at NumPy's iteration.

def group_add(keys, vals, sums):
    for i in range(keys.shape[0]):
        sums[keys[i]] += vals[i]
    return sums


def group_scaled(keys, vals, sums):
    for i in range(keys.shape[0]):
        sums[keys[i]] += vals[i] * 1e-300
    return sums


def group_divide(keys, vals, out):
    for i in range(keys.shape[0]):
        out[keys[i]] = out[keys[i]] / vals[i]
    return out


def group_sqrt(keys, vals, out):
    for i in range(keys.shape[0]):
        out[keys[i]] = np.sqrt(vals[i]) + out[keys[i]]
    return out


def counts_of(bins, counts):
    for i in range(bins.shape[0]):
        counts[bins[i]] += 1
    return counts


def _groups(n, special=None, at=(), dtype=np.float64, scale=1.0):
    def make():
        rng = np.random.default_rng(n)
        keys = rng.integers(0, 7, n)
        vals = (rng.random(n) * scale).astype(dtype)
        for k in at:
            vals[k] = special
        return keys, vals, np.ones(7, dtype)
    return make


def _bins(n, bad=None, big=False):
    def make():
        bins = np.random.default_rng(n).integers(-5, 9, n)
        if bad is not None:
            bins[bad] = 40
        counts = np.zeros(9, np.int64)
        if big:
            counts[3] = 2**63 - 3
        return bins, counts
    return make


@pytest.mark.parametrize("mode", ["ignore", "warn", "raise"])
@pytest.mark.parametrize("fn,make", [
    (group_add, _groups(1500, 1e308, (700, 900))),
    (group_add, _groups(1500, np.inf, (600, 601))),
    (group_add, _groups(1500, np.nan, (800,))),
    (group_add, _groups(1500, -np.inf, (300, 1200))),
    (group_add, _groups(1500, 3e38, (700, 703, 705), np.float32)),
    (group_scaled, _groups(1500, 1e-20, (650,))),
    (group_divide, _groups(1500, 0.0, (1000,))),
    (group_divide, _groups(1500, 1e-310, (400,))),
    (group_sqrt, _groups(1500, -1.0, (777,))),
    (counts_of, _bins(1500, 900)),
    (counts_of, _bins(1500, big=True)),
], ids=["overflow", "inf", "nan", "inf-minus-inf", "f32-overflow", "underflow", "divide", "huge-quotient",
        "sqrt-negative", "index-error", "int-overflow"])
def test_data_indexed_stores_stop_where_numpy_does(fn, make, mode):
    run_modes(fn, make, mode)


def test_data_indexed_stores_source():
    """No undo log (no fjl_log1 entries) and the float conditions tested from values."""
    src = native_loop_plans(group_add, _groups(100)())[0].source
    body = src.split("int fj_l0(")[1]
    assert "/*fpv*/" in body and "fjl_log1(&lg, p" not in body.split("if (hs_) {")[1].split("} else {")[0]
    plans = native_loop_plans(counts_of, _bins(3000)())
    assert all(p.fallbacks == 0 for p in plans)



def counts_last(bins, counts):
    for i in range(bins.shape[0]):
        counts[bins[i]] += 1
    return counts, i


def group_last(keys, vals, sums, step):
    for i in range(1, keys.shape[0], step):
        sums[keys[i]] += vals[i]
    return sums, i


@pytest.mark.parametrize("mode", ["ignore", "warn"])
@pytest.mark.parametrize("fn,make", [
    (counts_last, _bins(1500)),
    (counts_last, _bins(1500, big=True)),
    (counts_last, _bins(700)),
    (group_last, lambda: _groups(1500)() + (1,)),
    (group_last, lambda: _groups(1500)() + (3,)),
    (group_last, lambda: _groups(1500, 1e308, (700, 900))() + (1,)),
    (group_last, lambda: _groups(1500, 1e308, (701, 904))() + (3,)),
    (group_last, lambda: _groups(1500, np.nan, (5, 1000))() + (1,)),
], ids=["counts", "counts-overflow", "counts-one-block", "unit", "step3", "unit-stops", "step3-stops", "nan"])
def test_loop_index_after_the_loop(fn, make, mode):
    """The loop's index after it (written back as the last iteration's, not copied
    per iteration) equals CPython's where the C loop ends, and where it stops and
    the eager loop goes on."""
    run_modes(fn, make, mode)



# -------------------------------------------- store-to-load forwarding (step-1 loops)

def fw_recurrence(a, b):
    for i in range(1, a.shape[0]):
        a[i] = a[i - 1] * 0.999 + b[i]
    return a


def fw_fib(a):
    for i in range(2, a.shape[0]):
        a[i] = a[i - 1] * 0.5 + a[i - 2] * 0.5 + 1.0
    return a


def fw_ahead(a):
    for i in range(a.shape[0] - 1):
        a[i + 1] = a[i] * 0.5 + 1.0
    return a


def fw_int(a):
    for i in range(4, a.shape[0]):
        a[i] = a[i - 1] + a[i - 4]
    return a


def fw_two_reads(a):
    s = 0.0
    for i in range(1, a.shape[0]):
        a[i] = a[i - 1] + 1.0
        s += a[i - 1] * 2.0
    return a, s


def fw_gap(a):
    for i in range(3, a.shape[0]):
        a[i] = a[i - 1] * 0.5 + a[i - 3] * 0.25
    return a


def fw_after(a):
    s = 0.0
    for i in range(1, a.shape[0]):
        a[i] = a[i - 1] * 0.5 + 1.0
        s += a[i] + a[i - 1] * 0.125
    return a, s


def fw_step(a, step):
    for i in range(2, a.shape[0], step):
        a[i] = a[i - 2] + 1.0
    return a


def fw_pair(a, b):
    for i in range(1, a.shape[0]):
        a[i] = b[i - 1] + 1.0
    return a


def fw_f32(a, b):
    for i in range(1, a.shape[0]):
        a[i] = a[i - 1] * np.float32(0.5) + b[i]
    return a


def _fw_vals(n, dtype=np.float64, at=(), special=None):
    def make():
        a = np.random.default_rng(n).random(n).astype(dtype)
        for k in at:
            a[k] = special
        return a
    return make


@pytest.mark.parametrize("mode", ["ignore", "warn", "raise"])
@pytest.mark.parametrize("fn,make", [
    (fw_recurrence, lambda: (_fw_vals(1500)(), _fw_vals(1501)())),
    (fw_recurrence, lambda: (_fw_vals(1500)(), _fw_vals(1500, at=(900,), special=1e308)())),
    (fw_recurrence, lambda: (_fw_vals(1500)(), _fw_vals(1500, at=(700, 701), special=np.nan)())),
    (fw_fib, lambda: (_fw_vals(1500)(),)),
    (fw_fib, lambda: (_fw_vals(1500, at=(600,), special=1e308)(),)),
    (fw_ahead, lambda: (_fw_vals(1500)(),)),
    (fw_int, lambda: (np.arange(1500, dtype=np.int64),)),
    (fw_int, lambda: (np.r_[np.arange(4), np.zeros(1496, np.int64)] + 2**40,)),
    (fw_two_reads, lambda: (_fw_vals(1500)(),)),
    (fw_gap, lambda: (_fw_vals(1500)(),)),
    (fw_after, lambda: (_fw_vals(1500)(),)),
    (fw_step, lambda: (_fw_vals(1500)(), 1)),
    (fw_step, lambda: (_fw_vals(1500)(), 2)),
    (fw_step, lambda: (_fw_vals(1500)(), 3)),
    (fw_f32, lambda: (_fw_vals(1500, np.float32)(), _fw_vals(1500, np.float32)())),
    (fw_f32, lambda: (_fw_vals(1500, np.float32)(), _fw_vals(1500, np.float32, (800,), 3e38)())),
], ids=["recurrence", "recurrence-overflow", "recurrence-nan", "fib", "fib-overflow", "ahead", "int", "int-overflow",
        "two-reads", "gap", "after", "step1", "step2", "step3", "f32", "f32-overflow"])
def test_forwarded_loads_equal_memory(fn, make, mode):
    """A load of the element the previous iterations stored reads the register
    the store left (step-1 loops): results, warnings and stops as CPython's."""
    run_modes(fn, make, mode)


def test_forwarded_loads_alias():
    """Two placeholders of one array: the load reads memory (only a load of the
    stored placeholder is forwarded), so the result is CPython's."""
    x = np.random.default_rng(3).random(1500)
    y = x.copy()
    framejit.reset()
    cf = framejit.compile(fw_pair, backend="native")
    for _ in range(2):
        same(cf(x, x), fw_pair(y, y))
        same(x, y)


@pytest.mark.parametrize("fn,args,fwd", [
    (fw_recurrence, (np.ones(1000), np.ones(1000)), 1),
    (fw_fib, (np.ones(1000),), 2),
    (fw_int, (np.arange(1000),), 4),
    (fw_pair, (np.ones(1000), np.ones(1000)), 0),
    (fw_two_reads, (np.ones(1000),), 2),
    (fw_gap, (np.ones(1000),), 3),
])
def test_forwarding_source(fn, args, fwd):
    """The registers the step-1 version keeps (fw<d>_), loaded before its loop;
    none where the load is of another array."""
    src = native_loop_plans(fn, args)[0].source
    body = src.split("int fj_l0(")[1]
    assert ("fw%d_" % fwd in body) == (fwd > 0) and "fw%d_" % (fwd + 1) not in body
    if fwd:
        step1 = body.split("if (step == 1) {")[1].split("for (; ran < bc_")[0]
        assert "memcpy(&fw1_, A" in step1 and "= fw1_;" in step1
        rest = body.split("for (; ran < bc_")[1]
        assert "if (0) n" in rest  # the other versions read memory



def running_sum(x, out):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i]
        out[i] = s
    return out, s


def running_diff(x, out, w):
    s = 0.0
    for i in range(w, x.shape[0]):
        s = s + x[i] - x[i - w]
        out[i] = s
    return out


@pytest.mark.parametrize("mode", ["ignore", "warn", "raise"])
@pytest.mark.parametrize("fn,make", [
    (running_sum, lambda: (_fw_vals(1500, at=(700,), special=1.7e308)() * 1e308, np.zeros(1500))),
    (running_sum, lambda: (_fw_vals(1500, at=(600, 601), special=np.inf)(), np.zeros(1500))),
    (running_sum, lambda: (_fw_vals(1500, at=(600, 1100), special=np.nan)(), np.zeros(1500))),
    (running_sum, lambda: (np.r_[np.ones(800), np.inf, -np.inf, np.ones(700)], np.zeros(1502))),
    (running_sum, lambda: (_fw_vals(1500, np.float32)() * np.float32(3e38), np.zeros(1500, np.float32))),
    (running_diff, lambda: (_fw_vals(1500, at=(900,), special=1.7e308)(), np.zeros(1500), 7)),
], ids=["overflow", "inf", "nan", "inf-minus-inf", "f32-overflow", "diff-overflow"])
def test_hoisted_stores_tested_from_values(fn, make, mode):
    """A loop whose stores' indices are hoisted and whose float operations are
    adds (tested from their values, no range save): it stops at the iteration
    NumPy warns or raises at, the stores before it made, none after."""
    run_modes(fn, make, mode)
    src = native_loop_plans(fn, make())[0].source.split("int fj_l0(")[1]
    assert "/*fpv*/" in src and "fjl_save(" not in src


def narrowing_store(idx, x, out):
    for i in range(idx.shape[0]):
        out[idx[i]] = x[i] * 2.0            # float64 into float32: NumPy's cast overflows to inf


def narrowing_store_hoisted(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i]


@pytest.mark.parametrize("mode", ["ignore", "warn", "raise"])
@pytest.mark.parametrize("fn,make", [
    (narrowing_store, lambda: (np.arange(1200) % 7, np.r_[np.ones(900), 1e300, np.ones(299)], np.zeros(7, np.float32))),
    (narrowing_store_hoisted, lambda: (np.r_[np.ones(700), 1e-300, np.ones(500)], np.zeros(1201, np.float32))),
    (narrowing_store_hoisted, lambda: (np.r_[np.ones(700), -1e300, np.ones(500)], np.zeros(1201, np.float32))),
], ids=["data-index-overflow", "hoisted-underflow", "hoisted-overflow"])
def test_narrowing_stores_warn_as_numpy(fn, make, mode):
    run_modes(fn, make, mode)


# ---------------------------------------------------------------- bounds that change with the loop

def tri_pairs(x):
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            d = x[i] - x[j]
            s += d * d
    return s


def lower_copy(A):
    n = A.shape[0]
    out = np.zeros_like(A)
    for i in range(n):
        for j in range(i + 1):
            out[i, j] = A[i, j] * 2.0
    return out


def back_substitution(U, b):
    n = b.shape[0]
    x = np.zeros(n)
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s -= U[i, j] * x[j]
        x[i] = s / U[i, i]
    return x


def inner_empty_for_some(x):
    c = np.zeros(x.shape[0])
    for i in range(600):
        for j in range(i % 5, i % 9):
            c[j] += x[i % x.shape[0]] * j
    return c


def inner_reversed_stepped(x):
    c = np.zeros(50)
    t = 0
    for i in range(40):
        for j in range(i - 1, -1, -3):
            c[j] += 1.5
            t += j - i
    return c, t


def inner_int_counter(n):
    t = 0
    for i in range(n):
        for j in range(i):
            t += i ^ j
    return t


def prefix_means(x):
    out = np.zeros(x.shape[0])
    for i in range(1, x.shape[0]):
        s = x[0]
        for j in range(1, i + 1):
            s = s + x[j]
        out[i] = s / (i + 1)
    return out


RNG_T = np.random.default_rng(44)
U_T = np.triu(RNG_T.standard_normal((40, 40))) + 8 * np.eye(40)
SYMBOLIC_CASES = [
    (tri_pairs, [(RNG_T.standard_normal(200),), (np.zeros(1),), (np.arange(5.0),)]),
    (lower_copy, [(RNG_T.standard_normal((30, 30)),), (RNG_T.standard_normal((1, 1)),)]),
    (back_substitution, [(U_T, RNG_T.standard_normal(40))]),
    (inner_empty_for_some, [(RNG_T.standard_normal(12),)]),
    (inner_reversed_stepped, [(np.zeros(3),)]),
    (inner_int_counter, [(30,), (1,), (0,)]),
    (prefix_means, [(RNG_T.standard_normal(60),), (np.ones(2, dtype=np.float32),)]),
]


@pytest.mark.parametrize("fn,args_list", SYMBOLIC_CASES, ids=[c[0].__name__ for c in SYMBOLIC_CASES])
@pytest.mark.parametrize("backend", ["eager", "native"])
def test_inner_loops_whose_bounds_change_with_the_outer_index(fn, args_list, backend):
    counters = run_both(fn, args_list, backend)
    assert dict(counters["graph_break"]) == {}


@pytest.mark.parametrize("fn,args", [(tri_pairs, (RNG_T.standard_normal(300),)),
                                     (lower_copy, (RNG_T.standard_normal((50, 50)),)),
                                     (back_substitution, (U_T, RNG_T.standard_normal(40)))],
                         ids=lambda a: getattr(a, "__name__", ""))
def test_triangular_loops_are_nested_loop_nodes(fn, args):
    # the outer loop is one node (its first iteration peeled where a carried value
    # changes type), the inner one a loop node inside its body: the graph does not
    # grow with n
    loops, nodes = loop_nodes(fn, *args)
    assert loops >= 1 and nodes < 40, (loops, nodes)


@pytest.mark.parametrize("fn,args", [(tri_pairs, (RNG_T.standard_normal(300),)),
                                     (lower_copy, (RNG_T.standard_normal((50, 50)),)),
                                     (back_substitution, (U_T, RNG_T.standard_normal(40)))],
                         ids=lambda a: getattr(a, "__name__", ""))
def test_native_runs_triangular_loops_as_c_loops(fn, args):
    plans = native_loop_plans(fn, args)
    assert any("int fj_l" in p.source for p in plans)
    assert all(p.fallbacks == 0 for p in plans), [p.fallbacks for p in plans]


def read_index_after(x, k):
    for j in range(k, x.shape[0]):
        x[j] = 1.0
    return j


def carried_float_top_level(x, k):
    s = 0.0
    for j in range(k, x.shape[0]):
        s += x[j]
    return s


def step_not_constant(x, k):
    c = np.zeros(3)
    for i in range(100):
        for j in range(0, 10, k):
            c[0] += j
    return c


def range_used_otherwise(x):
    t = 0
    for i in range(100):
        t += len(range(i, 50))
    return t


def break_in_inner(x):
    s = 0.0
    for i in range(100):
        for j in range(i, x.shape[0]):
            if j > i + 2:
                break
            s += x[j]
    return s


@pytest.mark.parametrize("fn,args_list", [
    # k dynamic after the first call: range(k, n) is symbolic at the top level
    (read_index_after, [(np.zeros(40), 3), (np.zeros(40), 5), (np.zeros(40), 40), (np.zeros(40), 50),
                        (np.zeros(40), 39)]),
    (carried_float_top_level, [(np.arange(40.0), 3), (np.arange(40.0), 5), (np.arange(40.0), 40),
                               (np.arange(40.0), 7)]),
    (step_not_constant, [(None, 2), (None, 3), (None, -1)]),
    (range_used_otherwise, [(None,)]),
    (break_in_inner, [(np.arange(30.0),)]),
], ids=lambda a: getattr(a, "__name__", ""))
@pytest.mark.parametrize("backend", ["eager", "native"])
def test_symbolic_ranges_that_cannot_be_captured_stay_exact(fn, args_list, backend):
    # a local unbound before the loop and read after it (the loop may run no
    # iteration), a carried value changing type with no enclosing loop to peel,
    # a step that is not a constant, a range used as a value, a break: the bounds
    # are pinned (guarded constants), the enclosing loop unrolls, or CPython runs it
    run_both(fn, args_list, backend)


def test_a_loop_index_read_after_a_symbolic_loop_is_never_a_stale_value(logs):
    # the loop runs no iteration for k == n: j is unbound, as in CPython
    cf = framejit.compile(read_index_after, backend="eager")
    framejit.reset()
    assert cf(np.zeros(10), 3) == 9
    assert cf(np.zeros(10), 4) == 9
    with pytest.raises(UnboundLocalError):
        cf(np.zeros(10), 10)
    with pytest.raises(UnboundLocalError):
        read_index_after(np.zeros(10), 10)


def int_sums_both_ways(x, k):
    s = 0
    for i in range(k, 100):
        s = s + i
    for i in range(k, 100, -1):  # empty for every k < 100
        s = s + i
    return s, x


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_a_symbolic_range_that_runs_no_iteration_keeps_the_state(backend):
    # k dynamic from the second call: both loops are loop nodes over range(k, ...);
    # the second never iterates (and the first does not for k >= 100)
    X = np.arange(5.0)
    run_both(int_sums_both_ways, [(X, 2), (X, 3), (X, 4), (X, 9), (X, 100), (X, 120), (X, -3)], backend)


def inner_bounds_near_int64_max(x, n):
    s = 0.0
    out = np.zeros(20)
    for i in range(20):
        for j in range(n - 1, n, 2):
            s = s + 1.0
            out[i] += 1.0
    return s, out


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_inner_bounds_near_the_int64_limits(backend):
    # n dynamic from the second call; j + step would pass INT64_MAX in a C loop:
    # the C loop hands those iterations to the eager loop
    run_both(inner_bounds_near_int64_max, [(None, 3), (None, 5), (None, 7), (None, 2**63 - 1),
                                           (None, -2**63 + 1), (None, 2**62), (None, 9)], backend)


def zip_over_ranges(x):
    s = x[0] * 0
    for a, b in zip(range(1, 3), range(2, 3)):
        s = s + x[a] * x[b]
    for a, b in zip(range(3), [5, 6]):
        s = s + a * b
    return s


def test_zip_over_a_range_takes_its_items():
    # a range iterator is lazy (its items are not listed): zip lists them
    counters = run_both(zip_over_ranges, [(np.arange(5.0),)])
    assert counters["stats"]["unique_graphs"] == 1


# ---------------------------------------------------------------- np.ndindex and np.ndenumerate

def nd_fill(a, out):
    for i, j in np.ndindex(a.shape):
        out[i, j] = a[i, j] * 2.0 + i - j
    return out


def nd_tuple_index(a):
    s = 0.0
    for idx in np.ndindex(*a.shape):
        s = s + a[idx] * idx[-1]
    return s


def nd_enumerate(a):
    s = 0.0
    for idx, v in np.ndenumerate(a):
        s += v * (idx[0] + 1)
    return s


def nd_enumerate_store(a):
    # each value is read when its iteration comes: the stores before it are seen
    for (i, j), v in np.ndenumerate(a):
        if j + 1 < a.shape[1]:
            a[i, j + 1] = a[i, j + 1] + v * 0.5
    return a


def nd_enumerate_forward(a):
    for (i, j), v in np.ndenumerate(a):
        a[i, j] = v * 3.0 + 1.0
    return a


def nd_three(a):
    t = 0.0
    for i, j, k in np.ndindex(a.shape):
        t = t + a[i, j, k] * (i * 100 + j * 10 + k)
    return t


def nd_small(a):
    t = 0
    for idx in np.ndindex(2, 3):
        t += idx[0] * 10 + idx[1]
    return a + t, list(np.ndindex((2, 2))), list(np.ndindex()), list(np.ndindex(0, 3))


def nd_idx_after(a):
    for idx in np.ndindex(a.shape):
        a[idx] = a[idx] + 1.0
    return a, idx


def nd_zero(a):
    s = 1.0
    for idx, v in np.ndenumerate(a):
        s = s + v
    return s


_ND_R = np.random.default_rng(7)


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn,args", [
    (nd_fill, (_ND_R.random((30, 40)), np.zeros((30, 40)))),
    (nd_fill, (_ND_R.random((40, 30))[::2, ::3], np.zeros((20, 10)))),
    (nd_tuple_index, (_ND_R.random((25, 30)),)),
    (nd_tuple_index, (_ND_R.random(500),)),
    (nd_enumerate, (_ND_R.random((25, 30)),)),
    (nd_enumerate, (np.asfortranarray(_ND_R.random((25, 30))),)),
    (nd_enumerate, ((_ND_R.random((20, 30)) * 10).astype(np.int64),)),
    (nd_enumerate_store, (_ND_R.random((20, 30)),)),
    (nd_enumerate_forward, (_ND_R.random((20, 30)),)),
    (nd_three, (_ND_R.random((6, 7, 8)),)),
    (nd_small, (np.ones(3),)),
    (nd_idx_after, (_ND_R.random((5, 6)),)),
    (nd_zero, (np.ones((0, 5)),)),
    (nd_zero, (np.ones((20, 0, 3)),)),
], ids=["fill", "fill-strided", "tuple-index", "tuple-index-1d", "enumerate", "enumerate-F", "enumerate-int",
        "enumerate-store", "enumerate-forward", "three", "small", "idx-after", "zero", "zero-3d"])
def test_ndindex_loops_equal_plain(fn, args, backend):
    run_both(fn, [args], backend)


@pytest.mark.parametrize("fn,args", [
    (nd_fill, (np.ones((30, 40)), np.zeros((30, 40)))),
    (nd_tuple_index, (np.ones((25, 30)),)),
    (nd_enumerate, (np.ones((25, 30)),)),
    (nd_enumerate_forward, (np.ones((20, 30)),)),
    (nd_three, (np.ones((6, 7, 8)),)),
])
def test_ndindex_loops_captured(fn, args):
    """A loop over np.ndindex / np.ndenumerate is one loop node over the flat
    index (its index tuple computed in the body), whatever the trip count."""
    loops, nodes = loop_nodes(fn, *args)
    assert loops == 1 and nodes < 40, (loops, nodes)
    big = tuple(np.ones(tuple(2 * s for s in a.shape)) if isinstance(a, np.ndarray) else a for a in args)
    assert loop_nodes(fn, *big)[1] == nodes


def test_ndindex_native_runs_as_c():
    """The native backend compiles the loop over np.ndindex to a C loop."""
    plans = native_loop_plans(nd_fill, (np.ones((30, 40)), np.zeros((30, 40))))
    assert plans and all(p.fallbacks == 0 for p in plans)
    assert "int fj_l0(" in plans[0].source


# ---------------------------------------------------------------- while loops

def wl_halve(x, tol):
    n = 0
    s = x[0]
    while s > tol:
        s = s * 0.5
        n += 1
    return s, n


def wl_scan(a):
    i = 0
    while a[i] < 0.99:
        i += 1
    return i


def wl_count(x):
    k = 0
    t = 0.0
    while k < x.shape[0]:
        t = t + x[k]
        k += 1
    return t, k


def wl_not(x):
    n = 0
    v = x.sum()
    while not (v < 1.0):
        v = v / 3.0
        n += 1
    return v, n


def wl_else(x, lim):
    k = 0
    s = 0.0
    while s < lim:
        s = s + x[k % x.shape[0]]
        k += 1
    else:
        s = -s
    return s, k


def wl_store(x, out):
    k = 0
    while x[k] > 0.05:
        out[k] = x[k] * 2.0 + out[k]
        k += 1
    return out, k


def wl_nested_for(x, out):
    r = 0
    while r < x.shape[0] and r >= 0:
        s = 0.0
        for j in range(x.shape[1]):
            s = s + x[r, j]
        out[r] = s
        r += 1
    return out


def wl_in_for(x):
    t = 0
    for i in range(x.shape[0]):
        v = x[i]
        while v > 0.01:
            v = v * 0.5
            t += 1
    return t


def wl_overflow(x):
    v = x[0]
    n = 0
    while n < 40:
        v = v * 1e30
        n += 1
    return v


def wl_unbound_after(x):
    while x[0] > 5.0:
        y = x[0] * 2
        x[0] = x[0] - 1
    return x


def wl_continue(x):
    k = 0
    s = 0.0
    while k < 40:
        k += 1
        if k % 2:
            continue
        s += x[k]
    return s


_WR = np.random.default_rng(9)


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn,args", [
    (wl_halve, (np.array([1000.0]), 0.001)),
    (wl_halve, (np.array([0.0001]), 0.001)),
    (wl_halve, (np.array([np.nan]), 0.001)),
    (wl_scan, (_WR.random(3000),)),
    (wl_scan, (np.zeros(30),)),                       # runs past the end: IndexError
    (wl_count, (_WR.random(200),)),
    (wl_count, (_WR.random(3),)),
    (wl_not, (_WR.random(10) * 100,)),
    (wl_else, (_WR.random(7), 50.0)),
    (wl_store, (_WR.random(500) + 0.01, np.zeros(500))),
    (wl_store, (np.r_[_WR.random(300) + 0.1, 0.0], np.ones(301))),
    (wl_nested_for, (_WR.random((30, 20)), np.zeros(30))),
    (wl_in_for, (_WR.random(40) * 100,)),
    (wl_unbound_after, (np.array([3.0]),)),
    (wl_unbound_after, (np.array([9.5]),)),
    (wl_continue, (_WR.random(50),)),
], ids=["halve", "halve-none", "halve-nan", "scan", "scan-index-error", "count", "count-short", "not", "else",
        "store", "store-stop", "nested-for", "in-for", "unbound-none", "unbound", "continue"])
def test_while_loops_equal_plain(fn, args, backend):
    run_both(fn, [args], backend)


@pytest.mark.parametrize("mode", ["ignore", "warn", "raise"])
def test_while_loop_float_conditions(mode):
    run_modes(wl_overflow, lambda: (np.array([1e10, 1.0]),), mode)
    run_modes(wl_halve, lambda: (np.array([1e300]), 1e-300), mode)


@pytest.mark.parametrize("fn,args", [
    (wl_halve, (np.array([1000.0]), 0.001)),
    (wl_scan, (np.r_[np.zeros(1000), 1.0],)),
    (wl_count, (np.ones(1000),)),
    (wl_not, (np.ones(10) * 100,)),
])
def test_while_loops_captured(fn, args):
    """A while loop whose test is data (or that runs long over Python numbers)
    is one loop node: the trace does not grow with its trip count."""
    loops, nodes = loop_nodes(fn, *args)
    assert loops == 1 and nodes < 40, (loops, nodes)


def test_while_loop_native_runs_as_c_in_chunks():
    """The native kernel of a while loop runs as C (no eager fallback), in chunks
    of iterations (signals are seen between them): a loop of 5 million."""
    plans = native_loop_plans(wl_scan, (np.r_[np.zeros(5_000_000), 1.0],))
    assert plans and all(p.fallbacks == 0 for p in plans)
    src = plans[0].source
    assert "wexit_ = 1" in src and "!wexit_ ? 3 : done_any ? 0 : 4" in src


def nd_zip(a):
    s = 0.0
    for idx, v in zip(np.ndindex(a.shape), a.ravel()):
        s += v * (idx[0] + 1)
    return s, list(zip(a.ravel(), np.ndindex(a.shape)))


def nd_zip_partial(a):
    it = np.ndindex(5, 6)
    z = list(zip(it, range(3)))
    n = 0
    for q in it:
        n += 1
    return z, n


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_ndindex_in_zip(backend):
    """zip() over np.ndindex lists its items, and advances it by as many (review:
    it ran no iteration)."""
    run_both(nd_zip, [(np.arange(6.0).reshape(2, 3),), (np.ones((0, 3)),)], backend)
    run_both(nd_zip_partial, [(np.ones(2),)], backend)


def wl_newton(a, out):
    for i in range(a.shape[0]):
        x = a[i] + 1.0
        while abs(x * x - a[i]) > 1e-12 * a[i]:
            x = 0.5 * (x + a[i] / x)
        out[i] = x
    return out


def wl_inner_not(x, out):
    for i in range(x.shape[0]):
        k = 0
        v = x[i]
        while not (v < 1.0):
            v = v - 1.0
            k += 1
        out[i] = k + v
    return out


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_while_inside_for(backend):
    """A while loop inside a captured for loop (per element: Newton's method)
    is a nested loop node, a nested C loop in the native kernel."""
    rng = np.random.default_rng(11)
    run_both(wl_newton, [(rng.random(300) * 100 + 1, np.zeros(300))], backend)
    run_both(wl_inner_not, [(rng.random(300) * 5, np.zeros(300)), (np.r_[rng.random(200) * 5, 9.0, 3.0],
                                                                    np.zeros(202))], backend)
    if backend == "native":
        plans = native_loop_plans(wl_newton, (rng.random(300) * 100 + 1, np.zeros(300)))
        assert plans and all(p.fallbacks == 0 for p in plans)
        assert "break;" in plans[0].source.split("int fj_l0(")[1]


def f32_cmp_const(x32, out):
    for i in range(x32.shape[0]):
        out[i] = x32[i] < 1e300             # NEP 50: 1e300 cast to float32 overflows (NumPy warns)
    return out


def f32_cmp_arg(x32, out, c):
    for i in range(x32.shape[0]):
        out[i] = (x32[i] * c > 1.0) + (x32[i] < c)
    return out


@pytest.mark.parametrize("mode", ["ignore", "warn", "raise"])
@pytest.mark.parametrize("fn,make", [
    (f32_cmp_const, lambda: (np.ones(600, np.float32), np.zeros(600))),
    (f32_cmp_arg, lambda: (np.ones(600, np.float32), np.zeros(600), 1e300)),
    (f32_cmp_arg, lambda: (np.linspace(0, 3, 600).astype(np.float32), np.zeros(600), 0.7)),
], ids=["const", "arg-overflow", "arg"])
def test_python_float_meeting_float32_warns_as_numpy(fn, make, mode):
    """A Python float meeting a float32 scalar is cast to float32 (NEP 50); NumPy
    warns when the cast overflows, so the native loop stops there (review)."""
    run_modes(fn, make, mode)


# ---------------------------------------------------------------- inner chunk versions
# (native_loop.c chunk_version): an inner loop of step 1 whose every store
# writes a moving range of an array the kernel neither reads nor shares memory
# with runs in chunks of FJL_CK iterations that store into buffers, committed
# after the chunk's conditions are tested (no saved range).  Each kernel below
# fails (an int overflow, a float condition) at an element of a chunk (the
# first, the middle, a row's shorter last chunk) under every errstate mode;
# aliased, strided and re-read arrays take the other versions.

def conv3(img, w, out):
    for i in range(1, img.shape[0] - 1):
        for j in range(1, img.shape[1] - 1):
            s = 0.0
            for di in range(3):
                for dj in range(3):
                    s = s + img[i + di - 1, j + dj - 1] * w[di, dj]
            out[i, j] = s
    return out


def life_like(g, out):
    for i in range(1, g.shape[0] - 1):
        for j in range(1, g.shape[1] - 1):
            n = g[i - 1, j] + g[i + 1, j] + g[i, j - 1] + g[i, j + 1]
            out[i, j] = (n == 3) | ((n == 2) & (g[i, j] == 1))
    return out


def two_outputs(x, a, b):
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            a[i, j] = x[i, j] * 1e300
            b[i, j] = x[i, j] + 1.0
    return a, b


def row_init_then_fill(x, out):
    for i in range(x.shape[0]):
        out[i, 0] = -1.0
        for j in range(1, x.shape[1]):
            out[i, j] = x[i, j] * x[i, j - 1] * 1e300
    return out


def same_array_twice(x, out):
    for i in range(x.shape[0]):
        for j in range(x.shape[1] - 1):
            out[i, j] = x[i, j] * 1e300
            out[i, j + 1] = x[i, j] * 2.0
    return out


def rereads_output(x, out):
    for i in range(1, x.shape[0]):
        for j in range(x.shape[1]):
            out[i, j] = out[i - 1, j] * 3.0 + x[i, j]
    return out


def to_float32(x, out):
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] * 1e30
    return out


def _grid_at(shape, at, v, dtype=np.float64, out_dtype=None):
    def make():
        x = np.random.default_rng(at[0] * 131 + at[1]).random(shape).astype(dtype)
        if v is not None:
            x[at] = v
        return x, np.zeros(shape, dtype=out_dtype or dtype)
    return make


def _conv_at(shape, at, v):
    def make():
        img = np.random.default_rng(at[1]).random(shape)
        img[at] = v
        return img, np.random.default_rng(1).random((3, 3)), np.zeros(shape)
    return make


def _life_at(shape, at):
    def make():
        g = np.random.default_rng(at[1]).integers(0, 2, shape).astype(np.int64)
        g[at] = 2**62
        g[at[0], at[1] + 2] = 2**62
        return g, np.zeros(shape, dtype=np.int64)
    return make


@pytest.mark.parametrize("mode", ["ignore", "warn", "raise"])
@pytest.mark.parametrize("fn,make", [
    (conv3, _conv_at((30, 40), (12, 1), 1e306)),       # a chunk's first element
    (conv3, _conv_at((30, 40), (12, 20), 1e306)),      # its middle
    (conv3, _conv_at((30, 40), (12, 37), 1e306)),      # the row's shorter last chunk
    (conv3, _conv_at((30, 40), (12, 20), np.nan)),     # NaN: no condition, NaN results
    (conv3, _conv_at((30, 40), (12, 20), np.inf)),     # inf * 0 possible: invalid
    (life_like, _life_at((30, 40), (12, 17))),         # int overflow in a chunk
    (life_like, _life_at((30, 21), (12, 17))),         # ... in a row's last chunk
    (two_outputs, _grid_at((20, 35), (9, 18), 5.0)),   # two buffers committed
    (row_init_then_fill, _grid_at((20, 35), (9, 18), 1e10)),
    (same_array_twice, _grid_at((20, 35), (9, 18), 1e10)),
    (rereads_output, _grid_at((20, 35), (9, 18), 1e300)),
], ids=["conv-first", "conv-middle", "conv-last", "conv-nan", "conv-inf", "life", "life-last", "two-outputs",
        "row-init", "same-array-twice", "rereads"])
def test_chunk_versions_stop_where_numpy_does(fn, make, mode):
    run_modes(fn, make, mode)


@pytest.mark.parametrize("mode", ["ignore", "warn", "raise"])
def test_chunk_version_float32_cast(mode):
    # a float64 value stored into float32: overflow in the cast, then underflow
    run_modes(to_float32, _grid_at((20, 35), (9, 18), 1e10, out_dtype=np.float32), mode)
    run_modes(to_float32, _grid_at((20, 35), (9, 30), 1e-60, out_dtype=np.float32), mode)


@pytest.mark.parametrize("width", [1, 2, 15, 16, 17, 31, 33])
def test_chunk_version_row_lengths(width):
    """Rows of every length around the chunk's (16): whole chunks, a shorter
    last one, none whole; an overflow in the row's last element."""
    shape = (9, width + 2)
    run_modes(conv3, _conv_at(shape, (5, width), 1e306), "raise")
    run_modes(conv3, _conv_at(shape, (5, width), 1e306), "warn")
    img = np.random.default_rng(width).random(shape)
    run_both(conv3, [(img, np.ones((3, 3)), np.zeros(shape))], "native")


def test_chunk_version_aliasing_takes_the_saved_ranges():
    """The output a view of the input (the same memory, overlapping, or the
    same array twice): the chunk version's condition does not hold."""
    def same():
        g = np.random.default_rng(3).random((20, 35))
        g[9, 18] = 1e10
        return g, g

    def overlapping():
        a = np.random.default_rng(4).random((21, 35))
        a[9, 18] = 1e10
        return a[1:], a[:-1]

    def disjoint_halves():
        a = np.random.default_rng(5).random((40, 35))
        a[9, 18] = 1e10
        return a[:20], a[20:]

    for make in (same, overlapping, disjoint_halves):
        for mode in ("warn", "raise"):
            run_modes(row_init_then_fill, make, mode)


def test_chunk_version_strided_output():
    """A non-contiguous output: each element committed at its stride."""
    def make():
        x = np.random.default_rng(6).random((20, 35))
        x[9, 18] = 1e10
        return x, np.zeros((20, 70))[:, ::2]
    run_modes(row_init_then_fill, make, "raise")
    run_modes(row_init_then_fill, make, "warn")

    def make_t():
        x = np.random.default_rng(7).random((20, 35))
        return x, np.zeros((35, 20)).T
    run_modes(two_outputs, lambda: (*make_t(), np.zeros((20, 35))), "warn")


def test_chunk_version_source():
    """Which inner loops get a chunk version (its buffers, its test before the
    commit), and which keep the saved range."""
    args = _conv_at((30, 40), (12, 20), 1.0)()
    src = native_loop_plans(conv3, args)[0].source
    assert "if (hs4_ && cw_) {" in src and "cb4_0[FJL_CK]" in src and "fjl_disj(&v[" in src
    assert "if ((ovf_ | cm4_) < 0 || (1 && (fj_fetest(FJ_FPE) & ~ignore))) goto slow;" in src
    src = native_loop_plans(life_like, _life_at((30, 40), (12, 17))())[0].source
    assert "cw_) {" in src and "(0 && (fj_fetest" in src and "cm3_ |= o3_" in src
    # two stores into one array: none
    src = native_loop_plans(same_array_twice, _grid_at((20, 35), (9, 18), 1.0)())[0].source
    assert "FJL_CK]" not in src.split("#endif")[-1]
    # the array stored is read: never taken (cw_ 0 before any test of memory)
    src = native_loop_plans(rereads_output, _grid_at((20, 35), (9, 18), 1.0)())[0].source
    assert "int cw_ = 1; (void)cw_; cw_ = 0;" in src


# ---------------------------------------------------------------- counters
# (native_loop.c counter_slot): an inner loop's carried int stepped by a bool or
# a small constant adds without an overflow test where its first value is
# within 2**62; past that, the checked version counts, and a Python int beyond
# int64 is the eager loop's.

def count_inside(x, start, out):
    for i in range(x.shape[0]):
        count = start
        for j in range(x.shape[1]):
            count += x[i, j] > 0.5
        out[i] = count % 1000
    return count


def mandel_rows(w, h, maxiter, out):
    for r in range(h):
        for c in range(w):
            x = 0.0
            y = 0.0
            count = 0
            for k in range(maxiter):
                x, y = x * x - y * y + (c / w - 1.5), 2.0 * x * y + (r / h - 1.0)
                count += x * x + y * y <= 4.0
            out[r, c] = count
    return out


def count_down(x, start):
    total = 0
    for i in range(x.shape[0]):
        k = start
        for j in range(x.shape[1]):
            k = k - 3
        total += k % 7
    return total, k


def count_mixed(x, start):
    # 2 + count (the counter second), then a step that is not small
    for i in range(x.shape[0]):
        c = start
        for j in range(x.shape[1]):
            c = (x[i, j] > 0.2) + c
        for j in range(x.shape[1]):
            c = c + 2**30
    return c


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("start", [0, -5, 2**62 - 10, 2**63 - 20, -(2**63) + 10, 2**70])
def test_counters(backend, start):
    x = np.random.default_rng(12).random((6, 40))
    run_both(count_inside, [(x, start, np.zeros(6))], backend)
    run_both(count_down, [(x, start)], backend)
    run_both(count_mixed, [(x, start)], backend)
    run_both(mandel_rows, [(8, 8, 30, np.zeros((8, 8), dtype=np.int64))], backend)


def test_counter_source():
    src = native_loop_plans(count_inside, (np.random.default_rng(1).random((6, 40)), 0, np.zeros(6)))[0].source
    # (the inner loop is the kernel: the outer one's first iteration changes count's type)
    assert "hs_ = hs_ && V1 > -(1LL << 62) && V1 < (1LL << 62) && hn_ < (1LL << 40);" in src
    assert "if (hs_) n6 = ((long long)(V1)) + ((long long)(n5));" in src
    src = native_loop_plans(mandel_rows, (8, 8, 30, np.zeros((8, 8), dtype=np.int64)))[0].source
    assert "< (1LL << 62) && hn" in src and "_ < (1LL << 40);" in src


# ---------------------------------------------------------------- while True
# `while True: ... if t: break` with the break at the body's end is a loop
# node (trace_loops.c while_shape: the test goes on through a jump back, the
# exit follows it), on a data test or after loop_unroll_limit constant tests;
# a break elsewhere stays a break.

def wt_data(x):
    i = 0
    while True:
        x[i] = x[i] * 0.5
        i += 1
        if x[i] > 100.0:
            break
    return i


def wt_count(x, n):
    i = 0
    s = 0.0
    while True:
        s = s + x[i]
        i += 1
        if i >= n:
            break
    return s, i


def wt_not(x):
    v = x[0]
    k = 0
    while True:
        v = v * 0.5
        k += 1
        if not (v > 1e-3):
            break
    return v, k


def wt_in_for(x, out):
    for r in range(x.shape[0]):
        v = x[r]
        k = 0
        while True:
            v = v * 0.7
            k += 1
            if v < 1.0:
                break
        out[r] = k
    return out


def wt_around_while(x, n):
    # an inner while's exit is the outer `while True`'s jump back
    i = 0
    t = 0
    while True:
        i += 1
        while x[i % 7] > 0.5 and t < 10 ** 6:
            t += 1
            x[i % 7] = x[i % 7] - 0.25
        if i >= n:
            break
    return t, i


def wt_inner_last(x, n):
    # the inner while's top test jumps to the outer loop's jump back when it
    # fails: that jump is a loop of its own (control flow alone)
    i = 0
    t = 0
    while True:
        i += 1
        if i >= n:
            break
        while x[i % 7] > 0.5 and t < 10 ** 6:
            t += 1
            x[i % 7] = x[i % 7] - 0.25
    return t, i


def wt_break_middle(x):
    s = 0.0
    i = 0
    while True:
        s = s + x[i]
        if s > 50.0:
            break
        i += 1
    return s, i


def wt_middle_store(x, out):
    # rotated: the part after the break (B) runs before the part before it (A)
    i = 0
    acc = 1.0
    while True:
        acc = acc * 1.01 + x[i]
        out[i] = acc
        if acc > 40.0:
            break
        i += 1
        x[i] = x[i] + acc * 0.001
    return acc, i


def wt_middle_count(x, n):
    # constant tests (Python ints): unrolled, then captured at the break
    i = 0
    s = 0.0
    while True:
        i += 1
        if i >= n:
            break
        s = s + x[i] * i
    return s, i


def wt_middle_nested_for(x, out):
    r = 0
    while True:
        s = 0.0
        for j in range(x.shape[1]):
            s = s + x[r, j]
        if s > 9.0 or r >= x.shape[0] - 1:
            break
        out[r] = s
        r += 1
    return out, r


def wt_middle_in_for(x, out):
    for r in range(x.shape[0]):
        v = x[r]
        k = 0
        while True:
            v = v * 0.9
            if v < 1.0:
                break
            k += 1
        out[r] = k + v
    return out


def wt_middle_return(x):
    i = 0
    while True:
        i += 1
        if x[i] > 0.9:
            break
        if x[i] < 0.0:
            return -i
    return i


def wt_continue(x):
    i = 0
    s = 0.0
    while True:
        i += 1
        if i % 3 == 0:
            continue
        s = s + x[i]
        if s > 20.0:
            break
    return s, i


def wt_index_error(x):
    i = 0
    while True:
        i += 1
        if x[i] < 0.0:
            break
    return i


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn,args", [
    (wt_data, (np.arange(1000.0),)),
    (wt_data, (np.r_[1.0, 200.0],)),
    (wt_count, (_WR.random(500), 500)),
    (wt_count, (_WR.random(500), 3)),
    (wt_count, (_WR.random(500), 0)),                   # one iteration: 0 >= 0 after i += 1 is false...
    (wt_not, (np.array([1e6]),)),
    (wt_not, (np.array([np.nan]),)),
    (wt_in_for, (_WR.random(50) * 1000, np.zeros(50))),
    (wt_around_while, (_WR.random(7), 40)),
    (wt_inner_last, (_WR.random(7) * 3, 40)),
    (wt_inner_last, (np.zeros(7), 300)),
    (wt_break_middle, (np.ones(100),)),
    (wt_break_middle, (np.ones(10),)),                  # IndexError in the loop
    (wt_middle_store, (_WR.random(500), np.zeros(500))),
    (wt_middle_count, (_WR.random(300), 300)),
    (wt_middle_count, (_WR.random(300), 1)),
    (wt_middle_nested_for, (_WR.random((40, 12)), np.zeros(40))),
    (wt_middle_nested_for, (_WR.random((40, 30)), np.zeros(40))),
    (wt_middle_in_for, (_WR.random(60) * 1000, np.zeros(60))),
    (wt_middle_return, (np.r_[_WR.random(100) * 0.8, 0.95],)),
    (wt_middle_return, (np.r_[_WR.random(100) * 0.8, -1.0],)),
    (wt_continue, (_WR.random(200),)),
    (wt_index_error, (np.ones(50),)),
], ids=["data", "data-short", "count", "count-3", "count-0", "not", "not-nan", "in-for", "around-while",
        "inner-last", "inner-last-zeros", "break-middle", "break-middle-index-error", "middle-store",
        "middle-count", "middle-count-1", "middle-nested-for", "middle-nested-for-long", "middle-in-for",
        "middle-return-break", "middle-return", "continue", "index-error"])
def test_while_true_equal_plain(fn, args, backend):
    run_both(fn, [args], backend)


@pytest.mark.parametrize("fn,args", [
    (wt_data, (np.arange(1000.0),)),
    (wt_count, (np.ones(1000), 1000)),
    (wt_not, (np.array([1e100]),)),
    (wt_break_middle, (np.ones(1000),)),
    (wt_middle_store, (_WR.random(2000) * 0.01, np.zeros(2000))),
])
def test_while_true_captured(fn, args):
    """(The break at the body's end, or rotated: in the middle.)"""
    loops, nodes = loop_nodes(fn, *args)
    assert loops == 1 and nodes < 40, (loops, nodes)


def test_while_true_constant_tests_captured():
    """Over Python ints: loop_unroll_limit iterations unrolled, the rest one
    loop node; the graph does not grow with the trip count."""
    a = loop_nodes(wt_middle_count, np.ones(1000), 1000)
    b = loop_nodes(wt_middle_count, np.ones(5000), 5000)
    assert a[0] == 1 and a == b, (a, b)


def test_while_true_in_for_is_nested():
    """Inside a captured for loop: a node of its body, a nested C loop run
    whole (no eager fallback)."""
    loops, nodes = loop_nodes(wt_in_for, _WR.random(50) * 1000, np.zeros(50))
    assert loops == 1 and nodes < 15, (loops, nodes)
    plans = native_loop_plans(wt_in_for, (_WR.random(300) * 1000, np.zeros(300)))
    assert plans and all(p.fallbacks == 0 for p in plans)
    assert "break;" in plans[0].source.split("int fj_l0(")[1]


# ---------------------------------------------------------------- top-level chunks
# (native_loop.c top_chunks): a flat loop's step-1 version, where cw_ holds,
# stores chunks of FJL_CKT (64) iterations into buffers and commits them after
# the chunk's conditions are tested, instead of saving the block's (512)
# ranges; the values' tests of a noundo body become the flags' test there.

def flat_ema(x, out, alpha):
    m = x[0]
    for i in range(x.shape[0]):
        m = alpha * x[i] + (1.0 - alpha) * m
        out[i] = m
    return out


def flat_prefix(x, out):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i]
        out[i] = s
    return out


def flat_int(x, out):
    t = 0
    for i in range(x.shape[0]):
        t = x[i] + x[i]
        out[i] = t
    return out


def flat_two(x, a, b):
    for i in range(x.shape[0]):
        a[i] = x[i] * 1e300
        b[i] = x[i] - 1.0
    return a, b


def flat_f32(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * 1e30
    return out


def flat_dead(x, out):
    for i in range(x.shape[0]):
        t = x[i] * 1e308
        out[i] = x[i] + 1.0
    return out


def flat_dead_add(x, out):
    for i in range(x.shape[0]):
        t = x[i] + 1.7e308
        out[i] = x[i] + 1.0
    return out


def _flat_at(n, k, v, dtype=np.float64, out_dtype=None, extra=()):
    def make():
        x = np.random.default_rng(k).random(n).astype(dtype)
        if k is not None:
            x[k] = v
        return (x, np.zeros(n, dtype=out_dtype or dtype)) + tuple(e() if callable(e) else e for e in extra)
    return make


@pytest.mark.parametrize("mode", ["ignore", "warn", "raise"])
@pytest.mark.parametrize("k", [0, 63, 64, 100, 511, 512, 700, 1999])
def test_top_chunks_stop_where_numpy_does(k, mode):
    run_modes(flat_ema, _flat_at(2000, k, 1e308, extra=(0.5,)), mode)
    run_modes(flat_prefix, _flat_at(2000, k, 1.7e308), mode)
    run_modes(flat_two, _flat_at(2000, k, 1e10, extra=(lambda: np.zeros(2000),)), mode)


@pytest.mark.parametrize("mode", ["ignore", "warn", "raise"])
def test_top_chunks_int_and_float32(mode):
    def ints(k):
        def make():
            x = np.arange(2000, dtype=np.int64)
            x[k] = 2**62
            return x, np.zeros(2000, dtype=np.int64)
        return make
    for k in (5, 64, 900):
        run_modes(flat_int, ints(k), mode)
    run_modes(flat_f32, _flat_at(2000, 700, 1e10, out_dtype=np.float32), mode)
    run_modes(flat_f32, _flat_at(2000, 700, 1e-60, out_dtype=np.float32), mode)
    run_modes(flat_dead, _flat_at(2000, 300, 1e10), mode)
    run_modes(flat_dead_add, _flat_at(2000, 300, 1e308), mode)


def fw_two_back(a, b):
    for i in range(2, a.shape[0]):
        a[i] = a[i - 2] * 1.5 + a[i - 1] * 0.25 + b[i]
    return a


def fw_read_ahead(a, b):
    for i in range(1, a.shape[0] - 1):
        a[i] = a[i - 1] * 0.5 + a[i + 1] * b[i]
    return a


def _fw_at(n, k, v):
    def make():
        b = np.random.default_rng(k).random(n)
        b[k] = v
        return np.ones(n), b
    return make


@pytest.mark.parametrize("mode", ["ignore", "warn", "raise"])
@pytest.mark.parametrize("k", [1, 2, 63, 64, 65, 511, 512, 513, 1999])
def test_top_chunks_with_forwarding(k, mode):
    """A recurrence through memory (a[i] = a[i - 1] * c + b[i]): its loads of a
    read the forwarding registers, so the chunks apply; a condition at every
    place of a chunk and of a block."""
    run_modes(recurrence_blowup, _fw_at(2000, k, 1e308), mode)
    run_modes(fw_two_back, _fw_at(2000, k, 1e308), mode)
    run_modes(fw_read_ahead, _fw_at(2000, k, 1e308), mode)


def test_top_chunks_with_forwarding_aliased():
    def make():
        a = np.ones(2001)
        b = a[1:]          # b is a shifted view of a: cw_ does not hold
        a[700] = 1e308
        return a[:-1], b
    for mode in ("warn", "raise"):
        run_modes(recurrence_blowup, make, mode)


@pytest.mark.parametrize("n", [1, 63, 64, 65, 130, 511, 513, 1000])
def test_top_chunks_lengths(n):
    x = np.random.default_rng(n).random(n)
    run_both(flat_ema, [(x, np.zeros(n), 0.3)], "native")
    run_both(flat_prefix, [(x, np.zeros(n))], "native")
    run_both(flat_two, [(x, np.zeros(n), np.zeros(n))], "native")


def test_top_chunks_aliasing():
    def same():
        x = np.random.default_rng(1).random(2000)
        x[900] = 1.7e308
        return x, x

    def shifted():
        a = np.random.default_rng(2).random(2001)
        a[900] = 1.7e308
        return a[1:], a[:-1]
    for make in (same, shifted):
        for mode in ("warn", "raise"):
            run_modes(flat_prefix, make, mode)


def test_top_chunks_source():
    src = native_loop_plans(flat_ema, (np.random.default_rng(1).random(3000), np.zeros(3000), 0.4))[0].source
    assert "if (step == 1 && cw_) {" in src and "cb0[FJL_CKT]" in src and "FJL_FENCE(cb0);" in src
    # noundo body: the flags tested per chunk, no value test inside the chunks
    src = native_loop_plans(flat_prefix, (np.random.default_rng(1).random(3000), np.zeros(3000)))[0].source
    chunk = src.split("if (step == 1 && cw_) {")[1].split("} else {\n    if (fjl_save")[0].split("ran += (int)ck;")[0]
    assert "/*fpv*/" not in chunk and "fj_fetest(FJ_FPE)" in chunk
    # a dead float operation: kept (FJL_KEEP) before the chunk's test; in a noundo
    # body (its FJL_KEEP dropped there): no chunks
    src = native_loop_plans(flat_dead, (np.random.default_rng(1).random(3000), np.zeros(3000)))[0].source
    chunk = src.split("if (step == 1 && cw_) {")[1].split("ran += (int)ck;")[0]
    assert "FJL_KEEP(n" in chunk
    src = native_loop_plans(flat_dead_add, (np.random.default_rng(1).random(3000), np.zeros(3000)))[0].source
    assert "cw_) {" not in src.split("int fj_l0(")[1]
    # a store forwarded to its loads (they read registers): chunks, the registers
    # loaded first; a load of the stored array that is not forwarded: cw_ is 0
    src = native_loop_plans(recurrence_blowup, (np.ones(3000), np.random.default_rng(9).random(3000)))[0].source
    chunk = src.split("if (step == 1 && cw_) {")[1].split("ran += (int)ck;")[0]
    assert "memcpy(&fw1_, A1 + (i + -1) * 8, 8);" in chunk and "if (1) n" in chunk and "fwon_" not in chunk
    src = native_loop_plans(fw_read_ahead, (np.ones(3000), np.random.default_rng(9).random(3000)))[0].source
    assert "int cw_ = 1; (void)cw_; cw_ = 0;" in src


def bool_bytes_loop(b, out):
    c = 0
    for i in range(b.shape[0]):
        for j in range(b.shape[1]):
            c = c + b[i, j]
            out[i, j] = b[i, j] * np.int64(3)
    return c, out


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_bool_bytes_other_than_0_and_1_are_true(backend):
    """A view of uint8 as bool holds bytes NumPy reads as True: the kernels
    read every bool element as its truth (found by review)."""
    b = (np.arange(60, dtype=np.uint8) % 5).reshape(6, 10).view(np.bool_)
    run_both(bool_bytes_loop, [(b, np.zeros((6, 10), dtype=np.int64))], backend)


# ---------------------------------------------------------------- compound while tests
# (trace_loops.c and_shape): `while a and b: body` is captured as `while True:
# if not a: break; if not b: break; body`, its parts on data loop_exit nodes
# before anything the iteration stores or sets.

def cw_search(x, n):
    i = 0
    s = 0.0
    while i < n and x[i] > 0:
        s = s + x[i]
        i = i + 1
    return s, i


def cw_count(x):
    i = 0
    while i < x.shape[0] and x[i] != 0:
        i += 1
    return i


def cw_three(x, lim):
    i = 0
    s = x[0] * 0
    while i < x.shape[0] and x[i] > 0.05 and s < lim:
        s = s + x[i]
        i += 1
    return s, i


def cw_store(x, out, lim):
    i = 0
    while i < x.shape[0] and x[i] > lim:
        out[i] = x[i] * 2.0
        i += 1
    return i, out


def cw_rows(a, out):
    for r in range(a.shape[0]):
        j = 0
        while j < a.shape[1] and a[r, j] > 0.1:
            j += 1
        out[r] = j
    return out


def cw_wrong_order(x):
    i = 0
    while x[i] > 0 and i < 100000:
        i += 1
    return i


def cw_consts(n, m):
    i = 0
    j = 0
    while i < n and j < m:
        i += 1
        j += 2
    return i, j


def cw_or(x, n):
    i = 0
    while i < 3 or x[i] > 0.2:
        i += 1
        if i >= n:
            break
    return i


def cw_walrus(x, n):
    i = 0
    while (k := i + 1) < n and x[k] > 0:
        i = k
    return i, k


def cw_continue(x):
    i = 0
    c = 0
    while i < x.shape[0] and x[i] >= 0:
        i += 1
        if x[i - 1] > 0.5:
            continue
        c += 1
    return i, c


def cw_break(x):
    i = 0
    while i < x.shape[0] and x[i] > 0:
        if x[i] > 0.99:
            break
        i += 1
    return i


def cw_truth(x):
    i = 0
    while i < x.shape[0] and x[i]:
        i += 1
    return i


def cw_ints(k, lim):
    i = 0
    t = k[0] - k[0]
    while i < k.shape[0] and t + k[i] < lim:
        t = t + k[i]
        i += 1
    return t, i


def cw_unbound(x):
    i = 0
    while i < x.shape[0] and x[i] > 0.5:
        last = x[i]
        i += 1
    return i


def cw_not(x):
    i = 0
    while not i >= x.shape[0] and not x[i] < 0.1:
        i += 1
    return i


def cw_args_late(x, y):
    i = 0
    while x[i] > 0 and y[i] > 0:     # y first read in the second part (loaded, not set)
        i += 1
    return i


_CW = np.random.default_rng(21)
_CW_X = np.r_[_CW.random(700) + 0.01, -1.0, _CW.random(299)]


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn,args", [
    (cw_search, (_CW_X, 1000)),
    (cw_search, (_CW_X, 300)),
    (cw_search, (np.ones(50), 50)),
    (cw_search, (np.r_[-1.0, np.ones(5)], 6)),
    (cw_count, (np.ones(400),)),
    (cw_count, (np.r_[np.ones(100), 0.0, np.ones(5)],)),
    (cw_count, (np.zeros(0),)),
    (cw_three, (_CW.random(500) + 0.1, 30.0)),
    (cw_three, (_CW.random(500), 1e9)),
    (cw_store, (_CW.random(600), np.zeros(600), 0.01)),
    (cw_store, (_CW.random(600), np.zeros(600), -1.0)),
    (cw_rows, (_CW.random((30, 80)), np.zeros(30, dtype=np.int64))),
    (cw_wrong_order, (np.ones(60),)),
    (cw_consts, (500, 700)),
    (cw_consts, (0, 5)),
    (cw_or, (_CW.random(100), 100)),
    (cw_walrus, (np.r_[np.ones(80), -1.0, np.ones(3)], 84)),
    (cw_continue, (_CW.random(300),)),
    (cw_continue, (np.r_[_CW.random(100), -1.0, _CW.random(10)],)),
    (cw_break, (np.r_[np.full(90, 0.5), 0.995, np.ones(5)],)),
    (cw_truth, (np.r_[np.ones(40), np.nan, np.ones(4), 0.0, 1.0],)),
    (cw_ints, (np.arange(1, 300, dtype=np.int64), 2000)),
    (cw_ints, (np.arange(1, 300, dtype=np.int32), 2000)),
    (cw_unbound, (_CW.random(100),)),
    (cw_unbound, (np.zeros(10),)),
    (cw_not, (_CW.random(400),)),
], ids=["search", "search-short", "search-all", "search-none", "count", "count-zero", "count-empty",
        "three", "three-long", "store", "store-all", "rows", "wrong-order-index-error", "consts",
        "consts-none", "or", "walrus", "continue", "continue-negative", "break", "truth-nan",
        "ints", "ints-int32", "unbound", "unbound-none", "not"])
def test_compound_while_equal_plain(fn, args, backend):
    run_both(fn, [args], backend)


@pytest.mark.parametrize("fn,args", [
    (cw_search, (_CW_X, 1000)),
    (cw_count, (np.ones(1000),)),
    (cw_three, (_CW.random(2000) + 0.1, 300.0)),
    (cw_store, (_CW.random(2000), np.zeros(2000), 0.001)),
    (cw_truth, (np.ones(3000),)),
    (cw_not, (_CW.random(4000) + 0.1,)),
    (cw_consts, (5000, 7000)),
    (cw_args_late, (np.r_[np.ones(3000), -1.0], np.ones(3001))),
])
def test_compound_while_captured(fn, args):
    """One loop node: the graphs do not grow with the trip count."""
    loops, nodes = loop_nodes(fn, *args)
    assert loops == 1 and nodes < 45, (loops, nodes)


def test_compound_while_body_graph_has_exits_first():
    """The parts of the test on data are loop_exit nodes, in the order of the
    test, before the body's nodes; the body's last output is the last exit."""
    graphs = []
    framejit.reset()
    cf = framejit.compile(cw_store, backend=lambda g, ex: graphs.append(g) or g)
    cf(_CW.random(300), np.zeros(300), 0.001)
    loop = [n for g in graphs for n in g.nodes if n.op == "call_function" and isinstance(n.target, framejit._C.Loop)]
    body = loop[0].target.body
    names = [str(n.target) for n in body.nodes if n.op == "call_function"]
    exits = [k for k, n in enumerate(names) if "loop_exit" in n]
    stores = [k for k, n in enumerate(names) if "setitem" in n]
    assert len(exits) == 2 and stores and max(exits) < min(stores), names
    out = [n for n in body.nodes if n.op == "output"][0]
    assert "loop_exit" in str(out.args[0][-1].target)


def test_compound_while_native_kernel_runs_whole():
    """The native kernel leaves at the exits (a break before the iteration's
    stores); no iteration is handed to the eager loop."""
    plans = native_loop_plans(cw_store, (_CW.random(3000), np.zeros(3000), 0.001))
    assert plans and all(p.fallbacks == 0 for p in plans), [p.fallbacks for p in plans]
    src = plans[0].source.split("int fj_l0(")[1]
    assert "goto stop; wexit_ = 1; break; }" in src.replace("goto slow; wexit_", "goto stop; wexit_")
    plans = native_loop_plans(cw_rows, (_CW.random((40, 300)), np.zeros(40, dtype=np.int64)))
    assert plans and all(p.fallbacks == 0 for p in plans)


def test_compound_while_not_captured_when_test_sets_a_local():
    """A walrus in a part before the last sets a local before the loop may end:
    not captured (the frame still equals plain)."""
    x = np.r_[np.ones(2000), -1.0]
    loops, _ = loop_nodes(cw_walrus, x, 2001)
    assert loops == 0


def cw_from(x, i0, s0):
    i = i0
    s = s0
    while i < x.shape[0] and x[i] > 0:
        s = s + x[i]
        i += 1
    return i, s


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn,args_list", [
    (cw_count, [(np.ones(300),), (np.zeros(5),), (np.r_[1.0, 0.0],), (np.ones(7),)]),
    (cw_from, [(np.ones(300), 5, np.float64(2.5)), (np.r_[np.ones(10), 0.0, np.ones(5)], 10, np.float64(7.0)),
               (np.r_[np.ones(10), 0.0, np.ones(5)], 11, np.float64(-1.0))]),
    (cw_store, [(_CW.random(200), np.zeros(200), 0.01), (np.zeros(9), np.ones(9), 0.5)]),
    (cw_three, [(_CW.random(300) + 0.1, 1e9), (np.r_[0.01, np.ones(9)], 1e9), (np.ones(9), -1.0)]),
], ids=["count", "from", "store", "three"])
def test_compound_while_exits_before_any_iteration(fn, args_list, backend):
    """Compiled on a long run, called where the first test fails: the kernel
    ends before any iteration, the state is what the loop began with."""
    run_both(fn, args_list, backend)


def test_compound_while_exit_at_a_chunk_boundary():
    """A native while loop runs in chunks of FJL_WCHUNK (2**22) iterations; an
    exit at the first iteration of a chunk keeps the chunks' state."""
    x = np.r_[np.ones(1 << 22), 0.0, 1.0]
    plans = native_loop_plans(cw_count, (x,))
    assert plans and all(p.fallbacks == 0 for p in plans)
    cf = framejit.compile(cw_count, backend="native")
    assert cf(x) == 1 << 22
    assert cf(np.r_[np.ones((1 << 22) + 3), 0.0]) == (1 << 22) + 3


# ---------------------------------------------------------------- max(a, b) / min(a, b)
# (trace_call.c builtin_pick): of values of one type, a node calling the builtin
# itself (one of its arguments is the result); in loops a C compare and select.

def mm_running(x):
    m = x[0]
    lo = x[0]
    for i in range(x.shape[0]):
        m = max(m, x[i])
        lo = min(x[i], lo, m)
    return m, lo


def mm_pyint(n):
    b = 0
    for i in range(n):
        b = max(b, (i * 7919) % 1000)
        b = min(b, 990)
    return b


def mm_pyfloat(n):
    b = 0.0
    for i in range(n):
        b = max(b, (i * 0.37) % 3.5, -1.0)
    return b


def mm_mixed(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + max(x[i], 0.0)        # np.float64 or float: its type depends on the data
    return s


def mm_identity(x):
    a = x[0]
    b = x[1]
    m = max(a, b)
    n = min(b, a)
    return m is a, m is b, n is b, n is a, m, n


def mm_clip_rows(a, out):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[i, j] = min(max(a[i, j], a[i, 0]), a[i, a.shape[1] - 1])
    return out


_MM = np.random.default_rng(33)


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn,args", [
    (mm_running, (_MM.random(800) - 0.5,)),
    (mm_running, (np.r_[_MM.random(300), np.nan, _MM.random(300)],)),
    (mm_running, (np.r_[np.nan, _MM.random(300)],)),
    (mm_running, (np.ones(200),)),
    (mm_running, (_MM.integers(-1000, 1000, 500),)),
    (mm_running, (_MM.integers(-1000, 1000, 500).astype(np.int32),)),
    (mm_running, (_MM.random(400).astype(np.float32),)),
    (mm_running, (_MM.random(300) > 0.5,)),
    (mm_pyint, (3000,)),
    (mm_pyfloat, (3000,)),
    (mm_mixed, (_MM.random(300) - 0.5,)),
    (mm_identity, (np.array([1.0, 1.0]),)),
    (mm_identity, (np.array([2.0, 1.0]),)),
    (mm_identity, (np.array([np.nan, 1.0]),)),
    (mm_identity, (np.array([1.0, np.nan]),)),
    (mm_identity, (np.array([0.0, -0.0]),)),
    (mm_clip_rows, (_MM.random((40, 60)), np.zeros((40, 60)))),
], ids=["running", "nan-middle", "nan-first", "equal", "int64", "int32", "float32", "bool", "pyint", "pyfloat",
        "mixed-types", "identity-equal", "identity", "identity-nan-first", "identity-nan-second", "signed-zeros",
        "clip-rows"])
def test_builtin_max_min_of_values_equal_plain(fn, args, backend):
    run_both(fn, [args], backend)


def test_builtin_max_min_of_one_type_captured():
    """A running max over NumPy scalars, or Python ints, is one loop node (the
    native kernel runs it whole); mixed types stay a break with its reason."""
    assert loop_nodes(mm_running, _MM.random(3000))[0] == 1
    assert loop_nodes(mm_pyint, 5000)[0] == 1
    plans = native_loop_plans(mm_running, (_MM.random(3000),))
    assert plans and all(p.fallbacks == 0 for p in plans)
    assert "__builtin_isgreater(" in plans[0].source and "__builtin_isless(" in plans[0].source
    framejit.reset()
    cf = framejit.compile(mm_mixed, backend="eager")
    cf(_MM.random(50))
    reasons = dict(framejit.counters["graph_break"])
    assert any("max() of values of different types" in k for k in reasons), reasons


def wl_counter_rows(x, k0, out):
    # an inner while loop's counter (counter_slot: no overflow test where its first
    # value is within 2**62; the loop runs at most 2**26 iterations per entry)
    for r in range(x.shape[0]):
        k = k0 + r
        j = 0
        while j < x.shape[1] and x[r, j] < 0.9:
            k += 3
            j += 1
        out[r] = k - k0
    return out


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("k0", [0, -5, 2 ** 62 - 40, 2 ** 63 - 30, -(2 ** 63) + 3, 2 ** 70])
def test_while_counter_near_int64_limits(k0, backend):
    """Near 2**63 the counter leaves int64 (a Python int grows): the kernel
    stops there and the eager loop goes on, as CPython's ints do."""
    x = np.random.default_rng(3).random((20, 30))
    run_both(wl_counter_rows, [(x, k0, np.zeros(20, dtype=object))], backend)
    run_both(wl_counter_rows, [(x, k0, np.zeros(20))], backend)


def cw_int_part(n):
    i = 0
    t = 1
    while i < n and t + t > 0:      # a Python int leaving int64 in a part of the test
        t = t * 2
        i += 1
    return i, t


def cw_float_part(x, n):
    i = 0
    while i < n and x[i] * 1e300 < 1e308:     # the part that exits overflows
        i += 1
    return i


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_compound_while_exit_part_conditions(backend):
    """A part of the test that wraps an int or raises a float condition in the
    iteration it exits: the kernel stops there (the eager loop meets the
    condition again), as a plain test's (found by review)."""
    run_both(cw_int_part, [(100,), (10,), (0,)], backend)
    with np.errstate(over="raise"):
        run_both(cw_float_part, [(np.r_[np.ones(1000), 1e10], 2000), (np.r_[1e10, np.ones(5)], 9)], backend)
    for x, want in ((np.r_[np.ones(1000), 1e10], 1000), (np.r_[1e10, np.ones(9)], 0)):
        # (the test's parts run once per arrival: the loop is captured from the
        # test's start, not after a part was traced; found by review)
        framejit.reset()
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            cf = framejit.compile(cw_float_part, backend=backend)
            assert cf(x, 2000) == want
            assert cf(x, 2000) == want
        assert [w.category for w in got] == [RuntimeWarning] * 2, got


def test_compound_while_graph_has_no_test_before_the_loop():
    """Captured from the test's start: no part of the test is traced before
    the loop node (it would run twice), and an argument first read in a later
    part does not refuse the capture."""
    graphs = []
    framejit.reset()
    cf = framejit.compile(cw_args_late, backend=lambda g, ex: graphs.append(g) or g)
    assert cf(np.r_[np.ones(300), -1.0], np.ones(301)) == 300
    assert len(graphs) == 1
    calls = [str(n.target) for n in graphs[0].nodes if n.op == "call_function"]
    assert "loop" in calls[0], calls


def cw_helper(v, n):
    i = 0
    while i < n and v[i] > 0:
        i += 1
    return i


def cw_two_sites(x, lst):
    # the helper's loop on an array (captured from its test's start) and on a list
    # (constants: unrolled); its arm is per call site (found by review)
    return cw_helper(x, x.shape[0]), cw_helper(lst, len(lst))


def cw_two_sites_rev(x, lst):
    return cw_helper(lst, len(lst)), cw_helper(x, x.shape[0])


@pytest.mark.parametrize("fn", [cw_two_sites, cw_two_sites_rev])
def test_compound_while_armed_per_call_site(fn):
    x = np.r_[np.ones(3000), -1.0]
    framejit.reset()
    graphs = []
    cf = framejit.compile(fn, backend=lambda g, ex: graphs.append(g) or g)
    same(cf(x, [1, 2, -1, 3]), fn(x, [1, 2, -1, 3]))
    assert len(graphs) == 1 and not framejit.counters["graph_break"], dict(framejit.counters["graph_break"])
    run_both(fn, [(x, [1, 2, -1, 3]), (np.r_[-1.0, x], [5])], "native")
