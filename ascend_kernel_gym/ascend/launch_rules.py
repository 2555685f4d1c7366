"""Rules decided by one launch record: grid size, oversubscribed cores, GPU launch knobs, argument dtypes."""

from __future__ import annotations

import math
from typing import Any

from ascend_kernel_gym.ascend.chips import ChipProfile
from ascend_kernel_gym.ascend.findings import Findings
from ascend_kernel_gym.ascend.rules import ERROR, FEW_BYTES_PER_PROGRAM, MAX_ROUNDS, WARNING
from ascend_kernel_gym.ascend.source import ParsedModule, kernel_uses_dot
from ascend_kernel_gym.ascend.values import DTYPE_BYTES, tensor_dtype


def check_launch(module: ParsedModule | None, launch: dict[str, Any], chip: ChipProfile, out: Findings) -> None:
    """Report the rules decided by one launch.

    Args:
        module: the parsed candidate (``None`` when it does not parse: the launch alone is checked).
        launch: a :func:`~ascend_kernel_gym.ascend.contexts.launch_dict` record.
        chip: the Ascend chip profile.
        out: where findings go.
    """
    name = launch["kernel"]
    kernel = module.kernels.get(name) if module else None
    line = kernel.node.lineno if kernel else 0
    grid = [int(g) for g in launch["grid"]] or [1]
    programs = math.prod(grid)
    if programs > chip.max_grid:
        out.add(
            "max_grid",
            name,
            line,
            programs,
            chip.max_grid,
            f"grid {tuple(grid)} launches {programs:,} programs, above {chip.name}'s limit of {chip.max_grid:,}",
        )
    uses_dot = kernel_uses_dot(module, kernel) if (module and kernel) else False
    slots = chip.parallel_slots(uses_dot)
    sizes = []
    for t in launch["tensor_args"]:
        shape = t[0] if t else []
        dt = tensor_dtype(t[1]) if len(t) > 1 else None
        numel = math.prod(int(d) for d in shape) if shape else 1
        sizes.append(numel * DTYPE_BYTES.get(dt or "fp32", 4))
    total_bytes = sum(sizes)
    per_program = total_bytes / max(1, programs)
    if programs > MAX_ROUNDS * slots and per_program < FEW_BYTES_PER_PROGRAM:
        rounds = -(-programs // slots)
        cores = "cube" if uses_dot else "vector"
        out.add(
            "grid_oversubscribed",
            name,
            line,
            programs,
            MAX_ROUNDS * slots,
            f"{programs:,} programs on {slots} {cores} cores of {chip.name} = {rounds} rounds, each program moving "
            f"~{per_program / 1024:.1f} KiB",
        )
    if launch.get("num_warps") is not None or launch.get("num_stages") is not None:
        parts = [f"{k}={launch[k]}" for k in ("num_warps", "num_stages") if launch.get(k) is not None]
        out.add("num_warps_stages", name, line, ", ".join(parts), None, f"launched with {', '.join(parts)}")
    for i, t in enumerate(launch["tensor_args"]):
        shape = t[0] if t else []
        dt = tensor_dtype(t[1]) if len(t) > 1 else None
        if dt in ("fp64", "uint16", "uint32", "uint64", "uint8"):
            out.add(
                "unsupported_dtype",
                name,
                line,
                dt,
                None,
                f"tensor argument {i} is {dt}",
                severity=WARNING if dt == "uint8" else ERROR,
            )
