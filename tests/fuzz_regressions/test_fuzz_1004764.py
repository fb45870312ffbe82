"""Fuzzer finding (tools/fuzz.py, seed 1004764): diff.

call 0.0: outcome: plain=('ok', ('NoneType', None), ()) compiled=('raise', 'RecursionError', 'maximum recursion depth exceeded in comparison')
"""
# signature: diff outcome:ok:RecursionError
import pytest

from fuzzcheck import check

SOURCE = """\
import numpy as np
GL = []

def f(x, n):
    GL.append(n)
    v4 = np.minimum(x, x)

    def inner5(z):
        return x
"""

CALLS = [[['arr', [2, 0], 'float64', 'T', 374158528], ['int', 3]]]


def test_fuzz_1004764():
    check(SOURCE, CALLS)
