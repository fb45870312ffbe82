"""Round-trips every code object of the standard library through
framejit._C._bc_roundtrip and reports mismatches (used by tests too)."""
import os
import sys
import sysconfig
import time
import warnings

from framejit import _C

FIELDS = ("co_code", "co_linetable", "co_exceptiontable", "co_stacksize")


def stdlib_sources(skip_tests=False):
    lib = sysconfig.get_paths()["stdlib"]
    for root, dirs, files in os.walk(lib):
        rel = os.path.relpath(root, lib)
        parts = rel.split(os.sep)
        if parts[0] in ("site-packages", "dist-packages") or "__pycache__" in parts:
            dirs[:] = []
            continue
        if "lib2to3" in parts and ("data" in parts or "tests" in parts):
            continue
        if skip_tests and parts[0] in ("test", "idlelib") and len(parts) > 0:
            continue
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".py"):
                yield os.path.join(root, f)


def walk_code(co):
    yield co
    for c in co.co_consts:
        if isinstance(c, type(co)):
            yield from walk_code(c)


def roundtrip_all(skip_tests=False):
    nmod = ncode = 0
    bad = []
    for path in stdlib_sources(skip_tests):
        try:
            with open(path, "rb") as fh:
                src = fh.read()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                top = compile(src, path, "exec")
        except (SyntaxError, ValueError):
            continue
        nmod += 1
        for co in walk_code(top):
            ncode += 1
            try:
                new = _C._bc_roundtrip(co)
            except Exception as e:  # noqa: BLE001 - report everything
                bad.append((path, co.co_qualname, repr(e)))
                continue
            diff = [f for f in FIELDS if getattr(co, f) != getattr(new, f)]
            if diff:
                bad.append((path, co.co_qualname, diff))
    return nmod, ncode, bad


if __name__ == "__main__":
    t = time.perf_counter()
    nmod, ncode, bad = roundtrip_all("--skip-tests" in sys.argv)
    dt = time.perf_counter() - t
    for b in bad[:30]:
        print(*b)
    print(f"{nmod} modules, {ncode} code objects, {len(bad)} mismatches, {dt:.1f}s")
