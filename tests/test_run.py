"""python -m framejit run: a whole program with every frame offered to framejit
(framejit/run.py).  Each test runs a small program in a subprocess and
compares with plain ``python``."""
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _env():
    return dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _run(args, cwd, framejit=True):
    pre = [sys.executable, "-m", "framejit", "run"] if framejit else [sys.executable]
    return subprocess.run(pre + list(args), capture_output=True, text=True, cwd=cwd,
                          env=_env(), timeout=120)


BREAKS = """
import sys
import numpy as np

def f(x, n):
    y = np.sin(x) * n
    print("mid", len(sys.argv))          # a graph break
    return y + 1

def g(xs):
    total = 0
    for v in xs:
        total = total + v
    return total

print(f(np.arange(4.0), 3).tolist())
print(g([1, 2, 3]), sys.argv[1:], __name__)
"""


@pytest.fixture
def prog(tmp_path):
    def write(src, name="prog.py"):
        p = tmp_path / name
        p.write_text(textwrap.dedent(src))
        return p
    return write


def test_script_output_and_argv_match_python(prog, tmp_path):
    p = prog(BREAKS)
    plain = _run([str(p), "a", "-x"], tmp_path, framejit=False)
    jit = _run([str(p), "a", "-x"], tmp_path)
    assert plain.returncode == jit.returncode == 0, jit.stderr
    assert jit.stdout == plain.stdout
    assert "['a', '-x'] __main__" in jit.stdout


def test_summary_counts_graphs_and_breaks(prog, tmp_path):
    p = prog(BREAKS)
    r = _run(["--summary", str(p)], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "framejit summary:" in r.stderr
    stats = {}
    for line in r.stderr.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            stats[parts[0]] = int(parts[1])
    assert stats["frames_offered"] > 0
    assert stats["unique_graphs"] >= 1
    assert stats["frames_compiled"] >= 1
    assert stats["frames_broken"] >= 1
    assert "graph break reasons" in r.stderr
    assert "print" in r.stderr          # the break at print() is listed with its reason


RANKED = """
import json
import numpy as np

def helper(x):
    print("helper", float(x.sum()))
    return x * 2

def step(x):
    y = np.sin(x) + 1
    if y.sum() > 0:
        y = y * 2
    return helper(y)

def quiet(x):
    return np.cos(x) * 2

for i in range(3):
    step(np.ones(4 + i))
    quiet(np.ones(3))
json.dumps({"a": [1, 2]})
"""


def _ranking(stderr):
    """{function name: (breaks, graphs, compiles)} of --summary's ranking, in order."""
    out, on = {}, False
    for line in stderr.splitlines():
        if "by graph breaks, graphs and compile time" in line:
            on = True
            continue
        parts = line.split()
        if on and len(parts) >= 6 and parts[0].isdigit() and parts[1].isdigit():
            out[parts[4]] = (int(parts[0]), int(parts[1]), int(parts[2]))
    return out


def test_summary_ranks_the_programs_own_functions(prog, tmp_path):
    """--summary ranks the program's functions by breaks, graphs and compile
    time, each with its most frequent break reason; the standard library's
    and site-packages' only with --summary=all."""
    p = prog(RANKED)
    r = _run(["--summary", str(p)], tmp_path)
    assert r.returncode == 0, r.stderr
    ranked = _ranking(r.stderr)
    assert list(ranked)[:2] == ["helper", "step"], r.stderr   # most breaks first
    assert set(ranked) == {"helper", "step", "quiet"}, ranked   # json's functions are not listed
    assert ranked["helper"][0] >= 3 and ranked["quiet"][:2] == (0, 1)
    assert "x call of print is not supported" in r.stderr
    assert "library functions not shown: --summary=all" in r.stderr
    every = _run(["--summary=all", str(p)], tmp_path)
    assert every.returncode == 0, every.stderr
    assert "all functions by graph breaks" in every.stderr and "json" in every.stderr.split("all functions")[1]
    assert {"helper", "step", "quiet"} <= set(_ranking(every.stderr))


def test_no_summary_without_flag(prog, tmp_path):
    r = _run([str(prog(BREAKS))], tmp_path)
    assert r.returncode == 0 and "framejit summary" not in r.stderr


@pytest.mark.parametrize("code, status", [("sys.exit(3)", 3), ("sys.exit(0)", 0),
                                          ("raise SystemExit('bye')", 1), ("pass", 0)])
def test_exit_status_passes_through(prog, tmp_path, code, status):
    p = prog(f"import sys\nprint('before')\n{code}\n")
    plain = _run([str(p)], tmp_path, framejit=False)
    jit = _run(["--summary", str(p)], tmp_path)
    assert plain.returncode == jit.returncode == status
    assert jit.stdout == plain.stdout == "before\n"
    if code.startswith("raise"):
        assert "bye" in jit.stderr


def test_uncaught_exception_traceback_and_status(prog, tmp_path):
    p = prog("""
        def boom(n):
            return 1 // n

        boom(0)
        """)
    plain = _run([str(p)], tmp_path, framejit=False)
    jit = _run([str(p)], tmp_path)
    assert plain.returncode == jit.returncode == 1
    assert jit.stderr.startswith("Traceback (most recent call last):")
    assert "ZeroDivisionError: integer division or modulo by zero" in jit.stderr
    assert "framejit/run.py" not in jit.stderr and "runpy" not in jit.stderr
    assert f'File "{p}", line 5, in <module>' in jit.stderr


def test_module_mode(prog, tmp_path):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "tool.py").write_text(textwrap.dedent("""
        import sys
        import numpy as np
        def work(a):
            return (np.cos(a) + 1).sum()
        if __name__ == "__main__":
            print(sys.argv[0].endswith("tool.py"), sys.argv[1:], float(work(np.zeros(3))))
            sys.exit(int(sys.argv[1]))
        """))
    plain = subprocess.run([sys.executable, "-m", "mypkg.tool", "4"], capture_output=True,
                           text=True, cwd=tmp_path, env=_env(), timeout=120)
    jit = _run(["-m", "mypkg.tool", "4"], tmp_path)
    assert plain.returncode == jit.returncode == 4, jit.stderr
    assert jit.stdout == plain.stdout == "True ['4'] 6.0\n"


def test_threads_are_covered(prog, tmp_path):
    p = prog("""
        import threading
        import numpy as np
        import framejit
        out = []
        def work(a):
            return np.sin(a) * 2
        t = threading.Thread(target=lambda: out.append(work(np.ones(3)).tolist()))
        t.start(); t.join()
        print(out, framejit.counters["stats"]["unique_graphs"] >= 1)
        """)
    r = _run([str(p)], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("True")


def test_usage_errors(tmp_path):
    r = _run([], tmp_path)
    assert r.returncode == 2 and "usage" in r.stderr
    r = _run(["--bogus", "x.py"], tmp_path)
    assert r.returncode == 2
    r = subprocess.run([sys.executable, "-m", "framejit", "nope"], capture_output=True,
                       text=True, env=_env(), timeout=60)
    assert r.returncode == 2


def test_unittest_under_run(prog, tmp_path):
    prog("""
        import unittest
        import numpy as np

        class T(unittest.TestCase):
            def test_ok(self):
                self.assertEqual(np.add(np.ones(2), 1).tolist(), [2.0, 2.0])
            def test_fail(self):
                self.assertEqual(1, 2)
            @unittest.skip("no")
            def test_skip(self):
                pass
        """, name="test_mini.py")
    plain = _run(["-m", "unittest", "test_mini"], tmp_path, framejit=False)
    jit = _run(["-m", "unittest", "test_mini"], tmp_path)
    assert plain.returncode == jit.returncode == 1
    # 3.12's unittest leaves skipped tests out of "Ran N tests" (3.11 and
    # 3.13 count them)
    ran = "Ran 2 tests" if sys.version_info[:2] == (3, 12) else "Ran 3 tests"
    assert ran in plain.stderr and ran in jit.stderr
    assert "FAILED (failures=1, skipped=1)" in jit.stderr


def test_skip_policy_switch():
    import framejit
    from framejit._hooks import Hooks
    h = Hooks()
    co_std = os.path.join.__code__                 # a stdlib function
    co_fj = Hooks.should_skip.__code__
    co_user = test_skip_policy_switch.__code__
    old = framejit.config.skip_stdlib
    try:
        framejit.config.skip_stdlib = True
        assert h.should_skip(co_std) and h.should_skip(co_fj) and not h.should_skip(co_user)
        framejit.config.skip_stdlib = False
        assert not h.should_skip(co_std) and h.should_skip(co_fj)
        assert not h.should_skip(co_user)
    finally:
        framejit.config.skip_stdlib = old


def test_code_made_by_exec_is_judged_by_its_module():
    """A dataclass's __init__ (file <string>) made for a library's class
    (torch's metrics, built on calls after a graph break) is skipped like
    the library; one made for the program's own class is not, nor in run
    mode (everything compiles)."""
    import json
    import framejit
    from framejit._hooks import Hooks
    h = Hooks()
    ns = {}
    exec(compile("def __init__(self, a):\n    self.a = a\n", "<string>", "exec"), ns)
    init = ns["__init__"].__code__    # what dataclasses makes, whoever's class it is
    assert init.co_filename == "<string>" and json.__file__
    old = framejit.config.skip_stdlib
    try:
        framejit.config.skip_stdlib = True
        assert h.should_skip(init, "json")           # made for a class of json's
        assert not h.should_skip(init, __name__)     # for the program's own class
        assert not h.should_skip(init, None) and not h.should_skip(init, "no.such.module")
        framejit.config.skip_stdlib = False
        assert not h.should_skip(init, "json")
    finally:
        framejit.config.skip_stdlib = old


_PURE = """
import sys
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
print(fib(15), 'numpy' in sys.modules)
"""


def test_pure_program_does_not_import_numpy_and_preload_traces_it(tmp_path):
    script = tmp_path / "pure.py"
    script.write_text(_PURE)
    plain = _run([str(script)], tmp_path, framejit=False)
    run = _run(["--summary", str(script)], tmp_path)
    assert plain.stdout == run.stdout == "610 False\n"
    assert "frames_no_graph        0" in run.stderr     # nothing traced without NumPy
    pre = _run(["--summary", "--preload=numpy", str(script)], tmp_path)
    assert pre.stdout == "610 True\n"
    assert "frames_no_graph        0" not in pre.stderr  # traced once, ran as is
    assert "frames_compiled        0" in pre.stderr


def test_a_str_subclass_module_name_runs_no_program_code():
    """Exec'd code whose globals' __name__ is a str subclass: the skip
    decision neither hashes nor compares it (its __hash__ / __eq__ are the
    program's code)."""
    import numpy as np
    import framejit
    calls = []

    class Name(str):
        def __hash__(self):
            calls.append("__hash__")
            return str.__hash__(self)

        def __eq__(self, other):
            calls.append("__eq__")
            return str.__eq__(self, other)

    ns = {"__name__": Name("mymod"), "np": np}
    exec(compile("def f(x):\n    return np.sin(x) + 1\n", "<generated>", "exec"), ns)
    framejit.reset()
    assert np.array_equal(framejit.compile(ns["f"], backend="eager")(np.ones(3)), np.sin(np.ones(3)) + 1)
    assert calls == []
