"""A graph break inside a for loop (csrc/bytecode/resume.c, plan_loop;
docs/graph-breaks.md): the outermost loop around the break runs whole in
CPython, the code before it and after it are graphs (the part after it in a
resume function), where before the whole frame ran in CPython.  Each function
compiled against plain CPython: results, inputs afterwards, printed output,
exceptions."""
import contextlib
import io

import numpy as np
import pytest

import framejit

from difftools import check_with_inputs

X = np.linspace(-1.0, 2.0, 7)


def loop_print(x):
    y = np.sin(x) * 2
    for i in range(3):
        y = y + i
        print(i)
        y = y * 2
    return np.cos(y)


def loop_print_long(x):
    y = x * 1.5
    t = 0
    for i in range(200):
        if i % 50 == 0:
            print("at", i)
        t += i
    return y + t


def loop_break_else(x):
    y = x + 1
    for i in range(5):
        print(i)
        if i == 2:
            break
    else:
        y = y * 100
    return y - i


def loop_else_no_break(x):
    y = x + 1
    for i in range(3):
        print(i)
        if i == 7:
            break
    else:
        y = y * 100
    return y - i


def loop_continue(x):
    acc = x * 0
    for i in range(6):
        if i % 2:
            continue
        print("even", i)
        acc = acc + i
    return acc * x


def nested_loops(x):
    y = x * 2
    for i in range(3):
        for j in range(2):
            print(i, j)
            y = y + i * j
    return np.exp(y)


def loop_over_array(x):
    y = x - 1
    s = 0.0
    for v in x:
        print(float(v) > 0)
        s += v
    return y * s


def loop_list_appends(x):
    out = [9]
    y = x.sum()
    for i in range(3):
        out.append(i)
        print(len(out))
    return y + len(out)


def loop_mutates_input(x):
    for i in range(x.shape[0]):
        x[i] = x[i] * 2
        print(i)
    return x.sum()


def loop_empty(x):
    y = x * 3
    for i in range(0):
        print(i)
    return y


def loop_raises(x):
    y = x * 2
    for i in range(4):
        print(i)
        if i == 2:
            raise ValueError("stop at 2")
    return y


def loop_var_after(x):
    y = x + 1
    for k in range(4):
        print(k)
    return y * k


def loop_enumerate_zip(x):
    y = x * 0.5
    for i, (a, b) in enumerate(zip(x, x[::-1])):
        print(i, a > b)
        y = y + a * b
    return y


def loop_in_with_errstate(x):
    with np.errstate(divide="ignore"):
        y = 1.0 / x
    for i in range(2):
        print(i)
    return y


def loop_generator_input(x, gen):
    s = x * 0
    for v in gen:
        print(v)
        s = s + v
    return s


def loop_closure(x):
    fs = []
    for i in range(3):
        fs.append(lambda: i)
        print(i)
    return x + len(fs)


def loop_return_inside(x):
    for i in range(5):
        print(i)
        if i == 3:
            return x * i
    return x


def loop_var_maybe_unbound(x, n):
    y = x * 2
    for i in range(n):
        print(i)
    if n > 0:
        return y + i
    return y - 1


def loop_var_bound_before(x, n):
    i = -5
    y = x * 2
    for i in range(n):
        print(i)
    return y + i


def loop_deletes_a_local(x, flag):
    y = x * 2
    t = 5
    for i in range(2):
        print(i)
        if i == 1:
            del t
    print("after")
    if flag:
        return y + t
    return y


def loop_comprehension_reuses_the_name(x):
    y = x * 2
    for k in range(3):
        print(k)
        v = [k for k in range(2)]
    return y + k + len(v)


def while_print(x):
    y = x * 2
    i = 0
    while i < 3:
        print(i)
        i += 1
    return y + i


def while_break_else(x, n):
    y = x + 1
    i = 0
    while i < n:
        print("it", i)
        if i == 5:
            break
        i += 1
    else:
        y = y * 10
    return y - i


def while_true_break(x):
    y = x * 1
    k = 0
    while True:
        k += 1
        print(k)
        if k > 2:
            break
    return y * k


def while_around_for(x):
    t = x * 3
    j = 0
    while j < 2:
        for q in range(2):
            print(j, q)
        j += 1
    return t + j


CASES = [
    (while_print, [(X,)]),
    (while_break_else, [(X, 2), (X, 0), (X, 9)]),
    (while_true_break, [(X,), (X,)]),
    (while_around_for, [(X,)]),
    (loop_deletes_a_local, [(X, True), (X, False), (X, False)]),
    (loop_comprehension_reuses_the_name, [(X,), (X,)]),
    (loop_var_maybe_unbound, [(X, 2), (X, 0), (X, 3), (X, 0)]),
    (loop_var_bound_before, [(X, 2), (X, 0), (X, 3)]),
    (loop_print, [(X,)]),
    (loop_print_long, [(X,)]),
    (loop_break_else, [(X,)]),
    (loop_else_no_break, [(X,)]),
    (loop_continue, [(X,)]),
    (nested_loops, [(X,)]),
    (loop_over_array, [(X,)]),
    (loop_list_appends, [(X,)]),
    (loop_mutates_input, [(X,)]),
    (loop_empty, [(X,)]),
    (loop_raises, [(X,)]),
    (loop_var_after, [(X,)]),
    (loop_enumerate_zip, [(X,)]),
    (loop_in_with_errstate, [(X,)]),
    (loop_closure, [(X,)]),
    (loop_return_inside, [(X,)]),
]


def _printed(fn, args):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - compared as printed text
            print("raised", type(e).__name__, e)
    return buf.getvalue()


@pytest.mark.parametrize("fn,args_list", CASES, ids=[c[0].__name__ for c in CASES])
def test_breaks_inside_loops_equal_plain(fn, args_list):
    with contextlib.redirect_stdout(io.StringIO()):
        check_with_inputs(fn, args_list, "eager")
    # the printed output, in order, as plain's
    framejit.reset()
    cf = framejit.compile(fn, backend="eager")
    for args in args_list:
        copies = [a.copy() if isinstance(a, (np.ndarray, list)) else a for a in args]
        copies2 = [a.copy() if isinstance(a, (np.ndarray, list)) else a for a in args]
        assert _printed(cf, copies) == _printed(fn, copies2)


# (loop_break_else is not here: 3.12+ copy the return after the loop into the
# break's path, and a loop holding a return runs with its frame in CPython)
@pytest.mark.parametrize("fn", [loop_print, loop_print_long, loop_continue, nested_loops, loop_var_after,
                                while_print, while_around_for], ids=lambda f: f.__name__)
def test_the_code_around_the_loop_is_captured(fn):
    # before: "graph break inside a loop" made the whole frame run in CPython
    framejit.reset()
    cf = framejit.compile(fn, backend="eager")
    with contextlib.redirect_stdout(io.StringIO()):
        cf(X.copy())
    stats = framejit.counters["stats"]
    assert stats["unique_graphs"] >= 2, dict(framejit.counters["graph_break"])
    assert not any("whole frame" in r for r in framejit.counters["graph_break"])


def test_an_input_list_appended_in_the_loop():
    def f(x, out):
        y = x.sum()
        for i in range(3):
            out.append(i)
            print(len(out))
        return y + len(out), out

    framejit.reset()
    cf = framejit.compile(f, backend="eager")
    for _ in range(3):
        a, b = [7], [7]
        with contextlib.redirect_stdout(io.StringIO()) as o1:
            got = cf(X.copy(), a)
        with contextlib.redirect_stdout(io.StringIO()) as o2:
            want = f(X.copy(), b)
        assert got[0] == want[0] and a == b == [7, 0, 1, 2] and got[1] is a
        assert o1.getvalue() == o2.getvalue()


def test_a_generator_input_is_iterated_once():
    def gen():
        yield from (1.0, 2.0, 3.0)

    framejit.reset()
    cf = framejit.compile(loop_generator_input, backend="eager")
    with contextlib.redirect_stdout(io.StringIO()) as out:
        got = cf(X.copy(), gen())
    with contextlib.redirect_stdout(io.StringIO()) as out2:
        want = loop_generator_input(X.copy(), gen())
    assert np.array_equal(got, want) and out.getvalue() == out2.getvalue()


@pytest.mark.parametrize("fn", [loop_print, nested_loops, loop_break_else], ids=lambda f: f.__name__)
def test_breaks_inside_loops_under_native(fn):
    with contextlib.redirect_stdout(io.StringIO()):
        check_with_inputs(fn, [(X,), (X * 3,)], "native")


def test_the_break_is_logged_where_it_happens(logs):
    framejit.set_logs("graph_breaks")
    framejit.reset()
    cf = framejit.compile(loop_print, backend="eager")
    with contextlib.redirect_stdout(io.StringIO()):
        cf(X.copy())
    text = "\n".join(logs.lines)
    assert "call of print is not supported" in text and "whole frame" not in text, text


def loop_ends_code(x):
    # 3.12+ move the exit (the raise) inline: the loop is the code's end, and a
    # break inside it has nothing to resume after it (review: the resume point
    # was past the code, an internal error)
    y = x * 2
    i = 0
    while True:
        i += 1
        if y[i] > 1.8:
            break
    raise ValueError(i)


def loop_ends_code_print(x):
    y = x * 2
    i = 0
    while True:
        i += 1
        print(i)
        if y[i] > 1.8:
            break
    raise ValueError(i)


@pytest.mark.parametrize("capture", [True, False])
@pytest.mark.parametrize("fn", [loop_ends_code, loop_ends_code_print])
def test_break_in_a_loop_that_ends_the_code(fn, capture):
    import warnings
    x = np.r_[np.zeros(40), 0.95, np.zeros(5)]
    old = framejit.config.capture_loops
    framejit.config.capture_loops = capture
    try:
        framejit.reset()
        cf = framejit.compile(fn, backend="eager")
        for _ in range(2):
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()) as out:
                warnings.simplefilter("error")  # an internal error warns
                with pytest.raises(ValueError) as e:
                    cf(x.copy())
            with contextlib.redirect_stdout(io.StringIO()) as pout, pytest.raises(ValueError) as pe:
                fn(x.copy())
            assert str(e.value) == str(pe.value) == "40" and out.getvalue() == pout.getvalue()
    finally:
        framejit.config.capture_loops = old
