"""Rules on the candidate's host code: device synchronisations in ``forward`` and GPU launch knobs."""

from __future__ import annotations

import ast

from ascend_kernel_gym.ascend.findings import Findings
from ascend_kernel_gym.ascend.source import ParsedModule, snippet


def check_host_code(module: ParsedModule, out: Findings) -> None:
    """Report ``.item()`` / ``.tolist()`` in host functions and ``num_warps`` / ``num_stages`` at launch sites
    or in autotune configs."""
    kernel_nodes = {id(k.node) for k in module.kernels.values()}
    for fn in module.functions.values():
        if id(fn) in kernel_nodes or fn.name == "__init__":
            continue
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("item", "tolist")
                and not node.args
            ):
                out.add(
                    "item_in_forward",
                    fn.name,
                    node.lineno,
                    f".{node.func.attr}()",
                    None,
                    f"calls {snippet(node)} in host code (a device synchronisation per call)",
                )
    for name, sites in module.call_sites.items():
        for site in sites:
            for kw in site.keywords:
                if kw.arg in ("num_warps", "num_stages"):
                    out.add(
                        "num_warps_stages",
                        name,
                        site.lineno,
                        f"{kw.arg}={snippet(kw.value)}",
                        None,
                        f"launch passes {kw.arg}={snippet(kw.value)}",
                    )
    for kernel in module.kernels.values():
        if kernel.autotune_warps:
            out.add(
                "num_warps_stages",
                kernel.name,
                kernel.node.lineno,
                "autotune config",
                None,
                "autotune configs set num_warps / num_stages",
            )
