"""The eval-frame hook and the per-code cache (csrc/runtime/evalframe.c, csrc/runtime/cache.c)."""
import sys
import threading
import traceback

import numpy as np
import pytest

import framejit
from framejit import _C
from framejit._C import eval_frame

EXPECTED_NAMES = ['_CacheEntry', '_PyInterpreterFrame', '_debug_get_cache_entry_list',
                  'reset_code', 'set_eval_frame', 'set_guard_error_hook', 'skip_code',
                  'unsupported']


def run_with(callback, fn, *args, **kwargs):
    prior = eval_frame.set_eval_frame(callback)
    try:
        return fn(*args, **kwargs)
    finally:
        eval_frame.set_eval_frame(prior)


def always(code):
    """A callback that caches 'code' (or the frame's own) behind an empty guard."""
    def cb(frame, entry, state):
        return (code or frame.f_code, _C.RootGuardManager(), "0/0")
    return cb


def test_public_names_are_exactly_torchs():
    assert sorted(n for n in dir(eval_frame) if not n.startswith("__")) == EXPECTED_NAMES


def test_unsupported_returns_second():
    marker = object()
    assert eval_frame.unsupported(1, marker) is marker
    with pytest.raises(TypeError):
        eval_frame.unsupported(1)


def test_set_eval_frame_returns_previous_and_validates():
    def cb(frame, entry, state):
        return None
    assert eval_frame.set_eval_frame(cb) is None
    assert eval_frame.set_eval_frame(False) is cb
    assert eval_frame.set_eval_frame(None) is False
    with pytest.raises(TypeError, match="callable, None or False"):
        eval_frame.set_eval_frame(42)
    assert eval_frame.set_eval_frame(None) is None


def leaf(x):
    return x + 1


def middle(x):
    return leaf(x) * 2


def outer(x):
    return middle(x) + leaf(x)


def test_every_frame_under_the_callback_is_offered():
    seen = []

    def cb(frame, entry, state):
        seen.append(frame.f_code.co_name)
        return None
    assert run_with(cb, outer, 3) == outer(3)
    assert seen == ["outer", "middle", "leaf", "leaf"]


def test_compile_wrapper_offers_callees_and_restores():
    seen = []

    def cb(frame, entry, state):
        seen.append(frame.f_code.co_name)
        return None
    cf = framejit.compile(outer, callback=cb)
    assert cf(2) == outer(2)
    assert seen == ["outer", "middle", "leaf", "leaf"]
    assert eval_frame.set_eval_frame(None) is None  # restored


def test_compile_wrapper_restores_on_exception_and_nesting():
    def boom(x):
        raise KeyError(x)

    def cb(frame, entry, state):
        return None
    outer_cb_seen = []

    def outer_cb(frame, entry, state):
        outer_cb_seen.append(frame.f_code.co_name)
        return None
    cboom = framejit.compile(boom, callback=cb)

    def calls_boom(x):
        try:
            cboom(x)
        except KeyError:
            pass
        return leaf(x)
    c_outer = framejit.compile(calls_boom, callback=outer_cb)
    assert c_outer(1) == 2
    # after the inner wrapper's finally, the outer callback is back in force
    assert outer_cb_seen == ["calls_boom", "leaf"]
    with pytest.raises(KeyError):
        cboom(5)
    assert eval_frame.set_eval_frame(None) is None


def test_frame_wrapper_attributes():
    got = {}
    k = 10

    def target(a, b=2, *rest, kw=3, **extra):
        return a + b + k

    def cb(frame, entry, state):
        if frame.f_code is target.__code__:
            got.update(code=frame.f_code, globals=frame.f_globals, builtins=frame.f_builtins,
                       locals=frame.f_locals, lasti=frame.f_lasti, lineno=frame.f_lineno,
                       closure=frame.closure, entry=entry, state=state)
            got["frame"] = frame
        return None
    assert run_with(cb, target, 1, 5, 6, kw=4, z=9) == 16
    assert got["globals"] is globals()
    assert got["builtins"] is __builtins__ or got["builtins"] is getattr(__builtins__, "__dict__", None)
    assert got["locals"] == {"a": 1, "b": 5, "rest": (6,), "kw": 4, "extra": {"z": 9}, "k": 10}
    assert got["lasti"] == -1
    assert got["lineno"] == target.__code__.co_firstlineno
    assert got["closure"] is target.__closure__
    assert got["entry"] is None and got["state"] == {}
    with pytest.raises(RuntimeError, match="only valid while the callback runs"):
        got["frame"].f_code


def test_hit_runs_cached_code_with_frame_arguments_closure_and_globals():
    scale = 3

    def original(x, y=4):
        return (x + y) * scale

    def replacement(x, y=4):
        return ("replaced", x, y, scale, __name__)
    # give the replacement the same free variable layout
    assert original.__code__.co_freevars == replacement.__code__.co_freevars
    cb = always(replacement.__code__)
    assert run_with(cb, original, 1) == ("replaced", 1, 4, 3, __name__)
    entries = eval_frame._debug_get_cache_entry_list(original.__code__)
    assert len(entries) == 1 and entries[0].code is replacement.__code__
    assert entries[0].compile_id == "0/0"
    # second call is a hit served from the cache, callback not called
    calls = []

    def no_compile(frame, entry, state):
        calls.append(frame.f_code.co_name)
        return None
    assert run_with(no_compile, original, 2, 5) == ("replaced", 2, 5, 3, __name__)
    assert "original" not in calls
    # run-only (False) also uses the cache
    assert run_with(False, original, 7) == ("replaced", 7, 4, 3, __name__)
    eval_frame.reset_code(original.__code__)
    assert eval_frame._debug_get_cache_entry_list(original.__code__) == []
    assert run_with(no_compile, original, 1) == 15


def test_incompatible_code_is_a_clear_error():
    def a(x):
        return x

    def b(x, y):
        return y
    with pytest.raises(ValueError, match="arguments or free variables differ"):
        run_with(always(b.__code__), a, 1)
    with pytest.raises(TypeError, match="expected None"):
        run_with(lambda f, e, s: 42, a, 1)
    with pytest.raises(TypeError, match="RootGuardManager"):
        run_with(lambda f, e, s: (a.__code__, object()), a, 1)


def test_callback_exception_propagates_to_caller():
    def cb(frame, entry, state):
        raise ZeroDivisionError("from callback")

    def f(x):
        return x
    with pytest.raises(ZeroDivisionError, match="from callback"):
        run_with(cb, f, 1)


def make_adder(n):
    def add(x):
        return x + n
    return add


def test_two_closures_from_one_def_share_entries():
    a1, a2 = make_adder(1), make_adder(100)
    assert a1.__code__ is a2.__code__
    offered = []

    def cb(frame, entry, state):
        offered.append(frame.closure)
        return (frame.f_code, _C.RootGuardManager(), "0/0")
    assert run_with(cb, a1, 1) == 2
    assert run_with(cb, a2, 1) == 101  # hit: the entry is shared, closure is a2's
    assert len(offered) == 1
    assert len(eval_frame._debug_get_cache_entry_list(a1.__code__)) == 1
    eval_frame.reset_code(a1.__code__)


def test_skip_code_is_never_offered():
    def f(x):
        return leaf(x)
    seen = []

    def cb(frame, entry, state):
        seen.append(frame.f_code.co_name)
        return None
    eval_frame.skip_code(f.__code__)
    assert run_with(cb, f, 1) == 2
    assert seen == ["leaf"]  # callees of a skipped frame are still offered
    eval_frame.reset_code(f.__code__)
    seen.clear()
    run_with(cb, f, 1)
    assert seen == ["f", "leaf"]


def test_skip_and_run_only_sentinels():
    def f(x):
        return x * 2
    n = []

    def skip(frame, entry, state):
        n.append(1)
        return _C.SKIP_CODE
    assert run_with(skip, f, 2) == 4
    assert run_with(skip, f, 3) == 6
    assert n == [1]
    eval_frame.reset_code(f.__code__)

    def runonly(frame, entry, state):
        n.append(2)
        return _C.RUN_ONLY
    assert run_with(runonly, f, 2) == 4
    assert run_with(runonly, f, 3) == 6
    assert n == [1, 2]
    eval_frame.reset_code(f.__code__)


def test_type_errors_on_bad_arguments():
    for fn in (eval_frame.skip_code, eval_frame.reset_code, eval_frame._debug_get_cache_entry_list):
        with pytest.raises(TypeError, match="code object"):
            fn("not code")
    with pytest.raises(TypeError):
        eval_frame.set_guard_error_hook(3)
    with pytest.raises(TypeError):
        eval_frame._CacheEntry()
    with pytest.raises(TypeError):
        eval_frame._PyInterpreterFrame()


def gen(n):
    for i in range(n):
        yield leaf(i)


async def coro(x):
    return leaf(x)


def test_generators_and_coroutines_run_as_they_are():
    seen = []

    def cb(frame, entry, state):
        seen.append(frame.f_code.co_name)
        return None
    assert run_with(cb, lambda: list(gen(3))) == [1, 2, 3]
    assert "gen" not in seen and seen.count("leaf") == 3
    seen.clear()

    def drive():
        c = coro(4)
        try:
            c.send(None)
        except StopIteration as e:
            return e.value
    assert run_with(cb, drive) == 5
    assert "coro" not in seen and "leaf" in seen


def test_callback_does_not_see_its_own_frames():
    seen = []

    def helper_in_callback():
        return 1

    def cb(frame, entry, state):
        helper_in_callback()
        seen.append(frame.f_code.co_name)
        return None
    run_with(cb, outer, 1)
    assert "helper_in_callback" not in seen


def test_callback_is_per_thread():
    seen_main, seen_other = [], []
    barrier = threading.Barrier(2)

    def worker():
        barrier.wait()
        for i in range(200):
            leaf(i)

    def cb(frame, entry, state):
        seen_main.append((threading.get_ident(), frame.f_code.co_name))
        return None

    def spin():
        barrier.wait()
        total = 0
        for i in range(200):
            total += middle(i)
        return total
    t = threading.Thread(target=worker)
    t.start()
    run_with(cb, spin)
    t.join()
    me = threading.get_ident()
    assert seen_main and all(tid == me for tid, _ in seen_main)

    # and a callback set on another thread is not seen here
    def other_thread():
        def cb2(frame, entry, state):
            seen_other.append(frame.f_code.co_name)
            return None
        run_with(cb2, leaf, 1)
    t = threading.Thread(target=other_thread)
    t.start()
    t.join()
    assert seen_other == ["leaf"]


def raiser(x, y):
    z = x + 1
    return helper_div(z, y)


def helper_div(a, b):
    return a / b


def _tb_summary(exc):
    frames = [(fs.name, fs.lineno, fs.line) for fs in traceback.extract_tb(exc.__traceback__)]
    names = [f[0] for f in frames]
    return frames[names.index("raiser"):]


def test_exceptions_and_tracebacks_through_cached_frames_match_cpython():
    with pytest.raises(ZeroDivisionError) as plain:
        raiser(1, 0)

    cb = always(None)   # cache every frame with its own code
    with pytest.raises(ZeroDivisionError) as first:
        run_with(cb, raiser, 1, 0)
    with pytest.raises(ZeroDivisionError) as cached:
        run_with(False, raiser, 1, 0)   # served from the cache
    assert len(eval_frame._debug_get_cache_entry_list(raiser.__code__)) == 1
    assert str(plain.value) == str(first.value) == str(cached.value)
    assert _tb_summary(plain.value) == _tb_summary(first.value) == _tb_summary(cached.value)
    assert [n for n, _, _ in _tb_summary(plain.value)] == ["raiser", "helper_div"]
    eval_frame.reset_code(raiser.__code__)
    eval_frame.reset_code(helper_div.__code__)


def test_cached_frame_with_cells_and_sys_getframe():
    def f(x):
        y = x * 2

        def inner():
            return y + x
        fr = sys._getframe()
        return inner(), fr.f_code.co_name, fr.f_locals["x"]
    expect = f(5)
    run_with(always(None), f, 5)
    assert run_with(False, f, 5) == expect
    eval_frame.reset_code(f.__code__)


def test_recursion_under_the_hook_matches_cpython():
    def rec(n):
        return 0 if n == 0 else 1 + rec(n - 1)
    assert run_with(always(None), rec, 200) == 200
    assert run_with(False, rec, 300) == 300

    def inf(n):
        return inf(n + 1)
    with pytest.raises(RecursionError):
        run_with(False, inf, 0)
    eval_frame.reset_code(rec.__code__)
    eval_frame.reset_code(inf.__code__)


def test_frame_state_is_per_code():
    states = []

    def f(x):
        return x

    def cb(frame, entry, state):
        state.setdefault("calls", 0)
        state["calls"] += 1
        states.append(state)
        return None
    run_with(cb, f, 1)
    run_with(cb, f, 2)
    assert states[0] is states[1] and states[0]["calls"] == 2
    eval_frame.reset_code(f.__code__)
