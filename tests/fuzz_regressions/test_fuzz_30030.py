"""Fuzzer finding (tools/fuzz.py, seed 30030): diff.

call 2.0: args: plain=('list', (('nd', '<f8', (3, 3), b'x<J\xa0\xfe\n\xb5?[\x85\xde\x03\xe7\xfe\xf2\xbf\x1bt\xcb\xeb\\\x10\xb9?\xc8L\n\x89~\x8d\xc1\xbfS\xad"\xf3G\x07\xf2?U\x0c\xec\x1a\xd2\x1e\xc7?\xd4!\xf4F\xcf3\x03@l\x9a8\xb2\xc7\xf0\xa5\xbfp\xc4\xe5\xa3\xa5\r\xb7?'), ('nd', '<f8', (5, 5), b'V\xff\x85\xcb\xf36\xf9\xbf\... compiled=('list', (('nd', '<f8', (3, 3), b'x<J\xa0\xfe\n\xb5?[\x85\xde\x03\xe7\xfe\xf2\xbf\x1bt\xcb\xeb\\\x10\xb9?\xc8L\n\x89~\x8d\xc1\xbfS\xad"\xf3G\x07\xf2?U\x0c\xec\x1a\xd2\x1e\xc7?\xd4!\xf4F\xcf3\x03@l\x9a8\xb2\xc7\xf0\xa5\xbfp\xc4\xe5\xa3\xa5\r\xb7?'), ('nd', '<f8', (5, 5), b'V\xff\x85\xcb\xf36\xf9\xbf\...
"""
# signature: diff args
from fuzzcheck import check

SOURCE = """\
import numpy as np

def f(x, y, n, obj):
    obj.val = x
    v = y / x
    return v
"""

CALLS = [[['arr', [3, 3], 'float64', 'T', 818669165], ['arr', [3, 3], 'float64', 'T', 818669166], ['int', -1], ['obj', 1]], [['arr', [4, 4], 'float64', 'T', 73692937], ['arr', [4, 4], 'float64', 'T', 73692938], ['int', -1], ['obj', 1]], [['arr', [3, 3], 'float64', 'T', 95226921], ['arr', [5, 5], 'float64', 'T', 95226922], ['int', -1], ['obj', 2]]]


def test_fuzz_30030():
    check(SOURCE, CALLS)
