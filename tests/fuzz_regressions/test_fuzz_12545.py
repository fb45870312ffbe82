"""Fuzzer finding (tools/fuzz.py, seed 12545): diff.

call 0.1: outcome: plain=('ok', ('tuple', (('nd', '<f4', (), b'\x00\x00\x80?'),)), (((False, False), (False, False)),)) compiled=('ok', ('tuple', (('nd', '<f4', (), b'\x00\x00\x00@'),)), (((False, False), (False, False)),))
"""
# signature: diff outcome:ok:ok
import pytest

from fuzzcheck import check

SOURCE = """\
G = 0
GA = 0.0
GL = []

def f(x, y, n):
    v2 = y
    v3 = y - y
    print('p4', v2)
    w5 = v3[...]
    w5 += 1
    return (w5,)
"""

CALLS = [[['arr', [], 'float64', 'T', 797702192], ['arr', [], 'float32', 'C', 797702193], ['int', 3]]]


def test_fuzz_12545():
    check(SOURCE, CALLS)
