"""Strided operands of elementwise groups (native.c coalesce_axes; issue 23).

An elementwise group's strided run merges the axes every operand's memory
lets it merge (x[1:-1, 1:-1, :] of a (500, 500, 3) array: 498 rows of 1494
contiguous items, not 248004 rows of 3), dropping size-1 axes.  Results must
be NumPy's bit for bit (value, dtype, shape, strides) for every layout:
slices with short inner axes, steps, negative strides, broadcast operands
(stride 0), size-1 axes, transposes, and operands that merge differently.
"""
import numpy as np
import pytest

import framejit
from difftools import clone
from native_compare import same_outcomes


@pytest.fixture(autouse=True, scope="module")
def _cache_dir(native_kernel_cache):
    yield


_n = [0]


def check(expr, args_list, params="a"):
    _n[0] += 1
    src = f"def strided_{_n[0]}({params}):\n    return {expr}\n"
    ns = {"np": np}
    exec(compile(src, f"<strided case {_n[0]}: {expr}>", "exec"), ns)
    fn = ns[f"strided_{_n[0]}"]
    framejit.reset()
    cf = framejit.compile(fn, backend="native")
    same_outcomes(fn, cf, args_list, expr, clone)
    return framejit.counters["native"]["nodes_fused"]


def arr(shape, k=0, dtype=np.float64):
    return np.random.default_rng(k).standard_normal(shape).astype(dtype)


STENCIL = ("(a[1:-1, 1:-1, :] * 4 - a[:-2, 1:-1, :] - a[2:, 1:-1, :] - a[1:-1, :-2, :] - a[1:-1, 2:, :]) * 0.25")


@pytest.mark.parametrize("shape", [(50, 40, 3), (7, 9, 1), (30, 2, 5), (3, 50, 40), (6, 5, 4, 3)])
def test_a_stencil_over_slices_is_numpys(shape):
    expr = STENCIL if len(shape) == 3 else STENCIL.replace(":, :", ":, :, :").replace("1:-1, :]", "1:-1, :, :]")
    if len(shape) == 4:
        expr = "(a[1:-1, 1:-1] * 4 - a[:-2, 1:-1] - a[2:, 1:-1]) * 0.25"
    assert check(expr, [(arr(shape),), (arr(shape, 1, np.float32),)]) > 0


@pytest.mark.parametrize("expr,params,args", [
    ("a[::2, :, 1:] * b[::2, :, 1:] + 1.0", "a, b", lambda: (arr((20, 8, 4)), arr((20, 8, 4), 1))),
    ("a[::-1, 1:] - b[:, 1:]", "a, b", lambda: (arr((30, 12)), arr((30, 12), 2))),
    ("a[:, 2:7] * 2.0 + b", "a, b", lambda: (arr((40, 9)), arr((5,), 3))),          # broadcast row
    ("a[:, :, None] * b[None, :, :]", "a, b", lambda: (arr((6, 7)), arr((7, 5), 4))),
    ("a.T[1:, :] + 1.0", "a", lambda: (arr((9, 11)),)),
    ("a[1:, :1, :] * 3.0 - a[:-1, 1:2, :]", "a", lambda: (arr((10, 4, 6)),)),         # size-1 axis
    ("np.maximum(a[1:-1, 1:-1, :], 0.0) + a[2:, 2:, :] * a[:-2, :-2, :]", "a", lambda: (arr((12, 13, 2)),)),
    ("(a[:, 1:] > 0) & (b[:, :-1] < 1)", "a, b", lambda: (arr((25, 9)), arr((25, 9), 5))),
    ("a[1:, 1:] + np.float32(2.5)", "a", lambda: (arr((33, 17), 6, np.float32),)),
    ("a[..., 1:] // 3 + a[..., :-1] % 5", "a", lambda: ((arr((7, 6, 5)) * 100).astype(np.int64),)),
])
def test_strided_layouts_are_numpys(expr, params, args):
    check(expr, [args(), args()], params)


def test_large_strided_run_on_threads_is_numpys():
    old = framejit._C.native_config()[0]
    framejit._C.native_config(threads=2)
    try:
        check(STENCIL, [(arr((400, 300, 3)),)])
    finally:
        framejit._C.native_config(threads=old)


@pytest.mark.parametrize("expr,params,args,groups", [
    (STENCIL, "a", lambda: (arr((50, 40, 3)),), 1),
    ("(a[:, 1:-1, 1:-1] * 4 - a[:, :-2, 1:-1] - a[:, 2:, 1:-1]) * 0.25", "a", lambda: (arr((3, 30, 20)),), 1),
    ("a[:, ::2] * 2 + a[:, 1::2] * 0.5", "a", lambda: (arr((20, 30)),), 1),
    ("a[..., None, 1:] + b[None][..., :-1]", "a, b", lambda: (arr((9, 7)), arr((9, 7), 1)), 1),
    # a view of a member of the open group closes it (the member exists only after it)
    ("(a * 2)[1:] + a[:-1]", "a", lambda: (arr((40, 5)),), 2),
    # an integer index may raise: not taken before the group
    ("(a[1:] * 2 + a[:-1])[0] + a[1]", "a", lambda: (arr((40, 5)),), 2),
    # a step beyond C long: NumPy takes it, the view runs before the group
    ("(a[1:] * 2, a[::2**70], a[::-2**70] + 1)", "a", lambda: (arr((40, 5)),), 2),
    # every member warns in eager's order around the views (overflow, then invalid)
    ("(a[1:] * 1e308 * 10 - a[:-1] * np.inf) * 0.0", "a", lambda: (np.abs(arr((30, 4))) + 1,), 1),
])
def test_slice_views_do_not_split_a_group(expr, params, args, groups):
    """A slice view of an array computed before the open group runs before
    it (it computes and raises nothing): a stencil over slices is one
    group, not one per slice (0.96-1.1x NumPy, now about 6x at 1e6)."""
    check(expr, [args(), args()], params)
    assert framejit.counters["native"]["groups"] == groups, dict(framejit.counters["native"])
