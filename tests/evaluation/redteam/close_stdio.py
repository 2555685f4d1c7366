# ruff: noqa
# expected: runtime_error|none|forbidden|sandbox_violation
# Closes its own stdout / stderr (fd 1 and 2) through `__builtins__['open']`; otherwise a correct
# kernel (the second call then fails on the closed descriptor). The harness must still report
# a result (not a crash or a harness error).
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

_open = __builtins__["open"]


class ModelNew(nn.Module):
    def forward(self, x):
        _open(1, "w").close()
        _open(2, "w").close()
        out = torch.empty_like(x)
        launch_relu(x, out)
        return out
