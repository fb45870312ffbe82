"""DistributedDataParallel in 2 processes (gloo, localhost), compiled with
framejit, gives the same losses and parameters as eager DDP (issue 19)."""
import os
import socket
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the torch tests need it "
                                            "(make deps installs torch==2.13.0 on CPython 3.11 x86_64)")
if not torch.distributed.is_available():
    pytest.skip("this torch build has no torch.distributed", allow_module_level=True)

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def train(compiled, out):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for attempt in range(2):
        r = subprocess.run([sys.executable, os.path.join(HERE, "torch_ddp_worker.py"), str(free_port()),
                            "1" if compiled else "0", out], env=env, capture_output=True, text=True,
                           timeout=300)
        # KNOWN DEFECT (issue 21's note, session 18): now and then a spawned worker aborts
        # with "terminate called without an active exception" (SIGABRT; also at 1c549ef,
        # never when the worker runs alone).  Until it is understood and fixed, that one
        # signature is run again once, on a fresh port; any other failure fails the test
        if r.returncode == 0 or "terminate called without an active exception" not in r.stderr:
            break
    assert r.returncode == 0, r.stderr[-3000:]
    return [torch.load(f"{out}.{rank}") for rank in (0, 1)]


def test_ddp_two_processes_same_losses_as_eager(tmp_path):
    eager = train(False, str(tmp_path / "eager"))
    fj = train(True, str(tmp_path / "fj"))
    for rank in (0, 1):
        assert fj[rank]["losses"] == eager[rank]["losses"], rank
        for a, b in zip(fj[rank]["params"], eager[rank]["params"]):
            assert torch.equal(a, b)
        # the model's forward and the loss were captured (DDP's own hooks run in CPython)
        assert fj[rank]["stats"].get("calls_captured", 0) >= 4, fj[rank]["stats"]
    # gradients were averaged across the ranks: both end with the same parameters
    for a, b in zip(fj[0]["params"], fj[1]["params"]):
        assert torch.equal(a, b)
