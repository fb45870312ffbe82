"""The backend registry: a backend is ``backend(graph, example_inputs) -> callable``.

Which backend a graph gets: a graph holds NumPy arrays or torch tensors
(torch_backends.is_torch_graph).  "eager" runs either kind in C as it is.
"native" (the default) compiles NumPy graphs to C kernels and hands torch
graphs to inductor, as torch.compile does by default.  "inductor",
"aot_eager" and any other name torch's registry knows compile torch graphs
only (framejit/torch_backends.py).  A callable passed as the backend gets
framejit's Graph for a NumPy graph and, for a torch graph, a
torch.fx.GraphModule: torch's backend signature ``(gm, example_inputs)``.
A backend registered by name with register_backend gets framejit's Graph
for both.
"""
import weakref

from . import torch_backends

# Builtins bound at import: framejit's code runs while the program's frames
# compile, when the program may have patched builtins (len, isinstance, open...).
from builtins import (  # noqa: A004
    ImportError, KeyError, TypeError, ValueError, callable, getattr, id, isinstance,
    property, repr, sorted, str, type
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
    """The backend callable for a name or a callable; ValueError names the choices.

    A name framejit does not know is looked up in torch's registry when torch
    can be imported (importing torch._dynamo).  A torch backend's name
    without torch raises ImportError.  A callable comes back wrapped (see
    _UserBackend), the same wrapper for the same callable while it is in use."""
    if isinstance(backend, str):
        fn = _registry.get(backend)
        if fn is None:
            fn = torch_backends.registered_torch_backend(backend)
        if fn is None:
            raise ValueError(
                f"unknown framejit backend {backend!r}; registered backends: "
                f"{', '.join(list_backends()) or '(none)'}")
        if isinstance(fn, torch_backends.TorchBackend) and not torch_backends.torch_importable():
            raise ImportError(
                f"framejit backend {backend!r} compiles torch graphs and needs PyTorch "
                f"(the 'torch' package), which cannot be imported here")
        return fn
    if callable(backend):
        if isinstance(backend, (torch_backends.TorchBackend, _UserBackend)):
            return backend  # already tells graphs apart
        return _user_backend(backend)
    raise TypeError(f"backend must be a name or a callable, not {type(backend).__name__}")


class _UserBackend:
    """A user's backend callable, given framejit's Graph for a NumPy graph and
    a GraphModule for a torch graph (torch_backends.torch_backend(fn))."""

    __slots__ = ("fn", "__weakref__")

    def __init__(self, fn):
        self.fn = fn  # strong: keeps id(fn) fn's own while _user_backends holds this

    def __call__(self, graph, example_inputs):
        if torch_backends.is_torch_graph(graph):
            return torch_backends.torch_backend(self.fn)(graph, example_inputs)
        return self.fn(graph, example_inputs)

    @property
    def __name__(self):  # what messages call the backend (_hooks.backend_failed)
        return getattr(self.fn, "__name__", repr(self.fn))

    def __repr__(self):
        return repr(self.fn)


# id(fn) -> its _UserBackend while one is alive.  The C core shares cache
# entries between compilers whose backends are the same object, so compiling
# twice with one callable must give one wrapper; the wrapper holds fn, so an
# id found here is fn's own, and the entry goes with the wrapper.
_user_backends = weakref.WeakValueDictionary()


def _user_backend(fn):
    wrapper = _user_backends.get(id(fn))
    if wrapper is None or wrapper.fn is not fn:
        wrapper = _user_backends[id(fn)] = _UserBackend(fn)
    return wrapper


def _eager(graph, example_inputs):
    return graph  # a graph object is callable: it runs node by node in C


register_backend("eager", _eager)


def _native(graph, example_inputs):
    if torch_backends.is_torch_graph(graph):
        return _inductor(graph, example_inputs)
    from . import native  # imported by framejit/__init__.py: no import runs here
    return native.backend(graph, example_inputs)


_native.__name__ = "native"
register_backend("native", _native)

# torch is imported on their first graph, not here
_inductor = register_backend("inductor", torch_backends.torch_backend("inductor"))
register_backend("aot_eager", torch_backends.torch_backend("aot_eager"))
