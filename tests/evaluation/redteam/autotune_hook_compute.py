# ruff: noqa
# expected: forbidden
# torch.relu runs inside an autotune post_hook; the cache is cleared every call so
# the hook runs inside Autotuner._bench, where the operator recorder is suspended. The kernel itself is a no-op.
import torch
import torch.nn as nn
import triton
import triton.language as tl


def _hook(nargs, exception=None):
    nargs["out_ptr"].copy_(torch.relu(nargs["x_ptr"]))


@triton.autotune(
    configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})],
    key=["n"],
    post_hook=_hook,
)
@triton.jit
def noop_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < 0  # stores nothing
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        noop_kernel.cache.clear()  # re-tune on every call -> hook runs in _bench
        noop_kernel[(1,)](x, out, x.numel())
        return out
