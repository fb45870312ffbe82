"""The native benchmark's decision rules (bench/native/bench_native.py): the
paired sign test over rounds, and across processes with --procs."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "native"))
import bench_native as bn  # noqa: E402


def _row(native, peer):
    return {"ns": {"native": min(native), "numba": min(peer)}, "rounds_ns": {"native": native, "numba": peer},
            "errors": {}, "kernel": "c3", "dtype": "float32", "n": 100000}


def test_sign_p():
    assert bn._sign_p(0, 5) == pytest.approx(1 / 32)
    assert bn._sign_p(5, 5) == 1.0
    assert bn._sign_p(1, 6) == pytest.approx(7 / 64)


def test_rounds_test_without_processes():
    r = _row([11] * 15, [10] * 15)        # native lost every round
    assert bn.slower_p(r, "numba") == pytest.approx(2 ** -15)
    r = _row([10, 11] * 4, [10.5] * 8)     # won half
    assert bn.slower_p(r, "numba") > 0.5
    assert bn.slower_p(_row([11] * 4, [10] * 4), "numba") is None   # too few rounds


def test_processes_vote_with_their_median_round():
    # every round of each process lost by native, but only in 2 of 5 processes:
    # a per-process bias, not a slower kernel
    runs = []
    for k in range(5):
        slow = k < 2
        runs.append({"results": [_row([11 if slow else 9] * 15, [10] * 15)], "notes": [], "have": {}})
    m = bn.merge_procs(runs)
    r = m["results"][0]
    assert m["procs"] == 5 and len(r["proc_rounds_ns"]) == 5
    assert r["ns"] == {"native": 9, "numba": 10}
    assert bn.slower_p(r, "numba") == pytest.approx(bn._sign_p(3, 5))
    assert bn.slower_p_rounds(r, "numba") < 0.05   # the first process's rounds alone would say "slower"
    # lost in all five processes: slower (p = 1/32)
    runs = [{"results": [_row([11] * 15, [10] * 15)], "notes": [], "have": {}} for _ in range(5)]
    assert bn.slower_p(bn.merge_procs(runs)["results"][0], "numba") == pytest.approx(1 / 32)


def test_merge_keeps_errors_and_single_run():
    run = {"results": [_row([10] * 5, [10] * 5)], "notes": [], "have": {}}
    assert bn.merge_procs([run]) is run
    a = {"results": [dict(_row([10] * 5, [10] * 5), errors={"numexpr": "wrong result"})], "notes": [], "have": {}}
    b = {"results": [_row([10] * 5, [10] * 5)], "notes": [], "have": {}}
    assert bn.merge_procs([a, b])["results"][0]["errors"] == {"numexpr": "wrong result"}


def test_holm():
    assert bn.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert bn.holm([0.001] + [0.5] * 23) == pytest.approx([0.024] + [1.0] * 23)
    assert bn.holm([]) == []


def test_report_tests_every_cell_across_processes(capsys):
    # 24 cells at parity, one of which native lost in all 10 processes
    def run(k):
        rows = []
        for c in range(24):
            lose = c == 3 or (c + k) % 2 == 0
            rows.append(dict(_row([10.2 if lose else 9.8] * 15, [10.0] * 15), n=10 ** (3 + c % 4), kernel=f"k{c}"))
        return {"results": rows, "notes": [], "have": {"native": True, "numba": True, "numba_ieee": True, "numexpr": False},
                "threads": 1}
    m = bn.merge_procs([run(k) for k in range(10)])
    bn.targets({"one": m}, {"one": 10.0, "one_fresh": 8.0}, None)
    out = capsys.readouterr().out
    assert "NOT MET" in out and "1 slower: k3" in out
    m = bn.merge_procs([run(k) for k in range(5)])
    bn.targets({"one": m}, {"one": 10.0, "one_fresh": 8.0}, None)
    out = capsys.readouterr().out
    assert "none slower at 5%" in out and "lost in every process in: k3" in out


def test_bandwidth_uses_natives_best_of_its_own_calls():
    """At 1e8 the bandwidth figure takes native's best of BW_CALLS calls
    ("bw_ns", as the triad's best of 10 passes); without it the best round;
    merging processes keeps the best of their bw_ns."""
    row = {"ns": {"native": 3.0, "numba": 2.0}, "bw_ns": {"native": 2.5}}
    assert bn.bw_time(row, "native") == 2.5 and bn.bw_time(row, "numba") == 2.0
    assert bn.bw_time({"ns": {"native": 3.0}}, "native") == 3.0
    runs = [{"results": [{"ns": {"native": t}, "rounds_ns": {"native": [t]}, "bw_ns": {"native": b}}]}
            for t, b in ((3.0, 2.9), (2.8, 2.6), (3.1, 2.7))]
    merged = bn.merge_procs(runs)
    assert merged["results"][0]["bw_ns"] == {"native": 2.6} and merged["results"][0]["ns"] == {"native": 2.8}
