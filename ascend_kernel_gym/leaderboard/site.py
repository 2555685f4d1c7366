"""``akg leaderboard DIR -o site/``: a static HTML leaderboard of the submissions in a directory.

The site is self-contained: inline CSS and vanilla JavaScript, no CDN, no network, and a
Content-Security-Policy that forbids loading anything. ``index.html`` holds a sortable table with
one row per submission and filters by backend and suite; ``submissions/<digest>.html`` shows one
submission's metadata, metrics and per-task results with the kernel code. Every piece of text that
comes from a submission is HTML-escaped (submissions are untrusted input).

A submission ``X.json`` may have a verification report ``X.verify.json`` next to it (``akg verify
X.json`` writes it there by default); its verdict is shown when its digest matches.
Files that are not valid submissions, or whose integrity checks fail, are skipped with a warning.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ascend_kernel_gym.leaderboard.metrics import FAST_P_THRESHOLDS, fast_key

VERIFY_SUFFIX = ".verify.json"
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
    "base-uri 'none'; form-action 'none'"
)


def esc(value: Any) -> str:
    """HTML-escape any value (quotes included, so it is safe in attributes too)."""
    return html.escape("" if value is None else str(value), quote=True)


@dataclass
class SiteEntry:
    """One submission on the leaderboard."""

    path: Path
    data: dict[str, Any]
    verification: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def digest(self) -> str:
        return str(self.data["digest"]["value"])

    @property
    def page(self) -> str:
        return f"submissions/{self.digest[:16]}.html"


def collect_submissions(directory: str | Path) -> tuple[list[SiteEntry], list[str]]:
    """Valid, intact submissions in ``directory`` (deduplicated by digest) and warnings for the rest."""
    from ascend_kernel_gym.leaderboard.submission import SubmissionError, read_submission
    from ascend_kernel_gym.leaderboard.verify import integrity_problems

    root = Path(directory)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: not a directory")
    entries: dict[str, SiteEntry] = {}
    warnings: list[str] = []
    for path in sorted(root.glob("*.json")):
        if path.name.endswith(VERIFY_SUFFIX):
            continue
        try:
            data = read_submission(path)
        except SubmissionError as exc:
            warnings.append(f"skipped {path.name}: {exc}")
            continue
        problems = integrity_problems(data)
        if problems:
            warnings.append(f"skipped {path.name}: {problems[0]}")
            continue
        entry = SiteEntry(path=path, data=data)
        if entry.digest in entries:
            warnings.append(f"skipped {path.name}: same submission as {entries[entry.digest].path.name}")
            continue
        report_path = path.with_name(path.name[: -len(".json")] + VERIFY_SUFFIX)
        if report_path.is_file():
            try:
                report = json.loads(report_path.read_text(encoding="utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError):
                report = None
            if isinstance(report, dict) and report.get("digest") == entry.digest:
                entry.verification = report
            else:
                warnings.append(f"ignored {report_path.name}: not a verification report of {path.name}")
        entries[entry.digest] = entry
    return list(entries.values()), warnings


def _pct(value: Any) -> tuple[str, str]:
    """(display text, sort value) of a rate."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "n/a", ""
    return f"{100 * value:.1f}%", f"{value:.6f}"


def _speed(value: Any) -> tuple[str, str]:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "n/a", ""
    return f"{value:.2f}x", f"{value:.6f}"


def _verified(entry: SiteEntry) -> tuple[str, str]:
    if entry.verification is None:
        return "not verified", "0"
    if entry.verification.get("accepted"):
        where = entry.verification.get("local_backend") or "?"
        return f"verified ({where})", "2"
    return "rejected", "1"


def _suite_label(data: dict[str, Any]) -> str:
    suite = data["suite"]
    return f"{suite['name']}@{suite['content_sha256'][:8]}"


STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem; color: #1d1d1f; }
h1 { font-size: 1.5rem; margin-bottom: 0.25rem; }
p.sub { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 0.85rem; }
.scroll { overflow-x: auto; }
th, td { border-bottom: 1px solid #ddd; padding: 0.35rem 0.45rem; text-align: left; vertical-align: top; }
#leaderboard td { max-width: 12rem; overflow-wrap: break-word; }
#leaderboard td.num, #leaderboard td.date { white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
th button { font: inherit; font-weight: 600; background: none; border: none; padding: 0; cursor: pointer; }
th[aria-sort="ascending"] button::after { content: " \\25B2"; }
th[aria-sort="descending"] button::after { content: " \\25BC"; }
tr:hover td { background: #f4f7fb; }
.filters label { margin-right: 1rem; }
.ok { color: #18794e; } .bad { color: #b42318; } .muted { color: #777; }
pre { background: #f6f8fa; padding: 0.75rem; overflow-x: auto; max-width: 110ch; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: 0.2rem 1rem; }
dl.meta dt { font-weight: 600; } dl.meta dd { margin: 0; word-break: break-all; }
"""

SCRIPT = """
(function () {
  "use strict";
  function sortValue(row, index, type) {
    var cell = row.cells[index];
    var raw = cell.getAttribute("data-sort");
    if (raw === null) { raw = cell.textContent; }
    if (type === "num") {
      if (raw === "") { return null; }
      var v = parseFloat(raw);
      return isNaN(v) ? null : v;
    }
    return raw.toLowerCase();
  }
  function sortTable(table, index, type, ascending) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = sortValue(a, index, type);
      var y = sortValue(b, index, type);
      if (x === null && y === null) { return 0; }
      if (x === null) { return 1; }
      if (y === null) { return -1; }
      var c = x < y ? -1 : (x > y ? 1 : 0);
      return ascending ? c : -c;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    var headers = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(headers, function (th, index) {
      var button = th.querySelector("button");
      if (!button) { return; }
      button.addEventListener("click", function () {
        var type = th.getAttribute("data-type") || "text";
        var current = th.getAttribute("aria-sort");
        var ascending = current ? current !== "ascending" : type !== "num";
        Array.prototype.forEach.call(headers, function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        sortTable(table, index, type, ascending);
      });
    });
  });
  var table = document.getElementById("leaderboard");
  var selects = Array.prototype.slice.call(document.querySelectorAll("select[data-filter]"));
  var counter = document.getElementById("shown-count");
  function applyFilters() {
    if (!table) { return; }
    var shown = 0;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
      var visible = selects.every(function (select) {
        return select.value === "" || row.getAttribute("data-" + select.getAttribute("data-filter")) === select.value;
      });
      row.hidden = !visible;
      if (visible) { shown += 1; }
    });
    if (counter) { counter.textContent = String(shown); }
  }
  selects.forEach(function (select) { select.addEventListener("change", applyFilters); });
  applyFilters();
})();
"""


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<link rel="icon" href="data:,">\n'
        f"<title>{esc(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}\n"
        f"<script>{SCRIPT}</script>\n</body>\n</html>\n"
    )


def _th(label: str, kind: str = "text") -> str:
    css = ' class="num"' if kind == "num" else ""
    return f'<th data-type="{esc(kind)}"{css}><button type="button">{esc(label)}</button></th>'


def _td(text: str, sort: str | None = None, *, num: bool = False, css: str = "") -> str:
    classes = " ".join(c for c in ("num" if num else "", css) if c)
    attrs = (f' class="{esc(classes)}"' if classes else "") + (f' data-sort="{esc(sort)}"' if sort is not None else "")
    return f"<td{attrs}>{esc(text)}</td>"


INDEX_COLUMNS: list[tuple[str, str]] = [
    ("agent", "text"),
    ("model", "text"),
    ("suite", "text"),
    ("split", "text"),
    ("backend", "text"),
    ("device", "text"),
    ("tasks", "num"),
    ("compile", "num"),
    ("correct", "num"),
    ("fast_1", "num"),
    ("fast_2", "num"),
    ("geomean", "num"),
    ("hack", "num"),
    ("pass@1", "num"),
    ("turns × samples", "num"),
    ("verified", "num"),
    ("date", "text"),
]


def model_label(agent: dict[str, Any]) -> str:
    """What the "model" column shows for a submission's agent metadata (never empty).

    The model name of an API agent; the model directory of a local one (its name, and its size
    when recorded); for a scripted agent, what it submits.
    """
    if agent.get("model"):
        return str(agent["model"])
    if agent.get("model_path"):
        return Path(str(agent["model_path"])).name
    if isinstance(agent.get("parameters"), int):
        return f"{agent.get('name', 'local model')} ({agent['parameters'] / 1e6:.0f}M parameters)"
    if agent.get("kind") == "scripted" or agent.get("description"):
        return f"no model: {agent.get('description') or 'scripted'}"
    return str(agent.get("class") or agent.get("spec") or "unknown").rsplit(".", 1)[-1]


def _turns_samples_sort(turns: Any, samples: Any) -> str:
    """Sort by turns, then samples."""
    if isinstance(turns, int) and isinstance(samples, int):
        return str(turns * 1_000_000 + samples)
    return ""


def _index_row(entry: SiteEntry) -> str:
    data = entry.data
    metrics, run_metrics = data["metrics"], data["run_metrics"]
    agent = data["agent"]
    suite = _suite_label(data)
    turns, samples = data["run"]["turns"], data["run"]["samples"]
    cells = [
        f'<td data-sort="{esc(str(agent["name"]).lower())}"><a href="{esc(entry.page)}">{esc(agent["name"])}</a></td>',
        _td(model_label(agent)),
        _td(suite),
        _td(data["suite"]["split"]),
        _td(data["backend"]),
        _td(data["device"].get("name", "")),
        _td(str(data["suite"]["task_count"]), str(data["suite"]["task_count"]), num=True),
        _td(*_pct(metrics.get("compile_rate")), num=True),
        _td(*_pct(metrics.get("correct_rate")), num=True),
        _td(*_pct(metrics.get(fast_key(1.0))), num=True),
        _td(*_pct(metrics.get(fast_key(2.0))), num=True),
        _td(*_speed(metrics.get("geomean_speedup")), num=True),
        _td(*_pct(metrics.get("hack_rate")), num=True),
        _td(*_pct(run_metrics.get("pass@1")), num=True),
        _td(f"{turns}×{samples}", _turns_samples_sort(turns, samples), num=True),
        _td(*_verified(entry)),
        _td(str(data.get("created", ""))[:10], str(data.get("created", "")), css="date"),
    ]
    return (
        f'<tr data-backend="{esc(data["backend"])}" data-suite="{esc(suite)}" data-digest="{esc(entry.digest)}">'
        + "".join(cells)
        + "</tr>"
    )


def _select(name: str, label: str, values: list[str]) -> str:
    options = '<option value="">all</option>' + "".join(f'<option value="{esc(v)}">{esc(v)}</option>' for v in values)
    return f'<label>{esc(label)} <select id="filter-{esc(name)}" data-filter="{esc(name)}">{options}</select></label>'


def render_index(entries: list[SiteEntry], title: str = "ascend-kernel-gym leaderboard") -> str:
    backends = sorted({e.data["backend"] for e in entries})
    suites = sorted({_suite_label(e.data) for e in entries})
    ordered = sorted(entries, key=lambda e: -(e.data["metrics"].get("correct_rate") or 0.0))
    header = "".join(_th(label, kind) for label, kind in INDEX_COLUMNS)
    rows = "\n".join(_index_row(e) for e in ordered)
    body = f"""<h1>{esc(title)}</h1>
<p class="sub">{len(entries)} submission(s). Rates are shares of all tasks of the submission's task set (missing tasks
count as failures); fast_p needs a correct, non-hack kernel with speedup &gt; p, so it is n/a on the interpreter,
which measures no speed. Click a column to sort; "verified" shows the result of <code>akg verify</code> where a
report was published.</p>
<div class="filters">{_select("backend", "backend", backends)} {_select("suite", "suite", suites)}
<span><span id="shown-count">{len(entries)}</span> shown</span></div>
<div class="scroll"><table id="leaderboard" class="sortable">
<thead><tr>{header}</tr></thead>
<tbody>
{rows}
</tbody>
</table></div>"""
    return _page(title, body)


def _bool(value: Any) -> tuple[str, str, str]:
    if value is True:
        return "yes", "1", "ok"
    if value is False:
        return "no", "0", "bad"
    return "n/a", "", "muted"


def render_submission(entry: SiteEntry) -> str:
    data = entry.data
    agent = data["agent"]
    verdicts = {t["task_id"]: t for t in (entry.verification or {}).get("tasks", [])}
    meta = [
        ("agent", json.dumps(agent, sort_keys=True)),
        ("suite", f"{data['suite']['name']} (split {data['suite']['split']}, {data['suite']['task_count']} tasks)"),
        ("suite content sha256", data["suite"]["content_sha256"]),
        ("backend", data["backend"]),
        ("device", json.dumps(data["device"], sort_keys=True)),
        ("versions", json.dumps(data["versions"], sort_keys=True)),
        ("package", f"{data['package']['name']} {data['package']['version']}"),
        ("run", json.dumps(data["run"], sort_keys=True)),
        ("created", data.get("created")),
        ("digest (sha256)", entry.digest),
        ("verification", _verified(entry)[0]),
    ]
    meta_html = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in meta)
    metric_keys = ["compile_rate", "correct_rate", *[fast_key(p) for p in FAST_P_THRESHOLDS], "hack_rate"]
    metric_rows = "".join(
        f"<tr><td>{esc(k)}</td>{_td(*_pct(data['metrics'].get(k)), num=True)}</tr>" for k in metric_keys
    )
    metric_rows += f"<tr><td>geomean_speedup</td>{_td(*_speed(data['metrics'].get('geomean_speedup')), num=True)}</tr>"
    for key, value in sorted(data["run_metrics"].items()):
        if key.startswith("pass@"):
            metric_rows += f"<tr><td>{esc(key)} (run)</td>{_td(*_pct(value), num=True)}</tr>"
    columns = [
        ("task", "text"),
        ("level", "num"),
        ("category", "text"),
        ("compiled", "num"),
        ("correct", "num"),
        ("hack", "num"),
        ("speedup", "num"),
        ("ref ms", "num"),
        ("kernel ms", "num"),
        ("error", "text"),
        ("verify", "text"),
    ]
    rows = []
    codes = []
    for index, task in enumerate(data["tasks"]):
        claimed = task["claimed"]
        verdict = verdicts.get(task["task_id"])
        verdict_text = "" if verdict is None else str(verdict.get("verdict", ""))
        if verdict and verdict.get("reasons"):
            verdict_text += ": " + "; ".join(str(r) for r in verdict["reasons"])
        compiled, correct, hack = _bool(claimed["compiled"]), _bool(claimed["correct"]), _bool(claimed["hack"])
        code_link = f' (<a href="#code-{index}">code</a>)' if task["code"] is not None else ""
        rows.append(
            "<tr>"
            + f'<td data-sort="{esc(task["task_id"])}">{esc(task["task_id"])}{code_link}</td>'
            + _td(str(task["level"]), str(task["level"]), num=True)
            + _td(task["category"])
            + _td(compiled[0], compiled[1], num=True, css=compiled[2])
            + _td(correct[0], correct[1], num=True, css=correct[2])
            + _td(hack[0], hack[1], num=True, css="bad" if claimed["hack"] else "")
            + _td(*_speed(claimed["speedup"]), num=True)
            + _td(*(_ms(claimed["ref_ms"])), num=True)
            + _td(*(_ms(claimed["kernel_ms"])), num=True)
            + _td(claimed["error_type"])
            + _td(verdict_text)
            + "</tr>"
        )
        if task["code"] is not None:
            codes.append(
                f'<details id="code-{index}"><summary>{esc(task["task_id"])} (sha256 {esc(task["code_sha256"][:12])})'
                f"</summary><pre><code>{esc(task['code'])}</code></pre></details>"
            )
    header = "".join(_th(label, kind) for label, kind in columns)
    title = f"{agent['name']} on {data['suite']['name']}"
    body = f"""<p><a href="../index.html">&larr; leaderboard</a></p>
<h1>{esc(title)}</h1>
<dl class="meta">{meta_html}</dl>
<h2>metrics (best kernel per task)</h2>
<table><tbody>{metric_rows}</tbody></table>
<h2>tasks</h2>
<table id="tasks" class="sortable"><thead><tr>{header}</tr></thead><tbody>
{"".join(rows)}
</tbody></table>
<h2>kernels</h2>
{"".join(codes) or '<p class="muted">no kernels</p>'}"""
    return _page(title, body)


def _ms(value: Any) -> tuple[str, str]:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "n/a", ""
    return f"{value:.4g}", f"{value:.9g}"


def build_site(
    directory: str | Path, out_dir: str | Path, title: str = "ascend-kernel-gym leaderboard"
) -> dict[str, Any]:
    """Render the leaderboard of ``directory`` into ``out_dir``.

    Returns:
        ``{"index": path, "pages": [paths], "submissions": n, "verified": n with a verification report,
        "warnings": [...]}``.
    """
    entries, warnings = collect_submissions(directory)
    out = Path(out_dir)
    (out / "submissions").mkdir(parents=True, exist_ok=True)
    index = out / "index.html"
    index.write_text(render_index(entries, title), encoding="utf-8")
    pages = []
    for entry in entries:
        page = out / entry.page
        page.write_text(render_submission(entry), encoding="utf-8")
        pages.append(str(page))
    return {
        "index": str(index),
        "pages": pages,
        "submissions": len(entries),
        "verified": sum(1 for e in entries if e.verification is not None),
        "warnings": warnings,
    }
