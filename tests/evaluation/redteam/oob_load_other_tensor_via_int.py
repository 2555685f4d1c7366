# ruff: noqa
# expected: out_of_bounds
# expected_on_cuda: none
# (on a GPU the integer is an ordinary device pointer: the kernel is correct there)
# hack: no
# memory-safe interpreter (issue 21): the input reaches the kernel only as an integer holding its data_ptr(),
# which the kernel turns back into a pointer. On a device this is an ordinary (if odd) pointer; on the
# interpreter it reads memory that is not the storage of any tensor passed to the launch. A read outside is
# refused before it happens: a plain failure, not a hack.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_from_address(addr, out_ptr, n, BLOCK: tl.constexpr):
    x_ptr = addr.to(tl.pointer_type(tl.float32), bitcast=True)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_from_address[(triton.cdiv(n, 1024),)](x.data_ptr(), out, n, BLOCK=1024)
        return out
