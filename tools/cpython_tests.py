"""Runs CPython's and NumPy's own test modules plain and under
``python -m framejit run`` (each in a subprocess, with a timeout) and prints
a table of the counts: tests run, failures, errors, skipped.

    python tools/cpython_tests.py [--timeout S] [--only NAME ...] [--verbose]
    python tools/cpython_tests.py --all [--plain-limit 300]   # every module of Lib/test
    python tools/cpython_tests.py --numpy-all [--scipy]       # pytest --pyargs numpy (scipy)

--all runs CPython's whole regression suite (test.libregrtest's list), one
process per module through regrtest (`python -m test -v NAME`, no `-u`
resources: modules that need network, GUI, audio... are skipped by regrtest
itself and listed as excluded with its reason); a module that takes longer
than --plain-limit seconds plain is excluded as slow.  --numpy-all runs
NumPy's whole suite (and with --scipy SciPy's optimize, interpolate,
signal, sparse.linalg and stats suites) as one pytest process each.

Exit status 1 when a module is not identical under framejit (other counts
of tests run, failures, errors or skips, another exit status, a crash or a
timeout).  See
docs/cpython-tests.md.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CPYTHON = ["test_grammar", "test_scope", "test_exceptions", "test_generators", "test_with",
           "test_contextlib", "test_list", "test_dict", "test_set", "test_tuple", "test_class",
           "test_descr", "test_functools", "test_itertools", "test_math", "test_unittest"]
NUMPY = ["test_umath.py", "test_numeric.py", "test_shape_base.py", "test_function_base.py",
         "test_indexing.py", "test_multiarray.py"]


def numpy_tests_dir():
    import numpy
    return os.path.join(os.path.dirname(numpy.__file__), "_core", "tests")


def all_cpython_modules():
    """Every module of CPython's regression suite, as regrtest lists them."""
    from test.libregrtest.findtests import findtests
    return findtests()


SCIPY = ["scipy.optimize", "scipy.interpolate", "scipy.signal", "scipy.sparse.linalg",
         "scipy.stats"]


PRELOAD = []   # --preload: passed to `framejit run --preload=...`


def commands(name):
    """(plain argv, framejit argv) for one module."""
    if name.startswith("regrtest:"):
        args = ["-m", "test", "-v", name.split(":", 1)[1]]
    elif name.startswith("pyargs:"):
        args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs", name.split(":", 1)[1]]
    elif name.endswith(".py"):
        path = os.path.join(numpy_tests_dir(), name)
        args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", path]
    else:
        args = ["-m", "unittest", f"test.{name}"]
    pre = ["--preload=" + ",".join(PRELOAD)] if PRELOAD else []
    return [sys.executable] + args, [sys.executable, "-m", "framejit", "run", "--summary"] + pre + args


def parse_unittest(text):
    ran = re.findall(r"^Ran (\d+) tests? in", text, re.M)
    if not ran:
        return None
    c = {"run": sum(int(x) for x in ran), "failures": 0, "errors": 0, "skipped": 0}
    # the verdict line right after each "Ran N tests": OK (...) or FAILED (...)
    for verdict in re.findall(r"^Ran \d+ tests? in [^\n]*\n\s*\n((?:OK|FAILED)[^\n]*)$", text, re.M):
        for key in ("failures", "errors", "skipped"):
            # not "expected failures=N" (expectedFailure tests that did fail)
            c[key] += sum(int(x) for x in re.findall(rf"(?<!expected )\b{key}=(\d+)", verdict))
    return c


def parse_pytest(text):
    lines = [ln for ln in text.splitlines() if re.search(r"\d+ (passed|failed|error)", ln)]
    if not lines:
        return None
    last = lines[-1]
    get = lambda w: sum(int(x) for x in re.findall(rf"(\d+) {w}", last))  # noqa: E731
    passed, failed = get("passed"), get("failed")
    errors, skipped = get("errors?"), get("skipped")
    xf = get("xfailed") + get("xpassed")
    return {"run": passed + failed + errors + skipped + xf, "failures": failed,
            "errors": errors, "skipped": skipped}


def resource_denied(text):
    """regrtest's reason for skipping a whole module (a resource not enabled,
    a platform or build requirement), or None."""
    m = re.search(r"^(\S+) skipped -- (.*)$", text, re.M)
    return m.group(2).strip() if m else None


def parse_summary(text):
    out = {}
    for key in ("frames_offered", "frames_compiled", "frames_broken", "frames_not_captured",
                "unique_graphs", "internal_errors"):
        m = re.search(rf"^  {key}\s+(\d+)$", text, re.M)
        out[key] = int(m.group(1)) if m else 0
    return out


def run(argv, timeout):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    # pytest runs from a neutral directory: framejit's own pytest settings
    # (addopts = -q) would make -qq and hide the summary line
    cwd = tempfile.gettempdir() if "pytest" in argv else ROOT
    t0 = time.time()
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env,
                           cwd=cwd)
        return r.returncode, r.stdout + r.stderr, time.time() - t0
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
        return "timeout", out, time.time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--logdir", default=os.path.join(ROOT, "build", "cpython-tests"))
    ap.add_argument("--all", action="store_true", help="every module of Lib/test (regrtest)")
    ap.add_argument("--plain-limit", type=float, default=300,
                    help="--all: exclude modules slower than this plain (seconds)")
    ap.add_argument("--numpy-all", action="store_true", help="pytest --pyargs numpy")
    ap.add_argument("--scipy", action="store_true", help="with --numpy-all: SciPy's suites")
    ap.add_argument("--jobs", type=int, default=1, help="modules run at once")
    ap.add_argument("--preload", default="",
                    help="modules `framejit run` imports first (numpy: every frame is traced)")
    a = ap.parse_args()
    PRELOAD.extend(m for m in a.preload.split(",") if m)
    if a.all:
        names = ["regrtest:" + m for m in all_cpython_modules()]
    elif a.numpy_all:
        names = ["pyargs:numpy"] + (["pyargs:" + m for m in SCIPY] if a.scipy else [])
    else:
        names = a.only or CPYTHON + NUMPY
    excluded = []
    os.makedirs(a.logdir, exist_ok=True)
    rows, worse = [], []

    def one(name):
        """(name, plain result, framejit result) or (name, reason excluded)."""
        plain_argv, fj_argv = commands(name)
        parse = parse_pytest if name.endswith(".py") or name.startswith("pyargs:") else parse_unittest
        res = {}
        for mode, argv in (("plain", plain_argv), ("framejit", fj_argv)):
            limit = min(a.timeout, a.plain_limit) if a.all and mode == "plain" else a.timeout
            rc, out, secs = run(argv, limit)
            with open(os.path.join(a.logdir, f"{name.replace(':', '_')}.{mode}.log"), "w") as f:
                f.write(" ".join(argv) + "\n" + out)
            res[mode] = (rc, parse(out), secs, out)
            if mode == "plain" and name.startswith("regrtest:"):
                why = ("slower than %.0f s plain" % a.plain_limit if rc == "timeout"
                       else resource_denied(out) if parse(out) is None else None)
                if why:
                    return name, why
        return name, res

    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max(1, a.jobs)) as pool:
        for name, res in pool.map(one, names):
            if isinstance(res, str):
                excluded.append((name, res))
                print(f"{name:30s} excluded: {res}", flush=True)
                continue
            p, j = res["plain"][1], res["framejit"][1]
            s = parse_summary(res["framejit"][3])
            # identical: the same counts and the same exit status
            bad = (j is None or res["framejit"][0] == "timeout" or p is None
                   or any(j[k] != p[k] for k in ("run", "failures", "errors", "skipped"))
                   or res["framejit"][0] != res["plain"][0])
            if bad:
                worse.append(name)
            rows.append((name, p, j, res["plain"][2], res["framejit"][2], res["framejit"][0], s,
                         bad))
            fmt = lambda c: "crash" if c is None else f"{c['run']}/{c['failures']}/{c['errors']}/{c['skipped']}"  # noqa: E731
            print(f"{name:22s} plain {fmt(p):16s} framejit {fmt(j):16s} "
                  f"{res['plain'][2]:6.1f}s {res['framejit'][2]:6.1f}s "
                  f"compiled={s['frames_compiled']} graphs={s['unique_graphs']} "
                  f"ierr={s['internal_errors']} {'DIFFERS' if bad else 'same'}", flush=True)
    print()
    print("| module | plain run/fail/err/skip | framejit run/fail/err/skip | plain s | framejit s "
          "| frames offered | compiled | broken | not captured | graphs | internal errors | |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, p, j, ps, js, rc, s, bad in rows:
        fmt = lambda c: "crash" if c is None else f"{c['run']}/{c['failures']}/{c['errors']}/{c['skipped']}"  # noqa: E731
        jtxt = "timeout" if rc == "timeout" else fmt(j)
        print(f"| {name} | {fmt(p)} | {jtxt} | {ps:.1f} | {js:.1f} | {s['frames_offered']} | "
              f"{s['frames_compiled']} | {s['frames_broken']} | {s['frames_not_captured']} | "
              f"{s['unique_graphs']} | {s['internal_errors']} | {'DIFFERS' if bad else 'same'} |")
    if excluded:
        print("\nexcluded:")
        for name, why in excluded:
            print(f"- {name}: {why}")
    print(f"\nlogs: {a.logdir}")
    if worse:
        print("differ under framejit: " + ", ".join(worse))
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
