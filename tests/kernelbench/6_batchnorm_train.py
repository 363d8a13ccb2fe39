# A stateful module (BatchNorm updates its running statistics in training mode): kforge's
# import must refuse it.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = nn.BatchNorm1d(features)

    def forward(self, x):
        return self.bn(x)


features = 32


def get_inputs():
    return [torch.randn(16, features)]


def get_init_inputs():
    return [features]
