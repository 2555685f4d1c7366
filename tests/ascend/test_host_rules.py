"""Host-code rules: device synchronisations outside ``__init__`` and GPU launch knobs."""

from __future__ import annotations

from ascend_rule_cases import make_source

from ascend_kernel_gym.ascend.findings import Findings
from ascend_kernel_gym.ascend.host_rules import check_host_code
from ascend_kernel_gym.ascend.source import parse_module

SOURCE = make_source(
    """
    @triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_stages=2)], key=["n"])
    @triton.jit
    def tuned(x_ptr, n, BLOCK: tl.constexpr):
        tl.store(x_ptr + tl.arange(0, BLOCK), 0.0)

    @triton.jit
    def k(x_ptr, n, BLOCK: tl.constexpr):
        v = tl.load(x_ptr).item()
        tl.store(x_ptr + tl.arange(0, BLOCK), 0.0)

    class ModelNew(nn.Module):
        def __init__(self, w):
            super().__init__()
            self.n = int(w.sum().item())  # once, at construction: fine

        def forward(self, x):
            sizes = x.shape.tolist()
            k[(1,)](x, x.numel(), BLOCK=128, num_warps=8)
            return x
    """
)


def _found() -> dict[str, list[tuple[str, int, str]]]:
    out = Findings()
    check_host_code(parse_module(SOURCE), out)
    found: dict[str, list[tuple[str, int, str]]] = {}
    for f in out.result():
        found.setdefault(f["rule"], []).append((f["kernel"], f["line"], str(f["value"])))
    return found


def test_synchronisations_in_host_code_outside_init() -> None:
    found = _found()
    lines = SOURCE.splitlines()
    (item,) = found["item_in_forward"]  # not __init__'s .item(), not the kernel's (the analyser's job)
    assert item[0] == "forward" and item[2] == ".tolist()" and ".tolist()" in lines[item[1] - 1]


def test_launch_knobs_at_sites_and_in_autotune_configs() -> None:
    knobs = sorted(_found()["num_warps_stages"])
    lines = SOURCE.splitlines()
    assert [(kernel, value) for kernel, _, value in knobs] == [("k", "num_warps=8"), ("tuned", "autotune config")]
    assert "k[(1,)]" in lines[knobs[0][1] - 1] and "def tuned" in lines[knobs[1][1] - 1]
