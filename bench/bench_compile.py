"""Compile time and warm-call overhead of framejit.compile (issue #3),
side by side with torch.compile(backend="eager") where torch is installed.

(a) first-call compile time of a 20-operation NumPy function with the eager
    backend: median over fresh compiles, each after framejit.reset(), as
    (first call through the wrapper) - (median plain call).
(b) warm calls of compiled 1-op and 20-op functions on np.ones(4) (tiny
    arrays, so the overhead shows) against plain calls; interleaved, best
    of rounds.
(c) the same functions written with torch ops, torch.compile(backend="eager"):
    compile time (median after torch._dynamo.reset()) and warm overhead,
    and the ratios framejit vs torch.compile.  Skipped (with a message) when
    torch is not installed.

Run: python3 bench/bench_compile.py [--quick]
Writes bench/results/compile.json (bench/_results.py).
"""
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _results  # noqa: E402
import framejit  # noqa: E402

perf = time.perf_counter_ns

TARGET_COMPILE_MS = 1.0
TARGET_WARM_RATIO = 1.3
TARGET_COMPILE_SPEEDUP = 100
TARGET_OVERHEAD_SPEEDUP = 10


def np1(x):
    return x + 1


def np20(x):
    y = np.sin(x)
    y = y * 2
    y = y + 1
    y = np.cos(y)
    y = y - 0.5
    y = np.exp(y)
    y = y / 3
    y = np.tanh(y)
    y = y * y
    y = y + x
    y = np.abs(y)
    y = np.sqrt(y)
    y = y - 1
    y = np.maximum(y, x)
    y = y * 0.25
    y = np.log1p(y)
    y = -y
    y = np.square(y)
    y = y + 2
    y = np.floor(y)
    return y


def make_torch_fns(torch):
    def t1(x):
        return x + 1

    def t20(x):
        y = torch.sin(x)
        y = y * 2
        y = y + 1
        y = torch.cos(y)
        y = y - 0.5
        y = torch.exp(y)
        y = y / 3
        y = torch.tanh(y)
        y = y * y
        y = y + x
        y = torch.abs(y)
        y = torch.sqrt(y)
        y = y - 1
        y = torch.maximum(y, x)
        y = y * 0.25
        y = torch.log1p(y)
        y = -y
        y = torch.square(y)
        y = y + 2
        y = torch.floor(y)
        return y
    return t1, t20


def time_call(fn, x):
    t0 = perf()
    fn(x)
    return perf() - t0


def median_plain(fn, x, n=2000):
    fn(x)
    return statistics.median(time_call(fn, x) for _ in range(n))


def loop(fn, x, r):
    t0 = perf()
    for _ in r:
        fn(x)
    return perf() - t0


def warm_table(pairs, x, n_calls, rounds):
    """pairs: {label: (plain, compiled)} -> {label: (plain ns, compiled ns)}"""
    r = range(n_calls)
    best = {k: [float("inf"), float("inf")] for k in pairs}
    for k, (p, c) in pairs.items():
        c(x)  # compile outside the timing
    for _ in range(rounds):
        for k, (p, c) in pairs.items():
            best[k][0] = min(best[k][0], loop(p, x, r) / n_calls)
            best[k][1] = min(best[k][1], loop(c, x, r) / n_calls)
    return best


# ------------------------------------------------------------ framejit

def fj_compile_times(fn, x, n):
    """Median ns of the first call after framejit.reset() minus a plain call."""
    plain = median_plain(fn, x)
    cf = framejit.compile(fn, backend="eager")
    times = []
    for _ in range(n):
        framejit.reset()
        times.append(time_call(cf, x))
    assert framejit.counters["stats"]["unique_graphs"] == 1, dict(framejit.counters["stats"])
    # a wrapper made per compile: includes building the Compiler object
    t_new = []
    for _ in range(max(n // 4, 5)):
        framejit.reset()
        t0 = perf()
        framejit.compile(fn, backend="eager")(x)
        t_new.append(perf() - t0)
    return statistics.median(times) - plain, min(times) - plain, statistics.median(t_new) - plain


def check_framejit_graphs(x):
    framejit.reset()
    cf = framejit.compile(np20, backend="eager")
    np.testing.assert_allclose(cf(x), np20(x))
    calls = framejit.counters["stats"]["calls_captured"]
    framejit.reset()
    return calls


# --------------------------------------------------------------- torch

def torch_part(n_compiles, n_calls, rounds, fj):
    try:
        import torch
        import torch._dynamo
    except ImportError:
        print("(c) torch not installed: torch.compile comparison skipped")
        return None, None
    torch.set_num_threads(1)
    t1, t20 = make_torch_fns(torch)
    x = torch.ones(4)
    print(f"(c) torch {torch.__version__}, torch.compile(backend='eager') on torch.ones(4)")
    times = []
    plain = median_plain(t20, x, 500)
    for _ in range(n_compiles):
        torch._dynamo.reset()
        cf = torch.compile(t20, backend="eager")
        times.append(time_call(cf, x) - plain)
    torch_compile = statistics.median(times)
    warm = warm_table({"1 op": (t1, torch.compile(t1, backend="eager")),
                       "20 ops": (t20, torch.compile(t20, backend="eager"))},
                      x, n_calls, rounds)
    torch._dynamo.reset()
    print(f"    compile, 20 ops: median {torch_compile / 1e6:.1f} ms "
          f"(min {min(times) / 1e6:.1f} ms, {n_compiles} compiles)")
    for k, (p, c) in warm.items():
        print(f"    warm {k:<7} plain {p / 1e3:7.2f} us  compiled {c / 1e3:7.2f} us  "
              f"{c / p:5.2f}x  (+{(c - p) / 1e3:.2f} us)")
    print()
    print("    framejit vs torch.compile (both eager backend)")
    sp_compile = torch_compile / fj["compile"]
    print(f"    {'':<26}{'framejit':>12}{'torch':>12}{'framejit faster':>17}")
    print(f"    {'compile 20 ops':<26}{fj['compile'] / 1e3:9.0f} us{torch_compile / 1e3:9.0f} us"
          f"{sp_compile:15.0f}x")
    ok = sp_compile >= TARGET_COMPILE_SPEEDUP
    sp_over = []
    for k in warm:
        fo = max(fj["warm"][k][1] - fj["warm"][k][0], 1.0)
        to = warm[k][1] - warm[k][0]
        sp_over.append(to / fo)
        print(f"    {'warm overhead ' + k:<26}{fo:9.0f} ns{to:9.0f} ns{to / fo:15.0f}x")
    ok_over = min(sp_over) >= TARGET_OVERHEAD_SPEEDUP
    print(f"    target: compiles >= {TARGET_COMPILE_SPEEDUP}x faster: "
          f"{'MET' if ok else 'NOT MET'} ({sp_compile:.0f}x); warm overhead >= "
          f"{TARGET_OVERHEAD_SPEEDUP}x lower: {'MET' if ok_over else 'NOT MET'} "
          f"({min(sp_over):.0f}x)")
    rows = [{"figure": "compile, 20 ops (median)", "framejit": f"{fj['compile'] / 1e3:.0f} µs",
             "torch": f"{torch_compile / 1e6:.1f} ms", "speedup": sp_compile}]
    for (k, sp) in zip(warm, sp_over):
        p, c = warm[k]
        rows.append({"figure": f"warm overhead, {k}",
                     "framejit": f"{max(fj['warm'][k][1] - fj['warm'][k][0], 1.0):.0f} ns",
                     "torch": f"{(c - p) / 1e3:.1f} µs ({p / 1e3:.1f} → {c / 1e3:.1f} µs)",
                     "speedup": sp})
    res = {"torch": torch.__version__, "rows": rows,
           "targets": [_results.target(f"compiles >= {TARGET_COMPILE_SPEEDUP}x faster than "
                                       "torch.compile (eager backend, 20 ops)",
                                       f"{sp_compile:.0f}x", ok),
                       _results.target(f"warm overhead >= {TARGET_OVERHEAD_SPEEDUP}x lower than "
                                       "torch.compile", " / ".join(f"{k}: {x:.0f}x" for k, x in
                                                                  zip(warm, sp_over)), ok_over)]}
    return ok and ok_over, res


def main():
    _results.start()
    quick = "--quick" in sys.argv
    n_compiles = 50 if quick else 200
    n_calls = 50_000 if quick else 200_000
    rounds = 3 if quick else 5
    x = np.ones(4)
    print(f"bench_compile: CPython {sys.version.split()[0]}, NumPy {np.__version__}, "
          f"{os.cpu_count()} cpus")
    calls = check_framejit_graphs(x)
    med, best, with_new = fj_compile_times(np20, x, n_compiles)
    med1, _, _ = fj_compile_times(np1, x, n_compiles)
    print(f"(a) framejit first-call compile, eager backend ({n_compiles} compiles after "
          f"framejit.reset(), first call minus a plain call)")
    print(f"    20 ops ({calls} calls captured): median {med / 1e3:.0f} us, min {best / 1e3:.0f} us;"
          f" with a new framejit.compile() each time {with_new / 1e3:.0f} us")
    print(f"    1 op: median {med1 / 1e3:.0f} us")
    ok_c = med / 1e6 < TARGET_COMPILE_MS
    print(f"    target: compile < {TARGET_COMPILE_MS} ms: {'MET' if ok_c else 'NOT MET'} "
          f"({med / 1e6:.3f} ms)")
    framejit.reset()
    warm = warm_table({"1 op": (np1, framejit.compile(np1, backend="eager")),
                       "20 ops": (np20, framejit.compile(np20, backend="eager"))},
                      x, n_calls // 4, rounds)
    print()
    print(f"(b) framejit warm call on np.ones(4) (best of {rounds} x {n_calls // 4:,} calls)")
    ok_w = True
    for k, (p, c) in warm.items():
        ok_w = ok_w and c / p <= TARGET_WARM_RATIO
        print(f"    {k:<7} plain {p:8.0f} ns  compiled {c:8.0f} ns  {c / p:5.2f}x  "
              f"(+{c - p:.0f} ns)")
    print(f"    target: warm call <= {TARGET_WARM_RATIO}x plain: {'MET' if ok_w else 'NOT MET'}")
    framejit.reset()
    print()
    ok_t, vs_torch = torch_part(10 if quick else 20, n_calls // 10, rounds,
                                {"compile": med, "warm": warm})
    print()
    print(f"bench_compile targets: compile {'MET' if ok_c else 'NOT MET'}, warm "
          f"{'MET' if ok_w else 'NOT MET'}, vs torch "
          f"{'skipped' if ok_t is None else 'MET' if ok_t else 'NOT MET'}")
    C = _results.column
    compile_rows = [{"function": f"20 ops ({calls} calls captured)", "median": med / 1e3,
                     "min": best / 1e3, "new_wrapper": with_new / 1e3},
                    {"function": "1 op (`x + 1`)", "median": med1 / 1e3, "min": None,
                     "new_wrapper": None}]
    warm_rows = [{"function": k, "plain": p, "compiled": c, "ratio": c / p, "added": c - p}
                 for k, (p, c) in warm.items()]
    tables = [_results.table(f"first-call compile, eager backend, µs ({n_compiles} compiles after "
                             "framejit.reset(), first call minus a plain call)",
                             [C("function", "function"), C("median", "median", ".0f"),
                              C("min", "min", ".0f"),
                              C("new_wrapper", "with a new framejit.compile() each time", ".0f")],
                             compile_rows),
              _results.table(f"warm calls on np.ones(4), ns (best of {rounds} x {n_calls // 4:,} "
                             "calls, interleaved)",
                             [C("function", "function"), C("plain", "plain", ".0f"),
                              C("compiled", "compiled", ".0f"), C("ratio", "ratio", ".2f"),
                              C("added", "added", "+.0f")], warm_rows)]
    targets = [_results.target(f"first-call compile of a 20-op NumPy function < {TARGET_COMPILE_MS:g} ms",
                               f"median {med / 1e3:.0f} µs", ok_c),
               _results.target(f"warm call within {TARGET_WARM_RATIO}x of plain (np.ones(4))",
                               "; ".join(f"{r['function']}: {r['ratio']:.2f}x ({r['added']:+.0f} ns)"
                                         for r in warm_rows), ok_w)]
    notes = []
    if vs_torch:
        tables.append(_results.table(f"against torch.compile(backend=\"eager\"), torch "
                                     f"{vs_torch['torch']}, the same functions in torch ops on "
                                     "torch.ones(4)",
                                     [C("figure", ""), C("framejit", "framejit"),
                                      C("torch", "torch.compile"),
                                      C("speedup", "framejit faster (x)", ".0f")], vs_torch["rows"]))
        targets += vs_torch["targets"]
    else:
        notes.append("torch not installed: the torch.compile comparison was skipped")
    _results.write("compile", "Compile time and warm-call overhead", size="--quick" if quick else "full",
                   tables=tables, targets=targets, notes=notes,
                   data={"compile_ns": {"20 ops median": med, "20 ops min": best,
                                        "20 ops new wrapper": with_new, "1 op median": med1},
                         "warm_ns": warm, "vs_torch": vs_torch})


if __name__ == "__main__":
    main()
