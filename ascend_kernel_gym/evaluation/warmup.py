"""Warm-up work done once per zygote so that evaluation children start warm.

The interpreter warm-up runs a tiny harness-owned kernel (and the comparison and recording
code) in the zygote itself: it loads Triton's lazily imported interpreter paths and NumPy, so a
forked child's first launch costs milliseconds instead of a second. Only single-threaded CPU
work happens here, so forking afterwards is safe.

The device warm-up runs in a throw-away child: it initialises the device, compiles Triton's
driver utilities and a small kernel into ``TRITON_CACHE_DIR``; evaluation children copy that
cache. The child also reports the device's compile target, with which the zygote then compiles
the same kernels itself, without a device (:func:`run_compile_warmup`): Triton's compiler
(MLIR, LLVM, ptxas paths) is loaded and initialised once, before any fork, so a child's first
compile of a candidate kernel costs about a tenth of a cold one. Imports torch and triton.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ascend_kernel_gym.evaluation import device_gate


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):  # noqa: N803
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, tl.maximum(x * scale, 0.0), mask=mask)


@triton.jit
def _reduce_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):  # noqa: N803
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    acc = tl.sum(x * x, axis=0)
    tl.store(out_ptr, tl.sqrt(acc + 1.0))
    y = tl.reshape(x, (16, 16))
    z = tl.dot(y, tl.trans(y))
    tl.store(out_ptr + 1, tl.max(tl.max(tl.exp(z), axis=1), axis=0))


def _launch_all(device: str) -> None:
    x = torch.linspace(-1.0, 1.0, 256, device=device)
    out = torch.empty_like(x)
    _scale_kernel[(8,)](x, out, x.numel(), 0.5, BLOCK=32)
    scratch = torch.empty(2, device=device)
    _reduce_kernel[(1,)](x, scratch, x.numel(), BLOCK=256)


def run_jit_warmup(device: str) -> None:
    """Launch the warm-up kernels through Triton's JIT once (in a precompile child, whose Triton
    only compiles: it finds them in the warm cache). Loads what the JIT imports lazily before any
    candidate code runs, as :func:`run_child_warmup` does in the candidate's child."""
    _launch_all(device)


def run_interpreter_warmup() -> None:
    """Exercise the interpreter, the recorder's dispatch mode and the comparison code once."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Noop(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            return func(*args, **(kwargs or {}))

    with _Noop():
        _launch_all("cpu")
    exercise_checks(torch.device("cpu"), (torch.float32, torch.float16, torch.bfloat16))


def exercise_checks(device: torch.device, dtypes: tuple[torch.dtype, ...] = (torch.float32,)) -> None:
    """Run the harness's own input and comparison code once on small tensors on ``device``.

    On a GPU each library kernel is loaded at its first launch (lazy module loading, about a
    millisecond each): an evaluation child does this for float32 before its job arrives. Not
    more: a spare child's device work must end before a sibling's timing starts (the quiet
    device), so every dtype added here can delay the evaluation running meanwhile.
    """
    from types import SimpleNamespace

    from ascend_kernel_gym.evaluation import compare, inputs, outputs

    for dtype in dtypes:
        task = SimpleNamespace(get_inputs=lambda dtype=dtype: [torch.rand(64, 64, dtype=dtype), torch.randn(64)])
        for seed, distribution in enumerate(inputs.DISTRIBUTIONS):
            drawn = inputs.make_inputs(task, seed, distribution, device)
            out = outputs.detach_copy(drawn[0])
            near = inputs.clone_inputs(drawn)[0]
            compare.outputs_close(near, out, 1e-5, 1e-5)
            compare.outputs_identical(near, out)
            compare.all_finite(out)
            compare.inputs_equal(drawn, inputs.clone_inputs(drawn))
        off = out.clone()
        off[0, 0] = float("nan")
        compare.compare(off, out, 1e-5, 1e-5)  # the full check with its error statistics
        compare.outputs_identical(off, out)
        if dtype != torch.float32:
            compare.precision_slack([out], [out.float()])


#: (kernel, signature, constexprs) compiled by :func:`run_compile_warmup`
_COMPILE_SET = (
    (_scale_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "scale": "fp32", "BLOCK": "constexpr"}, 32),
    (_reduce_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, 256),
)


def run_device_warmup(backend: str, target_file: str | None = None) -> None:
    """In a throw-away child: initialise the device and compile into TRITON_CACHE_DIR.

    With ``target_file``, also write the device's compile target there as JSON (cuda only).
    """
    if backend == "npu":
        import torch_npu  # noqa: F401
    device = "cuda" if backend == "cuda" else "npu"
    _launch_all(device)
    device_gate.prepare(torch.device(device))  # compiles the timing stage's gate into the cache (cuda)
    getattr(torch, device).synchronize()
    if target_file and backend == "cuda":
        import json

        target = triton.runtime.driver.active.get_current_target()
        with open(target_file, "w") as handle:
            json.dump({"backend": target.backend, "arch": target.arch, "warp_size": target.warp_size}, handle)


def run_child_warmup(device: torch.device) -> None:
    """In an evaluation child, before its job: launch the warm-up kernels from the copied cache.

    Loads Triton's driver utilities and launch path in the child (no compilation: the kernels
    are in the warm cache), so the candidate's first call pays only for its own kernels.
    """
    _launch_all(str(device))
    exercise_checks(device)
    device_gate.prepare(device)  # the timing stage's gate (cuda), before the recorder exists
    getattr(torch, device.type).synchronize()


def run_compile_warmup(target: dict[str, object]) -> None:
    """Compile the warm-up kernels for ``target`` in this process, without touching a device."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    gpu_target = GPUTarget(target["backend"], target["arch"], int(target["warp_size"]))  # type: ignore[arg-type]
    for kernel, signature, block in _COMPILE_SET:
        triton.compile(ASTSource(kernel, signature=signature, constexprs={"BLOCK": block}), target=gpu_target)
