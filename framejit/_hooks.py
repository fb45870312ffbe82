"""What the C compiler calls back into Python for: logging, dis listings,
counters, skip rules and the user-facing exceptions.  Only the compile path
comes here; nothing on a warm call does."""
import os
import sys
import sysconfig
import traceback
import warnings

# Everything is imported here, never inside a hook: the program may have
# replaced builtins.__import__ (unittest.mock.patch('builtins.__import__'),
# test_unittest's discovery tests) while its frames compile.
from . import _C, breaks, config, logs, tracefile
from .api import counters
from .exc import BackendCompilerFailed, FramejitError, Unsupported

# Builtins bound at import: framejit's code runs while the program's frames
# compile, when the program may have patched builtins (len, isinstance, open...).
from builtins import (  # noqa: A004
    RuntimeWarning, any, bool, frozenset, getattr, id, int, property, repr, set,
    sorted, tuple, type
)


# What the skip rules use, bound at import: realpath is C (os.path.realpath
# is Python that calls builtins, and programs patch it); the paths that never
# change are computed here, so a compile runs no sysconfig code.
_realpath = _C.realpath
_SEP = os.sep
_modules = sys.modules
_ModuleType = type(sys)


def _dir_of(path):
    """The directory of 'path' with a trailing separator, by str methods only."""
    return path.rpartition(_SEP)[0] + _SEP


_PATHS = sysconfig.get_paths()
_STDLIB_DIRS = frozenset(_realpath(_PATHS[k]) + _SEP for k in ("stdlib", "platstdlib")
                         if _PATHS.get(k))
# site-packages of the stdlib tree is not stdlib: keep user packages compilable
_SITE_DIRS = tuple(sorted({_realpath(_PATHS[k]) + _SEP for k in ("purelib", "platlib")
                           if _PATHS.get(k)}))


_SKIPPED_LIBS = ("numpy", "_pytest", "pytest", "pluggy", "hypothesis", "torch")
# the globals a named tuple's __new__ reads (collections.namedtuple evals it from "<string>")
_NAMEDTUPLE_NEW_NAMES = ("_tuple_new",)


def _skip_prefixes():
    """(skip dirs, site dirs).  Called on the first compile (the test runners
    may be imported after framejit), and again when one of _SKIPPED_LIBS was
    imported since; uses only what was bound at import."""
    dirs = set(_STDLIB_DIRS)
    dirs.add(_HERE)
    for mod in _SKIPPED_LIBS:
        m = _modules.get(mod)
        f = getattr(m, "__file__", None) if m else None
        if type(f) is str:
            dirs.add(_dir_of(f))  # as the module's code objects spell it
            dirs.add(_dir_of(_realpath(f)))
    return tuple(sorted(dirs)), _SITE_DIRS


_HERE = os.path.dirname(_realpath(__file__)) + os.sep
# not the program's own code (run --summary): framejit, the stdlib, site-packages
_LIBRARY_DIRS = (_HERE,) + tuple(sorted(_STDLIB_DIRS)) + _SITE_DIRS
_RUN_MODE_SKIP_FROZEN = frozenset({"<frozen importlib._bootstrap>",
                                   "<frozen importlib._bootstrap_external>",
                                   "<frozen zipimport>"})


def _name(code):
    """The name logs and messages give 'code': resume code is
    resume_in_<function>_at_<line> (its own co_name is the original's, for
    tracebacks and introspection)."""
    return _C._resume_log_name(code) or code.co_name


class Hooks:
    """The object a framejit._C.Compiler holds as its 'hooks'."""

    def __init__(self):
        self._skip = None
        self._skip_cache = {}
        self._skip_libs = 0  # how many of _SKIPPED_LIBS were imported when _skip was made
        self.recorders = []          # explain() sessions: lists that receive events
        self._limit_warned = set()   # code objects warned about the recompile limit
        self.summary = None          # run --summary's per-function figures (run.FunctionStats)

    #: errors of this type raised while compiling reach the user; others are internal
    user_error_type = FramejitError

    @property
    def transparent(self):
        return bool(config.transparent)

    @property
    def recompile_limit(self):
        return int(config.recompile_limit)

    @property
    def trace(self):
        """1 while the structured trace is on (config.trace_dir) or run
        --summary counts compile time: the C compile driver then times each
        compile and calls trace_start / trace_done."""
        return 1 if tracefile.active() or self.summary is not None else 0

    def trace_start(self):
        if config.trace_dir:
            tracefile.record(tracefile.start)

    def trace_done(self, code, compile_id, outcome, guards, seconds, trace_seconds,
                   backend_seconds, attempts):
        """A frame's compile ended (only while the trace is on): 'outcome' says
        what the frame runs now (docs/report.md), the times are in seconds."""
        if self.summary is not None:
            self.summary.compiled(code, outcome, seconds)
        if config.trace_dir:
            tracefile.record(tracefile.done, code, compile_id, outcome, guards, seconds,
                             trace_seconds, backend_seconds, attempts)

    def _record(self, event):
        for r in self.recorders:
            r.append(event)

    def on_compile(self, code, compile_id, guards, graph, traced=None):
        """Every successful compile (explain() listens here): 'code' the
        rewritten code, 'traced' the code traced (its offsets are the graph
        nodes' 'offset')."""
        counters["frames"]["compiled"] += 1
        if self.summary is not None:
            self.summary.graph(code, graph)
        if config.trace_dir:
            tracefile.record(tracefile.compiled, code, compile_id, guards, graph, traced)
        if self.recorders:
            self._record(("compile", code, compile_id, guards.format(), graph))

    def no_graph(self, code, compile_id, arrays, reason, detail=None):
        """The trace captured no graph operation (before its graph break for
        'reason', if not None; 'detail' its (key, trace stack)): the frame runs
        its own code, unguarded and offered again only when an input is an
        array if 'arrays' is false.  A reason counts as a break, in the
        counters and in explain() (the frame ran whole in CPython)."""
        counters["frames"]["no_graph"] += 1
        if reason is not None:
            counters["graph_break"][reason] += 1
            counters["stats"]["graph_breaks"] += 1
            if self.summary is not None:
                self.summary.broke(code, reason)
        if config.trace_dir:
            tracefile.record(tracefile.no_graph, code, compile_id, arrays, reason)
        if self.recorders:
            self._record(("no_graph", code, compile_id, bool(arrays), reason))
            if reason is not None:
                stack = detail[1] if isinstance(detail, tuple) and len(detail) == 2 else ()
                top = stack[-1] if stack else None
                line = top[1] if top is not None and top[0] is code and top[1] > 0 else code.co_firstlineno
                self._record(("break", code, compile_id, reason, line, False,
                              breaks.BreakInfo(code, reason, line, detail)))
        if logs.on("graph_breaks"):
            then = ("under guards; other inputs are traced again" if arrays else
                    "until an input is an array")
            before = f" before a graph break ({reason})" if reason is not None else ""
            logs.log("graph_breaks", compile_id,
                     f"No graph operation captured in {_name(code)} "
                     f"({code.co_filename}:{code.co_firstlineno}){before}: it runs its own "
                     f"code, {then}")

    def recompiling(self, code, compile_id, failures):
        """A frame with cache entries is compiled again; 'failures' lists
        (compile_id, failed guard text) of every entry tried."""
        counters["stats"]["recompiles"] += 1
        if config.trace_dir:
            tracefile.record(tracefile.recompile, code, compile_id, failures)
        where = f"{code.co_filename}:{code.co_firstlineno}"
        if logs.on("recompiles") and failures:
            logs.log("recompiles", compile_id,
                     f"Recompiling function {_name(code)} in {where}\n"
                     f"    triggered by the following guard failure(s):\n"
                     f"    - {failures[0][0]}: {failures[0][1]}")
        if logs.on("recompiles_verbose"):
            lines = "\n".join(f"    guard failed in entry {cid}: {text}" for cid, text in failures)
            logs.log("recompiles_verbose", compile_id,
                     f"Recompiling function {_name(code)} in {where}\n{lines}")

    def recompile_limit_hit(self, code, failures):
        """Past config.recompile_limit entries: warn once, the code goes run-only."""
        counters["stats"]["recompile_limit_hit"] += 1
        if config.trace_dir:
            tracefile.record(tracefile.recompile_limit, code, failures)
        if code in self._limit_warned:
            return
        self._limit_warned.add(code)
        if not config.warn_recompile_limit:
            return
        last = failures[0][1] if failures else "(unknown)"
        warnings.warn(
            f"framejit: {_name(code)} ({code.co_filename}:{code.co_firstlineno}) hit "
            f"config.recompile_limit ({config.recompile_limit}); last failed guard: {last}. "
            f"It now runs its cached entries only; other inputs run uncompiled.",
            RuntimeWarning, stacklevel=2)

    @property
    def enabled(self):
        return logs.enabled

    @property
    def inline_depth_limit(self):
        return int(config.inline_depth_limit)

    @property
    def max_restarts(self):
        return int(config.max_restarts)

    @property
    def capture_loops(self):
        return 1 if config.capture_loops else 0

    @property
    def loop_unroll_limit(self):
        n = int(config.loop_unroll_limit)
        return n if n > 0 else 0

    def log(self, channel, compile_id, text):
        logs.log(channel, compile_id, text)

    def format_code(self, title, code, names=None):
        """A dis listing of 'code'; 'names' maps id(constant) -> (constant, name)
        for the compiled and resume functions the new code loads as constants
        (they are shown by name: __compiled_fn_N, __resume_at_<offset>_<n>).
        dis is imported here, only when the bytecode channel is on, not with
        framejit (start-up of `python -m framejit run`)."""
        import dis
        import io
        out = io.StringIO()
        out.write(f"{title} {_name(code)} {os.path.basename(code.co_filename)} "
                  f"line {code.co_firstlineno}\n")
        dis.dis(code, file=out, depth=0)
        text = out.getvalue()
        if names:
            for const in code.co_consts:
                hit = names.get(id(const))
                if hit is not None and hit[0] is const:
                    text = text.replace(f"({const!r})", f"({hit[1]})")
        return "\n".join(line for line in text.splitlines() if line.strip())

    def is_library(self, fname):
        """True for a file of the standard library, site-packages, framejit
        or frozen/generated code: not the program's own (run --summary)."""
        if fname.startswith("<"):
            return not fname.startswith(("<stdin>", "<string>"))
        return _realpath(fname).startswith(_LIBRARY_DIRS)

    def should_skip(self, code, module=None):
        """True for frames never compiled.  With config.skip_stdlib (the
        default): the stdlib, NumPy, test runners and framejit itself.
        Without it (``python -m framejit run``): only framejit's own files and
        the import machinery (see _run_mode_skip).  'module' is the __name__
        of the globals of code whose file is <...> (code made by exec: a
        dataclass's __init__), else None: such code is skipped when that
        module's file is.  (A named tuple's __new__ runs in globals of its
        own: _NAMEDTUPLE_NEW_NAMES.)"""
        stats = counters["frames"]   # not "stats": its keys mirror torch's
        stats["offered"] += 1
        fname = code.co_filename
        if fname == "<string>" and code.co_names == _NAMEDTUPLE_NEW_NAMES and config.skip_stdlib:
            # a named tuple's __new__, which collections makes with eval (NumPy's
            # EighResult... built inside a graph's call): the stdlib's own code
            stats["skipped"] += 1
            return True
        key = (fname, bool(config.skip_stdlib))
        if type(module) is str and key[1] and fname.startswith("<"):   # (no str subclass: its __hash__)
            key = (fname, True, module)
        hit = self._skip_cache.get(key)
        if hit is None:
            hit = self._skip_cache[key] = (self._run_mode_skip(fname) if not key[1] else
                                           self._stdlib_skip(fname) or self._generated_in_lib(module))
        if hit:
            stats["skipped"] += 1
        return hit

    def _generated_in_lib(self, module):
        """True when code made by exec runs in the globals of 'module' (a
        str or None) whose file is skipped: torch's dataclasses' __init__
        (its CompilationMetrics, built on a call that follows a graph
        break), not the program's own dataclass."""
        if type(module) is not str:
            return False
        m = _modules.get(module)
        if type(m) is not _ModuleType:
            return False
        f = m.__dict__.get("__file__")   # (a module __getattr__ is the program's code: not called)
        return type(f) is str and not f.startswith("<") and self._stdlib_skip(f)

    def _stdlib_skip(self, fname):
        libs = 0
        for m in _SKIPPED_LIBS:  # no sum(): the program may have patched builtins
            if m in _modules:
                libs += 1
        if self._skip is None or libs != self._skip_libs:
            # torch imported after the first compile: its files join the skipped
            self._skip = _skip_prefixes()
            self._skip_libs = libs
            self._skip_cache.clear()
        skip_dirs, site_dirs = self._skip
        if fname.startswith("<frozen "):  # frozen stdlib modules
            return True
        if fname.startswith("<eval_with_key>") or "torchinductor" in fname:
            return True  # code torch generates: fx GraphModules, inductor's kernels
        path = fname
        if not fname.startswith("<") and not fname.startswith(skip_dirs):
            path = _realpath(fname)
        skip = path.startswith(skip_dirs)
        if skip and path.startswith(site_dirs):
            # inside site-packages: skip only the known libraries
            skip = path.startswith(tuple([d for d in skip_dirs if d.startswith(site_dirs)]))
        return skip

    def _run_mode_skip(self, fname):
        """Everything is compiled except framejit's own Python files (the
        compiler calls into them: its hooks, logs, explain) and the frozen
        import bootstrap (importlib._bootstrap*, zipimport), which runs with
        the import lock held on every import, including imports made from the
        compiler's own hooks."""
        if fname in _RUN_MODE_SKIP_FROZEN:
            return True
        if fname.startswith("<"):
            return False
        return fname.startswith(_HERE) or _realpath(fname).startswith(_HERE)

    def count_graph(self, ncalls):
        counters["stats"]["unique_graphs"] += 1
        counters["stats"]["calls_captured"] += ncalls

    def graph_break(self, code, compile_id, reason, lineno, fullgraph, resumable,
                    detail=None, cols=None):
        """A graph break for 'reason' at 'lineno' of 'code'; 'detail' is the
        reason's (key, trace stack) and 'cols' the break instruction's
        (col, end_col): framejit/breaks.py makes the message from them."""
        line = lineno if lineno and lineno > 0 else code.co_firstlineno
        where = f"{code.co_filename}:{line}"
        # the message (its kind, the source line read through linecache) only
        # for whoever shows it: a break nobody logs, records or raises costs a count
        info = (breaks.BreakInfo(code, reason, line, detail, cols)
                if fullgraph or self.recorders or config.trace_dir or logs.on("graph_breaks") else None)
        if fullgraph:
            raise Unsupported(f"framejit (fullgraph=True) cannot capture {_name(code)} "
                              f"({where}) whole: {info.message}\n{info.user_stack(_name(code))}")
        counters["graph_break"][reason] += 1
        # counters["stats"] as torch's (unique_graphs, calls_captured) and the
        # breaks' total: never empty for a run whose frames broke (the reasons
        # by count are counters["graph_break"], whose values sum to this)
        counters["stats"]["graph_breaks"] += 1
        if self.summary is not None:
            self.summary.broke(code, reason)
        if config.trace_dir:
            tracefile.record(tracefile.graph_break, code, compile_id, reason, line, resumable,
                             info.source, info)
        if self.recorders:
            self._record(("break", code, compile_id, reason, line, bool(resumable), info))
        if not resumable:
            counters["stats"]["frames_not_captured"] += 1
        else:
            counters["frames"]["broken"] += 1
        if logs.on("graph_breaks"):
            logs.log("graph_breaks", compile_id,
                     f"Graph break in {_name(code)} at {where}: {info.message}")

    def internal_error(self, code, compile_id, exc):
        counters["stats"]["internal_errors"] += 1
        counters["internal_error"][f"{type(exc).__name__}: {exc}"] += 1
        if config.trace_dir:
            tracefile.record(tracefile.internal_error, code, compile_id, exc,
                             "".join(traceback.format_exception(exc)))
        if config.raise_internal_errors:
            raise exc
        if config.warn_internal_errors:
            warnings.warn(f"framejit: internal error compiling {_name(code)} "
                          f"({code.co_filename}:{code.co_firstlineno}); it runs uncompiled: "
                          f"{type(exc).__name__}: {exc}", RuntimeWarning, stacklevel=2)
        logs.log("graph_breaks", compile_id, "internal error:\n" + "".join(
            traceback.format_exception(exc)))

    def graph_raised(self, code, exc):
        """A compiled frame's graph raised 'exc' (an Exception): the frame's own
        code runs the call instead, from its start (evalframe.c)."""
        counters["stats"]["graph_raised_reruns"] += 1
        if config.trace_dir:
            tracefile.record(tracefile.graph_raised, code, exc)
        if logs.on("graph_breaks"):
            logs.log("graph_breaks", None,
                     f"The graph of {_name(code)} ({code.co_filename}:{code.co_firstlineno}) "
                     f"raised {type(exc).__name__}: {exc}; the call runs the function's own "
                     f"code instead (what CPython raises or handles, at its own line)")

    def backend_failed(self, code, backend, exc):
        name = getattr(backend, "__name__", repr(backend))
        if config.trace_dir:
            tracefile.record(tracefile.backend_failed, code, name, exc)
        raise BackendCompilerFailed(
            f"framejit backend {name!r} failed compiling {_name(code)} "
            f"({code.co_filename}:{code.co_firstlineno}): {type(exc).__name__}: {exc}") from exc


hooks = Hooks()
if hasattr(_C, "_set_rerun_hook"):
    _C._set_rerun_hook(hooks.graph_raised)
