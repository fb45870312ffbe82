"""Comparing a compiled function's outcome with plain NumPy's, for the
native-backend tests (test_native*.py): values bit for bit (NaN payloads
aside), type, dtype, shape, memory order, and the warnings raised."""
import warnings

import numpy as np


def _bits_equal(a, b):
    """Bit-for-bit equality of two arrays of the same dtype (NaN == NaN of any payload)."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.dtype.kind == "f":
        na, nb = np.isnan(a), np.isnan(b)
        if not np.array_equal(na, nb):
            return False
        u = np.dtype(f"u{a.dtype.itemsize}")
        return np.array_equal(np.ascontiguousarray(a).view(u)[~na], np.ascontiguousarray(b).view(u)[~nb])
    return np.array_equal(a, b)


def same(got, exp, path="result"):
    assert type(got) is type(exp), f"{path}: type {type(got).__name__} != {type(exp).__name__}"
    if isinstance(exp, (tuple, list)):
        assert len(got) == len(exp)
        for i, (g, e) in enumerate(zip(got, exp)):
            same(g, e, f"{path}[{i}]")
        return
    if isinstance(exp, (np.ndarray, np.generic)):
        assert got.dtype == exp.dtype, f"{path}: dtype {got.dtype} != {exp.dtype}"
        assert got.shape == exp.shape, f"{path}: shape {got.shape} != {exp.shape}"
        if isinstance(exp, np.ndarray):
            assert got.flags.c_contiguous == exp.flags.c_contiguous, f"{path}: C order differs"
            assert got.flags.f_contiguous == exp.flags.f_contiguous, f"{path}: F order differs"
            if exp.size:
                assert got.strides == exp.strides, f"{path}: strides {got.strides} != {exp.strides}"
        assert _bits_equal(got, exp), f"{path}: values differ:\n{got!r}\n{exp!r}"
        return
    assert got == exp or (got != got and exp != exp), f"{path}: {got!r} != {exp!r}"


def outcome(fn, args):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = ("ok", fn(*args))
        except Exception as e:  # noqa: BLE001 - compared with NumPy's
            r = ("raise", type(e), str(e))
    return r, sorted((x.category.__name__, str(x.message)) for x in w)
