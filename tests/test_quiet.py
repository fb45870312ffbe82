"""Quiet regions and deep recursion (csrc/runtime/evalframe.c; docs/cpython-tests.md,
"Quiet regions"): codes that only run their own code, and everything they
call, run with the hook off the interpreter; code below them that starts
capturing is found by the periodic observed entry; deep recursion never
overflows the C stack because of the hook."""
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import framejit
from framejit import config, run
from framejit._C import eval_frame

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def whole_program():
    """This thread runs as under ``python -m framejit run`` (every frame offered)."""
    framejit.reset()
    old = config.skip_stdlib, config.warn_recompile_limit
    config.skip_stdlib = False
    config.warn_recompile_limit = False       # as `run` does
    calls = []

    def counting(gm, example_inputs):
        def fn(*args):
            calls.append(1)
            return gm(*args)
        return fn
    prev = eval_frame.set_eval_frame(run.make_compiler(counting))
    try:
        yield calls
    finally:
        eval_frame.set_eval_frame(prev)
        config.skip_stdlib, config.warn_recompile_limit = old
        framejit.reset()


STATE = {"x": None}


def leaf(x):
    if x is None:
        return 0.0
    return float((np.sin(x) + 1).sum())


def mid():
    return leaf(STATE["x"])


def top():
    return mid() + 1.0


def test_capture_below_a_quiet_code_is_found_by_an_observed_entry(whole_program):
    calls = whole_program
    STATE["x"] = None
    for _ in range(40):
        assert top() == 1.0                 # top and mid become quiet
    assert calls == []
    x = np.linspace(0, 1, 8)
    want = float((np.sin(x) + 1).sum()) + 1.0
    STATE["x"] = x
    results = [top() for _ in range(40)]
    assert results == [want] * 40           # identical, compiled or not
    # within one probe period (16 entries of top) leaf is offered with its
    # array, compiled, and taints mid and top: from then on every call runs
    # the graph
    assert 20 <= len(calls) <= 40, dict(framejit.counters["frames"])
    before = len(calls)
    for _ in range(10):
        top()
    assert len(calls) == before + 10


def pure(n):
    return n if n < 2 else pure(n - 1) + pure(n - 2)


def test_pure_recursion_is_not_compiled_and_correct(whole_program):
    for _ in range(3):
        assert pure(18) == 2584
    assert eval_frame._debug_get_cache_entry_list(pure.__code__) == []
    assert framejit.counters["frames"]["no_graph"] >= 1


def test_threads_with_callbacks_do_not_use_quiet_regions(whole_program):
    out = {}
    comp = run.make_compiler()

    def body(k):
        prev = eval_frame.set_eval_frame(comp)
        try:
            out[k] = [pure(12) for _ in range(20)]
        finally:
            eval_frame.set_eval_frame(prev)
    ts = [threading.Thread(target=body, args=(k,)) for k in range(3)]
    for t in ts:
        t.start()
    for _ in range(20):
        assert pure(12) == 144
    for t in ts:
        t.join()
    assert all(v == [144] * 20 for v in out.values())


_DEEP = """
import sys
sys.setrecursionlimit(300000)
def r(n):
    return 0 if n == 0 else 1 + r(n - 1)
print(r(200000))
"""


def _script(tmp_path, program, pre=(), timeout=300):
    """(returncode, stdout, stderr tail) of 'program' run as a script with
    'pre' after the interpreter (e.g. -m framejit run)."""
    script = tmp_path / "prog.py"
    script.write_text(program)
    r = subprocess.run([sys.executable, *pre, str(script)], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=_ROOT), timeout=timeout)
    return r.returncode, r.stdout, r.stderr[-2000:]


def _run_both(tmp_path, program):
    """The script's result under python and under python -m framejit run."""
    return [_script(tmp_path, program, pre) for pre in ((), ("-m", "framejit", "run"))]


def test_deep_recursion_does_not_overflow_the_c_stack(tmp_path):
    # with a hook every Python call nests a C activation; CPython alone
    # inlines them.  The hook steps aside once half the C stack is used.
    # (NumPy imported: without it the hook is dormant, off the interpreter.)
    plain, run = _run_both(tmp_path, "import numpy\n" + _DEEP)
    assert plain[:2] == run[:2] == (0, "200000\n")


_DEEP_THREADED = """
import sys, threading
sys.setrecursionlimit(100000)
ev = threading.Event()
t = threading.Thread(target=ev.wait)
t.start()                               # run mode gives this thread a callback too
def r(n):
    return 0 if n == 0 else 1 + r(n - 1)
print(r(900), r(60000))
ev.set()
t.join()
"""


def test_deep_recursion_with_another_thread_alive(tmp_path):
    # the hook stepped aside for deep recursion only while one thread had a
    # callback: with a second live thread, run mode overflowed the C stack
    # (3.11, depth 20000) or raised RecursionError where plain Python does
    # not (3.12: depth 750 at the default limit, under its C recursion budget)
    plain, run = _run_both(tmp_path, "import numpy\n" + _DEEP_THREADED)
    assert plain[:2] == run[:2] == (0, "900 60000\n")


def deep_sum(n, x):
    return x.sum() if n == 0 else deep_sum(n - 1, x)


@pytest.mark.filterwarnings("ignore:framejit. deep_sum:RuntimeWarning")
def test_deep_recursion_with_arrays_under_compile():
    framejit.reset()
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(120000)
    try:
        x = np.ones(3)
        assert framejit.compile(deep_sum)(100000, x) == 3.0
    finally:
        sys.setrecursionlimit(old)
        framejit.reset()


def helper(i):
    return i * 2


def array_step(x):
    if x is None:
        return 0
    return np.sin(x) + 1


def array_step_compiled():
    return bool(eval_frame._debug_get_cache_entry_list(array_step.__code__))


def long_loop(n_pure, limit):
    sys.intern("long_loop")     # a break before any array: the frame runs its own code
    for i in range(n_pure):
        helper(i)               # 256 clean callee returns: the hook steps aside
    x = STATE["x"]
    deadline = time.monotonic() + limit
    n = 0
    while True:
        array_step(x)           # hidden until the timer puts the hook back
        n += 1
        if array_step_compiled() or time.monotonic() > deadline:
            return n


def test_quiet_tail_is_observed_again_after_the_timer(whole_program):
    calls = whole_program
    STATE["x"] = None
    long_loop(10, 0)                         # first call: offered, traced, nothing captured
    assert not array_step_compiled()
    x = STATE["x"] = np.linspace(0, 1, 4)
    n = long_loop(1000, 30.0)
    assert array_step_compiled(), "array_step was never offered inside the quiet tail"
    assert n >= 1
    # once array_step captured, long_loop is tainted: every later call compiled
    before = len(calls)
    for _ in range(5):
        assert np.array_equal(long_loop(1000, 0) and array_step(x), np.sin(x) + 1)
    assert len(calls) >= before + 5


# ---------------------------------------------------------------- review fixes
# Programs run under `python -m framejit run`, compared with plain Python.

_COMPILED_IN_REGION = """
import numpy as np, framejit
calls = []
def backend(gm, example_inputs):
    calls.append(1)
    return gm
@framejit.compile(backend=backend)
def g(x):
    return x * 2 + 1
def f(use):
    if use:
        return g(np.ones(3))
    return 0
def main():
    for i in range(400):       # f quiet, main's tail quiet
        f(False)
    f(True)
main()
for i in range(300):
    f(False)
f(True)
print("backend calls:", len(calls))
"""


def test_compiled_function_inside_a_quiet_region_is_compiled(tmp_path):
    # setting a callback (the framejit.compile wrapper) steps the hook back on
    plain, run = _run_both(tmp_path, _COMPILED_IN_REGION)
    assert plain[:2] == run[:2] == (0, "backend calls: 1\n")


_LAZY_NUMPY = """
import importlib.util, sys
spec = importlib.util.find_spec("numpy")
loader = importlib.util.LazyLoader(spec.loader)
spec.loader = loader
module = importlib.util.module_from_spec(spec)
sys.modules["numpy"] = module
loader.exec_module(module)
def f():
    return 1
for i in range(50):
    f()
print("numpy really loaded:", "numpy._core.multiarray" in sys.modules)
"""


def test_lazily_imported_numpy_is_not_loaded_by_framejit(tmp_path):
    plain, run = _run_both(tmp_path, _LAZY_NUMPY)
    assert plain[:2] == run[:2] == (0, "numpy really loaded: False\n")


_CHAINED = """
import ctypes, sys
from framejit._C import eval_frame
from framejit import run
import framejit
framejit.config.skip_stdlib = False
seen = []
def pure(n):
    return n + 1
def loop(k):
    t = 0
    for i in range(k):
        t += pure(i)
    return t
prev = eval_frame.set_eval_frame(run.make_compiler())
try:
    for _ in range(50):
        loop(400)             # regions and tails step the hook aside and back
    get = ctypes.pythonapi._PyInterpreterState_GetEvalFrameFunc
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.c_void_p]
    interp = ctypes.pythonapi.PyInterpreterState_Get
    interp.restype = ctypes.c_void_p
    print("hook on while a callback is set:", get(interp()) != ctypes.cast(
        ctypes.pythonapi._PyEval_EvalFrameDefault, ctypes.c_void_p).value)
finally:
    eval_frame.set_eval_frame(prev)
print(loop(10))
"""


def test_hook_is_back_on_after_regions_and_tails(tmp_path):
    rc, out, err = _script(tmp_path, _CHAINED)
    assert (rc, out) == (0, "hook on while a callback is set: True\n55\n"), err


_EQUALS_BEFORE_NUMPY = """
import sys
from framejit import _C
try:
    _C.RootGuardManager().local(0, "x").add_equals_match((object(),))
except TypeError as e:
    print("TypeError", "numpy" in sys.modules)
"""


def test_guard_builders_work_before_numpy_is_loaded(tmp_path):
    rc, out, err = _script(tmp_path, _EQUALS_BEFORE_NUMPY)
    assert (rc, out) == (0, "TypeError False\n"), err


_FORK_FROM_TAIL = """
import os, sys
import numpy as np
def helper(i):
    return i
def step(x):
    return np.sin(x) + 1
def main():
    sys.intern("main")
    for i in range(2000):
        helper(i)              # main's tail goes quiet: the hook steps aside
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        from framejit._C import eval_frame
        x = np.ones(3)
        for _ in range(3):
            step(x)
        os.write(w, b"1" if eval_frame._debug_get_cache_entry_list(step.__code__) else b"0")
        os._exit(0)
    os.waitpid(pid, 0)
    print("ok", os.read(r, 1).decode())
main()
"""


def test_fork_from_a_quiet_tail(tmp_path):
    # the child does not return to the frame that stepped aside: the fork
    # handler puts the hook back, so the child's array code is compiled
    plain, run = _run_both(tmp_path, _FORK_FROM_TAIL)
    assert plain[:2] == (0, "ok 0\n")
    assert run[:2] == (0, "ok 1\n"), run


def test_timer_thread_with_tracemalloc_on(tmp_path):
    # the timer's thread state was made with PyGILState_Ensure on the timer
    # thread: its allocation went through tracemalloc's hook without the GIL
    # and crashed CPython's own test_tracemalloc under run --preload=numpy
    # (when the timer fired while tracemalloc traced: timing-dependent, so
    # this exercises the path rather than reproducing the crash each run)
    pytest.importorskip("test.test_tracemalloc")
    env = dict(os.environ, PYTHONPATH=_ROOT)
    r = subprocess.run([sys.executable, "-m", "framejit", "run", "--preload=numpy", "-m", "test",
                        "test_tracemalloc"], capture_output=True, text=True, env=env,
                       timeout=600, cwd=str(tmp_path))
    assert r.returncode == 0 and "Result: SUCCESS" in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]
