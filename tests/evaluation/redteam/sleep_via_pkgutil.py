# ruff: noqa
# expected: timeout|forbidden
# timeout: 6
# time.sleep(1000) inside forward, with time reached through triton.language.extra.pkgutil (the
# static stage refuses `import time`). The child must be killed at the deadline and the worker
# must keep serving.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


def launch_relu(x, out):
    n = x.numel()
    relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)

_time = triton.language.extra.pkgutil.resolve_name("time")


class ModelNew(nn.Module):
    def forward(self, x):
        _time.sleep(1000)
        out = torch.empty_like(x)
        launch_relu(x, out)
        return out
