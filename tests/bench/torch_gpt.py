#!/usr/bin/python3
"""PyTorch anchor for ./lab bench gpt: chapter 12's GPT, the same steps as bench_gpt.

bench_gpt --out DIR writes the initial weights (init.bin, float32 in named_parameters()
order, names and shapes in init.json), the configuration and recipe (init.json) and the
token ids of every step (batches.bin, int32). This script builds nanoGPT's model (the one of
tests/reference/nn/make_gpt_fixture.py: explicit causal mask and softmax, exact GELU, head
tied to the token embedding), loads those weights by name, and runs the same steps: AdamW
(betas 0.9, 0.99, weight decay on every parameter, as halfgrad's), the per-step learning
rates of init.json, gradient clipping, in the precision of init.json. It prints "step S
loss L" lines and a RESULT line, as bench_gpt does; the first two steps are not timed
(allocation, warm-up).

precision amp_bf16 (bench_gpt --precision amp_bf16) is PyTorch's BF16 recipe on a CPU: the
forward pass and the loss inside torch.autocast("cpu", dtype=torch.bfloat16), no GradScaler.
What that region does to this model in PyTorch 1.13: every nn.Linear and both attention
matmuls (q·kᵀ, att·v) run in BF16 on oneDNN; the attention's scaling, mask, softmax and the
GELU follow their BF16 input (CPU autocast 1.13 has no F32 entry for softmax); the layer
norms see the F32 residual stream (F32 + BF16 is F32) and stay F32; cross_entropy is on the
F32 list. halfgrad's autocast runs softmax in F32 (the CUDA lists, framework/amp/policy.cpp),
so the two round in different places and their BF16 losses agree only to BF16's precision.
Before step 1, a forward and backward pass of step 1's batch (no step) checks that every
Linear output is BF16 and the loss F32 (check_step of torch_epoch.py) and names the oneDNN
kernels that ran.

  LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp /usr/bin/python3 \\
      tests/bench/torch_gpt.py DIR
"""
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference", "nn"))
from make_gpt_fixture import GPT  # noqa: E402  (nanoGPT's modules, written out once)
from torch_epoch import check_step  # noqa: E402  (this folder: the autocast dtype check)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: torch_gpt.py DIR (the folder bench_gpt --out wrote)")
    d = sys.argv[1]
    meta = json.load(open(os.path.join(d, "init.json")))
    torch.set_num_threads(int(meta["threads"]))  # Debian's default here is 1
    c = meta["config"]
    model = GPT(c)
    init = np.fromfile(os.path.join(d, "init.bin"), dtype=np.float32)
    state, at = {}, 0
    for p in meta["params"]:
        n = int(np.prod(p["shape"]))
        state[p["name"]] = torch.from_numpy(init[at:at + n].copy()).view(p["shape"])
        at += n
    if at != init.size:
        sys.exit(f"torch_gpt.py: init.bin holds {init.size} floats, init.json names {at}")
    if c["tied"]:
        state["lm_head.weight"] = state["transformer.wte.weight"]
    model.load_state_dict(state)
    B, T, steps = meta["B"], meta["T"], meta["steps"]
    ids = np.fromfile(os.path.join(d, "batches.bin"), dtype=np.int32).reshape(steps, 2, B, T)
    amp = meta.get("precision", "fp32") == "amp_bf16"

    def loss_fn(logits, y):
        return F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))

    print(f"pytorch {torch.__version__}, threads {torch.get_num_threads()}, {meta.get('precision', 'fp32')}", flush=True)
    first = (torch.from_numpy(ids[0, 0].astype(np.int64)), torch.from_numpy(ids[0, 1].astype(np.int64)))
    print(check_step(torch, torch.nn, model, loss_fn, [first], amp), flush=True)
    a = meta["adamw"]
    opt = torch.optim.AdamW(model.parameters(), lr=meta["lr"][0], betas=tuple(a["betas"]), eps=a["eps"],
                            weight_decay=a["weight_decay"])
    seconds = 0.0
    for s in range(steps):
        t0 = time.perf_counter()
        x = torch.from_numpy(ids[s, 0].astype(np.int64))
        y = torch.from_numpy(ids[s, 1].astype(np.int64))
        for g in opt.param_groups:
            g["lr"] = meta["lr"][s]
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):  # enabled=False: FP32, same step
            loss = loss_fn(model(x), y)
        loss.backward()  # BF16 has F32's range: no GradScaler
        torch.nn.utils.clip_grad_norm_(model.parameters(), meta["clip"])
        opt.step()
        dt = time.perf_counter() - t0
        if s >= 2:
            seconds += dt
        print(f"step {s + 1} loss {loss.item():.6f}", flush=True)
    ms = 1000.0 * seconds / (steps - 2) if steps > 2 else 0.0
    print(f"RESULT framework=pytorch torch={torch.__version__} precision={meta.get('precision', 'fp32')} ms_per_step={ms:.1f}")


if __name__ == "__main__":
    main()
