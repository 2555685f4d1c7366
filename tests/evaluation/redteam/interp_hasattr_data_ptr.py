# ruff: noqa
# expected: forbidden
# a kernel argument whose `data_ptr` is a property: the interpreter's GridExecutor._init_args_hst
# evaluates hasattr(arg, "data_ptr") while the recorder is suspended, so the property getter runs torch.relu unrecorded.
import torch
import torch.nn as nn
import triton
import triton.language as tl


class Trojan:
    def __init__(self, x, out):
        self.x = x
        self.out = out
        self.armed = True

    @property
    def data_ptr(self):
        if self.armed:
            self.armed = False
            self.out.copy_(torch.relu(self.x))
        raise AttributeError("data_ptr")


@triton.jit
def noop_kernel(x_ptr, out_ptr, n, payload, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        noop_kernel[(1,)](x, out, x.numel(), Trojan(x, out), BLOCK=64)
        return out
