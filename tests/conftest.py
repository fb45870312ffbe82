import logging
import os

import pytest

# The suite compiles with the eager backend unless told otherwise: the
# native backend's own files (test_native*.py) ask for it by name, and
# `make test-native-default` runs everything with FRAMEJIT_BACKEND=native
# (compiling C for thousands of graphs: a long run, not `make test`).
# Set before framejit is imported; inherited by the subprocesses tests start.
os.environ.setdefault("FRAMEJIT_BACKEND", "eager")
# Kernels build before a first call returns (the differential tests check
# which kernels ran); tests/test_native_tiered.py turns tiered compilation on.
os.environ.setdefault("FRAMEJIT_NATIVE_BACKGROUND", "0")

import framejit  # noqa: E402
from framejit._C import eval_frame  # noqa: E402

# In tests an internal compiler error is a failure, not a silent fallback.
framejit.config.raise_internal_errors = True
# The kernels compute framejit/_vmath.h's functions on any CPU in tests (where
# NumPy runs AVX-512 loops, some stay NumPy's outside tests: native.py
# NUMPY_AVX512; test_native_vmath.py checks that choice by setting it).
import framejit.native  # noqa: E402

framejit.native.NUMPY_AVX512 = False


@pytest.fixture(autouse=True)
def _no_callback_left_behind():
    """Every test starts and ends with this thread's callback off."""
    eval_frame.set_eval_frame(None)
    yield
    left = eval_frame.set_eval_frame(None)
    assert left is None, f"a test left an eval-frame callback set: {left!r}"


@pytest.fixture(scope="module")
def native_kernel_cache(tmp_path_factory):
    """A fresh kernel cache directory (FRAMEJIT_CACHE_DIR) for a module of native-backend tests."""
    import os
    old = os.environ.get("FRAMEJIT_CACHE_DIR")
    os.environ["FRAMEJIT_CACHE_DIR"] = str(tmp_path_factory.mktemp("kernels"))
    yield os.environ["FRAMEJIT_CACHE_DIR"]
    if old is None:
        os.environ.pop("FRAMEJIT_CACHE_DIR", None)
    else:
        os.environ["FRAMEJIT_CACHE_DIR"] = old


class LogCapture(logging.Handler):
    """The messages of framejit's loggers (set_logs sends them there)."""

    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@pytest.fixture
def logs():
    """A LogCapture on the 'framejit' logger; channels off again afterwards."""
    cap = LogCapture()
    logger = logging.getLogger("framejit")
    logger.addHandler(cap)
    yield cap
    logger.removeHandler(cap)
    framejit.set_logs()
