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


# Introspection from a callee (tests/test_introspection.py): what debuggers,
# loggers and warnings do with the frame that called them.

def caller_frame():
    """The caller's frame object (sys._getframe(1)), as loggers take it."""
    import sys
    return sys._getframe(1)


def caller_view():
    """What a logger reads of its caller's frame: names, relative line, locals, f_back."""
    import sys
    f = sys._getframe(1)
    return (f.f_code.co_name, f.f_code.co_qualname, f.f_lineno - f.f_code.co_firstlineno,
            sorted(f.f_locals), f.f_back.f_code.co_name)


def walk_up(n=3):
    """pdb's `up`: (co_name, f_lineno) of the caller and its callers."""
    import sys
    f, out = sys._getframe(1), []
    while f is not None and len(out) < n:
        out.append((f.f_code.co_name, f.f_lineno))
        f = f.f_back
    return out


def warn_caller(msg="hello"):
    import warnings
    warnings.warn(msg, UserWarning, stacklevel=2)


def start_tracing(fn):
    import sys
    sys.settrace(fn)


def stop_tracing():
    import sys
    sys.settrace(None)
