# ruff: noqa
# expected: value_mismatch|torch_fallback|forbidden
# The kernel only copies its input. forward also leaves a started generator in a reference cycle;
# its `finally` block (no handler: passes the static try/except rule) writes torch.relu(x) into
# the returned output when the cycle is collected. The harness collects before every reference
# call (so candidate finalisers run before the library snapshot is checked), and used to compare
# the output tensors themselves after that: the fix-up, unrecorded, was what got compared. Now the
# collector is off from the end of forward until the output is copied, and only the copy is
# compared.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0), mask=mask)


def fix_when_collected(x, out):
    box = []
    try:
        yield box
    finally:
        out.copy_(torch.relu(x))


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        fixer = fix_when_collected(x, out)
        box = next(fixer)
        box.append(fixer)  # a cycle: only the collector frees it
        return out
