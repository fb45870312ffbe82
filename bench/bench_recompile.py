"""Recompiles and the cache (issue #5), as ratios to a plain call, one run.

(a) warm call with 8 cache entries where only the last one (oldest) hits:
    a function compiled with dynamic=False for n = 0..7, then called with the
    first n, so 7 guard trees fail before the hit (move-to-front then makes
    later calls hit first: we measure the worst case by alternating values).
(b) a guard miss that falls back: past the recompile limit the code is
    run-only, a miss runs the original code in CPython after walking every
    entry.
(c) the time to recompile: a call whose guard fails and compiles a new
    entry (median over fresh recompiles).

Run: python3 bench/bench_recompile.py [--quick]
Writes bench/results/recompile.json (bench/_results.py).
"""
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _results  # noqa: E402
import framejit  # noqa: E402
from framejit._C import eval_frame  # noqa: E402

perf = time.perf_counter_ns
QUICK = "--quick" in sys.argv
N = 20_000 if QUICK else 200_000


def f(x, n):
    return x * n


def loop(fn, args_cycle, n):
    k = len(args_cycle)
    t0 = perf()
    for i in range(n):
        fn(*args_cycle[i % k])
    return (perf() - t0) / n


def best(fn, args_cycle, n, rounds=5):
    return min(loop(fn, args_cycle, n) for _ in range(rounds))


def main():
    _results.start()
    x = np.ones(4)
    plain = best(f, [(x, 3)], N)

    # (a) 8 entries; cycling through the 8 values in order makes every hit the least
    # recently used entry, at the back (7 guard misses first)
    framejit.reset()
    cf = framejit.compile(f, dynamic=False)
    for n in range(8):
        cf(x, n)
    assert len(eval_frame._debug_get_cache_entry_list(f.__code__)) == 8
    front = best(cf, [(x, 7)], N)
    worst = best(cf, [(x, n) for n in range(8)], N)  # round robin: every hit is the LRU entry

    # (b) past the limit: run-only, a miss walks all 8 entries and runs CPython
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cf(x, 100)  # hits the limit: run-only from now on
    miss = best(cf, [(x, 1000 + 1)], N)

    # (c) recompile time: a guard miss that compiles (fresh each time after reset)
    def recompile_time(backend):
        times = []
        for i in range(200 if not QUICK else 40):
            framejit.reset()
            cg = framejit.compile(f, dynamic=False, backend=backend)
            cg(x, 2)
            t0 = perf()
            cg(x, 3)
            times.append(perf() - t0)
        return statistics.median(times), len(times)
    recompile, nrec = recompile_time("eager")
    recompile_native, _ = recompile_time("native")  # the default: a plan, its kernel from the disk cache

    print(f"bench_recompile: CPython {sys.version.split()[0]}, NumPy {np.__version__}")
    print(f"  {'variant':44s} {'ns/call':>9s} {'x plain':>8s}")
    rows = [("plain call f(x, n)", plain),
            ("8 entries, hit at the front", front),
            ("8 entries, hit at the back (7 guard misses)", worst),
            ("run-only miss (8 misses, then CPython)", miss)]
    for name, t in rows:
        print(f"  {name:44s} {t:9.0f} {t / plain:8.2f}")
    print(f"  recompile (guard miss + new entry), median: {recompile / 1000:.1f} us eager "
          f"({recompile / plain:.0f}x a plain call), {recompile_native / 1000:.1f} us native")
    C = _results.column
    _results.write(
        "recompile", "Recompiles and the cache", size="--quick" if QUICK else "full",
        tables=[_results.table(f"`def f(x, n): return x * n`, dynamic=False, x = np.ones(4); best "
                               f"of 5 x {N:,} calls",
                               [C("variant", "variant"), C("ns", "ns/call", ".0f"),
                                C("ratio", "x plain", ".2f")],
                               [{"variant": name, "ns": t, "ratio": t / plain} for name, t in rows])],
        notes=[f"recompile (a guard miss that traces and installs a new entry), median over "
               f"{nrec} fresh recompiles: {recompile / 1000:.1f} µs with the eager backend, "
               f"{recompile_native / 1000:.1f} µs with native (the default: its plan, and "
               f"the kernel loaded from the disk cache)"],
        data={"calls_ns": dict(rows), "recompile_ns": recompile,
              "recompile_native_ns": recompile_native, "calls": N})


if __name__ == "__main__":
    main()
