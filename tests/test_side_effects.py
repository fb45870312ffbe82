"""Side effects (issue #6, first part): global and nonlocal stores are
recorded while tracing and replayed after the graph, in program order, on
every call (cache hits included); in-place array operators are in-graph ops
with NumPy's aliasing; what cannot be replayed soundly is a graph break that
runs in CPython.  Every test compares the result and the state of every
object touched after each of several calls with plain CPython."""
import contextlib
import io
import itertools

import numpy as np
import pytest

import framejit
from difftools import same

counter = 0
buf = np.zeros(3)
log = []


def bump(x):
    global counter
    counter = counter + 1
    return x * 2


def bump_and_read(x):
    global counter
    old = counter
    counter += 1
    return x * counter, old


def swap_global_array(x):
    global buf
    prev = buf
    buf = buf + x
    return prev, buf * 2


def store_then_break(x):
    global counter
    counter += 1
    print("seen", counter)
    counter += 10
    return x + counter


def append_to_global_list(x):
    log.append(x.sum())   # a mutation of an input list: runs in CPython (graph break)
    return x + len(log)


def inplace_views(x, y):
    v = x[1:]
    v *= 2
    x += y
    z = x - 1
    z /= 2
    return z


def inplace_on_copy(x):
    y = x * 1
    y += 5
    return y, x


GLOBAL_FUNCS = [bump, bump_and_read, swap_global_array, store_then_break, append_to_global_list]


def reset_state():
    global counter, buf
    counter = 0
    buf = np.zeros(3)
    log.clear()


def state():
    return (counter, buf.copy(), list(log))


@pytest.mark.parametrize("fn", GLOBAL_FUNCS, ids=lambda f: f.__name__)
def test_global_effects_match_cpython_on_every_call(fn):
    x = np.arange(3.0)
    reset_state()
    plain = []
    with contextlib.redirect_stdout(io.StringIO()) as out_p:
        for _ in range(5):
            plain.append((fn(x.copy()), state()))
    reset_state()
    framejit.reset()
    cf = framejit.compile(fn)
    got = []
    with contextlib.redirect_stdout(io.StringIO()) as out_j:
        for _ in range(5):
            got.append((cf(x.copy()), state()))
    same(got, plain)
    assert out_j.getvalue() == out_p.getvalue()


def test_global_counter_counts_cache_hits_without_a_break():
    reset_state()
    framejit.reset()
    cf = framejit.compile(bump)
    for _ in range(20):
        cf(np.ones(2))
    assert counter == 20
    assert sum(framejit.counters["graph_break"].values()) == 0
    # automatic dynamic: counter became symbolic; a few graphs serve every value
    assert framejit.counters["stats"]["unique_graphs"] <= 3


@pytest.mark.parametrize("fn,args", [
    (inplace_views, (np.arange(6.0).reshape(3, 2)[:, 0].copy(), np.ones(3))),
    (inplace_views, (np.arange(4.0), np.arange(4.0))),
    (inplace_on_copy, (np.arange(3.0),)),
])
def test_inplace_ops_change_inputs_like_cpython(fn, args):
    framejit.reset()
    cf = framejit.compile(fn)
    for _ in range(3):
        a_plain = [a.copy() for a in args]
        a_jit = [a.copy() for a in args]
        same(cf(*a_jit), fn(*a_plain))
        same(a_jit, a_plain)
    assert framejit.counters["stats"]["unique_graphs"] == 1


def test_inplace_on_the_same_array_passed_twice():
    def f(a, b):
        a += 1
        return b * 2
    framejit.reset()
    cf = framejit.compile(f)
    x1, x2 = np.ones(3), np.ones(3)
    same(cf(x1, x1), f(x2, x2))
    same(x1, x2)


# generated: global/nonlocal stores mixed with graph breaks and in-place ops
STMTS = [
    "counter = counter + {k}",
    "counter += {k}",
    "x = x + counter",
    "x *= {k}",
    "print('c', counter)",
    "buf = buf + x",
    "t = (counter, {k})",
]


def _gen(i):
    rnd = np.random.default_rng(i)
    body = ["global counter, buf", "t = None"]
    for _ in range(rnd.integers(2, 6)):
        body.append(STMTS[rnd.integers(len(STMTS))].format(k=int(rnd.integers(1, 4))))
    body.append("return x, t, counter")
    src = f"def gen_{i}(x):\n" + "\n".join("    " + b for b in body) + "\n"
    ns = {"np": np, "__name__": __name__}
    exec(compile(src, f"<side_effects_{i}>", "exec"), globals(), ns)
    fn = ns[f"gen_{i}"]
    return fn


@pytest.mark.parametrize("i", range(150))
def test_generated_side_effects(i):
    fn = _gen(i)
    x = np.linspace(0, 1, 3)
    reset_state()
    with contextlib.redirect_stdout(io.StringIO()) as out_p:
        plain = [(fn(x.copy()), state()) for _ in range(4)]
    reset_state()
    framejit.reset()
    cf = framejit.compile(fn)
    with contextlib.redirect_stdout(io.StringIO()) as out_j:
        got = [(cf(x.copy()), state()) for _ in range(4)]
    same(got, plain)
    assert out_j.getvalue() == out_p.getvalue()


# ------------------------------------------------------- attribute stores

class Model:
    def __init__(self):
        self.w = np.ones(3)
        self.calls = 0
        self.last = None

    def step(self, x):
        self.calls = self.calls + 1
        old = self.w
        self.w = self.w * 0.5 + x
        self.last = old
        return self.w.sum() + self.calls


def model_state(m):
    return (m.w.copy(), m.calls, None if m.last is None else m.last.copy())


def test_attribute_stores_on_an_input_are_replayed_without_a_break():
    m_plain, m_jit = Model(), Model()
    framejit.reset()
    cf = framejit.compile(Model.step)
    for i in range(5):
        x = np.arange(3.0) + i
        same(cf(m_jit, x), m_plain.step(x))
        same(model_state(m_jit), model_state(m_plain))
    assert sum(framejit.counters["graph_break"].values()) == 0


def store_through_alias(a, b, x):
    a.w = x
    return b.w * 2


def test_aliased_inputs_are_guarded():
    framejit.reset()
    cf = framejit.compile(store_through_alias)
    for args in [lambda: (Model(), Model()), lambda: (lambda m: (m, m))(Model())] * 2:
        pa, pb = args()
        ja, jb = args()
        x = np.arange(3.0)
        same(cf(ja, jb, x), store_through_alias(pa, pb, x))
        same((model_state(ja), model_state(jb)), (model_state(pa), model_state(pb)))


class Slotted:
    __slots__ = ("v",)


class WithProperty:
    @property
    def v(self):
        return 1

    @v.setter
    def v(self, value):
        self._v = value * 2


def set_v(obj, x):
    obj.v = x.sum()
    return x + 1


@pytest.mark.parametrize("cls", [Slotted, WithProperty])
def test_attribute_stores_through_descriptors_run_in_cpython(cls):
    framejit.reset()
    cf = framejit.compile(set_v)
    a, b = cls(), cls()
    x = np.arange(3.0)
    same(cf(a, x), set_v(b, x))
    assert getattr(a, "v", None) == getattr(b, "v", None)
    assert getattr(a, "_v", None) == getattr(b, "_v", None)


# ------------------------------------------------- input lists and dicts

def mutate_containers(xs, d, x):
    a = xs[0]
    xs.append(x * 2)
    xs.insert(0, x)
    xs[1] = a + 1
    d["k"] = x.sum()
    d["n"] = d["n"] + 1
    popped = xs.pop()
    return len(xs), a, popped


def containers():
    return [np.ones(2), 5], {"n": 1, "z": 0}


def test_input_list_and_dict_mutations_are_replayed():
    framejit.reset()
    cf = framejit.compile(mutate_containers)
    for i in range(4):
        xs1, d1 = containers()
        xs2, d2 = containers()
        x = np.arange(2.0) + i
        same(cf(xs1, d1, x), mutate_containers(xs2, d2, x))
        same((xs1, d1), (xs2, d2))
    assert sum(framejit.counters["graph_break"].values()) == 0


def lists_alias(a, b):
    a.append(1)
    return len(b)


def test_aliased_lists_are_guarded():
    framejit.reset()
    cf = framejit.compile(lists_alias)
    for make in [lambda: ([0], [0]), lambda: (lambda l: (l, l))([0])] * 2:
        p1, p2 = make()
        j1, j2 = make()
        same(cf(j1, j2), lists_alias(p1, p2))
        same((j1, j2), (p1, p2))


def mutate_then_break(xs, x):
    xs.append(x.sum())
    print("len", len(xs))
    xs.append(x.max())
    return xs


def test_container_mutations_interleave_with_breaks():
    framejit.reset()
    cf = framejit.compile(mutate_then_break)
    with contextlib.redirect_stdout(io.StringIO()) as out1:
        a = [1.0]
        ra = cf(a, np.arange(3.0))
    with contextlib.redirect_stdout(io.StringIO()) as out2:
        b = [1.0]
        rb = mutate_then_break(b, np.arange(3.0))
    same((ra, a), (rb, b))
    assert ra is a
    assert out1.getvalue() == out2.getvalue()
