"""Fuzzer finding (tools/fuzz.py, seed 930): diff.

call 0.0: outcome: plain=('ok', ('NoneType', None), ()) compiled=('raise', 'NameError', "cannot access free variable 's5' where it is not associated with a value in enclosing scope")
"""
# signature: diff outcome:ok:NameError
import pytest

from fuzzcheck import check

SOURCE = """\
import numpy as np
G = 0
GA = 0.0
GL = []

def f(x, n):
    s5 = np.int64(2)
    v7 = x
    v8 = (lambda z: s5)(v7)
"""

CALLS = [[['arr', [3, 3], 'int64', 'C', 832735396], ['int', 4]]]


def test_fuzz_930():
    check(SOURCE, CALLS)
