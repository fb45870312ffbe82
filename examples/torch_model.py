"""framejit example: a small torch model compiled with framejit.

    FRAMEJIT_TRACE_DIR=/tmp/trace python3 examples/torch_model.py [BACKEND]
    python3 -m framejit report /tmp/trace

An MLP whose forward has a graph break (a print of a tensor's shape) and a
data-dependent branch; called with a new batch size it recompiles.  The
backend is ``aot_eager`` (torch's, through framejit/torch_backends.py)
unless BACKEND names another (``eager``, ``inductor``...).
``make report-demo`` renders its report when torch is installed.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import framejit  # noqa: E402


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 4)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        print("hidden", tuple(h.shape))       # a graph break
        out = self.fc2(h)
        if out.sum() > 0:                      # a branch on a tensor's value
            out = out * 2
        return torch.softmax(out, dim=-1)


def main():
    backend = sys.argv[1] if len(sys.argv) > 1 else "aot_eager"
    torch.manual_seed(0)
    model = MLP().eval()
    compiled = framejit.compile(model, backend=backend)
    with torch.no_grad():
        for batch in (8, 8, 3):                # batch 3: a recompile
            x = torch.randn(batch, 16)
            got, want = compiled(x), model(x)
            assert torch.allclose(got, want, atol=1e-6), "framejit and eager torch differ"
    print(framejit.counters["stats"])


if __name__ == "__main__":
    main()
