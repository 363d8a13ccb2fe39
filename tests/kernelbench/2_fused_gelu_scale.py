# Fused elementwise ops (scale, add, GELU) in the KernelBench problem format, written
# for kforge's import tests.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        return torch.nn.functional.gelu(a * self.scale + b)


rows = 64
cols = 300
scale = 0.5


def get_inputs():
    return [torch.randn(rows, cols), torch.randn(rows, cols)]


def get_init_inputs():
    return [scale]
