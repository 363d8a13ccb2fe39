# A problem in the KernelBench format, written for kforge's tests: its Model holds
# buffers whose exact values matter and that a candidate cannot compute (a permutation
# drawn from a generator of its own) or should not have to guess (a causal mask), and a
# frozen parameter whose values the constructor sets (a per-feature scale).
import torch
import torch.nn as nn

batch_size = 48
features = 24


class Model(nn.Module):
    """out[b, i] = scale[i] * sum over j <= i of x[b, perm[j]]: a fixed gather, a masked sum."""

    def __init__(self, features):
        super().__init__()
        g = torch.Generator().manual_seed(20261202)
        self.register_buffer("perm", torch.randperm(features, generator=g))
        self.register_buffer("mask", torch.tril(torch.ones(features, features)).bool())
        self.scale = nn.Parameter(torch.linspace(0.5, 2.0, features), requires_grad=False)

    def forward(self, x):
        y = x[:, self.perm]
        return (y.unsqueeze(1) * self.mask).sum(-1) * self.scale


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
