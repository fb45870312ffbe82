"""Fuzzer finding (tools/fuzz.py, seed 1002945): diff.

call 0.1: outcome: plain=('ok', ('tuple', (('nd', '<f4', (1,), b'\x00\x00`@'),)), (((False, False), (False, False)),)) compiled=('ok', ('tuple', (('nd', '<f4', (1,), b'\x00\x00\x90@'),)), (((False, False), (False, False)),))
"""
# signature: diff outcome:ok:ok
import pytest

from fuzzcheck import check

SOURCE = """\
import numpy as np

def f(x, y, z, n):
    v3 = np.float32(2.5)
    w4 = v3.reshape(1)
    w4 += 1
    return (w4,)
"""

CALLS = [[['arr', [], 'int8', 'N', 706059859], ['arr', [], 'float32', 'C', 706059860], ['arr', [], 'float64', 'C', 706059861], ['int', 4]]]


def test_fuzz_1002945():
    check(SOURCE, CALLS)
