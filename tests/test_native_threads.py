"""The native backend's worker threads (csrc/native_threads.c): started once,
reused by every parallel kernel, correct under concurrent callers and after
fork().  Results are compared with NumPy bit for bit."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import framejit
from framejit import _C


@pytest.fixture(autouse=True, scope="module")
def _cache_dir(tmp_path_factory):
    old = os.environ.get("FRAMEJIT_CACHE_DIR")
    os.environ["FRAMEJIT_CACHE_DIR"] = str(tmp_path_factory.mktemp("kernels"))
    saved = _C.native_config()
    _C.native_config(threads=4, thread_min=1 << 10)
    yield
    _C.native_config(threads=saved[0], thread_min=saved[1])
    if old is None:
        os.environ.pop("FRAMEJIT_CACHE_DIR", None)
    else:
        os.environ["FRAMEJIT_CACHE_DIR"] = old


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
