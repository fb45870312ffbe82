"""The NumPy surface real programs use (issue 21): break reasons in the
program's own words, and differential tests of the functions and indexing
that graphs capture."""
import collections
import re

import numpy as np
import pytest

import framejit

from difftools import check_differential


# ---------------------------------------------------------------- break reasons

def _reasons(fn, *args):
    framejit.reset()
    framejit.compile(fn, backend="eager")(*args)
    return list(framejit.counters["graph_break"])


def test_break_reasons_name_the_function_as_the_program_spells_it():
    np.fft.fft  # numpy loads np.fft lazily (a module __getattr__)

    def fft(x):
        return np.fft.fft(x) + 1

    def nditer(x):
        s = 0.0
        for t in np.nditer(x):
            s += t
        return x + s

    def rng(x):
        return x + np.random.default_rng(0).random()

    def builtin(x):
        print("x")
        return x + 1

    x = np.arange(4.0)
    assert "call of np.fft.fft is not supported" in _reasons(fft, x)
    assert "call of np.nditer is not supported" in _reasons(nditer, x)
    assert "call of np.random.default_rng is not supported" in _reasons(rng, x)
    assert "call of print is not supported" in _reasons(builtin, x)

    def legacy(x):
        np.random.seed(1)
        return x + 1

    def generator_method(x, g):
        return x * g.choice(4, size=4)

    # a bound method of the module's RandomState, as the module's attribute; a
    # C class's method by its class's public name (not "a descriptor (property?)")
    assert "call of np.random.seed is not supported" in _reasons(legacy, x)
    assert any(r.startswith("method np.random.Generator.choice is not supported")
               for r in _reasons(generator_method, x, np.random.default_rng(0)))


@pytest.mark.parametrize("make", [
    lambda: (lambda x, c: x + len(c.most_common()), collections.Counter("ab")),
    lambda: (lambda x, o: x + o.f(), type("K", (), {"f": lambda self: 1})()),
    lambda: (lambda x, d: x + len(d), {1: 2}),
    lambda: (lambda x, it: x + next(it), iter([1.0, 2.0])),
])
def test_break_reasons_never_show_internal_representations(make):
    fn, arg = make()
    for r in _reasons(fn, np.arange(3.0), arg):
        assert "Var(" not in r and not re.search(r"0x[0-9a-f]{6,}", r), r


# ---------------------------------------------------------------- differential

from difftools import _copy, check_with_inputs, outcome, same  # noqa: E402

rng = np.random.default_rng(21)
M = rng.standard_normal((4, 5))                      # 2-d float64
T3 = rng.standard_normal((3, 4, 2))                  # 3-d
NC = rng.standard_normal((6, 8))[::2, 1::3]          # non-contiguous (3, 3)
FT = np.asfortranarray(rng.standard_normal((3, 4)))  # Fortran order
V = rng.standard_normal(6)
IV = np.arange(-3, 5, dtype=np.int64)                # ints with negatives
I32 = (np.arange(12, dtype=np.int32).reshape(3, 4) * 7) % 5
BV = np.array([True, False, True, True, False])
C = rng.standard_normal(5) + 1j * rng.standard_normal(5)
C64 = C.astype(np.complex64)
F32 = rng.standard_normal((2, 3)).astype(np.float32)
E0 = np.zeros((0, 3))
S0 = np.array(2.5)                                   # 0-d
ARRAYS = {"M": M, "T3": T3, "NC": NC, "FT": FT, "V": V, "IV": IV, "I32": I32, "BV": BV,
          "F32": F32, "E0": E0}


def diff_check(fn, args_list, backend="eager", graphs=True):
    """Compiled against plain, inputs compared too (difftools.check_with_inputs);
    with 'graphs', at least one graph was made.  Returns the break reasons."""
    counters = check_with_inputs(fn, args_list, backend)
    if graphs:
        assert counters["stats"]["unique_graphs"] >= 1, dict(counters["graph_break"])
    return dict(counters["graph_break"])


def _cases(fn, names):
    return [pytest.param(fn, n, id=f"{fn.__name__}-{n}") for n in names]


# roll, flip, diff, tile, repeat, average: each over several inputs

def roll1(x):
    return np.roll(x, 1) + 0


def roll_neg(x):
    return np.roll(x, -7) * 2


def roll_axis0(x):
    return np.roll(x, 2, axis=0) + 0


def roll_axis_last(x):
    return np.roll(x, -1, axis=-1) + 0


def roll_tuple(x):
    return np.roll(x, (1, -2), axis=(0, 1)) - x


def roll_big(x):
    return np.roll(x, 1001, axis=0) + 0


def flip_all(x):
    return np.flip(x) + 1


def flip0(x):
    return np.flip(x, 0) + 1


def flip_lr_ud(x):
    return np.fliplr(x) - np.flipud(x)


def diff1(x):
    return np.diff(x) * 1


def diff2_axis0(x):
    return np.diff(x, n=2, axis=0) + 0


def diff_long(x):
    return np.diff(x, 7) + 0


def diff_prepend(x):
    return np.diff(x, prepend=0.5) + 0


def diff_append_row(x):
    return np.diff(x, axis=0, append=x[:1]) + 0


def tile_int(x):
    return np.tile(x, 2) + 0


def tile_rows(x):
    return np.tile(x, (2, 1)) + 0


def tile_more_dims(x):
    return np.tile(x, (2, 1, 3)) + 0


def tile_zero(x):
    return np.tile(x, (0, 2)) + 0


def repeat_flat(x):
    return np.repeat(x, 2) + 0


def repeat_axis0(x):
    return np.repeat(x, 3, axis=0) + 0


def repeat_method(x):
    return x.repeat(2, axis=-1) + 0


def repeat_zero(x):
    return np.repeat(x, 0, axis=0) + 0


def average_all(x):
    return np.average(x) + 1


def average_axis0(x):
    return np.average(x, axis=0) * 2


def average_weights(x):
    return np.average(x, axis=0, weights=np.arange(1.0, x.shape[0] + 1)) + 0


def average_full_weights(x):
    return np.average(x, weights=x * x + 1) + 0


def average_keepdims(x):
    return np.average(x, axis=-1, keepdims=True) - x


def real_imag(x):
    return x.real * 2 + x.imag


def real_min(x):
    return x - x.real.min()


ND2 = ["M", "NC", "FT", "I32", "F32", "E0"]
ND_ANY = ["M", "T3", "NC", "V", "IV", "BV", "F32", "E0"]
SURFACE = (
    _cases(roll1, ND_ANY) + _cases(roll_neg, ND_ANY) + _cases(roll_axis0, ND_ANY) +
    _cases(roll_axis_last, ND_ANY) + _cases(roll_tuple, ND2 + ["T3"]) + _cases(roll_big, ["M", "V"]) +
    _cases(flip_all, ND_ANY) + _cases(flip0, ND_ANY) + _cases(flip_lr_ud, ND2 + ["T3"]) +
    _cases(diff1, ND_ANY) + _cases(diff2_axis0, ND_ANY) + _cases(diff_long, ["V", "IV", "M"]) +
    _cases(diff_prepend, ND_ANY) + _cases(diff_append_row, ND2 + ["T3"]) +
    _cases(tile_int, ND_ANY) + _cases(tile_rows, ND_ANY) + _cases(tile_more_dims, ND_ANY) +
    _cases(tile_zero, ["M", "V"]) +
    _cases(repeat_flat, ND_ANY) + _cases(repeat_axis0, ND_ANY) + _cases(repeat_method, ND_ANY) +
    _cases(repeat_zero, ["M", "V"]) +
    _cases(average_all, ND_ANY) + _cases(average_axis0, ND_ANY) + _cases(average_weights, ND2 + ["T3", "V"]) +
    _cases(average_full_weights, ["M", "NC", "V", "F32"]) + _cases(average_keepdims, ND2 + ["V"]) +
    _cases(real_imag, ND_ANY) + _cases(real_min, ["M", "V", "I32"])
)


@pytest.mark.parametrize("fn,name", SURFACE)
def test_surface(fn, name):
    assert diff_check(fn, [(ARRAYS[name],)]) == {}


def roll_bad_axis(x):
    return np.roll(x, 1, axis=3) + 0


def roll_mismatch(x):
    return np.roll(x, (1, 2, 3), axis=(0, 1)) + 0


def diff_0d(x):
    return np.diff(x[0, 0]) + 0


def diff_negative(x):
    return np.diff(x, n=-1) + 0


def diff_bad_append(x):
    return np.diff(x, append=np.zeros((2, 2))) + 0


def fliplr_1d(x):
    return np.fliplr(x[0]) + 0


def tile_negative(x):
    return np.tile(x, -1) + 0


def repeat_negative(x):
    return np.repeat(x, -2) + 0


def repeat_wrong_count(x):
    return np.repeat(x, [1, 2], axis=0) + 0


def average_bad_weights(x):
    return np.average(x, axis=0, weights=np.ones(7)) + 0


def average_weights_no_axis(x):
    return np.average(x, weights=np.ones(x.shape[1])) + 0


def average_zero_weights(x):
    return np.average(x, axis=0, weights=np.zeros(x.shape[0])) + 0


@pytest.mark.parametrize("fn", [roll_bad_axis, roll_mismatch, diff_0d, diff_negative, diff_bad_append,
                                fliplr_1d, tile_negative, repeat_negative, repeat_wrong_count,
                                average_bad_weights, average_weights_no_axis, average_zero_weights],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("name", ["M", "I32"])
def test_surface_errors_are_numpys(fn, name):
    """Invalid calls raise what NumPy raises, with NumPy's message: the
    shape rules refuse them (the frame breaks and CPython raises), or the
    graph's NumPy call raises and the frame reruns in CPython."""
    diff_check(fn, [(ARRAYS[name],)], graphs=False)


@pytest.mark.parametrize("fn", [real_imag, real_min, roll1, diff1, average_axis0], ids=lambda f: f.__name__)
@pytest.mark.parametrize("z", [C, C64], ids=["complex128", "complex64"])
def test_surface_complex(fn, z):
    diff_check(fn, [(z,), (z[::-1],)])


@pytest.mark.parametrize("fn,name", [
    (roll1, "M"), (diff1, "V"), (tile_rows, "M"), (repeat_axis0, "NC"), (average_axis0, "M"),
    (flip_lr_ud, "FT"), (diff_prepend, "IV")], ids=lambda p: getattr(p, "__name__", p))
def test_surface_captured_whole(fn, name):
    """These are one graph each, no break."""
    assert diff_check(fn, [(ARRAYS[name],)]) == {}
    assert framejit.counters["stats"]["unique_graphs"] == 1


# ---------------------------------------------------------------- integer-array indexing

IDX = {
    "i1": np.array([0, 2, 1, 2]),
    "neg": np.array([-1, 0, -3]),
    "i2d": np.array([[0, 1], [2, 0]]),
    "i32": np.array([2, 0], dtype=np.int32),
    "u8": np.array([1, 1, 0], dtype=np.uint8),
    "nc": np.arange(8)[::3],            # [0, 3, 6]: non-contiguous, 6 out of range on short axes
    "empty": np.array([], dtype=np.intp),
    "oob": np.array([0, 99]),
    "oobneg": np.array([-99]),
}


def gi_1(x, i):
    return x[i] + 0


def gi_cols(x, i):
    return x[:, i] * 2


def gi_both(x, i):
    return x[i, i] + 0


def gi_pair_nonadjacent(x, i):
    return x[i, :, i] + 0


def gi_none_between(x, i):
    return x[i, None, i] + 0


def gi_int_and_array(x, i):
    return x[0, :, i] + 0


def gi_ellipsis(x, i):
    return x[..., i] + 0


def gi_chain(x, i):
    return x[i][:, i] + 0


def gi_sum(x, i):
    return x[i].sum(axis=0)


GETITEM = []
for fn, shapes in [(gi_1, ["M", "V", "T3", "NC"]), (gi_cols, ["M", "FT", "T3"]), (gi_both, ["M", "T3"]),
                   (gi_pair_nonadjacent, ["T3"]), (gi_none_between, ["T3", "M"]),
                   (gi_int_and_array, ["T3"]), (gi_ellipsis, ["T3", "M", "V"]), (gi_chain, ["M", "T3"]),
                   (gi_sum, ["M", "V"])]:
    for s in shapes:
        for k in IDX:
            GETITEM.append(pytest.param(fn, s, k, id=f"{fn.__name__}-{s}-{k}"))


@pytest.mark.parametrize("fn,name,idx", GETITEM)
def test_integer_array_index(fn, name, idx):
    """Results, or NumPy's IndexError for indices out of range (the graph's
    NumPy call raises, the frame reruns in CPython)."""
    diff_check(fn, [(ARRAYS[name], IDX[idx])])


def gi_const_list(x):
    return x[[0, 2, -1]] + 0


def gi_const_lists(x):
    return x[[0, 1], [1, 0]] + 0


def gi_const_list_oob(x):
    return x[[0, 9]] + 0


def gi_argsort(x):
    return x[np.argsort(x)] * 1


def gi_arange(x):
    return x[np.arange(0, x.shape[0], 2)] + 0


def gi_0d(x):
    return x[np.argmax(x)] + 1


@pytest.mark.parametrize("fn,name", [(gi_const_list, "V"), (gi_const_list, "M"), (gi_const_lists, "M"),
                                     (gi_const_lists, "T3"), (gi_const_list_oob, "V"), (gi_argsort, "V"),
                                     (gi_argsort, "IV"), (gi_arange, "M"), (gi_arange, "V"), (gi_0d, "V")],
                         ids=lambda p: getattr(p, "__name__", p))
def test_integer_array_index_made_in_the_graph(fn, name):
    diff_check(fn, [(ARRAYS[name],)], graphs=fn is not gi_const_list_oob)


def si_scalar(x, i):
    x[i] = 7.0
    return x


def si_row(x, i):
    x[:, i] = x[:, :1] * 2
    return x.sum()


def si_broadcast(x, i):
    x[i] = np.arange(x.shape[-1] if x.ndim > 1 else 1)
    return x


def si_iadd(x, i):
    x[i] += 1          # duplicates add once, as in NumPy
    return x


def si_copy(x, i):
    y = x.copy()
    y[i, 0] = -1.0
    return y, x


SETITEM = []
for fn, shapes in [(si_scalar, ["M", "V", "NC"]), (si_row, ["M", "FT"]), (si_broadcast, ["M", "V"]),
                   (si_iadd, ["M", "V", "I32"]), (si_copy, ["M", "T3"])]:
    for s in shapes:
        for k in ["i1", "neg", "i2d", "u8", "empty", "oob"]:
            SETITEM.append(pytest.param(fn, s, k, id=f"{fn.__name__}-{s}-{k}"))


@pytest.mark.parametrize("fn,name,idx", SETITEM)
def test_integer_array_item_store(fn, name, idx):
    """Stores through integer arrays write the same items (the last of
    duplicates wins, x[i] += 1 adds once) or raise the same error, with the
    inputs left as CPython leaves them."""
    diff_check(fn, [(ARRAYS[name], IDX[idx])], graphs=False)


def test_integer_array_index_is_a_graph_operation():
    def f(x, i):
        return x[i] * 2 + x[:, i].sum()

    assert diff_check(f, [(M, IDX["i1"]), (M, np.array([-1, -2, 0, 3]))]) == {}
    assert framejit.counters["stats"]["unique_graphs"] == 1


def test_boolean_mask_read_is_a_graph_operation():
    # sizes that depend on the data: tests/test_masks.py
    def f(x):
        return x[x > 0] + 1

    assert diff_check(f, [(M,), (-np.abs(M),)]) == {}


def test_boolean_mask_inside_a_tuple_index_breaks_with_its_reason():
    def f(x):
        return x[x[:, 0] > 0, 1:] + 1

    breaks = diff_check(f, [(M,)], graphs=False)
    assert any("boolean mask index" in r for r in breaks), breaks


# ---------------------------------------------------------------- constant array-likes

def cl_add(x):
    return x + [1, 2, 3, 4, 5]


def cl_nested(x):
    return x * [[1], [2], [3], [4]]


def cl_concat(x):
    return np.concatenate(([1], np.diff(x), [len(x)]))


def cl_concat_tuple(x):
    return np.concatenate(((0.5, 1.5), x))


def cl_mask(x, m=(1, 0, 1)):
    return m == np.bitwise_and(m, x[:3])


def cl_ragged(x):
    return x + [[1, 2], [3]]


@pytest.mark.parametrize("fn,name", [(cl_add, "M"), (cl_nested, "M"), (cl_concat, "V"),
                                     (cl_concat, "IV"), (cl_concat_tuple, "V"), (cl_mask, "IV"),
                                     (cl_ragged, "M")],
                         ids=lambda p: getattr(p, "__name__", p))
def test_constant_lists_as_arrays(fn, name):
    diff_check(fn, [(ARRAYS[name],)], graphs=fn is not cl_ragged)


# ---------------------------------------------------------------- builtin sum, max, min

RB = np.random.default_rng(7)
BX = RB.standard_normal(100)
BXN = BX.copy()
BXN[[3, 50]] = np.nan
BXN0 = BX.copy()
BXN0[0] = np.nan
BI = RB.integers(-1000, 1000, 100)
BIBIG = np.full(40, 2 ** 62, dtype=np.int64)
BF32 = BX.astype(np.float32)
BZ = np.array([0.0, -0.0] * 20)
BINF = np.array([1e308] * 30)
BINFN = np.array([np.inf, -np.inf] * 20)
BOOL = BX > 0
BINPUTS = {"f64": BX, "nan": BXN, "nan0": BXN0, "i64": BI, "big": BIBIG, "f32": BF32, "zeros": BZ, "inf": BINF,
           "infs": BINFN, "bool": BOOL, "strided": BX[::3], "reversed": BX[::-1]}


def b_sum(a):
    return sum(a)


def b_sum_start(a):
    return sum(a, 7) * 2


def b_max(a):
    return max(a)


def b_min(a):
    return min(a)


def b_both(a):
    return max(a) - min(a[1:])


@pytest.mark.parametrize("fn", [b_sum, b_sum_start, b_max, b_min, b_both], ids=lambda f: f.__name__)
@pytest.mark.parametrize("name", list(BINPUTS))
@pytest.mark.parametrize("backend", ["eager", "native"])
def test_builtin_reductions(fn, name, backend):
    """Python's sum/max/min over an array: CPython's value, type and warnings
    (an overflow goes through the builtin itself)."""
    import warnings
    a = BINPUTS[name]

    def run(f):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = outcome(f, (a.copy(),))
        return out, sorted(str(x.message) for x in w)

    framejit.reset()
    cf = framejit.compile(fn, backend=backend)
    (p, pw) = run(fn)
    for _ in range(2):
        (g, gw) = run(cf)
        assert g[0] == p[0] and gw == pw
        if g[0] == "ok":
            same(g[1], p[1])
        else:
            assert g[1:] == p[1:]
    assert framejit.counters["stats"]["unique_graphs"] >= 1
    assert not any("max() of arrays" in r for r in framejit.counters["graph_break"])


# ---------------------------------------------------------------- np.random's legacy draws
# Graph operations that draw when the graph runs, in the program's order: the
# results and the generator's state after the call are plain Python's, on
# both backends.

def _draws_simple(x):
    return x + np.random.rand(3)


def _draws_many(x):
    a = np.random.rand(2, 3) * x
    b = np.random.normal(1.0, 2.0, size=(2, 3))
    np.random.random(4)                      # drawn, never used: the state still advances
    c = np.random.randint(0, 10, size=3)
    d = np.random.randint(-5, 5, size=(2, 3), dtype=np.int32)
    return a + b + c + d + np.random.uniform(-1, 1, 3) + np.random.standard_normal(3)


def _draws_other(x):
    e = np.random.exponential(2.0, size=3) + np.random.poisson(3.0, size=3)
    return x * e + np.random.random_sample((3,)) + np.random.randn(3) + np.random.standard_exponential(3)


def _draws_in_loop(x):
    for i in range(20):
        x = x + np.random.rand(3) * i
    return x


def _draws_then_raise(x):
    y = x + np.random.rand(3)
    return y[np.array([0, 5])]              # IndexError after the draw: drawn once


def _draws_bad_scale(x):
    return x + np.random.normal(0.0, -1.0, size=3)   # ValueError, as NumPy raises it


def _draws_scalar(x):
    return x + np.random.rand()             # a Python float: not a graph op


def _draws_mixed_effects(x, out):
    out.append(1)
    return x + np.random.rand(3)


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", [_draws_simple, _draws_many, _draws_other, _draws_in_loop, _draws_then_raise,
                                _draws_bad_scale, _draws_scalar])
def test_random_draws_equal_plain(fn, backend):
    framejit.reset()
    cf = framejit.compile(fn, backend=backend)
    for seed in (0, 1, 7):
        np.random.seed(seed)
        got = outcome(cf, (np.ones(3),))
        after_got = np.random.rand(2)
        np.random.seed(seed)
        want = outcome(fn, (np.ones(3),))
        after_want = np.random.rand(2)
        assert got[0] == want[0], (got, want)
        if got[0] == "ok":
            same(got[1], want[1])
        else:
            assert got[1:] == want[1:]
        assert (after_got == after_want).all()


def test_random_draws_are_graph_operations():
    framejit.reset()
    framejit.compile(_draws_many, backend="eager")(np.ones(3))
    assert framejit.counters["stats"]["unique_graphs"] == 1 and not framejit.counters["graph_break"]


def test_random_draw_after_an_effect():
    framejit.reset()
    cf = framejit.compile(_draws_mixed_effects, backend="eager")
    l1, l2 = [], []
    np.random.seed(3)
    r1 = cf(np.ones(3), l1)
    np.random.seed(3)
    r2 = _draws_mixed_effects(np.ones(3), l2)
    same(r1, r2)
    assert l1 == l2


# ---------------------------------------------------------------- np.random.Generator's draws
# A generator the function receives is a graph input (an opaque placeholder,
# its type guarded): its draws are graph operations that run when the graph
# runs, in the program's order, on the generator passed in.

def _gen_simple(x, g):
    return x + g.normal(size=x.shape)


def _gen_many(x, g):
    a = g.random(3)
    b = g.standard_normal((2, 3), dtype=np.float32)
    c = g.integers(0, 10, size=5)
    d = g.uniform(-1, 1, size=4)
    g.exponential(2.0, size=2)               # drawn, never used: the state still advances
    return x.sum() + a, b, c, d, g.poisson(3.0, size=3), g.standard_exponential(3)


def _gen_params(x, g):
    return x * g.normal(0.5, 2.0, x.shape[0]) + g.integers(5, size=x.shape[0], dtype=np.int16)


def _gen_in_loop(x, g):
    for i in range(30):
        x = x + g.random(3) * i
    return x


def _gen_scalar(x, g):
    return x + g.normal()                   # a Python float: not a graph op


def _gen_bad_scale(x, g):
    return x + g.normal(0.0, -1.0, size=3)  # ValueError, as NumPy raises it


def _gen_two(x, g, h):
    return x + g.random(3) - h.random(3)


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", [_gen_simple, _gen_many, _gen_params, _gen_in_loop, _gen_scalar, _gen_bad_scale])
def test_generator_draws_equal_plain(fn, backend):
    framejit.reset()
    cf = framejit.compile(fn, backend=backend)
    for seed in (0, 1, 7, 7):
        g1, g2 = np.random.default_rng(seed), np.random.default_rng(seed)
        got = outcome(cf, (np.ones(3), g1))
        want = outcome(fn, (np.ones(3), g2))
        assert got[0] == want[0], (got, want)
        if got[0] == "ok":
            same(got[1], want[1])
        else:
            assert got[1:] == want[1:]
        assert g1.random() == g2.random()   # the state after the call


def test_generator_draws_are_graph_operations_and_serve_any_generator():
    framejit.reset()
    cf = framejit.compile(_gen_many, backend="eager")
    for seed in range(5):
        cf(np.ones(3), np.random.default_rng(seed))
    assert framejit.counters["stats"]["unique_graphs"] == 1 and not framejit.counters["graph_break"]


def test_one_generator_given_twice_draws_in_order():
    framejit.reset()
    cf = framejit.compile(_gen_two, backend="eager")
    g1, g2 = np.random.default_rng(3), np.random.default_rng(3)
    same(cf(np.ones(3), g1, g1), _gen_two(np.ones(3), g2, g2))
    assert g1.random() == g2.random()


def test_another_object_with_the_method_names_runs_its_own_code():
    class NotGenerator:
        def normal(self, size=None):
            return np.full(size, 2.0)

    framejit.reset()
    cf = framejit.compile(_gen_simple, backend="eager")
    same(cf(np.ones(3), np.random.default_rng(0)), _gen_simple(np.ones(3), np.random.default_rng(0)))
    same(cf(np.ones(3), NotGenerator()), np.full(3, 3.0))


# ---------------------------------------------------------------- np.linalg
# Graph operations run through NumPy's LAPACK when the graph runs; a singular
# matrix raises there (the frame then runs in CPython and raises the same
# LinAlgError); shapes NumPy refuses are refused while tracing.

def _la_solve_inv(a, b):
    return np.linalg.solve(a, b) + np.linalg.inv(a) @ b


def _la_det_norm(a, b):
    return np.linalg.det(a) * np.linalg.norm(b) + np.linalg.norm(a, axis=0) - np.linalg.norm(a, axis=-1, keepdims=True)


def _la_power_pinv(a, b):
    return np.linalg.matrix_power(a, 3) + np.linalg.pinv(a) * np.linalg.norm(a, "fro") + np.linalg.norm(b, 1)


def _la_solve_matrix(a, b):
    return np.linalg.solve(a, np.stack([b, b * 2], axis=1))


def _la_stacked(a, b):
    s = np.stack([a, a.T + 1])
    return np.linalg.det(s) + np.linalg.inv(s).sum(axis=(1, 2))


def _la_bad_shape(a, b):
    return np.linalg.inv(a[:, :-1])          # not square: LinAlgError, CPython's


_RNG_LA = np.random.default_rng(12)
_A = _RNG_LA.random((5, 5)) + 5 * np.eye(5)
_B = _RNG_LA.random(5)
_LA_ARGS = [(_A, _B), (_A.astype(np.float32), _B.astype(np.float32)), (np.ones((5, 5)), _B),
            ((_A * 10).astype(np.int64), _B), (np.asfortranarray(_A), _B[::-1])]


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", [_la_solve_inv, _la_det_norm, _la_power_pinv, _la_solve_matrix, _la_stacked,
                                _la_bad_shape])
def test_linalg_equal_plain(fn, backend):
    check_differential(fn, _LA_ARGS, expect_graph=fn is not _la_bad_shape, backend=backend)


def test_linalg_in_one_graph():
    framejit.reset()
    framejit.compile(_la_det_norm, backend="eager")(_A, _B)
    assert framejit.counters["stats"]["unique_graphs"] == 1 and not framejit.counters["graph_break"]


def _la_power_one(a, b):
    c = np.linalg.matrix_power(a, 1)        # NumPy returns a itself
    c[0, 0] = 5.0
    return a[0, 0] + c.sum()


def _la_norm_after_effect(a, log):
    log.append(1)
    return np.linalg.norm(a, 2)             # NaN: LinAlgError from the SVD, after the append


def test_linalg_alias_and_raise_after_effects():
    check_with_inputs(_la_power_one, [(_A.copy(), _B)])
    for a in (_A, np.array([[np.nan, 0.0], [0.0, 1.0]])):
        framejit.reset()
        l1, l2 = [], []
        got = outcome(framejit.compile(_la_norm_after_effect, backend="eager"), (a, l1))
        want = outcome(_la_norm_after_effect, (a, l2))
        assert got[0] == want[0] and l1 == l2
        if got[0] == "ok":
            same(got[1], want[1])
        else:
            assert got[1:] == want[1:]


def _gen_int_args(g, n):
    return g.normal(size=n), g.poisson(n, size=3), g.integers(0, n + 1, size=2, dtype=np.int8)


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_generator_draws_with_an_int_that_changes(backend):
    # n becomes a symbolic int on the second call: it meets the generator input
    # (no dtype) in the op's arguments, then is pinned (size, integer bounds)
    framejit.reset()
    cf = framejit.compile(_gen_int_args, backend=backend)
    for n in (1, 2, 3, 5, 120):
        g1, g2 = np.random.default_rng(n), np.random.default_rng(n)
        same(cf(g1, n), _gen_int_args(g2, n))
        assert g1.random() == g2.random()


# ---------------------------------------------------------------- calls of several results
# np.linalg.eigh, qr, svd and slogdet (NumPy 2's named tuples) and np.nonzero /
# np.where / a.nonzero() of n-d arrays: one graph call whose value is NumPy's
# own tuple, and one item node per array (trace_multi.c).

def _mr_eigh_unpack(a, b):
    w, v = np.linalg.eigh(a + a.T)
    return w * 2, v @ b


def _mr_eigh_fields(a, b):
    r = np.linalg.eigh(a + a.T, UPLO="U")
    return r.eigenvalues.sum() + r.eigenvectors[0], r


def _mr_eigh_returned(a, b):
    return np.linalg.eigh(a @ a.T)


def _mr_qr(a, b):
    q, r = np.linalg.qr(a)
    return q @ r - a, np.linalg.qr(a[:, :3], mode="complete"), np.linalg.qr(a[:3], "r")


def _mr_svd(a, b):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return (u * s) @ vh, np.linalg.svd(a[:, :2]).S, np.linalg.svd(a, compute_uv=False) + 1


def _mr_svd_hermitian(a, b):
    return np.linalg.svd(a + a.T, hermitian=True)


def _mr_slogdet(a, b):
    sign, logdet = np.linalg.slogdet(a)
    r = np.linalg.slogdet(np.stack([a, a * 2]))
    return sign * np.exp(logdet), r, r.logabsdet.sum(), len(r), r[0]


def _mr_tuple_ops(a, b):
    r = np.linalg.eigh(a + a.T)
    t = tuple(r)
    return type(r).__name__, type(t) is tuple, isinstance(r, tuple), t[1], r[-1], r[:1]


_MR_ARGS = [(_A, _B), (_A.astype(np.float32), _B.astype(np.float32)), ((_A * 10).astype(np.int64), _B),
            (np.asfortranarray(_A), _B[::-1]), (_A + 1j * _A.T, _B.astype(np.complex128))]


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", [_mr_eigh_unpack, _mr_eigh_fields, _mr_eigh_returned, _mr_qr, _mr_svd,
                                _mr_svd_hermitian, _mr_slogdet, _mr_tuple_ops])
def test_linalg_several_results_equal_plain(fn, backend):
    check_differential(fn, _MR_ARGS, backend=backend)


def test_linalg_several_results_one_graph():
    """Each call is one graph call (LAPACK once); the value returned is NumPy's
    own named tuple, not a tuple built from the items."""
    for fn in (_mr_eigh_unpack, _mr_eigh_fields, _mr_qr, _mr_svd, _mr_slogdet):
        framejit.reset()
        graphs = []
        cf = framejit.compile(fn, backend=lambda g, ex: graphs.append(g) or g)
        cf(_A.copy(), _B.copy())
        assert framejit.counters["stats"]["unique_graphs"] == 1 and not framejit.counters["graph_break"], fn
        code = graphs[0].code
        for name in ("eigh", "qr", "svd", "slogdet"):
            if f"np.linalg.{name}(" in fn.__code__.co_consts.__repr__() or name in fn.__name__:
                assert f"np.linalg.{name}(" in code, code
    framejit.reset()
    got = framejit.compile(_mr_eigh_returned, backend="eager")(_A, _B)
    assert type(got).__name__ == "EighResult" and got.eigenvalues is got[0]


def _mr_after_effect(a, log):
    log.append(1)
    return np.linalg.eigh(a)


def _mr_field_unknown(a, b):
    return np.linalg.eigh(a + a.T)._asdict()


def _mr_not_traced(a, b):
    return np.linalg.qr(a, mode="raw")[1] + 1, np.linalg.eig(a)[0]


def test_linalg_several_results_breaks():
    """What is not traced runs in CPython with the reason; after side effects a
    LinAlgError from the data must not lose them."""
    nan = np.array([[np.nan, 0.0], [0.0, 1.0]])
    for a in (_A, nan):
        framejit.reset()
        l1, l2 = [], []
        got = outcome(framejit.compile(_mr_after_effect, backend="eager"), (a, l1))
        want = outcome(_mr_after_effect, (a, l2))
        assert got[0] == want[0] and l1 == l2
        if got[0] == "ok":
            same(got[1], want[1])
    assert any("after side effects" in r for r in framejit.counters["graph_break"])
    check_with_inputs(_mr_field_unknown, [(_A, _B)])
    check_with_inputs(_mr_not_traced, [(_A, _B)])
    for fn, bad in ((lambda a: np.linalg.eigh(a), np.ones((3, 4))), (lambda a: np.linalg.slogdet(a), np.ones(3)),
                    (lambda a: np.linalg.eigh(a), np.ones((3, 3), np.float16)),
                    (lambda a: np.linalg.svd(a), np.ones((0, 3)))):
        framejit.reset()
        got, want = outcome(framejit.compile(fn, backend="eager"), (bad,)), outcome(fn, (bad,))
        assert got[0] == want[0], (got, want)
        if got[0] == "ok":
            same(got[1], want[1])
        else:
            assert got[1:] == want[1:]


def _nz2(x):
    i, j = np.nonzero(x > 0.5)
    return i, j, x[i, j] * 2


def _nz_where_method(x):
    r = np.where(x < 0)
    c = (x > 1).nonzero()
    return r, c, x[r].sum(), len(c)


def _nz_store(x, y):
    idx = np.nonzero(x > 0)
    y[idx] = x[idx] + 1
    return y


def _nz_3d(x):
    i, j, k = np.nonzero(x)
    return x[i, j, k], x[i, j], k


_NZ_X = [rng.standard_normal((4, 5)), np.zeros((3, 3)), np.ones((2, 6)), rng.standard_normal((6, 1)),
         np.asfortranarray(rng.standard_normal((5, 4))), rng.standard_normal((4, 6))[:, ::2]]


@pytest.mark.parametrize("backend", ["eager", "native"])
@pytest.mark.parametrize("fn", [_nz2, _nz_where_method])
def test_nonzero_nd_equal_plain(fn, backend):
    check_differential(fn, [(x,) for x in _NZ_X], backend=backend)


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_nonzero_nd_store_and_3d(backend):
    check_with_inputs(_nz_store, [(x, np.zeros_like(x)) for x in _NZ_X], backend=backend)
    xs = [rng.standard_normal((3, 4, 2)) > 0, np.zeros((2, 2, 2), int), rng.integers(0, 3, (2, 3, 4))]
    check_with_inputs(_nz_3d, [(x,) for x in xs], backend=backend)


def test_nonzero_nd_one_graph_over_sizes():
    """np.nonzero of a 2-d array whose rows change: the index arrays' size is the
    data's, so automatic dynamic keeps one graph (2 compiles)."""
    framejit.reset()
    cf = framejit.compile(_nz2, backend="eager")
    for n in range(3, 9):
        x = rng.standard_normal((n, 4))
        same(cf(x), _nz2(x))
    assert framejit.counters["stats"]["unique_graphs"] == 2 and not framejit.counters["graph_break"]


def _mr_live_at_break(a, b):
    r = np.linalg.eigh(a + a.T)
    print("break")                          # r is a local at the break: NumPy's object after it
    return r, r[0] * 2


def _mr_plus_at_break(a, b):
    r = np.linalg.svd(a)
    t = r + (1,)
    print("break")
    return t[3], r.S, len(t), type(r).__name__


@pytest.mark.parametrize("backend", ["eager", "native"])
def test_linalg_named_tuple_live_at_a_break(backend, capsys):
    """A named tuple NumPy returned, live at a graph break (review): the break
    code loads the call's own value, the same object its items came from."""
    check_differential(_mr_live_at_break, _MR_ARGS[:2], backend=backend)
    check_differential(_mr_plus_at_break, _MR_ARGS[:2], backend=backend)
