"""Generated graph-break functions (issue #4): breaks in every kind of place
(first and last statement, several per function, in inlined callees,
data-dependent branches, loops, try and with blocks), with values of every
kind live across them.  Each runs compiled and plain; results, printed
output and exceptions (type and message) must be equal."""
import importlib.util
import os
import random
import sys
import tempfile

import numpy as np
import pytest

from test_graph_breaks import check

N_FUNCTIONS = 240

HEADER = '''\
import contextlib
import numpy as np
from breakhelpers import opaque, opaque_scale, raises


def helper_print(v):
    print("helper", type(v).__name__)
    return v * 2


def helper_clean(v, k=3):
    return v + k


def helper_nested(v):
    return helper_print(v) - 1
'''

ARR_EXPRS = [
    "{a} + {b}", "{a} * {b}", "{a} - {b} * 2", "np.sin({a}) + {b}", "np.maximum({a}, {b})",
    "np.abs({a}) + 1", "{a} * {s}", "{a} / ({b} * {b} + 1)", "np.where({a} > 0, {a}, {b})",
    "({a} + {b}).T.T", "np.tanh({a}) * {s}", "{a}.sum(axis=0) + {b}[0]", "{a} ** 2 - {b}",
]

BREAKS = [
    'print("p{k}", {s})',
    'opaque({a})',
    '{a} = opaque({a})',
    'print({t})',
    '{a} = helper_print({a})',
    '{a} = helper_nested({a})',
    'opaque({l})',
    'print(sorted({d}))',
    '{a} = opaque_scale({a}, k={s})',
]

BLOCK_BREAKS = [
    # data-dependent branch
    'if {a}.sum() > 0:\n    {a} = {a} * 2\nelse:\n    {a} = {a} - 1',
    'if ({a} > 0.5).any():\n    print("big")\n',
    # loop with a break inside (the loop runs in CPython, a resume function after it)
    'for i in range(2):\n    {a} = {a} + i\n    print("loop", i)',
    # try / with
    'try:\n    print("try")\n    {a} = {a} + 1\nexcept ValueError:\n    pass',
    'with contextlib.nullcontext():\n    opaque({a})\n    {a} = {a} * 3',
]

ENDINGS = [
    "return {a}",
    "return {a}, {b}, {s}",
    "return [{a}, {t}]",
    "return {{'a': {a}, 'l': {l}}}",
    "return {a}.sum()",
    "raises('end')",
    "return {a}.reshape(7, 7)",
    "return {s} / 0",
]


def gen_function(rnd, idx):
    body = []
    arrs = ["x", "y"]
    k = 0
    s = rnd.choice(["n", "2", "0.5"])
    t, l, d = "tup", "lst", "dct"
    body.append(f"{t} = (n, 'str', 1.5)")
    body.append(f"{l} = [x, n]")
    body.append(f"{d} = {{'k': n, 'j': 2}}")
    nstmts = rnd.randint(2, 6)
    placed_break = False
    for j in range(nstmts):
        kind = rnd.random()
        a, b = rnd.choice(arrs), rnd.choice(arrs)
        if kind < 0.45:
            v = f"v{k}"
            k += 1
            body.append(f"{v} = " + rnd.choice(ARR_EXPRS).format(a=a, b=b, s=s))
            arrs.append(v)
        elif kind < 0.8:
            body.append(rnd.choice(BREAKS).format(a=a, b=b, s=s, t=t, l=l, d=d, k=k))
            placed_break = True
        else:
            body.extend(rnd.choice(BLOCK_BREAKS).format(a=a, s=s).split("\n"))
            placed_break = True
    if not placed_break or rnd.random() < 0.2:
        pos = rnd.choice([3, len(body)])  # first statement after setup, or last
        body.insert(pos, rnd.choice(BREAKS).format(a="x", b="y", s=s, t=t, l=l, d=d, k=99))
    a, b = rnd.choice(arrs), rnd.choice(arrs)
    ending = ENDINGS[0] if rnd.random() < 0.4 else rnd.choice(ENDINGS)
    body.append(ending.format(a=a, b=b, s=s, t=t, l=l))
    src = f"def gen_{idx}(x, y, n):\n" + "\n".join("    " + line for line in body) + "\n"
    return src


def build_module():
    rnd = random.Random(1234)
    sources = [gen_function(rnd, i) for i in range(N_FUNCTIONS)]
    d = tempfile.mkdtemp(prefix="framejit_breaks_")
    path = os.path.join(d, "generated_breaks.py")
    with open(path, "w") as f:
        f.write(HEADER + "\n\n" + "\n\n".join(sources))
    spec = importlib.util.spec_from_file_location("generated_breaks", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["generated_breaks"] = mod
    spec.loader.exec_module(mod)
    return mod


MOD = build_module()
X = np.linspace(-1, 1, 12).reshape(3, 4)
Y = np.linspace(0.25, 3, 12).reshape(3, 4)


@pytest.mark.parametrize("idx", range(N_FUNCTIONS))
def test_generated_break(idx):
    fn = getattr(MOD, f"gen_{idx}")
    check(fn, X, Y, 2)
    check(fn, -Y, X, 3)


def test_generated_functions_exercise_breaks():
    import framejit
    framejit.reset()
    broken = 0
    import contextlib
    import io
    for idx in range(N_FUNCTIONS):
        fn = getattr(MOD, f"gen_{idx}")
        cf = framejit.compile(fn)
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                cf(X, Y, 2)
            except Exception:  # noqa: BLE001
                pass
    stats = framejit.counters
    # many resumable breaks (graphs in resume functions; a break inside a loop
    # runs the loop in CPython and resumes after it, docs/graph-breaks.md)
    assert sum(stats["graph_break"].values()) >= N_FUNCTIONS
    assert stats["stats"]["unique_graphs"] >= N_FUNCTIONS
