"""copy.deepcopy of nested containers: one id() per object, and id() is an
audited operation (under `framejit run` before NumPy is imported, the
import watcher's C audit hook sees every audit event)."""
import copy


def tree(depth):
    if depth == 0:
        return {"leaf": [1, 2.5, "x", (3, 4)]}
    return {"left": tree(depth - 1), "right": [tree(depth - 1), depth]}


def main():
    t = tree(9)
    total = 0
    for _ in range(12):
        c = copy.deepcopy(t)
        total += len(c["right"])
    ids = 0
    for i in range(300000):
        ids ^= id(i) & 1
    print(total, ids >= 0)


main()
