"""Cost of a passing guard check, per leaf, measured in C with
RootGuardManager._bench (no Python call overhead per check).

Each tree has N accessors, each with one leaf of the given kind (so the
figure includes fetching the value: a local slot read or a dict lookup).
Run: python3 bench/bench_guards.py [--quick]
Writes bench/results/guards.json (bench/_results.py).
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _results  # noqa: E402
from framejit import _C  # noqa: E402

SIZES = (1, 3, 10, 50)


class Obj:
    pass


def kinds():
    arr = np.zeros((4, 4), np.float32)
    obj = Obj()
    d = {"a": 1, "b": 2}
    # name -> (value for the slot, builder(manager, value), where)
    return {
        "TYPE_MATCH": (obj, lambda m, v: m.add_type_match(type(v)), "local"),
        "ID_MATCH": (obj, lambda m, v: m.add_id_match(v), "local"),
        "NONE_MATCH": (None, lambda m, v: m.add_none_match(), "local"),
        "EQUALS_MATCH int": (3, lambda m, v: m.add_equals_match(int("3")), "local"),
        "EQUALS_MATCH float": (2.5, lambda m, v: m.add_equals_match(float("2.5")), "local"),
        "EQUALS_MATCH str": ("fast", lambda m, v: m.add_equals_match("".join(["fa", "st"])),
                             "local"),
        "EQUALS_MATCH tuple": ((1, "a"), lambda m, v: m.add_equals_match((int("1"), "a")),
                               "local"),
        "SEQUENCE_LENGTH": ([1, 2, 3], lambda m, v: m.add_sequence_length(3), "local"),
        "DICT_KEYS": (d, lambda m, v: m.add_dict_keys(["a", "b"]), "local"),
        "TENSOR_MATCH": (arr, lambda m, v: m.add_tensor_match(arr), "local"),
        "TENSOR_MATCH dyn0": (arr, lambda m, v: m.add_tensor_match(arr, (0,)), "local"),
        "G EQUALS int (tag skip)": (3, lambda m, v: m.add_equals_match(int("3")), "global"),
        "G TENSOR (no skip)": (arr, lambda m, v: m.add_tensor_match(arr), "global"),
        **torch_kinds(),
    }


def torch_kinds():
    """TENSOR_MATCH on a torch tensor (issue 19's target: at most 100 ns per
    leaf), read through the C reader (framejit.torch_meta) when it builds."""
    try:
        import torch
    except ImportError:
        return {}
    from framejit import torch_meta
    reader = torch_meta.load()
    t = torch.zeros(4, 4)
    label = "TENSOR_MATCH torch" + ("" if reader else " (no C reader)")
    return {label: (t, lambda m, v: m.add_tensor_match(t), "local")}


def tree(n, value, build, where):
    r = _C.RootGuardManager()
    slots, g = [], {}
    for i in range(n):
        if where == "local":
            m = r.local(i, f"v{i}")
            slots.append(value)
        else:
            m = r.global_(f"v{i}")
            g[f"v{i}"] = value
        build(m, value)
    return r, slots, g


def measure(r, slots, g, reps):
    assert r.check(slots, None, g), r.check_verbose(slots, None, g)
    best = min(r._bench(slots, None, g, None, reps) for _ in range(5))
    return best / reps * 1e9


def main():
    _results.start()
    quick = "--quick" in sys.argv
    reps = 20_000 if quick else 200_000
    names = list(kinds())
    width = max(map(len, names)) + 2
    print(f"ns per leaf (best of 5 x {reps} checks)")
    print("kind".ljust(width) + "".join(f"{n:>9}" for n in SIZES))
    rows = []
    for name in names:
        value, build, where = kinds()[name]
        row = []
        for n in SIZES:
            r, slots, g = tree(n, value, build, where)
            row.append(measure(r, slots, g, max(reps // n, 1000)) / n)
        print(name.ljust(width) + "".join(f"{x:9.1f}" for x in row))
        rows.append(dict({"kind": name}, **{f"n{n}": x for n, x in zip(SIZES, row)}))

    # the seeds/004 tree: TENSOR_MATCH L['x'], EQUALS_MATCH L['n'], EQUALS_MATCH G
    x = np.zeros((4, 4), np.float32)
    r = _C.RootGuardManager()
    r.local(0, "x").add_tensor_match(x)
    r.local(1, "n").add_equals_match(3)
    r.global_("cfg_scale").add_equals_match(2)
    g = {"cfg_scale": 2}
    print()
    seed = measure(r, [x, 3], g, reps)
    print(f"seed tree, 3 leaves: {seed:.1f} ns per check (global skipped by dict tag)")
    r.add_global_state()
    seed_gs = measure(r, [x, 3], g, reps)
    print(f"seed tree + GLOBAL_STATE: {seed_gs:.1f} ns per check")
    r2 = _C.RootGuardManager()
    r2.local(0, "x").add_tensor_match(x)
    r2.local(1, "n").add_equals_match(3)
    r2.global_("cfg_scale").add_equals_match(2)
    # an accessor below makes the global subtree unskippable
    r2.global_("cfg_scale").attr("real").add_equals_match(2)
    unskip = measure(r2, [x, 3], g, reps)
    print(f"seed-like tree, global not skippable (4 leaves): {unskip:.1f} ns per check")
    torch_rows = [r for r in rows if r["kind"].startswith("TENSOR_MATCH torch")]
    targets = [{"target": "TENSOR_MATCH on a torch tensor at most 100 ns per leaf (issue 19)",
                "measured": f"{max(r[f'n{n}'] for n in SIZES):.1f} ns (worst tree size)",
                "met": max(r[f"n{n}"] for n in SIZES) <= 100} for r in torch_rows]
    C = _results.column
    trees = [{"tree": "seeds/004: TENSOR_MATCH L['x'], EQUALS_MATCH L['n'], EQUALS_MATCH G "
                      "(global subtree skipped by the dict's version tag)", "ns": seed},
             {"tree": "the same + GLOBAL_STATE", "ns": seed_gs},
             {"tree": "the same without GLOBAL_STATE, the global subtree made unskippable "
                      "(an accessor below it; 4 leaves)", "ns": unskip}]
    _results.write(
        "guards", "Guards per leaf", size="--quick" if quick else "full",
        tables=[_results.table(f"ns per leaf, passing checks (best of 5 x {reps:,} checks, "
                               "fewer for larger trees)",
                               [C("kind", "leaf")] + [C(f"n{n}", f"{n} leaf" if n == 1 else
                                                        f"{n} leaves", ".1f") for n in SIZES],
                               rows),
                _results.table("whole trees, ns per check", [C("tree", "tree"), C("ns", "ns", ".1f")],
                               trees)],
        targets=targets, data={"per_leaf": rows, "trees": trees, "reps": reps})


if __name__ == "__main__":
    main()
