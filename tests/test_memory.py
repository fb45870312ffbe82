"""Memory stays flat: many warm calls, many compiles with reset, many guard
failures and fallbacks.  Loose thresholds (RSS and tracemalloc), no timing."""
import gc
import os
import tracemalloc

import numpy as np
import pytest

import framejit

PAGE = os.sysconf("SC_PAGE_SIZE")
# AddressSanitizer keeps freed memory in quarantine (hundreds of MiB): RSS says nothing there.
rss_test = pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                              reason="RSS is meaningless under ASan's quarantine")


def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * PAGE


@pytest.fixture(autouse=True)
def _fresh():
    framejit.reset()
    yield
    framejit.reset()


def warm(x, n):
    y = np.sin(x) * n
    return {"y": y, "s": y.sum(), "t": (x, n)}


@rss_test
def test_warm_calls_stay_flat():
    cf = framejit.compile(warm)
    x = np.ones(8)
    for _ in range(2000):
        cf(x, 2)
    gc.collect()
    before = rss()
    for _ in range(200_000):
        cf(x, 2)
    gc.collect()
    grown = rss() - before
    assert framejit.counters["stats"]["unique_graphs"] == 1
    assert grown < 8 * 2**20, f"RSS grew {grown / 2**20:.1f} MiB over 200000 warm calls"


def test_warm_calls_traced_allocations_flat():
    cf = framejit.compile(warm)
    x = np.ones(8)
    for _ in range(1000):
        cf(x, 2)
    gc.collect()
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        for _ in range(20_000):
            cf(x, 2)
        gc.collect()
        now, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert now - base < 256 * 1024, f"{now - base} bytes still allocated after 20000 calls"


def compiled_body(x, k):
    if k % 2:
        return np.cos(x) + k
    return np.exp(x) * k


@rss_test
def test_compiles_with_reset_stay_flat():
    x = np.ones(4)

    graphs = [0]

    def burst(n):
        for i in range(n):
            # dynamic=False: a graph per value of k (7 compiles per 10 calls)
            cf = framejit.compile(compiled_body, dynamic=False)
            cf(x, i % 7)
            cf(x, i % 7)
            if i % 10 == 9:
                graphs[0] += framejit.counters["stats"]["unique_graphs"]
                framejit.reset()
        framejit.reset()
        gc.collect()

    burst(200)
    before = rss()
    burst(2000)
    grown = rss() - before
    assert graphs[0] == 2200 // 10 * 7
    assert grown < 16 * 2**20, f"RSS grew {grown / 2**20:.1f} MiB over 2000 compiles"


def test_recompiles_on_guard_failures_stay_flat():
    def f(x, n):
        return x + n

    x = np.ones(3)
    gc.collect()
    tracemalloc.start()
    try:
        for rnd in range(20):
            cf = framejit.compile(f)
            for n in range(50):
                cf(x, n)
            framejit.reset()
            gc.collect()
            if rnd == 4:
                base, _ = tracemalloc.get_traced_memory()
        now, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert now - base < 512 * 1024, f"{now - base} bytes kept over 750 recompiles with reset"


def fallback(x):
    print_it = x.no_such_attribute if x.ndim > 5 else None
    s = str(x.shape)
    return x + len(s) + (0 if print_it is None else 1)


@rss_test
def test_uncompiled_frames_stay_flat():
    """Frames that cannot be captured (str() of a tuple) run in CPython behind guards."""
    cf = framejit.compile(fallback)
    x = np.ones(3)
    for _ in range(500):
        cf(x)
    gc.collect()
    before = rss()
    for _ in range(50_000):
        cf(x)
    gc.collect()
    assert rss() - before < 8 * 2**20


@rss_test
def test_many_code_objects_with_reset_stay_flat():
    """Distinct code objects (as exec'd modules make) compiled then reset."""
    x = np.ones(2)
    keep = []
    compiled = [0]

    def burst(n, start):
        for i in range(start, start + n):
            ns = {"np": np}
            exec(compile(f"def g(x):\n    return np.sin(x) * {i} + 1\n", f"<mem{i}>", "exec"), ns)
            framejit.compile(ns["g"])(x)
            compiled[0] += framejit.counters["stats"]["unique_graphs"]
            framejit.counters.clear()
            keep.append(ns)  # see test_compile.py::test_reset_frees_self_referencing_entry
            if len(keep) >= 50:
                framejit.reset()
                keep.clear()
        framejit.reset()
        keep.clear()
        gc.collect()

    burst(200, 0)
    before = rss()
    burst(2000, 1000)
    assert rss() - before < 16 * 2**20
    assert compiled[0] == 2200
