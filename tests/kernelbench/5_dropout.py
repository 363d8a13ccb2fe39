# A random op (dropout in training mode): kforge's import must refuse it.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(x)


def get_inputs():
    return [torch.randn(8, 64)]


def get_init_inputs():
    return []
