#!/usr/bin/python3
"""PyTorch anchor for ./lab bench cpu and ./lab bench amp: one epoch of the chapters' models, timed the same way.

Same models, data and settings as lessons/02_fp32_training and lessons/10_autocast_amp:
  MLP       784-512-256-10 (ReLU)
  SmallCNN  conv3x3(1->32, pad 1)-ReLU-maxpool2 - conv3x3(32->64, pad 1)-ReLU-maxpool2
            - fc(64*7*7 -> 128)-ReLU - fc(128 -> 10)
  FashionMNIST pixels scaled to [0, 1], then (x - 0.2860) / 0.3530 (the first --limit-train
  training and --limit-test test images, as halfgrad's --limit-train); SGD lr 0.05, momentum
  0.9, batch 128, shuffled every epoch; PyTorch's default initialisation.
The timed part is the training loop of each epoch (shuffle, forward, loss, backward, step),
not loading the data and not the test evaluation — what lesson_02 and lesson_10 time.

--precision amp_bf16 is PyTorch's recipe for BF16 mixed precision on a CPU: the forward pass
and the loss inside torch.autocast("cpu", dtype=torch.bfloat16), backward and the SGD step
outside, F32 weights, no GradScaler (BF16 has F32's range). What that region does in PyTorch
1.13: Linear, Conv2d and matmul cast their inputs and the F32 weights to BF16 and return
BF16, computed by oneDNN (brgemm on AMX tiles or VDPBF16PS where the CPU has them); ReLU
and max-pooling follow their BF16 input; cross_entropy is on autocast's F32 list, so the loss
is F32; the gradients reach the F32 weights through the casts, in F32. Before timing, one
forward and backward pass (no step) checks this — every Linear and Conv2d output BF16, the
loss F32 — and records which oneDNN kernels it ran; the script stops if a dtype is not what
the recipe says. The same pass runs for fp32 (every output F32), and shows the BLAS doing
FP32's Linear layers (no oneDNN kernel) and oneDNN its convolutions. The pass runs once per
batch shape of the epoch (128, and the last, smaller batch): oneDNN compiles a kernel the
first time it meets a shape (0.1–0.2 s for the MLP here), a one-time cost a one-epoch
timing would otherwise charge to the epoch. The evaluation runs under the same autocast as
training, as halfgrad's.

Run with Debian's python3-torch and the OpenMP OpenBLAS, two threads (see DESIGN.md):
  LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 \\
      tests/bench/torch_epoch.py --model mlp --epochs 1 --threads 2 [--precision amp_bf16]
Prints the same RESULT line as lesson_02 and lesson_10, with framework=pytorch in front.
"""
import argparse
import ctypes
import gzip
import os
import sys
import tempfile
import time

import numpy as np


def read_idx(path, kind, limit):
    """IDX file (gzip or raw): the first `limit` (-1: all) images as uint8 (n, 1, 28, 28) or labels as uint8 (n,)."""
    if not os.path.exists(path):
        sys.exit(f"torch_epoch.py: {path} not found (install dataset-fashion-mnist or pass --data)")
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    want = 0x00000803 if kind == "images" else 0x00000801
    if magic != want:
        sys.exit(f"torch_epoch.py: {path}: bad magic {magic:#010x}, expected {want:#010x}")
    n = int.from_bytes(data[4:8], "big")
    n = n if limit < 0 else min(n, limit)
    if kind == "images":
        h, w = (int.from_bytes(data[8 + 4 * i:12 + 4 * i], "big") for i in range(2))
        return np.frombuffer(data, np.uint8, n * h * w, 16).reshape(n, 1, h, w)
    return np.frombuffer(data, np.uint8, n, 8)


def load(data_dir, train, limit):
    prefix = "train" if train else "t10k"
    x = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"), "images", limit)
    y = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"), "labels", limit)
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


def onednn_kernels(torch, run):
    """Runs run() with oneDNN's verbose mode on; returns the kernels of its matmuls and
    convolutions as {"matmul": {"brg:avx512_core_amx_bf16", ...}, "convolution backward_weights": ...}.
    oneDNN prints one line per primitive it executes to the C library's stdout, which points
    to a temporary file for the length of run()."""
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile() as f:
        os.dup2(f.fileno(), 1)
        try:
            with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
                run()
        finally:
            libc.fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
        f.seek(0)
        text = f.read().decode(errors="replace")
    kernels = {}
    for line in text.splitlines():  # onednn_verbose,exec,cpu,PRIMITIVE,IMPLEMENTATION,PROP_KIND,...
        p = line.split(",")
        if len(p) > 5 and p[0] == "onednn_verbose" and p[1] == "exec" and p[3] in ("matmul", "convolution", "inner_product"):
            kind = p[3] if p[5] in ("undef", "forward_training", "forward_inference") else f"{p[3]} {p[5]}"
            kernels.setdefault(kind, set()).add(p[4])
    return kernels


def check_step(torch, nn, model, loss_fn, batches, amp):
    """A forward and backward pass (no optimizer step) of each (x, y) in batches: the dtypes
    autocast gives the Linear and Conv2d outputs and the loss must be the recipe's; returns a
    line saying what ran."""
    want = torch.bfloat16 if amp else torch.float32
    seen = []
    hooks = [m.register_forward_hook(lambda m, i, o: seen.append((type(m).__name__, o.dtype)))
             for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv2d))]
    loss_dtype = []

    def step():
        for x, y in batches:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
                loss = loss_fn(model(x), y)
            loss_dtype.append(loss.dtype)
            loss.backward()

    kernels = onednn_kernels(torch, step)
    for h in hooks:
        h.remove()
    model.zero_grad()
    wrong = [f"{name} gave {dt}" for name, dt in seen if dt != want]
    wrong += [f"the loss is {dt}" for dt in loss_dtype if dt != torch.float32]
    if wrong:
        sys.exit(f"torch_epoch.py: {'autocast' if amp else 'fp32'}: expected every Linear and Conv2d output "
                 f"{want} and the loss torch.float32; {', '.join(sorted(set(wrong)))}")
    layers = sorted({name for name, _ in seen})
    ran = "; ".join(f"{k} {', '.join(sorted(v))}" for k, v in sorted(kernels.items())) or "none (Linear on the BLAS)"
    return (f"{'autocast cpu bfloat16' if amp else 'fp32'}: {' and '.join(layers)} outputs {str(want)[6:]}, "
            f"the loss float32; oneDNN kernels it ran: {ran}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="mlp", help="mlp or smallcnn")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "amp_bf16"],
                    help="fp32, or amp_bf16: forward and loss under torch.autocast('cpu', dtype=torch.bfloat16)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit-train", type=int, default=-1, help="use only the first N training images (-1: all)")
    ap.add_argument("--limit-test", type=int, default=-1, help="use only the first N test images (-1: all)")
    ap.add_argument("--data", default=os.environ.get("HG_DATA", "/usr/share/datasets/fashion-mnist"))
    args = ap.parse_args()
    for flag in ("limit_train", "limit_test"):
        if getattr(args, flag) == 0 or getattr(args, flag) < -1:
            sys.exit(f"torch_epoch.py: --{flag.replace('_', '-')} {getattr(args, flag)}: a number of images >= 1, or -1 for all")
    amp = args.precision == "amp_bf16"

    import torch
    import torch.nn as nn
    torch.set_num_threads(args.threads)  # its default here is 1 (DESIGN.md)
    torch.manual_seed(args.seed)

    xtr, ytr = load(args.data, True, args.limit_train)
    xte, yte = load(args.data, False, args.limit_test)
    xtr, ytr = torch.from_numpy(xtr.copy()), torch.from_numpy(ytr.copy())
    xte, yte = torch.from_numpy(xte.copy()), torch.from_numpy(yte.copy())

    model = make_model(nn, args.model)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    print(f"pytorch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"BLAS: {'OpenBLAS' if 'openblas' in torch.__config__.show().lower() or os.environ.get('LD_LIBRARY_PATH', '').find('openblas') >= 0 else 'default'}; "
          f"model {args.model}, {sum(p.numel() for p in model.parameters())} parameters, {args.precision}", flush=True)
    shapes = [(xtr[:args.batch_size], ytr[:args.batch_size])]
    if xtr.shape[0] % args.batch_size and xtr.shape[0] > args.batch_size:
        shapes.append((xtr[-(xtr.shape[0] % args.batch_size):], ytr[-(xtr.shape[0] % args.batch_size):]))
    print(check_step(torch, nn, model, loss_fn, shapes, amp), flush=True)

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
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):  # enabled=False: FP32, same loop
                loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            total_loss += loss.item()
            batches += 1
        seconds.append(time.perf_counter() - t0)
        model.eval()
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            correct = sum(int((model(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum())
                          for i in range(0, xte.shape[0], 1000))
        acc = correct / xte.shape[0]
        print(f"epoch {epoch + 1}/{args.epochs}  train loss {total_loss / batches:.4f}  "
              f"test acc {acc:.4f}  ({seconds[-1]:.2f} s)", flush=True)
    print(f"RESULT framework=pytorch model={args.model} precision={args.precision} epochs={args.epochs} "
          f"seconds_per_epoch={sum(seconds) / len(seconds):.3f} test_accuracy={acc:.4f}")


if __name__ == "__main__":
    main()
