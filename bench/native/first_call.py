"""First calls of the native backend against eager's (issue 23, tiered
compilation: docs/native.md "Tiered compilation").

Each measurement is a fresh process compiling one function (so every column
pays the same one-time costs of a first compile in a process), median of
REPS processes:

    eager            backend="eager": the first call (trace, guards, run)
    native tiered    backend="native", config.native_background True (the
                     default), kernels not in the disk cache: the first call
                     runs the graph eagerly while a thread builds the kernels
    native cached    the same with the kernels in the disk cache (loaded by
                     the thread; the first call still runs eager)
    native blocking  config.native_background False, kernels not cached: the
                     first call waits for the C compiler (the old behaviour)
    kernels ready    tiered: from the first call's start until the kernels
                     are loaded (native.wait())

Functions: c3 = (a*b + c)*0.5 (one group), softmax and layer norm over rows
(one row group each), and unrolled: a loop of 12 iterations of
x = np.maximum(x @ w * 0.5 + b, 0.0) - 0.25 on (64, 64), unrolled into 12
identical groups between the matmuls (compiled once).

Run: python3 bench/native/first_call.py [--quick]
Writes bench/results/native_first_call.json (bench/_results.py).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))

import _results  # noqa: E402

QUICK = "--quick" in sys.argv
REPS = 3 if QUICK else 11

CHILD = r'''
import os, sys, time, json
import numpy as np
t_import = time.perf_counter()
import framejit
from framejit import native
mode, fname, salt = sys.argv[1], sys.argv[2], float(sys.argv[3])
framejit.config.native_background = mode != "blocking"
SRC = {
 "c3": "def f(a, b, c):\n    return (a * b + c) * (0.5 + SALT)\n",
 "softmax": "def f(a, b, c):\n    e = np.exp(a - a.max(axis=-1, keepdims=True) + SALT)\n    return e / e.sum(axis=-1, keepdims=True)\n",
 "layer_norm": "def f(a, b, c):\n    mu = a.mean(axis=-1, keepdims=True)\n    var = ((a - mu) ** 2).mean(axis=-1, keepdims=True)\n    return (a - mu) / np.sqrt(var + 1e-5 + SALT) * b + c\n",
 "unrolled": "def f(a, b, c):\n    x = a\n    for k in range(12):\n        x = np.maximum(x @ b * (0.5 + SALT) + c, 0.0) - 0.25\n    return x\n",
}[fname].replace("SALT", repr(salt))
ns = {"np": np}
exec(compile(SRC, "<bench>", "exec"), ns)
f = ns["f"]
shape = (200, 100) if fname in ("softmax", "layer_norm") else (20000,)
rng = np.random.default_rng(0)
a = rng.standard_normal(shape); b = rng.standard_normal(shape[-1:]); c = rng.standard_normal(shape[-1:])
if fname == "c3":
    b = rng.standard_normal(shape); c = rng.standard_normal(shape)
if fname == "unrolled":
    a = rng.random((64, 64)); b = rng.random((64, 64)) / 32; c = rng.random(64)
cf = framejit.compile(f, backend="eager" if mode == "eager" else "native")
t0 = time.perf_counter()
r = cf(a, b, c)
t1 = time.perf_counter()
ok = np.array_equal(r, f(a, b, c))
native.wait(600)
t2 = time.perf_counter()
print(json.dumps({"first": t1 - t0, "ready": t2 - t0, "ok": bool(ok),
                  "counters": dict(framejit.counters["native"])}))
'''


def run(mode, fname, salt, cache):
    env = dict(os.environ, PYTHONPATH=ROOT, FRAMEJIT_CACHE_DIR=cache, OMP_NUM_THREADS="1")
    env.pop("FRAMEJIT_NATIVE_BACKGROUND", None)
    r = subprocess.run([sys.executable, "-c", CHILD, mode, fname, repr(salt)], capture_output=True, text=True,
                       env=env, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["ok"], (mode, fname)
    return out


def main():
    _results.start()
    rows = []
    print(f"{'function':11} {'eager':>9} {'tiered':>9} {'cached':>9} {'blocking':>10} {'ready':>9}  (ms, median)")
    cache = tempfile.mkdtemp(prefix="fj-first-call-")
    run("eager", "c3", 0.0, cache)        # the compiler probe, remembered in the cache dir
    run("tiered", "c3", 12345.0, cache)
    for fname in ("c3", "softmax", "layer_norm", "unrolled"):
        t = {"eager": [], "tiered": [], "cached": [], "blocking": [], "ready": []}
        for i in range(REPS):
            salt = 1e-12 * (i + 1) + hash(fname) % 1000 * 1e-9
            t["eager"].append(run("eager", fname, salt, cache)["first"])
            cold = run("tiered", fname, salt, cache)  # kernels not cached: built by the thread
            t["tiered"].append(cold["first"])
            t["ready"].append(cold["ready"])
            t["cached"].append(run("tiered", fname, salt, cache)["first"])  # now cached
            t["blocking"].append(run("blocking", fname, salt + 0.5, cache)["first"])
        med = {k: statistics.median(v) * 1e3 for k, v in t.items()}
        row = {"function": fname, **{f"{k}_ms": v for k, v in med.items()},
               "tiered_vs_eager": med["tiered"] / med["eager"], "cached_vs_eager": med["cached"] / med["eager"]}
        rows.append(row)
        print(f"{fname:11} {med['eager']:>9.2f} {med['tiered']:>9.2f} {med['cached']:>9.2f} {med['blocking']:>10.1f} "
              f"{med['ready']:>9.1f}", flush=True)
    C = _results.column
    worst = max(max(r["tiered_vs_eager"], r["cached_vs_eager"]) for r in rows)
    targets = [_results.target(
        "a first call (tiered) costs at most eager's first call plus 10%",
        f"worst {worst:.2f}x eager's", worst <= 1.10)]
    _results.write(
        "native_first_call", "First calls of the native backend", size="--quick" if QUICK else "full",
        tables=[_results.table(
            f"median of {REPS} fresh processes each; milliseconds",
            [C("function", "function"), C("eager_ms", "eager first call", ".2f"),
             C("tiered_ms", "native first call (tiered, kernels built)", ".2f"),
             C("cached_ms", "native first call (tiered, kernels cached)", ".2f"),
             C("blocking_ms", "native first call (blocking compile)", ".1f"),
             C("ready_ms", "kernels loaded after (tiered)", ".1f"),
             C("tiered_vs_eager", "tiered / eager", ".2f")], rows)],
        targets=targets, data={"rows": rows})


if __name__ == "__main__":
    main()
