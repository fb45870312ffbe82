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
