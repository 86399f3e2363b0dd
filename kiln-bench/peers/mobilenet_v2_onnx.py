"""Writes a MobileNet-v2 ONNX model for the benchmarks of unseen architectures (BENCHMARKS.md, session 26).

The torchvision layout (inverted residuals, ReLU6, a 1280-wide head and a 1000-way classifier) written with torch.nn,
since torchvision's wheel here does not import against the installed torch; random weights and BatchNorm statistics.

    python3 kiln-bench/peers/mobilenet_v2_onnx.py [OUT.onnx]   (default /tmp/models/mobilenet_v2.onnx)
"""
import os
import sys

import torch
import torch.nn as nn


def conv_bn(i, o, k, s, groups=1, act=True):
    layers = [nn.Conv2d(i, o, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(o)]
    if act:
        layers.append(nn.ReLU6(inplace=True))
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, i, o, stride, expand):
        super().__init__()
        hidden = i * expand
        self.residual = stride == 1 and i == o
        layers = [conv_bn(i, hidden, 1, 1)] if expand != 1 else []
        layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden), conv_bn(hidden, o, 1, 1, act=False)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.residual else self.conv(x)


class MobileNetV2(nn.Module):
    # (expansion, channels, blocks, first stride), as torchvision's
    SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]

    def __init__(self):
        super().__init__()
        layers, channels = [conv_bn(3, 32, 3, 2)], 32
        for t, c, n, s in self.SETTINGS:
            for k in range(n):
                layers.append(InvertedResidual(channels, c, s if k == 0 else 1, t))
                channels = c
        layers.append(conv_bn(channels, 1280, 1, 1))
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(1280, 1000)

    def forward(self, x):
        return self.fc(self.features(x).mean((2, 3)))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/models/mobilenet_v2.onnx"
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    torch.manual_seed(0)
    model = MobileNetV2().eval()
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.1, 0.1)
    torch.onnx.export(model, torch.randn(1, 3, 224, 224), out, input_names=["input"], output_names=["output"],
                      opset_version=17, dynamo=False)
    print(out)


if __name__ == "__main__":
    main()
