"""try, except, finally and with: traced under exception handlers, and graphs
that raise at run time (evalframe.c "A graph that raised", codegen.c
emit_graph_call, trace.c protected_seen).

Every function runs plain and compiled on the same inputs; results, raised
exceptions and the side effects recorded in LOG must be the same, and the
counters say what was captured."""
import sys
import warnings

import numpy as np
import pytest

import framejit
from difftools import outcome, same

LOG = []


def run_both(fn, *args, calls=2, errstate=None, **kwargs):
    """Plain, then compiled 'calls' times, on copies of the arrays; returns
    the compiled function.  Compares outcome and LOG each time."""
    def copies():
        return [a.copy() if isinstance(a, np.ndarray) else a for a in args]

    def once(f):
        LOG.clear()
        with np.errstate(**(errstate or {})):
            got = outcome(f, copies(), kwargs)
        return got, list(LOG)

    plain, plain_log = once(fn)
    cf = framejit.compile(fn)
    for _ in range(calls):
        got, log = once(cf)
        assert got[0] == plain[0], (got, plain)
        if got[0] == "ok":
            same(got[1], plain[1])
        else:
            assert got[1:] == plain[1:]
        assert len(log) == len(plain_log), (log, plain_log)
        for a, b in zip(log, plain_log):
            same(a, b, "LOG")
    return cf


@pytest.fixture(autouse=True)
def _fresh():
    framejit.reset()
    LOG.clear()
    yield
    framejit.reset()


def stats():
    return framejit.counters["stats"]


# ------------------------------------------------ graphs that raise at run time
def divide(x, d):
    LOG.append("before")
    y = np.sin(x) / d
    LOG.append("after")
    return y + 1


@pytest.mark.parametrize("d", [np.full(3, 2.0), np.zeros(3), np.array([1.0, 0.0, 2.0])])
def test_graph_error_reruns_own_code(d):
    run_both(divide, np.ones(3), d, errstate={"divide": "raise"})
    raised = not np.all(d)
    assert stats()["graph_raised_reruns"] == (2 if raised else 0)
    assert stats()["unique_graphs"] == 1


def test_graph_error_traceback_is_cpythons():
    cf = framejit.compile(divide)
    with np.errstate(divide="raise"):
        cf(np.ones(3), np.ones(3))
        with pytest.raises(FloatingPointError) as info:
            cf(np.ones(3), np.zeros(3))
    import traceback
    frames = [(fs.name, fs.lineno) for fs in traceback.extract_tb(info.value.__traceback__)]
    assert frames[-1][0] != "divide" or frames[-1][1] == divide.__code__.co_firstlineno + 2
    assert ("divide", divide.__code__.co_firstlineno + 2) in frames
    assert not any(n.startswith(("__compiled_fn", "__resume")) for n, _ in frames)


def test_graph_error_is_logged(logs):
    framejit.set_logs("graph_breaks")
    try:
        cf = framejit.compile(divide)
        with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
            cf(np.ones(3), np.zeros(3))
    finally:
        framejit.set_logs()
    (line,) = [m for m in logs.lines if "raised FloatingPointError" in m]
    assert "divide" in line and "own code" in line


def all_arg_kinds(a, /, b, *rest, c, d=2.0, **kw):
    LOG.append(len(rest) + len(kw))
    def inner():
        return a
    return np.log(a) * b + c + d + sum(rest) + sum(kw.values()) + inner()


def test_graph_error_rerun_keeps_every_argument_kind():
    warnings_as_errors = {"divide": "raise", "invalid": "raise"}
    args = (np.array([1.0, 2.0]), 3.0, 4.0, 5.0)
    run_both(all_arg_kinds, *args, c=1.0, e=7.0, errstate=warnings_as_errors)
    bad = (np.array([0.0, 2.0]), 3.0, 4.0, 5.0)
    framejit.reset()
    run_both(all_arg_kinds, *bad, c=1.0, e=7.0, errstate=warnings_as_errors)
    assert stats()["graph_raised_reruns"] == 2


def keyboard(x):
    LOG.append("in")
    return np.sqrt(x) + 1


def test_keyboard_interrupt_from_a_graph_is_not_rerun():
    def handler(kind, flag):
        raise KeyboardInterrupt
    cf = framejit.compile(keyboard)
    old = np.seterrcall(handler)
    try:
        with np.errstate(invalid="call"):
            cf(np.ones(2))
            LOG.clear()
            with pytest.raises(KeyboardInterrupt):
                cf(-np.ones(2))
    finally:
        np.seterrcall(old)
    assert stats()["graph_raised_reruns"] == 0
    assert LOG == []  # the effect after the graph never ran, as the error left the frame


def mutating(x):
    x += 1
    y = np.sin(x) / x
    return y


def test_graph_writing_into_an_input_has_no_rerun_handler():
    import dis
    cf = framejit.compile(mutating)
    cf(np.ones(3))
    (entry,) = framejit._C.eval_frame._debug_get_cache_entry_list(mutating.__code__)
    consts = [i.argval for i in dis.get_instructions(entry.code) if i.opname == "LOAD_CONST"]
    assert framejit._C._graph_raised not in consts
    assert not dis.Bytecode(entry.code).exception_entries


# ------------------------------------------------------ try / except / finally
def try_except(x, d):
    try:
        y = np.sin(x) / d
        LOG.append("body")
    except FloatingPointError as e:
        LOG.append(("caught", str(e)))
        y = None
    return y


def try_except_else_finally(x, d):
    try:
        y = np.cos(x) / d
    except (ZeroDivisionError, FloatingPointError):
        LOG.append("except")
        y = np.zeros(3)
    else:
        LOG.append("else")
        y = y * 2
    finally:
        LOG.append("finally")
    return y - 1


def try_finally_return(x, d):
    try:
        return np.tanh(x) / d
    finally:
        LOG.append("finally")


def nested_try(x, d):
    try:
        try:
            y = np.exp(x) / d
        except ValueError:
            y = 0
        LOG.append("inner done")
    except FloatingPointError:
        LOG.append("outer")
        y = -1
    return y


def helper_with_try(x, d):
    try:
        return x / d
    except FloatingPointError:
        return x * 0


def calls_helper_with_try(x, d):
    y = np.sin(x)
    return helper_with_try(y, d) + 1


def bare_except(x, d):
    try:
        y = (x + 1) / d
    except:  # noqa: E722
        y = x
    return y


def except_star_reraise(x, d):
    try:
        y = np.sqrt(x) / d
    except FloatingPointError:
        LOG.append("reraise")
        raise
    return y


TRY_FUNCS = [try_except, try_except_else_finally, try_finally_return, nested_try,
             calls_helper_with_try, bare_except, except_star_reraise]


@pytest.mark.parametrize("fn", TRY_FUNCS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("d", [np.full(3, 2.0), np.zeros(3)], ids=["ok", "raises"])
def test_try_bodies_are_captured(fn, d):
    run_both(fn, np.ones(3), d, errstate={"divide": "raise", "invalid": "raise"})
    assert stats()["unique_graphs"] >= 1
    assert stats()["frames_not_captured"] == 0
    assert not framejit.counters["graph_break"], dict(framejit.counters["graph_break"])


@pytest.mark.parametrize("fn", TRY_FUNCS, ids=lambda f: f.__name__)
def test_try_bodies_without_errstate(fn):
    # default errstate: warnings, no exceptions; the normal path each time
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_both(fn, np.ones(3), np.zeros(3))
    assert stats()["graph_raised_reruns"] == 0


def warned(x):
    try:
        y = np.log(x)
    except RuntimeWarning:
        LOG.append("warning as error")
        y = x
    return y


def test_warnings_as_errors_reach_the_handler():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_both(warned, np.ones(2))
        run_both(warned, np.zeros(2))
    assert stats()["graph_raised_reruns"] >= 1


def python_error_in_try(x, d):
    try:
        k = {"a": 1}[d]
    except KeyError:
        k = 2
    return x * k


@pytest.mark.parametrize("d", ["a", "b"])
def test_trace_time_exception_in_try_runs_in_cpython(d):
    run_both(python_error_in_try, np.ones(2), d)


def mutating_in_try(x, d):
    try:
        x[0] = 5.0
        y = x / d
    except FloatingPointError:
        y = None
    return y, x


def test_mutating_graph_under_a_handler_is_not_captured(logs):
    framejit.set_logs("graph_breaks")
    try:
        run_both(mutating_in_try, np.ones(2), np.zeros(2), errstate={"divide": "raise"})
    finally:
        framejit.set_logs()
    assert any("writes into an input array" in m for m in logs.lines), logs.lines
    assert stats()["graph_raised_reruns"] == 0


# --------------------------------------------- graph breaks under a handler
def opaque(v, limit=5.0, kind=ValueError):
    """Not traceable (float() of an array is a break): raises past 'limit'."""
    LOG.append(("opaque", float(v.sum())))
    if float(v.sum()) > limit:
        raise kind("too big")
    return v * 2


def break_in_try(x):
    y = np.sin(x) + 1
    try:
        z = opaque(y)
        LOG.append("after")
    except ValueError as e:
        LOG.append(("caught", str(e)))
        z = y - 1
    return z * 3


def break_in_try_no_match(x):
    y = np.cos(x) * 4
    try:
        z = opaque(y, kind=KeyError)
    except ValueError:
        z = None
    return z


def break_in_try_finally(x):
    y = np.cos(x) * 4
    t = 1
    try:
        z = opaque(y, limit=10.0)
        t = 2
    finally:
        LOG.append(("finally", t))
    return z + t


def break_in_nested_try(x):
    y = np.tanh(x) * 3
    try:
        try:
            z = opaque(y, 2.0, kind=KeyError)
        except ValueError:
            z = 0
        LOG.append("inner")
    except KeyError as e:
        LOG.append(("outer", str(e)))
        z = -y
    return z


def break_keyword_call_in_try(x):
    y = np.exp(x)
    try:
        z = opaque(v=y, limit=8.0)
    except ValueError:
        z = y
    return z


def break_raise_in_try(x):
    y = np.sin(x)
    try:
        if float(y.sum()) > 0:
            raise ValueError("positive")
        z = y
    except ValueError as e:
        z = -y
        LOG.append(str(e))
    return z


def break_in_handler_body(x):
    y = np.sin(x)
    try:
        z = y / 0.0
    except FloatingPointError:
        print(end="")  # a break inside the handler: the handler runs in CPython
        z = y
    return z


def break_in_with_body(x, cm):
    y = np.sin(x)
    with cm:
        z = opaque(y * 4)
        LOG.append("with body done")
    return z


BREAK_FUNCS = [break_in_try, break_in_try_no_match, break_in_try_finally, break_in_nested_try,
               break_keyword_call_in_try, break_raise_in_try]


@pytest.mark.parametrize("fn", BREAK_FUNCS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("x", [np.ones(3), np.full(3, 0.1), -np.ones(3)], ids=["a", "b", "c"])
def test_break_under_a_handler_resumes_there(fn, x):
    run_both(fn, x, calls=3)
    assert stats()["unique_graphs"] >= 1


@pytest.mark.parametrize("suppress", [False, True])
@pytest.mark.parametrize("x", [np.ones(3), np.full(3, 0.1)], ids=["raises", "ok"])
def test_break_in_with_body_reaches_exit(suppress, x):
    run_both(break_in_with_body, x, Recorder(suppress), calls=3)


def test_break_in_handler_body():
    run_both(break_in_handler_body, np.ones(2), errstate={"divide": "raise"})


def test_break_under_a_handler_traceback_is_cpythons():
    import traceback

    def frames(fn):
        try:
            fn(np.zeros(3))
        except KeyError as e:
            return [(f.name, f.lineno, f.colno, f.end_colno)
                    for f in traceback.extract_tb(e.__traceback__)][1:]
        raise AssertionError("no KeyError")
    plain = frames(break_in_try_no_match)
    compiled = framejit.compile(break_in_try_no_match)
    assert frames(compiled) == plain
    assert frames(compiled) == plain


def test_handler_resume_function_is_logged(logs):
    framejit.set_logs("graph_breaks")
    try:
        cf = framejit.compile(break_in_try)
        cf(np.ones(3))
    finally:
        framejit.set_logs()
    assert any("exception handler" in m and "runs in CPython" in m for m in logs.lines), logs.lines


def fresh_writes_in_try(x, d):
    try:
        y = x * 2
        y += 1
        y[0] = 7.0
        np.multiply(y, 3, out=y)
        z = y / d
    except FloatingPointError:
        LOG.append("caught")
        z = None
    return z, x


@pytest.mark.parametrize("d", [np.ones(2), np.zeros(2)], ids=["ok", "raises"])
def test_writes_into_arrays_the_graph_made_keep_the_rerun(d):
    run_both(fresh_writes_in_try, np.ones(2), d, errstate={"divide": "raise"})
    assert stats()["frames_not_captured"] == 0
    assert stats()["graph_raised_reruns"] == (0 if d.all() else 2)


def view_write_in_try(x, d):
    try:
        v = x[:1]
        v += 1
        z = x / d
    except FloatingPointError:
        z = None
    return z, x


def test_write_into_a_view_of_an_input_is_not_captured_under_a_handler():
    run_both(view_write_in_try, np.ones(2), np.zeros(2), errstate={"divide": "raise"})
    assert stats()["frames_not_captured"] >= 1


def break_before_try(x, d):
    y = np.sin(x)
    print(end="")
    try:
        z = y / d
    except FloatingPointError:
        LOG.append("caught after the break")
        z = y
    return z


@pytest.mark.parametrize("d", [np.ones(2), np.zeros(2)], ids=["ok", "raises"])
def test_try_after_a_break_is_captured_in_the_resume_function(d):
    run_both(break_before_try, np.ones(2), d, errstate={"divide": "raise"})
    assert stats()["frames_not_captured"] == 0
    assert stats()["unique_graphs"] == 2


# -------------------------------------------------------------------- with
class Recorder:
    def __init__(self, suppress=False):
        self.suppress = suppress
        self.n = 0

    def __enter__(self):
        LOG.append("enter")
        return 7

    def __exit__(self, tp, val, tb):
        LOG.append(("exit", tp))
        return self.suppress


def with_user_cm(x, cm):
    y = np.sin(x)
    with cm as k:
        y = y * k
        LOG.append("body")
    return y + 1


def with_user_cm_raising(x, cm, d):
    y = np.cos(x)
    with cm:
        y = y / d
        LOG.append("body")
    return y


@pytest.mark.parametrize("suppress", [False, True])
def test_with_user_context_manager(suppress):
    cm = Recorder(suppress)
    run_both(with_user_cm, np.ones(2), cm, calls=3)
    assert stats()["unique_graphs"] >= 2
    assert stats()["frames_not_captured"] == 0


@pytest.mark.parametrize("suppress", [False, True])
@pytest.mark.parametrize("d", [np.ones(2), np.zeros(2)], ids=["ok", "raises"])
def test_with_body_error_reaches_exit(suppress, d):
    run_both(with_user_cm_raising, np.ones(2), Recorder(suppress), d, calls=3,
             errstate={"divide": "raise"})


def with_errstate(x):
    y = np.cos(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = y / 0.0
        w = np.log(y - y)
    return z + w


def test_with_errstate_is_captured_without_recompiles():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_both(with_errstate, np.ones(3), calls=4)
    assert stats()["recompiles"] == 0
    assert stats()["frames_not_captured"] == 0


def test_errstate_guard_compares_states_not_objects():
    def f(x):
        return np.sin(x) + 1
    cf = framejit.compile(f)
    for _ in range(3):
        with np.errstate(divide="ignore"):
            cf(np.ones(2))
    assert stats()["recompiles"] == 0
    with np.errstate(divide="raise"):
        cf(np.ones(2))
    assert stats()["recompiles"] == 1


def test_bound_method_input_is_guarded_by_function_not_identity():
    # a with statement hands cm.__exit__ (a new bound method each time) to the
    # resume function: guarded by type, __func__ and __self__
    cm = Recorder()
    cf = framejit.compile(with_user_cm)
    for _ in range(4):
        LOG.clear()
        cf(np.ones(2), cm)
    assert stats()["recompiles"] == 0


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="BEFORE_WITH is 3.11-3.13")
def test_with_break_reason_is_logged(logs):
    framejit.set_logs("graph_breaks")
    try:
        framejit.compile(with_user_cm)(np.ones(2), Recorder())
    finally:
        framejit.set_logs()
    assert any("with statement" in m for m in logs.lines), logs.lines
