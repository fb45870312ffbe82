"""Tiered compilation (framejit/native.py, config.native_background;
docs/native.md "Tiered compilation").

With it on, the native backend returns a plan that runs the graph with the
eager runner while a background thread partitions it, finds the compiler,
builds (or finds in the disk cache) and loads the kernels; calls after that
run the kernels.  Results are NumPy's either way (compared bit for bit)."""
import json
import os
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import framejit
from framejit import _C, native
from native_compare import capturing_backend

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def tiered(tmp_path, monkeypatch):
    monkeypatch.setenv("FRAMEJIT_CACHE_DIR", str(tmp_path / "k"))
    old = framejit.config.native_background
    framejit.config.native_background = True
    framejit.reset()
    yield tmp_path / "k"
    assert native.wait(300)
    framejit.config.native_background = old
    framejit.reset()


def capture():
    return capturing_backend()


def chain(x, y):
    return np.sqrt(np.maximum(x * y + 1.0, 0.0)) * 2.0 - x, (x > y).sum()


def same(a, b):
    if isinstance(a, tuple):
        return all(same(u, v) for u, v in zip(a, b))
    return type(a) is type(b) and a.dtype == b.dtype and np.array_equal(a, b)


def test_first_calls_run_eager_then_the_kernels(tiered):
    plans, backend = capture()
    cf = framejit.compile(chain, backend=backend)
    x, y = np.linspace(-2, 2, 1000), np.linspace(1, 3, 1000)
    c0 = dict(framejit.counters["native"])
    assert same(cf(x, y), chain(x, y))
    (plan,) = plans
    assert isinstance(plan, _C.NativePlan)
    # a graph run once is not built: its second call starts the build
    assert plan.eager_runs == 1 and not native._pending
    assert framejit.counters["native"].get("background_compiles", 0) == c0.get("background_compiles", 0)
    assert same(cf(x, y), chain(x, y))
    assert plan.eager_runs >= 2  # the compiler takes far longer than a call
    assert framejit.counters["native"]["background_compiles"] == c0.get("background_compiles", 0) + 1
    assert native.wait(300)
    assert plan.loaded == 1
    runs = plan.eager_runs
    for _ in range(3):
        assert same(cf(x, y), chain(x, y))
    assert plan.eager_runs == runs and plan.fallbacks == 0
    assert plan.groups and framejit.counters["native"]["kernels_compiled"] >= 1


def test_wait_builds_a_graph_called_once(tiered):
    """native.wait() builds the graphs called once (whose builds would start
    at their second call); the second call then starts no second build."""
    plans, backend = capture()
    cf = framejit.compile(chain, backend=backend)
    x, y = np.linspace(-2, 2, 1000), np.linspace(1, 3, 1000)
    c0 = framejit.counters["native"].get("background_compiles", 0)
    assert same(cf(x, y), chain(x, y))
    (plan,) = plans
    assert plan.loaded == 0 and not native._pending
    assert native.wait(300)
    assert plan.loaded == 1 and framejit.counters["native"]["background_compiles"] == c0 + 1
    assert same(cf(x, y), chain(x, y))
    assert plan.eager_runs == 1 and not native._pending
    assert framejit.counters["native"]["background_compiles"] == c0 + 1


def test_a_plan_called_once_is_not_kept_alive(tiered):
    """The note that a plan ran once holds it weakly: a graph called once and
    dropped goes with its code."""
    import gc
    import weakref
    plans, backend = capture()
    cf = framejit.compile(lambda x: np.sqrt(x * x + 2.0) - x, backend=backend)
    cf(np.linspace(0, 1, 100))
    ref = weakref.ref(plans[0])
    assert len(native._once) >= 1
    del cf
    plans.clear()
    framejit.reset()
    gc.collect()
    assert ref() is None
    assert native.wait(300)


def test_native_exact_is_read_when_the_graph_compiles(tiered):
    """The setting at compile time decides, not the one when the thread partitions."""
    plans, backend = capture()
    framejit.config.native_exact = False
    try:
        cf = framejit.compile(lambda x: np.exp(x) * 2.0 + 1.0, backend=backend)
        x = np.linspace(-3, 3, 500)
        cf(x)
    finally:
        framejit.config.native_exact = True
    assert native.wait(300)
    assert plans[0].groups == [["exp", "mul", "add"]], plans[0].groups
    np.testing.assert_allclose(cf(x), np.exp(x) * 2.0 + 1.0, rtol=1e-15)


def test_nothing_fused_stays_eager(tiered):
    plans, backend = capture()
    cf = framejit.compile(lambda a, b: np.exp(a) @ b, backend=backend)
    a = np.ones((3, 3))
    before = framejit.counters["native"].get("graphs_unfused", 0)
    assert np.array_equal(cf(a, a), np.exp(a) @ a)
    assert native.wait(300)
    assert plans[0].loaded == 0 and plans[0].groups == []
    assert np.array_equal(cf(a, a), np.exp(a) @ a)
    assert plans[0].eager_runs == 2
    assert framejit.counters["native"]["graphs_unfused"] == before + 1


def test_wait_with_nothing_pending():
    assert native.wait(0) is True


_SUB = textwrap.dedent("""
    import json, os, warnings, numpy as np, framejit
    from framejit import native
    def f(x, y):
        return (x * 2 + y) / 3, x > y
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cf = framejit.compile(f, backend="native")
        x, y = np.arange(6.0), np.ones(6)
        r = cf(x, y)
        waited = native.wait(300) if os.environ.get("WAIT") else None
        r2 = cf(x, y)
    e = f(x, y)
    ok = all(np.array_equal(a, b) and a.dtype == b.dtype for rr in (r, r2) for a, b in zip(rr, e))
    print(json.dumps({"ok": ok, "waited": waited, "counters": dict(framejit.counters["native"]),
                      "warnings": [str(m.message) for m in w]}))
""")


def _run_sub(env_extra):
    env = dict(os.environ, PYTHONPATH=ROOT, FRAMEJIT_NATIVE_BACKGROUND="1", **env_extra)
    r = subprocess.run([sys.executable, "-c", _SUB], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_disk_cache_and_exit_while_compiling(tmp_path):
    """A process that exits while its kernels compile leaves no temporary
    file; a process that waits builds them; the next loads them from the
    cache (in the background too)."""
    k = tmp_path / "k"
    gone = _run_sub({"FRAMEJIT_CACHE_DIR": str(k)})
    # (at exit a compiler still running is killed; one not started yet may finish)
    assert gone["ok"] and gone["counters"].get("background_compiles") == 1
    assert not [f for f in os.listdir(k) if f.startswith(".fj_tmp")] if k.exists() else True
    first = _run_sub({"FRAMEJIT_CACHE_DIR": str(k), "WAIT": "1"})
    assert first["ok"] and first["waited"] is True
    c = first["counters"]
    assert c.get("kernels_compiled", 0) + c.get("kernels_loaded_from_cache", 0) == 1
    second = _run_sub({"FRAMEJIT_CACHE_DIR": str(k), "WAIT": "1"})
    assert second["ok"] and second["counters"].get("kernels_loaded_from_cache") == 1
    assert second["counters"].get("kernels_compiled", 0) == 0
    assert not [f for f in os.listdir(k) if f.startswith(".fj_tmp")]


def test_no_compiler_in_the_background(tmp_path):
    res = _run_sub({"FRAMEJIT_CACHE_DIR": str(tmp_path / "k"), "CC": "/nonexistent/cc", "WAIT": "1"})
    assert res["ok"]
    assert len(res["warnings"]) == 1 and "no working C compiler" in res["warnings"][0]
    assert res["counters"].get("kernels_compiled", 0) == 0


def test_identical_groups_compile_once(tmp_path, monkeypatch):
    """An unrolled loop repeats its body's group between matmuls: each
    distinct group text is compiled once and the copies run its kernels."""
    monkeypatch.setenv("FRAMEJIT_CACHE_DIR", str(tmp_path / "k"))
    plans, backend = capture()

    def f(a, w, b):
        x = a
        for _ in range(12):
            x = np.maximum(x @ w * 0.5 + b, 0.0) - 0.25
        return x, (x > 0.3).sum()
    framejit.reset()
    cf = framejit.compile(f, backend=backend)
    rng = np.random.default_rng(0)
    a, w, b = rng.random((16, 16)), rng.random((16, 16)) / 8, rng.random(16)
    for _ in range(2):
        assert same(cf(a, w, b), f(a, w, b))
    (plan,) = plans
    assert len(plan.groups) == 12, plan.groups
    import re
    assert len(set(re.findall(r"fj_g(\d+)_", plan.source))) == 2  # the loop body's group and the last one
    assert plan.fallbacks == 0
    framejit.reset()


# ---- found by review -----------------------------------------------------------

_SUB2 = textwrap.dedent("""
    import json, os, sys, threading, warnings, numpy as np, framejit
    from framejit import native
    framejit.config.native_background = True
    mode = sys.argv[1]
    out = {}
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        if mode == "race":
            # two graphs' builds look the compiler up at once (fresh cache directory)
            fs = [framejit.compile(eval(f"lambda x: np.sqrt(x * x + {k}.0) * 2.0 - x")) for k in range(6)]
            x = np.linspace(0, 1, 1000)
            ts = [threading.Thread(target=lambda f=f: [f(x) for _ in range(3)]) for f in fs]
            [t.start() for t in ts]
            [t.join() for t in ts]
            out["waited"] = native.wait(300)
            out["ok"] = all(np.array_equal(f(x), np.sqrt(x * x + k) * 2.0 - x) for k, f in enumerate(fs))
        elif mode == "exit":
            lines = ["def f(x, w):"]
            for i in range(60):
                lines.append(f"    x = np.sqrt(np.abs(x * {i}.5 + {i}.25) + 1.0) * {i + 1}.0 - x")
                lines.append("    x = x @ w")
            lines.append("    return x")
            ns = {"np": np}
            exec("\\n".join(lines), ns)
            cf = framejit.compile(ns["f"])
            cf(np.ones((4, 4)), np.eye(4) * 0.5)
            cf(np.ones((4, 4)), np.eye(4) * 0.5)  # (the second call starts the build)
            out["ok"] = True  # and exit while the kernels build
        elif mode in ("fork", "fork_lookup"):
            f = framejit.compile(lambda x: np.sqrt(x * x + 1.0) * 3.0 - x)
            x = np.linspace(0, 1, 100)
            f(x)
            f(x)  # (the second call starts the build)
            assert native._nworkers >= 1
            # fork_lookup: the fork comes while a worker looks the compiler up (its lock
            # held, as a parent's worker held it under load: the child's build waited
            # for it for good)
            held = native._toolchain_lock if mode == "fork_lookup" else None
            if held is not None:
                held.acquire()
            pid = os.fork()
            if held is not None and pid != 0:
                held.release()
            if pid == 0:
                f(x)
                code = 0 if native.wait(60) and np.array_equal(f(x), np.sqrt(x * x + 1.0) * 3.0 - x) else 1
                import framejit._C as C
                os._exit(code)
            _, status = os.waitpid(pid, 0)
            out["child_status"] = status
            out["ok"] = native.wait(120)
    out["warnings"] = [str(m.message) for m in w]
    out["counters"] = dict(framejit.counters["native"])
    print(json.dumps(out))
""")


def _run_sub2(mode, cache):
    env = dict(os.environ, PYTHONPATH=ROOT, FRAMEJIT_CACHE_DIR=str(cache), FRAMEJIT_BACKEND="native")
    env.pop("FRAMEJIT_NATIVE_BACKGROUND", None)
    r = subprocess.run([sys.executable, "-c", _SUB2, mode], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_compiler_lookup_by_two_workers(tmp_path):
    """The compiler's lookup is published when done (a worker saw the lookup
    of the other under way as "no compiler": a false warning, a plan eager
    for good)."""
    res = _run_sub2("race", tmp_path / "k")
    assert res["ok"] and res["waited"]
    assert res["warnings"] == []
    assert res["counters"].get("kernels_compiled", 0) == 6 and "no_compiler" not in res["counters"]


def test_exit_during_a_build_leaves_nothing(tmp_path):
    """At exit no build starts and the running compiler is killed with its
    process group: no temporary file stays, no false failure warning."""
    res = _run_sub2("exit", tmp_path / "k")
    assert res["ok"]
    k = tmp_path / "k"
    assert not [f for f in os.listdir(k) if f.startswith(".fj_tmp")] if k.exists() else True


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_fork_while_building(tmp_path):
    """A build under way at a fork is built again in the child (its plan was
    left eager for good)."""
    res = _run_sub2("fork", tmp_path / "k")
    assert res["ok"] and res["child_status"] == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_fork_during_the_compiler_lookup(tmp_path):
    """A fork while a worker holds the compiler lookup's lock: the child gets a
    lock of its own and builds (it waited on the parent's for good: found under
    ASan and load, where the worker reached the lookup before the fork)."""
    res = _run_sub2("fork_lookup", tmp_path / "k")
    assert res["ok"] and res["child_status"] == 0


def test_no_thread_before_a_build_and_no_plan_kept(tiered):
    """framejit.compile starts no thread (a fork after it has nothing to warn
    about); an idle worker keeps no plan alive."""
    import gc
    plans, backend = capture()
    cf = framejit.compile(chain, backend=backend)
    x, y = np.linspace(-2, 2, 100), np.linspace(1, 3, 100)
    cf(x, y)
    assert native.wait(300)
    nplans = [p for p in plans if isinstance(p, _C.NativePlan)]
    del cf
    plans.clear()
    framejit.reset()
    gc.collect()
    counts = [sys.getrefcount(p) for p in nplans]
    assert counts == [3] * len(nplans), counts


def test_wait_while_other_threads_note_plans_run_once(monkeypatch):
    """native.wait() lists the deferred plans while other threads add to the
    set (their compiles) and claim from it (their second calls): under the
    lock, so no "Set changed size during iteration" reaches wait()'s caller."""
    import sys
    import threading

    class Plan:  # (what _start_background needs of a plan: a weak reference, _after_calls)
        eager_runs = 1

        def _after_calls(self, n, fn):
            self.fn = fn

    monkeypatch.setattr(native, "_submit", lambda plan, done=None: None)  # only the set
    monkeypatch.setattr(native, "_once", weakref.WeakSet())
    plans = [Plan() for _ in range(20000)]
    errors = []

    def first_calls():
        for p in plans:
            native._start_background(p)

    def waits():
        while ts[0].is_alive():
            try:
                native.wait(0)
            except RuntimeError as e:
                errors.append(e)
                return

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        ts = [threading.Thread(target=first_calls), threading.Thread(target=waits)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not errors, errors


def test_a_long_compile_says_so(tiered, monkeypatch):
    """A compiler running longer than native.PROGRESS_AFTER seconds is logged
    (issue 24, long compiles): a warning when the call waits for it (blocking
    build), info from a background build; the structured trace gets a
    "kernel" record per build (compiled, or a disk cache hit)."""
    import json
    import logging
    monkeypatch.setattr(native, "PROGRESS_AFTER", 0.001)  # every real compile is "long"
    trace = tiered.parent / "trace"
    monkeypatch.setattr(framejit.config, "trace_dir", str(trace))
    x = np.linspace(0, 1, 100)
    framejit.config.native_background = False

    class Keep(logging.Handler):  # (on the "framejit" logger itself: set_logs may stop its propagation)
        def __init__(self):
            super().__init__(logging.DEBUG)
            self.records = []

        def emit(self, record):
            self.records.append(record)

        def clear(self):
            self.records = []

    kept = Keep()
    log = logging.getLogger("framejit")
    old_level = log.level
    log.addHandler(kept)
    log.setLevel(logging.DEBUG)
    try:
        cf = framejit.compile(lambda v: np.sqrt(v * v + 17.25) * 3.0 - v, backend="native")
        assert np.array_equal(cf(x), np.sqrt(x * x + 17.25) * 3.0 - x)
        waited = [r for r in kept.records if "the C compiler has run" in r.getMessage()]
        assert waited and waited[0].levelno == logging.WARNING, [r.getMessage() for r in kept.records]
        assert "this call waits for it" in waited[0].getMessage()
        kept.clear()
        framejit.config.native_background = True
        cb = framejit.compile(lambda v: np.sqrt(v * v + 18.25) * 3.0 - v, backend="native")
        cb(x)
        cb(x)  # (the second call starts the build)
        assert native.wait(300)
        bg = [r for r in kept.records if "the C compiler has run" in r.getMessage()]
        assert bg and all(r.levelno == logging.INFO for r in bg), [r.getMessage() for r in kept.records]
        assert "in the background" in bg[0].getMessage()
        # the same kernel again: a cache hit, no compiler
        framejit.reset()
        cc = framejit.compile(lambda v: np.sqrt(v * v + 18.25) * 3.0 - v, backend="native")
        cc(x)
        assert native.wait(300)
    finally:
        log.removeHandler(kept)
        log.setLevel(old_level)
    framejit.config.trace_dir = None
    (name,) = os.listdir(trace)
    with open(trace / name) as f:
        kernels = [r for r in map(json.loads, f) if r["kind"] == "kernel"]
    assert [(k["compiled"], k["background"]) for k in kernels] == [(True, False), (True, True), (False, True)]
    assert all(k["path"].endswith(".so") and k["source_bytes"] > 0 for k in kernels)
    from framejit import report
    page = report.render(report.load(str(trace)), "t")
    assert 'id="kernels"' in page and "disk cache hit (background)" in page and "(the call waited)" in page
