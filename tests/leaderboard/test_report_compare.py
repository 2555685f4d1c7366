"""``akg report`` with several runs side by side, the estimate's wording, legend placement, run totals,
``akg verify``'s report beside the submission, and the leaderboard's model cell."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from lb_helpers import episode, result, write_fake_run

from ascend_kernel_gym.cli import main
from ascend_kernel_gym.leaderboard.cli import run_totals, verify_report_path
from ascend_kernel_gym.leaderboard.report import (
    estimate_note,
    per_category_figure,
    render_comparison_markdown,
    run_report,
)
from ascend_kernel_gym.leaderboard.site import build_site, model_label

RELU, SIGMOID, GELU = "core/L1/relu", "core/L1/sigmoid", "core/L1/gelu"
IDS = [RELU, SIGMOID, GELU]


def _ok(estimate: float | None = None) -> dict:
    res = result(correct=True, backend="interpreter")
    if estimate is not None:
        res["estimate"] = {"chip": "910B3", "est_speedup": estimate, "est_ms": 0.01, "reference_est_ms": 0.01}
    return res


@pytest.fixture
def two_runs(tmp_path):
    honest = write_fake_run(
        tmp_path / "honest",
        [episode(t, 0, _ok(2.0 if t == RELU else 0.5)) for t in IDS],
        task_ids=IDS,
        backend="interpreter",
        agent={"name": "reference", "class": "x.Reference", "kind": "scripted", "description": "bundled solutions"},
    )
    cheat = write_fake_run(
        tmp_path / "cheat",
        [
            episode(RELU, 0, result(correct=True, hack=True, error_type="torch_fallback", backend="interpreter")),
            episode(SIGMOID, 0, result(compiled=True, error_type="runtime_error", backend="interpreter")),
            episode(GELU, 0, _ok()),
        ],
        task_ids=IDS,
        backend="interpreter",
        agent={"name": "sloppy", "class": "x.Sloppy"},
    )
    return honest, cheat


def test_runs_side_by_side_show_each_task_and_the_caught_cheat(two_runs, capsys):
    honest, cheat = two_runs
    assert main(["report", str(honest), str(cheat)]) == 0
    out = capsys.readouterr().out
    assert "reference (honest)" in out and "sloppy (cheat)" in out
    assert "hack caught: torch_fallback" in out and "failed: runtime_error" in out
    markdown = render_comparison_markdown([run_report(honest), run_report(cheat)])
    assert f"| {RELU} | correct | hack caught: torch_fallback |" in markdown
    assert "| correct | 100.0% | 33.3% |" in markdown
    assert main(["report", str(honest), str(cheat), "--format", "json"]) == 0
    reports = json.loads(capsys.readouterr().out)
    assert [r["outcomes"][SIGMOID] for r in reports] == ["correct", "failed: runtime_error"]
    assert main(["report", str(honest), str(cheat), "--plots", "x"]) == 2  # plots are per run


def test_the_estimate_names_its_chip_and_baseline(two_runs):
    note = estimate_note(run_report(two_runs[0]))
    assert note is not None and "0.79x" in note  # the geometric mean of 2.0, 0.5 and 0.5
    assert "Ascend 910B3" in note and "PyTorch reference" in note and "not a measurement" in note


def test_category_legend_is_clear_of_every_bar(tmp_path):
    import matplotlib.pyplot as plt

    records = [episode(t, 0, result(correct=True, speedup=1.5)) for t in IDS]
    report = run_report(write_fake_run(tmp_path / "run", records, task_ids=IDS))
    fig = per_category_figure(report)
    try:
        fig.canvas.draw()
        ax = fig.axes[0]
        legend = ax.get_legend().get_window_extent()
        bars = [patch.get_window_extent() for patch in ax.patches]
        assert bars and all(bar.height > 0 for bar in bars)  # 100% bars reach the top of the axes
        assert not any(legend.overlaps(bar) for bar in bars)
        figure = fig.bbox
        assert figure.x0 <= legend.x0 and legend.x1 <= figure.x1  # and the legend is inside the image
    finally:
        plt.close(fig)


def test_run_totals_count_the_whole_run(two_runs):
    assert run_totals(two_runs[0]) == (3, 3, 0)
    assert run_totals(two_runs[1]) == (1, 3, 1)


def test_verify_writes_its_report_beside_the_submission_and_the_page_shows_it(two_runs, tmp_path, monkeypatch, capsys):
    from ascend_kernel_gym.leaderboard import verify

    subs = tmp_path / "new" / "submissions"
    assert main(["submit", str(two_runs[0]), "-o", str(subs / "reference.json")]) == 0  # creates the folder
    digest = json.loads((subs / "reference.json").read_text())["digest"]["value"]
    report = {"digest": digest, "accepted": True, "local_backend": "interpreter", "tasks": []}
    fake = SimpleNamespace(accepted=True, to_dict=lambda: report)
    monkeypatch.setattr(verify, "verify_submission", lambda data, **kwargs: fake)
    assert main(["verify", str(subs / "reference.json"), "--json"]) == 0
    assert verify_report_path(subs / "reference.json") == subs / "reference.verify.json"
    assert json.loads((subs / "reference.verify.json").read_text()) == report
    capsys.readouterr()
    assert main(["leaderboard", str(subs), "-o", str(tmp_path / "site")]) == 0
    out = capsys.readouterr().out
    assert "1 with a verification report" in out and (tmp_path / "site" / "index.html").as_uri() in out
    page = (tmp_path / "site" / "index.html").read_text()
    assert "verified (interpreter)" in page and "not verified" not in page
    assert "no model: bundled solutions" in page


def test_leaderboard_of_a_missing_directory_says_how_to_make_one(tmp_path, capsys):
    assert main(["leaderboard", str(tmp_path / "submissions"), "-o", str(tmp_path / "site")]) == 2
    assert "akg submit RUN -o" in capsys.readouterr().err


def test_model_label_is_never_empty() -> None:
    assert model_label({"name": "x", "model": "qwen-7b"}) == "qwen-7b"
    assert model_label({"name": "x", "model_path": "/models/Qwen2.5-0.5B/"}) == "Qwen2.5-0.5B"
    assert model_label({"name": "Qwen", "parameters": 494_000_000}) == "Qwen (494M parameters)"
    assert model_label({"name": "ref", "kind": "scripted", "description": "bundled"}) == "no model: bundled"
    assert model_label({"name": "p", "class": "pkg.mod.MyPolicy"}) == "MyPolicy"


def test_site_counts_verified_submissions(two_runs, tmp_path):
    subs = tmp_path / "subs"
    assert main(["submit", str(two_runs[1]), "-o", str(subs / "sloppy.json")]) == 0
    site = build_site(subs, tmp_path / "site")
    assert site["submissions"] == 1 and site["verified"] == 0
