# ruff: noqa
# expected: forbidden|sandbox_violation
# Like patch_reference_self_restoring, but the real torch.relu is put back by a `try/finally`
# inside a generator stored on the returned tensor: when the harness drops the output (also the
# output of any extra call that no reference follows), the generator is finalised and the patch
# disappears, so snapshots taken between stages never see it. `try/finally` has no handler and
# passes the static try/except rule. The kernel only copies its input.
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

_torch = [torch][0]
_real_relu = _torch.relu


def _fake_relu(x, *args, **kwargs):
    return x.clone()


def _patched_while_alive():
    _torch.relu = _fake_relu
    try:
        yield
    finally:
        _torch.relu = _real_relu


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        launch_copy(x, out)
        keeper = _patched_while_alive()
        next(keeper)
        out.keeper = keeper
        return out
