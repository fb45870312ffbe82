"""The native backend's worker threads (csrc/backends/native/native_threads.c): started once,
reused by every parallel kernel, correct under concurrent callers and after
fork().  Results are compared with NumPy bit for bit."""
import contextlib
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import framejit
from framejit import _C, backends
from native_compare import outcome, same


@pytest.fixture(autouse=True, scope="module")
def _threads(native_kernel_cache):
    """A fresh kernel cache (conftest.py); four threads from 1024 elements."""
    saved = _C.native_config()
    _C.native_config(threads=4, thread_min=1 << 10)
    yield
    _C.native_config(threads=saved[0], thread_min=saved[1])


def chain(a, b):
    return np.maximum((a * b + 1.0) * 0.5 - a, 0.0) + np.sqrt(np.abs(b))


def test_workers_start_once_and_are_reused():
    a = np.linspace(-3, 3, 100_003)
    b = np.linspace(1, 2, 100_003)
    f = framejit.compile(chain, backend="native")
    exp = chain(a, b)
    for _ in range(20):
        assert np.array_equal(f(a, b), exp)
    started = _C.native_workers()
    assert 1 <= started <= 3  # 4 tasks: the caller runs one
    for _ in range(20):
        assert np.array_equal(f(a[::-1].copy(), b), chain(a[::-1].copy(), b))
    assert _C.native_workers() == started


def test_strided_kernels_split_over_workers():
    a = np.linspace(-3, 3, 400 * 300).reshape(400, 300)[:, ::-1]
    b = np.asfortranarray(np.linspace(1, 2, 400 * 300).reshape(400, 300))
    f = framejit.compile(chain, backend="native")
    for _ in range(5):
        got = f(a, b)
        exp = chain(a, b)
        assert got.strides == exp.strides and np.array_equal(got, exp)


def test_concurrent_callers_get_their_own_results():
    """Python threads calling kernels at once (each releases the GIL): one job
    runs on the pool, the others run their tasks themselves; nothing mixes."""
    f = framejit.compile(chain, backend="native")
    inputs = [(np.linspace(-k, k, 70_000 + 17 * k), np.linspace(1, 1 + k, 70_000 + 17 * k)) for k in range(1, 9)]
    expected = [chain(a, b) for a, b in inputs]
    f(*inputs[0])
    errors = []

    def run(k):
        a, b = inputs[k]
        for _ in range(30):
            if not np.array_equal(f(a, b), expected[k]):
                errors.append(k)
                return

    threads = [threading.Thread(target=run, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a kernel call did not return"
    assert errors == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_fork_child_starts_its_own_workers():
    code = """
import os, numpy as np, framejit
from framejit import _C
_C.native_config(threads=3, thread_min=1024)
f = framejit.compile(lambda a, b: (a * b + 1.0) * 0.5 - b, backend="native")
a = np.linspace(0, 1, 200_000); b = a[::-1].copy()
exp = (a * b + 1.0) * 0.5 - b
assert np.array_equal(f(a, b), exp)
pid = os.fork()
if pid == 0:
    ok = all(np.array_equal(f(a, b), exp) for _ in range(10)) and _C.native_workers() >= 1
    os._exit(0 if ok else 3)
_, st = os.waitpid(pid, 0)
print("child", os.WEXITSTATUS(st))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "0", out.stdout + out.stderr


@contextlib.contextmanager
def native_threads(threads, thread_min=2048):
    """The native backend on 'threads' threads from 'thread_min' elements, with
    fresh compiles (framejit.reset); the settings restored afterwards."""
    saved = _C.native_config()
    _C.native_config(threads=threads, thread_min=thread_min)
    framejit.reset()
    try:
        yield
    finally:
        _C.native_config(threads=saved[0], thread_min=saved[1])


def same_outcome(got, exp):
    """Both returned (no exception), the same value bit for bit and the same warnings."""
    assert got[0][0] == exp[0][0] == "ok", (got, exp)
    same(got[0][1], exp[0][1])
    assert got[1] == exp[1], (got[1], exp[1])


REDUCTIONS = [
    lambda x: np.sum(x * 1.5 + 0.25),
    lambda x: (x - 1).mean(),
    lambda x: (x * 2, np.sum(np.maximum(x, 0.0))),
    lambda x: np.max(x * 3 - 1),
    lambda x: np.min(np.abs(x) + 1),
    lambda x: (np.any(x > 2.5), np.all(x > -10), np.sum(x > 0)),
]


@pytest.mark.parametrize("threads", [2, 3, 4, 8])
@pytest.mark.parametrize("dt", ["f4", "f8"])
@pytest.mark.parametrize("k", range(len(REDUCTIONS)))
def test_reductions_split_over_workers_equal_numpy(k, dt, threads):
    """Reductions over every axis run in chunks (float sums split at NumPy's
    pairwise recursion, then added back up its tree): every bit equals NumPy."""
    plans = []
    real = backends.lookup("native")
    with native_threads(threads):
        fn = REDUCTIONS[k]
        f = framejit.compile(fn, backend=lambda g, ex: plans.append(real(g, ex)) or plans[-1])
        rng = np.random.default_rng(k)
        for n in (2048, 5001, 65536, 100_003, 262_147):
            x = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(dt)
            exp = outcome(fn, (x,))
            for _ in range(2):
                same_outcome(outcome(f, (x,)), exp)
        native = [p for p in plans if isinstance(p, _C.NativePlan)]
        assert native and sum(p.split_reductions for p in native) > 0  # the split path ran
        assert all(p.fallbacks == 0 for p in native)


@pytest.mark.parametrize("dt", ["i1", "i4", "i8", "u8"])
def test_integer_reductions_wrap_across_chunks(dt):
    with native_threads(4):
        fn = lambda x: (np.sum(x * 3), np.max(x), np.min(x - 1))  # noqa: E731
        f = framejit.compile(fn, backend="native")
        info = np.iinfo(dt)
        x = np.random.default_rng(1).integers(info.min // 2, info.max // 2, 100_000, dtype=dt, endpoint=True)
        same(f(x), fn(x))
        same(f(x[::-1].copy()), fn(x[::-1].copy()))


def test_inf_minus_inf_only_when_chunks_are_added():
    """+inf in the first half, -inf in the second: each chunk's total is fine, the
    combining add makes NaN: NumPy's invalid warning, NumPy's value; a zero
    float max in one chunk only runs the group through NumPy (exact value)."""
    with native_threads(2):
        x = np.ones(100_000)
        x[10], x[90_000] = np.inf, -np.inf
        fn = lambda v: np.sum(v * 2)  # noqa: E731
        f = framejit.compile(fn, backend="native")
        got, exp = outcome(f, (x,)), outcome(fn, (x,))
        same_outcome(got, exp)
        assert np.isnan(got[0][1]) and exp[1]
        y = -np.abs(np.linspace(-1, 1, 100_001))
        fm = lambda v: np.max(v * 2)  # noqa: E731
        g = framejit.compile(fm, backend="native")
        same(g(y), fm(y))
        same(g(y[:50_000].copy()), fm(y[:50_000].copy()))


def test_split_reductions_keep_results_when_numpy_ignores_a_flag():
    """Found by review: a split integer/float max whose chunks raised only a
    condition NumPy ignores (underflow by default, divide under errstate)
    returned an unwritten result."""
    with native_threads(2):
        n = 1 << 17
        a = np.linspace(0.5, 2, n)
        b = np.linspace(1, 3, n)
        a[5] = b[5] = 1e-160  # a product that underflows: ignored by default
        fm = lambda x, y: np.max(x * y)  # noqa: E731
        f = framejit.compile(fm, backend="native")
        for k in range(1, 4):
            same(f(a * k, b), fm(a * k, b))
        b[77] = 0.0
        fd = lambda x, y: (np.max(x / y), np.any(x / y > 1e300))  # noqa: E731
        g = framejit.compile(fd, backend="native")
        with np.errstate(divide="ignore"):
            for k in range(1, 4):
                same(g(a * k, b), fd(a * k, b))


@pytest.mark.parametrize("dt", ["f4", "f8"])
def test_overflow_made_by_the_combining_adds_warns(dt):
    """Found by review: two finite subtree totals whose sum overflows: NumPy
    warns "overflow encountered in reduce" (and raises under over="raise")."""
    with native_threads(2):
        big = float(np.finfo(dt).max) / 1.5
        a = np.ones(1 << 17, dtype=dt)
        a[0] = a[-1] = big
        for fn in (lambda x: np.sum(x * 1.0), lambda x: np.mean(x - 1.0)):
            f = framejit.compile(fn, backend="native")
            exp = outcome(fn, (a,))
            same_outcome(outcome(f, (a,)), exp)
            assert exp[1]
            with np.errstate(over="raise"):
                with pytest.raises(FloatingPointError, match="overflow"):
                    f(a)
