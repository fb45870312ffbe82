"""Tests of the bytecode layer (csrc/bytecode/) through framejit._C._testing.bc_*.

Differential against CPython 3.11 itself: the standard library round trip
must give back CPython's bytes, decoding must agree with `dis`, and
hand-assembled code must run (and `dis` must read it).
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

pytestmark = pytest.mark.skipif(
    not _C.SUPPORTED or sys.version_info[:2] != (3, 11), reason="CPython 3.11 only"
)

OP = dis.opmap
FIELDS = ("co_code", "co_linetable", "co_exceptiontable", "co_stacksize")


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
        off, op, arg, target, pos, handler = g
        assert (off, op, arg, pos) == (e[0], e[2], e[3], e[5])
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
    assert any(d[2] > 255 for d in decoded if d[1] == OP["POP_JUMP_FORWARD_IF_FALSE"])
    assert _C._testing.bc_roundtrip(co).co_code == co.co_code


def test_reassemble_from_decoded_tuples():
    """Decode -> Python tuples -> bc_assemble reproduces the code object."""
    for co in sample_codes():
        instrs = [(op, arg, target, pos, handler)
                  for (_, op, arg, target, pos, handler) in _C._testing.bc_decode(co)]
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
    assert [ln for _, _, ln in co.co_lines()] == [10, 11, 11, 11, 11]
    assert "BINARY_OP" in run_dis(co)


def loop_instrs(back_op):
    # s = 0; for i in range(n): s += i; return s
    return [
        (OP["RESUME"], 0, None, 1),
        (OP["LOAD_CONST"], 0, None, 2),
        (OP["STORE_FAST"], 1, None, 2),
        (OP["LOAD_GLOBAL"], (0 << 1) | 1, None, 3),  # NULL + range
        (OP["LOAD_FAST"], 0, None, 3),
        (OP["PRECALL"], 1, None, 3),
        (OP["CALL"], 1, None, 3),
        (OP["GET_ITER"], 0, None, 3),
        (OP["FOR_ITER"], 0, 15, 3),  # 8
        (OP["STORE_FAST"], 2, None, 3),
        (OP["LOAD_FAST"], 1, None, 4),
        (OP["LOAD_FAST"], 2, None, 4),
        (OP["BINARY_OP"], 13, None, 4),  # +=
        (OP["STORE_FAST"], 1, None, 4),
        (back_op, 0, 8, 4),
        (OP["LOAD_FAST"], 1, None, 5),  # 15
        (OP["RETURN_VALUE"], 0, None, 5),
    ]


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
        (OP["POP_JUMP_FORWARD_IF_FALSE"], 0, 14, 4, h1),
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
    instrs = [(op, arg, t, None, h) for (_, op, arg, t, _, h) in _C._testing.bc_decode(co)]
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


def test_varnames_growth_remaps_cells_and_frees():
    ns = {}
    exec(SAMPLES_SRC, ns)
    outer = ns["closures"]
    inner = outer(10)
    # Outer has a cell 'y' after its varnames; adding locals shifts it.
    oco = outer.__code__
    new_outer = _C._testing.bc_assemble(
        oco, [(op, arg, t, p, h) for (_, op, arg, t, p, h) in _C._testing.bc_decode(oco)],
        varnames=oco.co_varnames + ("extra1", "extra2"))
    assert new_outer.co_varnames == oco.co_varnames + ("extra1", "extra2")
    assert new_outer.co_cellvars == oco.co_cellvars
    g = types.FunctionType(new_outer, ns)(10)
    assert g(1) == inner(1)
    # Inner's free variables also move.
    ico = inner.__code__
    new_inner = _C._testing.bc_assemble(
        ico, [(op, arg, t, p, h) for (_, op, arg, t, p, h) in _C._testing.bc_decode(ico)],
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
        ("label", "end"), ("line", 5), ("load", "s"), ("const", 0), ("const", 0.0),
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


# ------------------------------------------------------------------- errors


@pytest.mark.parametrize("instrs, msg", [
    ([(255, 0, None, None)], "bad opcode 255"),
    ([(OP["EXTENDED_ARG"], 1, None, None)], "bad opcode"),
    ([(0, 0, None, None)], "bad opcode 0"),
    ([(dis._all_opmap["LOAD_FAST__LOAD_FAST"], 0, None, None)], "bad opcode"),
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
