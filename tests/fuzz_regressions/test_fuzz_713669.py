"""Fuzzer finding (tools/fuzz.py, seed 713669): diff.

An item store of a NumPy scalar computed in the graph into an integer array:
NumPy converts a scalar by value (NaN, infinity or an int out of range raise)
while the stand-in check saw 1.0; such stores are now breaks unless the
scalar's dtype casts safely.
"""
# signature: diff
from fuzzcheck import check

SOURCE = """\
import numpy as np

G = 0
GA = np.float64(0.0)
GL = []

def h0(a, k):
    v2 = (np.minimum(a, a) + (a * a))
    return (a * a)
def bump(k):
    global G
    G += 1
    return G + k

def f(x, y, n, obj):
    global G
    for i4 in range(3):
        G += 1
        G = bump(i4) - i4
    x[...] = (y * n)
    v7 = (y * (x * y))
    return (n, x, obj.val,)
"""

CALLS = [[['arr', [2, 2, 2], 'int32', 'C', 133456396], ['arr', [], 'float64', 'C', 133456397], ['int', 4], ['obj', 0, 0]], [['arr', [2, 2, 2], 'int32', 'C', 731953375], ['arr', [], 'float64', 'C', 731953376], ['int', 5], ['obj', 2, 0]], [['arr', [2, 2, 2], 'int32', 'C', 259918567], ['arr', [], 'float64', 'C', 259918568], ['int', 6], ['obj', 2, 0]], [['arr', [2, 2, 2], 'int32', 'C', 715199108], ['arr', [], 'float64', 'C', 715199109], ['int', 7], ['obj', 0, 0]], [['arr', [2, 2, 2], 'int32', 'C', 933378700], ['arr', [], 'float64', 'C', 933378701], ['int', 8], ['obj', 1, 0]]]


def test_fuzz_713669():
    check(SOURCE, CALLS)
