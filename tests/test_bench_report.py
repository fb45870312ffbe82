"""bench/report.py renders BENCHMARKS.md from result files written by
bench/_results.py (no timing: a sample result file made here)."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import _results  # noqa: E402
import report  # noqa: E402


def sample(results_dir):
    C = _results.column
    return _results.write(
        "recompile", "Recompiles and the cache", size="--quick",
        tables=[_results.table("sample table", [C("variant", "variant"), C("ns", "ns/call", ".0f"),
                                                C("ratio", "x plain", ".2f")],
                               [{"variant": "plain | call", "ns": 512.4, "ratio": 1.0},
                                {"variant": "8 entries", "ns": 700.0, "ratio": None}])],
        targets=[_results.target("a target", "1.5x", False), _results.target("info", "-", None)],
        notes=["a note"], data={"raw": [1, 2]}, argv=["bench/bench_recompile.py", "--quick"],
        path=os.path.join(results_dir, "recompile.json"))


def test_result_file_holds_command_commit_date_machine(tmp_path):
    with open(sample(str(tmp_path))) as fh:
        res = json.load(fh)
    assert res["name"] == "recompile"
    assert res["command"] == "python3 bench/bench_recompile.py --quick"
    assert res["date"].endswith("UTC")
    for key in ("cpu", "cores", "python", "numpy", "build"):
        assert key in res["machine"]
    assert "commit" in res  # None outside a git checkout
    assert res["data"] == {"raw": [1, 2]}


def test_report_renders_a_document(tmp_path):
    sample(str(tmp_path))
    out = tmp_path / "BENCHMARKS.md"
    assert report.main(["--results", str(tmp_path), "--out", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# framejit benchmarks")
    assert "make bench-report" in text
    assert "## Recompiles" in text
    assert "Run: `python3 bench/bench_recompile.py --quick`" in text
    assert "| plain \\| call | 512 | 1.00 |" in text      # formatted, the pipe escaped
    assert "| 8 entries | 700 |  |" in text
    assert "| a target | 1.5x | **no** |" in text
    assert "- a note" in text
    # the summary lists judged targets only, with a link to the section
    assert "(#recompiles)" in text and "| info |" not in text.split("## Build against build")[0]
    # every other benchmark says how to make its result file
    assert "No result file yet: run `python3 bench/native/bench_native.py`" in text
    assert "## Eager backend on large arrays" in text and "## Native backend" in text


def test_report_of_the_checked_in_results():
    """The committed result files render (each parses and has what the report reads)."""
    results = report.load(os.path.join(os.path.dirname(report.__file__), "results"))
    text = report.render(results)
    for name in results:
        assert f"`{results[name]['command']}`" in text
