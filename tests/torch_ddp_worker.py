"""Worker of tests/test_torch_ddp.py: trains a small model wrapped in
DistributedDataParallel in 2 processes over gloo on localhost, eager or
compiled with framejit, and saves each rank's losses (and framejit's
counters) for the test to compare.

Run: python tests/torch_ddp_worker.py PORT COMPILED(0|1) OUT_PREFIX
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(8, 32), nn.Linear(32, 1)

    def forward(self, x):
        return self.b(F.relu(self.a(x)))


def step(m, x, y):
    return F.mse_loss(m(x), y)


def worker(rank, world, port, compiled, out):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    ddp = nn.parallel.DistributedDataParallel(Net())
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    fn = step
    if compiled:
        import framejit
        fn = framejit.compile(step, backend="eager")
    g = torch.Generator().manual_seed(rank)
    losses = []
    for _ in range(10):
        x, y = torch.randn(16, 8, generator=g), torch.randn(16, 1, generator=g)
        opt.zero_grad()
        loss = fn(ddp, x, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    stats = {}
    if compiled:
        import framejit
        stats = dict(framejit.counters["stats"])
    torch.save({"losses": losses, "stats": stats,
                "params": [p.detach().clone() for p in ddp.parameters()]}, f"{out}.{rank}")
    dist.destroy_process_group()


if __name__ == "__main__":
    import torch.multiprocessing as mp
    mp.spawn(worker, args=(2, int(sys.argv[1]), sys.argv[2] == "1", sys.argv[3]), nprocs=2)
