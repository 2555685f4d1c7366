"""A lowering failure as the user sees it: the compiler's text trimmed, a clear first line, a fix and
a knowledge-base entry.

The compiler's own wording is kept (the knowledge-base entries trigger on it); what is added is
where it failed (triton-ascend's front end, its Triton-IR passes or ``triton-adapter-opt``), the
candidate's line, and for an adapter crash the pass that crashed and the construct the Triton IR
shows (a pointer chosen at run time, see :func:`~.lower_ir.pointer_choices`).
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass
from typing import Any

from ascend_kernel_gym.ascend.lower_ir import pointer_choices

MAX_ERROR_CHARS = 1500
#: (pattern on the compiler's text, knowledge-base entry, fix), first match wins
FRONTEND_PATTERNS: tuple[tuple[str, str, str], ...] = (
    (r"unsupported AST node type: (Break|Continue)", "no-return-break-while",
     "replace break / continue by a fixed-trip loop with a guard (`for i in range(N): if cond: ...`)"),
    (r"\[fp8, fp64\] is unsupported on Ascend|unexpected type fp8", "unsupported-unsigned-and-fp64",
     "compute in fp32 (or fp16 / bf16): Ascend has no fp64 or fp8 arithmetic"),
    (r"unsupported tensor index", "no-python-tensor-slicing",
     "select elements with masks and tl.where / tl.sum instead of Python indexing of a tensor"),
    (r"input_precision == tf32|allow_tf32 is deprecated", "dot-input-precision",
     "drop allow_tf32 / input_precision='tf32'; use the default precision or input_precision='hf32'"),
    (r"NYI: [lr]hs_format|dot_scaled", "dot-scaled-limits", "use tl.dot on fp16 / bf16 operands"),
    (r"arange's arguments must be of type tl.constexpr", "arange-rules-ascend",
     "give tl.arange constexpr bounds (a BLOCK parameter) and mask the tail"),
    (r"has no attribute|is not defined|unexpected keyword argument|takes \d+ positional", "lowering-newer-triton-api",
     "use only what Triton 3.2 offers (triton-ascend is built on it): no newer tl.* functions or keywords"),
)  # fmt: skip
#: a stack frame of a crash dump: ``#3 0x55...`` or ``3  triton-adapter-opt 0x55...``
_FRAME = re.compile(r"#?\d+\s+(?:\S+\s+)?0x[0-9a-f]+")
_NOISE = ("///---", "Stack dump without symbol", "set the environment var `LLVM_SYMBOLIZER_PATH`")
_FRONTEND_AT = re.compile(r"at (\d+):(\d+):")
_ASSERTION = re.compile(r"Assertion `(.{0,160}?)' failed")
_MLIR_ERROR = re.compile(r'(?:loc\("[^"]*":(\d+):\d+\)|[\w./-]*:(\d+):\d+): error: ([^\n]+)')
_EXCEPTION_LINE = re.compile(r"^(\w+(?:Error|Exception|Construct))\((.*)\)$|^(\w+Error): (.*)$")


@dataclass
class LoweringError:
    """One kernel's lowering failure, ready to show."""

    stage: str
    first_line: str
    detail: str
    kb_id: str
    fix: str
    line: int | None = None
    crash_pass: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def trim(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """The compiler's text without stack-dump frames, banner lines and temporary paths, cut to ``limit``."""
    kept: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or _FRAME.match(stripped) or stripped.startswith(_NOISE):
            continue
        if stripped.startswith("[INFO]: The compiled kernel cache is in"):
            continue
        if stripped.startswith("0.\tProgram arguments:") or stripped.startswith("0. Program arguments:"):
            stripped = "0. Program arguments: triton-adapter-opt kernel.ttir.mlir <triton-ascend's passes>"
        kept.append(re.sub(r"/[^\s\"']*/(kernel\.(?:ttir\.mlir|ttadapter\.mlir|py))", r"\1", stripped))
    out = "\n".join(kept)
    return out if len(out) <= limit else out[: limit - 20].rstrip() + "\n[... cut ...]"


def _signal_name(returncode: int | None) -> str:
    if returncode is None or returncode >= 0:
        return f"exit status {returncode}"
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _frontend(text: str, def_line: int) -> LoweringError:
    at = _FRONTEND_AT.search(text)
    line = def_line + int(at.group(1)) - 1 if at and def_line else None
    last = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    message = last[-1] if last else text.strip()
    match = _EXCEPTION_LINE.match(message)
    if match and match.group(2):
        message = match.group(2).strip()[1:-1] if match.group(2).strip()[:1] in "'\"" else match.group(2).strip()
    elif match:
        message = match.group(4).strip()
    kb_id, fix = "lowering-frontend-rejects", "rewrite the construct the message names with what triton-ascend supports"
    for pattern, entry, advice in FRONTEND_PATTERNS:
        if re.search(pattern, text):
            kb_id, fix = entry, advice
            break
    where = f" at line {line}" if line else ""
    return LoweringError(
        "frontend",
        f"triton-ascend's front end rejects the kernel{where}: {message[:240]}",
        trim(text),
        kb_id,
        fix,
        line,
    )


def _adapter(reply: dict[str, Any]) -> LoweringError:
    text = str(reply.get("error") or "")
    returncode = reply.get("returncode")
    crash_pass = reply.get("crash_pass")
    choices = pointer_choices(str(reply.get("ttir") or ""))
    assertion = _ASSERTION.search(text)
    mlir_error = _MLIR_ERROR.search(text)
    line = None
    if reply.get("timed_out"):
        head = "triton-adapter-opt did not finish in time"
    elif isinstance(returncode, int) and returncode < 0:
        head = f"triton-adapter-opt crashed ({_signal_name(returncode)})"
    else:
        head = "triton-adapter-opt failed"
    if crash_pass:
        head += f" in its {crash_pass} pass"
    kb_id, fix = "lowering-adapter-crash", "simplify the construct at the line named; see the knowledge-base entry"
    if choices:
        choice = choices[0]
        line = choice.get("line")
        where = f" at line {line}" if line else ""
        loop = " inside a loop" if choice.get("in_loop") else ""
        if choice["kind"] == "select":
            head += f": a pointer chosen at run time (tl.where or if / else between pointers){loop}{where}"
        else:
            head += f": a pointer assigned in an if / else branch{loop}{where}"
        kb_id = "lowering-pointer-select-or-branch"
        fix = (
            "keep one base pointer and choose offsets (or load both and tl.where the values); advance pointers "
            "unconditionally in loops (offset = i * stride)"
        )
    elif assertion:
        head += f": assertion `{assertion.group(1)}` failed"
        if "TypeRange with null types" in assertion.group(1):
            kb_id, fix = "scalar-div-rn-lowering-crash", "use a / b on scalars instead of tl.div_rn / precise division"
    elif mlir_error:
        line = int(mlir_error.group(1) or mlir_error.group(2) or 0) or None
        head += f": {mlir_error.group(3).strip()[:200]}" + (f" (line {line})" if line else "")
        kb_id = "lowering-frontend-rejects"
    return LoweringError("ttadapter", head, trim(text), kb_id, fix, line, crash_pass)


def classify(reply: dict[str, Any], def_line: int = 0) -> LoweringError:
    """The :class:`LoweringError` of one failed worker reply (``ok`` False)."""
    stage = str(reply.get("stage") or "worker")
    text = str(reply.get("error") or "")
    if stage == "frontend":
        return _frontend(text, def_line)
    if stage == "ttadapter":
        return _adapter(reply)
    if stage == "ttir":
        first = f"triton-ascend's Triton-IR passes failed: {trim(text, 200)}"
        fix = "simplify the kernel at the construct the message names"
        return LoweringError("ttir", first, trim(text), "lowering-frontend-rejects", fix)
    return LoweringError(stage, f"the lowering could not run ({stage}): {trim(text, 200)}", trim(text), "", "")
