"""Suite: the records of a folder of problems in, one summary across them out (summary.md and summary.json).

A folder run (`python -m harness run FOLDER/`) writes each problem's records to `<results>/<folder>/<problem>/`;
this module reads them back, and nothing else. Per problem, the records of its latest run (the problem,
environment and config of the last record, as `report` takes them) give each row of its leaderboard
(leaderboard.build_rows); its best candidate is its correct (`ok`) candidate with the highest speedup over
the eager reference.

KernelBench's fast_p: the fraction of the problems whose best candidate is correct and more than p times faster
than eager (fast_0: correct at all). A problem with no correct candidate, or none at all, counts against every
fast_p. The geometric mean speedup is over the problems that have a correct candidate, and says how many.

Format history (`schema_version` of summary.json):
  1: first version.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.leaderboard import EAGER, build_rows, format_time, geomean
from harness.records import Record, now_utc, read_records, write_atomic

SCHEMA_VERSION = 1
FAST_P = (0.0, 1.0, 1.5, 2.0)


@dataclass(frozen=True)
class ProblemResult:
    problem: str
    status: str                       # ok, no correct candidate, no candidates, no records
    candidates: int                   # candidates with a record in the latest run
    correct: int                      # ... of them ok
    eager_us: float | None
    best_candidate: str | None
    best_us: float | None
    speedup: float | None             # eager over the best candidate (geomean over shapes where several)
    reason: str = ""                  # where nothing is correct: the first candidate's status and reason


@dataclass(frozen=True)
class SuiteSummary:
    suite: str
    problems: tuple[ProblemResult, ...]
    fast_p: dict[str, float]          # "0", "1", "1.5", "2" -> fraction of all problems
    geomean_speedup: float | None     # over the problems with a correct candidate
    correct_problems: int

    def to_json(self) -> dict:
        return {"schema_version": SCHEMA_VERSION, "suite": self.suite, "generated_at": now_utc(),
                "problems_total": len(self.problems), "problems_correct": self.correct_problems,
                "fast_p": self.fast_p, "geomean_speedup": self.geomean_speedup,
                "problems": [asdict(p) for p in self.problems]}


def p_label(p: float) -> str:
    return f"{p:g}"


def latest_run(records: list[Record]) -> list[Record]:
    """The records of the latest run's problem, environment and config (earlier runs' too, where they match)."""
    if not records:
        return []
    last = records[-1]
    wanted = (last.problem_sha256, last.env_key, last.config_sha256)
    current: dict[tuple[str, str], Record] = {}
    for record in records:
        if (record.problem_sha256, record.env_key, record.config_sha256) == wanted:
            current[(record.candidate, record.shape)] = record   # the file is in time order: the latest wins
    return list(current.values())


def summarize_problem(name: str, records: list[Record]) -> ProblemResult:
    current = latest_run(records)
    if not current:
        return ProblemResult(name, "no records", 0, 0, None, None, None, None)
    shapes = list(dict.fromkeys(r.shape for r in current))
    names = list(dict.fromkeys(r.candidate for r in current))
    rows = build_rows(current, names, shapes)
    eager = [r for r in current if r.candidate == EAGER and r.status == "ok" and r.time_us]
    eager_us = geomean([r.time_us for r in eager]) if eager else None
    candidates = [row for row in rows if row.kind == "candidate"]
    correct = [row for row in candidates if row.status == "ok" and row.geomean_speedup]
    if not correct:
        first = candidates[0] if candidates else None
        return ProblemResult(name, "no correct candidate" if candidates else "no candidates", len(candidates), 0,
                             eager_us, None, None, None,
                             f"{first.candidate}: {first.status} {first.reason}".strip()[:200] if first else "")
    best = max(correct, key=lambda row: row.geomean_speedup)
    best_us = geomean([entry["time_us"] for entry in best.shapes.values() if entry.get("time_us")])
    return ProblemResult(name, "ok", len(candidates), len(correct), eager_us, best.candidate, best_us,
                         best.geomean_speedup)


def summarize(results_dir: Path, names: list[str], suite: str, key: bytes | None = None) -> SuiteSummary:
    """`names`: the suite's problems, each with its records in `results_dir/<name>/records.jsonl`; with `key`,
    only records whose signature verifies count."""
    problems = tuple(summarize_problem(name, read_records(results_dir / name / "records.jsonl", key))
                     for name in names)
    speedups = [p.speedup for p in problems if p.status == "ok"]
    total = len(problems)
    fast_p = {p_label(p): (sum(s > p for s in speedups) / total if total else 0.0) for p in FAST_P}
    return SuiteSummary(suite, problems, fast_p, geomean(speedups), len(speedups))


def _speedup(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def to_markdown(summary: SuiteSummary) -> str:
    total = len(summary.problems)
    lines = [f"# {summary.suite} summary", "",
             f"Generated {now_utc()} from each problem's records.jsonl (its latest run). Best: the correct candidate "
             "with the highest speedup over the eager reference (`ref:eager`). fast_p: the fraction of all "
             f"{total} problems whose best candidate is correct and more than p times faster than eager "
             "(KernelBench's metric; fast_0 counts the correct).", "",
             "| fast_p | " + " | ".join(f"p = {p_label(p)}" for p in FAST_P) + " |",
             "|---|" + "---|" * len(FAST_P),
             "| fraction | " + " | ".join(f"{summary.fast_p[p_label(p)]:.2f}" for p in FAST_P) + " |", "",
             f"Geometric mean speedup over eager: {_speedup(summary.geomean_speedup)}, over the "
             f"{summary.correct_problems} of {total} problems with a correct candidate.", "",
             "| problem | status | correct / candidates | eager | best candidate | best time | speedup | reason |",
             "|---|---|---|---|---|---|---|---|"]
    escape = lambda text: text.replace("|", "\\|").replace("\n", " ")
    for p in summary.problems:
        lines.append(f"| {p.problem} | {p.status} | {p.correct} / {p.candidates} | {format_time(p.eager_us)} | "
                     f"{p.best_candidate or '—'} | {format_time(p.best_us)} | {_speedup(p.speedup)} | "
                     f"{escape(p.reason)} |")
    return "\n".join(lines) + "\n"


def write_summary(results_dir: Path, summary: SuiteSummary) -> None:
    write_atomic(results_dir / "summary.json", json.dumps(summary.to_json(), indent=2) + "\n")
    write_atomic(results_dir / "summary.md", to_markdown(summary))
