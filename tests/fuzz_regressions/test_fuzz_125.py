"""Fuzzer finding (tools/fuzz.py, seed 125): diff.

call 0.0: outcome: plain=('ok', ('NoneType', None), ()) compiled=('raise', 'NameError', "cannot access free variable 'acc2' where it is not associated with a value in enclosing scope")
"""
# signature: diff outcome:ok:NameError
import pytest

from fuzzcheck import check

SOURCE = """\
import numpy as np
G = 0
GA = 0.0
GL = []

def f(x, y, n, lst):
    y += np.int64(2)
    acc2 = 0

    def inner1(z):
        return acc2
"""

CALLS = [[['arr', [4, 8], 'float64', 'C', 154287240], ['arr', [4, 8], 'float64', 'C', 154287241], ['int', 2], ['list', []]]]


def test_fuzz_125():
    check(SOURCE, CALLS)
