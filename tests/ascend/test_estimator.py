"""The time estimate: the formula matches a hand calculation, bounds and speedups, counter round trips."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ascend_kernel_gym.ascend.chips import load_chip
from ascend_kernel_gym.ascend.counters import KernelCounters, LaunchCounters
from ascend_kernel_gym.ascend.estimator import estimate


def _toy_chip():
    base = load_chip("910B3")
    return replace(
        base,
        name="toy",
        vector_cores=4,
        cube_cores=2,
        hbm_bandwidth_gbps=1000.0,  # 1e6 bytes / us, 250,000 bytes / us per core
        peak_dot_tflops=1.0,  # 1e6 flop / us
        peak_vector_tflops=1.0,
        dot_fp32_rate=0.5,
        launch_overhead_us=10.0,
        round_overhead_us=1.0,
        mem_latency_us=0.0,
        l2_bandwidth_gbps=None,
    )


def test_estimate_matches_the_hand_computed_formula() -> None:
    chip = _toy_chip()
    launch = LaunchCounters(
        kernel="k",
        grid=[8, 1, 1],
        programs=8,
        programs_run=8,
        arg_bytes=8_000_000,
        bytes_loaded=6e6,
        bytes_stored=2e6,
        memops=80,
    )
    result = estimate(KernelCounters([launch]), {"min_bytes": 8e6, "min_flops_16": 0.0}, chip)
    # 8 programs on 4 vector cores = 2 rounds of 4; each round moves 4e6 B at 1e6 B/us = 4 us.
    # est = 10 (launch) + 2 x 1 (rounds) + 2 x 4 = 20 us
    assert result["est_ms"] == pytest.approx(0.020)
    assert result["roofline_ms"] == pytest.approx(0.008)
    assert result["est_roofline_fraction"] == pytest.approx(0.4)
    assert result["label"] == "estimate" and result["chip"] == "toy" and result["rounds"] == 2
    assert result["bound"] == "overheads" and result["est_speedup"] is None  # 12 us of overheads > 8 us of work
    assert result["launches"][0]["bound"] == "overhead" and result["launches"][0]["mem_us"] == pytest.approx(8.0)
    assert any("assumption" in a for a in result["assumptions"])
    # 3 programs: one partial round on 3 of 4 cores: 3e6 B at 3 x 250,000 B/us = 4 us
    partial = replace(launch, programs=3, programs_run=3, bytes_loaded=2.25e6, bytes_stored=0.75e6, arg_bytes=3e6)
    assert estimate(KernelCounters([partial]), None, chip)["est_ms"] == pytest.approx((10 + 1 + 4) / 1e3)


def test_estimate_dot_bound_and_speedup() -> None:
    chip = replace(_toy_chip(), launch_overhead_us=1.0)
    # 2 programs on 2 cube cores, 2e6 fp16 FLOPs + 1e6 fp32 FLOPs (at half rate) = 4 us of dot work;
    # memory 2e5 B / (2 x 500,000 B/us) = 0.2 us
    launch = LaunchCounters(
        kernel="mm",
        grid=[2, 1, 1],
        programs=2,
        programs_run=2,
        arg_bytes=200_000,
        bytes_loaded=2e5,
        memops=2,
        dot_flops_16=2e6,
        dot_flops_32=1e6,
    )
    roof = {"min_bytes": 2e5, "min_flops_16": 2e6, "min_flops_32": 0.0, "ops": [["aten.mm", 2e5, 2e6, False]]}
    result = estimate(KernelCounters([launch]), roof, chip)
    assert result["est_ms"] == pytest.approx((1 + 1 + 4) / 1e3)
    assert result["bound"] == "dot"
    assert result["roofline_ms"] == pytest.approx(2e-3)
    # reference: one operator, 1 us launch + 1 us round + max(0.2 us, 2 us)
    assert result["reference_est_ms"] == pytest.approx(4e-3)
    assert result["est_speedup"] == pytest.approx(4 / 6)


def test_estimate_round_trips_counter_dicts() -> None:
    launch = LaunchCounters(kernel="k", grid=[4, 1, 1], programs=4, programs_run=2, bytes_loaded=1e6, memops=4)
    counters = KernelCounters([launch], max_programs=2)
    again = KernelCounters.from_dict(counters.to_dict())
    assert again.launches[0] == launch and again.launches[0].sampled
    assert estimate(again, chip="H200") == estimate(counters, chip="H200")
    with pytest.raises(TypeError):
        estimate([launch], chip="H200")  # type: ignore[arg-type]
