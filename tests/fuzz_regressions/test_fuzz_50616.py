"""Fuzzer finding (tools/fuzz.py, seed 50616): diff.

call 0.0: stdout: plain='p12 float64\n' compiled='p12 >f8\n'
"""
# signature: diff stdout
import pytest

from fuzzcheck import check

SOURCE = """\
def f(x, y, n):
    v9 = x.reshape(-1)[n]
    print('p12', v9.dtype)
"""

CALLS = [[['arr', [4, 1], '>f8', 'S', 978688157], ['arr', [4, 1], 'int8', 'S', 978688158], ['int', 1]]]


def test_fuzz_50616():
    check(SOURCE, CALLS)
