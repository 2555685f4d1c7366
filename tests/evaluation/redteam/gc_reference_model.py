# ruff: noqa
# expected: forbidden|sandbox_violation|torch_fallback
# gc (through triton.language.extra.pkgutil.resolve_name) finds the harness's reference Model
# instance, and forward calls it next to a decoy launch. The operator recorder must still see the
# PyTorch work (or the static stage must refuse the way gc was reached).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


def launch_relu(x, out):
    n = x.numel()
    relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)

_gc = triton.language.extra.pkgutil.resolve_name("gc")


def _reference_model():
    for obj in _gc.get_objects():
        if isinstance(obj, nn.Module) and type(obj).__name__ == "Model":
            return obj
    return None


class ModelNew(nn.Module):
    def forward(self, x):
        launch_relu(x, torch.empty_like(x))
        return _reference_model()(x)
