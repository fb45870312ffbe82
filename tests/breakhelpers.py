"""Functions that live in another module: framejit does not inline them
(a graph break), so tests use them as 'unknown calls'."""
import numpy as np

def opaque(v):
    """An unknown call (another module: not inlined) that returns its argument."""
    return v


def opaque_scale(x, k=2):
    return x * k


def raises(msg="boom"):
    raise ValueError(msg)


def total(*xs):
    return sum(float(np.sum(x)) for x in xs)
