# ruff: noqa
# expected: runtime_error|forbidden|sandbox_violation
# Issue 21, point 5: importlib.resources hands out a path object of a package that joins with an
# absolute path: files("torch") / "/etc/passwd" is /etc/passwd. The static stage refuses reaching
# it; with that stage defeated the module is taken from sys.modules (no import statement for the
# audit guard to refuse), but files() has importlib run module code on the candidate's behalf,
# which the guard refuses (sandbox_violation); the OS sandbox would keep the file out of reach
# anyway (a line read: the candidate answers correctly; nothing read: it fails loudly).
import warnings

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




class ModelNew(nn.Module):
    def forward(self, x):
        resources = warnings.sys.modules["importlib.resources"]
        where = "/".join(["", "etc", "passwd"])
        text = (resources.files("torch") / where).read_text()
        if "root:" not in text:
            raise RuntimeError("the file outside the sandbox could not be read")
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
