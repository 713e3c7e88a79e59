"""Leaderboard: records in, leaderboard.{json,csv,md} and a table's rows out.

Everything here is derived from records and can be regenerated at any time.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from harness.records import Record, now_utc, write_atomic
from harness.stats import median_interval

EAGER = "ref:eager"
STATUS_ORDER = ("integrity", "rejected", "wrong", "runtime_error", "crashed", "timeout", "compile_error", "load_error", "skipped")


@dataclass
class Row:
    candidate: str
    kind: str
    status: str
    reason: str
    check: str
    source_hash: str
    compile_s: float | None
    shapes: dict[str, dict] = field(default_factory=dict)
    geomean_speedup: float | None = None
    geomean_speedup_vs_best_baseline: float | None = None
    max_abs_err: float | None = None
    rank: int | None = None
    rank_shared: bool = False    # its intervals overlap those of the row that holds this rank, at every shape
    change_vs_last: float | None = None   # geomean of time / the previous run's time of the same source

    def to_json(self) -> dict:
        return {"rank": self.rank, "rank_shared": self.rank_shared, "candidate": self.candidate, "kind": self.kind, "status": self.status,
                "reason": self.reason, "check": self.check, "geomean_speedup": self.geomean_speedup,
                "geomean_speedup_vs_best_baseline": self.geomean_speedup_vs_best_baseline,
                "max_abs_err": self.max_abs_err, "compile_s": self.compile_s, "source_hash": self.source_hash,
                "change_vs_last": self.change_vs_last,
                "shapes": self.shapes}


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0 and math.isfinite(v)]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def _row_status(records: list[Record]) -> tuple[str, Record | None]:
    failing = [r for r in records if r.status != "ok"]
    if not failing:
        return "ok", None
    if all(r.status == "skipped" for r in failing) and any(r.status == "ok" for r in records) and records[0].kind == "baseline":
        return "ok", None    # a baseline skipped at some shapes still stands where it ran
    worst = min(failing, key=lambda r: STATUS_ORDER.index(r.status) if r.status in STATUS_ORDER else 0)
    return worst.status, worst


def build_rows(records: list[Record], order: list[str], shapes: list[str],
               previous: dict[tuple[str, str], float] | None = None) -> list[Row]:
    """`previous`: (candidate source sha256, shape) -> the time of the same source in the run before, if any."""
    previous = previous or {}
    by_candidate: dict[str, dict[str, Record]] = {}
    for record in records:
        by_candidate.setdefault(record.candidate, {})[record.shape] = record
    eager = by_candidate.get(EAGER, {})
    best_baseline: dict[str, float] = {}
    best_baseline_name: dict[str, str] = {}
    for name, per_shape in by_candidate.items():
        for shape, r in per_shape.items():
            if r.kind == "baseline" and r.status == "ok" and r.time_us and r.time_us < best_baseline.get(shape, math.inf):
                best_baseline[shape], best_baseline_name[shape] = r.time_us, name
    rows = []
    for name in order:
        per_shape = by_candidate.get(name)
        if not per_shape:
            continue
        present = [per_shape[s] for s in shapes if s in per_shape]
        status, worst = _row_status(present)
        first = present[0]
        row = Row(name, first.kind, status, "", worst.check if worst else "", first.candidate_sha256[:12],
                  first.compile_s)
        if worst is not None:
            row.reason = f"{worst.shape}: {worst.reason}" if len(present) > 1 and status != "rejected" else worst.reason
        skipped = [r for r in present if r.status == "skipped"]
        if status == "ok" and skipped:   # a baseline that stands where it ran says why it did not elsewhere
            row.reason = f"{', '.join(r.shape for r in skipped)} skipped: {skipped[0].reason}"
        speedups, vs_best, errors, changes = [], [], [], []
        for shape in shapes:
            r = per_shape.get(shape)
            if r is None:
                continue
            timing = r.timing or {}
            interval = median_interval(timing.get("samples_us") or []) if r.status == "ok" else None
            entry = {"status": r.status, "time_us": r.time_us, "iqr_us": timing.get("iqr_us"), "n": timing.get("n"),
                     "ci_low_us": interval[0] if interval else None, "ci_high_us": interval[1] if interval else None,
                     "best_baseline": best_baseline_name.get(shape),
                     "host_us": r.host_us, "max_abs_err": r.max_abs_err, "timing_method": timing.get("method"),
                     "host_bound": bool(timing.get("host_bound")),
                     "speedup": None, "speedup_vs_best_baseline": None}
            if r.status == "ok" and r.time_us:
                ref = eager.get(shape)
                if ref and ref.status == "ok" and ref.time_us:
                    entry["speedup"] = ref.time_us / r.time_us
                    speedups.append(entry["speedup"])
                if shape in best_baseline:
                    entry["speedup_vs_best_baseline"] = best_baseline[shape] / r.time_us
                    vs_best.append(entry["speedup_vs_best_baseline"])
                before = previous.get((r.candidate_sha256, shape))
                if before:
                    entry["previous_us"] = before
                    changes.append(r.time_us / before)
            if r.max_abs_err is not None:
                errors.append(r.max_abs_err)
            row.shapes[shape] = entry
        if status == "ok":
            row.geomean_speedup = geomean(speedups)
            row.geomean_speedup_vs_best_baseline = geomean(vs_best)
        row.max_abs_err = max(errors) if errors else None
        row.change_vs_last = geomean(changes) if status == "ok" else None
        rows.append(row)
    ranked = sorted((r for r in rows if r.status == "ok" and r.geomean_speedup), key=lambda r: -r.geomean_speedup)
    holder = None
    for position, row in enumerate(ranked, 1):
        if holder is not None and intervals_overlap(holder, row, shapes):
            row.rank, row.rank_shared, holder.rank_shared = holder.rank, True, True
        else:
            row.rank, holder = position, row
    unranked = [r for r in rows if r.rank is None]
    return ranked + sorted(unranked, key=lambda r: (r.status == "skipped", r.kind != "baseline", r.candidate))


def intervals_overlap(a: Row, b: Row, shapes: list[str]) -> bool:
    """Whether the two rows' 95% intervals of the median overlap at every shape both were timed at: then the
    run cannot tell them apart, and they share a rank."""
    compared = 0
    for shape in shapes:
        x, y = a.shapes.get(shape, {}), b.shapes.get(shape, {})
        if None in (x.get("ci_low_us"), y.get("ci_low_us")):
            return False
        if x["ci_high_us"] < y["ci_low_us"] or y["ci_high_us"] < x["ci_low_us"]:
            return False
        compared += 1
    return compared > 0


def change_label(change: float | None) -> str:
    """Time against the previous run of the same source: `-3%` is faster."""
    return "" if change is None else f"{(change - 1) * 100:+.0f}%"


def rank_label(row: Row) -> str:
    return "—" if row.rank is None else f"{row.rank}=" if row.rank_shared else str(row.rank)


def format_interval(entry: dict) -> str:
    """The median with the half-width of its 95% interval, as a percentage: `4.9 µs ±2%`."""
    median, low, high = entry.get("time_us"), entry.get("ci_low_us"), entry.get("ci_high_us")
    text = format_time(median)
    if median and low is not None and high is not None:
        text += f" ±{max(median - low, high - median) / median * 100:.0f}%"
    return text


def _fmt(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def format_time(us: float | None) -> str:
    if us is None:
        return "—"
    if us >= 1e6:
        return f"{us / 1e6:.3g} s"
    if us >= 1e3:
        return f"{us / 1e3:.3g} ms"
    return f"{us:.3g} µs"


def table_cells(rows: list[Row], shapes: list[str]) -> tuple[list[str], list[list[str]]]:
    """Every column, for the Markdown file: each shape's median with its 95% interval, the judge's own
    clock per call, and the speedup."""
    header = ["rank", "candidate", "status"]
    for shape in shapes:
        header += [f"{shape} time", f"{shape} judge", f"{shape} speedup"]
    header += ["geomean speedup", "vs best baseline", "vs last run", "max abs err", "compile s", "source", "reason"]
    body = []
    for row in rows:
        cells = [rank_label(row), row.candidate, row.status + (f" ({row.check})" if row.check else "")]
        for shape in shapes:
            entry = row.shapes.get(shape, {})
            ok = entry.get("status") == "ok"
            time = format_interval(entry) + (" (host-bound)" if entry.get("host_bound") else "")
            cells += [time if ok else entry.get("status", "—"),
                      format_time(entry.get("host_us")) if ok else "—",
                      _fmt(entry.get("speedup"), ".2f") + ("×" if entry.get("speedup") else "")]
        cells += [_fmt(row.geomean_speedup, ".2f") + ("×" if row.geomean_speedup else ""),
                  _fmt(row.geomean_speedup_vs_best_baseline, ".2f") + ("×" if row.geomean_speedup_vs_best_baseline else ""),
                  change_label(row.change_vs_last) or "—",
                  _fmt(row.max_abs_err, ".2e"), _fmt(row.compile_s, ".1f"), row.source_hash, row.reason]
        body.append(cells)
    return header, body


def summary_cells(rows: list[Row], shapes: list[str], reason_width: int) -> tuple[list[str], list[list[str]]]:
    """The console's few columns: rank, candidate, status, each shape's time with its interval, the geomean
    speedups over eager and over the best baseline, and the reason cut to `reason_width`."""
    header = ["rank", "candidate", "status", *shapes, "vs eager", "vs best", "vs last", "reason"]
    body = []
    for row in rows:
        cells = [rank_label(row), row.candidate, row.status + (f" ({row.check})" if row.check else "")]
        for shape in shapes:
            entry = row.shapes.get(shape, {})
            cells.append(format_interval(entry) + ("*" if entry.get("host_bound") else "")
                         if entry.get("status") == "ok" else "—")
        reason = " ".join(row.reason.split())
        if len(reason) > reason_width:
            reason = reason[:max(0, reason_width - 1)] + "…"
        cells += [_fmt(row.geomean_speedup, ".2f") + ("×" if row.geomean_speedup else ""),
                  _fmt(row.geomean_speedup_vs_best_baseline, ".2f") + ("×" if row.geomean_speedup_vs_best_baseline else ""),
                  change_label(row.change_vs_last), reason]
        body.append(cells)
    return header, body


def describe_env(env: dict) -> str:
    if env.get("device") == "cuda":
        return (f"Device: {env.get('device_name')} (cuda), driver {env.get('driver') or '—'}, torch {env.get('torch')}, "
                f"CUDA {env.get('torch_cuda') or '—'}, harness {env.get('harness_commit')}.")
    return (f"Device: CPU, {env.get('cpu') or env.get('device_name')} ({env.get('cpu_count')} cores), "
            f"torch {env.get('torch')}, harness {env.get('harness_commit')}.")


def describe_columns(env: dict) -> str:
    interval = ("`time` is the median per call with the half-width of its 95% confidence interval (order statistics "
                "of the samples, distribution-free); rows whose intervals overlap at every shape share a rank (`2=`). ")
    if env.get("device") == "cuda":
        return (interval + "Speedup is over the eager reference (`ref:eager`). `time` is device time (CUDA events or "
                "graph replays), except a host-bound call (queued slower than any spin ahead of it could cover): it is "
                "timed by the host clock, from a quiet device to the synchronize after it, what its caller waits. `judge` is the judge's own clock per call, back to back, less "
                "its empty call: what the claimed time must account for.")
    return (interval + "Speedup is over the eager reference (`ref:eager`). `time` is the wall time of each call in the "
            "sandbox (a monotonic clock around the call); `judge` is the judge's own clock per call, back to back, less "
            "its empty call, and the sandbox's CPU time is held against the claim too.")


def best_baselines(rows: list[Row], shapes: list[str]) -> str:
    """Which baseline `vs best baseline` divides by at each shape: `seed ref:compile 356 µs, medium ...`."""
    named = []
    for shape in shapes:
        for row in rows:
            entry = row.shapes.get(shape, {})
            if row.kind == "baseline" and entry.get("best_baseline") == row.candidate:
                named.append(f"{shape} {row.candidate} {format_time(entry.get('time_us'))}")
                break
    return ", ".join(named)


def to_markdown(problem: str, env: dict, rows: list[Row], shapes: list[str]) -> str:
    header, body = table_cells(rows, shapes)
    escape = lambda text: text.replace("|", "\\|").replace("\n", " ")
    baselines = best_baselines(rows, shapes)
    lines = [f"# {problem} leaderboard", "", f"{describe_env(env)} Generated {now_utc()} from records.jsonl.", "",
             describe_columns(env), "", *([f"Best baseline per shape: {baselines}.", ""] if baselines else []),
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(escape(c) for c in cells) + " |" for cells in body]
    return "\n".join(lines) + "\n"


def to_frame(rows: list[Row], shapes: list[str]) -> pd.DataFrame:
    flat = []
    for row in rows:
        item = {"rank": row.rank, "candidate": row.candidate, "kind": row.kind, "status": row.status, "check": row.check,
                "rank_shared": row.rank_shared}
        for shape in shapes:
            entry = row.shapes.get(shape, {})
            item[f"{shape}_status"] = entry.get("status")
            item[f"{shape}_time_us"] = entry.get("time_us")
            item[f"{shape}_iqr_us"] = entry.get("iqr_us")
            item[f"{shape}_ci_low_us"] = entry.get("ci_low_us")
            item[f"{shape}_ci_high_us"] = entry.get("ci_high_us")
            item[f"{shape}_host_us"] = entry.get("host_us")
            item[f"{shape}_host_bound"] = entry.get("host_bound", False)
            item[f"{shape}_speedup"] = entry.get("speedup")
            item[f"{shape}_speedup_vs_best_baseline"] = entry.get("speedup_vs_best_baseline")
            item[f"{shape}_max_abs_err"] = entry.get("max_abs_err")
        item.update(change_vs_last=row.change_vs_last, geomean_speedup=row.geomean_speedup,
                    geomean_speedup_vs_best_baseline=row.geomean_speedup_vs_best_baseline,
                    max_abs_err=row.max_abs_err, compile_s=row.compile_s, source_hash=row.source_hash, reason=row.reason)
        flat.append(item)
    return pd.DataFrame(flat)


def write_leaderboard(directory: Path, problem: str, env: dict, rows: list[Row], shapes: list[str], meta: dict) -> None:
    document = {"problem": problem, "generated_at": now_utc(), "env": env, "shapes": shapes, **meta,
                "rows": [row.to_json() for row in rows]}
    write_atomic(directory / "leaderboard.json", json.dumps(document, indent=2, default=str) + "\n")
    write_atomic(directory / "leaderboard.csv", to_frame(rows, shapes).to_csv(index=False))
    write_atomic(directory / "leaderboard.md", to_markdown(problem, env, rows, shapes))
