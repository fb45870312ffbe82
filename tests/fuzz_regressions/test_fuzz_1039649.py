"""Fuzzer finding (tools/fuzz.py, seed 1039649): diff.

call 0.0: outcome: plain=('ok', ('tuple', (('nd', '<f8', (3,), b'\x00\x00\x00\x00\x00\x00\x1c@\x1fh\x04"\xb2J\xfa?\n\xfc\xe5\x8c\xe1%\xe5?'), ('nd', '<f8', (3,), b'\xa1\xb3\xbb(\r\x1e\xf6?\x1fh\x04"\xb2J\n@\n\xfc\xe5\x8c\xe1%\xf5?'))), (((True, True),), ((False, False),))) compiled=('ok', ('tuple', (('nd', '<f8', (3,), b'\xa1\xb3\xbb(\r\x1e\xe6?\x1fh\x04"\xb2J\xfa?\n\xfc\xe5\x8c\xe1%\xe5?'), ('nd', '<f8', (3,), b'\x00\x00\x00\x00\x00\x00\x1c@\x1fh\x04"\xb2J\n@\n\xfc\xe5\x8c\xe1%\xf5?'))), (((True, True),), ((False, False),)))
"""
# signature: diff outcome:ok:ok
import pytest

from fuzzcheck import check

SOURCE = """\
import numpy as np

def f(x, n):
    y = x
    x = y * 2

    def inner():
        return x
    y[0] = 7
    return y, x
"""

CALLS = [[['arr', [3], 'float64', 'C', 1], ['int', 0]]]



def test_fuzz_1039649():
    check(SOURCE, CALLS)
