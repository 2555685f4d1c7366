"""PyTorch's process-wide settings, read and put back (evaluator children only).

The timing stage calls the task's reference in the candidate's process, so any process-wide
setting the candidate's code leaves behind reaches the reference's timed calls. A context manager
the candidate never closes (``torch.nn.attention.sdpa_kernel`` held open in a suspended generator)
kept the reference on PyTorch's slowest attention path, for a 10-20x higher speedup of the same
kernel (red team of 2026-12-05, night). Refusing such calls by name is one layer (the static
stage); this module is the other: :func:`capture` takes the harness's settings before any code of
the candidate's runs, and :func:`harness_settings` puts them in place around each call of the
reference, whatever the candidate's code did, then puts the candidate's back.

A setting this torch build lacks (or cannot read here) is left out when captured.

Imports torch: use only in evaluator children and tests.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch

Getter = Callable[[], Any]
Setter = Callable[[Any], None]


def _attribute(owner: Any, name: str) -> tuple[Getter, Setter]:
    return (lambda: getattr(owner, name)), (lambda value: setattr(owner, name, value))


def _settings() -> dict[str, tuple[Getter, Setter]]:
    """Every process-wide setting that changes how PyTorch runs the reference's operators."""
    cuda = torch.backends.cuda
    cudnn = torch.backends.cudnn
    entries: dict[str, tuple[Getter, Setter]] = {
        "default_dtype": (torch.get_default_dtype, torch.set_default_dtype),
        "deterministic": (
            lambda: (
                torch.are_deterministic_algorithms_enabled(),
                torch.is_deterministic_algorithms_warn_only_enabled(),
            ),
            lambda value: torch.use_deterministic_algorithms(value[0], warn_only=value[1]),
        ),
        "deterministic_debug_mode": (torch.get_deterministic_debug_mode, torch.set_deterministic_debug_mode),
        "anomaly": (
            lambda: (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()),
            lambda value: torch.set_anomaly_enabled(value[0], value[1]),
        ),
        "float32_matmul_precision": (torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
        "matmul_fp16_reduction": _attribute(cuda.matmul, "allow_fp16_reduced_precision_reduction"),
        "matmul_bf16_reduction": _attribute(cuda.matmul, "allow_bf16_reduced_precision_reduction"),
        "cudnn_enabled": _attribute(cudnn, "enabled"),
        "cudnn_benchmark": _attribute(cudnn, "benchmark"),
        "cudnn_deterministic": _attribute(cudnn, "deterministic"),
        "flash_sdp": (cuda.flash_sdp_enabled, cuda.enable_flash_sdp),
        "mem_efficient_sdp": (cuda.mem_efficient_sdp_enabled, cuda.enable_mem_efficient_sdp),
        "math_sdp": (cuda.math_sdp_enabled, cuda.enable_math_sdp),
        "cudnn_sdp": (cuda.cudnn_sdp_enabled, cuda.enable_cudnn_sdp),
        "num_threads": (torch.get_num_threads, torch.set_num_threads),
        "autograd_multithreading": (
            torch.autograd.is_multithreading_enabled,
            torch.autograd.set_multithreading_enabled,  # type: ignore[arg-type]
        ),
    }
    for device in ("cpu", "cuda"):
        entries[f"autocast_{device}"] = (
            lambda device=device: (torch.is_autocast_enabled(device), torch.get_autocast_dtype(device)),
            lambda value, device=device: (
                torch.set_autocast_enabled(device, value[0]),
                torch.set_autocast_dtype(device, value[1]),
            ),
        )
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        entries["cuda_sync_debug_mode"] = (torch.cuda.get_sync_debug_mode, torch.cuda.set_sync_debug_mode)
    return entries


class Settings:
    """The values of :func:`_settings` at one moment, and how to read and put back each."""

    def __init__(self) -> None:
        self.access: dict[str, tuple[Getter, Setter]] = {}
        self.values: dict[str, Any] = {}
        for name, (get, put) in _settings().items():
            try:
                self.values[name] = get()
            except Exception:  # noqa: BLE001, S112 - not readable in this build or on this machine: left out
                continue
            self.access[name] = (get, put)

    def now(self) -> dict[str, Any]:
        """The current values of the settings captured here."""
        return {name: get() for name, (get, _) in self.access.items()}

    def restore(self) -> None:
        """Put every captured setting back where it differs now."""
        self.put(self.values, self.now())

    def put(self, values: dict[str, Any], current: dict[str, Any]) -> None:
        """Set each setting whose value in ``current`` differs from ``values``."""
        for name, value in values.items():
            if current.get(name) != value:
                self.access[name][1](value)


#: the settings as this module found them on import (evaluator children import it before any
#: code of the candidate's), until :func:`capture` takes them again
_harness = Settings()


def capture() -> Settings:
    """Take the harness's settings now (call it before any code of the candidate's runs, once the
    harness set its own, such as the thread count)."""
    global _harness
    _harness = Settings()
    return _harness


def harness() -> Settings:
    """The settings :func:`capture` took last (those on import if it was never called)."""
    return _harness


@contextlib.contextmanager
def harness_settings() -> Iterator[None]:
    """The harness's settings in place for the body, whatever they were; those before, after."""
    settings = harness()
    before = settings.now()
    settings.put(settings.values, before)
    try:
        yield
    finally:
        settings.put(before, settings.now())
