"""The dormant hook (csrc/runtime/evalframe.c, "Dormant"; framejit/run.py):
under ``python -m framejit run`` the hook is off the interpreter until the
program imports NumPy or torch, so a program without arrays runs exactly as
under ``python`` (CPython specializes Python-to-Python calls, which it does
not do while any PEP 523 hook is set); the import wakes it, and array code
after it is compiled."""
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The interpreter's frame-evaluation function, read with ctypes: 'default'
# when it is CPython's own, 'hook' otherwise.
_EVAL_FUNC = """
import ctypes
from framejit import _C
def eval_func():
    get = ctypes.pythonapi._PyInterpreterState_GetEvalFrameFunc
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.c_void_p]
    interp = ctypes.pythonapi.PyInterpreterState_Get
    interp.restype = ctypes.c_void_p
    default = ctypes.cast(ctypes.pythonapi._PyEval_EvalFrameDefault, ctypes.c_void_p).value
    return "default" if get(interp()) == default else "hook"
"""


def _run(tmp_path, program, *pre, plain=False):
    script = tmp_path / "prog.py"
    script.write_text(_EVAL_FUNC + textwrap.dedent(program))
    cmd = [sys.executable] + ([] if plain else ["-m", "framejit", "run", *pre]) + [str(script)]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=str(tmp_path), timeout=120,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    return r.returncode, r.stdout, r.stderr[-3000:]


def test_no_array_library_no_hook(tmp_path):
    rc, out, err = _run(tmp_path, """
        from framejit._C import eval_frame
        def f(n):
            return eval_func()
        print(f(1), _C._dormant())
    """)
    assert (rc, out) == (0, "default True\n"), err


_SPECIALIZED = """
import dis
def callee(i, j=1):
    return i + j
def loop():
    for i in range(20):
        callee(i)
loop()
print(sorted({i.opname for i in dis.get_instructions(loop, adaptive=True)
              if i.opname.startswith("CALL")}))
"""


def test_python_calls_are_specialized_as_under_python(tmp_path):
    # test_dis's test_loop_quicken: CPython specializes a Python call only
    # while no PEP 523 hook is set
    plain = _run(tmp_path, _SPECIALIZED, plain=True)
    run = _run(tmp_path, _SPECIALIZED)
    assert plain[:2] == run[:2], run[2]
    # the specialized form's name per version (3.13: CALL_PY_GENERAL)
    assert "CALL_PY_WITH_DEFAULTS" in plain[1] or "CALL_PY_GENERAL" in plain[1]


def test_import_inside_the_program_wakes_the_hook(tmp_path):
    rc, out, err = _run(tmp_path, """
        from framejit._C import eval_frame
        print(eval_func(), _C._dormant())
        def late():
            import numpy as np
            return np
        np = late()
        print(eval_func(), _C._dormant())
        def step(x):
            return np.sin(x) * 2 + 1
        x = np.arange(4.0)
        for _ in range(3):
            y = step(x)
        print(bool(eval_frame._debug_get_cache_entry_list(step.__code__)), y.round(3).tolist())
    """)
    assert rc == 0, err
    assert out.splitlines() == ["default True", "hook False",
                                "True [1.0, 2.683, 2.819, 1.282]"]


def test_a_submodule_import_wakes_the_hook(tmp_path):
    # importlib's LazyLoader puts 'numpy' in sys.modules without an import;
    # its package body imports numpy._core, which wakes the hook
    rc, out, err = _run(tmp_path, """
        import importlib.util, sys
        from framejit._C import eval_frame
        spec = importlib.util.find_spec("numpy")
        spec.loader = importlib.util.LazyLoader(spec.loader)
        np = importlib.util.module_from_spec(spec)
        sys.modules["numpy"] = np
        spec.loader.exec_module(np)
        print(_C._dormant())
        np.float64   # runs numpy/__init__.py
        print(_C._dormant(), eval_func())
    """)
    assert (rc, out) == (0, "True\nFalse hook\n"), err


def test_preloaded_numpy_means_no_dormancy(tmp_path):
    rc, out, err = _run(tmp_path, """
        from framejit._C import eval_frame
        def f():
            return eval_func()
        print(f(), _C._dormant())
    """, "--preload=numpy")
    assert (rc, out) == (0, "hook False\n"), err


def test_threads_started_while_dormant_see_the_wake(tmp_path):
    rc, out, err = _run(tmp_path, """
        import threading
        from framejit._C import eval_frame
        seen = []
        ready, go = threading.Event(), threading.Event()
        def worker():
            seen.append(eval_func())
            ready.set()
            go.wait()
            import numpy as np          # wakes the hook for every thread
            def step(x):
                return np.cos(x) + 1
            for _ in range(3):
                r = step(np.zeros(3))
            seen.append((eval_func(), r.tolist(),
                         bool(eval_frame._debug_get_cache_entry_list(step.__code__))))
        t = threading.Thread(target=worker)
        t.start()
        ready.wait()
        seen.append(eval_func())
        go.set()
        t.join()
        seen.append(eval_func())
        print(seen)
    """)
    assert rc == 0, err
    assert out == "['default', 'default', ('hook', [2.0, 2.0, 2.0], True), 'hook']\n"


def test_compiled_function_wakes_the_hook(tmp_path):
    # framejit.compile in a program under run: its callback must see frames
    rc, out, err = _run(tmp_path, """
        import framejit
        from framejit._C import eval_frame
        calls = []
        def backend(gm, example_inputs):
            calls.append(1)
            return gm
        print(_C._dormant())
        @framejit.compile(backend=backend)
        def g(x):
            return x * 2
        def h():
            import numpy as np   # after the wake: numpy imported under the hook
            return g(np.ones(2)).tolist()
        print(h(), _C._dormant(), len(calls))
    """)
    assert (rc, out) == (0, "True\n[2.0, 2.0] False 1\n"), err


def test_program_audit_hooks_see_what_they_see_under_python(tmp_path):
    program = """
        import sys
        events = []
        def hook(event, args):
            if event in ("import", "sys.addaudithook", "my.event"):
                events.append((event, args[0] if args else None))
        sys.addaudithook(hook)
        import colorsys, numpy
        sys.audit("my.event", 1)
        print([e for e in events if e[0] != "import" or e[1] in ("colorsys", "numpy")])
    """
    plain = _run(tmp_path, program, plain=True)
    run = _run(tmp_path, program)
    assert plain[:2] == run[:2], run[2]
    assert plain[1] == ("[('import', 'colorsys'), ('import', 'numpy'), ('my.event', 1)]\n"), plain


def test_run_twice_in_one_process(tmp_path):
    # the import watcher leaves the runtime's hook list when it wakes and
    # goes back in (the same entry) for the next run
    (tmp_path / "inner.py").write_text(textwrap.dedent("""
        from framejit import _C
        import sys
        print("inner", _C._dormant(), "numpy" in sys.modules)
    """))
    rc, out, err = _run(tmp_path, """
        import sys
        from framejit import run
        from framejit._C import eval_frame
        # this program is the outer run: dormant; the inner runs nest
        print("outer", _C._dormant())
    """)
    assert (rc, out) == (0, "outer True\n"), err
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(f"""
        import sys
        from framejit import run, _C
        run.main([{str(tmp_path / 'inner.py')!r}])
        run.main([{str(tmp_path / 'inner.py')!r}])
        print("after", _C._dormant())
        import numpy
        run.main([{str(tmp_path / 'inner.py')!r}])
    """))
    r = subprocess.run([sys.executable, str(driver)], capture_output=True, text=True,
                       cwd=str(tmp_path), timeout=120, env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.splitlines() == ["inner True False", "inner True False", "after False",
                                     "inner False True"]


@pytest.mark.parametrize("names", [("",), ("numpy", 3), "numpy"])
def test_sleep_until_import_rejects_bad_names(names):
    from framejit import _C
    with pytest.raises(TypeError, match="_sleep_until_import"):
        _C._sleep_until_import(None, names)
