# The PyTorch reference of softmax_torch (docs/torch.md): the twin of tasks/c/softmax,
# computed by torch.softmax over each row. kforge passes the arguments in the task's
# order, the buffers as tensors over its own memory (x read-only, y to be written);
# returning the result is enough: kforge copies it into y.
import torch


def softmax(x, y, rows, cols):
    return torch.softmax(x, dim=-1)
