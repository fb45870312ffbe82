"""framejit demo: the seeds/000 and seeds/004 stories, with NumPy.

    make demo        (or: python3 examples/demo.py)

1. compile f(x) = np.sin(x) * 2 + 1 and check it against NumPy
2. the original and the rewritten bytecode (the "bytecode" log channel)
3. the guards that decide when the cached code may run
4. counters: unique_graphs / calls_captured, the seeds/000 experiment
5. the seeds/004 guards example: x * n * cfg_scale, and what recompiles
6. how fast a warm call is against a plain Python call
"""
import logging
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import framejit  # noqa: E402
from framejit._C import eval_frame  # noqa: E402


def header(title):
    print()
    print("=" * 72)
    print(title)
    print("=" * 72)


def entries(fn):
    return eval_frame._debug_get_cache_entry_list(fn.__code__)


def show_logs_on_stdout():
    """framejit logs through the logging module; send them to stdout here
    so they interleave with the demo's prints."""
    lg = logging.getLogger("framejit")
    h = logging.StreamHandler(sys.stdout)
    h.setFormatter(logging.Formatter("    %(message)s"))
    lg.addHandler(h)
    lg.setLevel(logging.DEBUG)
    lg.propagate = False


# ---------------------------------------------------------------- 1..3

def f(x):
    y = np.sin(x)
    return y * 2 + 1


def part_compile():
    header("1. compile f(x) = np.sin(x) * 2 + 1 (backend='eager')")
    framejit.reset()
    cf = framejit.compile(f, backend="eager")
    x = np.linspace(0.0, 1.0, 5)
    header("2. bytecode: what framejit read, and what it wrote (log channel 'bytecode')")
    framejit.set_logs("bytecode")
    got = cf(x)
    framejit.set_logs()
    print()
    print("  The rewritten code calls the graph (a global framejit installed on the")
    print("  module) and unpacks its 1-tuple of outputs: no np, no sin, no guard.")
    want = np.sin(x) * 2 + 1
    print()
    print(f"  framejit: {got}")
    print(f"  NumPy:    {want}")
    print(f"  equal: {np.array_equal(got, want)}")
    e = entries(f)[0]
    print(f"  cache entry: {e!r}")
    print(f"  graph: {f.__globals__['__compiled_fn_0']!r}")

    header("3. guards: checked in C before the cached code is chosen")
    print("  " + e.guard_manager.format().replace("\n", "\n  "))
    print(f"  f(np.ones(5))  -> hit:  {np.allclose(cf(np.ones(5)), np.sin(1) * 2 + 1)}, "
          f"entries {len(entries(f))}")
    cf(np.ones((2, 3)))
    print(f"  f(np.ones((2, 3))) -> TENSOR_MATCH fails (shape), recompiles: entries "
          f"{len(entries(f))}, compile ids {[en.compile_id for en in entries(f)]}")
    cf(np.ones(5, np.float32))
    print(f"  f(np.ones(5, float32)) -> dtype differs, recompiles: entries {len(entries(f))}")
    return cf


# ------------------------------------------------------------------- 4

def part_counters():
    header("4. counters (framejit.counters['stats']), the seeds/000 experiment")
    print("  unique_graphs: graphs compiled; calls_captured: ops captured, summed")
    print("  over compiles.  A cache hit never enters the compile path, so calls")
    print("  2..5 move neither.")
    print()

    def run(label, fn, n):
        framejit.reset()
        cfn = framejit.compile(fn, backend="eager")
        for _ in range(n):
            cfn(np.random.randn(4))
        print(f"  {label}  {dict(framejit.counters['stats'])}")

    run("1 op,  1 call ", lambda x: x + 1, 1)
    run("1 op,  5 calls", lambda x: x + 1, 5)
    run("3 ops, 1 call ", lambda x: np.sin(x) * 2 + 1, 1)
    run("3 ops, 5 calls", lambda x: np.sin(x) * 2 + 1, 5)


# ------------------------------------------------------------------- 5

cfg_scale = 2


def g(x, n):
    return x * n * cfg_scale


def part_guards():
    global cfg_scale
    header("5. the seeds/004 example: x * n * cfg_scale (log channel 'guards')")
    framejit.reset()
    cg = framejit.compile(g, backend="eager")
    x = np.random.randn(4, 4).astype(np.float32)
    framejit.set_logs("guards")
    cg(x, 3)
    framejit.set_logs()
    print()
    print("  L['x'] pins dtype, shape and strides; n was baked into the graph as a")
    print("  constant, hence EQUALS_MATCH L['n'] == 3; the global too.")
    print()
    cg(x, 4)
    print(f"  call with n=4: EQUALS_MATCH fails, recompiles -> entries "
          f"{[e.compile_id for e in entries(g)]}; automatic dynamic made n a symbolic int")
    cg(x, 5)
    cg(x, 50)
    print(f"  calls with n=5 and n=50: served by that entry, entries still "
          f"{len(entries(g))}, unique_graphs {framejit.counters['stats']['unique_graphs']}")
    cg(x, 3)
    print(f"  call with n=3 again: a hit, entries {len(entries(g))}, "
          f"unique_graphs {framejit.counters['stats']['unique_graphs']}")
    cfg_scale = 5
    r = cg(x, 3)
    print(f"  set cfg_scale = 5, call with n=3: G['cfg_scale'] == 2 fails -> entries "
          f"{[e.compile_id for e in entries(g)]}; result right: {np.allclose(r, x * 3 * 5)}")
    cfg_scale = 2


# ------------------------------------------------------------------- 6

def h(x):
    return x + 1


def part_speed():
    header("6. warm-call speed: compiled vs plain (np.ones(4), tiny, overhead shows)")
    framejit.reset()
    ch = framejit.compile(h, backend="eager")
    cf = framejit.compile(f, backend="eager")
    x = np.ones(4)
    ch(x)
    cf(x)
    n = 100_000

    def per_call(fn):
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter_ns()
            for _ in range(n):
                fn(x)
            best = min(best, (time.perf_counter_ns() - t0) / n)
        return best

    print(f"  {'function':<26}{'plain':>10}{'compiled':>11}{'ratio':>8}")
    for label, plain, comp in (("x + 1", h, ch), ("np.sin(x) * 2 + 1", f, cf)):
        p, c = per_call(plain), per_call(comp)
        print(f"  {label:<26}{p:8.0f} ns{c:9.0f} ns{c / p:7.2f}x")
    times = []
    for _ in range(21):
        framejit.reset()
        t0 = time.perf_counter_ns()
        cf(x)
        times.append(time.perf_counter_ns() - t0)
    print(f"  a compile (first call after framejit.reset(), median of 21): "
          f"{sorted(times)[10] / 1e3:.0f} us")
    print("  (bench/bench_runtime.py and bench/bench_compile.py measure this properly;")
    print("   figures in BENCHMARKS.md)")


def chain(a, b, c):
    return np.sum(np.maximum((a * b + c) * 0.5 - a, 0.0))


def part_native():
    header("7. the default backend, native: fused C kernels (docs/native.md)")
    framejit.reset()
    cc = framejit.compile(chain)  # backend=None: framejit.config.backend
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(1_000_000) for _ in range(3))
    t0 = time.perf_counter()
    got = cc(a, b, c)
    first = time.perf_counter() - t0
    want = chain(a, b, c)
    print(f"  framejit.config.backend = {framejit.config.backend!r}")
    print("  np.sum(np.maximum((a * b + c) * 0.5 - a, 0.0)) on 1e6 float64")
    print(f"  first call {first * 1e3:.0f} ms (C compile, or the disk cache of an earlier run); "
          f"result == NumPy's bit for bit: {got.tobytes() == want.tobytes()}")
    print(f"  counters['native']: {dict(framejit.counters['native'])}")

    def best(fn, k=20):
        t = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(k):
                fn(a, b, c)
            t = min(t, (time.perf_counter() - t0) / k)
        return t
    p, n = best(chain), best(cc)
    print(f"  warm: NumPy {p * 1e3:.2f} ms, native {n * 1e3:.2f} ms: {p / n:.1f}x"
          "  (bench/native: against numexpr, Numba, torch.compile)")


def main():
    if not framejit.is_supported():
        print(f"framejit does not support Python {sys.version.split()[0]}; nothing to show")
        return
    show_logs_on_stdout()
    t0 = time.perf_counter()
    part_compile()
    part_counters()
    part_guards()
    part_speed()
    part_native()
    framejit.reset()
    print()
    print(f"demo done in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
