# ruff: noqa
# expected: torch_fallback
# `@triton.autotune` over a `@triton.heuristics` kernel: the autotuner's _bench (recording suspended by the recorder) calls self.fn.run, i.e. the Heuristics wrapper, so the heuristic callback runs UNRECORDED while configurations are benchmarked; a changing `step` argument in the autotune key forces a benchmark on every call. The callback computes torch.relu into the output once per forward; the kernel itself does nothing.
import torch
import torch.nn as nn
import triton
import triton.language as tl

ARMED = [False]


def compute_in_bench(args):
    if ARMED[0]:
        ARMED[0] = False
        args["out_ptr"].copy_(torch.relu(args["x_ptr"]))
    return 1


@triton.autotune(
    configs=[triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 512})],
    key=["step"],
)
@triton.heuristics({"DUMMY": compute_in_bench})
@triton.jit
def noop_kernel(x_ptr, out_ptr, n, step, BLOCK: tl.constexpr, DUMMY: tl.constexpr):
    pid = tl.program_id(0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.step = 0

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        self.step += 1
        ARMED[0] = True
        noop_kernel[(1,)](x, out, n, self.step)
        return out
