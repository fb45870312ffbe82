"""Sizes that depend on the data (csrc/trace/trace_dims.c, docs/dynamic.md,
"Sizes that depend on the data"): boolean masks read and written, np.nonzero,
one-argument np.where, np.flatnonzero and np.argwhere as graph operations,
compared with plain CPython on inputs whose selections are empty, full, of
one item, non-contiguous, of other dtypes; the uses that need such a size
as a value are graph breaks with their reason."""
import numpy as np
import pytest

import framejit

from difftools import check_with_inputs

rng = np.random.default_rng(2112)

V = rng.standard_normal(11)
INPUTS_1D = {
    "mixed": V,
    "all_neg": -np.abs(V) - 0.1,           # every mask x > 0 empty
    "all_pos": np.abs(V) + 0.1,            # every mask x > 0 full
    "one": np.array([-1.0, 2.5, -3.0]),    # one item selected
    "single": np.array([4.0]),             # size 1 (specialized)
    "empty": np.zeros(0),                  # size 0
    "strided": rng.standard_normal(24)[::3],
    "reversed": rng.standard_normal(9)[::-1],
    "nan": np.array([np.nan, 1.0, -2.0, np.inf, -np.inf, 0.0]),
    "f32": rng.standard_normal(7).astype(np.float32),
    "int": np.arange(-5, 6, dtype=np.int64),
    "int32": (np.arange(10, dtype=np.int32) * 7) % 5 - 2,
    "big": rng.standard_normal(5000),
}
M2 = rng.standard_normal((6, 4))
INPUTS_2D = {
    "m2": M2,
    "fortran": np.asfortranarray(M2),
    "strided2": rng.standard_normal((8, 10))[::2, 1::3],
    "neg2": -np.abs(M2) - 1,
    "ints2": np.arange(24, dtype=np.int64).reshape(6, 4) - 10,
}


def diff(fn, args_list, backend="eager", graphs=1, breaks=()):
    """fn compiled against plain (results, exceptions, inputs afterwards);
    'graphs': at least that many graphs; 'breaks': substrings every break
    reason must contain one of (none allowed when empty)."""
    counters = check_with_inputs(fn, args_list, backend)
    reasons = dict(counters["graph_break"])
    assert counters["stats"]["unique_graphs"] >= graphs, reasons
    for r in reasons:
        assert any(b in r for b in breaks), reasons
    return reasons


# ---------------------------------------------------------------- reading through masks

def read_pos(x):
    return x[x > 0]


def read_arith(x):
    return x[x > 0] * 2 + 1


def read_sum_mean(x):
    return x[x > 0].sum() + x[x < 0].sum() * 3


def read_two_arrays(x):
    m = x >= 0
    return x[m] + (x * 3)[m] - x[m] ** 2


def read_abs_where(x):
    y = x[x != 0]
    return np.where(y > 1, y, -y)


def read_nested(x):
    y = x[x > -1]
    return y[y < 1] + 0


def read_any_all(x):
    y = x[x > 0]
    return y.any(), (y > 100).all(), (y > 1).sum()


def read_astype(x):
    return x[x > 0].astype(np.float32) + np.float32(1)


def read_sort_cumsum(x):
    y = x[x < 1]
    return np.sort(y), np.cumsum(y), np.argsort(y, kind="stable")


def read_like(x):
    y = x[x > 0]
    return np.zeros_like(y) + y, np.ones_like(y)


def read_ufuncs(x):
    y = x[x > 0]
    return np.sqrt(y), np.exp(-y), np.maximum(y, 0.5), np.abs(-y)


def read_keepdims(x):
    y = x[x > 0]
    return y.sum(keepdims=True), y.mean(axis=0)


def read_prod_var(x):
    y = x[x > 0]
    return np.prod(y), y.var(), np.std(y)


READS = [read_pos, read_arith, read_sum_mean, read_two_arrays, read_abs_where, read_nested,
         read_any_all, read_astype, read_sort_cumsum, read_like, read_ufuncs, read_keepdims,
         read_prod_var]


@pytest.mark.parametrize("name", sorted(INPUTS_1D))
@pytest.mark.parametrize("fn", READS, ids=lambda f: f.__name__)
def test_mask_reads_equal_plain(fn, name):
    diff(fn, [(INPUTS_1D[name].copy(),)], graphs=1)


def read_rows(M):
    return M[M[:, 0] > 0]


def read_rows_sum(M):
    sel = M[M[:, 1] < 0]
    return sel.sum(axis=0), sel.sum(), sel * np.arange(M.shape[1])


def read_2d_mask(M):
    return M[M > 0] - 1


def read_rows_mean_rowvec(M):
    sel = M[M.sum(axis=1) > 0]
    return sel - M.mean(axis=0)


@pytest.mark.parametrize("name", sorted(INPUTS_2D))
@pytest.mark.parametrize("fn", [read_rows, read_rows_sum, read_2d_mask, read_rows_mean_rowvec],
                         ids=lambda f: f.__name__)
def test_mask_reads_2d_equal_plain(fn, name):
    diff(fn, [(INPUTS_2D[name].copy(),)], graphs=1)


# ---------------------------------------------------------------- stores through masks

def store_scalar(x):
    x[x < 0] = 0
    return x


def store_same_mask(x, L=0.5):
    m = x > L
    x[m] = x[m] - L
    return x


def store_arith(x):
    m = x < 0
    x[m] = np.sqrt(-x[m]) * 2
    return x.sum()


def store_into_selection(x):
    y = x[x > -1]
    y[y > 0] = 0.0
    return y, x


def store_rows(M):
    m = M[:, 0] > 0
    M[m] = M[m] * 2 + np.arange(M.shape[1])
    return M


def store_row_vector(M):
    M[M[:, 1] < 0] = np.arange(M.shape[1])
    return M


def store_2d_mask(M):
    m = M > 0
    M[m] = M[m] ** 2
    return M


STORES_1D = [store_scalar, store_same_mask, store_arith, store_into_selection]


@pytest.mark.parametrize("name", sorted(INPUTS_1D))
@pytest.mark.parametrize("fn", STORES_1D, ids=lambda f: f.__name__)
def test_mask_stores_equal_plain(fn, name):
    diff(fn, [(INPUTS_1D[name].copy(),)], graphs=1, breaks=("read-only",))


@pytest.mark.parametrize("name", sorted(INPUTS_2D))
@pytest.mark.parametrize("fn", [store_rows, store_row_vector, store_2d_mask], ids=lambda f: f.__name__)
def test_mask_stores_2d_equal_plain(fn, name):
    diff(fn, [(INPUTS_2D[name].copy(),)], graphs=1)


def test_mask_store_into_a_read_only_input_raises_as_plain():
    x = V.copy()
    x.flags.writeable = False
    diff(store_scalar, [(x,)], graphs=0, breaks=("read-only",))


# ---------------------------------------------------------------- nonzero, where, flatnonzero, argwhere

def nz_index(x):
    i = np.nonzero(x > 0.5)[0]
    return x[i] * 2, i


def nz_method(x):
    (i,) = (x < 0).nonzero()
    return i + 1


def where_one(x):
    return np.where(x)[0]


def flat(x):
    return np.flatnonzero(x > 0), np.flatnonzero(x)


def argwhere_2d(x):
    return np.argwhere(x.reshape(-1, 1) > 0)


def nz_store(x):
    i = np.flatnonzero(x < 0)
    x[i] = -x[i]
    return x


NONZERO = [nz_index, nz_method, where_one, flat, argwhere_2d, nz_store]


@pytest.mark.parametrize("name", sorted(INPUTS_1D))
@pytest.mark.parametrize("fn", NONZERO, ids=lambda f: f.__name__)
def test_nonzero_family_equal_plain(fn, name):
    diff(fn, [(INPUTS_1D[name].copy(),)], graphs=1)


def argwhere_rows(M):
    return np.argwhere(M > 0), np.flatnonzero(M > 0)


@pytest.mark.parametrize("name", sorted(INPUTS_2D))
def test_argwhere_and_flatnonzero_of_2d(name):
    diff(argwhere_rows, [(INPUTS_2D[name].copy(),)], graphs=1)


def test_nonzero_of_2d_is_left_to_cpython():
    def f(M):
        return np.nonzero(M > 0)[1] + 0

    diff(f, [(M2.copy(),)], graphs=0, breaks=("np.nonzero",))


# ---------------------------------------------------------------- errors equal plain's

def max_of_selection(x):
    return x[x > 0].max()


def argmin_of_selection(x):
    return np.argmin(x[x > 0])


def mismatched_mask(x, m):
    return x[m] + 1


@pytest.mark.parametrize("fn", [max_of_selection, argmin_of_selection], ids=lambda f: f.__name__)
def test_reductions_of_an_empty_selection_raise_as_plain(fn):
    # the graph raises ValueError; the call reruns in the function's own code
    diff(fn, [(INPUTS_1D["mixed"].copy(),), (INPUTS_1D["all_neg"].copy(),), (np.zeros(0),)], graphs=1)


def test_a_mask_of_another_size_raises_the_same_index_error():
    diff(mismatched_mask, [(V.copy(), np.ones(4, dtype=bool))], graphs=0,
         breaks=("boolean index did not match",))
    diff(mismatched_mask, [(V.copy(), V > 0)], graphs=1)


def test_a_reduction_that_may_raise_is_not_traced_after_side_effects():
    log = []

    def f(x):
        log.append(1)
        return x[x > 0].max()

    reasons = diff(f, [(V.copy(),), (-np.abs(V),)], graphs=0, breaks=("after side effects",))
    assert reasons


# ---------------------------------------------------------------- uses that need the size: breaks

def use_len(x):
    return len(x[x > 0]) + x


def use_shape(x):
    return x[x > 0].shape[0] * x


def use_slice(x):
    return x[x > 0][1:] + 1


def use_int_index(x):
    y = x[x > 0]
    return y[0] + x


def use_reshape(x):
    return x[x > 0].reshape(-1, 1)


def use_list_operand(x):
    return x[x > 0] + [1.0, 2.0]


def use_list_store(x):
    x[x > 0] = [1.0, 2.0]
    return x


def use_mask_made_twice(x):
    # two masks computed apart may differ as far as the trace knows
    x[x > 0] = x[x > 0] ** 2
    return x


def use_two_masks(x, y):
    return x[x > 0] + y[y > 0]


def use_iteration(x):
    s = 0.0
    for v in x[x > 0]:
        s += v
    return s + x


def use_builtin_sum(x):
    return sum(x[x > 0]) + x


def use_same_ndim_operand(x):
    return x[x > 0] + x[:1]


def use_concatenate(x):
    return np.concatenate([x[x > 0], x])


def use_out(x):
    y = x[x > 0]
    return np.add(y, 1, out=y)


def use_reduce_axis1(M):
    return M[M[:, 0] > 0].sum(axis=1)


BREAKS = [
    (use_len, "len()"), (use_shape, "shape"), (use_slice, "whole index"),
    (use_int_index, "an integer index"), (use_reshape, "reshape"),
    (use_list_operand, "not an array or a scalar"), (use_list_store, "not an array or a scalar"),
    (use_iteration, "iteration"), (use_builtin_sum, "builtin sum"),
    (use_same_ndim_operand, "as many dims"), (use_concatenate, "concatenate"), (use_out, "out="),
    (use_mask_made_twice, "may not match"),
]


@pytest.mark.parametrize("fn,reason", BREAKS, ids=lambda p: getattr(p, "__name__", ""))
def test_uses_that_need_the_size_break_with_the_reason(fn, reason):
    for name in ("mixed", "one", "empty", "all_neg"):
        reasons = diff(fn, [(INPUTS_1D[name].copy(),)], graphs=0,
                       breaks=("depends on the data", "the whole frame runs in CPython", "FOR_ITER over"))
        assert any(reason in r and "depends on the data" in r for r in reasons), reasons


def test_two_different_masks_break():
    reasons = diff(use_two_masks, [(V.copy(), -V), (V.copy(), V)], graphs=0,
                   breaks=("depends on the data",))
    assert any("may differ" in r for r in reasons), reasons


def test_a_reduction_along_rows_of_a_selection_breaks():
    reasons = diff(use_reduce_axis1, [(M2.copy(),)], graphs=0, breaks=("depends on the data",))
    assert any("another axis" in r for r in reasons), reasons


# ---------------------------------------------------------------- graphs, symbols, shapes

def test_the_graph_marks_the_size_as_unknown_and_shares_its_symbol():
    seen = []

    def backend(gm, example_inputs):
        seen.append(gm)
        return gm

    def f(x, y):
        m = x > 0
        return x[m] + y[m], np.flatnonzero(x)

    cf = framejit.compile(f, backend=backend)
    x, y = V.copy(), V * 2
    framejit.reset()
    r = cf(x, y)
    assert np.array_equal(r[0], f(x, y)[0]) and np.array_equal(r[1], f(x, y)[1])
    (g,) = seen
    sel = [n for n in g.nodes if n.meta.get("datadep")]
    assert sel, [n.meta for n in g.nodes]
    for n in sel:
        assert n.meta["shape"][0] is None
    getitems = [n for n in sel if "getitem" in str(n.target)]
    assert len(getitems) == 2 and getitems[0].meta["datadep"] == getitems[1].meta["datadep"]
    flat_nodes = [n for n in sel if "flatnonzero" in str(n.target)]
    assert len(flat_nodes) == 1 and flat_nodes[0].meta["datadep"] != getitems[0].meta["datadep"]


@pytest.mark.parametrize("fn", [store_same_mask, read_sum_mean, nz_index], ids=lambda f: f.__name__)
def test_changing_sizes_share_one_dynamic_graph(fn):
    framejit.reset()
    cf = framejit.compile(fn, backend="eager")
    for n in (10, 5, 7, 33, 100, 64):
        x = np.linspace(-1, 1, n)
        got, want = cf(x.copy()), fn(x.copy())
        for a, b in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert np.array_equal(a, b)
    assert framejit.counters["stats"]["unique_graphs"] == 2, dict(framejit.counters["graph_break"])


def test_a_mask_inside_a_captured_loop_is_left_to_the_unrolled_or_plain_loop():
    def f(x):
        s = 0.0
        for i in range(600):
            s += x[x > i * 0.001].sum()
        return s

    diff(f, [(np.abs(V),)], graphs=0, breaks=("depends on the data", "loop"))


# ---------------------------------------------------------------- native backend

NATIVE = [read_arith, read_two_arrays, read_ufuncs, read_sum_mean, store_same_mask, store_arith, nz_index]


@pytest.mark.parametrize("name", ["mixed", "all_neg", "one", "big", "strided", "f32"])
@pytest.mark.parametrize("fn", NATIVE, ids=lambda f: f.__name__)
def test_mask_graphs_under_native_equal_plain(fn, name):
    diff(fn, [(INPUTS_1D[name].copy(),)], backend="native", graphs=1)


def test_native_fused_group_of_a_selection_and_a_fixed_array():
    # a selection and a fixed array of the stand-in's size are never one group
    def f(x, w):
        y = x[x > 0] * 2.0
        z = w * 3.0
        return y + 1.0, z - 1.0

    for x in (np.array([1.0, -1.0, 2.0, 3.0]), np.array([-1.0, 5.0]), np.array([1.0, 1.0])):
        diff(f, [(x, np.arange(2.0))], backend="native", graphs=1)


def test_a_replaced_np_where_is_not_taken_for_numpy_s(monkeypatch):
    monkeypatch.setattr(np, "where", lambda *a, **k: ("patched", len(a)))
    monkeypatch.setattr(np, "nonzero", lambda *a, **k: ("patched nonzero", len(a)))

    def f(x):
        return np.where(x > 0), np.nonzero(x)

    diff(f, [(V.copy(),)], graphs=0, breaks=("np.where", "np.nonzero", "where", "nonzero", "lambda"))


def test_a_mask_written_through_a_view_is_a_new_count():
    # m's contents change through mv: x[m] before and after have different sizes
    def f(x):
        m = x > 0
        a = x[m]
        mv = m[:]
        mv[:] = True
        b = x[m]
        return a.sum() + b.sum(), b * 2

    seen = []
    cf = framejit.compile(f, backend=lambda gm, ex: seen.append(gm) or gm)
    framejit.reset()
    x = V.copy()
    r = cf(x.copy())
    want = f(x.copy())
    assert r[0] == want[0] and np.array_equal(r[1], want[1])
    syms = [n.meta["datadep"] for g in seen for n in g.nodes if n.meta.get("datadep") and "getitem" in str(n.target)]
    assert len(syms) == 2 and syms[0] != syms[1], syms
    diff(f, [(V.copy(),), (-np.abs(V),)], graphs=1)
