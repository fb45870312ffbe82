"""Differential suite: every function runs compiled and plain on the same
inputs; results must be equal bit for bit (type, dtype, shape, values), and
the counters must show a graph was captured.  Hand-written functions here;
generated ones in test_generated.py."""
import math

import numpy as np
import pytest

from difftools import check_differential

rng = np.random.default_rng(0)
A = rng.standard_normal((4, 5)).astype(np.float64)
B = rng.standard_normal((4, 5)).astype(np.float64)
V = rng.standard_normal(5).astype(np.float64)
F32 = rng.standard_normal((3, 4)).astype(np.float32)
I32 = rng.integers(-5, 5, size=(3, 4)).astype(np.int32)
I8 = rng.integers(-5, 5, size=(6,)).astype(np.int8)
POS = np.abs(A) + 0.5
M = rng.standard_normal((5, 3))
BOOL = A > 0
SCALE = 2.5
CONSTS = {"a": 2, "b": 3.0}


def helper_square(x):
    return x * x


def helper_affine(x, w=2.0, b=1.0):
    return x * w + b


def helper_kw(x, *, k=3):
    return x - k


def helper_star(*xs):
    total = xs[0]
    for x in xs[1:]:
        total = total + x
    return total


def helper_nested(x):
    return helper_square(x) + helper_affine(x)


def make_scaler(s):
    def scale(x):
        return x * s
    return scale


scaler3 = make_scaler(3.0)

FUNCS = []


def case(*args_list, marks=()):
    def deco(fn):
        FUNCS.append(pytest.param(fn, list(args_list), id=fn.__name__, marks=marks))
        return fn
    return deco


# ---- arithmetic and broadcasting
@case((A,), (B,))
def add_one(x):
    return x + 1


@case((A, B))
def add_two(x, y):
    return x + y


@case((A, V))
def broadcast_row(x, v):
    return x * v - v


@case((A,))
def chain(x):
    return np.sin(x) * 2 + 1


@case((A, B))
def many_ops(x, y):
    a = x * y
    b = a - x / (1 + y * y)
    c = b ** 2
    return c * 0.5 - a


@case((I32,), (I8,))
def int_arith(x):
    return x * 3 + 2 - x // 2


@case((I32,))
def int_true_div(x):
    return x / 2


@case((I32, A[:3, :4]))
def mixed_dtypes(x, y):
    return x + y


@case((F32,))
def float32_keep(x):
    return x * 2.0 + 1


@case((F32,))
def float32_with_f64_array(x):
    return x + np.ones(1)


@case((I8,))
def int8_weak_scalar(x):
    return x + 1


@case((A,))
def neg_pos_abs(x):
    return -x + (+x) + abs(x)


@case((I32,))
def invert_int(x):
    return ~x


@case((BOOL,))
def invert_bool(x):
    return ~x


@case((I32,))
def bit_ops(x):
    return (x & 3) | (x ^ 1)


@case((I32,))
def shifts(x):
    return (x << 1) + (x >> 1)


@case((A,))
def modulo(x):
    return x % 0.7


@case((A, B))
def comparisons(x, y):
    return (x < y), (x <= y), (x > y), (x >= y), (x == y), (x != y)


@case((A,))
def power_float(x):
    return np.abs(x) ** 0.5


@case((A,))
def rpow(x):
    return 2.0 ** x


@case((A,))
def rsub_rdiv(x):
    return 1 - x, 3 / (x + 10)


# ---- ufuncs
@case((POS,))
def math_ufuncs(x):
    return (np.exp(x), np.log(x), np.sqrt(x), np.log1p(x), np.expm1(x), np.log2(x),
            np.log10(x))


@case((A,))
def trig(x):
    return np.sin(x) + np.cos(x) - np.tan(x) * np.tanh(x)


@case((A / 10,))
def inverse_trig(x):
    return np.arcsin(x), np.arccos(x), np.arctan(x)


@case((A,))
def rounding(x):
    return np.floor(x), np.ceil(x), np.sign(x), np.abs(x)


@case((A, B))
def max_min(x, y):
    return np.maximum(x, y) - np.minimum(x, y)


@case((A,))
def clip_it(x):
    return np.clip(x, -0.5, 0.5)


@case((A, B))
def where_it(x, y):
    return np.where(x > 0, x, y)


@case((I8,))
def sin_int8(x):
    return np.sin(x)


# ---- reductions
@case((A,))
def reductions_all(x):
    return x.sum(), x.mean(), x.max(), x.min(), x.prod(), x.std(), x.var()


@case((A,))
def reductions_axis(x):
    return x.sum(axis=0), x.mean(axis=1), np.max(x, axis=0), np.min(x, axis=-1)


@case((A,))
def reductions_keepdims(x):
    return x.sum(axis=1, keepdims=True), np.mean(x, axis=0, keepdims=True)


@case((A,))
def arg_reductions(x):
    return x.argmax(), x.argmin(axis=0), np.argmax(x, axis=1)


@case((BOOL,))
def any_all(x):
    return x.any(), x.all(axis=0), np.any(x, axis=1)


@case((A,))
def normalize(x):
    return (x - x.mean(axis=0)) / (x.std(axis=0) + 1e-6)


@case((A,))
def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@case((I32,))
def int_sum(x):
    return x.sum(), np.sum(x, axis=0)


@case((A,))
def scalar_result_arith(x):
    return x.sum() * 2 + 1


# ---- linear algebra and shapes
@case((A, M))
def matmul_op(x, m):
    return x @ m


@case((A, M))
def dot_fn(x, m):
    return np.dot(x, m)


@case((A, V))
def matvec(x, v):
    return x @ v


@case((A,))
def reshape_it(x):
    return x.reshape(2, 10), x.reshape((5, -1)), np.reshape(x, (20,))


@case((A,))
def transpose_it(x):
    return x.T, x.transpose(), np.transpose(x), x.transpose(1, 0)


@case((A,))
def swap_expand_squeeze(x):
    y = np.expand_dims(x, 0)
    return np.swapaxes(x, 0, 1), y, np.squeeze(y, axis=0), y.squeeze()


@case((A, B))
def concat_stack(x, y):
    return np.concatenate([x, y]), np.concatenate((x, y), axis=1), np.stack([x, y])


@case((V,))
def broadcast_to_it(v):
    return np.broadcast_to(v, (3, 5))


@case((A,))
def astype_it(x):
    return x.astype(np.float32), x.astype(np.int64)


@case((A,))
def attributes(x):
    return x.shape, x.ndim, x.dtype, x.size, x * x.size


@case((A,))
def shape_arith(x):
    n, m = x.shape
    return x.reshape(m, n) * n


# ---- indexing
@case((A,))
def index_int(x):
    return x[0], x[-1], x[1, 2]


@case((A,))
def index_slices(x):
    return x[1:3], x[:, ::2], x[::-1, 1:]


@case((A,))
def index_none_ellipsis(x):
    return x[None], x[..., 0], x[:, None, :]


@case((V,))
def index_scalar(v):
    return v[2] * 2


# ---- Python control flow and values
@case((A, 3), (A, 0))
def branch_on_int(x, n):
    if n > 2:
        return x * n
    return x - n


@case((A, True), (A, False))
def branch_on_bool(x, flag):
    return x + 1 if flag else x - 1


@case((A, None), (A, 2.0))
def optional_arg(x, s):
    if s is None:
        return x
    return x * s


@case((A, 4))
def loop_range(x, n):
    acc = x
    for i in range(n):
        acc = acc + i
    return acc


@case((A,))
def loop_tuple(x):
    out = x
    for c in (1.0, 2.0, 3.0):
        out = out * c
    return out


@case((A,))
def while_loop(x):
    i = 0
    while i < 3:
        x = x + 1
        i += 1
    return x


@case((A, B))
def loop_over_list_of_arrays(x, y):
    total = 0
    for a in [x, y, x]:
        total = total + a
    return total


@case((A,))
def list_comprehension(x):
    return [x * i for i in range(3)]


@case((A,))
def dict_comprehension(x):
    return {k: x + v for k, v in (("a", 1), ("b", 2))}


@case((A,))
def enumerate_zip(x):
    out = []
    for i, (a, b) in enumerate(zip([x, x + 1], [2, 3])):
        out.append(a * b + i)
    return tuple(out)


@case((A,))
def returns_dict(x):
    return {"s": x.sum(), "m": x.mean(), "n": 3}


@case((A,))
def returns_nested(x):
    return (x, [x + 1, (x * 2, "tag")], None)


@case((A,))
def returns_input(x):
    return x, x + 1, x


@case(((A, B),))
def tuple_input(xy):
    a, b = xy
    return a * b


@case(([A, B],))
def list_input(xs):
    return xs[0] - xs[1]


@case(({"w": A, "b": 1.0},))
def dict_input(p):
    return p["w"] * 2 + p["b"]


@case((A, 2))
def star_args_call(x, n):
    return helper_star(x, x * n, x)


@case((A,))
def inline_helpers(x):
    return helper_nested(x) + helper_affine(x, b=3.0) + helper_kw(x, k=1)


@case((A,))
def closure_call(x):
    return scaler3(x)


@case((A,))
def nested_closure(x):
    k = 4.0

    def inner(y):
        return y * k
    return inner(x) + inner(1.0)


@case((A,))
def lambda_call(x):
    f = lambda y, c=2: y * c  # noqa: E731
    return f(x) + f(x, c=3)


@case((A,))
def global_scale(x):
    return x * SCALE


@case((A,))
def global_dict(x):
    return x * CONSTS["a"] + CONSTS["b"]


@case((A,))
def math_module(x):
    return x * math.pi + math.sqrt(2.0)


@case((A,))
def kwargs_call(x):
    kw = {"w": 3.0}
    return helper_affine(x, **kw)


@case((A,))
def string_ops(x):
    name = "sum" + "_" + str(3)
    return {name: x.sum()}


@case((A,))
def fstring_key(x):
    i = 2
    return {f"k{i}": x, "neg": -x}


@case((A,))
def unpack_star(x):
    a, *rest = [x, x + 1, x + 2]
    return a, tuple(rest)


@case((A, 2))
def len_and_isinstance(x, n):
    if isinstance(n, int) and len(x) == 4:
        return x * n
    return x


@case((A,))
def chained_methods(x):
    return x.reshape(5, 4).T.sum(axis=0).astype(np.float32)


@case((A,))
def np_funcs_as_values(x):
    fns = (np.sin, np.cos)
    return sum(f(x) for f in fns) if False else fns[0](x) + fns[1](x)


@case((A, V))
def layer(x, w):
    h = np.maximum(x * w, 0)
    return h.sum(axis=1) / w.shape[0]


@case((A,))
def zero_size_ops(x):
    e = x[:0]
    return e * 2, e.sum(axis=0)


@case((np.array(3.0),))
def zero_d(x):
    return x * 2 + 1


@case((A, np.float32(2.0)))
def numpy_scalar_arg(x, s):
    return x * s


@case((A,))
def comparisons_chain(x):
    return (x > 0) & (x < 1)


@case((A,))
def tuple_concat(x):
    t = (x,) + (x + 1,)
    return t * 2


@case((A, (2, 10)))
def shape_from_arg(x, shp):
    return x.reshape(shp)


# ---- dtypes and NumPy scalars as constants (NumPy 2 dtype instances are subclasses)
@case((A,), (F32,), (I32,))
def dtype_compare(x):
    if x.dtype == np.float64:
        return x * 2
    if x.dtype in (np.float32, np.float16):
        return x + 1
    return x - 1


@case((A,), (I32,))
def dtype_attributes(x):
    if x.dtype.kind == "f" and x.dtype.itemsize == 8:
        return x * x.dtype.itemsize
    return x + x.itemsize


@case((A, np.float64(2.5)), (A, np.float32(0.5)), (A, np.int64(3)))
def numpy_scalar_dtype(x, s):
    if s.dtype == np.float64:
        return x * s
    return x + s.dtype.itemsize


@case((A, -0.0), (A, 1.5))
def python_scalar_sign(x, s):
    return x * s


@pytest.mark.parametrize("fn,args_list", FUNCS)
def test_differential(fn, args_list):
    check_differential(fn, args_list)


def test_suite_is_large():
    assert len(FUNCS) >= 90
