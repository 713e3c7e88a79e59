"""HTML report: a run's leaderboard rows, environment and problem in, one self-contained `report.html` out.

The file opens offline: tables, inline SVG charts (matplotlib, optional: `pip install .[report]`) and a few
lines of inline JavaScript to sort the leaderboard, with no external fetch of any kind. Like the other
tables it is derived from records alone and can be regenerated with `harness report`.

Candidates are adversarial: every string a candidate controls (its name, a reason, a log) is escaped with
`html.escape` before it reaches the page, and chart labels are drawn with mathtext off.
"""
from __future__ import annotations

import html
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from harness.leaderboard import Row, describe_env, format_interval, rank_label
from harness.problem import Problem, Shape
from harness.records import now_utc, write_atomic

TOP_CANDIDATES = 5          # the speedup chart shows this many of the best ok candidates, beside the baselines
LOG_TAIL_CHARS = 4000       # a failing candidate's log excerpt: its last characters
ITEMSIZE = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}

# Peak DRAM bandwidth in bytes per second, by the vendors' datasheets. Matched on torch's device name,
# lower-cased, first match wins: the specific names before the general ones; a name that matches none
# (or a CPU) is "not known" and no fraction is shown.
DEVICE_BANDWIDTH = (
    ("h200", 4.8e12, "NVIDIA H200"),
    ("h100 nvl", 3.9e12, "NVIDIA H100 NVL"),
    ("h100 pcie", 2.0e12, "NVIDIA H100 PCIe"),
    ("h100 80gb hbm3", 3.35e12, "NVIDIA H100 SXM"),
    ("h100 sxm", 3.35e12, "NVIDIA H100 SXM"),
    ("b200", 8.0e12, "NVIDIA B200"),
    ("a100-sxm4-80gb", 2.039e12, "NVIDIA A100 SXM 80GB"),
    ("a100 80gb pcie", 1.935e12, "NVIDIA A100 PCIe 80GB"),
    ("a100-sxm4-40gb", 1.555e12, "NVIDIA A100 SXM 40GB"),
    ("a100-pcie-40gb", 1.555e12, "NVIDIA A100 PCIe 40GB"),
    ("l40s", 864e9, "NVIDIA L40S"),
    ("rtx 4090", 1008e9, "NVIDIA GeForce RTX 4090"),
)
CHARTS_NEED = "Charts need matplotlib: <code>pip install .[report]</code>."
# Sorting by clicking a header; `#sort=N` (or `#sort=-N`, descending) in the address sorts on load.
SORT_SCRIPT = """
function sortTable(table, col, desc) {
  const body = table.tBodies[0], rows = Array.from(body.rows);
  const key = r => { const c = r.cells[col]; const v = c.dataset.sort !== undefined ? c.dataset.sort : c.textContent;
                     const n = parseFloat(v); return v !== "" && !isNaN(n) && isFinite(v) ? n : v; };
  rows.sort((a, b) => { const x = key(a), y = key(b);
    const o = (typeof x === "number" && typeof y === "number") ? x - y
            : (typeof x === "number") ? -1 : (typeof y === "number") ? 1 : String(x).localeCompare(String(y));
    return desc ? -o : o; });
  rows.forEach(r => body.appendChild(r));
  table.dataset.sortedBy = (desc ? "-" : "") + col;
}
document.querySelectorAll("table.sortable").forEach(table => {
  Array.from(table.tHead.rows[0].cells).forEach((th, col) => th.addEventListener("click", () =>
    sortTable(table, col, table.dataset.sortedBy === String(col))));
});
const wanted = /^#sort=(-?)(\\d+)$/.exec(location.hash);
if (wanted) document.querySelectorAll("table.sortable").forEach(t => sortTable(t, +wanted[2], wanted[1] === "-"));
"""
STYLE = """
body { font-family: "DejaVu Sans", Verdana, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; font-size: 13px; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #eee; }
table.sortable th { cursor: pointer; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.baseline td { background: #f2f6fb; }
.status-ok { color: #176b2c; } .status-bad { color: #a11; }
pre { white-space: pre-wrap; word-break: break-word; background: #f6f6f6; border: 1px solid #ddd; padding: 0.5em; overflow-x: auto; max-height: 30em; }
.chart svg { max-width: 100%; height: auto; }
"""


@dataclass(frozen=True)
class Bandwidth:
    bytes_per_s: float | None
    device: str
    source: str             # "datasheet" or "not known"


def device_bandwidth(env: dict) -> Bandwidth:
    """The device's peak memory bandwidth from DEVICE_BANDWIDTH; "not known" for CPUs and unknown GPUs."""
    name = str(env.get("device_name") or "")
    if env.get("device") == "cuda":
        lowered = name.lower()
        for key, bandwidth, label in DEVICE_BANDWIDTH:
            if key in lowered:
                return Bandwidth(bandwidth, label, "datasheet")
    return Bandwidth(None, name or str(env.get("device") or "unknown device"), "not known")


def floor_bytes(problem: Problem, shape: Shape) -> int:
    """Bytes any implementation must move at `shape`: every input read once and the output written once.
    The output is taken to have the first input's shape and the problem's dtype (true of the shipped
    problems, whose references stack (B, H, D) results over T); the report states this assumption."""
    itemsize = ITEMSIZE[problem.dtype]
    elements = sum(math.prod(spec.sizes(shape)) for spec in problem.inputs)
    elements += math.prod(problem.inputs[0].sizes(shape))
    return elements * itemsize


def bandwidth_fractions(rows: list[Row], problem: Problem, shapes: list[str], bandwidth: Bandwidth
                        ) -> dict[str, dict[str, float | None]]:
    """candidate -> shape -> achieved bytes/s over the device's peak, for every `ok` row at its ok shapes."""
    fractions: dict[str, dict[str, float | None]] = {}
    for row in rows:
        if row.status != "ok":
            continue
        per_shape = fractions.setdefault(row.candidate, {})
        for name in shapes:
            entry = row.shapes.get(name, {})
            time_us = entry.get("time_us")
            if entry.get("status") != "ok" or not time_us or name not in problem.shapes or not bandwidth.bytes_per_s:
                per_shape[name] = None
                continue
            per_shape[name] = floor_bytes(problem, problem.shapes[name]) / (time_us * 1e-6) / bandwidth.bytes_per_s
    return fractions


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _load_matplotlib():
    """matplotlib's object API (no pyplot: no global backend or figure state), or None when not installed."""
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError:
        return None
    return matplotlib, Figure


def _chart_settings(salt: str) -> dict:
    # Glyphs as paths: the chart looks the same in any browser, with no font to fetch. A fixed hash salt and
    # no date keep the file reproducible. Tick labels use mathtext (10^3); candidate names go through _label.
    return {"svg.fonttype": "path", "svg.hashsalt": salt, "font.family": "DejaVu Sans", "font.size": 9,
            "text.usetex": False}


def _label(text: str) -> str:
    """A candidate's name as a chart label: every `$` escaped, so matplotlib never parses it as mathtext."""
    return text.replace("$", r"\$")


def _svg(figure) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    text = buffer.getvalue()
    return text[text.index("<svg"):]     # drop the XML declaration and DOCTYPE: the SVG sits inline


def shape_chart(mpl, rows: list[Row], shape: str, index: int) -> str | None:
    """Horizontal bars of median time (log scale) with the 95% interval as error bars; baselines hatched.
    Only rows whose status is ok: a candidate wrong or caught at another shape is no contender here."""
    matplotlib, Figure = mpl
    timed = [r for r in rows if r.status == "ok" and r.shapes.get(shape, {}).get("status") == "ok"
             and r.shapes[shape].get("time_us")]
    if not timed:
        return None
    timed.sort(key=lambda r: r.shapes[shape]["time_us"])
    with matplotlib.rc_context(_chart_settings(f"shape-{index}")):
        figure = Figure(figsize=(7.5, 0.8 + 0.28 * len(timed)))
        axes = figure.add_subplot()
        times = [r.shapes[shape]["time_us"] for r in timed]
        low = [t - (r.shapes[shape].get("ci_low_us") or t) for r, t in zip(timed, times)]
        high = [(r.shapes[shape].get("ci_high_us") or t) - t for r, t in zip(timed, times)]
        positions = list(range(len(timed)))
        baseline = [r.kind == "baseline" for r in timed]
        axes.barh(positions, times, xerr=[low, high], capsize=2, log=True,
                  color=["#d9a441" if b else "#4c78a8" for b in baseline],
                  edgecolor=["#7a5a16" if b else "#2c4a6a" for b in baseline], linewidth=0.6,
                  error_kw={"elinewidth": 0.8, "ecolor": "#222"})
        for patch, is_baseline in zip(axes.patches, baseline):
            if is_baseline:
                patch.set_hatch("//")
        axes.set_yticks(positions, [_label(r.candidate) + (" (baseline)" if r.kind == "baseline" else "") for r in timed])
        axes.invert_yaxis()
        axes.set_xlabel("median time per call, µs (log scale; bars: 95% interval of the median)")
        axes.set_title(_label(f"{shape}: time per call"))
        axes.grid(axis="x", which="both", linewidth=0.3, alpha=0.6)
        return _svg(figure)


def speedup_chart(mpl, rows: list[Row], shapes: list[str]) -> str | None:
    """Speedup over eager against shape for the best ok candidates (solid) and the baselines (dashed)."""
    matplotlib, Figure = mpl
    best = [r for r in rows if r.status == "ok" and r.kind != "baseline"][:TOP_CANDIDATES]
    baselines = [r for r in rows if r.kind == "baseline" and r.status == "ok"]
    plotted = [r for r in best + baselines if any(r.shapes.get(s, {}).get("speedup") for s in shapes)]
    if not plotted:
        return None
    with matplotlib.rc_context(_chart_settings("speedup")):
        figure = Figure(figsize=(7.5, 4.2))
        axes = figure.add_subplot()
        for row in plotted:
            points = [(i, row.shapes[s]["speedup"]) for i, s in enumerate(shapes) if row.shapes.get(s, {}).get("speedup")]
            dashed = row.kind == "baseline"
            axes.plot([p[0] for p in points], [p[1] for p in points], marker="s" if dashed else "o", markersize=4,
                      linestyle="--" if dashed else "-", linewidth=1.2,
                      label=_label(row.candidate) + (" (baseline)" if dashed else ""))
        axes.set_yscale("log")
        axes.set_xticks(range(len(shapes)), [_label(s) for s in shapes])
        axes.set_xlabel("shape")
        axes.set_ylabel("speedup over ref:eager (log scale)")
        axes.set_title(f"Speedup against shape: the best {TOP_CANDIDATES} ok candidates and the baselines")
        axes.grid(which="both", linewidth=0.3, alpha=0.6)
        axes.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
        return _svg(figure)


def _leaderboard_table(rows: list[Row], shapes: list[str]) -> str:
    header = ["rank", "candidate", "kind", "status"] + [f"{s} time" for s in shapes] + \
             [f"{s} speedup" for s in shapes] + ["geomean speedup", "vs best baseline", "reason"]
    out = ['<table class="sortable" id="leaderboard"><thead><tr>']
    out += [f"<th>{_e(h)}</th>" for h in header]
    out.append("</tr></thead><tbody>")
    for row in rows:
        bad = "status-ok" if row.status == "ok" else "status-bad"
        status = row.status + (f" ({row.check})" if row.check else "")
        rank = row.rank if row.rank is not None else ""
        cells = [f'<td class="num" data-sort="{_e(rank)}">{_e(rank_label(row))}</td>',
                 f"<td>{_e(row.candidate)}</td>", f"<td>{_e(row.kind)}</td>",
                 f'<td class="{bad}">{_e(status)}</td>']
        for shape in shapes:
            entry = row.shapes.get(shape, {})
            ok = entry.get("status") == "ok"
            text = format_interval(entry) + (" (host-bound)" if entry.get("host_bound") else "") if ok \
                else entry.get("status", "—")
            key = entry.get("time_us") if ok and entry.get("time_us") else ""
            cells.append(f'<td class="num" data-sort="{_e(key)}">{_e(text)}</td>')
        for shape in shapes:
            speedup = row.shapes.get(shape, {}).get("speedup")
            cells.append(f'<td class="num" data-sort="{_e(speedup or "")}">{_e(f"{speedup:.2f}×" if speedup else "—")}</td>')
        for value in (row.geomean_speedup, row.geomean_speedup_vs_best_baseline):
            cells.append(f'<td class="num" data-sort="{_e(value or "")}">{_e(f"{value:.2f}×" if value else "—")}</td>')
        cells.append(f"<td>{_e(row.reason)}</td>")
        out.append(f'<tr class="{_e(row.kind)}">' + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _bandwidth_section(rows: list[Row], problem: Problem, shapes: list[str], bandwidth: Bandwidth) -> str:
    out = ["<h2>Fraction of the memory-bandwidth floor</h2>"]
    if bandwidth.bytes_per_s:
        out.append(f"<p>Peak bandwidth: {bandwidth.bytes_per_s / 1e12:.3g} TB/s for {_e(bandwidth.device)} "
                   f"(source: {_e(bandwidth.source)}).</p>")
    else:
        out.append(f"<p>Peak bandwidth of {_e(bandwidth.device)}: not known (source: {_e(bandwidth.source)}), "
                   "so no fraction is given.</p>")
    out.append(f"<p>Floor: the bytes the problem must move, every input read once and the output written once "
               f"({_e(problem.dtype)}, {ITEMSIZE[problem.dtype]} bytes an element). Assumption: the output has the "
               f"shape of the first input, <code>{_e(problem.inputs[0].name)}</code> "
               f"[{_e(', '.join(problem.inputs[0].shape))}]. Fraction = floor bytes ÷ median time ÷ peak "
               "bandwidth: 100% would be a kernel bound by memory alone; a problem bound by compute stays well "
               "below it.</p>")
    out.append('<table><thead><tr><th>shape</th><th>dims</th><th>floor bytes</th></tr></thead><tbody>')
    for name in shapes:
        shape = problem.shapes.get(name)
        if shape is None:
            out.append(f"<tr><td>{_e(name)}</td><td>not in the problem</td><td>—</td></tr>")
            continue
        dims = ", ".join(f"{k}={v}" for k, v in shape.dims.items())
        out.append(f'<tr><td>{_e(name)}</td><td>{_e(dims)}</td>'
                   f'<td class="num">{floor_bytes(problem, shape) / 1e6:,.3f} MB</td></tr>')
    out.append("</tbody></table>")
    fractions = bandwidth_fractions(rows, problem, shapes, bandwidth)
    if fractions and bandwidth.bytes_per_s:
        out.append('<table class="sortable" id="bandwidth"><thead><tr><th>candidate</th>'
                   + "".join(f"<th>{_e(s)}</th>" for s in shapes) + "</tr></thead><tbody>")
        for candidate, per_shape in fractions.items():
            cells = "".join(f'<td class="num" data-sort="{_e(f if f is not None else "")}">'
                            f'{_e(f"{f * 100:.2f}%" if f is not None else "—")}</td>' for f in per_shape.values())
            out.append(f"<tr><td>{_e(candidate)}</td>{cells}</tr>")
        out.append("</tbody></table>")
    return "\n".join(out)


ENV_FIRST = ("device", "device_name", "driver", "torch", "torch_cuda", "cuda_home", "nvcc", "compute_capability",
             "sm_count", "l2_bytes", "harness_commit", "harness_digest", "cpu", "cpu_count", "python", "platform")


def _env_section(env: dict, meta: dict) -> str:
    out = ["<h2>Environment</h2>", f"<p>{_e(describe_env(env))}</p>", "<table><tbody>"]
    keys = [k for k in ENV_FIRST if k in env] + sorted(k for k in env if k not in ENV_FIRST)
    out += [f"<tr><th>{_e(k)}</th><td>{_e(env[k])}</td></tr>" for k in keys]
    for key in ("run_id", "timing_method", "config", "problem_sha256", "regenerated", "signatures"):
        if key in meta:
            out.append(f"<tr><th>{_e(key)}</th><td>{_e(meta[key])}</td></tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _log_excerpt(path: Path) -> str | None:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - LOG_TAIL_CHARS))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    return ("…" if size > LOG_TAIL_CHARS else "") + text


def _failures_section(rows: list[Row], logs: Mapping[str, Path]) -> str:
    failing = [r for r in rows if r.status != "ok"]
    out = ["<h2>Failing candidates</h2>"]
    if not failing:
        out.append("<p>None: every row is ok.</p>")
    for row in failing:
        out.append(f'<section class="failure"><h3>{_e(row.candidate)}</h3>')
        status = row.status + (f" ({row.check})" if row.check else "")
        out.append(f'<p>Status: <span class="status-bad">{_e(status)}</span>. Per shape: '
                   + _e(", ".join(f"{s}: {e.get('status')}" for s, e in row.shapes.items())) + "</p>")
        out.append(f"<p>Reason:</p><pre>{_e(row.reason or '(none recorded)')}</pre>")
        path = logs.get(row.candidate)
        excerpt = _log_excerpt(Path(path)) if path else None
        if excerpt is not None:
            out.append(f"<p>Log excerpt (last {LOG_TAIL_CHARS} characters of {_e(path)}):</p><pre>{_e(excerpt)}</pre>")
        out.append("</section>")
    return "\n".join(out)


def render_report(problem: Problem, env: dict, rows: list[Row], shapes: list[str], meta: dict,
                  logs: Mapping[str, Path] | None = None) -> str:
    """The whole page as one string."""
    mpl = _load_matplotlib()
    bandwidth = device_bandwidth(env)
    title = f"{problem.name} report"
    parts = ['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
             # no fetch of any kind: a candidate's text that slipped through still could not load anything
             '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
             'style-src \'unsafe-inline\'; script-src \'unsafe-inline\'; img-src data:">',
             f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>",
             f"<h1>{_e(title)}</h1>",
             f"<p>{_e(describe_env(env))} Generated {_e(now_utc())} from records.jsonl"
             + (f", run {_e(meta['run_id'])}" if meta.get("run_id") else "") + ".</p>"]
    if mpl is None:
        parts.append(f'<p class="no-charts">{CHARTS_NEED}</p>')
    parts += ["<h2>Leaderboard</h2>",
              "<p>Click a column header to sort. Time is the median per call with the half-width of its 95% "
              "interval; speedup is over <code>ref:eager</code>; baselines are shaded.</p>",
              _leaderboard_table(rows, shapes)]
    if mpl is not None:
        parts.append("<h2>Time per shape</h2>")
        for index, shape in enumerate(shapes):
            chart = shape_chart(mpl, rows, shape, index)
            parts.append(f'<div class="chart" id="chart-{index}">{chart}</div>' if chart
                         else f"<p>{_e(shape)}: no row was timed ok at this shape.</p>")
        parts.append("<h2>Speedup against shape</h2>")
        chart = speedup_chart(mpl, rows, shapes)
        parts.append(f'<div class="chart" id="chart-speedup">{chart}</div>' if chart
                     else "<p>No speedup to chart: nothing was timed ok against ref:eager.</p>")
    parts.append(_bandwidth_section(rows, problem, shapes, bandwidth))
    parts.append(_env_section(env, meta))
    parts.append(_failures_section(rows, logs or {}))
    parts.append(f"<script>{SORT_SCRIPT}</script></body></html>")
    return "\n".join(parts) + "\n"


def write_report(directory: Path, problem: Problem, env: dict, rows: list[Row], shapes: list[str], meta: dict,
                 logs: Mapping[str, Path] | None = None) -> Path:
    """Write `directory/report.html`; `logs`: candidate -> a log file whose tail the failure section shows."""
    path = directory / "report.html"
    write_atomic(path, render_report(problem, env, rows, shapes, meta, logs))
    return path
