"""Shared cases of the Ascend rule tests: kernels that break each rule, a compliant kernel, helpers."""

from __future__ import annotations

import textwrap

from ascend_kernel_gym.evaluation.result import LaunchRecord

HEADER = """
import torch
import torch.nn as nn
import triton
import triton.language as tl
"""


def make_source(body: str) -> str:
    """``body`` (dedented) after the usual torch / triton imports."""
    return HEADER + textwrap.dedent(body)


def make_launch(kernel: str, grid, tensors=(), **constexprs) -> LaunchRecord:
    """A launch record of ``kernel`` with ``tensors`` as ``[shape, dtype]`` pairs."""
    return LaunchRecord(kernel=kernel, grid=list(grid), constexprs=constexprs, tensor_args=[list(t) for t in tensors])


def rule_ids(findings: list[dict]) -> set[str]:
    """The rules among ``findings``."""
    return {f["rule"] for f in findings}


# A compliant vector kernel: int32 offsets, grid = vector cores, grid-stride loop, 1-D access.
COMPLIANT = make_source(
    """
    @triton.jit
    def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        for block in range(pid, tl.cdiv(n, BLOCK), tl.num_programs(0)):
            offs = block * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            x = tl.load(x_ptr + offs, mask=mask, other=0.0)
            tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)

    class ModelNew(nn.Module):
        def forward(self, x):
            out = torch.empty_like(x)
            relu_kernel[(40,)](x, out, x.numel(), BLOCK=1024)
            return out
    """
)
COMPLIANT_LAUNCH = make_launch("relu_kernel", [40], [[[4096, 4096], "float32"]] * 2, BLOCK=1024)

ELEMENTWISE = """
@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x, mask=mask)
"""

MATMUL = """
@triton.jit
def mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    rm = pid * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=ACC_DTYPE)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :])
        b = tl.load(b_ptr + (k0 + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)
"""

MM_TENSORS = [[[256, 256], "float16"], [[256, 256], "float16"], [[256, 256], "float16"]]

# rule -> (source, launches, expected severity, substring expected in the message)
VIOLATIONS: dict[str, tuple[str, list[LaunchRecord], str, str]] = {
    "max_grid": (
        make_source(ELEMENTWISE),
        [make_launch("k", [70000], [[[70000 * 16], "float32"]] * 2, BLOCK=16)],
        "error",
        "70,000",
    ),
    "grid_oversubscribed": (
        make_source(ELEMENTWISE),
        [make_launch("k", [4096], [[[4096 * 256], "float32"]] * 2, BLOCK=256)],
        "warning",
        "rounds",
    ),
    "ub_overflow": (
        make_source(ELEMENTWISE),
        [make_launch("k", [40], [[[40 * 65536], "float32"]] * 2, BLOCK=65536)],
        "error",
        "Unified Buffer",
    ),
    "ub_pressure": (
        make_source(
            """
            @triton.jit
            def k(x_ptr, y_ptr, z_ptr, out_ptr, n, BLOCK: tl.constexpr):
                offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
                x = tl.load(x_ptr + offs)
                y = tl.load(y_ptr + offs)
                z = tl.load(z_ptr + offs)
                s = x + y + z
                tl.store(out_ptr + offs, s)
            """
        ),
        [make_launch("k", [40], [[[40 * 8192], "float32"]] * 4, BLOCK=8192)],
        "warning",
        "live tiles",
    ),
    "l0_overflow": (
        make_source(MATMUL.replace("ACC_DTYPE", "tl.float32")),
        [make_launch("mm", [1], MM_TENSORS, BM=256, BN=256, BK=256)],
        "warning",
        "exceeds",
    ),
    "int64_index": (
        make_source(
            """
            @triton.jit
            def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
                offs = (tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)).to(tl.int64)
                idx = offs * 2 + 1
                tl.store(out_ptr + idx, tl.load(x_ptr + idx))
            """
        ),
        [],
        "warning",
        "int64",
    ),
    "num_warps_stages": (
        make_source(
            ELEMENTWISE
            + """
class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        k[(1,)](x, out, x.numel(), BLOCK=128, num_warps=8)
        return out
"""
        ),
        [],
        "warning",
        "num_warps=8",
    ),
    "dot_fp16_accumulator": (
        make_source(MATMUL.replace("ACC_DTYPE", "tl.float16")),
        [make_launch("mm", [16], MM_TENSORS, BM=16, BN=256, BK=32)],
        "error",
        "fp16",
    ),
    "dot_block_not_multiple_of_16": (
        make_source(MATMUL.replace("ACC_DTYPE", "tl.float32")),
        [make_launch("mm", [10], MM_TENSORS, BM=24, BN=32, BK=8)],
        "warning",
        "M=24",
    ),
    "dot_options": (
        make_source(
            """
            @triton.jit
            def k(a_ptr, b_ptr, c_ptr, B: tl.constexpr):
                r = tl.arange(0, B)
                a = tl.load(a_ptr + r[:, None] * B + r[None, :])
                b = tl.load(b_ptr + r[:, None] * B + r[None, :])
                c = tl.dot(a, b, input_precision="tf32x3")
                tl.store(c_ptr + r[:, None] * B + r[None, :], c)
            """
        ),
        [],
        "warning",
        "tf32x3",
    ),
    "dot_scaled": (
        make_source(
            """
            @triton.jit
            def k(a_ptr, s_ptr, c_ptr, B: tl.constexpr):
                r = tl.arange(0, B)
                a = tl.load(a_ptr + r[:, None] * B + r[None, :])
                c = tl.dot_scaled(a, None, "e4m3", a, None, "e4m3")
                tl.store(c_ptr + r[:, None] * B + r[None, :], c)
            """
        ),
        [],
        "warning",
        "dot_scaled",
    ),
    "last_dim_alignment": (
        make_source(
            """
            @triton.jit
            def k(x_ptr, out_ptr, R, C, BR: tl.constexpr, BC: tl.constexpr):
                rows = tl.program_id(0) * BR + tl.arange(0, BR)
                cols = tl.arange(0, BC)
                mask = (rows[:, None] < R) & (cols[None, :] < C)
                x = tl.load(x_ptr + rows[:, None] * C + cols[None, :], mask=mask)
                tl.store(out_ptr + rows[:, None] * C + cols[None, :], x, mask=mask)
            """
        ),
        [make_launch("k", [32], [[[2048, 3], "float32"]] * 2, BR=64, BC=4)],
        "warning",
        "12 B",
    ),
    "tensor_slicing": (
        make_source(
            """
            @triton.jit
            def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
                x = tl.load(x_ptr + tl.arange(0, BLOCK))
                first = x[0]
                tl.store(out_ptr, first)
            """
        ),
        [],
        "error",
        "x[0]",
    ),
    "while_loop": (
        make_source(
            """
            @triton.jit
            def k(x_ptr, n):
                i = 0
                while i < n:
                    tl.store(x_ptr + i, 0.0)
                    i += 1
            """
        ),
        [],
        "warning",
        "while",
    ),
    "break_continue": (
        make_source(
            """
            @triton.jit
            def k(x_ptr, n):
                for i in range(n):
                    if i > 4:
                        break
                    tl.store(x_ptr + i, 0.0)
            """
        ),
        [],
        "error",
        "break",
    ),
    "early_return": (
        make_source(
            """
            @triton.jit
            def k(x_ptr, n):
                pid = tl.program_id(0)
                if pid >= n:
                    return
                tl.store(x_ptr + pid, 1.0)
            """
        ),
        [],
        "warning",
        "return",
    ),
    "where_pointer": (
        make_source(
            """
            @triton.jit
            def k(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                shifted = tl.where(offs > 3, offs - 4, offs)
                tl.store(out_ptr + offs, tl.load(x_ptr + shifted))
            """
        ),
        [],
        "warning",
        "tl.where",
    ),
    "dtype_call_cast": (
        make_source(
            """
            @triton.jit
            def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
                x = tl.load(x_ptr + tl.arange(0, BLOCK))
                tl.store(out_ptr + tl.arange(0, BLOCK), tl.float16(x))
            """
        ),
        [],
        "error",
        "tl.float16(x)",
    ),
    "constexpr_in_body": (
        make_source(
            """
            @triton.jit
            def k(x_ptr):
                B = tl.constexpr(128)
                tl.store(x_ptr + tl.arange(0, B), 0.0)
            """
        ),
        [],
        "warning",
        "tl.constexpr",
    ),
    "arange_too_long": (
        make_source(ELEMENTWISE),
        [make_launch("k", [1], [[[1 << 21], "float32"]] * 2, BLOCK=1 << 21)],
        "error",
        "2,097,152",
    ),
    "tile_too_large": (
        make_source(
            """
            @triton.jit
            def k(x_ptr, R: tl.constexpr, C: tl.constexpr):
                acc = tl.zeros((R, C), dtype=tl.float16)
                tl.store(x_ptr + tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :], acc)
            """
        ),
        [make_launch("k", [1], [[[512, 256], "float16"]], R=512, C=256)],
        "warning",
        "131,072",
    ),
    "unsupported_dtype": (
        make_source(
            """
            @triton.jit
            def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
                x = tl.load(x_ptr + tl.arange(0, BLOCK)).to(tl.float64)
                tl.store(out_ptr + tl.arange(0, BLOCK), x)
            """
        ),
        [],
        "error",
        "float64",
    ),
    "atomic_unsupported": (
        make_source(
            """
            @triton.jit
            def k(x_ptr, count_ptr, BLOCK: tl.constexpr):
                x = tl.load(x_ptr + tl.arange(0, BLOCK))
                tl.atomic_add(count_ptr, tl.sum(x, axis=0))
            """
        ),
        [make_launch("k", [4], [[[1024], "int64"], [[1], "int64"]], BLOCK=256)],
        "error",
        "atomic_add on int64",
    ),
    "sort_dtype": (
        make_source(
            """
            @triton.jit
            def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
                x = tl.load(x_ptr + tl.arange(0, BLOCK))
                tl.store(out_ptr + tl.arange(0, BLOCK), tl.sort(x))
            """
        ),
        [make_launch("k", [1], [[[256], "int32"], [[256], "int32"]], BLOCK=256)],
        "error",
        "int32",
    ),
    "item_in_forward": (
        make_source(
            ELEMENTWISE
            + """
class ModelNew(nn.Module):
    def forward(self, x):
        n = int(x.sum().item())
        out = torch.empty_like(x)
        k[(1,)](x, out, n, BLOCK=128)
        return out
"""
        ),
        [],
        "warning",
        ".item()",
    ),
    "device_print": (
        make_source(
            """
            @triton.jit
            def k(x_ptr):
                pid = tl.program_id(0)
                tl.device_print("pid", pid)
                tl.store(x_ptr + pid, 1.0)
            """
        ),
        [],
        "warning",
        "device_print",
    ),
    "block_ptr_swapped_strides": (
        make_source(
            """
            @triton.jit
            def k(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
                p = tl.make_block_ptr(x_ptr, shape=(N, M), strides=(1, M), offsets=(0, 0),
                                      block_shape=(BN, BM), order=(0, 1))
                x = tl.load(p)
                q = tl.make_block_ptr(out_ptr, shape=(N, M), strides=(M, 1), offsets=(0, 0),
                                      block_shape=(BN, BM), order=(1, 0))
                tl.store(q, x)
            """
        ),
        [],
        "warning",
        "(1, M)",
    ),
    "indirect_access": (
        make_source(
            """
            @triton.jit
            def k(ids_ptr, table_ptr, out_ptr, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                ids = tl.load(ids_ptr + offs)
                tl.store(out_ptr + offs, tl.load(table_ptr + ids))
            """
        ),
        [],
        "warning",
        "gather",
    ),
    "div_mod_offsets": (
        make_source(
            """
            @triton.jit
            def k(x_ptr, out_ptr, C, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                src = (offs % C) * C + offs // C
                tl.store(out_ptr + offs, tl.load(x_ptr + src))
            """
        ),
        [],
        "warning",
        "//",
    ),
    "fp16_reduction": (
        make_source(
            """
            @triton.jit
            def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
                x = tl.load(x_ptr + tl.arange(0, BLOCK))
                tl.store(out_ptr, tl.sum(x, axis=0))
            """
        ),
        [make_launch("k", [1], [[[1024], "float16"], [[1], "float16"]], BLOCK=1024)],
        "warning",
        "fp16",
    ),
    "int_compare_in_where": (
        make_source(
            """
            @triton.jit
            def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
                y = tl.where(offs < n, x * 2.0, 0.0)
                tl.store(out_ptr + offs, y, mask=offs < n)
            """
        ),
        [],
        "warning",
        "integer",
    ),
    "descriptor_mixing": (
        make_source(
            """
            @triton.jit
            def k(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
                desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
                x = desc.load([0, 0])
                r = tl.arange(0, BM)
                c = tl.arange(0, BN)
                tl.store(out_ptr + r[:, None] * N + c[None, :], x)
            """
        ),
        [],
        "warning",
        "descriptor",
    ),
    "scalar_div_rn": (
        make_source(
            """
            @triton.jit
            def k(x_ptr, a, b):
                tl.store(x_ptr, tl.div_rn(a, b))
            """
        ),
        [],
        "warning",
        "div_rn",
    ),
}
