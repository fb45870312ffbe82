"""framejit/torch_backends.py and the torch side of framejit/backends.py:
to_fx turns a graph of torch tensors into a torch.fx.GraphModule that
computes the same values, torch backends compile it, and lookup hands a
user's backend a GraphModule for a torch graph and the Graph for a NumPy one.

Until the C core captures torch code, the graphs here are built by hand
with the Python surface a framejit Graph has (Graph, Node below), meta
included: the kind of each value and, for tensors, a meta-device tensor.
"""
import operator
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: framejit's torch backends "
                                            "need it (make deps installs torch 2.13.0 on CPython 3.11 x86_64)")

import framejit  # noqa: E402
from framejit import _C, backends, config, torch_backends  # noqa: E402
from framejit.torch_backends import to_fx, torch_backend  # noqa: E402


# ----------------------------------------------------- hand-built graphs
class Node:
    """A node with the attributes framejit's Node shows Python."""

    def __init__(self, op, name, target, args=(), kwargs=None, meta=None):
        self.op, self.name, self.target = op, name, target
        self.args, self.kwargs, self.meta = tuple(args), dict(kwargs or {}), meta or {}

    def __repr__(self):
        return self.name


def tensor_meta(t):
    fake = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta",
                               requires_grad=t.requires_grad)
    return {"kind": "tensor", "fake": fake, "shape": tuple(t.shape), "dtype": t.dtype}


class Graph:
    """A graph of torch tensors with framejit's Graph surface; call nodes
    get their meta from running them on the example inputs."""
    library = "torch"

    def __init__(self):
        self.nodes = []
        self.values = {}   # node name -> its value on the example inputs

    @property
    def placeholders(self):
        return [n for n in self.nodes if n.op == "placeholder"]

    def input(self, name, example):
        meta = (tensor_meta(example) if isinstance(example, torch.Tensor)
                else {"kind": "pyscalar", "example": example})
        return self._add(Node("placeholder", name, name, meta=meta), example)

    def call(self, op, name, target, *args, **kwargs):
        node = Node(op, name, target, args, kwargs)
        a = self._values(node.args)
        kw = self._values(node.kwargs)
        if op == "call_function":
            value = target(*a, **kw)
        elif op == "call_method":
            value = getattr(a[0], target)(*a[1:], **kw)
        else:
            value = getattr(a[0], target)
        if isinstance(value, torch.Tensor):
            node.meta = tensor_meta(value)
        return self._add(node, value)

    def output(self, *outs):
        self.nodes.append(Node("output", "output", None, (outs,)))
        return self

    def _add(self, node, value):
        self.nodes.append(node)
        self.values[node.name] = value
        return node

    def _values(self, x):
        if isinstance(x, Node):
            return self.values[x.name]
        if isinstance(x, (tuple, list)):
            return type(x)(self._values(a) for a in x)
        if isinstance(x, dict):
            return {k: self._values(v) for k, v in x.items()}
        if isinstance(x, slice):
            return slice(self._values(x.start), self._values(x.stop), self._values(x.step))
        return x


def many_ops_graph(x, y, n):
    """Every kind of node and argument the C core will hand over; returns
    (graph, direct) where direct(x, y, n) computes the same in plain torch."""
    g = Graph()
    lx, ly, ln = g.input("l_x_", x), g.input("l_y_", y), g.input("l_n_", n)
    sin = g.call("call_function", "sin", torch.sin, lx)
    add = g.call("call_function", "add", operator.add, sin, 1.5)
    mul = g.call("call_function", "mul", operator.mul, 2, add)
    scaled = g.call("call_function", "mul_1", operator.mul, mul, ln)
    s = g.call("call_method", "sum", "sum", scaled, dim=1, keepdim=False)
    v = g.call("call_method", "view", "view", ly, 3, 4)
    t = g.call("call_attr", "T", "T", v)
    rows = g.call("call_function", "getitem", operator.getitem, t, (slice(None, ln), Ellipsis))
    cat = g.call("call_function", "cat", torch.cat, [rows, rows], dim=0)
    g.call("call_function", "setitem", operator.setitem, cat, (0, slice(1, None)), -1.0)
    r = g.call("call_function", "relu", torch.nn.functional.relu, cat)
    sz = g.call("call_method", "reshape", "reshape", r, torch.Size([-1]))
    d = g.call("call_method", "to", "to", sz, dtype=torch.float64)
    g.output(s, (d, (t, 7)), None, ln)

    def direct(x, y, n):
        s = (((2 * (torch.sin(x) + 1.5)) * n).sum(dim=1))
        t = y.view(3, 4).T
        cat = torch.cat([t[:n], t[:n]], dim=0)
        cat[0, 1:] = -1.0
        d = torch.relu(cat).reshape(-1).to(torch.float64)
        return (s, (d, (t, 7)), None, n)
    return g, direct


def assert_same(a, b, exact=True):
    assert type(a) is type(b), (a, b)
    if isinstance(a, torch.Tensor):
        assert a.shape == b.shape and a.dtype == b.dtype
        if exact:
            assert torch.equal(a, b), (a, b)
        else:
            torch.testing.assert_close(a, b)
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for p, q in zip(a, b):
            assert_same(p, q, exact)
    else:
        assert a == b


X = torch.randn(5, 3)
Y = torch.arange(12.0) - 6


# ------------------------------------------------------------------ to_fx
def test_to_fx_keeps_placeholders_and_reads_well():
    g, _ = many_ops_graph(X, Y, 2)
    gm = to_fx(g)
    assert isinstance(gm, torch.fx.GraphModule)
    ph = [n for n in gm.graph.nodes if n.op == "placeholder"]
    assert [n.name for n in ph] == [n.target for n in ph] == ["l_x_", "l_y_", "l_n_"]
    code = gm.code
    assert "def forward(self, l_x_, l_y_, l_n_):" in code
    for line in ("sin = torch.sin(l_x_)", "add = sin + 1.5", "mul = 2 * add",
                 "sum_1 = mul_1.sum(dim = 1, keepdim = False)", "view = l_y_.view(3, 4)",
                 "T = view.T", "getitem = T[(slice(None, l_n_, None), Ellipsis)]",
                 "cat = torch.cat([getitem, getitem], dim = 0)",
                 "cat[(0, slice(1, None, None))] = -1.0",
                 "reshape = relu.reshape((-1,))", "to = reshape.to(dtype = torch.float64)",
                 "return (sum_1, (to, (T, 7)), None, l_n_)"):
        assert line in code, code
    kinds = [(n.op, n.target) for n in gm.graph.nodes if n.op != "placeholder"]
    assert ("call_function", getattr) in kinds           # call_attr T
    assert ("call_method", "view") in kinds and ("call_function", operator.setitem) in kinds


def test_to_fx_computes_what_the_graph_computes():
    g, direct = many_ops_graph(X, Y, 2)
    gm = to_fx(g)
    for n in (2, 3, 4):   # the GraphModule itself is not specialized on n
        assert_same(gm(X, Y, n), direct(X, Y, n))


def test_to_fx_meta_tensors_are_example_values_never_val():
    g, _ = many_ops_graph(X, Y, 2)
    gm = to_fx(g)
    fx_nodes = list(gm.graph.nodes)
    assert len(fx_nodes) == len(g.nodes)     # one FX node per node, in order
    seen = 0
    for ours, node in zip(g.nodes, fx_nodes):
        assert "val" not in node.meta
        if ours.meta.get("kind") == "tensor":
            assert node.meta["example_value"] is ours.meta["fake"]
            assert node.meta["example_value"].device.type == "meta"
            seen += 1
        else:
            assert "example_value" not in node.meta   # ints, setitem's None, the output
    assert seen == 14


def test_to_fx_keeps_the_order_of_in_place_operations():
    x = torch.zeros(4)
    g = Graph()
    lx = g.input("l_x_", x.clone())
    before = g.call("call_method", "clone", "clone", lx)
    iadd = g.call("call_function", "iadd", operator.iadd, lx, 1.0)
    g.call("call_method", "mul_", "mul_", iadd, 3.0)
    after = g.call("call_method", "clone_1", "clone", lx)
    g.call("call_function", "setitem", operator.setitem, lx, 0, 100.0)
    g.output(before, after)
    arg = torch.zeros(4)
    out = to_fx(g)(arg)
    assert_same(out, (torch.zeros(4), torch.full((4,), 3.0)))
    assert_same(arg, torch.tensor([100.0, 3.0, 3.0, 3.0]))   # the input was mutated in place


def test_to_fx_refuses_an_op_framejit_graphs_do_not_have():
    g = Graph()
    g.input("l_x_", X)
    g.nodes.append(Node("get_attr", "w", "w"))
    with pytest.raises(TypeError, match="'w' has op 'get_attr'"):
        to_fx(g)


# --------------------------------------------------------- torch backends
def test_aot_eager_computes_the_graph_and_recompiles_for_new_ints_and_sizes():
    g, direct = many_ops_graph(X, Y, 2)
    run = torch_backend("aot_eager")(g, [X, Y, 2])
    assert_same(run(X, Y, 2), direct(X, Y, 2))
    # AOTAutograd bakes an int input's example value into its trace: n=3
    # must not run the code compiled for n=2
    assert_same(run(X, Y, 3), direct(X, Y, 3))
    x7 = torch.randn(7, 3)
    assert_same(run(x7, Y, 3), direct(x7, Y, 3))
    assert len(run.compiled) == 3
    assert_same(run(X, Y, 2), direct(X, Y, 2))
    assert len(run.compiled) == 3


def test_aot_eager_gradients_match_eager():
    x = torch.randn(4, 3, requires_grad=True)
    w = torch.randn(3, requires_grad=True)
    g = Graph()
    lx, lw = g.input("l_x_", x), g.input("l_w_", w)
    sin = g.call("call_function", "sin", torch.sin, lx)
    mul = g.call("call_function", "mul", operator.mul, sin, lw)
    relu = g.call("call_function", "relu", torch.nn.functional.relu, mul)
    total = g.call("call_method", "sum", "sum", relu)
    g.output(total, relu)
    run = torch_backend("aot_eager")(g, [x, w])
    out = run(x, w)
    assert out[0].grad_fn is not None
    out[0].backward()
    got = (x.grad.clone(), w.grad.clone())
    x.grad = w.grad = None
    expected = torch.relu(torch.sin(x) * w)
    expected.sum().backward()
    assert_same(out[1].detach(), expected.detach())
    torch.testing.assert_close(got, (x.grad, w.grad))
    # without grad mode the compiled function is another one (no autograd graph)
    with torch.no_grad():
        assert run(x, w)[0].requires_grad is False
    assert len(run.compiled) == 2


def test_a_callable_torch_backend_gets_a_flat_graph_module_and_its_lists_become_tuples():
    g, direct = many_ops_graph(X, Y, 2)
    calls = []

    def mine(gm, example_inputs):
        calls.append((gm, example_inputs))
        return lambda *args: list(gm(*args))    # torch backends may return lists

    run = torch_backend(mine)(g, (X, Y, 2))
    gm, example_inputs = calls[0]
    assert isinstance(gm, torch.fx.GraphModule)
    assert type(example_inputs) is list and example_inputs[0] is X and example_inputs[2] == 2
    # dynamo's graphs return a flat tuple of nodes: constants and nesting are put back outside
    assert "return (sum_1, to, T, l_n_)" in gm.code
    assert_same(run(X, Y, 2), direct(X, Y, 2))
    assert len(calls) == 1


def test_past_the_recompile_limit_new_keys_run_uncompiled(monkeypatch):
    g, direct = many_ops_graph(X, Y, 2)
    calls = []

    def mine(gm, example_inputs):
        calls.append(example_inputs[2])
        return gm.forward

    monkeypatch.setattr(config, "recompile_limit", 2)
    run = torch_backend(mine)(g, [X, Y, 2])
    assert_same(run(X, Y, 3), direct(X, Y, 3))    # n is symbolic: the first compile serves 3
    assert_same(run(X, Y, 1), direct(X, Y, 1))    # 1 is specialized: a second compile
    x7 = torch.randn(7, 3)                        # x's sizes are static: a third
    with pytest.warns(RuntimeWarning, match="compiled one graph for 2 different int values"):
        assert_same(run(x7, Y, 2), direct(x7, Y, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # once per graph
        x9 = torch.randn(9, 3)
        assert_same(run(x9, Y, 2), direct(x9, Y, 2))
    assert calls == [2, 1]


def test_a_torch_backend_failing_at_call_time_names_itself():
    g, _ = many_ops_graph(X, Y, 2)

    def fails_on_one(gm, example_inputs):
        if example_inputs[2] == 1:
            raise RuntimeError("no ones")
        return gm.forward

    run = torch_backend(fails_on_one)(g, [X, Y, 2])
    with pytest.raises(framejit.BackendCompilerFailed, match="fails_on_one.*RuntimeError: no ones"):
        run(X, Y, 1)    # 1 is specialized: a compile (3 would be served by the first)


def test_inductor_compiles_the_graph_given_to_native():
    # the one inductor compile of the suite (seconds): through "native",
    # which hands torch graphs to inductor
    g, direct = many_ops_graph(X, Y, 2)
    run = backends.lookup("native")(g, [X, Y, 2])
    assert isinstance(run, torch_backends._Specialized) and run.name == "inductor"
    assert_same(run(X, Y, 2), direct(X, Y, 2), exact=False)
    # the same graph compiled again hits inductor's FX graph cache: the
    # compile ran inside a TracingContext whose fake mode has a ShapeEnv
    from torch._dynamo.utils import counters
    counters.clear()
    again = backends.lookup("native")(g, [X, Y, 2])
    assert_same(again(X, Y, 2), direct(X, Y, 2), exact=False)
    assert counters["inductor"]["fxgraph_cache_hit"] >= 1, dict(counters["inductor"])
    assert counters["inductor"]["fxgraph_cache_bypass"] == 0, dict(counters["inductor"])


def test_a_torch_backend_compiles_in_a_tracing_context_with_static_fakes():
    seen = {}

    def backend(gm, example_inputs):
        ctx = torch._guards.TracingContext.try_get()
        seen["shape_env"] = ctx is not None and ctx.fake_mode.shape_env is not None
        fake = ctx.fake_mode.from_tensor(example_inputs[0])
        seen["static"] = all(isinstance(d, int) for d in fake.shape) and fake.shape == example_inputs[0].shape
        return gm.forward

    g, direct = many_ops_graph(X, Y, 2)
    run = torch_backend(backend)(g, [X, Y, 2])
    assert seen == {"shape_env": True, "static": True}
    assert_same(run(X, Y, 2), direct(X, Y, 2))
    assert torch._guards.TracingContext.try_get() is None


def test_torch_backends_refuse_numpy_graphs_with_the_reason():
    seen = []
    framejit.compile(lambda a: a * 2, backend=lambda gr, ex: seen.append(gr) or gr)(np.ones(3))
    assert type(seen[0]) is _C.Graph and not torch_backends.is_torch_graph(seen[0])
    with pytest.raises(TypeError, match="'aot_eager' compiles graphs of torch tensors.*'native'"):
        backends.lookup("aot_eager")(seen[0], [np.ones(3)])


# ----------------------------------------------------------------- lookup
def test_a_user_backend_gets_a_graph_module_for_torch_and_the_graph_for_numpy():
    received = []

    def mine(graph, example_inputs):
        received.append(graph)
        return graph.forward if isinstance(graph, torch.fx.GraphModule) else graph

    backend = backends.lookup(mine)
    assert backends.lookup(mine) is backend        # compilers with it share cache entries
    g, direct = many_ops_graph(X, Y, 2)
    assert_same(backend(g, [X, Y, 2])(X, Y, 2), direct(X, Y, 2))
    assert isinstance(received[0], torch.fx.GraphModule)

    x = np.arange(3.0)
    assert np.array_equal(framejit.compile(lambda a: a + 1, backend=mine)(x), x + 1)
    assert type(received[1]) is _C.Graph


def test_eager_runs_a_torch_graph_as_it_is():
    g, _ = many_ops_graph(X, Y, 2)
    assert backends.lookup("eager")(g, [X, Y, 2]) is g


def test_names_only_torch_knows_are_torch_backends():
    backend = backends.lookup("eager_noexcept")
    assert isinstance(backend, torch_backends.TorchBackend)
    assert backends.lookup("eager_noexcept") is backend
    g, direct = many_ops_graph(X, Y, 2)
    assert_same(backend(g, [X, Y, 2])(X, Y, 2), direct(X, Y, 2))
    with pytest.raises(ValueError, match="unknown framejit backend 'no-such'.*aot_eager.*inductor"):
        backends.lookup("no-such")


def _mutate_then_read(a, b):
    a.add_(1)
    return b * 2


@pytest.mark.parametrize("order", ["distinct first", "aliased first"])
def test_a_torch_backend_compiles_again_for_inputs_that_alias(order):
    # AOTAutograd compiles for the aliasing it is shown: the same tensor (or
    # views of one base) as two inputs is another specialization
    cf = framejit.compile(_mutate_then_read, backend="aot_eager")

    def calls():
        x = torch.zeros(3)
        yield (torch.zeros(3), torch.zeros(3)), lambda: (torch.zeros(3), torch.zeros(3))
        yield (x, x), (lambda: (lambda t: (t, t))(torch.zeros(3)))
        x = torch.zeros(4)
        yield (x[0:2], x[1:3]), (lambda: (lambda t: (t[0:2], t[1:3]))(torch.zeros(4)))

    cases = list(calls())
    x = torch.zeros(8)
    cases.append(((x[:4], x[4:]), (lambda: (lambda t: (t[:4], t[4:]))(torch.zeros(8)))))
    if order == "aliased first":
        cases.reverse()
    for args, fresh in cases:
        want = _mutate_then_read(*fresh())
        assert torch.equal(cf(*args), want), args
        assert torch.equal(args[0], fresh()[0] + 1)
