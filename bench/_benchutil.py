"""Small pieces the GPU bench scripts share (no torch, no package import)."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path
from typing import Any

#: the distributions whose versions a device bench records
DEVICE_PACKAGES = ("torch", "triton", "triton-ascend", "torch_npu")


def package_versions(names: tuple[str, ...] = DEVICE_PACKAGES) -> dict[str, str]:
    """Installed versions of ``names`` (those not installed are left out)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in names:
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            continue
    return out


def positive_ints(text: str, flag: str) -> list[int]:
    """``"4,1,2,2"`` -> ``[1, 2, 4]`` (sorted, unique, each >= 1); an ``argparse`` error naming ``flag`` otherwise."""
    values = sorted({int(part) for part in text.split(",") if part.strip()})
    if not values or values[0] < 1:
        raise argparse.ArgumentTypeError(f"{flag} needs positive integers, got {text!r}")
    return values


def load_module(path: str | Path, name: str) -> Any:
    """The Python file at ``path`` as a module named ``name`` (a task, a solution): loaded from its
    file, so ``triton.jit`` finds its kernels' source."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
