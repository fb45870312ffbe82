"""The native backend's output buffer pool (csrc/backends/native/native_pool.c).

Outputs of at least 4 MiB get their memory through a NumPy memory handler
whose free keeps the block for the next output of that size, so a function
returning fresh arrays stops paying page faults on every call.  The arrays
must stay ordinary arrays: own data, no base, resizable, freed whenever they
die, never handed out twice."""
import gc
import os
import subprocess
import sys

import numpy as np
import pytest

import framejit
from framejit import _C

try:
    from numpy._core.multiarray import get_handler_name
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import get_handler_name

MIN = _C.native_pool()["min_bytes"]
N = MIN // 8 * 2  # float64 elements: twice the pool's minimum


@pytest.fixture(autouse=True, scope="module")
def _cache_dir(native_kernel_cache):
    """Every test here builds into a fresh kernel cache (conftest.py)."""
    yield


@pytest.fixture(autouse=True)
def _fresh_pool():
    limit = _C.native_pool()["limit"]
    _C.native_pool(limit=0)
    _C.native_pool(limit=1 << 30)
    framejit.reset()
    yield
    _C.native_pool(limit=0)
    _C.native_pool(limit=limit)


def chain(a, b):
    return (a * b + 1.0) * 0.5


def test_large_outputs_are_ordinary_arrays_from_the_pool():
    a, b = np.linspace(0, 1, N), np.linspace(1, 2, N)
    f = framejit.compile(chain, backend="native")
    r = f(a, b)
    np.testing.assert_array_equal(r, chain(a, b))
    assert get_handler_name(r) == "framejit_native_pool"
    assert r.base is None and r.flags.owndata and r.flags.writeable and r.flags.c_contiguous
    r[0] = 42.0  # writable memory
    assert r[0] == 42.0


def test_blocks_are_reused_and_never_handed_out_twice():
    a, b = np.linspace(0, 1, N), np.linspace(1, 2, N)
    exp = chain(a, b)
    f = framejit.compile(chain, backend="native")
    kept = [f(a, b) for _ in range(3)]  # all alive: three distinct blocks
    assert len({k.ctypes.data for k in kept}) == 3
    addrs = {k.ctypes.data for k in kept}
    del kept
    gc.collect()
    held = _C.native_pool()
    # counted by the blocks' real capacity (malloc_usable_size): a few bytes over
    assert held["held_blocks"] == 3 and 3 * N * 8 <= held["held_bytes"] < 3 * N * 8 + 3 * 4096
    hits0 = held["hits"]
    r1 = f(a, b)
    r2 = f(a, b)
    assert r1.ctypes.data != r2.ctypes.data
    assert {r1.ctypes.data, r2.ctypes.data} <= addrs
    assert _C.native_pool()["hits"] == hits0 + 2
    for _ in range(5):  # r1 stays intact while later calls reuse other blocks
        r3 = f(a * 2, b)
        assert r3.ctypes.data != r1.ctypes.data
    np.testing.assert_array_equal(r1, exp)
    np.testing.assert_array_equal(r2, exp)


def test_small_outputs_do_not_use_the_pool():
    a = np.linspace(0, 1, 1000)
    f = framejit.compile(chain, backend="native")
    before = _C.native_pool()
    r = f(a, a)
    assert get_handler_name(r) != "framejit_native_pool"
    after = _C.native_pool()
    assert (after["misses"], after["hits"]) == (before["misses"], before["hits"])


def test_resize_and_float32_and_fortran_order():
    a = np.asfortranarray(np.linspace(0, 1, N).reshape(1024, -1))
    f = framejit.compile(chain, backend="native")
    r = f(a, a)
    exp = chain(a, a)
    assert r.flags.f_contiguous and r.strides == exp.strides
    np.testing.assert_array_equal(r, exp)
    r.resize((10,), refcheck=False)  # realloc through the handler
    np.testing.assert_array_equal(r, exp.ravel(order="K")[:10])
    r.resize((N * 2,), refcheck=False)
    assert r.shape == (N * 2,)
    del r
    x = np.linspace(0, 1, N * 2, dtype=np.float32)
    r32 = f(x, x)
    np.testing.assert_array_equal(r32, chain(x, x))
    assert r32.dtype == np.float32


def test_limit_zero_frees_everything_and_disables():
    a = np.linspace(0, 1, N)
    f = framejit.compile(chain, backend="native")
    for _ in range(3):
        f(a, a)
    assert _C.native_pool()["held_blocks"] >= 1
    info = _C.native_pool(limit=0)
    assert info["held_blocks"] == 0 and info["held_bytes"] == 0 and info["limit"] == 0
    r = f(a, a)
    assert get_handler_name(r) != "framejit_native_pool"
    del r
    assert _C.native_pool()["held_blocks"] == 0


def test_held_bytes_stay_under_the_limit():
    _C.native_pool(limit=3 * N * 8)
    f = framejit.compile(chain, backend="native")
    for k in range(12):  # sizes the pool cannot all keep: oldest go first
        x = np.linspace(0, 1, N + k * 4096)
        f(x, x)
        info = _C.native_pool()
        assert info["held_bytes"] <= 3 * N * 8
        assert info["held_blocks"] <= 8
    assert info["released"] > 0


def test_bad_limit_is_a_clear_error():
    with pytest.raises(ValueError, match="limit must be a byte count >= 0"):
        _C.native_pool(limit=-1)
    with pytest.raises(TypeError):
        _C.native_pool(limit="big")


def test_memory_stays_flat_over_many_calls():
    """RSS after 200 calls returning fresh 2x-minimum arrays: bounded by the pool."""
    code = f"""
import numpy as np, framejit, resource
from framejit import _C
_C.native_pool(limit={4 * N * 8})
f = framejit.compile(lambda a, b: (a * b + 1.0) * 0.5, backend="native")
a = np.linspace(0, 1, {N})
for _ in range(20):
    r = f(a, a)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for _ in range(200):
    r = f(a, a)
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base
print(grown)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.split()[-1]) < 4 * N * 8 // 1024, out.stdout


def test_environment_variables_parsed_alike():
    """FRAMEJIT_NATIVE_POOL_BYTES and FRAMEJIT_NATIVE_THREADS are read at import by the
    same parser as FRAMEJIT_NATIVE_STREAM_MIN: a non-negative decimal integer, anything
    else ignored (the default kept; a bad pool value used to turn the pool off)."""
    import os
    import subprocess
    import sys
    code = "from framejit import _C; print(_C.native_pool()['limit'], _C.native_config()[0])"

    def read(pool=None, threads=None):
        env = dict(os.environ)
        for k, v in (("FRAMEJIT_NATIVE_POOL_BYTES", pool), ("FRAMEJIT_NATIVE_THREADS", threads)):
            env.pop(k, None)
            if v is not None:
                env[k] = v
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        return tuple(int(x) for x in out.stdout.split())
    default = read()
    assert default[0] > 0 and default[1] >= 1
    assert read(pool="lots", threads="many") == default
    assert read(pool="-1", threads="-2") == default and read(pool="12x") == default
    assert read(pool="12345", threads="3") == (12345, 3)
    assert read(pool="0", threads="0") == (0, 1)
    assert read(threads="99") == (default[0], 16)
    assert read(pool="99999999999999999999999")[0] == sys.maxsize
