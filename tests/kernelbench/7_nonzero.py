# A data-dependent output shape (the indices of the positive elements): kforge's import
# must refuse it.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.nonzero(x > 0)


def get_inputs():
    return [torch.randn(100)]


def get_init_inputs():
    return []
