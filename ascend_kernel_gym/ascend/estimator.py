"""The estimated time of counted launches on a chip, with the roofline floor.

The per-launch formula is in :func:`_launch_time` and in docs/ascend.md. Everything returned is
labelled ``"estimate"`` (:data:`LABEL`) with the chip and the assumptions: it comes from counted
interpreter work (:mod:`~ascend_kernel_gym.ascend.counters`), never from a measurement.
"""

from __future__ import annotations

import math
from typing import Any

from ascend_kernel_gym.ascend.chips import ChipProfile, resolve_chip
from ascend_kernel_gym.ascend.counters import KernelCounters, LaunchCounters

__all__ = ["LABEL", "estimate"]


LABEL = "estimate"


def _launch_time(launch: LaunchCounters, chip: ChipProfile) -> dict[str, Any]:
    """Estimated microseconds of one launch on ``chip``.

    Programs run in waves of ``S = cores x resident programs`` (cores = cube cores for launches
    with dots and vector cores otherwise on Ascend; SMs on a GPU). A wave of ``q`` programs uses
    ``c = min(q, cores)`` cores with ``k = min(ceil(q / cores), resident) x tiles_in_flight``
    memory tiles in flight per core, and takes::

        mem  = q * B / (c * min(BWcore, k * tile / (latency + tile / BWcore)))   BWcore = BW / cores
        dot  = q * (F16 / peak + F32 / (peak * dot_fp32_rate) + Fieee / (peak * dot_fp32_ieee_rate)) / (c / cores)
        vec  = q * V / (peak_vector * c / cores)
        wave = max(mem, dot, vec) + round_overhead

    where ``B, F16, F32, Fieee, V`` are per-program means (Fieee: fp32 dots with
    ``input_precision='ieee'``) and ``tile = bytes / memops``; bytes that
    re-read data already read in the launch (``bytes - arg_bytes``) count at HBM/L2 cost ratio.
    The launch takes ``launch_overhead + sum(waves)``.
    """
    programs = max(1, int(launch.programs))
    uses_dot = launch.dot_flops > 0
    cores = chip.physical_cores(uses_dot)
    resident = chip.resident_programs_per_core(launch.num_warps)
    slots = cores * resident
    rounds = math.ceil(programs / slots)
    bw = chip.hbm_bandwidth_gbps * 1e3  # bytes per microsecond
    bw_core = bw / cores
    l2 = (chip.l2_bandwidth_gbps or chip.hbm_bandwidth_gbps) * 1e3
    moved = launch.bytes_moved
    rereads = max(0.0, moved - float(launch.arg_bytes)) if launch.arg_bytes else 0.0
    hbm_equiv = (moved - rereads) + rereads * (bw / l2)
    per_prog_bytes = hbm_equiv / programs
    tile = moved / launch.memops if launch.memops else 0.0
    peak = chip.peak_dot_tflops * 1e6  # flop per microsecond
    ieee_rate = chip.dot_fp32_ieee_rate or chip.dot_fp32_rate
    per_prog_dot_us = (
        launch.dot_flops_16 / peak
        + launch.dot_flops_32 / (peak * chip.dot_fp32_rate)
        + launch.dot_flops_ieee / (peak * ieee_rate)
    ) / programs
    per_prog_vec_us = launch.vector_ops / (chip.peak_vector_tflops * 1e6) / programs

    def wave(q: int) -> tuple[float, float, float]:
        used = min(q, cores)
        per_core_programs = min(resident, math.ceil(q / cores))
        in_flight = per_core_programs * chip.tiles_in_flight_per_program
        if tile > 0:
            per_core_bw = min(bw_core, in_flight * tile / (chip.mem_latency_us + tile / bw_core))
        else:
            per_core_bw = bw_core
        mem = q * per_prog_bytes / (used * per_core_bw) if per_prog_bytes else 0.0
        share = used / cores
        return mem, q * per_prog_dot_us / share, q * per_prog_vec_us / share

    full_waves, last = divmod(programs, slots)
    parts = {"mem": 0.0, "dot": 0.0, "vec": 0.0}
    work = 0.0
    for q, count in ((slots, full_waves), (last, 1 if last else 0)):
        if not count:
            continue
        mem, dot, vec = wave(q)
        parts["mem"] += count * mem
        parts["dot"] += count * dot
        parts["vec"] += count * vec
        work += count * max(mem, dot, vec)
    overhead = chip.launch_overhead_us + rounds * chip.round_overhead_us
    total = overhead + work
    bound = max(parts, key=lambda k: parts[k]) if work > 0 else "overhead"
    if overhead > work:
        bound = "overhead"
    return {
        "kernel": launch.kernel,
        "programs": programs,
        "programs_run": launch.programs_run,
        "sampled": launch.sampled,
        "slots": slots,
        "rounds": rounds,
        "bytes": moved,
        "dot_flops": launch.dot_flops,
        "vector_ops": launch.vector_ops,
        "est_us": total,
        "overhead_us": overhead,
        "mem_us": parts["mem"],
        "dot_us": parts["dot"],
        "vec_us": parts["vec"],
        "bound": {"mem": "memory", "dot": "dot (cube / tensor cores)", "vec": "vector ops"}.get(bound, bound),
    }


def _roofline_ms(roofline: dict[str, Any] | None, chip: ChipProfile) -> float | None:
    if not roofline or not isinstance(roofline.get("min_bytes"), (int, float)):
        return None
    mem = float(roofline["min_bytes"]) / (chip.hbm_bandwidth_gbps * 1e9)
    peak = chip.peak_dot_tflops * 1e12
    f16 = float(roofline.get("min_flops_16") or 0.0)
    f32 = float(roofline.get("min_flops_32") or 0.0)
    if "min_flops" in roofline and not (f16 or f32):
        f32 = float(roofline.get("min_flops") or 0.0)
    compute = f16 / peak + f32 / (peak * chip.dot_fp32_rate)
    return max(mem, compute) * 1e3


def _reference_ms(roofline: dict[str, Any] | None, chip: ChipProfile) -> float | None:
    ops = (roofline or {}).get("ops")
    if not ops:
        return None
    bw = chip.hbm_bandwidth_gbps * 1e9
    peak = chip.peak_dot_tflops * 1e12
    total_s = 0.0
    for _name, moved, flops, wide in ops:
        # eager PyTorch runs fp32 matmuls in full fp32 by default (no TF32)
        rate = peak * ((chip.dot_fp32_ieee_rate or chip.dot_fp32_rate) if wide else 1.0)
        overhead_s = (chip.launch_overhead_us + chip.round_overhead_us + chip.mem_latency_us) * 1e-6
        total_s += overhead_s + max(float(moved) / bw, float(flops) / rate)
    return total_s * 1e3


def estimate(
    counters: KernelCounters | dict[str, Any],
    roofline: dict[str, Any] | None = None,
    chip: str | ChipProfile = "910B3",
) -> dict[str, Any]:
    """Estimated time of the counted launches on ``chip``, with the roofline floor.

    Args:
        counters: from :func:`instrument` (or its ``to_dict()``).
        roofline: from :func:`task_roofline` (``min_bytes``, ``min_flops_16`` / ``min_flops_32``,
            ``ops``); a dict with only ``min_bytes`` works (no FLOP floor, no ``est_speedup``).
        chip: profile name, JSON path or :class:`ChipProfile`.

    Returns:
        A JSON-serialisable dict: ``label`` (always ``"estimate"``), ``chip``, ``est_ms``,
        ``roofline_ms``, ``est_roofline_fraction`` (roofline / estimate, clipped to [0, 1]),
        ``reference_est_ms`` and ``est_speedup`` (idealised eager PyTorch reference estimate /
        candidate estimate; ``None`` without the reference's operators), ``bound``, ``programs``,
        ``rounds``, ``bytes``, ``dot_flops``, ``vector_ops``, ``sampled``, ``uncounted`` (interpreter
        operations that could not be counted: the counts are then lower bounds), ``launches`` (per
        launch) and ``assumptions``.
    """
    if isinstance(counters, dict):
        counters = KernelCounters.from_dict(counters)
    if not isinstance(counters, KernelCounters):
        raise TypeError(f"counters must be KernelCounters or its dict, got {type(counters).__name__}")
    profile = resolve_chip(chip)
    per_launch = [_launch_time(launch, profile) for launch in counters.launches]
    est_us = sum(item["est_us"] for item in per_launch)
    est_ms = est_us / 1e3 if per_launch else None
    roof_ms = _roofline_ms(roofline, profile)
    ref_ms = _reference_ms(roofline, profile)
    fraction = None
    if roof_ms is not None and est_ms:
        fraction = max(0.0, min(1.0, roof_ms / est_ms))
    speedup = ref_ms / est_ms if (ref_ms is not None and est_ms) else None
    totals = {"mem": 0.0, "dot": 0.0, "vec": 0.0, "overhead": 0.0}
    for item in per_launch:
        totals["mem"] += item["mem_us"]
        totals["dot"] += item["dot_us"]
        totals["vec"] += item["vec_us"]
        totals["overhead"] += item["overhead_us"]
    bound = max(totals, key=lambda k: totals[k]) if per_launch else None
    assumptions = [
        "estimate from counted interpreter work, not a measurement",
        "programs run in rounds over the parallel cores (vector cores, or cube cores for kernels with tl.dot)",
        "memory, dot and vector work of a round overlap (time = the largest) plus a fixed per-round overhead",
        "elementwise ops counted one per element (index and mask arithmetic included)",
        *profile.assumptions(),
    ]
    if roofline is None:
        assumptions.append("no task roofline given: roofline_ms and est_roofline_fraction are None")
    elif "min_flops_16" not in roofline and "min_flops" not in roofline:
        assumptions.append("roofline without FLOPs: the floor counts bytes only")
    if ref_ms is not None:
        assumptions.append(
            "est_speedup compares with an idealised eager PyTorch reference: each ATen operator at its own "
            "roofline plus one launch overhead, one round overhead and one memory latency"
        )
    if any(launch.sampled for launch in counters.launches):
        assumptions.append("large grids were sampled: counts extrapolated from evenly spaced programs")
    uncounted = int(sum(launch.uncounted for launch in counters.launches))
    if uncounted:
        assumptions.append(
            f"{uncounted} interpreter operations could not be counted (unsupported triton internals): "
            "bytes, FLOPs and element ops are lower bounds"
        )
    return {
        "label": LABEL,
        "chip": profile.name,
        "est_ms": _round(est_ms),
        "roofline_ms": _round(roof_ms),
        "est_roofline_fraction": _round(fraction),
        "reference_est_ms": _round(ref_ms),
        "est_speedup": _round(speedup),
        "bound": {"mem": "memory", "dot": "dot", "vec": "vector", "overhead": "overheads"}.get(bound or "", None),
        "launches_count": len(per_launch),
        "programs": counters.programs,
        "rounds": int(sum(item["rounds"] for item in per_launch)),
        "bytes": float(counters.bytes_moved),
        "dot_flops": float(counters.dot_flops),
        "vector_ops": float(counters.total("vector_ops")),
        "sampled": any(launch.sampled for launch in counters.launches),
        "uncounted": uncounted,
        "launches": [{k: (_round(v) if isinstance(v, float) else v) for k, v in item.items()} for item in per_launch],
        "assumptions": assumptions,
    }


def _round(value: float | None, digits: int = 6) -> float | None:
    if value is None:
        return None
    if value == 0 or not math.isfinite(value):
        return float(value)
    return float(f"{value:.{digits}g}")
