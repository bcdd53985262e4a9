#!/usr/bin/python3
"""PyTorch anchor for ./lab bench dp: chapter 13's data-parallel training under torch DDP + gloo.

The same runs as `mpirun -np N lesson_13 --check-steps 0 ...` times in its section 4:
  --model mlp (default): MLP 784-512-256-10 (ReLU), FashionMNIST (the first --limit-train
    images) scaled to [0, 1] then (x - 0.2860) / 0.3530; SGD lr 0.05 momentum 0.9; global
    batch --batch-size (128) split over the ranks by torch's DistributedSampler; one epoch.
  --model gpt: chapter 12's GPT as tests/bench/torch_gpt.py builds it (nanoGPT's modules from
    tests/reference/nn/make_gpt_fixture.py, head tied to the token embedding), chapter 13's
    default size (--n-layer 2 --n-head 4 --n-embd 128 --block-size 64); the fortunes corpus
    as characters; --steps global batches of --batch-size (16) random windows, rank k taking
    windows k, k+N, ... of each (as halfgrad's DistributedTextSampler); AdamW lr 2e-3,
    betas (0.9, 0.99), weight decay 0.1, the gradient norm clipped to 1. The windows are drawn
    by numpy, not by halfgrad's generator: the same amount of work, not the same text.
Gradients are averaged by DistributedDataParallel (gloo backend, its default 25 MB buckets,
or --bucket-mb), one thread per rank. The timed part is the training loop (forward, loss,
backward with DDP's allreduce, step), not the data loading, not the evaluation.

Run with Debian's python3-torch (torch.distributed with gloo):
  LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 \\
      tests/bench/torch_ddp.py --ranks 2 --threads 1 [--model gpt]
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


def read_text(args):
    """The fortunes corpus (every plain text file of the folder, not the *.dat indexes or *.u8
    links, in name order) or --text, as one string."""
    if args.text:
        paths = [args.text]
    else:
        d = args.fortunes
        if not os.path.isdir(d):
            sys.exit(f"torch_ddp.py: {d} not found (install fortunes and fortunes-min, or pass --text)")
        paths = [os.path.join(d, n) for n in sorted(os.listdir(d))
                 if not n.endswith((".dat", ".u8")) and os.path.isfile(os.path.join(d, n))
                 and not os.path.islink(os.path.join(d, n))]
    return "".join(open(p, encoding="utf-8", errors="replace").read() for p in paths)


def gpt_worker(rank, args, port, tokens, vocab_size):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference", "nn"))
    from make_gpt_fixture import GPT  # noqa: E402  (nanoGPT's modules, as torch_gpt.py)

    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=args.ranks)
    torch.manual_seed(args.seed)
    c = {"n_layer": args.n_layer, "n_head": args.n_head, "n_embd": args.n_embd, "block_size": args.block_size,
         "vocab_size": vocab_size, "tied": True}
    model = GPT(c)
    ddp = DDP(model, bucket_cap_mb=args.bucket_mb)
    opt = torch.optim.AdamW(ddp.parameters(), lr=2e-3, betas=(0.9, 0.99), weight_decay=0.1)
    B, T = args.batch_size, args.block_size
    # Global batch s: B window offsets drawn with (seed, s); this rank keeps every N-th window.
    batches = []
    for s in range(args.steps):
        offsets = np.random.default_rng([args.seed, s]).integers(0, len(tokens) - T, B)[rank::args.ranks]
        x = np.stack([tokens[o:o + T] for o in offsets]).astype(np.int64)
        y = np.stack([tokens[o + 1:o + T + 1] for o in offsets]).astype(np.int64)
        batches.append((torch.from_numpy(x), torch.from_numpy(y)))
    dist.barrier()
    t0 = time.perf_counter()
    for xb, yb in batches:
        opt.zero_grad(set_to_none=True)
        logits = ddp(xb)
        F.cross_entropy(logits.view(-1, logits.size(-1)), yb.view(-1)).backward()  # DDP allreduces the buckets
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    dist.barrier()
    seconds = time.perf_counter() - t0
    if rank == 0:
        steps = len(batches)
        print(f"RESULT framework=pytorch model=gpt ranks={args.ranks} threads={args.threads} steps={steps} "
              f"seconds={seconds:.3f} step_ms={1e3 * seconds / steps:.3f} "
              f"tokens_per_s={steps * B * T / seconds:.1f}", flush=True)
    dist.destroy_process_group()


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
    p.add_argument("--model", choices=["mlp", "gpt"], default="mlp")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch-size", type=int, help="global batch, all ranks together (mlp 128, gpt 16)")
    p.add_argument("--limit-train", type=int, default=10000, help="mlp: the first N training images (-1: all)")
    p.add_argument("--bucket-mb", type=float, default=25.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", default=os.environ.get("HG_DATA", "/usr/share/datasets/fashion-mnist"))
    p.add_argument("--steps", type=int, default=100, help="gpt: optimizer steps")
    p.add_argument("--n-layer", type=int, default=2)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--n-embd", type=int, default=128)
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--text", help="gpt: a UTF-8 text file (default: the fortunes corpus)")
    p.add_argument("--fortunes", default="/usr/share/games/fortunes")
    args = p.parse_args()
    import torch.multiprocessing as mp
    if args.model == "gpt":
        args.batch_size = args.batch_size or 16
        text = read_text(args)
        vocab = sorted(set(text))
        index = {ch: i for i, ch in enumerate(vocab)}
        tokens = np.fromiter((index[ch] for ch in text), dtype=np.int32, count=len(text))
        mp.spawn(gpt_worker, args=(args, free_port(), tokens, len(vocab)), nprocs=args.ranks, join=True)
        return
    args.batch_size = args.batch_size or 128
    n = None if args.limit_train < 0 else args.limit_train  # -1: all, as lesson_13's flag
    x = read_idx(os.path.join(args.data, "train-images-idx3-ubyte.gz"), "images")[:n]
    y = read_idx(os.path.join(args.data, "train-labels-idx1-ubyte.gz"), "labels")[:n]
    x = ((x.astype(np.float32) / 255.0 - 0.2860) / 0.3530).copy()
    y = y.astype(np.int64).copy()
    mp.spawn(worker, args=(args, free_port(), x, y), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    main()
