"""Chip profiles carry the documented figures."""

from __future__ import annotations

from ascend_kernel_gym.ascend.chips import load_chip


def test_profiles_have_the_documented_figures() -> None:
    chip = load_chip("910B3")
    assert (chip.vector_cores, chip.cube_cores, chip.ub_bytes, chip.max_grid) == (40, 20, 196608, 65535)
    assert chip.multibuffer_default and not load_chip("950").multibuffer_default
    assert load_chip("950").ub_bytes == 253952
    # derived peak = cube cores x 16^3 x 2 x clock
    assert abs(chip.peak_dot_tflops - 20 * 16**3 * 2 * 1800e6 / 1e12) < 0.1
    assert chip.hbm_bandwidth_is_assumption and not load_chip("H200").hbm_bandwidth_is_assumption
