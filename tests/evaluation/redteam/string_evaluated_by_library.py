# ruff: noqa
# expected: forbidden
# Round 2: strings the static stage never parses, evaluated by library code the guard trusted:
# typing's ForwardRef evaluation and triton.language.str_to_ty (which evals a tensor descriptor's
# layout). Both are refused by name; code that exec / eval made and that asks for an import, a
# frame or more code while the candidate's code is on the stack counts as the candidate's.
import typing

import typing_extensions

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def decoy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0) * 2.0, mask=mask)


REF = typing_extensions.evaluate_forward_ref(typing.ForwardRef("len"))
LAYOUT = tl.str_to_ty("tensordesc<fp32[16],None>", None)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        decoy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
