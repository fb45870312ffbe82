import pytest

import framejit
from framejit._C import eval_frame

# In tests an internal compiler error is a failure, not a silent fallback.
framejit.config.raise_internal_errors = True


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
