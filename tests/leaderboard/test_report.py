"""``akg report`` on a hand-made device run: tables, Markdown, JSON and both plots."""

from __future__ import annotations

import json

import pytest
from lb_helpers import episode, result, write_fake_run

from ascend_kernel_gym.cli import main
from ascend_kernel_gym.leaderboard.report import render_markdown, run_report, write_plots

RELU, SIGMOID, GELU = "core/L1/relu", "core/L1/sigmoid", "core/L1/gelu"


@pytest.fixture
def device_run(tmp_path):
    records = [
        episode(RELU, 0, result(correct=True, speedup=1.6)),
        episode(SIGMOID, 0, result(correct=True, speedup=0.6)),
        episode(GELU, 0, result(correct=True, hack=True, speedup=4.0)),
    ]
    return write_fake_run(tmp_path / "run", records, task_ids=[RELU, SIGMOID, GELU])


def test_report_numbers_and_formats(device_run, capsys):
    report = run_report(device_run)
    overall = report["metrics"]["overall"]
    assert overall["correct_rate"] == pytest.approx(2 / 3)
    assert overall["fast_1"] == pytest.approx(1 / 3) and overall["fast_0.5"] == pytest.approx(2 / 3)
    assert overall["geomean_speedup"] == pytest.approx((1.6 * 0.6) ** 0.5)
    assert report["speedups"] == [0.6, 1.6]  # hacks are not in the distribution
    markdown = render_markdown(report)
    row = "| all | 3 | 100.0% | 66.7% | 66.7% | 66.7% | 33.3% | 33.3% | 33.3% | 0.0% | 0.98x | 33.3% | 66.7% |"
    assert row in markdown  # compile, correct, fast_0 .. fast_2, geomean, hack, pass@1

    assert main(["report", str(device_run)]) == 0
    table = capsys.readouterr().out
    assert "fast_p" in table and ">1.5x" in table and "0.98x" in table and "…" not in table

    out = device_run / "report.json"
    assert main(["report", str(device_run), "--format", "json", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["metrics"]["by_category"]["activation"]["tasks"] == 3


def test_plots_on_a_device_run(device_run, tmp_path):
    paths = write_plots(run_report(device_run), tmp_path / "plots")
    assert sorted(p.name for p in paths) == ["per_category.png", "speedup_distribution.png"]
    for path in paths:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000
