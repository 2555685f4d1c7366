"""Lower Triton kernels through triton-ascend's ``ttir`` and ``ttadapter`` stages.

This file runs as a script in the triton-ascend environment (:mod:`.lower_env`), never in the
package's own processes: it imports only the standard library and triton-ascend. It reads one
JSON request on stdin::

    {"module": "<source with the @triton.jit functions>", "arch": "Ascend910B3",
     "options": {...}, "timeout_s": 60,
     "kernels": [{"id": "...", "name": "...", "signature": {"x_ptr": "*fp32", "n": "i32"},
                  "constants": {"BLOCK": 1024}}]}

and writes one line per kernel, ``<REPLY_MARK><json>``, to its standard output as each kernel is
done (the caller still has the finished ones when a later kernel hangs). A reply holds ``ok``,
the ``stage`` that failed (``module``, ``frontend``, ``ttir``, ``ttadapter``), the compiler's
``error`` text, the adapter's exit ``returncode``, the adapter pass that crashed (``crash_pass``,
found by running the passes one by one again), the ``ttir`` text (on an adapter failure, for
the caller's diagnosis) and the ``ttadapter`` text on success.

The kernels are compiled from the module's function sources through ``ASTSource``: the module
holds only ``@triton.jit`` functions, imports of triton and math, and literal constants, and the
function bodies are read by Triton's code generator, never run by Python.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
import types
from typing import Any

REPLY_MARK = "AKG-LOWER-REPLY "
MAX_IR_CHARS = 600_000


def _reply(fd: int, data: dict[str, Any]) -> None:
    os.write(fd, (REPLY_MARK + json.dumps(data) + "\n").encode())


class _RecordingSubprocess(types.ModuleType):
    """Stands in for ``subprocess`` inside triton-ascend's compiler module: records the last
    command (to replay an adapter crash pass by pass) and bounds every run with a timeout."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__("subprocess")
        self.timeout_s = timeout_s
        self.last: list[str] = []

    def run(self, args: Any, *rest: Any, **kwargs: Any) -> subprocess.CompletedProcess[Any]:
        self.last = [str(a) for a in args] if isinstance(args, (list, tuple)) else [str(args)]
        kwargs.setdefault("timeout", self.timeout_s)
        return subprocess.run(args, *rest, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(subprocess, name)


def _crash_pass(command: list[str], ttir: str, scratch: str, timeout_s: float) -> str | None:
    """The first adapter pass whose prefix of the pipeline fails, found by replaying ``command``."""
    if len(command) < 3:
        return None
    passes: list[str] = []
    skip = False
    for arg in command[2:]:
        if skip:
            skip = False
            continue
        if arg == "-o":
            skip = True
        elif arg.startswith("--") and arg != "--mlir-print-debuginfo":
            passes.append(arg)
    source = os.path.join(scratch, "replay.ttir.mlir")
    with open(source, "w") as handle:
        handle.write(ttir)
    for count in range(1, len(passes) + 1):
        try:
            done = subprocess.run(
                [command[0], source, *passes[:count], "-o", os.devnull], capture_output=True, timeout=timeout_s
            )
        except subprocess.TimeoutExpired:
            return passes[count - 1].split("=")[0] + " (timed out)"
        if done.returncode != 0:
            return passes[count - 1].split("=")[0]
    return None


def _constants(values: dict[str, Any], tl: Any) -> dict[str, Any]:
    """Launch constants as Triton wants them: dtype names (``fp16``) become ``tl.dtype`` values."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        if isinstance(value, str):
            try:
                out[name] = tl.dtype(value)
                continue
            except Exception:  # noqa: BLE001, S110 - not a dtype name: a plain string constant
                pass
        out[name] = value
    return out


def _lower_one(kernel: dict[str, Any], module: Any, request: dict[str, Any], recorder: _RecordingSubprocess) -> dict:
    import triton.language as tl
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource, make_backend

    reply: dict[str, Any] = {"id": kernel["id"], "name": kernel["name"], "ok": False}
    started = time.perf_counter()
    fn = getattr(module, kernel["name"], None)
    if fn is None or not hasattr(fn, "arg_names"):
        reply.update(stage="module", error=f"{kernel['name']} is not a @triton.jit function of the module")
        return reply
    target = GPUTarget("npu", request["arch"], 0)
    backend = make_backend(target)
    # The globals of the backend's compiler module as Triton loaded it (not under its import name).
    type(backend).add_stages.__globals__["subprocess"] = recorder
    options = backend.parse_options(dict(request.get("options") or {}))
    stages: dict[str, Any] = {}
    backend.add_stages(stages, options)
    source = ASTSource(fn, dict(kernel["signature"]), _constants(kernel.get("constants") or {}, tl))
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    metadata: dict[str, Any] = {"hash": kernel["id"], "target": target, **options.__dict__}
    stage = "frontend"
    ttir_text = ""
    try:
        module_ir = source.make_ir(options, backend.get_codegen_implementation(), backend.get_module_map(), context)
        stage = "ttir"
        module_ir = stages["ttir"](module_ir, metadata)
        ttir_text = str(module_ir)
        stage = "ttadapter"
        recorder.last = []
        adapter = stages["ttadapter"](module_ir, metadata)
    except Exception as exc:  # noqa: BLE001 - every compiler failure is the reply
        reply["stage"] = stage
        stderr = getattr(exc, "stderr", None)
        text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else str(stderr or "")
        reply["error"] = text or f"{type(exc).__name__}: {exc}"
        reply["exception"] = type(exc).__name__
        if isinstance(exc, subprocess.TimeoutExpired):
            reply["timed_out"] = True
        returncode = getattr(exc, "returncode", None)
        if isinstance(returncode, int):
            reply["returncode"] = returncode
        if stage == "ttadapter":
            reply["ttir"] = ttir_text[:MAX_IR_CHARS]
            if isinstance(returncode, int) and returncode < 0 and recorder.last:
                reply["crash_pass"] = _crash_pass(recorder.last, ttir_text, os.getcwd(), recorder.timeout_s)
    else:
        reply["ok"] = True
        reply["stage"] = "ttadapter"
        reply["ttadapter"] = str(adapter)[:MAX_IR_CHARS]
        reply["truncated"] = len(str(adapter)) > MAX_IR_CHARS
    reply["seconds"] = round(time.perf_counter() - started, 4)
    return reply


def main() -> int:
    """Read the request, lower each kernel, write a reply line per kernel."""
    request = json.loads(sys.stdin.read())
    reply_fd = os.dup(1)
    os.dup2(2, 1)  # what triton prints goes to stderr; stdout carries only the replies
    scratch = os.getcwd()
    path = os.path.join(scratch, "kernel.py")
    with open(path, "w") as handle:
        handle.write(request["module"])
    started = time.perf_counter()
    try:
        recorder = _RecordingSubprocess(float(request.get("timeout_s") or 60))
        spec = importlib.util.spec_from_file_location("akg_lowered_kernels", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - every kernel gets the reason
        for kernel in request["kernels"]:
            _reply(reply_fd, {"id": kernel["id"], "name": kernel["name"], "ok": False, "stage": "module",
                              "error": f"{type(exc).__name__}: {exc}"})  # fmt: skip
        return 0
    setup_s = round(time.perf_counter() - started, 4)
    for kernel in request["kernels"]:
        try:
            reply = _lower_one(kernel, module, request, recorder)
        except Exception as exc:  # noqa: BLE001 - a failure of this script, reported per kernel
            reply = {"id": kernel["id"], "name": kernel["name"], "ok": False, "stage": "worker",
                     "error": f"{type(exc).__name__}: {exc}"}  # fmt: skip
        reply["setup_seconds"] = setup_s
        _reply(reply_fd, reply)
    return 0


if __name__ == "__main__":
    sys.exit(main())
