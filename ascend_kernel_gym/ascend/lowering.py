"""Lowering a candidate's launched kernels through triton-ascend's own compiler (issue 23).

Each distinct launched kernel (name, signature, constexprs, as the launch records hold them) is
compiled by triton-ascend's front end, its Triton-IR passes and ``triton-adapter-opt`` (the
``ttir`` and ``ttadapter`` stages) for the chip profile's SoC, in a process of the triton-ascend
environment (:mod:`.lower_env`) that the caller supplies as a *runner* (the evaluator's runs in
the OS sandbox: :mod:`ascend_kernel_gym.evaluation.lower_stage`). The stages after the adapter
(``bishengir-compile``, from CANN) are not run, so the lowering proves that the kernel gets through
triton-ascend's front half, not that it compiles to a binary.

Per kernel the report says: lowered or not; the compiler's own error text, trimmed, with a clear
first line (:mod:`.lower_errors`); the core type; the on-chip bytes allocated against the chip's
UB (vector buffers, doubled when the chip double-buffers by default) and L1 (cube operands); and
the IR facts (:mod:`.lower_ir`). Results are cached by kernel source, signature and target.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ascend_kernel_gym.ascend.chips import ChipProfile, resolve_chip
from ascend_kernel_gym.ascend.contexts import launch_dict
from ascend_kernel_gym.ascend.lower_env import TRITON_ASCEND_VERSION, cache_root
from ascend_kernel_gym.ascend.lower_errors import classify
from ascend_kernel_gym.ascend.lower_ir import adapter_facts
from ascend_kernel_gym.ascend.lower_source import KernelSpec, LoweringModule, kernel_specs, lowering_module
from ascend_kernel_gym.evaluation.result import LaunchRecord

#: bump when the worker's replies or the facts read from them change (invalidates cached results)
WORKER_VERSION = "1"
WORKER_PATH = Path(__file__).with_name("lower_worker.py")
#: (request, timeout in seconds) -> one reply dict per kernel that finished (see lower_worker.py)
Runner = Callable[[dict[str, Any], float], list[dict[str, Any]]]
#: ``LoweringReport`` finding rules, with their severity
RULE_FAILED = "lowering_failed"
RULE_UB = "lowered_ub_overflow"
RULE_L1 = "lowered_l1_overflow"
RULE_LOWERED = "lowered"
RULE_SKIPPED = "lowering_skipped"
RULE_UNAVAILABLE = "lowering_unavailable"
#: (chip SoC prefix, compiler options): targets whose defaults differ from triton-ascend's A2 / A3 ones
TARGET_OPTIONS = (
    ("Ascend950", {"compile_on_910_95": True, "multibuffer": False, "enable_auto_bind_sub_block": False,
                   "enable_select_analysis": True}),
    ("Ascend910_95", {"compile_on_910_95": True, "multibuffer": False, "enable_auto_bind_sub_block": False,
                      "enable_select_analysis": True}),
)  # fmt: skip
_CORE_TYPES = {"aiv": "vector cores only (aiv)", "aic": "cube cores only (aic)", "mix": "cube and vector cores (mix)"}


def target_of(chip: ChipProfile) -> tuple[str, dict[str, Any]]:
    """(the SoC name triton-ascend is given, its compiler options) for ``chip``."""
    for prefix, options in TARGET_OPTIONS:
        if chip.soc.startswith(prefix):
            return chip.soc, dict(options)
    return chip.soc, {}


def _kb(size: int | None) -> str:
    return "?" if size is None else f"{size / 1024:.1f} KB"


@dataclass
class KernelLowering:
    """The outcome for one distinct launched kernel.

    ``status``: ``lowered``, ``failed``, ``skipped`` (not attempted: see ``notes``) or ``timeout``.
    """

    kernel: str
    spec: dict[str, Any]
    status: str
    error: dict[str, Any] | None = None
    facts: dict[str, Any] | None = None
    budget: dict[str, Any] | None = None
    seconds: float = 0.0
    cached: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def over_budget(self) -> list[str]:
        """The on-chip memories this kernel overflows (``UB``, ``L1``)."""
        budget = self.budget or {}
        return [name for name in ("UB", "L1") if budget.get(f"{name.lower()}_over")]

    def to_dict(self) -> dict[str, Any]:
        """The record findings carry (without ``seconds`` and ``cached``: results stay reproducible)."""
        return {
            "kernel": self.kernel,
            "status": self.status,
            "signature": self.spec.get("signature"),
            "constants": self.spec.get("constants"),
            "signature_exact": self.spec.get("exact"),
            "error": self.error,
            "core_type": (self.facts or {}).get("core_type"),
            "budget": self.budget,
            "facts": self.facts,
            "notes": list(self.notes),
        }


def budget_of(facts: dict[str, Any], chip: ChipProfile) -> dict[str, Any]:
    """On-chip bytes one program of the kernel allocates against ``chip``'s UB and L1.

    Vector buffers (UB) and cube operands (L1) count twice when the chip double-buffers by default
    (``multibuffer``: the next tile loads while the current one is used).
    """
    factor = 2 if chip.multibuffer_default else 1
    vector = int(facts.get("vector_bytes") or 0)
    cube = int(facts.get("cube_bytes") or 0)
    ub_need, l1_need = vector * factor, cube * factor
    allocations = facts.get("allocations") or []
    largest = max(allocations, key=lambda a: a.get("bytes") or 0, default=None)
    return {
        "factor": factor,
        "ub_bytes": vector,
        "ub_need": ub_need,
        "ub_limit": chip.ub_bytes,
        "ub_over": bool(chip.ub_bytes and ub_need > chip.ub_bytes),
        "l1_bytes": cube,
        "l1_need": l1_need,
        "l1_limit": chip.l1_bytes,
        "l1_over": bool(chip.l1_bytes and l1_need > chip.l1_bytes),
        "accumulator_bytes": facts.get("accumulator_bytes"),
        "l0c_limit": chip.l0c_bytes,
        "largest_buffer": largest,
        "dynamic_allocations": facts.get("dynamic_allocations", 0),
    }


@dataclass
class LoweringReport:
    """All kernels of one candidate; :meth:`findings` turns it into Ascend-check findings."""

    chip: str
    arch: str
    available: bool
    reason: str = ""
    kernels: list[KernelLowering] = field(default_factory=list)
    seconds: float = 0.0
    skipped_functions: dict[str, str] = field(default_factory=dict)

    @property
    def failed(self) -> list[KernelLowering]:
        """Kernels that did not lower or overflow an on-chip memory."""
        return [k for k in self.kernels if k.status == "failed" or k.over_budget]

    def to_dict(self) -> dict[str, Any]:
        return {
            "chip": self.chip,
            "arch": self.arch,
            "triton_ascend": TRITON_ASCEND_VERSION,
            "available": self.available,
            "reason": self.reason,
            "seconds": round(self.seconds, 4),
            "kernels": [k.to_dict() for k in self.kernels],
            "skipped_functions": dict(self.skipped_functions),
        }

    def findings(self) -> list[dict[str, Any]]:
        """Findings in the Ascend checks' format (``rule``, ``severity``, ``value``, ``limit``,
        ``message``, ``fix``, ``kb_id``, ``kernel``, ``line``) plus ``layer`` and the kernel's
        ``lowering`` record; errors first. ``info`` findings report lowered and skipped kernels."""
        tag = f"triton-ascend {TRITON_ASCEND_VERSION} for {self.arch}"
        if not self.available:
            return [_finding(RULE_UNAVAILABLE, "info", f"not available: {self.reason}")]
        out: list[dict[str, Any]] = []
        for item in self.kernels:
            record = item.to_dict()
            common = {"kernel": item.kernel, "record": record}
            if item.status == "failed" and item.error:
                error = item.error
                message = f"{item.kernel} does not lower ({tag}): {error['first_line']}"
                out.append(
                    _finding(
                        RULE_FAILED, "error", message, value=error.get("stage"), fix=error.get("fix", ""),
                        kb_id=error.get("kb_id", ""), line=error.get("line"), detail=error.get("detail"), **common,
                    )
                )  # fmt: skip
                continue
            if item.status in ("skipped", "timeout"):
                why = "; ".join(n for n in item.notes if n) or item.status
                out.append(_finding(RULE_SKIPPED, "info", f"{item.kernel} not lowered: {why}", **common))
                continue
            budget = item.budget or {}
            largest = budget.get("largest_buffer") or {}
            where = ""
            if largest.get("line"):
                where = f"; the largest buffer, {_kb(largest.get('bytes'))}, is at line {largest['line']}"
            doubled = " (x2: double buffering)" if budget.get("factor") == 2 else ""
            if budget.get("ub_over"):
                message = (
                    f"{item.kernel} allocates {_kb(budget['ub_need'])} of vector buffers per program{doubled} "
                    f"but the Unified Buffer holds {_kb(budget['ub_limit'])} ({tag}){where}"
                )
                fix = "halve BLOCK until the tiles fit, or loop over sub-blocks inside the kernel"
                out.append(
                    _finding(
                        RULE_UB, "error", message, value=budget["ub_need"], limit=budget["ub_limit"], fix=fix,
                        kb_id="lowering-ub-overflow", line=largest.get("line"), **common,
                    )
                )  # fmt: skip
            if budget.get("l1_over"):
                message = (
                    f"{item.kernel} stages {_kb(budget['l1_need'])} of tl.dot operands per program{doubled} "
                    f"but L1 holds {_kb(budget['l1_limit'])} ({tag})"
                )
                fix = "use smaller BLOCK_M / BLOCK_N / BLOCK_K for the tl.dot tiles"
                out.append(
                    _finding(
                        RULE_L1, "error", message, value=budget["l1_need"], limit=budget["l1_limit"], fix=fix,
                        kb_id="l0-buffer-limits", line=largest.get("line"), **common,
                    )
                )  # fmt: skip
            if not item.over_budget:
                core = _CORE_TYPES.get(str(record.get("core_type")), str(record.get("core_type")))
                message = (
                    f"{item.kernel} lowers ({tag}): {core}, {_kb(budget.get('ub_need'))} of "
                    f"{_kb(budget.get('ub_limit'))} UB per program{doubled}"
                )
                if budget.get("l1_need"):
                    message += f", {_kb(budget['l1_need'])} of {_kb(budget.get('l1_limit'))} L1 for tl.dot operands"
                out.append(
                    _finding(
                        RULE_LOWERED, "info", message, value=budget.get("ub_need"), limit=budget.get("ub_limit"),
                        **common,
                    )
                )  # fmt: skip
        order = {"error": 0, "warning": 1, "info": 2}
        return sorted(out, key=lambda f: order.get(f["severity"], 3))


def _finding(
    rule: str,
    severity: str,
    message: str,
    *,
    value: Any = None,
    limit: Any = None,
    fix: str = "",
    kb_id: str = "",
    kernel: str | None = None,
    line: int | None = None,
    record: dict[str, Any] | None = None,
    detail: str | None = None,
) -> dict[str, Any]:
    finding = {
        "rule": rule,
        "severity": severity,
        "value": value,
        "limit": limit,
        "message": message,
        "fix": fix,
        "kb_id": kb_id or None,
        "kernel": kernel,
        "line": line,
        "layer": "triton-ascend lowering",
    }
    if detail:
        finding["compiler_output"] = detail
    if record is not None:
        finding["lowering"] = record
    return finding


class LoweringCache:
    """Worker outcomes by kernel source, signature and target: in memory (``capacity`` entries) and,
    with a ``directory``, on disk (one JSON file per entry)."""

    def __init__(self, directory: str | os.PathLike[str] | None = None, capacity: int = 1024) -> None:
        self.directory = Path(directory) if directory is not None else None
        self.capacity = capacity
        self._memory: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            if key in self._memory:
                self._memory.move_to_end(key)
                return self._memory[key]
        if self.directory is None:
            return None
        try:
            value = json.loads((self.directory / f"{key}.json").read_text())
        except (OSError, ValueError):
            return None
        self._remember(key, value)
        return value

    def put(self, key: str, value: dict[str, Any]) -> None:
        self._remember(key, value)
        if self.directory is None:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "w") as handle:
                json.dump(value, handle)
            os.replace(tmp, self.directory / f"{key}.json")
        except OSError:
            pass  # a read-only cache directory: memory only

    def _remember(self, key: str, value: dict[str, Any]) -> None:
        with self._lock:
            self._memory[key] = value
            self._memory.move_to_end(key)
            while len(self._memory) > self.capacity:
                self._memory.popitem(last=False)


_DEFAULT_CACHE: LoweringCache | None = None


def default_cache() -> LoweringCache:
    """The process-wide cache, on disk under ``<cache>/ascend-lower``."""
    global _DEFAULT_CACHE
    if _DEFAULT_CACHE is None:
        _DEFAULT_CACHE = LoweringCache(cache_root() / "ascend-lower")
    return _DEFAULT_CACHE


def _cache_key(module: LoweringModule, spec: KernelSpec, arch: str, options: dict[str, Any]) -> str:
    data = json.dumps(
        [
            WORKER_VERSION,
            TRITON_ASCEND_VERSION,
            arch,
            options,
            module.digest,
            spec.kernel,
            spec.signature,
            spec.constants,
        ],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(data.encode()).hexdigest()


def _outcome(reply: dict[str, Any], spec: KernelSpec) -> dict[str, Any]:
    """What is kept of one worker reply (and cached): status, error or facts, seconds."""
    if reply.get("ok"):
        return {"status": "lowered", "facts": adapter_facts(str(reply.get("ttadapter") or "")).to_dict(),
                "seconds": reply.get("seconds", 0.0), "truncated": bool(reply.get("truncated"))}  # fmt: skip
    error = classify(reply, spec.def_line)
    status = "timeout" if reply.get("timed_out") else "failed"
    if error.stage in ("module", "worker"):
        status = "skipped"  # not the kernel's failure: the rebuilt module or the worker
    return {"status": status, "error": error.to_dict(), "seconds": reply.get("seconds", 0.0)}


def lower_launches(
    code: str,
    launches: list[LaunchRecord | dict[str, Any]],
    chip: str | ChipProfile,
    runner: Runner,
    *,
    cache: LoweringCache | None = None,
    timeout_s: float | None = None,
) -> LoweringReport:
    """Lower each distinct launched kernel of ``code`` for ``chip``.

    Args:
        code: the candidate's source.
        launches: its launch records (``EvalResult.launches`` or dicts; a dict may carry an exact
            ``signature`` {param: Triton type}).
        chip: an Ascend chip profile (name, JSON path or profile).
        runner: runs the worker in the triton-ascend environment (see :data:`Runner`).
        cache: where outcomes are kept (default: :func:`default_cache`).
        timeout_s: for the whole worker run (default 60 s + 20 s per kernel, at most 300 s).

    Returns:
        The report. A kernel the worker did not answer for (a timeout, a crash of the worker) is
        ``timeout`` / ``skipped``, never ``failed``.
    """
    started = time.perf_counter()
    profile = resolve_chip(chip)
    if not profile.is_ascend:
        return LoweringReport(profile.name, "", False, f"{profile.name} is not an Ascend chip profile")
    arch, options = target_of(profile)
    report = LoweringReport(profile.name, arch, True)
    module = lowering_module(code)
    if module is None:
        report.reason = "no @triton.jit function to lower"
        return report
    report.skipped_functions = dict(module.skipped)
    cache = cache if cache is not None else default_cache()
    todo: list[tuple[KernelSpec, str]] = []
    outcomes: dict[str, dict[str, Any]] = {}
    specs = kernel_specs(module, launches)
    for spec in specs:
        unusable = [n for n in spec.notes if n.startswith("constexpr")]
        if unusable:
            outcomes[spec.key] = {"status": "skipped", "notes": unusable}
            continue
        key = _cache_key(module, spec, arch, options)
        cached = cache.get(key)
        if cached is not None:
            outcomes[spec.key] = {**cached, "cached": True}
        else:
            todo.append((spec, key))
    if todo:
        limit = timeout_s or min(300.0, 60.0 + 20.0 * len(todo))
        request = {
            "module": module.text,
            "arch": arch,
            "options": options,
            "timeout_s": max(10.0, limit / 2),
            "kernels": [{"id": spec.key, "name": spec.kernel, "signature": spec.signature, "constants": spec.constants}
                        for spec, _ in todo],
        }  # fmt: skip
        replies = {str(r.get("id")): r for r in runner(request, limit)}
        for spec, key in todo:
            reply = replies.get(spec.key)
            if reply is None:
                outcomes[spec.key] = {"status": "timeout", "notes": [f"no answer from the lowering within {limit:g} s"]}
                continue
            outcome = _outcome(reply, spec)
            if outcome["status"] in ("lowered", "failed"):
                cache.put(key, outcome)
            outcomes[spec.key] = outcome
    for spec in specs:
        outcome = outcomes[spec.key]
        item = KernelLowering(
            kernel=spec.kernel,
            spec=spec.to_dict(),
            status=outcome["status"],
            error=outcome.get("error"),
            facts=outcome.get("facts"),
            seconds=float(outcome.get("seconds") or 0.0),
            cached=bool(outcome.get("cached")),
            notes=[*spec.notes, *outcome.get("notes", [])],
        )
        if item.status == "skipped" and item.error:
            item.notes.append(item.error.get("first_line", ""))
        if item.facts is not None:
            item.budget = budget_of(item.facts, profile)
        report.kernels.append(item)
    lowered_names = {spec.kernel for spec in specs}
    for name in dict.fromkeys(launch_dict(launch)["kernel"] for launch in launches):
        if name in lowered_names:
            continue
        why = module.skipped.get(name) or f"{name} is not a @triton.jit function of the source"
        report.kernels.append(KernelLowering(kernel=name, spec={}, status="skipped", notes=[why]))
    report.seconds = time.perf_counter() - started
    return report
