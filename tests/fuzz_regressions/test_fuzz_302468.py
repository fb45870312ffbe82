"""Fuzzer finding (tools/fuzz.py, seed 302468): diff.

call 2.0: globals: plain={'G': ('int', 210)} compiled={'G': ('int', 10)}
"""
# signature: diff globals
from fuzzcheck import check

SOURCE = """\
import numpy as np
G = 0

def f(x, n):
    global G
    G += n
    return x.astype(np.int8) * n
"""

CALLS = [[['arr', [3], 'float64', 'C', 0], ['int', 2]], [['arr', [3], 'float64', 'C', 1], ['int', 3]], [['arr', [3], 'float64', 'C', 2], ['int', 200]]]


def test_fuzz_302468():
    check(SOURCE, CALLS)
