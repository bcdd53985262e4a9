#!/usr/bin/python3
"""Write the PyTorch reference fixtures that tests/unit/test_ops*.cpp compare against.

Run from the repository root with Debian's python3-torch:

    /usr/bin/python3 tests/reference/ops/make_fixtures.py

Each case holds the op's inputs, an upstream gradient u, PyTorch's output y and the
gradients of L = sum(u * y) with respect to each input. Inputs are rounded to float32
values first, then everything is computed in float64, so the C++ tests can run the op in
F32 (and F64) on exactly the same numbers. The files are small and committed; the tests
need no Python.
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
gen = torch.Generator().manual_seed(20240601)


def rand(*shape, lo=-1.0, hi=1.0):
    x = torch.rand(tuple(shape), generator=gen, dtype=torch.float64) * (hi - lo) + lo
    return x.float().double()  # exactly representable in float32


def away_from_zero(x, gap=0.05):
    # keep kinks (relu at 0, max ties) out of reach of rounding
    return torch.where(x.abs() < gap, torch.full_like(x, 0.3), x)


def enc(t):
    return {"shape": list(t.shape), "data": [float(v) for v in t.detach().reshape(-1).tolist()]}


def case(name, op, fn, inputs, args=None, differentiable=None, extra=None):
    args = args or {}
    leaves = [x.clone().requires_grad_(differentiable is None or differentiable[i])
              for i, x in enumerate(inputs)]
    y = fn(*leaves)
    u = rand(*y.shape)
    (y * u).sum().backward()
    out = {"name": name, "op": op, "args": args,
           "inputs": [enc(x) for x in inputs],
           "upstream": enc(u), "output": enc(y),
           "grads": [enc(x.grad) if x.grad is not None else None for x in leaves]}
    if extra:
        out.update(extra)
    return out


def basic_cases():
    c = []
    a, b = rand(3, 4), rand(3, 4)
    row, col = rand(4), rand(3, 1)
    pos = rand(3, 4, lo=0.5, hi=2.0)
    c.append(case("add", "add", torch.add, [a, b]))
    c.append(case("add broadcast (3,4)+(4)", "add", torch.add, [a, row]))
    c.append(case("sub broadcast (3,1)-(4)", "sub", torch.sub, [col, row]))
    c.append(case("mul broadcast (3,1)*(3,4)", "mul", torch.mul, [col, a]))
    c.append(case("div", "div", torch.div, [a, pos]))
    c.append(case("add_scalar", "add_scalar", lambda x: x + 2.5, [a], {"s": 2.5}))
    c.append(case("mul_scalar", "mul_scalar", lambda x: x * -3.0, [a], {"s": -3.0}))
    c.append(case("rsub_scalar", "rsub_scalar", lambda x: 2.0 - x, [a], {"s": 2.0}))
    c.append(case("rdiv_scalar", "rdiv_scalar", lambda x: 3.0 / x, [pos], {"s": 3.0}))
    x = away_from_zero(rand(4, 5, lo=-3, hi=3))
    p = rand(4, 5, lo=0.2, hi=3)
    c.append(case("relu", "relu", F.relu, [x]))
    c.append(case("gelu", "gelu", F.gelu, [x]))
    c.append(case("sigmoid", "sigmoid", torch.sigmoid, [x]))
    c.append(case("tanh", "tanh", torch.tanh, [x]))
    c.append(case("exp", "exp", torch.exp, [x]))
    c.append(case("log", "log", torch.log, [p]))
    c.append(case("sqrt", "sqrt", torch.sqrt, [p]))
    c.append(case("pow", "pow", lambda t: t ** 2.5, [p], {"p": 2.5}))
    t3 = rand(2, 3, 4)
    c.append(case("sum", "sum", torch.sum, [t3]))
    c.append(case("mean", "mean", torch.mean, [t3]))
    for d in (0, 1, 2, -1):
        for keep in (False, True):
            c.append(case(f"sum dim {d} keepdim {keep}", "sum_dim",
                          lambda t, d=d, k=keep: t.sum(d, keepdim=k), [t3], {"dim": d, "keepdim": keep}))
            c.append(case(f"mean dim {d} keepdim {keep}", "mean_dim",
                          lambda t, d=d, k=keep: t.mean(d, keepdim=k), [t3], {"dim": d, "keepdim": keep}))
    c.append(case("reshape", "reshape", lambda t: t.reshape(4, 6), [t3], {"shape": [4, 6]}))
    c.append(case("flatten", "flatten", lambda t: t.flatten(1), [t3]))
    c.append(case("slice rows 1:3", "slice", lambda t: t[1:3], [rand(4, 3)], {"begin": 1, "end": 3}))
    c.append(case("neg", "neg", torch.neg, [a]))
    c.append(case("square", "square", torch.square, [a]))
    c.append(case("sub_scalar", "sub_scalar", lambda x: x - 0.75, [a], {"s": 0.75}))
    c.append(case("div_scalar", "div_scalar", lambda x: x / 4.0, [a], {"s": 4.0}))
    # casts: the forward rounds to the 16-bit format, the backward casts the gradient back
    wide = rand(3, 5, lo=-60000, hi=60000)  # large magnitudes: an FP16 ULP is up to 32 there
    for name, dt in (("f16", torch.float16), ("bf16", torch.bfloat16)):
        for inp in (a, wide):
            c.append(case(f"cast to {name} (|x| up to {float(inp.abs().max()):.0f})", "cast",
                          lambda t, dt=dt: t.to(dt).double(), [inp], {"dtype": name}))
    return c


def matmul_cases():
    c = []
    for ta in (False, True):
        for tb in (False, True):
            a = rand(*((4, 3) if ta else (3, 4)))
            b = rand(*((5, 4) if tb else (4, 5)))
            c.append(case(f"matmul ta={ta} tb={tb}", "matmul",
                          lambda x, y, ta=ta, tb=tb: (x.t() if ta else x) @ (y.t() if tb else y),
                          [a, b], {"trans_a": ta, "trans_b": tb}))
    x, w, b = rand(6, 5), rand(4, 5), rand(4)
    c.append(case("linear", "linear", F.linear, [x, w, b]))
    c.append(case("linear no bias", "linear", lambda x, w: F.linear(x, w), [x, w]))
    big_x, big_w, big_b = rand(16, 40), rand(9, 40), rand(9)
    c.append(case("linear 16x40 -> 9", "linear", F.linear, [big_x, big_w, big_b]))
    return c


def softmax_loss_cases():
    c = []
    x = rand(4, 7, lo=-4, hi=4)
    x3 = rand(2, 3, 4, lo=-4, hi=4)
    c.append(case("softmax dim -1", "softmax", lambda t: F.softmax(t, -1), [x], {"dim": -1}))
    c.append(case("softmax dim 1 of 3", "softmax", lambda t: F.softmax(t, 1), [x3], {"dim": 1}))
    c.append(case("log_softmax dim -1", "log_softmax", lambda t: F.log_softmax(t, -1), [x], {"dim": -1}))
    c.append(case("log_softmax dim 0 of 3", "log_softmax", lambda t: F.log_softmax(t, 0), [x3], {"dim": 0}))
    big = rand(5, 10, lo=-1, hi=1) * 100  # large logits: the naive formula overflows
    big = big.float().double()
    for name, logits in (("cross_entropy", x), ("cross_entropy large logits", big)):
        t = torch.randint(0, logits.shape[1], (logits.shape[0],), generator=gen)
        c.append(case(name, "cross_entropy", lambda l, t=t: F.cross_entropy(l, t), [logits],
                      {"targets": t.tolist()}))
    p, q = rand(3, 5), rand(3, 5)
    c.append(case("mse_loss", "mse_loss", F.mse_loss, [p, q]))
    return c


def conv_cases():
    c = []
    for (N, C, H, W, O, k, s, pad) in ((2, 3, 6, 5, 4, 3, 1, 1), (1, 2, 7, 7, 3, 3, 2, 0),
                                       (2, 1, 5, 6, 2, 1, 1, 0), (1, 2, 6, 6, 3, 5, 2, 2)):
        x, w, b = rand(N, C, H, W), rand(O, C, k, k), rand(O)
        c.append(case(f"conv2d N{N} C{C} {H}x{W} O{O} k{k} s{s} p{pad}", "conv2d",
                      lambda x, w, b, s=s, pad=pad: F.conv2d(x, w, b, stride=s, padding=pad),
                      [x, w, b], {"stride": s, "padding": pad}))
    x, w = rand(2, 3, 5, 5), rand(2, 3, 3, 3)
    c.append(case("conv2d no bias", "conv2d", lambda x, w: F.conv2d(x, w, padding=1), [x, w],
                  {"stride": 1, "padding": 1}))
    # distinct values so max pooling has no ties
    xm = (torch.randperm(2 * 3 * 6 * 6, generator=gen).double() / 50 - 2).reshape(2, 3, 6, 6)
    c.append(case("max_pool2d k2 s2", "max_pool2d", lambda t: F.max_pool2d(t, 2, 2), [xm],
                  {"kernel": 2, "stride": 2, "padding": 0}))
    c.append(case("max_pool2d k3 s2 p1", "max_pool2d", lambda t: F.max_pool2d(t, 3, 2, 1), [xm],
                  {"kernel": 3, "stride": 2, "padding": 1}))
    xa = rand(2, 3, 6, 5)
    c.append(case("avg_pool2d k2 s2", "avg_pool2d", lambda t: F.avg_pool2d(t, 2, 2), [xa],
                  {"kernel": 2, "stride": 2, "padding": 0}))
    c.append(case("avg_pool2d k3 s1 p1", "avg_pool2d", lambda t: F.avg_pool2d(t, 3, 1, 1), [xa],
                  {"kernel": 3, "stride": 1, "padding": 1}))
    c.append(case("global_avg_pool2d", "global_avg_pool2d", lambda t: F.adaptive_avg_pool2d(t, 1), [xa]))
    # batch norm: training (batch statistics, running stats updated) and eval
    xb, g, bb = rand(4, 3, 3, 2, lo=-2, hi=3), rand(3, lo=0.5, hi=1.5), rand(3)
    rm0, rv0 = rand(3), rand(3, lo=0.5, hi=2)
    for training in (True, False):
        rm, rv = rm0.clone(), rv0.clone()
        cs = case(f"batch_norm2d training={training}", "batch_norm2d",
                  lambda x, g, b, rm=rm, rv=rv, tr=training:
                      F.batch_norm(x, rm, rv, g, b, training=tr, momentum=0.1, eps=1e-5),
                  [xb, g, bb], {"training": training, "momentum": 0.1, "eps": 1e-5,
                                "running_mean": rm0.tolist(), "running_var": rv0.tolist()})
        # the closure ran once, so rm/rv now hold the updated running statistics
        cs["running_mean_after"] = rm.tolist()
        cs["running_var_after"] = rv.tolist()
        c.append(cs)
    return c


def gpt_cases():
    """The ops a GPT block adds. A generator of their own, so these cases do not shift the
    random inputs of the files above."""
    global gen
    saved, gen = gen, torch.Generator().manual_seed(20250113)
    c = []
    w = rand(7, 5)
    ids = [[3, 0, 3], [6, 1, 3]]  # token 3 three times: its gradient row sums three rows
    c.append(case("embedding (7,5)[(2,3) ids]", "embedding",
                  lambda w, ids=ids: F.embedding(torch.tensor(ids), w), [w],
                  {"ids": sum(ids, []), "ids_shape": [2, 3]}))
    x, g, b = rand(2, 3, 8, lo=-2, hi=2), rand(8, lo=0.5, hi=1.5), rand(8)
    c.append(case("layer_norm (2,3,8)", "layer_norm",
                  lambda x, g, b: F.layer_norm(x, (8,), g, b, 1e-5), [x, g, b], {"eps": 1e-5}))
    c.append(case("layer_norm no affine", "layer_norm",
                  lambda x: F.layer_norm(x, (8,), None, None, 1e-5), [x], {"eps": 1e-5}))
    off = (rand(4, 16) * 0.1 + 300.0).float().double()  # |mean| >> std: one-pass E[x²]−E[x]² is off by ~1e-9
    c.append(case("layer_norm mean 300 std 0.06", "layer_norm",
                  lambda x, g, b: F.layer_norm(x, (16,), g, b, 1e-5), [off, rand(16), rand(16)], {"eps": 1e-5}))
    for (sa, sb, ta, tb) in (((2, 3, 4, 5), (2, 3, 5, 6), False, False),
                             ((2, 1, 4, 5), (3, 5, 6), False, False),
                             ((2, 3, 5, 4), (2, 3, 6, 5), True, True),
                             ((2, 3, 4, 5), (2, 3, 6, 5), False, True),
                             ((3, 5, 4), (5, 2), True, False),
                             ((2, 4, 5), (5, 3), False, False),
                             ((2, 4, 5), (3, 5), False, True),
                             ((4, 5), (2, 5, 3), False, False)):
        a, bb = rand(*sa), rand(*sb)
        c.append(case(f"matmul batched {sa}{'^T' if ta else ''} x {sb}{'^T' if tb else ''}", "matmul",
                      lambda x, y, ta=ta, tb=tb: (x.transpose(-1, -2) if ta else x) @ (y.transpose(-1, -2) if tb else y),
                      [a, bb], {"trans_a": ta, "trans_b": tb}))
    t4 = rand(2, 3, 4, 5)
    c.append(case("transpose (2,3,4,5) 1<->2", "transpose", lambda t: t.transpose(1, 2), [t4], {"dim0": 1, "dim1": 2}))
    c.append(case("transpose (2,3,4,5) 0<->-1", "transpose", lambda t: t.transpose(0, -1), [t4], {"dim0": 0, "dim1": -1}))
    c.append(case("permute (2,3,4,5) (3,0,2,1)", "permute", lambda t: t.permute(3, 0, 2, 1), [t4], {"dims": [3, 0, 2, 1]}))
    c.append(case("reshape of a transposed view", "transpose_reshape",
                  lambda t: t.transpose(1, 2).reshape(2, 4, 15), [t4], {"dim0": 1, "dim1": 2, "shape": [2, 4, 15]}))
    t3 = rand(2, 7, 3)
    c.append(case("narrow dim 1 [2, 5)", "narrow", lambda t: t.narrow(1, 2, 3), [t3], {"dim": 1, "start": 2, "length": 3}))
    for i in range(3):
        c.append(case(f"split 3 along dim 1, piece {i}", "split",
                      lambda t, i=i: t.split(3, 1)[i], [t3], {"size": 3, "dim": 1, "index": i}))
    col = rand(3, 1)
    c.append(case("expand (3,1) -> (2,3,4)", "expand", lambda t: t.expand(2, 3, 4), [col], {"shape": [2, 3, 4]}))
    s = rand(2, 3, 5, 5, lo=-4, hi=4)
    upper = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)
    for scale in (1.0, 0.5):
        c.append(case(f"causal_softmax (2,3,5,5) scale {scale}", "causal_softmax",
                      lambda t, scale=scale: (t * scale).masked_fill(upper, float("-inf")).softmax(-1),
                      [s], {"scale": scale}))
    c.append(case("softmax of causal_mask (2,3,5,5)", "causal_mask_softmax",
                  lambda t: t.masked_fill(upper, float("-inf")).softmax(-1), [s]))
    gen = saved
    return c


def write(name, cases):
    path = os.path.join(HERE, name)
    with open(path + ".tmp", "w") as f:
        json.dump({"generator": "tests/reference/ops/make_fixtures.py",
                   "torch": torch.__version__, "cases": cases}, f, separators=(",", ":"))
    os.replace(path + ".tmp", path)
    print(f"{path}: {len(cases)} cases")


FILES = {"basic.json": basic_cases, "matmul.json": matmul_cases,
         "softmax_loss.json": softmax_loss_cases, "conv.json": conv_cases, "gpt_ops.json": gpt_cases}

if __name__ == "__main__":
    # Every file by default; name some (make_fixtures.py gpt_ops.json) to rewrite only those.
    # The files share one generator, in this order: a named file is written only after the
    # ones before it have drawn their inputs, so its numbers are the same either way.
    wanted = sys.argv[1:] or list(FILES)
    for name in wanted:
        if name not in FILES:
            sys.exit(f"make_fixtures.py: unknown file {name} (known: {', '.join(FILES)})")
    for name, make in FILES.items():
        cases = make()
        if name in wanted:
            write(name, cases)
