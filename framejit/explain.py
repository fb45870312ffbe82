"""framejit.explain(fn)(*args): what framejit made of a call.

Compiles 'fn' afresh (after framejit.reset()), runs it once on the
arguments, and returns an ExplainOutput: the graphs, the graph breaks with
their reasons and places, the ops of each graph and the guards.  Printing it
gives a readable report."""
import os

from . import api
from ._hooks import hooks

# Builtins bound at import: framejit's code runs while the program's frames
# compile, when the program may have patched builtins (len, isinstance, open...).
from builtins import (  # noqa: A004
    TypeError, callable, dict, enumerate, getattr, isinstance, len, property, str,
    sum, type, zip
)


class ExplainOutput:
    def __init__(self, result, graphs, breaks, guards):
        self.result = result
        self.graphs = graphs                  # [(compile_id, code name, Graph)]
        # [dict(compile_id, function, file, line, reason, resumed, kind, source, message)]:
        # 'kind' is the anchor of its section of docs/graph-breaks.md, 'message'
        # the text logs and fullgraph=True errors show (framejit/breaks.py)
        self.break_reasons = breaks
        self.guards = guards                  # [(compile_id, code name, guard text)]

    @property
    def graph_count(self):
        return len(self.graphs)

    @property
    def graph_break_count(self):
        return len(self.break_reasons)

    @property
    def ops_per_graph(self):
        return [[n.target if isinstance(n.target, str) else
                 f"{getattr(n.target, '__module__', '') or ''}.{getattr(n.target, '__name__', n.target)}".lstrip(".")
                 for n in g.nodes if n.op.startswith("call")] for _, _, g in self.graphs]

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}",
                 f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {sum(len(o) for o in self.ops_per_graph)}"]
        lines.append("Break Reasons:")
        for i, b in enumerate(self.break_reasons, 1):
            how = "resumed after it" if b["resumed"] else "the frame ran whole in CPython"
            lines.append(f"  Break Reason {i} [{b['compile_id']}] in {b['function']} at "
                         f"{os.path.basename(b['file'])}:{b['line']} ({how}):")
            lines.extend(f"    {text}" for text in b["message"].splitlines())
        lines.append("Ops per Graph:")
        for (cid, name, _), ops in zip(self.graphs, self.ops_per_graph):
            lines.append(f"  Graph [{cid}] ({name}): {len(ops)} ops")
            lines.extend(f"    {op}" for op in ops)
        lines.append("Guards:")
        for cid, name, text in self.guards:
            lines.append(f"  [{cid}] {name}:")
            lines.extend("    " + line.strip() for line in text.splitlines()[1:])
        return "\n".join(lines)

    __repr__ = __str__


def explain(fn, backend="eager"):
    """framejit.explain(fn)(*args, **kwargs) -> ExplainOutput."""
    if not callable(fn):
        raise TypeError(f"framejit.explain expects a callable, not {type(fn).__name__}")

    def run(*args, **kwargs):
        events = []
        api.reset()
        hooks.recorders.append(events)
        try:
            result = api.compile(fn, backend=backend)(*args, **kwargs)
        finally:
            hooks.recorders.remove(events)
        graphs, breaks, guards = [], [], []
        for ev in events:
            if ev[0] == "compile":
                _, code, cid, gtext, graph = ev
                guards.append((cid, code.co_name, gtext))
                if graph is not None and getattr(graph, "num_calls", 0) > 0:
                    graphs.append((cid, code.co_name, graph))
            elif ev[0] == "break":
                _, code, cid, reason, line, resumed, info = ev
                breaks.append(dict(compile_id=cid, function=code.co_name, file=code.co_filename,
                                   line=line, reason=reason, resumed=resumed,
                                   kind=info.kind.anchor, source=info.source,
                                   message=info.message))
        return ExplainOutput(result, graphs, breaks, guards)

    return run
