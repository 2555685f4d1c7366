"""Launch records as the analysis sees them, and the contexts each kernel is analysed under.

A launch record (``LaunchRecord`` or its dict) becomes a plain dict (:func:`launch_dict`). Each
distinct set of constexpr values and pointer shapes a kernel was launched with is one
:class:`AnalysisContext`; without launches, the kernel's autotune configs or the literal values
at its first launch site stand in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ascend_kernel_gym.ascend.source import (
    ParsedKernel,
    ParsedModule,
    call_site_constexprs,
    kernel_uses_dot,
    pointer_params,
)
from ascend_kernel_gym.ascend.values import tensor_dtype
from ascend_kernel_gym.evaluation.result import LaunchRecord


@dataclass
class AnalysisContext:
    """One set of launch facts a kernel is analysed under: constexpr values, pointer dtypes and shapes."""

    constexprs: dict[str, Any]
    pointer_dtypes: dict[str, str]
    label: str = ""
    #: pointer parameter -> (shape, dtype) of the tensor passed for it
    pointer_tensors: dict[str, tuple[list[int], str]] = field(default_factory=dict)
    uses_dot: bool = False
    #: parameters used as pointers (from the kernel's loads / stores), with or without a dtype
    pointers: tuple[str, ...] = ()


def launch_dict(launch: LaunchRecord | dict[str, Any]) -> dict[str, Any]:
    """A launch record as a plain dict: ``kernel, grid, constexprs, num_warps, num_stages, tensor_args``.

    Raises:
        TypeError: ``launch`` is neither a ``LaunchRecord`` nor a dict.
    """
    if isinstance(launch, LaunchRecord):
        return {
            "kernel": launch.kernel,
            "grid": list(launch.grid),
            "constexprs": dict(launch.constexprs),
            "num_warps": launch.num_warps,
            "num_stages": launch.num_stages,
            "tensor_args": [list(t) for t in launch.tensor_args],
        }
    if isinstance(launch, dict):
        return {
            "kernel": str(launch.get("kernel", "?")),
            "grid": list(launch.get("grid") or [1]),
            "constexprs": dict(launch.get("constexprs") or {}),
            "num_warps": launch.get("num_warps"),
            "num_stages": launch.get("num_stages"),
            "tensor_args": [list(t) for t in launch.get("tensor_args") or []],
        }
    raise TypeError(f"launches must hold LaunchRecord or dict items, got {type(launch).__name__}")


def analysis_contexts(
    module: ParsedModule, kernel: ParsedKernel, launches: list[dict[str, Any]]
) -> list[AnalysisContext]:
    """The distinct contexts to analyse ``kernel`` under.

    Args:
        module: the parsed candidate.
        kernel: one of its kernels.
        launches: :func:`launch_dict` records of this kernel's launches.

    Returns:
        One context per distinct (constexpr values, pointer shapes) among ``launches``; without
        launches one per autotune config; without those, one from the first launch site's literals.
    """
    pointers = pointer_params(module, kernel)
    uses_dot = kernel_uses_dot(module, kernel)
    seen: set[str] = set()
    out: list[AnalysisContext] = []
    for launch in launches:
        tensors = [(list(t[0]) if t else [], tensor_dtype(t[1]) if len(t) > 1 else None) for t in launch["tensor_args"]]
        matched = len(pointers) == len(tensors)
        mapping = {p: t[1] for p, t in zip(pointers, tensors, strict=False) if t[1]} if matched else {}
        shapes = {p: (t[0], t[1]) for p, t in zip(pointers, tensors, strict=False) if t[1]} if matched else {}
        key = repr((sorted(launch["constexprs"].items(), key=str), sorted(shapes.items())))
        if key in seen:
            continue
        seen.add(key)
        out.append(
            AnalysisContext(
                dict(launch["constexprs"]), mapping, _ctx_label(launch["constexprs"]), shapes, uses_dot, tuple(pointers)
            )
        )
    if out:
        return out
    for cfg in kernel.autotune_configs:
        out.append(AnalysisContext(dict(cfg), {}, _ctx_label(cfg), uses_dot=uses_dot, pointers=tuple(pointers)))
    if out:
        return out
    site_values = call_site_constexprs(module, kernel)
    return [AnalysisContext(site_values, {}, _ctx_label(site_values), uses_dot=uses_dot, pointers=tuple(pointers))]


def _ctx_label(values: dict[str, Any]) -> str:
    items = [f"{k}={v}" for k, v in values.items() if isinstance(v, (int, float, str)) and not isinstance(v, bool)]
    return ", ".join(items[:6])
