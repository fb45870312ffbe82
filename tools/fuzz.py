#!/usr/bin/env python3
"""Differential fuzzer for framejit (issue #7 point 3).

Generates small Python programs over NumPy arrays and scalars (expression
trees, if/else on ints and on array values, for loops over ranges, tuples and
arrays, while loops, helper functions, closures and lambdas, global and
nonlocal stores, list and dict locals, in-place ops on views and inputs,
attribute stores on a simple object, appends to an input list, exceptions
raised by NumPy and by Python, try/except, prints).  Each program is written
to a real temp file and exec'd twice (one module for the plain run, one for
the compiled run); the entry function ``f`` is then called with a sequence of
argument sets ("calls": several shapes, ints and dtypes, so recompiles and
automatic dynamic shapes kick in), each twice, on fresh copies of the inputs.
After every call the fuzzer compares the outcome (result bit for bit, or
exception type and message), the printed output, the inputs, the object's
attributes, the input list and the module globals.

Any difference, internal compiler error or crash is minimized (delta
debugging over statements, then sub-expressions, then calls) and written to
tests/fuzz_regressions/ as a standalone test case.

    python3 tools/fuzz.py --seed S --count N [--jobs 1] [--timeout T] [--isolate]

``--isolate`` runs batches of seeds in subprocesses and bisects a batch that
dies (segfault, abort, timeout) down to the seed that kills it.
"""
import argparse
import ast
import collections
import contextlib
import io
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
import traceback
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# native kernels build before a first call returns: a program's few calls
# would otherwise run eagerly while they compile (config.native_background);
# set before framejit is imported, inherited by the isolated subprocesses
os.environ.setdefault("FRAMEJIT_NATIVE_BACKGROUND", "0")

import framejit  # noqa: E402

REGRESSION_DIR = os.path.join(ROOT, "tests", "fuzz_regressions")

# Leave out constructs whose open bug crashes the interpreter
# (--avoid-open-crashes).  None is open now: the one construct it leaves out,
# a symbolic int inside a shape tuple, crashed until it was fixed
# (tests/fuzz_regressions/test_fuzz_166.py); the switch stays for the next one.
AVOID_OPEN_CRASHES = False

# ======================================================================
# Inputs
# ======================================================================
# An argument spec is JSON-able so a regression test can rebuild it:
#   ["arr", shape, dtype, layout, seed]   layout: C (contiguous), T (transposed
#                                         view), S (strided view), F (Fortran)
#   ["int", v]  ["float", v]  ["list", [v...]]  ["obj", cnt]

DTYPES = ("float64", "float64", "float64", "float32", "int64", "int32", "int8", "bool", ">f8")
SHAPES = ((3,), (4,), (2, 3), (3, 3), (), (0,), (5,), (2, 0), (1, 4), (2, 2, 2), (6,), (4, 1))


class Obj:
    """The simple object passed to generated programs (attribute stores)."""

    def __init__(self, cnt=0):
        self.cnt = cnt


def build_array(shape, dtype, layout, seed):
    rng = np.random.default_rng(seed)
    shape = tuple(shape)
    if layout == "T" and len(shape) >= 2:
        base = _values(rng, shape[::-1], dtype)
        return base.T
    if layout == "S" and len(shape) >= 1:
        big = (shape[0] * 2,) + shape[1:]
        base = _values(rng, big, dtype)
        return base[::2]
    if layout == "F" and len(shape) >= 2:
        return np.asfortranarray(_values(rng, shape, dtype))
    if layout == "N" and not shape:
        return _values(rng, shape, dtype)[()]      # a NumPy scalar, not a 0-d array
    return _values(rng, shape, dtype)


def _values(rng, shape, dtype):
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith("int"):
        return np.asarray(rng.integers(-6, 7, size=shape)).astype(dtype)
    a = np.asarray(rng.standard_normal(shape) * 2)
    if a.size and rng.random() < 0.1:
        a.flat[0] = np.nan
    return a.astype(dtype)


def build_arg(spec):
    kind = spec[0]
    if kind == "arr":
        return build_array(*spec[1:])
    if kind == "int":
        return int(spec[1])
    if kind == "float":
        return float(spec[1])
    if kind == "list":
        return list(spec[1])
    if kind == "obj":
        return Obj(spec[1])
    if kind == "dict":
        return dict(spec[1])
    raise ValueError(spec)


def build_args(specs):
    """The argument list of one call.  ``["same", i]`` passes argument i again
    (the same object twice: aliasing); ``["viewof", i, how]`` passes a view of
    argument i (how: "rev" = [::-1], "all" = [...]); ``["obj", cnt, i]`` is
    an Obj whose ``val`` is argument i."""
    out = []
    for spec in specs:
        if spec[0] == "same":
            out.append(out[spec[1]])
        elif spec[0] == "obj" and len(spec) > 2:
            o = Obj(spec[1])         # obj.val is argument spec[2] (aliasing through an attribute)
            o.val = out[spec[2]]
            out.append(o)
        elif spec[0] == "viewof":
            base = out[spec[1]]
            if not isinstance(base, np.ndarray) or base.ndim == 0:
                out.append(base)
            else:
                out.append(base[::-1] if spec[2] == "rev" else base[...])
        else:
            out.append(build_arg(spec))
    return out


# ======================================================================
# Program generator
# ======================================================================
# Variable kinds: "arr" (broadcasts with the inputs), "num" (Python int),
# "sc" (a scalar: Python float or NumPy scalar), "any" (anything; only
# returned or printed).

BIN_ARR = ("+", "-", "*", "+", "*", "/")
UFUNCS = ("np.sin", "np.cos", "np.abs", "np.tanh", "np.negative", "np.square", "np.exp",
          "np.sqrt", "np.floor", "np.sign", "np.isnan", "np.log1p")
BIN_UFUNCS = ("np.maximum", "np.minimum", "np.add", "np.multiply", "np.fmax", "np.hypot")
ASTYPES = ("np.float32", "np.float64", "np.int64", "np.int32", "bool")
EXC_TYPES = "(ValueError, TypeError, IndexError, ZeroDivisionError, KeyError, AttributeError)"


# stmt_ext() kinds, repeated by weight: obj attributes, input list, input dict,
# views of inputs, nonlocal counter closure, global counter, symbolic n.
EXT_WEIGHTS = (0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 5, 5, 6, 6, 7, 7)


class ProgGen:
    def __init__(self, seed, small=False, cells=True):
        self.seed = seed
        self.cells = cells          # closures / lambdas over f's locals (cell variables)
        self.r = random.Random(seed)
        self.small = small
        self.n = 0
        self.helpers = []           # module-level source blocks
        self.used_globals = set()
        self.cell_mode = False      # a closure in f: f's frame has cells

    def fresh(self, prefix):
        self.n += 1
        return f"{prefix}{self.n}"

    # ------------------------------------------------------------ exprs
    def pick(self, env, kind):
        names = [k for k, v in env.items() if v == kind]
        return self.r.choice(names) if names else None

    def arr(self, env, d):
        r = self.r
        v = self.pick(env, "arr")
        if d <= 0 or r.random() < 0.3:
            if v is None:
                return "np.ones(3)"
            return v
        c = r.randrange(15)
        if c < 4:
            return f"({self.arr(env, d - 1)} {r.choice(BIN_ARR)} {self.arr(env, d - 1)})"
        if c < 6:
            s = self.scalar(env, d - 1)
            return f"({self.arr(env, d - 1)} {r.choice(BIN_ARR)} {s})" if r.random() < 0.6 else \
                f"({s} {r.choice(BIN_ARR)} {self.arr(env, d - 1)})"
        if c < 8:
            return f"{r.choice(UFUNCS)}({self.arr(env, d - 1)})"
        if c == 8:
            return f"{r.choice(BIN_UFUNCS)}({self.arr(env, d - 1)}, {self.arr(env, d - 1)})"
        if c == 9:
            a = self.arr(env, d - 1)
            return f"np.where({a} > {self.scalar(env, 0)}, {a}, {self.arr(env, d - 1)})"
        if c == 10:
            return f"{self.arr(env, d - 1)}.astype({r.choice(ASTYPES)})"
        if c == 11:
            a = self.arr(env, d - 1)
            return r.choice((f"({a} - {a}.mean())", f"np.clip({a}, -1, 1)", f"{a}.copy()",
                             f"({a} > 0)", f"(-{a})", f"({a} ** 2)", f"{a}.T.T",
                             f"{a}.reshape({a}.shape)", f"np.cumsum({a}).reshape({a}.shape)",
                             f"({a} // 2)", f"({a} % 3)", f"np.abs({a}).astype(np.int8)",
                             f"np.ones_like({a})", f"np.zeros_like({a})", f"np.full_like({a}, 3)",
                             f"({a} + np.zeros({a}.shape))"))
        if c == 12 and self.callables_arr:
            fn = r.choice(self.callables_arr)
            if fn.startswith("h"):
                return f"{fn}({self.arr(env, d - 1)}, {self.num(env, 0)})"
            return f"{fn}({self.arr(env, d - 1)})"
        if c == 13:
            return f"({self.arr(env, d - 1)} * {self.num(env, d - 1)})"
        return f"{self.arr(env, d - 1)}[...]"

    def num(self, env, d):
        r = self.r
        v = self.pick(env, "num")
        if d <= 0 or r.random() < 0.4:
            if v is None or r.random() < 0.25:
                return str(r.randrange(-1, 5))
            return v
        c = r.randrange(10)
        if c < 3:
            return f"({self.num(env, d - 1)} {r.choice(('+', '-', '*'))} {self.num(env, d - 1)})"
        if c == 3:
            return f"({self.num(env, d - 1)} {r.choice(('//', '%'))} {r.randrange(1, 4)})"
        a = self.pick(env, "arr")
        if c == 4 and a:
            return r.choice((f"{a}.ndim", f"{a}.size", f"len({a})", f"{a}.shape[0]",
                             f"{a}.shape[-1]"))
        if c == 5 and a:
            return r.choice((f"int({a}.sum())", f"int(({a} > 0).sum())", f"int({a}.size > 2)"))
        if c == 6 and "lst" in self.params:
            return "len(lst)"
        if c == 7:
            return f"min({self.num(env, d - 1)}, {r.randrange(1, 5)})"
        if c == 8 and "obj" in self.params:
            return "obj.cnt"
        if c == 9 and r.random() < 0.5:
            m = self.num(env, d - 1)
            return r.choice(("G", f"({m}).bit_length()", f"int(float({m}))",
                             f"({m} if isinstance({m}, int) else 0)", f"len(range({m}))",
                             f"len(np.zeros({m} % 4))", f"int(np.arange({m} % 5).sum())"))
        return f"abs({self.num(env, d - 1)})"

    def scalar(self, env, d):
        r = self.r
        v = self.pick(env, "sc")
        c = r.randrange(9)
        if v is not None and c < 2:
            return v
        if c < 3 or d <= 0:
            return r.choice(("1.5", "2", "0.5", "-1", "3", "np.float32(2.5)", "np.int64(2)"))
        a = self.arr(env, d - 1)
        if c < 6:
            return f"{a}.{r.choice(('sum', 'mean', 'max', 'min', 'prod', 'std'))}()"
        if c == 6:
            return f"float({a}.sum())"
        if c == 7:
            return self.num(env, d - 1)
        return f"({self.scalar(env, d - 1)} * {self.scalar(env, d - 1)})"

    def cond(self, env, d):
        r = self.r
        c = r.randrange(6)
        if c < 3:
            return f"{self.num(env, d)} {r.choice(('<', '>', '==', '!=', '>='))} {r.randrange(0, 4)}"
        a = self.arr(env, d)
        if c == 3:
            return f"{a}.sum() > 0"
        if c == 4:
            return r.choice((f"({a} > 0).any()", f"{a}.size > 2", f"{a}.ndim == 1",
                             f"{a}.dtype == np.float64"))
        return f"{self.scalar(env, d)} > 0.5"

    # ------------------------------------------------------------ stmts
    def long_loop(self, env, ind):
        """A loop over range() long enough to be captured as one loop node
        (config.loop_unroll_limit is 16): element reads and stores of a fresh
        array, scalar recurrences, Python int counters, a loop nested in it."""
        r = self.r
        i, j = self.fresh("i"), self.fresh("j")
        v, k, s = self.fresh("v"), self.fresh("k"), self.fresh("s")
        a = self.pick(env, "arr") or "x"
        c = r.choice(("0.5", "-1.25", "3", "0.999", "1e300", "np.float32(0.5)", "np.int64(3)", "np.int64(2**61)"))
        # sometimes past a block of the C loop's version without checks (512 iterations)
        m = r.randrange(18, 40) if r.random() < 0.85 else r.randrange(500, 1100)
        lo = r.randrange(0, 3)
        stores = [
            f"{v}[{i}] = {v}[{i} - 1] * {c} + {i}",
            f"{v}[{i}] = {v}[{i}] + {v}[-{i}] * {c}",
            f"{v}[{i} % 7] += {c}",
            f"{v}[{i}] = {a}.reshape(-1)[{i} % {a}.size] * {c}",
            f"{v}[{i}] = np.sqrt(abs({v}[{i} - 1])) - {i} // 3",
            f"{v}[{i}] = ({v}[{i} - 1] > 0.5) + ({i} % 2)",
            f"{v}[{i} + 1 - 1] = {v}[{i} + 0 - 1] * {c} + {v}[{i} + 1]",
            f"{v}[{i}] = {v}[{i} - 1] + {v}[{i}] * {v}[{i}]",
        ]
        scal = [
            f"{s} = {s} + {v}[{i}] * {c}",
            f"{s} = {s} * {c} - {i}",
            f"{k} = {k} + {i} * {i} - ({i} % 5)",
            f"{k} = ({k} * 31 + {i}) % 1000003",
            f"{s} = {s} / ({i} - {lo + 7})",
            # builtin max/min of one type (a graph node), or of two (a break)
            f"{k} = max({k}, {i} % 7, 2) - min({i}, 3)",
            f"{s} = max({s}, {v}[{i}] * {c})",
        ]
        kind = r.choice(("float64", "float32", "int64"))
        lines = [f"{ind}{v} = np.zeros({m + 2}, dtype=np.{kind}) + 1", f"{ind}{s} = 0.0", f"{ind}{k} = 0",
                 f"{ind}for {i} in range({max(lo, 1)}, {m}):"]
        if r.random() < 0.15:
            # bounds from the int argument: a symbolic range once n is dynamic (maybe empty)
            lines[-1] = r.choice((f"{ind}for {i} in range(n % 5 + 1, {m}):",
                                  f"{ind}for {i} in range(1, {m} - n % 3 * 20):",
                                  f"{ind}for {i} in range(abs(n) + 1, {m}):"))
        body = r.sample(stores, r.randrange(1, 3)) + r.sample(scal, r.randrange(0, 3))
        if r.random() < 0.2:
            # a break on data (trace_loops.c, loop_break): an exit of the loop node,
            # after moves into locals, anywhere in the body
            test = r.choice((f"{v}[{i}] > {r.choice((1.5, 3.0, 1e9))}", f"{s} > {r.choice((2.0, 50.0))}",
                             f"not {v}[{i} - 1] < 4.0", f"{k} > {r.choice((3, 100))}"))
            moves = r.choice(([], [f"{k} = {i}"], [f"{k}, {s} = {i}, {c}"], [f"{s} = {k}"]))
            body.insert(r.randrange(0, len(body) + 1), [f"if {test}:"] + [f"    {mv}" for mv in moves] + ["    break"])
            body = [x for b in body for x in (b if isinstance(b, list) else [b])]
        if r.random() < 0.25:
            body += [f"for {j} in range(20):", f"    {s} = {s} + {v}[{j}] * {i}"]
        elif r.random() < 0.2:
            # an inner loop storing a hoisted range (saved once per run, or once per block)
            body += [f"for {j} in range(1, 19):", f"    {v}[{j}] = {v}[{j} - 1] * {c} + {v}[{j} + 1] - {i}"]
        elif r.random() < 0.3:
            # an inner loop whose bounds change with the outer index (a symbolic range:
            # triangular, reversed, empty for some i)
            rng = r.choice((f"range({i} + 1, {m})", f"range({i})", f"range({i} % 5, {i} % 9)",
                            f"range({i} - 1, -1, -1)", f"range({i} // 2, {i}, 3)", f"range({m} - {i}, {m})"))
            inner = r.choice((f"{s} = {s} + {v}[{j}] * {c}", f"{v}[{j}] = {v}[{j}] * {c} + {i}",
                              f"{k} = {k} + {j} - {i}", f"{v}[{j} + 1] = {v}[{j}] + {v}[{i}]"))
            body += [f"for {j} in {rng}:", f"    {inner}"]
            if r.random() < 0.2:
                body += [f"{s} = {s} + {j}"]  # read after the loop: maybe unbound
        lines += [f"{ind}    {b}" for b in body]
        if lines[3] == f"{ind}for {i} in range({max(lo, 1)}, {m}):" and r.random() < 0.25:
            # the same loop as a while loop: a test on Python ints (captured after the
            # unroll limit) or on data (captured at its first test), always ending
            test = r.choice((f"{i} < {m}", f"{i} < {m} - ({v}[0] > 1e300)", f"not ({i} >= {m} + ({s} > 1e300))",
                             # compound tests (trace_loops.c and_shape): parts on data exit the loop
                             f"{i} < {m} and {v}[{i}] > -1e300", f"{v}[{i} % 3] < 1e300 and {i} < {m}",
                             f"{i} < {m} and not {s} > 1e300 and {k} < 10 ** 15",
                             f"{i} < {m} and ({s} < 1e300 or {k} > 0)"))
            shape = r.random()
            if shape < 0.5:
                lines[3:4] = [f"{ind}{i} = {max(lo, 1)}", f"{ind}while {test}:"]
                lines.append(f"{ind}    {i} = {i} + 1")
            elif shape < 0.75:
                # `while True` with the break at the body's end
                lines[3:4] = [f"{ind}{i} = {max(lo, 1)}", f"{ind}while True:"]
                lines += [f"{ind}    {i} = {i} + 1", f"{ind}    if not ({test}):", f"{ind}        break"]
            else:
                # ... and in its middle (a rotated loop)
                lines[3:4] = [f"{ind}{i} = {max(lo, 1) - 1}", f"{ind}while True:", f"{ind}    {i} = {i} + 1",
                              f"{ind}    if not ({test}):", f"{ind}        break"]
        env[v] = "arr"
        env[s] = "sc"
        env[k] = "num"
        return lines

    def block(self, env, depth, count, ind):
        out = []
        for _ in range(count):
            out.extend(self.stmt(env, depth, ind))
        return out or [ind + "pass"]

    def stmt(self, env, depth, ind):
        r = self.r
        d = 1 if self.small else 2
        if r.random() < 0.03:
            # an import statement inside the function (sys.modules' entry, guarded)
            name, v = self.fresh("m"), self.fresh("v")
            e = self.arr(env, 1)
            env[v] = "arr"
            return r.choice((
                [f"{ind}from numpy import tanh as {name}", f"{ind}{v} = {name}({e})"],
                [f"{ind}import numpy as {name}", f"{ind}{v} = {name}.abs({e}) + 1"],
                [f"{ind}import numpy.random as {name}", f"{ind}{v} = {e} * 2"],
                [f"{ind}from numpy.random import rand as {name}", f"{ind}{v} = {e} + 0 * {name}(1)[0]"],
            ))
        if r.random() < 0.04:
            return self.mask_stmt(env, ind)
        c = r.randrange(32 + len(EXT_WEIGHTS))
        nested = depth < 2
        if c >= 32:
            out = self.stmt_ext(env, depth, ind, EXT_WEIGHTS[c - 32])
            if out:
                return out
        if c < 6:
            name = self.pick(env, "arr") if r.random() < 0.3 else None
            name = name or self.fresh("v")
            e = self.arr(env, d)
            env[name] = "arr"
            return [f"{ind}{name} = {e}"]
        if c < 8:
            name = self.fresh("k")
            e = self.num(env, d)
            env[name] = "num"
            return [f"{ind}{name} = {e}"]
        if c == 8:
            name = self.fresh("s")
            e = self.scalar(env, d)
            env[name] = "sc"
            return [f"{ind}{name} = {e}"]
        if c == 9:
            a = self.pick(env, "arr") or "x"
            op = r.choice(("+=", "*=", "-=", "/=", "+="))
            return [f"{ind}{a} {op} {r.choice((self.arr(env, 0), self.scalar(env, 0), '1'))}"]
        if c == 10:
            a = self.pick(env, "arr") or "x"
            w = self.fresh("w")
            view = r.choice((f"{a}[...]", f"{a}.reshape(-1)", f"{a}.T", f"{a}[::-1]",
                             f"{a}[1:]", f"{a}.view()"))
            env[w] = "any"
            mut = r.choice((f"{w} *= 2", f"{w} += 1", f"{w}[...] = 0", f"{w} -= {w}"))
            return [f"{ind}{w} = {view}", f"{ind}{mut}"]
        if c in (11, 12) and nested:
            e1, e2 = dict(env), dict(env)
            body = self.block(e1, depth + 1, r.randrange(1, 3), ind + "    ")
            out = [f"{ind}if {self.cond(env, 1)}:"] + body
            if r.random() < 0.6:
                out += [f"{ind}else:"] + self.block(e2, depth + 1, r.randrange(1, 3), ind + "    ")
            _merge(env, e1, e2)
            return out
        if c == 13 and nested and r.random() < 0.3:
            return self.long_loop(env, ind)
        if c == 13 and nested:
            i = self.fresh("i")
            e1 = dict(env)
            e1[i] = "num"
            it = r.choice((f"range(min({self.num(env, 1)}, 3))", "range(2)", "(1, 2, 3)",
                           "(0, -1)", f"range({r.randrange(0, 4)})"))
            out = [f"{ind}for {i} in {it}:"] + self.block(e1, depth + 1, r.randrange(1, 3),
                                                          ind + "    ")
            if r.random() < 0.2:
                out += [f"{ind}    if {i} == 1:", f"{ind}        break"]
            _merge(env, e1, dict(env))
            return out
        if c == 14 and nested:
            a = self.pick(env, "arr") or "x"
            acc = self.fresh("s")
            row = self.fresh("row")
            env[acc] = "sc"
            e1 = dict(env)
            e1[row] = "any"
            return [f"{ind}{acc} = 0.0", f"{ind}for {row} in {a}[:3]:",
                    f"{ind}    {acc} = {acc} + {row}.sum()"]
        if c == 15 and nested:
            k = self.fresh("k")
            env[k] = "num"
            e1 = dict(env)
            body = self.block(e1, depth + 1, 1, ind + "    ")
            return [f"{ind}{k} = 0", f"{ind}while {k} < min({self.num(env, 1)}, 3):",
                    f"{ind}    {k} = {k} + 1"] + body
        if c == 16:
            self.used_globals.add("G")
            return [f"{ind}G = G + {self.num(env, 1)}"]
        if c == 17:
            self.used_globals.add("GA")
            return [f"{ind}GA = GA + {self.scalar(env, 1)}"]
        if c == 18:
            return [f"{ind}GL.append({self.num(env, 1)})"]
        if c == 19 and "obj" in self.params:
            return [r.choice((f"{ind}obj.cnt = obj.cnt + 1",
                              f"{ind}obj.val = {self.arr(env, 1)}",
                              f"{ind}obj.cnt += {self.num(env, 0)}"))]
        if c == 20 and "lst" in self.params:
            return [f"{ind}lst.append({r.choice((self.num(env, 1), self.scalar(env, 1)))})"]
        if c == 21:
            L = self.fresh("L")
            v = self.fresh("v")
            out = [f"{ind}{L} = [{self.arr(env, 1)}, {self.num(env, 0)}]",
                   f"{ind}{L}.append({self.arr(env, 1)})",
                   f"{ind}{v} = {L}[{r.choice(('0', '-1', '2'))}]"]
            env[v] = "arr"
            env[L] = "any"
            return out
        if c == 22:
            D = self.fresh("D")
            v = self.fresh("v")
            out = [f"{ind}{D} = {{'a': {self.arr(env, 1)}}}",
                   f"{ind}{D}['b'] = {self.arr(env, 1)}",
                   f"{ind}{v} = {D}[{r.choice(('a', 'b'))!r}] + {D}['a']"]
            env[D] = "any"
            env[v] = "arr"
            return out
        if c == 23:
            what = r.choice((self.num(env, 1), self.scalar(env, 1), self.arr(env, 0),
                             f"{self.arr(env, 0)}.shape", f"{self.arr(env, 0)}.dtype"))
            return [f"{ind}print({self.fresh('p')!r}, {what})"]
        if c == 24 and nested:
            e1 = dict(env)
            body = self.block(e1, depth + 1, r.randrange(1, 3), ind + "    ")
            handler = r.choice((f"{ind}    print('caught', type(e).__name__)",
                                f"{ind}    print('caught', type(e).__name__, str(e)[:40])"))
            _merge(env, e1, dict(env))
            return [f"{ind}try:"] + body + [f"{ind}except {EXC_TYPES} as e:", handler]
        if c == 25:
            exc = r.choice(("ValueError", "KeyError", "RuntimeError"))
            return [f"{ind}if {self.cond(env, 0)}:", f"{ind}    raise {exc}('gen {self.n}')"]
        if c == 26:
            v = self.fresh("v")
            a = self.arr(env, 1)
            return [f"{ind}{v} = " + r.choice((f"{a}.reshape({self.num(env, 0)}, -1)",
                                                f"{a}[{self.num(env, 0)}]",
                                                f"np.concatenate([{a}, {a}])",
                                                f"{a}.sum(axis={r.randrange(-1, 2)})",
                                                f"np.dot({a}, {self.arr(env, 0)})"))] + \
                self._bind(env, v, "any")
        if c == 27 and r.random() < 0.5 and not self.cell_mode and depth == 0 and self.cells:
            return self.closure(env, ind)
        if c == 28 and depth == 0 and r.random() < 0.3:
            return [f"{ind}if {self.cond(env, 0)}:", f"{ind}    return {self.ret(env)}"]
        if c == 29:
            v = self.fresh("v")
            k = self.scalar(env, 0) if self.cells else r.choice(("2", "0.5", "-1"))
            out = [f"{ind}{v} = (lambda z: z * {k} + 1)({self.arr(env, 1)})"]
            env[v] = "arr"
            return out
        name = self.fresh("v")
        e = self.arr(env, d)
        env[name] = "arr"
        return [f"{ind}{name} = {e}"]

    def mask_stmt(self, env, ind):
        """A selection whose size depends on the data (x[mask], np.flatnonzero,
        np.nonzero): read, computed on, reduced and stored back."""
        r = self.r
        a = self.pick(env, "arr") or "x"
        m, v = self.fresh("m"), self.fresh("sel")
        s = self.scalar(env, 0)
        out = [f"{ind}{m} = {a} {r.choice(('>', '<', '>=', '!='))} {s}"]
        src = r.choice((f"{a}[{m}]", f"{a}[{m}]", f"{a}[np.flatnonzero({m})]",
                        f"{a}[np.nonzero({m})[0]]", f"{a}[np.where({m})]"))
        out.append(f"{ind}{v} = {src}")
        for _ in range(r.randrange(1, 4)):
            c = r.randrange(7)
            if c == 0:
                out.append(f"{ind}{v} = {v} {r.choice(BIN_ARR)} {self.scalar(env, 0)}")
            elif c == 1:
                out.append(f"{ind}{v} = {r.choice(UFUNCS)}({v})")
            elif c == 2:
                out.append(f"{ind}{a}[{m}] = {r.choice((v, s, '0', f'{v} * 2', f'-{v}'))}")
            elif c == 3:
                k = self.fresh("s")
                env[k] = "sc"
                out.append(f"{ind}{k} = {v}.{r.choice(('sum', 'mean', 'max', 'min', 'prod', 'any'))}()")
            elif c == 4:
                k = self.fresh("k")
                env[k] = "num"
                out.append(f"{ind}{k} = {r.choice((f'len({v})', f'{v}.size', f'int(({v} > 0).sum())'))}")
            elif c == 5:
                out.append(f"{ind}{v} = np.where({v} > 0, {v}, {self.scalar(env, 0)})")
            else:
                w = self.fresh("v")
                env[w] = "arr"
                out.append(f"{ind}{w} = {r.choice((f'np.sort({v})', f'np.cumsum({v})', f'{v}.astype(np.float32)', f'{v}[{v} > 0]', f'np.argwhere({m})'))}")
        return out

    def stmt_ext(self, env, depth, ind, c):
        """Object attributes, input list/dict mutations, views of inputs,
        counters, symbolic-int uses; None when the pick does not apply.
        Expressions are drawn before the new name is bound (no self-reference)."""
        r = self.r
        nested = depth < 2
        k = self.fresh("k")
        if c == 0 and "obj" in self.params:
            # attribute stores on the input object, reads after them
            if "obj.val" not in env or r.random() < 0.4:
                line = f"{ind}obj.val = {self.arr(env, 1)}"
                env["obj.val"] = "arr"
                return [line]
            opts = (lambda: [f"{ind}{k} = obj.cnt * 2 + int(hasattr(obj, 'val'))"],
                    lambda: [f"{ind}setattr(obj, 'cnt', {self.num(env, 1)})", f"{ind}{k} = obj.cnt"],
                    lambda: [f"{ind}{k} = getattr(obj, 'cnt', 0) + 1", f"{ind}obj.cnt = {k}"],
                    lambda: [f"{ind}obj.cnt -= 1", f"{ind}{k} = obj.cnt"])
            out = r.choice(opts)()
            env[k] = "num"
            return out
        if c == 1 and "lst" in self.params:
            opts = (
                lambda: ([f"{ind}lst.insert(0, {self.num(env, 1)})"], None),
                lambda: ([f"{ind}{k} = lst.pop()"], "sc"),
                lambda: ([f"{ind}lst[0] = {self.num(env, 1)}"], None),
                lambda: ([f"{ind}lst.extend([{self.num(env, 0)}, {self.scalar(env, 0)}])"], None),
                lambda: ([f"{ind}lst += [{self.num(env, 0)}]"], None),
                lambda: ([f"{ind}{k} = lst[-1]"], "sc"),
                lambda: ([f"{ind}{k} = sum(lst)"], "sc"),
                lambda: ([f"{ind}del lst[0]"], None),
                lambda: ([f"{ind}lst.reverse()"], None),
                lambda: ([f"{ind}{k} = len(lst) + lst.count(1)"], "num"),
            )
            out, kind = r.choice(opts)()
            if kind:
                env[k] = kind
            return out
        if c == 2 and "dct" in self.params:
            if r.random() < 0.3:
                line = f"{ind}dct['a'] = {self.arr(env, 1)}"
                env["dct['a']"] = "arr"
                return [line]
            opts = (
                lambda: ([f"{ind}dct['k'] = dct['k'] + {self.num(env, 1)}"], None),
                lambda: ([f"{ind}{k} = dct.get('m', 0.0) * 2"], "sc"),
                lambda: ([f"{ind}{k} = dct.pop('k', -1)"], "num"),
                lambda: ([f"{ind}{k} = dct['k']"], "num"),
                lambda: ([f"{ind}{k} = len(dct) + int('a' in dct)"], "num"),
                lambda: ([f"{ind}dct.update(n2={self.num(env, 1)})"], None),
                lambda: ([f"{ind}{k} = dct.setdefault('c', {self.num(env, 0)})"], "num"),
                lambda: ([f"{ind}{k} = 0", f"{ind}for key in dct:", f"{ind}    {k} = {k} + len(key)"],
                         "num"),
            )
            out, kind = r.choice(opts)()
            if kind:
                env[k] = kind
            return out
        if c == 3:
            # in-place ops on views of inputs (then reads of the input follow)
            params = [p for p in ("x", "y", "z", "a") if p in self.params]
            a = r.choice(params)
            v = self.fresh("w")
            opts = (
                lambda: [f"{ind}{a}[1:] += 1"], lambda: [f"{ind}{a}[::2] *= 2"],
                lambda: [f"{ind}{a}[...] = {self.arr(env, 1)}"],
                lambda: [f"{ind}np.add({a}, 1, out={a})"], lambda: [f"{ind}np.negative({a}, out={a})"],
                lambda: [f"{ind}{a}[0] = {self.num(env, 0)}"], lambda: [f"{ind}{a}.T[...] += 1"],
                lambda: [f"{ind}{a}.fill({self.num(env, 0)})"],
                lambda: [f"{ind}np.copyto({a}, {self.arr(env, 1)})"],
                lambda: [f"{ind}{a}.reshape(-1)[:{self.num(env, 0)}] = 7"],
                lambda: [f"{ind}{v} = {a}[::-1]", f"{ind}{a} += 1", f"{ind}{v} = {v} * 2"],
                lambda: [f"{ind}{v} = {a}[...]", f"{ind}{v} *= 3", f"{ind}{v} = {a} + {v}"],
            )
            out = r.choice(opts)()
            if out[0].startswith(f"{ind}{v} ="):
                env[v] = "arr"
            return out
        if c == 4 and depth == 0 and self.cells and not self.cell_mode:
            return self.counter_closure(env, ind)
        if c == 5:
            # a global counter (module helper and/or direct stores)
            if "bump" not in "".join(self.helpers):
                self.helpers.append("def bump(k):\n    global G\n    G += 1\n    return G + k")
            self.used_globals.add("G")
            if nested and r.random() < 0.5:
                i = self.fresh("i")
                return [f"{ind}for {i} in range({r.randrange(1, 4)}):", f"{ind}    G += 1",
                        f"{ind}    G = bump({i}) - {i}"]
            if r.random() < 0.5:
                out = [f"{ind}{k} = bump({self.num(env, 1)})"]
            else:
                out = [f"{ind}G += {self.num(env, 0)}", f"{ind}{k} = G * 2"]
            env[k] = "num"
            return out
        if c in (6, 7) and "n" in env:
            # n is symbolic after a few calls with n = 2, 3, 4...
            s, v, i = self.fresh("s"), self.fresh("v"), self.fresh("i")
            a = self.pick(env, "arr") or "x"
            opts = [
                ([f"{ind}{k} = n.bit_length() + (n if isinstance(n, int) else 0)"], k, "num"),
                ([f"{ind}{s} = float(n) / 2"], s, "sc"),
                ([f"{ind}{s} = np.arange(n).sum() + np.zeros(n).sum()"], s, "sc"),
                ([f"{ind}{s} = np.ones({'n * 2' if AVOID_OPEN_CRASHES else '(n, 2)'}).sum() * "
                  f"{self.scalar(env, 0)}"], s, "sc"),
                ([f"{ind}{k} = len(np.arange(n)[1:]) + np.zeros(n).shape[0]"], k, "num"),
                ([f"{ind}{v} = {a}.reshape(-1)[n % 3]"], v, "arr"),
                ([f"{ind}{v} = {a}.reshape(-1)[:n].sum() + {a}"], v, "arr"),
                ([f"{ind}{v} = {a} * float(n) + n"], v, "arr"),
                ([f"{ind}{v} = {a} + np.linspace(0, 1, n).sum()"], v, "arr"),
                ([f"{ind}{v} = {a}", f"{ind}for {i} in range(n):", f"{ind}    {v} = {v} * 0.5 + {i}"],
                 v, "arr"),
                ([f"{ind}{k} = 0", f"{ind}for {i} in range(1, n, 2):", f"{ind}    {k} = {k} + {i}"],
                 k, "num"),
                ([f"{ind}{v} = np.full(n, {self.scalar(env, 0)})", f"{ind}{s} = {v}[-1] + {v}.sum()"],
                 s, "sc"),
                ([f"{ind}{k} = (n * 3) // 2 - n % 2 + max(n, 1) - abs(-n)"], k, "num"),
                ([f"{ind}{k} = [0, 1, 2, 3][n % 4] + (1, 2, 3)[-1]"], k, "num"),
            ]
            lines, name, kind = r.choice(opts)
            if not nested and len(lines) > 1 and lines[1].lstrip().startswith("for"):
                lines, name, kind = opts[0]
            env[name] = kind
            return lines
        return None

    def counter_closure(self, env, ind):
        """A nested function with a nonlocal counter, called several times
        (in a loop, maybe with a print inside: a graph break in the closure)."""
        r = self.r
        self.cell_mode = True
        fn, cnt, v, i = self.fresh("inner"), self.fresh("cnt"), self.fresh("v"), self.fresh("i")
        a = self.pick(env, "arr") or "x"
        out = [f"{ind}{cnt} = {self.num(env, 0)}", f"{ind}def {fn}(z):",
               f"{ind}    nonlocal {cnt}", f"{ind}    {cnt} += 1"]
        if r.random() < 0.4:
            out += [f"{ind}    print('in', {cnt})"]
        if r.random() < 0.3:
            out += [f"{ind}    if {cnt} > 2:", f"{ind}        return z"]
        out += [f"{ind}    return z + {cnt}"]
        out += [f"{ind}{v} = {a}", f"{ind}for {i} in range({r.choice(('2', '3', 'min(n, 3)'))}):",
                f"{ind}    {v} = {fn}({v})"]
        if r.random() < 0.5:
            out += [f"{ind}{cnt} = {cnt} * 2", f"{ind}{v} = {fn}({v})"]
        env[cnt] = "num"
        env[v] = "arr"
        return out

    @staticmethod
    def _bind(env, name, kind):
        env[name] = kind
        return []

    def closure(self, env, ind):
        """A nested def (maybe with nonlocal) called right away."""
        r = self.r
        self.cell_mode = True
        fn = self.fresh("inner")
        acc = self.fresh("acc")
        v = self.fresh("v")
        cap = self.pick(env, "arr") or "x"
        out = [f"{ind}{acc} = 0"]
        out += [f"{ind}def {fn}(z):"]
        if r.random() < 0.6:
            out += [f"{ind}    nonlocal {acc}", f"{ind}    {acc} = {acc} + 1"]
        out += [f"{ind}    return z * {acc} + {cap}"]
        out += [f"{ind}{v} = {fn}({self.arr(env, 1)})"]
        env[acc] = "num"
        env[v] = "arr"
        if r.random() < 0.5:
            out += [f"{ind}{v} = {fn}({v})"]
        return out

    def ret(self, env):
        names = [k for k, v in env.items() if v in ("arr", "num", "sc", "any")]
        self.r.shuffle(names)
        names = names[:self.r.randrange(1, 4)]
        if len(names) == 1 and self.r.random() < 0.5:
            return names[0]
        return "(" + ", ".join(names) + ",)"

    def helper(self, i):
        """A module-level helper h<i>(a, k) (maybe with a global store)."""
        env = {"a": "arr", "k": "num"}
        saved, self.params = self.params, ["a", "k"]
        self.callables_arr = [f"h{j}" for j in range(i)] + [c for c in self.callables_arr
                                                            if not c.startswith("h")]
        lines = [f"def h{i}(a, k):"]
        body = self.block(env, 1, self.r.randrange(1, 3), "    ")
        body = [b for b in body if "return" not in b]
        g = sorted(self.used_globals & {"G", "GA"})
        if g:
            lines.append("    global " + ", ".join(g))
        lines += body
        lines.append(f"    return {self.arr(env, 1)}")
        self.params = saved
        return "\n".join(lines)

    def generate(self):
        r = self.r
        narr = r.choice((1, 2, 2, 3))
        self.params = ["x", "y", "z"][:narr]
        self.params.append("n")
        if r.random() < 0.3:
            self.params.append("lst")
        if r.random() < 0.3:
            self.params.append("obj")
        if r.random() < 0.25:
            self.params.append("dct")
        self.callables_arr = []
        if r.random() < 0.3:
            self.helpers.append("sq = lambda t: t * t - 1")
            self.callables_arr.append("sq")
        nh = r.choice((0, 0, 1, 1, 2))
        for i in range(nh):
            self.used_globals = set()
            self.helpers.append(self.helper(i))
        self.callables_arr = [f"h{i}" for i in range(nh)] + \
            (["sq"] if any(h.startswith("sq") for h in self.helpers) else [])
        self.used_globals = set()
        env = {p: "arr" for p in self.params[:narr]}
        env["n"] = "num"
        self.obj_alias = "obj" in self.params and r.random() < 0.3
        if self.obj_alias:
            env["obj.val"] = "arr"      # obj.val is x in every call
        nst = r.randrange(2, 5) if self.small else r.randrange(2, 8)
        body = self.block(env, 0, nst, "    ")
        if r.random() < 0.15:
            # a long loop, captured as one loop node, whose values the rest may use
            pre_env = dict(env)
            loop = self.long_loop(pre_env, "    ")
            env.update({k: v for k, v in pre_env.items() if k not in env})
            body = loop + body
        body.append(f"    return {self.ret(env)}")
        head = [f"def f({', '.join(self.params)}):"]
        if self.used_globals:
            head.append("    global " + ", ".join(sorted(self.used_globals)))
        src = "\n".join(["import numpy as np", "", "G = 0", "GA = np.float64(0.0)", "GL = []",
                         ""] + self.helpers + [""] + head + body) + "\n"
        return src, self.calls()

    def calls(self):
        """Argument-set specs: several ints, then other shapes, maybe other dtypes."""
        r = self.r
        narr = sum(p in ("x", "y", "z") for p in self.params)
        shape = r.choice(SHAPES)
        dtype = r.choice(DTYPES)
        layout = r.choice("CCCCTSF")
        others = []
        for _ in range(narr - 1):
            if r.random() < 0.7:
                others.append((shape, r.choice((dtype, dtype, r.choice(DTYPES)))))
            else:
                others.append(((), r.choice(DTYPES)))
        out = []
        ncalls = r.randrange(2, 4) if self.small else r.randrange(3, 6)
        n = r.randrange(-1, 5)
        alias = r.choice((0, 0, 0, 0.5, 1.0))
        ramp = r.random() < 0.3          # n = 2, 3, 4, ...: n becomes a symbolic int
        if ramp:
            n = r.randrange(2, 5)
            ncalls = r.randrange(4, 7)
        for ci in range(ncalls):
            if ramp and ci > 0:
                n = min(n + 1, 10)
            elif ci > 0:
                c = r.randrange(5)
                if c < 2:
                    n = r.randrange(-1, 6)
                elif c < 4:
                    shape = r.choice(SHAPES) if r.random() < 0.5 else \
                        tuple(max(0, s + r.randrange(1, 3)) for s in shape)
                    others = [(shape if s else s, dt) for s, dt in others]
                    others = [(shape, dt) if len(s) else (s, dt) for s, dt in others]
                    if others and r.random() < 0.15:   # the second input alone changes shape
                        others[0] = (tuple(max(0, s + r.randrange(1, 3)) for s in shape), others[0][1])
                else:
                    dtype = r.choice(DTYPES)
            seed = r.randrange(1 << 30)
            args = [["arr", list(shape), dtype, layout, seed]]
            for j, (s, dt) in enumerate(others):
                args.append(["arr", list(s), dt, layout if len(s) else "C", seed + j + 1])
            if not shape and args[0][3] == "C" and r.random() < 0.3:
                args[0][3] = "N"
            args.append(["int", n])
            if "lst" in self.params:
                args.append(["list", [1, 2.5][:r.randrange(3)]])
            if "obj" in self.params:
                args.append(["obj", r.randrange(3)] + ([0] if self.obj_alias else []))
            if "dct" in self.params:
                args.append(["dict", {"k": r.randrange(3), "m": 2.5}])
            if alias and narr >= 2 and r.random() < alias:
                args[1] = ["same", 0] if r.random() < 0.6 else \
                    ["viewof", 0, r.choice(("rev", "all"))]
            out.append(args)
        return out


def _merge(env, e1, e2):
    """Names bound in both branches keep their kind; the others become 'maybe'."""
    for k in set(e1) | set(e2):
        if k in env:
            continue
        if e1.get(k) == e2.get(k):
            env[k] = e1[k]


def generate(seed, small=False, cells=True):
    """(source, calls) of program 'seed'."""
    return ProgGen(seed, small, cells).generate()


# ======================================================================
# Running and comparing
# ======================================================================
_tmpdir = None
_KEEP = collections.deque(maxlen=64)   # keep recent modules alive (see gencases._KEEP)


def load_module(source, tag):
    global _tmpdir
    if _tmpdir is None:
        _tmpdir = tempfile.mkdtemp(prefix="framejit_fuzz_")
    path = os.path.join(_tmpdir, f"fuzz_{tag}.py")
    with open(path, "w") as fh:
        fh.write(source)
    ns = {"__name__": f"fuzz_{tag}", "__file__": path}
    exec(compile(source, path, "exec"), ns)
    _KEEP.append(ns)
    return ns


class Diff(Exception):
    pass


def _nan_blind():
    """NaN payloads (sign, quiet bits) count unless the default backend is
    native, whose documented exception they are (docs/native.md: compilers
    may swap the operands of a commutative add, and x86 returns the first
    NaN operand); NaN positions always count."""
    return framejit.config.backend != "eager"


def _canon(x):
    if x.dtype.kind in "fc" and x.size and _nan_blind():
        x = x.copy()
        for part in ((x,) if x.dtype.kind == "f" else (x.real, x.imag)):
            part[np.isnan(part)] = np.nan  # each part's NaN canonical, its other bits kept
    return x


def snapshot(x, depth=0):
    """A comparable, bit-exact description of x (NaN payloads: _nan_blind)."""
    if depth > 6:
        return ("deep",)
    if isinstance(x, np.ndarray):
        b = np.ascontiguousarray(_canon(x)).view(np.uint8).tobytes() if x.dtype != object else repr(x)
        return ("nd", x.dtype.str, x.shape, b)
    if isinstance(x, np.generic):
        return ("np", x.dtype.str, _canon(np.asarray(x)).tobytes())
    if isinstance(x, float):
        return ("float", x.hex() if x == x else "nan")
    if isinstance(x, (bool, int, str, type(None), complex, bytes)):
        return (type(x).__name__, x)
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, tuple(snapshot(v, depth + 1) for v in x))
    if isinstance(x, dict):
        return ("dict", tuple((k, snapshot(v, depth + 1)) for k, v in x.items()))
    if isinstance(x, Obj):
        return ("Obj", snapshot(dict(vars(x)), depth + 1))
    if isinstance(x, np.dtype):
        return ("dtype", x.str)
    if callable(x):
        return ("callable", getattr(x, "__name__", "?"))
    return (type(x).__name__, repr(x))


def _alias(result, inputs):
    """Which returned arrays are inputs / may share memory with them."""
    out = []

    def walk(v):
        if isinstance(v, np.ndarray):
            out.append(tuple((v is a, bool(np.may_share_memory(v, a))) for a in inputs))
        elif isinstance(v, (list, tuple)):
            for e in v:
                walk(e)
    walk(result)
    return tuple(out)


def run_one(fn, args, ns):
    """Calls fn(*args); returns a dict describing everything observable."""
    buf = io.StringIO()
    inputs = [a for a in args if isinstance(a, np.ndarray)]
    if isinstance(args[-1], Obj) and isinstance(getattr(args[-1], "val", None), np.ndarray):
        inputs.append(args[-1].val)
    with contextlib.redirect_stdout(buf):
        try:
            res = fn(*args)
            out = ("ok", snapshot(res), _alias(res, inputs))
        except framejit.exc.FramejitError:
            raise
        except Exception as e:  # noqa: BLE001
            out = ("raise", type(e).__name__, str(e))
    g = {k: snapshot(v) for k, v in ns.items()
         if not k.startswith("__") and not callable(v) and not isinstance(v, type(np))}
    return {"outcome": out, "stdout": buf.getvalue(), "args": snapshot(list(args)), "globals": g}


def _describe(a, b):
    """(message, signature) of the first difference between two run_one dicts, or None."""
    for k in ("outcome", "stdout", "args", "globals"):
        if a[k] != b[k]:
            sig = k
            if k == "outcome":
                sig += ":" + ":".join(str(o[1]) if o[0] == "raise" else o[0]
                                      for o in (a[k], b[k]))
            return f"{k}: plain={_short(a[k])} compiled={_short(b[k])}", sig
    return None


def _short(x):
    s = repr(x)
    return s if len(s) < 300 else s[:300] + "..."


def check_program(source, calls, tag="prog", reps=2):
    """Runs the program plain and compiled; returns None if every call agrees,
    else (kind, message) with kind in 'diff', 'internal', 'error'.  Also
    returns the number of graph breaks (in a tuple: (failure, breaks, graphs))."""
    framejit.reset()
    ns_p = load_module(source, tag + "_p")
    ns_c = load_module(source, tag + "_c")
    cf = framejit.compile(ns_c["f"])
    failure = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for ci, specs in enumerate(calls):
            for rep in range(reps):
                pa = build_args(specs)
                ca = build_args(specs)
                p = run_one(ns_p["f"], pa, ns_p)
                ie = framejit.counters["stats"]["internal_errors"]
                try:
                    c = run_one(cf, ca, ns_c)
                except Exception as e:  # noqa: BLE001 - framejit's own errors
                    failure = ("error", f"call {ci}.{rep}: {type(e).__name__}: {e}",
                               type(e).__name__)
                    break
                if framejit.counters["stats"]["internal_errors"] != ie:
                    o = c["outcome"]
                    failure = ("internal", f"call {ci}.{rep}: {o[1]}: {o[2] if len(o) > 2 else ''}",
                               str(o[1]))
                    break
                d = _describe(p, c)
                if d:
                    failure = ("diff", f"call {ci}.{rep}: {d[0]}", d[1])
                    break
            if failure:
                break
    breaks = sum(framejit.counters["graph_break"].values())
    graphs = framejit.counters["stats"]["unique_graphs"]
    reasons = dict(framejit.counters["graph_break"])
    return failure, breaks, graphs, reasons


def check_or_fail(source, calls):
    """For the regression tests: asserts plain and compiled agree."""
    old = framejit.config.raise_internal_errors
    framejit.config.raise_internal_errors = True
    try:
        failure = check_program(source, calls, tag="regr")[0]
    finally:
        framejit.config.raise_internal_errors = old
        framejit.reset()
    assert failure is None, f"{failure[0]}: {failure[1]}"


# ======================================================================
# Minimization (delta debugging over statements, sub-expressions, calls)
# ======================================================================
def _stmt_lists(tree):
    """Every statement list in the tree (bodies, orelse, handlers...)."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            lst = getattr(node, field, None)
            if isinstance(lst, list) and lst and isinstance(lst[0], ast.stmt):
                yield lst


def _expr_sites(tree):
    """(parent, field, index) of each expression that may be simplified."""
    for node in ast.walk(tree):
        for field, value in ast.iter_fields(node):
            if isinstance(value, ast.expr):
                yield node, field, None, value
            elif isinstance(value, list):
                for i, v in enumerate(value):
                    if isinstance(v, ast.expr):
                        yield node, field, i, v


def _simpler(e):
    """Candidate replacements for expression e, simplest first."""
    out = []
    if isinstance(e, ast.BinOp):
        out += [e.left, e.right]
    elif isinstance(e, ast.UnaryOp):
        out.append(e.operand)
    elif isinstance(e, ast.Call):
        out += [a for a in e.args if not isinstance(a, ast.Starred)]
        if isinstance(e.func, ast.Attribute):
            out.append(e.func.value)
    elif isinstance(e, ast.Attribute) and isinstance(e.ctx, ast.Load):
        out.append(e.value)
    elif isinstance(e, ast.Subscript) and isinstance(e.ctx, ast.Load):
        out.append(e.value)
    elif isinstance(e, ast.Compare):
        out.append(e.left)
    elif isinstance(e, ast.Tuple) and isinstance(e.ctx, ast.Load) and len(e.elts) > 1:
        out += [ast.Tuple(elts=[x], ctx=ast.Load()) for x in e.elts]
    return out


def minimize(source, calls, still_fails, budget=400):
    """Delta-debugs (source, calls) while still_fails(source, calls) holds."""
    tries = [0]

    def ok(src, cl):
        if tries[0] >= budget:
            return False
        tries[0] += 1
        try:
            compile(src, "<min>", "exec")
        except SyntaxError:
            return False
        return still_fails(src, cl)

    # calls: drop whole calls
    i = 0
    while len(calls) > 1 and i < len(calls):
        cand = calls[:i] + calls[i + 1:]
        if ok(source, cand):
            calls = cand
        else:
            i += 1
    changed = True
    while changed and tries[0] < budget:
        changed = False
        # statements: try deleting each (one at a time, from the end)
        tree = ast.parse(source)
        n_lists = list(_stmt_lists(tree))
        for li in range(len(n_lists)):
            j = 0
            while True:
                tree = ast.parse(source)
                lists = list(_stmt_lists(tree))
                if li >= len(lists) or j >= len(lists[li]):
                    break
                lst = lists[li]
                del lst[len(lst) - 1 - j]
                if not lst:
                    lst.append(ast.Pass())
                cand = ast.unparse(tree) + "\n"
                if cand != source and ok(cand, calls):
                    source = cand
                    changed = True
                else:
                    j += 1
        # also: replace compound statements by their body
        k = 0
        while True:
            tree = ast.parse(source)
            comp = [(lst, idx) for lst in _stmt_lists(tree) for idx, s in enumerate(lst)
                    if isinstance(s, (ast.If, ast.For, ast.While, ast.Try))]
            if k >= len(comp):
                break
            lst, idx = comp[k]
            s = lst[idx]
            lst[idx:idx + 1] = s.body
            cand = ast.unparse(tree) + "\n"
            if ok(cand, calls):
                source = cand
                changed = True
            else:
                k += 1
        # sub-expressions
        k = 0
        while True:
            tree = ast.parse(source)
            sites = list(_expr_sites(tree))
            if k >= len(sites):
                break
            parent, field, idx, e = sites[k]
            done = False
            for repl in _simpler(e):
                tree2 = ast.parse(source)
                p2, f2, i2, _ = list(_expr_sites(tree2))[k]
                repl_src = ast.unparse(repl)
                new = ast.parse(repl_src, mode="eval").body
                if i2 is None:
                    setattr(p2, f2, new)
                else:
                    getattr(p2, f2)[i2] = new
                cand = ast.unparse(tree2) + "\n"
                if cand != source and ok(cand, calls):
                    source = cand
                    changed = True
                    done = True
                    break
            if not done:
                k += 1
    # finally try to drop unused module-level definitions was covered by statements
    return source, calls


# ======================================================================
# Regression files
# ======================================================================
def known_signatures():
    """(kind, signature) of the cases already in tests/fuzz_regressions/ (not minimized again)."""
    out = set()
    if os.path.isdir(REGRESSION_DIR):
        for name in os.listdir(REGRESSION_DIR):
            if name.startswith("test_fuzz_") and name.endswith(".py"):
                with open(os.path.join(REGRESSION_DIR, name)) as fh:
                    for line in fh:
                        if line.startswith("# signature: "):
                            k, _, sig = line[13:].strip().partition(" ")
                            if not sig.endswith("ok:ok"):   # wrong values: always look
                                out.add((k, sig))
    return out


TEST_TEMPLATE = '''\
"""Fuzzer finding (tools/fuzz.py, seed {seed}): {kind}.

{message}
"""
# signature: {kind} {sig}
import pytest

from fuzzcheck import check

SOURCE = {source}

CALLS = {calls!r}
{mark}

def test_fuzz_{seed}():
    check(SOURCE, CALLS)
'''


def _src_literal(source):
    if '"""' in source or "\\" in source:
        return repr(source)
    return '"""\\\n' + source + '"""'


def write_regression(seed, kind, message, source, calls, xfail_reason=None, sig="?"):
    os.makedirs(REGRESSION_DIR, exist_ok=True)
    path = os.path.join(REGRESSION_DIR, f"test_fuzz_{seed}.py")
    mark = ""
    if xfail_reason:
        mark = f"\n\n@pytest.mark.xfail(strict=True, reason={xfail_reason!r})"
    msg = message if len(message) < 1500 else message[:1500] + "..."
    with open(path, "w") as fh:
        fh.write(TEST_TEMPLATE.format(seed=seed, kind=kind, sig=sig, message=msg.replace('"""', "'''"),
                                      source=_src_literal(source), calls=calls, mark=mark))
    return path


# ======================================================================
# Driver
# ======================================================================
def fuzz_one(seed, small=False, cells=True):
    src, calls = generate(seed, small, cells)
    try:
        res = check_program(src, calls, tag=str(seed))
    except Exception as e:  # noqa: BLE001 - a fuzzer bug, or something escaping
        res = (("error", f"{type(e).__name__}: {e}\n{traceback.format_exc()[-800:]}", "fuzzer"),
               0, 0, {})
    return src, calls, res


def minimize_failure(seed, src, calls, failure, budget=400):
    """Minimizes while the failure keeps its kind and signature."""
    def still(s, c):
        try:
            f = check_program(s, c, tag=f"{seed}_min")[0]
        except Exception:  # noqa: BLE001
            return False
        return f is not None and f[0] == failure[0] and f[2] == failure[2]
    s2, c2 = minimize(src, calls, still, budget)
    f = check_program(s2, c2, tag=f"{seed}_min")[0]
    return s2, c2, (f or failure)


def run_range(seeds, args, stats, out=sys.stdout):
    crash_seed = os.environ.get("FJ_FUZZ_CRASH_SEED")   # tests of --isolate's bisection
    for seed in seeds:
        if crash_seed is not None and seed == int(crash_seed):
            os.abort()
        t0 = time.time()
        src, calls, (failure, breaks, graphs, reasons) = fuzz_one(seed, args.small, args.cells)
        stats["programs"] += 1
        stats["graph_breaks"] += breaks
        stats["graphs"] += graphs
        for k, v in reasons.items():
            stats["reasons"][k] += v
        if time.time() - t0 > args.timeout:
            stats["slow"] += 1
        if failure:
            kind, msg, _sig = failure
            stats[{"diff": "differences", "internal": "internal_errors",
                   "error": "errors"}[kind]] += 1
            print(f"seed {seed}: {kind}: {msg[:300]}", file=out, flush=True)
            stats["failures"].append((seed, kind, msg))
            if args.minimize and (kind, _sig) not in stats["minimized"] | known_signatures():
                stats["minimized"].add((kind, _sig))
                s2, c2, f2 = minimize_failure(seed, src, calls, failure)
                path = write_regression(seed, f2[0], f2[1], s2, c2, sig=f2[2])
                print(f"  minimized -> {os.path.relpath(path, ROOT)}", file=out, flush=True)
                print("  " + s2.replace("\n", "\n  "), file=out, flush=True)
        if args.progress and stats["programs"] % args.progress == 0:
            print(f"[{stats['programs']} programs, {time.time() - stats['t0']:.0f}s] "
                  f"diffs={stats['differences']} internal={stats['internal_errors']} "
                  f"errors={stats['errors']} crashes={stats['crashes']}", file=out, flush=True)


def new_stats():
    return {"programs": 0, "differences": 0, "internal_errors": 0, "errors": 0, "crashes": 0,
            "graph_breaks": 0, "graphs": 0, "slow": 0, "reasons": collections.Counter(),
            "failures": [], "minimized": set(), "t0": time.time()}


def _worker_cmd(args, lo, hi):
    cmd = [sys.executable, os.path.abspath(__file__), "--seed", str(lo), "--count", str(hi - lo),
           "--worker", "--timeout", str(args.timeout)]
    if args.small:
        cmd.append("--small")
    if not args.minimize:
        cmd.append("--no-minimize")
    if not args.cells:
        cmd.append("--no-cells")
    if AVOID_OPEN_CRASHES:
        cmd.append("--avoid-open-crashes")
    return cmd


def run_isolated(lo, hi, args, stats):
    """Runs seeds [lo, hi) in a subprocess; on a crash, bisects to the seed."""
    try:
        r = subprocess.run(_worker_cmd(args, lo, hi), capture_output=True, text=True,
                           timeout=max(60, args.timeout * (hi - lo) * 2))
        rc, out, err = r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = "timeout", (e.stdout or b"").decode() if isinstance(e.stdout, bytes) \
            else (e.stdout or ""), ""
    summary = None
    for line in out.splitlines():
        if line.startswith("@@STATS "):
            summary = json.loads(line[8:])
        elif line.strip():
            print(line, flush=True)
    if rc == 0 and summary:
        for k in ("programs", "differences", "internal_errors", "errors", "graph_breaks",
                  "graphs", "slow"):
            stats[k] += summary[k]
        stats["reasons"].update(summary["reasons"])
        stats["failures"] += [tuple(f) for f in summary["failures"]]
        return
    if hi - lo == 1:
        stats["programs"] += 1
        stats["crashes"] += 1
        msg = f"crash (returncode {rc}): {err[-600:]}"
        print(f"seed {lo}: crash: {msg}", flush=True)
        stats["failures"].append((lo, "crash", msg))
        if args.minimize:
            src, calls = generate(lo, args.small, args.cells)
            s2, c2 = minimize(src, calls, lambda s, c: _crashes(s, c), budget=150)
            path = write_regression(lo, "crash", msg, s2, c2, sig=f"rc{rc}")
            print(f"  minimized -> {os.path.relpath(path, ROOT)}", flush=True)
        return
    mid = (lo + hi) // 2
    run_isolated(lo, mid, args, stats)
    run_isolated(mid, hi, args, stats)


def _crashes(source, calls):
    code = ("import sys; sys.path.insert(0, %r); sys.path.insert(0, %r)\n"
            "import framejit; framejit.config.raise_internal_errors = True\n"
            "import fuzz\nfuzz.check_program(%r, %r)\n") % (ROOT, os.path.join(ROOT, "tools"),
                                                            source, calls)
    try:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        return True
    return r.returncode < 0


def _group_key(msg):
    """'outcome:ok:NameError'-like key of a failure message (for the summary)."""
    import re
    m = re.search(r"(outcome|stdout|args|globals): plain=(.*?) compiled=(.*)", msg or "")
    if not m:
        return (msg or "").split(":")[0][:40]
    if m.group(1) != "outcome":
        return m.group(1)
    side = []
    for part in (m.group(2), m.group(3)):
        r = re.match(r"\('raise', '(\w+)'", part)
        side.append(r.group(1) if r else "ok")
    return f"outcome:{side[0]}:{side[1]}"


def print_summary(stats):
    dt = time.time() - stats["t0"]
    print(f"\n== framejit fuzz summary: {stats['programs']} programs in {dt:.1f}s ==")
    for k in ("differences", "crashes", "internal_errors", "errors", "graph_breaks", "graphs",
              "slow"):
        print(f"  {k:16s} {stats[k]}")
    if stats["reasons"]:
        print("  graph-break reasons (top 10):")
        for reason, cnt in stats["reasons"].most_common(10):
            print(f"    {cnt:7d}  {reason[:100]}")
    if stats["failures"]:
        groups = collections.defaultdict(list)
        for seed, kind, msg in stats["failures"]:
            cell = "cell" in msg or "free variable" in msg
            groups[(kind, _group_key(msg), cell)].append(seed)
        print("  failures by kind (the 'cell' column: the message names a cell / free variable):")
        for (kind, key, cell), seeds in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            print(f"    {len(seeds):6d}  {kind:8s} {key:40s} cell={cell!s:5s} seeds "
                  + " ".join(map(str, seeds[:6])))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=1, help="subprocess workers (implies --isolate)")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per program (slow mark)")
    ap.add_argument("--isolate", action="store_true", help="batches in subprocesses; bisect crashes")
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--small", action="store_true", help="smaller programs (CI)")
    ap.add_argument("--no-minimize", dest="minimize", action="store_false")
    ap.add_argument("--no-cells", dest="cells", action="store_false",
                    help="no closures / lambdas over locals (their bugs are open)")
    ap.add_argument("--avoid-open-crashes", action="store_true",
                    help="leave out constructs whose open bug crashes (see AVOID_OPEN_CRASHES)")
    ap.add_argument("--progress", type=int, default=500)
    ap.add_argument("--print", dest="show", action="store_true", help="print program --seed")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    global AVOID_OPEN_CRASHES
    AVOID_OPEN_CRASHES = AVOID_OPEN_CRASHES or args.avoid_open_crashes
    framejit.config.raise_internal_errors = True
    if args.show:
        src, calls = generate(args.seed, args.small, args.cells)
        print(src)
        print("calls =", json.dumps(calls))
        return 0
    stats = new_stats()
    seeds = range(args.seed, args.seed + args.count)
    if args.worker:
        args.progress = 0
        run_range(seeds, args, stats)
        s = {k: v for k, v in stats.items() if k not in ("t0", "minimized")}
        print("@@STATS " + json.dumps(s), flush=True)
        return 0
    if args.isolate or args.jobs > 1:
        batches = [(lo, min(lo + args.batch, seeds.stop)) for lo in range(seeds.start, seeds.stop,
                                                                        args.batch)]
        if args.jobs > 1:
            import concurrent.futures as cf
            with cf.ThreadPoolExecutor(args.jobs) as ex:
                parts = [(b, new_stats()) for b in batches]
                list(ex.map(lambda p: run_isolated(p[0][0], p[0][1], args, p[1]), parts))
            for _, st in parts:
                for k in ("programs", "differences", "internal_errors", "errors", "crashes",
                          "graph_breaks", "graphs", "slow"):
                    stats[k] += st[k]
                stats["reasons"].update(st["reasons"])
                stats["failures"] += st["failures"]
        else:
            for lo, hi in batches:
                run_isolated(lo, hi, args, stats)
                print(f"[{stats['programs']} programs, {time.time() - stats['t0']:.0f}s] "
                      f"diffs={stats['differences']} internal={stats['internal_errors']} "
                      f"errors={stats['errors']} crashes={stats['crashes']}", flush=True)
    else:
        run_range(seeds, args, stats)
    print_summary(stats)
    bad = stats["differences"] + stats["crashes"] + stats["internal_errors"] + stats["errors"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
