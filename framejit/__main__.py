"""``python -m framejit``: command-line entry points.

    python -m framejit run [--summary] SCRIPT [ARGS...]
    python -m framejit run [--summary] -m MODULE [ARGS...]

(see framejit/run.py)."""
import sys

# Builtins bound at import: framejit's code runs while the program's frames
# compile, when the program may have patched builtins (len, isinstance, open...).
from builtins import (  # noqa: A004
    print
)


def _main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        from .run import USAGE
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    if argv[0] != "run":
        from .run import USAGE
        print(f"python -m framejit: unknown command {argv[0]!r}\n{USAGE}", file=sys.stderr)
        return 2
    from .run import main
    return main(argv[1:])


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
