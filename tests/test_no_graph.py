"""A frame that captures no graph operation runs its own code (issue 17;
docs/cpython-tests.md, "A frame that captures nothing runs its own code"):
no rewritten bytecode, no guards, no resume functions; without array inputs
the code is marked so later calls are not offered again."""
import logging
import sys

import numpy as np
import pytest

import framejit
from framejit._C import eval_frame


def entries(fn):
    return eval_frame._debug_get_cache_entry_list(fn.__code__)


@pytest.fixture(autouse=True)
def _fresh():
    framejit.reset()
    yield
    framejit.reset()


def split_and_drop(s):
    parts = s.split('/')
    del parts[-1]
    return parts


def test_pure_frame_runs_its_own_code_and_is_not_offered_again():
    cf = framejit.compile(split_and_drop)
    for _ in range(3):
        assert cf("a/b/c") == ["a", "b"]
    assert entries(split_and_drop) == []
    assert framejit.counters["frames"]["no_graph"] == 1
    assert framejit.counters["frames"]["offered"] == 1


def self_ref():
    a = []
    a.append(a)
    d = {}
    d[0] = d
    return a, d


def test_pure_self_referencing_containers():
    cf = framejit.compile(self_ref)
    for _ in range(2):
        a, d = cf()
        assert a[0] is a and d[0] is d


def built_identity(n):
    s = "x" * n
    t = tuple([n, n])
    return s, t


def test_pure_built_values_keep_their_identity():
    cf = framejit.compile(built_identity)
    s1, t1 = cf(5)
    s2, t2 = cf(5)
    assert s1 == s2 and s1 is not s2
    assert t1 == t2 and t1 is not t2


def maybe_array(x):
    return x + 1


def test_array_input_after_scalar_input_still_compiles():
    cf = framejit.compile(maybe_array)
    assert cf(1) == 2
    assert entries(maybe_array) == []
    out = cf(np.arange(3.0))
    assert (out == np.arange(3.0) + 1).all()
    assert len(entries(maybe_array)) == 1
    assert entries(maybe_array)[0].code is not maybe_array.__code__
    assert cf(2) == 3          # no array: the original code, not a guard miss
    assert framejit.counters["stats"]["recompiles"] == 0


def print_first(x, log):
    log.append(sys.intern("start"))    # a call the tracer does not model: a break
    return x * 2


def test_break_with_empty_prefix_and_no_arrays_is_not_split():
    g = print_first.__globals__
    before = {k for k in g if k.startswith("__resume_at")}
    cf = framejit.compile(print_first)
    log = []
    assert cf(3, log) == 6 and cf(4, log) == 8
    assert log == ["start", "start"]
    assert {k for k in g if k.startswith("__resume_at")} == before
    assert entries(print_first) == []


def opaque_then_ops(x):
    sys.intern("framejit")      # a call the tracer does not model: a break
    return np.sin(x) + 1


def test_break_with_empty_prefix_and_array_input_still_captures_after():
    cf = framejit.compile(opaque_then_ops)
    x = np.linspace(0, 1, 5)
    assert np.array_equal(cf(x), np.sin(x) + 1)
    assert np.array_equal(cf(x), np.sin(x) + 1)
    assert framejit.counters["stats"]["unique_graphs"] >= 1


def array_no_ops(x, flag):
    if flag:
        return x
    return np.cos(x)


def test_array_frame_without_ops_runs_own_code_under_guards_then_recompiles():
    cf = framejit.compile(array_no_ops)
    x = np.ones(3)
    assert cf(x, True) is x
    (e,) = entries(array_no_ops)
    assert e.code is array_no_ops.__code__        # its own code, guarded
    assert np.array_equal(cf(x, False), np.cos(x))
    assert framejit.counters["stats"]["unique_graphs"] == 1


def identity_only(x):
    return x


def test_second_no_graph_trace_with_arrays_skips_the_code():
    cf = framejit.compile(identity_only)
    a, b = np.ones(3), np.ones((2, 2), dtype=np.int32)
    assert cf(a) is a and cf(b) is b      # dtype/shape change: traced again
    assert framejit.counters["frames"]["no_graph"] == 2
    offered = framejit.counters["frames"]["offered"]
    assert cf(np.ones(7)) is not None
    assert framejit.counters["frames"]["offered"] == offered   # SKIP_CODE


def test_no_graph_logged_with_reason():
    lines = []

    class Capture(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())
    cap = Capture()
    logger = logging.getLogger("framejit")
    logger.addHandler(cap)
    framejit.set_logs("graph_breaks")
    try:
        framejit.compile(print_first)(1, [])
    finally:
        framejit.set_logs()
        logger.removeHandler(cap)
    text = "\n".join(lines)
    assert "No graph operation captured in print_first" in text
    assert "before a graph break" in text and "until an input is an array" in text


def test_fullgraph_still_reports_a_break_without_ops():
    cf = framejit.compile(print_first, fullgraph=True)
    with pytest.raises(framejit.FramejitError, match="intern"):
        cf(1, [])


def test_has_arrays_reads_varargs_kwargs_and_closures():
    def star(*args, **kw):
        return len(args) + len(kw)

    cs = framejit.compile(star)
    assert cs(1, 2, k=3) == 3
    assert entries(star) == []
    offered = framejit.counters["frames"]["offered"]
    cs(1, np.ones(2))                       # an array in *args: offered again
    assert framejit.counters["frames"]["offered"] == offered + 1
    cs(k=np.ones(2))                        # an array in **kwargs
    assert framejit.counters["frames"]["offered"] >= offered + 1

    box = [1]

    def outer():
        v = box[0]

        def inner():
            return v
        return inner
    inner = outer()
    ci = framejit.compile(inner)
    assert ci() == 1
    assert entries(inner) == []


def test_code_compiled_from_strings_does_not_warn():
    # namedtuple and dataclass methods are exec'd: a new code object per
    # class, each traced once; they capture nothing, so no guards, no
    # recompiles and no recompile-limit warnings (they flooded the output)
    import collections
    import dataclasses
    import warnings
    from framejit import config, run
    old = config.skip_stdlib
    config.skip_stdlib = False
    prev = eval_frame.set_eval_frame(run.make_compiler())
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for i in range(40):
                P = collections.namedtuple(f"P{i}", "x y")
                p = P(i, np.ones(2) * i)._replace(x=i + 1)

                @dataclasses.dataclass
                class D:
                    a: int
                    b: object

                d = D(i, i)
                assert d == D(i, i) and p.x == i + 1 and repr(d).startswith("test_")
    finally:
        eval_frame.set_eval_frame(prev)
        config.skip_stdlib = old
    assert [str(w.message) for w in caught if "framejit" in str(w.message)] == []
    assert framejit.counters["stats"]["recompile_limit_hit"] == 0
