"""Launch records as the analysis sees them: dict normalisation and the contexts a kernel is analysed under."""

from __future__ import annotations

import pytest
from ascend_rule_cases import ELEMENTWISE, make_launch, make_source, rule_ids

from ascend_kernel_gym.ascend.checks import run_ascend_checks
from ascend_kernel_gym.ascend.contexts import analysis_contexts, launch_dict
from ascend_kernel_gym.ascend.source import parse_module
from ascend_kernel_gym.evaluation.result import EvalResult


def test_call_site_constants_are_used_without_launch_records() -> None:
    source = make_source(
        ELEMENTWISE
        + """
class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        BLOCK = 65536
        k[(1,)](x, out, x.numel(), BLOCK=BLOCK)
        return out
"""
    )
    assert "tile_too_large" in rule_ids(run_ascend_checks(source, [], "910B3"))


def test_accepts_launch_dicts() -> None:
    launch = make_launch("k", [70000], [[[70000 * 16], "float32"]] * 2, BLOCK=16)
    as_dict = EvalResult(task_id="t", backend="interpreter", profile="small", code_hash="x", launches=[launch])
    records = as_dict.to_dict()["launches"]
    assert "max_grid" in rule_ids(run_ascend_checks(make_source(ELEMENTWISE), records, "910B3"))


def test_launch_dict_normalises_records_and_dicts() -> None:
    record = make_launch("k", (4, 2), [[[8, 8], "float16"]], BLOCK=64)
    as_dict = launch_dict(record)
    assert as_dict == {
        "kernel": "k",
        "grid": [4, 2],
        "constexprs": {"BLOCK": 64},
        "num_warps": None,
        "num_stages": None,
        "tensor_args": [[[8, 8], "float16"]],
    }
    assert launch_dict(as_dict) == as_dict
    assert launch_dict({}) == {
        "kernel": "?",
        "grid": [1],
        "constexprs": {},
        "num_warps": None,
        "num_stages": None,
        "tensor_args": [],
    }
    with pytest.raises(TypeError, match="LaunchRecord or dict"):
        launch_dict(("k", [1]))  # type: ignore[arg-type]


def test_contexts_from_launches_map_pointers_and_drop_repeats() -> None:
    module = parse_module(make_source(ELEMENTWISE))
    kernel = module.kernels["k"]
    tensors = [[[1024], "torch.float16"], [[1024], "float16"]]
    launches = [launch_dict(make_launch("k", [8], tensors, BLOCK=128)) for _ in range(3)]
    launches.append(launch_dict(make_launch("k", [4], tensors, BLOCK=256)))
    contexts = analysis_contexts(module, kernel, launches)
    assert [c.constexprs for c in contexts] == [{"BLOCK": 128}, {"BLOCK": 256}]  # identical launches once
    first = contexts[0]
    assert first.pointers == ("x_ptr", "out_ptr") and first.label == "BLOCK=128" and not first.uses_dot
    assert first.pointer_dtypes == {"x_ptr": "fp16", "out_ptr": "fp16"}
    assert first.pointer_tensors == {"x_ptr": ([1024], "fp16"), "out_ptr": ([1024], "fp16")}
    # tensor arguments that do not match the pointer parameters one to one give no dtypes
    (odd,) = analysis_contexts(module, kernel, [launch_dict(make_launch("k", [8], tensors[:1], BLOCK=128))])
    assert odd.pointer_dtypes == {} and odd.pointer_tensors == {}


def test_contexts_without_launches_come_from_autotune_configs() -> None:
    module = parse_module(
        make_source(
            """
            @triton.autotune(configs=[triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 512}, num_warps=8)],
                             key=["n"])
            @triton.jit
            def k(x_ptr, n, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                tl.store(x_ptr + offs, 0.0, mask=offs < n)
            """
        )
    )
    contexts = analysis_contexts(module, module.kernels["k"], [])
    assert [c.constexprs for c in contexts] == [{"BLOCK": 256}, {"BLOCK": 512}]
    assert all(c.pointers == ("x_ptr",) for c in contexts)
