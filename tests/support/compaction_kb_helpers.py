"""Helpers for the compaction and KB-wrapper tests (a unique module name for pytest's rootdir imports).

``ScriptedEvaluator`` answers instantly from markers in the code, so the wrappers can be driven
over the real ``AscendTritonEnv`` through many turns in milliseconds. Tests that need the real
evaluator on the interpreter use ``real_interpreter_env`` instead.
"""

from __future__ import annotations

import threading

from ascend_kernel_gym.evaluation.result import ErrorType, EvalRequest, EvalResult, Stage

RELU = "core/L1/relu"

#: A compile error message in the style triton-ascend prints for a UB overflow.
UB_OVERFLOW = (
    "MLIRCompilationError: [ConvertLinalgRToBinary] encounters error: Failed to run BishengHIR pipeline: "
    "ub overflow, requires 3145728 bits while 1572864 bits available! (possible reason: multi-buffer)"
)


class ScriptedEvaluator:
    """Markers in the code decide the result: ASCENDWARN (correct, with an Ascend rule finding), CORRECT,
    UBOVERFLOW, GRID, FALLBACK, else a value mismatch."""

    backend = "interpreter"

    def __init__(self) -> None:
        self.requests: list[EvalRequest] = []
        self._lock = threading.Lock()

    def __deepcopy__(self, memo: dict) -> ScriptedEvaluator:
        return self

    def evaluate(self, request: EvalRequest) -> EvalResult:
        with self._lock:
            self.requests.append(request)
        code = request.code
        base = dict(task_id=request.task.id, backend="interpreter", profile=request.profile or "small", code_hash="h")
        if "ASCENDWARN" in code:
            finding = {
                "rule": "grid_oversubscribed",
                "severity": "warning",
                "kb_id": "grid-persistent-physical-cores",
                "message": "relu_kernel: 16000 programs on 40 vector cores of 910B3 = 400 rounds",
                "value": 16000,
                "limit": 80,
                "fix": "launch one program per core and loop",
                "kernel": "relu_kernel",
                "line": 9,
            }
            return EvalResult(
                **base, stage=Stage.DONE, format_ok=True, static_ok=True, compiled=True, correct=True,
                ascend_checks=[finding], warnings=[f"ascend[{finding['rule']}] {finding['message']}"],
            )  # fmt: skip
        if "CORRECT" in code:
            return EvalResult(**base, stage=Stage.DONE, format_ok=True, static_ok=True, compiled=True, correct=True)
        if "UBOVERFLOW" in code:
            return EvalResult(
                **base, stage=Stage.COMPILE, format_ok=True, static_ok=True,
                error_type=ErrorType.COMPILE_ERROR, error_message=UB_OVERFLOW,
            )  # fmt: skip
        if "GRID" in code:
            return EvalResult(
                **base, stage=Stage.COMPILE, format_ok=True, static_ok=True, error_type=ErrorType.COMPILE_ERROR,
                error_message="RuntimeError: coreDim=98304 can't be greater than UINT16_MAX",
            )  # fmt: skip
        if "FALLBACK" in code:
            return EvalResult(
                **base, stage=Stage.CORRECTNESS, format_ok=True, static_ok=True, compiled=True, correct=True,
                hack=True, hack_reasons=["torch.relu ran inside ModelNew.forward"], error_type=ErrorType.TORCH_FALLBACK,
                error_message="PyTorch operator aten::relu did the work",
            )  # fmt: skip
        return EvalResult(
            **base, stage=Stage.CORRECTNESS, format_ok=True, static_ok=True, compiled=True,
            error_type=ErrorType.VALUE_MISMATCH, error_message="max abs error 0.5 > atol 1e-05", max_abs_err=0.5,
        )  # fmt: skip


def kernel_answer(marker: str, filler_lines: int = 0) -> str:
    """A model answer with a fenced block holding ``marker`` and ``filler_lines`` lines of padding code."""
    filler = "\n".join(f"# padding line {i}: offsets = pid * BLOCK + tl.arange(0, BLOCK)" for i in range(filler_lines))
    code = f"# {marker}\nimport torch\nimport triton\n{filler}\nclass ModelNew(torch.nn.Module):\n    pass\n"
    return f"Plan: try again.\n```python\n{code}```\n"


def make_env(max_turns: int = 12, evaluator: ScriptedEvaluator | None = None, **kwargs):
    """The real AscendTritonEnv on the relu task with the scripted evaluator."""
    from ascend_kernel_gym.envs.ascend_triton import AscendTritonEnv

    return AscendTritonEnv(
        task_ids=[RELU],
        backend="interpreter",
        evaluator=evaluator or ScriptedEvaluator(),
        max_turns=max_turns,
        **kwargs,
    )


def stub_feedback(monkeypatch) -> None:
    """Replace the evaluator's feedback renderer by a short deterministic text (unit tests only)."""
    import ascend_kernel_gym.envs.ascend_triton as module

    monkeypatch.setattr(
        module,
        "_render_feedback",
        lambda result: f"{result.error_type.value}: {result.error_message}" if result.error_message else "correct",
    )
