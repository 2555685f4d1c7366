# ruff: noqa
# expected: runtime_error
# Finding F9 (second red-team round). Correct on the six checked calls, then raises on the next
# call (the cost model's) with an exception text holding its own file path. That text used to
# reach EvalResult.warnings unscrubbed (the sandbox path /tmp/akg-pool-.../akg-sandbox-.../kernel.py).
# The cost model's call is now a checked call (third round), so the failure is the candidate's;
# test_exception_texts_are_scrubbed checks the quoted text.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


CALLS = [0]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        CALLS[0] += 1  # every instance: the shape-case trials build their own ModelNew
        if CALLS[0] == 7:
            raise ValueError("at " + __file__)
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
