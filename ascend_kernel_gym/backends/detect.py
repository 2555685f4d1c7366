"""Backend detection and device facts."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from dataclasses import asdict, dataclass, field
from typing import Any

BACKENDS = ("npu", "cuda", "interpreter")
AUTO_ORDER = ("npu", "cuda", "interpreter")

INSTALL_HINTS = {
    "npu": (
        "install the CANN toolkit, then `pip install torch==2.7.1 torch_npu==2.7.1` and "
        "`pip uninstall -y triton && pip install triton-ascend` on an Atlas A2/A3 server (see README, 'Ascend')"
    ),
    "cuda": "install a CUDA build of torch (`pip install torch`) and `triton` on a machine with an NVIDIA GPU",
    "interpreter": "install torch (CPU build: `pip install torch==2.13.0`) and triton (`pip install triton`)",
}


class BackendUnavailableError(RuntimeError):
    """The requested backend cannot run here; the message says what is missing and how to install it."""


@dataclass
class DeviceInfo:
    """Facts about the device a backend runs on."""

    backend: str
    name: str
    device: str  # torch device string: "npu", "cuda", "cpu"
    num_devices: int = 1
    sm_count: int | None = None  # CUDA streaming multiprocessors
    cube_cores: int | None = None  # Ascend AI (cube) cores
    vector_cores: int | None = None  # Ascend vector cores
    versions: dict[str, str | None] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def package_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str | None]:
    return {
        "torch": package_version("torch"),
        "triton": package_version("triton") or package_version("triton-ascend"),
        "torch_npu": package_version("torch_npu") or package_version("torch-npu"),
    }


def missing_for(backend: str) -> list[str]:
    """What this machine lacks for ``backend`` (empty when it is available)."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {BACKENDS} or 'auto'")
    missing = []
    have = versions()
    if have["torch"] is None:
        missing.append("torch")
    if have["triton"] is None:
        missing.append("triton (or triton-ascend on NPU)")
    if backend == "npu":
        if importlib.util.find_spec("torch_npu") is None:
            missing.append("torch_npu")
        elif not missing and not _npu_device_present():
            missing.append("an Ascend NPU device visible to torch_npu")
    elif backend == "cuda" and not missing and not _cuda_device_present():
        missing.append("an NVIDIA GPU visible to torch (torch.cuda.is_available() is False)")
    return missing


def _cuda_device_present() -> bool:
    if os.environ.get("TRITON_INTERPRET") == "1":
        return False
    import torch

    return bool(torch.cuda.is_available())


def _npu_device_present() -> bool:
    try:
        import torch
        import torch_npu  # noqa: F401
    except Exception:  # noqa: BLE001 - a broken torch_npu install means "not available"
        return False
    return bool(hasattr(torch, "npu") and torch.npu.is_available())


def available_backends() -> list[str]:
    return [b for b in AUTO_ORDER if not missing_for(b)]


def resolve_backend(backend: str = "auto") -> str:
    """``auto`` -> the first available of npu, cuda, interpreter; a named backend must be available."""
    if backend == "auto":
        for candidate in AUTO_ORDER:
            if not missing_for(candidate):
                return candidate
        raise BackendUnavailableError(
            f"no backend is available: missing {', '.join(missing_for('interpreter'))}; {INSTALL_HINTS['interpreter']}"
        )
    missing = missing_for(backend)
    if missing:
        raise BackendUnavailableError(
            f"backend {backend!r} is not available: missing {', '.join(missing)}. To get it: {INSTALL_HINTS[backend]}"
        )
    return backend


def device_info(backend: str) -> DeviceInfo:
    """Facts about the device of an available ``backend`` (imports torch)."""
    backend = resolve_backend(backend)
    if backend == "interpreter":
        import platform

        return DeviceInfo(
            backend=backend,
            name=f"CPU ({platform.processor() or platform.machine()}, Triton interpreter)",
            device="cpu",
            num_devices=1,
            versions=versions(),
        )
    import torch

    if backend == "cuda":
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        return DeviceInfo(
            backend=backend,
            name=props.name,
            device="cuda",
            num_devices=torch.cuda.device_count(),
            sm_count=props.multi_processor_count,
            versions=versions(),
        )
    import torch_npu

    index = torch.npu.current_device()
    cube = vector = None
    try:  # triton-ascend's driver reports both core counts (facts 2-3 in the reference notes)
        import triton

        props = triton.runtime.driver.active.utils.get_device_properties(index)
        cube, vector = props.get("num_aicore"), props.get("num_vectorcore")
    except Exception:  # noqa: BLE001 - older stacks: fall back to torch_npu's limits
        limits = torch_npu.npu.npu_config.get_device_limit(index)
        cube, vector = limits.get("cube_core_num"), limits.get("vector_core_num")
    return DeviceInfo(
        backend=backend,
        name=torch.npu.get_device_name(index),
        device="npu",
        num_devices=torch.npu.device_count(),
        cube_cores=cube,
        vector_cores=vector,
        versions=versions(),
    )
