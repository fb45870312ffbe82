"""Fuzzer finding (tools/fuzz.py, seed 24628): diff.

call 0.1: outcome: plain=('ok', ('tuple', (('nd', '<i4', (1,), b'\x06\x00\x00\x00'),)), ((),)) compiled=('ok', ('tuple', (('nd', '<i4', (1,), b'\x0c\x00\x00\x00'),)), ((),))
"""
# signature: diff outcome:ok:ok
import pytest

from fuzzcheck import check

SOURCE = """\
G = 0
GA = 0.0
GL = []

def f(x, y, n, obj):
    w3 = x.reshape(1)
    w3 *= 2
    return (w3,)
"""

CALLS = [[['arr', [], 'int32', 'N', 762689201], ['arr', [], 'bool', 'C', 762689202], ['int', -1], ['obj', 1]]]


def test_fuzz_24628():
    check(SOURCE, CALLS)
