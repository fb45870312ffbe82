"""The differential fuzzer (tools/fuzz.py): a bounded, deterministic run in
CI, plus checks of the fuzzer's own parts (comparison, minimizer, regression
writer, subprocess bisection of crashes).

Every construct the generator knows is in the CI run; an open finding would
be pinned as a strict xfail in tests/fuzz_regressions/ (none is open);
`make fuzz` runs the long run."""
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import fuzz  # noqa: E402

import framejit  # noqa: E402

N_PROGRAMS = 4000
CHUNK = 500


@pytest.mark.parametrize("start", range(0, N_PROGRAMS, CHUNK))
def test_fuzz_programs_agree(start):
    failures = []
    breaks = graphs = 0
    for seed in range(start, start + CHUNK):
        src, calls, (failure, b, g, _) = fuzz.fuzz_one(seed, small=False, cells=True)
        breaks += b
        graphs += g
        if failure:
            failures.append((seed, failure[0], failure[1][:500], src))
    framejit.reset()
    assert not failures, "\n\n".join(f"seed {s}: {k}: {m}\n{src}" for s, k, m, src in failures)
    assert graphs > CHUNK        # the programs do get compiled
    assert breaks > CHUNK // 10  # and they do exercise graph breaks


def test_programs_are_deterministic():
    assert fuzz.generate(7) == fuzz.generate(7)
    assert fuzz.generate(7) != fuzz.generate(8)
    src, calls = fuzz.generate(123, cells=False)
    assert "def f(" in src and calls
    compile(src, "<gen>", "exec")


def test_inputs_cover_layouts_and_dtypes():
    a = fuzz.build_arg(["arr", [3, 4], "float64", "T", 1])
    assert a.shape == (3, 4) and not a.flags.c_contiguous
    b = fuzz.build_arg(["arr", [3], ">f8", "S", 1])
    assert b.dtype.byteorder == ">" and b.strides == (16,)
    c = fuzz.build_arg(["arr", [], "int8", "C", 1])
    assert isinstance(c, np.ndarray) and c.shape == ()
    d = fuzz.build_arg(["arr", [], "float32", "N", 1])
    assert isinstance(d, np.float32)
    assert np.array_equal(fuzz.build_arg(["arr", [2, 3], "int32", "F", 5]),
                          fuzz.build_arg(["arr", [2, 3], "int32", "F", 5]))


def test_snapshot_is_bit_exact_and_nan_aware():
    snap = fuzz.snapshot
    assert snap(np.array([np.nan])) == snap(np.array([np.nan]))
    assert snap(float("nan")) == snap(float("nan"))
    assert snap(np.array([0.0])) != snap(np.array([-0.0]))
    assert snap(np.array([1.0])) != snap(np.array([1.0], dtype=np.float32))
    assert snap(np.float64(1)) != snap(1.0)
    assert snap((1, 2)) != snap([1, 2])
    o = fuzz.Obj(1)
    o.val = 3
    assert snap(o) != snap(fuzz.Obj(1))


def test_check_program_catches_a_difference(monkeypatch):
    # a fake "compiler" that changes the result: the fuzzer must see it
    src = "def f(x, n):\n    print('hi', n)\n    return x * 2\n"
    calls = [[["arr", [3], "float64", "C", 1], ["int", 2]]]
    assert fuzz.check_program(src, calls)[0] is None

    def bad_compile(fn, **kw):
        return lambda x, n: x * 3
    monkeypatch.setattr(framejit, "compile", bad_compile)
    failure = fuzz.check_program(src, calls)[0]
    assert failure[0] == "diff" and failure[2] == "outcome:ok:ok"


def test_minimizer_shrinks_statements_and_expressions():
    src = ("import numpy as np\n\ndef f(x, n):\n    a = x + 1\n    b = np.sin(a) * 2\n"
           "    if n > 1:\n        c = (b - 3) * (x + BAD)\n    return a\n")
    calls = [[1], [2], [3]]

    def still(s, c):
        return "BAD" in s and len(c) >= 1
    s2, c2 = fuzz.minimize(src, calls, still)
    assert "BAD" in s2 and len(c2) == 1
    assert "np.sin" not in s2 and "if" not in s2
    assert len(s2) < len(src) // 2


def test_regression_writer_makes_a_runnable_test(tmp_path, monkeypatch):
    monkeypatch.setattr(fuzz, "REGRESSION_DIR", str(tmp_path))
    src = "def f(x, n):\n    return x + n\n"
    calls = [[["arr", [2], "float64", "C", 3], ["int", 1]]]
    path = fuzz.write_regression(99, "diff", "message", src, calls, xfail_reason="why")
    text = open(path).read()
    assert "xfail(strict=True, reason='why')" in text
    ns = {}
    sys.path.insert(0, os.path.join(ROOT, "tests", "fuzz_regressions"))
    try:
        exec(compile(text, path, "exec"), ns)
    finally:
        sys.path.pop(0)
    assert ns["SOURCE"] == src and ns["CALLS"] == calls
    ns["check"](ns["SOURCE"], ns["CALLS"])   # this program agrees


def test_isolate_bisects_a_crash_to_its_seed():
    env = dict(os.environ, FJ_FUZZ_CRASH_SEED="13")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "fuzz.py"), "--seed", "10",
                        "--count", "8", "--isolate", "--batch", "8", "--no-minimize",
                        "--no-cells"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "seed 13: crash" in r.stdout
    assert "programs in" in r.stdout and "crashes          1" in r.stdout
    assert "8 programs" in r.stdout


def test_aliased_view_and_dict_inputs():
    a = fuzz.build_args([["arr", [3], "float64", "C", 1], ["same", 0], ["viewof", 0, "rev"],
                         ["dict", {"k": 1}], ["arr", [], "float64", "N", 2], ["viewof", 4, "rev"]])
    assert a[1] is a[0]
    assert np.shares_memory(a[2], a[0]) and a[2][0] == a[0][-1]
    assert a[3] == {"k": 1}
    assert a[5] is a[4]                       # no view of a NumPy scalar: the same object


def test_generator_covers_the_extended_statements():
    srcs, calls = [], []
    for seed in range(400):
        s, c = fuzz.generate(seed)
        srcs.append(s)
        calls.append(c)
    text = "\n".join(srcs)
    for frag in ("obj.val = ", "lst.insert(", "dct[", "nonlocal cnt", "bump(", "G += ",
                 ".bit_length()", "isinstance(n, int)", "np.arange(n)", "range(n)",
                 "np.ones_like(", "out=", "[1:] += 1"):
        assert frag in text, frag
    flat = repr(calls)
    assert "'same'" in flat and "'viewof'" in flat and "'dict'" in flat
    # some programs see n = k, k+1, k+2, k+3 (n becomes a symbolic int)
    ramps = 0
    for cl in calls:
        ns = [a[1] for c in cl for a in c if a[0] == "int"]
        ramps += len(ns) >= 4 and all(b == a + 1 for a, b in zip(ns, ns[1:]))
    assert ramps > 20
