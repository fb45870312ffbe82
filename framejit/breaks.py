"""Graph-break messages: the kind of a break and the text the user reads.

Responsible for: mapping a break reason's stable key (the C template it was
formatted from: csrc/trace/trace.h, fj_unsupported) to one break kind, and
formatting the message that logs, explain() and fullgraph=True errors show:
the reason (which names functions as the program spells them), the user's
source line with a caret under the instruction, a one-line explanation, a
hint and a link to the kind's section of docs/graph-breaks.md.

Not responsible for: the reasons themselves (the C tracer), counting them
(counters["graph_break"] stays keyed by the reason: _hooks.py), or deciding
what breaks.  Runs at compile time only, never on a warm call.
"""
import linecache
import os

# Builtins bound at import: framejit's code runs while the program's frames
# compile, when the program may have patched builtins (len, isinstance, open...).
from builtins import (  # noqa: A004
    UnicodeError, frozenset, isinstance, len, reversed, set, tuple
)

DOC = "docs/graph-breaks.md"


class Kind:
    """One kind of graph break: its doc anchor, title, why and hint."""

    def __init__(self, anchor, title, why, hint):
        self.anchor = anchor
        self.title = title
        self.why = why
        self.hint = hint

    @property
    def link(self):
        return f"{DOC}#{self.anchor}"


# The kinds, one section each in docs/graph-breaks.md ("## Break kinds").
# Hints name only what framejit has (framejit.config, mark_dynamic, compile).
UNSUPPORTED_CALL = Kind(
    "unsupported-call", "unsupported call",
    "framejit does not know what this function does to its arguments, so it cannot "
    "record it in the graph.",
    "The call runs in CPython and the code after it resumes compiled. For one graph, "
    "call it outside the compiled function and pass its result in, or use a NumPy/torch "
    "function the graph captures.")
DATA_BRANCH = Kind(
    "data-dependent-branch", "data-dependent branch",
    "the branch taken depends on the values inside an array, which a graph does not "
    "know when it is traced.",
    "Compute both sides and select with np.where(cond, a, b) (torch.where for tensors), "
    "or decide outside the compiled function and pass the decision in as an argument.")
DATA_VALUE = Kind(
    "data-dependent-value", "data-dependent value",
    "the code reads a Python value (or a size) out of an array's data, which a graph "
    "does not know when it is traced.",
    "Keep the value an array (x.sum(), not float(x.sum()); np.where instead of a boolean "
    "mask), or read it after the compiled function returns.")
SIDE_EFFECT = Kind(
    "side-effect", "side effect",
    "the code changes or reads state outside the frame (output, files, globals, "
    "objects) in a way the tracer does not replay.",
    "It runs in CPython, in order, and the rest resumes compiled. For one graph, move it "
    "out of the compiled function (print or store the returned values after the call).")
CONSTRUCT = Kind(
    "unsupported-construct", "unsupported construct",
    "the tracer does not capture this Python construct (a generator, a with block, an "
    "exception handler, an import, a closure it cannot follow, a loop it cannot split).",
    "Move the construct into a helper function called from the compiled one, or out of "
    "it; the code around it still compiles.")
ARGUMENT = Kind(
    "unsupported-argument", "unsupported argument",
    "a value here is of a kind the graph does not take as an input (an ndarray subclass, "
    "an object array, a non-constant where a constant is needed, a tensor off the CPU).",
    "Pass plain arrays (np.asarray) and constant Python values where the message asks "
    "for one; framejit.mark_dynamic(x, dim) makes a changing size one graph.")
DEPTH = Kind(
    "recursion-or-inline-depth-limit", "recursion or inline depth limit",
    "the call is recursive, or nests deeper than framejit.config.inline_depth_limit, or "
    "the trace or a value is too long or deep, so the tracer stops.",
    "A recursive call is never inlined: write the recursion as a loop or keep it out of "
    "the compiled function; for a deep chain of calls raise "
    "framejit.config.inline_depth_limit (8). The call runs in CPython, its frames compiled.")
RAISES = Kind(
    "raises-while-tracing", "raises while tracing",
    "for these inputs the code raises here (an IndexError, KeyError, TypeError...): the "
    "line runs in CPython so the error, and its traceback, are CPython's.",
    "Nothing to do when the error is expected; otherwise fix the error the message names.")
FRAME_STATE = Kind(
    "frame-state-not-handed-on", "frame state not handed on",
    "a value the frame holds, or the place of the break, cannot be handed from the graph "
    "back to CPython (an object only CPython can rebuild, a break in a loop or under a "
    "handler that cannot be split).",
    "Keep arrays, numbers and containers of them in the frame across the break, or move "
    "the breaking line out of the loop or block; the frame otherwise runs in CPython.")

# what compiler.c appends to a reason when the break cannot be planned
_WHOLE_FRAME = " (the whole frame runs in CPython: "

KINDS = (UNSUPPORTED_CALL, DATA_BRANCH, DATA_VALUE, SIDE_EFFECT, CONSTRUCT, ARGUMENT, DEPTH,
         RAISES, FRAME_STATE)

# Functions whose call is a side effect (output, input, files): by public name.
_IO_FUNCTIONS = frozenset({
    "print", "input", "open", "io.open", "breakpoint", "os.write", "os.remove",
    "os.system", "time.sleep", "logging.info", "logging.debug", "logging.warning",
    "warnings.warn", "np.save", "np.savez", "np.savetxt", "np.load", "np.loadtxt",
    "torch.save", "torch.load",
})

# (kind, fragments): the first kind with a fragment in the key (the reason's C
# template: stable, unlike the formatted text).  Order matters: specific first.
_RULES = (
    (DATA_BRANCH, ("branch on", "truth value depends on its data",
                   "a data-dependent comparison", "(its result, one of them, depends on the data)")),
    (DATA_VALUE, ("data-dependent", "depends on the data", "reads the tensor's values",
                  "of an array value",
                  "np.nonzero", "a data-dependent", "size that depends on the data")),
    (DEPTH, ("recursive call", "depth limit", "instruction budget", "nests deeper",
             "nests too deep", "nests lists or tuples", "access path more than",
             "more than 4096 items", "too many arguments", "huge size")),
    (SIDE_EFFECT, ("(a side effect", "global store", "global delete", "global deletion",
                   "attribute store", "attribute %s", "mutation of", "mutating a container",
                   "is mutated and", "del of", "finalizer", "writes into a read-only",
                   "runs autograd", "changes autograd state", "changes the tensor's metadata",
                   "replaces the tensor's storage", "changes the tensor's shape",
                   "hooks are not captured", "global module hook", "has %s registered",
                   "a tensor store", "reads or changes torch's global state",
                   "after side effects", "side effects of the iteration",
                   "attribute deletion", "a closure cell changes", "changes in its body",
                   "grew or shrank", "name '%U' deleted")),
    (RAISES, ("(it raises)", "raises %s", " raises", "KeyError", "index out of range",
              "not in list", "is empty", "is not defined", "referenced before assignment",
              "not enough values", "unpacking %d values", "takes %d positional",
              "missing required", "got multiple values", "unexpected keyword",
              "takes no arguments", "takes no positional", "has no attribute",
              "expected at most", "returns a value")),
    (FRAME_STATE, ("graph break inside", "graph break in the prologue",
                   "graph break under a handler", "graph break with a short stack",
                   "cannot resume after", "cannot rebuild", "cannot return", "rebuilt without",
                   "a tuple made in the frame", "cell variable", "resume code would use",
                   "would hold an unhashable", "is bound only if the loop",
                   "no instruction to resume", "its identity is not known",
                   "a graph that covers a try", "rebinding or deleting local",
                   "a break leaves", "a break comes", "a return in", "a slice with symbolic",
                   "the loop's", "loop at %U", "while loop at", "loop capture",
                   "changes with each iteration", "bounds change with each iteration",
                   "a torch tensor inside a captured loop", "two-local instruction")),
    (CONSTRUCT, ("opcode", "with statement", "exception handler", "generator", "import",
                 "f-string", "string built", "closure", "annotations", "MAKE_FUNCTION",
                 "SET_FUNCTION_ATTRIBUTE", "LOAD_CLOSURE", "LOAD_DEREF", "STORE_DEREF",
                 "free variable", "fell off the end", "comprehension", "iteration over",
                 "FOR_ITER", "zip()", "np.ndindex", "np.ndenumerate", "range()",
                 "enumerate()", "builtins of its own", "with no source", "__init__ is not",
                 "forward is not a plain", "_modules is not", "interned", "internal:",
                 "is a method of", "iterating over a tensor", "has no %s",
                 "no flatnonzero", "not found")),
    (ARGUMENT, ("not a plain constant", "not constants", "non-constant", "not a constant",
                "not known", "ndarray subclass", "torch.Tensor subclass", "array of Python objects",
                "dimensions", "device", "only tensors on the CPU", "changed while it was traced",
                "not readable as an int", "print as", "a key that is not", "other library",
                "meets a torch operation", "cannot be passed", "holds an object of the program's",
                "with keywords", "with keyword", "with arguments", "with an argument",
                "with %zd", "with a '%s'", "with a mode", "with mode", "with key %R",
                "hashable", "unknown type", "overrides __class__", "0-d array",
                "empty array", "square", "positional arguments", "more than 2 arguments",
                "more than 256 items", "nonzero constant", "with bounds",
                "subscript", "'in' test", "'is", "sort()", "dict with", "not a graph input",
                "dict update", "dict.update", "makes a mutable", "makes a dict",
                "makes an array", "on constants", "neither arrays nor constants", "memory with",
                "is an address", "storage is not", "converted to a NumPy array",
                "not what framejit expects", "a mode", "returns a %s", "returns a sequence",
                "torch metadata function returned", "np.random.Generator made",
                "an input's object", "not a known", "not plain constants",
                "whose dtype cannot hold", "a view of")),
    (UNSUPPORTED_CALL, ("call of", "method ", " is not supported", "is not captured",
                        "attribute %U", "attribute ", "ndarray", "descriptor", "operator",
                        "comparison", "unary", "dict.%U", "list.%U", "set.%U", "tuple.%U",
                        "type() of", "isinstance()", "getattr()", "len()", "torch module",
                        "Tensor.", "truth value of", "item assignment", "%s on %R")),
)


def kind_of(key, reason=""):
    """The Kind of a break whose reason was made from template 'key' (None
    when the C side gave none: a reason not raised by fj_unsupported)."""
    if key is None:
        return FRAME_STATE if _WHOLE_FRAME in reason else UNSUPPORTED_CALL
    if key == "call of %R is not supported" and reason.startswith("call of "):
        name = reason[len("call of "):].partition(" is not supported")[0]
        if name in _IO_FUNCTIONS or name.endswith((".write", ".flush", ".writelines")):
            return SIDE_EFFECT
    for kind, fragments in _RULES:
        for f in fragments:
            if f in key:
                return kind
    return UNSUPPORTED_CALL


def _source_line(filename, line):
    return linecache.getline(filename, line).rstrip("\n") if line and line > 0 else ""


def _caret(text, col, end_col):
    """'text' (a source line, indentation kept) and its caret line, or None.
    col/end_col are UTF-8 byte offsets (co_positions); -1: unknown."""
    if col is None or col < 0:
        return None
    try:
        raw = text.encode("utf-8")  # (a line put in linecache may hold a lone surrogate)
        if col > len(raw):
            return None
        start = len(raw[:col].decode("utf-8"))
        stop = len(raw[:end_col].decode("utf-8")) if end_col is not None and end_col > col else None
    except UnicodeError:
        return None
    body = text.rstrip()
    if stop is None or stop > len(body):
        stop = len(body)
    if stop <= start:
        return None
    return " " * start + "^" * (stop - start)


_MAX_LINES = 6   # of an instruction spanning lines: the first ones, then "..."


def _indent(t):
    return len(t) - len(t.lstrip(" \t"))


def source_with_caret(filename, line, col=-1, end_col=-1, indent="    ", end_line=-1):
    """The source line (dedented) and, where the column is known, a caret
    line under the instruction; [] when the source is not available.  An
    instruction spanning lines to 'end_line' shows each of them with its
    caret (from 'col' on the first, to 'end_col' on the last, the code
    between on the others; none under a comment), dedented together, the
    first _MAX_LINES then "..." and the last."""
    text = _source_line(filename, line)
    if not text.strip():
        return []
    spans = [(text, col, end_col)]
    if end_line is not None and end_line > line and col is not None and col >= 0:
        last = min(end_line, line + 200)
        spans = [(text, col, 1 << 30)]
        for ln in range(line + 1, last + 1):
            t = _source_line(filename, ln)
            if not t.strip():
                continue   # a blank line (or one the file no longer has)
            stop = end_col if ln == end_line else 1 << 30
            spans.append((t, -1 if t.lstrip(" \t").startswith("#") else _indent(t), stop))
    if len(spans) > _MAX_LINES + 1:
        spans = spans[:_MAX_LINES] + [None] + spans[-1:]
    cut = min(_indent(sp[0]) for sp in spans if sp is not None)
    out = []
    for sp in spans:
        if sp is None:
            out.append(indent + "...")
            continue
        t, c0, c1 = sp
        out.append(indent + t[cut:].rstrip())
        caret = _caret(t, c0, c1) if c0 is not None and c0 >= 0 and c0 >= cut else None
        if caret is not None:
            out.append(indent + caret[cut:])
    return out


class BreakInfo:
    """What one graph break says: reason, kind, where, and the message."""

    def __init__(self, code, reason, line, detail=None, cols=None):
        key, stack = (detail if isinstance(detail, tuple) and len(detail) == 2 else (None, ()))
        self.reason = reason
        self.key = key
        self.kind = kind_of(key, reason)
        self.code = code
        self.filename = code.co_filename
        self.line = line
        col, end_col, end_line = (tuple(cols) + (-1,))[:3] if isinstance(cols, tuple) and len(cols) >= 2 else (-1, -1, -1)
        # the top frame's entry of the trace's stack, when it is this line
        top = stack[-1] if stack else None
        if top is not None and top[0] is code and top[1] == line and col < 0:
            col, end_col, end_line = top[2], top[3], (top[4] if len(top) > 4 else -1)
        self.col, self.end_col, self.end_line = col, end_col, end_line
        # inlined frames (outermost first), below the compiled one
        self.inlined = tuple(e for e in reversed(stack[:-1])) if stack and top[0] is code else ()
        self.source = _source_line(self.filename, line).strip()

    def lines(self, indent="    "):
        """The message, one list item per line, the reason first."""
        out = [self.reason]
        out.extend(source_with_caret(self.filename, self.line, self.col, self.end_col, indent,
                                     self.end_line))
        out.append(f"{self.kind.title[0].upper()}{self.kind.title[1:]}: {self.kind.why}")
        out.append(f"Hint: {self.kind.hint}")
        out.append(f"See {self.kind.link}")
        if self.kind is not FRAME_STATE and _WHOLE_FRAME in self.reason:
            out.append(f"This break cannot be split, so the whole frame runs in CPython: see "
                       f"{FRAME_STATE.link}")
        return out

    @property
    def message(self):
        return "\n".join(self.lines())

    def user_stack(self, name):
        """The user's stack at the break, most recent call last: the compiled
        function's line, then each inlined call down to where it broke."""
        out = ["User stack (most recent call last):",
               f'  File "{self.filename}", line {self.line}, in {name}']
        out.extend(source_with_caret(self.filename, self.line, self.col, self.end_col,
                                     end_line=self.end_line))
        for code, line, col, end_col, *rest in self.inlined:
            out.append(f'  File "{code.co_filename}", line {line}, in {code.co_name} (inlined)')
            out.extend(source_with_caret(code.co_filename, line, col, end_col,
                                         end_line=rest[0] if rest else -1))
        return "\n".join(out)


def anchors(doc_text):
    """GitHub-style anchors of the headings of a Markdown text."""
    out = set()
    for raw in doc_text.splitlines():
        if not raw.startswith("#"):
            continue
        title = raw.lstrip("#").strip().lower()
        slug = "".join(ch for ch in title if ch.isalnum() or ch in " -_")
        out.add(slug.replace(" ", "-"))
    return out


def doc_path():
    """Where docs/graph-breaks.md is in a source checkout (tests)."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), DOC)
