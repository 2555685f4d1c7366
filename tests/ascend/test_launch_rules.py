"""Launch-level rules: grid limit, oversubscribed cores, GPU launch knobs, argument dtypes."""

from __future__ import annotations

from ascend_rule_cases import ELEMENTWISE, MATMUL, make_launch, make_source, rule_ids

from ascend_kernel_gym.ascend.checks import run_ascend_checks
from ascend_kernel_gym.ascend.chips import load_chip
from ascend_kernel_gym.ascend.contexts import launch_dict
from ascend_kernel_gym.ascend.findings import Findings
from ascend_kernel_gym.ascend.launch_rules import check_launch
from ascend_kernel_gym.ascend.source import parse_module


def test_grid_thresholds_are_exact() -> None:
    # 65535 programs is allowed, 65536 is not.
    ok = make_launch("k", [65535], [[[65535 * 1024], "float32"]] * 2, BLOCK=1024)
    bad = make_launch("k", [65536], [[[65536 * 1024], "float32"]] * 2, BLOCK=1024)
    assert "max_grid" not in rule_ids(run_ascend_checks(make_source(ELEMENTWISE), [ok], "910B3"))
    grid = [f for f in run_ascend_checks(make_source(ELEMENTWISE), [bad], "910B3") if f["rule"] == "max_grid"]
    assert grid and grid[0]["value"] == 65536 and grid[0]["limit"] == 65535
    # A 2-D grid is flattened: 300 x 300 = 90,000 programs.
    two_d = make_launch("k", [300, 300], [[[90000 * 16], "float32"]] * 2, BLOCK=16)
    assert "max_grid" in rule_ids(run_ascend_checks(make_source(ELEMENTWISE), [two_d], "910B3"))


def test_oversubscription_uses_cube_cores_for_dot_kernels() -> None:
    source = make_source(MATMUL.replace("ACC_DTYPE", "tl.float32"))
    # 60 programs: 3 rounds over 20 cube cores of 910B3 (fires), 1.5 rounds over 40 vector cores would not.
    launch = make_launch("mm", [60], [[[64, 64], "float16"]] * 3, BM=16, BN=64, BK=16)
    found = [f for f in run_ascend_checks(source, [launch], "910B3") if f["rule"] == "grid_oversubscribed"]
    assert found and "20 cube cores" in found[0]["message"]


def test_one_launch_without_a_parsed_module() -> None:
    """An unparsable candidate still gets its launches checked (kernel line 0, vector cores)."""
    chip = load_chip("910B3")
    record = make_launch("k", [81], [[[81 * 1024], "float32"], [[8], "uint8"]], BLOCK=1024)
    record.num_warps = 4
    out = Findings()
    check_launch(None, launch_dict(record), chip, out)
    found = {(f["rule"], f["severity"], str(f["value"])) for f in out.result()}
    # 81 programs on 40 vector cores = 3 rounds, each program moving ~4 KiB
    assert found == {
        ("grid_oversubscribed", "warning", "81"),
        ("num_warps_stages", "warning", "num_warps=4"),
        ("unsupported_dtype", "warning", "uint8"),  # uint8 arguments are only a warning
    }
    assert all(f["line"] == 0 for f in out.result())
    # an fp64 argument is an error, and wins over the uint8 warning of the same launch
    record.tensor_args.append([[8], "float64"])
    out = Findings()
    check_launch(None, launch_dict(record), chip, out)
    (dtype,) = [f for f in out.result() if f["rule"] == "unsupported_dtype"]
    assert dtype["severity"] == "error" and dtype["value"] == "fp64" and "tensor argument 2" in dtype["message"]


def test_kernel_line_comes_from_the_parsed_module() -> None:
    module = parse_module(make_source(ELEMENTWISE))
    out = Findings()
    check_launch(module, launch_dict(make_launch("k", [70000], [[[16], "float32"]], BLOCK=16)), load_chip("910B3"), out)
    (finding,) = [f for f in out.result() if f["rule"] == "max_grid"]
    assert finding["line"] == module.kernels["k"].node.lineno > 0
    assert {f["line"] for f in out.result()} == {finding["line"]}
