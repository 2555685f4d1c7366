"""What the lowering compiles (ascend/lower_source.py): the rebuilt module holds only the candidate's
@triton.jit functions at their own lines, and launch records become Triton signatures."""

from __future__ import annotations

import ast

from ascend_kernel_gym.ascend.lower_source import JIT_ALIAS, kernel_specs, lowering_module
from ascend_kernel_gym.evaluation.result import LaunchRecord

CANDIDATE = """import os
import torch
import triton
import triton.language as tl
import math

BLOCK_DEFAULT = 1024
SCALE = tl.constexpr(2)
os.system("echo this must never run in the lowering")


@triton.autotune(configs=[triton.Config({"BLOCK": 256})], key=["n"])
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, eps, factor, BLOCK: tl.constexpr = 1024):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = x * factor + eps
    tl.store(out_ptr + offs, y, mask=mask)


@triton.jit
def helper(v):
    return v * SCALE


class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        scale_kernel[(1,)](x, out, x.numel(), 1e-5, 0.5)
        return out
"""


def test_the_rebuilt_module_keeps_kernels_at_their_lines_and_nothing_else() -> None:
    module = lowering_module(CANDIDATE)
    assert module is not None and set(module.kernels) == {"scale_kernel", "helper"}
    lines = module.text.splitlines()
    original = CANDIDATE.splitlines()
    for name in ("def scale_kernel", "def helper", "    mask = offs < n"):
        assert lines.index(next(ln for ln in lines if ln.startswith(name))) == original.index(
            next(ln for ln in original if ln.startswith(name))
        )
    assert "os.system" not in module.text and "torch" not in module.text and "ModelNew" not in module.text
    assert "autotune" not in module.text  # decorators replaced by a plain triton.jit
    assert module.text.count(f"@{JIT_ALIAS}.jit") == 2
    preamble = lines[0]
    assert "import math" in preamble and "BLOCK_DEFAULT = 1024" in preamble and "constexpr(2)" in preamble
    ast.parse(module.text)  # valid Python
    assert module.line_offset == 0 and not module.skipped


def test_functions_whose_defaults_would_run_code_are_left_out() -> None:
    code = (
        "import os\nimport triton\nimport triton.language as tl\n\n"
        "@triton.jit\ndef bad(x_ptr, n=os.getpid()):\n    pass\n\n"
        "@triton.jit\ndef good(x_ptr, n: tl.constexpr = -1):\n    pass\n"
    )
    module = lowering_module(code)
    assert module is not None and set(module.kernels) == {"good"}
    assert "default value" in module.skipped["bad"] and "getpid" not in module.text


def test_a_decorator_on_line_one_moves_the_kernels_down_one_line() -> None:
    module = lowering_module("@triton.jit\ndef k(x_ptr):\n    pass\n")
    assert module is not None and module.line_offset == 1
    assert module.text.splitlines()[2] == "def k(x_ptr):"
    assert lowering_module("x = 1\n") is None and lowering_module("def (") is None


def test_signatures_come_from_the_launch_with_scalar_types_from_the_kernels_use() -> None:
    module = lowering_module(CANDIDATE)
    assert module is not None
    launch = LaunchRecord(
        kernel="scale_kernel",
        grid=[4],
        constexprs={"BLOCK": 256},
        tensor_args=[[[1024], "float16"], [[1024], "float16"]],
    )
    (spec,) = kernel_specs(module, [launch, launch])  # the same launch twice: one spec
    assert spec.signature == {"x_ptr": "*fp16", "out_ptr": "*fp16", "n": "i32", "eps": "fp32", "factor": "fp32"}
    assert spec.constants == {"BLOCK": 256} and spec.exact and spec.def_line == 14
    other = dict(kernel="scale_kernel", grid=[4], constexprs={}, tensor_args=[[[8], "float32"], [[8], "float32"]])
    specs = kernel_specs(module, [launch, other])
    assert len(specs) == 2 and specs[1].constants == {"BLOCK": 1024}  # the default stands in
    assert specs[1].signature["x_ptr"] == "*fp32"


def test_an_explicit_signature_in_a_launch_wins() -> None:
    module = lowering_module(CANDIDATE)
    assert module is not None
    launch = {
        "kernel": "scale_kernel",
        "grid": [1],
        "constexprs": {"BLOCK": 64},
        "tensor_args": [],
        "signature": {"x_ptr": "*bf16", "out_ptr": "*bf16", "n": "i64", "eps": "fp32", "factor": "fp16"},
    }
    (spec,) = kernel_specs(module, [launch])
    assert spec.signature == launch["signature"] and spec.exact


def test_unmatched_tensors_and_unrecorded_constexprs_are_noted() -> None:
    code = (
        "import triton\nimport triton.language as tl\n\n@triton.jit\n"
        "def k(a_ptr, b, n, BLOCK: tl.constexpr, MODE: tl.constexpr):\n"
        "    offs = tl.arange(0, BLOCK)\n    tl.store(a_ptr + offs, tl.load(a_ptr + offs) * b, mask=offs < n)\n"
    )
    module = lowering_module(code)
    assert module is not None
    launch = {"kernel": "k", "grid": [1], "constexprs": {"BLOCK": 16}, "tensor_args": [[[16], "int8"], [[16], "int8"]]}
    (spec,) = kernel_specs(module, [launch])
    assert not spec.exact and spec.signature["a_ptr"] == "*i8"
    assert spec.signature["b"] == "fp32"  # multiplies loaded data
    assert spec.constants["MODE"] is None and any("MODE was not recorded" in n for n in spec.notes)
    assert kernel_specs(module, [{"kernel": "absent", "grid": [1], "constexprs": {}, "tensor_args": []}]) == []


def test_data_flows_along_assignment_chains_written_in_any_order() -> None:
    """Names assigned from loaded data are data however the chain is ordered (a chain written
    backwards made the old fixed-point loop quadratic: 2000 links took 5.6 s in the caller)."""
    from ascend_kernel_gym.ascend import lower_source

    links = 3000
    chain = "\n".join(f"    v{i} = v{i + 1}" for i in range(links))
    code = (
        "import triton\nimport triton.language as tl\n\n@triton.jit\n"
        f"def k(x_ptr, scale):\n{chain}\n    v{links} = tl.load(x_ptr)\n    idx = scale + 1\n"
    )
    module = lowering_module(code)
    assert module is not None
    data = lower_source._data_names(module.kernels["k"])
    assert {f"v{i}" for i in range(links + 1)} <= data and "idx" not in data
