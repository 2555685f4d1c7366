"""The zygote's compile warm-up: Triton compiles for a GPU target without touching a device."""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = r"""
import json, os, sys, tempfile
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()
import torch
from ascend_kernel_gym.evaluation import warmup
from ascend_kernel_gym.evaluation.zygote_warm import device_touched

warmup.run_compile_warmup({"backend": "cuda", "arch": 90, "warp_size": 32})
cubins = [name for _, _, files in os.walk(os.environ["TRITON_CACHE_DIR"]) for name in files if name.endswith(".cubin")]
print(json.dumps({"cubins": len(cubins), "touched": device_touched(), "cuda": torch.cuda.is_initialized()}))
"""


def test_compile_warmup_builds_cubins_without_initialising_a_device() -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # as the cuda zygote runs
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("{")][-1]
    assert line == '{"cubins": 2, "touched": false, "cuda": false}'


def test_child_warmup_exercises_inputs_screen_and_full_comparison_per_dtype(monkeypatch) -> None:
    import torch

    from ascend_kernel_gym.evaluation import compare, inputs, warmup

    seen: dict[str, list[object]] = {"make_inputs": [], "quick_close": [], "compare": []}
    for module, name, keep in ((inputs, "make_inputs", 2), (compare, "quick_close", 0), (compare, "compare", 0)):
        original = getattr(module, name)

        def spy(*args, _original=original, _name=name, _keep=keep, **kwargs):
            seen[_name].append(args[_keep].dtype if _name != "make_inputs" else args[_keep])
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    warmup.exercise_checks(torch.device("cpu"), (torch.float32, torch.bfloat16))
    assert seen["make_inputs"] == list(inputs.DISTRIBUTIONS) * 2
    assert {torch.float32, torch.bfloat16} <= set(seen["quick_close"])
    assert set(seen["compare"]) == {torch.float32, torch.bfloat16}  # the NaN-marked output fails the screen
