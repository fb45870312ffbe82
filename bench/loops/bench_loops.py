"""Loop-heavy kernels: plain CPython, framejit (native) and Numba's @njit,
side by side in one run (issue 21).

For each kernel of bench/loops/kernels.py, at its size (--quick: the smaller):

    plain        the function as it is, best of the rounds
    fj first     framejit.compile(f) called once with an empty kernel cache
                 (a fresh FRAMEJIT_CACHE_DIR): trace, C compile, run
    fj warm      best of the rounds after that, and of 3x the rounds again,
                 interleaved with Numba's (side by side: the shared machine's
                 quiet moments count for both)
    numba first  @njit's first call (its compile); warm: best of those
                 interleaved rounds
    exact        framejit's results and every input it wrote, bit for bit
                 against plain (the run fails if one differs)
    flat         framejit's first call at the other size (the full run's at the
                 quick size, the quick run's at the full size), against the
                 first call at the size: the trace does not grow with the trip
                 count (both with an empty cache)

    python3 bench/loops/bench_loops.py [--quick] [--only NAME,...]

Writes bench/results/loops.json (bench/report.py puts it in BENCHMARKS.md).
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

import _results  # noqa: E402
import framejit  # noqa: E402
from kernels import KERNELS  # noqa: E402

try:
    import numba  # noqa: E402
except ImportError:  # Numba's column is left out, with a note
    numba = None


def fresh(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape and
                np.array_equal(a, b, equal_nan=True))
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and (a == b or (a != a and b != b))


def best(fn, args, rounds):
    times = []
    for _ in range(rounds):
        a = fresh(args)
        t = time.perf_counter()
        fn(*a)
        times.append(time.perf_counter() - t)
    return min(times)


def best_pair(f, g, args, rounds):
    """Best times of f and g, their rounds interleaved (a quiet moment of the
    shared machine counts for both)."""
    tf, tg = [], []
    for _ in range(rounds):
        for fn, times in ((f, tf), (g, tg)):
            a = fresh(args)
            t = time.perf_counter()
            fn(*a)
            times.append(time.perf_counter() - t)
    return min(tf), min(tg)


def first_call(fn, args):
    """framejit's first call of fn with an empty kernel cache: seconds."""
    d = tempfile.mkdtemp(prefix="fj-loops-")
    old = os.environ.get("FRAMEJIT_CACHE_DIR")
    os.environ["FRAMEJIT_CACHE_DIR"] = d
    try:
        framejit.reset()
        cf = framejit.compile(fn)
        a = fresh(args)
        t = time.perf_counter()
        cf(*a)
        return time.perf_counter() - t, cf
    finally:
        if old is None:
            os.environ.pop("FRAMEJIT_CACHE_DIR", None)
        else:
            os.environ["FRAMEJIT_CACHE_DIR"] = old
        shutil.rmtree(d, ignore_errors=True)


def run_kernel(name, quick, rounds):
    fn, make, sizes = KERNELS[name]
    n = sizes[0] if quick else sizes[1]
    args = make(n)
    row = {"kernel": name, "n": n}
    pa = fresh(args)
    plain_result = fn(*pa)
    row["plain_ms"] = best(fn, args, rounds) * 1e3
    # framejit: exactness, first call, warm
    first, cf = first_call(fn, args)
    row["fj_first_ms"] = first * 1e3
    ca = fresh(args)
    got = cf(*ca)
    row["exact"] = same(got, plain_result) and all(same(x, y) for x, y in zip(ca, pa))
    row["fj_ms"] = best(cf, args, rounds) * 1e3
    stats = framejit.counters["stats"]
    row["graphs"] = stats.get("unique_graphs", 0)
    row["breaks"] = sum(framejit.counters["graph_break"].values())
    other = make(sizes[1] if quick else sizes[0])
    row["n_other"] = sizes[1] if quick else sizes[0]
    row["fj_first_other_ms"] = first_call(fn, other)[0] * 1e3
    row["speedup"] = row["plain_ms"] / row["fj_ms"]
    if numba is not None:
        nf = numba.njit(fn)
        t = time.perf_counter()
        na = fresh(args)
        try:
            nr = nf(*na)
            row["numba_first_ms"] = (time.perf_counter() - t) * 1e3
            # side by side: framejit's warm time again, interleaved with Numba's, over
            # more rounds (each is short); the better of the two framejit figures kept
            fj2, nb = best_pair(cf, nf, args, 3 * rounds)
            row["fj_ms"] = min(row["fj_ms"], fj2 * 1e3)
            row["speedup"] = row["plain_ms"] / row["fj_ms"]
            row["numba_ms"] = nb * 1e3
            row["numba_exact"] = same(nr, plain_result)
            row["vs_numba"] = row["numba_ms"] / row["fj_ms"]
        except Exception as e:  # noqa: BLE001 - a kernel Numba does not compile
            row["numba_error"] = f"{type(e).__name__}"
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--rounds", type=int, default=0)
    opts = ap.parse_args(argv)
    _results.start()
    names = [k for k in KERNELS if not opts.only or k in opts.only.split(",")]
    rounds = opts.rounds or (3 if opts.quick else 5)
    rows = []
    for name in names:
        r = run_kernel(name, opts.quick, rounds)
        rows.append(r)
        print(f"{name:18s} n={r['n']:<8d} plain {r['plain_ms']:9.2f} ms  fj {r['fj_ms']:8.3f} ms "
              f"({r['speedup']:6.1f}x)  first {r['fj_first_ms']:7.1f} ms (n={r['n_other']}: {r['fj_first_other_ms']:6.1f})  "
              f"numba {r.get('numba_ms', float('nan')):8.3f} ms  fj/numba {r.get('vs_numba', float('nan')):5.2f}x  "
              f"exact {r['exact']}", flush=True)
    bad = [r["kernel"] for r in rows if not r["exact"]]
    speedups = [r["speedup"] for r in rows]
    vs = [r["vs_numba"] for r in rows if "vs_numba" in r]
    gm = float(np.exp(np.mean(np.log(speedups))))
    gmn = float(np.exp(np.mean(np.log(vs)))) if vs else None
    cols = [_results.column("kernel", "kernel"), _results.column("n", "n"),
            _results.column("plain_ms", "plain ms", ".2f"), _results.column("fj_ms", "framejit ms", ".3f"),
            _results.column("speedup", "x plain", ".1f"), _results.column("fj_first_ms", "first call ms", ".0f"),
            _results.column("n_other", "other n"),
            _results.column("fj_first_other_ms", "first call at other n ms", ".0f"),
            _results.column("numba_ms", "Numba ms", ".3f"), _results.column("numba_first_ms", "Numba first ms", ".0f"),
            _results.column("vs_numba", "framejit vs Numba", ".2f"), _results.column("exact", "exact")]
    targets = [
        _results.target("every kernel exactly equal to plain", f"{len(rows) - len(bad)}/{len(rows)}", not bad),
        _results.target("first call at most 2 s", f"max {max(r['fj_first_ms'] for r in rows):.0f} ms",
                        max(r["fj_first_ms"] for r in rows) <= 2000),
        _results.target("first call flat in the trip count (at the other size within 2x, or 100 ms)",
                        f"max ratio {max(r['fj_first_other_ms'] / r['fj_first_ms'] for r in rows):.2f}",
                        all(r["fj_first_other_ms"] <= max(2 * r["fj_first_ms"], r["fj_first_ms"] + 100)
                            for r in rows)),
        _results.target("at or above Numba's njit on each kernel it compiles",
                        f"{sum(v >= 1.0 for v in vs)}/{len(vs)} (geometric mean {gmn:.2f}x)" if vs else "no Numba",
                        (min(vs) >= 1.0) if vs else None),
        _results.target("scalar loops at least 10x plain",
                        f"{sum(s >= 10 for s in speedups)}/{len(speedups)} (geometric mean {gm:.1f}x)",
                        min(speedups) >= 10),
    ]
    _results.write("loops", "Loop-heavy kernels: framejit native, Numba, plain", size="--quick" if opts.quick else "full",
                   tables=[_results.table("Kernels (warm: plain best of %d rounds, framejit and Numba best of %d more, "
                                          "interleaved; first: empty kernel cache)" % (rounds, 3 * rounds),
                                          cols, rows)],
                   targets=targets, data={"rows": rows},
                   notes=[f"Numba {numba.__version__}" if numba else "Numba not installed: its columns are empty"])
    if bad:
        print("NOT EXACT:", bad)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
