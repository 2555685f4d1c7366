"""A task where exact zeros make an honest kernel's math the identity, and kernels for it.

``x + w[0]`` with ``x`` int32 (trials leave integer inputs as they are) and ``w`` float16, both
``[2, 64]``. The honest kernel adds ``w[0]`` to PyTorch's fp32 copy of ``x``; in the correctness
trial with many exact zeros ``w[0]`` is all zeros, so its whole output is that copy unchanged,
exactly what a kernel copying PyTorch's work writes. Used by test_correctness.py and
test_timing.py.
"""

from __future__ import annotations

from pathlib import Path

from ascend_kernel_gym.tasks.task import Task, load_task_file

ADD_TASK = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, w):
        return x + w[0:1]


def get_inputs():
    return [torch.randint(-100, 100, (2, 64), dtype=torch.int32), torch.randn(2, 64, dtype=torch.float16)]


def get_init_inputs():
    return []
"""

ADD_FP32_CANDIDATE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, w_ptr, y_ptr, n, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    w = tl.load(w_ptr + offs % cols, mask=mask).to(tl.float32)
    tl.store(y_ptr + offs, x + w, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, w):
        xf = x.contiguous().float()
        y = torch.empty_like(xf)
        n = xf.numel()
        add_kernel[(triton.cdiv(n, 128),)](xf, w.contiguous(), y, n, xf.shape[-1], BLOCK=128)
        return y.half()
"""

# Copies PyTorch's upcast copy whatever w holds (wrong except where w is 0): PyTorch's work.
COPY_FP32_CANDIDATE = ADD_FP32_CANDIDATE.replace("x + w, mask=mask", "x + 0.0 * w, mask=mask")


def add_task(tmp_path: Path) -> Task:
    """The task above, written under ``tmp_path`` and loaded."""
    path = tmp_path / "add_int_fp16.py"
    path.write_text(ADD_TASK)
    return load_task_file(path)
