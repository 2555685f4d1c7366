# ruff: noqa
# expected: none
# task: core/L2/attention
# Legitimate: the kernel writes its fp32 accumulator in [B, S, H, D] order and PyTorch rearranges
# that computed result to [B, H, S, D] and narrows it to fp16 (a transposing cast of a kernel's own
# result in a wider dtype, which the rule against widened copies of inputs must not refuse).
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def flash_attention_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr,
    H, S, D, sm_scale,
    stride_qb, stride_qh, stride_qs,
    stride_kb, stride_kh, stride_ks,
    stride_vb, stride_vh, stride_vs,
    stride_ob, stride_oh, stride_os,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    # One program: BLOCK_M queries of one (batch, head); online softmax over key blocks of BLOCK_N.
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rd = tl.arange(0, BLOCK_D)
    d_mask = rd < D
    q_base = q_ptr + b * stride_qb + h * stride_qh
    k_base = k_ptr + b * stride_kb + h * stride_kh
    v_base = v_ptr + b * stride_vb + h * stride_vh
    q = tl.load(q_base + rm[:, None] * stride_qs + rd[None, :], mask=(rm[:, None] < S) & d_mask[None, :], other=0.0)

    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    for n0 in range(0, S, BLOCK_N):
        keys = n0 + rn
        key_mask = keys < S
        kt = tl.load(
            k_base + keys[None, :] * stride_ks + rd[:, None], mask=d_mask[:, None] & key_mask[None, :], other=0.0,
        )
        s = tl.dot(q, kt) * sm_scale  # [BLOCK_M, BLOCK_N], fp32
        s = tl.where(key_mask[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(
            v_base + keys[:, None] * stride_vs + rd[None, :], mask=key_mask[:, None] & d_mask[None, :], other=0.0,
        )
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    o_ptrs = o_ptr + b * stride_ob + h * stride_oh + rm[:, None] * stride_os + rd[None, :]
    tl.store(o_ptrs, out.to(o_ptr.dtype.element_ty), mask=(rm[:, None] < S) & d_mask[None, :])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        B, H, S, D = q.shape
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        o = torch.empty((B, S, H, D), device=q.device, dtype=torch.float32)  # [B, S, H, D], fp32
        BLOCK_D = max(16, triton.next_power_of_2(D))
        BLOCK_M = max(16, min(64, triton.next_power_of_2(S)))
        BLOCK_N = max(16, min(64, triton.next_power_of_2(S)))
        grid = (triton.cdiv(S, BLOCK_M), B * H)
        flash_attention_kernel[grid](
            q, k, v, o, H, S, D, 1.0 / math.sqrt(D),
            q.stride(0), q.stride(1), q.stride(2),
            k.stride(0), k.stride(1), k.stride(2),
            v.stride(0), v.stride(1), v.stride(2),
            o.stride(0), o.stride(2), o.stride(1),
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_D=BLOCK_D,
        )
        return o.transpose(1, 2).contiguous().to(q.dtype)
