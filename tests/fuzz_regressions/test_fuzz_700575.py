"""Fuzzer finding (tools/fuzz.py, seed 700575): diff.

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

sq = lambda t: t * t - 1
def h0(a, k):
    v2 = (np.multiply(a, a) + np.zeros(np.multiply(a, a).shape))
    v3 = a
    return (v2 + v2)

def f(x, y, n, obj, dct):
    obj.val = y
    k4 = 0
    while k4 < min(1, 3):
        k4 = k4 + 1
        x[...] = (y - 2)
    obj.val = y
    return k4
"""

CALLS = [[['arr', [0], 'int8', 'C', 548588199], ['arr', [], 'float64', 'C', 548588200], ['int', 3], ['obj', 0], ['dict', {'k': 0, 'm': 2.5}]], [['arr', [0], 'int8', 'C', 104346551], ['arr', [], 'float64', 'C', 104346552], ['int', 4], ['obj', 0], ['dict', {'k': 0, 'm': 2.5}]], [['arr', [0], 'int8', 'C', 1028921314], ['arr', [], 'float64', 'C', 1028921315], ['int', 5], ['obj', 0], ['dict', {'k': 0, 'm': 2.5}]], [['arr', [0], 'int8', 'C', 776485386], ['arr', [], 'float64', 'C', 776485387], ['int', 6], ['obj', 2], ['dict', {'k': 0, 'm': 2.5}]], [['arr', [0], 'int8', 'C', 828388271], ['arr', [], 'float64', 'C', 828388272], ['int', 7], ['obj', 2], ['dict', {'k': 2, 'm': 2.5}]]]


def test_fuzz_700575():
    check(SOURCE, CALLS)
