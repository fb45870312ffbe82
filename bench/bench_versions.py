"""Per CPython version: warm overhead, compile time, and the hook's cost on
Python-to-Python calls (3.11, 3.12, 3.13 side by side).

The script runs itself once per interpreter as a child process
(``--child``, PYTHONPATH = the checkout, one thread for every math
library), each child prints its figures as JSON, and this process makes one
table with a column per version.  The interpreters are found as the
Makefile's ``make test`` finds them: this Python for its own version, else
``$(pyenv root)/versions/3.X.*/bin/python3.X``, else ``python3.X`` on PATH;
one that is missing, or has no framejit extension built for it
(framejit/_C.cpython-3X-*.so), is skipped with a message.  The children run
one after the other (one core busy at a time), ``--runs N`` times each in
alternating order (3.11, 3.12, 3.13, then 3.13, 3.12, 3.11, ...); every cell
is the median over those runs of the run's own figure, and every ratio is
taken inside one run (plain and hooked side by side, interleaved rounds,
best of rounds), then its median over runs.  Nothing here asserts a time.

(a) warm overhead: bench_compile.py's (b): the compiled 1-op ``x + 1`` and
    20-op NumPy function on ``np.ones(4)`` (``framejit.compile(...,
    backend="eager")``) against the plain function, ns per call, best of
    interleaved rounds, and the ratio.
(b) compile time: bench_compile.py's (a): the first call of the 20-op
    function through ``framejit.compile`` after ``framejit.reset()``, minus
    one plain call (median), median over fresh compiles, ms.
(c) the hook on Python-to-Python calls, for recursive ``fib(20)`` (pure
    Python, 21,891 calls per ``fib(20)``) and for ``calls(1000)``, a loop
    of 1000 calls of ``small(i)`` (``return i + 1``):
      plain                    no hook;
      hook, SKIP_CODE          framejit's hook on the interpreter for every
                               call, the functions' codes marked
                               ``skip_code`` (the hook's cheapest path: what
                               any PEP 523 hook costs, chiefly CPython no
                               longer inlining Python-to-Python calls);
      hook, framejit           the same, the functions' codes as framejit's
                               compiler leaves code that captures nothing
                               (UNLESS_ARRAYS: each call scans its arguments
                               for arrays, then runs the code's own bytecode);
      framejit default         as ``python -m framejit run`` runs it: quiet
                               regions on (the hook steps aside below code
                               that captures nothing, observing every 16th
                               entry with its whole subtree; the calls per
                               timing loop are a multiple of 16, so each
                               round pays its share of observed entries).
    How the hook is active: the way ``python -m framejit run
    --preload=numpy`` runs a program, through the C API: framejit's
    Compiler (``framejit.run.make_compiler("eager")``) is this thread's
    eval-frame callback (``eval_frame.set_eval_frame``) around each timing
    loop, NumPy imported.  The timing loop's own code is marked
    ``skip_code`` (never compiled) and has called one compiled function
    (it is "tainted", as the resume code of a ``framejit.compile``'d
    function calling a helper is: the hook never steps aside inside it), so
    every ``fib`` / ``calls`` frame it starts goes through the hook.  In the
    two "hook" rows a helper thread holding a callback is parked on an
    Event meanwhile: quiet regions and quiet tails are only used while one
    thread has a callback (docs/cpython-tests.md, "Quiet regions";
    tests/test_quiet.py), so with it every nested call goes through the
    hook (fj_eval_frame), never around it.  The plain and default rows park
    a helper thread without a callback, so all rows run with two threads.
    Each row runs its own copy of the functions (same source), so no row's
    code objects carry another row's state (framejit's strategy and quiet
    word per code, CPython's specialization of the calls).
    Before timing, each child checks that the pure functions captured
    nothing (no cache entry, counted as "no_graph") and return the plain
    results.  Reported: time per ``fib(20)`` / ``calls(1000)``, ns per
    Python call (hooked minus plain over the number of calls), the ratio.
    The recursion is kept shallow (depth 20): with a second thread holding
    a callback the hook does not step aside on deep stacks, so 3.12 raises
    RecursionError from about depth 750 and 3.11 overflows the C stack under
    a high recursion limit.

Run: python3 bench/bench_versions.py [--quick] [--runs N]
Writes bench/results/versions.json (bench/_results.py).
"""
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import _results  # noqa: E402

VERSIONS = ((3, 11), (3, 12), (3, 13))
MARK = "FJ_BENCH_VERSIONS_JSON "
perf = time.perf_counter_ns

FIB_N = 20
FIB_CALLS = 21891  # Python calls in one fib(20)
LOOP_N = 1000


# ------------------------------------------------------ (c)'s functions
# Pure Python, no NumPy.  One copy per variant (suffix), the same source,
# so no variant's code objects carry another's state (framejit's strategy
# and quiet word per code, CPython's call specialization): _p plain, _s hook
# with SKIP_CODE, _f hook framejit, _d framejit default.

def fib_p(n):
    return n if n < 2 else fib_p(n - 1) + fib_p(n - 2)


def fib_s(n):
    return n if n < 2 else fib_s(n - 1) + fib_s(n - 2)


def fib_f(n):
    return n if n < 2 else fib_f(n - 1) + fib_f(n - 2)


def fib_d(n):
    return n if n < 2 else fib_d(n - 1) + fib_d(n - 2)


def small_p(i):
    return i + 1


def small_s(i):
    return i + 1


def small_f(i):
    return i + 1


def small_d(i):
    return i + 1


def calls_p(n):
    s = 0
    for i in range(n):
        s += small_p(i)
    return s


def calls_s(n):
    s = 0
    for i in range(n):
        s += small_s(i)
    return s


def calls_f(n):
    s = 0
    for i in range(n):
        s += small_f(i)
    return s


def calls_d(n):
    s = 0
    for i in range(n):
        s += small_d(i)
    return s


# variant -> (suffix, the helper thread's callback is set)
VARIANTS = {"plain": ("_p", False), "hook, SKIP_CODE": ("_s", True),
            "hook, framejit": ("_f", True), "framejit default": ("_d", False)}


def arr_step(x):
    """Compiled once from the hooked timing loop, which taints the loop's code."""
    return x + 1


def loop_plain(fn, arg, r):
    t0 = perf()
    for _ in r:
        fn(arg)
    return perf() - t0


def loop(fn, arg, r):  # the same, run with the hook on
    t0 = perf()
    for _ in r:
        fn(arg)
    return perf() - t0


class Parked:
    """A helper thread parked on an Event; with 'callback' it holds that
    eval-frame callback meanwhile (so two threads have one)."""

    def __init__(self, eval_frame, callback):
        self.eval_frame, self.callback = eval_frame, callback

    def __enter__(self):
        self.ready, self.stop = threading.Event(), threading.Event()

        def body():
            prev = self.eval_frame.set_eval_frame(self.callback) if self.callback else None
            self.ready.set()
            self.stop.wait()
            if self.callback:
                self.eval_frame.set_eval_frame(prev)
        self.thread = threading.Thread(target=body, daemon=True)
        self.thread.start()
        self.ready.wait()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


# ------------------------------------------------------------- the child

def child(quick):
    import numpy as np
    import framejit
    from framejit import api, run
    from framejit._C import eval_frame
    import bench_compile as bc

    out = {"python": sys.version.split()[0], "executable": sys.executable,
           "numpy": np.__version__, "load_start": round(os.getloadavg()[0], 2),
           "supported": framejit.is_supported()}
    if not out["supported"]:
        return out
    rounds = 3 if quick else 5
    n_warm = 12_500 if quick else 50_000
    n_compiles = 50 if quick else 200
    c_rounds = 5 if quick else 15
    # multiples of 16: each round of "framejit default" holds its share of
    # observed entries (every 16th entry of a quiet code)
    n_fib = 16
    n_loop = 64 if quick else 256
    x = np.ones(4)

    # (b) compile time, as bench_compile (a)
    framejit.reset()
    check = framejit.compile(bc.np20, backend="eager")
    np.testing.assert_allclose(check(x), bc.np20(x))
    out["captured"] = framejit.counters["stats"]["calls_captured"]
    out["graphs"] = framejit.counters["stats"]["unique_graphs"]
    plain = bc.median_plain(bc.np20, x)
    cf = framejit.compile(bc.np20, backend="eager")
    times = []
    for _ in range(n_compiles):
        framejit.reset()
        times.append(bc.time_call(cf, x))
    out["compile_ns"] = {"median": statistics.median(times) - plain,
                         "min": min(times) - plain, "n": n_compiles}

    # (a) warm overhead, as bench_compile (b)
    framejit.reset()
    warm = bc.warm_table({"1 op": (bc.np1, framejit.compile(bc.np1, backend="eager")),
                          "20 ops": (bc.np20, framejit.compile(bc.np20, backend="eager"))},
                         x, n_warm, rounds)
    out["warm_ns"] = {k: {"plain": p, "compiled": c} for k, (p, c) in warm.items()}
    out["warm_calls"], out["warm_rounds"] = n_warm, rounds

    # (c) the hook on Python-to-Python calls
    framejit.reset()
    compiler = run.make_compiler("eager")
    null = api._null_callback
    g = globals()
    fns = {k: {"fib": g["fib" + sfx], "calls": g["calls" + sfx], "small": g["small" + sfx]}
           for k, (sfx, _) in VARIANTS.items()}
    eval_frame.skip_code(loop.__code__)
    for f in fns["hook, SKIP_CODE"].values():
        eval_frame.skip_code(f.__code__)

    def hooked(fn, arg, r):
        prev = eval_frame.set_eval_frame(compiler)
        try:
            return loop(fn, arg, r)
        finally:
            eval_frame.set_eval_frame(prev)

    def timed(k, name, arg, r):
        with Parked(eval_frame, null if VARIANTS[k][1] else None):
            if k == "plain":
                return loop_plain(fns[k][name], arg, r)
            return hooked(fns[k][name], arg, r)

    hooked(arr_step, x, range(2))  # compiled: the loop's code is tainted
    cases = {"fib": (FIB_N, n_fib), "calls": (LOOP_N, n_loop)}
    want = {"fib": fns["plain"]["fib"](FIB_N), "calls": fns["plain"]["calls"](LOOP_N)}
    got = {}
    for name, (arg, _) in cases.items():
        for k in VARIANTS:
            if k == "plain":
                continue
            with Parked(eval_frame, null if VARIANTS[k][1] else None):
                prev = eval_frame.set_eval_frame(compiler)
                try:
                    got[f"{name} {k}"] = fns[k][name](arg)
                finally:
                    eval_frame.set_eval_frame(prev)
            assert got[f"{name} {k}"] == want[name], (name, k, got, want)
    # what framejit made of them: nothing (no cache entry: each runs its own code)
    entries = {f.__name__: len(eval_frame._debug_get_cache_entry_list(f.__code__))
               for k in ("hook, framejit", "framejit default") for f in fns[k].values()}
    frames = dict(framejit.counters["frames"])
    out["checks"] = {"cache_entries": entries, "frames": frames,
                     "graph_break": dict(framejit.counters["graph_break"]),
                     "ok": all(v == 0 for v in entries.values()) and frames.get("no_graph", 0) >= 6}

    out["hook"] = {}
    for name, (arg, n) in cases.items():
        r = range(n)
        for k in VARIANTS:  # warm up: offered, strategies and quiet words learned
            timed(k, name, arg, r)
        best = {k: float("inf") for k in VARIANTS}
        for _ in range(c_rounds):  # interleaved
            for k in VARIANTS:
                best[k] = min(best[k], timed(k, name, arg, r) / n)
        out["hook"][name] = {"ns": best, "n": n, "rounds": c_rounds}
    framejit.reset()
    out["load_end"] = round(os.getloadavg()[0], 2)
    return out


# ------------------------------------------------------------ the parent

def pyenv_root():
    try:
        r = subprocess.run(["pyenv", "root"], capture_output=True, text=True, timeout=30)
        if r.returncode == 0 and r.stdout.strip():
            return r.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")


def find_pythons():
    """{(3, minor): executable or None}, as the Makefile finds them."""
    root = pyenv_root()
    found = {}
    for v in VERSIONS:
        cands = []
        if sys.version_info[:2] == v:
            cands.append(sys.executable)
        cands += sorted(glob.glob(os.path.join(root, "versions", f"{v[0]}.{v[1]}.*", "bin",
                                               f"python{v[0]}.{v[1]}")))
        w = shutil.which(f"python{v[0]}.{v[1]}")
        if w:
            cands.append(w)
        found[v] = next((c for c in cands if os.access(c, os.X_OK)), None)
    return found


def built_for(v):
    return bool(glob.glob(os.path.join(ROOT, "framejit", f"_C.cpython-{v[0]}{v[1]}-*.so")))


def run_child(py, quick):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = "1"
    cmd = [py, os.path.abspath(__file__), "--child"] + (["--quick"] if quick else [])
    r = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    if r.stderr.strip():
        sys.stderr.write(r.stderr)
    for line in reversed(r.stdout.splitlines()):
        if line.startswith(MARK):
            return json.loads(line[len(MARK):]), None
    return None, f"exit {r.returncode}: {(r.stderr.strip().splitlines() or ['no output'])[-1]}"


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarize(runs):
    """One version's child runs -> its figures (medians over runs)."""
    s = {"python": runs[0]["python"], "numpy": runs[0]["numpy"], "runs": len(runs)}
    for k in ("1 op", "20 ops"):
        s[f"warm {k} plain"] = med(r["warm_ns"][k]["plain"] for r in runs)
        s[f"warm {k} compiled"] = med(r["warm_ns"][k]["compiled"] for r in runs)
        s[f"warm {k} ratio"] = med(r["warm_ns"][k]["compiled"] / r["warm_ns"][k]["plain"]
                                   for r in runs)
    s["compile ms"] = med(r["compile_ns"]["median"] / 1e6 for r in runs)
    s["compile n"] = runs[0]["compile_ns"]["n"]
    s["captured"] = runs[0]["captured"]
    for name, calls_per in (("fib", FIB_CALLS), ("calls", LOOP_N)):
        for k in ("plain", "hook, SKIP_CODE", "hook, framejit", "framejit default"):
            s[f"{name} {k}"] = med(r["hook"][name]["ns"][k] for r in runs)
            if k != "plain":
                s[f"{name} {k} ratio"] = med(r["hook"][name]["ns"][k] / r["hook"][name]["ns"]["plain"]
                                             for r in runs)
                s[f"{name} {k} added"] = med((r["hook"][name]["ns"][k] - r["hook"][name]["ns"]["plain"])
                                             / calls_per for r in runs)
    s["checks ok"] = all(r["checks"]["ok"] for r in runs)
    s["load"] = [r["load_start"] for r in runs]
    return s


def rows_of(summ):
    """The table's rows: [(label, {version: cell text})]."""
    def cell(fn):
        return {v: fn(s) for v, s in summ.items()}
    rows = [("NumPy", cell(lambda s: s["numpy"]))]
    for k, desc in (("1 op", "1 op `x + 1`"), ("20 ops", "20 ops")):
        rows.append((f"(a) warm {desc}, plain", cell(lambda s: f"{s[f'warm {k} plain']:.0f} ns")))
        rows.append((f"(a) warm {desc}, compiled",
                     cell(lambda s: f"{s[f'warm {k} compiled']:.0f} ns "
                                    f"({s[f'warm {k} ratio']:.2f}x)")))
    rows.append(("(b) compile 20 ops (median)", cell(lambda s: f"{s['compile ms']:.2f} ms")))
    for name, desc, unit in (("fib", f"fib({FIB_N})", 1e3), ("calls", f"{LOOP_N} calls", 1e3)):
        rows.append((f"(c) {desc}, plain", cell(lambda s: f"{s[f'{name} plain'] / unit:,.0f} µs"
                                                if name == "fib" else
                                                f"{s[f'{name} plain'] / unit:,.1f} µs")))
        for k in ("hook, SKIP_CODE", "hook, framejit", "framejit default"):
            rows.append((f"(c) {desc}, {k}",
                         cell(lambda s: f"{s[f'{name} {k}'] / unit:,.{0 if name == 'fib' else 1}f} µs"
                                        f" ({s[f'{name} {k} ratio']:.2f}x, "
                                        f"{s[f'{name} {k} added']:+.1f} ns/call)")))
    return rows


def main():
    if "--child" in sys.argv:
        print(MARK + json.dumps(child("--quick" in sys.argv)), flush=True)
        return 0
    _results.start()
    quick = "--quick" in sys.argv
    n_runs = 1 if quick else 3
    if "--runs" in sys.argv:
        n_runs = int(sys.argv[sys.argv.index("--runs") + 1])
    print(f"bench_versions: {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}, "
          f"{n_runs} run(s) per version, alternating")
    notes = []
    pythons = {}
    for v, py in find_pythons().items():
        name = f"{v[0]}.{v[1]}"
        if py is None:
            msg = f"CPython {name} not found (pyenv root, PATH): skipped"
        elif not built_for(v):
            msg = (f"CPython {name} ({py}): no framejit/_C.cpython-{v[0]}{v[1]}-*.so "
                   "(make build PY=...): skipped")
        else:
            pythons[name] = py
            continue
        print(msg)
        notes.append(msg)
    runs = {v: [] for v in pythons}
    order = list(pythons)
    for i in range(n_runs):
        for v in (order if i % 2 == 0 else order[::-1]):
            t0 = time.perf_counter()
            res, err = run_child(pythons[v], quick)
            if res is not None and not res.get("supported"):
                res, err = None, "framejit.is_supported() is False"
            print(f"  run {i + 1}, CPython {v}: "
                  f"{'failed: ' + err if err else 'load %.2f, %.0f s' % (res['load_start'], time.perf_counter() - t0)}",
                  flush=True)
            if err:
                notes.append(f"CPython {v}, run {i + 1}: {err}")
            else:
                runs[v].append(res)
    summ = {v: summarize(rs) for v, rs in runs.items() if rs}
    if not summ:
        print("no interpreter ran: nothing to report")
        return 1
    labels = {v: f"CPython {s['python']}" for v, s in summ.items()}
    rows = rows_of(summ)
    w0 = max(len(r[0]) for r in rows) + 2
    wv = max(max(len(c) for r in rows for c in r[1].values()), max(map(len, labels.values()))) + 2
    print()
    print(f"{'':<{w0}}" + "".join(f"{labels[v]:>{wv}}" for v in summ))
    for label, cells in rows:
        print(f"{label:<{w0}}" + "".join(f"{cells[v]:>{wv}}" for v in summ))
    print()
    print("ratios to plain (measured in one run, median over runs)")
    for v, s in summ.items():
        print(f"  {s['python']}: warm 1 op {s['warm 1 op ratio']:.2f}x, 20 ops "
              f"{s['warm 20 ops ratio']:.2f}x; compile {s['compile ms']:.2f} ms; fib({FIB_N}) hook "
              f"SKIP_CODE {s['fib hook, SKIP_CODE ratio']:.2f}x, framejit "
              f"{s['fib hook, framejit ratio']:.2f}x, default {s['fib framejit default ratio']:.2f}x; "
              f"{LOOP_N} calls {s['calls hook, SKIP_CODE ratio']:.2f}x / "
              f"{s['calls hook, framejit ratio']:.2f}x / {s['calls framejit default ratio']:.2f}x")
    for v, s in summ.items():
        if not s["checks ok"]:
            msg = (f"CPython {s['python']}: the pure functions did not all run their own code "
                   f"(see data.runs[...].checks)")
            print(msg)
            notes.append(msg)
    loads = "; ".join(f"{s['python']}: {', '.join(f'{x:.2f}' for x in s['load'])}"
                      for s in summ.values())
    notes.append(f"load average (1 min) at the start of each child run: {loads}; at the end "
                 f"{os.getloadavg()[0]:.2f}")
    notes.append(f"every cell: the median over {n_runs} alternating child run(s) of that run's "
                 "figure (best of interleaved rounds); ratios are taken within a run")
    notes.append(f"fib({FIB_N}) makes {FIB_CALLS:,} Python calls, `calls({LOOP_N})` {LOOP_N} calls "
                 "of `small(i)`; ns/call = (hooked - plain) / calls")
    s0 = next(iter(summ.values()))
    C = _results.column
    cols = [C("figure", "")] + [C(v, labels[v]) for v in summ]
    table = _results.table(
        f"(a) ns per warm call on np.ones(4), best of {runs[next(iter(summ))][0]['warm_rounds']} x "
        f"{runs[next(iter(summ))][0]['warm_calls']:,} calls; (b) first call after framejit.reset() "
        f"minus a plain call, median of {s0['compile n']} compiles ({s0['captured']} calls "
        f"captured); (c) time per call of fib({FIB_N}) / calls({LOOP_N}) and ns added per "
        "Python call",
        cols, [dict(figure=label, **cells) for label, cells in rows])
    _results.write("versions", "Per CPython version", size="--quick" if quick else "full",
                   tables=[table], notes=notes,
                   data={"interpreters": pythons, "summary": summ, "runs": runs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
