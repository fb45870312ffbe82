"""Fuzzer finding (tools/fuzz.py, seed 118213): crash.

crash (returncode -11): 
"""
# signature: crash rc-11
import pytest

from fuzzcheck import check

SOURCE = """\
import numpy as np

G = 0
GA = np.float64(0.0)
GL = []

sq = lambda t: t * t - 1

def f(x, y, n):
    global GA
    k1 = abs(abs(4))
    GA = GA + 2
    L2 = [(x / x), k1]
    L2.append((y + y))
    v3 = L2[0]
    if np.float32(2.5) > 0.5:
        raise RuntimeError('gen 3')
    s4 = 0.0
    for row5 in x[:3]:
        s4 = s4 + row5.sum()
    acc7 = 0
    def inner6(z):
        nonlocal acc7
        acc7 = acc7 + 1
        return z * acc7 + y
    v8 = inner6(v3)
    return (L2, n,)
"""

CALLS = [[['arr', [5], 'float64', 'C', 875058659], ['arr', [], 'float32', 'C', 875058660], ['int', 3]], [['arr', [5], 'float64', 'C', 937742100], ['arr', [], 'float32', 'C', 937742101], ['int', 1]], [['arr', [5], 'float64', 'C', 979355988], ['arr', [], 'float32', 'C', 979355989], ['int', 1]], [['arr', [2, 2, 2], 'float64', 'C', 339374892], ['arr', [], 'float32', 'C', 339374893], ['int', 1]]]


def test_fuzz_118213():
    check(SOURCE, CALLS)
