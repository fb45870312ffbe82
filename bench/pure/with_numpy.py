"""Runs the program named by the first argument after importing NumPy, so
that under `framejit run` the hook is awake (not dormant) while a pure
program runs: the cost of the hook itself (quiet regions, tails)."""
import runpy
import sys

import numpy  # noqa: F401 - wakes framejit's hook under `run`

prog = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(prog, run_name="__main__")
