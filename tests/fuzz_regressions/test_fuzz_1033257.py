"""Fuzzer finding (tools/fuzz.py, seed 1033257): diff.

call 2.0: globals: plain={'G': ('int', 10)} compiled={'G': ('int', 8)}
"""
# signature: diff globals
import pytest

from fuzzcheck import check

SOURCE = """\
G = 0

def f(x, y, z, n):
    global G
    G = G + n
    v2 = z[n]
"""

CALLS = [[['arr', [4, 1], 'float32', 'S', 487626004], ['arr', [], 'float64', 'C', 487626005], ['arr', [4, 1], 'float32', 'S', 487626006], ['int', 2]], [['arr', [5, 2], 'float32', 'S', 507059198], ['arr', [], 'float64', 'C', 507059199], ['arr', [5, 2], 'float32', 'S', 507059200], ['int', 2]], [['arr', [2, 3], 'float32', 'S', 65908415], ['arr', [], 'float64', 'C', 65908416], ['arr', [2, 3], 'float32', 'S', 65908417], ['int', 2]]]


def test_fuzz_1033257():
    check(SOURCE, CALLS)
