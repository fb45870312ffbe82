"""A `break` on data in a captured for loop (issue 21; csrc/trace/trace_loops.c,
loop_break and for_exit; docs/loops.md, "Breaks"): `if t: break` is an exit of
the loop node whose state is the iteration's locals where it breaks (after the
break's own moves, `k = i`).  Each function compiled against plain CPython
(results, inputs afterwards, exceptions, warnings) on both backends; what the
graph holds (one loop node); and the native kernel stopping at the break (the
eager loop runs that one iteration, no fallback counted)."""
import warnings

import numpy as np
import pytest

import framejit

from difftools import _copy, check_with_inputs, native_loop_plans, same


def loop_nodes(fn, *args):
    graphs = []
    framejit.reset()
    cf = framejit.compile(fn, backend=lambda g, ex: graphs.append(g) or g)
    same(cf(*_copy(args)), fn(*_copy(args)))
    return sum(1 for g in graphs for n in g.nodes
               if n.op == "call_function" and isinstance(n.target, framejit._C.Loop))


# ---------------------------------------------------------------- kernels

def sum_until_negative(x):
    s = x[0] * 0
    for i in range(x.shape[0]):
        if x[i] < 0:
            break
        s = s + x[i]
    return s, i


def find_first(x, v):
    k = -1
    for i in range(len(x)):
        if x[i] == v:
            k = i
            break
    return k


def found_flag(x, v):
    found = False
    for i in range(len(x)):
        if x[i] == v:
            found = True
            break
    return found


def accumulate_until(x, lim):
    t = x[0] * 0
    n = 0
    for i in range(x.shape[0]):
        t = t + x[i]
        if t > lim:
            break
        n += 1
    return n, t


def store_then_break(x, y):
    for i in range(x.shape[0]):
        y[i] = x[i] * 2.0
        if y[i] > 10.0:
            break
    return y


def two_breaks(x, lo, hi):
    k = -1
    high = False
    for i in range(x.shape[0]):
        if x[i] < lo:
            k = i
            break
        if x[i] > hi:
            k, high = i, True
            break
    return k, high


def break_computes(x):
    # an operation in the break's block (not a move): the loop is unrolled or
    # runs as it is, never wrong
    k = -1
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            k = -i
            break
    return k


def break_on_else_side(x):
    c = 0
    for i in range(x.shape[0]):
        if x[i] >= 0:
            c += 1
        else:
            break
    return c


def int_search(a, v):
    pos = -1
    for j in range(a.shape[0]):
        if a[j] >= v:
            pos = j
            break
    return pos


def index_after(x):
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            break
    return i


def symbolic_range(x, n):
    k = n
    for i in range(n):
        if x[i] > 0.9:
            k = i
            break
    return k


def nested_row_search(m, t):
    # a break in the inner loop only: the outer loop goes on (native: the
    # inner loop's break runs eager)
    out = np.zeros(m.shape[0], dtype=np.int64)
    for r in range(m.shape[0]):
        c = m.shape[1]
        for j in range(m.shape[1]):
            if m[r, j] > t:
                c = j
                break
        out[r] = c
    return out


def row_sums_until(m, t):
    # per row: the sum up to the first element above t, and where it stopped
    sums = np.zeros(m.shape[0])
    stops = np.zeros(m.shape[0], dtype=np.int64)
    for r in range(m.shape[0]):
        s = m[r, 0] * 0
        j = -1
        for j in range(m.shape[1]):
            if m[r, j] > t:
                break
            s = s + m[r, j]
        sums[r] = s
        stops[r] = j
    return sums, stops


def outer_break_after_inner(m, t):
    tot = m[0, 0] * 0
    for r in range(m.shape[0]):
        for j in range(m.shape[1]):
            tot = tot + m[r, j]
        if tot > t:
            break
    return tot, r


def for_else(x, v):
    for i in range(x.shape[0]):
        if x[i] == v:
            k = i
            break
    else:
        k = -1
    return k


def raises_before_break(x, idx):
    s = x[0] * 0
    for i in range(idx.shape[0]):
        s = s + x[idx[i]]
        if s > 100.0:
            break
    return s


def overflow_before_break(a):
    t = a[0] * 0
    for i in range(a.shape[0]):
        t = t + a[i] * a[i]
        if t < 0:
            break
    return t


def float32_until(x):
    s = x[0] * np.float32(0)
    for i in range(x.shape[0]):
        if x[i] > np.float32(0.95):
            break
        s = s + x[i]
    return s


def helper_search(v, t):
    k = -1
    for i in range(v.shape[0]):
        if v[i] > t:
            k = i
            break
    return k


def calls_helper(x):
    return helper_search(x, 0.5) + helper_search(x * 2.0, 1.5)


def break_type_changes(x):
    k = None
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            k = i
            break
    return k


def constant_after_break(x):
    k = -1
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            k = i
            break
        k = 7
    return k


def while_break(x, lim):
    # a test on Python ints: a break on data in its unrolled iterations arms
    # its capture at its first test (fj_trace_while_break_arm)
    i = 0
    s = x[0] * 0
    while i < x.shape[0]:
        if s + x[i] > lim:
            break
        s = s + x[i]
        i += 1
    return i, s


def while_break_data_test(x, y):
    i = 0
    k = -1
    while x[i] > 0.01:
        if y[i] < 0:
            k = i
            break
        i += 1
    return k, i


def while_else(x, y):
    # the break jumps past the else clause: not an exit of the loop node
    i = 0
    while x[i] > 0.01:
        if y[i] < 0:
            k = i
            break
        i += 1
    else:
        k = -1
    return k, i


def while_found(x, v):
    i = 0
    found = False
    while i < len(x):
        if x[i] == v:
            found = True
            break
        i += 1
    return found, i


def inner_while_then_break(x):
    # the inner while loop's exit is followed by the outer loop's break: the
    # inner test is no break of the outer loop
    j = 0
    for i in range(x.shape[0]):
        while j < x.shape[0] and x[j] > 0.2:
            j += 1
        break
    return i, j


def find_return(x, v):
    for j in range(len(x)):
        if x[j] == v:
            return j
    return -1


def any_above(x, t):
    for j in range(x.shape[0]):
        if x[j] > t:
            return True
    return False


def return_local(x, t):
    n = 0
    for j in range(x.shape[0]):
        if x[j] > t:
            return n
        n += 2
    return n


def return_or_break(x, lo, hi):
    k = -7
    for j in range(x.shape[0]):
        if x[j] < lo:
            return j
        if x[j] > hi:
            k = j
            break
    return k


def return_other_type(x, t):
    # an int in the loop, None after it: not captured (the return's value
    # would be of two types), never wrong
    for j in range(x.shape[0]):
        if x[j] > t:
            return j
    return None


def return_float_vs_int(x, t):
    for j in range(x.shape[0]):
        if x[j] > t:
            return j
    return -1.0


def search_helper(v, t):
    for j in range(v.shape[0]):
        if v[j] >= t:
            return j
    return v.shape[0]


def calls_search_helper(x):
    # the helper inlined twice: its return values go on into the caller's trace
    return search_helper(x, 0.25) * 1000 + search_helper(x, 0.75)


def return_in_inner(m, t):
    for r in range(m.shape[0]):
        for j in range(m.shape[1]):
            if m[r, j] > t:
                return r * 100 + j
    return -1


# found by review: a break in an inner loop whose slots read each other (the
# native kernel set them one after another); locals the iteration sets only
# after a break that may come first (their value before the loop is of
# another type); an implicit `return None` after a loop with a break

def inner_break_reads_slot(m, t):
    out = np.zeros(m.shape[0], dtype=np.int64)
    for r in range(m.shape[0]):
        k = -1
        q = -2
        for j in range(m.shape[1]):
            if m[r, j] > t:
                q = k
                k = j
                break
        out[r] = q * 1000 + k
    return out


def inner_break_swaps(m, t):
    out = np.zeros(m.shape[0], dtype=np.int64)
    for r in range(m.shape[0]):
        a = 1
        b = 2
        for j in range(m.shape[1]):
            a = a + j
            if m[r, j] > t:
                a, b = b, a
                break
        out[r] = a * 100000 + b
    return out


def none_before_set_after_break(x):
    k = None
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            break
        k = i
    return k is None


def int_before_float_after_break(x):
    v = 0
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            break
        v = x[i]
    return isinstance(v, float), v


def shape_before_other_after_break(x):
    y = np.zeros(3)
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            break
        y = x[i] * np.ones(5)
    return y.shape[0]


def implicit_return_none(x, y):
    for i in range(x.shape[0]):
        y[i] = x[i] * 2.0
        if x[i] > 0.5:
            break


# found by the second review: a return of a value from before the loop (its
# metadata was lifted into a detached body: an internal error); a helper's
# loop inlined per row (3.12+ copy a plain return into a break: two return
# slots nothing set kept the whole loop from compiling to C); a return that
# leaves a local the code after it would read unset

def return_outer_value(x, t):
    y = x[:3] * 2
    z = x[:3] + 1
    for i in range(x.shape[0]):
        if x[i] > t:
            return y
    return z


def first_at_or_above(grid, q):
    k = grid.shape[0]
    for j in range(grid.shape[0]):
        if grid[j] >= q:
            k = j
            break
    return k


def search_by_helper(grid, queries, out):
    for q in range(queries.shape[0]):
        out[q] = first_at_or_above(grid, queries[q])
    return out


def index_of_first(grid, q):
    for j in range(grid.shape[0]):
        if grid[j] >= q:
            return j
    return -1


def search_by_returning_helper(grid, queries, out):
    for q in range(queries.shape[0]):
        out[q] = index_of_first(grid, queries[q])
    return out


def return_before_set(x, t):
    k = None
    for i in range(x.shape[0]):
        if x[i] > t:
            return -1
        k = i
    return k


GRID = np.sort(np.random.default_rng(5).random(500))
QUERIES = np.r_[np.random.default_rng(6).random(300), 2.0, -1.0]

M30 = np.zeros((40, 60))
M30[:, 30] = 1.0

RNG = np.random.default_rng(21)
U = RNG.random(400)
POS = np.abs(RNG.standard_normal(300))
NEG_AT = [np.r_[POS[:k], -1.0, POS[k:]] for k in (0, 1, 150, 300)]
I64 = np.arange(500, dtype=np.int64) * 3
M = RNG.random((40, 60))

CASES = [
    (sum_until_negative, [(a,) for a in NEG_AT] + [(POS,)]),
    (find_first, [(np.arange(500.0), 0.0), (np.arange(500.0), 321.0), (np.arange(500.0), -2.0),
                  (np.arange(500.0), np.nan)]),
    (found_flag, [(np.arange(300.0), 17.0), (np.arange(300.0), 1e9)]),
    (accumulate_until, [(POS, 5.0), (POS, 1e9), (POS, -1.0)]),
    (store_then_break, [(np.linspace(0, 10, 200), np.zeros(200)), (np.linspace(0, 4, 200), np.zeros(200)),
                        (np.r_[20.0, np.zeros(99)], np.ones(100))]),
    (two_breaks, [(U, 0.001, 0.999), (U, -1.0, 2.0), (U, 0.5, 2.0), (U, -1.0, 0.0)]),
    (break_on_else_side, [(a,) for a in NEG_AT]),
    (int_search, [(I64, 0), (I64, 700), (I64, 10 ** 6), (I64[::-1].copy(), 5)]),
    (index_after, [(U,), (np.zeros(100),), (np.r_[0.9, np.zeros(99)],)]),
    (symbolic_range, [(U, 50), (U, 200), (U, 0), (U, 300), (np.zeros(400), 120)]),
    (nested_row_search, [(M, 0.9), (M, 2.0), (M, -1.0)]),
    (outer_break_after_inner, [(M, 100.0), (M, 1e9), (M, -1.0)]),
    (row_sums_until, [(M, 0.95), (M, 2.0), (M, -1.0), (M.astype(np.float32), 0.5)]),
    (for_else, [(np.arange(300.0), 5.0), (np.arange(300.0), -5.0)]),
    (raises_before_break, [(POS, np.arange(300)), (POS, np.r_[np.arange(100), 400, np.arange(50)]),
                           (POS, np.r_[np.arange(299), 301])]),
    (float32_until, [(U.astype(np.float32),), (np.zeros(90, np.float32),)]),
    (calls_helper, [(U,), (np.zeros(80),)]),
    (break_type_changes, [(U,), (np.zeros(80),)]),
    (constant_after_break, [(U,), (np.zeros(80),)]),
    (break_computes, [(U,), (np.zeros(80),)]),
    (while_break, [(POS, 10.0), (POS, 1e9), (POS, -1.0)]),
    (while_break_data_test, [(np.r_[U + 0.02, 0.0], np.r_[np.ones(200), -1.0, np.ones(200)]),
                             (np.r_[U + 0.02, 0.0], np.ones(401)), (np.r_[U + 0.02, 0.0], -np.ones(401))]),
    (while_else, [(np.r_[U + 0.02, 0.0], np.r_[np.ones(200), -1.0, np.ones(200)]),
                  (np.r_[U + 0.02, 0.0], np.ones(401))]),
    (while_found, [(np.arange(300.0), 17.0), (np.arange(300.0), -3.0)]),
    (find_return, [(np.arange(500.0), 0.0), (np.arange(500.0), 321.0), (np.arange(500.0), 499.0),
                   (np.arange(500.0), -2.0)]),
    (any_above, [(U, 0.5), (U, 2.0), (U.astype(np.float32), 0.999)]),
    (return_local, [(U, 0.99), (U, 2.0)]),
    (return_or_break, [(U, 0.001, 0.999), (U, -1.0, 0.995), (U, 0.5, 0.4), (U, -1.0, 2.0)]),
    (return_other_type, [(U, 0.9), (U, 2.0)]),
    (return_float_vs_int, [(U, 0.9), (U, 2.0)]),
    (calls_search_helper, [(np.sort(U),), (np.zeros(50),)]),
    (return_in_inner, [(M, 0.99), (M, 2.0)]),
    (inner_break_reads_slot, [(M30, 0.5), (M30, 2.0), (M, 0.9)]),
    (inner_break_swaps, [(M30, 0.5), (M30, 2.0), (M, 0.9)]),
    (none_before_set_after_break, [(np.ones(300),), (np.zeros(300),), (np.r_[np.zeros(100), 1.0, np.zeros(10)],)]),
    (int_before_float_after_break, [(np.ones(300),), (np.zeros(300),)]),
    (shape_before_other_after_break, [(np.ones(300),), (np.zeros(300),)]),
    (implicit_return_none, [(U, np.zeros(400)), (np.zeros(300), np.ones(300))]),
    (return_outer_value, [(np.arange(100.0), 50.5), (np.arange(100.0), 500.0)]),
    (search_by_helper, [(GRID, QUERIES, np.zeros(302, dtype=np.int64))]),
    (search_by_returning_helper, [(GRID, QUERIES, np.zeros(302, dtype=np.int64))]),
    (return_before_set, [(U, 0.9), (U, 2.0), (U, -1.0)]),
    (inner_while_then_break, [(U,), (np.ones(50),)]),
]


@pytest.mark.parametrize("fn,args_list", CASES, ids=[c[0].__name__ for c in CASES])
@pytest.mark.parametrize("backend", ["eager", "native"])
def test_for_break_differential(fn, args_list, backend):
    check_with_inputs(fn, args_list, backend)


def test_overflow_before_break_warns_as_numpy():
    a = np.r_[np.arange(100, dtype=np.int64), np.int64(3_100_000_000), np.arange(50, dtype=np.int64)]
    for backend in ("eager", "native"):
        framejit.reset()
        cf = framejit.compile(overflow_before_break, backend=backend)
        for _ in range(2):
            with warnings.catch_warnings(record=True) as got:
                warnings.simplefilter("always")
                plain = overflow_before_break(a.copy())
            with warnings.catch_warnings(record=True) as got2:
                warnings.simplefilter("always")
                r = cf(a.copy())
            same(r, plain)
            assert [str(w.message) for w in got2] == [str(w.message) for w in got]
        with np.errstate(over="raise"):
            with pytest.raises(FloatingPointError):
                overflow_before_break(a.copy())
            with pytest.raises(FloatingPointError):
                cf(a.copy())


@pytest.mark.parametrize("fn,args", [
    (sum_until_negative, (NEG_AT[2],)), (find_first, (np.arange(500.0), 321.0)),
    (found_flag, (np.arange(300.0), 17.0)), (accumulate_until, (POS, 5.0)),
    (store_then_break, (np.linspace(0, 10, 200), np.zeros(200))), (two_breaks, (U, 0.001, 0.999)),
    (break_on_else_side, (NEG_AT[2],)), (int_search, (I64, 700)), (index_after, (U,)),
    (symbolic_range, (U, 200)), (nested_row_search, (M, 0.9)), (outer_break_after_inner, (M, 100.0)),
    (float32_until, (U.astype(np.float32),)),
    (while_break_data_test, (np.r_[U + 0.02, 0.0], np.r_[np.ones(200), -1.0, np.ones(200)])),
    (while_break, (POS, 10.0)), (while_found, (np.arange(300.0), 17.0)),
    (find_return, (np.arange(500.0), 321.0)), (any_above, (U, 0.5)), (return_local, (U, 0.99)),
    (return_or_break, (U, -1.0, 0.995)), (implicit_return_none, (U, np.zeros(400))),
    (return_outer_value, (np.arange(100.0), 50.5)), (return_before_set, (U, 0.9)),
], ids=lambda p: getattr(p, "__name__", ""))
def test_break_is_captured_in_one_loop_node(fn, args):
    assert loop_nodes(fn, *args) == 1


@pytest.mark.parametrize("fn,args", [
    (break_type_changes, (U,)),      # None before, an int at the break
    (constant_after_break, (U,)),    # the iteration sets k to a constant
    (break_computes, (U,)),          # an operation before the break: not a move
    (for_else, (np.arange(300.0), 5.0)),  # the break jumps past the else clause
    (while_else, (np.r_[U + 0.02, 0.0], np.r_[np.ones(200), -1.0, np.ones(200)])),
    (return_other_type, (U, 0.9)),   # an int returned in the loop, None after it
    (return_float_vs_int, (U, 0.9)),  # an int in the loop, a float after it
])
def test_breaks_not_captured_where_unsound(fn, args):
    assert loop_nodes(fn, *args) == 0


@pytest.mark.parametrize("fn,args", [
    (sum_until_negative, (NEG_AT[2],)), (sum_until_negative, (NEG_AT[0],)), (sum_until_negative, (POS,)),
    (find_first, (np.arange(5000.0), 4321.0)), (accumulate_until, (POS, 5.0)),
    (store_then_break, (np.linspace(0, 10, 2000), np.zeros(2000))), (two_breaks, (U, 0.001, 0.999)),
    (int_search, (I64, 700)), (symbolic_range, (U, 200)), (outer_break_after_inner, (M, 100.0)),
    (while_break_data_test, (np.r_[U + 0.02, 0.0], np.r_[np.ones(200), -1.0, np.ones(200)])),
    (while_break, (POS, 10.0)), (while_found, (np.arange(3000.0), 1717.0)),
    (find_return, (np.arange(5000.0), 4321.0)), (any_above, (U, 0.99)), (return_or_break, (U, -1.0, 0.995)),
], ids=lambda p: getattr(p, "__name__", ""))
def test_native_kernel_stops_at_the_break(fn, args):
    """The C loop runs up to the break and stops there (its stores in that
    iteration undone); the eager loop runs the breaking iteration: no fallback."""
    plans = native_loop_plans(fn, args)
    src = "".join(p.source for p in plans)
    assert "int fj_l" in src and "xit_ = 1; goto stop;" in src
    assert all(p.fallbacks == 0 for p in plans), [p.fallbacks for p in plans]


@pytest.mark.parametrize("fn,args", [(nested_row_search, (M, 0.9)), (nested_row_search, (M, -1.0)),
                                     (row_sums_until, (M, 0.95)), (row_sums_until, (M, 2.0)),
                                     (inner_break_reads_slot, (M30, 0.5)), (inner_break_swaps, (M30, 0.5)),
                                     (search_by_helper, (GRID, QUERIES, np.zeros(302, dtype=np.int64))),
                                     (search_by_returning_helper, (GRID, QUERIES, np.zeros(302, dtype=np.int64)))],
                         ids=["search", "search-first", "sums", "sums-never", "reads-slot", "swaps", "helper",
                              "returning-helper"])
def test_native_inner_loop_break_ends_the_c_loop(fn, args):
    """A break in an inner loop: its state slots take the break's values and
    the C loop ends; the outer loop goes on in C."""
    plans = native_loop_plans(fn, args)
    src = "".join(p.source for p in plans)
    assert "int fj_l" in src and "xit_ = 1" not in src
    assert any(line.strip().startswith("if ((") and line.endswith("break; }") and " = " in line
               for line in src.split("\n"))
    assert all(p.fallbacks == 0 for p in plans), [p.fallbacks for p in plans]


def test_return_in_loop_graph_picks_the_value():
    """`return j` in the loop and `return -1` after it: one loop node, then a
    loop_pick of the loop's returned value and the one after it."""
    graphs = []
    framejit.reset()
    cf = framejit.compile(find_return, backend=lambda g, ex: graphs.append(g) or g)
    assert cf(np.arange(500.0), 321.0) == 321
    assert cf(np.arange(500.0), -5.0) == -1
    targets = [str(n.target) for g in graphs for n in g.nodes if n.op == "call_function"]
    assert any("loop_pick" in t for t in targets), targets
    assert sum(isinstance(n.target, framejit._C.Loop) for n in graphs[0].nodes) == 1


def test_symbolic_range_breaks():
    """A loop over a dynamic length with a break (it may run no iteration): a
    local set before it or only by the breaks keeps its value (found by review)."""
    rng = np.random.default_rng(2)
    for fn in (symbolic_range, index_after, none_before_set_after_break, find_return, find_first):
        for backend in ("eager", "native"):
            framejit.reset()
            cf = framejit.compile(fn, backend=backend)
            for n in (300, 400, 257, 0, 1, 2, 1000):
                x = rng.random(n)
                framejit.mark_dynamic(x, 0)
                args = {symbolic_range: (x, n), index_after: (x,), none_before_set_after_break: (x,),
                        find_return: (x, x[n // 2] if n else 0.5), find_first: (x, x[n // 3] if n else 0.5)}[fn]
                try:
                    plain = ("ok", fn(*_copy(args)))
                except Exception as e:  # noqa: BLE001
                    plain = ("raise", type(e))
                try:
                    got = ("ok", cf(*_copy(args)))
                except Exception as e:  # noqa: BLE001
                    got = ("raise", type(e))
                assert got[0] == plain[0], (fn.__name__, backend, n, got, plain)
                if got[0] == "ok":
                    same(got[1], plain[1])
                else:
                    assert got[1] is plain[1]


def test_break_first_iteration_leaves_no_store():
    # the kernel stops in the iteration's middle, after its store: undone, the
    # eager loop stores and breaks
    x = np.r_[50.0, np.arange(1000.0)]
    for backend in ("eager", "native"):
        framejit.reset()
        cf = framejit.compile(store_then_break, backend=backend)
        for _ in range(2):
            y = np.full(1001, -1.0)
            same(cf(x, y), store_then_break(x, np.full(1001, -1.0)))
            assert y[0] == 100.0 and (y[1:] == -1.0).all()
