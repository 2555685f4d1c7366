"""NumPy >= 2.4 with triton <= 3.6: ``range(n)`` over a runtime ``n`` inside interpreted kernels."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ascend_kernel_gym.backends.interpreter_compat import scalar, wrap_patch_lang_tensor

np = pytest.importorskip("numpy")

# The interpreter's ``__index__`` as triton 3.6 installs it, then install() on top; the kernel
# loops over a runtime size, which fails with NumPy >= 2.4 unless install() took effect.
SCRIPT = r"""
import os, sys
os.environ["TRITON_INTERPRET"] = "1"
import numpy as np
import torch, triton, triton.language as tl
from triton.runtime import interpreter

original = interpreter._patch_lang_tensor
def triton_36_patch_lang_tensor(tensor, scope):
    original(tensor, scope)
    scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data))
interpreter._patch_lang_tensor = triton_36_patch_lang_tensor

@triton.jit
def row_sum(x, out, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x + row * cols + offs, mask=offs < cols, other=0.0)
    tl.store(out + row, tl.sum(acc, axis=0))

x = torch.randn(3, 300); out = torch.empty(3)
if sys.argv[1] == "install":
    from ascend_kernel_gym.backends import interpreter_compat
    assert interpreter_compat.install() and interpreter_compat.install()  # idempotent
try:
    row_sum[(3,)](x, out, 300, BLOCK=128)
except Exception as exc:
    print("failed", type(exc).__name__, str(exc)[:200])
else:
    print("ok", torch.allclose(out, x.sum(1), atol=1e-4))
"""


def _run(mode: str) -> str:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()[-1]


def _numpy_refuses_int_of_1d_arrays() -> bool:
    try:
        int(np.array([1]))
    except TypeError:
        return True
    return False


def test_install_makes_runtime_range_loops_work_with_triton_36_index() -> None:
    assert _run("install") == "ok True"
    if _numpy_refuses_int_of_1d_arrays():  # the failure install() prevents is real here
        assert _run("plain").startswith("failed")


def test_scalar_and_wrapping_are_safe() -> None:
    assert scalar(np.array([7])) == 7 and scalar(np.array(2.5)) == 2.5 and scalar(4) == 4
    with pytest.raises(TypeError):
        scalar(np.array([1, 2]))
    calls: list[str] = []

    def original(tensor: object, scope: object) -> None:
        calls.append("original")

    wrapped = wrap_patch_lang_tensor(original)
    assert wrap_patch_lang_tensor(wrapped) is wrapped  # never wrapped twice

    class Scope:
        def set_attr(self, obj: object, name: str, value: object) -> None:
            calls.append(name)

    wrapped(object(), Scope())
    assert calls == ["original", "__index__"]
