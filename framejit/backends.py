"""The backend registry: a backend is ``backend(graph, example_inputs) -> callable``."""

# Builtins bound at import: framejit's code runs while the program's frames
# compile, when the program may have patched builtins (len, isinstance, open...).
from builtins import (  # noqa: A004
    KeyError, TypeError, ValueError, callable, isinstance, sorted, str, type
)

_registry = {}


def register_backend(name, fn=None):
    """Register 'fn' under 'name' (usable as a decorator)."""
    if fn is None:
        return lambda f: register_backend(name, f)
    if not callable(fn):
        raise TypeError(f"backend {name!r} must be callable, not {type(fn).__name__}")
    _registry[name] = fn
    return fn


def list_backends():
    return sorted(_registry)


def lookup(backend):
    """The backend callable for a name or a callable; ValueError names the choices."""
    if callable(backend):
        return backend
    if isinstance(backend, str):
        try:
            return _registry[backend]
        except KeyError:
            raise ValueError(
                f"unknown framejit backend {backend!r}; registered backends: "
                f"{', '.join(list_backends()) or '(none)'}") from None
    raise TypeError(f"backend must be a name or a callable, not {type(backend).__name__}")


def _eager(graph, example_inputs):
    return graph  # a graph object is callable: it runs node by node in C


register_backend("eager", _eager)


def _native(graph, example_inputs):
    from . import native  # imported by framejit/__init__.py: no import runs here
    return native.backend(graph, example_inputs)


_native.__name__ = "native"
register_backend("native", _native)
