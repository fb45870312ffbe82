"""framejit.config as the C core reads it (csrc/runtime/config.c): the values are
read once per change (setting an attribute or set_logs tells the core), and
every setting in config.py is wired."""
import numpy as np
import pytest

import framejit
from framejit import _C, config
from framejit._C import eval_frame

X = np.arange(4.0)


@pytest.fixture(autouse=True)
def _fresh():
    framejit.reset()
    saved = {k: getattr(config, k) for k in ("max_restarts", "inline_depth_limit",
                                             "recompile_limit")}
    yield
    for k, v in saved.items():
        setattr(config, k, v)
    framejit.set_logs()
    framejit.reset()


def two_breaks(x):
    y = np.sin(x) + 1
    print(end="")          # a graph break
    z = y * 2
    print(end="")          # another
    return z - 1


def test_max_restarts_is_wired():
    # a break needs a second trace (stopped before it); the rest of the
    # frame is a resume function with its own traces
    config.max_restarts = 1
    cf = framejit.compile(two_breaks, backend="eager")
    assert np.array_equal(cf(X), two_breaks(X))
    assert eval_frame._debug_get_cache_entry_list(two_breaks.__code__) == []
    framejit.reset()
    config.max_restarts = 100
    cf = framejit.compile(two_breaks, backend="eager")
    assert np.array_equal(cf(X), two_breaks(X))
    assert len(eval_frame._debug_get_cache_entry_list(two_breaks.__code__)) == 1


def test_max_restarts_reached_is_logged(logs):
    config.max_restarts = 1
    framejit.set_logs("graph_breaks")
    framejit.compile(two_breaks, backend="eager")(X)
    assert any("config.max_restarts" in t and "two_breaks" in t for t in logs.lines), logs.lines


def inner(x):
    return np.cos(x) * 3


def outer(x):
    return inner(x) + 1


def test_a_change_reaches_the_next_compile():
    config.inline_depth_limit = 0          # no call inlined: a break at inner()
    framejit.compile(outer, backend="eager")(X)
    broke = framejit.counters["stats"].get("unique_graphs", 0)
    framejit.reset()
    config.inline_depth_limit = 8
    framejit.compile(outer, backend="eager")(X)
    # inlined: one graph instead of a graph for each side of the break
    assert framejit.counters["stats"]["unique_graphs"] == 1
    assert broke != 1


def test_set_logs_reaches_the_next_compile(logs):
    def f(x):
        return np.tan(x) - 1
    framejit.compile(f, backend="eager")(X)
    assert not any("GUARDS" in t for t in logs.lines)
    framejit.set_logs("guards")
    framejit.compile(lambda x: np.tan(x) - 2, backend="eager")(X)
    assert any("GUARDS" in t for t in logs.lines)


@pytest.mark.parametrize("name, value", [("inline_depth_limit", -1), ("max_restarts", 0),
                                         ("recompile_limit", -3)])
def test_a_bad_value_names_the_setting(name, value):
    setattr(config, name, value)
    with pytest.raises(ValueError, match=f"framejit.config.{name}"):
        framejit.compile(lambda x: np.exp(x), backend="eager")(X)


def test_config_changed_is_cheap_to_call_and_public_names_unchanged():
    assert _C._config_changed() is None
    assert "_config_changed" not in dir(eval_frame)
