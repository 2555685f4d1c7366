# ruff: noqa
# expected: torch_fallback|wrong_output_type|forbidden|sandbox_violation
# The returned tensor is a plain torch.Tensor whose *instance* attribute `detach` shadows the
# method. The harness calls `out.detach()` when it snapshots and compares the output, so the
# closure runs outside the recorded forward and computes the answer with torch.relu, unseen.
# The kernel only copies the input.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0), mask=mask)


def launch_copy(x, out):
    n = x.numel()
    copy_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        launch_copy(x, out)
        out.detach = lambda *args, **kwargs: torch.relu(x)
        return out
