"""PyTorch's process-wide settings around the reference's calls (evaluation/torch_globals.py)."""

from __future__ import annotations

import gc

import torch

from ascend_kernel_gym.evaluation import torch_globals
from ascend_kernel_gym.evaluation.correctness import enter_candidate_call, reference_torch_state


def test_the_reference_runs_with_the_harness_settings_whatever_the_candidate_left() -> None:
    """A candidate that left the attention backends, the matmul precision and the thread count
    changed (``sdpa_kernel`` held open in a generator: red team of 2026-12-05) gets them back
    after each reference call; the reference never sees them."""
    settings = torch_globals.capture()
    flash, math_sdp = torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.math_sdp_enabled()
    precision, threads = torch.get_float32_matmul_precision(), torch.get_num_threads()
    try:
        torch.backends.cuda.enable_flash_sdp(not flash)
        torch.backends.cuda.enable_math_sdp(not math_sdp)
        torch.set_float32_matmul_precision("medium" if precision != "medium" else "high")
        torch.set_num_threads(threads + 1)
        left = settings.now()
        with reference_torch_state():
            assert torch.backends.cuda.flash_sdp_enabled() == flash
            assert torch.backends.cuda.math_sdp_enabled() == math_sdp
            assert torch.get_float32_matmul_precision() == precision
            assert torch.get_num_threads() == threads and not torch.is_grad_enabled()
        assert settings.now() == left  # the candidate's own, back
        enter_candidate_call()  # every call of either model starts from the harness's settings
        assert settings.now() == settings.values
    finally:
        gc.enable()
        torch.backends.cuda.enable_flash_sdp(flash)
        torch.backends.cuda.enable_math_sdp(math_sdp)
        torch.set_float32_matmul_precision(precision)
        torch.set_num_threads(threads)


def _cyclic(finalised: list[int]) -> type:
    """A class whose instances are their own reference cycle and note their finalisation."""

    class Cyclic:
        def __init__(self) -> None:
            self.me = self

        def __del__(self) -> None:
            finalised.append(1)

    return Cyclic


def test_a_call_starts_collected_with_the_collector_off() -> None:
    finalised: list[int] = []
    Cyclic = _cyclic(finalised)
    torch_globals.capture()
    Cyclic()
    try:
        enter_candidate_call()
        assert finalised == [1] and not gc.isenabled()
    finally:
        gc.unfreeze()
        gc.enable()


def test_what_survives_a_calls_start_is_frozen_and_new_garbage_is_still_collected() -> None:
    finalised: list[int] = []
    Cyclic = _cyclic(finalised)
    torch_globals.capture()
    try:
        kept = Cyclic()
        enter_candidate_call()
        frozen = gc.get_freeze_count()
        assert frozen > 0 and gc.get_count()[0] < 50  # the next collection has next to nothing to scan
        Cyclic()  # garbage made during the call
        enter_candidate_call()
        assert finalised == [1] and gc.get_freeze_count() >= frozen
        assert kept.me is kept
    finally:
        gc.unfreeze()
        gc.enable()


def test_settings_this_build_cannot_read_are_left_out() -> None:
    settings = torch_globals.Settings()
    assert set(settings.values) == set(settings.access)
    assert {"default_dtype", "flash_sdp", "math_sdp", "num_threads", "float32_matmul_precision"} <= set(settings.values)
