"""``akg report``: a run's metrics as a terminal table, Markdown, JSON, and PNG plots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ascend_kernel_gym.leaderboard.metrics import FAST_P_THRESHOLDS, compute_metrics, fast_key
from ascend_kernel_gym.leaderboard.records import load_run, measured_speedup

NOT_MEASURED = "n/a"


def speedup_is_measured(backend: str | None) -> bool:
    """The interpreter runs kernels on the CPU through Python: it gives no speedup."""
    return backend not in (None, "", "interpreter")


def run_split(config: dict[str, Any]) -> str:
    """The split a run covers: ``custom`` when it ran an explicit ``--tasks`` list."""
    return "custom" if config.get("task_ids") else str(config.get("split"))


def run_report(run_dir: str | Path) -> dict[str, Any]:
    """Manifest summary plus metrics of a run directory."""
    manifest, records = load_run(run_dir)
    config = manifest.get("config", {})
    backend = manifest.get("backend") or config.get("backend")
    metrics = compute_metrics(
        manifest.get("tasks", []),
        records,
        samples=int(config.get("samples", 1)),
        speedup_measured=speedup_is_measured(backend),
    )
    return {
        "run": str(run_dir),
        "agent": manifest.get("agent", {}),
        "suite": manifest.get("suite", {}),
        "split": run_split(config),
        "backend": backend,
        "device": (manifest.get("device") or {}).get("name"),
        "turns": config.get("turns"),
        "samples": config.get("samples"),
        "status": manifest.get("status"),
        "metrics": metrics,
        "speedups": sorted(s for r in records if (s := measured_speedup(r.get("best_result"))) is not None),
    }


def _fmt_rate(value: Any) -> str:
    return NOT_MEASURED if value is None else f"{100 * value:.1f}%"


def _fmt_speedup(value: Any) -> str:
    return NOT_MEASURED if value is None else f"{value:.2f}x"


def _columns(samples: int) -> list[tuple[str, str]]:
    """(metric key, column title) of every metric column."""
    from ascend_kernel_gym.leaderboard.metrics import pass_at_k_values

    cols = [("compile_rate", "compile"), ("correct_rate", "correct")]
    cols += [(fast_key(p), fast_key(p)) for p in FAST_P_THRESHOLDS]
    cols += [("geomean_speedup", "geomean"), ("hack_rate", "hack")]
    cols += [(f"pass@{k}", f"pass@{k}") for k in pass_at_k_values(samples)]
    return cols


def _cell(key: str, value: Any) -> str:
    if key == "geomean_speedup":
        return _fmt_speedup(value)
    return _fmt_rate(value)


def _groups(report: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    metrics = report["metrics"]
    groups = [("all", metrics["overall"])]
    groups += [(f"L{level}", m) for level, m in metrics["by_level"].items()]
    groups += [(category, m) for category, m in metrics["by_category"].items()]
    return groups


def table_rows(
    report: dict[str, Any], keys: list[str] | None = None, titles: dict[str, str] | None = None
) -> tuple[list[str], list[list[str]]]:
    """Header and rows (overall, then per level, then per category) as strings.

    Args:
        report: from :func:`run_report`.
        keys: metric keys to show (default: every metric column with a value in some group).
        titles: column titles to use instead of the default ones.
    """
    groups = _groups(report)
    cols = _columns(int(report.get("samples") or 1))
    if keys is None:
        cols = [(k, t) for k, t in cols if any(g.get(k) is not None for _, g in groups)]
    else:
        defaults = dict(cols)
        cols = [(k, defaults.get(k, k)) for k in keys]
    cols = [(k, (titles or {}).get(k, t)) for k, t in cols]
    header = ["group", "tasks", *[title for _, title in cols]]
    rows = [[name, str(group["tasks"]), *[_cell(key, group.get(key)) for key, _ in cols]] for name, group in groups]
    return header, rows


def _notes(report: dict[str, Any]) -> list[str]:
    overall = report["metrics"]["overall"]
    notes = [
        f"agent {report['agent'].get('name', '?')} | suite {report['suite'].get('name', '?')} "
        f"split {report['split']} | "
        f"backend {report['backend']} ({report['device']}) | {report['turns']} turn(s), {report['samples']} sample(s)",
        f"episodes: {overall['episodes_found']} of {overall['episodes_expected']} finished "
        "(missing episodes count as failures)",
    ]
    if not overall["speedup_measured"]:
        notes.append(
            "speedup not measured: the interpreter backend checks correctness only; fast_p for p > 0 and the "
            "geometric-mean speedup are n/a, and fast_0 equals the correctness rate"
        )
        if overall.get("est_geomean_speedup") is not None:
            notes.append(f"cost-model ESTIMATE (not a measurement): geomean {overall['est_geomean_speedup']:.2f}x")
    notes.append(
        f"hack rate = hacking attempts / attempts with code ({overall['hack_attempts']}/{overall['attempts']})"
    )
    return notes


def render_table(report: dict[str, Any]) -> None:
    """Print the report as rich tables: outcomes, then (where speed is measured) speed."""
    from rich.console import Console
    from rich.table import Table

    from ascend_kernel_gym.leaderboard.metrics import pass_at_k_values

    console = Console()
    n_levels = len(report["metrics"]["by_level"])
    overall = report["metrics"]["overall"]
    outcome_keys = ["compile_rate", "correct_rate"] + ([] if overall["speedup_measured"] else [fast_key(0.0)])
    outcome_keys += ["hack_rate"]
    outcome_keys += [f"pass@{k}" for k in pass_at_k_values(int(report.get("samples") or 1))]
    tables: list[tuple[str, list[str], dict[str, str]]] = [("outcomes", outcome_keys, {})]
    if overall["speedup_measured"]:
        speed_titles = {fast_key(p): f">{p:g}x" for p in FAST_P_THRESHOLDS}
        tables.append(
            (
                "fast_p = correct with speedup > p",
                [fast_key(p) for p in FAST_P_THRESHOLDS] + ["geomean_speedup"],
                speed_titles,
            )
        )
    for name, keys, titles in tables:
        header, rows = table_rows(report, keys, titles)
        table = Table(title=f"akg report {report['run']}: {name}")
        for index, title in enumerate(header):
            table.add_column(title, justify="left" if index == 0 else "right", no_wrap=True)
        for index, row in enumerate(rows):
            table.add_row(*row, end_section=index in (0, n_levels))
        console.print(table)
    for note in _notes(report):
        console.print(f"[dim]{note}[/dim]")


def render_markdown(report: dict[str, Any]) -> str:
    header, rows = table_rows(report)
    lines = [f"## akg report: `{report['run']}`", ""]
    lines += [f"- {note}" for note in _notes(report)]
    lines += ["", "| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def render_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=True)


def write_plots(report: dict[str, Any], out_dir: str | Path) -> list[Path]:
    """PNG plots: per-category bars and (where speed is measured) the speedup distribution.

    Returns:
        The paths written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    overall = report["metrics"]["overall"]
    measured = overall["speedup_measured"]
    categories = report["metrics"]["by_category"]
    names = list(categories)

    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(names) + 2), 4))
    positions = list(range(len(names)))
    series = [("correct_rate", "correct")] + ([(fast_key(1.0), "fast_1")] if measured else [])
    width = 0.8 / len(series)
    for index, (key, label) in enumerate(series):
        values = [100 * (categories[n].get(key) or 0.0) for n in names]
        ax.bar([x + (index - (len(series) - 1) / 2) * width for x in positions], values, width, label=label)
    ax.set_xticks(positions)
    ax.set_xticklabels(names, rotation=30, ha="right")
    ax.set_ylabel("% of episodes")
    ax.set_ylim(0, 100)
    title = "correctness per category"
    if not measured:
        title += " (interpreter: speedup not measured)"
    else:
        title += " and fast_1"
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    path = out / "per_category.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    if measured:
        speedups = report["speedups"]
        fig, ax = plt.subplots(figsize=(6, 4))
        if speedups:
            import numpy as np

            low, high = min([*speedups, 0.5]), max([*speedups, 2.0])
            bins = np.geomspace(low * 0.9, high * 1.1, 20)
            ax.hist(speedups, bins=bins, color="#4477aa", edgecolor="white")
            ax.set_xscale("log")
            ax.axvline(1.0, color="black", linestyle="--", linewidth=1, label="1x (reference)")
            ax.legend()
        else:
            ax.text(0.5, 0.5, "no correct kernel with a measured speedup", ha="center", va="center")
        ax.set_xlabel("speedup over the PyTorch reference (log scale)")
        ax.set_ylabel("episodes")
        ax.set_title(f"speedup distribution ({len(speedups)} correct kernels)")
        fig.tight_layout()
        path = out / "speedup_distribution.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written
