# ruff: noqa
# expected: forbidden
# Round 3: names the static resolver could not follow at run time. A module returned by a call
# (torch.get_device_module("cpu").torch.fx.graph.enum.bltns is the builtins module), an import in a
# class body (Ns.e), one name imported as two modules (the resolver kept the last binding it saw,
# not Python's), and a parameter named getattr (the resolver's name table has no scopes: every
# getattr of the file then went unchecked). Each is refused now.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def decoy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0) * 2.0, mask=mask)


class Ns:
    import enum as e


def unused(getattr):
    return getattr


def inner():
    import math as e

    return e


class ModelNew(nn.Module):
    def forward(self, x):
        module = torch.get_device_module("cpu")
        out = torch.empty_like(x)
        decoy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
