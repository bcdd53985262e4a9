#!/usr/bin/python3
"""Reference fixture for tests/unit/test_optim_param_steps.cpp, written by PyTorch (Debian python3-torch 1.13).

Run from the repository root:   /usr/bin/python3 tests/reference/nn/make_adam_param_steps.py
It writes tests/reference/nn/adam_param_steps.json, which is committed; the C++ test reads it
and needs no Python.

PyTorch's Adam and AdamW keep a step count per parameter (state['step']), and a parameter's
count grows only on the steps where it has a gradient; its bias corrections use its own
count. The fixture exercises exactly that: two parameters, four steps, and the second
parameter has no gradient (p.grad is None) on steps 1 and 2, so on step 3 PyTorch corrects
it with t = 1, not t = 3. Cases: Adam, Adam with weight decay (L2 inside the gradient) and
AdamW (decoupled decay, which also touches only parameters with a gradient).
Numbers are float32 values written as decimal doubles, so they read back exactly.
"""
import json
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(99)
torch.set_default_dtype(torch.float32)


def tensor_json(t):
    t = t.detach().to(torch.float32).contiguous()
    return {"shape": list(t.shape), "data": [float(v) for v in t.reshape(-1).tolist()]}


def fixture():
    p0 = torch.randn(3)
    p1 = torch.randn(2)
    steps = 4
    first_grad_of_p1 = 3  # p1.grad is None on steps 1 and 2
    grads0 = [torch.randn(3) for _ in range(steps)]
    grads1 = [torch.randn(2) if s + 1 >= first_grad_of_p1 else None for s in range(steps)]
    cases = {
        "adam": (torch.optim.Adam, dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)),
        "adam_wd": (torch.optim.Adam, dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)),
        "adamw": (torch.optim.AdamW, dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)),
    }
    out = {
        "p0": tensor_json(p0), "p1": tensor_json(p1),
        "grads0": [tensor_json(g) for g in grads0],
        "grads1": [tensor_json(g) if g is not None else None for g in grads1],
        "cases": {},
    }
    for name, (cls, kw) in cases.items():
        a = p0.clone().requires_grad_(True)
        b = p1.clone().requires_grad_(True)
        opt = cls([a, b], **kw)
        after, param_steps = [], []
        for s in range(steps):
            a.grad = grads0[s].clone()
            b.grad = grads1[s].clone() if grads1[s] is not None else None
            opt.step()
            after.append([tensor_json(a), tensor_json(b)])
            param_steps.append([int(opt.state[p]["step"]) if "step" in opt.state[p] else 0 for p in (a, b)])
        hp = {k: (list(v) if isinstance(v, tuple) else v) for k, v in kw.items()}
        out["cases"][name] = {"hyper": hp, "after": after, "param_steps": param_steps}
    return out


def main():
    path = os.path.join(HERE, "adam_param_steps.json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(fixture(), f, separators=(",", ":"))
        f.write("\n")
    os.replace(tmp, path)
    print(f"wrote {path} ({os.path.getsize(path)} bytes), torch {torch.__version__}")


if __name__ == "__main__":
    main()
