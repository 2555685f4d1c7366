"""The lowering facade (ascend/lowering.py) with a stand-in runner: what it sends, how replies become
per-kernel outcomes and findings, the UB / L1 budget, the cache, and what is never a failure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ascend_kernel_gym.ascend.chips import load_chip
from ascend_kernel_gym.ascend.lowering import (
    RULE_FAILED,
    RULE_L1,
    RULE_LOWERED,
    RULE_SKIPPED,
    RULE_UB,
    RULE_UNAVAILABLE,
    LoweringCache,
    budget_of,
    lower_launches,
    target_of,
)

IR = Path(__file__).with_name("lowering_corpus") / "ir"
CODE = """import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
"""
LAUNCH = {"kernel": "copy_kernel", "grid": [4], "constexprs": {"BLOCK": 1024}, "tensor_args": [[[4096], "float32"]] * 2}


def adapter_ir(*allocs: str, mix: str = "aiv") -> str:
    body = "\n".join(f"    %a{i} = memref.alloc() : memref<{shape}> loc(#loc1)" for i, shape in enumerate(allocs))
    return f'func.func @k() attributes {{mix_mode = "{mix}"}} {{\n{body}\n}}\n#loc1 = loc("kernel.py":7:20)\n'


class FakeRunner:
    """Answers every kernel with ``reply(kernel)``; records the requests."""

    def __init__(self, reply: Any) -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: dict[str, Any], timeout_s: float) -> list[dict[str, Any]]:
        self.requests.append(request)
        out = []
        for kernel in request["kernels"]:
            answer = self.reply(kernel)
            if answer is not None:
                out.append({"id": kernel["id"], "name": kernel["name"], "seconds": 0.01, **answer})
        return out


def test_a_lowered_kernel_within_ub_is_one_info_finding() -> None:
    runner = FakeRunner(lambda k: {"ok": True, "ttadapter": adapter_ir("1024xf32")})
    report = lower_launches(CODE, [LAUNCH, LAUNCH], "910B3", runner, cache=LoweringCache())
    (request,) = runner.requests
    assert request["arch"] == "Ascend910B3" and request["options"] == {}
    assert [k["name"] for k in request["kernels"]] == ["copy_kernel"]  # the same launch twice: lowered once
    assert request["kernels"][0]["signature"] == {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    assert "copy_kernel" in request["module"] and "def copy_kernel" in request["module"]
    (finding,) = report.findings()
    assert finding["rule"] == RULE_LOWERED and finding["severity"] == "info"
    assert finding["value"] == 8192 and finding["limit"] == 196608  # 4 KB doubled by multibuffer
    assert "vector cores only (aiv)" in finding["message"] and finding["lowering"]["core_type"] == "aiv"
    assert not report.failed


def test_ub_and_l1_overflows_are_errors_with_the_buffer_line() -> None:
    runner = FakeRunner(lambda k: {"ok": True, "ttadapter": adapter_ir("65536xf32")})  # 256 KB, doubled
    report = lower_launches(CODE, [LAUNCH], "910B3", runner, cache=LoweringCache())
    (finding,) = report.findings()
    assert finding["rule"] == RULE_UB and finding["severity"] == "error" and finding["line"] == 7
    assert finding["value"] == 2 * 262144 and finding["limit"] == 196608 and finding["kb_id"] == "lowering-ub-overflow"
    assert report.failed
    facts = {"vector_bytes": 0, "cube_bytes": 300 * 1024, "allocations": [], "accumulator_bytes": 0}
    budget = budget_of(facts, load_chip("910B3"))
    assert budget["l1_need"] == 600 * 1024 and budget["l1_over"] and not budget["ub_over"]
    # the 950 does not double-buffer by default: the same bytes fit
    assert budget_of({"vector_bytes": 120 * 1024}, load_chip("950"))["ub_over"] is False
    assert budget_of({"vector_bytes": 120 * 1024}, load_chip("910B3"))["ub_over"] is True


def test_a_matmul_ir_counts_its_operands_against_l1() -> None:
    ir = (IR / "matmul.ttadapter.mlir").read_text()
    runner = FakeRunner(lambda k: {"ok": True, "ttadapter": ir})
    report = lower_launches(CODE, [LAUNCH], "910B3", runner, cache=LoweringCache())
    (item,) = report.kernels
    assert item.budget is not None and item.budget["l1_need"] == 2 * 16384 and item.budget["ub_need"] == 0
    assert "of 512.0 KB L1 for tl.dot operands" in report.findings()[0]["message"]
    runner = FakeRunner(lambda k: {"ok": True, "ttadapter": ir.replace("64x64xf16>", "512x512xf16>")})
    l1 = lower_launches(CODE, [LAUNCH], "910B3", runner, cache=LoweringCache()).findings()
    assert [f["rule"] for f in l1] == [RULE_L1]


def test_a_failure_becomes_an_error_finding_with_the_compilers_words() -> None:
    crash = "PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/\nStack dump:"
    ttir = (IR / "where_pointer.ttir.mlir").read_text()
    runner = FakeRunner(lambda k: {"ok": False, "stage": "ttadapter", "error": crash, "returncode": -11, "ttir": ttir})
    (finding,) = lower_launches(CODE, [LAUNCH], "910B3", runner, cache=LoweringCache()).findings()
    assert finding["rule"] == RULE_FAILED and finding["severity"] == "error"
    assert "copy_kernel does not lower (triton-ascend 3.2.0 for Ascend910B3)" in finding["message"]
    assert "pointer chosen at run time" in finding["message"] and "PLEASE submit" in finding["compiler_output"]
    assert finding["kb_id"] == "lowering-pointer-select-or-branch" and finding["value"] == "ttadapter"


def test_outcomes_are_cached_by_source_signature_and_target(tmp_path: Path) -> None:
    runner = FakeRunner(lambda k: {"ok": True, "ttadapter": adapter_ir("16xf32")})
    cache = LoweringCache(tmp_path)
    lower_launches(CODE, [LAUNCH], "910B3", runner, cache=cache)
    again = lower_launches(CODE, [LAUNCH], "910B3", runner, cache=LoweringCache(tmp_path))  # from disk
    assert len(runner.requests) == 1 and again.kernels[0].cached and again.kernels[0].status == "lowered"
    lower_launches(CODE, [LAUNCH], "910B4", runner, cache=cache)  # another target
    lower_launches(CODE, [{**LAUNCH, "constexprs": {"BLOCK": 512}}], "910B3", runner, cache=cache)
    lower_launches(CODE.replace("offs < n", "offs <= n"), [LAUNCH], "910B3", runner, cache=cache)
    assert len(runner.requests) == 4


def test_no_answer_an_unusable_module_and_unrecorded_constexprs_are_never_failures() -> None:
    silent = lower_launches(CODE, [LAUNCH], "910B3", FakeRunner(lambda k: None), cache=LoweringCache())
    assert silent.kernels[0].status == "timeout" and not silent.failed
    assert [f["rule"] for f in silent.findings()] == [RULE_SKIPPED]
    broken = FakeRunner(lambda k: {"ok": False, "stage": "module", "error": "NameError: name 'x' is not defined"})
    report = lower_launches(CODE, [LAUNCH], "910B3", broken, cache=LoweringCache())
    assert report.kernels[0].status == "skipped" and not report.failed
    runner = FakeRunner(lambda k: {"ok": True, "ttadapter": adapter_ir("16xf32")})
    unrecorded = lower_launches(CODE, [{**LAUNCH, "constexprs": {}}], "910B3", runner, cache=LoweringCache())
    assert unrecorded.kernels[0].status == "skipped" and not runner.requests


def test_kernels_left_out_of_the_rebuilt_module_are_reported_as_skipped() -> None:
    code = CODE + "\n\n@triton.jit\ndef odd(x_ptr, n=len('x')):\n    pass\n"
    runner = FakeRunner(lambda k: {"ok": True, "ttadapter": adapter_ir("16xf32")})
    launches = [LAUNCH, {"kernel": "odd", "grid": [1], "constexprs": {}, "tensor_args": []}]
    launches.append({"kernel": "elsewhere", "grid": [1], "constexprs": {}, "tensor_args": []})
    report = lower_launches(code, launches, "910B3", runner, cache=LoweringCache())
    status = {k.kernel: (k.status, " ".join(k.notes)) for k in report.kernels}
    assert status["copy_kernel"][0] == "lowered"
    assert status["odd"][0] == "skipped" and "default value" in status["odd"][1]
    assert status["elsewhere"] == ("skipped", "elsewhere is not a @triton.jit function of the source")
    assert not report.failed


def test_a_gpu_profile_and_code_without_kernels_give_no_lowering() -> None:
    runner = FakeRunner(lambda k: pytest.fail("the runner must not be called"))
    gpu = lower_launches(CODE, [LAUNCH], "H200", runner, cache=LoweringCache())
    assert not gpu.available and gpu.findings()[0]["rule"] == RULE_UNAVAILABLE
    none = lower_launches("x = 1\n", [LAUNCH], "910B3", runner, cache=LoweringCache())
    assert none.available and none.kernels == [] and none.findings() == []


def test_the_950_target_gets_its_own_compiler_options() -> None:
    arch, options = target_of(load_chip("950"))
    assert arch == "Ascend950PR" and options["compile_on_910_95"] is True and options["multibuffer"] is False
    assert target_of(load_chip("910B3")) == ("Ascend910B3", {})
