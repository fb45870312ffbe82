"""framejit.compile and friends: the wrapper that turns the hook on around a call."""
import collections
import functools
import builtins as _builtins
import sys
import types
import warnings

from . import _C, config
from ._C import eval_frame

# Builtins bound at import: framejit's code runs while the program's frames
# compile, when the program may have patched builtins (len, isinstance, open...).
from builtins import (  # noqa: A004
    AttributeError, IndexError, RuntimeWarning, TypeError, UserWarning, bool, callable, getattr, id,
    int, isinstance, set, sorted, str, tuple, type
)

counters = collections.defaultdict(collections.Counter)

_warned_unsupported = False


def is_supported():
    """True when this CPython is one framejit compiles on (3.11 today)."""
    return bool(_C.SUPPORTED)


def _warn_unsupported():
    global _warned_unsupported
    if not _warned_unsupported:
        _warned_unsupported = True
        warnings.warn(
            f"framejit does not support Python {sys.version_info.major}.{sys.version_info.minor} "
            "yet; functions run uncompiled", RuntimeWarning, stacklevel=3)


def _null_callback(frame, cache_entry, frame_state):
    """A callback that compiles nothing: every frame runs as it is."""
    return None


def _resolve_backend(backend):
    from . import backends
    return backends.lookup(backend)


def compile(fn=None, *, backend=None, fullgraph=False, dynamic=None, callback=None):
    """Compile 'fn' with framejit; usable as ``@compile`` or ``@compile(...)``.

    'backend' is a registered name ("native", "eager", ...) or a callable
    ``backend(graph, example_inputs)``; None means ``framejit.config.backend``
    (default "native", read when compile() is called).

    The result is a wrapper that sets this thread's eval-frame callback for
    the duration of each call (restoring the previous one in a ``finally``),
    so the frame of 'fn' and every frame it calls are offered to framejit.
    """
    if fn is None:
        return functools.partial(compile, backend=backend, fullgraph=fullgraph,
                                 dynamic=dynamic, callback=callback)
    if not callable(fn):
        raise TypeError(f"framejit.compile expects a callable, not {type(fn).__name__}")
    if dynamic not in (None, True, False):
        raise TypeError(f"framejit.compile: dynamic must be None, True or False, not {dynamic!r}")
    if backend is None:
        backend = config.backend
    backend_fn = _resolve_backend(backend)  # an unknown name fails here, on any Python
    if not is_supported():
        if fullgraph:
            from .exc import Unsupported
            raise Unsupported(f"framejit (fullgraph=True) cannot capture {_public_name(fn)}: framejit "
                              f"does not support Python {sys.version_info.major}."
                              f"{sys.version_info.minor} (it compiles on CPython 3.11-3.13)")
        _warn_unsupported()
        return fn
    why = _compiles_nothing(fn)
    if why is not None:
        warnings.warn(f"framejit.compile({_public_name(fn)}): {why}", UserWarning, stacklevel=2)
    if callback is None:
        from ._hooks import hooks
        callback = _C.Compiler(backend_fn, hooks, fullgraph=bool(fullgraph),
                               dynamic=dynamic, marked=_marked)

    target = _module_call(fn) or fn
    wrapper = _C.CompiledFunction(target, callback)
    try:
        functools.update_wrapper(wrapper, fn)
    except AttributeError:  # a callable without __name__ etc.
        pass
    return wrapper


# code flags of functions whose call returns before their body runs
_LAZY_BODY = {0x20: "a generator function", 0x80: "a coroutine function",
              0x100: "a coroutine function", 0x200: "an async generator function"}
_C_CALLABLES = (types.BuiltinFunctionType, types.MethodWrapperType, types.WrapperDescriptorType,
                types.MethodDescriptorType, types.ClassMethodDescriptorType)


def _public_name(fn):
    """'fn' as the program names it (module.qualname), without calling its code."""
    if isinstance(fn, types.MethodType):
        fn = fn.__func__
    if getattr(type(fn), "__name__", "") == "ufunc":
        return "numpy." + str(fn.__name__)
    if isinstance(fn, (type, types.FunctionType) + _C_CALLABLES):
        name, mod = getattr(fn, "__qualname__", None), getattr(fn, "__module__", None)
        if isinstance(name, str):
            return f"{mod}.{name}" if isinstance(mod, str) and mod not in ("builtins", "__main__") else name
    return f"a {type(fn).__name__} object"


def _compiles_nothing(fn):
    """Why framejit.compile(fn) would compile nothing (or not what the
    program means), or None: a function written in C has no frame; a
    generator's or coroutine's body runs after the call returns, outside the
    wrapper; a class's wrapper is not the class."""
    if isinstance(fn, type):
        return ("it is a class: the wrapper constructs it with its __init__ (and what that calls) "
                "compiled, but it is not the class (isinstance, subclassing and class attributes "
                "do not go through it); compile the methods or the function that uses it")
    f = fn.__func__ if isinstance(fn, types.MethodType) else fn
    if isinstance(f, types.FunctionType):
        for flag, what in _LAZY_BODY.items():
            if f.__code__.co_flags & flag:
                return (f"it is {what}: its body runs when the result is iterated or awaited, after "
                        f"the wrapper has returned, and framejit does not compile it yet; calls run "
                        f"as they are")
        return None
    if isinstance(fn, _C_CALLABLES) or getattr(type(fn), "__name__", "") == "ufunc":
        return ("it is written in C and has no Python frame to compile: calls run as they are "
                "(only Python functions it calls back are offered); compile the Python function "
                "that calls it")
    return None


_MODULE_CALL = "def forward_call(*args, **kwargs):\n    return module(*args, **kwargs)\n"


def _module_call(fn):
    """For a torch.nn.Module, the function framejit compiles in its place:
    forward_call(*args, **kwargs) calling the module, in a file of its own
    ('<framejit module call>'), since the module's own __call__ and forward
    live in torch's files, which are never offered to the compiler.  Its
    trace inlines the module's forward (the module is its global 'module').
    None for anything else."""
    torch = sys.modules.get("torch")
    nn = getattr(torch, "nn", None) if torch is not None else None
    if nn is None or not isinstance(fn, nn.Module):
        return None
    ns = {}
    exec(_builtins.compile(_MODULE_CALL, "<framejit module call>", "exec"), {"module": fn}, ns)
    return ns["forward_call"]


# id(array) -> dims, for mark_dynamic; entries go when the array dies
_marked = {}


def mark_dynamic(arr, dim):
    """Ask framejit to treat dimension 'dim' (an int or a sequence of ints) of
    a NumPy array or a torch tensor as dynamic from the first compile: its
    size is not guarded and one graph serves every size (sizes 0 and 1 stay
    specialized; a tensor's dims are dynamic only while it is contiguous).
    Where the trace reads the size (a shape, a reshape, a matmul), the
    dims are pinned again, and the `dynamic` log says so."""
    import weakref
    import numpy as np
    torch = sys.modules.get("torch")
    if not isinstance(arr, np.ndarray) and not (torch is not None and isinstance(arr, torch.Tensor)):
        raise TypeError(f"mark_dynamic expects a numpy.ndarray or a torch.Tensor, not {type(arr).__name__}")
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    for d in dims:
        if not isinstance(d, int) or not -arr.ndim <= d < arr.ndim:
            raise IndexError(f"mark_dynamic: dimension {d!r} is out of range for an array "
                             f"with {arr.ndim} dimensions")
    dims = tuple(sorted({d % arr.ndim for d in dims}))
    key = id(arr)
    old = _marked.get(key)
    _marked[key] = tuple(sorted(set(old or ()) | set(dims)))
    if old is None:  # one finalizer per object, however often it is marked
        try:
            weakref.finalize(arr, _marked.pop, key, None)
        except TypeError:  # not weak-referenceable: kept until reset()
            pass


def reset():
    """Forget every cache entry framejit made and clear the counters."""
    if is_supported():
        _C._reset_state()
    counters.clear()
    _marked.clear()
    from ._hooks import hooks
    hooks._limit_warned.clear()
    from . import tracefile
    if tracefile.active():  # compile ids start again from 0/0: the trace says so
        tracefile.emit({"kind": "reset", "compile_id": None})
