"""framejit configuration: module attributes, read at compile time.

The C core keeps them in a struct (csrc/runtime/config.h) that it refills only
after an attribute is set here: setting one calls framejit._C._config_changed.
"""
import os
import sys
import types

#: the backend of ``framejit.compile(fn)`` without ``backend=``: "native"
#: (fused C kernels, docs/native.md; "eager" with one warning when there is no
#: C compiler), or any registered name.  The environment variable
#: FRAMEJIT_BACKEND sets it at import (the test suite runs with "eager"
#: except its native-backend files; ``make test-native-default`` runs it all
#: with "native").
backend = os.environ.get("FRAMEJIT_BACKEND") or "native"

#: cache entries per code object before the code goes run-only
recompile_limit = 8
#: depth of user functions inlined into one graph
inline_depth_limit = 8
#: traces of one frame (each restart stops before the instruction that broke)
#: before it runs uncompiled
max_restarts = 100
#: loops over range() with more than ``loop_unroll_limit`` iterations are
#: captured as one loop node whose body is traced once (docs/loops.md), so
#: compile time does not grow with the trip count; shorter loops, loops over
#: containers and bodies that cannot be captured are unrolled as before
capture_loops = True
loop_unroll_limit = 16
#: the native backend's transcendental functions (np.exp, expm1, log, log1p,
#: sin, cos, tanh of float64) run through
#: NumPy, whose bits they then are (True, the default: a compiled function
#: returns exactly what plain NumPy returns), or inside the fused kernels
#: (False: framejit/_vmath.h, vectorized, within the bounds docs/native.md
#: measures against correctly rounded results, and 2-5x faster on chains
#: with them).  Special values, floating-point flags and warnings are NumPy's
#: either way.  Read when a graph is compiled.
native_exact = True
#: tiered compilation (the native backend): a graph whose kernels are not in
#: the disk cache runs with the eager runner while a background thread builds
#: them with the C compiler, then with the kernels (True, the default: a first
#: call costs about what eager's does, not a compiler run); False builds them
#: before the first call returns.  ``framejit.native.wait()`` waits for the
#: builds under way.  FRAMEJIT_NATIVE_BACKGROUND=0 sets it False at import
#: (the test suite sets it False; its tiered tests turn it on).
native_background = os.environ.get("FRAMEJIT_NATIVE_BACKGROUND", "1") != "0"
#: re-raise internal compiler errors instead of running the frame uncompiled (tests)
raise_internal_errors = False
#: never offer frames of the stdlib, NumPy and the test runners to the compiler
#: (``python -m framejit run`` turns this off: see docs/cpython-tests.md)
skip_stdlib = True
#: internal compiler errors print a RuntimeWarning (``framejit run`` turns this
#: off: the program's own warning filters and checks must not see them; they
#: are counted in framejit.counters["internal_error"] and logged instead)
warn_internal_errors = True
#: warn once per code object that hits recompile_limit (``framejit run`` turns
#: this off, for the same reason; counters["stats"]["recompile_limit_hit"])
warn_recompile_limit = True

#: the structured trace (docs/report.md): a directory where each process
#: writes framejit_trace.<pid>.jsonl, every frame offered to the compiler, its
#: graphs, guards, breaks, recompiles and compile times; None: off.  The
#: environment variable FRAMEJIT_TRACE_DIR sets it at import.
#: ``python -m framejit report DIR`` renders the files as one HTML page.
trace_dir = os.environ.get("FRAMEJIT_TRACE_DIR") or None

#: Transparent mode (python -m framejit run turns it on): the compiled and
#: resume functions are constants of the new code instead of globals
#: __compiled_fn_N / __resume_at_<offset>_<n> of the frame's module, and
#: resume code keeps the original function's name instead of
#: resume_in_<f>_at_<line>, so a program that iterates over its module
#: globals or inspects tracebacks sees nothing of framejit.  Off by default:
#: the visible names are how the logs and the seeds describe the system.
transparent = False


class _ConfigModule(types.ModuleType):
    """framejit.config: setting an attribute tells the C core to read again."""

    def __setattr__(self, name, value):
        types.ModuleType.__setattr__(self, name, value)
        from . import _C  # not at import: config is imported before _C
        if name == "trace_dir":
            from . import tracefile
            tracefile.prepare()
        _C._config_changed()

    def __delattr__(self, name):
        types.ModuleType.__delattr__(self, name)
        from . import _C
        _C._config_changed()


sys.modules[__name__].__class__ = _ConfigModule
