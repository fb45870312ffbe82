"""``python -m framejit run`` against ``python`` on pure-Python programs
(issue 17): each program's CPU time (user + system of the child process)
under both, in alternating runs, as a ratio of medians (without NumPy, where
``run`` keeps its hook dormant, and with NumPy imported first, where the
hook is awake); the start-up that
``run`` adds (an empty program); and CPython unittest modules, whose time
under ``run`` should be at most 1.1x plain plus that start-up.

Run: python3 bench/bench_run_mode.py [--quick] [--rounds N]
Targets (printed MET / NOT MET): each program at most 1.10x; start-up at
most +20 ms; each unittest module at most 1.1x plain + start-up.
Writes bench/results/run_mode.json (bench/_results.py).
"""
import os
import resource
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import _results  # noqa: E402
PROGRAMS = ("fib.py", "scheduler.py", "nbody.py", "json_rt.py", "gens.py", "deepcopy.py")
# The same programs with NumPy imported first (bench/pure/with_numpy.py):
# the hook is awake, so this measures it; without NumPy `run` is dormant.
AWAKE = ("fib.py", "scheduler.py", "nbody.py", "json_rt.py", "gens.py")
UNITTESTS = ("test.test_heapq", "test.test_bisect", "test.test_textwrap", "test.test_statistics")


def cpu_of(cmd, env):
    """CPU seconds (user + sys) of running 'cmd' to completion; raises on failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def alternate(plain, run, rounds, env):
    """Median CPU seconds of 'plain' and 'run', run alternately (plain first
    on even rounds, run first on odd ones), after one untimed run of each."""
    cpu_of(plain, env)
    cpu_of(run, env)
    tp, tr = [], []
    for i in range(rounds):
        pair = [(plain, tp), (run, tr)]
        for cmd, out in (pair if i % 2 == 0 else pair[::-1]):
            out.append(cpu_of(cmd, env))
    return statistics.median(tp), statistics.median(tr)


def main():
    _results.start()
    quick = "--quick" in sys.argv
    rounds = 3 if quick else 9
    if "--rounds" in sys.argv:
        rounds = int(sys.argv[sys.argv.index("--rounds") + 1])
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    py = sys.executable
    run = [py, "-m", "framejit", "run"]
    ok = True
    progs, units = [], []
    print(f"CPU time (user + sys), median of {rounds} alternating runs each")
    print(f"{'program':16s} {'python':>9s} {'run':>9s} {'ratio':>7s}  target <= 1.10")
    for name in PROGRAMS:
        prog = os.path.join(HERE, "pure", name)
        p, r = alternate([py, prog], run + [prog], rounds, env)
        met = r / p <= 1.10
        ok &= met
        progs.append({"program": name, "python_ms": p * 1e3, "run_ms": r * 1e3, "ratio": r / p,
                      "met": met})
        print(f"{name:16s} {p * 1e3:7.0f}ms {r * 1e3:7.0f}ms {r / p:7.3f}  "
              f"{'MET' if met else 'NOT MET'}", flush=True)
    print(f"\nwith NumPy imported first (the hook awake)")
    wrap = os.path.join(HERE, "pure", "with_numpy.py")
    for name in AWAKE[:2] if quick else AWAKE:
        prog = os.path.join(HERE, "pure", name)
        p, r = alternate([py, wrap, prog], run + [wrap, prog], rounds, env)
        met = r / p <= 1.10
        ok &= met
        progs.append({"program": "+numpy " + name, "python_ms": p * 1e3, "run_ms": r * 1e3,
                      "ratio": r / p, "met": met})
        print(f"{'+numpy ' + name:16s} {p * 1e3:7.0f}ms {r * 1e3:7.0f}ms {r / p:7.3f}  "
              f"{'MET' if met else 'NOT MET'}", flush=True)
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write("pass\n")
        empty = f.name
    try:
        p, r = alternate([py, empty], run + [empty], max(rounds, 9), env)
    finally:
        os.unlink(empty)
    startup = max(0.0, r - p)
    met = startup <= 0.020
    ok &= met
    start_row = {"python_ms": p * 1e3, "run_ms": r * 1e3, "added_ms": startup * 1e3, "met": met}
    print(f"\nstart-up: python {p * 1e3:.1f} ms, run {r * 1e3:.1f} ms: +{startup * 1e3:.1f} ms  "
          f"target <= +20 ms {'MET' if met else 'NOT MET'}")
    print(f"\n{'unittest module':22s} {'python':>9s} {'run':>9s} {'(run-startup)/python':>21s}"
          f"  target <= 1.10")
    for mod in UNITTESTS[:2] if quick else UNITTESTS:
        p, r = alternate([py, "-m", "unittest", "-q", mod],
                         run + ["-m", "unittest", "-q", mod], rounds, env)
        ratio = (r - startup) / p
        met = ratio <= 1.10
        ok &= met
        units.append({"module": mod, "python_ms": p * 1e3, "run_ms": r * 1e3, "ratio": ratio,
                      "met": met})
        print(f"{mod:22s} {p * 1e3:7.0f}ms {r * 1e3:7.0f}ms {ratio:21.3f}  "
              f"{'MET' if met else 'NOT MET'}", flush=True)
    print("\nall targets MET" if ok else "\nsome targets NOT MET")
    C = _results.column
    _results.write(
        "run_mode", "Whole programs under `framejit run`",
        size=f"{'--quick, ' if quick else ''}{rounds} alternating rounds",
        tables=[_results.table(f"CPU time (user + sys) of the child, median of {rounds} alternating "
                               "runs each",
                               [C("program", "program"), C("python_ms", "python ms", ".0f"),
                                C("run_ms", "run ms", ".0f"), C("ratio", "ratio", ".3f"),
                                C("met", "<= 1.10")], progs),
                _results.table("start-up (an empty program)",
                               [C("python_ms", "python ms", ".1f"), C("run_ms", "run ms", ".1f"),
                                C("added_ms", "added ms", "+.1f"), C("met", "<= +20 ms")],
                               [start_row]),
                _results.table("CPython unittest modules: (run - start-up) / python",
                               [C("module", "module"), C("python_ms", "python ms", ".0f"),
                                C("run_ms", "run ms", ".0f"), C("ratio", "ratio", ".3f"),
                                C("met", "<= 1.10")], units)],
        targets=[_results.target("each program at most 1.10x",
                                 f"{min(p['ratio'] for p in progs):.3f}-"
                                 f"{max(p['ratio'] for p in progs):.3f}x",
                                 all(p["met"] for p in progs)),
                 _results.target("start-up at most +20 ms", f"+{startup * 1e3:.1f} ms",
                                 start_row["met"]),
                 _results.target("a unittest module at most 1.1x plain + start-up",
                                 f"{min(u['ratio'] for u in units):.3f}-"
                                 f"{max(u['ratio'] for u in units):.3f}x",
                                 all(u["met"] for u in units))],
        data={"programs": progs, "startup": start_row, "unittests": units, "rounds": rounds})
    return 0


if __name__ == "__main__":
    sys.exit(main())
