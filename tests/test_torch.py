"""torch through framejit (issue 19): the seeds' experiments with torch
tensors, guards, modules, autograd and real models against eager torch.

The whole module skips when torch cannot be imported (make deps installs
torch 2.13.0 where that wheel exists: CPython 3.11 on x86_64)."""
import operator

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the torch tests need it "
                                            "(make deps installs torch==2.13.0 on CPython 3.11 x86_64)")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import framejit  # noqa: E402
from framejit import _C, counters  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh():
    framejit.reset()
    counters.clear()
    yield
    framejit.reset()


# ---------------------------------------------------------------- seeds/000

@pytest.mark.parametrize("label,fn,ncalls,ops", [
    ("1 op, 1 call", lambda x: x + 1, 1, 1),
    ("1 op, 5 calls", lambda x: x + 1, 5, 1),
    ("3 ops, 1 call", lambda x: torch.sin(x) * 2 + 1, 1, 3),
    ("3 ops, 5 calls", lambda x: torch.sin(x) * 2 + 1, 5, 3),
])
def test_seed000_counters(label, fn, ncalls, ops):
    cf = framejit.compile(fn, backend="eager")
    for _ in range(ncalls):
        x = torch.randn(4)
        assert torch.equal(cf(x), fn(x))
    assert dict(counters["stats"]) == {"calls_captured": ops, "unique_graphs": 1}


def simple(x):
    y = torch.sin(x)
    return y + 1


def test_seed000_modified_bytecode_has_no_torch():
    import dis
    cf = framejit.compile(simple, backend="eager")
    x = torch.randn(4)
    assert torch.equal(cf(x), simple(x))
    entries = _C.eval_frame._debug_get_cache_entry_list(simple.__code__)
    assert len(entries) == 1
    code = entries[0].code
    ops = [(i.opname, i.argval) for i in dis.get_instructions(code)]
    names = [a for _, a in ops if isinstance(a, str)]
    assert not any("torch" in n or n == "sin" for n in names), ops
    opnames = [o for o, _ in ops]
    body = opnames[:opnames.index("RETURN_VALUE") + 1]
    assert body[-2:] == ["UNPACK_SEQUENCE", "RETURN_VALUE"]
    # after it, only the handler around the graph call (evalframe.c, "A graph that raised")
    assert opnames[len(body):][-2:] == ["POP_TOP", "RERAISE"]
    assert any(isinstance(a, str) and a.startswith("__compiled_fn_") for _, a in ops)


def test_seed000_closures_share_one_entry():
    def make(k):
        def h(x):
            return torch.cos(x) * k
        return h
    h1, h2 = make(2), make(2)
    x = torch.randn(4)
    assert torch.equal(framejit.compile(h1, backend="eager")(x), h1(x))
    assert torch.equal(framejit.compile(h2, backend="eager")(x), h2(x))
    assert counters["stats"]["unique_graphs"] == 1
    assert len(_C.eval_frame._debug_get_cache_entry_list(h1.__code__)) == 1


# ---------------------------------------------------------------- seeds/004

cfg_scale = 2


def seed4(x, n):
    return x * n * cfg_scale


def test_seed004_guards():
    cf = framejit.compile(seed4, backend="eager")
    x = torch.randn(4, 4)
    assert torch.equal(cf(x, 3), seed4(x, 3))
    text = str(framejit.explain(seed4)(x, 3))
    assert ("TENSOR_MATCH: check_tensor(L['x'], Tensor, dtype=torch.float32, device=None, "
            "requires_grad=False, size=[4, 4], stride=[4, 1])") in text
    assert "EQUALS_MATCH: L['n'] == 3" in text
    assert "EQUALS_MATCH: G['cfg_scale'] == 2" in text
    assert "GLOBAL_STATE: ___check_global_state()" in text


def test_seed004_n_recompiles_once_then_symbolic():
    cf = framejit.compile(seed4, backend="eager")
    x = torch.randn(4, 4)
    for n in (3, 4, 5, 6, 7):
        assert torch.equal(cf(x, n), seed4(x, n))
    assert counters["stats"]["unique_graphs"] == 2
    assert counters["stats"]["recompiles"] == 1


def test_grad_mode_change_recompiles():
    def g(x):
        return torch.sin(x) + 1
    cg = framejit.compile(g, backend="eager")
    x = torch.randn(3, requires_grad=True)
    r1 = cg(x)
    with torch.no_grad():
        r2 = cg(x)
    r3 = cg(x)
    assert r1.requires_grad and not r2.requires_grad and r3.requires_grad
    assert counters["stats"]["unique_graphs"] == 2
    assert counters["stats"]["recompiles"] == 1


@pytest.mark.parametrize("change", ["dtype", "shape", "stride", "requires_grad"])
def test_tensor_match_fails_on_each_field(change):
    def f(x):
        return x * 2
    cf = framejit.compile(f, backend="eager")
    x = torch.randn(4, 4)
    cf(x)
    y = {"dtype": x.double(), "shape": torch.randn(5, 4), "stride": x.t(),
         "requires_grad": x.clone().requires_grad_()}[change]
    r = cf(y)
    assert torch.equal(r, f(y)) and r.dtype == f(y).dtype and r.requires_grad == f(y).requires_grad
    assert counters["stats"]["recompiles"] == 1


def test_tensor_guard_leaf_check():
    """The guard tree in C: TENSOR_MATCH passes the same metadata, fails any change."""
    r = _C.RootGuardManager()
    x = torch.randn(4, 4)
    r.local(0, "x").add_tensor_match(x)
    assert r.check([torch.randn(4, 4)])
    for bad in (torch.randn(4, 5), torch.randn(4, 4, dtype=torch.float64), torch.randn(4, 4).t(),
                torch.randn(4, 4, requires_grad=True), nn.Parameter(torch.randn(4, 4)), 3):
        assert not r.check([bad]), bad
    assert "requires_grad mismatch" in r.check_verbose([torch.randn(4, 4, requires_grad=True)])
    assert "size mismatch at index 1. expected 4, actual 5" in r.check_verbose([torch.randn(4, 5)])


def test_tensor_guard_reads_through_the_c_reader():
    from framejit import torch_meta
    if not torch_meta.load():
        pytest.skip(f"no C reader: {torch_meta.reason()}")
    x = torch.randn(4, 4)
    meta = _C._testing.tensor_meta(x)
    assert meta["sizes"] == (4, 4) and meta["strides"] == (4, 1) and meta["requires_grad"] is False
    r = _C.RootGuardManager()
    r.local(0, "x").add_tensor_match(x)
    assert r.check([torch.randn(4, 4)]) and not r.check([torch.randn(4, 4).double()])


# ---------------------------------------------------------------- ops and breaks

def test_item_is_a_break_with_a_clear_reason():
    def f(x):
        y = x * 2
        v = y.sum().item()
        return y + v
    cf = framejit.compile(f, backend="eager")
    x = torch.randn(5)
    assert torch.equal(cf(x), f(x))
    reasons = [str(r) for r in framejit.explain(f)(x).break_reasons]
    assert any("Tensor.item() reads a value out of the tensor" in r for r in reasons), reasons


def test_branch_on_tensor_value_breaks():
    def f(x):
        if x.sum() > 0:
            return x + 1
        return x - 1
    cf = framejit.compile(f, backend="eager")
    for x in (torch.ones(3), -torch.ones(3)):
        assert torch.equal(cf(x), f(x))
    reasons = [str(r) for r in framejit.explain(f)(torch.ones(3)).break_reasons]
    assert any("data-dependent control flow" in r for r in reasons), reasons


def test_inplace_returns_the_operand_and_mutates_it():
    def f(x):
        y = x.add_(1)
        x *= 2
        return y
    cf = framejit.compile(f, backend="eager")
    a, b = torch.ones(3), torch.ones(3)
    ra, rb = cf(a), f(b)
    assert ra is a and rb is b and torch.equal(a, b)
    assert counters["stats"]["calls_captured"] == 2


def test_shape_metadata_are_constants():
    def f(x):
        B, C = x.shape
        return x.view(B * C) * x.size(0) + x.dim()
    cf = framejit.compile(f, backend="eager")
    x = torch.randn(3, 4)
    assert torch.equal(cf(x), f(x))
    assert counters["stats"]["unique_graphs"] == 1


def test_creation_ops_inside_a_graph():
    def f(x):
        return x + torch.ones(3) * torch.arange(3) + torch.zeros_like(x)
    cf = framejit.compile(f, backend="eager")
    x = torch.randn(3)
    assert torch.equal(cf(x), f(x))
    assert counters["stats"]["unique_graphs"] == 1


def test_tuple_results():
    def f(x):
        a, b = torch.split(x, 2)
        v, i = torch.max(x.view(2, 2), 1)
        return a * b, v, i
    cf = framejit.compile(f, backend="eager")
    x = torch.randn(4)
    for r, e in zip(cf(x), f(x)):
        assert torch.equal(r, e)
    assert counters["stats"]["unique_graphs"] == 1


def test_manual_seed_is_not_captured_but_runs():
    def f(x):
        torch.manual_seed(3)
        return x + torch.randn(3)
    cf = framejit.compile(f, backend="eager")
    x = torch.zeros(3)
    assert torch.equal(cf(x), f(x))


def test_numpy_op_on_tensor_breaks_cleanly():
    np = pytest.importorskip("numpy")

    def f(x):
        return np.sin(x) + 1
    cf = framejit.compile(f, backend="eager")
    x = torch.randn(3)
    assert torch.allclose(cf(x), f(x))


# ---------------------------------------------------------------- autograd

@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_gradients_match_eager(backend):
    def f(x, w):
        return (torch.tanh(x @ w) * 2).sum()
    cf = framejit.compile(f, backend=backend)
    x, w = torch.randn(3, 4), torch.randn(4, 2, requires_grad=True)
    cf(x, w).backward()
    g1 = w.grad.clone()
    w.grad = None
    f(x, w).backward()
    assert torch.allclose(g1, w.grad)


# ---------------------------------------------------------------- modules

def run(m, x):
    return m(x)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 16), nn.Linear(16, 4)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.fc2(self.drop(F.relu(self.fc1(x))))


def test_module_call_one_graph_and_training_flag():
    torch.manual_seed(0)
    m = MLP().eval()
    x = torch.randn(5, 8)
    crun = framejit.compile(run, backend="eager")
    assert torch.equal(crun(m, x), run(m, x))
    assert counters["stats"]["unique_graphs"] == 1
    m.train()  # dropout now active: the training flag is guarded
    torch.manual_seed(1)
    r = crun(m, x)
    torch.manual_seed(1)
    assert torch.equal(r, run(m, x))
    assert counters["stats"]["recompiles"] == 1


def test_forward_hook_is_honoured():
    m = MLP().eval()
    x = torch.randn(2, 8)
    crun = framejit.compile(run, backend="eager")
    crun(m, x)
    seen = []
    h = m.fc1.register_forward_hook(lambda mod, i, o: seen.append(o.shape))
    assert torch.equal(crun(m, x), run(m, x))
    assert seen == [torch.Size([2, 16])] * 2
    h.remove()


def test_training_loop_losses_equal_and_no_recompiles():
    def make():
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
        return m, torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)

    def step(m, opt, x, y):
        opt.zero_grad()
        loss = F.mse_loss(m(x), y)
        loss.backward()
        opt.step()
        return loss
    X, Y = torch.randn(64, 8), torch.randn(64, 1)
    m1, o1 = make()
    m2, o2 = make()
    cstep = framejit.compile(step, backend="eager")
    l1 = [step(m1, o1, X, Y).item() for _ in range(20)]
    l2 = [cstep(m2, o2, X, Y).item() for _ in range(20)]
    assert l1 == l2
    assert counters["stats"]["unique_graphs"] == 1  # in-place parameter updates do not recompile


class Block(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        idt = x
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.down is not None:
            idt = self.down(x)
        return F.relu(out + idt)


class ResNet18(nn.Module):
    """torchvision's resnet18 architecture (torchvision does not install beside torch 2.13's wheel)."""

    def __init__(self, n=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = nn.Sequential(Block(64, 64), Block(64, 64))
        self.layer2 = nn.Sequential(Block(64, 128, 2), Block(128, 128))
        self.layer3 = nn.Sequential(Block(128, 256, 2), Block(256, 256))
        self.layer4 = nn.Sequential(Block(256, 512, 2), Block(512, 512))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, n)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def test_resnet18_eval_one_graph():
    torch.manual_seed(0)
    m = ResNet18().eval()
    x = torch.randn(2, 3, 32, 32)
    crun = framejit.compile(run, backend="eager")
    assert torch.equal(crun(m, x), run(m, x))
    ex = framejit.explain(run)(m, x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0


def test_resnet18_train_updates_running_stats_like_eager():
    torch.manual_seed(0)
    m1 = ResNet18().train()
    m2 = ResNet18().train()
    m2.load_state_dict(m1.state_dict())
    x = torch.randn(2, 3, 32, 32)
    crun = framejit.compile(run, backend="eager")
    assert torch.equal(crun(m1, x), run(m2, x))
    for (k, a), (_, b) in zip(m1.state_dict().items(), m2.state_dict().items()):
        assert torch.equal(a, b), k


def test_transformer_encoder_layer():
    torch.manual_seed(0)
    enc = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True).train()
    x = torch.randn(2, 10, 32)
    crun = framejit.compile(run, backend="eager")
    assert torch.equal(crun(enc, x), run(enc, x))
    assert framejit.explain(run)(enc, x).graph_count >= 1


class GPTBlock(nn.Module):
    def __init__(self, d=32, h=4):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.h, C // self.h).transpose(1, 2)
        k = k.view(B, T, self.h, C // self.h).transpose(1, 2)
        v = v.view(B, T, self.h, C // self.h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (k.size(-1) ** 0.5))
        mask = torch.tril(torch.ones(T, T)).view(1, 1, T, T)
        att = att.masked_fill(mask == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


def test_gpt_block_one_graph_and_grads():
    torch.manual_seed(0)
    blk = GPTBlock()
    x = torch.randn(2, 8, 32)
    crun = framejit.compile(run, backend="eager")
    r = crun(blk, x)
    assert torch.equal(r, run(blk, x))
    ex = framejit.explain(run)(blk, x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0
    r.sum().backward()
    g1 = [p.grad.clone() for p in blk.parameters()]
    blk.zero_grad()
    run(blk, x).sum().backward()
    for a, p in zip(g1, blk.parameters()):
        assert torch.equal(a, p.grad)


def test_mlp_with_inductor_close_to_eager():
    torch.manual_seed(0)
    m = MLP().eval()
    x = torch.randn(5, 8)
    crun = framejit.compile(run, backend="inductor")
    assert torch.allclose(crun(m, x), run(m, x), atol=1e-5)


def test_graph_is_a_torch_graph_for_backends():
    seen = []

    def backend(gm, example_inputs):
        seen.append(gm)
        return gm.forward
    cf = framejit.compile(lambda x: torch.relu(x) + 1, backend=backend)
    x = torch.randn(3)
    assert torch.equal(cf(x), torch.relu(x) + 1)
    assert isinstance(seen[0], torch.fx.GraphModule)
    targets = [n.target for n in seen[0].graph.nodes if n.op == "call_function"]
    assert torch.relu in targets and operator.add in targets


# ---------------------------------------------------------------- torch.compile beside framejit

def test_framejit_calling_a_torch_compiled_function():
    def inner(x):
        return torch.cos(x) + 1
    tinner = torch.compile(inner, backend="eager")

    def outer(x):
        return tinner(x) * 2
    fo = framejit.compile(outer, backend="eager")
    for _ in range(3):
        x = torch.randn(4)
        assert torch.equal(fo(x), outer(x))


def test_torch_compile_calling_a_framejit_function():
    def inner(x):
        return torch.sin(x) - 1
    finner = framejit.compile(inner, backend="eager")

    def outer(x):
        return finner(x) * 3
    to = torch.compile(outer, backend="eager")
    for _ in range(3):
        x = torch.randn(4)
        assert torch.equal(to(x), outer(x))


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.lin = nn.Linear(3, 3)
        self.register_buffer("total", torch.zeros(3))

    def forward(self, x):
        self.calls += 1
        y = self.lin(x)
        self.total += y.sum(0).detach()
        self.last = y.detach()
        return y


def test_module_attribute_and_buffer_mutation_replayed():
    m1, m2 = Counter(), Counter()
    m2.load_state_dict(m1.state_dict())
    crun = framejit.compile(run, backend="eager")
    x = torch.randn(2, 3)
    for _ in range(3):
        assert torch.equal(crun(m1, x), run(m2, x))
    assert m1.calls == m2.calls == 3
    assert torch.equal(m1.total, m2.total) and torch.equal(m1.last, m2.last)
    assert "last" in m1.__dict__ and "total" in m1._buffers
    ex = framejit.explain(run)(m1, x)
    assert ex.graph_break_count == 0, ex.break_reasons


def test_inplace_broadcast_error_is_the_same_error():
    class Bad(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("total", torch.zeros(3))

        def forward(self, x):
            self.total += x  # (2, 3) into (3,): torch refuses
            return x
    crun = framejit.compile(run, backend="eager")
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        crun(Bad(), torch.randn(2, 3))


def test_inplace_on_an_intermediate_passed_in():
    def f(x):
        x.mul_(2)
        return x + 1
    cf = framejit.compile(f, backend="eager")
    w = torch.randn(3, requires_grad=True)
    a, b = w * 1, w * 1  # non-leaf tensors that require grad: in-place is allowed
    assert torch.equal(cf(a), f(b)) and torch.equal(a, b)
    assert counters["stats"]["unique_graphs"] == 1


def test_training_loop_with_inductor_within_tolerance():
    """20 SGD steps: framejit with inductor (torch's AOT autograd splits forward
    and backward) against eager, losses within float tolerance."""
    def make():
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
        return m, torch.optim.SGD(m.parameters(), lr=0.05)

    def step(m, opt, x, y):
        opt.zero_grad()
        loss = F.mse_loss(m(x), y)
        loss.backward()
        opt.step()
        return loss
    X, Y = torch.randn(32, 8), torch.randn(32, 1)
    m1, o1 = make()
    m2, o2 = make()
    cstep = framejit.compile(step, backend="inductor")
    l1 = [step(m1, o1, X, Y).item() for _ in range(20)]
    l2 = [cstep(m2, o2, X, Y).item() for _ in range(20)]
    assert l2 == pytest.approx(l1, rel=1e-4, abs=1e-6)
    assert counters["stats"]["unique_graphs"] == 1


def test_global_module_hook_registered_after_compile_is_honoured():
    m = nn.Linear(3, 3)
    crun = framejit.compile(run, backend="eager")
    x = torch.randn(2, 3)
    crun(m, x)
    seen = []
    h = nn.modules.module.register_module_forward_hook(lambda mod, i, o: seen.append(o.shape))
    try:
        assert torch.equal(crun(m, x), run(m, x))
    finally:
        h.remove()
    assert seen == [torch.Size([2, 3])] * 2  # the compiled call ran it, then the plain one


def test_compile_a_module_object():
    m = MLP().eval()
    x = torch.randn(4, 8)
    cm = framejit.compile(m, backend="eager")
    assert torch.equal(cm(x), m(x))
    assert counters["stats"]["calls_captured"] == 4  # fc1, relu, dropout (eval: identity), fc2


