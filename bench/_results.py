"""Result files of the benchmarks: one JSON file per benchmark in bench/results/.

Responsible for: what every result file holds besides the benchmark's own
figures (the exact command, the commit, the date, the machine) and writing
it; bench/report.py renders BENCHMARKS.md from these files.  Not
responsible for: measuring anything, or formatting figures for reading.

A result file (``bench/results/<name>.json``):

    name, title     the benchmark's key and heading
    command         the command line that produced it, from the checkout
    commit          ``git rev-parse --short HEAD``, "+dirty" when tracked
                    files outside bench/results and BENCHMARKS.md differ
    date            UTC, ISO 8601, to the minute
    machine         cpu model, cores, load average at the start, Python,
                    NumPy, torch / numexpr / Numba when installed, build kind
    size            what size of run this was ("full", "--quick", ...)
    tables          [{title, columns: [{key, label, fmt}], rows: [{key: value}],
                      note}] ; fmt is a format spec ("" for str(value))
    targets         [{target, measured, met}] ; met is true, false or null
                    (no target, or not judged)
    notes           [str]
    data            the benchmark's own raw figures (any JSON)

FRAMEJIT_BENCH_RESULTS=DIR writes the files there instead (trial runs).
Write with ``write(name, ...)`` at the end of a run; ``start()`` once at the
beginning records the date, load and commit before the run.
"""
import datetime
import importlib.metadata
import json
import os
import platform
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS_DIR = os.environ.get("FRAMEJIT_BENCH_RESULTS", os.path.join(HERE, "results"))

_started = {}


def start():
    """Note the date, the load average and the commit before the run (call
    once, first: files edited while a long run goes on do not change them)."""
    fj = sys.modules.get("framejit")
    if fj is not None:
        # warm timings: native kernels are built before a first call returns
        # (tiered compilation's first calls are measured by bench/native/first_call.py)
        fj.config.native_background = False
    if not _started:
        _started["date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        _started["load"] = round(os.getloadavg()[0], 2)
        _started["commit"] = commit()


def cpu_model():
    """The cpu's model name from /proc/cpuinfo, else platform's guess."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def version_of(dist):
    """An installed distribution's version, or None (without importing it)."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine():
    """The machine and software a figure was measured on."""
    start()
    m = {"cpu": cpu_model(), "cores": os.cpu_count(), "arch": platform.machine(),
         "load_at_start": _started["load"],
         "python": platform.python_version(), "numpy": version_of("numpy"),
         "build": os.environ.get("FRAMEJIT_BUILD", "release")}
    for dist in ("torch", "numexpr", "numba"):
        v = version_of(dist)
        if v:
            m[dist] = v
    return m


def commit(path=ROOT):
    """Short HEAD of the checkout at 'path', "+dirty" when its tracked files
    (other than result files and BENCHMARKS.md) differ; None outside git."""
    def git(*args):
        return subprocess.run(["git", "-C", path, *args], capture_output=True, text=True,
                              timeout=30).stdout.strip()
    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".",
                    ":(exclude)bench/results", ":(exclude)BENCHMARKS.md")
    except (OSError, subprocess.SubprocessError):
        return None
    if not head:
        return None
    return head + ("+dirty" if dirty else "")


def command(argv=None):
    """The command line as run from the checkout's root."""
    argv = list(sys.argv if argv is None else argv)
    script = os.path.abspath(argv[0])
    if script.startswith(ROOT + os.sep):
        script = os.path.relpath(script, ROOT)
    return shlex.join(["python3", script] + argv[1:])


def column(key, label, fmt=""):
    return {"key": key, "label": label, "fmt": fmt}


def table(title, columns, rows, note=""):
    """columns: [column(...)], rows: [{key: value}] -> a table record."""
    return {"title": title, "columns": columns, "rows": rows, "note": note}


def target(text, measured, met):
    return {"target": text, "measured": measured, "met": met}


def write(name, title, *, size, tables=(), targets=(), notes=(), data=None, argv=None,
          path=None):
    """Write bench/results/<name>.json (or 'path'); returns the path."""
    start()
    rec = {"name": name, "title": title, "command": command(argv), "commit": _started["commit"],
           "date": _started["date"], "machine": machine(), "size": size,
           "tables": list(tables), "targets": list(targets), "notes": list(notes),
           "data": data if data is not None else {}}
    path = path or os.path.join(RESULTS_DIR, name + ".json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        json.dump(rec, fh, indent=1, sort_keys=False, default=_plain)
        fh.write("\n")
    print(f"result file: {os.path.relpath(path, ROOT) if path.startswith(ROOT) else path}")
    return path


def _plain(x):
    """NumPy scalars as plain JSON numbers; anything else as its str."""
    item = getattr(x, "item", None)
    return item() if callable(item) else str(x)
