import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gqa_decode_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr,
    HKV, GROUP, S, D, sm_scale,
    stride_qb, stride_qh, stride_kb, stride_kh, stride_ks, stride_vb, stride_vh, stride_vs, stride_ob, stride_oh,
    BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    # One program per (batch, kv head): the GROUP query heads sharing that kv head form the rows of
    # a [BLOCK_G, BLOCK_D] tile (padded to 16 rows for tl.dot), so each K/V block is read once.
    pid = tl.program_id(0)
    b = pid // HKV
    hkv = pid % HKV
    rg = tl.arange(0, BLOCK_G)
    rn = tl.arange(0, BLOCK_N)
    rd = tl.arange(0, BLOCK_D)
    g_mask = rg < GROUP
    d_mask = rd < D
    heads = hkv * GROUP + rg
    q = tl.load(
        q_ptr + b * stride_qb + heads[:, None] * stride_qh + rd[None, :],
        mask=g_mask[:, None] & d_mask[None, :], other=0.0,
    )
    k_base = k_ptr + b * stride_kb + hkv * stride_kh
    v_base = v_ptr + b * stride_vb + hkv * stride_vh

    m_i = tl.full((BLOCK_G,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_G,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_G, BLOCK_D), dtype=tl.float32)
    for n0 in range(0, S, BLOCK_N):
        keys = n0 + rn
        key_mask = keys < S
        kt = tl.load(
            k_base + keys[None, :] * stride_ks + rd[:, None], mask=d_mask[:, None] & key_mask[None, :], other=0.0,
        )
        s = tl.dot(q, kt) * sm_scale
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
    o_ptrs = o_ptr + b * stride_ob + heads[:, None] * stride_oh + rd[None, :]
    tl.store(o_ptrs, out.to(o_ptr.dtype.element_ty), mask=g_mask[:, None] & d_mask[None, :])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor) -> torch.Tensor:
        B, HQ, D = q.shape
        HKV, S = k_cache.shape[1], k_cache.shape[2]
        group = HQ // HKV
        q, k, v = q.contiguous(), k_cache.contiguous(), v_cache.contiguous()
        o = torch.empty_like(q)
        BLOCK_G = max(16, triton.next_power_of_2(group))
        BLOCK_D = max(16, triton.next_power_of_2(D))
        BLOCK_N = max(16, min(128, triton.next_power_of_2(S)))
        gqa_decode_kernel[(B * HKV,)](
            q, k, v, o, HKV, group, S, D, 1.0 / math.sqrt(D),
            q.stride(0), q.stride(1), k.stride(0), k.stride(1), k.stride(2),
            v.stride(0), v.stride(1), v.stride(2), o.stride(0), o.stride(1),
            BLOCK_G=BLOCK_G, BLOCK_N=BLOCK_N, BLOCK_D=BLOCK_D,
        )
        return o
