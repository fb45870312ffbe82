"""Tests of the bytecode layer (csrc/bytecode/) through framejit._C._testing.bc_*.

Differential against the running CPython (3.11, 3.12 or 3.13) itself: the
standard library round trip must give back CPython's bytes, decoding must
agree with `dis`, and hand-assembled code must run (and `dis` must read it).
Expectations are built from `dis.opmap` of the running version; where the
versions spell something differently the test says so with a dict keyed by
version (VERSION below).
"""
import dis
import io
import os
import sys
import sysconfig
import textwrap
import types
import warnings

import pytest

from framejit import _C

VERSION = sys.version_info[:2]
pytestmark = pytest.mark.skipif(
    not _C.SUPPORTED or VERSION not in ((3, 11), (3, 12), (3, 13)),
    reason="CPython 3.11, 3.12 and 3.13 only",
)

OP = dis.opmap
FIELDS = ("co_code", "co_linetable", "co_exceptiontable", "co_stacksize")

# Version spellings.  The forward "pop and jump if false" (3.11 has FORWARD
# and BACKWARD forms; 3.12+ one form, forward only).
POP_JUMP_IF_FALSE = OP.get("POP_JUMP_FORWARD_IF_FALSE", OP.get("POP_JUMP_IF_FALSE"))
# What sits at a FOR_ITER's exit and is skipped by an exhausted iterator.
FOR_ITER_EXIT = {(3, 11): [], (3, 12): ["END_FOR"],
                 (3, 13): ["END_FOR", "POP_TOP"]}.get(VERSION, [])
# The call of a [NULL, callable] pair with n arguments.
CALL_OPS = ["PRECALL", "CALL"] if "PRECALL" in OP else ["CALL"]


def decoded(co):
    """bc_decode's rows cut to their first six fields (no pseudo-instruction)."""
    return [row[:6] for row in _C._testing.bc_decode(co)]


def real_op(op):
    """The opcode co_code holds for a list opcode (3.13: LOAD_CLOSURE -> LOAD_FAST)."""
    return _C._testing.bc_real_opcode(op)


def walk_code(co):
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            yield from walk_code(c)


def stdlib_sources():
    lib = sysconfig.get_paths()["stdlib"]
    for root, dirs, files in os.walk(lib):
        parts = os.path.relpath(root, lib).split(os.sep)
        if parts[0] in ("site-packages", "dist-packages") or "__pycache__" in parts:
            dirs[:] = []
            continue
        if "lib2to3" in parts and ("data" in parts or "tests" in parts):
            continue
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".py"):
                yield os.path.join(root, f)


def compile_file(path):
    with open(path, "rb") as fh:
        src = fh.read()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compile(src, path, "exec")


# ---------------------------------------------------------------- round trip


def test_stdlib_roundtrip_is_exact():
    nmod = ncode = 0
    bad = []
    for path in stdlib_sources():
        try:
            top = compile_file(path)
        except (SyntaxError, ValueError):
            continue  # a few deliberately broken test inputs
        nmod += 1
        for co in walk_code(top):
            ncode += 1
            try:
                new = _C._testing.bc_roundtrip(co)
            except Exception as e:  # noqa: BLE001 - collect every failure
                bad.append((path, co.co_qualname, repr(e)))
                continue
            diff = [f for f in FIELDS if getattr(co, f) != getattr(new, f)]
            if diff:
                bad.append((path, co.co_qualname, diff))
    assert nmod > 1500
    assert ncode > 60000
    assert bad == []


def test_roundtrip_keeps_everything_else():
    co = textwrap.wrap.__code__
    new = _C._testing.bc_roundtrip(co)
    for f in ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_nlocals",
              "co_flags", "co_names", "co_consts", "co_varnames", "co_cellvars",
              "co_freevars", "co_filename", "co_name", "co_qualname", "co_firstlineno"):
        assert getattr(new, f) == getattr(co, f), f
    assert list(new.co_positions()) == list(co.co_positions())
    assert new == co


def test_roundtrip_runs():
    ns = {}
    exec(SAMPLES_SRC, ns)
    co = ns["comprehensions"].__code__
    f = types.FunctionType(_C._testing.bc_roundtrip(co), ns)
    assert f(5) == ns["comprehensions"](5)


# ------------------------------------------------------------ decode vs dis

SAMPLES_SRC = '''
import contextlib

def loops(n):
    s = 0
    for i in range(n):
        if i % 3 == 0:
            continue
        while s > 100:
            s -= 7
            if s is None:
                break
        s += i
    else:
        s = -s
    return s

def trys(x):
    try:
        y = 1 / x
    except ZeroDivisionError as e:
        y = str(e)
    except (TypeError, ValueError):
        raise
    else:
        y = y * 2
    finally:
        x = None
    return y

def withs(p):
    with contextlib.suppress(KeyError), open(p) as fh:
        return fh.read()

def comprehensions(n):
    a = [i * i for i in range(n) if i]
    b = {k: v for k, v in zip(a, a)}
    c = {x for x in b}
    return sum(x for x in c), a

def closures(x):
    y = x + 1
    def inner(z, *args, k=3, **kw):
        nonlocal y
        y += z
        return y + x
    return inner

def gen(n):
    yield from range(n)
    x = yield n
    return x

async def coro(a):
    async with a as b:
        async for c in b:
            await c
    return [d async for d in a]

def calls(o, *a, **k):
    o.m(1, 2, key=3)
    print(*a, sep="", **k)
    return o.attr.other[1:2], None if o else not o

def matches(v):
    match v:
        case [1, 2, *rest]:
            return rest
        case {"k": x, **kw}:
            return x
        case int() | float() as n if n > 0:
            return n
        case _:
            return None

def star(eg):
    try:
        raise eg
    except* ValueError as e:
        r = e
    except* TypeError:
        pass
    return r
'''


def big_function_source(nconst=300, nlocals=300):
    """A function with >256 constants and locals, and jumps of >255 units."""
    lines = ["def big(x):", "    while x:"]
    lines += [f"        v{i} = 'c{i}' if x > {i} else {i}.5" for i in range(nlocals)]
    lines += ["        x -= 1", "    if x:"]
    lines += [f"        x = x + 'k{i}'" for i in range(nconst)]
    lines += ["    return x"]
    return "\n".join(lines) + "\n"


def sample_codes():
    ns = {}
    exec(compile(SAMPLES_SRC, "<samples>", "exec"), ns)
    exec(compile(big_function_source(), "<big>", "exec"), ns)
    out = []
    for name, f in ns.items():
        if isinstance(f, types.FunctionType):
            out.extend(walk_code(f.__code__))
    return out


def expected_from_dis(co):
    """(offset, op, arg, target_offset, positions, handler) per instruction."""
    ins = [i for i in dis.get_instructions(co) if i.opname != "EXTENDED_ARG"]
    table = dis._parse_exception_table(co)
    # An instruction starts at its first EXTENDED_ARG prefix.
    starts = {}
    all_ins = list(dis.get_instructions(co))
    pending = None
    for i in all_ins:
        if i.opname == "EXTENDED_ARG":
            pending = i.offset if pending is None else pending
            continue
        starts[i.offset] = i.offset if pending is None else pending
        pending = None
    rows = []
    for i in ins:
        start = starts[i.offset]
        target = i.argval if i.opcode in dis.hasjrel else None
        handler = None
        for e in table:
            if e.start <= start < e.end:
                handler = (e.target, e.depth, e.lasti)
        p = i.positions
        rows.append((i.offset, start, i.opcode, i.arg or 0, target,
                     (p.lineno, p.end_lineno, p.col_offset, p.end_col_offset), handler))
    return rows


@pytest.mark.parametrize("co", sample_codes(), ids=lambda c: c.co_qualname)
def test_decode_matches_dis(co):
    got = _C._testing.bc_decode(co)
    exp = expected_from_dis(co)
    assert len(got) == len(exp)
    start_to_index = {e[1]: k for k, e in enumerate(exp)}
    for g, e in zip(got, exp):
        off, op, arg, target, pos, handler = g[:6]
        assert (off, real_op(op), arg, pos) == (e[0], e[2], e[3], e[5])
        if e[4] is None:
            assert target is None
        else:
            assert target == start_to_index[e[4]]
        if e[6] is None:
            assert handler is None
        else:
            assert handler == (start_to_index[e[6][0]], e[6][1], e[6][2])
    # Roundtrip of the same sample is exact too.
    new = _C._testing.bc_roundtrip(co)
    assert [getattr(new, f) for f in FIELDS] == [getattr(co, f) for f in FIELDS]


def test_big_function_uses_extended_arg():
    ns = {}
    exec(compile(big_function_source(), "<big>", "exec"), ns)
    co = ns["big"].__code__
    assert len(co.co_consts) > 256 and co.co_nlocals > 256
    ops = [i.opname for i in dis.get_instructions(co)]
    assert "EXTENDED_ARG" in ops
    decoded = _C._testing.bc_decode(co)
    # Folded args above 255, including long forward and backward jumps.
    assert any(d[2] > 255 for d in decoded if d[1] == OP["LOAD_CONST"])
    backward = {OP[n] for n in dis.opmap if "BACKWARD" in n}
    assert any(d[2] > 255 for d in decoded if d[1] in backward)
    assert any(d[2] > 255 for d in decoded if d[1] == POP_JUMP_IF_FALSE)
    assert _C._testing.bc_roundtrip(co).co_code == co.co_code


def test_reassemble_from_decoded_tuples():
    """Decode -> Python tuples -> bc_assemble reproduces the code object."""
    for co in sample_codes():
        instrs = [(op, arg, target, pos, handler)
                  for (_, op, arg, target, pos, handler) in decoded(co)]
        new = _C._testing.bc_assemble(co, instrs)
        assert [getattr(new, f) for f in FIELDS] == [getattr(co, f) for f in FIELDS], \
            co.co_qualname


def test_stackdepth_matches_cpython():
    for co in sample_codes():
        assert _C._testing.bc_stackdepth(co) == co.co_stacksize


# ------------------------------------------------------- hand-assembled code


def run_dis(co):
    out = io.StringIO()
    dis.dis(co, file=out)
    return out.getvalue()


def template(x):
    pass


def test_assemble_add_one():
    co = _C._testing.bc_assemble(template.__code__, [
        (OP["RESUME"], 0, None, 10),
        (OP["LOAD_FAST"], 0, None, 11),
        (OP["LOAD_CONST"], 1, None, 11),
        (OP["BINARY_OP"], 0, None, 11),  # +
        (OP["RETURN_VALUE"], 0, None, 11),
    ], consts=(None, 1), name="f", qualname="f", firstlineno=10)
    f = types.FunctionType(co, {})
    assert f(41) == 42
    assert co.co_stacksize == 2
    assert co.co_name == "f" and co.co_varnames == ("x",)
    lines = [ln for _, _, ln in co.co_lines()]
    if VERSION == (3, 11):
        assert lines == [10, 11, 11, 11, 11]  # one location entry per instruction
    else:
        assert lines == [10, 11]  # 3.12+: one entry per run of equal positions
    assert "BINARY_OP" in run_dis(co)


def loop_instrs(back_op):
    # s = 0; for i in range(n): s += i; return s
    # (3.11: the FOR_ITER is instruction 8 and exits to 15; 3.12 drops PRECALL
    # and exits to END_FOR; 3.13 to END_FOR, POP_TOP.)
    head = [
        (OP["RESUME"], 0, None, 1),
        (OP["LOAD_CONST"], 0, None, 2),
        (OP["STORE_FAST"], 1, None, 2),
        (OP["LOAD_GLOBAL"], (0 << 1) | 1, None, 3),  # NULL + range
        (OP["LOAD_FAST"], 0, None, 3),
    ] + [(OP[c], 1, None, 3) for c in CALL_OPS] + [
        (OP["GET_ITER"], 0, None, 3),
    ]
    top = len(head)
    body = [
        (OP["FOR_ITER"], 0, top + 7, 3),
        (OP["STORE_FAST"], 2, None, 3),
        (OP["LOAD_FAST"], 1, None, 4),
        (OP["LOAD_FAST"], 2, None, 4),
        (OP["BINARY_OP"], 13, None, 4),  # +=
        (OP["STORE_FAST"], 1, None, 4),
        (back_op, 0, top, 4),
    ]
    tail = [(OP[e], 0, None, 3) for e in FOR_ITER_EXIT] + [
        (OP["LOAD_FAST"], 1, None, 5),
        (OP["RETURN_VALUE"], 0, None, 5),
    ]
    return head + body + tail


@pytest.mark.parametrize("back_op", ["JUMP_BACKWARD", "JUMP_FORWARD"])
def test_assemble_loop(back_op):
    co = _C._testing.bc_assemble(template.__code__, loop_instrs(OP[back_op]),
                         consts=(0,), names=("range",), varnames=("n", "s", "i"))
    f = types.FunctionType(co, {"__builtins__": __builtins__})
    assert f(10) == 45 and f(0) == 0
    # The back edge is a JUMP_BACKWARD whatever the caller wrote.
    assert [i.opname for i in dis.get_instructions(co)].count("JUMP_BACKWARD") == 1
    assert co.co_nlocals == 3
    # NULL, range, n  -> 3; the loop keeps the iterator under 2 more.
    assert co.co_stacksize == 3
    run_dis(co)


def try_except_reference(x):
    try:
        return 10 // x
    except ZeroDivisionError:
        return -1


def test_assemble_try_except_by_hand():
    H, C = 6, 15
    h0 = (H, 0, 0)
    h1 = (C, 1, 1)
    instrs = [
        (OP["RESUME"], 0, None, 1, None),
        (OP["NOP"], 0, None, 2, h0),
        (OP["LOAD_CONST"], 1, None, 3, h0),
        (OP["LOAD_FAST"], 0, None, 3, h0),
        (OP["BINARY_OP"], 2, None, 3, h0),  # //
        (OP["RETURN_VALUE"], 0, None, 3, h0),
        (OP["PUSH_EXC_INFO"], 0, None, 4, h1),  # H
        (OP["LOAD_GLOBAL"], 0, None, 4, h1),
        (OP["CHECK_EXC_MATCH"], 0, None, 4, h1),
        (POP_JUMP_IF_FALSE, 0, 14, 4, h1),
        (OP["POP_TOP"], 0, None, 4, h1),
        (OP["POP_EXCEPT"], 0, None, 5),
        (OP["LOAD_CONST"], 2, None, 5),
        (OP["RETURN_VALUE"], 0, None, 5),
        (OP["RERAISE"], 0, None, 4, h1),  # 14
        (OP["COPY"], 3, None, None),  # C
        (OP["POP_EXCEPT"], 0, None, None),
        (OP["RERAISE"], 1, None, None),
    ]
    co = _C._testing.bc_assemble(template.__code__, instrs, consts=(None, 10, -1),
                         names=("ZeroDivisionError",))
    f = types.FunctionType(co, {"__builtins__": __builtins__})
    assert f(3) == 3
    assert f(0) == -1  # raised inside the try, caught by the handler
    with pytest.raises(TypeError):
        f("a")  # not matched: re-raised through the cleanup handler
    assert co.co_stacksize == try_except_reference.__code__.co_stacksize == 4
    text = run_dis(co)
    assert "ExceptionTable" in text
    table = dis._parse_exception_table(co)
    assert [(e.depth, e.lasti) for e in table] == [(0, False), (1, True), (1, True)]


def test_assemble_generated_function_with_extended_args():
    ns = {}
    exec(compile(big_function_source(20, 300), "<big>", "exec"), ns)
    co = ns["big"].__code__
    instrs = [(op, arg, t, None, h) for (_, op, arg, t, _, h) in decoded(co)]
    new = _C._testing.bc_assemble(co, instrs)  # no positions at all
    assert new.co_code == co.co_code
    assert all(ln is None for _, _, ln in new.co_lines())
    f = types.FunctionType(new, {})
    assert f(0) == 0 and f(3) == 0


def test_insert_nops_keeps_jumps_and_handlers():
    ns = {}
    exec(SAMPLES_SRC, ns)
    for name, args in (("loops", (50,)), ("trys", (0,)), ("trys", (4,)),
                       ("comprehensions", (6,))):
        f = ns[name]
        n = len(_C._testing.bc_decode(f.__code__))
        for at in (1, n // 3, n // 2, n - 1):
            co = _C._testing.bc_insert_nops(f.__code__, at, 3)
            g = types.FunctionType(co, ns)
            assert g(*args) == f(*args)
            assert len(_C._testing.bc_decode(co)) == n + 3
            run_dis(co)


def test_split_fast_pairs_keeps_behaviour():
    """fj_dl_split_fast_pairs: 3.13's two-local instructions become two
    single ones (jumps and handlers still right); elsewhere nothing changes."""
    ns = {}
    exec(SAMPLES_SRC, ns)
    pairs = {OP[n] for n in ("LOAD_FAST_LOAD_FAST", "STORE_FAST_LOAD_FAST",
                             "STORE_FAST_STORE_FAST") if n in OP}
    for name, args in (("loops", (50,)), ("trys", (0,)), ("trys", (4,)),
                       ("comprehensions", (6,)), ("matches", ([1, 2, 3],))):
        f = ns[name]
        co = _C._testing.bc_split_pairs(f.__code__)
        ops = [d[1] for d in decoded(co)]
        assert not pairs & set(ops)
        n_pairs = sum(d[1] in pairs for d in decoded(f.__code__))
        assert len(ops) == len(decoded(f.__code__)) + n_pairs
        if not n_pairs:
            assert co.co_code == f.__code__.co_code
        g = types.FunctionType(co, ns)
        assert g(*args) == f(*args)
        run_dis(co)
    assert VERSION < (3, 13) or any(
        d[1] in pairs for d in decoded(ns["comprehensions"].__code__))


def test_varnames_growth_remaps_cells_and_frees():
    ns = {}
    exec(SAMPLES_SRC, ns)
    outer = ns["closures"]
    inner = outer(10)
    # Outer has a cell 'y' after its varnames; adding locals shifts it.
    oco = outer.__code__
    new_outer = _C._testing.bc_assemble(
        oco, [(op, arg, t, p, h) for (_, op, arg, t, p, h) in decoded(oco)],
        varnames=oco.co_varnames + ("extra1", "extra2"))
    assert new_outer.co_varnames == oco.co_varnames + ("extra1", "extra2")
    assert new_outer.co_cellvars == oco.co_cellvars
    g = types.FunctionType(new_outer, ns)(10)
    assert g(1) == inner(1)
    # Inner's free variables also move.
    ico = inner.__code__
    new_inner = _C._testing.bc_assemble(
        ico, [(op, arg, t, p, h) for (_, op, arg, t, p, h) in decoded(ico)],
        varnames=ico.co_varnames + ("extra",))
    fresh = outer(10)
    h = types.FunctionType(new_inner, ns, None, fresh.__defaults__, fresh.__closure__)
    h.__kwdefaults__ = fresh.__kwdefaults__
    assert h(5) == outer(10)(5) == 26
    assert h(5) == 31  # the shared cell was updated through the remapped STORE_DEREF
    derefs = [d for d in _C._testing.bc_decode(new_inner) if d[1] == OP["LOAD_DEREF"]]
    assert all(d[2] >= len(new_inner.co_varnames) for d in derefs)


# ------------------------------------------------------------------ builder


def test_builder_loop_labels_and_interning():
    steps = [
        ("line", 1), ("op", OP["RESUME"], 0),
        ("line", 2), ("const", 0), ("store", "s"),
        ("line", 3), ("global", "range", True), ("load", "x"), ("call", 1),
        ("op", OP["GET_ITER"], 0),
        ("label", "top"), ("jump", OP["FOR_ITER"], "end"), ("store", "i"),
        ("line", 4), ("load", "s"), ("load", "i"), ("op", OP["BINARY_OP"], 13),
        ("store", "s"), ("jump", OP["JUMP_FORWARD"], "top"),  # flipped backward
        ("label", "end"),
    ] + [("op", OP[e], 0) for e in FOR_ITER_EXIT] + [
        ("line", 5), ("load", "s"), ("const", 0), ("const", 0.0),
        ("op", OP["BUILD_TUPLE"], 3), ("op", OP["RETURN_VALUE"], 0),
    ]
    co = _C._testing.bc_build(template.__code__, steps)
    assert co.co_varnames == ("x", "s", "i")
    assert co.co_consts == (None, 0, 0.0)  # 0 reused, 0.0 kept apart
    assert co.co_names == ("range",)
    f = types.FunctionType(co, {"__builtins__": __builtins__})
    r = f(5)
    assert r == (10, 0, 0.0) and type(r[2]) is float
    run_dis(co)


def test_builder_handler_method_call_kwnames():
    steps = [
        ("op", OP["RESUME"], 0),
        ("handler", "catch", 0, 0),
        ("load", "x"), ("method", "split"), ("const", ","), ("const", 1),
        ("call", 2, ("sep", "maxsplit")[1:]),  # x.split(",", maxsplit=1)
        ("op", OP["RETURN_VALUE"], 0),
        ("handler", None, 0, 0),
        ("label", "catch"), ("op", OP["PUSH_EXC_INFO"], 0),
        ("op", OP["POP_TOP"], 0), ("op", OP["POP_EXCEPT"], 0),
        ("const", "caught"), ("op", OP["RETURN_VALUE"], 0),
    ]
    co = _C._testing.bc_build(template.__code__, steps)
    f = types.FunctionType(co, {})
    assert f("a,b,c") == ["a", "b,c"]
    assert f(42) == "caught"  # AttributeError raised inside, caught
    assert ("maxsplit",) in co.co_consts
    run_dis(co)


def test_builder_deref():
    def outer():
        y = 7

        def inner():
            return y
        return inner
    inner = outer()
    steps = [("op", OP["COPY_FREE_VARS"], 1), ("op", OP["RESUME"], 0),
             ("deref", OP["LOAD_DEREF"], "y"), ("const", 1), ("op", OP["BINARY_OP"], 0),
             ("op", OP["RETURN_VALUE"], 0)]
    co = _C._testing.bc_build(inner.__code__, steps)
    g = types.FunctionType(co, {}, None, None, inner.__closure__)
    assert g() == 8
    with pytest.raises(ValueError, match="not a cell or free variable"):
        _C._testing.bc_build(inner.__code__, [("deref", OP["LOAD_DEREF"], "nope")])


def test_builder_closure_and_make_function():
    """A closure built with the dialect's LOAD_CLOSURE and function creation
    (3.13: MAKE_FUNCTION then SET_FUNCTION_ATTRIBUTE closure, defaults)."""
    def outer(x):
        y = x

        def inner(k=5):
            return y + k
        return inner
    inner_code = outer(0).__code__
    steps = [
        ("deref", OP["MAKE_CELL"], "y"), ("op", OP["RESUME"], 0),
        ("load", "x"), ("deref", OP["STORE_DEREF"], "y"),
        ("const", (7,)),                                  # defaults
        ("closure", "y"), ("op", OP["BUILD_TUPLE"], 1),   # closure
        ("const", inner_code), ("make_function", 0x01 | 0x08),
        ("op", OP["RETURN_VALUE"], 0),
    ]
    co = _C._testing.bc_build(outer.__code__, steps)
    g = types.FunctionType(co, {})(10)
    assert g() == 17 and g(1) == 11
    assert g.__defaults__ == (7,)
    names = [i.opname for i in dis.get_instructions(co)]
    if VERSION >= (3, 13):
        assert names[-4:] == ["MAKE_FUNCTION", "SET_FUNCTION_ATTRIBUTE",
                              "SET_FUNCTION_ATTRIBUTE", "RETURN_VALUE"]
        attrs = [i.arg for i in dis.get_instructions(co) if i.opname == "SET_FUNCTION_ATTRIBUTE"]
        assert attrs == [0x08, 0x01]  # highest flag first, as compile.c emits them
        assert "LOAD_CLOSURE" not in names  # written as LOAD_FAST of the cell
    else:
        assert "LOAD_CLOSURE" in names


def test_builder_null_pair_and_kwnames():
    """dict(a=1) through the dialect's NULL placement and keyword call."""
    steps = [
        ("op", OP["RESUME"], 0),
        ("null_before",), ("global", "dict", False), ("null_after",),
        ("const", 1), ("call", 1, ("a",)),
        ("op", OP["RETURN_VALUE"], 0),
    ]
    co = _C._testing.bc_build(template.__code__, steps)
    assert types.FunctionType(co, {"__builtins__": __builtins__})(0) == {"a": 1}
    names = [i.opname for i in dis.get_instructions(co)]
    g = names.index("LOAD_GLOBAL")
    if _C._testing.bc_dialect()["null_after"]:
        assert names[g + 1] == "PUSH_NULL" and "CALL_KW" in names
    else:
        assert names[g - 1] == "PUSH_NULL" and "KW_NAMES" in names


def test_dialect_is_the_running_version():
    d = _C._testing.bc_dialect()
    assert d["name"] == "%d.%d" % VERSION
    assert d["null_after"] == (VERSION >= (3, 13))


# ---------------------------------------------------- pseudo-instructions


def p_call(o, x):
    return o.m(x, k=1) + len(x)


def p_cmp(a, b):
    if a < b:
        return +a
    if a:
        b[1:2] = a
        return -1
    return [*b]


def p_fmt(v, w):
    return f"{v!r:>{w}}{v}"


def p_loop(xs):
    t = 0
    for x in xs:
        t = t + x
    return t


def p_closure(y):
    def inner(k=1):
        return y + k
    return inner


def p_comp(xs):
    return [x for x in xs]


# The lifted (kind, a, b) of every instruction but NOPs, per version.  Same
# kinds where versions agree; the differences are the dialects': 3.11's
# KW_NAMES+CALL vs 3.13's CALL b=1 (CALL_KW); 3.13's superinstructions,
# COMPARE_OP b=1 (bool) and TO_BOOL; 3.12+'s STORE_SLICE and RETURN_CONST;
# FORMAT_VALUE vs CONVERT_VALUE + FORMAT_*; FOR_ITER's b (END_FOR, POP_TOP);
# MAKE_FUNCTION flags vs SET_FUNCTION_ATTRIBUTE; inlined comprehensions.
_CALL_312 = [("LOAD_FAST", 0, 0), ("LOAD_METHOD", 0, 0), ("LOAD_FAST", 1, 0),
             ("LOAD_CONST", 1, 0), ("KW_NAMES", 2, 0), ("CALL", 2, 0), ("LOAD_GLOBAL", 1, 1),
             ("LOAD_FAST", 1, 0), ("CALL", 1, 0), ("BINARY_OP", 0, 0), ("RETURN_VALUE", 0, 0)]
_CMP_TAIL = [("BUILD_LIST", 0, 0), ("LOAD_FAST", 1, 0), ("LIST_EXTEND", 1, 0),
             ("RETURN_VALUE", 0, 0)]
_CMP_312 = [("LOAD_FAST", 0, 0), ("LOAD_FAST", 1, 0), ("COMPARE_OP", 0, 0), ("POP_JUMP_IF", 0, 0),
            ("LOAD_FAST", 0, 0), ("UNARY_POSITIVE", 0, 0), ("RETURN_VALUE", 0, 0),
            ("LOAD_FAST", 0, 0), ("POP_JUMP_IF", 0, 0), ("LOAD_FAST", 0, 0), ("LOAD_FAST", 1, 0),
            ("LOAD_CONST", 1, 0), ("LOAD_CONST", 2, 0), ("STORE_SLICE", 0, 0),
            ("RETURN_CONST", 3, 0)] + _CMP_TAIL
_LOOP_HEAD = [("LOAD_CONST", 1, 0), ("STORE_FAST", 1, 0), ("LOAD_FAST", 0, 0), ("GET_ITER", 0, 0)]
_LOOP_BODY = [("STORE_FAST", 2, 0), ("LOAD_FAST", 1, 0), ("LOAD_FAST", 2, 0), ("BINARY_OP", 0, 0),
              ("STORE_FAST", 1, 0), ("JUMP", 0, 0)]
_LOOP_TAIL = [("LOAD_FAST", 1, 0), ("RETURN_VALUE", 0, 0)]
_COMP_312_HEAD = [("LOAD_FAST", 0, 0), ("GET_ITER", 0, 0), ("LOAD_FAST_AND_CLEAR", 1, 0),
                  ("SWAP", 2, 0), ("BUILD_LIST", 0, 0), ("SWAP", 2, 0)]
_COMP_312_TAIL = [("SWAP", 2, 0), ("STORE_FAST", 1, 0), ("RETURN_VALUE", 0, 0), ("SWAP", 2, 0),
                  ("POP_TOP", 0, 0), ("SWAP", 2, 0), ("STORE_FAST", 1, 0), ("RERAISE", 0, 0)]
PSEUDO = {
    "p_call": {
        (3, 11): [("LOAD_FAST", 0, 0), ("LOAD_METHOD", 0, 0), ("LOAD_FAST", 1, 0),
                  ("LOAD_CONST", 1, 0), ("KW_NAMES", 2, 0), ("PRECALL", 2, 0), ("CALL", 2, 0),
                  ("LOAD_GLOBAL", 1, 1), ("LOAD_FAST", 1, 0), ("PRECALL", 1, 0), ("CALL", 1, 0),
                  ("BINARY_OP", 0, 0), ("RETURN_VALUE", 0, 0)],
        (3, 12): _CALL_312,  # no PRECALL; LOAD_ATTR|1 lifts to LOAD_METHOD
        (3, 13): [("LOAD_FAST", 0, 0), ("LOAD_METHOD", 0, 0), ("LOAD_FAST", 1, 0),
                  ("LOAD_CONST", 1, 0), ("LOAD_CONST", 2, 0), ("CALL", 2, 1),
                  ("LOAD_GLOBAL", 1, 1), ("LOAD_FAST", 1, 0), ("CALL", 1, 0),
                  ("BINARY_OP", 0, 0), ("RETURN_VALUE", 0, 0)],
    },
    "p_cmp": {
        (3, 11): [("LOAD_FAST", 0, 0), ("LOAD_FAST", 1, 0), ("COMPARE_OP", 0, 0),
                  ("POP_JUMP_IF", 0, 0), ("LOAD_FAST", 0, 0), ("UNARY_POSITIVE", 0, 0),
                  ("RETURN_VALUE", 0, 0), ("LOAD_FAST", 0, 0), ("POP_JUMP_IF", 0, 0),
                  ("LOAD_FAST", 0, 0), ("LOAD_FAST", 1, 0), ("LOAD_CONST", 1, 0),
                  ("LOAD_CONST", 2, 0), ("BUILD_SLICE", 2, 0), ("STORE_SUBSCR", 0, 0),
                  ("LOAD_CONST", 3, 0), ("RETURN_VALUE", 0, 0)] + _CMP_TAIL,
        (3, 12): _CMP_312,
        (3, 13): [("LOAD_FAST_LOAD_FAST", 0, 1), ("COMPARE_OP", 0, 1), ("POP_JUMP_IF", 0, 0),
                  ("LOAD_FAST", 0, 0), ("UNARY_POSITIVE", 0, 0), ("RETURN_VALUE", 0, 0),
                  ("LOAD_FAST", 0, 0), ("TO_BOOL", 0, 0), ("POP_JUMP_IF", 0, 0),
                  ("LOAD_FAST_LOAD_FAST", 0, 1), ("LOAD_CONST", 1, 0), ("LOAD_CONST", 2, 0),
                  ("STORE_SLICE", 0, 0), ("RETURN_CONST", 3, 0)] + _CMP_TAIL,
    },
    "p_fmt": {
        (3, 11): [("LOAD_FAST", 0, 0), ("LOAD_CONST", 1, 0), ("LOAD_FAST", 1, 0),
                  ("FORMAT", 0, 0), ("BUILD_STRING", 2, 0), ("FORMAT", 2, 1),
                  ("LOAD_FAST", 0, 0), ("FORMAT", 0, 0), ("BUILD_STRING", 2, 0),
                  ("RETURN_VALUE", 0, 0)],
        (3, 12): [("LOAD_FAST", 0, 0), ("LOAD_CONST", 1, 0), ("LOAD_FAST", 1, 0),
                  ("FORMAT", 0, 0), ("LOAD_CONST", 2, 0), ("BUILD_STRING", 3, 0),
                  ("FORMAT", 2, 1), ("LOAD_FAST", 0, 0), ("FORMAT", 0, 0),
                  ("BUILD_STRING", 2, 0), ("RETURN_VALUE", 0, 0)],
        (3, 13): [("LOAD_FAST", 0, 0), ("CONVERT_VALUE", 2, 0), ("LOAD_CONST", 1, 0),
                  ("LOAD_FAST", 1, 0), ("FORMAT", 0, 0), ("BUILD_STRING", 2, 0),
                  ("FORMAT", 0, 1), ("LOAD_FAST", 0, 0), ("FORMAT", 0, 0),
                  ("BUILD_STRING", 2, 0), ("RETURN_VALUE", 0, 0)],
    },
    "p_loop": {
        (3, 11): _LOOP_HEAD + [("FOR_ITER", 0, 0)] + _LOOP_BODY + _LOOP_TAIL,
        (3, 12): _LOOP_HEAD + [("FOR_ITER", 0, 1)] + _LOOP_BODY + [("OTHER", 0, 0)]  # END_FOR
                 + _LOOP_TAIL,
        (3, 13): _LOOP_HEAD + [("FOR_ITER", 0, 2), ("STORE_FAST", 2, 0),
                               ("LOAD_FAST_LOAD_FAST", 1, 2), ("BINARY_OP", 0, 0),
                               ("STORE_FAST", 1, 0), ("JUMP", 0, 0),
                               ("OTHER", 0, 0), ("POP_TOP", 0, 0)]  # END_FOR, POP_TOP
                 + _LOOP_TAIL,
    },
    "p_closure": {
        (3, 11): [("MAKE_CELL", 0, 0), ("LOAD_CONST", 3, 0), ("LOAD_CLOSURE", 0, 0),
                  ("BUILD_TUPLE", 1, 0), ("LOAD_CONST", 2, 0), ("MAKE_FUNCTION", 9, 0),
                  ("STORE_FAST", 1, 0), ("LOAD_FAST", 1, 0), ("RETURN_VALUE", 0, 0)],
        (3, 12): [("MAKE_CELL", 0, 0), ("LOAD_CONST", 2, 0), ("LOAD_CLOSURE", 0, 0),
                  ("BUILD_TUPLE", 1, 0), ("LOAD_CONST", 1, 0), ("MAKE_FUNCTION", 9, 0),
                  ("STORE_FAST", 1, 0), ("LOAD_FAST", 1, 0), ("RETURN_VALUE", 0, 0)],
        (3, 13): [("MAKE_CELL", 0, 0), ("LOAD_CONST", 2, 0), ("LOAD_CLOSURE", 0, 0),
                  ("BUILD_TUPLE", 1, 0), ("LOAD_CONST", 1, 0), ("MAKE_FUNCTION", 0, 0),
                  ("SET_FUNCTION_ATTRIBUTE", 8, 0), ("SET_FUNCTION_ATTRIBUTE", 1, 0),
                  ("STORE_FAST", 1, 0), ("LOAD_FAST", 1, 0), ("RETURN_VALUE", 0, 0)],
    },
    "p_comp": {
        (3, 11): [("LOAD_CONST", 1, 0), ("MAKE_FUNCTION", 0, 0), ("LOAD_FAST", 0, 0),
                  ("GET_ITER", 0, 0), ("PRECALL", 0, 0), ("CALL", 0, 0), ("RETURN_VALUE", 0, 0)],
        (3, 12): _COMP_312_HEAD + [("FOR_ITER", 0, 1), ("STORE_FAST", 1, 0), ("LOAD_FAST", 1, 0),
                                   ("LIST_APPEND", 2, 0), ("JUMP", 0, 0), ("OTHER", 0, 0)]
                 + _COMP_312_TAIL,
        (3, 13): _COMP_312_HEAD + [("FOR_ITER", 0, 2), ("STORE_FAST_LOAD_FAST", 1, 1),
                                   ("LIST_APPEND", 2, 0), ("JUMP", 0, 0), ("OTHER", 0, 0),
                                   ("POP_TOP", 0, 0)] + _COMP_312_TAIL,
    },
}


def lifted(co):
    return [tuple(row[6:9]) for row in _C._testing.bc_decode(co) if row[6] != "NOP"]


@pytest.mark.parametrize("name", sorted(PSEUDO))
def test_lifted_pseudo_instructions(name):
    assert lifted(globals()[name].__code__) == PSEUDO[name][VERSION]


def test_lifted_operands_name_what_they_should():
    co = p_call.__code__
    rows = _C._testing.bc_decode(co)
    kinds = {r[6]: r for r in rows}
    assert co.co_names[kinds["LOAD_METHOD"][7]] == "m"
    assert co.co_names[kinds["LOAD_GLOBAL"][7]] == "len" and kinds["LOAD_GLOBAL"][8] == 1
    calls = [k for k, r in enumerate(rows) if r[6] == "CALL"]
    first = rows[calls[0]]
    assert first[7] == 2  # x and k=1
    if "KW_NAMES" in kinds:
        assert co.co_consts[kinds["KW_NAMES"][7]] == ("k",) and first[8] == 0
    else:  # 3.13: the names tuple is the LOAD_CONST right before CALL_KW
        assert first[8] == 1 and co.co_consts[rows[calls[0] - 1][7]] == ("k",)
    # Every FOR_ITER's b counts what an exhausted iterator skips at its exit.
    for co in (p_loop.__code__, p_comp.__code__):
        rows = _C._testing.bc_decode(co)
        for r in rows:
            if r[6] == "FOR_ITER":
                assert r[8] == len(FOR_ITER_EXIT)
                exit_ops = [rows[r[3] + k][1] for k in range(r[8])]
                assert exit_ops == [OP[e] for e in FOR_ITER_EXIT]


def test_for_iter_exit_skip_matches_the_interpreter():
    """An exhausted FOR_ITER skips exactly FOR_ITER_EXIT at its target: with
    one value under the iterator, the instruction after them returns it.
    Runs in a child interpreter: a wrong skip count would pop too much."""
    head = [(OP["RESUME"], 0, None, 1), (OP["LOAD_CONST"], 0, None, 1),
            (OP["LOAD_CONST"], 1, None, 1), (OP["GET_ITER"], 0, None, 1)]
    loop = [(OP["FOR_ITER"], 0, 7, 1), (OP["STORE_FAST"], 0, None, 1),
            (OP["JUMP_BACKWARD"], 0, 4, 1)]
    tail = [(OP[e], 0, None, 1) for e in FOR_ITER_EXIT] + [(OP["RETURN_VALUE"], 0, None, 1)]
    co = _C._testing.bc_assemble(template.__code__, head + loop + tail,
                                 consts=("kept", (1, 2)))
    assert lifted(co)[3] == ("FOR_ITER", 0, len(FOR_ITER_EXIT))
    import marshal
    import subprocess
    child = ("import marshal, sys, types; co = marshal.loads(sys.stdin.buffer.read()); "
             "print(types.FunctionType(co, {})(0))")
    out = subprocess.run([sys.executable, "-c", child], input=marshal.dumps(co),
                         capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == b"kept"


def test_load_closure_is_written_as_the_version_spells_it():
    ns = {}
    exec(SAMPLES_SRC, ns)
    co = ns["closures"].__code__
    rows = [r for r in _C._testing.bc_decode(co) if r[6] == "LOAD_CLOSURE"]
    assert rows and all(r[1] == OP["LOAD_CLOSURE"] for r in rows)
    written = OP["LOAD_FAST"] if VERSION >= (3, 13) else OP["LOAD_CLOSURE"]
    for r in rows:
        assert real_op(r[1]) == written and co.co_code[r[0]] == written
        assert co.co_code[r[0] + 1] == r[2]


def test_backward_conditional_jump():
    """3.11 flips a conditional jump to its BACKWARD form; 3.12+ have none and
    the assembler refuses rather than emit a wrong offset."""
    instrs = [(OP["RESUME"], 0, None, 1), (OP["NOP"], 0, None, 1),
              (OP["LOAD_FAST"], 0, None, 1), (POP_JUMP_IF_FALSE, 0, 1, 1),
              (OP["LOAD_CONST"], 0, None, 1), (OP["RETURN_VALUE"], 0, None, 1)]
    if VERSION == (3, 11):
        co = _C._testing.bc_assemble(template.__code__, instrs)
        assert "POP_JUMP_BACKWARD_IF_FALSE" in [i.opname for i in dis.get_instructions(co)]
    else:
        with pytest.raises(ValueError, match="cannot jump backward .*no backward form"):
            _C._testing.bc_assemble(template.__code__, instrs)


@pytest.mark.skipif(not FOR_ITER_EXIT, reason="3.11's FOR_ITER exits to any instruction")
def test_for_iter_exit_must_be_kept():
    steps = [("op", OP["RESUME"], 0), ("load", "x"), ("op", OP["GET_ITER"], 0),
             ("label", "top"), ("jump", OP["FOR_ITER"], "end"), ("store", "i"),
             ("jump", OP["JUMP_BACKWARD"], "top"),
             ("label", "end"), ("const", None), ("op", OP["RETURN_VALUE"], 0)]
    with pytest.raises(ValueError, match="exhausted iterator"):
        _C._testing.bc_build(template.__code__, steps)


@pytest.mark.skipif(VERSION < (3, 12), reason="sys.monitoring is 3.12+")
def test_decode_ignores_monitoring_instrumentation():
    ns = {}
    exec(SAMPLES_SRC, ns)
    f = ns["loops"]
    mon = sys.monitoring
    tool = next(t for t in range(6) if mon.get_tool(t) is None)
    mon.use_tool_id(tool, "framejit-test")
    try:
        ev = mon.events
        mon.set_local_events(tool, f.__code__, ev.LINE | ev.JUMP | ev.BRANCH | ev.CALL
                             | ev.PY_RETURN | ev.INSTRUCTION)
        for e in (ev.LINE, ev.JUMP, ev.BRANCH, ev.CALL, ev.PY_RETURN, ev.INSTRUCTION):
            mon.register_callback(tool, e, lambda *a: None)
        assert f(20) == ns["loops"](20)  # runs instrumented
        new = _C._testing.bc_roundtrip(f.__code__)
        assert [getattr(new, n) for n in FIELDS] == [getattr(f.__code__, n) for n in FIELDS]
    finally:
        mon.set_local_events(tool, f.__code__, 0)
        for e in (ev.LINE, ev.JUMP, ev.BRANCH, ev.CALL, ev.PY_RETURN, ev.INSTRUCTION):
            mon.register_callback(tool, e, None)
        mon.free_tool_id(tool)


# ------------------------------------------------------------------- errors


@pytest.mark.parametrize("instrs, msg", [
    ([(255, 0, None, None)], "bad opcode 255"),
    ([(OP["EXTENDED_ARG"], 1, None, None)], "bad opcode"),
    ([(0, 0, None, None)], "bad opcode 0"),
    # a specialized opcode (3.13 has no LOAD_FAST__LOAD_FAST)
    ([(dis._all_opmap["LOAD_FAST__LOAD_FAST" if VERSION < (3, 13) else "BINARY_OP_ADD_INT"],
       0, None, None)], "bad opcode"),
    ([(OP["JUMP_FORWARD"], 0, 5, None), (OP["RETURN_VALUE"], 0, None, None)],
     "jump target 5 of instruction 0 out of range"),
    ([(OP["JUMP_FORWARD"], 0, None, None)], "jump target -1 of instruction 0 out of range"),
    ([(OP["NOP"], 0, None, None, (9, 0, 0)), (OP["RETURN_VALUE"], 0, None, None)],
     "handler target 9 of instruction 0 out of range"),
    ([(OP["POP_TOP"], 0, None, None)], "stack underflow at instruction 0"),
    ([(OP["NOP"], 0, None, None), (OP["FOR_ITER"], 0, 0, None)], "cannot jump backward"),
    ([(OP["LOAD_CONST"], -3, None, None)], "negative arg"),
    ([], "empty"),
])
def test_assemble_errors(instrs, msg):
    with pytest.raises(ValueError, match=msg):
        _C._testing.bc_assemble(template.__code__, instrs)


def test_build_errors():
    with pytest.raises(ValueError, match="unplaced label"):
        _C._testing.bc_build(template.__code__, [("jump", OP["JUMP_FORWARD"], "x")])
    with pytest.raises(ValueError, match="after the last instruction"):
        _C._testing.bc_build(template.__code__, [("jump", OP["JUMP_FORWARD"], "x"), ("label", "x")])
    with pytest.raises(ValueError, match="placed twice"):
        _C._testing.bc_build(template.__code__, [("label", "x"), ("op", OP["NOP"], 0),
                                         ("label", "x")])
    with pytest.raises(ValueError, match="unknown build step"):
        _C._testing.bc_build(template.__code__, [("frobnicate",)])
    with pytest.raises(TypeError):
        _C._testing.bc_decode("not code")
    with pytest.raises(TypeError):
        _C._testing.bc_assemble(template.__code__, [], bogus=1)
    with pytest.raises(TypeError, match="varnames must hold only str"):
        _C._testing.bc_assemble(template.__code__, [(OP["RETURN_VALUE"], 0, None, None)],
                        varnames=("x", 3))


@pytest.mark.parametrize("code, msg", [
    (bytes([255, 0]), "bad opcode"),
    (bytes([OP["JUMP_FORWARD"], 100]), "jump at offset 0 to bad offset 202"),
    (bytes([OP["EXTENDED_ARG"], 1]), "ends inside EXTENDED_ARG"),
    (bytes([OP["LOAD_GLOBAL"], 0, 0, 0]), "ends inside the caches"),
])
def test_decode_errors(code, msg):
    co = template.__code__.replace(co_code=code, co_linetable=b"", co_exceptiontable=b"")
    with pytest.raises(ValueError, match=msg):
        _C._testing.bc_decode(co)
    with pytest.raises(ValueError, match=msg):
        _C._testing.bc_roundtrip(co)


def test_malformed_tables():
    co = template.__code__
    with pytest.raises(ValueError, match="co_exceptiontable"):
        _C._testing.bc_decode(co.replace(co_exceptiontable=b"\x80\x00"))
    with pytest.raises(ValueError, match="co_exceptiontable"):
        _C._testing.bc_decode(co.replace(co_exceptiontable=b"\x80\x00\x01\x7f\x00"))
    with pytest.raises(ValueError, match="co_linetable"):
        _C._testing.bc_decode(co.replace(co_linetable=b"\x01"))


def test_no_leak_on_repeat():
    # Many decode/assemble cycles, including error paths, must not grow memory.
    import resource
    co = sample_codes()[0]
    def cycle():
        for _ in range(2000):
            _C._testing.bc_roundtrip(co)
            try:
                _C._testing.bc_assemble(template.__code__, [(OP["POP_TOP"], 0, None, None)])
            except ValueError:
                pass
    cycle()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(3):
        cycle()
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert after - before < 2048  # KiB
