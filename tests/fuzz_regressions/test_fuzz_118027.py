"""Fuzzer finding (tools/fuzz.py, seed 118027): crash.

The generator itself raised (IndexError: random.choice over an empty list of
parameters in stmt_ext) while writing this program; the program is kept as a
regression of the compiled code.
"""
# signature: crash rc1
import pytest

from fuzzcheck import check

SOURCE = """\
import numpy as np

G = 0
GA = np.float64(0.0)
GL = []


def f(x, y, n):
    global GA
    GL.append((n % 1))
    try:
        for i1 in range(2):
            s2 = x.max()
            v3 = (lambda z: z * s2 + 1)(y)
        GL.append(min(n, 2))
    except (ValueError, TypeError, IndexError, ZeroDivisionError, KeyError, AttributeError) as e:
        print('caught', type(e).__name__, str(e)[:40])
    GA = GA + np.int64(2)
    v4 = (lambda z: z * 0.5 + 1)((x * x))
    k5 = int(v4.sum())
    y = x
    D6 = {'a': y}
    D6['b'] = np.cumsum(v4).reshape(v4.shape)
    v7 = D6['b'] + D6['a']
    return (v7, k5, n,)
"""

CALLS = [[['arr', [2, 0], 'bool', 'F', 366319876], ['arr', [2, 0], 'bool', 'F', 366319877], ['int', -1]], [['arr', [2, 0], 'bool', 'F', 282745805], ['arr', [2, 0], 'bool', 'F', 282745806], ['int', 4]], [['arr', [1, 4], 'bool', 'F', 620065841], ['arr', [1, 4], 'bool', 'F', 620065842], ['int', 4]], [['arr', [1, 4], 'bool', 'F', 880595672], ['arr', [1, 4], 'bool', 'F', 880595673], ['int', 5]]]


def test_fuzz_118027():
    check(SOURCE, CALLS)
