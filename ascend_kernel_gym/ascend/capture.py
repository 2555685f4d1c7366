"""Launch records of a candidate's forward call without running its kernels, for checking at full shapes.

Runs the candidate's host code in this process (trusted code only): tensors live on the ``meta``
device and every Triton launch is recorded and skipped. :func:`exec_candidate` executes a source
as a module from a real file, which Triton needs to read kernel source.
"""

from __future__ import annotations

from typing import Any

from ascend_kernel_gym.evaluation.result import LaunchRecord


def capture_launches(task: Any, code: str, profile: str = "full", device: str = "meta") -> list[LaunchRecord]:
    """Launch records of one ``ModelNew`` forward at ``profile``'s shapes, without running kernels.

    Tensors live on ``device`` (``meta`` by default: no memory, no data), every Triton launch is
    recorded (grid, constexprs, num_warps / num_stages, tensor shapes and dtypes) and skipped.
    Runs the candidate's host code in this process: use it for trusted code (reference
    solutions, your own kernels), never for untrusted model output. Imports torch and triton.

    Raises:
        RuntimeError: the host code needs real data (e.g. ``.item()``) or fails on ``device``.
    """
    import inspect

    import torch

    from ascend_kernel_gym.tasks.runtime import exec_source, instantiate

    try:
        from triton.runtime.jit import JITFunction
    except ImportError as exc:  # pragma: no cover
        raise RuntimeError("triton is required to capture launches") from exc
    classes: list[type] = [JITFunction]
    try:
        from triton.runtime.interpreter import InterpretedFunction

        classes.append(InterpretedFunction)
    except ImportError:  # pragma: no cover
        pass
    tm = instantiate(task, profile)
    records: list[LaunchRecord] = []

    def recording_run(self: Any, *args: Any, grid: Any, warmup: bool = False, **kwargs: Any) -> None:
        if warmup:
            return None
        fn = getattr(self, "fn", None)
        sig = inspect.signature(fn)
        try:
            bound = sig.bind_partial(*args, **{k: v for k, v in kwargs.items() if k in sig.parameters})
            bound.apply_defaults()
            values = dict(bound.arguments)
        except TypeError:
            values = dict(zip(sig.parameters, args, strict=False))
        if callable(grid):
            grid = grid(values)
        grid_t = [int(g) for g in grid] if isinstance(grid, (tuple, list)) else [int(grid)]
        constexprs = {}
        for pname, param in sig.parameters.items():
            ann = param.annotation
            text = ann if isinstance(ann, str) else getattr(ann, "__name__", "")
            if str(text).split(".")[-1] == "constexpr" and pname in values:
                v = values[pname]
                constexprs[pname] = v if isinstance(v, (int, float, str, bool)) or v is None else repr(v)[:60]
        tensors = [
            [list(v.shape), str(v.dtype).replace("torch.", "")] for v in values.values() if isinstance(v, torch.Tensor)
        ]
        nw, ns = kwargs.get("num_warps"), kwargs.get("num_stages")
        records.append(
            LaunchRecord(
                kernel=fn.__name__,
                grid=grid_t,
                constexprs=constexprs,
                num_warps=nw if isinstance(nw, int) else None,
                num_stages=ns if isinstance(ns, int) else None,
                tensor_args=tensors,
            )
        )
        return None

    saved = [(cls, cls.run) for cls in classes]
    try:
        for cls in classes:
            cls.run = recording_run
        dev = torch.device(device)
        torch.manual_seed(0)
        with dev:  # factories without a device argument allocate on ``device`` (no data on meta)
            init = tm.get_init_inputs()
            inputs = [x.to(dev) if isinstance(x, torch.Tensor) else x for x in tm.get_inputs()]
        module = exec_candidate(code, exec_source)
        with dev:
            model = module.ModelNew(*init)
        if isinstance(model, torch.nn.Module):
            model = model.to(dev)
        with torch.no_grad():
            model(*inputs)
    except Exception as exc:
        raise RuntimeError(f"capturing launches on {device} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        for cls, run in saved:
            cls.run = run
    return records


def exec_candidate(code: str, exec_source: Any) -> Any:
    """Run ``code`` as a module from a real file (Triton reads kernel source with ``inspect``).

    Args:
        code: the module source.
        exec_source: :func:`ascend_kernel_gym.tasks.runtime.exec_source` (passed in so that this
            module imports nothing heavy).

    Returns:
        The executed module, registered in ``sys.modules``; its file lives until the process exits.
    """
    import atexit
    import os
    import shutil
    import sys
    import tempfile
    import uuid

    name = f"akg_capture_{uuid.uuid4().hex[:12]}"
    directory = tempfile.mkdtemp(prefix="akg-capture-")
    atexit.register(shutil.rmtree, directory, True)  # the file must outlive the kernels' first calls
    path = os.path.join(directory, f"{name}.py")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(code)
    module = exec_source(code, name, path)
    sys.modules[name] = module
    return module
