"""The C rules that give torch results' metadata (csrc/arraylib/torch_infer.c).

Every case calls the rule (framejit._C._testing.torch_infer) on meta
tensors, then the same call through torch's meta kernels and on real CPU
tensors.  Where the rule answers, its fake must equal both in sizes,
strides, dtype, requires_grad and leaf-ness; where torch raises, the rule
must not answer (errors are torch's to report); and the cases built to be
in a rule's domain must be answered (the rules are what makes tracing
models fast, so a rule that silently stops answering is a regression).
"""
import operator
import random

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the torch tests need it "
                                             "(make deps installs it on CPython 3.11 x86_64)")
import torch.nn.functional as F  # noqa: E402

from framejit import _C  # noqa: E402

infer = _C._testing.torch_infer


@pytest.fixture(scope="module", autouse=True)
def _reader():
    from framejit import torch_meta
    if not torch_meta.load():
        pytest.skip(f"no C reader: {torch_meta.reason()}")


FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


class T:
    """A tensor operand: its shape, dtype, requires_grad and layout."""

    def __init__(self, shape, dtype=torch.float32, rg=False, transpose=False):
        self.shape, self.dtype, self.rg = tuple(shape), dtype, rg
        self.transpose = transpose and len(self.shape) >= 2

    def make(self, device):
        shape = self.shape
        if self.transpose:
            shape = shape[:-2] + (shape[-1], shape[-2])
        if device == "meta":
            t = torch.empty(shape, dtype=self.dtype, device="meta")
        elif self.dtype == torch.bool:
            t = torch.rand(shape) > 0.5
        elif self.dtype.is_floating_point:
            t = torch.randn(shape).to(self.dtype)
        else:
            t = torch.randint(-3, 4, shape).to(self.dtype)
        if self.transpose:
            t = t.transpose(-1, -2)
        if self.rg:
            t.requires_grad_(True)
        return t

    def __repr__(self):
        extra = (", rg" if self.rg else "") + (", T" if self.transpose else "")
        return f"T({self.shape}, {str(self.dtype)[6:]}{extra})"


def build(a, device):
    if isinstance(a, T):
        return a.make(device)
    if isinstance(a, (list, tuple)) and any(isinstance(x, T) for x in a):
        return type(a)(build(x, device) for x in a)
    return a


def call(target, args, kwargs):
    if isinstance(target, str):
        return getattr(args[0], target)(*args[1:], **kwargs)
    return target(*args, **kwargs)


def facts(t):
    if isinstance(t, tuple):
        return tuple(facts(x) for x in t)
    if t is None:
        return None
    return (tuple(t.shape), t.stride(), t.dtype, t.requires_grad, t.is_leaf)


def check(target, args, kwargs=None, expect=True):
    kwargs = kwargs or {}
    if any(isinstance(a, T) and 0 in a.shape for a in list(args) + list(kwargs.values())):
        expect = False  # empty tensors: TensorIterator's strides, torch decides
    margs = tuple(build(a, "meta") for a in args)
    mkw = {k: build(v, "meta") for k, v in kwargs.items()}
    got = infer(target, margs, mkw or None)
    try:
        ref_meta = call(target, margs, mkw)
    except Exception:
        ref_meta = None
    cargs = tuple(build(a, "cpu") for a in args)
    ckw = {k: build(v, "cpu") for k, v in kwargs.items()}
    try:
        ref_cpu = call(target, cargs, ckw)
    except Exception:
        ref_cpu = None
    where = f"{target if isinstance(target, str) else getattr(target, '__name__', target)}{args} {kwargs}"
    if ref_meta is None or ref_cpu is None:
        assert got is None, f"{where}: torch raises, the rule answers {facts(got)}"
        return
    if got is None:
        assert not expect, f"{where}: no rule answers (meta gives {facts(ref_meta)})"
        return
    assert all(x is None or x.device.type == "meta" for x in (got if isinstance(got, tuple) else (got,)))
    assert facts(got) == facts(ref_meta), f"{where}: rule {facts(got)} meta {facts(ref_meta)}"
    assert facts(got) == facts(ref_cpu), f"{where}: rule {facts(got)} cpu {facts(ref_cpu)}"


# ------------------------------------------------------------------ cases

SIZES = [1, 1, 2, 3, 5, 0]


def rshape(rng, lo=0, hi=4):
    return tuple(rng.choice(SIZES[:-1] if rng.random() < 0.9 else SIZES) for _ in range(rng.randint(lo, hi)))


def bshape(rng, shape):
    """A shape broadcasting with 'shape' (trailing dims kept or 1, leading dropped)."""
    out = [d if rng.random() < 0.6 else 1 for d in shape]
    return tuple(out[rng.randint(0, len(out)):]) if rng.random() < 0.3 else tuple(out)


def cases():
    rng = random.Random(19)
    out = []

    def add(name, target, args, kwargs=None, expect=True):
        out.append(pytest.param(target, args, kwargs, expect, id=f"{name}-{len(out)}"))

    unary_fns = [torch.relu, torch.sigmoid, torch.tanh, torch.sin, torch.exp, torch.abs, torch.neg,
                 torch.erf, torch.sqrt, F.relu, F.silu, F.gelu, F.sigmoid, F.tanh, operator.neg,
                 "relu", "tanh", "exp", "sigmoid", "rsqrt", "log", "cos"]
    for i in range(90):
        fn = unary_fns[i % len(unary_fns)]
        dt = FLOATS[i % 4] if i % 7 else torch.int64
        t = T(rshape(rng), dt, rg=dt.is_floating_point and i % 3 == 0, transpose=i % 11 == 5)
        ok = dt.is_floating_point and not t.transpose and 0 not in t.shape
        add("unary", fn, (t,), expect=ok)
    add("relu-inplace", F.relu, (T((3,)),), {"inplace": True}, expect=False)
    add("gelu-tanh", F.gelu, (T((3, 4), rg=True),), {"approximate": "tanh"})
    add("silu-false", F.silu, (T((3, 4)),), {"inplace": False})

    binops = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
              torch.add, torch.mul, torch.sub, torch.div, "add", "mul", "sub", "div"]
    for i in range(160):
        fn = binops[i % len(binops)]
        dt = FLOATS[i % 4] if i % 9 else torch.int64
        s1 = rshape(rng)
        s2 = bshape(rng, s1) if i % 13 else rshape(rng)
        a = T(s1, dt, rg=dt.is_floating_point and i % 4 == 0)
        kind = i % 5
        if kind == 0:
            b = 2 if i % 2 else 0.5
        elif kind == 1 and not isinstance(fn, str) and fn not in (torch.add, torch.mul, torch.sub, torch.div):
            a, b = (3 if i % 2 else 1.5), a  # a scalar on the left
        else:
            b = T(s2, dt, rg=dt.is_floating_point and i % 6 == 1)
        intdiv = dt == torch.int64 and fn in (operator.truediv, operator.pow, torch.div, "div")
        floatint = dt == torch.int64 and (isinstance(a, float) or isinstance(b, float))
        add("binary", fn, (a, b), expect=not intdiv and not floatint and i % 13 != 0)
    add("add-alpha", torch.add, (T((3,)), T((3,))), {"alpha": 2}, expect=False)
    add("mixed-dtypes", operator.add, (T((3,)), T((3,), torch.float64)), expect=False)
    add("int32-scalar", operator.add, (T((3,), torch.int32), 1), expect=False)
    add("0d-and-nd", operator.mul, (T(()), T((2, 3), rg=True)))

    cmps = [operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge,
            torch.eq, torch.lt, "eq", "gt"]
    for i in range(50):
        dt = [torch.float32, torch.int64, torch.float64, torch.int32][i % 4]
        s1 = rshape(rng)
        other = 0 if i % 3 == 0 else (0.5 if i % 3 == 1 else T(bshape(rng, s1), dt))
        add("compare", cmps[i % len(cmps)], (T(s1, dt, rg=dt.is_floating_point and i % 2 == 0), other))

    for i in range(24):
        s = rshape(rng, 1)
        fill = [float("-inf"), 0.0, 1, True, -1e9][i % 5]
        dt = torch.float32 if i % 3 else torch.float64
        mask = T(bshape(rng, s), torch.bool)
        add("masked_fill", "masked_fill" if i % 2 else torch.masked_fill, (T(s, dt, rg=i % 4 == 0), mask, fill))
    add("masked_fill-overflow", "masked_fill", (T((3,)), T((3,), torch.bool), 1e300), expect=False)

    for i in range(60):
        dt = FLOATS[i % 2]
        n, k, m = rng.choice([1, 2, 3, 5]), rng.choice([1, 2, 4]), rng.choice([1, 3, 4])
        batch = rshape(rng, 0, 2)
        bb = bshape(rng, batch) if i % 3 else ()
        a, b = T(batch + (n, k), dt, rg=i % 2 == 0), T(bb + (k, m), dt, rg=i % 3 == 0)
        if i % 4 == 3:
            a, b = T(bb + (n, k), dt), T(batch + (k, m), dt)
        fn = [operator.matmul, torch.matmul, "matmul"][i % 3]
        folded = len(a.shape) > 2 or len(b.shape) > 2
        add("matmul", fn, (a, b), expect=not (folded and (a.shape[-2] == 1 or b.shape[-1] == 1)))
    add("matmul-1d", operator.matmul, (T((3,)), T((3, 2))), expect=False)

    for i in range(70):
        s = rshape(rng, 1)
        dt = FLOATS[i % 4]
        fn = [torch.sum, torch.mean, "sum", "mean"][i % 4]
        nd = len(s)
        kind = i % 5
        kw = {}
        if kind == 0:
            args = (T(s, dt, rg=i % 2 == 0),)
        elif kind == 1:
            args = (T(s, dt), rng.randrange(-nd, nd))
        elif kind == 2:
            dims = rng.sample(range(-nd, nd), 1 + (nd > 1))
            if len({d % nd for d in dims}) < len(dims):
                dims = dims[:1]
            args = (T(s, dt, rg=True), tuple(dims))
            kw = {"keepdim": True}
        elif kind == 3:
            args = (T(s, dt), [rng.randrange(nd)], bool(i % 2))
        else:
            args = (T(s, dt),)
            kw = {"dim": rng.randrange(nd), "keepdim": True}
        add("reduce", fn, args, kw)
    add("sum-dtype", torch.sum, (T((2, 3)),), {"dtype": torch.float64}, expect=False)
    add("sum-int", torch.sum, (T((2, 3), torch.int64),), expect=False)

    for i in range(40):
        s = rshape(rng, 1)
        fn = [torch.softmax, torch.log_softmax, F.softmax, F.log_softmax, "softmax", "log_softmax"][i % 6]
        add("softmax", fn, (T(s, FLOATS[i % 4], rg=i % 2 == 0),), {"dim": rng.randrange(-len(s), len(s))})
    add("softmax-nodim", F.softmax, (T((2, 3)),), expect=False)

    for i in range(20):
        s = rshape(rng, 2)
        dt = [torch.float32, torch.int64, torch.bool, torch.float64][i % 4]
        fn = [torch.tril, torch.triu, "tril", "triu"][i % 4]
        args = (T(s, dt, rg=dt.is_floating_point and i % 2 == 0),) + ((rng.randint(-2, 2),) if i % 2 else ())
        add("tri", fn, args)

    for i in range(40):
        dt = FLOATS[i % 4]
        inf, outf = rng.choice([1, 3, 8]), rng.choice([1, 4, 6])
        lead = rshape(rng, 0, 3)
        bias = T((outf,), dt, rg=True) if i % 2 else None
        add("linear", F.linear, (T(lead + (inf,), dt, rg=i % 3 == 0), T((outf, inf), dt, rg=i % 4 == 0), bias))

    for i in range(50):
        dt = FLOATS[i % 2]
        n, c, h, w = rng.choice([1, 2]), rng.choice([1, 3, 4]), rng.choice([1, 2, 5, 8]), rng.choice([1, 3, 7])
        g = rng.choice([g for g in (1, 2, 4) if c % g == 0])
        o = g * rng.choice([1, 2])
        kh, kw_ = rng.choice([1, 3]), rng.choice([1, 2, 3])
        stride, pad, dil = rng.choice([1, 2, (1, 2)]), rng.choice([0, 1, (1, 0)]), rng.choice([1, 2])
        bias = T((o,), dt) if i % 2 else None
        ok = (h + 2 * (pad if isinstance(pad, int) else pad[0]) - dil * (kh - 1) - 1 >= 0 and
              w + 2 * (pad if isinstance(pad, int) else pad[1]) - dil * (kw_ - 1) - 1 >= 0)
        add("conv2d", F.conv2d, (T((n, c, h, w), dt, rg=i % 3 == 0), T((o, c // g, kh, kw_), dt, rg=i % 2 == 0),
                                 bias, stride, pad, dil, g), expect=ok)
    # sizes of 1 make a contiguous tensor look channels-last too
    add("conv2d-1x1", F.conv2d, (T((2, 4, 1, 1)), T((8, 4, 1, 1), rg=True)))
    add("conv2d-c1", F.conv2d, (T((2, 1, 5, 5)), T((3, 1, 3, 3))))
    add("batch_norm-1x1", F.batch_norm, (T((2, 3, 1, 1)), T((3,)), T((3,))))
    add("pool-1x1", F.adaptive_avg_pool2d, (T((2, 3, 4, 4), rg=True), (1, 1)))
    add("conv2d-same", F.conv2d, (T((1, 2, 5, 5)), T((2, 2, 3, 3))), {"padding": "same"}, expect=False)

    for i in range(40):
        dt = FLOATS[i % 2]
        n, c = rng.choice([1, 2, 3]), rng.choice([1, 3, 4])
        spatial = rshape(rng, 0, 2)
        train = i % 2 == 0
        stats = (T((c,), dt), T((c,), dt)) if i % 4 != 2 else (None, None)
        wb = (T((c,), dt, rg=True), T((c,), dt, rg=True)) if i % 3 else (None, None)
        per = n
        for d in spatial:
            per *= d
        add("batch_norm", F.batch_norm, (T((n, c) + spatial, dt, rg=i % 5 == 0),) + stats + wb,
            {"training": train, "momentum": 0.1, "eps": 1e-5},
            expect=(per > 1 if train else stats[0] is not None))

    for i in range(40):
        dt = FLOATS[i % 4]
        s = rshape(rng, 1)
        k = rng.randint(1, len(s))
        ns = s[len(s) - k:]
        ns_arg = [ns, list(ns), torch.Size(ns)][i % 3]
        w = (T(ns, dt, rg=True), T(ns, dt, rg=True)) if i % 2 else ()
        add("layer_norm", F.layer_norm, (T(s, dt, rg=i % 3 == 0), ns_arg) + w)

    for i in range(24):
        s = (rng.choice([1, 2]),) * (i % 2) + (rng.choice([1, 3]), rng.choice([1, 2, 5]), rng.choice([1, 4, 7]))
        osz = [1, 2, (2, 3), (None, 1), (3, None)][i % 5]
        add("adaptive_avg_pool2d", F.adaptive_avg_pool2d, (T(s, FLOATS[i % 2], rg=i % 3 == 0), osz))
    for i in range(24):
        dt = FLOATS[i % 2]
        e, h = [(8, 2), (12, 3), (4, 1), (6, 4)][i % 4]
        L, S, N = rng.choice([1, 3, 5]), rng.choice([1, 4]), rng.choice([1, 2])
        rg = i % 3 != 2
        q = T((L, N, e), dt, rg=i % 5 == 0) if i % 2 else T((L, e, N), dt, transpose=True)
        kv = T((S, N, e), dt)
        args = (q, kv, kv, e, h, T((3 * e, e), dt, rg=rg), T((3 * e,), dt, rg=rg) if i % 4 else None,
                None, None, False, [0.0, 0.1][i % 2], T((e, e), dt, rg=rg), T((e,), dt, rg=rg))
        kw = {"training": i % 3 == 0, "need_weights": i % 2 == 0, "average_attn_weights": i % 4 < 2}
        add("mha", F.multi_head_attention_forward, args, kw, expect=e % h == 0)
    # a review's findings: torch raises, or gives other metadata; no rule may answer
    add("lt-scalar-first", torch.lt, (2, T((3,))), expect=False)
    add("sub-bool", operator.sub, (T((3,)), True), expect=False)
    add("rsub-bool", operator.sub, (True, T((3,))), expect=False)
    add("half-pow-overflow", operator.pow, (T((3,), torch.float16), 70000), expect=False)
    add("half-pow", operator.pow, (T((3,), torch.float16), 2))
    add("keepdim-without-dim", torch.sum, (T((2, 3)),), {"keepdim": True}, expect=False)
    add("gelu-positional-approximate", F.gelu, (T((3,)), "tanh"), expect=False)
    add("batch_norm-no-stats", F.batch_norm, (T((2, 3)),), {"training": True}, expect=False)
    add("batch_norm-momentum-none", F.batch_norm, (T((2, 3)), T((3,)), T((3,))),
        {"training": True, "momentum": None}, expect=False)
    add("conv2d-huge-dilation", F.conv2d, (T((1, 1, 5, 5)), T((1, 1, 3, 3)), None, 1, 0, 2**63 - 1), expect=False)
    add("matmul-row-rg", operator.matmul, (T((1, 2), rg=True), T((2, 2, 3))), expect=False)
    mha = (T((3, 2, 8)), T((4, 2, 8)), T((4, 2, 8), rg=True), 8, 2, T((24, 8)), T((24,)), None, None, False, 0.0,
           T((8, 8), rg=True), T((8,), rg=True))
    add("mha-weights-grad", F.multi_head_attention_forward, mha, {"training": False})
    add("mha-missing-out-bias", F.multi_head_attention_forward, mha[:12], expect=False)
    add("mha-bad-dropout", F.multi_head_attention_forward, mha[:10] + (1.5,) + mha[11:], {"training": True},
        expect=False)
    add("mha-mask", F.multi_head_attention_forward,
        (T((3, 2, 8)), T((3, 2, 8)), T((3, 2, 8)), 8, 2, T((24, 8)), T((24,)), None, None, False, 0.0,
         T((8, 8)), T((8,))), {"attn_mask": T((3, 3), torch.bool)}, expect=False)
    return out


@pytest.mark.parametrize("target,args,kwargs,expect", cases())
def test_rule_matches_torch(target, args, kwargs, expect):
    torch.manual_seed(0)
    check(target, args, kwargs, expect)


def test_no_grad_results_are_leaves():
    with torch.no_grad():
        check(torch.sin, (T((2, 3), rg=True),))
        check(F.linear, (T((4, 3), rg=True), T((5, 3), rg=True)))


def test_autocast_and_inference_mode_ask_torch():
    a, b = torch.empty(2, 3, device="meta"), torch.empty(3, 4, device="meta")
    assert infer(torch.matmul, (a, b)) is not None
    with torch.autocast("cpu"):
        assert infer(torch.matmul, (a, b)) is None
    with torch.inference_mode():
        assert infer(torch.matmul, (a, b)) is None


def test_only_plain_meta_fakes():
    # a real CPU tensor, a conjugate view, a subclass: no rule
    assert infer(torch.sin, (torch.randn(3),)) is None
    assert infer(torch.sin, (torch.empty(3, device="meta")._neg_view(),)) is None
    assert infer(torch.sin, (torch.nn.Parameter(torch.empty(3, device="meta")),)) is None
    assert infer("frobnicate", (torch.empty(3, device="meta"),)) is None


def test_bad_testing_call():
    with pytest.raises(TypeError):
        infer(torch.sin, [torch.empty(3, device="meta")])
    with pytest.raises(TypeError, match="kwargs"):
        infer(torch.sin, (torch.empty(3, device="meta"),), 5)


# ------------------------------------------------------------ fast fakes

def meta_facts(t):
    return (tuple(t.shape), t.stride(), t.dtype, t.requires_grad, t.is_leaf, t.device.type)


def input_cases():
    base = torch.randn(4, 6, requires_grad=True)
    return {
        "contiguous": torch.randn(3, 4),
        "transposed": torch.randn(3, 4).t(),
        "sliced": torch.randn(8, 5)[::2, 1:],
        "int64": torch.arange(6).reshape(2, 3),
        "bool": torch.ones(2, 2, dtype=torch.bool),
        "0-d": torch.tensor(2.5),
        "leaf requiring grad": torch.randn(2, 3, requires_grad=True),
        "parameter": torch.nn.Parameter(torch.randn(5)),
        "non-leaf": base * 2,
        "non-leaf view": (base * 2)[:, 1:],
        "half": torch.randn(3, dtype=torch.float16),
    }


@pytest.mark.parametrize("name", list(input_cases()))
def test_fast_input_fake_has_the_tensors_metadata(name):
    t = input_cases()[name]
    fake = _C._testing.torch_fast_fake(t)
    assert fake is not None, name
    want = (tuple(t.shape), t.stride(), t.dtype, t.requires_grad, t.is_leaf, "meta")
    assert meta_facts(fake) == want


def test_fast_input_fake_leaves_special_tensors_to_torch():
    z = torch.randn(3, dtype=torch.complex64)
    assert _C._testing.torch_fast_fake(z.conj()) is None       # the conj bit: torchlib's path keeps it
    assert _C._testing.torch_fast_fake(torch.empty(3, device="meta")) is None
    assert _C._testing.torch_fast_fake(5) is None


def fresh_cases():
    m = lambda *s, rg=False: torch.empty(*s, device="meta", requires_grad=rg)  # noqa: E731
    return {
        "plain": m(3, 4),
        "plain view": m(3, 4).t(),
        "result requiring grad": m(3, 4, rg=True) * 2,
        "view requiring grad": (m(3, 4, rg=True) * 2).t(),
        "split view": (m(6, 4, rg=True) * 2).split(2, dim=1)[0],
        "int": torch.empty(2, 2, dtype=torch.int64, device="meta"),
    }


@pytest.mark.parametrize("name", list(fresh_cases()))
def test_fresh_fake_is_a_new_tensor_with_the_same_metadata(name):
    f = fresh_cases()[name]
    c = _C._testing.torch_fresh_fake(f)
    assert c is not None and c is not f
    assert meta_facts(c) == meta_facts(f)
    if f.requires_grad:
        assert c._is_view() == f._is_view()


def test_fresh_fake_leaves_a_dense_permuted_result_to_the_clone():
    f = torch.empty(3, 4, device="meta", requires_grad=True).t() * 2  # dense, not contiguous, no view
    assert not f._is_view() and not f.is_contiguous()
    assert _C._testing.torch_fresh_fake(f) is None


def test_fast_sig_tells_metadata_apart():
    m = torch.empty(3, 4, device="meta")
    sig = _C._testing.torch_fast_sig
    assert sig(m) == sig(torch.empty(3, 4, device="meta"))
    others = [m.t(), torch.empty(3, 4, dtype=torch.float64, device="meta"), torch.empty(4, 3, device="meta"),
              torch.empty(3, 4, device="meta", requires_grad=True),
              torch.empty(3, 4, device="meta", requires_grad=True) * 1, m.view(3, 4)]
    sigs = [sig(o) for o in others]
    assert all(isinstance(s, bytes) for s in sigs)
    assert len(set(sigs + [sig(m)])) == len(others) + 1


def test_fresh_copy_of_a_view_takes_in_place_ops_as_the_original():
    f = (torch.empty(3, 4, device="meta", requires_grad=True) * 2).t()
    f.add_(1)  # a view of a non-leaf: allowed
    c = _C._testing.torch_fresh_fake(f)
    assert c is not None and c._is_view() and not c.is_leaf and c.stride() == f.stride()
    c.add_(1)
