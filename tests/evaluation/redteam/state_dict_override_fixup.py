# ruff: noqa
# expected: value_mismatch|forbidden
# Finding F4 (second red-team round). The kernel only copies its input; a submodule overrides the
# public `state_dict`. The harness used to call torch.nn.Module.state_dict(model) (to collect the
# parameters for its aliasing check) after forward returned and before it copied the output, and
# that calls every submodule's own state_dict: the override rewrote the returned output with
# torch.relu, unrecorded, and kept the answer so the repeated trial-0 call (same inputs) returned
# it through the copy kernel. Accepted 5/5 before the fix.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class Fixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.last = None
        self.pending = None

    def state_dict(self, *args, **kwargs):
        if self.last is not None:
            x, out = self.last
            answer = torch.relu(x)
            out.copy_(answer)
            self.pending = answer
            self.last = None
        return kwargs.get("destination") or {}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.fixer = Fixer()

    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        src = self.fixer.pending if self.fixer.pending is not None else x
        copy_kernel[(triton.cdiv(n, 1024),)](src, out, n, BLOCK=1024)
        self.fixer.last = (x, out)
        return out
