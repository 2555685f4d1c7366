"""A task file's text with a profile's sizes written in: what the agent sees (``prompt_source``) and
what runs when a profile sets a size written as a literal inside a function. Reads the AST only;
comments and the layout of untouched lines are kept."""

from __future__ import annotations

import ast
import re
from typing import Any

from ascend_kernel_gym.tasks.constants import (
    NotConstantError,
    eval_constant,
    parse_literal_key,
    rebound_names,
    same_value,
    single_target,
    tuple_targets,
)

_NOT_EVALUATED = object()
_LINE_ENDS = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")


def _removal_span(source: str, first: int, starts: list[int], node: ast.stmt) -> tuple[int, int, str]:
    """The edit that deletes statement ``node`` (from ``first``): its whole lines when it is alone
    on them, else the statement and a following ``;``."""
    end_line = node.end_lineno or node.lineno
    line_start, line_end = starts[node.lineno - 1], starts[end_line]
    end_text = source[starts[end_line - 1] : line_end]
    end_col = len(end_text.encode("utf-8")[: node.end_col_offset or 0].decode("utf-8", errors="ignore"))
    last = starts[end_line - 1] + end_col
    before, after = source[line_start:first], source[last:line_end]
    if not before.strip() and (not after.strip() or after.strip().startswith("#")):
        return (line_start, line_end, "")
    match = re.match(r"[ \t]*;[ \t]*", after)
    return (first, last + (match.end() if match else 0), "")


def apply_profile(source: str, overrides: dict[str, Any], *, drop_task: bool = True) -> str:
    """``source`` with the profile's values written in.

    A constant the profile changes has its value replaced (``N = 2048 * 2`` becomes ``N = 64``,
    ``h, w = 128, 128`` becomes ``h, w = 64, 64``; comments on the line are kept); a constant
    computed from others (``half = N // 2``) keeps its expression when that gives the profile's
    value; a literal key (``"get_inputs@12:28"``) replaces that literal. With ``drop_task`` the
    ``TASK`` block is removed and runs of blank lines are closed up (the prompt form); without it
    line numbers stay those of the file (the form that runs).
    """
    tree = ast.parse(source)
    lines = _LINE_ENDS.split(source)  # the lines ast numbers (str.splitlines splits on more)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(lineno: int, col: int) -> int:  # ast columns count UTF-8 bytes
        line = lines[lineno - 1]
        return starts[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", errors="ignore"))

    def replace(node: ast.expr, text: str) -> None:
        first = offset(node.lineno, node.col_offset)
        last = offset(node.end_lineno or node.lineno, node.end_col_offset or 0)
        edits.append((first, last, text))

    edits: list[tuple[int, int, str]] = []  # (start, end, replacement) offsets into the source
    env: dict[str, Any] = {}

    def assign(target: str, value_node: ast.expr) -> None:
        try:
            value: Any = eval_constant(value_node, env)[0]
        except (NotConstantError, RecursionError):
            value = _NOT_EVALUATED
        if target in overrides:
            wanted = overrides[target]
            if not same_value(value, wanted):
                replace(value_node, repr(wanted))
            env[target] = wanted
        elif value is _NOT_EVALUATED:
            env.pop(target, None)
        else:
            env[target] = value

    for node in tree.body:
        target = single_target(node)
        if target == "TASK":
            if drop_task:
                edits.append(_removal_span(source, offset(node.lineno, node.col_offset), starts, node))
            continue
        value_node = getattr(node, "value", None) if target is not None else None
        if target is not None and value_node is not None:
            assign(target, value_node)
            continue
        pairs = tuple_targets(node)
        if pairs is not None:
            for name, element in pairs:
                assign(name, element)
            continue
        for name in rebound_names(node):
            env.pop(name, None)
    literals = {where: value for key, value in overrides.items() if (where := parse_literal_key(key)) is not None}
    if literals:
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and (node.lineno, node.col_offset) in literals:
                wanted = literals[(node.lineno, node.col_offset)]
                if not same_value(node.value, wanted):
                    replace(node, repr(wanted))
    out = source
    for first, last, text in sorted(edits, reverse=True):
        out = out[:first] + text + out[last:]
    if not drop_task:
        return out
    return re.sub(r"\n{4,}", "\n\n\n", out).strip() + "\n"


def literal_overrides(overrides: dict[str, Any]) -> dict[str, Any]:
    """The literal keys of a profile (sizes written inside functions)."""
    return {key: value for key, value in overrides.items() if parse_literal_key(key) is not None}
