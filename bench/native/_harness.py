"""Pieces the bench/native scripts share: a fresh function object for each
compile (framejit caches per code object) and best-of timing over rounds in
which every variant runs, in alternating order."""
import time
import types

_fresh_n = [0]


def fresh(fn):
    """A new function object with its own code (framejit caches per code object)."""
    _fresh_n[0] += 1
    code = fn.__code__.replace(co_name=f"{fn.__name__}_{_fresh_n[0]}")
    return types.FunctionType(code, fn.__globals__, code.co_name)


def timed(fn, args, reps):
    t0 = time.perf_counter()
    for _ in range(reps):
        fn(*args)
    return (time.perf_counter() - t0) / reps


def best_interleaved(calls, rounds, reps):
    """{name: best seconds per call} of calls {name: (fn, args)}: 'rounds'
    rounds, each running every variant (a warm-up call, then 'reps' timed
    calls), the order reversed every other round."""
    best = {k: float("inf") for k in calls}
    for r in range(rounds):
        order = list(calls)
        if r % 2:
            order.reverse()
        for k in order:
            f, a = calls[k]
            f(*a)
            best[k] = min(best[k], timed(f, a, reps))
    return best


def pair_ratio(calls, base, other, rounds, reps):
    """NumPy's ('base') time over 'other''s, measured in rounds of their
    own, three times as many as 'rounds': a backend that runs NumPy's own
    loops (eager) differs from it by microseconds, which the +-10% spread
    of a memory-bound 40 MB call beside the other variants (native,
    inductor: their pools, caches and threads) drowns."""
    best = best_interleaved({base: calls[base], other: calls[other]}, 3 * rounds, reps)
    return best[base] / best[other]
