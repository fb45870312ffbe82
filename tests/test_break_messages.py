"""Graph-break messages (issue 24, framejit/breaks.py): per break kind, the
function by its public name, the source line with a caret, a why, a hint
and a link to the kind's section of docs/graph-breaks.md, the same text in
logs, explain() and fullgraph=True errors (with the user stack)."""
import contextlib
import io
import logging
import math
import os
import pathlib
import re

import numpy as np
import pytest

import framejit
from framejit import breaks

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
DOC = ROOT / "docs" / "graph-breaks.md"
X = np.arange(1.0, 4.0)


# ------------------------------------------------------------- one per kind

def unsupported_call(x):
    y = x * 2
    return np.fft.fft(y).real + 1


def data_branch(x):
    y = x * 2
    if y.sum() > 0:
        return y + 1
    return y - 1


def data_value(x):
    y = x * 2
    s = float(y.sum())
    return y / s


def side_effect(x):
    y = x * 2
    print("mid")
    return y + 1


def construct(x):
    y = x * 2

    def gen():
        yield 1
    return y + sum(gen())


def argument(x):
    y = x * 2
    return y + math.floor(y.sum())


def fact(x, n):
    return x if n == 0 else fact(x * n, n - 1)


def recursion(x):
    y = x * 2
    return fact(y, 3)


def raises(x, d):
    y = x * 2
    try:
        return y + d["missing"]
    except KeyError:
        return y


def frame_state(x):
    y = x * 2
    return y, iter(range(3))


# (function, args, kind anchor, text of the reason, the part of the line the
# caret is under or None, where the message has no caret)
CASES = [
    (unsupported_call, (X,), "unsupported-call", "call of np.fft.fft is not supported",
     "np.fft.fft(y)"),
    (data_branch, (X,), "data-dependent-branch", "branch on the value of an array",
     "y.sum() > 0"),
    (data_value, (X,), "data-dependent-value", "float() of an array value", "float(y.sum())"),
    (side_effect, (X,), "side-effect", "call of print is not supported", 'print("mid")'),
    (construct, (X,), "unsupported-construct", "call of generator function gen", "gen()"),
    (argument, (X,), "unsupported-argument",
     "call of math.floor with an argument that is not a plain constant", "math.floor(y.sum())"),
    (recursion, (X,), "recursion-or-inline-depth-limit", "recursive call of fact", "fact(y, 3)"),
    (raises, (X, {}), "raises-while-tracing", "KeyError 'missing'", None),
    (frame_state, (X,), "frame-state-not-handed-on", "cannot return iterator from a compiled frame",
     None),
]
IDS = [c[2] for c in CASES]


def _explain(fn, args):
    np.fft.fft  # numpy loads np.fft lazily (a module __getattr__): not this test's break
    with contextlib.redirect_stdout(io.StringIO()):
        return framejit.explain(fn)(*args)


def _first(out, kind):
    hits = [b for b in out.break_reasons if b["kind"] == kind]
    assert hits, [(b["kind"], b["reason"]) for b in out.break_reasons]
    return hits[0]


def _doc_anchors():
    return breaks.anchors(DOC.read_text())


@pytest.mark.parametrize("fn,args,kind,reason,under", CASES, ids=IDS)
def test_message_parts(fn, args, kind, reason, under):
    b = _first(_explain(fn, args), kind)
    msg = b["message"].splitlines()
    assert reason in msg[0]
    k = next(k for k in breaks.KINDS if k.anchor == kind)
    assert f"Hint: {k.hint}" in msg
    assert f"See docs/graph-breaks.md#{kind}" in msg
    assert any(line.lower().startswith(k.title + ":") for line in msg), msg
    if under is None:
        return
    # the source line, dedented, and a caret line under 'under'
    src = next(i for i, line in enumerate(msg) if under in line)
    start = msg[src].index(under)
    caret = msg[src + 1]
    assert set(caret.strip()) == {"^"}, msg
    assert caret.index("^") == start and len(caret.rstrip()) == start + len(under), msg


@pytest.mark.parametrize("fn,args,kind,reason,under", CASES, ids=IDS)
def test_same_text_in_explain_fullgraph_and_logs(fn, args, kind, reason, under, caplog):
    out = _explain(fn, args)
    b = _first(out, kind)
    # explain(): each line of the message under its break, and the source
    text = str(out)
    for line in b["message"].splitlines():
        assert line.rstrip() in text
    # fullgraph=True: the first break's message, then the user stack
    framejit.reset()
    with pytest.raises(framejit.Unsupported) as ei, contextlib.redirect_stdout(io.StringIO()):
        framejit.compile(fn, fullgraph=True, backend="eager")(*args)
    err = str(ei.value)
    first = out.break_reasons[0]
    assert first["message"] in err
    stack = err[err.index("User stack (most recent call last):"):]
    assert f'File "{fn.__code__.co_filename}", line {first["line"]}, in {fn.__name__}' in stack
    # the graph_breaks log
    framejit.reset()
    framejit.set_logs("graph_breaks")
    logger = logging.getLogger("framejit")
    logger.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.DEBUG, logger="framejit"), \
                contextlib.redirect_stdout(io.StringIO()):
            framejit.compile(fn, backend="eager")(*args)
    finally:
        logger.removeHandler(caplog.handler)
        framejit.set_logs()
    # (each line of a log record carries the compile id: "[0/0] ")
    logged = "\n".join(re.sub(r"(?m)^\[[^\]]*\] ", "", r.getMessage()) for r in caplog.records)
    assert b["message"] in logged


def test_fullgraph_user_stack_goes_into_inlined_calls():
    framejit.reset()
    with pytest.raises(framejit.Unsupported) as ei:
        framejit.compile(recursion, fullgraph=True, backend="eager")(X)
    stack = str(ei.value).split("User stack (most recent call last):\n")[1].splitlines()
    assert stack[0].endswith(", in recursion") and stack[1].strip() == "return fact(y, 3)"
    inlined = [i for i, line in enumerate(stack) if line.endswith("in fact (inlined)")]
    assert inlined and "fact(x * n, n - 1)" in stack[inlined[0] + 1]


def _multi_line_call(x):
    y = x * 2
    print("a",
          y.shape,
          file=io.StringIO())
    return y + 1


def test_a_break_spanning_lines_marks_each_of_them():
    """An instruction written over several lines shows each line, dedented
    together, with a caret under its part of the instruction (from the
    call's start on the first line, to its end on the last)."""
    b = next(b for b in _explain(_multi_line_call, (X,)).break_reasons if "print" in b["reason"])
    msg = b["message"].splitlines()
    first = next(i for i, line in enumerate(msg) if 'print("a",' in line)
    assert [ln.rstrip() for ln in msg[first:first + 6]] == [
        '    print("a",',
        "    ^^^^^^^^^^",
        "          y.shape,",
        "          ^^^^^^^^",
        "          file=io.StringIO())",
        "          ^^^^^^^^^^^^^^^^^^^"], msg


def test_carets_of_a_long_instruction_stop_after_a_few_lines():
    lines = ["def f(x):", "    return g(x,"] + [f"             {i}," for i in range(20)] + ["             0)"]
    path = pathlib.Path(__file__).parent / "_long_call_for_carets.py"
    import linecache
    linecache.cache[str(path)] = (0, None, [ln + "\n" for ln in lines], str(path))
    try:
        out = breaks.source_with_caret(str(path), 2, 11, 15, end_line=len(lines))
    finally:
        linecache.cache.pop(str(path), None)
    assert out[0].strip() == "return g(x," and set(out[1].strip()) == {"^"}
    assert "    ..." in out and out[-2].strip() == "0)" and out[-1].strip() == "^^"
    assert len(out) == 2 * (breaks._MAX_LINES + 1) + 1


def test_carets_skip_blank_lines_and_comments_inside_an_instruction():
    lines = ["def f(x):", "    return g(x,", "", "             # why", "\t\t     y)"]
    path = str(pathlib.Path(__file__).parent / "_blank_call_for_carets.py")
    import linecache
    linecache.cache[path] = (0, None, [ln + "\n" for ln in lines], path)
    try:
        out = breaks.source_with_caret(path, 2, 11, 7, end_line=5)
        gone = breaks.source_with_caret(path + ".missing", 2, 11, 7, end_line=5)
    finally:
        linecache.cache.pop(path, None)
    # (no caret under the comment, the blank line left out, dedented by the
    # least indentation: the tabs of the last line go with it)
    assert out == ["    return g(x,", "           ^^^^", "             # why", "       y)", "       ^^"], out
    assert gone == []


def test_every_kind_links_a_section_of_the_doc():
    anchors = _doc_anchors()
    for k in breaks.KINDS:
        assert k.anchor in anchors, k.anchor
    assert {c[2] for c in CASES} == {k.anchor for k in breaks.KINDS}  # each kind tested


def test_every_link_in_a_message_resolves():
    anchors = _doc_anchors()
    for fn, args, kind, _, _ in CASES:
        for b in _explain(fn, args).break_reasons:
            for anchor in re.findall(r"docs/graph-breaks\.md#([\w-]+)", b["message"]):
                assert anchor in anchors, (anchor, b["message"])


def _no_internals(text):
    assert "Var(" not in text and " at 0x" not in text, text
    assert not re.search(r"0x[0-9a-f]{6,}", text), text
    assert not re.search(r"operator \d", text), text


def test_no_message_shows_internal_representations():
    class Opaque:
        pass

    def obj_ops(x, o):
        y = x * 2
        z = o + 1            # operator on an object the tracer does not model
        return y, z

    def obj_branch(x, o):
        y = x * 2
        if o:
            return y
        return y + 1

    cases = [(fn, args) for fn, args, *_ in CASES]
    cases += [(obj_ops, (X, Opaque())), (obj_branch, (X, Opaque()))]
    for fn, args in cases:
        try:
            out = _explain(fn, args)
        except TypeError:   # Opaque() + 1 raises, as in CPython
            out = None
        if out is not None:
            for b in out.break_reasons:
                _no_internals(b["message"])
        for reason in framejit.counters["graph_break"]:
            _no_internals(reason)


def test_operators_are_named_by_symbol():
    class Opaque:
        def __matmul__(self, other):
            return 1

    def f(x, o):
        y = x * 2
        return y + (o @ 3)

    reasons = [b["reason"] for b in _explain(f, (X, Opaque())).break_reasons]
    assert reasons and not any(re.search(r"operator \d", r) for r in reasons), reasons


def test_builtins_by_the_name_the_program_calls():
    def f(x):
        y = x * 2
        with open(os.devnull) as fh:
            fh.read()
        return y + 1

    reasons = [b["reason"] for b in _explain(f, (X,)).break_reasons]
    assert "call of open is not supported" in reasons, reasons


# ------------------------------------------------- every reason maps to a kind

_LIT = r'"(?:[^"\\]|\\.)*"'


def _lits(text):
    return "".join(m[1:-1].encode().decode("unicode_escape") for m in re.findall(_LIT, text))


def _c_templates():
    """The reason templates of the C sources: fj_unsupported's format strings,
    unsupported_obj's before/after and torch's refused methods' reasons."""
    out = set()
    for path in (ROOT / "csrc").rglob("*.c"):
        if "backends" in path.parts:
            continue
        s = re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.S)
        for m in re.finditer(r"\bfj_unsupported\s*\(\s*((?:" + _LIT + r"\s*)+)", s):
            out.add(_lits(m.group(1)))
        for m in re.finditer(r"\bfj_unsupported\s*\([^;\"]*\?\s*((?:" + _LIT + r"\s*)+):\s*((?:"
                             + _LIT + r"\s*)+)", s):
            out.update((_lits(m.group(1)), _lits(m.group(2))))
        for m in re.finditer(r"\bunsupported_obj\s*\(\s*(" + _LIT + r")\s*,[^,]*,\s*(" + _LIT + r")", s):
            out.add(_lits(m.group(1)) + "%R" + _lits(m.group(2)))
        for m in re.finditer(r'\{\s*"\w+"\s*,\s*(' + _LIT + r")\s*\}", s):
            if path.name == "torchlib.c":
                out.add(_lits(m.group(1)))
    return out


@pytest.mark.skipif(not (ROOT / "csrc").is_dir(), reason="needs the C sources")
def test_every_c_reason_template_has_an_explicit_kind():
    templates = _c_templates()
    assert len(templates) > 250
    unmatched = [t for t in templates
                 if not any(f in t for _, fragments in breaks._RULES for f in fragments)]
    assert not unmatched, unmatched


def test_a_source_line_with_a_lone_surrogate_still_gives_the_message():
    """A line put in linecache by the program (an editor, a notebook) may hold a
    lone surrogate: the message has no caret then, and fullgraph=True still
    raises Unsupported (the caret's encode once raised UnicodeEncodeError,
    an internal error: the frame ran uncompiled, a warning and no error)."""
    import linecache
    src = "def f(x):\n    y = x * 2\n    print('mid')\n    return y + 1\n"
    name = "<surrogate source>"
    ns = {"np": np}
    exec(compile(src, name, "exec"), ns)
    lines = src.splitlines(True)
    lines[2] = "    print('m\udc80id')\n"
    linecache.cache[name] = (len(src), None, lines, name)
    try:
        framejit.reset()
        with pytest.raises(framejit.Unsupported) as ei:
            with contextlib.redirect_stdout(io.StringIO()):
                framejit.compile(ns["f"], fullgraph=True, backend="eager")(X)
        assert "call of print is not supported" in str(ei.value)
    finally:
        linecache.cache.pop(name, None)


def _gen_helper(x):
    yield x * 2


def _calls_a_generator(x):
    return sum(_gen_helper(x))


def _prints(x):
    y = np.sin(x)
    print("mid", file=io.StringIO())
    return y + 1


def _no_array_then_unsupported(n):
    return sum(_gen_helper(n))


def _branch_then_print(x):
    if x.sum() > 0:
        x = x * 2
    print("x", file=io.StringIO())
    return x


@pytest.mark.parametrize("fn, args", [
    (_calls_a_generator, (np.ones(3),)),
    (_prints, (np.ones(3),)),
    (_no_array_then_unsupported, (3,)),
    (_branch_then_print, (np.ones(3),)),
], ids=["generator", "print", "no-array", "branch-then-print"])
def test_counters_explain_and_logs_agree(fn, args, logs):
    """Every break the counters count is one explain() lists and one the
    graph_breaks log reports, on every path: a resumed break, a frame that
    runs whole in CPython, and a frame that captured nothing before it broke
    (the no-graph path, which explain() used to leave out)."""
    framejit.set_logs("graph_breaks")
    e = framejit.explain(fn)(*args)
    counted = sum(framejit.counters["graph_break"].values())
    logged = [line for line in logs.lines
              if "Graph break in" in line or "before a graph break" in line]
    assert counted == e.graph_break_count == len(logged), (counted, e.break_reasons, logged)
    # counters["stats"] is never empty for a run whose frames broke
    assert framejit.counters["stats"]["graph_breaks"] == counted
    assert sorted(framejit.counters["graph_break"].elements()) == sorted(b["reason"] for b in e.break_reasons)
    assert all(b["message"].startswith(b["reason"]) for b in e.break_reasons)
