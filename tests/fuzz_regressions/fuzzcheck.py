"""Runner for the fuzzer's minimized regression cases (tests/fuzz_regressions/test_fuzz_*.py).

``check(SOURCE, CALLS)`` execs SOURCE from a real file twice, calls its ``f``
plain and compiled (``framejit.compile``) on each argument set of CALLS (each
twice, fresh copies), and asserts that results, exceptions, printed output,
inputs, the object/list arguments and the module globals all agree, and that
no internal compiler error happened.  ``check_isolated`` does the same in a
subprocess (for cases that crash the interpreter).  The machinery lives in
tools/fuzz.py.
"""
import os
import sys

_TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                      "tools")
if _TOOLS not in sys.path:
    sys.path.insert(0, _TOOLS)

import fuzz  # noqa: E402


def check(source, calls):
    fuzz.check_or_fail(source, calls)


def check_isolated(source, calls):
    """check() in a fresh interpreter: a crash (signal) fails the test instead
    of killing pytest."""
    import subprocess
    code = ("import sys; sys.path.insert(0, %r)\n"
            "import fuzz\nfuzz.check_or_fail(%r, %r)\n") % (_TOOLS, source, calls)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"returncode {r.returncode}: {r.stderr[-2000:]}"
