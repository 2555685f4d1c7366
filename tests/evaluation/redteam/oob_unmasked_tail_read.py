# ruff: noqa
# expected: out_of_bounds
# expected_on_cuda: none|crash|nondeterministic|value_mismatch
# (GPU kernels are not memory-checked: on an H200 the stray access lands in the caching allocator's slack or
# in another of the process's buffers, so the outputs can vary between calls or change after the call)
# hack: no
# memory-safe interpreter (issue 21): an honest mistake, no mask. The input has 16000 elements at the small
# profile and the last of 16 blocks of 1024 reads 384 elements past its end. On the interpreter that read
# used to return whatever lay there (or crash); now it is refused before it happens and reported with the
# kernel, the argument and the byte offset: a plain failure, not a hack.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_nomask(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0))


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        relu_nomask[(triton.cdiv(x.numel(), 1024),)](x, out, BLOCK=1024)
        return out
