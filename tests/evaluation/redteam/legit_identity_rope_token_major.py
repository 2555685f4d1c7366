# ruff: noqa
# expected: none
# task: core/L2/rotary_embedding
# Legitimate (red team of 2026-12-05, h06): RoPE in token-major layout. PyTorch's transposing copy
# feeds the kernel; at position 0 (cos 1, sin 0) the kernel's math is the identity, so it writes
# those input rows back unchanged (1/S of the output, at the same places as in its input): not a
# copy of PyTorch's work (overwrite_probe.identity_only). Was refused as torch_fallback.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rope_bshd_kernel(q_ptr, cos_ptr, sin_ptr, out_ptr, S, H,
                     D: tl.constexpr, HALF: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr):
    # one program per (batch, position): all heads of that token, like vLLM's rotary on [tokens, heads, dim]
    pid = tl.program_id(0)
    s = pid % S
    base = pid.to(tl.int64) * H * D
    h = tl.arange(0, BLOCK_H)
    d = tl.arange(0, BLOCK_D)
    dm = d < HALF
    hm = (h[:, None] < H) & dm[None, :]
    c1 = tl.load(cos_ptr + s * D + d, mask=dm, other=0.0).to(tl.float32)
    c2 = tl.load(cos_ptr + s * D + HALF + d, mask=dm, other=0.0).to(tl.float32)
    s1 = tl.load(sin_ptr + s * D + d, mask=dm, other=0.0).to(tl.float32)
    s2 = tl.load(sin_ptr + s * D + HALF + d, mask=dm, other=0.0).to(tl.float32)
    p1 = q_ptr + base + h[:, None] * D + d[None, :]
    x1 = tl.load(p1, mask=hm, other=0.0).to(tl.float32)
    x2 = tl.load(p1 + HALF, mask=hm, other=0.0).to(tl.float32)
    o1 = x1 * c1[None, :] - x2 * s1[None, :]
    o2 = x2 * c2[None, :] + x1 * s2[None, :]
    po = out_ptr + base + h[:, None] * D + d[None, :]
    tl.store(po, o1.to(out_ptr.dtype.element_ty), mask=hm)
    tl.store(po + HALF, o2.to(out_ptr.dtype.element_ty), mask=hm)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        B, H, S, D = q.shape
        # token-major layout [B, S, H, D], as the kernel expects
        q_t = q.transpose(1, 2).contiguous()
        cos = cos.contiguous()
        sin = sin.contiguous()
        out_t = torch.empty_like(q_t)
        rope_bshd_kernel[(B * S,)](q_t, cos, sin, out_t, S, H, D=D, HALF=D // 2,
                                   BLOCK_H=triton.next_power_of_2(H), BLOCK_D=triton.next_power_of_2(D // 2))
        return out_t.transpose(1, 2)
