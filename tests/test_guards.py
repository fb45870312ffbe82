"""Tests of the guard trees (csrc/guards/guards.c): accessors, leaves, the printer,
verbose reasons, fail-fast reordering, dict-version skipping, TENSOR_MATCH
edge cases, hostile objects, and reference/leak hygiene."""
import gc
import sys
import tracemalloc
import types

import numpy as np
import pytest

from framejit import _C

NULL = _C.NULL_SLOT
R = _C.RootGuardManager


def root_with(build):
    r = R()
    build(r)
    return r


# ------------------------------------------------------------------ basics

def test_empty_root_passes():
    r = R()
    assert r.check([]) is True
    assert r.check_verbose([]) is None
    assert r.num_leaves() == 0
    assert r.format() == "GUARDS:"


def test_types_and_sentinel():
    assert issubclass(_C.RootGuardManager, _C.GuardManager)
    assert repr(NULL) == "NULL_SLOT"
    with pytest.raises(TypeError):
        type(NULL)()
    with pytest.raises(TypeError):
        _C.GuardManager()
    with pytest.raises(TypeError):
        R(1)


def test_same_child_for_same_key():
    r = R()
    a = r.local(0, "x")
    assert r.local(0, "x") is a
    assert r.global_("g") is r.global_("g")
    assert r.builtin("len") is r.builtin("len")
    assert r.closure_cell(0, "c") is r.closure_cell(0, "c")
    assert a.attr("y") is a.attr("y")
    assert a.item("k") is a.item("k")
    assert a.item(1) is not a.item("1")
    assert a.index(2) is a.index(2)
    assert a.type_of() is a.type_of()
    assert [m.source for m in r.accessors()] == ["L['x']", "G['g']", "G['__builtins__']['len']",
                                                 "L['c']"]


def test_root_only_and_child_only_methods():
    r = R()
    with pytest.raises(TypeError):
        r.attr("x")
    with pytest.raises(TypeError):
        r.add_equals_match(1)
    with pytest.raises(TypeError):
        r.type_of()
    c = r.local(0, "x")
    assert not hasattr(c, "local")
    assert not hasattr(c, "add_global_state")
    assert not hasattr(c, "check")
    with pytest.raises(TypeError):
        r.local(0, 5)
    with pytest.raises(ValueError):
        r.local(-1, "x")
    with pytest.raises(TypeError):
        c.add_type_match(3)
    with pytest.raises(TypeError):
        c.add_dict_version([])
    with pytest.raises(TypeError):
        c.add_tensor_match([1, 2])
    with pytest.raises(ValueError):
        c.add_sequence_length(-1)


def test_sources():
    r = R()
    x = r.local(0, "x")
    assert x.source == "L['x']"
    assert x.attr("shape").source == "L['x'].shape"
    assert x.item("k").source == "L['x']['k']"
    assert x.item(3).source == "L['x'][3]"
    assert x.index(0).source == "L['x'][0]"
    assert x.type_of().source == "type(L['x'])"
    assert r.global_("g").item("a").index(-1).source == "G['g']['a'][-1]"
    assert r.builtin("len").source == "G['__builtins__']['len']"
    assert r.closure_cell(1, "cv").source == "L['cv']"


def test_check_argument_validation():
    r = R()
    with pytest.raises(TypeError):
        r.check([], 5)
    with pytest.raises(TypeError):
        r.check([], None, [])
    with pytest.raises(TypeError):
        r.check(5)


# -------------------------------------------------------------- accessors

def test_local_accessor_and_null_slot():
    r = R()
    r.local(1, "n").add_equals_match(3)
    assert r.check([NULL, 3])
    assert not r.check([NULL, 4])
    assert not r.check([NULL, NULL])
    assert not r.check([NULL])  # slot beyond the frame
    assert r.check_verbose([0, NULL]) == "L['n'] (missing)"


def test_null_slot_fails_even_without_leaves_below_accessor():
    r = R()
    r.local(0, "x").attr("y").add_none_match()
    assert not r.check([NULL])
    assert r.check_verbose([NULL]) == "L['x'] (missing)"


def test_none_is_a_normal_value():
    r = R()
    r.local(0, "y").add_none_match()
    assert r.check([None])
    assert not r.check([0])
    assert not r.check([NULL])
    assert r.check_verbose([0]) == "L['y'] is None"


def test_global_accessor():
    r = R()
    r.global_("cfg_scale").add_equals_match(2)
    assert r.check([], None, {"cfg_scale": 2})
    assert not r.check([], None, {"cfg_scale": 3})
    assert not r.check([], None, {})
    assert not r.check([], None, None)
    assert r.check_verbose([], None, {}) == "G['cfg_scale'] (missing global)"
    assert r.check_verbose([], None, {"cfg_scale": 3}) == "G['cfg_scale'] == 2"


def test_builtin_accessor():
    import builtins
    r = R()
    r.builtin("len").add_id_match(len)
    assert r.check([], None, {}, builtins.__dict__)
    assert not r.check([], None, {}, {"len": abs})
    assert r.check_verbose([], None, {}, {}) == "G['__builtins__']['len'] (missing builtin)"


def test_closure_cell_accessor():
    r = R()
    r.closure_cell(1, "k").add_equals_match("a")
    ok = (types.CellType(0), types.CellType("a"))
    assert r.check([], ok)
    assert not r.check([], (types.CellType(0), types.CellType("b")))
    assert not r.check([], (types.CellType(0), types.CellType()))  # empty cell
    assert not r.check([], (types.CellType(0),))
    assert not r.check([], None)
    assert not r.check([], (0, "a"))  # not cells


def test_attr_accessor():
    class A:
        pass

    a = A()
    a.v = 5
    r = R()
    r.local(0, "a").attr("v").add_equals_match(5)
    assert r.check([a])
    a.v = 6
    assert not r.check([a])
    del a.v
    assert not r.check([a])
    assert r.check_verbose([a]) == "L['a'].v (missing)"


def test_item_accessor_dict_and_mapping():
    r = R()
    r.local(0, "d").item("k").add_equals_match(1)
    assert r.check([{"k": 1}])
    assert not r.check([{"k": 2}])
    assert not r.check([{}])

    class M(dict):
        def __missing__(self, key):
            return 1

    # not an exact dict: its __getitem__ (and __missing__) would be the
    # program's code, which a guard never runs: the guard fails
    assert not r.check([M()])


def test_item_accessor_on_non_dict_fails():
    r = R()
    r.local(0, "d").item("k").add_equals_match(1)
    assert not r.check([5])  # only exact dicts are read


def test_index_accessor():
    r = R()
    x = r.local(0, "xs")
    x.index(0).add_equals_match(1)
    x.index(-1).add_equals_match(3)
    assert r.check([[1, 2, 3]])
    assert r.check([(1, 2, 3)])
    assert r.check([(1, 3)])
    assert not r.check([[1]])
    assert not r.check([[]])
    assert not r.check([range(1, 4)])  # other sequences: no __getitem__ is run
    assert not r.check([range(0)])
    # [1] failed on index -1, which now runs first
    assert x.accessors()[0].source == "L['xs'][-1]"
    assert r.check_verbose([[]]) == "L['xs'][-1] (missing)"


def test_type_of_accessor():
    r = R()
    r.local(0, "x").type_of().add_id_match(int)
    assert r.check([1])
    assert not r.check([1.0])
    assert not r.check([True])


# ------------------------------------------------------------------ leaves

def test_type_match():
    class S(str):
        pass

    r = R()
    r.local(0, "s").add_type_match(str)
    assert r.check(["a"])
    assert not r.check([S("a")])
    assert not r.check([1])
    text = r.format().splitlines()[1]
    assert text == f"  TYPE_MATCH: ___check_type_id(L['s'], {id(str)})  # type: str"


def test_id_match():
    obj = object()
    r = R()
    r.global_("np").add_id_match(np)
    r.local(0, "o").add_id_match(obj)
    g = {"np": np}
    lines = r.format().splitlines()
    assert r.check([obj], None, g)
    assert not r.check([object()], None, g)
    assert lines[1].startswith(f"  ID_MATCH: ___check_obj_id(G['np'], {id(np)})  # <module 'numpy'")
    assert lines[2].startswith(f"  ID_MATCH: ___check_obj_id(L['o'], {id(obj)})  # <object")


@pytest.mark.parametrize("expected,good,bad", [
    (3, [3, 3 + 0, int("3")], [4, 3.0, True, "3", None]),
    (1, [1], [True, 1.0, 2]),
    (True, [True], [1, False, None]),
    (None, [None], [0, False]),
    (2.5, [2.5, float("2.5")], [2, 2.4999, "2.5"]),
    ("abc", ["abc", "".join(["a", "bc"])], ["abd", "ab", b"abc", "abcd"]),
    ("é€", ["é€"], ["e€", "é"]),
    (2 ** 100, [2 ** 100], [2 ** 100 + 1, float(2 ** 100)]),
    (-5, [-5], [5, -5.0]),
    ((1, "a", (None, 2.0)), [(1, "a", (None, 2.0))], [(1, "a", (None, 2)), (1, "a"), [1, "a", (None, 2.0)],
                                                       (True, "a", (None, 2.0))]),
    ((), [()], [(1,), []]),
    (frozenset({1}), [frozenset({1})], [{1}, frozenset({2})]),
])
def test_equals_match(expected, good, bad):
    r = R()
    r.local(0, "v").add_equals_match(expected)
    for g in good:
        assert r.check([g]), g
    for b in bad:
        assert not r.check([b]), b


def test_equals_match_nan():
    nan = float("nan")
    r = R()
    r.local(0, "v").add_equals_match(nan)
    assert r.check([nan])  # the same object passes
    # floats match by bit pattern: the same NaN matches (no recompile per call),
    # and -0.0 is not 0.0 (results can differ in sign)
    assert r.check([float("nan")])
    z = R()
    z.local(0, "v").add_equals_match(0.0)
    assert z.check([0.0]) and not z.check([-0.0])


def test_equals_match_text_uses_repr():
    r = R()
    r.local(0, "s").add_equals_match("a'b")
    r.local(1, "t").add_equals_match((1, 2))
    assert r.format().splitlines()[1:] == [
        """  EQUALS_MATCH: L['s'] == "a'b\"""",
        "  EQUALS_MATCH: L['t'] == (1, 2)",
    ]


def test_sequence_length():
    r = R()
    r.local(0, "xs").add_sequence_length(3)
    assert r.check([[1, 2, 3]])
    assert r.check([(1, 2, 3)])
    assert not r.check([[1, 2]])
    assert not r.check(["abc"])
    assert not r.check([range(3)])
    assert r.check_verbose([[]]) == "len(L['xs']) == 3"


def test_dict_keys():
    r = R()
    r.local(0, "d").add_dict_keys(["a", "b"])
    assert r.check([{"a": 1, "b": 2}])
    assert not r.check([{"b": 2, "a": 1}])  # order matters
    assert not r.check([{"a": 1}])
    assert not r.check([{"a": 1, "b": 2, "c": 3}])
    assert not r.check([[("a", 1), ("b", 2)]])
    r2 = R()
    r2.local(0, "d").add_dict_keys([1, (2, 3)])
    assert r2.check([{1: 0, (2, 3): 0}])
    assert not r2.check([{1: 0, (2, 4): 0}])
    assert r.format().splitlines()[1] == "  DICT_KEYS: list(L['d'].keys()) == ['a', 'b']"


def test_dict_version():
    d = {"a": 1}
    r = R()
    r.global_("cfg").add_dict_version(d)
    assert r.check([], None, {"cfg": d})
    d["a"] = 1  # same value: binding unchanged, version unchanged
    assert r.check([], None, {"cfg": d})
    d["a"] = 2
    assert not r.check([], None, {"cfg": d})
    assert not r.check([], None, {"cfg": dict(d)})
    line = r.format().splitlines()[1]
    assert line.startswith("  DICT_VERSION: ___dict_version(G['cfg']) == ")
    assert r.check_verbose([], None, {"cfg": d}) == line.split(": ", 1)[1]


def test_global_state_errstate():
    r = R()
    r.add_global_state()
    assert r.check([])
    with np.errstate(all="ignore"):
        assert not r.check([])
        assert r.check_verbose([]) == "___check_global_state()"
    assert r.check([])
    with pytest.raises(AttributeError):
        r.local(0, "x").add_global_state()


# ----------------------------------------------------------- TENSOR_MATCH

def tensor_root(example, dynamic_dims=()):
    r = R()
    r.local(0, "x").add_tensor_match(example, dynamic_dims)
    return r


def test_tensor_match_basic():
    x = np.zeros((4, 4), np.float32)
    r = tensor_root(x)
    assert r.check([x])
    assert r.check([np.ones((4, 4), np.float32)])
    assert not r.check([np.zeros((4, 4), np.float64)])
    assert not r.check([np.zeros((4, 5), np.float32)])
    assert not r.check([np.zeros((4, 4, 1), np.float32)])
    assert not r.check([np.zeros((4, 4), np.float32).T.copy(order="F")])
    assert not r.check([[0.0] * 4] * 4)
    assert not r.check([None])


def test_tensor_match_verbose_reasons():
    r = tensor_root(np.zeros((4, 4), np.float32))
    v = lambda a: r.check_verbose([a])  # noqa: E731
    assert v(np.zeros((8, 4), np.float32)) == "L['x']: size mismatch at index 0. expected 4, actual 8"
    assert v(np.zeros((4, 4), np.float64)) == "L['x']: dtype mismatch. expected float32, actual float64"
    assert v(np.zeros((4,), np.float32)) == "L['x']: rank mismatch. expected 2, actual 1"
    assert v(np.zeros((4, 8), np.float32)[:, ::2]) == \
        "L['x']: stride mismatch at index 0. expected 16, actual 32"
    assert v(np.zeros((4, 4), np.float32, order="F")) == \
        "L['x']: stride mismatch at index 0. expected 16, actual 4"
    assert v(5).startswith("L['x']: expected type numpy.ndarray, actual int")
    assert v(np.zeros((4, 4), np.float32)) is None


def test_tensor_match_dynamic_dims():
    x = np.zeros((4, 3), np.float32)
    r = tensor_root(x, dynamic_dims=(0,))
    assert r.check([np.zeros((9, 3), np.float32)])
    # sizes 0 and 1 are specialized: a dynamic dim needs >= 2
    assert not r.check([np.zeros((0, 3), np.float32)])
    assert not r.check([np.zeros((1, 3), np.float32)])
    assert r.check_verbose([np.zeros((1, 3), np.float32)]) == \
        "L['x']: size at index 0 is 1; a dynamic dim needs >= 2"
    assert not r.check([np.zeros((9, 4), np.float32)])
    # with a dynamic dim, strides follow the sizes: the layout (contiguity) is matched
    assert not r.check([np.zeros((8, 3), np.float32)[::2]])
    assert not r.check([np.zeros((4, 6), np.float32)[:, ::2]])
    assert r.check_verbose([np.zeros((8, 3), np.float32)[::2]]) == \
        "L['x']: memory layout (contiguity) differs"
    assert r.format().splitlines()[1] == \
        "  TENSOR_MATCH: check_tensor(L['x'], ndarray, dtype=float32, size=[None, 3], stride=[None, None])"
    r2 = tensor_root(x, dynamic_dims=[-1])
    assert r2.check([np.zeros((4, 7), np.float32)])
    assert not r2.check([np.zeros((4, 7), np.float32, order="F")])
    with pytest.raises(ValueError):
        tensor_root(x, dynamic_dims=(2,))
    with pytest.raises(TypeError):
        tensor_root(x, dynamic_dims=("a",))


def test_tensor_match_odd_strides():
    base = np.arange(60, dtype=np.int16).reshape(6, 10)
    x = base[::2, 1::3]
    r = tensor_root(x)
    assert x.strides == (40, 6)
    assert x.shape == (3, 3)
    assert r.check([base[1::2, 2::3]])  # same shape, same strides
    assert not r.check([np.ascontiguousarray(x)])
    neg = base[::-1]
    r2 = tensor_root(neg)
    assert r2.check([np.zeros((6, 10), np.int16)[::-1]])
    assert not r2.check([np.zeros((6, 10), np.int16)])
    assert f"stride=[{neg.strides[0]}, 2]" in r2.format()


def test_tensor_match_byte_order():
    be = np.zeros(3, dtype=">f8")
    r = tensor_root(be)
    assert r.check([np.ones(3, dtype=">f8")])
    assert not r.check([np.ones(3, dtype="<f8")])
    assert "dtype=>f8" in r.format()
    r2 = tensor_root(np.zeros(3, dtype="<f8"))
    assert r2.check([np.zeros(3, dtype="=f8")])  # native == little here
    assert not r2.check([np.zeros(3, dtype=">f8")])


def test_tensor_match_equivalent_dtype_objects():
    r = tensor_root(np.zeros(2, np.float32))
    assert r.check([np.zeros(2, dtype=np.dtype("f4"))])
    # a dtype with metadata is a different descr object but equivalent
    assert r.check([np.zeros(2, dtype=np.dtype(np.float32, metadata={"a": 1}))])


def test_tensor_match_0d_and_zero_size():
    s = np.array(1.5)
    r = tensor_root(s)
    assert r.check([np.array(2.0)])
    assert not r.check([np.array([2.0])])
    assert "size=[], stride=[]" in r.format()
    z = np.zeros((0, 3))
    r2 = tensor_root(z)
    assert r2.check([np.zeros((0, 3))])
    assert not r2.check([np.zeros((1, 3))])


def test_tensor_match_subclass_fails_exact_type():
    class Sub(np.ndarray):
        pass

    x = np.zeros(3)
    r = tensor_root(x)
    assert not r.check([x.view(Sub)])
    assert not r.check([np.ma.masked_array(x)])
    r2 = tensor_root(x.view(Sub))
    assert r2.check([np.ones(3).view(Sub)])
    assert not r2.check([x])
    assert "check_tensor(L['x'], test_tensor_match_subclass_fails_exact_type.<locals>.Sub" in \
        r2.format()


def test_tensor_match_shape_change_in_place_never_skipped():
    x = np.zeros(6, np.float32)
    r = R()
    r.global_("x").add_tensor_match(x)
    g = {"x": x}
    assert r.check([], None, g)
    x.shape = (2, 3)
    assert not r.check([], None, g)
    assert r.skipped_checks == 0


# ------------------------------------------------------------ the printer

SEED_004 = """GUARDS:
  TENSOR_MATCH: check_tensor(L['x'], ndarray, dtype=float32, size=[4, 4], stride=[16, 4])
  EQUALS_MATCH: L['n'] == 3
  EQUALS_MATCH: G['cfg_scale'] == 2
  GLOBAL_STATE: ___check_global_state()"""


def seed_tree():
    x = np.random.randn(4, 4).astype(np.float32)
    r = R()
    r.add_global_state()
    r.local(0, "x").add_tensor_match(x)
    r.local(1, "n").add_equals_match(3)
    r.global_("cfg_scale").add_equals_match(2)
    return r, x


def test_printer_seed_004_golden():
    r, x = seed_tree()
    assert r.format() == SEED_004
    assert r.num_leaves() == 4
    g = {"cfg_scale": 2}
    assert r.check([x, 3], None, g)
    assert r.check_verbose([x, 4], None, g) == "L['n'] == 3"
    assert r.check_verbose([x, 3], None, {"cfg_scale": 3}) == "G['cfg_scale'] == 2"
    assert r.check_verbose([x, 3], None, {}) == "G['cfg_scale'] (missing global)"
    assert r.check_verbose([NULL, 3], None, g) == "L['x'] (missing)"


def test_printer_all_kinds_depth_first():
    r = R()
    d = r.local(0, "d")
    d.add_type_match(dict)
    d.add_dict_keys(["a"])
    d.item("a").add_none_match()
    xs = r.local(1, "xs")
    xs.add_sequence_length(2)
    xs.index(0).add_equals_match(1.5)
    lines = r.format().splitlines()
    assert lines == [
        "GUARDS:",
        f"  TYPE_MATCH: ___check_type_id(L['d'], {id(dict)})  # type: dict",
        "  DICT_KEYS: list(L['d'].keys()) == ['a']",
        "  NONE_MATCH: L['d']['a'] is None",
        "  SEQUENCE_LENGTH: len(L['xs']) == 2",
        "  EQUALS_MATCH: L['xs'][0] == 1.5",
    ]
    assert d.leaves() == [lines[1].strip(), lines[2].strip()]
    assert r.num_leaves() == 5


def test_printer_follows_reordering():
    r = R()
    r.local(0, "a").add_equals_match(1)
    r.local(1, "b").add_equals_match(2)
    for _ in range(2):
        assert not r.check([1, 3])
    assert r.format().splitlines()[1:] == ["  EQUALS_MATCH: L['b'] == 2",
                                           "  EQUALS_MATCH: L['a'] == 1"]


# ------------------------------------------------------------ reordering

def test_reordering_by_fail_count():
    r = R()
    a, b, c = r.local(0, "a"), r.local(1, "b"), r.local(2, "c")
    a.add_equals_match(1)
    b.add_equals_match(2)
    c.add_equals_match(3)
    assert r.accessors() == [a, b, c]
    assert not r.check([1, 2, 0])  # c fails
    assert r.accessors() == [c, a, b]
    assert (a.fail_count, b.fail_count, c.fail_count, r.fail_count) == (0, 0, 1, 1)
    assert not r.check([1, 0, 3])
    assert not r.check([1, 0, 3])  # b now 2 failures
    assert r.accessors() == [b, c, a]
    assert not r.check([0, 2, 3])  # a: 1 failure, ties keep their order (stable)
    assert r.accessors() == [b, c, a]
    assert [m.fail_count for m in r.accessors()] == [2, 1, 1]
    assert r.check([1, 2, 3])


def test_reorder_only_when_not_first_and_leaves_keep_order():
    r = R()
    a, b = r.local(0, "a"), r.local(1, "b")
    a.add_type_match(int)
    a.add_equals_match(1)
    b.add_equals_match(2)
    for _ in range(3):
        assert not r.check([5, 2])  # the first accessor fails: no reorder needed
    assert r.accessors() == [a, b]
    assert a.leaves()[0].startswith("TYPE_MATCH")


def test_verbose_has_no_side_effects():
    r = R()
    a, b = r.local(0, "a"), r.local(1, "b")
    a.add_equals_match(1)
    b.add_equals_match(2)
    for _ in range(5):
        assert r.check_verbose([1, 0]) == "L['b'] == 2"
    assert r.accessors() == [a, b]
    assert b.fail_count == 0 and r.fail_count == 0


def test_nested_reordering():
    r = R()
    o = r.local(0, "o")
    p, q = o.attr("p"), o.attr("q")
    p.add_equals_match(1)
    q.add_equals_match(2)
    ns = types.SimpleNamespace(p=1, q=0)
    assert not r.check([ns])
    assert o.accessors() == [q, p]
    assert o.fail_count == 1 and q.fail_count == 1


# ---------------------------------------------------- dict-version skipping

def global_tree():
    r = R()
    r.global_("cfg_scale").add_equals_match(2)
    r.global_("mode").add_equals_match("fast")
    return r


def test_dict_version_skip_happens():
    r = global_tree()
    g = {"cfg_scale": 2, "mode": "fast"}
    assert r.check([], None, g)
    assert r.skipped_checks == 0
    for _ in range(10):
        assert r.check([], None, g)
    assert r.skipped_checks == 20


def test_dict_version_skip_changing_baked_global_fails():
    r = global_tree()
    g = {"cfg_scale": 2, "mode": "fast"}
    assert r.check([], None, g)
    assert r.check([], None, g)
    g["cfg_scale"] = 3
    assert not r.check([], None, g)
    g["cfg_scale"] = 2
    assert r.check([], None, g)
    del g["mode"]
    assert not r.check([], None, g)


def test_dict_version_skip_unrelated_global_still_passes():
    r = global_tree()
    g = {"cfg_scale": 2, "mode": "fast"}
    assert r.check([], None, g)
    before = r.skipped_checks
    g["other"] = object()
    assert r.check([], None, g)  # version changed: rechecked, still passes
    assert r.skipped_checks == before
    assert r.check([], None, g)  # and now skipped again
    assert r.skipped_checks == before + 2


def test_dict_version_skip_other_dict_same_contents():
    r = global_tree()
    g1 = {"cfg_scale": 2, "mode": "fast"}
    assert r.check([], None, g1)
    g2 = {"cfg_scale": 3, "mode": "fast"}
    assert not r.check([], None, g2)  # another dict has another tag
    assert r.check([], None, dict(g1))


def test_dict_version_no_skip_for_mutable_values_or_accessors():
    class Cfg:
        scale = 2

    cfg_list = {1, 2}
    r = R()
    r.global_("Cfg").attr("scale").add_equals_match(2)
    r.global_("lst").add_equals_match({1, 2})  # set: mutable, never skipped
    g = {"Cfg": Cfg, "lst": cfg_list}
    assert r.check([], None, g)
    assert r.check([], None, g)
    assert r.skipped_checks == 0
    Cfg.scale = 3
    assert not r.check([], None, g)
    Cfg.scale = 2
    cfg_list.add(3)
    assert not r.check([], None, g)


def test_dict_version_skip_type_match_heap_type_not_skipped():
    class A:
        pass

    class B:
        pass

    a = A()
    r = R()
    r.global_("a").add_type_match(A)
    r.global_("n").add_type_match(int)
    g = {"a": a, "n": 1}
    assert r.check([], None, g)
    assert r.check([], None, g)
    assert r.skipped_checks == 1  # only the int one: A's instances may change __class__
    a.__class__ = B
    assert not r.check([], None, g)


def test_dict_version_skip_adding_leaf_resets():
    r = R()
    m = r.global_("v")
    m.add_equals_match(1)
    g = {"v": 1}
    assert r.check([], None, g)
    m.add_type_match(float)  # tree changed: the subtree must be re-run
    assert not r.check([], None, g)


def test_builtins_skip():
    r = R()
    r.builtin("len").add_id_match(len)
    b = {"len": len}
    assert r.check([], None, {}, b)
    assert r.check([], None, {}, b)
    assert r.skipped_checks == 1
    b["len"] = abs
    assert not r.check([], None, {}, b)


# --------------------------------------------------------- hostile objects

class Boom(Exception):
    pass


class EqRaises:
    def __eq__(self, other):
        raise Boom("eq")

    __hash__ = object.__hash__


class BoolRaises:
    def __bool__(self):
        raise Boom("bool")


class EqReturnsBoolRaises:
    def __eq__(self, other):
        return BoolRaises()

    __hash__ = object.__hash__


def test_equals_match_refuses_program_values():
    # comparing a program object would run its __eq__ (and __bool__ of the
    # result): refused when the guard is built
    r = R()
    for v in (EqRaises(), EqReturnsBoolRaises(), [1, 2], {"a": 1}, {EqRaises()}):
        with pytest.raises(TypeError):
            r.local(0, "v").add_equals_match(v)
    r.local(0, "v").add_equals_match(1)
    assert not r.check([EqRaises()])  # other type: fails, nothing is called
    assert not r.check([EqReturnsBoolRaises()])


def test_hostile_getattr():
    class GA:
        def __getattr__(self, name):
            raise Boom(name)

    class GAAttr:
        def __getattr__(self, name):
            raise AttributeError(name)

    class Prop:
        @property
        def x(self):
            raise Boom("x")

    r = R()
    r.local(0, "o").attr("x").add_equals_match(1)
    # a __getattr__ or a property is the program's code: never run, the guard fails
    assert not r.check([GA()])
    assert not r.check([Prop()])
    assert not r.check([GAAttr()])
    assert r.check_verbose([GAAttr()]) == "L['o'].x (missing)"


def test_hostile_hash_for_item_key():
    class H:
        def __hash__(self):
            raise Boom("hash")

        def __eq__(self, other):
            return self is other

    r = R()
    k = H()
    r.local(0, "d").item(k).add_none_match()
    # finding k would run its __hash__: the guard fails, nothing raises
    assert not r.check([{}])

    class G:
        def __getitem__(self, key):
            raise KeyError(key)

    assert not r.check([G()])


def test_hostile_dict_keys_eq():
    class K:
        def __eq__(self, other):
            raise Boom("k")

        def __hash__(self):
            return 1

    r = R()
    k = K()
    r.local(0, "d").add_dict_keys([k])
    # a key that is not a builtin value is matched by identity, its __eq__ never runs
    assert not r.check([{K(): 1}])
    assert r.check([{k: 1}])
    assert not r.check([{1: 1}])


def test_hostile_repr_at_build():
    class BadRepr:
        def __repr__(self):
            raise Boom("repr")

    r = R()
    r.local(0, "v").add_id_match(BadRepr())
    r.local(1, "w").item(BadRepr())
    assert "<BadRepr object>" in r.format()
    assert r.local(1, "w").accessors()[0].source == "L['w'][<BadRepr object>]"


def test_eq_that_mutates_tree_does_not_crash():
    r = R()

    class Grow:
        def __getattr__(self, name):
            for i in range(50):
                r.local(10 + i, f"z{i}")
            return 1

    r.local(0, "v").attr("a").add_equals_match(1)
    r.local(1, "w").add_equals_match(1)
    assert not r.check([Grow(), 2])
    assert len(r.accessors()) == 2  # __getattr__ never ran


def test_eq_that_rebinds_global_does_not_crash():
    g = {}

    class Rebind:
        def __getattr__(self, name):
            g["v"] = None  # drops the value being checked
            return 1

    r = R()
    r.global_("v").attr("a").add_equals_match(1)
    g["v"] = Rebind()
    assert not r.check([], None, g)  # __getattr__ never ran
    assert isinstance(g["v"], Rebind)


def test_eq_that_runs_check_reentrantly():
    r = R()

    class Reenter:
        depth = 0

        def __getattr__(self, name):
            if Reenter.depth < 3:
                Reenter.depth += 1
                r.check([Reenter(), 0])
            return 1

    r.local(0, "v").attr("a").add_equals_match(1)
    r.local(1, "w").add_equals_match(1)
    assert not r.check([Reenter(), 0])
    assert Reenter.depth == 0  # __getattr__ never ran


def test_deep_tree_refused():
    r = R()
    m = r.local(0, "x")
    with pytest.raises(RecursionError):
        for _ in range(1000):
            m = m.attr("a")


# -------------------------------------------------------- refs and leaks

def test_id_match_on_dead_object_fails():
    class Obj:
        pass

    o = Obj()
    r = R()
    r.local(0, "o").add_id_match(o)
    assert r.check([o])
    addr = id(o)
    del o
    gc.collect()
    # a new object may get the same address: the guard must not pass for it
    others = [Obj() for i in range(100)]
    assert not any(r.check([x]) for x in others)
    assert addr is not None


def test_strong_refs_and_gc_cycle():
    class Obj:
        pass

    o = Obj()
    before, cls_before = sys.getrefcount(o), sys.getrefcount(Obj)
    r = R()
    r.local(0, "o").add_id_match(o)
    r.local(1, "p").add_type_match(Obj)
    r.local(2, "q").add_dict_keys([o])
    # weak references only: a guard keeps no program object alive
    # (test_functools, test_unittest)
    assert sys.getrefcount(o) == before
    assert sys.getrefcount(Obj) == cls_before
    del r
    gc.collect()
    assert sys.getrefcount(o) == before

    # a cycle through a guarded value is collected
    import weakref
    r = R()
    holder = Obj()
    holder.root = r
    r.local(0, "h").add_id_match(holder)
    wr = weakref.ref(holder)
    del r, holder
    gc.collect()
    assert wr() is None


def test_no_leak_over_many_checks():
    r, x = seed_tree()
    r.local(2, "d").add_dict_keys(["a"])
    r.local(2, "d").item("a").add_equals_match((1, "s"))
    g = {"cfg_scale": 2}
    slots = [x, 3, {"a": (1, "s")}]
    for _ in range(1000):
        r.check(slots, None, g)
    tracemalloc.start()
    snap = tracemalloc.take_snapshot()
    t = r._bench(slots, None, g, None, 100_000)
    assert t >= 0
    for _ in range(5000):
        r.check(slots, None, g)
        r.check([x, 4], None, g)
        r.check_verbose([x, 4], None, g)
    gc.collect()
    grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(snap, "filename"))
    tracemalloc.stop()
    assert grown < 64 * 1024


def test_no_leak_over_many_builds():
    def build():
        r = R()
        r.add_global_state()
        r.local(0, "x").add_tensor_match(np.zeros((2, 2)), (0,))
        m = r.local(1, "o")
        m.add_type_match(dict)
        m.add_dict_keys(["a", "b"])
        m.item("a").attr("real").add_equals_match(1.0)
        m.index(0).type_of().add_id_match(int)
        r.global_("g").add_dict_version({})
        r.builtin("len").add_id_match(len)
        r.closure_cell(0, "c").add_sequence_length(1)
        r.format()
        r.check([np.zeros((3, 2)), {"a": 1.0, "b": 2}])
        return r

    for _ in range(200):
        build()
    gc.collect()
    tracemalloc.start()
    snap = tracemalloc.take_snapshot()
    for _ in range(10_000):
        build()
    gc.collect()
    grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(snap, "filename"))
    tracemalloc.stop()
    assert grown < 256 * 1024


# ------------------------------------------------- through the eval-frame hook

SCALE = 2


@pytest.mark.skipif(not _C.SUPPORTED, reason="eval-frame hook needs CPython 3.11")
def test_guards_through_eval_frame_hook():
    global SCALE
    from framejit._C import eval_frame as ef

    def f(x, n):
        return x * n * SCALE

    compiles = []

    def callback(frame, cache_entry, frame_state):
        if frame.f_code is not f.__code__:
            return None
        n = frame.f_locals["n"]
        compiles.append(n)
        r = R()
        r.local(1, "n").add_equals_match(n)
        r.global_("SCALE").add_equals_match(SCALE)
        return (frame.f_code, r)

    prev = ef.set_eval_frame(callback)
    try:
        results = [f(1, 3), f(1, 3), f(1, 4), f(1, 3), f(1, 4)]
        SCALE = 5
        results.append(f(1, 3))
    finally:
        ef.set_eval_frame(prev)
        SCALE = 2
        ef.reset_code(f.__code__)
    assert results == [6, 6, 8, 6, 8, 15]
    assert compiles == [3, 4, 3]


def test_module_attribute_guard_skipped_by_module_dict_version():
    import types
    mod = types.ModuleType("fake_np")
    mod.sin = lambda v: v
    g = {"np": mod}
    r = R()
    r.global_("np").add_id_match(mod)
    sin_mgr = r.global_("np").attr("sin")
    sin_mgr.add_id_match(mod.sin)
    assert r.check([], globals=g)
    before = r.skipped_checks
    assert r.check([], globals=g)
    assert r.skipped_checks > before          # np.sin not fetched again
    mod.sin = lambda v: v + 1                 # monkeypatch: the module dict changes
    assert not r.check([], globals=g)
    assert "G['np'].sin" in r.check_verbose([], globals=g)


def test_module_getattr_values_are_never_skipped():
    import types
    mod = types.ModuleType("lazy")
    calls = []

    def __getattr__(name):
        calls.append(name)
        return 42
    mod.__getattr__ = __getattr__
    r = R()
    r.global_("m").attr("thing").add_equals_match(42)
    g = {"m": mod}
    # not in the module dict: only the module's __getattr__ (program code) knows
    assert not r.check([], globals=g) and not r.check([], globals=g)
    assert calls == []
    mod.thing = 42
    assert r.check([], globals=g)
