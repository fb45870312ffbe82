"""``python -m framejit run``: run a whole program with every Python frame
offered to framejit.

    python -m framejit run [--summary[=all]] [--backend NAME] SCRIPT [ARGS...]
    python -m framejit run [--summary[=all]] [--backend NAME] -m MODULE [ARGS...]

``--preload=MOD[,MOD...]`` imports modules before the program (a test aid:
with ``--preload=numpy`` every frame of a program that never imports NumPy
is still traced once; tools/cpython_tests.py --all --preload numpy).

The program runs as ``python SCRIPT`` / ``python -m MODULE`` would run it
(runpy: ``__main__``, ``sys.argv``, ``sys.path[0]``), with this thread's
eval-frame callback set to a framejit Compiler for the whole run and
``framejit.config.skip_stdlib`` off, so the stdlib, NumPy and the test
runners are compiled too (framejit's own files and the import bootstrap
excepted: framejit/_hooks.py).  Threads started with ``threading.Thread``
get the same callback (``Thread._bootstrap_inner`` is wrapped); threads made
with ``_thread.start_new_thread`` directly run uncompiled.

Until the program imports NumPy or torch (ARRAY_MODULES) the hook is off
the interpreter: no frame can hold an array before that, and the program
runs (and CPython specializes its calls) exactly as under ``python``.  The
import wakes it; frames entered from then on are offered.

The exit status and output are the program's: ``SystemExit`` passes
through, an uncaught exception prints its traceback (without framejit's
frames) and exits 1.  ``--summary`` prints framejit's counters to stderr
when the program ends: counters["frames"] (offered, skipped, compiled,
broken), counters["stats"] and the break reasons by count, then the
program's own functions ranked by graph breaks, graphs and compile time
(``--summary=all``: the standard library's and site-packages' too).
"""
import os
import runpy
import sys
import threading

# Builtins bound at import: framejit's code runs while the program's frames
# compile, when the program may have patched builtins (len, isinstance, open...).
from builtins import (  # noqa: A004
    BaseException, KeyboardInterrupt, SystemExit, dict, len, list, print, set,
    sorted, sum, type
)

USAGE = ("usage: python -m framejit run [--summary[=all]] [--backend NAME] SCRIPT [ARGS...]\n"
         "       python -m framejit run [--summary[=all]] [--backend NAME] -m MODULE [ARGS...]")

_STAT_ORDER = ("frames_offered", "frames_skipped", "frames_compiled", "frames_no_graph", "frames_broken",
               "frames_not_captured", "unique_graphs", "calls_captured", "graph_breaks", "recompiles",
               "recompile_limit_hit", "internal_errors")


_PRELOAD = []   # --preload: modules imported before the program (a test aid)
#: Until the program imports one of these (or a submodule), no array can
#: exist, so no frame can capture a graph: the hook stays off the interpreter
#: (csrc/runtime/evalframe.c, "Dormant") and the program runs exactly as under python.
ARRAY_MODULES = ("numpy", "torch")


def _parse(argv):
    """(summary, backend, module_or_None, target, args); raises SystemExit(2) on bad usage."""
    summary, backend = False, "eager"
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--summary":
            summary = True
        elif a == "--summary=all":
            summary = "all"
        elif a.startswith("--preload="):
            _PRELOAD.extend(m for m in a.split("=", 1)[1].split(",") if m)
        elif a == "--backend" and i + 1 < len(argv):
            i += 1
            backend = argv[i]
        elif a.startswith("--backend="):
            backend = a.split("=", 1)[1]
        elif a in ("-h", "--help"):
            print(USAGE)
            raise SystemExit(0)
        elif a == "-m":
            if i + 1 >= len(argv):
                break
            return summary, backend, True, argv[i + 1], argv[i + 2:]
        elif a.startswith("-m") and len(a) > 2:
            return summary, backend, True, a[2:], argv[i + 1:]
        elif a.startswith("-") and a != "-":
            print(f"framejit run: unknown option {a!r}\n{USAGE}", file=sys.stderr)
            raise SystemExit(2)
        else:
            return summary, backend, False, a, argv[i + 1:]
        i += 1
    print(USAGE, file=sys.stderr)
    raise SystemExit(2)


def make_compiler(backend="eager"):
    """The Compiler a whole-program run installs (as framejit.compile builds it)."""
    from . import _C, api
    from ._hooks import hooks
    return _C.Compiler(api._resolve_backend(backend), hooks, fullgraph=False, dynamic=None,
                       marked=api._marked)


def _wrap_threads(compiler):
    """Every threading.Thread runs its body with 'compiler' as its callback.
    Returns a function that undoes the patch."""
    from ._C import eval_frame
    orig = threading.Thread._bootstrap_inner

    def _bootstrap_inner(self):
        prev = eval_frame.set_eval_frame(compiler)
        try:
            orig(self)
        finally:
            eval_frame.set_eval_frame(prev)

    threading.Thread._bootstrap_inner = _bootstrap_inner

    def undo():
        threading.Thread._bootstrap_inner = orig
    return undo


def _wrap_tracing():
    """While a trace or profile function is set on a thread (sys.settrace,
    sys.setprofile: debuggers, coverage, profilers, tests of line events),
    framejit is off on that thread: frames run their own code, compiled or
    not, so the tracer sees the program's lines and frames.  The callback
    comes back when both are cleared.  The replacements are C functions
    (framejit._C._tracer_switch), so tracers see no frame of framejit's.
    Returns a function that undoes the patch.  (Tracers set from C with
    PyEval_SetTrace/SetProfile, e.g. cProfile, only stop new compiles:
    csrc/driver/compiler.c.)"""
    from . import _C
    orig_settrace, orig_setprofile = sys.settrace, sys.setprofile
    sys.settrace = _C._tracer_switch(orig_settrace)
    sys.setprofile = _C._tracer_switch(orig_setprofile)

    def undo():
        sys.settrace, sys.setprofile = orig_settrace, orig_setprofile
        _C._tracer_release()
    return undo


def format_summary(counters, dormant=False, functions=None, everything=False):
    """The --summary text for framejit.counters; 'dormant': the program
    never imported an array library (ARRAY_MODULES); 'functions': the run's
    FunctionStats (the per-function ranking; everything: libraries too)."""
    stats = dict(counters.get("stats", {}))
    for k, v in counters.get("frames", {}).items():
        stats["frames_" + k] = v
    lines = ["framejit summary:"]
    if dormant:
        lines.append(f"  no {' or '.join(ARRAY_MODULES)} imported: the hook stayed off "
                     "(every frame ran as under python)")
    for k in _STAT_ORDER:
        lines.append(f"  {k:22s} {stats.get(k, 0)}")
    for k in sorted(set(stats) - set(_STAT_ORDER)):
        lines.append(f"  {k:22s} {stats[k]}")
    breaks = counters.get("graph_break", {})
    lines.append(f"  graph break reasons ({sum(breaks.values())} breaks, "
                 f"{len(breaks)} distinct):")
    for reason, n in sorted(breaks.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"    {n:6d}  {reason}")
    errors = counters.get("internal_error", {})
    if errors:
        lines.append(f"  internal errors ({sum(errors.values())}, {len(errors)} distinct):")
        for reason, n in sorted(errors.items(), key=lambda kv: (-kv[1], kv[0])):
            short = reason if len(reason) <= 300 else reason[:300] + "..."
            lines.append(f"    {n:6d}  {short}")
    if functions is not None:
        from ._hooks import hooks
        lines.extend(functions.format(hooks.is_library, everything))
    return "\n".join(lines)


class FunctionStats:
    """run --summary's figures per function (a function and its resume
    functions share file, first line and name): graphs, breaks (by reason),
    compiles and their time.  Fed by framejit/_hooks.py at compile time."""

    def __init__(self):
        self.by = {}  # (file, first line, name) -> [graphs, breaks, compiles, seconds, {reason: n}]

    def _row(self, code):
        key = (code.co_filename, code.co_firstlineno, code.co_name)
        row = self.by.get(key)
        if row is None:
            row = self.by[key] = [0, 0, 0, 0.0, {}]
        return row

    def graph(self, code, graph):
        if graph is not None:
            self._row(code)[0] += 1

    def broke(self, code, reason):
        row = self._row(code)
        row[1] += 1
        row[4][reason] = row[4].get(reason, 0) + 1

    def compiled(self, code, outcome, seconds):
        if outcome == "skipped":
            return  # (framejit's own files, the import machinery: never compiled)
        row = self._row(code)
        row[2] += 1
        row[3] += seconds

    def format(self, is_library, everything=False, top=25):
        """The ranking's lines: the program's own functions (and with
        'everything' the libraries'), most breaks first, then graphs, then
        compile time."""
        # (functions with a graph or a break: frames that ran as they were are many and say little)
        rows = [(k, v) for k, v in self.by.items() if (v[0] or v[1]) and (everything or not is_library(k[0]))]
        rows.sort(key=lambda kv: (-kv[1][1], -kv[1][0], -kv[1][3], kv[0]))
        whose = "all functions" if everything else "the program's own functions"
        hidden = sum(1 for k, v in self.by.items() if (v[0] or v[1]) and is_library(k[0])) if not everything else 0
        lines = [f"  {whose} by graph breaks, graphs and compile time"
                 + (f" ({hidden} library functions not shown: --summary=all)" if hidden else "") + ":"]
        if not rows:
            lines.append("    (none with a graph or a break)")
            return lines
        lines.append(f"    {'breaks':>6} {'graphs':>6} {'compiles':>8} {'compile ms':>10}  function")
        for (fname, line, name), (graphs, breaks, compiles, seconds, reasons) in rows[:top]:
            lines.append(f"    {breaks:6d} {graphs:6d} {compiles:8d} {seconds * 1e3:10.2f}  "
                         f"{name} ({fname}:{line})")
            if reasons:
                reason, n = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[0]
                more = f" (+{len(reasons) - 1} other reasons)" if len(reasons) > 1 else ""
                short = reason if len(reason) <= 120 else reason[:120] + "..."
                lines.append(f"{'':41}{n} x {short}{more}")
        if len(rows) > top:
            lines.append(f"    ... {len(rows) - top} more")
        return lines


def _print_exception(exc):
    """Prints 'exc' as Python does for an uncaught exception, without the
    frames of framejit.run and runpy at the top of its traceback."""
    tb = exc.__traceback__
    mine = {os.path.realpath(__file__), os.path.realpath(runpy.__file__), "<frozen runpy>"}
    while tb is not None and (tb.tb_frame.f_code.co_filename in mine or
                              os.path.realpath(tb.tb_frame.f_code.co_filename) in mine):
        tb = tb.tb_next
    sys.excepthook(type(exc), exc.with_traceback(tb), tb)


def main(argv):
    """Runs the program described by 'argv' (the words after ``run``)."""
    summary, backend, is_module, target, args = _parse(argv)
    from . import config, api
    from . import _C
    from ._C import eval_frame
    compiler = make_compiler(backend)
    if is_module:
        sys.argv = ["-m"] + list(args)   # runpy sets argv[0] to the module's file
        sys.path[0] = os.getcwd()
    else:
        sys.argv = [target] + list(args)
        sys.path[0] = os.path.dirname(os.path.realpath(target))
    for mod in _PRELOAD:
        # --preload=numpy: NumPy is loaded before the program, so every frame
        # is traced once (a test of the tracer on code that captures nothing)
        __import__(mod)
    config.skip_stdlib = False
    config.transparent = True  # no new globals, original names in tracebacks
    config.warn_internal_errors = False
    config.warn_recompile_limit = False
    functions = None
    if summary:
        from ._hooks import hooks
        functions = hooks.summary = FunctionStats()
        _C._config_changed()  # (the compile driver reads hooks.trace: it times compiles now)
    undo_threads = _wrap_threads(compiler)
    prev = eval_frame.set_eval_frame(compiler)
    _C._sleep_until_import(compiler, ARRAY_MODULES)
    undo_tracing = _wrap_tracing()
    status = 0
    dormant = False
    try:
        try:
            # the interpreter's __main__ starts with an empty __annotations__
            init = {"__annotations__": {}}
            if is_module:
                runpy.run_module(target, init_globals=init, run_name="__main__",
                                 alter_sys=True)
            else:
                runpy.run_path(target, init_globals=init, run_name="__main__")
        finally:
            undo_tracing()
            dormant = _C._dormant()
            _C._wake()
            eval_frame.set_eval_frame(prev)
            undo_threads()
    except SystemExit:
        if summary:
            sys.stdout.flush()
            print(format_summary(api.counters, dormant, functions, summary == "all"), file=sys.stderr)
        raise
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: B902 - an uncaught exception, as Python reports it
        _print_exception(exc)
        status = 1
    if summary:
        sys.stdout.flush()
        print(format_summary(api.counters, dormant, functions, summary == "all"), file=sys.stderr)
    return status
