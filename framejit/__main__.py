"""``python -m framejit``: command-line entry points.

    python -m framejit run [--summary] SCRIPT [ARGS...]
    python -m framejit run [--summary] -m MODULE [ARGS...]
    python -m framejit report DIR [-o OUT.html]

(see framejit/run.py and framejit/report.py)."""
import sys

# Builtins bound at import: framejit's code runs while the program's frames
# compile, when the program may have patched builtins (len, isinstance, open...).
from builtins import (  # noqa: A004
    print
)


def _usage():
    from .run import USAGE
    from .report import USAGE as REPORT_USAGE
    return f"{USAGE}\n{REPORT_USAGE}"


def _main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage(), file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    if argv[0] == "report":
        from .report import main as report_main
        return report_main(argv[1:])
    if argv[0] != "run":
        print(f"python -m framejit: unknown command {argv[0]!r}\n{_usage()}", file=sys.stderr)
        return 2
    from .run import main
    return main(argv[1:])


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
