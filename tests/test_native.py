"""The native backend against plain NumPy: >= 200 generated graphs, layouts,
special values, warnings, dynamic shapes, the disk cache and the no-compiler
fallback.  Results must equal NumPy's bit for bit (NaN payloads aside: see
docs/native.md), with the same dtype, shape, memory order and warnings."""
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import framejit
from framejit import _C
from difftools import clone
from native_compare import capturing_backend, outcome, same, same_outcomes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True, scope="module")
def _cache_dir(native_kernel_cache):
    """Every test here builds into a fresh kernel cache (conftest.py)."""
    yield


# ---- comparison helpers -----------------------------------------------------

_fn_counter = [0]
_tally = {"checks": 0, "fused_graphs": 0}  # graphs compared with NumPy / of those, graphs with fused kernels


def make_fn(expr, params="x, y"):
    """A fresh function (its own code object) returning 'expr'."""
    _fn_counter[0] += 1
    name = f"native_case_{_fn_counter[0]}"
    src = f"def {name}({params}):\n    return {expr}\n"
    ns = {"np": np}
    exec(compile(src, f"<native case {_fn_counter[0]}: {expr}>", "exec"), ns)
    return ns[name]


def check(expr, arg_sets, params="x, y", fused=None, dynamic=None):
    """Compiles expr with the native backend and compares each call with NumPy
    (twice: the second call is the warm path).  'fused': require (True) or
    forbid (False) fused nodes."""
    framejit.reset()
    fn = make_fn(expr, params)
    cf = framejit.compile(fn, backend="native", dynamic=dynamic)
    same_outcomes(fn, cf, arg_sets, expr, clone)
    n = framejit.counters["native"]["nodes_fused"]
    _tally["checks"] += 1
    _tally["fused_graphs"] += n > 0
    if fused is True:
        assert n > 0, f"{expr}: nothing fused"
    elif fused is False:
        assert n == 0, f"{expr}: fused {n} nodes"
    return cf


# ---- data -----------------------------------------------------------------------

RNG = np.random.default_rng(12345)


def data(dtype, shape=(7,), special=True):
    dt = np.dtype(dtype)
    size = int(np.prod(shape))
    if dt.kind == "f":
        a = RNG.standard_normal(size) * 10
        if special and size >= 8:
            a[:8] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-310, 3.0, -2.5]
        a = a.astype(dt)
    elif dt.kind == "b":
        a = RNG.integers(0, 2, size).astype(bool)
    else:
        info = np.iinfo(dt)
        a = RNG.integers(max(info.min, -100), min(info.max, 100), size, endpoint=True).astype(dt)
        if special and size >= 5:
            a[:5] = [info.min, info.max, 0, 1, info.max - 1]
    RNG.shuffle(a)
    return a.reshape(shape)


def nonzero(dtype, shape=(7,)):
    a = data(dtype, shape, special=False)
    if a.dtype.kind in "iu":
        a[a == 0] = 3
    return a


# ---- generated graphs: binary operations × dtypes (135 graphs) -------------------

BINARY = ["x + y", "x - y", "x * y", "x / y", "np.maximum(x, y)", "np.minimum(x, y)", "x < y",
          "x <= y", "x == y", "x != y", "x > y", "np.logical_and(x, y)", "np.logical_or(x, y)",
          "np.logical_xor(x, y)", "x & y"]
PAIRS = [("f8", "f8"), ("f4", "f4"), ("f4", "f8"), ("i8", "i8"), ("i4", "i4"), ("i1", "i1"),
         ("u2", "u2"), ("i4", "f8"), ("?", "?")]


@pytest.mark.parametrize("dts", PAIRS, ids=lambda p: "-".join(p))
@pytest.mark.parametrize("expr", BINARY)
def test_binary(expr, dts):
    x, y = data(dts[0], (9,)), data(dts[1], (9,))
    check(expr, [(x, y), (y.astype(dts[0]), x.astype(dts[1]))])


# ---- unary operations × dtypes (108 graphs) ---------------------------------------

UNARY = ["-x", "abs(x)", "np.sqrt(x)", "np.square(x)", "np.floor(x)", "np.isnan(x)", "~x",
         "np.reciprocal(x)", "x.astype(np.float32)", "x.astype(np.int16)", "np.signbit(x)", "np.rint(x)",
         "np.trunc(x)", "np.ceil(x)", "np.isinf(x)", "np.isfinite(x)", "+x", "np.logical_not(x)"]


@pytest.mark.parametrize("dt", ["f8", "f4", "i8", "i4", "u1", "?"])
@pytest.mark.parametrize("expr", UNARY)
def test_unary(expr, dt):
    x = data(dt, (11,))
    with np.errstate(all="ignore"):
        check(expr, [(x,), (x[::-1].copy(),)], params="x")


# ---- compositions with constants (fused chains) -----------------------------------

CHAINS = [
    ("x * 2.0 + 1", "f8"), ("x * 2.0 + 1", "f4"), ("x * 2 + 1", "i4"), ("(x - 3) * (x + 3)", "i8"),
    ("(x - 3) * (x + 3)", "f4"), ("np.where(x > 0, x, -x)", "f8"), ("np.where(x > 0, x, 0.5)", "f4"),
    ("np.where(x > 0, x, 0)", "i1"), ("np.maximum(x, 0.0) * 0.1", "f4"), ("np.minimum(x * x, 100)", "i8"),
    ("(x > 1) | (x < -1)", "f8"), ("~(x > 1) & (x != 0)", "i4"), ("np.sqrt(abs(x)) + 1e-3", "f8"),
    ("np.sqrt(abs(x)) * np.float32(2)", "f4"), ("-x * 3 - x / 7", "f8"), ("x / 3", "i4"),
    ("(x + 1).astype(np.float64) * 0.5", "i4"), ("(x * 1.5).astype(np.int32)", "f8"),
    ("np.floor(x / 2.0) * 2", "f8"), ("x + True", "?"), ("x * 3 + 2**40", "i8"), ("x + 2**62 + 2**62", "i8"),
    ("x * x * x * x * x * x", "i4"), ("x - 1e300 * x * 1e10", "f8"), ("np.logical_not(x) + 1", "?"),
    ("x // 3", "i8"), ("x % 3", "i8"), ("x // -3", "i4"), ("x % -3", "i1"), ("x // 7 + x % 7", "u4"),
]


@pytest.mark.parametrize("expr,dt", CHAINS, ids=[f"{e}-{d}" for e, d in CHAINS])
def test_chain(expr, dt):
    x = data(dt, (3, 5))
    check(expr, [(x,), (x.T.copy(),), (x[:, ::2],)], params="x")


# ---- two-input compositions over layouts (each: one graph) ------------------------

LAYOUTS = {
    "contig": lambda a: a,
    "fortran": lambda a: np.asfortranarray(a),
    "transposed": lambda a: a.T.copy().T,
    "sliced": lambda a: np.repeat(a, 2, axis=1)[:, ::2],
    "negative": lambda a: a[::-1, ::-1].copy()[::-1, ::-1],
    "neg_view": lambda a: np.ascontiguousarray(a[::-1])[::-1],
}


@pytest.mark.parametrize("ly", list(LAYOUTS))
@pytest.mark.parametrize("lx", list(LAYOUTS))
def test_layouts(lx, ly):
    x, y = data("f8", (4, 6)), data("f8", (4, 6))
    check("x * y + (x - 1.5)", [(LAYOUTS[lx](x), LAYOUTS[ly](y))])


BROADCASTS = [((3, 1), (1, 4)), ((5,), (3, 5)), ((2, 3, 4), (3, 1)), ((), (4,)), ((4,), ()), ((1,), (6,)),
              ((2, 1, 3), (1, 5, 1)), ((0,), (0,)), ((3, 0), (1, 0)), ((0, 4), (4,)), ((1, 1), (1, 1))]


@pytest.mark.parametrize("sx,sy", BROADCASTS, ids=[f"{a}-{b}" for a, b in BROADCASTS])
def test_broadcast(sx, sy):
    x, y = data("f4", sx), data("f4", sy)
    check("np.where(x < y, x * 2, y) + 1", [(x, y)])


def test_broadcast_layouts():
    a = data("f8", (5, 4))
    check("x + y * 2", [(a.T, data("f8", (5,))), (a.T, data("f8", (4, 1))), (a[::2], data("f8", (4,)))])


# ---- scalars, 0-d arrays, zero-size ------------------------------------------------

def test_zero_d_and_scalars():
    check("x * y + 1", [(np.float64(2.5), np.float64(4.0))])
    check("x * y + 1", [(np.float32(2.5), np.float32(4.0))])
    check("x * y + 1", [(np.array(2.5), np.array(3.0))])
    check("x * y + 1", [(np.array(2.5, np.float32), data("f4", (3,)))])
    check("np.where(x, y, 2)", [(np.array(True), np.array(3, np.int8))])
    check("x + y", [(np.int32(7), data("i4", (4,)))])
    check("x - y", [(data("f4", (0,)), data("f4", (0,)))])


# ---- special values: NaN, infinities, wraparound, division by zero ----------------

def test_nan_inf_minmax_signed_zero():
    x = np.array([np.nan, 1.0, -0.0, 0.0, np.inf, -np.inf, np.nan, 2.0])
    y = np.array([1.0, np.nan, 0.0, -0.0, np.nan, -np.inf, -np.nan, 2.0])
    check("np.maximum(x, y) + np.minimum(y, x) * 0", [(x, y)], fused=True)
    check("(x < y) | (x == y) | (x != y)", [(x, y)], fused=True)


def test_integer_wraparound():
    for dt in ("i1", "i2", "i4", "i8", "u1", "u8"):
        info = np.iinfo(dt)
        x = np.array([info.max, info.min, info.max - 1, 0], dtype=dt)
        check("x + 1", [(x,)], params="x", fused=True)
        check("x * x - x", [(x,)], params="x", fused=True)
        if info.min < 0:
            check("-x + abs(x)", [(x,)], params="x", fused=True)


def test_division_warnings():
    f = np.array([1.0, 0.0, -1.0, np.nan])
    check("x / y + 1", [(f, np.zeros(4))], fused=True)
    i = np.array([5, -7, np.iinfo(np.int64).min, 0])
    check("x // y", [(i, np.array([0, 2, -1, 0]))], fused=True)
    check("x % y", [(i, np.array([0, 2, -1, 3]))], fused=True)
    check("x * 1e308 * 10", [(f,)], params="x", fused=True)


def test_errstate_raise():
    fn = make_fn("x / y + 1")
    framejit.reset()
    cf = framejit.compile(fn, backend="native")
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            fn(np.ones(3), np.zeros(3))
        with pytest.raises(FloatingPointError):
            cf(np.ones(3), np.zeros(3))
        same(cf(np.ones(3), np.full(3, 2.0)), fn(np.ones(3), np.full(3, 2.0)))


def test_broadcast_error_matches_numpy():
    check("x + y * 2", [(data("f8", (4,)), data("f8", (4,))), (data("f8", (5,)), data("f8", (6,)))],
          dynamic=True)


# ---- dynamic shapes ------------------------------------------------------------------

def test_dynamic_shapes():
    cf = check("x * 2 - y / 3", [(data("f8", (n,)), data("f8", (n,))) for n in (5, 9, 33, 1000)],
               dynamic=True, fused=True)
    assert framejit.counters["stats"]["unique_graphs"] <= 2
    cf = check("np.where(x > 0, x, y)", [(data("f4", (n, 3)), data("f4", (3,))) for n in (4, 7, 2)],
               dynamic=True, fused=True)


def test_symbolic_int():
    fn = make_fn("x * n + n", "x, n")
    framejit.reset()
    cf = framejit.compile(fn, backend="native")
    x = data("f8", (6,))
    for n in (2, 3, 4, 7, 2**40):
        same(cf(x, n), fn(x, n))
    xi = data("i4", (6,))
    for n in (2, 3, 4, 2**40):
        assert outcome(cf, (xi, n))[0][0] == outcome(fn, (xi, n))[0][0]


# ---- mixed fused / unfused -------------------------------------------------------------

MIXED = ["(x @ y) * 2 + 1", "np.exp(x) * y - 1", "np.sin(x * 2) + np.cos(y) * 3", "(x + 1).sum() * y",
         "np.dot(x * 2, y + 1) - x", "(x * y).sum(axis=0) + 1", "np.tanh(x + y) * (x > 0)",
         "np.sort(x * 2, axis=0) + y", "np.concatenate([x + 1, y * 2]) / 3", "(x - y).mean() + x * y"]


@pytest.mark.parametrize("expr", MIXED)
def test_mixed(expr):
    check(expr, [(data("f8", (4, 4), special=False), data("f8", (4, 4), special=False))], fused=True)


def test_intermediates_used_twice_and_outputs():
    def f(x, y):
        a = x * 2
        b = np.exp(a)
        c = a + y
        return b, c, a, c > 0
    framejit.reset()
    cf = framejit.compile(f, backend="native")
    x, y = data("f8", (5,), special=False), data("f8", (5,))
    for _ in range(2):
        same(cf(x, y), f(x, y))
    assert framejit.counters["native"]["nodes_fused"] >= 3


def test_inputs_not_mutated_and_inplace_unfused():
    def f(x, y):
        z = x + y
        x += 1
        return z * 2, x
    framejit.reset()
    cf = framejit.compile(f, backend="native")
    a, b = data("f8", (4,)), data("f8", (4,))
    a2 = a.copy()
    same(cf(a2, b), f(a.copy(), b))


def test_error_order_as_eager():
    """A fused division by zero raises before a later NumPy node's error, as in eager."""
    def f(x, y):
        a = x / y
        b = np.log(y - 5)
        return a + 1, b
    framejit.reset()
    cf = framejit.compile(f, backend="native")
    x, y = data("f8", (4,), special=False), np.array([0.0, 1.0, 2.0, 3.0])
    with np.errstate(all="raise"):
        for fn in (f, cf):
            with pytest.raises(FloatingPointError, match="divide by zero encountered in divide"):
                fn(x, y)
    exp = outcome(f, (x, y))
    got = outcome(cf, (x, y))
    same(got[0][1], exp[0][1])
    assert got[1] == exp[1]


# ---- threads ---------------------------------------------------------------------------

def test_threads_large_arrays():
    old = _C.native_config()
    try:
        _C.native_config(threads=3, thread_min=1000, float_axis_minmax=True)
        x = data("f8", (100003,))
        check("x * 3.0 - np.sqrt(abs(x)) + (x > 0)", [(x, x[::-1].copy())], fused=True)
        check("x * 3.0 + y", [(x, np.zeros(100003))], fused=True)  # flags in one thread: runs unfused
        i = data("i8", (50001,))
        check("x // y", [(i, np.where(i == 0, 1, i))], fused=True)
        m = data("f4", (301, 98), special=False)
        check("x * 2 - y", [(m.T, m.T), (m[:, ::2], m[:, 1::2]), (m[::-1], m.T.copy().T)], fused=True)
        check("x / y", [(m[:, ::2], np.where(m[:, 1::2] == 0, 0, m[:, 1::2]))], fused=True)
        check("(x * 3).sum() + y.max()", [(data("i4", (300, 101))[:, ::2], data("i4", (300, 50)))], fused=True)
        check("np.sum(x * 1.5)", [(data("f8", (3000, 10)),), (data("f8", (10, 3000)).T,)], params="x",
              fused=True)
    finally:
        _C.native_config(threads=old[0], thread_min=old[1], float_axis_minmax=old[2])


# ---- plan surface ----------------------------------------------------------------------

def test_plan_introspection():
    plans, capture = capturing_backend()
    fn = make_fn("np.sort(x * 2 + y) - x")
    framejit.reset()
    framejit.compile(fn, backend=capture)(data("f8", (3,)), data("f8", (3,)))
    p = plans[0]
    assert isinstance(p, _C.NativePlan)
    assert p.groups == [["mul", "add"], ["sub"]]
    assert "fj_g0_flat" in p.source and "fj_g0_strided" in p.source
    assert "native" in framejit.list_backends()


def test_nothing_fuses_returns_graph():
    fn = make_fn("np.exp(x) @ y")
    framejit.reset()
    check("np.exp(x) @ y", [(data("f8", (3, 3), False), data("f8", (3, 3), False))], fused=False)
    assert framejit.counters["native"]["graphs_unfused"] == 1
    del fn


# ---- disk cache and no compiler (subprocesses) -----------------------------------------

_SUB = textwrap.dedent("""
    import json, subprocess, warnings, numpy as np, framejit
    runs = []
    _run = subprocess.run
    def counting_run(*a, **k):
        runs.append(a[0] if a else k.get("args"))
        return _run(*a, **k)
    subprocess.run = counting_run
    def f(x, y):
        return (x * 2 + y) / 3, x > y
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cf = framejit.compile(f, backend="native")
        x, y = np.arange(6.0), np.ones(6)
        r = cf(x, y)
        cf(x, y)
    e = f(x, y)
    ok = all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(r, e))
    print(json.dumps({"ok": ok, "counters": dict(framejit.counters["native"]), "subprocesses": len(runs),
                      "warnings": [str(m.message) for m in w]}))
""")


def _run_sub(env_extra):
    import json
    env = dict(os.environ, PYTHONPATH=ROOT, **env_extra)
    r = subprocess.run([sys.executable, "-c", _SUB], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_disk_cache_second_process(tmp_path):
    env = {"FRAMEJIT_CACHE_DIR": str(tmp_path / "k")}
    first = _run_sub(env)
    assert first["ok"]
    assert first["counters"].get("kernels_compiled") == 1
    second = _run_sub(env)
    assert second["ok"]
    assert second["counters"].get("kernels_compiled", 0) == 0
    assert second["counters"].get("kernels_loaded_from_cache") == 1
    # the compiler's probe is remembered too: a fully cached process runs no subprocess
    assert first["counters"].get("compiler_probes") == 1
    assert second["counters"].get("compiler_probes", 0) == 0
    assert second["subprocesses"] == 0
    files = os.listdir(tmp_path / "k")
    assert any(f.endswith(".so") for f in files) and not any(f.startswith(".fj_tmp") for f in files)
    assert any(f.startswith("toolchain_") for f in files)
    # another compiler identity (CC spelled differently) probes again, then is remembered
    third = _run_sub(dict(env, CC="gcc"))
    assert third["ok"] and third["counters"].get("compiler_probes") == 1
    assert _run_sub(dict(env, CC="gcc"))["counters"].get("compiler_probes", 0) == 0


def test_damaged_toolchain_file_probes_again(tmp_path):
    env = {"FRAMEJIT_CACHE_DIR": str(tmp_path / "k")}
    assert _run_sub(env)["ok"]
    for f in os.listdir(tmp_path / "k"):
        if f.startswith("toolchain_"):
            (tmp_path / "k" / f).write_text("{not json")
    again = _run_sub(env)
    assert again["ok"] and again["counters"].get("compiler_probes") == 1
    assert again["counters"].get("kernels_loaded_from_cache") == 1


def test_no_compiler_falls_back_to_eager(tmp_path):
    res = _run_sub({"FRAMEJIT_CACHE_DIR": str(tmp_path / "k"), "CC": "/nonexistent/cc"})
    assert res["ok"]
    assert len(res["warnings"]) == 1 and "no working C compiler" in res["warnings"][0]
    assert res["counters"].get("kernels_compiled", 0) == 0


def test_loop_kernels_build_unrolled(native_kernel_cache, monkeypatch):
    """A source with a loop kernel builds with native.LOOP_FLAGS (unrolled: a
    reduction's chain overlaps the next one's) and, with AVX-512, LOOP_VEC;
    elementwise kernels without."""
    import framejit.native as fn
    seen = []
    orig = fn.compile_cached

    def spy(source, argv, flags, *a, **k):
        seen.append(("\n#define FJL_AMAX " in source, list(flags)))
        return orig(source, argv, flags, *a, **k)

    monkeypatch.setattr(fn, "compile_cached", spy)

    def dot(a, b):
        s = 0.0
        for i in range(a.shape[0]):
            s = s + a[i] * b[i]
        return s

    def chain(a, b):
        return (a * b + 1.0) * 0.5 - a

    a, b = np.linspace(0, 1, 300), np.linspace(1, 2, 300)
    framejit.reset()
    try:
        assert framejit.compile(dot, backend="native")(a, b) == dot(a, b)
        assert np.array_equal(framejit.compile(chain, backend="native")(a, b), chain(a, b))
    finally:
        framejit.reset()
    loops = [f for is_loop, f in seen if is_loop]
    plain = [f for is_loop, f in seen if not is_loop]
    assert loops and plain
    assert all(set(fn.LOOP_FLAGS) <= set(f) for f in loops)
    assert not any(set(fn.LOOP_FLAGS + fn.LOOP_VEC) & set(f) for f in plain)
    # 512-bit vectors where the CPU has AVX-512 (and -march=native is taken)
    wide = fn._avx512() and "-march=native" in fn._find_toolchain()[2]
    assert all((set(fn.LOOP_VEC) <= set(f)) == wide for f in loops)


def test_kernels_unloaded_with_their_plan(native_kernel_cache):
    """A plan's shared object is dlclosed when the plan goes (after
    framejit.reset()): a program making many distinct kernels does not keep
    every one mapped (tests/test_memory.py under the native default)."""
    import gc
    before = set(os.listdir(native_kernel_cache))
    fn = make_fn("np.sqrt(x * 7.25 + 3.5) - x * 0.125", "x")
    framejit.reset()
    cf = framejit.compile(fn, backend="native")
    x = data("f8", (40,), special=False) ** 2
    same(cf(x), fn(x))
    new = [f for f in set(os.listdir(native_kernel_cache)) - before if f.endswith(".so")]
    assert len(new) == 1

    def mapped():
        with open("/proc/self/maps") as fh:
            return new[0] in fh.read()
    if not os.path.exists("/proc/self/maps"):
        pytest.skip("no /proc/self/maps")
    assert mapped()
    del cf
    framejit.reset()
    gc.collect()
    assert not mapped()


def test_backend_failure_runs_eager(monkeypatch):
    """A failure while planning or building kernels (a compiler that rejects
    the generated C, a bug) runs that graph eagerly: exact results, one
    RuntimeWarning per process, the reason logged and counted; with
    config.raise_internal_errors (the suite's setting) it raises instead."""
    from framejit import native

    def broken(source, toolchain, background=False):
        raise RuntimeError("framejit native: the C compiler failed (cc):\nerror: simulated")
    monkeypatch.setattr(native, "build", broken)
    monkeypatch.setattr(native, "_warned_failure", False)
    fn = make_fn("np.sum(x * 2 + 1) + x", "x")
    x = data("f8", (50,), special=False)
    framejit.reset()
    with pytest.raises(framejit.BackendCompilerFailed, match="simulated"):
        framejit.compile(fn, backend="native")(x)
    monkeypatch.setattr(framejit.config, "raise_internal_errors", False)
    for k in range(2):
        framejit.reset()
        cf = framejit.compile(fn, backend="native")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            got = cf(x)
        same(got, fn(x))
        msgs = [str(m.message) for m in w if "native backend failed" in str(m.message)]
        assert len(msgs) == (1 if k == 0 else 0) and "simulated" in msgs[0] if k == 0 else not msgs
        assert framejit.counters["native"]["backend_failures"] == 1


# ---- reductions fused with the elementwise work they consume ---------------------------

REDUCTIONS = [
    ("(x * 3 + 1).sum()", "i4"), ("(x * 3 + 1).sum()", "i8"), ("np.sum(x > 0)", "f8"), ("np.sum(x)", "u1"),
    ("np.sum(x * x)", "i1"), ("(x - 1).max()", "i8"), ("np.max(x * 2)", "f8"), ("np.min(x * 2)", "f4"),
    ("np.amin(abs(x))", "f8"), ("np.amax(x)", "u2"), ("(x > 2).any()", "f8"), ("np.all(x != 0)", "i4"),
    ("np.any(x)", "?"), ("np.max(x) + np.min(x) * 2", "i4"), ("(x + 1).sum() + x.max() + (x * 2)", "i8"),
    ("np.sum(x + 1) * x", "i2"), ("(x * 0.5).max() - x", "f4"), ("np.max(x - x)", "f8"),
    ("np.min(np.where(x > 0, x, 7))", "i8"), ("(x * 2).sum() + (x * 2).sum()", "i4"),
]


@pytest.mark.parametrize("expr,dt", REDUCTIONS, ids=[f"{e}-{d}" for e, d in REDUCTIONS])
def test_reductions(expr, dt):
    x = data(dt, (4, 5))
    check(expr, [(x,), (x.T,), (x[:, ::2],), (x[:0],)], params="x")


def test_reduction_nan_and_signed_zero():
    for a in ([0.0, -0.0, -1.0], [-0.0, 0.0], [1.0, np.nan, 3.0], [np.nan, -np.nan], [-np.inf, -np.inf],
              [2.0, 5.0, -1.0]):
        x = np.array(a)
        check("np.max(x * 1.0)", [(x,)], params="x", fused=True)
        check("np.min(x + 0.0) + 1", [(x,)], params="x", fused=True)


def test_reduction_of_reduction_and_zero_d():
    check("np.sum(np.sum(x * 2) + 1)", [(data("i8", (5,)),)], params="x")
    check("np.max(x * 2) + 1", [(np.array(3),)], params="x")
    check("np.max(x * 2) * 3 + 1", [(np.int64(3),)], params="x")


AXIS_REDUCTIONS = [
    ("(x * 3 + 1).sum(axis=0)", "i4"), ("(x * 3 + 1).sum(1)", "i8"), ("np.sum(x > 0, axis=-1)", "f8"),
    ("np.sum(x, 0, keepdims=True) + x", "u1"), ("(x - 1).max(axis=1)", "i8"), ("np.max(x * 2, axis=0)", "i2"),
    ("np.amin(abs(x), axis=-1, keepdims=True)", "i4"), ("(x > 2).any(axis=0)", "f8"), ("np.all(x != 0, axis=1)", "i4"),
    ("np.any(x, -1)", "?"), ("x.max(0) + x.min(1).sum()", "i4"), ("np.max(x, axis=1) * 2.0", "f8"),
    ("np.sum(x * 2.0, axis=0)", "f8"), ("x.mean(axis=0)", "f4"), ("np.sum(x, axis=(0, 1))", "i8"),
    ("np.min(x, axis=None)", "i8"), ("x.all(axis=0, keepdims=True)", "?"), ("x.sum(axis=2)", "i4"),
    ("np.max(x * 2, axis=1)", "f8"), ("(x - 1).min(axis=0, keepdims=True) + x", "f4"), ("x.max(axis=2)", "f8"),
    ("np.amax(abs(x) + 1, axis=-1)", "f4"),
]


@pytest.mark.parametrize("expr,dt", AXIS_REDUCTIONS, ids=[f"{e}-{d}" for e, d in AXIS_REDUCTIONS])
def test_axis_reductions(expr, dt):
    x = data(dt, (4, 6))
    x3 = data(dt, (3, 4, 5))
    cases = [(x,), (x.T.copy(),), (x[:, ::2],), (x[::-1],), (x.T,), (x[:0],), (x[:, :0],)]
    if "axis=2" in expr:
        cases = [(x3,), (x3[:, ::2],), (x3.transpose(1, 0, 2),), (x3.T,)]
    check(expr, cases, params="x")


@pytest.mark.parametrize("enabled", [False, True])
def test_float_axis_max_min(enabled):
    old = _C.native_config()
    try:
        _C.native_config(float_axis_minmax=enabled)
        x = data("f8", (5, 7), special=False)
        for expr in ("np.max(x * 2, axis=1)", "x.min(axis=0) - 1", "np.amax(x + 1, axis=0, keepdims=True) * x"):
            check(expr, [(x,), (x.T,), (x[:, ::2],), (x.astype(np.float32),)], params="x", fused=True)
        for expr, dt in AXIS_REDUCTIONS:
            if dt[0] == "f":
                check(expr, [(data(dt, (4, 6)),), (data(dt, (4, 6)).T,)], params="x")
    finally:
        _C.native_config(float_axis_minmax=old[2])


# ---- float sum and mean: NumPy's pairwise order ----------------------------------------

@pytest.mark.parametrize("dt", ["f8", "f4"])
@pytest.mark.parametrize("n", [0, 1, 5, 7, 8, 9, 15, 16, 17, 127, 128, 129, 255, 256, 257, 1000, 4097, 8193, 100003])
def test_float_sum_pairwise(n, dt):
    x = (RNG.standard_normal(n) * 10.0 ** RNG.integers(-6, 6, n)).astype(dt)
    check("np.sum(x * 1.5 + 0.25)", [(x,)], params="x", fused=True)
    check("(x - 1).mean()", [(x,)], params="x", fused=True if n else None)


@pytest.mark.parametrize("dt", ["f8", "f4"])
def test_float_sum_interleaved_leaves(dt):
    """Subtrees of 129..4096 elements run four pairwise leaves interleaved when
    the summed expression is cheap (leaves of unequal sizes: the common part
    together, each one's rest alone), else one at a time; the
    subtree-size boundary; a side output the interleaved leaves store; a
    maximum with a constant (one unordered compare) before the sum."""
    for n in (130, 383, 513, 520, 1031, 2049, 4095, 4096, 4097, 4103, 8191, 12345, 33333):
        x = (RNG.standard_normal(n) * 10.0 ** RNG.integers(-6, 6, n)).astype(dt)
        x[n // 3] = -0.0
        check("np.sum(x * 1.5 + 0.25)", [(x,)], params="x", fused=True)
        check("(x * 2, np.sum(np.maximum(x * 2 - 1, 0.0)))", [(x,)], params="x", fused=True)
        # more than FJN_IL_OPS members: one leaf at a time
        check("np.sum(np.maximum((x * 1.5 + 0.25) * 0.5 - x, 0.0))", [(x,)], params="x", fused=True)
        x[n // 2] = np.nan
        check("np.sum(np.minimum(x, 0.5)) + np.sum(np.maximum(x, -0.5))", [(x,)], params="x", fused=True)
        check("np.maximum(x, np.nan) + np.minimum(x, -np.inf) + np.maximum(x, -0.0) * np.minimum(x, 0.0)",
              [(x,)], params="x", fused=True)


@pytest.mark.parametrize("dt", ["f8", "f4"])
def test_float_sum_every_size(dt):
    """The leaves sum computed elements in place (accumulators start at -0.0):
    every size 0..1100 and around the 4-leaf and 4096 boundaries, with -0.0,
    +0.0, subnormals, infinities and NaN in the first block of a leaf, bit for
    bit with NumPy, through one dynamic-shape kernel."""
    framejit.reset()
    fn = make_fn("(np.sum(x * 1.5 + 0.25), np.sum(np.maximum(x, 0.0)), x.mean(), np.sum(x))", "x")
    cf = framejit.compile(fn, backend="native", dynamic=True)
    tiny = np.finfo(dt).smallest_subnormal
    sizes = list(range(0, 1101)) + [4088, 4095, 4096, 4097, 4104, 8191, 8192, 8193, 12289, 65537]
    for n in sizes:
        x = (RNG.standard_normal(n) * 10.0 ** RNG.integers(-3, 3, n)).astype(dt)
        if n % 5 == 1:
            x[:8] = -0.0
        elif n % 5 == 2:
            x[: min(n, 136)] = np.where(np.arange(min(n, 136)) % 2, -0.0, 0.0)
        elif n % 5 == 3:
            x[:4] = tiny
            x[-3:] = -tiny
        if n % 97 == 5:
            x[n // 2] = np.inf
        if n % 89 == 7:
            x[n // 3] = np.nan
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            same(cf(x), fn(x))
    assert framejit.counters["native"]["nodes_fused"] > 0


def _set_fp_mode(rounding=None, mxcsr_or=0):
    """Sets the C rounding mode (fesetround) and/or MXCSR bits (x86-64); returns a restore function."""
    import ctypes
    import ctypes.util
    import platform
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    old = libm.fegetround()
    if rounding is not None:
        assert libm.fesetround(rounding) == 0
    restore_mx = None
    if mxcsr_or:
        if platform.machine() not in ("x86_64", "AMD64"):
            libm.fesetround(old)
            pytest.skip("MXCSR is x86-64's")
        env = (ctypes.c_ubyte * 64)()
        assert libm.fegetenv(ctypes.byref(env)) == 0
        saved = bytes(env)
        # glibc's x86-64 fenv_t: the x87 environment (28 bytes), then MXCSR
        mx = int.from_bytes(saved[28:32], "little") | mxcsr_or
        env2 = (ctypes.c_ubyte * 64).from_buffer_copy(saved[:28] + mx.to_bytes(4, "little") + saved[32:])
        assert libm.fesetenv(ctypes.byref(env2)) == 0
        restore_mx = saved

    def restore():
        if restore_mx is not None:
            libm.fesetenv(ctypes.byref((ctypes.c_ubyte * 64).from_buffer_copy(restore_mx)))
        libm.fesetround(old)
    return restore


@pytest.mark.parametrize("mode", ["downward", "upward", "towardzero", "ftz_daz"])
def test_float_sum_non_default_fp_modes(mode):
    """Under another rounding mode or with flush-to-zero / denormals-are-zero
    the float sums run through NumPy (their leaves start at -0.0, NumPy's first
    element only when rounding to nearest); elementwise kernels stay native
    and round as NumPy's loops do."""
    rounding = {"downward": 0x400, "upward": 0x800, "towardzero": 0xC00}.get(mode)
    tiny = np.finfo("f8").smallest_subnormal
    x = np.array([0.0, -0.0, 1e-300, -1e-300, tiny, 3 * tiny, 0.1, -0.3] * 40)
    fns = {e: make_fn(e, "x") for e in ("np.sum(x * 0.1)", "x * 0.1 + x * 0.3", "(x + 0.0).mean()",
                                        "np.sum(x - x)", "np.sum(np.abs(x) * 0.0)",
                                        "(np.abs(x) * 0.0).mean()")}
    framejit.reset()
    cfs = {e: framejit.compile(f, backend="native") for e, f in fns.items()}
    for e, cf in cfs.items():
        same(cf(x), fns[e](x))   # compiled in the default mode
    restore = _set_fp_mode(rounding, 0x8040 if mode == "ftz_daz" else 0)
    try:
        results = [(cfs[e](x), fns[e](x)) for e in fns]
    finally:
        restore()
    for got, exp in results:
        same(got, exp)
    assert (np.sum(np.array([1.0, 1e-17])) == 1.0)  # default mode restored

@pytest.mark.parametrize("dt", ["f8", "f4"])
@pytest.mark.parametrize("shape", [(3, 5), (4, 200), (7, 1000), (2, 9000), (50, 129), (1, 20000), (300, 7), (2, 3, 130),
                                   (4, 0), (0, 5)])
def test_float_sum_last_axis(shape, dt):
    x = (RNG.standard_normal(shape) * 10.0 ** RNG.integers(-6, 6, shape)).astype(dt)
    check("np.sum(x * 1.5 + 0.25, axis=-1)", [(x,)], params="x")
    check("(x - 1).mean(axis=-1, keepdims=True) + x", [(x,)], params="x")
    if x.ndim == 2:
        check("np.sum(x * 2, axis=1) + x.sum(axis=0)", [(x,), (x.T.copy().T,), (x[:, ::2],)], params="x")
    check("x.sum(-1)", [(x,)], params="x")


def _compile_capturing(expr, params):
    """(plain function, compiled with the native backend, list the backend's results go to)."""
    plans = []

    def capture(graph, example_inputs):
        from framejit import native
        p = native.backend(graph, example_inputs)
        plans.append(p)
        return p
    fn = make_fn(expr, params)
    framejit.reset()
    return fn, framejit.compile(fn, backend=capture), plans


def _plans_of(expr, args, params="x"):
    """Runs expr compiled (twice) and returns the NativePlans made, after checking the results."""
    fn, cf, plans = _compile_capturing(expr, params)
    for _ in range(2):
        same(cf(*args), fn(*args))
    return [p for p in plans if isinstance(p, _C.NativePlan)]


KERNEL_CASES = [("np.sum(x * 1.5, axis=-1)", "f8"), ("x.mean(axis=1)", "f4"), ("np.sum(x * x)", "f8"),
                ("x.max(axis=0)", "i4"), ("(x * 2).sum(axis=0)", "i8"), ("x * 2 + 1", "f4"),
                ("np.where(x > 0, x, 0).min()", "i4"), ("np.sum(x * x)", "i2"), ("x.mean()", "f8"),
                ("(x > 0).any(axis=1)", "f8")]


@pytest.mark.parametrize("expr,dt", KERNEL_CASES)
def test_kernels_used_not_fallbacks(expr, dt):
    """On clean data and contiguous inputs every fused group runs its kernel."""
    x = (data("f8", (6, 40), special=False) * 100).astype(dt)
    for arg in (x, np.asfortranarray(x) if "axis" not in expr and "sum" not in expr else x):
        plans = _plans_of(expr, (arg,))
        assert plans, expr
        assert all(p.fallbacks == 0 for p in plans), expr


BSEL_CASES = ["np.sqrt(np.maximum(x, 0.0))", "np.sqrt(np.where(x > 0, x, 0.0)) + x",
              "np.sqrt(np.minimum(x, 4.0) + 1.0)", "np.where(np.isfinite(x), x, 0.0).astype(np.int64)",
              "np.maximum(x, -3.0).astype(np.int32)", "np.sqrt(np.maximum(np.minimum(x, 9.0), 0.0))"]


def _numpy_warns(expr, x):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        make_fn(expr, "x")(x)
    return bool(w)


@pytest.mark.parametrize("expr", BSEL_CASES)
@pytest.mark.parametrize("dt", ["f8", "f4"])
def test_selects_feeding_sqrt_or_cast_are_bitwise(expr, dt):
    """A select feeding a sqrt or a float to int cast is written as bit operations
    (fj_bsel*), so gcc cannot compute the sqrt / cast on the lanes the select drops
    (their invalid flag reran every block with its checks, or sent a cast's group
    through NumPy); isfinite is an exponent test, not a signaling compare that
    raises invalid for NaN.  Values and warnings are NumPy's; a group runs its
    kernel unless NumPy itself warns (a real invalid: NumPy's values and warning)."""
    special = data(dt, (4, 300))
    special[0, :4] = [np.nan, -np.inf, np.inf, -0.0]
    clean = np.abs(data(dt, (4, 300), special=False)) + 1
    clean[0, :3] = [np.nan, -0.0, -0.5]
    for x in (special, clean, special.T):
        plans = _plans_outcome(expr, (x,))
        assert plans, expr
        if not _numpy_warns(expr, x):
            assert all(p.fallbacks == 0 for p in plans), (expr, [p.fallbacks for p in plans])
        src = "".join(p.source for p in plans)
        assert "= fj_bsel" + ("32" if dt == "f4" else "64") + "(" in src, expr
    assert not _numpy_warns(expr, clean) or "astype" in expr


@pytest.mark.parametrize("dt", ["f8", "f4"])
def test_isfinite_isinf_bits(dt):
    info = np.finfo(dt)
    x = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, info.max, -info.max, info.tiny, info.tiny / 4,
                  1.0, -1.0], dtype=dt)
    x = np.tile(x, 40)
    for expr in ("np.isfinite(x)", "np.isinf(x)", "np.isfinite(x) & ~np.isinf(x * 0.5)", "np.where(np.isinf(x), 1.0, x)"):
        plans = _plans_outcome(expr, (x,))
        assert plans and all(p.fallbacks == 0 for p in plans), expr
        assert not _numpy_warns(expr, x)


CAST_NAN_CASES = ["np.where(x > 0, x, 0.0).astype(np.int64)", "np.where(x < 5, x, 0.0).astype(np.int32)",
                  "(x > 0).astype(np.int64) + np.where(x >= 1, x, 2.0).astype(np.int16)",
                  "np.where(x != x, 1.0, x).astype(np.int8)", "np.maximum(x, 0.0).astype(np.int64)",
                  "np.max(np.where(x > 0, x, 0.0).astype(np.int64))", "np.where(x > 0, x, 0.0).astype(np.int32).sum()",
                  "np.any(np.where(x > 0, x, 0.0).astype(np.int8))", "np.max(x.astype(np.int64))"]


@pytest.mark.parametrize("expr", CAST_NAN_CASES)
@pytest.mark.parametrize("dt", ["f8", "f4"])
def test_cast_groups_confirm_invalid_in_scalar_code(expr, dt):
    """A group with a float to int cast confirms a block's invalid flag in scalar code
    (fj_g<N>_hinv): the vectorized compares of NaN raised it spuriously and sent the
    group through NumPy; a real invalid (the cast of maximum(NaN, 0)) still does."""
    x = np.linspace(-3, 3, 9000).astype(dt)
    x[::7] = np.nan
    for arg in (x, x.reshape(90, 100)[:, ::2], x[::-1]):
        plans = _plans_outcome(expr, (arg,))
        assert plans and "fj_g0_hinv(b, be, data)" in plans[0].source, expr
        # a group with a reduction runs non-contiguous operands through its vectorized
        # strided loop, which still reads the flag (correct, through NumPy)
        if arg is not x and any(r in expr for r in ("np.max(", "sum()", "np.any(")):
            continue
        if not _numpy_warns(expr, arg):
            assert all(p.fallbacks == 0 for p in plans), (expr, [p.fallbacks for p in plans])
        else:
            assert all(p.fallbacks > 0 for p in plans), expr


@pytest.mark.parametrize("dt", ["f8", "f4"])
def test_out_of_range_casts_one_value_at_a_time(dt):
    """Each out of range value alone in an array (1.0 elsewhere): the vectorized cast
    and the scalar confirmation must agree with NumPy on values and on its warning."""
    vals = [-1.0, -300.0, 300.0, 70000.0, -70000.0, 3e9, -3e9, 1e10, -1e10, 2.0 ** 63, -2.0 ** 63, 2.0 ** 64,
            -1.5, -0.0, 255.5, 4294967295.0, 4294967296.0, np.inf, np.nan]
    for it in ("i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8"):
        expr = f"np.where(x > 0, x, x * 2).astype(np.{np.dtype(it).name})"
        for v in vals:
            x = np.full(64, v, dt)
            x[::5] = 1.0
            _plans_outcome(expr, (x,))


def test_select_without_sqrt_or_cast_stays_a_ternary():
    """Only selects whose value reaches a sqrt or a float to int cast pay for bit
    operations; the others stay a compare and a blend."""
    plans = _plans_of("np.maximum(x * 2, 0.0) + 1", (data("f8", (50,)),))
    assert plans and "= fj_bsel64(" not in plans[0].source
    # c10's shape: the maximum feeds the sqrt, the where after it does not
    plans = _plans_of("np.where(np.sqrt(np.maximum(x, 0.0)) + x > 1.0, x, 2.0) * 2.0", (data("f4", (50,)),))
    src = plans[0].source
    assert "= fj_bsel32(!__builtin_islessequal(" in src
    assert "? v0 : ((float)v" in src or "? v0 : v" in src, src[src.index("fj_g0_flat"):][:1500]


def test_softmax_like():
    x = data("f8", (8, 33), special=False)
    check("np.exp(x - x.max(axis=-1, keepdims=True)) / np.exp(x - x.max(axis=-1, keepdims=True)).sum(axis=-1, keepdims=True)",
          [(x,), (x.astype(np.float32),)], params="x", fused=True)


def test_float_sum_layouts_and_mixed():
    a = (RNG.standard_normal((37, 29)) * 100).astype("f8")
    for expr in ("np.sum(x * y)", "(x + y).sum() + x", "np.mean(x * 2) - y.sum()", "x.sum() + x.max()",
                 "np.sum(x) * 2"):
        check(expr, [(a, a.T.copy().T), (a.T, a.T), (a[:, ::2], a[:, 1::2]), (a[::-1], a)], fused=True)
    check("np.sum(x * y)", [(data("f4", (3, 1)), data("f4", (1, 4)))])


def test_where_astype_layouts():
    a = data("f8", (6, 5))
    b = data("f8", (6, 5))
    layouts = [(a, b), (a.T, b.T), (np.asfortranarray(a), np.asfortranarray(b)), (a[::-1], b[:, ::-1]),
               (a[::2, 1:], b[::2, :-1]), (a.T[::-1], b.T[::-1]), (np.asfortranarray(a), b)]
    check("np.where(x > y, x, y)", layouts, fused=True)
    check("np.where(x > 0, 1.0, y)", layouts, fused=True)
    check("x.astype(np.float32)", [(u,) for u, _ in layouts], params="x", fused=True)
    check("(x > 0).astype(np.int8) * 3", [(u,) for u, _ in layouts], params="x", fused=True)
    check("x.astype(np.int64) // 3", [(u * 100,) for u, _ in layouts], params="x", fused=True)


def test_3d_permuted_layouts():
    a = data("f4", (3, 4, 5))
    check("x * 2 + y", [(a.transpose(1, 0, 2), a.transpose(1, 0, 2).copy()), (a.transpose(2, 1, 0), a.T.copy()),
                        (a.transpose(0, 2, 1), a.transpose(0, 2, 1)), (a[:, ::-2], a[:, 1::2])])


@pytest.mark.parametrize("expr", ["x ** 2 + 1", "x ** 2.0 - x", "x ** 0.5 * 2", "x ** -1 + x ** 2", "x ** 3 + 1",
                                  "(x * 2) ** 2"])
@pytest.mark.parametrize("dt", ["f8", "f4", "i8", "i2"])
def test_power_constants(expr, dt):
    x = data(dt, (3, 4))
    check(expr, [(x,), (x.T,), (x * 0,)], params="x")


# ---- random expression trees (seeded) ----------------------------------------------------

_BIN = ["({a} + {b})", "({a} - {b})", "({a} * {b})", "({a} / {b})", "np.maximum({a}, {b})", "np.minimum({a}, {b})",
        "({a} < {b})", "({a} >= {b})", "({a} == {b})", "np.logical_or({a}, {b})", "({a} & {b})", "({a} ^ {b})",
        "({a} // {b})", "({a} % {b})", "np.where({a} > {b}, {a}, {b})"]
_UN = ["(-{a})", "abs({a})", "np.sqrt(abs({a}))", "np.square({a})", "np.floor({a})", "({a} > 0)", "np.isnan({a})",
       "{a}.astype(np.float32)", "{a}.astype(np.int32)", "({a} ** 2)", "np.rint({a})", "np.logical_not({a})"]
_CONST = ["2", "3.5", "-1", "0.25", "True", "7"]
_RED = ["np.sum({a})", "np.max({a})", "{a}.min()", "np.any({a})", "{a}.mean()", "{a}.all()"]


def _random_expr(rng, depth, names):
    if depth == 0 or rng.random() < 0.2:
        return rng.choice(names) if rng.random() < 0.8 else "(" + rng.choice(_CONST) + ")"
    if rng.random() < 0.4:
        return rng.choice(_UN).format(a=_random_expr(rng, depth - 1, names))
    a, b = _random_expr(rng, depth - 1, names), _random_expr(rng, depth - 1, names)
    return rng.choice(_BIN).format(a=a, b=b)


@pytest.mark.parametrize("seed", range(120))
def test_random_trees(seed):
    import random
    rng = random.Random(seed)
    names = ["x", "y", "z"]
    expr = _random_expr(rng, 4, names)
    if rng.random() < 0.3:
        expr = rng.choice(_RED).format(a=expr) + " + " + rng.choice(names)
    dts = [rng.choice(["f8", "f4", "i8", "i4", "u1", "?", "i2"]) for _ in names]
    shapes = rng.choice([[(4, 5)] * 3, [(4, 5), (5,), (4, 1)], [(3,), (3,), ()], [(2, 3, 4), (3, 4), (1, 4)]])
    args = [data(d, s) for d, s in zip(dts, shapes)]
    alt = [a.T if a.ndim > 1 else a[::-1] for a in args] if shapes[0] == (4, 5) and shapes[1] == (4, 5) else args
    with np.errstate(all="ignore"):
        check(expr, [tuple(args), tuple(alt)], params="x, y, z")


# ---- last: the size of the differential suite --------------------------------------------

def test_zz_suite_size():
    """The differential suite: at least 200 distinct graphs ran fused kernels against NumPy."""
    if _tally["checks"] < 400:
        pytest.skip("only part of the suite ran")
    print("native differential suite:", _tally)
    assert _tally["fused_graphs"] >= 200, _tally


# ---- the kernel path on NaN inputs and spurious FE flags (issue: benchmark fallbacks) ----

def _plans_outcome(expr, args, params="x"):
    """Like _plans_of, but compares the outcome (values and warnings) with NumPy's."""
    fn, cf, plans = _compile_capturing(expr, params)
    exp = outcome(fn, args)
    for _ in range(2):
        got = outcome(cf, args)
        assert got[0][0] == exp[0][0] == "ok", (got, exp)
        same(got[0][1], exp[0][1])
        assert got[1] == exp[1], f"{expr}: warnings {got[1]} vs NumPy {exp[1]}"
    plans = [p for p in plans if isinstance(p, _C.NativePlan)]
    assert plans, expr
    return plans


SPECULATION_CASES = ["np.sqrt(np.maximum(x, 0.0))", "np.sqrt(np.maximum((x * 2 + 1) * 0.5 - x, 0.0)) + x",
                     "np.sqrt(np.where(x > 0, x, 0.0))", "np.maximum(x, 0.0) ** 0.5",
                     "np.sqrt(np.abs(x)) * 2", "np.max(np.sqrt(np.maximum(x, 0.0)))"]


@pytest.mark.parametrize("dt", ["f4", "f8"])
@pytest.mark.parametrize("expr", SPECULATION_CASES)
def test_sqrt_of_select_uses_kernel(expr, dt):
    """sqrt after maximum/where on data with negatives: no spurious invalid (the
    vectorized sqrt of the unselected value must not send the group to NumPy)."""
    x = np.random.default_rng(3).standard_normal(5000).astype(dt)
    for arg in (x, x.reshape(50, 100)[:, ::2]):
        plans = _plans_outcome(expr, (arg,))
        assert all(p.fallbacks == 0 for p in plans), expr


NAN_CASES = ["np.maximum((x * x + 1) * 0.5 - x, 0.0)", "x > 0.5", "np.where(x > 0, x, 1.0)",
             "np.minimum(x, 1.0) * 2", "np.maximum(x, x * 0.5) <= 0.25", "(x + 1) / (x * x + 1)",
             "np.isnan(x) | (x >= 1)", "(x * 2 + 1).sum()", "np.sqrt(np.maximum(x, 0.0))",
             "np.sum(np.maximum(x, 0.5))", "np.mean(np.sqrt(np.maximum(x * 2, 0.0)))",
             "np.sum(np.maximum(x.reshape(30, 100), 0.5), axis=-1)"]


@pytest.mark.parametrize("dt", ["f4", "f8"])
@pytest.mark.parametrize("expr", NAN_CASES)
def test_nan_inputs_use_kernel(expr, dt):
    """Quiet NaNs in the input: NumPy warns about nothing, so the kernel runs."""
    x = np.random.default_rng(4).standard_normal(3000).astype(dt)
    x[[0, 17, 1234, 2999]] = np.nan
    plans = _plans_outcome(expr, (x,))
    assert all(p.fallbacks == 0 for p in plans), expr


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dt", ["f4", "f8"])
def test_sum_nan_elements_and_inf_minus_inf(threads, dt):
    """NaN elements and an inf - inf inside NumPy's tree (in another subtree,
    or in a lane before the NaN arrives): NumPy warns "invalid", with the
    same NaN total; NaN elements alone warn about nothing."""
    old = _C.native_config()
    try:
        _C.native_config(threads=threads, thread_min=1000)
        for n in (300, 5000, 40000):
            x = np.linspace(1.0, 2.0, n).astype(dt)
            x[0], x[8], x[n - 7] = np.inf, -np.inf, np.nan   # lane 0 of the first leaf: inf + -inf
            check("np.sum(x * 2)", [(x,)], params="x", fused=True)
            check("np.mean(np.maximum(x, 0.5))", [(x,)], params="x", fused=True)
            y = x.copy()
            y[0], y[n // 2], y[8] = np.inf, np.nan, 1.0        # one infinity, a NaN: no invalid
            check("np.sum(x * 2)", [(y,)], params="x", fused=True)
            with np.errstate(all="raise"):
                check("np.sum(x * 2)", [(x,), (y,)], params="x", fused=True)
    finally:
        _C.native_config(threads=old[0], thread_min=old[1], float_axis_minmax=old[2])


BLOCK_CASES = ["np.where(x > 0, x, 1.0) * (x - x)", "np.maximum(x, 0.5) - np.minimum(x, np.inf)",
               "np.sqrt(np.maximum(x, 0.0)) - x"]


@pytest.mark.parametrize("dt", ["f4", "f8"])
@pytest.mark.parametrize("expr", BLOCK_CASES)
def test_invalid_found_in_a_late_block(expr, dt):
    """The fast loop computes no invalid condition; a set FE flag after a block
    (4096 elements flat, one row strided) runs the checking loop over it.  A
    NaN early (flag possibly set by a vectorized compare, no invalid: cleared)
    must not hide a genuine inf - inf in a later block, flat or strided, and
    NaNs alone in many blocks warn about nothing."""
    n = 20000
    x = np.linspace(-1.0, 3.0, n).astype(dt)
    x[[5, 4100, 9000]] = np.nan
    for arg in (x, x.reshape(100, 200)[:, ::-1], x.reshape(200, 100).T):
        plans = _plans_outcome(expr, (arg,))
        assert all(p.fallbacks == 0 for p in plans), expr
    y = x.copy()
    y[n - 7] = np.inf  # inf - inf (or inf - inf inside sqrt's operand) far after the NaNs
    for arg in (y, y.reshape(100, 200)[:, ::-1], y.reshape(200, 100).T):
        plans = _plans_outcome(expr, (arg,))
        assert all(p.fallbacks > 0 for p in plans), expr


@pytest.mark.parametrize("expr,data_,warns", [
    ("np.sqrt(x) + 1", [4.0, -1.0, 9.0], True),           # sqrt of a negative
    ("(x - x) * 0 + x * np.inf", [1.0, np.inf, 0.0], True),  # inf - inf, 0 * inf
    ("x / x", [1.0, 0.0, 2.0], True),                     # 0 / 0
    ("(x * 1e-300) * 1e-300", [1.0, 2.0, 3.0], False),    # underflow: ignored by default
    ("np.sum(x * 2)", [np.inf, 1.0, -np.inf], True),      # the sum's own inf - inf
    ("np.sum(np.minimum(x, np.inf) * 2, axis=-1)", [np.inf, 1.0, -np.inf], True),
    ("np.sum(np.sqrt(x))", [4.0, -1.0, 9.0], True),       # a member's invalid in a sum
    ("np.mean(np.maximum(x, 1.0))", [np.nan, 1.0, 3.0], False),  # NaN element, no invalid
])
@pytest.mark.parametrize("dt", ["f4", "f8"])
def test_genuine_conditions_follow_errstate(expr, data_, warns, dt):
    """A condition NumPy warns about sends the group to NumPy (its warning); one
    NumPy's errstate ignores keeps the kernel's (equal) values."""
    x = np.array(data_ * 1000, dtype=dt)
    plans = _plans_outcome(expr, (x,))
    assert all((p.fallbacks > 0) == warns for p in plans), expr
    with np.errstate(all="ignore"):
        plans = _plans_outcome(expr, (x,))
        assert all(p.fallbacks == 0 for p in plans), expr
    with np.errstate(all="raise"):
        fn = make_fn(expr, "x")
        framejit.reset()
        cf = framejit.compile(fn, backend="native")
        got, exp = outcome(cf, (x,))[0], outcome(fn, (x,))[0]
        assert got[0] == exp[0]
        if exp[0] == "raise":
            assert got[1:] == exp[1:]
        else:
            same(got[1], exp[1])


@pytest.mark.parametrize("dt", ["f4", "f8"])
@pytest.mark.parametrize("row,value", [(0, "big"), (1, "tiny"), (2, -1.0), (4, 0.0), (None, None)])
def test_row_contiguous_strided_conditions(row, value, dt):
    """A strided elementwise group whose rows are contiguous runs the flat kernel
    row by row: a condition raised in any one row (overflow, underflow, invalid,
    divide) is reported as NumPy reports it, under every errstate."""
    fi = np.finfo(dt)
    base = (RNG.standard_normal((5, 40)) + 3.0).astype(dt)
    if row is not None:
        base[row, 3] = {"big": fi.max / 2, "tiny": fi.tiny * 4}.get(value, value)
    views = [base[:, :37], base[1:, 2:], base[::2, 5:30], base[:, :37][::-1]]
    for expr in ("x * 4 + np.sqrt(x)", "(x * x) * 1e-30 / x", "np.maximum(x, 0.5) * x - 1"):
        check(expr, [(v,) for v in views], params="x")
        for mode in ("ignore", "raise", "warn"):
            with np.errstate(all=mode):
                check(expr, [(v,) for v in views], params="x")
    if row is None:  # clean data: the row-contiguous view runs the kernel
        clean = (np.abs(RNG.standard_normal((5, 40))) + 1.0).astype(dt)
        plans = _plans_outcome("x * 4 + np.sqrt(x)", (clean[:, :37],))
        assert plans and all(p.fallbacks == 0 for p in plans)


@pytest.mark.parametrize("dt", ["f4", "f8"])
@pytest.mark.parametrize("expr", ["np.max(x * 1.5 + 2)", "np.min(x * x - 3)", "x.max()", "np.min(x)",
                                  "np.max(np.maximum(x, -0.5))", "(np.max(x), np.min(x), np.sum(x > 0))"])
def test_float_max_min_kernel(expr, dt):
    """Float max/min over every axis (ordered integer keys): NumPy's value and the kernel path."""
    rng = np.random.default_rng(5)
    for n in (1, 2, 7, 31, 64, 100, 1001):
        x = (rng.standard_normal(n) * 10).astype(dt)
        if n > 2:
            x[n // 2] = np.inf if "max" in expr else -np.inf
        for arg in (x, -np.abs(x) - 1, np.abs(x) + 1):
            plans = _plans_outcome(expr, (arg,))
            assert all(p.fallbacks == 0 for p in plans), expr
    x = (rng.standard_normal((30, 40)) * 10).astype(dt)
    for arg in (x, x.T, x[:, ::3]):
        _plans_outcome(expr, (arg,))
    # NaN and zero results: NumPy's answer (through NumPy)
    for arg in (np.array([1.0, np.nan, -2.0], dt), np.array([0.0, -0.0], dt), np.array([-0.0, 0.0], dt)):
        _plans_outcome(expr, (arg,))


@pytest.mark.parametrize("n", [7, 1000])
def test_bool_bytes_other_than_0_and_1_are_true(n):
    """A view of uint8 as bool: NumPy reads a byte other than 0 or 1 as True
    (its casts, arithmetic and logic); the native kernels read its truth."""
    import framejit
    b = (np.arange(n, dtype=np.uint8) % 5).view(np.bool_)

    def f(b):
        return (b.astype(np.int64), b + np.int64(1), b * 2.5, b & b, ~b, np.logical_xor(b, b), b[::2] * 3, b + b,
                # copies keep the bytes (review): a select's arms, a cast to bool
                np.where(b, b, b), np.where(b[::-1], b, ~b), b.astype(np.bool_), np.where(b, 1.0, 2.0))
    framejit.reset()
    got = framejit.compile(f, backend="native")(b)
    for x, y in zip(got, f(b)):
        assert x.dtype == y.dtype and np.array_equal(x.view(np.uint8), y.view(np.uint8)), (x, y)


def _f32_cast_mul(x):
    return x * 1e300


def _f32_cast_cmp(x):
    return x[0] * 1e300 < 1e308


def _f32_near_max(x):
    return x * 3.4028235e38 - x * 3.402823567797e38


@pytest.mark.parametrize("fn", [_f32_cast_mul, _f32_cast_cmp, _f32_near_max])
@pytest.mark.parametrize("n", [3, 300000])
def test_python_float_overflowing_float32_cast_warns_as_numpy(fn, n):
    """A Python float meeting float32 (NEP 50) is cast to float32: where the
    cast overflows NumPy warns "overflow encountered in cast" (or raises)
    each time; such an operation is not fused (a compiled constant would fold
    to inf silently; found by review).  Just below the limit it fuses."""
    x = np.ones(n, dtype=np.float32)
    framejit.reset()
    cf = framejit.compile(fn, backend="native")
    for errs in ("warn", "raise"):
        outs = []
        for f in (fn, cf):
            with warnings.catch_warnings(record=True) as got, np.errstate(over=errs):
                warnings.simplefilter("always")
                try:
                    r = f(x)
                except FloatingPointError as e:
                    r = ("raised", str(e))
            outs.append((r, [str(w.message) for w in got if not str(w.message).startswith("framejit")]))
        same(outs[1][0], outs[0][0])
        assert outs[1][1] == outs[0][1], outs
