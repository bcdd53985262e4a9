#!/usr/bin/python3
"""PyTorch anchor for ./lab bench dp: chapter 13's data-parallel MLP under torch DDP + gloo.

The same run as `mpirun -np N lesson_13 --check-steps 0 ...` times in its section 4:
  MLP 784-512-256-10 (ReLU), FashionMNIST (the first --limit-train images) scaled to [0, 1]
  then (x - 0.2860) / 0.3530; SGD lr 0.05 momentum 0.9; global batch --batch-size split over
  the ranks by torch's DistributedSampler; gradients averaged by DistributedDataParallel
  (gloo backend, its default 25 MB buckets, or --bucket-mb), one thread per rank.
The timed part is one epoch's training loop (forward, loss, backward with DDP's allreduce,
step), not the data loading, not the evaluation.

Run with Debian's python3-torch (torch.distributed with gloo):
  LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 \
      tests/bench/torch_ddp.py --ranks 2 --threads 1
Prints one RESULT line (rank 0), with the same fields as lesson_13's.
"""
import argparse
import gzip
import os
import socket
import sys
import time

import numpy as np


def read_idx(path, kind):
    if not os.path.exists(path):
        sys.exit(f"torch_ddp.py: {path} not found (install dataset-fashion-mnist or pass --data)")
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        data = f.read()
    if kind == "images":
        n, h, w = (int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(3))
        return np.frombuffer(data, np.uint8, n * h * w, 16).reshape(n, 1, h, w)
    return np.frombuffer(data, np.uint8, int.from_bytes(data[4:8], "big"), 8)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, args, port, x, y):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, TensorDataset
    from torch.utils.data.distributed import DistributedSampler

    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=args.ranks)
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                          nn.Linear(256, 10))
    ddp = DDP(model, bucket_cap_mb=args.bucket_mb)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    data = TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    sampler = DistributedSampler(data, num_replicas=args.ranks, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(data, batch_size=args.batch_size // args.ranks, sampler=sampler)
    loss_fn = nn.CrossEntropyLoss()
    sampler.set_epoch(0)
    batches = list(loader)  # the data in memory before the clock starts, as lesson_13's
    dist.barrier()
    t0 = time.perf_counter()
    for xb, yb in batches:
        opt.zero_grad()
        loss_fn(ddp(xb), yb).backward()  # DDP's hooks allreduce the buckets during backward
        opt.step()
    dist.barrier()
    seconds = time.perf_counter() - t0
    if rank == 0:
        steps = len(batches)
        print(f"RESULT framework=pytorch model=mlp ranks={args.ranks} threads={args.threads} steps={steps} "
              f"seconds={seconds:.3f} step_ms={1e3 * seconds / steps:.3f} "
              f"images_per_s={len(x) / seconds:.1f}", flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=128, help="global batch, all ranks together")
    p.add_argument("--limit-train", type=int, default=10000)
    p.add_argument("--bucket-mb", type=float, default=25.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", default=os.environ.get("HG_DATA", "/usr/share/datasets/fashion-mnist"))
    args = p.parse_args()
    x = read_idx(os.path.join(args.data, "train-images-idx3-ubyte.gz"), "images")[: args.limit_train]
    y = read_idx(os.path.join(args.data, "train-labels-idx1-ubyte.gz"), "labels")[: args.limit_train]
    x = ((x.astype(np.float32) / 255.0 - 0.2860) / 0.3530).copy()
    y = y.astype(np.int64).copy()
    import torch.multiprocessing as mp
    mp.spawn(worker, args=(args, free_port(), x, y), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    main()
