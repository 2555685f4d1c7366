"""The zygote's warm-up of the device path: a Triton cache for the children, the compile target.

CUDA / NPU must not be initialised in the zygote (its children fork from it), so a throw-away
child does the device work: it compiles Triton's driver utilities and a small kernel into a cache
every evaluation child copies, and on cuda reports the device's compile target, with which the
zygote then warms the compiler in its own process and its precompile children
(:mod:`.precompile`) compile.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from typing import Any


def device_touched() -> bool:
    """Whether torch or Triton initialised a device in this process (it must not, before fork)."""
    import torch

    touched = bool(torch.cuda.is_initialized())
    try:
        import triton

        config = triton.runtime.driver  # a DriverConfig: its drivers are created lazily
        touched = touched or any(getattr(config, name, None) is not None for name in ("_default", "_active"))
    except Exception:  # noqa: BLE001, S110 - other triton layouts
        pass
    return touched


def warm_device(backend: str, root: str) -> tuple[str | None, bool, dict[str, Any] | None]:
    """Pre-import the device compiler paths and fill a Triton cache the children copy.

    The cache is filled by a throw-away child (CUDA must not be initialised in the zygote):
    it compiles Triton's driver utilities and a small kernel, so each evaluation child only
    compiles the candidate's own kernels. Returns the cache (None if the child failed), whether
    the compiler paths are warm in this process, and the device's compile target (cuda).
    """
    if backend == "cuda":
        for name in ("triton.backends.nvidia.driver", "triton.backends.nvidia.compiler"):
            try:
                __import__(name)
            except Exception:  # noqa: BLE001, S110
                pass
        try:
            from triton.backends.nvidia import driver as nvidia_driver

            if hasattr(nvidia_driver, "libcuda_dirs"):
                nvidia_driver.libcuda_dirs()  # runs ldconfig once, here, instead of in every child
        except Exception:  # noqa: BLE001, S110
            pass
    warm_dir = os.path.join(root, "warm_triton_cache")
    os.makedirs(warm_dir, exist_ok=True)
    target_file = os.path.join(root, "target.json")
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.environ["TRITON_CACHE_DIR"] = warm_dir
            from ascend_kernel_gym.evaluation import warmup

            warmup.run_device_warmup(backend, target_file)
            code = 0
        finally:
            os._exit(code)
    deadline = time.monotonic() + 300
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            status = -1
            break
        time.sleep(0.05)
    if status != 0:
        return None, False, None
    target = read_target(target_file)
    return warm_dir, target is not None and warm_compiler(root, target), target


def read_target(target_file: str) -> dict[str, Any] | None:
    """The compile target the warm-up child wrote (cuda), or None."""
    try:
        with open(target_file) as handle:
            target = json.load(handle)
    except (OSError, ValueError):
        return None
    return target if isinstance(target, dict) else None


def warm_compiler(root: str, target: dict[str, Any]) -> bool:
    """Compile the warm-up kernels here, for the device's target but without the device."""
    scratch = os.path.join(root, "zygote_triton_cache")
    previous = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = scratch
    try:
        from ascend_kernel_gym.evaluation import warmup

        warmup.run_compile_warmup(target)
        return not device_touched()
    except Exception:  # noqa: BLE001 - an optimisation: children compile cold without it
        return False
    finally:
        if previous is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = previous
        shutil.rmtree(scratch, ignore_errors=True)
