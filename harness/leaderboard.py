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

    def to_json(self) -> dict:
        return {"rank": self.rank, "candidate": self.candidate, "kind": self.kind, "status": self.status,
                "reason": self.reason, "check": self.check, "geomean_speedup": self.geomean_speedup,
                "geomean_speedup_vs_best_baseline": self.geomean_speedup_vs_best_baseline,
                "max_abs_err": self.max_abs_err, "compile_s": self.compile_s, "source_hash": self.source_hash,
                "shapes": self.shapes}


def _geomean(values: list[float]) -> float | None:
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


def build_rows(records: list[Record], order: list[str], shapes: list[str]) -> list[Row]:
    by_candidate: dict[str, dict[str, Record]] = {}
    for record in records:
        by_candidate.setdefault(record.candidate, {})[record.shape] = record
    eager = by_candidate.get(EAGER, {})
    best_baseline: dict[str, float] = {}
    for name, per_shape in by_candidate.items():
        for shape, r in per_shape.items():
            if r.kind == "baseline" and r.status == "ok" and r.time_us:
                best_baseline[shape] = min(best_baseline.get(shape, math.inf), r.time_us)
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
        speedups, vs_best, errors = [], [], []
        for shape in shapes:
            r = per_shape.get(shape)
            if r is None:
                continue
            timing = r.timing or {}
            entry = {"status": r.status, "time_us": r.time_us, "iqr_us": timing.get("iqr_us"), "n": timing.get("n"),
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
            if r.max_abs_err is not None:
                errors.append(r.max_abs_err)
            row.shapes[shape] = entry
        if status == "ok":
            row.geomean_speedup = _geomean(speedups)
            row.geomean_speedup_vs_best_baseline = _geomean(vs_best)
        row.max_abs_err = max(errors) if errors else None
        rows.append(row)
    ranked = sorted((r for r in rows if r.status == "ok" and r.geomean_speedup), key=lambda r: -r.geomean_speedup)
    for rank, row in enumerate(ranked, 1):
        row.rank = rank
    unranked = [r for r in rows if r.rank is None]
    return ranked + sorted(unranked, key=lambda r: (r.status == "skipped", r.kind != "baseline", r.candidate))


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
    header = ["rank", "candidate", "status"]
    for shape in shapes:
        header += [f"{shape} time", f"{shape} host", f"{shape} speedup"]
    header += ["geomean speedup", "vs best baseline", "max abs err", "compile s", "source", "reason"]
    body = []
    for row in rows:
        cells = [str(row.rank or "—"), row.candidate, row.status + (f" ({row.check})" if row.check else "")]
        for shape in shapes:
            entry = row.shapes.get(shape, {})
            ok = entry.get("status") == "ok"
            time = format_time(entry.get("time_us")) + (" (host-bound)" if entry.get("host_bound") else "")
            cells += [time if ok else entry.get("status", "—"),
                      format_time(entry.get("host_us")) if ok else "—",
                      _fmt(entry.get("speedup"), ".2f") + ("×" if entry.get("speedup") else "")]
        cells += [_fmt(row.geomean_speedup, ".2f") + ("×" if row.geomean_speedup else ""),
                  _fmt(row.geomean_speedup_vs_best_baseline, ".2f") + ("×" if row.geomean_speedup_vs_best_baseline else ""),
                  _fmt(row.max_abs_err, ".2e"), _fmt(row.compile_s, ".1f"), row.source_hash, row.reason]
        body.append(cells)
    return header, body


def to_markdown(problem: str, env: dict, rows: list[Row], shapes: list[str]) -> str:
    header, body = table_cells(rows, shapes)
    escape = lambda text: text.replace("|", "\\|").replace("\n", " ")
    lines = [f"# {problem} leaderboard", "",
             f"Device: {env.get('device_name')} ({env.get('device')}), driver {env.get('driver') or '—'}, "
             f"torch {env.get('torch')}, CUDA {env.get('torch_cuda') or '—'}, harness {env.get('harness_commit')}. "
             f"Generated {now_utc()} from records.jsonl.", "",
             "Speedup is over the eager reference (`ref:eager`); `time` is the median device time per call, `host` "
             "the median wall clock per call closed by a device-wide synchronize (what a caller waits); a host-bound call "
             "(queued slower than any spin ahead of it could cover) is timed at the pace its launches reached the GPU.", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(escape(c) for c in cells) + " |" for cells in body]
    return "\n".join(lines) + "\n"


def to_frame(rows: list[Row], shapes: list[str]) -> pd.DataFrame:
    flat = []
    for row in rows:
        item = {"rank": row.rank, "candidate": row.candidate, "kind": row.kind, "status": row.status, "check": row.check}
        for shape in shapes:
            entry = row.shapes.get(shape, {})
            item[f"{shape}_status"] = entry.get("status")
            item[f"{shape}_time_us"] = entry.get("time_us")
            item[f"{shape}_iqr_us"] = entry.get("iqr_us")
            item[f"{shape}_host_us"] = entry.get("host_us")
            item[f"{shape}_host_bound"] = entry.get("host_bound", False)
            item[f"{shape}_speedup"] = entry.get("speedup")
            item[f"{shape}_speedup_vs_best_baseline"] = entry.get("speedup_vs_best_baseline")
            item[f"{shape}_max_abs_err"] = entry.get("max_abs_err")
        item.update(geomean_speedup=row.geomean_speedup,
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
