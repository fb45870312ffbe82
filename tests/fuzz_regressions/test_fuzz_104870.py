"""Fuzzer finding (tools/fuzz.py, seed 104870): diff.

call 2.0: args: plain=('list', (('nd', '<f8', (8,), b'\xc1\xfaS\x8e\xdc\xc5\xf5?W\x19|\xe0R\xac\xd8\xbfj\x0b|\x14\xc5O\xfd?\xcc`]!\xab>\xe2\xbf\xaa\xde\x17g\x088\xa4?\xda\xdfe\xb2z\xb1\x97\xbf\xf4\x83$\xd3N\xb7\xce\xbf\xb8H<\x95,A\xf8\xbf'), ('int', 4), ('Obj', ('dict', (('cnt', ('int', 2)), ('val', ('nd', '<f8', (8,), b... compiled=('list', (('nd', '<f8', (8,), b'\xc1\xfaS\x8e\xdc\xc5\xf5?W\x19|\xe0R\xac\xd8\xbfj\x0b|\x14\xc5O\xfd?\xcc`]!\xab>\xe2\xbf\xaa\xde\x17g\x088\xa4?\xda\xdfe\xb2z\xb1\x97\xbf\xf4\x83$\xd3N\xb7\xce\xbf\xb8H<\x95,A\xf8\xbf'), ('int', 4), ('Obj', ('dict', (('cnt', ('int', 2)),)))))
"""
# signature: diff args
from fuzzcheck import check

SOURCE = """\
def f(x, n, obj):
    v1 = x
    obj.val = v1
    v2 = v1
    v3 = v2.reshape(3, -1)
"""

CALLS = [[['arr', [5], 'float64', 'C', 342917506], ['int', 4], ['obj', 1]], [['arr', [6], 'float64', 'C', 732648252], ['int', 4], ['obj', 1]], [['arr', [8], 'float64', 'C', 890750497], ['int', 4], ['obj', 2]]]

def test_fuzz_104870():
    check(SOURCE, CALLS)
