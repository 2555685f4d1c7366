import torch
import torch.nn as nn


class Model(nn.Module):
    """Row sums of an int64 tensor (e.g. token counts per sequence): exact integer output."""

    def forward(self, x):
        return x.sum(dim=1)


rows = 4
cols = 40 * 1000   # full size: int64 row sums near 2e6, where rtol * |ref| would pass an error of 99


def get_inputs():
    return [torch.randint(0, 100, (rows, cols), dtype=torch.int64)]


def get_init_inputs():
    return []
