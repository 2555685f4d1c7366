"""The task roofline: matmul FLOPs and input / output bytes of the reference."""

from __future__ import annotations


def test_task_roofline_counts_matmul_flops_and_io_bytes() -> None:
    import torch

    from ascend_kernel_gym.ascend.roofline import task_roofline

    class Model(torch.nn.Module):
        def forward(self, a, b):
            return torch.relu(a @ b)

    a, b = torch.randn(32, 48), torch.randn(48, 16)
    roof = task_roofline(Model(), [a, b], "toy/mm")
    assert roof["min_bytes"] == (32 * 48 + 48 * 16 + 32 * 16) * 4
    assert roof["min_flops_32"] == 2 * 32 * 48 * 16 and roof["min_flops_16"] == 0
    names = [op[0] for op in roof["ops"]]
    assert names == ["aten.mm", "aten.relu"]
    # mm reads a and b and writes its output; relu reads and writes the 32x16 result
    assert roof["ops"][0][1] == (32 * 48 + 48 * 16 + 32 * 16) * 4
    assert roof["ops"][1][1] == 2 * 32 * 16 * 4
