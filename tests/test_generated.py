"""Generated differential tests: NumPy functions built from an expression
grammar (gencases.py) by a seeded generator, exec'd from real files, run
compiled and plain on several inputs (same shapes and dtypes, different
values, different Python scalar arguments) and compared bit for bit; every
one must be captured into a graph.  Plus generated functions that raise,
compared on exception type and message, and a hypothesis test over input
shapes and dtypes."""
import linecache
import sys
import traceback

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import framejit
import gencases
from difftools import check_differential, outcome, _copy

N_SEEDS = 300
SEEDS = list(range(N_SEEDS))


@pytest.mark.parametrize("seed", SEEDS, ids=[f"gen_{s}" for s in SEEDS])
def test_generated(seed):
    case = gencases.generate(seed)
    try:
        check_differential(case.fn, case.worlds, expect_graph=True)
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- {case.path}\n{case.source}") from None


def test_generated_functions_are_distinct():
    sources = {gencases.cached(s).source for s in SEEDS}
    assert len(sources) >= 250


def test_generator_is_deterministic():
    a, b = gencases.generate(7), gencases.generate(7)
    assert a.source == b.source
    for wa, wb in zip(a.worlds, b.worlds):
        for x, y in zip(wa, wb):
            if isinstance(x, np.ndarray):
                assert x.dtype == y.dtype and np.array_equal(x, y)
            else:
                assert x == y


def test_generator_covers_the_grammar():
    src = "\n".join(gencases.cached(s).source for s in SEEDS)
    for needle in ("np.sin(", "np.exp(", "np.log(", "np.sqrt(", "np.tanh(", "np.floor(",
                   "np.ceil(", "np.sign(", "np.maximum(", "np.minimum(", "np.where(",
                   "np.clip(", "keepdims=True", "axis=", ".reshape(", ".T", "np.transpose(",
                   "np.expand_dims(", "np.squeeze(", "np.concatenate(", "np.stack(", "[None",
                   "...", " // ", " % ", " ** ", " / ", "~", "for i in range(", "for c in ",
                   "if ", "else:", "def helper_", "closure_", "lambda a:", "def inner_",
                   "return {", "return [", ".sum(", ".mean(", "np.max(", ".any(", ".argmax(",
                   "math.pi", ".shape[", ".astype("):
        assert needle in src, needle
    dtypes = {a.dtype.name for s in SEEDS for w in gencases.cached(s).worlds[:1]
              for a in w if isinstance(a, np.ndarray)}
    assert {"float64", "float32", "int32", "int64", "bool"} <= dtypes
    shapes = {a.shape for s in SEEDS for w in gencases.cached(s).worlds[:1]
              for a in w if isinstance(a, np.ndarray)}
    assert () in shapes and any(0 in sh for sh in shapes) and any(len(sh) == 3 for sh in shapes)


# ---------------------------------------------------------------- raising
# A generated prefix, then a statement that raises; compiled and plain must
# raise the same exception (type and message).
RAISERS = [
    "bad = v0.reshape(1009, 1013)",
    "bad = v0[1009]",
    "bad = {'a': 1}['b']",
    "bad = (1, 2)[5]",
    "bad = 1 // (len(v0.shape) - len(v0.shape))",
    "bad = v0.no_such_attribute",
    "bad = np.sum(v0, axis=9)",
    "bad = int('x')",
    "bad = no_such_name",
    "bad = v0 + np.ones(2) + np.ones(3)",
    "bad = np.concatenate([v0, v0[None, None, None, None]])",
    "bad = [1, 2].index(7)",
    "bad = v0.transpose(5, 4, 3, 2, 1, 0, 7)",
    "bad = np.expand_dims(v0, 9)",
    "bad = v0.astype('no_such_dtype')",
]


def _raising_case(seed):
    case = gencases.generate(seed)
    raiser = RAISERS[seed % len(RAISERS)]
    lines = case.source.rstrip("\n").split("\n")
    ret = max(i for i, ln in enumerate(lines) if ln.startswith("    return"))
    lines.insert(ret, "    " + raiser)
    source = "\n".join(lines) + "\n"
    path, ns = gencases.load(f"raise_{seed}", source)
    return ns["f"], case.worlds, path, source, raiser


@pytest.mark.parametrize("seed", range(1000, 1030), ids=[f"raise_{s}" for s in range(30)])
def test_generated_raising(seed):
    fn, worlds, path, source, raiser = _raising_case(seed)
    for args in worlds:
        assert outcome(fn, _copy(args))[0] == "raise", source
    check_differential(fn, worlds, expect_graph=False)


def test_traceback_points_into_the_generated_file():
    fn, worlds, path, source, raiser = _raising_case(1007)  # RAISERS[2]: {"a": 1}["b"]
    cf = framejit.compile(fn)
    with pytest.raises(KeyError) as info:
        cf(*_copy(worlds[0]))
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert last.filename == path
    assert linecache.getline(path, last.lineno).strip() == raiser
    assert last.line == raiser


# -------------------------------------------------------------- hypothesis
dtypes_st = st.sampled_from(gencases.DTYPES)


@settings(max_examples=100, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2 ** 20),
       shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3,
                                                min_side=0, max_side=4),
       dt0=st.sampled_from(("float64", "float32", "int32", "int64")), dt1=dtypes_st,
       two=st.booleans())
def test_generated_hypothesis(seed, shapes, dt0, dt1, two):
    shp = list(shapes.input_shapes[:2 if two else 1])
    dts = [dt0, dt1][:len(shp)]
    try:
        case = gencases.generate(seed, shp, dts, attempts=5)
    except RuntimeError:
        assume(False)
    check_differential(case.fn, case.worlds, expect_graph=True)


if __name__ == "__main__":  # print one generated function: python tests/test_generated.py 12
    print(gencases.generate(int(sys.argv[1])).source)
