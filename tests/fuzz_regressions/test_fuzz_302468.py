"""Fuzzer finding (tools/fuzz.py, seed 302468): diff.

call 2.0: globals: plain={'G': ('int', 210)} compiled={'G': ('int', 10)}
"""
# signature: diff globals
import pytest

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


@pytest.mark.xfail(strict=True, reason='trace_call.c graph_call: an int8 array times a symbolic int n is traced as an elementwise op; with n = 200 NumPy (NEP 50) raises OverflowError inside the graph at run time, and the global store G += n before it is not replayed (codegen.c); pinning n for integer arrays narrower than int64 (or replaying effects on a graph error) would fix it')

def test_fuzz_302468():
    check(SOURCE, CALLS)
