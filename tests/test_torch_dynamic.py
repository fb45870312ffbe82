"""Automatic dynamic shapes and mark_dynamic for torch tensors (docs/dynamic.md).

A dimension whose size changed between compiles becomes dynamic: its size
leaves TENSOR_MATCH (any size >= 2, contiguous strides) and the graph
serves every size, as long as each op the trace passes the tensor through
has a shape rule (elementwise operations with broadcasting, where two
dynamic dims that meet get a DIMS_EQUAL guard; reductions, softmax,
reshapes, matmul, size reads: tests/test_symbolic_shapes_torch.py).  Any
other use (a stride, an in-place op, an integer index, torch.numel, a sum
of two symbols) pins every dynamic input, and the entry serves that size
only.  Every case compares each call with plain torch, several sizes each.
"""
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the torch tests need it "
                                             "(make deps installs it on CPython 3.11 x86_64)")
import torch.nn.functional as F  # noqa: E402

import framejit  # noqa: E402
from framejit import counters  # noqa: E402

SIZES = [4, 8, 16, 32, 64, 3, 128]


@pytest.fixture(autouse=True)
def _fresh():
    framejit.reset()
    counters.clear()
    yield
    framejit.reset()


def same(a, b):
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype and \
            torch.allclose(a, b, equal_nan=True)
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def run(fn, make, sizes=SIZES):
    cf = framejit.compile(fn, backend="eager")
    for n in sizes:
        torch.manual_seed(n)
        args = make(n)
        torch.manual_seed(n)
        want = fn(*make(n))
        got = cf(*args)
        assert same(got, want), (fn.__name__, n)
    return counters["stats"]["unique_graphs"]


def vec(n):
    return (torch.randn(n),)


def rows(n):
    return (torch.randn(n, 3),)


def two(n):
    return (torch.randn(n), torch.randn(n))


# elementwise all the way: one graph after the first size change
ELEMENTWISE = {
    "sin chain": (lambda x: torch.sin(x) * 2 + 1, vec),
    "relu minus": (lambda x: torch.relu(x) - 0.5, vec),
    "sigmoid tanh": (lambda x: torch.sigmoid(x) * torch.tanh(x), vec),
    "methods": (lambda x: x.exp().neg().abs(), vec),
    "gelu silu": (lambda x: F.gelu(x) + F.silu(x), vec),
    "compare": (lambda x: (x > 0) == (x < 1), vec),
    "rows + bias": (lambda x: x * 2 + torch.ones(3), rows),
    "rows relu": (lambda x: F.relu(x) / 3, rows),
    "two inputs": (lambda x, y: x * y + 1, two),
    "two inputs compare": (lambda x, y: x > y, two),
    "scalar left": (lambda x: 1 - x, vec),
    "pow": (lambda x: x ** 2 + x, vec),
    "div": (lambda x, y: x / (y.abs() + 1), two),
    "torch.add": (lambda x, y: torch.add(x, y), two),
    "neg": (lambda x: -x, vec),
}


@pytest.mark.parametrize("name", list(ELEMENTWISE))
def test_elementwise_functions_compile_twice_over_many_sizes(name):
    fn, make = ELEMENTWISE[name]
    assert run(fn, make) == 2


# a size read or an op whose result's sizes depend on it pins the dims:
# still right for every size, one entry per size
PINNED = {
    "shape read": (lambda x: torch.tanh(x) * x.shape[0], vec),
    "size()": (lambda x: x * x.size(0), vec),
    "len": (lambda x: x + len(x), vec),
    "numel": (lambda x: x / x.numel(), vec),
    "sum": (lambda x: (x.relu() - 0.5).sum(0), rows),
    "mean keepdim": (lambda x: x - x.mean(dim=1, keepdim=True), rows),
    "reshape": (lambda x: x.reshape(-1, 1) * 2, vec),
    "view": (lambda x: x.view(2, -1) + 1, lambda n: (torch.randn(2 * n),)),
    "matmul": (lambda x: x @ torch.ones(3, 2), rows),
    "softmax": (lambda x: torch.softmax(x, dim=0), vec),
    "index": (lambda x: x[0] + x[-1], vec),
    "slice": (lambda x: x[1:] - x[:-1], vec),
    "transpose": (lambda x: x.t() * 2, rows),
    "in-place": (lambda x: x.add_(1) * 2, vec),
    "cat": (lambda x: torch.cat([x, x]) + 1, vec),
    "linear": (lambda x: F.linear(x, torch.ones(4, 3)), rows),
    "iterate": (lambda x: [t * 2 for t in x], lambda n: (torch.randn(min(n, 5)),)),
    "stride": (lambda x: x * x.stride(0), rows),
    "contiguous?": (lambda x: x * 2 if x.is_contiguous() else x, rows),
    "bitwise and (no rule)": (lambda x: (x > 0) & (x < 1), vec),
    "sum()": (lambda x: x.sum(), vec),
    "torch.numel": (lambda x: x * torch.numel(x), vec),
}


@pytest.mark.parametrize("name", list(PINNED))
def test_size_dependent_uses_pin_and_stay_right(name):
    fn, make = PINNED[name]
    sizes = SIZES[:6]
    graphs = run(fn, make, sizes)
    assert 2 <= graphs <= len(sizes)


def test_elementwise_then_a_size_read_shares_one_graph():
    def f(x):
        y = torch.sin(x) + 1
        return y.sum() * x.shape[0]
    assert run(f, vec, SIZES[:6]) == 2


def test_metadata_that_sizes_do_not_change_keeps_the_graph_dynamic():
    def f(x):
        if x.dim() == 1 and x.dtype == torch.float32 and not x.requires_grad:
            return x * 2
        return x
    assert run(f, vec) == 2


def test_dynamic_dims_meeting_get_a_dims_equal_guard_and_mismatches_raise_as_plain():
    def f(x, y):
        return x + y
    cf = framejit.compile(f, backend="eager")
    for n in (4, 8, 16):
        x, y = torch.randn(n), torch.randn(n)
        assert torch.equal(cf(x, y), x + y)
    assert counters["stats"]["unique_graphs"] == 2
    with pytest.raises(RuntimeError, match="size of tensor a"):
        f(torch.randn(5), torch.randn(6))
    with pytest.raises(RuntimeError, match="size of tensor a"):
        cf(torch.randn(5), torch.randn(6))


def test_a_dynamic_dim_meeting_a_fixed_size_pins():
    def f(x, y):
        return x + y
    cf = framejit.compile(f, backend="eager")
    y = torch.randn(3)
    for n in (4, 8, 3):
        x = torch.randn(n)
        if n == 3:
            assert torch.equal(cf(x, y), x + y)
        else:
            with pytest.raises(RuntimeError):
                cf(x, y)


def test_size_one_and_zero_stay_specialized():
    def f(x):
        return x * 2
    cf = framejit.compile(f, backend="eager")
    for n in (4, 8, 1, 0, 16):
        x = torch.randn(n)
        assert torch.equal(cf(x), x * 2)
    assert counters["stats"]["unique_graphs"] == 4  # 4, dynamic, 1, 0


def test_a_non_contiguous_tensor_stays_static():
    def f(x):
        return x * 2
    cf = framejit.compile(f, backend="eager")
    for n in (4, 8, 16):
        x = torch.randn(3, n).t()
        assert torch.equal(cf(x), x * 2)
    assert counters["stats"]["unique_graphs"] == 3


def test_a_dynamic_entry_refuses_a_non_contiguous_tensor():
    def f(x):
        return x * 2
    cf = framejit.compile(f, backend="eager")
    for n in (4, 8):
        cf(torch.randn(n, 3))
    x = torch.randn(3, 16).t()
    assert torch.equal(cf(x), x * 2)
    assert counters["stats"]["unique_graphs"] == 3


def test_guards_print_dynamic_sizes_as_none_and_the_dynamic_log_says_why(logs):
    framejit.set_logs("guards", "dynamic", "recompiles")
    cf = framejit.compile(lambda x: x * 2, backend="eager")
    cf(torch.randn(4))
    cf(torch.randn(8))
    cf(torch.randn(1))
    text = "\n".join(logs.lines)
    assert "size=[4], stride=[1]" in text
    assert "automatic dynamic: L['x'] size (4,) -> (8,), dims (0,) now dynamic" in text
    assert "size=[None], stride=[None]" in text
    assert "L['x']: size mismatch at index 0. expected a size >= 2, actual 1" in text


def test_mark_dynamic_makes_the_first_compile_dynamic():
    def f(x):
        return torch.cos(x) + 1
    cf = framejit.compile(f, backend="eager")
    x = torch.randn(4, 3)
    framejit.mark_dynamic(x, 0)
    assert torch.equal(cf(x), f(x))
    for n in (8, 16, 5):
        y = torch.randn(n, 3)
        assert torch.equal(cf(y), f(y))
    assert counters["stats"]["unique_graphs"] == 1
    with pytest.raises(IndexError, match="out of range"):
        framejit.mark_dynamic(torch.randn(3), 1)
    with pytest.raises(TypeError, match="numpy.ndarray or a torch.Tensor"):
        framejit.mark_dynamic([1, 2], 0)


def test_gradients_through_a_dynamic_graph_match_eager():
    def f(x, w):
        return torch.tanh(x * w) + x
    cf = framejit.compile(f, backend="eager")
    for n in (4, 8, 16):
        x1 = torch.randn(n, requires_grad=True)
        w1 = torch.randn(n, requires_grad=True)
        x2 = x1.detach().clone().requires_grad_()
        w2 = w1.detach().clone().requires_grad_()
        cf(x1, w1).sum().backward()
        f(x2, w2).sum().backward()
        assert torch.allclose(x1.grad, x2.grad) and torch.allclose(w1.grad, w2.grad)
    assert counters["stats"]["unique_graphs"] == 2


def test_a_torch_backend_gets_dynamic_graphs_and_compiles_per_size():
    def f(x):
        return torch.sin(x) * 2 + 1
    cf = framejit.compile(f, backend="aot_eager")
    for n in (4, 8, 16):
        x = torch.randn(n)
        assert torch.allclose(cf(x), f(x))
    assert counters["stats"]["unique_graphs"] == 2


def test_a_module_over_changing_batch_sizes_is_right():
    m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU()).eval()
    cf = framejit.compile(lambda x: m(x) * 2, backend="eager")
    for n in (2, 4, 8, 16):
        x = torch.randn(n, 3)
        assert torch.allclose(cf(x), m(x) * 2)


def test_a_call_whose_sizes_raise_does_not_shadow_the_dynamic_entry():
    # the restart that stops before the raising op is specialized: equal
    # sizes later go to the dynamic entry, not through a break
    def f(x, y):
        return x + y
    cf = framejit.compile(f, backend="eager")
    cf(torch.randn(4), torch.randn(4))
    cf(torch.randn(8), torch.randn(8))
    with pytest.raises(RuntimeError):
        cf(torch.randn(5), torch.randn(6))
    before = dict(counters["stats"])
    for n in (7, 9, 11):
        x, y = torch.randn(n), torch.randn(n)
        assert torch.equal(cf(x, y), x + y)
    assert dict(counters["stats"]) == before
