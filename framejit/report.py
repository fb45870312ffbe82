"""``python -m framejit report DIR [-o OUT.html]``: the structured trace as one HTML page.

    python -m framejit report DIR              (writes DIR/report.html)
    python -m framejit report DIR -o OUT.html

DIR holds the ``framejit_trace.<pid>.jsonl`` files that a program run with
``FRAMEJIT_TRACE_DIR=DIR`` wrote (framejit/tracefile.py; a single file may
be given instead).  The page is self-contained (inline CSS and a few lines
of inline JavaScript, no external asset, no server): the processes and
their totals, a timeline of compile time, an index of frames by compile
cost, and per function its source with the captured regions and the graph
breaks marked, then per compile its outcome and phase times, the recompile
reason, the breaks with their user stack, the graph as a table and as
code, and the guard tree.

Responsible for: reading and checking the files (bad input is one message
naming the file and line, not a traceback) and rendering them.  Everything
from the trace (the program's source, reprs, reasons) is escaped.

Not responsible for: what is recorded (tracefile.py).
"""
import html
import json
import linecache
import os
import sys

USAGE = ("usage: python -m framejit report DIR [-o OUT.html]\n"
         "  DIR: the FRAMEJIT_TRACE_DIR of a run (its framejit_trace.<pid>.jsonl files),\n"
         "       or one such file; OUT.html defaults to DIR/report.html")

from .tracefile import FILE_PREFIX, FILE_SUFFIX, SCHEMA  # noqa: E402

OUTCOMES = {
    "compiled": "runs compiled code",
    "own_code": "runs its own code under guards (nothing worth compiling for these inputs)",
    "unless_arrays": "runs its own code until an input is an array (no graph)",
    "skipped": "never compiled (skip rules, or given up)",
    "run_only": "recompile limit: runs its cached entries only",
    "not_compiled": "not compiled this time",
    "error": "a user-facing error (fullgraph, a failing backend)",
}


class ReportError(Exception):
    """Bad input: the message names what was wrong."""


# ------------------------------------------------------------------ reading

def trace_files(path):
    """The trace files of 'path' (a directory or one file), sorted."""
    if not os.path.exists(path):
        raise ReportError(f"{path}: no such file or directory")
    if os.path.isfile(path):
        return [path]
    if not os.path.isdir(path):
        raise ReportError(f"{path}: not a directory or a trace file")
    names = sorted(n for n in os.listdir(path)
                   if n.startswith(FILE_PREFIX) and n.endswith(FILE_SUFFIX))
    if not names:
        raise ReportError(f"{path}: no {FILE_PREFIX}<pid>{FILE_SUFFIX} files here "
                          f"(run the program with FRAMEJIT_TRACE_DIR={path})")
    return [os.path.join(path, n) for n in names]


def read_file(path):
    """(records, notes) of one trace file.  A last line cut short (a process
    killed while writing it) is a note; any other bad line is a ReportError."""
    records, notes = [], []
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ReportError(f"{path}: cannot read: {e.strerror or e}") from None
    lines = data.split(b"\n")
    for i, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        last = i == len(lines)  # no newline after it: the write did not finish
        try:
            rec = json.loads(raw.decode("utf-8", "surrogatepass"))
        except (UnicodeDecodeError, ValueError) as e:
            if last:
                notes.append(f"{os.path.basename(path)}: line {i} is incomplete (the process "
                             "ended while writing it) and was left out")
                continue
            raise ReportError(f"{path}:{i}: not a JSON line of a framejit trace ({e})") from None
        if not isinstance(rec, dict) or not isinstance(rec.get("kind"), str):
            raise ReportError(f"{path}:{i}: not a framejit trace record (a JSON object with a "
                              f"'kind' is expected)")
        if rec["kind"] == "process" and rec.get("schema") != SCHEMA:
            raise ReportError(f"{path}:{i}: trace schema {rec.get('schema')!r}; this framejit "
                              f"reads schema {SCHEMA}")
        records.append(rec)
    if not records:
        raise ReportError(f"{path}: empty trace file")
    if records[0]["kind"] != "process":
        raise ReportError(f"{path}:1: the first record is {records[0]['kind']!r}, not 'process': "
                          "not a framejit trace file")
    return records, notes


def _num(x):
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) else 0


def _base(cid):
    """'0/1' of compile id '0/1_2' (the attempts of one compile)."""
    return str(cid).split("_", 1)[0]


class Process:
    """One process's trace, gathered by frame and compile."""

    def __init__(self, path, records, notes):
        self.path = path
        self.info = records[0]
        self.pid = self.info.get("pid", "?")
        self.notes = notes
        self.frames = []       # 'frame' records with a compile id, in order
        self.uncompiled = []   # 'frame' records without one (skipped before a compile id)
        self.by_compile = {}   # base compile id -> {"kind": [records]}
        self.events = []       # records without a compile id (limits, graph raised...)
        self.counters = None
        epoch = 0              # framejit.reset() calls so far: compile ids start again
        for r in records[1:]:
            kind = r["kind"]
            cid = r.get("compile_id")
            r["_epoch"] = epoch
            if kind == "reset":
                epoch += 1
            elif kind == "counters":
                self.counters = r.get("counters") if isinstance(r.get("counters"), dict) else {}
            elif kind == "frame" and cid is None:
                self.uncompiled.append(r)
            elif cid is None:
                self.events.append(r)
            else:
                if kind == "frame":
                    self.frames.append(r)
                self.by_compile.setdefault(_key(r), {}).setdefault(kind, []).append(r)

    def of(self, rec, kind):
        """The records of 'kind' of the compile 'rec' belongs to."""
        return self.by_compile.get(_key(rec), {}).get(kind, [])


def _key(rec):
    """A compile's key: its compile id without the attempt, after how many resets."""
    return (rec.get("_epoch", 0), _base(rec.get("compile_id")))


def _cid(rec):
    """A record's compile id as the page shows it (with the reset it follows)."""
    ep = rec.get("_epoch", 0)
    return f"{rec.get('compile_id')}" + (f" (after reset {ep})" if ep else "")


def load(path):
    """The Processes of 'path'; a ReportError when there is nothing to show."""
    procs = []
    for f in trace_files(path):
        records, notes = read_file(f)
        procs.append(Process(f, records, notes))
    return procs


# ----------------------------------------------------------------- rendering

def esc(x):
    return html.escape(str(x), quote=True)


def _secs(s):
    s = _num(s)
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.0f} us"


def _arg(a):
    if isinstance(a, dict) and set(a) == {"node"}:
        return str(a["node"])
    if isinstance(a, list):
        return "(" + ", ".join(_arg(x) for x in a) + ("," if len(a) == 1 else "") + ")"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k}: {_arg(v)}" for k, v in a.items()) + "}"
    return repr(a) if isinstance(a, str) else str(a)


def _anchor(*parts):
    return "-".join(str(p).replace("/", "_") for p in parts)


CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header{background:#1f3a5f;color:#fff;padding:14px 24px}
header h1{margin:0;font-size:20px}
main{padding:8px 24px 40px;max-width:1400px}
h2{border-bottom:2px solid #1f3a5f;padding-bottom:2px;margin-top:28px}
h3{margin:18px 0 6px}
table{border-collapse:collapse;margin:6px 0}
th,td{border:1px solid #d0d4da;padding:2px 8px;text-align:left;vertical-align:top}
th{background:#eef1f5}
td.num{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:#f3f4f6;border:1px solid #d0d4da;padding:8px;overflow-x:auto;margin:4px 0}
.bar{display:inline-block;height:10px;background:#4c78a8;vertical-align:middle}
.fn{background:#fff;border:1px solid #d0d4da;border-radius:6px;padding:4px 16px 12px;margin:16px 0;overflow-x:auto}
table.graph-table td{word-break:break-word;max-width:32em}
.compile{border-left:4px solid #4c78a8;padding:2px 12px;margin:10px 0;background:#fcfcfd}
.compile.own_code,.compile.unless_arrays{border-left-color:#999}
.compile.skipped,.compile.error,.compile.run_only{border-left-color:#c0392b}
table.src{border:none;width:100%}
table.src td{border:none;padding:0 6px;white-space:pre;font:12.5px/1.45 ui-monospace,Menlo,Consolas,monospace}
table.src td.ln{color:#888;text-align:right;width:3em;user-select:none}
table.src td.mk{width:9em;color:#555;font-size:11px}
tr.cap td.code{background:#e3f4e1}
tr.brk td.code{background:#fbdcdc}
tr.nog td.code{background:#eeeeee}
tr.note td{color:#a12b2b;font-size:12px;white-space:normal;padding-left:2em}
.legend span{display:inline-block;padding:0 6px;margin-right:8px;border:1px solid #ccc}
.reason{color:#a12b2b}
ul.guards{margin:2px 0 2px 0;padding-left:18px}
ul.guards li{list-style:square}
details>summary{cursor:pointer}
.muted{color:#777}
#filter{padding:3px 6px;width:24em}
svg text{font:11px system-ui,sans-serif}
"""

JS = """
function filterIndex(q){q=q.toLowerCase();
 for(const r of document.querySelectorAll('#index tbody tr')){
  r.style.display=r.textContent.toLowerCase().includes(q)?'':'none';}}
function setAll(open){for(const d of document.querySelectorAll('details.fold'))d.open=open;}
"""


class Renderer:
    def __init__(self, procs, title):
        self.procs = procs
        self.title = title
        self.out = []

    def w(self, *parts):
        self.out.extend(parts)

    def render(self):
        multi = len(self.procs) > 1
        self.w("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
               f"<title>{esc(self.title)}</title><style>{CSS}</style>",
               f"<script>{JS}</script></head><body>")
        self.w(f"<header><h1>framejit report: {esc(self.title)}</h1></header><main>")
        self.summary()
        self.timeline()
        self.index(multi)
        for p in self.procs:
            self.functions(p, multi)
        self.uncompiled()
        self.kernels()
        self.counters()
        self.w("</main></body></html>\n")
        return "".join(self.out)

    # -- the top of the page

    def summary(self):
        self.w("<h2 id=\"processes\">Processes</h2><table><thead><tr><th>pid</th><th>command</th>"
               "<th>python</th><th>config.backend</th><th>frames compiled</th><th>graphs</th>"
               "<th>graph breaks</th><th>recompiles</th><th>compile time</th></tr></thead><tbody>")
        for p in self.procs:
            info = p.info
            parent = info.get("forked_from")
            argv = " ".join(str(a) for a in info.get("argv") or [])
            graphs = sum(len(k.get("graph", [])) for k in p.by_compile.values())
            breaks = sum(len(k.get("break", [])) for k in p.by_compile.values())
            recs = sum(len(k.get("recompile", [])) for k in p.by_compile.values())
            total = sum(_num(f.get("seconds")) for f in p.frames)
            fork = f" <span class=\"muted\">(forked from {esc(parent)})</span>" if parent else ""
            self.w(f"<tr><td>{esc(p.pid)}{fork}</td><td><code>{esc(argv)}</code></td>"
                   f"<td>{esc(info.get('python', ''))}</td><td>{esc(info.get('backend', ''))}</td>"
                   f"<td class=\"num\">{len(p.frames)}</td><td class=\"num\">{graphs}</td>"
                   f"<td class=\"num\">{breaks}</td><td class=\"num\">{recs}</td>"
                   f"<td class=\"num\">{_secs(total)}</td></tr>")
        self.w("</tbody></table>")
        for p in self.procs:
            for n in p.notes:
                self.w(f"<p class=\"reason\">{esc(n)}</p>")

    def timeline(self):
        """An SVG: per process, each compile a bar from its start to its end."""
        spans = []
        for row, p in enumerate(self.procs):
            for f in p.frames:
                end = _num(f.get("t"))
                spans.append((row, max(0.0, end - _num(f.get("seconds"))), end, p, f))
        self.w("<h2 id=\"timeline\">Timeline of compile time</h2>")
        if not spans:
            self.w("<p class=\"muted\">No compile recorded.</p>")
            return
        t_max = max(s[2] for s in spans) or 1e-9
        width, left, rowh = 1100, 80, 26
        height = rowh * len(self.procs) + 30
        self.w(f"<svg id=\"timeline-svg\" viewBox=\"0 0 {width + left + 40} {height}\" "
               f"style=\"width:100%;max-width:{width + left + 40}px\" "
               f"role=\"img\" aria-label=\"compile timeline\">")
        for row, p in enumerate(self.procs):
            y = row * rowh + 4
            self.w(f"<text x=\"2\" y=\"{y + 14}\">pid {esc(p.pid)}</text>"
                   f"<line x1=\"{left}\" x2=\"{left + width}\" y1=\"{y + 10}\" y2=\"{y + 10}\" "
                   "stroke=\"#ddd\"/>")
        colors = {"compiled": "#4c78a8", "own_code": "#999", "unless_arrays": "#bbb"}
        for row, start, end, p, f in spans:
            x = left + start / t_max * width
            wd = max(1.5, (end - start) / t_max * width)
            color = colors.get(f.get("outcome"), "#c0392b")
            tip = (f"{_cid(f)} {f.get('name')} ({os.path.basename(str(f.get('file')))}:"
                   f"{f.get('line')}): {_secs(f.get('seconds'))}, {f.get('outcome')}")
            self.w(f"<a href=\"#{esc(_anchor('c', p.pid, f['_epoch'], f.get('compile_id')))}\">"
                   f"<rect class=\"span\" x=\"{x:.1f}\" y=\"{row * rowh + 6}\" width=\"{wd:.1f}\" "
                   f"height=\"16\" fill=\"{color}\"><title>{esc(tip)}</title></rect></a>")
        y = rowh * len(self.procs) + 20
        for i in range(6):
            x = left + width * i / 5
            self.w(f"<text x=\"{x:.0f}\" y=\"{y}\" text-anchor=\"middle\">{esc(_secs(t_max * i / 5))}"
                   "</text>")
        self.w("</svg><p class=\"muted\">Time since the process's trace began; each bar is one "
               "compile (blue: compiled code, grey: the frame's own code, red: not compiled). "
               "Hover for the frame, click to go to it.</p>")

    def index(self, multi):
        rows = []
        for p in self.procs:
            by_frame = {}
            for f in p.frames:
                key = (f["_epoch"], str(f.get("compile_id")).split("/", 1)[0])
                by_frame.setdefault(key, []).append(f)
            for (epoch, fid), fs in by_frame.items():
                cost = sum(_num(f.get("seconds")) for f in fs)
                breaks = sum(len(p.of(f, "break")) for f in fs)
                graphs = sum(len(p.of(f, "graph")) for f in fs)
                recs = sum(len(p.of(f, "recompile")) for f in fs)
                if epoch:
                    fid = f"{fid} (after reset {epoch})"
                rows.append((cost, p, fid, fs[0], len(fs), graphs, breaks, recs))
        rows.sort(key=lambda r: -r[0])
        top = rows[0][0] if rows and rows[0][0] > 0 else 1.0
        self.w("<h2 id=\"index\">Frames by compile cost</h2>"
               "<p><input id=\"filter\" placeholder=\"filter (name, file...)\" "
               "oninput=\"filterIndex(this.value)\"> "
               "<button onclick=\"setAll(true)\">expand all</button> "
               "<button onclick=\"setAll(false)\">collapse all</button></p>")
        if not rows:
            self.w("<p class=\"muted\">No frame was compiled.</p>")
            return
        pid_h = "<th>pid</th>" if multi else ""
        self.w(f"<table id=\"index\"><thead><tr>{pid_h}<th>frame</th><th>function</th><th>where</th>"
               "<th>compiles</th><th>graphs</th><th>breaks</th><th>recompiles</th>"
               "<th>compile time</th></tr></thead><tbody>")
        for cost, p, fid, f, n, graphs, breaks, recs in rows:
            pid_c = f"<td>{esc(p.pid)}</td>" if multi else ""
            link = _anchor("fn", p.pid, f.get("file"), f.get("line"))
            bar = max(1, int(120 * cost / top))
            self.w(f"<tr>{pid_c}<td>{esc(fid)}</td><td><a href=\"#{esc(link)}\">{esc(f.get('name'))}"
                   f"</a></td><td><code>{esc(f.get('file'))}:{esc(f.get('line'))}</code></td>"
                   f"<td class=\"num\">{n}</td><td class=\"num\">{graphs}</td>"
                   f"<td class=\"num\">{breaks}</td><td class=\"num\">{recs}</td>"
                   f"<td class=\"num\"><span class=\"bar\" style=\"width:{bar}px\"></span> "
                   f"{_secs(cost)}</td></tr>")
        self.w("</tbody></table>")

    # -- per function

    def functions(self, p, multi):
        groups = {}
        for f in p.frames:
            groups.setdefault((str(f.get("file")), _num(f.get("line"))), []).append(f)
        order = sorted(groups.items(), key=lambda kv: -sum(_num(f.get("seconds")) for f in kv[1]))
        title = f"Functions (pid {esc(p.pid)})" if multi else "Functions"
        self.w(f"<h2 id=\"{esc(_anchor('functions', p.pid))}\">{title}</h2>")
        for (file, line), fs in order:
            self.function(p, file, line, fs)

    def function(self, p, file, line, fs):
        orig = next((f for f in fs if f.get("resume_line") is None), fs[0])
        name = orig.get("co_name") if orig.get("resume_line") is None else orig.get("name")
        cost = sum(_num(f.get("seconds")) for f in fs)
        self.w(f"<section class=\"fn\" id=\"{esc(_anchor('fn', p.pid, file, line))}\">"
               f"<h3>{esc(name)} <span class=\"muted\"><code>{esc(file)}:{esc(line)}</code>: "
               f"{len(fs)} compile{'s' if len(fs) != 1 else ''}, {_secs(cost)}</span></h3>")
        self.source(p, file, fs)
        for f in fs:
            self.compile(p, f)
        self.w("</section>")

    def source(self, p, file, fs):
        """The function's lines, captured regions and breaks marked."""
        first = min(_num(f.get("line")) for f in fs)
        last = max(_num(f.get("last_line")) for f in fs)
        lines = linecache.getlines(file) if file and not file.startswith("<") else []
        if not lines or last > len(lines):
            self.w(f"<p class=\"muted\">Source not available ({esc(file)} could not be read).</p>")
            return
        captured, breaks, nograph = {}, {}, {}
        for f in fs:
            cid = str(f.get("compile_id"))
            start = _num(f.get("resume_line")) or _num(f.get("line"))
            end = _num(f.get("last_line"))
            brk = [b for b in p.of(f, "break") if b.get("resumed")]
            for b in p.of(f, "break"):
                breaks.setdefault(_num(b.get("break_line")), []).append((cid, b))
            if brk:
                end = min(_num(b.get("break_line")) for b in brk) - 1
            graphs = p.of(f, "graph")
            lined = [n for g in graphs for n in (g.get("nodes") or [])
                     if isinstance(n, dict) and "line" in n]
            # lines with a graph operation (the node's line: the instruction that
            # made it, an inlined call's for the calls inside it); the rest of
            # the region was traced without one (folded into constants, guards)
            ops = set()
            for n in lined:
                if n.get("line") is not None:   # (an instruction over several lines: all of them)
                    lo = _num(n.get("line"))
                    hi = max(lo, min(_num(n.get("end_line")) or lo, lo + 500))
                    ops.update(range(lo, hi + 1))
            # the lines with code (after the prologue); traces before code_lines: all
            has_code = f.get("code_lines")
            has_code = set(has_code) if isinstance(has_code, list) else None
            for ln in range(start, end + 1):
                if has_code is not None and ln not in has_code and ln not in ops:
                    continue   # a decorator, the def, a blank or comment line: no code
                if not graphs:
                    nograph.setdefault(ln, set()).add(_base(cid))
                elif ln in ops or not lined:  # (traces before nodes had lines: the region)
                    captured.setdefault(ln, set()).add(_base(cid))
                else:
                    nograph.setdefault(ln, set()).add(_base(cid))
            for ln in ops - set(range(start, end + 1)):
                captured.setdefault(ln, set()).add(_base(cid))
        self.w("<details class=\"fold\" open><summary>source</summary>"
               "<p class=\"legend\"><span style=\"background:#e3f4e1\">captured in a graph</span>"
               "<span style=\"background:#fbdcdc\">graph break</span>"
               "<span style=\"background:#eee\">traced, no graph operation</span></p><table class=\"src\">")
        for ln in range(first, last + 1):
            text = lines[ln - 1].rstrip("\n")
            cls, mark, tip = "", "", ""
            blank = not text.strip() or text.lstrip().startswith("#")
            if blank and ln not in breaks:
                pass   # no instruction: nothing to mark
            elif ln in breaks:
                cls = "brk"
                mark = "break " + ", ".join(sorted({_base(c) for c, _ in breaks[ln]}))
                tip = "; ".join(str(b.get("reason")) for _, b in breaks[ln])
            elif ln in captured:
                cls, mark = "cap", "graph " + ", ".join(sorted(captured[ln]))
            elif ln in nograph:
                cls, mark = "nog", "traced " + ", ".join(sorted(nograph[ln]))
            self.w(f"<tr class=\"{cls}\" id=\"{esc(_anchor('L', p.pid, file, ln))}\" "
                   f"title=\"{esc(tip)}\"><td class=\"ln\">{ln}</td><td class=\"mk\">{esc(mark)}"
                   f"</td><td class=\"code\">{esc(text)}</td></tr>")
            seen = set()
            for _, b in breaks.get(ln, []):
                r = str(b.get("reason"))
                if r not in seen:
                    seen.add(r)
                    self.w(f"<tr class=\"note\"><td></td><td></td><td>&#9650; {esc(r)}</td></tr>")
        self.w("</table></details>")

    def compile(self, p, f):
        cid = _cid(f)
        outcome = str(f.get("outcome"))
        ph = f.get("phases") if isinstance(f.get("phases"), dict) else {}
        self.w(f"<div class=\"compile {esc(outcome)}\" id=\"{esc(_anchor('c', p.pid, f['_epoch'], f.get('compile_id')))}\">"
               f"<h4>[{esc(cid)}] {esc(f.get('name'))}: {esc(outcome)} "
               f"<span class=\"muted\">({esc(OUTCOMES.get(outcome, ''))})</span></h4>")
        self.w(f"<p>compile {_secs(f.get('seconds'))}: trace {_secs(ph.get('trace'))}, backend "
               f"{_secs(ph.get('backend'))}, the rest (guards, code generation, hooks) "
               f"{_secs(ph.get('other'))}; {esc(f.get('attempts'))} trace attempt(s)")
        native = f.get("native")
        if isinstance(native, dict) and native:
            self.w("; native backend: " + ", ".join(f"{esc(k)} {esc(v)}" for k, v in native.items()))
        self.w("</p>")
        for r in p.of(f, "recompile"):
            self.w("<p><b>Recompile</b>, the guards that failed:</p><ul>")
            for fl in r.get("failures") or []:
                self.w(f"<li class=\"recompile\">entry {esc(fl.get('compile_id'))}: "
                       f"<code>{esc(fl.get('guard'))}</code></li>")
            self.w("</ul>")
        for b in p.of(f, "break"):
            how = ("resumed after it" if b.get("resumed") else "the frame runs whole in CPython")
            kind = b.get("break_kind")  # (traces before break kinds have none)
            self.w(f"<div class=\"break\"><b>Graph break</b> [{esc(b.get('compile_id'))}] at line "
                   f"{esc(b.get('break_line'))} ({how}): <span class=\"reason\">{esc(b.get('reason'))}"
                   f"</span>{f' <i>({esc(kind)})</i>' if kind else ''}"
                   f"<pre>{esc(b.get('message') or b.get('source'))}</pre>")
            stack = b.get("stack") or []
            if stack:
                self.w("<details><summary>user stack</summary><pre>")
                for s in stack:
                    inl = " (inlined)" if s.get("inlined") is True else ""
                    self.w(esc(f"  File \"{s.get('file')}\", line {s.get('line')}, in {s.get('name')}{inl}")
                           + "\n")
                self.w("</pre></details>")
            self.w("</div>")
        for n in p.of(f, "no_graph"):
            why = f" before a graph break: {n.get('reason')}" if n.get("reason") else ""
            self.w(f"<p class=\"no-graph\"><b>No graph</b>: no array operation captured{esc(why)}"
                   "</p>")
        for e in p.of(f, "internal_error"):
            self.w(f"<p class=\"reason\"><b>Internal error</b>: {esc(e.get('error'))}</p>"
                   f"<details><summary>traceback</summary><pre>{esc(e.get('traceback'))}</pre>"
                   "</details>")
        for g in p.of(f, "graph"):
            self.graph(g)
        for g in p.of(f, "guards"):
            self.w(f"<details class=\"fold guards\"><summary>guards [{esc(g.get('compile_id'))}]"
                   "</summary>")
            self.guard_tree(g.get("tree"))
            self.w("</details>")
        self.w("</div>")

    def graph(self, g):
        nodes = g.get("nodes") or []
        self.w(f"<details class=\"fold graph\" open><summary>graph [{esc(g.get('compile_id'))}]: "
               f"{len(nodes)} nodes, {esc(g.get('num_calls'))} calls</summary>"
               "<table class=\"graph-table\"><thead><tr><th>name</th><th>op</th><th>target</th>"
               "<th>args</th><th>kwargs</th><th>dtype</th><th>shape</th></tr></thead><tbody>")
        for n in nodes:
            meta = n.get("meta") if isinstance(n.get("meta"), dict) else {}
            kw = n.get("kwargs") or {}
            self.w(f"<tr><td><code>{esc(n.get('name'))}</code></td><td>{esc(n.get('op'))}</td>"
                   f"<td><code>{esc(n.get('target'))}</code></td>"
                   f"<td><code>{esc(_arg(n.get('args') or []))}</code></td>"
                   f"<td><code>{esc(_arg(kw) if kw else '')}</code></td>"
                   f"<td>{esc(meta.get('dtype', ''))}</td>"
                   f"<td>{esc(_arg(meta['shape']) if 'shape' in meta else '')}</td></tr>")
        self.w(f"</tbody></table><pre class=\"graph-code\">{esc(g.get('code'))}</pre></details>")

    def guard_tree(self, node):
        if not isinstance(node, dict):
            return
        self.w("<ul class=\"guards\">")
        for leaf in node.get("leaves") or []:
            self.w(f"<li class=\"guard\"><code>{esc(leaf)}</code></li>")
        for ch in node.get("children") or []:
            if not isinstance(ch, dict):
                continue
            self.w(f"<li><details open><summary><code>{esc(ch.get('source'))}</code></summary>")
            self.guard_tree(ch)
            self.w("</details></li>")
        self.w("</ul>")

    # -- the end of the page

    def uncompiled(self):
        rows = [(p, r) for p in self.procs for r in p.uncompiled]
        events = [(p, e) for p in self.procs for e in p.events]
        self.w("<h2 id=\"other\">Frames not compiled, and other events</h2>")
        if events:
            self.w("<table id=\"events\"><thead><tr><th>pid</th><th>event</th><th>function</th>"
                   "<th>where</th><th>what</th></tr></thead><tbody>")
            for p, e in events:
                what = e.get("error") or "; ".join(
                    f"{fl.get('compile_id')}: {fl.get('guard')}" for fl in e.get("failures") or [])
                self.w(f"<tr><td>{esc(p.pid)}</td><td>{esc(e.get('kind'))}</td>"
                       f"<td>{esc(e.get('name'))}</td><td><code>{esc(e.get('file'))}:"
                       f"{esc(e.get('line'))}</code></td><td>{esc(what)}</td></tr>")
            self.w("</tbody></table>")
        counts = {}
        for p, r in rows:
            key = (str(r.get("outcome")), str(r.get("name")), str(r.get("file")), r.get("line"))
            counts[key] = counts.get(key, 0) + 1
        self.w(f"<details class=\"fold\"><summary>{len(rows)} frames offered and not compiled "
               "(skip rules: the standard library, NumPy, framejit; module bodies; before NumPy "
               "was imported)</summary><table id=\"uncompiled\"><thead><tr><th>outcome</th>"
               "<th>function</th><th>where</th><th>times</th></tr></thead><tbody>")
        for (outcome, name, file, line), n in sorted(counts.items(), key=lambda kv: (kv[0][2], kv[0][3] or 0)):
            self.w(f"<tr><td>{esc(outcome)}</td><td>{esc(name)}</td><td><code>{esc(file)}:"
                   f"{esc(line)}</code></td><td class=\"num\">{n}</td></tr>")
        self.w("</tbody></table></details>")

    def kernels(self):
        """The native backend's kernel files: built by the C compiler or found
        in its disk cache (framejit/native.py build)."""
        rows = [(p, k) for p in self.procs for k in p.events if k.get("kind") == "kernel"]
        if not rows:
            return
        self.w("<h2 id=\"kernels\">Native kernels</h2><table><thead><tr><th>pid</th><th>file</th>"
               "<th>how</th><th>time</th><th>C source</th></tr></thead><tbody>")
        for p, k in rows:
            how = ("compiled" if k.get("compiled") else "disk cache hit") + (
                " (background)" if k.get("background") else " (the call waited)")
            self.w(f"<tr><td>{esc(p.pid)}</td><td><code>{esc(os.path.basename(str(k.get('path'))))}</code></td>"
                   f"<td>{esc(how)}</td><td class=\"num\">{esc(_secs(_num(k.get('seconds'))))}</td>"
                   f"<td class=\"num\">{esc(k.get('source_bytes'))} B</td></tr>")
        self.w("</tbody></table>")

    def counters(self):
        self.w("<h2 id=\"counters\">Counters at exit</h2>")
        for p in self.procs:
            if p.counters is None:
                self.w(f"<p class=\"muted\">pid {esc(p.pid)}: none recorded (the process did not "
                       "exit normally, or is still running)</p>")
                continue
            self.w(f"<details class=\"fold\" open><summary>pid {esc(p.pid)}</summary><table>"
                   "<thead><tr><th>group</th><th>counter</th><th>value</th></tr></thead><tbody>")
            for group, vals in sorted(p.counters.items()):
                if not isinstance(vals, dict):
                    continue
                for k, v in sorted(vals.items(), key=lambda kv: str(kv[0])):
                    self.w(f"<tr><td>{esc(group)}</td><td>{esc(k)}</td>"
                           f"<td class=\"num\">{esc(v)}</td></tr>")
            self.w("</tbody></table></details>")


def render(procs, title):
    """The HTML page (a str) for 'procs'."""
    return Renderer(procs, title).render()


def _parse(argv):
    """(path, out); raises SystemExit(2) on bad usage."""
    path, out = None, None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(USAGE)
            raise SystemExit(0)
        if a in ("-o", "--output"):
            if i + 1 >= len(argv):
                print(f"framejit report: {a} needs a file name\n{USAGE}", file=sys.stderr)
                raise SystemExit(2)
            out = argv[i + 1]
            i += 2
            continue
        if a.startswith("--output="):
            out = a.split("=", 1)[1]
        elif a.startswith("-") and a != "-":
            print(f"framejit report: unknown option {a!r}\n{USAGE}", file=sys.stderr)
            raise SystemExit(2)
        elif path is None:
            path = a
        else:
            print(f"framejit report: one DIR only (got {path!r} and {a!r})\n{USAGE}",
                  file=sys.stderr)
            raise SystemExit(2)
        i += 1
    if path is None:
        print(USAGE, file=sys.stderr)
        raise SystemExit(2)
    return path, out


def main(argv):
    """``python -m framejit report``: 0, 1 on bad input (said in one line), 2 on bad usage."""
    path, out = _parse(argv)
    try:
        procs = load(path)
        if out is None:
            out = os.path.join(path if os.path.isdir(path) else os.path.dirname(path) or ".",
                               "report.html")
        try:
            page = render(procs, os.path.abspath(path))
        except (TypeError, ValueError, AttributeError, KeyError, IndexError) as e:
            # a record whose fields are not what the trace writes (edited by hand,
            # or another tool's): one line naming the files, not a traceback
            files = ", ".join(sorted({str(p.path) for p in procs if getattr(p, "path", None)})) or path
            raise ReportError(f"{files}: a record's fields are not what framejit's trace writes "
                              f"({type(e).__name__}: {e})") from None
        try:
            with open(out, "w", encoding="utf-8") as f:
                f.write(page)
        except OSError as e:
            raise ReportError(f"{out}: cannot write the report: {e.strerror or e}") from None
    except ReportError as e:
        print(f"framejit report: {e}", file=sys.stderr)
        return 1
    for p in procs:
        for n in p.notes:
            print(f"framejit report: note: {n}", file=sys.stderr)
    print(out)
    return 0
