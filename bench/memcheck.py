"""Memory stays flat over many warm calls, cache misses and compiles.

Phases (each after a warm-up, RSS printed at checkpoints):
  warm      1,000,000 warm calls of a compiled function (cache hit)
  miss      10,000 calls whose cached entry's guard fails (EQUALS_MATCH on
            an int that differs every call), the callback then declining
            (returns None), plus framejit.compile over varying ints with
            a framejit.reset() every 50 calls (recompiles past the entries)
  compile   10,000 compiles of a 3-op function, each followed by
            framejit.reset()
  breaks    10,000 calls of a function with a graph break (graph, the
            break in CPython, the resume function's graph), and 10,000
            compiles of it (each call after a framejit.reset(): the break
            code and resume function made anew)
Then a shorter pass of the same under tracemalloc (Python-level
allocations, which RSS hides behind the allocator's pools).

Exits 1 when RSS grows by more than RSS_LIMIT_MB in a phase (after its
warm-up) or tracemalloc's traced size by more than TRACED_LIMIT_KB.
Run: python3 bench/memcheck.py [--quick]
Writes bench/results/memcheck.json (bench/_results.py).
"""
import gc
import os
import sys
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _results  # noqa: E402
import framejit  # noqa: E402
from framejit import _C  # noqa: E402
from framejit._C import eval_frame  # noqa: E402

RSS_LIMIT_MB = 20.0
TRACED_LIMIT_KB = 512.0
PAGE = os.sysconf("SC_PAGE_SIZE")
ROWS = {}  # phase -> {"calls", "rss_mb", "traced_kb", ...}: the result file's table


def rss_mb():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * PAGE / 2**20


def f3(x):
    return np.sin(x) * 2 + 1


def fn_int(x, n):
    return x


def fn_var(x, n):
    return x * n


X = np.ones(4)


def warm_calls(n, cf):
    for _ in range(n):
        cf(X)


def misses(n):
    """n calls of fn_int whose one cached entry (n == 3) fails every time."""
    root = _C.RootGuardManager()
    root.local(1, "n").add_equals_match(3)
    code = fn_int.__code__
    installed = []
    eval_frame.reset_code(code)  # one entry per run: forget the previous run's

    def cb(frame, cache_entry, frame_state):
        if frame.f_code is code and not installed:
            installed.append(1)
            return (code, root, "0/0")
        return None  # after the first: decline, the frame runs as it is
    prior = eval_frame.set_eval_frame(cb)
    try:
        fn_int(X, 3)
        for i in range(n):
            fn_int(X, 1000 + i)
    finally:
        eval_frame.set_eval_frame(prior)
    assert len(eval_frame._debug_get_cache_entry_list(code)) == 1


def recompiles(n):
    cf = framejit.compile(fn_var, backend="eager")
    for i in range(n):
        if i % 50 == 0:
            framejit.reset()
        cf(X, i)


def compiles(n):
    cf = framejit.compile(f3, backend="eager")
    for _ in range(n):
        cf(X)
        framejit.reset()


def brk(x):
    y = x * 2 + 1
    str(y.shape)  # graph break: str() of a tuple runs in CPython
    return y - x


def breaks(n):
    cf = framejit.compile(brk, backend="eager")
    for _ in range(n):
        cf(X)


def break_compiles(n):
    cf = framejit.compile(brk, backend="eager")
    for _ in range(n):
        cf(X)
        framejit.reset()


def phase(name, fn, n, checkpoints=5):
    fn(max(n // 20, 1))  # warm-up: caches, pools, interned strings
    gc.collect()
    base = rss_mb()
    t0 = time.perf_counter()
    line = [f"{base:7.1f}"]
    step = max(n // checkpoints, 1)
    done = 0
    while done < n:
        fn(min(step, n - done))
        done += step
        gc.collect()
        line.append(f"{rss_mb():7.1f}")
    growth = rss_mb() - base
    ok = growth <= RSS_LIMIT_MB
    ROWS.setdefault(name, {"phase": name})
    ROWS[name].update(calls=n, rss_mb=growth, rss_checkpoints=" ".join(x.strip() for x in line),
                      rss_ok=ok)
    print(f"  {name:<9}{n:>10,}  RSS MB: {' '.join(line)}  growth {growth:+.2f} MB "
          f"({time.perf_counter() - t0:.1f} s) {'ok' if ok else 'FAIL'}")
    return ok


def traced(name, fn, n):
    fn(max(n // 10, 1))
    gc.collect()
    tracemalloc.start()
    fn(max(n // 10, 1))
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    fn(n)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    kb = (after - before) / 1024
    ok = kb <= TRACED_LIMIT_KB
    ROWS.setdefault(name, {"phase": name})
    ROWS[name].update(traced_calls=n, traced_kb=kb, traced_ok=ok)
    print(f"  {name:<9}{n:>10,}  traced {before / 1024:8.1f} KB -> {after / 1024:8.1f} KB  "
          f"growth {kb:+.1f} KB {'ok' if ok else 'FAIL'}")
    return ok


def main():
    _results.start()
    quick = "--quick" in sys.argv
    scale = 10 if quick else 1
    framejit.reset()
    cf = framejit.compile(f3, backend="eager")
    np.testing.assert_allclose(cf(X), f3(X))
    print(f"memcheck: RSS at start {rss_mb():.1f} MB; limits: RSS +{RSS_LIMIT_MB} MB "
          f"per phase, tracemalloc +{TRACED_LIMIT_KB} KB")
    ok = True
    ok &= phase("warm", lambda n: warm_calls(n, cf), 1_000_000 // scale)
    ok &= phase("miss", misses, 10_000 // scale)
    ok &= phase("recompile", recompiles, 10_000 // scale)
    ok &= phase("compile", compiles, 10_000 // scale)
    framejit.reset()
    np.testing.assert_allclose(framejit.compile(brk)(X), brk(X))
    ok &= phase("breaks", breaks, 10_000 // scale)
    ok &= phase("brk-comp", break_compiles, 10_000 // scale)
    print("tracemalloc (Python allocations):")
    framejit.reset()
    cf = framejit.compile(f3, backend="eager")
    cf(X)
    ok &= traced("warm", lambda n: warm_calls(n, cf), 100_000 // scale)
    ok &= traced("miss", misses, 2_000 // scale)
    ok &= traced("recompile", recompiles, 2_000 // scale)
    ok &= traced("compile", compiles, 2_000 // scale)
    ok &= traced("breaks", breaks, 2_000 // scale)
    ok &= traced("brk-comp", break_compiles, 2_000 // scale)
    framejit.reset()
    print(f"memcheck: {'OK' if ok else 'FAILED'} (RSS at end {rss_mb():.1f} MB)")
    C = _results.column
    _results.write(
        "memcheck", "Memory", size="--quick" if quick else "full",
        tables=[_results.table("growth per phase after its warm-up (RSS) and under tracemalloc",
                               [C("phase", "phase"), C("calls", "calls", ","),
                                C("rss_mb", "RSS growth MB", "+.2f"),
                                C("rss_checkpoints", "RSS MB at checkpoints"),
                                C("traced_calls", "traced calls", ","),
                                C("traced_kb", "traced growth KB", "+.1f")], list(ROWS.values()))],
        targets=[_results.target(f"memory flat: every phase within +{RSS_LIMIT_MB:g} MB RSS and "
                                 f"+{TRACED_LIMIT_KB:g} KB traced",
                                 f"largest RSS growth {max(r['rss_mb'] for r in ROWS.values()):+.2f} MB, "
                                 f"traced {max(r['traced_kb'] for r in ROWS.values()):+.1f} KB", ok)],
        data={"phases": ROWS})
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
