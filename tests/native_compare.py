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


def same_outcomes(fn, cf, arg_sets, label, clone):
    """Each argument set: the compiled function's outcome, on a first and a
    warm call, equals the plain function's (value or exception, warnings).
    Inputs are copied with 'clone' (tests/difftools.py) for every call."""
    for args in arg_sets:
        exp = outcome(fn, [clone(a) for a in args])
        for _ in range(2):
            got = outcome(cf, [clone(a) for a in args])
            assert got[0][0] == exp[0][0], f"{label}{tuple(map(repr, args))}: {got} vs {exp}"
            if exp[0][0] == "ok":
                same(got[0][1], exp[0][1])
            else:
                assert got[0][1:] == exp[0][1:]
            assert got[1] == exp[1], f"{label}: warnings {got[1]} vs NumPy {exp[1]}"


_cases = [0]


def capturing_backend():
    """(the list the native backend's plans go into, a backend putting them there)."""
    plans = []

    def capture(graph, example_inputs):
        from framejit import native
        p = native.backend(graph, example_inputs)
        plans.append(p)
        return p
    return plans, capture


def compile_capturing(expr, params, tag="case", body=False):
    """(plain function, native-compiled function, the list the backend's
    plans go into) for a function of 'params' returning 'expr' (NumPy as
    np; with body=True 'expr' is the function's body, lines); each call
    makes a new function (its own code object), after framejit.reset()."""
    import framejit
    _cases[0] += 1
    name = f"{tag}_{_cases[0]}"
    lines = expr.strip().splitlines() if body else [f"return {expr}"]
    src = f"def {name}({params}):\n" + "".join(f"    {ln}\n" for ln in lines)
    ns = {"np": np}
    exec(compile(src, f"<{tag} {_cases[0]}: {lines[-1]}>", "exec"), ns)
    fn = ns[name]
    plans, capture = capturing_backend()
    framejit.reset()
    return fn, framejit.compile(fn, backend=capture), plans
