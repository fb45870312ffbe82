"""Two builds of framejit side by side: warm-call overhead and compile time.

    python3 bench/compare_builds.py OLD_DIR NEW_DIR [--rounds N]

Writes bench/results/compare_builds.json (bench/_results.py), which
bench/report.py shows as the "build against build" table.

Each DIR is a checkout with its extension built in place (for example
``git worktree add /tmp/old <rev> && cd /tmp/old && python3 setup.py
build_ext --inplace``).  Every round runs one measuring process per build,
alternating which goes first, so both see the same machine; the table gives
the median over rounds of each figure and the ratio NEW / OLD.

Figures (eager backend, np.ones(4), so the overhead shows):
- warm 1-op / 20-op: ns per call of a compiled function minus the plain call
  (bench/bench_compile.py's np1 and np20), plain and compiled loops of about
  10 ms interleaved, best of 15 each, in the process;
- compile 1-op / 20-op: µs of the first call after framejit.reset() minus a
  plain call, median of 60 compiles;
- hooked call: ns per call of a pure-Python function with the hook on and
  its code cached as run-as-is (``framejit.compile`` of a function with no
  array work).
"""
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import _results  # noqa: E402

MEASURE = r'''
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
import numpy as np
import framejit
from bench_compile import np1, np20
perf = time.perf_counter_ns
x = np.ones(4)

def loop(fn, n):
    t = perf()
    for _ in range(n):
        fn(x)
    return (perf() - t) / n

def per_call(fn, n=20000):
    return min(loop(fn, n) for _ in range(5))

def added(plain, compiled, rounds=15):
    """ns a compiled call adds: plain and compiled loops interleaved, about
    10 ms each, best of 'rounds' each (a quiet moment counts for both)."""
    compiled(x)
    n = max(500, int(10e6 / loop(plain, 200)))
    bp = bc = float("inf")
    for _ in range(rounds):
        bp = min(bp, loop(plain, n))
        bc = min(bc, loop(compiled, n))
    return bc - bp

def compile_us(fn, n=60):
    plain = per_call(fn, 2000)
    out = []
    for _ in range(n):
        framejit.reset()
        cf = framejit.compile(fn, backend="eager")
        t = perf()
        cf(x)
        out.append((perf() - t - plain) / 1e3)
    return statistics.median(out)

def pure(v):
    return v

res = {}
for name, fn in (("1-op", np1), ("20-op", np20)):
    res["warm " + name + " (ns)"] = added(fn, framejit.compile(fn, backend="eager"))
    res["compile " + name + " (us)"] = compile_us(fn)
res["hooked pure call (ns)"] = added(pure, framejit.compile(pure, backend="eager"))
print(json.dumps(res))
'''


def run(build, env):
    r = subprocess.run([sys.executable, "-c", MEASURE, build, HERE], capture_output=True,
                       text=True, env=env, cwd=build)
    if r.returncode != 0:
        raise RuntimeError(f"{build}: {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    argv = sys.argv[1:]
    rounds = 5
    if "--rounds" in argv:
        i = argv.index("--rounds")
        rounds = int(argv[i + 1])
        del argv[i:i + 2]
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 2:
        print(__doc__)
        return 2
    _results.start()
    old, new = (os.path.abspath(a) for a in args)
    env = dict(os.environ, FRAMEJIT_BACKEND="eager")
    got = {old: [], new: []}
    for i in range(rounds):
        for b in ((old, new) if i % 2 == 0 else (new, old)):
            got[b].append(run(b, dict(env, PYTHONPATH=b)))
    keys = list(got[old][0])
    old_rev, new_rev = _results.commit(old), _results.commit(new)
    print(f"median of {rounds} alternating rounds; OLD={old} ({old_rev}) NEW={new} ({new_rev})")
    print(f"{'figure':26s} {'old':>10s} {'new':>10s} {'new/old':>8s}")
    rows = []
    for k in keys:
        o = statistics.median(r[k] for r in got[old])
        n = statistics.median(r[k] for r in got[new])
        ratio = n / o if o else None
        print(f"{k:26s} {o:10.1f} {n:10.1f} {ratio if ratio is not None else float('nan'):8.2f}")
        rows.append({"figure": k, "old": o, "new": n, "ratio": ratio,
                     "old_spread": _spread(r[k] for r in got[old]),
                     "new_spread": _spread(r[k] for r in got[new])})
    C = _results.column
    _results.write(
        "compare_builds", "Build against build", size=f"{rounds} alternating rounds",
        tables=[_results.table(
            f"old = {old_rev}, new = {new_rev}: median of {rounds} rounds "
            "(min-max over the rounds in brackets)",
            [C("figure", "figure"), C("old", f"old {old_rev}", ".1f"), C("old_spread", "old range"),
             C("new", f"new {new_rev}", ".1f"), C("new_spread", "new range"),
             C("ratio", "new / old", ".2f")], rows)],
        data={"old": {"dir": old, "commit": old_rev, "rounds": got[old]},
              "new": {"dir": new, "commit": new_rev, "rounds": got[new]}})
    return 0


def _spread(values):
    v = list(values)
    return f"{min(v):.1f}-{max(v):.1f}"


if __name__ == "__main__":
    sys.exit(main())
