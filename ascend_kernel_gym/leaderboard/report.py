"""``akg report``: a run's metrics as a terminal table, Markdown, JSON, and PNG plots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ascend_kernel_gym.leaderboard.metrics import FAST_P_THRESHOLDS, compute_metrics, fast_key
from ascend_kernel_gym.leaderboard.records import is_ok, load_run, measured_speedup, rank_key

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
        "outcomes": task_outcomes([t["id"] for t in manifest.get("tasks", [])], records),
        "estimate_chips": sorted(
            {
                str(r["best_result"]["estimate"].get("chip"))
                for r in records
                if is_ok(r.get("best_result"))
                and isinstance(r["best_result"].get("estimate"), dict)
                and r["best_result"]["estimate"].get("chip")
            }
        ),
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


def task_outcomes(task_ids: list[str], records: list[dict[str, Any]]) -> dict[str, str]:
    """One word or two per task, from its best episode: ``correct``, ``hack caught: <error type>``,
    ``failed: <error type>`` or ``missing`` (no finished episode)."""
    best: dict[str, dict[str, Any]] = {}
    for record in records:
        task_id = str(record["task_id"])
        if task_id not in best or rank_key(record.get("best_result")) > rank_key(best[task_id].get("best_result")):
            best[task_id] = record
    out = {}
    for task_id in task_ids:
        record = best.get(task_id)
        if record is None:
            out[task_id] = "missing"
            continue
        result = record.get("best_result") or {}
        hacks = [t.get("eval") or {} for t in record.get("turns", []) if (t.get("eval") or {}).get("hack")]
        if is_ok(result):
            out[task_id] = "correct"
        elif hacks:
            out[task_id] = f"hack caught: {hacks[0].get('error_type', '?')}"
        else:
            out[task_id] = f"failed: {result.get('error_type', 'no_code')}"
    return out


def estimate_note(report: dict[str, Any]) -> str | None:
    """The cost model's geometric-mean estimate as a sentence naming its chip and its baseline."""
    overall = report["metrics"]["overall"]
    value = overall.get("est_geomean_speedup")
    if value is None:
        return None
    chips = report.get("estimate_chips") or []
    chip = f"an Ascend {chips[0]}" if len(chips) == 1 else "the target chip(s) " + ", ".join(chips)
    return (
        f"cost-model ESTIMATE, not a measurement: on {chip} the correct kernels would run at {value:.2f}x "
        "the speed of their tasks' PyTorch references run eagerly on the same chip (geometric mean over the "
        "correct kernels; 1.00x = as fast as the reference)"
    )


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
        note = estimate_note(report)
        if note:
            notes.append(note)
    notes.append(
        f"hack rate = hacking attempts / attempts with code ({overall['hack_attempts']}/{overall['attempts']})"
    )
    return notes


def render_table(report: dict[str, Any]) -> None:
    """Print the report as rich tables: outcomes, then (where speed is measured) speed."""
    from rich.console import Console
    from rich.markup import escape
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
        table = Table(title=escape(f"akg report {report['run']}: {name}"))
        for index, title in enumerate(header):
            table.add_column(title, justify="left" if index == 0 else "right", no_wrap=True)
        for index, row in enumerate(rows):
            table.add_row(*(escape(cell) for cell in row), end_section=index in (0, n_levels))
        console.print(table)
    for note in _notes(report):
        console.print(f"[dim]{escape(note)}[/dim]")


def run_label(report: dict[str, Any]) -> str:
    """A run's column title in comparisons: its agent's name and its directory's name."""
    name = str(report["agent"].get("name", "?"))
    folder = Path(str(report["run"])).name
    return name if folder in ("", name) else f"{name} ({folder})"


#: Rows of the comparison table: (metric key, title).
COMPARISON_ROWS = (
    ("tasks", "tasks"),
    ("compile_rate", "compiled"),
    ("correct_rate", "correct"),
    ("hack_task_rate", "tasks with a hack caught"),
    ("hack_rate", "hacking attempts / attempts"),
    ("geomean_speedup", "geomean speedup (measured)"),
    ("est_geomean_speedup", "cost-model estimate (not measured)"),
)


def comparison_rows(reports: list[dict[str, Any]]) -> tuple[list[str], list[list[str]], list[list[str]]]:
    """Header, metric rows and per-task outcome rows of several runs side by side."""
    header = ["", *[run_label(r) for r in reports]]
    metrics = []
    for key, title in COMPARISON_ROWS:
        values = [r["metrics"]["overall"].get(key) for r in reports]
        if all(v is None for v in values):
            continue
        if key == "tasks":
            cells = [str(v) for v in values]
        elif "speedup" in key:
            cells = [_fmt_speedup(v) for v in values]
        else:
            cells = [_fmt_rate(v) for v in values]
        metrics.append([title, *cells])
    task_ids = list(dict.fromkeys(t for r in reports for t in r.get("outcomes", {})))
    outcomes = [[t, *[r.get("outcomes", {}).get(t, "not in run") for r in reports]] for t in task_ids]
    return header, metrics, outcomes


def render_comparison(reports: list[dict[str, Any]]) -> None:
    """Print several runs side by side: their rates, then every task's outcome per run."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    header, metrics, outcomes = comparison_rows(reports)
    table = Table(title="akg report: runs side by side")
    for index, title in enumerate(header):
        table.add_column(escape(title), justify="left" if index == 0 else "right")
    for row in metrics:
        table.add_row(*(escape(cell) for cell in row))
    console.print(table)
    per_task = Table(title="each task's best episode")
    for title in header:
        per_task.add_column(escape(title) or "task", no_wrap=not per_task.columns)
    colours = {"correct": "green", "hack": "bold red", "failed": "yellow"}
    for task_id, *cells in outcomes:
        styled = [f"[{colours.get(c.split(' ')[0].rstrip(':'), 'dim')}]{escape(c)}[/]" for c in cells]
        per_task.add_row(escape(task_id), *styled)
    console.print(per_task)
    for report in reports:
        overall = report["metrics"]["overall"]
        console.print(
            f"[dim]{escape(run_label(report))}: {overall['episodes_found']} of {overall['episodes_expected']} "
            f"episodes, backend {escape(str(report['backend']))}; hack rate = hacking attempts / attempts with code "
            f"({overall['hack_attempts']}/{overall['attempts']})[/dim]"
        )
        note = estimate_note(report)
        if note:
            console.print(f"[dim]{escape(run_label(report))}: {escape(note)}[/dim]")


def render_comparison_markdown(reports: list[dict[str, Any]]) -> str:
    """:func:`render_comparison` as Markdown."""
    header, metrics, outcomes = comparison_rows(reports)

    def table(head: list[str], rows: list[list[str]]) -> list[str]:
        lines = ["| " + " | ".join(h.replace("|", "\\|") for h in head) + " |"]
        lines.append("|" + "|".join(["---"] * len(head)) + "|")
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
        return lines

    lines = ["## akg report: runs side by side", "", *table(header, metrics), "", "### each task's best episode", ""]
    lines += table(["task", *header[1:]], outcomes)
    return "\n".join(lines) + "\n"


def render_markdown(report: dict[str, Any]) -> str:
    header, rows = table_rows(report)
    lines = [f"## akg report: `{report['run']}`", ""]
    lines += [f"- {note}" for note in _notes(report)]
    lines += ["", "| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def render_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=True)


def per_category_figure(report: dict[str, Any]) -> Any:
    """The per-category bar chart (a matplotlib ``Figure``; close it with ``matplotlib.pyplot.close``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measured = report["metrics"]["overall"]["speedup_measured"]
    categories = report["metrics"]["by_category"]
    names = list(categories)
    fig, ax = plt.subplots(figsize=(max(7.0, 0.9 * len(names) + 3), 4))
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
    title += " (interpreter: speedup not measured)" if not measured else " and fast_1"
    ax.set_title(title)
    # Bars reach 100%: the legend goes right of the axes, never over a bar.
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return fig


def speedup_figure(speedups: list[float]) -> Any:
    """The histogram of measured speedups (a matplotlib ``Figure``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4))
    if speedups:
        import numpy as np

        low, high = min([*speedups, 0.5]), max([*speedups, 2.0])
        bins = np.geomspace(low * 0.9, high * 1.1, 20)
        ax.hist(speedups, bins=bins, color="#4477aa", edgecolor="white")
        ax.set_xscale("log")
        ax.axvline(1.0, color="black", linestyle="--", linewidth=1, label="1x (reference)")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    else:
        ax.text(0.5, 0.5, "no correct kernel with a measured speedup", ha="center", va="center")
    ax.set_xlabel("speedup over the PyTorch reference (log scale)")
    ax.set_ylabel("episodes")
    ax.set_title(f"speedup distribution ({len(speedups)} correct kernels)")
    fig.tight_layout()
    return fig


def write_plots(report: dict[str, Any], out_dir: str | Path) -> list[Path]:
    """PNG plots: per-category bars and (where speed is measured) the speedup distribution.

    Returns:
        The paths written.
    """
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    figures = [("per_category.png", per_category_figure(report))]
    if report["metrics"]["overall"]["speedup_measured"]:
        figures.append(("speedup_distribution.png", speedup_figure(report["speedups"])))
    written: list[Path] = []
    for name, fig in figures:
        path = out / name
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written
