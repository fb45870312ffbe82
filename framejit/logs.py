"""Log channels (FRAMEJIT_LOGS / set_logs) over the standard logging module.

Every line goes to the ``framejit`` logger (child loggers per channel, e.g.
``framejit.bytecode``).  A handler printing bare messages to stderr is added
when a channel is turned on and the logger has no handler yet.

The logging module is imported by the first set_logs that turns a channel
on, not with framejit: `python -m framejit run` of a program that never
logs does not pay its import (about 6 ms of start-up).
"""
import os
import sys

# Builtins bound at import: framejit's code runs while the program's frames
# compile, when the program may have patched builtins (len, isinstance, open...).
from builtins import (  # noqa: A004
    ValueError, set, sorted, str
)

CHANNELS = ("bytecode", "guards", "graph", "graph_code", "graph_breaks", "recompiles",
            "recompiles_verbose", "dynamic", "trace_bytecode")
# Channels "all" leaves out, as torch's off-by-default artifacts: a line per
# traced instruction, and every failed guard of every cache entry.  Named,
# or with "+all", they are on.
VERBOSE = ("trace_bytecode", "recompiles_verbose")

enabled = set()
logger = None   # logging.getLogger("framejit"), once a channel was turned on


def set_logs(*channels, **flags):
    """Turn log channels on: ``set_logs("bytecode", "guards")`` or
    ``set_logs(bytecode=True)``; ``set_logs()`` turns all off.  "all" turns
    on every channel but the verbose ones (a line per traced instruction,
    trace_bytecode, and recompiles_verbose), "+all" those too."""
    wanted = set()
    for c in channels:
        for name in str(c).split(","):
            name = name.strip()
            if name:
                wanted.add(name)
    wanted |= {k for k, v in flags.items() if v}
    if "+all" in wanted:
        wanted = (wanted - {"+all", "all"}) | set(CHANNELS)
    if "all" in wanted:
        wanted = (wanted - {"all"}) | (set(CHANNELS) - set(VERBOSE))
    unknown = sorted(wanted - set(CHANNELS))
    if unknown:
        raise ValueError(f"unknown framejit log channel(s) {unknown}; known: {', '.join(CHANNELS)}, "
                         f"all (all but {' and '.join(VERBOSE)}), +all")
    enabled.clear()
    enabled.update(wanted)
    from . import _C   # the C core reads the channels once per change
    _C._config_changed()
    if enabled:
        global logger
        import logging
        logger = logging.getLogger("framejit")
        logger.setLevel(logging.DEBUG)
        if not logger.handlers:
            h = logging.StreamHandler(sys.stderr)
            h.setFormatter(logging.Formatter("%(message)s"))
            logger.addHandler(h)
            logger.propagate = False


def on(channel):
    return channel in enabled


def log(channel, compile_id, text):
    """Log 'text' on 'channel', each line prefixed by '[compile_id] '."""
    if channel not in enabled or logger is None:
        return
    prefix = f"[{compile_id}] " if compile_id is not None else ""
    lg = logger.getChild(channel)
    for line in str(text).splitlines():
        lg.debug(prefix + line)


if os.environ.get("FRAMEJIT_LOGS"):
    set_logs(os.environ["FRAMEJIT_LOGS"])
