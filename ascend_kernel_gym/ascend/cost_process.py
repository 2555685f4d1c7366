"""Running the cost model on a candidate: in a fresh interpreter process, or re-executed in this one.

:func:`estimate_kernel` / :func:`estimate_variants` run one task + candidates in a fresh Python
process (``python -m ascend_kernel_gym.ascend.cost_process``, :func:`child_main`) with
``TRITON_INTERPRET=1``, so they work from CUDA / NPU processes, and return the estimate dicts.
:func:`estimate_in_process` re-executes a candidate's source under the interpreter in this process
(evaluator children on CUDA / NPU). All of them run the candidate unsandboxed: trusted code only;
the interpreter's memory check (:mod:`ascend_kernel_gym.backends.interpreter_memcheck`) is installed
before a candidate's source runs, so its kernels touch only the tensors of their own launches.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

from ascend_kernel_gym.ascend.chips import ChipProfile, resolve_chip
from ascend_kernel_gym.ascend.counters import instrument
from ascend_kernel_gym.ascend.estimator import LABEL, estimate
from ascend_kernel_gym.ascend.roofline import task_roofline

__all__ = ["child_main", "estimate_in_process", "estimate_kernel", "estimate_variants"]

_RESULT_MARK = "AKG_COST_MODEL_RESULT "


def estimate_kernel(
    task: Any,
    code: str,
    profile: str = "full",
    chip: str | ChipProfile = "910B3",
    *,
    max_programs: int | None = 64,
    roofline: bool = True,
    seed: int = 0,
    timeout_s: float = 900.0,
    threads: int = 1,
) -> dict[str, Any]:
    """Estimate ``code``'s time for ``task`` at ``profile``'s shapes in a fresh interpreter process.

    The child process sets ``TRITON_INTERPRET=1`` before importing triton and hides GPUs, so this
    works from a CUDA or NPU process. It runs the candidate's host code and kernels unsandboxed:
    use it for trusted code (reference solutions, your own variants), not for untrusted output.

    Args:
        task: a :class:`~ascend_kernel_gym.tasks.task.Task`.
        code: the candidate source (defines ``ModelNew``).
        profile: shape profile (``full`` for device sizes).
        chip: chip profile for the estimate.
        max_programs: programs run per launch before sampling (see :func:`sample_program_ids`);
            ``None`` runs every program.
        roofline: also compute :func:`task_roofline` (needed for the fraction and ``est_speedup``).
        seed: input seed.
        timeout_s: wall-clock limit of the child.
        threads: torch threads in the child.

    Returns:
        :func:`estimate`'s dict plus ``counters`` (raw per-launch counts), ``profile`` and
        ``seconds`` (wall time of the interpreter pass); on a failure
        ``{"label": "estimate", "chip": ..., "error": "..."}``.
    """
    return estimate_variants(
        task,
        [code],
        profile,
        chip,
        max_programs=max_programs,
        roofline=roofline,
        seed=seed,
        timeout_s=timeout_s,
        threads=threads,
    )[0]


def estimate_variants(
    task: Any,
    codes: list[str],
    profile: str = "full",
    chip: str | ChipProfile = "910B3",
    *,
    max_programs: int | None = 64,
    roofline: bool = True,
    seed: int = 0,
    timeout_s: float = 900.0,
    threads: int = 1,
) -> list[dict[str, Any]]:
    """:func:`estimate_kernel` for several candidates of one task in one child process (the
    imports, the inputs and the roofline are paid once). One dict per code, in order; a failing
    candidate gets an ``error`` entry and does not stop the others."""
    if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
        raise TypeError("codes must be a list of source strings")
    profile_obj = resolve_chip(chip)
    payload = {
        "task": task,
        "codes": codes,
        "profile": profile,
        "chip": profile_obj,
        "max_programs": max_programs,
        "roofline": roofline,
        "seed": seed,
        "threads": threads,
    }
    env = dict(os.environ)
    env["TRITON_INTERPRET"] = "1"
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["ASCEND_RT_VISIBLE_DEVICES"] = ""
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(max(1, threads))

    def failure(message: str) -> list[dict[str, Any]]:
        return [{"label": LABEL, "chip": profile_obj.name, "error": message} for _ in codes]

    try:
        proc = subprocess.run(
            [sys.executable, "-m", "ascend_kernel_gym.ascend.cost_process"],
            input=pickle.dumps(payload),
            capture_output=True,
            timeout=timeout_s,
            env=env,
            cwd=root,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return failure(f"timed out after {timeout_s:g} s")
    stdout = proc.stdout.decode("utf-8", errors="replace")
    for line in reversed(stdout.splitlines()):
        if line.startswith(_RESULT_MARK):
            results = json.loads(line[len(_RESULT_MARK) :])
            if isinstance(results, list) and len(results) == len(codes):
                return results
            if isinstance(results, dict) and "error" in results:
                return failure(str(results["error"]))
    tail = proc.stderr.decode("utf-8", errors="replace")[-2000:]
    return failure(f"child exited with {proc.returncode}: {tail}")


def child_main() -> None:  # pragma: no cover - exercised through estimate_kernel in tests
    """The child process of :func:`estimate_variants`: a pickled payload on stdin, one marked JSON line out."""
    payload = pickle.loads(sys.stdin.buffer.read())  # noqa: S301 - written by estimate_variants, same user
    try:
        result: Any = _run_estimates(payload)
    except BaseException as exc:  # noqa: BLE001 - report, never hang
        import traceback

        result = {"label": LABEL, "error": f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-1500:]}"}
    sys.stdout.write(_RESULT_MARK + json.dumps(result, default=str) + "\n")
    sys.stdout.flush()


def _run_estimates(payload: dict[str, Any]) -> list[dict[str, Any]]:
    import time
    import traceback

    import torch

    from ascend_kernel_gym.tasks.runtime import instantiate

    torch.set_num_threads(max(1, int(payload.get("threads") or 1)))
    task = payload["task"]
    seed = int(payload.get("seed") or 0)
    tm = instantiate(task, payload["profile"])
    torch.manual_seed(seed)
    init = tm.get_init_inputs()
    reference = tm.Model(*init)
    torch.manual_seed(seed + 1)
    inputs = tm.get_inputs()
    roof = task_roofline(reference, inputs, task.id) if payload.get("roofline") else None
    chip = payload["chip"]
    results = []
    for code in payload["codes"]:
        start = time.perf_counter()
        try:
            torch.manual_seed(seed + 2)
            result = estimate_in_process(
                code, init, inputs, chip, reference=reference, roofline=roof, max_programs=payload.get("max_programs")
            )
        except Exception as exc:  # noqa: BLE001 - one failing candidate does not stop the others
            result = {
                "label": LABEL,
                "chip": getattr(chip, "name", None),
                "error": f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-1200:]}",
            }
        result["profile"] = payload["profile"]
        result["seconds"] = round(time.perf_counter() - start, 3)
        results.append(result)
    return results


def estimate_in_process(
    code: str,
    init_inputs: list[Any],
    inputs: list[Any],
    chip: str | ChipProfile = "910B3",
    *,
    reference: Any = None,
    roofline: dict[str, Any] | None = None,
    max_programs: int | None = 64,
    filename: str | None = None,
) -> dict[str, Any]:
    """Estimate a candidate in this process by re-executing its source under Triton's interpreter.

    For evaluator children on CUDA / NPU (the candidate's compiled kernels are left alone): the
    source is executed again as a fresh module with ``TRITON_INTERPRET=1`` set while its
    ``@triton.jit`` decorators run (Triton reads the variable when decorating), ``ModelNew`` is
    built from ``init_inputs`` (parameters copied from ``reference`` where names and shapes
    match) and called once on CPU copies of ``inputs`` inside :func:`instrument`. Needs a Triton
    whose ``jit`` honours the variable at decoration time (checked: triton 3.6 and 3.9).

    Args:
        code: the candidate source.
        init_inputs: ``get_init_inputs()`` of the task.
        inputs: one set of ``get_inputs()`` (any device; copied to the CPU).
        chip: chip profile of the estimate.
        reference: the task's model, for parameters and (without ``roofline``) the roofline.
        roofline: a precomputed :func:`task_roofline` (else computed from ``reference`` if given).
        max_programs: programs run per launch before sampling.
        filename: execute from this file (default: a temporary copy of ``code``).

    Returns:
        :func:`estimate`'s dict plus ``counters`` (and ``min_bytes`` / ``min_flops`` with a roofline).
    """
    import torch

    from ascend_kernel_gym.ascend.capture import exec_candidate
    from ascend_kernel_gym.backends import interpreter_memcheck
    from ascend_kernel_gym.tasks.runtime import exec_source

    def to_cpu(value: Any) -> Any:
        return value.detach().to("cpu").clone() if isinstance(value, torch.Tensor) else value

    cpu_inputs = [to_cpu(x) for x in inputs]
    cpu_init = [to_cpu(x) for x in init_inputs]
    # Before the candidate's source runs: its interpreted kernels touch only their launches' tensors.
    if not interpreter_memcheck.install():
        raise RuntimeError("the interpreter's memory check could not be installed")
    previous = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        if filename is not None:
            import uuid

            module = exec_source(code, f"akg_interp_{uuid.uuid4().hex[:12]}", filename)
            sys.modules[module.__name__] = module
        else:
            module = exec_candidate(code, exec_source)
        candidate = module.ModelNew(*cpu_init)
        ref_cpu = None
        if reference is not None:
            import copy

            ref_cpu = copy.deepcopy(reference).to("cpu") if isinstance(reference, torch.nn.Module) else reference
            if isinstance(candidate, torch.nn.Module):
                candidate = candidate.to("cpu")
            _copy_parameters(ref_cpu, candidate)
        if roofline is None and ref_cpu is not None:
            roofline = task_roofline(ref_cpu, cpu_inputs)
        with torch.no_grad(), instrument(max_programs) as counters:
            candidate(*cpu_inputs)
    finally:
        if previous is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = previous
    result = estimate(counters, roofline, chip)
    result["counters"] = counters.to_dict()
    if roofline is not None and "min_flops_16" in roofline:
        result["min_bytes"] = roofline["min_bytes"]
        result["min_flops"] = roofline["min_flops_16"] + roofline.get("min_flops_32", 0.0)
    return result


def _copy_parameters(reference: Any, candidate: Any) -> None:
    import torch

    if isinstance(reference, torch.nn.Module) and isinstance(candidate, torch.nn.Module):
        state = reference.state_dict()
        mine = candidate.state_dict()
        matching = {k: v for k, v in state.items() if k in mine and tuple(mine[k].shape) == tuple(v.shape)}
        if matching:
            with torch.no_grad():
                candidate.load_state_dict(matching, strict=False)


if __name__ == "__main__":  # pragma: no cover
    child_main()
