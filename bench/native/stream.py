"""STREAM-like triad bandwidth of this machine, measured in C (issue #8).

a[i] = b[i] + s*c[i] over doubles, in bench/native/stream.c compiled with
gcc -O3 -march=native -fopenmp (into build/), on arrays much larger than the
last-level cache (default 80M doubles: 640 MB per array, 1.9 GB in all),
best and median of REPS passes, on one thread and on all threads
(OMP_NUM_THREADS), with the output array reused (STREAM) and with it
malloc'ed inside each pass (as a function returning a new array does: the
kernel faults in and zeroes its pages).  GB/s counts 3 arrays of traffic per pass (STREAM's
convention: 2 reads + 1 write = 24 bytes per element); the write also costs
a read for ownership (write-allocate: gcc does not emit non-temporal stores
here), so the bus moves 32 bytes per element and the bus figure is 4/3 of
the reported one.  bench_native.py compares memory-bound kernels with the
same convention (inputs read once + outputs written once).

Run: python3 bench/native/stream.py [--n N] [--reps R]
Used by bench_native.py through measure().
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SRC = os.path.join(HERE, "stream.c")
EXE = os.path.join(ROOT, "build", "stream_triad")
DEFAULT_N = 80_000_000


def build():
    """Compile stream.c if the executable is missing or older than the source."""
    if os.path.exists(EXE) and os.path.getmtime(EXE) >= os.path.getmtime(SRC):
        return EXE
    os.makedirs(os.path.dirname(EXE), exist_ok=True)
    subprocess.check_call(["gcc", "-O3", "-march=native", "-fopenmp", "-o", EXE, SRC])
    return EXE


def measure(threads, n=DEFAULT_N, reps=10, fresh=False):
    """{'threads', 'n', 'best_gbs', 'median_gbs', 'bus_gbs'} for one thread
    count; fresh: the output array is allocated (and its pages faulted in)
    inside each timed pass."""
    exe = build()
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_PROC_BIND="spread")
    out = subprocess.check_output([exe, str(n), str(reps)] + (["fresh"] if fresh else []),
                                  env=env, text=True).split()
    best, median, nth = float(out[0]), float(out[1]), int(out[2])
    nbytes = 3 * 8 * n
    return {"threads": nth, "n": n, "best_gbs": nbytes / best / 1e9,
            "median_gbs": nbytes / median / 1e9, "bus_gbs": 4 / 3 * nbytes / best / 1e9}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=DEFAULT_N)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--json", action="store_true", help="print JSON only")
    args = p.parse_args()
    res = [dict(measure(t, args.n, args.reps, fresh), fresh=fresh)
           for t in sorted({1, os.cpu_count() or 1}) for fresh in (False, True)]
    if args.json:
        print(json.dumps(res))
        return 0
    print(f"STREAM-like triad a = b + s*c, {args.n:,} doubles per array "
          f"({args.n * 8 / 1e6:.0f} MB each), best of {args.reps}")
    print(f"{'threads':>7} {'output':>13} {'GB/s (3 arrays)':>16} {'median':>8} {'bus incl. write-allocate':>25}")
    for r in res:
        print(f"{r['threads']:>7} {'fresh malloc' if r['fresh'] else 'reused':>13} {r['best_gbs']:>16.1f} "
              f"{r['median_gbs']:>8.1f} {r['bus_gbs']:>25.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
