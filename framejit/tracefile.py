"""The structured trace: what the compiler did, one JSON object a line.

With ``framejit.config.trace_dir`` set (the environment variable
FRAMEJIT_TRACE_DIR sets it at import) every process writes
``<dir>/framejit_trace.<pid>.jsonl``: a ``process`` record first, then per
frame offered to the compiler its graphs, guards, graph breaks, recompiles
and no-graph decisions, and a ``frame`` record that closes the compile with
its outcome and the time of its phases; a ``counters`` record when the
process exits.  ``python -m framejit report DIR`` renders the files as one
HTML page (framejit/report.py); docs/report.md lists every record kind.

Responsible for: turning the hooks' arguments (framejit/_hooks.py) into
records of plain JSON values, and writing them so that a crashed program
leaves whole lines (one os.write per record, no buffer), a forked child
writes its own file, and a failure to write is one RuntimeWarning and the
trace off -- never an exception in the program.

Not responsible for: deciding when a compile happens or timing it (the C
compile driver does both, csrc/driver/compiler.c, and calls the hooks only
on the compile path: a warm call never comes here), or rendering.

Every value written is built here from types framejit knows (str, int,
float, the compiler's own objects); the program's objects appear as their
type's name, never through their own __repr__ (which could run the
program's code while a frame compiles)."""
import _thread
import opcode
import os
import sys
import time
import warnings

from . import _C, config
from .api import counters

# Builtins bound at import: framejit's code runs while the program's frames
# compile, when the program may have patched builtins (len, isinstance, open...).
from builtins import (  # noqa: A004
    BaseException, Exception, OSError, RuntimeWarning, bool, dict, enumerate, float, getattr, int,
    isinstance, len, list, max, min, range, repr, round, set, sorted, str, tuple, type
)

FILE_PREFIX = "framejit_trace."
FILE_SUFFIX = ".jsonl"
#: the version of the record layout (docs/report.md); a report reads files of this version
SCHEMA = 1

_json = None        # the json module, imported by prepare(), never inside a hook
_fd = None          # the open trace file of this process, or None
_fd_pid = None      # the process that opened _fd (a forked child opens its own)
_fd_dir = None      # the directory _fd is in
_failed = False     # a write failed: the trace is off for this process
_t0 = time.perf_counter()
_perf = time.perf_counter
_getpid = os.getpid
_getframe = sys._getframe
_HERE = os.path.dirname(os.path.realpath(__file__)) + os.sep
_RESUME = opcode.opmap["RESUME"]
_atexit_set = False
_lock = _thread.RLock()  # one writer at a time (compiles on several threads)
_writing = 0             # > 0 while a record is being written (under _lock)

# What each compile under way has done so far, per thread (two threads may
# compile at once: one releases the GIL inside its compile) and nested (run
# mode compiles json's frames while a record is made): a stack of
# [its increments of counters["native"] (note_native), seconds spent writing
# its records, the compile id whose guards were written (on_compile)].
# start() pushes,
# done() pops; a compile that ends without done() (a frame left alone)
# leaves its entry, so the stack keeps its newest _MAX_NESTED entries.
_local = _thread._local()
_MAX_NESTED = 16


def _compiles():
    st = getattr(_local, "stack", None)
    if st is None:
        st = _local.stack = []
    return st


def note_native(key, delta):
    """counters["native"][key] grew by 'delta' on this thread (native.py):
    the innermost compile under way here did it."""
    st = _compiles()
    if st:
        d = st[-1][0]
        d[key] = d.get(key, 0) + delta


def active():
    """True when the trace is on and writing."""
    return bool(config.trace_dir) and not _failed


def prepare():
    """Makes the trace ready for config.trace_dir (called when it is set, at
    import or by the program, never inside a hook): imports json, creates
    the directory, and registers the record written at exit."""
    global _json, _failed, _atexit_set
    d = config.trace_dir
    if not d:
        return
    import json
    _json = json
    _failed = False
    try:
        os.makedirs(str(d), exist_ok=True)
    except OSError as e:
        _fail(e)
    if not _atexit_set:
        import atexit
        atexit.register(_at_exit)
        _atexit_set = True


def _fail(exc):
    """A write failed: warn once, and the trace stays off in this process."""
    global _failed, _fd
    if _failed:
        return
    _failed = True
    _fd = None
    _C._config_changed()  # the C driver stops timing compiles for the trace
    try:
        warnings.warn(f"framejit: cannot write the trace to {config.trace_dir!s}: "
                      f"{type(exc).__name__}: {exc}; the trace is off in this process",
                      RuntimeWarning, stacklevel=2)
    except BaseException:  # noqa: BLE001 - warnings as errors must not reach the program
        pass


def _open():
    """Opens this process's file (a new one after a fork); False on failure."""
    global _fd, _fd_pid, _fd_dir
    pid = _getpid()
    d = str(config.trace_dir)
    if _fd is not None and _fd_pid == pid and _fd_dir == d:
        return True
    if _fd is not None and _fd_pid == pid:
        os.close(_fd)  # trace_dir changed: the old file is complete
    parent = _fd_pid
    path = os.path.join(d, f"{FILE_PREFIX}{pid}{FILE_SUFFIX}")
    _fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    _fd_pid, _fd_dir = pid, d
    _write({"kind": "process", "pid": pid, "ppid": os.getppid(),
            "forked_from": parent if parent is not None and parent != pid else None,
            "argv": [str(a) for a in sys.argv], "executable": sys.executable,
            "python": sys.version.split()[0], "framejit": _framejit_version(),
            "backend": _name_of(config.backend), "unix_time": time.time(),
            "schema": SCHEMA})
    return True


def _framejit_version():
    pkg = sys.modules.get("framejit")
    return str(getattr(pkg, "__version__", "")) if pkg is not None else ""


def _write(record):
    record["t"] = round(_perf() - _t0, 6)
    line = _json.dumps(record, ensure_ascii=False, default=_type_name) + "\n"
    data = line.encode("utf-8", "surrogatepass")
    while data:  # a whole line: os.write may write part of it
        n = os.write(_fd, data)
        data = data[n:]


def emit(record):
    """Writes 'record' (a dict of JSON values) to this process's file.  Never
    raises: a failure warns once and turns the trace off."""
    global _writing
    if not active() or _json is None:
        return
    t = _perf()
    try:
        with _lock:
            # a record made while one is being written is dropped: the frames
            # json.dumps and this module run are offered to the compiler too
            # (a hook at run time, graph_raised; or run mode, where every frame
            # is), and their own records, asking for the lock this thread held,
            # waited for good (found by the fuzzer with the trace on)
            if _writing:
                return
            _writing += 1
            try:
                if _open():
                    _write(record)
            finally:
                _writing -= 1
    except BaseException as e:  # noqa: BLE001 - the trace never changes what the program does
        _fail(e)
    st = _compiles()
    if st:
        st[-1][1] += _perf() - t


def record(fn, *args):
    """Calls the record maker 'fn' (one of the functions below) on 'args';
    an error in it warns once and turns the trace off, never reaching the
    program."""
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - the trace never changes what the program does
        _fail(e)


def _after_fork():
    """In a forked child: the parent's file stays the parent's."""
    global _fd, _lock, _writing, _local
    _lock = _thread.RLock()  # (another thread may have held it at the fork)
    _local = _thread._local()
    _writing = 0
    if _fd is not None:
        try:
            os.close(_fd)
        except OSError:
            pass
    _fd = None  # (_fd_pid keeps the parent's pid: the child's process record names it)


os.register_at_fork(after_in_child=_after_fork)


def _at_exit():
    if active():
        emit({"kind": "counters", "counters": counters_now()})


# ------------------------------------------------------------- values

def _type_name(obj):
    """What the trace writes for an object of the program: its type's name."""
    t = type(obj)
    return f"<{getattr(t, '__module__', '?')}.{getattr(t, '__qualname__', '?')}>"


_LIB_MODULES = ("numpy", "torch", "builtins", "framejit")


def safe(obj, depth=0):
    """A JSON value for 'obj': plain values as they are, containers element
    by element, library objects (NumPy dtypes, torch dtypes and devices...)
    by their repr, the program's objects by their type's name."""
    t = type(obj)
    if obj is None or t is bool or t is int or t is float or t is str:
        return obj
    if depth > 4:
        return "..."
    if t is tuple or t is list:
        items = [safe(x, depth + 1) for x in obj[:64]]
        if len(obj) > 64:
            items.append(f"... {len(obj) - 64} more")
        return items
    if t is dict:
        return {str(k) if type(k) is str else _short(k): safe(v, depth + 1)
                for k, v in list(obj.items())[:64]}
    if t.__name__ == "Node" and t.__module__ == "framejit._C":
        return {"node": obj.name}
    return _short(obj)


def _short(obj):
    mod = getattr(type(obj), "__module__", "") or ""
    if mod.partition(".")[0] in _LIB_MODULES:
        try:
            text = repr(obj)
        except Exception:  # noqa: BLE001
            return _type_name(obj)
        return text if len(text) <= 200 else text[:200] + "..."
    return _type_name(obj)


def _name_of(target):
    """A graph node's target, or a backend, as a name: module.name for the
    libraries' functions (what explain() prints), the type's name otherwise."""
    if isinstance(target, str):
        return target
    owner = getattr(target, "__module__", None)
    tmod = getattr(type(target), "__module__", "") or ""
    known = _LIB_MODULES + ("operator", "_operator", "math")
    if not (isinstance(owner, str) and owner.partition(".")[0] in known) and \
            tmod.partition(".")[0] not in known:
        return _type_name(target)
    name = getattr(target, "__name__", None)
    if not isinstance(name, str):
        return _short(target)
    return f"{owner}.{name}" if isinstance(owner, str) and owner else name


def code_info(code):
    """The frame fields of a record for 'code'."""
    name = _C._resume_log_name(code)
    resume_line = None
    if name:
        tail = name.rpartition("_at_")[2]
        resume_line = int(tail) if tail.isdigit() else None
    last = code.co_firstlineno
    lines = set()
    try:
        for _, _, line in code.co_lines():
            if line is not None and line > last:
                last = line
        # the lines an instruction after the prologue (up to RESUME) spans: the
        # report marks no other line (a decorator, a def, a blank or comment
        # line, a continuation with no code of its own)
        body = False
        raw = code.co_code
        for unit, pos in enumerate(code.co_positions()):
            if body and pos[0] is not None:
                lines.update(range(pos[0], (pos[1] if pos[1] is not None and pos[1] >= pos[0]
                                            and pos[1] - pos[0] < 500 else pos[0]) + 1))
            if 2 * unit < len(raw) and raw[2 * unit] == _RESUME:
                body = True
    except Exception:  # noqa: BLE001
        pass
    return {"name": name or code.co_name, "co_name": code.co_name, "file": code.co_filename,
            "line": code.co_firstlineno, "last_line": last, "resume_line": resume_line,
            "code_lines": sorted(lines)}


def user_stack(limit=40):
    """The program's frames that called the frame being compiled, outermost
    first (framejit's own frames left out)."""
    out = []
    f = _getframe(1)
    while f is not None and len(out) < limit:
        co = f.f_code
        if not co.co_filename.startswith(_HERE):
            out.append({"file": co.co_filename, "line": f.f_lineno, "name": co.co_name})
        f = f.f_back
    out.reverse()
    return out


def guard_tree(manager):
    """The guard tree of 'manager' (a RootGuardManager) as nested dicts:
    {"source", "leaves": [text], "children": [...]}."""
    node = {"source": str(manager.source), "leaves": [str(x) for x in manager.leaves()],
            "children": [guard_tree(m) for m in manager.accessors()]}
    return node


def _lines_of(code):
    """A function from a bytecode offset of 'code' to the (line, end_line)
    of its instruction ((None, None) when it has no line)."""
    positions = list(code.co_positions())

    def lines(offset):
        if offset is None or not 0 <= offset // 2 < len(positions):
            return None, None
        line, end_line = positions[offset // 2][:2]
        if line is None:
            return None, None
        return line, end_line if end_line is not None and end_line >= line else line
    return lines


def graph_record(graph, code=None):
    """The nodes and code of a framejit._C.Graph; each node's source line in
    'code' (the code traced: the instruction that made the node, an inlined
    call's for the nodes inside it)."""
    nodes = []
    line_of = _lines_of(code) if code is not None else None
    for n in graph.nodes:
        meta = {}
        for k, v in dict(n.meta).items():
            if k in ("dtype", "shape", "kind", "device", "requires_grad", "dynamic_dims", "stride"):
                meta[k] = v if type(v) in (int, str, bool) else (
                    safe(v) if type(v) in (tuple, list) else _short(v))
        node = {"name": n.name, "op": n.op, "target": _name_of(n.target),
                "args": safe(n.args), "kwargs": safe(dict(n.kwargs)), "meta": meta}
        if line_of is not None and n.op.startswith("call"):
            node["line"], node["end_line"] = line_of(n.offset)
        nodes.append(node)
    return {"nodes": nodes, "code": str(graph.code), "num_calls": int(graph.num_calls)}


def counters_now():
    return {str(k): {str(kk): int(vv) for kk, vv in dict(v).items()}
            for k, v in dict(counters).items()}


# ------------------------------------------------------ compile events

def start():
    """A compile begins (hooks.trace_start)."""
    st = _compiles()
    st.append([{}, 0.0, None])
    if len(st) > _MAX_NESTED:
        del st[0]


def done(code, compile_id, outcome, guards, seconds, trace_seconds, backend_seconds, attempts):
    """The compile of a frame of 'code' ended (hooks.trace_done): its frame record."""
    st = _compiles()
    native, write_seconds, guards_cid = st.pop() if st else ({}, 0.0, None)
    delta = {str(k): int(v) for k, v in native.items() if v}
    rec = {"kind": "frame", "compile_id": compile_id, "outcome": outcome}
    rec.update(code_info(code))
    other = max(0.0, seconds - trace_seconds - backend_seconds)
    rec.update({"seconds": seconds, "phases": {"trace": trace_seconds, "backend": backend_seconds,
                                               "other": other},
                "attempts": attempts, "record_seconds": write_seconds, "native": delta})
    if guards is not None and guards_cid != compile_id:
        # the frame runs its own code behind these guards (no on_compile)
        emit({"kind": "guards", "compile_id": compile_id, **_where(code),
              "text": str(guards.format()), "tree": guard_tree(guards)})
    emit(rec)


def _where(code):
    return {"name": _C._resume_log_name(code) or code.co_name, "file": code.co_filename,
            "line": code.co_firstlineno}


def compiled(code, compile_id, guards, graph, traced=None):
    st = _compiles()
    if st:
        st[-1][2] = compile_id
    emit({"kind": "guards", "compile_id": compile_id, **_where(code),
          "text": str(guards.format()), "tree": guard_tree(guards)})
    if graph is not None and int(getattr(graph, "num_calls", 0)) > 0:
        rec = {"kind": "graph", "compile_id": compile_id, **_where(code)}
        rec.update(graph_record(graph, traced))
        emit(rec)


def graph_break(code, compile_id, reason, line, resumable, source, info=None):
    """'info' is the break's framejit.breaks.BreakInfo (its kind and message)."""
    stack = user_stack()
    stack.append({"file": code.co_filename, "line": line, "name": code.co_name})
    rec = {"kind": "break", "compile_id": compile_id, **_where(code), "break_line": line,
           "reason": str(reason), "source": source, "resumed": bool(resumable), "stack": stack}
    if info is not None:
        rec.update(break_kind=info.kind.title, doc=info.kind.link, message=info.message)
        # a break inside an inlined call: the frames the trace inlined, down to
        # where it broke (break_line stays the compiled frame's: the call)
        for icode, iline, *_ in info.inlined:
            stack.append({"file": icode.co_filename, "line": iline if iline > 0 else None,
                          "name": icode.co_name, "inlined": True})
    emit(rec)


def no_graph(code, compile_id, arrays, reason):
    emit({"kind": "no_graph", "compile_id": compile_id, **_where(code), "arrays": bool(arrays),
          "reason": None if reason is None else str(reason)})


def recompile(code, compile_id, failures):
    emit({"kind": "recompile", "compile_id": compile_id, **_where(code),
          "failures": [{"compile_id": str(cid), "guard": str(text)} for cid, text in failures]})


def recompile_limit(code, failures):
    emit({"kind": "recompile_limit", "compile_id": None, **_where(code),
          "limit": int(config.recompile_limit),
          "failures": [{"compile_id": str(cid), "guard": str(text)} for cid, text in failures]})


def internal_error(code, compile_id, exc, text):
    emit({"kind": "internal_error", "compile_id": compile_id, **_where(code),
          "error": f"{type(exc).__name__}: {exc}", "traceback": text})


def graph_raised(code, exc):
    emit({"kind": "graph_raised", "compile_id": None, **_where(code),
          "error": f"{type(exc).__name__}: {exc}"})


def backend_failed(code, backend, exc):
    emit({"kind": "backend_failed", "compile_id": None, **_where(code), "backend": str(backend),
          "error": f"{type(exc).__name__}: {exc}"})


if config.trace_dir:  # FRAMEJIT_TRACE_DIR
    prepare()
