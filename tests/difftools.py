"""Shared helpers for differential tests: run compiled and plain, compare exactly."""
import numpy as np

import framejit


def same(a, b, path="result"):
    """Asserts a and b are equal bit for bit: type, dtype, shape, values (NaN == NaN)."""
    assert type(a) is type(b), f"{path}: type {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype, f"{path}: dtype {a.dtype} != {b.dtype}"
        assert a.shape == b.shape, f"{path}: shape {a.shape} != {b.shape}"
        assert np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"), f"{path}: values differ"
        return
    if isinstance(a, np.generic):
        assert a.dtype == b.dtype, f"{path}: dtype {a.dtype} != {b.dtype}"
        assert (a == b) or (a != a and b != b), f"{path}: {a!r} != {b!r}"
        return
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b), f"{path}: len {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}[{i}]")
        return
    if isinstance(a, dict):
        assert list(a) == list(b), f"{path}: keys {list(a)} != {list(b)}"
        for k in a:
            same(a[k], b[k], f"{path}[{k!r}]")
        return
    if isinstance(a, float) and a != a:
        assert b != b
        return
    assert a == b, f"{path}: {a!r} != {b!r}"


def outcome(fn, args, kwargs=None):
    """('ok', value) or ('raise', type, str) of calling fn."""
    try:
        return ("ok", fn(*args, **(kwargs or {})))
    except Exception as e:  # noqa: BLE001 - we compare whatever CPython raises
        return ("raise", type(e), str(e))


def check_differential(fn, args_list, expect_graph=True, backend="eager"):
    """Runs fn compiled and plain on each args tuple (copies of the inputs), twice
    compiled (so the second is a cache hit), and compares results exactly."""
    framejit.reset()
    cf = framejit.compile(fn, backend=backend)
    for args in args_list:
        plain = outcome(fn, _copy(args))
        for _ in range(2):
            got = outcome(cf, _copy(args))
            assert got[0] == plain[0], f"{fn.__name__}{args!r}: {got} vs {plain}"
            if got[0] == "ok":
                same(got[1], plain[1])
            else:
                assert got[1:] == plain[1:]
    if expect_graph:
        stats = framejit.counters["stats"]
        assert stats["unique_graphs"] >= 1, (
            f"{fn.__name__}: no graph captured; not captured: "
            f"{dict(framejit.counters['unsupported'])}")


def check_with_inputs(fn, args_list, backend="eager"):
    """fn compiled (twice per argument tuple: the second a cache hit) against
    plain CPython on copies of each argument tuple, comparing the outcome
    (value, or exception type and message) and every input afterwards (item
    stores).  Returns framejit.counters."""
    framejit.reset()
    cf = framejit.compile(fn, backend=backend)
    for args in args_list:
        pa = _copy(args)
        plain = outcome(fn, pa)
        for _ in range(2):
            ca = _copy(args)
            got = outcome(cf, ca)
            assert got[0] == plain[0], f"{got} vs {plain}"
            if got[0] == "ok":
                same(got[1], plain[1])
            else:
                assert got[1:] == plain[1:]
            for i, (x, y) in enumerate(zip(ca, pa)):
                same(x, y, f"argument {i}")
    return framejit.counters


def native_loop_plans(fn, args):
    """The native plans compiling fn(*args) makes, after a call and a warm call
    (each compared with plain)."""
    from framejit import native
    plans = []
    framejit.reset()
    cf = framejit.compile(fn, backend=lambda g, ex: plans.append(native.backend(g, ex)) or plans[-1])
    for _ in range(2):
        same(cf(*_copy(args)), fn(*_copy(args)))
    return [p for p in plans if isinstance(p, framejit._C.NativePlan)]


def clone(a):
    """A copy of 'a' with its layout (strides, negative ones included, and
    read-only-ness; always aligned), so compiled and plain runs see the same memory order;
    ``a.copy()`` would make every input C-contiguous.  Non-arrays as they are."""
    if not isinstance(a, np.ndarray):
        return a
    if (type(a) is not np.ndarray or a.ndim == 0 or a.size == 0 or a.dtype.hasobject
            or a.flags.c_contiguous or a.flags.f_contiguous):
        out = a.copy(order="K")  # an ordinary array owning its data, same order
        if not a.flags.writeable and isinstance(out, np.ndarray):
            out.flags.writeable = False
        return out
    lo = sum(s * (n - 1) for s, n in zip(a.strides, a.shape) if s < 0)
    hi = sum(s * (n - 1) for s, n in zip(a.strides, a.shape) if s > 0) + a.itemsize
    buf = np.empty(hi - lo + 64, np.uint8)
    pad = -buf.ctypes.data % 64  # as aligned as a fresh NumPy array
    out = np.ndarray(a.shape, a.dtype, buffer=buf, offset=pad - lo, strides=a.strides)
    out[...] = a
    if not a.flags.writeable:
        out.flags.writeable = False
    return out


def _copy(args):
    return tuple(clone(a) for a in args)
