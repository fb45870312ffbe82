"""A seeded generator of NumPy functions for the differential tests.

``generate(seed)`` returns a ``Case``: the Python source of a small module
(helpers, closures, globals and one entry function ``f``), the example
argument tuples ("worlds": same shapes and dtypes, different values, and
different Python scalar arguments so the branches and loop counts differ),
and the function itself, exec'd from a real file so tracebacks and
``inspect`` work.

Every generated piece is checked concretely while it is generated: each
candidate expression / statement is evaluated on every world with NumPy's
floating-point errors raised and warnings turned into errors, and rejected
(another is drawn from the same seeded stream) if it fails.  So the final
functions run without error or warning in plain CPython, and everything in
them is something framejit should capture into a graph.
"""
import functools
import itertools
import linecache
import math  # noqa: F401 - generated code uses it
import os
import random
import re
import tempfile
import warnings

import numpy as np

LOOP_VARS = ("i", "c", "t")
DTYPES = ("float64", "float32", "int32", "int64", "bool")
BASE_SHAPES = ((), (0,), (3,), (4, 3), (2, 3, 4), (1, 3), (3, 1), (2, 0), (5,), (2, 1, 3))

_tmpdir = None
# The generated modules stay alive for the whole session: a code object whose
# only reference is its own "run uncompiled" cache entry makes framejit.reset()
# free that entry twice (see test_compile.py::test_reset_frees_self_referencing_entry).
_KEEP = []


def _module_dir():
    global _tmpdir
    if _tmpdir is None:
        _tmpdir = tempfile.mkdtemp(prefix="framejit_gen_")
    return _tmpdir


def _broadcastable(rng, shape):
    """A shape that broadcasts against 'shape' (drop leading dims, set some to 1)."""
    s = list(shape)
    if s and rng.random() < 0.4:
        s = s[rng.randrange(len(s) + 1):]
    s = [1 if (d and rng.random() < 0.3) else d for d in s]
    return tuple(s)


def make_array(nprng, shape, dtype):
    if dtype == "bool":
        return nprng.random(shape) > 0.5
    if dtype.startswith("int"):
        return nprng.integers(-6, 7, size=shape).astype(dtype)
    return (nprng.standard_normal(shape) * 2).astype(dtype)


class Case:
    def __init__(self, name, source, path, fn, worlds, module):
        self.name = name
        self.source = source
        self.path = path
        self.fn = fn
        self.worlds = worlds
        self.module = module

    def __repr__(self):
        return f"Case({self.name})"


class _Reject(Exception):
    pass


def _checked(thunk):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            try:
                return thunk()
            except Exception as e:  # noqa: BLE001 - any failure rejects the candidate
                raise _Reject(repr(e)) from None


class Gen:
    """One function under construction."""

    def __init__(self, seed, shapes=None, dtypes=None):
        self.seed = seed
        self.r = random.Random(seed)
        self.nprng = np.random.default_rng(seed)
        self.preamble = []     # module-level source blocks
        self.globals = {"np": np, "math": math}
        self.counter = itertools.count()
        self.choose_inputs(shapes, dtypes)

    # ---------------------------------------------------------- inputs
    def choose_inputs(self, shapes, dtypes):
        r = self.r
        narr = len(shapes) if shapes else r.choice((1, 1, 2, 2, 3))
        if shapes is None:
            base = r.choice(BASE_SHAPES)
            shapes = [base] + [_broadcastable(r, base) for _ in range(narr - 1)]
        if dtypes is None:
            first = r.choice(("float64", "float64", "float32", "int32", "int64"))
            dtypes = [first] + [r.choice(DTYPES) for _ in range(narr - 1)]
        self.params = [f"x{i}" for i in range(narr)]
        self.scalars = []
        if r.random() < 0.5:
            self.scalars.append("n")
        if r.random() < 0.3:
            self.scalars.append("flag")
        if r.random() < 0.25:
            self.scalars.append("s")
        worlds = []
        for w in range(3):
            env = {}
            for p, shp, dt in zip(self.params, shapes, dtypes):
                env[p] = make_array(self.nprng, shp, dt)
            if "n" in self.scalars:
                env["n"] = (2, 2, r.choice((0, 1, 3)))[w]
            if "flag" in self.scalars:
                env["flag"] = (True, True, False)[w]
            if "s" in self.scalars:
                env["s"] = (0.5, 0.5, r.choice((None, -1.5)))[w]
            worlds.append(env)
        self.worlds = worlds
        self.locals = [dict() for _ in worlds]  # name -> value, per world
        self.local_names = []
        self.traced = set(self.params)  # names whose values come from the input arrays

    def env(self, w, extra=None):
        d = dict(self.globals)
        d.update(self.worlds[w])
        d.update(self.locals[w])
        if extra:
            d.update(extra[w])
        return d

    def values(self, src, extra=None):
        """Evaluates src in every world; raises _Reject on any failure."""
        out = []
        for w in range(len(self.worlds)):
            env = self.env(w, extra)
            out.append(_checked(lambda: eval(src, env)))  # noqa: B023, S307
        return out

    # ---------------------------------------------------- expressions
    def leaf(self, extra, kind="array"):
        r = self.r
        names = list(self.params) + [n for n in self.local_names]
        if extra:
            names += [n for n in extra[0] if not n.startswith("_")]
        arrays = [n for n in names if isinstance(self.value0(n, extra), np.ndarray)]
        if kind == "array" and arrays:
            return r.choice(arrays)
        consts = ["2", "3", "0.5", "1.5", "-1", "True", "K", "math.pi"]
        if "n" in self.scalars:
            consts += ["n", "n + 1"]
        if "s" in self.scalars and self.worlds[2]["s"] is not None:
            consts += ["s"]
        if arrays:
            a = r.choice(arrays)
            consts += [f"{a}.ndim", f"len({a}.shape)", f"{a}.size"]
            if self.value0(a, extra).ndim:
                consts += [f"{a}.shape[0]", f"{a}.shape[-1]"]
        c = r.choice(consts)
        if c == "K":
            self.globals["K"] = 1.25
            if "K = 1.25" not in self.preamble:
                self.preamble.append("K = 1.25")
        return c

    def value0(self, name, extra=None):
        if extra and name in extra[0]:
            return extra[0][name]
        if name in self.locals[0]:
            return self.locals[0][name]
        return self.worlds[0].get(name)

    def expr(self, depth, extra=None, tries=6):
        """Source of an array-valued (mostly) expression checked in every world."""
        for _ in range(tries):
            try:
                src = self._expr_candidate(depth, extra)
                if "np." in src and not self.is_traced(src, extra):
                    # NumPy on constants only folds to a constant array, which
                    # framejit does not put in graphs
                    continue
                self.values(src, extra)
                return src
            except _Reject:
                continue
        return self.leaf(extra)

    def _expr_candidate(self, depth, extra):
        r = self.r
        if depth <= 0 or r.random() < 0.15:
            return self.leaf(extra)
        sub = lambda: self.expr(depth - 1, extra)  # noqa: E731
        kind = r.choices(
            ("binop", "cmp", "unary", "ufunc", "binfunc", "reduce", "shape", "index",
             "scalar_mix", "helper", "closure", "lambda", "concat"),
            weights=(14, 3, 4, 10, 5, 7, 6, 6, 5, 2, 2, 1, 2))[0]
        if kind == "binop":
            op = r.choice(("+", "-", "*", "/", "//", "%", "**", "+", "*", "-"))
            a = sub()
            if op == "**":
                return f"({a} ** {r.choice(('2', '3', '0.5', '2.0'))})"
            if op in ("/", "//", "%"):
                b = r.choice((sub(), "2", "1.5", "3", f"(np.abs({sub()}) + 1)"))
            else:
                b = sub() if r.random() < 0.7 else self.leaf(extra, "scalar")
            if r.random() < 0.3:
                a, b = b, a
            return f"({a} {op} {b})"
        if kind == "cmp":
            op = r.choice(("<", "<=", ">", ">=", "==", "!="))
            return f"({sub()} {op} {r.choice((sub(), self.leaf(extra, 'scalar')))})"
        if kind == "unary":
            return r.choice((f"(-{sub()})", f"(+{sub()})", f"abs({sub()})", f"(~{sub()})"))
        if kind == "ufunc":
            a = sub()
            return r.choice((f"np.sin({a})", f"np.cos({a})", f"np.tanh({a})", f"np.abs({a})",
                             f"np.floor({a})", f"np.ceil({a})", f"np.sign({a})",
                             f"np.exp(np.clip({a}, -5, 5))", f"np.exp({a})",
                             f"np.log(np.abs({a}) + 1)", f"np.sqrt(np.abs({a}))",
                             f"np.log1p(np.abs({a}))", f"np.negative({a})",
                             f"np.square({a})"))
        if kind == "binfunc":
            a, b = sub(), sub()
            return r.choice((f"np.maximum({a}, {b})", f"np.minimum({a}, {b})",
                             f"np.where({a} > 0, {a}, {b})", f"np.where({sub()} < {b}, {a}, 0)",
                             f"np.clip({a}, -1, 1)", f"np.clip({a}, {self.leaf(extra, 'scalar')}, 4)",
                             f"np.add({a}, {b})", f"np.multiply({a}, {b})"))
        if kind == "reduce":
            a = self.traced_array(depth - 1, extra)
            nd = self._ndim(a, extra)
            red = r.choice(("sum", "mean", "max", "min", "prod", "std", "var", "any", "all",
                            "argmax", "argmin"))
            args = []
            if nd and r.random() < 0.6:
                args.append(f"axis={r.randrange(-nd, nd)}")
                if red not in ("argmax", "argmin") and r.random() < 0.4:
                    args.append("keepdims=True")
            if r.random() < 0.5:
                return f"{a}.{red}({', '.join(args)})"
            return f"np.{red}({', '.join([a] + args)})"
        if kind == "shape":
            a = self.traced_array(depth - 1, extra)
            nd = self._ndim(a, extra)
            opts = [f"{a}.reshape(-1)", f"np.reshape({a}, (-1,))", f"{a}.T", f"np.transpose({a})",
                    f"np.expand_dims({a}, 0)", f"np.squeeze({a})", f"{a}.astype(np.float32)",
                    f"{a}.astype(np.int64)", f"{a}.reshape({a}.shape)", f"np.broadcast_to({a}, {a}.shape)",
                    f"{a}.reshape(-1, 1)", f"np.reshape({a}, {a}.shape + (1,))"]
            if nd >= 2:
                opts += [f"{a}.transpose(1, 0{''.join(f', {i}' for i in range(2, nd))})",
                         f"np.swapaxes({a}, 0, -1)", f"{a}.reshape({a}.shape[0], -1)",
                         f"np.expand_dims({a}, -1)"]
            if nd >= 1:
                opts += [f"np.expand_dims({a}, {nd})", f"{a}[None]"]
            return r.choice(opts)
        if kind == "index":
            a = self.traced_array(depth - 1, extra)
            nd = self._ndim(a, extra)
            if nd == 0:
                return r.choice((f"{a}[()]", f"{a}[...]", f"{a}[None]"))
            opts = ["0", "-1", "1:", "::2", ":-1", "None", "...", "..., 0", ":, None",
                    "::-1", "1", "0:2", "None, ..., None"]
            if nd >= 2:
                opts += ["0, 1", ":, 0", "1:, ::2", "..., -1", "-1, :"]
            return f"{a}[{r.choice(opts)}]"
        if kind == "scalar_mix":
            a = sub()
            c = self.leaf(extra, "scalar")
            return r.choice((f"({a} * {c})", f"({c} + {a})", f"({a} - {c} * 2)",
                             f"({a} / ({c} + 10))", f"({a} * (1 if {c} else 2))"))
        if kind == "helper":
            return self.helper_call(depth, extra)
        if kind == "closure":
            return self.closure_call(depth, extra)
        if kind == "lambda":
            arg = sub()
            body = self.fresh_body(("a",), (arg,), depth - 1, extra)
            if body is None:
                return self.leaf(extra)
            return f"(lambda a: {body})({arg})"
        if kind == "concat":
            a = self.traced_array(depth - 1, extra)
            b = f"({a} * 2)"
            if not all(isinstance(v, np.ndarray) for v in self.values(b, extra)):
                b = a  # a 0-d array times 2 is a NumPy scalar
            nd = self._ndim(a, extra)
            opts = [f"np.stack([{a}, {b}])", f"np.stack(({a}, {b}), axis=-1)"]
            if nd >= 1:
                opts += [f"np.concatenate([{a}, {b}])",
                         f"np.concatenate(({a}, {b}, {a}), axis={r.randrange(-nd, nd)})"]
            return r.choice(opts)
        raise AssertionError(kind)

    def is_traced(self, src, extra=None):
        """True if src mentions a name whose value comes from an input array."""
        names = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", src))
        traced = self.traced | (extra[0].get("_traced", set()) if extra else set())
        return bool(names & traced)

    def traced_array(self, depth, extra):
        """An expression that is an ndarray (not a NumPy scalar) computed from the inputs:
        framejit's shape ops and subscripts take traced arrays only."""
        for _ in range(4):
            a = self.expr(depth, extra)
            if self.is_traced(a, extra):
                try:
                    if all(isinstance(v, np.ndarray) for v in self.values(a, extra)):
                        return a
                except _Reject:
                    pass
        raise _Reject("no traced array")

    def _ndim(self, src, extra):
        try:
            v = self.values(src, extra)[0]
        except _Reject:
            return 0
        return getattr(v, "ndim", 0)

    def fresh_body(self, pnames, arg_srcs, depth, extra):
        """An expression over parameters 'pnames' bound to the values of arg_srcs."""
        try:
            argvals = [self.values(a, extra) for a in arg_srcs]
        except _Reject:
            return None
        sub_extra = [dict(zip(pnames, (v[w] for v in argvals))) for w in range(len(self.worlds))]
        tr = {p for p, a in zip(pnames, arg_srcs) if self.is_traced(a, extra)}
        for d in sub_extra:
            d["_traced"] = tr
        # the body sees only its parameters (and globals), not f's locals
        saved_locals, saved_names, saved_params = self.locals, self.local_names, self.params
        self.locals = [dict() for _ in self.worlds]
        self.local_names = []
        self.params = []
        try:
            return self.expr(max(depth, 1), sub_extra)
        finally:
            self.locals, self.local_names, self.params = saved_locals, saved_names, saved_params

    def helper_call(self, depth, extra):
        k = next(self.counter)
        nparams = self.r.choice((1, 2))
        pn = ("a", "b")[:nparams]
        args = [self.expr(depth - 1, extra) for _ in pn]
        body = self.fresh_body(pn, args, depth - 1, extra)
        if body is None:
            return self.leaf(extra)
        name = f"helper_{k}"
        src = f"def {name}({', '.join(pn)}):\n    t = {body}\n    return t\n"
        self._define(src)
        if nparams == 2 and self.r.random() < 0.4:
            return f"{name}({args[0]}, b={args[1]})"
        return f"{name}({', '.join(args)})"

    def closure_call(self, depth, extra):
        k = next(self.counter)
        arg = self.expr(depth - 1, extra)
        c = self.r.choice(("2.0", "3", "0.25", "-1"))
        sub_extra_arg = None
        try:
            argv = self.values(arg, extra)
        except _Reject:
            return self.leaf(extra)
        cval = eval(c)  # noqa: S307
        tr = {"a"} if self.is_traced(arg, extra) else set()
        sub_extra_arg = [{"a": argv[w], "c": cval, "_traced": tr} for w in range(len(self.worlds))]
        saved = self.locals, self.local_names, self.params
        self.locals, self.local_names, self.params = [dict() for _ in self.worlds], [], []
        try:
            body = self.expr(max(depth - 1, 1), sub_extra_arg)
        finally:
            self.locals, self.local_names, self.params = saved
        if "c" not in body:
            body = f"({body}) * c"
        name = f"make_{k}"
        src = (f"def {name}(c):\n    def inner(a):\n        return {body}\n    return inner\n\n\n"
               f"closure_{k} = {name}({c})\n")
        self._define(src)
        return f"closure_{k}({arg})"

    def _define(self, src):
        ns = self.globals
        exec(compile(src, "<gen>", "exec"), ns)  # noqa: S102
        self.preamble.append(src)

    # ----------------------------------------------------- statements
    def new_local(self):
        return f"v{len(self.local_names)}"

    def bind(self, name, vals, src=None):
        if src is not None and self.is_traced(src):
            self.traced.add(name)
        for w, v in enumerate(vals):
            self.locals[w][name] = v
        if name not in self.local_names:
            self.local_names.append(name)

    def statement(self, depth):
        """Returns lines of source (indented by 4) for one statement."""
        r = self.r
        kind = r.choices(("assign", "if", "for_range", "for_tuple", "inner_def", "augassign",
                          "unpack"),
                         weights=(10, 3, 2, 2, 1, 2, 1))[0]
        name = self.new_local()
        if kind == "assign":
            e = self.expr(depth)
            self.bind(name, self.values(e), e)
            return [f"{name} = {e}"]
        if kind == "augassign" and self.local_names:
            tgt = r.choice(self.local_names)
            e = self.expr(depth - 1)
            op = r.choice(("+", "-", "*"))
            src = f"{tgt} = {tgt} {op} {e}"
            self.bind(tgt, self.values(f"{tgt} {op} {e}"), f"{tgt} {e}")
            return [src]
        if kind == "unpack":
            a, b = self.expr(depth - 1), self.expr(depth - 1)
            name2 = f"{name}b"
            va, vb = self.values(a), self.values(b)
            self.bind(name, va, a)
            self.bind(name2, vb, b)
            return [f"{name}, {name2} = {a}, {b}"]
        if kind == "if":
            conds = ["True", "1 > 2"]
            if "n" in self.scalars:
                conds += ["n > 1", "n == 2", "n % 2 == 0 and n > 0"]
            if "flag" in self.scalars:
                conds += ["flag", "not flag"]
            if "s" in self.scalars:
                conds += ["s is None", "s is not None and s > 0"]
            if self.params:
                p = self.params[0]
                conds += [f"{p}.ndim >= 2", f"{p}.shape == ()", f"{p}.dtype == np.float64",
                          f"{p}.size > 3"]
            cond = r.choice(conds)
            a, b = self.expr(depth), self.expr(depth)
            cv = self.values(cond)
            va, vb = self.values(a), self.values(b)
            self.bind(name, [x if c else y for c, x, y in zip(cv, va, vb)], f"{a} {b}")
            return [f"if {cond}:", f"    {name} = {a}", "else:", f"    {name} = {b}"]
        if kind == "for_range":
            start = self.expr(depth - 1)
            cnt = "n" if "n" in self.scalars and r.random() < 0.7 else str(r.choice((0, 1, 3)))
            body = self.expr(depth - 1, [{"i": 0} for _ in self.worlds])
            lines = [f"{name} = {start}", f"for i in range({cnt}):",
                     f"    {name} = {name} + {body} * i" if r.random() < 0.5 else
                     f"    {name} = {name} * 0.5 + {body}"]
            self.exec_lines(lines)
            return lines
        if kind == "for_tuple":
            start = self.expr(depth - 1)
            items = r.choice(("(1.0, 2.0, 0.5)", "(1, -1)", "[0.5, 2]", "(2, 3, 4)"))
            lines = [f"{name} = {start}", f"for c in {items}:", f"    {name} = {name} * c + c"]
            if self.params and r.random() < 0.5:
                p = r.choice(self.params)
                lines = [f"{name} = {start}", f"for t in ({p}, {start}):",
                         f"    {name} = {name} + t"]
            self.exec_lines(lines)
            return lines
        if kind == "inner_def" or kind == "augassign":
            cap = self.expr(depth - 1)
            capname = f"{name}c"
            self.bind(capname, self.values(cap), cap)
            arg = self.expr(depth - 1)
            body = self.fresh_body(("y",), (arg,), depth - 1, None)
            if body is None:
                body = "y"
            lines = [f"{capname} = {cap}", f"def inner_{name}(y):", f"    return {body} + {capname}",
                     f"{name} = inner_{name}({arg})"]
            self.exec_lines(lines)
            return lines
        raise AssertionError(kind)

    def exec_lines(self, lines):
        """Runs statement lines in every world, binding the locals they assign."""
        src = "\n".join(lines)
        for w in range(len(self.worlds)):
            env = self.env(w)
            before = set(env)
            _checked(lambda: exec(src, env))  # noqa: B023, S102
            for k in env:
                if (k not in before or k in self.locals[w] or k in self.local_names) and \
                        not k.startswith("__") and not callable(env[k]) and \
                        k not in LOOP_VARS:
                    self.locals[w][k] = env[k]
        traced = self.is_traced(src)
        for k in self.locals[0]:
            if k not in self.local_names:
                self.local_names.append(k)
            if traced and re.search(rf"\b{k}\b\s*=", src):
                self.traced.add(k)

    def ret(self):
        r = self.r
        names = [n for n in self.local_names[-3:] if n in self.traced]
        names = ["v0"] + [n for n in names if n != "v0"][-2:]
        kind = r.choice(("single", "tuple", "list", "dict", "nested", "single"))
        last = names[-1]
        if kind == "single":
            return f"return {last}"
        if kind == "tuple":
            return f"return ({', '.join(names)},)" if len(names) == 1 else \
                f"return {', '.join(names)}"
        if kind == "list":
            return f"return [{', '.join(names)}]"
        if kind == "dict":
            return "return {" + ", ".join(f"'{n}': {n}" for n in names) + ", 'k': 3}"
        return f"return ({last}, [{names[0]}, None], {{'x': {names[0]}}})"


def _build(seed, shapes=None, dtypes=None):
    g = Gen(seed, shapes, dtypes)
    depth = g.r.choice((2, 2, 3))
    body = []
    # the first statement is always an array operation on an input
    for _ in range(20):
        first = g.expr(max(depth, 2))
        if g.is_traced(first) and any(ch in first for ch in "(+-*/[.<>~"):
            break
    else:
        raise _Reject("no traced first statement")
    g.bind("v0", g.values(first), first)
    body.append(f"v0 = {first}")
    for _ in range(g.r.choice((1, 2, 3))):
        for _attempt in range(5):
            try:
                body.extend(g.statement(depth))
                break
            except _Reject:
                continue
    body.append(g.ret())
    params = g.params + g.scalars
    fn_src = f"def f({', '.join(params)}):\n" + "".join(f"    {ln}\n" for ln in body)
    pre = "".join(p + ("\n\n" if p.startswith("def") else "\n") for p in g.preamble)
    source = f"import math\nimport numpy as np\n\n{pre}\n{fn_src}"
    worlds = [tuple(w[p] for p in params) for w in g.worlds]
    return source, worlds


def load(name, source):
    """Writes 'source' to a real file and execs it as a module dict; returns (path, ns)."""
    path = os.path.join(_module_dir(), f"{name}.py")
    with open(path, "w") as fh:
        fh.write(source)
    linecache.checkcache(path)
    ns = {"__name__": f"framejit_gen_{name}", "__file__": path}
    exec(compile(source, path, "exec"), ns)  # noqa: S102
    _KEEP.append(ns)
    return path, ns


def generate(seed, shapes=None, dtypes=None, attempts=50):
    """A Case whose function runs in every world in plain CPython without errors."""
    last = None
    for attempt in range(attempts):
        sub = seed * 1000 + attempt
        try:
            source, worlds = _build(sub, shapes, dtypes)
        except _Reject as e:
            last = e
            continue
        name = f"gen_{seed}"
        path, ns = load(name, source)
        fn = ns["f"]
        try:
            for args in worlds:
                _checked(lambda: fn(*_copy(args)))  # noqa: B023
        except _Reject as e:
            last = e
            continue
        return Case(name, source, path, fn, worlds, ns)
    raise RuntimeError(f"no valid function for seed {seed}: {last}")


@functools.lru_cache(maxsize=None)
def cached(seed):
    return generate(seed)


def _copy(args):
    from difftools import clone
    return tuple(clone(a) for a in args)
