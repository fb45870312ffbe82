"""Reads a valgrind memcheck log and fails if any error's stack passes
through framejit's extension (csrc/ or _C.*.so).

CPython 3.11 and glibc produce known false positives under memcheck
(uninitialised reads in the hash-seed and dlopen paths) that have nothing
to do with framejit, and interpreter shutdown leaves code-object extras
unfreed; leaks are checked by bench/memcheck.py and tests/test_memory.py
instead.  Usage: python3 tools/valgrind_check.py LOG
"""
import re
import sys

ERROR_START = re.compile(r"^==\d+== (Invalid (read|write|free)|Conditional jump|Use of uninitialised|"
                         r"Syscall param|Mismatched free|Source and destination overlap)")
OURS = re.compile(r"csrc/|_C\.cpython")


def main(path):
    lines = open(path, errors="replace").read().splitlines()
    errors, ours, cur = 0, [], None
    for line in lines:
        if ERROR_START.match(line):
            errors += 1
            cur = [line]
            continue
        if cur is not None:
            if re.match(r"^==\d+== $", line):
                if any(OURS.search(l) for l in cur):
                    ours.append("\n".join(cur))
                cur = None
            else:
                cur.append(line)
    print(f"valgrind: {errors} error records in all, {len(ours)} through framejit's code")
    for rec in ours[:20]:
        print(rec)
        print()
    return 1 if ours else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
