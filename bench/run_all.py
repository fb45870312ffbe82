"""Run every benchmark script (``make bench``), each in its own process;
each writes its bench/results/<name>.json (``make bench-report`` then
rewrites BENCHMARKS.md).  Not here: bench/memcheck.py (``make memcheck``),
bench/native (``make bench-native``), bench/compare_builds.py
(``make bench-compare``).

Run: python3 bench/run_all.py [--quick]   (--quick is passed on)
Exit status: non-zero if a script failed (not if a target was missed: the
scripts print MET / NOT MET for that).
"""
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SCRIPTS = ("bench_guards.py", "bench_runtime.py", "bench_compile.py", "bench_recompile.py", "bench_dynamic.py",
           "bench_run_mode.py", "bench_eager_large.py", "bench_versions.py")


def main():
    extra = [a for a in sys.argv[1:] if a == "--quick"]
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    print(f"framejit benchmarks: {platform.python_implementation()} {platform.python_version()}, "
          f"{platform.machine()}, {os.cpu_count()} cpus, FRAMEJIT_BUILD="
          f"{os.environ.get('FRAMEJIT_BUILD', 'release')}")
    failed = []
    for name in SCRIPTS:
        print()
        print(f"===== {name} " + "=" * max(0, 60 - len(name)), flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call([sys.executable, os.path.join(HERE, name)] + extra, env=env, cwd=ROOT)
        print(f"----- {name}: exit {rc}, {time.perf_counter() - t0:.1f} s", flush=True)
        if rc:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
