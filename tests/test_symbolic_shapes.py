"""Symbolic sizes (issue 22, docs/dynamic.md "Sizes read by the program").

A size the program reads from a dynamic dim (x.shape[0], len(x), x.size,
n, m = x.shape) is a symbolic int: a graph input read from
L['x'].shape[0], so one graph serves every size the guards let through.
Python int inputs that change become symbolic without the 0/1
specialization (as torch does for ints).  Every function here runs
compiled and plain over at least five sizes, comparing results (type,
dtype, values, exceptions) and counting graphs.
"""
import numpy as np
import pytest

import framejit
from difftools import _copy, check_differential, outcome, same


def graphs():
    return framejit.counters["stats"].get("unique_graphs", 0)


def run_sizes(fn, args_list, backend="eager"):
    """fn compiled against plain over args_list (twice each: the second a
    cache hit; difftools.check_differential); returns the number of graphs made."""
    check_differential(fn, args_list, expect_graph=False, backend=backend)
    return graphs()


def rng(k):
    return np.random.default_rng(k)


def vec(n, k=0):
    return rng(n * 7 + k).standard_normal(n)


def rows(r, c=5, k=0):
    return rng(r * 13 + c + k).standard_normal((r, c))


POW2 = [2 ** k for k in range(2, 11)]          # 4 .. 1024: the sizes
SIZES = [3, 5, 8, 13, 21, 34]


# ---- sizes read by the program: one graph after the first (at most 2) ----

def tanh_times_len0(x):
    return np.tanh(x) * x.shape[0]


def div_len(x):
    return x / len(x)


def plus_size(x):
    return x + x.size


def size_arith(x):
    return x * (x.shape[0] - 1) + x.shape[0] // 2


def size_mod(x):
    return x + x.shape[0] % 3


def size_true_div(x):
    return x * (x.shape[0] / 2.0)


def size_neg(x):
    return x * -x.shape[0]


def size_pow_const(x):
    return x / x.shape[0] ** 2


def centered(x):
    return x - x.sum(axis=0) / len(x)


def sample_var(x):
    m = x.sum(axis=0) / x.shape[0]
    return ((x - m) ** 2).sum(axis=0) / (x.shape[0] - 1)


def shape_unpack(x):
    n, m = x.shape
    return x.sum(axis=1) / m + n


def size_2d(x):
    return x * x.size


def mean_rows(x):
    return x.sum(axis=0) / x.shape[0]


def row_norm_by_cols(x):
    return (x - x.mean(axis=1, keepdims=True)) / x.shape[1]


def row_normalise(x):
    return x / np.sqrt((x * x).sum(axis=1, keepdims=True))


def returns_size(x):
    return x * 2.0, x.shape[0]


def returns_shape(x):
    return np.exp(x), x.shape


def returns_len_sum(x):
    return len(x) + x.shape[0] * 3


def size_of_other(x, y):
    return x * y.shape[0] + y.sum()


def two_dims(x):
    return x / (x.shape[0] * x.shape[1])


def size_in_where(x):
    return np.where(x > 0, x, x.shape[0])


def size_as_float_operand(x):
    return np.maximum(x, x.shape[0] * 0.01)


def size_compared_elementwise(x):
    return x * x.shape[0] > 3.0


def size_of_derived(x):
    y = np.sin(x) + 1.0
    return y * y.shape[0]


def size_via_transpose(x):
    t = x.T
    return t * t.shape[1]


def size_of_reduction(x):
    s = x.sum(axis=1)
    return s / s.shape[0]


def size_float32(x):
    return x.astype(np.float32) * x.shape[0]


ONE_D = [tanh_times_len0, div_len, plus_size, size_arith, size_mod, size_true_div, size_neg,
         size_pow_const, centered, returns_size, returns_shape, returns_len_sum, size_as_float_operand, size_compared_elementwise, size_of_derived, size_float32]
TWO_D = [sample_var, shape_unpack, size_2d, mean_rows, row_norm_by_cols, row_normalise, size_of_reduction]


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", ONE_D, ids=lambda f: f.__name__)
def test_sizes_of_vectors_share_one_graph(fn, backend):
    assert run_sizes(fn, [(vec(n),) for n in SIZES], backend) <= 2


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", TWO_D, ids=lambda f: f.__name__)
def test_sizes_of_row_counts_share_one_graph(fn, backend):
    assert run_sizes(fn, [(rows(r),) for r in SIZES], backend) <= 2


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_size_of_another_input(backend):
    x = vec(4, 1)
    assert run_sizes(size_of_other, [(x, vec(n)) for n in SIZES], backend) <= 2


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_both_dims_change(backend):
    shapes = [(3, 4), (5, 6), (7, 9), (11, 2), (4, 13), (6, 6)]
    assert run_sizes(two_dims, [(rng(a * b).standard_normal((a, b)),) for a, b in shapes], backend) <= 2


def test_tanh_times_size_over_4_to_1024_makes_two_graphs(logs):
    """The issue's example: torch.compile makes 2 graphs here; so does framejit."""
    framejit.set_logs("graph_code", "guards")
    assert run_sizes(tanh_times_len0, [(vec(n),) for n in POW2]) == 2
    text = "\n".join(logs.lines)
    # the size is a graph input read from the array, not a constant
    assert "def forward(self, l_x_, l_x_shape_0_):" in text
    assert "tanh * l_x_shape_0_" in text
    assert "size=[None], stride=[None]" in text


def test_row_normalisation_over_row_counts_makes_two_graphs():
    for fn in (row_normalise, row_norm_by_cols, mean_rows, sample_var):
        assert run_sizes(fn, [(rows(r, 8),) for r in range(2, 40, 3)]) == 2, fn.__name__


def test_size_is_a_python_int():
    framejit.reset()
    cf = framejit.compile(returns_size)
    for n in (4, 5, 6, 7, 9):
        r = cf(vec(n))
        assert type(r[1]) is int and r[1] == n
    r = framejit.compile(returns_shape)(rows(6))
    assert type(r[1]) is tuple and r[1] == (6, 5) and all(type(v) is int for v in r[1])


def test_sizes_0_and_1_stay_specialized():
    """A dynamic dim serves sizes >= 2; 0 and 1 get graphs of their own (as
    in torch: broadcasting treats 1 apart)."""
    n = run_sizes(tanh_times_len0, [(vec(k),) for k in (4, 8, 1, 0, 16, 32, 64)])
    assert n <= 4


# ---- ints that change: no 0/1 specialization (torch makes 2 graphs here) ----

def times_n(x, n):
    return x * n


def times_n_plus(x, n):
    return x * (n + 1) - n * 2


def floordiv_by_n(x, n):
    return x * (10 // n)


def floordiv_by_n_minus_2(x, n):
    return x * (10 // (n - 2))


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", [times_n, times_n_plus], ids=lambda f: f.__name__)
def test_int_over_0_to_50_at_most_two_graphs(fn, backend):
    x = vec(5)
    assert run_sizes(fn, [(x, n) for n in range(0, 51)], backend) <= 2


@pytest.mark.parametrize("fn", [floordiv_by_n, floordiv_by_n_minus_2], ids=lambda f: f.__name__)
def test_symbolic_int_divisor_reaching_zero_raises_as_cpython(fn):
    """10 // n with n symbolic: the value 0 reaches the graph, which raises
    ZeroDivisionError before anything is visible; the frame then runs as
    CPython does (the same exception)."""
    x = vec(3)
    assert run_sizes(fn, [(x, n) for n in (3, 4, 5, 0, 1, 2, 7)]) <= 3


# ---- uses that need the value: pinned, still exact ----

def branch_on_size(x):
    if x.shape[0] > 10:
        return x * 2
    return x - 1


def zeros_of_size(x):
    return np.zeros(x.shape[0]) + x


def reshape_by_size(x):
    return x.reshape(x.shape[0], -1).sum(axis=1)


def loop_over_len(x):
    s = 0.0
    for i in range(len(x)):
        s = s + x[i]
    return s


def size_as_index(x):
    return x[x.shape[0] - 1]


def size_as_slice(x):
    return x[: x.shape[0] // 2] * 2


@pytest.mark.parametrize("fn", [branch_on_size, zeros_of_size, reshape_by_size, loop_over_len, size_as_index,
                                size_as_slice, size_in_where], ids=lambda f: f.__name__)
def test_uses_needing_the_value_stay_exact(fn):
    n = run_sizes(fn, [(vec(k),) for k in (3, 5, 8, 13, 21, 34)])
    assert n <= 6


def test_size_of_a_transpose_shares_one_graph():
    assert run_sizes(size_via_transpose, [(rows(r),) for r in SIZES]) <= 2


# ---- relations: a branch on sizes and ints keeps a guard, not a pin ----

def size_gt(x):
    if x.shape[0] > 10:
        return x * 2
    return x - 1


def size_eq_other(x, y):
    if x.shape[0] == y.shape[0]:
        return x * 2
    return x.sum() + y.sum()


def int_parity(x, n):
    if n % 2 == 0:
        return x * n
    return x + n


def int_floordiv_neg(x, n):
    if n // 3 == -1:
        return x * 3
    return x - n


def int_mod_neg(x, n):
    if n % 3 == 2:
        return x * 5
    return x + 1


def int_truth(x, n):
    if n - 5:
        return x * n
    return x


def size_arith_relation(x, n):
    if len(x) * 2 - 3 > n:
        return x + n
    return x - n


def size_negated(x):
    if -x.shape[0] < -20:
        return x * 3
    return x


def size_loop_bound(x):
    # two branches on the same size: two guards, one graph per side
    n = x.shape[0]
    if n >= 8:
        x = x * 2
    if n < 16:
        x = x + 1
    return x


REL_VEC = [size_gt, size_negated, size_loop_bound]
REL_INT = [int_parity, int_floordiv_neg, int_mod_neg, int_truth]


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", REL_VEC, ids=lambda f: f.__name__)
def test_branch_on_size_keeps_a_relation(fn, backend):
    sizes = [3, 5, 8, 13, 21, 34, 4, 9, 17, 2]
    assert run_sizes(fn, [(vec(n),) for n in sizes], backend) <= 4


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", REL_INT, ids=lambda f: f.__name__)
def test_branch_on_int_keeps_a_relation(fn, backend):
    x = vec(4)
    assert run_sizes(fn, [(x, n) for n in range(-7, 12)], backend) <= 4


def test_relation_between_two_sizes():
    pairs = [(3, 3), (4, 5), (6, 6), (7, 9), (11, 11), (8, 2), (13, 13)]
    assert run_sizes(size_eq_other, [(vec(a), vec(b, 1)) for a, b in pairs]) <= 4


def test_relation_of_size_arithmetic_and_an_int():
    args = [(vec(k), n) for k, n in [(3, 1), (5, 2), (8, 20), (13, 4), (21, 50), (6, 9), (9, 15)]]
    assert run_sizes(size_arith_relation, args) <= 4


def test_relation_guards_are_printed(logs):
    framejit.set_logs("guards")
    run_sizes(size_gt, [(vec(n),) for n in (3, 5, 8, 13, 21)])
    text = "\n".join(logs.lines)
    assert "RELATION: L['x'].shape[0] <= 10" in text
    assert "RELATION: L['x'].shape[0] > 10" in text
    framejit.reset()
    logs.lines.clear()
    run_sizes(int_parity, [(vec(3), n) for n in range(0, 6)])
    text = "\n".join(logs.lines)
    assert "RELATION: L['n'] % 2 != 0" in text and "RELATION: L['n'] % 2 == 0" in text


def test_relation_with_ints_past_int64_recompiles_exactly():
    """An int past int64 fails the relation guard (the guard computes in
    int64): a recompile, never a wrong side."""
    x = vec(3)
    args = [(x, n) for n in (2, 3, 4, 2 ** 70, 2 ** 70 + 1, -(2 ** 80), 6)]
    run_sizes(int_parity, args)


def test_relation_side_not_taken_is_a_cache_miss():
    framejit.reset()
    cf = framejit.compile(size_gt)
    for n in (3, 5, 6, 7):
        same(cf(vec(n)), size_gt(vec(n)))
    assert graphs() == 2
    same(cf(vec(12)), size_gt(vec(12)))  # the other side: a new graph
    assert graphs() == 3
    for n in (11, 40, 9, 2):
        same(cf(vec(n)), size_gt(vec(n)))
    assert graphs() <= 4


# ---- indexing and stores on dynamic arrays: no pin, NumPy's errors at run time ----

from difftools import check_with_inputs  # noqa: E402

log = []


def copy_loop(x, y):
    for i in range(len(x)):
        y[i] = x[i] * 2.0
    return y


def store_row(x, v):
    x[:, 0] = v
    return x


def index_last(x, k):
    return x[k] * 2.0


def store_after_effect(x, y):
    log.append(len(log))  # a side effect replayed after the graph: sizes pinned
    y[3] = x[0]
    return y


def test_loop_store_over_sizes_one_graph():
    args = [(np.arange(k, dtype=float), np.zeros(k)) for k in (3, 5, 8, 30, 100, 7)]
    c = check_with_inputs(copy_loop, args)
    assert c["stats"]["unique_graphs"] == 2


def test_loop_store_out_of_range_raises_after_the_earlier_stores():
    # y shorter than x: IndexError at i == len(y), y[:len(y)] written, as in CPython
    args = [(np.arange(k, dtype=float), np.zeros(m)) for k, m in ((3, 3), (5, 5), (8, 6), (9, 9), (12, 4))]
    check_with_inputs(copy_loop, args)


def test_store_of_a_value_that_does_not_fit_raises_as_numpy():
    args = [(rows(r), vec(m)) for r, m in ((3, 3), (4, 4), (6, 6), (7, 5), (8, 8), (9, 2))]
    check_with_inputs(store_row, args)


def test_integer_index_out_of_range_raises_as_numpy():
    args = [(vec(k), i) for k, i in ((3, 2), (5, 4), (8, 7), (6, 9), (10, -11), (12, -3))]
    check_with_inputs(index_last, args)


def test_store_after_a_side_effect_still_pins():
    """The append is replayed after the graph: an IndexError inside the graph
    would lose it, so the sizes are pinned and the trace's check holds."""
    framejit.reset()
    cf = framejit.compile(store_after_effect)
    for k, m in ((4, 5), (6, 7), (8, 3), (9, 9), (11, 12), (5, 2)):
        for fn in (store_after_effect, cf):
            log.clear()
            y = np.zeros(m)
            got = outcome(fn, (vec(k), y))
            assert len(log) == 1, (fn, k, m)
            if m > 3:
                assert got[0] == "ok" and got[1][3] == vec(k)[0]
            else:
                assert got[0] == "raise" and got[1] is IndexError


# ---- shape arguments of sizes and ints: results with symbolic dims ----

def zeros_like_len(x):
    return np.zeros(x.shape[0]) + x


def ones_rows_by_cols(x):
    n, m = x.shape
    return np.ones((n, 3)) * x.sum(axis=1, keepdims=True)


def empty_filled(x):
    e = np.empty(len(x))
    e[:] = x * 2.0
    return e


def reshape_rows_flat(x):
    return x.reshape(x.shape[0], -1).sum(axis=1)


def reshape_rows_explicit(x):
    return x.reshape(x.shape[0], 6) * 2.0


def reshape_tuple(x):
    return np.reshape(x, (x.shape[0], -1)).mean(axis=1)


def reshape_unknown_rows(x):
    # (s, 2, 3) -> (-1, 6): the unknown entry is the symbol no entry names
    return x.reshape(-1, 6).sum(axis=1) * x.shape[0]


def full_of_size(x):
    return np.full(x.shape[0], 2.5) * x


def zeros_int_input(x, n):
    return np.zeros(n) + x


def ones_2d_int(x, n):
    return np.ones((n, 2)) * x


def zeros_int_reshape(x, n):
    return np.zeros((n, 4)).reshape(n, -1) + x


def reshape_wrong_size(x):
    return x.reshape(x.shape[0], 5)  # (s0, 2, 3): raises ValueError, as NumPy


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", [zeros_like_len, full_of_size, empty_filled], ids=lambda f: f.__name__)
def test_creation_of_a_size_shares_one_graph(fn, backend):
    assert run_sizes(fn, [(vec(n),) for n in SIZES], backend) <= 2


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", [ones_rows_by_cols], ids=lambda f: f.__name__)
def test_creation_of_row_count_shares_one_graph(fn, backend):
    assert run_sizes(fn, [(rows(r),) for r in SIZES], backend) <= 2


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", [reshape_rows_flat, reshape_rows_explicit, reshape_tuple, reshape_unknown_rows],
                         ids=lambda f: f.__name__)
def test_reshape_by_own_size_shares_one_graph(fn, backend):
    assert run_sizes(fn, [(rng(r).standard_normal((r, 2, 3)),) for r in SIZES], backend) <= 2


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", [zeros_int_input, ones_2d_int, zeros_int_reshape], ids=lambda f: f.__name__)
def test_creation_of_an_int_input_shares_one_graph(fn, backend):
    assert run_sizes(fn, [(1.5, n) for n in (3, 5, 8, 13, 21, 34)], backend) <= 2


def test_int_size_guard_and_sizes_0_and_1(logs):
    """An int used as a size keeps the guard L['n'] >= 2; 0 and 1 then get a
    graph of their own, exactly."""
    framejit.set_logs("guards")
    n = run_sizes(zeros_int_input, [(1.5, k) for k in (3, 5, 8, 1, 0, 13, 2)])
    assert n <= 4
    assert "RELATION: L['n'] >= 2" in "\n".join(logs.lines)


def test_int_size_meeting_an_array_size_guards_equality(logs):
    framejit.set_logs("guards")

    def f(x, n):
        return np.zeros(n) + x

    args = [(vec(k), k) for k in (3, 5, 8, 13, 21)] + [(vec(6), 7)]  # the last: a broadcast error
    assert run_sizes(f, args) <= 3
    text = "\n".join(logs.lines)
    assert "RELATION: L['x'].shape[0] == L['n']" in text or "RELATION: L['n'] == L['x'].shape[0]" in text


def test_reshape_to_a_size_that_does_not_fit_raises_as_numpy():
    run_sizes(reshape_wrong_size, [(rng(r).standard_normal((r, 2, 3)),) for r in SIZES])


# ---- basic slicing of dynamic dims: sizes symbol + c, guarded ----

def diff1(x):
    return x[1:] - x[:-1]


def central(x):
    return (x[2:] - x[:-2]) * 0.5


def head3(x):
    return x[:3] * x.sum()


def last3(x):
    return x[-3:] + 1.0


def reversed_plus(x):
    return x[::-1] + x


def interior(x):
    return x[1:-1] * 2.0 - x[2:] - x[:-2]


def every_other_pinned(x):
    return x[::2] * 2.0  # step 2: not modelled, pinned (exact)


def col0(x):
    return x[:, 0] * 2.0 + x[:, 1]


def rows_inner(x):
    return x[1:-1, :] - x[:-2, :]


def with_newaxis(x):
    return x[:, None] * x[None, :]


def ellipsis_last(x):
    return x[..., 0] + x[..., -1]


def slice_of_slice(x):
    y = x[1:]
    return y[1:] - x[2:]


def tail_meets_other(x, y):
    return x[1:] + y


def slice_reduced(x):
    d = x[1:] - x[:-1]
    return d.mean()


SLICE_VEC = [diff1, central, head3, last3, reversed_plus, interior, with_newaxis, slice_of_slice, slice_reduced]
SLICE_ROWS = [col0, rows_inner, ellipsis_last]


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", SLICE_VEC, ids=lambda f: f.__name__)
def test_slices_of_vectors_share_one_graph(fn, backend):
    assert run_sizes(fn, [(vec(n),) for n in (5, 6, 8, 13, 21, 34)], backend) <= 2


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", SLICE_ROWS, ids=lambda f: f.__name__)
def test_slices_of_rows_share_one_graph(fn, backend):
    assert run_sizes(fn, [(rows(r),) for r in (5, 6, 8, 13, 21, 34)], backend) <= 2


def test_slice_meeting_another_size_guards_the_relation(logs):
    framejit.set_logs("guards")
    args = [(vec(k), vec(k - 1, 1)) for k in (5, 6, 8, 13, 21)] + [(vec(9), vec(9, 1))]  # the last: ValueError
    assert run_sizes(tail_meets_other, args) <= 3
    assert "RELATION: L['x'].shape[0] - 1 == L['y'].shape[0]" in "\n".join(logs.lines)


def test_slices_across_their_regimes_stay_exact():
    # sizes below a constant bound (x[:3] with 2 items), empty slices (x[2:-2] of 3)
    for fn in (head3, last3, central, interior, diff1):
        run_sizes(fn, [(vec(n),) for n in (6, 7, 2, 3, 4, 9, 2, 12)])


def test_step_two_pins_exactly():
    assert run_sizes(every_other_pinned, [(vec(n),) for n in (5, 6, 8, 13)]) <= 4


# ---- matrix products and transposes: inner sizes equal, result dims from both ----

W6 = np.random.default_rng(0).standard_normal((6, 4))


def linear_layer(x):
    return np.tanh(x @ W6) * 2.0


def gram_matrix(x):
    return x.T @ x


def row_sims(x):
    return (x @ x.T).sum(axis=1)


def mat_vec(x, v):
    return x @ v


def dots(x, y):
    return np.dot(x, y) + x.dot(y)


def transposed_sum(x):
    return np.transpose(x).sum(axis=1) + x.transpose().shape[1]


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", [linear_layer, gram_matrix, row_sims, transposed_sum], ids=lambda f: f.__name__)
def test_products_over_row_counts_share_one_graph(fn, backend):
    assert run_sizes(fn, [(rng(r).standard_normal((r, 6)),) for r in SIZES], backend) <= 2


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_mat_vec_inner_size_changes(backend):
    assert run_sizes(mat_vec, [(rng(k).standard_normal((3, k)), vec(k)) for k in SIZES], backend) <= 2


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_dot_of_two_vectors(backend):
    assert run_sizes(dots, [(vec(k), vec(k, 1)) for k in SIZES], backend) <= 2


def test_inner_sizes_that_stop_matching_raise_as_numpy(logs):
    framejit.set_logs("guards")
    args = [(rng(k).standard_normal((3, k)), vec(k)) for k in (4, 5, 6, 7)] + [(rng(8).standard_normal((3, 8)),
                                                                               vec(9))]
    assert run_sizes(mat_vec, args) <= 3
    assert "DIMS_EQUAL: L['x'].shape[1] == L['v'].shape[0]" in "\n".join(logs.lines) or \
        "DIMS_EQUAL: L['v'].shape[0] == L['x'].shape[1]" in "\n".join(logs.lines)


# ---- concatenate and stack ----

def cat_fixed(x):
    return np.concatenate([x, np.zeros(3)]) * 2.0


def cat_cols(x):
    return np.concatenate([x, x * 2.0], axis=1).sum(axis=1)


def stack_two(x):
    return np.stack([x, x + 1.0]).sum(axis=0)


def stack_inputs(x, y):
    return np.stack([x, y], axis=1)


def cat_twice_pinned(x):
    return np.concatenate([x, x])  # two symbols along the axis (2 * s): pinned


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", [cat_fixed, stack_two], ids=lambda f: f.__name__)
def test_joins_of_vectors_share_one_graph(fn, backend):
    assert run_sizes(fn, [(vec(n),) for n in SIZES], backend) <= 2


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_concatenate_columns_over_row_counts(backend):
    assert run_sizes(cat_cols, [(rows(r, 3),) for r in SIZES], backend) <= 2


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_stack_of_two_inputs_guards_their_sizes(backend):
    args = [(vec(k), vec(k, 1)) for k in SIZES] + [(vec(5), vec(6))]  # the last: ValueError as NumPy
    assert run_sizes(stack_inputs, args, backend) <= 3


def test_concatenate_of_two_symbols_pins_exactly():
    assert run_sizes(cat_twice_pinned, [(vec(n),) for n in SIZES]) <= 6


# ---- np.arange of a size ----

def weights_by_index(x):
    return x * np.arange(x.shape[0])


def arange_int(x, n):
    return np.arange(n) * x


def ramp_mean(x):
    w = np.arange(len(x)) + 1.0
    return (x * w).sum() / w.sum()


def arange_two_bounds_pinned(x):
    return np.arange(1, x.shape[0]) + x[1:]


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", [weights_by_index, ramp_mean], ids=lambda f: f.__name__)
def test_arange_of_a_size_shares_one_graph(fn, backend):
    assert run_sizes(fn, [(vec(n),) for n in SIZES], backend) <= 2


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_arange_of_an_int(backend):
    assert run_sizes(arange_int, [(1.5, n) for n in SIZES], backend) <= 2


def test_arange_over_sizes_0_and_1_and_two_bounds_stay_exact():
    run_sizes(weights_by_index, [(vec(n),) for n in (3, 5, 8, 1, 0, 13)])
    run_sizes(arange_int, [(1.5, n) for n in (3, 5, 0, 1, 8)])
    run_sizes(arange_two_bounds_pinned, [(vec(n),) for n in (3, 5, 8, 13)])


# ---- more sizes read in reductions and arithmetic ----

def mean_by_size(x):
    return x.sum() / x.size


def max_times_len(x):
    return x.max() * len(x)


def normalised_by_count(x):
    return (x - x.sum() / len(x)) / (len(x) - 1)


def shape_tuple_prod(x):
    n, m = x.shape
    return x.reshape(-1) * (n * m)


def size_int_mix(x, k):
    return x * (x.shape[0] + k) - k


def len_of_rows(x):
    return x.sum(axis=1) * len(x) - x.shape[1]


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", [mean_by_size, max_times_len, normalised_by_count], ids=lambda f: f.__name__)
def test_sizes_in_reductions_share_one_graph(fn, backend):
    assert run_sizes(fn, [(vec(n),) for n in SIZES], backend) <= 2


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", [shape_tuple_prod, len_of_rows], ids=lambda f: f.__name__)
def test_sizes_of_rows_in_arithmetic_share_one_graph(fn, backend):
    assert run_sizes(fn, [(rows(r, 4),) for r in SIZES], backend) <= 2


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_size_and_int_together(backend):
    assert run_sizes(size_int_mix, [(vec(n), n % 4 + 2) for n in SIZES], backend) <= 2


# ---- every vector function above over sizes 0, 1, 2 and back: exact ----

EDGE_SIZES = [4, 6, 2, 1, 0, 3, 9, 2, 5]


@pytest.mark.parametrize("fn", ONE_D + SLICE_VEC + [weights_by_index, ramp_mean, mean_by_size, max_times_len,
                                                    normalised_by_count, zeros_like_len, full_of_size,
                                                    empty_filled, cat_fixed, stack_two],
                         ids=lambda f: f.__name__)
def test_vector_functions_over_edge_sizes_are_exact(fn):
    # sizes 0 and 1 take graphs of their own (or CPython's errors, the same ones)
    run_sizes(fn, [(vec(n),) for n in EDGE_SIZES])


# ---- np.broadcast_to a shape of sizes ----

def broadcast_rows(x):
    return np.broadcast_to(x, (3, x.shape[0])) * 2.0


def broadcast_int(x, n):
    return np.broadcast_to(x, (n, 4)).sum(axis=0)


def broadcast_column(x):
    return np.broadcast_to(x[:, None], (x.shape[0], 5)) + 1.0


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", [broadcast_rows, broadcast_column], ids=lambda f: f.__name__)
def test_broadcast_to_a_size_shares_one_graph(fn, backend):
    assert run_sizes(fn, [(vec(n),) for n in SIZES], backend) <= 2


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_broadcast_to_an_int(backend):
    assert run_sizes(broadcast_int, [(vec(4), n) for n in SIZES], backend) <= 2


# ---- raising int ops on symbols: guarded, so side effects are never lost ----

import warnings  # noqa: E402

effects = []


def div_after_effect_size(x):
    effects.append("seen")
    n = len(x)
    n -= 2
    return x * (10 // n)


def div_after_effect_int(x, n):
    x += 1.0
    effects.append("seen")
    return x * (10 // n)


def mod_after_effect(x, n):
    effects.append("seen")
    return x * (7.0 % n) + (7 / n)


def shift_after_effect(x, n):
    x += 1.0
    effects.append("seen")
    return x * (1 >> n)


def log_then_div(x, n):
    y = np.log(x)
    return y * (10 // n)


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn,args", [
    (div_after_effect_size, [(vec(k),) for k in (3, 4, 5, 2, 6, 2)]),
    (div_after_effect_int, [(vec(3), n) for n in (2, 3, 4, 0, 5, 0, 1)]),
    (mod_after_effect, [(vec(3), n) for n in (2, 3, 4, 0, 5, -3)]),
    (shift_after_effect, [(vec(3), n) for n in (2, 3, 4, -1, 5, 0)]),
], ids=["size_div", "int_div", "mod_truediv", "shift"])
def test_raising_int_ops_keep_side_effects(fn, args, backend):
    """CPython appends, then raises (ZeroDivisionError, ValueError): so must
    the compiled function (a RELATION guard keeps the divisor off 0, the shift
    count off negatives; the values that would raise run as CPython does)."""
    framejit.reset()
    cf = framejit.compile(fn, backend=backend)
    for a in args:
        got = []
        for f in (fn, cf):
            effects.clear()
            r = outcome(f, _copy(a))
            got.append((r, list(effects)))
        (p, pe), (c, ce) = got
        assert pe == ce == ["seen"], (a, pe, ce)
        assert p[0] == c[0]
        if p[0] == "ok":
            same(c[1], p[1])
        else:
            assert p[1:] == c[1:]


def test_divisor_guard_is_printed(logs):
    framejit.set_logs("guards")
    effects.clear()
    run_sizes(div_after_effect_int, [(vec(3), n) for n in (2, 3, 4)])
    assert "RELATION: L['n'] != 0" in "\\n".join(logs.lines)


def test_a_graph_error_warns_once():
    # log(0) warns; 10 // 0 raises: the warning is seen once, as in CPython
    x = np.array([1.0, 0.0, 2.0])
    framejit.reset()
    cf = framejit.compile(log_then_div)
    for n in (2, 3, 4):
        same(cf(x.copy(), n), log_then_div(x.copy(), n))
    for f in (log_then_div, cf):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = outcome(f, (x.copy(), 0))
        assert r[0] == "raise" and r[1] is ZeroDivisionError
        assert len([m for m in w if "divide by zero" in str(m.message)]) == 1, [str(m.message) for m in w]


# ---- second review's findings ----

def squeeze_then_len(x):
    y = x.squeeze(1)
    return y.sum() / len(y)


def np_squeeze_then_size(x):
    y = np.squeeze(x, -1)
    return y * y.shape[0]


def slice_past_int64(x):
    return x[:10 ** 20] * 2.0 + x[-10 ** 20:] + x[1:2 ** 63]


def square_branch(x, n):
    if n * n > 100:
        return x * 2.0
    return x + 1.0


def div_by_square(x, n):
    return x + 10 // (n * n)


float_log = []


def huge_int_after_mutation(x, n):
    x *= 2.0
    float_log.append(n)
    return x + n


def zeros_after_effect(x, n):
    float_log.append(n)
    return np.zeros(n) + x


class ReturnsFromInit:
    def __init__(self, n):
        self.n = n
        return n * 2  # a TypeError at the call, as CPython raises


def init_returning(x, n):
    return x * ReturnsFromInit(n).n


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", [squeeze_then_len, np_squeeze_then_size], ids=lambda f: f.__name__)
def test_squeeze_with_an_axis_keeps_its_sizes(fn, backend):
    # squeeze(1) is not x[1]: the size stays the array's own
    run_sizes(fn, [(rng(n).standard_normal((n, 1)),) for n in (4, 5, 6, 9, 13)], backend)


def test_slice_bounds_past_int64_are_exact():
    run_sizes(slice_past_int64, [(vec(n),) for n in (5, 6, 8, 13)])


@pytest.mark.parametrize("fn", [square_branch, div_by_square], ids=lambda f: f.__name__)
def test_relation_not_computable_now_pins_instead_of_recompiling(fn):
    """n * n past int64: the guard could never pass; pinned, one graph for
    the value, not a recompile per call up to the limit."""
    import warnings as _w
    framejit.reset()
    cf = framejit.compile(fn)
    x = vec(3)
    same(cf(x, 2), fn(x, 2))
    same(cf(x, 3), fn(x, 3))
    with _w.catch_warnings():
        _w.simplefilter("error")  # no recompile-limit warning
        for _ in range(12):
            same(cf(x, 2 ** 40), fn(x, 2 ** 40))
    assert framejit.counters["stats"].get("recompile_limit_hit", 0) == 0
    assert graphs() <= 4


@pytest.mark.parametrize("fn,values", [(huge_int_after_mutation, (2, 3, 2 ** 1024, 4)),
                                       (zeros_after_effect, (2, 3, 4, 2 ** 62, 5))],
                         ids=["huge_int", "zeros"])
def test_symbolic_values_after_side_effects_keep_them(fn, values):
    framejit.reset()
    cf = framejit.compile(fn)
    for n in values:
        got = []
        for f in (fn, cf):
            float_log.clear()
            x = vec(3)
            r = outcome(f, (x, n))
            got.append((r, list(float_log), x))
        (p, pl, px), (c, cl, cx) = got
        assert pl == cl == [n]
        assert p[0] == c[0], (n, p, c)
        same(cx, px)
        if p[0] == "ok":
            same(c[1], p[1])
        else:
            assert p[1:] == c[1:]


def test_dynamic_log_after_an_inlined_frame_returns(logs):
    # the pin after __init__ returned logs the caller's line (the inlined frame is gone)
    framejit.set_logs("dynamic")
    run_sizes(init_returning, [(vec(3), n) for n in (2, 3, 4)])


def counter_then_scale(x, n):
    float_log.append(1)
    return x + n * 2


def test_int_after_side_effects_stays_symbolic_within_int64(logs):
    """A side effect before x + n: n stays symbolic (one graph for many
    values), guarded to fit int64 (a value past it, too big for a float
    array from 2**1024, is a cache miss and pins)."""
    framejit.set_logs("guards")
    framejit.reset()
    cf = framejit.compile(counter_then_scale)
    for n in list(range(2, 12)) + [2 ** 1024, 5]:
        got = []
        for f in (counter_then_scale, cf):
            float_log.clear()
            got.append((outcome(f, (vec(3), n)), list(float_log)))
        (p, pl), (c, cl) = got
        assert pl == cl == [1] and p[0] == c[0]
        if p[0] == "ok":
            same(c[1], p[1])
        else:
            assert p[1:] == c[1:]
        if n == 11:
            assert graphs() <= 2
    assert "L['n'] * 2 fits int64" in "\n".join(logs.lines)


# ---- slicing with a symbolic stop (x[:n], n an int input or a size) ----

def head_n(x, n):
    return x[:n] * 2.0


def head_n_stats(x, n):
    y = x[:n]
    return y.sum() / len(y), y.shape


def head_by_other_size(x, y):
    return x[:y.shape[0]] + y


def head_zero_start(x, n):
    return x[0:n] - 1.0


def head_rows(x, n):
    return x[:n].sum(axis=0) * n


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", [head_n, head_n_stats, head_zero_start], ids=lambda f: f.__name__)
def test_a_slice_to_an_int_input_shares_one_graph(fn, backend):
    # n <= len(x) throughout: one graph after the first (n guarded 2 <= n <= 40)
    assert run_sizes(fn, [(vec(40), n) for n in (3, 5, 8, 13, 21, 34)], backend) <= 2


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_a_slice_past_the_end_takes_the_clamped_side(backend):
    # n beyond len(x): the size is len(x) (guarded n >= 10), a second side
    assert run_sizes(head_n, [(vec(10), n) for n in (3, 5, 8, 12, 20, 7, 30)], backend) <= 3


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_a_slice_to_another_arrays_size_shares_one_graph(backend):
    assert run_sizes(head_by_other_size, [(vec(50), vec(n, 1)) for n in SIZES], backend) <= 2


def test_a_slice_of_rows_to_an_int_input():
    assert run_sizes(head_rows, [(rows(40), n) for n in SIZES]) <= 2


def test_a_symbolic_slice_in_the_guards(logs):
    framejit.reset()
    framejit.set_logs(guards=True)
    cf = framejit.compile(head_n, backend="eager")
    for n in (3, 4):
        cf(vec(20), n)
    text = "\n".join(logs.lines)
    assert "RELATION: L['n'] <= 20" in text and "RELATION: L['n'] >= 2" in text, text


# ---- linear sizes: slices with symbolic bounds, concatenations, flat reshapes ----
# (docs/dynamic.md "Linear sizes": a size may be a form a*s + b*t + c over the
# symbols; x[n:] is s - n, guarded n <= s and s - n >= 1)

def tail_n(x, n):
    return x[n:] * 2.0


def between(x, a, b):
    y = x[a:b]
    return y.sum() / len(y), y.shape


def head_plus_one(x, n):
    return x[:n + 1] - 1.0


def ends_n(x, n):
    return x[-n:] + x[:n]


def head_twice(x, n):
    return x[:2 * n].sum() + n


def tail_len(x, n):
    y = x[n:]
    return y / len(y), y.shape[0] - 1


def cols_n(x, n):
    return x[:, :n] * 2.0


def first_col_n(x, n):
    return x[:n, 0] + 1.0


def last_axis_tail(x, n):
    return x[..., n:].sum(axis=-1)


def store_head(x, n):
    y = x.copy()
    y[:n] = 0.0
    return y


def store_cols(x, n):
    y = x.copy()
    y[:, n:] = -1.0
    return y


SYMBOUND_VEC = [tail_n, head_plus_one, ends_n, head_twice, tail_len, store_head]
SYMBOUND_ROWS = [cols_n, last_axis_tail, store_cols]


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", SYMBOUND_VEC, ids=lambda f: f.__name__)
def test_a_slice_with_a_symbolic_start_or_expression_shares_one_graph(fn, backend):
    assert run_sizes(fn, [(vec(80), n) for n in (3, 5, 8, 13, 21, 34)], backend) <= 2


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_a_slice_between_two_int_inputs_shares_one_graph(backend):
    args = [(vec(60), a, a + k) for a, k in ((2, 5), (3, 7), (4, 9), (5, 11), (6, 12), (9, 30))]
    assert run_sizes(between, args, backend) <= 2


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", SYMBOUND_ROWS, ids=lambda f: f.__name__)
def test_a_symbolic_slice_in_a_tuple_key_shares_one_graph(fn, backend):
    assert run_sizes(fn, [(rows(6, 40), n) for n in (3, 5, 8, 13, 21, 34)], backend) <= 2


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_a_symbolic_slice_of_rows_in_a_tuple_key(backend):
    assert run_sizes(first_col_n, [(rows(40), n) for n in SIZES], backend) <= 2


@pytest.mark.parametrize("fn", [tail_n, between, head_plus_one, ends_n, tail_len, store_head],
                         ids=lambda f: f.__name__)
def test_symbolic_bounds_across_their_regimes_stay_exact(fn):
    # past the end (clamped, empty), negative, 0 and 1 (specialized), equal to the size
    ns = (3, 5, 12, 10, 0, -2, 7, 1, 20, 4, -9, 9, 2)
    if fn is between:
        args = [(vec(10), a, b) for a, b in ((2, 5), (3, 7), (4, 12), (8, 3), (-4, 9), (0, 10), (5, 5),
                                             (2, 6), (7, -1), (3, 30))]
    else:
        args = [(vec(10), n) for n in ns]
    run_sizes(fn, args)


def test_a_symbolic_slice_in_the_guards_reads_as_relations(logs):
    framejit.reset()
    framejit.set_logs(guards=True)
    cf = framejit.compile(tail_n, backend="eager")
    for n in (3, 4):
        cf(vec(40), n)
    text = "\n".join(logs.lines)
    # n >= 0 is implied by n >= 2; the slice is not empty: 40 - n >= 1
    assert "RELATION: L['n'] <= 40" in text and "RELATION: L['n'] <= 39" in text, text


def tail_meets_vec(x, n, y):
    return x[n:] + y


def test_a_tail_meeting_another_size_guards_the_linear_relation(logs):
    framejit.set_logs("guards")
    # x[n:] has len(y) items throughout (the last call: it does not, ValueError)
    args = [(vec(2 * k + 10), k, vec(k + 10, 1)) for k in (3, 5, 8, 13)] + [(vec(30), 5, vec(20, 1))]
    assert run_sizes(tail_meets_vec, args) <= 3
    assert "RELATION: L['x'].shape[0] - L['n'] == L['y'].shape[0]" in "\n".join(logs.lines)


def test_a_tail_meeting_a_fixed_size_guards_it_equal(logs):
    framejit.set_logs("guards")
    args = [(vec(k + 20), k, vec(20, 1)) for k in (3, 5, 8, 13)] + [(vec(30), 5, vec(20, 1))]
    assert run_sizes(tail_meets_vec, args) <= 3
    assert "RELATION: L['x'].shape[0] - L['n'] == 20" in "\n".join(logs.lines)


def concat_twice(x):
    y = np.concatenate([x, x])
    return y * len(y)


def concat_with_tail(x):
    y = np.concatenate([x, x[1:]], axis=0)
    return y.sum(axis=0) + y.shape[0]


def concat_two_inputs(x, y):
    z = np.concatenate([x, y, x])
    return z - z.shape[0]


def flat_rows(x):
    y = x.reshape(-1)
    return y * y.shape[0]


def flat_then_rows(x):
    return x.reshape(-1).reshape(-1, 10).sum(axis=1)


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", [concat_twice, concat_with_tail, flat_rows], ids=lambda f: f.__name__)
def test_sums_and_multiples_of_sizes_share_one_graph(fn, backend):
    arg = vec if fn is concat_twice else rows
    assert run_sizes(fn, [(arg(n),) for n in SIZES], backend) <= 2


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_a_concatenation_of_two_dynamic_inputs_shares_one_graph(backend):
    args = [(vec(n), vec(n + k, 1)) for n, k in ((3, 1), (5, 2), (8, 5), (13, 3), (21, 8))]
    assert run_sizes(concat_two_inputs, args, backend) <= 2


def test_a_reshape_whose_unknown_entry_may_not_divide_stays_right():
    # (s, 5) -> (-1, 10): right only for even s, raises for the others
    run_sizes(flat_then_rows, [(rows(n),) for n in (4, 6, 8, 7, 10, 5)])


def squeezed_tail(x):
    y = np.squeeze(x[1:])
    return y * 2, y.ndim


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_squeeze_of_a_slice_whose_size_may_be_1_stays_right(backend):
    # x[1:] of 2 items has one: squeeze changes the rank (pinned, logged)
    run_sizes(squeezed_tail, [(vec(n),) for n in (5, 6, 7, 8, 2, 3)], backend)


def window_rows_cols(x, n, m):
    return x[n:-m, :n + 1] * 2.0


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_a_tuple_key_with_computed_bounds_shares_one_graph(backend):
    # an operator between the slices (n + 1) keeps them symbolic (found by review)
    args = [(rows(30, 20), n, m) for n, m in ((2, 3), (3, 4), (4, 5), (5, 2), (6, 3), (9, 9))]
    assert run_sizes(window_rows_cols, args, backend) <= 2


def tail_of_tail(x, n):
    return x[-n:][n - 1:] * 2.0


def test_a_relation_true_for_every_size_is_not_guarded(logs):
    # x[-n:][n - 1:]: n - 1 <= n holds whatever n is: no RELATION for it (found by review)
    framejit.reset()
    framejit.set_logs(guards=True)
    assert run_sizes(tail_of_tail, [(vec(30), n) for n in (3, 4, 5, 6, 7)]) <= 2
    text = "\n".join(logs.lines)
    assert "RELATION: L['n'] <= 30" in text
    assert "L['n'] + " not in text and "L['n'] - 1 <= L['n']" not in text, text


def store_slice_in_dict(x, d):
    d[:3] = 1            # TypeError before 3.12 (a slice is not hashable), stored after
    return x * 2


def test_a_slice_key_into_a_dict_is_the_programs_own_outcome():
    framejit.config.raise_internal_errors = True
    try:
        check_differential(store_slice_in_dict, [(vec(5), {}), (vec(6), {1: 2})], expect_graph=False)
    finally:
        framejit.config.raise_internal_errors = False
    assert not framejit.counters.get("internal_error")
