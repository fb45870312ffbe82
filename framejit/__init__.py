"""framejit: a just-in-time graph capturer for Python, written in C.

The public surface mirrors torch.compile where it makes sense::

    import framejit
    f2 = framejit.compile(f, backend="eager")
    framejit.reset()
    framejit.counters["stats"]["unique_graphs"]

Everything that runs per call or per traced instruction is in the C
extension ``framejit._C``; this package is the thin surface around it.
"""
from . import config
from ._C import eval_frame
from .api import compile, reset, counters, is_supported, mark_dynamic
from .logs import set_logs
from .exc import Unsupported, BackendCompilerFailed, FramejitError
from .backends import register_backend, list_backends
from .explain import explain, ExplainOutput
# imported now, not on the first native compile: a module imported while the
# program's frame compiles would bind builtins the program may have patched
from . import native as _native  # noqa: F401

__all__ = ["compile", "reset", "counters", "config", "set_logs", "eval_frame", "is_supported",
           "Unsupported", "BackendCompilerFailed", "FramejitError", "register_backend",
           "list_backends", "explain", "ExplainOutput", "mark_dynamic"]
__version__ = "0.1.0"
