# ruff: noqa
# expected: forbidden
# a custom `do_bench=` passed to triton.autotune (the harness's interpreter patch honours
# `_do_bench`) computes torch.relu while the recorder is suspended; re-tuning is forced by a changing key argument.
import torch
import torch.nn as nn
import triton
import triton.language as tl

_box = {}


def _bench(kernel_call, quantiles=None):
    _box["out"].copy_(torch.relu(_box["x"]))
    return [1.0, 1.0, 1.0]


@triton.autotune(
    configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})],
    key=["tick"],
    do_bench=_bench,
)
@triton.jit
def noop_kernel(x_ptr, out_ptr, n, tick, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.tick = 0

    def forward(self, x):
        out = torch.empty_like(x)
        _box["x"] = x
        _box["out"] = out
        self.tick += 1
        noop_kernel[(1,)](x, out, x.numel(), self.tick)
        return out
