"""framejit example: a program with many graph breaks and recompiles.

    FRAMEJIT_TRACE_DIR=/tmp/trace python3 examples/breaks.py
    python3 -m framejit report /tmp/trace

Each function below captures what it can and breaks where it cannot: a
print(), a branch on an array's values, a call framejit does not model,
a break inside an inlined helper; then a dtype and a shape change make
functions recompile.  ``make report-demo`` renders its report.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import framejit  # noqa: E402


def log_step(x):
    y = np.tanh(x) * 0.5
    print("step: mean", float(y.mean()))           # print(): a graph break
    return y + 1


def clip_positive(x):
    s = np.sum(x * x)
    if s > 10.0:                                     # a branch on an array's value
        x = x / np.sqrt(s)
    return np.maximum(x, 0.0)


def with_unsupported(x):
    y = np.exp(-x)
    n = len(repr(y.shape))                           # a call framejit does not model
    return y * n


def helper(v):
    w = v * 3
    print("helper sees", w.shape)                    # a break inside an inlined function
    return w - 1


def pipeline(x):
    a = np.cos(x) + 1
    b = helper(a)
    return np.sum(b * a)


def main():
    fns = [framejit.compile(f, backend="eager")
           for f in (log_step, clip_positive, with_unsupported, pipeline)]
    x = np.linspace(-2.0, 2.0, 8)
    for fn in fns:
        fn(x)
        fn(x * 4)                                     # other values: the same entries
    for fn in fns:
        fn(x.astype(np.float32))                      # another dtype: recompiles
        fn(np.linspace(-1.0, 1.0, 16))                # another shape: recompiles again
    print(framejit.counters["stats"])


if __name__ == "__main__":
    main()
