#!/usr/bin/python3
"""Reference fixture for tests/unit/test_gpt.cpp: a tiny GPT in PyTorch (Debian python3-torch).

Run from the repository root:   /usr/bin/python3 tests/reference/nn/make_gpt_fixture.py
It writes tests/reference/nn/gpt.json, which is committed; the C++ test needs no Python.

The model is nanoGPT's (Karpathy), written out here: the same modules, names and
computation as framework/nn/models/gpt.h, attention computed the explicit way (a causal
mask and a softmax). For two tiny configurations (head tied to the token embedding, and
untied) the fixture holds: the parameters by name, in named_parameters() order; one batch
of token ids and targets with T < block_size (so the unused position rows get no
gradient); the logits, the loss and every parameter's gradient; and the losses of three
AdamW steps on that batch.

The weights are drawn wider than GPT-2's N(0, 0.02²), so that attention is far from uniform
and the GELUs are far from linear: a test on near-zero weights would pass for many wrong
models. They are float32 values; the forward and backward run in float64, so the C++ test
can compare an F64 run tightly and an F32 run within float rounding.
"""
import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))


class CausalSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_head = c["n_head"]
        self.c_attn = nn.Linear(c["n_embd"], 3 * c["n_embd"])
        self.c_proj = nn.Linear(c["n_embd"], c["n_embd"])

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        att = F.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = nn.Linear(c["n_embd"], 4 * c["n_embd"])
        self.c_proj = nn.Linear(4 * c["n_embd"], c["n_embd"])

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c["n_embd"])
        self.attn = CausalSelfAttention(c)
        self.ln_2 = nn.LayerNorm(c["n_embd"])
        self.mlp = MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(c["vocab_size"], c["n_embd"]),
            wpe=nn.Embedding(c["block_size"], c["n_embd"]),
            h=nn.ModuleList([Block(c) for _ in range(c["n_layer"])]),
            ln_f=nn.LayerNorm(c["n_embd"])))
        self.lm_head = nn.Linear(c["n_embd"], c["vocab_size"], bias=False)
        if c["tied"]:
            self.transformer.wte.weight = self.lm_head.weight  # nanoGPT's weight tying

    def forward(self, idx):
        B, T = idx.shape
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(T))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


def randomise(model, gen):
    """Wide float32 weights (see the docstring); LayerNorm gains around 1."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name.endswith("ln_f.weight"):
                v = 0.5 + torch.rand(p.shape, generator=gen, dtype=torch.float64)
            elif name.endswith(".bias"):
                v = 0.2 * torch.randn(p.shape, generator=gen, dtype=torch.float64)
            else:
                v = 0.4 * torch.randn(p.shape, generator=gen, dtype=torch.float64)
            p.copy_(v.float().double())


def tensor_json(t):
    t = t.detach().contiguous()
    return {"shape": list(t.shape), "data": [float(v) for v in t.flatten().tolist()]}


def fixture(config, seed):
    gen = torch.Generator().manual_seed(seed)
    model = GPT(config).double()
    randomise(model, gen)
    B, T = 3, config["block_size"] - 1
    ids = torch.randint(0, config["vocab_size"], (B, T), generator=gen)
    targets = torch.randint(0, config["vocab_size"], (B, T), generator=gen)
    out = {"config": config, "B": B, "T": T,
           "ids": ids.flatten().tolist(), "targets": targets.flatten().tolist(),
           "param_order": [n for n, _ in model.named_parameters()],
           "params": {n: tensor_json(p) for n, p in model.named_parameters()}}
    logits = model(ids)
    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
    loss.backward()
    out.update({"logits": tensor_json(logits), "loss": loss.item(),
                "grads": {n: tensor_json(p.grad) for n, p in model.named_parameters()}})
    # AdamW on the same batch, in float32 as the C++ test runs it
    model32 = GPT(config)
    model32.load_state_dict({k: v.float() for k, v in model.state_dict().items()})
    opt = torch.optim.AdamW(model32.parameters(), lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    losses = []
    for _ in range(4):
        opt.zero_grad()
        l32 = F.cross_entropy(model32(ids).view(-1, config["vocab_size"]), targets.view(-1))
        losses.append(l32.item())
        l32.backward()
        opt.step()
    out["adamw"] = {"lr": 1e-2, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.1,
                    "losses": losses}
    return out


if __name__ == "__main__":
    tiny = {"n_layer": 2, "n_head": 2, "n_embd": 8, "block_size": 6, "vocab_size": 7}
    cases = [fixture(dict(tiny, tied=True), 1), fixture(dict(tiny, tied=False), 2)]
    path = os.path.join(HERE, "gpt.json")
    with open(path + ".tmp", "w") as f:
        json.dump({"generator": "tests/reference/nn/make_gpt_fixture.py", "torch": torch.__version__,
                   "cases": cases}, f, separators=(",", ":"))
    os.replace(path + ".tmp", path)
    print(f"{path}: {len(cases)} cases")
