"""Fuzzer finding (tools/fuzz.py, seed 166): crash (returncode -11, 29 of 3,000 programs).

A shape tuple holding a symbolic int (`np.ones((n, 2))` once `n` has changed
between calls) makes graph_call() in csrc/trace/trace_call.c recurse forever:
has_pyscalar() looks inside tuples/lists, but the specialization step only
replaces top-level Python-scalar nodes by constants, so the recursive call
sees the same tuple again (stack overflow, SIGSEGV).
"""
# signature: crash crash
import pytest

from fuzzcheck import check_isolated

SOURCE = """\
import numpy as np

def f(x, n):
    return np.ones((n, 2))
"""

CALLS = [[['arr', [3], 'float64', 'C', 1], ['int', 1]],
         [['arr', [3], 'float64', 'C', 2], ['int', 2]]]


def test_fuzz_166():
    check_isolated(SOURCE, CALLS)
