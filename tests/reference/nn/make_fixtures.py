#!/usr/bin/python3
"""Reference fixtures for tests/unit/test_nn_torch.cpp, written by PyTorch (Debian python3-torch).

Run from the repository root:   /usr/bin/python3 tests/reference/nn/make_fixtures.py
It writes tests/reference/nn/{mlp_sgd,smallcnn_sgd,resnet_sgd,optimizers,model_names}.json, which are committed;
the C++ tests read them and need no Python.

Each model fixture holds, for a small version of the model (same layers, smaller sizes, so
the files stay small): the initial parameters, one input batch and its labels, then for two
SGD steps (lr 0.05, momentum 0.9, weight decay 5e-4; the second step is the first that uses
the momentum buffer): the loss, every parameter's gradient, and every parameter after the
step. model_names.json lists every parameter and buffer name with its shape for the
full-size MLP, SmallCNN, ResNet-18 and ResNet-50 (the 28x28x1 variants). Numbers are float32 values written as decimal doubles, so they read back exactly.
"""
import json
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(1234)
torch.set_default_dtype(torch.float32)


class MLP(nn.Module):  # framework/nn/models/mlp.h with (in, h1, h2, out) = (64, 32, 16, 10)
    def __init__(self, i, h1, h2, o):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(i, h1), nn.Linear(h1, h2), nn.Linear(h2, o)

    def forward(self, x):
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class SmallCNN(nn.Module):  # framework/nn/models/small_cnn.h with channels (4, 8), hidden 16, 8x8 input
    def __init__(self, cin, c1, c2, hidden, classes, hw):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, c1, 3, padding=1)
        self.conv2 = nn.Conv2d(c1, c2, 3, padding=1)
        self.fc1 = nn.Linear(c2 * (hw // 4) * (hw // 4), hidden)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


class BasicBlock(nn.Module):  # torchvision.models.resnet.BasicBlock
    expansion = 1

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (self.downsample(x) if self.downsample is not None else x))

    def __init__(self, cin, width, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.downsample = None
        if stride != 1 or cin != width:
            self.downsample = nn.Sequential(nn.Conv2d(cin, width, 1, stride, bias=False), nn.BatchNorm2d(width))


class Bottleneck(nn.Module):  # torchvision.models.resnet.Bottleneck (stride on the 3x3)
    expansion = 4

    def __init__(self, cin, width, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, width * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(width * 4)
        self.downsample = None
        if stride != 1 or cin != width * 4:
            self.downsample = nn.Sequential(nn.Conv2d(cin, width * 4, 1, stride, bias=False), nn.BatchNorm2d(width * 4))


class ResNet(nn.Module):  # torchvision's ResNet with a 3x3 stride-1 stem and no max-pool
    def __init__(self, block, layers, cin=1, classes=10, width=64):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        c = width
        for i, (w, n) in enumerate(zip((width, 2 * width, 4 * width, 8 * width), layers)):
            blocks = []
            for j in range(n):
                blocks.append(block(c, w, (1 if i == 0 else 2) if j == 0 else 1))
                c = w * block.expansion
            setattr(self, f"layer{i + 1}", nn.Sequential(*blocks))
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def names_and_shapes(model):
    """Parameters, then buffers (without num_batches_tracked, which halfgrad does not keep)."""
    params = [[n, list(p.shape)] for n, p in model.named_parameters()]
    buffers = [[n, list(b.shape)] for n, b in model.named_buffers() if not n.endswith("num_batches_tracked")]
    return {"parameters": params, "buffers": buffers,
            "num_parameters": sum(p.numel() for p in model.parameters())}


def tensor_json(t):
    t = t.detach().to(torch.float32).contiguous()
    return {"shape": list(t.shape), "data": [float(v) for v in t.flatten().tolist()]}


def model_fixture(model, x, y, lr=0.05, momentum=0.9, weight_decay=5e-4, steps=2):
    out = {
        "lr": lr, "momentum": momentum, "weight_decay": weight_decay,
        "input": tensor_json(x), "labels": [int(v) for v in y.tolist()],
        "params": {n: tensor_json(p) for n, p in model.named_parameters()},
        "buffers": {n: tensor_json(b) for n, b in model.named_buffers() if not n.endswith("num_batches_tracked")},
        "param_order": [n for n, _ in model.named_parameters()],
        "steps": [],
    }
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay)
    for _ in range(steps):
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        grads = {n: tensor_json(p.grad) for n, p in model.named_parameters()}
        opt.step()
        out["steps"].append({
            "logits": tensor_json(logits), "loss": float(loss.item()), "grads": grads,
            "params_after": {n: tensor_json(p) for n, p in model.named_parameters()},
            "buffers_after": {n: tensor_json(b) for n, b in model.named_buffers()
                              if not n.endswith("num_batches_tracked")},
        })
    return out


def optimizer_fixture():
    """Adam, AdamW and SGD (nesterov off, dampening 0) on one small tensor, 3 steps, with
    fixed gradients, so the update rules are compared without any model in between."""
    p0 = torch.randn(7)
    grads = [torch.randn(7) for _ in range(3)]
    cases = {
        "sgd": (torch.optim.SGD, dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
        "sgd_plain": (torch.optim.SGD, dict(lr=0.1)),
        "adam": (torch.optim.Adam, dict(lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)),
        "adamw": (torch.optim.AdamW, dict(lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)),
    }
    out = {"p0": tensor_json(p0), "grads": [tensor_json(g) for g in grads], "cases": {}}
    for name, (cls, kw) in cases.items():
        p = p0.clone().requires_grad_(True)
        opt = cls([p], **kw)
        after = []
        for g in grads:
            p.grad = g.clone()
            opt.step()
            after.append(tensor_json(p))
        hp = {k: (list(v) if isinstance(v, tuple) else v) for k, v in kw.items()}
        out["cases"][name] = {"hyper": hp, "after": after}
    return out


def write(name, obj):
    path = os.path.join(HERE, name)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, separators=(",", ":"))
        f.write("\n")
    os.replace(tmp, path)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def main():
    mlp = MLP(64, 32, 16, 10)
    x = torch.randn(8, 1, 8, 8)
    y = torch.randint(0, 10, (8,))
    write("mlp_sgd.json", model_fixture(mlp, x, y))

    cnn = SmallCNN(1, 4, 8, 16, 10, 8)
    x = torch.randn(4, 1, 8, 8)
    y = torch.randint(0, 10, (4,))
    write("smallcnn_sgd.json", model_fixture(cnn, x, y))

    # A narrow ResNet-18-style net (one BasicBlock per stage, width 2): BatchNorm in training
    # mode (batch statistics, running-stat updates), residual adds, strided 1x1 downsample.
    resnet = ResNet(BasicBlock, [1, 1, 1, 1], cin=1, classes=10, width=2)
    x = torch.randn(4, 1, 8, 8)
    y = torch.randint(0, 10, (4,))
    write("resnet_sgd.json", model_fixture(resnet, x, y))

    write("optimizers.json", optimizer_fixture())

    write("model_names.json", {
        "mlp": names_and_shapes(MLP(784, 512, 256, 10)),
        "smallcnn": names_and_shapes(SmallCNN(1, 32, 64, 128, 10, 28)),
        "resnet18": names_and_shapes(ResNet(BasicBlock, [2, 2, 2, 2])),
        "resnet50": names_and_shapes(ResNet(Bottleneck, [3, 4, 6, 3])),
    })
    print(f"torch {torch.__version__}")


if __name__ == "__main__":
    main()
