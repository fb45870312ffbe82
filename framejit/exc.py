"""framejit's user-facing exceptions."""


class FramejitError(RuntimeError):
    """Base of framejit's errors."""


class Unsupported(FramejitError):
    """fullgraph=True and the function cannot be captured whole."""


class BackendCompilerFailed(FramejitError):
    """The backend raised while compiling a graph."""
