"""The NumPy surface real programs use (issue 21): break reasons in the
program's own words, and differential tests of the functions and indexing
that graphs capture."""
import collections
import re

import numpy as np
import pytest

import framejit

from difftools import check_differential


# ---------------------------------------------------------------- break reasons

def _reasons(fn, *args):
    framejit.reset()
    framejit.compile(fn, backend="eager")(*args)
    return list(framejit.counters["graph_break"])


def test_break_reasons_name_the_function_as_the_program_spells_it():
    np.fft.fft  # numpy loads np.fft lazily (a module __getattr__)

    def fft(x):
        return np.fft.fft(x) + 1

    def nditer(x):
        s = 0.0
        for t in np.nditer(x):
            s += t
        return x + s

    def rng(x):
        return x + np.random.default_rng(0).random()

    def builtin(x):
        print("x")
        return x + 1

    x = np.arange(4.0)
    assert "call of np.fft.fft is not supported" in _reasons(fft, x)
    assert "call of np.nditer is not supported" in _reasons(nditer, x)
    assert "call of np.random.default_rng is not supported" in _reasons(rng, x)
    assert "call of print is not supported" in _reasons(builtin, x)


@pytest.mark.parametrize("make", [
    lambda: (lambda x, c: x + len(c.most_common()), collections.Counter("ab")),
    lambda: (lambda x, o: x + o.f(), type("K", (), {"f": lambda self: 1})()),
    lambda: (lambda x, d: x + len(d), {1: 2}),
    lambda: (lambda x, it: x + next(it), iter([1.0, 2.0])),
])
def test_break_reasons_never_show_internal_representations(make):
    fn, arg = make()
    for r in _reasons(fn, np.arange(3.0), arg):
        assert "Var(" not in r and not re.search(r"0x[0-9a-f]{6,}", r), r
