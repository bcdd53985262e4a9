#!/usr/bin/python3
"""PyTorch anchor for ./lab bench cpu: one epoch of chapter 02's models, timed the same way.

Same models, data and settings as lessons/02_fp32_training:
  MLP       784-512-256-10 (ReLU)
  SmallCNN  conv3x3(1->32, pad 1)-ReLU-maxpool2 - conv3x3(32->64, pad 1)-ReLU-maxpool2
            - fc(64*7*7 -> 128)-ReLU - fc(128 -> 10)
  FashionMNIST pixels scaled to [0, 1], then (x - 0.2860) / 0.3530; SGD lr 0.05, momentum
  0.9, batch 128, shuffled every epoch; PyTorch's default initialisation.
The timed part is the training loop of each epoch (shuffle, forward, loss, backward, step),
not loading the data and not the test evaluation — what lesson_02 times.

Run with Debian's python3-torch and the OpenMP OpenBLAS, two threads (see DESIGN.md):
  LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 \
      tests/bench/torch_epoch.py --model mlp --epochs 1 --threads 2
Prints the same RESULT line as lesson_02, with framework=pytorch in front.
"""
import argparse
import gzip
import os
import sys
import time

import numpy as np


def read_idx(path, kind):
    """IDX file (gzip or raw): images as uint8 (n, 28, 28) or labels as uint8 (n,)."""
    if not os.path.exists(path):
        sys.exit(f"torch_epoch.py: {path} not found (install dataset-fashion-mnist or pass --data)")
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    want = 0x00000803 if kind == "images" else 0x00000801
    if magic != want:
        sys.exit(f"torch_epoch.py: {path}: bad magic {magic:#010x}, expected {want:#010x}")
    if kind == "images":
        n, h, w = (int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(3))
        return np.frombuffer(data, np.uint8, n * h * w, 16).reshape(n, 1, h, w)
    n = int.from_bytes(data[4:8], "big")
    return np.frombuffer(data, np.uint8, n, 8)


def load(data_dir, train):
    prefix = "train" if train else "t10k"
    x = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"), "images")
    y = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"), "labels")
    x = (x.astype(np.float32) / 255.0 - 0.2860) / 0.3530
    return x, y.astype(np.int64)


def make_model(nn, name):
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256),
                             nn.ReLU(), nn.Linear(256, 10))
    if name == "smallcnn":
        return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
    sys.exit(f"torch_epoch.py: unknown --model '{name}' (mlp or smallcnn)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="mlp", help="mlp or smallcnn")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default=os.environ.get("HG_DATA", "/usr/share/datasets/fashion-mnist"))
    args = ap.parse_args()

    import torch
    import torch.nn as nn
    torch.set_num_threads(args.threads)  # its default here is 1 (DESIGN.md)
    torch.manual_seed(args.seed)

    xtr, ytr = load(args.data, True)
    xte, yte = load(args.data, False)
    xtr, ytr = torch.from_numpy(xtr.copy()), torch.from_numpy(ytr.copy())
    xte, yte = torch.from_numpy(xte.copy()), torch.from_numpy(yte.copy())

    model = make_model(nn, args.model)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    print(f"pytorch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"BLAS: {'OpenBLAS' if 'openblas' in torch.__config__.show().lower() or os.environ.get('LD_LIBRARY_PATH', '').find('openblas') >= 0 else 'default'}; "
          f"model {args.model}, {sum(p.numel() for p in model.parameters())} parameters", flush=True)

    seconds = []
    for epoch in range(args.epochs):
        model.train()
        t0 = time.perf_counter()
        perm = torch.randperm(xtr.shape[0])
        total_loss, batches = 0.0, 0
        for i in range(0, xtr.shape[0], args.batch_size):
            idx = perm[i:i + args.batch_size]
            x, y = xtr[idx], ytr[idx]
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            total_loss += loss.item()
            batches += 1
        seconds.append(time.perf_counter() - t0)
        model.eval()
        with torch.no_grad():
            correct = sum(int((model(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum())
                          for i in range(0, xte.shape[0], 1000))
        acc = correct / xte.shape[0]
        print(f"epoch {epoch + 1}/{args.epochs}  train loss {total_loss / batches:.4f}  "
              f"test acc {acc:.4f}  ({seconds[-1]:.2f} s)", flush=True)
    print(f"RESULT framework=pytorch model={args.model} precision=fp32 epochs={args.epochs} "
          f"seconds_per_epoch={sum(seconds) / len(seconds):.3f} test_accuracy={acc:.4f}")


if __name__ == "__main__":
    main()
