"""A task whose own inputs make an honest kernel's math the identity, and kernels for it.

``x * w`` with ``w`` all ones on the task's inputs: a kernel that multiplies PyTorch's fp32 copy
of ``x`` writes that copy back unchanged there (the input-copy taint sees a kernel copying
PyTorch's work), but not on fresh random inputs. Used by test_correctness.py and test_timing.py.
"""

from __future__ import annotations

from pathlib import Path

from ascend_kernel_gym.tasks.task import Task, load_task_file

# The task's own inputs make the product the identity (w is all ones); fresh random inputs do not.
SCALE_BY_ONES_TASK = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, w):
        return x * w


def get_inputs():
    return [torch.randn(64, 64, dtype=torch.float16), torch.ones(64, 64, dtype=torch.float16)]


def get_init_inputs():
    return []
"""

# PyTorch upcasts x (a copy of an input); the kernel multiplies, so on the task's inputs it writes
# the upcast copy back unchanged, which the input-copy taint sees as a kernel copying PyTorch's work.
SCALE_FP32_CANDIDATE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mul_kernel(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    w = tl.load(w_ptr + offs, mask=mask).to(tl.float32)
    tl.store(y_ptr + offs, x * w, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, w):
        xf = x.contiguous().float()
        y = torch.empty_like(xf)
        n = xf.numel()
        mul_kernel[(triton.cdiv(n, 1024),)](xf, w.contiguous(), y, n, BLOCK=1024)
        return y.half()
"""

# Copies PyTorch's upcast copy whatever w holds: the taint stands on fresh inputs too.
COPY_FP32_CANDIDATE = SCALE_FP32_CANDIDATE.replace("x * w, mask=mask", "x + 0.0 * w, mask=mask")


def scale_by_ones_task(tmp_path: Path) -> Task:
    """The task above, written under ``tmp_path`` and loaded."""
    path = tmp_path / "scale_by_ones.py"
    path.write_text(SCALE_BY_ONES_TASK)
    return load_task_file(path)
