# ruff: noqa
# expected: forbidden|sandbox_violation
# torch.cuda.tunable imports multiprocessing as `mp`; starting a Process must still be refused.
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

_mp = torch.cuda.tunable.mp


def _work():
    return None


class ModelNew(nn.Module):
    def forward(self, x):
        _mp.Process(target=_work).start()
        out = torch.empty_like(x)
        launch_relu(x, out)
        return out
