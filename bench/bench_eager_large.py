"""The eager backend on large arrays: plain NumPy against framejit's eager graph.

The eager runner keeps every value until its last use, which used to defeat
NumPy's temporary elision (an operand referenced only by the interpreter's
stack is reused as the output, for arrays of 256 KiB and more).  The runner
now does the same reuse itself (csrc/graph/graph.c, reuse_temporary).  This
measures plain CPython+NumPy against framejit.compile(f) (eager) on chains
of elementwise operations, float64, side by side and interleaved, best of N
rounds, and prints time per call and the ratio (eager / plain: below 1 is
faster than plain).

Run: python3 bench/bench_eager_large.py [--quick]
Writes bench/results/eager_large.json (bench/_results.py).
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _results  # noqa: E402
import framejit  # noqa: E402


def c3(a, b, c):
    return (a * b + c) * 0.5


def c5(a, b, c):
    return np.maximum((a * b + c) * 0.5 - a, 0.0)


def c7(a, b, c):
    return np.sqrt(np.maximum((a * b + c) * 0.5 - a, 0.0)) + c


def best(fn, args, rounds, reps):
    t = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn(*args)
        t = min(t, (time.perf_counter() - t0) / reps)
    return t


def main():
    _results.start()
    quick = "--quick" in sys.argv
    sizes = [10**3, 10**5, 10**6] if quick else [10**3, 10**4, 10**5, 10**6, 10**7]
    print(f"{'kernel':6} {'n':>9} {'plain':>11} {'eager':>11} {'eager/plain':>12}")
    rows = []
    for fn in (c3, c5, c7):
        for n in sizes:
            rng = np.random.default_rng(0)
            args = tuple(rng.random(n) for _ in range(3))
            cf = framejit.compile(fn)
            np.testing.assert_array_equal(cf(*args), fn(*args))
            reps = max(1, int(2e6 // n))
            tp = te = float("inf")
            for _ in range(3 if quick else 5):  # interleaved rounds
                tp = min(tp, best(fn, args, 1, reps))
                te = min(te, best(cf, args, 1, reps))
            print(f"{fn.__name__:6} {n:>9.0e} {tp * 1e6:>9.1f}us {te * 1e6:>9.1f}us {te / tp:>12.2f}")
            rows.append({"kernel": fn.__name__, "n": f"{n:.0e}", "plain_us": tp * 1e6,
                         "eager_us": te * 1e6, "ratio": te / tp})
    C = _results.column
    _results.write(
        "eager_large", "Eager backend on large arrays", size="--quick" if quick else "full",
        tables=[_results.table("float64, best time per call, plain and eager interleaved "
                               f"({3 if quick else 5} rounds)",
                               [C("kernel", "kernel"), C("n", "n"), C("plain_us", "plain µs", ".1f"),
                                C("eager_us", "eager µs", ".1f"), C("ratio", "eager / plain", ".2f")],
                               rows)],
        data={"rows": rows})


if __name__ == "__main__":
    main()
