# ruff: noqa
# expected: torch_fallback
# expected_on_cuda: torch_fallback|compile_error
# (Triton 3.6's source analysis refuses the dict method the constexpr function references: it never runs there)
# as constexpr_fn_in_autotune_bench, with a tensor method (no torch name) in the constexpr function
# (Autotuner._bench is wrapped with _suspended += 1; only heuristics and grid callbacks are re-enabled). A
# @triton.constexpr_function helper called from the kernel (torch allowed there: it is not a @triton.jit body) computes
# torch.relu into the output on the first (benchmark) execution of each forward; the final recorded run does nothing.
import torch
import torch.nn as nn
import triton
import triton.language as tl

STATE = {}


@triton.constexpr_function
def side_effect():
    if STATE.get("armed"):
        STATE["armed"] = False
        STATE["out"].copy_(STATE["x"].clamp(min=0))
    return 1


@triton.autotune(
    configs=[triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 512})],
    key=["step"],
)
@triton.jit
def noop_kernel(x_ptr, out_ptr, n, step, BLOCK: tl.constexpr):
    d = side_effect()
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < 0
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.step = 0

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        self.step += 1
        STATE["x"] = x
        STATE["out"] = out
        STATE["armed"] = True
        noop_kernel[(1,)](x, out, n, self.step)
        return out
