"""Symbolic sizes (issue 22): graphs and total compile time over 50 distinct
sizes, framejit against torch.compile on the same functions, in one run.

Each function is called once per size (50 distinct sizes, or n = 0..49 for
the int case) on a fresh compile of it.  Counted: the graphs each compiler
made (framejit: counters["stats"]["unique_graphs"]; torch.compile: calls of
its backend, an eager one that counts).  Timed: the whole sweep of 50 calls
minus the same sweep of plain calls (so: tracing, guards, recompiles and
their misses), best of 3 sweeps on fresh compiles.  framejit uses the eager
backend (torch.compile's backend is eager too), so no C compiler time is in
either figure.  Every framejit result is checked against plain NumPy.
With torch installed, framejit also runs the torch version of each function
(eager backend; results checked against eager torch): the same graph
counts on tensors as on arrays (docs/dynamic.md, "torch tensors").

With torch installed, a second table compiles the torch versions of two
functions with inductor over 10 sizes: inductor compiles and the sweep's
time, framejit (backend "inductor": symbolic sizes reach inductor, which
compiles dynamically) against torch.compile (its default automatic dynamic
shapes), inductor's caches disabled so every compile is a real one.

Run: python3 bench/bench_dynamic.py [--quick] [--no-inductor]
Writes bench/results/dynamic.json (bench/_results.py).
"""
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _results  # noqa: E402
import framejit  # noqa: E402

try:
    import torch
    import torch._dynamo
except ImportError:  # torch's column is left out, with a note
    torch = None

QUICK = "--quick" in sys.argv
ROUNDS = 1 if QUICK else 3
perf = time.perf_counter


# ---- the functions, in NumPy and in torch (the same operations) ----

def tanh_size_np(x):
    return np.tanh(x) * x.shape[0]


def tanh_size_t(x):
    return torch.tanh(x) * x.shape[0]


def row_norm_np(x):
    return x / np.sqrt((x * x).sum(axis=1, keepdims=True))


def row_norm_t(x):
    return x / torch.sqrt((x * x).sum(dim=1, keepdim=True))


def col_mean_np(x):
    return x.sum(axis=0) / x.shape[0]


def col_mean_t(x):
    return x.sum(dim=0) / x.shape[0]


def times_n_np(x, n):
    return x * n


def times_n_t(x, n):
    return x * n


def branch_np(x):
    if x.shape[0] > 100:
        return np.exp(x) - 1.0
    return x * 2.0


def branch_t(x):
    if x.shape[0] > 100:
        return torch.exp(x) - 1.0
    return x * 2.0


def reshape_np(x):
    return x.reshape(x.shape[0], -1).sum(axis=1)


def reshape_t(x):
    return x.reshape(x.shape[0], -1).sum(dim=1)


def zeros_np(x):
    return np.zeros(x.shape[0]) + x


def zeros_t(x):
    return torch.zeros(x.shape[0], dtype=x.dtype) + x


def tail_np(x, n):
    return x[n:] * 2.0


def tail_t(x, n):
    return x[n:] * 2.0


def cat_tail_np(x):
    return np.concatenate([x, x[1:]]) * len(x)


def cat_tail_t(x):
    return torch.cat([x, x[1:]]) * len(x)


def flat_np(x):
    return x.reshape(-1) * x.shape[0]


def flat_t(x):
    return x.reshape(-1) * x.shape[0]


SIZES = [4 + 7 * k for k in range(50)]  # 4 .. 347, 50 distinct


def vecs(k):
    return (np.random.default_rng(k).standard_normal(SIZES[k]),)


def rows(k):
    return (np.random.default_rng(k).standard_normal((SIZES[k], 8)),)


def cubes(k):
    return (np.random.default_rng(k).standard_normal((SIZES[k], 2, 3)),)


def ints(k):
    return (np.linspace(0.0, 1.0, 16), k)


def starts(k):
    return (np.linspace(0.0, 1.0, 400), 3 + 5 * k)


CASES = [
    ("np.tanh(x) * x.shape[0]", tanh_size_np, tanh_size_t, vecs),
    ("row normalisation (rows change)", row_norm_np, row_norm_t, rows),
    ("column mean x.sum(0) / x.shape[0]", col_mean_np, col_mean_t, rows),
    ("x * n, n = 0..49", times_n_np, times_n_t, ints),
    ("branch on x.shape[0] > 100", branch_np, branch_t, vecs),
    ("x.reshape(x.shape[0], -1).sum(1)", reshape_np, reshape_t, cubes),
    ("np.zeros(x.shape[0]) + x", zeros_np, zeros_t, vecs),
    ("x[n:] * 2, n = 3..248", tail_np, tail_t, starts),
    ("np.concatenate([x, x[1:]]) * len(x)", cat_tail_np, cat_tail_t, vecs),
    ("x.reshape(-1) * x.shape[0]", flat_np, flat_t, rows),
]


def to_torch(args):
    return tuple(torch.from_numpy(a.copy()) if isinstance(a, np.ndarray) else a for a in args)


def sweep(fn, inputs):
    t0 = perf()
    out = [fn(*a) for a in inputs]
    return perf() - t0, out


def same_result(r, e):
    if torch is not None and isinstance(e, torch.Tensor):
        return type(r) is type(e) and r.dtype == e.dtype and torch.equal(r, e)
    return type(r) is type(e) and np.array_equal(r, e)


def run_framejit(fn, inputs):
    best = None
    for _ in range(ROUNDS):
        framejit.reset()
        cf = framejit.compile(fn, backend="eager")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t, out = sweep(cf, inputs)
        graphs = framejit.counters["stats"].get("unique_graphs", 0)
        best = t if best is None else min(best, t)
    for a, r in zip(inputs, out):
        e = fn(*a)
        assert same_result(r, e), fn.__name__
    return best, graphs


def run_torch(fn, inputs):
    best = None
    for _ in range(ROUNDS):
        torch._dynamo.reset()
        count = [0]

        def backend(gm, example_inputs):
            count[0] += 1
            return gm.forward

        cf = torch.compile(fn, backend=backend)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t, _ = sweep(cf, inputs)
        best = t if best is None else min(best, t)
    return best, count[0]


INDUCTOR_SIZES = [16 + 24 * k for k in range(10)]


def run_inductor(fn, inputs, through_framejit):
    """Sweep time and inductor compiles of fn over inputs: framejit with
    backend "inductor", or torch.compile with inductor."""
    from torch._inductor import config as iconfig
    from torch._inductor.compile_fx import compile_fx
    count = [0]

    def counting(gm, example_inputs):
        count[0] += 1
        return compile_fx(gm, example_inputs)

    with iconfig.patch(force_disable_caches=True):
        if through_framejit:
            framejit.reset()
            cf = framejit.compile(fn, backend=counting)
        else:
            torch._dynamo.reset()
            cf = torch.compile(fn, backend=counting)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t, out = sweep(cf, inputs)
    for a, r in zip(inputs, out):
        e = fn(*a)
        assert r.shape == e.shape and torch.allclose(r, e, rtol=1e-5, atol=1e-6), fn.__name__
    return t, count[0]


def inductor_warmup():
    """Inductor's one-time start-up in a process (imports, its worker pool,
    the C++ toolchain probe: seconds) paid before either side is timed."""
    from torch._inductor.compile_fx import compile_fx

    def warm(x):
        return torch.cos(x) + 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch._dynamo.reset()
        torch.compile(warm, backend=compile_fx)(torch.randn(8))
        torch._dynamo.reset()


def inductor_table():
    inductor_warmup()
    rows_out = []
    print(f"  inductor over {len(INDUCTOR_SIZES)} sizes ({INDUCTOR_SIZES[0]}..{INDUCTOR_SIZES[-1]} rows of 64):")
    print(f"  {'function':36s} {'fj compiles':>11s} {'fj s':>7s} {'tc compiles':>11s} {'tc s':>7s}")
    for name, ft in (("torch.tanh(x) * x.shape[0]", tanh_size_t), ("row normalisation (rows change)", row_norm_t)):
        inputs = [(torch.randn(n, 64, generator=torch.Generator().manual_seed(n)),) for n in INDUCTOR_SIZES]
        fj_t, fj_c = run_inductor(ft, inputs, True)
        tc_t, tc_c = run_inductor(ft, inputs, False)
        rows_out.append({"function": name, "fj_compiles": fj_c, "fj_s": fj_t, "tc_compiles": tc_c, "tc_s": tc_t})
        print(f"  {name:36s} {fj_c:11d} {fj_t:7.2f} {tc_c:11d} {tc_t:7.2f}")
    return rows_out


def main():
    _results.start()
    if torch is not None:
        torch.set_num_threads(1)
    rows_out = []
    print(f"bench_dynamic: CPython {sys.version.split()[0]}, NumPy {np.__version__}"
          + (f", torch {torch.__version__}" if torch is not None else ", no torch"))
    print(f"  {'function':36s} {'fj graphs':>9s} {'fj ms':>8s} {'tc graphs':>9s} {'tc ms':>8s} {'tc/fj':>7s}"
          f" {'fj torch graphs':>15s} {'fj torch ms':>11s}")
    for name, fnp, ft, make in CASES:
        inputs = [make(k) for k in range(50)]
        plain = min(sweep(fnp, inputs)[0] for _ in range(3))
        fj_t, fj_g = run_framejit(fnp, inputs)
        row = {"function": name, "fj_graphs": fj_g, "fj_ms": (fj_t - plain) * 1e3}
        if torch is not None:
            tin = [to_torch(a) for a in inputs]
            tplain = min(sweep(ft, tin)[0] for _ in range(3))
            tc_t, tc_g = run_torch(ft, tin)
            row.update({"tc_graphs": tc_g, "tc_ms": (tc_t - tplain) * 1e3})
            row["ratio"] = row["tc_ms"] / row["fj_ms"] if row["fj_ms"] > 0 else None
            fjt_t, fjt_g = run_framejit(ft, tin)
            row.update({"fjt_graphs": fjt_g, "fjt_ms": (fjt_t - tplain) * 1e3})
        rows_out.append(row)
        print(f"  {name:36s} {fj_g:9d} {row['fj_ms']:8.1f} {row.get('tc_graphs', -1):9d} "
              f"{row.get('tc_ms', float('nan')):8.1f} {row.get('ratio') or float('nan'):7.1f}"
              f" {row.get('fjt_graphs', -1):15d} {row.get('fjt_ms', float('nan')):11.1f}")
    C = _results.column
    cols = [C("function", "function"), C("fj_graphs", "framejit graphs", "d"),
            C("fj_ms", "framejit compile ms (50 sizes)", ".1f")]
    if torch is not None:
        cols += [C("tc_graphs", "torch.compile graphs", "d"), C("tc_ms", "torch.compile compile ms", ".1f"),
                 C("ratio", "torch / framejit time", ".1f"),
                 C("fjt_graphs", "framejit graphs (torch version)", "d"),
                 C("fjt_ms", "framejit compile ms (torch version)", ".1f")]
    targets = []
    issue = {"np.tanh(x) * x.shape[0]", "row normalisation (rows change)", "x * n, n = 0..49"}
    for r in rows_out:
        if r["function"] in issue:
            targets.append({"target": f"{r['function']}: at most 2 graphs over 50 sizes",
                            "measured": f"{r['fj_graphs']} graphs", "met": r["fj_graphs"] <= 2})
    if torch is not None:
        fewer = sum(r["fj_graphs"] <= r["tc_graphs"] for r in rows_out)
        faster = sum(r["fj_ms"] <= r["tc_ms"] for r in rows_out)
        targets.append({"target": "graphs at most torch.compile's on each function",
                        "measured": f"{fewer}/{len(rows_out)}", "met": fewer == len(rows_out)})
        targets.append({"target": "total compile time below torch.compile's on each function",
                        "measured": f"{faster}/{len(rows_out)}", "met": faster == len(rows_out)})
        tfewer = sum(r["fjt_graphs"] <= r["tc_graphs"] for r in rows_out)
        targets.append({"target": "on the torch versions: graphs at most torch.compile's on each function",
                        "measured": f"{tfewer}/{len(rows_out)}", "met": tfewer == len(rows_out)})
    tables = [_results.table(f"50 distinct sizes per function ({SIZES[0]}..{SIZES[-1]}; n = 0..49 for "
                             f"x * n); sweep time minus plain, best of {ROUNDS}", cols, rows_out)]
    ind = []
    if torch is not None and "--no-inductor" not in sys.argv:
        ind = inductor_table()
        tables.append(_results.table(
            f"inductor: the torch versions over {len(INDUCTOR_SIZES)} sizes, one sweep, caches disabled",
            [C("function", "function"), C("fj_compiles", "framejit inductor compiles", "d"),
             C("fj_s", "framejit sweep s", ".2f"), C("tc_compiles", "torch.compile inductor compiles", "d"),
             C("tc_s", "torch.compile sweep s", ".2f")], ind))
        for r in ind:
            targets.append({"target": f"inductor compiles dynamically through framejit: {r['function']}",
                            "measured": f"{r['fj_compiles']} compiles (torch.compile {r['tc_compiles']})",
                            "met": r["fj_compiles"] <= r["tc_compiles"]})
    _results.write(
        "dynamic", "Symbolic sizes: graphs and compile time over 50 sizes", size="--quick" if QUICK else "full",
        tables=tables,
        targets=targets,
        notes=([] if torch is not None else ["torch is not installed: its columns are left out"]),
        data={"rows": rows_out, "sizes": SIZES, "inductor": ind, "inductor_sizes": INDUCTOR_SIZES})


if __name__ == "__main__":
    main()
