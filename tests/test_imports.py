"""import statements inside compiled functions (IMPORT_NAME, IMPORT_FROM;
issue 21): a module already imported is what __import__ returns without
running anything, its sys.modules entry guarded by identity; anything else
(a module not imported yet, a relative import, a replaced __import__, a
'from' name that would import a submodule) runs in CPython with the reason
logged.  Every function is compared with plain CPython."""
import builtins
import sys

import numpy as np
import pytest

import framejit

from difftools import check_differential, outcome, same


def imports_numpy(x):
    import numpy as np
    return np.tanh(x) * 2


def imports_from(x):
    from numpy import sin, cos
    return sin(x) + cos(x)


def imports_dotted(x):
    import numpy.linalg
    return numpy.linalg.norm(x) + x


def imports_dotted_from(x):
    from numpy.linalg import norm
    return x / norm(x)


def imports_then_breaks(x):
    import numpy as np
    y = np.exp(x)
    print("", end="")          # a graph break: the resume function gets np from sys.modules
    return np.log(y) + np.sqrt(x)


def imports_os_path(x):
    import os.path
    return x + len(os.path.sep)


def imports_missing_name(x):
    from numpy import no_such_name_here  # noqa: F401  (ImportError, as CPython raises it)
    return x


@pytest.mark.parametrize("fn", [imports_numpy, imports_from, imports_dotted, imports_dotted_from,
                                imports_then_breaks, imports_os_path, imports_missing_name])
def test_imports_equal_plain(fn):
    check_differential(fn, [(np.arange(1.0, 5.0),), (np.linspace(0.5, 2, 7),)],
                       expect_graph=fn is not imports_missing_name)


def _reasons(fn, *args):
    framejit.reset()
    outcome(framejit.compile(fn, backend="eager"), args)
    return list(framejit.counters["graph_break"])


def imports_random(x):
    from numpy.random import rand
    import numpy.random
    return x + rand(3) + numpy.random.rand(3)


def test_imported_module_is_one_graph_with_guards():
    framejit.reset()
    cf = framejit.compile(imports_random, backend="eager")
    np.random.seed(4)
    got = cf(np.ones(3))
    np.random.seed(4)
    same(got, imports_random(np.ones(3)))
    assert framejit.counters["stats"]["unique_graphs"] == 1 and not framejit.counters["graph_break"]
    text = str(framejit.explain(imports_random)(np.ones(3)))
    assert "ID_MATCH: ___check_obj_id(sys.modules['numpy.random']" in text
    assert "ID_MATCH: ___check_obj_id(G['__builtins__']['__import__']" in text


def test_module_not_imported_yet_runs_in_cpython():
    name = "framejit_test_fresh_module"
    sys.modules.pop(name, None)

    def fn(x):
        import framejit_test_fresh_module  # noqa: F401  (ModuleNotFoundError: CPython's)
        return x + 1
    out = outcome(framejit.compile(fn, backend="eager"), (np.ones(2),))
    assert out[0] == "raise" and out[1] is ModuleNotFoundError
    assert "json.tool" not in sys.modules
    assert any("json.tool, which is not imported yet" in r for r in _reasons(imports_fresh, np.ones(2)))


def imports_fresh(x):
    import json.tool  # noqa: F401  (json.tool is not imported by the suite before this)
    return x + 1


def test_relative_and_replaced_import_run_in_cpython(monkeypatch):
    framejit.reset()
    out = outcome(framejit.compile(_relative, backend="eager"), (np.ones(2),))
    assert out[:2] == outcome(_relative, (np.ones(2),))[:2]
    assert any("relative import" in r for r in framejit.counters["graph_break"])
    real = builtins.__import__
    calls = []

    def spy(*a, **k):
        calls.append(a[0])
        return real(*a, **k)
    monkeypatch.setattr(builtins, "__import__", spy)
    framejit.reset()
    cf = framejit.compile(imports_numpy, backend="eager")
    same(cf(np.ones(3)), imports_numpy(np.ones(3)))
    assert calls.count("numpy") == 2          # the replaced __import__ ran for both calls
    assert any("replaced __import__" in r for r in framejit.counters["graph_break"])


def _relative(x):
    from . import difftools  # noqa: F401
    return x


def test_sys_modules_entry_replaced_recompiles():
    import types
    fake = types.ModuleType("framejit_test_swap")
    fake.scale = lambda x: x * 2
    sys.modules["framejit_test_swap"] = fake

    def fn(x):
        import framejit_test_swap
        return framejit_test_swap.scale(x) + 1
    try:
        framejit.reset()
        cf = framejit.compile(fn, backend="eager")
        same(cf(np.ones(3)), np.full(3, 3.0))
        other = types.ModuleType("framejit_test_swap")
        other.scale = lambda x: x * 10
        sys.modules["framejit_test_swap"] = other
        same(cf(np.ones(3)), np.full(3, 11.0))     # the guard on sys.modules[...] failed
        del sys.modules["framejit_test_swap"]
        out = outcome(cf, (np.ones(3),))             # gone: CPython's ModuleNotFoundError
        assert out[0] == "raise" and out[1] is ModuleNotFoundError
    finally:
        sys.modules.pop("framejit_test_swap", None)


def test_a_module_getattr_is_not_run_by_the_compiled_code():
    """Reloading an imported module for a resume function reads sys.modules
    as it is: a module's __getattr__ (PEP 562) sees what it sees plain."""
    import types
    m = types.ModuleType("framejit_test_lazy")
    m.calls = []
    m.arr = np.arange(3.0)

    def __getattr__(name):
        m.calls.append(name)
        raise AttributeError(name)
    m.__getattr__ = __getattr__
    sys.modules["framejit_test_lazy"] = m

    def fn(x):
        import framejit_test_lazy as lz
        y = x + lz.arr
        print("", end="")                    # a break: the resume function reloads the module
        return y * lz.arr
    try:
        framejit.reset()
        cf = framejit.compile(fn, backend="eager")
        for _ in range(3):
            same(cf(np.ones(3)), fn(np.ones(3)))
        assert m.calls == []
    finally:
        sys.modules.pop("framejit_test_lazy", None)
