import pytest

from framejit._C import eval_frame


@pytest.fixture(autouse=True)
def _no_callback_left_behind():
    """Every test starts and ends with this thread's callback off."""
    eval_frame.set_eval_frame(None)
    yield
    left = eval_frame.set_eval_frame(None)
    assert left is None, f"a test left an eval-frame callback set: {left!r}"
