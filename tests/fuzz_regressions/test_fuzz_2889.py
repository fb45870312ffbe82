"""Fuzzer finding (tools/fuzz.py, seed 2889): diff.

call 0.0: outcome: plain=('ok', ('NoneType', None), ()) compiled=('raise', 'ValueError', 'The truth value of an array with more than one element is ambiguous. Use a.any() or a.all()')
"""
# signature: diff outcome:ok:ValueError
import pytest

from fuzzcheck import check

SOURCE = """\
import numpy as np
G = 0
GA = 0.0
GL = []

def f(x, y, n, obj):

    def inner5(z):
        return x
    v7 = np.fmax(x, x)
    GL.append(v7)
"""

CALLS = [[['arr', [4, 1], 'int32', 'C', 1052409759], ['arr', [], 'int64', 'C', 1052409760], ['int', 3], ['obj', 1]]]


def test_fuzz_2889():
    check(SOURCE, CALLS)
