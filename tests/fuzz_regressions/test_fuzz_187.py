"""Fuzzer finding (tools/fuzz.py, seed 187): diff.

call 0.0: outcome: plain=('raise', 'IndexError', 'too many indices for array: array is 0-dimensional, but 1 were indexed') compiled=('raise', 'TypeError', "'cell' object is not subscriptable")
"""
# signature: diff outcome:IndexError:TypeError
import pytest

from fuzzcheck import check

SOURCE = """\
G = 0
GA = 0.0
GL = []

def f(x, y, n):
    w3 = y[1:]

    def inner5(z):
        return y
"""

CALLS = [[['arr', [3], '>f8', 'C', 1047682201], ['arr', [], 'float32', 'C', 1047682202], ['int', -1]]]


def test_fuzz_187():
    check(SOURCE, CALLS)
