"""Streaming stores of large elementwise outputs (csrc/backends/native/native_stream.c).

Above native_config()[3] bytes moved per call, a flat elementwise kernel runs
over blocks with its outputs redirected to a staging buffer, copied out with
non-temporal stores.  The tests force it on small arrays (stream_min=0) and
compare with NumPy bit for bit: values, dtype, order, warnings and errors, at
sizes around the block, cache-line and alignment boundaries, with several
outputs of different item sizes, scalar and F-ordered inputs, and threads."""
import numpy as np
import pytest

import framejit
from framejit import _C
from difftools import clone
import native_compare
from native_compare import outcome, same, same_outcomes

HAVE_NT = _C.native_config()[3] >= 0
# the width selected at import: the widest streaming store this CPU has
WIDEST = _C.native_stream_width()


@pytest.fixture(autouse=True, scope="module")
def _cache_dir(native_kernel_cache):
    yield


@pytest.fixture(params=[16, 32, 64], ids=lambda w: f"{w}B")
def streaming(request):
    """Streaming forced on (from 0 bytes), its copy out of the staging buffer
    with stores of 16, 32 or 64 bytes (a width this CPU lacks is skipped); the
    settings restored afterwards."""
    old = _C.native_config()
    old_width = _C.native_stream_width()
    if HAVE_NT:
        if request.param > WIDEST:
            pytest.skip(f"no {request.param}-byte streaming stores on this CPU")
        assert _C.native_stream_width(request.param) == request.param
    _C.native_config(stream_min=0)
    yield request.param
    _C.native_config(threads=old[0], thread_min=old[1], float_axis_minmax=old[2],
                     stream_min=old[3] if old[3] >= 0 else None)
    if HAVE_NT:
        _C.native_stream_width(old_width)


def compile_capturing(expr, params):
    """(plain function, native-compiled function, the NativePlans it made)."""
    return native_compare.compile_capturing(expr, params, "stream_case")


def check(expr, arg_sets, params="x, y"):
    """Each argument set: the compiled function's outcome (twice) equals
    NumPy's.  Returns the plans made."""
    fn, cf, plans = compile_capturing(expr, params)
    same_outcomes(fn, cf, arg_sets, expr, clone)
    return [p for p in plans if isinstance(p, _C.NativePlan)]


def streamed(plans):
    return sum(p.streamed for p in plans)


def values(dt, n, seed=0, special=False):
    rng = np.random.default_rng(seed + n)
    if np.dtype(dt).kind == "f":
        x = (rng.standard_normal(n) * 8).astype(dt)
        if special and n >= 8:
            x[rng.integers(0, n, 4)] = [np.nan, np.inf, -np.inf, -0.0]
        return x
    if np.dtype(dt).kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)


# sizes around the staging block (2048 float64 / 4096 float32 / 16384 bytes
# of one-byte outputs), whole cache lines (64 elements) and short tails
SIZES = [1, 7, 63, 64, 65, 511, 2047, 2048, 2049, 4095, 4096, 4097, 6211, 16383, 16384, 16385, 40009]


@pytest.mark.skipif(not HAVE_NT, reason="no streaming stores on this machine")
@pytest.mark.parametrize("dt", ["f8", "f4"])
def test_float_chain_every_boundary(streaming, dt):
    sets = [(values(dt, n, special=True), values(dt, n, 1)) for n in SIZES]
    plans = check("np.sqrt(np.maximum((x * y + 1.5) * 0.5 - x, 0.0)) + y", sets)
    assert streamed(plans) > 0


@pytest.mark.skipif(not HAVE_NT, reason="no streaming stores on this machine")
@pytest.mark.parametrize("dt", ["i1", "u2", "i4", "i8", "u8"])
def test_integers_wrap_and_divide(streaming, dt):
    sets = []
    for n in (65, 2049, 16385, 40009):
        x, y = values(dt, n), values(dt, n, 1)
        y[y == 0] = 3
        sets.append((x, y))
        y = y.copy()
        y[::7] = 0  # NumPy's integer division by zero: 0 and a warning
        sets.append((x, y))
    plans = check("x * y + x // y - (x % y)", sets)
    assert streamed(plans) > 0


@pytest.mark.skipif(not HAVE_NT, reason="no streaming stores on this machine")
def test_several_outputs_of_different_item_sizes(streaming):
    """Outputs of 8, 1, 1 and 4 bytes: one staging area each, the later ones
    copied out from mid-line starts."""
    sets = [(values("f8", n, special=True), values("f8", n, 2)) for n in (3, 64, 2047, 2049, 8191, 20011)]
    plans = check("(x * 2.0 + y, x > y, (x * 3).astype(np.int8), (x - y).astype(np.float32))", sets)
    assert streamed(plans) > 0


@pytest.mark.skipif(not HAVE_NT, reason="no streaming stores on this machine")
def test_bool_output_and_scalar_inputs(streaming):
    sets = [(values("f4", n, special=True), np.float32(0.25)) for n in (1, 100, 16383, 16385, 50001)]
    plans = check("np.logical_and(x > y, x < 3.0) | np.isnan(x)", sets)
    assert streamed(plans) > 0


@pytest.mark.skipif(not HAVE_NT, reason="no streaming stores on this machine")
def test_fortran_order_and_broadcast_scalar(streaming):
    m = values("f8", 301 * 97).reshape(301, 97)
    sets = [(m.T, m.T * 0.5), (np.asfortranarray(m), np.asfortranarray(m)[::1])]
    plans = check("x * 3.0 - y + 1.0", sets)
    assert streamed(plans) > 0


@pytest.mark.skipif(not HAVE_NT, reason="no streaming stores on this machine")
def test_warnings_and_errstate_raise(streaming):
    """Invalid and divide flags are the kernel's as without streaming: the
    same warnings, and under errstate(all='raise') the same exception."""
    x = values("f8", 9001, special=True)
    y = values("f8", 9001, 3)
    y[::5] = 0.0
    check("np.sqrt(x) / y", [(x, y)])
    fn, cf, plans = compile_capturing("np.sqrt(x) / y", "x, y")
    with np.errstate(all="raise"):
        exp = outcome(fn, (x, y))
        got = outcome(cf, (x, y))
    assert exp[0][0] == "raise" and got[0][:2] == exp[0][:2]


@pytest.mark.skipif(not HAVE_NT, reason="no streaming stores on this machine")
@pytest.mark.parametrize("threads", [2, 3])
def test_threads(streaming, threads):
    old = _C.native_config()
    _C.native_config(threads=threads, thread_min=1000)
    try:
        sets = [(values("f8", n, special=True), values("f8", n, 4)) for n in (1000, 10007, 100003)]
        plans = check("(x * y + 1.0) * 0.5 - x", sets)
        assert streamed(plans) > 0
        sets = [(values("f4", n), values("f4", n, 5)) for n in (4099, 65537)]
        plans = check("(x * 2.0 + y, (x > y))", sets)
        assert streamed(plans) > 0
    finally:
        _C.native_config(threads=old[0], thread_min=old[1])


def test_not_streamed_below_the_threshold_or_with_reductions():
    """The default threshold is positive (half the last-level cache when the
    system tells it); small calls, reductions and strided groups use ordinary
    stores."""
    if HAVE_NT:
        assert _C.native_config()[3] > 0
    x = values("f8", 5000)
    plans = check("x * 2.0 + y", [(x, x)])
    assert plans and streamed(plans) == 0
    old = _C.native_config()
    if HAVE_NT:
        _C.native_config(stream_min=0)
    try:
        plans = check("np.sum(x * 2.0 + y)", [(x, x)])
        assert plans and streamed(plans) == 0
        m = values("f8", 100 * 60).reshape(100, 60)
        plans = check("x * 2.0 + y", [(m[:, ::2], m[:, 1::2])])
        assert plans and streamed(plans) == 0
    finally:
        if HAVE_NT:
            _C.native_config(stream_min=old[3])


def test_stream_min_validated():
    with pytest.raises(ValueError, match="stream_min must be >= 0"):
        _C.native_config(stream_min=-1)
    with pytest.raises(TypeError):
        _C.native_config(stream_min="big")


def test_huge_stream_min_never_streams():
    """stream_min near sys.maxsize: no overflow in the threshold test (it
    had turned streaming on for every run)."""
    import sys
    old = _C.native_config()
    try:
        x = values("f8", 3000)
        for sm in (2**62, sys.maxsize - 8, sys.maxsize):
            if HAVE_NT:
                _C.native_config(stream_min=sm)
            plans = check("x * 2.0 + y", [(x, x)])
            assert plans and streamed(plans) == 0
    finally:
        if HAVE_NT:
            _C.native_config(stream_min=old[3])


@pytest.mark.skipif(not HAVE_NT, reason="no streaming stores on this machine")
def test_thread_with_the_smallest_stack(streaming):
    """A Python thread with threading.stack_size(32768) runs a streamed call
    itself (one native thread): the staging buffer is not on its stack (a
    16 KiB stack buffer crashed it)."""
    import threading
    fn, cf, plans = compile_capturing("x * 2.0 + y", "x, y")
    x = values("f8", 20011)
    out = []
    old_threads = _C.native_config()[0]
    old_size = threading.stack_size(32768)
    try:
        _C.native_config(threads=1)
        t = threading.Thread(target=lambda: out.append(cf(x, x)))
        t.start()
        t.join()
    finally:
        threading.stack_size(old_size)
        _C.native_config(threads=old_threads)
    assert len(out) == 1
    same(out[0], fn(x, x))
    assert streamed([p for p in plans if isinstance(p, _C.NativePlan)]) > 0


@pytest.mark.skipif(not HAVE_NT, reason="no streaming stores on this machine")
def test_streamed_counts_kept_results_only(streaming):
    """A run whose kernel reports a condition NumPy must decide (integer
    division by zero) goes through NumPy: counted as a fallback, not as
    streamed."""
    x = values("i8", 5000)
    y = np.zeros(5000, dtype=np.int64)
    plans = check("x // y", [(x, y)])
    assert plans and sum(p.fallbacks for p in plans) > 0 and streamed(plans) == 0


def test_native_config_changes_nothing_on_error():
    old = _C.native_config()
    with pytest.raises(TypeError):
        _C.native_config(stream_min=0, threads="x")
    with pytest.raises(TypeError):
        _C.native_config(threads=3, thread_min="y")
    assert _C.native_config() == old


def test_environment_sets_the_threshold():
    """FRAMEJIT_NATIVE_STREAM_MIN (bytes) read at import; a non-number is ignored."""
    import os
    import subprocess
    import sys
    code = "from framejit import _C; print(_C.native_config()[3])"

    def read(value):
        env = dict(os.environ)
        env.pop("FRAMEJIT_NATIVE_STREAM_MIN", None)
        if value is not None:
            env["FRAMEJIT_NATIVE_STREAM_MIN"] = value
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        return int(out.stdout.strip())
    default = read(None)
    assert read("lots") == default and read("-5") == default
    if HAVE_NT:
        assert default > 0 and read("12345") == 12345 and read("0") == 0
    else:
        assert default == -1 and read("12345") == -1


def test_stream_width_selected_and_validated():
    """native_stream_width: the widest copy this CPU has (64 bytes with AVX-512F,
    32 with AVX) selected at import; a width selects the widest up to it (and
    back); an integer other than 16, 32 or 64 is a ValueError, anything else a
    TypeError, naming it, and changes nothing."""
    import os
    import subprocess
    import sys
    code = "from framejit import _C; print(_C.native_stream_width())"
    fresh = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                               env=dict(os.environ)).stdout)
    assert fresh == WIDEST
    width = _C.native_stream_width()
    try:
        if not HAVE_NT:
            assert width == 0 and _C.native_stream_width(64) == 0
            return
        assert WIDEST in (16, 32, 64)
        assert _C.native_stream_width(16) == 16 and _C.native_stream_width() == 16
        assert _C.native_stream_width(32) == min(WIDEST, 32)
        assert _C.native_stream_width(np.int64(64)) == WIDEST == _C.native_stream_width()
        for bad in (0, 8, 48, 128, -16, 2**70, np.int32(17)):
            with pytest.raises(ValueError, match=r"native_stream_width: width must be 16, 32 or 64 bytes, not"):
                _C.native_stream_width(bad)
            assert _C.native_stream_width() == WIDEST
        for bad in (True, 32.0, "64", b"x"):
            with pytest.raises(TypeError):
                _C.native_stream_width(bad)
            assert _C.native_stream_width() == WIDEST
    finally:
        if HAVE_NT:
            _C.native_stream_width(width)


@pytest.mark.skipif(not HAVE_NT, reason="no streaming stores on this machine")
@pytest.mark.parametrize("width", [16, 32, 64])
def test_stream_copy_every_alignment(width):
    """The streaming copy at each width, to every destination offset in a
    cache line and lengths around the store widths: the whole-unit stores,
    the ordinary head (up to the first aligned unit, capped at the length)
    and tail, and nothing outside the destination touched."""
    if width > WIDEST:
        pytest.skip(f"no {width}-byte streaming stores on this CPU")
    old = _C.native_stream_width()
    try:
        assert _C.native_stream_width(width) == width
        rng = np.random.default_rng(width)
        lengths = [0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 200, 1000, 4096 + 37]
        buf = bytearray(64 * 3 + max(lengths) + 64)
        base = np.frombuffer(buf, np.uint8).ctypes.data
        for offset in range(64):
            start = (-base) % 64 + 64 + offset
            for n in lengths:
                src = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
                buf[:] = b"\xa5" * len(buf)
                assert _C._testing.native_stream_copy(memoryview(buf)[start:start + n], src) is True
                assert (base + start) % 64 == offset
                assert buf[start:start + n] == src, (offset, n)
                assert buf[:start] == b"\xa5" * start and buf[start + n:] == b"\xa5" * (len(buf) - start - n)
    finally:
        _C.native_stream_width(old)


def test_stream_copy_arguments():
    with pytest.raises(ValueError, match="dst has 3 bytes, src 4"):
        _C._testing.native_stream_copy(bytearray(3), b"abcd")
    with pytest.raises(TypeError):
        _C._testing.native_stream_copy(b"abc", b"abc")  # dst read-only
