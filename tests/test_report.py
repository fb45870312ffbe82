"""The structured trace (FRAMEJIT_TRACE_DIR, framejit/tracefile.py) and its
HTML report (python -m framejit report, framejit/report.py).

Each test runs a small program in a subprocess with the trace on, reads the
JSON lines back and checks what they say against what the program did;
the report tests render those traces and look for what the page must show,
in a headless Chromium when one is installed.  Nothing here asserts on a
time."""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import textwrap

import pytest

import framejit
from framejit import report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")


def _env(trace_dir, **extra):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               FRAMEJIT_TRACE_DIR=str(trace_dir))
    env.update(extra)
    return env


def run_traced(tmp_path, script=None, path=None, args=(), **env):
    """Runs 'script' (source text) or the file 'path' with the trace on in
    tmp_path/trace; returns (completed process, trace dir)."""
    trace = tmp_path / "trace"
    if path is None:
        path = tmp_path / "prog.py"
        path.write_text(textwrap.dedent(script))
    r = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True,
                       cwd=str(tmp_path), env=_env(trace, **env), timeout=300)
    return r, trace


def records(trace):
    """The records of every trace file in 'trace', by file (sorted by name)."""
    out = []
    for name in sorted(os.listdir(trace)):
        with open(os.path.join(trace, name)) as f:
            out.append([json.loads(line) for line in f])
    return out


def only(trace):
    files = records(trace)
    assert len(files) == 1, [len(f) for f in files]
    return files[0]


def kind(recs, k, **where):
    return [r for r in recs if r["kind"] == k and all(r.get(a) == v for a, v in where.items())]


def line_of(path, text):
    """The line number of the first line of 'path' that contains 'text'."""
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if text in line:
                return i
    raise AssertionError(f"{text!r} not in {path}")


DEMO_LIKE = """
    import numpy as np
    import framejit

    def f(x):
        y = np.sin(x)
        return y * 2 + 1

    cf = framejit.compile(f, backend="eager")
    x = np.linspace(0.0, 1.0, 5)
    assert np.array_equal(cf(x), np.sin(x) * 2 + 1)
    cf(x)                                  # a cache hit: no record
    print("ok")
"""


def test_demo_like_function(tmp_path):
    r, trace = run_traced(tmp_path, DEMO_LIKE)
    assert r.returncode == 0 and r.stdout == "ok\n", r.stderr
    recs = only(trace)
    assert recs[0]["kind"] == "process" and recs[0]["pid"] > 0 and recs[0]["schema"] == 1
    assert os.listdir(trace) == [f"framejit_trace.{recs[0]['pid']}.jsonl"]
    frames = kind(recs, "frame", name="f")
    assert len(frames) == 1  # the second call was a hit: the compile path only
    fr = frames[0]
    assert fr["compile_id"] == "0/0" and fr["outcome"] == "compiled"
    assert fr["file"] == str(tmp_path / "prog.py") and fr["line"] == 5 and fr["last_line"] == 7
    assert set(fr["phases"]) == {"trace", "backend", "other"} and fr["attempts"] == 1
    assert all(v >= 0 for v in fr["phases"].values()) and fr["seconds"] >= 0
    (g,) = kind(recs, "graph", compile_id="0/0")
    assert [(n["op"], n["target"]) for n in g["nodes"]] == [
        ("placeholder", "l_x_"), ("call_function", "numpy.sin"),
        ("call_function", "_operator.mul"), ("call_function", "_operator.add"),
        ("output", "None")]
    assert g["nodes"][1]["args"] == [{"node": "l_x_"}]
    assert g["nodes"][2]["meta"]["shape"] == [5] and "float64" in g["nodes"][2]["meta"]["dtype"]
    assert "numpy.sin(l_x_)" in g["code"] and g["num_calls"] == 3
    (gd,) = kind(recs, "guards", compile_id="0/0")
    x = [c for c in gd["tree"]["children"] if c["source"] == "L['x']"]
    assert x and any(leaf.startswith("TENSOR_MATCH") and "size=[5]" in leaf
                     for leaf in x[0]["leaves"])
    assert "TENSOR_MATCH" in gd["text"]
    assert recs[-1]["kind"] == "counters"
    assert recs[-1]["counters"]["stats"]["unique_graphs"] == 1
    ts = [r["t"] for r in recs]
    assert ts == sorted(ts)


def test_breaks_recompiles_and_the_report(tmp_path):
    src = os.path.join(EXAMPLES, "breaks.py")
    r, trace = run_traced(tmp_path, path=src)
    assert r.returncode == 0, r.stderr
    recs = only(trace)
    breaks = kind(recs, "break")
    by_name = {}
    for b in breaks:
        by_name.setdefault(b["name"], []).append(b)
    # print(): the break's reason, line, source line and the user stack
    step = by_name["log_step"][0]
    print_line = line_of(src, 'print("step: mean"')
    assert step["break_line"] == print_line and step["resumed"]
    assert step["source"].startswith('print("step: mean"')
    assert "data-dependent" in step["reason"]  # float() of an array value comes first
    assert any("print" in b["reason"] and b["break_line"] == print_line
               for b in by_name["resume_in_log_step_at_%d" % print_line])
    assert step["stack"][-1] == {"file": src, "line": print_line, "name": "log_step"}
    assert step["stack"][-2]["name"] == "main"
    # a branch on an array's value
    clip = by_name["clip_positive"][0]
    assert clip["break_line"] == line_of(src, "if s > 10.0:") and "branch" in clip["reason"]
    # each break's kind, its docs section and the message the logs show (framejit/breaks.py)
    assert step["break_kind"] == "data-dependent value" and clip["break_kind"] == "data-dependent branch"
    assert clip["doc"] == "docs/graph-breaks.md#data-dependent-branch"
    assert clip["reason"] in clip["message"] and "np.where" in clip["message"] and "if s > 10.0:" in clip["message"]
    # an unsupported call
    assert any("repr" in b["reason"] and b["break_line"] == line_of(src, "len(repr(y.shape))")
               for b in by_name["with_unsupported"])
    # a break inside an inlined helper: at the call in pipeline, then in helper itself
    assert by_name["pipeline"][0]["break_line"] == line_of(src, "b = helper(a)")
    # its stack goes on into the inlined helper, down to the line that broke
    assert by_name["pipeline"][0]["stack"][-2:] == [
        {"file": src, "line": line_of(src, "b = helper(a)"), "name": "pipeline"},
        {"file": src, "line": line_of(src, 'print("helper sees"'), "name": "helper", "inlined": True}]
    assert by_name["helper"][0]["break_line"] == line_of(src, 'print("helper sees"')
    # recompiles: the failed guard of each entry tried
    rec = kind(recs, "recompile", name="log_step")
    assert [f["guard"] for f in rec[0]["failures"]] == [
        "L['x']: dtype mismatch. expected float64, actual float32"]
    assert rec[0]["compile_id"] == "0/1" and rec[0]["failures"][0]["compile_id"] == "0/0_1"
    assert any("size mismatch" in f["guard"] for f in rec[1]["failures"])
    stats = recs[-1]["counters"]["stats"]
    assert stats["recompiles"] == len(kind(recs, "recompile")) > 0
    # every compile ends in one frame record
    compiled = [f for f in kind(recs, "frame") if f["compile_id"] is not None]
    assert {f["outcome"] for f in compiled} == {"compiled"}
    assert len(compiled) == recs[-1]["counters"]["frames"]["compiled"]
    assert len(kind(recs, "graph")) == stats["unique_graphs"]

    out = tmp_path / "breaks.html"
    page = render_cli(trace, out)
    assert 'id="index"' in page and 'id="timeline-svg"' in page
    for name in ("log_step", "clip_positive", "with_unsupported", "pipeline", "helper"):
        assert f">{name}</a>" in page
    # the break line marked in the source, its reason under it, escaped
    row = re.search(r'<tr class="brk" id="[^"]*" title="([^"]*)"><td class="ln">%d</td>'
                    % print_line, page)
    assert row and "print" in row.group(1)
    assert "print(&quot;step: mean&quot;" in page
    assert 'class="cap"' in page and 'class="graph-table"' in page
    assert "L[&#x27;x&#x27;]: dtype mismatch. expected float64, actual float32" in page
    assert 'class="guards"' in page and "TENSOR_MATCH" in page


NODE_LINES = """
    import numpy as np
    import framejit

    def helper(z):
        return z * 3

    def deco(fn):
        return fn

    @deco
    def f(x, n):
        y = np.sin(x)
        k = n + 1
        z = helper(y)
        # a comment

        w = np.add(z,
                   k)
        return w

    cf = framejit.compile(f, backend="eager")
    assert np.array_equal(cf(np.ones(3), 2), np.sin(np.ones(3)) * 3 + 3)
"""


def test_graph_nodes_carry_their_source_lines(tmp_path):
    """Each call node records the lines of the instruction that made it (an
    inlined call's for the operations inside it); the report marks those
    lines captured, the other lines with code as traced without a graph
    operation (k = n + 1 is folded: n is a guarded constant), and neither
    the decorator, the def, a comment nor a blank line."""
    r, trace = run_traced(tmp_path, NODE_LINES)
    assert r.returncode == 0, r.stderr
    prog = str(tmp_path / "prog.py")
    (g,) = kind(only(trace), "graph", name="f")
    calls = [(n["target"], n["line"]) for n in g["nodes"] if n["op"].startswith("call")]
    assert calls == [("numpy.sin", line_of(prog, "np.sin(x)")),
                     ("_operator.mul", line_of(prog, "helper(y)")),
                     ("numpy.add", line_of(prog, "np.add(z,"))], calls
    assert g["nodes"][-2]["end_line"] == line_of(prog, "np.add(z,") + 1
    assert all("line" not in n for n in g["nodes"] if not n["op"].startswith("call"))
    page = render_cli(trace, tmp_path / "r.html")

    def row(text):
        m = re.search(r'<tr class="(\w*)" id="[^"]*" title="[^"]*"><td class="ln">%d</td>'
                      % line_of(prog, text), page)
        assert m, text
        return m.group(1)
    assert [row(t) for t in ("@deco", "def f(x, n)", "np.sin(x)", "k = n + 1", "helper(y)", "# a comment",
                             "np.add(z,", "           k)", "return w")] == [
        "", "", "cap", "nog", "cap", "", "cap", "cap", "nog"]


def _node_lines(graph, code):
    lines = {s: ln for a, b, ln in code.co_lines() for s in range(a, b)}
    return [(n.name, lines.get(n.offset)) for n in graph.nodes if n.op.startswith("call")]


def _looping(x, n):
    y = x + 1
    for i in range(n):
        y = y * 2
        y = y - x
    return y


def test_a_captured_loop_node_comes_from_the_loop_line():
    """A loop captured whole is one node, at the line of its for (not the
    line the trace of its body ended on)."""
    import numpy as np
    from framejit._hooks import hooks
    framejit.reset()
    events = []
    hooks.recorders.append(events)
    try:
        cf = framejit.compile(_looping, backend="eager")
        cf(np.ones(3), 3)
        cf(np.ones(3), 40)      # n changed: dynamic, the loop captured as one node
    finally:
        hooks.recorders.remove(events)
    g = [ev[4] for ev in events if ev[0] == "compile"][-1]
    first = _looping.__code__.co_firstlineno
    got = _node_lines(g, _looping.__code__)
    assert ("add", first + 1) in got and ("loop", first + 2) in got, got


def test_node_positions_are_per_thread():
    """Another thread's trace, run while this one's is under way (a log
    handler here starts it), neither takes nor clears this trace's place."""
    import logging
    import threading
    import numpy as np
    other = framejit.compile(lambda x: x - 1, backend="eager")

    class StartsAnotherTrace(logging.Filter):
        done = False

        def filter(self, rec):
            if "BINARY_OP" in rec.getMessage() and not StartsAnotherTrace.done:
                StartsAnotherTrace.done = True
                t = threading.Thread(target=other, args=(np.ones(2),))
                t.start()
                t.join()
            return False

    def f(x):
        y = x * 2
        return y + 1
    framejit.reset()
    flt = StartsAnotherTrace()
    logging.getLogger("framejit.trace_bytecode").addFilter(flt)
    try:
        framejit.set_logs("trace_bytecode")
        e = framejit.explain(f)(np.ones(3))
    finally:
        framejit.set_logs()
        logging.getLogger("framejit.trace_bytecode").removeFilter(flt)
    assert StartsAnotherTrace.done
    (_, _, g), = [gr for gr in e.graphs if gr[1] == "f"]
    first = f.__code__.co_firstlineno
    assert _node_lines(g, f.__code__) == [("mul", first + 1), ("add", first + 2)]


def render_cli(trace, out):
    r = subprocess.run([sys.executable, "-m", "framejit", "report", str(trace), "-o", str(out)],
                       capture_output=True, text=True, env=_env(""), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(out)
    return out.read_text()


def test_recompile_on_shape_and_dtype(tmp_path):
    r, trace = run_traced(tmp_path, """
        import numpy as np
        import framejit

        def f(x):
            return np.exp(x) - 1

        cf = framejit.compile(f, backend="eager")
        cf(np.ones(4))
        cf(np.ones(6))
        cf(np.ones(6, np.float32))
    """)
    assert r.returncode == 0, r.stderr
    recs = only(trace)
    rec = kind(recs, "recompile")
    assert [r["compile_id"] for r in rec] == ["0/1", "0/2"]
    assert rec[0]["failures"] == [{"compile_id": "0/0", "guard":
                                   "L['x']: size mismatch at index 0. expected 4, actual 6"}]
    assert [f["compile_id"] for f in rec[1]["failures"]] == ["0/1", "0/0"]
    assert "dtype mismatch. expected float64, actual float32" in rec[1]["failures"][0]["guard"]
    assert [f["compile_id"] for f in kind(recs, "frame", name="f")] == ["0/0", "0/1", "0/2"]


def test_no_graph_and_skipped_frames(tmp_path):
    r, trace = run_traced(tmp_path, """
        import json
        import numpy as np
        import framejit

        def plain(n):
            return sum(range(n))

        def g(x):
            return json.dumps([1, 2]) + str(plain(3))

        print(framejit.compile(g, backend="eager")(np.ones(2)))
    """)
    assert r.returncode == 0 and r.stdout == "[1, 2]3\n", r.stderr
    recs = only(trace)
    (ng,) = kind(recs, "no_graph", name="plain")  # no array in sight: it runs its own code
    assert ng["arrays"] is False and "sum" in ng["reason"] and ng["compile_id"] == "2/0"
    assert kind(recs, "frame", name="plain")[0]["outcome"] == "unless_arrays"
    skipped = kind(recs, "frame", name="dumps")
    assert skipped and skipped[0]["outcome"] == "skipped" and skipped[0]["compile_id"] is None


def test_config_option_in_process(tmp_path):
    import numpy as np
    assert framejit.config.trace_dir is None
    from framejit._hooks import hooks
    assert hooks.trace == 0
    framejit.reset()
    try:
        framejit.config.trace_dir = str(tmp_path)
        assert hooks.trace == 1
        cf = framejit.compile(lambda a: a * 3, backend="eager")
        assert np.array_equal(cf(np.ones(2)), np.full(2, 3.0))
        framejit.reset()
    finally:
        framejit.config.trace_dir = None
        framejit.reset()
    (recs,) = records(tmp_path)
    assert [r["kind"] for r in recs] == ["process", "guards", "graph", "frame", "reset"]
    assert recs[0]["pid"] == os.getpid()
    assert recs[3]["name"] == "<lambda>" and recs[3]["outcome"] == "compiled"


def test_compiles_on_two_threads_keep_their_own_bookkeeping(tmp_path):
    """What a compile did (its native counters, whether its guards were
    written) is kept per thread and per nested compile: thread B's compile,
    under way while thread A's is, is not counted in A's frame record, nor
    a nested compile's in the one around it."""
    import threading
    from framejit import native, tracefile
    code_a, code_b = (lambda: 1).__code__, (lambda: 2).__code__
    framejit.reset()
    try:
        framejit.config.trace_dir = str(tmp_path)
        a_started, b_done = threading.Event(), threading.Event()

        def thread_a():
            tracefile.start()
            a_started.set()
            b_done.wait(10)
            tracefile.done(code_a, "0/0", "own_code", None, 0.001, 0.0, 0.0, 1)

        def thread_b():
            a_started.wait(10)
            tracefile.start()
            native._count("graphs", 2)  # B's compile planned two graphs
            tracefile.start()                  # nested in B (run mode: json's frames)
            native._count("groups")
            tracefile.done(code_b, "1/1", "own_code", None, 0.001, 0.0, 0.0, 1)
            tracefile.done(code_b, "1/0", "own_code", None, 0.001, 0.0, 0.0, 1)
            b_done.set()
        ts = [threading.Thread(target=thread_a), threading.Thread(target=thread_b)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(20)
    finally:
        framejit.config.trace_dir = None
        framejit.reset()
    (recs,) = records(tmp_path)
    seen = {r["compile_id"]: r["native"] for r in kind(recs, "frame")}
    assert seen == {"1/1": {"groups": 1}, "1/0": {"graphs": 2}, "0/0": {}}, seen


def test_write_failure_is_one_warning(tmp_path):
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("")
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(DEMO_LIKE)], capture_output=True,
                       text=True, env=_env(blocker / "sub"), timeout=120)
    assert r.returncode == 0 and r.stdout == "ok\n", r.stderr
    assert r.stderr.count("framejit: cannot write the trace to") == 1
    assert "Traceback" not in r.stderr


def test_crash_leaves_a_readable_trace(tmp_path):
    r, trace = run_traced(tmp_path, """
        import os
        import numpy as np
        import framejit

        def f(x):
            return x + 1

        framejit.compile(f, backend="eager")(np.ones(3))
        os._exit(3)                      # no atexit, no flush: the records are written already
    """)
    assert r.returncode == 3
    recs = only(trace)
    assert kind(recs, "frame", name="f") and not kind(recs, "counters")
    page = report.render(report.load(str(trace)), "t")
    assert "none recorded" in page


def test_forked_child_writes_its_own_file(tmp_path):
    if not hasattr(os, "fork"):
        pytest.skip("no os.fork here")
    r, trace = run_traced(tmp_path, """
        import os
        import numpy as np
        import framejit

        def f(x):
            return x * 2

        def g(x):
            return x - 2

        cf, cg = framejit.compile(f, backend="eager"), framejit.compile(g, backend="eager")
        cf(np.ones(3))
        pid = os.fork()
        if pid == 0:
            cg(np.ones(3))
            os._exit(0)
        os.waitpid(pid, 0)
        print(pid)
    """)
    assert r.returncode == 0, r.stderr
    child = int(r.stdout)
    files = {f[0]["pid"]: f for f in records(trace)}
    assert len(files) == 2 and child in files
    kid = files[child]
    parent = next(f for p, f in files.items() if p != child)
    assert kid[0]["forked_from"] == parent[0]["pid"]
    assert kind(kid, "frame", name="g") and not kind(kid, "frame", name="f")
    assert kind(parent, "frame", name="f") and not kind(parent, "frame", name="g")


def test_untrusted_text_is_escaped(tmp_path):
    r, trace = run_traced(tmp_path, """
        import numpy as np
        import framejit

        def f(x):
            y = x + 1
            print("<script>alert('x')</script>")  # <b>bold</b>
            return y

        framejit.compile(f, backend="eager")(np.ones(2))
    """)
    assert r.returncode == 0, r.stderr
    page = report.render(report.load(str(trace)), "<title>")
    assert "<script>alert" not in page and "<b>bold" not in page and "<title><" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page


def test_missing_source_file(tmp_path):
    r, trace = run_traced(tmp_path, DEMO_LIKE)
    assert r.returncode == 0, r.stderr
    os.unlink(tmp_path / "prog.py")
    import linecache
    linecache.checkcache()
    page = report.render(report.load(str(trace)), "t")
    assert "Source not available" in page and "numpy.sin" in page


def _report_cli(*args):
    return subprocess.run([sys.executable, "-m", "framejit", "report", *map(str, args)],
                          capture_output=True, text=True, env=_env(""), timeout=120)


def test_bad_input_is_one_clear_message(tmp_path):
    r = _report_cli(tmp_path / "nope")
    assert r.returncode == 1 and "nope: no such file or directory" in r.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    r = _report_cli(empty)
    assert r.returncode == 1 and "no framejit_trace.<pid>.jsonl files" in r.stderr
    bad = tmp_path / "bad"
    bad.mkdir()
    f = bad / "framejit_trace.1.jsonl"
    f.write_text('{"kind": "process", "schema": 1, "pid": 1}\nnot json\n{"kind": "frame"}\n')
    r = _report_cli(bad)
    assert r.returncode == 1 and f"{f}:2: not a JSON line" in r.stderr
    f.write_text('{"kind": "process", "schema": 1, "pid": 1}\n[1, 2]\n')
    r = _report_cli(bad)
    assert r.returncode == 1 and f"{f}:2: not a framejit trace record" in r.stderr
    f.write_text('{"kind": "frame"}\n')
    r = _report_cli(bad)
    assert r.returncode == 1 and "not 'process'" in r.stderr
    f.write_text('{"kind": "process", "schema": 99, "pid": 1}\n')
    r = _report_cli(bad)
    assert r.returncode == 1 and "schema 99" in r.stderr
    f.write_text("")
    r = _report_cli(bad)
    assert r.returncode == 1 and "empty trace file" in r.stderr
    # a last line cut short (a process killed while writing it) is a note
    f.write_text('{"kind": "process", "schema": 1, "pid": 1}\n{"kind": "fra')
    r = _report_cli(bad, "-o", tmp_path / "out.html")
    assert r.returncode == 0 and "incomplete" in r.stderr
    assert "incomplete" in (tmp_path / "out.html").read_text()
    r = _report_cli(bad, "-o", tmp_path / "no" / "such" / "dir.html")
    assert r.returncode == 1 and "cannot write the report" in r.stderr
    r = _report_cli()
    assert r.returncode == 2 and "usage: python -m framejit report" in r.stderr
    for r in [_report_cli(tmp_path / "nope"), _report_cli(empty)]:
        assert "Traceback" not in r.stderr
    # records whose fields are of the wrong types (edited by hand): one line, no traceback
    for rec in ('{"kind": "frame", "compile_id": "0/0", "name": "f", "file": "x.py", "line": 1.5, '
                '"outcome": "compiled", "seconds": 0.1}',
                '{"kind": "break", "compile_id": "0/0", "name": "f", "file": "x.py", "line": 1, '
                '"break_line": 1, "reason": "r", "stack": {"a": 1}}'):
        f.write_text('{"kind": "process", "schema": 1, "pid": 1}\n' + rec + "\n")
        r = _report_cli(bad, "-o", tmp_path / "out2.html")
        assert "Traceback" not in r.stderr, r.stderr
        assert r.returncode == 0 or (r.returncode == 1 and "fields are not what framejit's trace writes"
                                     in r.stderr), r.stderr
    f.write_text('{"kind": "process", "schema": 1, "pid": 1}\n'
                 '{"kind": "frame", "compile_id": "0/0", "name": "f", "co_name": "f", "file": "x.py", '
                 '"line": 1, "last_line": 2, "outcome": "compiled", "seconds": 0.1, "phases": {}}\n'
                 '{"kind": "break", "compile_id": "0/0", "name": "f", "co_name": "f", "file": "x.py", '
                 '"line": 1, "break_line": 1, "reason": "r", "stack": ["a"]}\n')
    r = _report_cli(bad, "-o", tmp_path / "out3.html")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert f"{f}: a record's fields are not what framejit's trace writes (AttributeError" in r.stderr


def test_torch_model(tmp_path):
    pytest.importorskip("torch", reason="torch is not installed: the torch model's trace needs it")
    src = os.path.join(EXAMPLES, "torch_model.py")
    r, trace = run_traced(tmp_path, path=src, args=("aot_eager",))
    assert r.returncode == 0, r.stderr
    recs = only(trace)
    graphs = kind(recs, "graph", name="forward")
    assert graphs, [r["kind"] for r in recs]
    nodes = graphs[0]["nodes"]
    assert any(n["target"] == "torch._C._nn.linear" for n in nodes)
    assert any(n["target"] == "torch.relu" for n in nodes)
    x = nodes[0]
    assert x["op"] == "placeholder" and x["meta"]["kind"] == "tensor"
    assert x["meta"]["shape"] == [8, 16] and x["meta"]["dtype"] == "torch.float32"
    brk = kind(recs, "break", name="forward")[0]
    assert brk["break_line"] == line_of(src, 'print("hidden"') and "print" in brk["reason"]
    branch = [b for b in kind(recs, "break") if b["break_line"] == line_of(src, "if out.sum() > 0")]
    assert branch and "branch" in branch[0]["reason"]
    rec = kind(recs, "recompile", name="forward")
    assert rec and "size mismatch at index 0. expected 8, actual 3" in rec[0]["failures"][0]["guard"]
    fr = [f for f in kind(recs, "frame", name="forward") if f["outcome"] == "compiled"]
    assert fr and all(f["phases"]["backend"] > 0 for f in fr)  # aot_eager ran (not a time bound)
    page = render_cli(trace, tmp_path / "torch.html")
    assert "torch._C._nn.linear" in page and ">forward</a>" in page
    assert "size mismatch at index 0. expected 8, actual 3" in page


# ------------------------------------------------------------- in a browser

def _browser():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", head[16:24])


def test_report_in_headless_chromium(tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("no Chromium found (chromium, chromium-browser, google-chrome): the browser "
                    "test needs one (Debian: apt-get install chromium)")
    src = os.path.join(EXAMPLES, "breaks.py")
    r, trace = run_traced(tmp_path, path=src)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "report.html"
    render_cli(trace, out)
    flags = ["--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
             f"--user-data-dir={tmp_path / 'profile'}"]
    # the browser without the sanitizer build's preloads (make test-asan: libasan
    # preloaded into Chromium made it hang past the timeout)
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS", "PYTHONMALLOC")}
    dom = subprocess.run([browser, *flags, "--dump-dom", out.as_uri()], capture_output=True,
                         text=True, timeout=120, env=env)
    assert dom.returncode == 0, dom.stderr[-2000:]
    page = dom.stdout
    # what the browser built from the page: every section, the index's rows, the marks
    for needle in ('id="processes"', 'id="timeline-svg"', 'id="index"', 'class="fn"',
                   'class="graph-table"', 'class="graph-code"', 'class="guards"',
                   'class="recompile"', 'class="brk"', 'class="cap"', 'id="counters"'):
        assert needle in page, needle
    assert len(re.findall(r'<rect class="span"', page)) == len(
        [f for f in kind(only(trace), "frame") if f["compile_id"] is not None])
    assert "call of print is not supported" in page
    shot = tmp_path / "shot.png"
    s = subprocess.run([browser, *flags, f"--screenshot={shot}", "--window-size=1200,900",
                        out.as_uri()], capture_output=True, text=True, timeout=120, env=env)
    assert s.returncode == 0 and shot.exists(), s.stderr[-2000:]
    assert _png_size(shot) == (1200, 900)
    assert shot.stat().st_size > 20_000  # a rendered page, not a blank one


def test_a_graph_raising_at_run_time_with_the_trace_on(tmp_path):
    """The graph_raised hook runs at call time, where the frames json.dumps and
    the trace's own functions run are offered to the compiler: their records,
    made while the first was being written, waited for the writer's lock this
    thread held, for good (found by the fuzzer with the trace on).  They are
    dropped now; the program ends and its graph_raised record is there."""
    r, trace = run_traced(tmp_path, """
        import numpy as np, framejit

        @framejit.compile(backend="eager")
        def f(x):
            return np.log(x) * 2.0

        with np.errstate(divide="raise"):
            f(np.array([1.0, 2.0]))
            try:
                f(np.array([0.0, 2.0]))
            except FloatingPointError:
                print("raised")
    """)
    assert r.returncode == 0 and r.stdout.strip() == "raised", r.stderr
    recs = only(trace)
    (raised,) = kind(recs, "graph_raised")
    assert raised["name"] == "f"
