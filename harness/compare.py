"""Two runs side by side: for each (candidate, shape) timed in both, the ratio of their medians, its interval,
and whether the second is faster, slower or the same (unknown where one side has too few samples for an interval). Derived from records alone, like every table.

The interval of the ratio is conservative: from the two medians' 95% intervals (stats.median_interval),
[low_b / high_a, high_b / low_a]. Where it holds 1 the two runs cannot be told apart ("same"). pyperf's
compare_to tests the means instead; medians with distribution-free intervals match how the harness ranks.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from harness.leaderboard import geomean
from harness.records import Record, read_records
from harness.stats import median_interval

COMPARISON_VERSION = 1


class CompareError(ValueError):
    pass


@dataclass(frozen=True)
class Comparison:
    problem: str
    candidate: str
    shape: str
    before_us: float
    after_us: float
    ratio: float                 # after / before: below 1 is faster
    ratio_low: float | None      # the ratio's conservative 95% interval; None without enough samples
    ratio_high: float | None
    verdict: str                 # faster, slower, same, or unknown (no interval on one side)
    same_source: bool            # the candidate's source hash is the same in both runs
    version: int = COMPARISON_VERSION

    def to_json(self) -> dict:
        return asdict(self)


def records_file(path: Path) -> list[Path]:
    """A records file, a problem's results folder, or a results folder holding one folder per problem."""
    if path.is_file():
        return [path]
    if (path / "records.jsonl").is_file():
        return [path / "records.jsonl"]
    found = sorted(path.glob("*/records.jsonl"))
    if not found:
        raise CompareError(f"{path}: expected a records.jsonl file, or a folder holding one (or one per problem)")
    return found


def latest_ok(path: Path) -> dict[tuple[str, str, str], Record]:
    """The last ok record of each (problem, candidate, shape) in the files `path` names."""
    latest: dict[tuple[str, str, str], Record] = {}
    for file in records_file(path):
        for record in read_records(file):
            if record.status == "ok" and record.time_us:
                latest[(record.problem, record.candidate, record.shape)] = record
    return latest


def interval(record: Record) -> tuple[float, float] | None:
    return median_interval((record.timing or {}).get("samples_us") or [])


def compare_records(before: Record, after: Record) -> Comparison:
    ratio = after.time_us / before.time_us
    a, b = interval(before), interval(after)
    low = high = None
    if a and b and a[0] > 0:
        low, high = b[0] / a[1], b[1] / a[0]
    if low is None:   # under 6 samples on a side: a ratio alone cannot tell a change from noise
        verdict = "unknown"
    else:
        verdict = "faster" if high < 1 else "slower" if low > 1 else "same"
    return Comparison(after.problem, after.candidate, after.shape, before.time_us, after.time_us, ratio, low, high,
                      verdict, before.candidate_sha256 == after.candidate_sha256)


def compare(before_path: Path, after_path: Path) -> list[Comparison]:
    before, after = latest_ok(before_path), latest_ok(after_path)
    common = [key for key in after if key in before]
    if not common:
        raise CompareError(f"{before_path} and {after_path}: no (candidate, shape) is timed ok in both")
    return [compare_records(before[key], after[key]) for key in common]


def percent(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f}%"


def describe(comparison: Comparison) -> str:
    if comparison.ratio_low is None:
        return f"{comparison.ratio:.3f}x (no interval: too few samples)"
    return f"{comparison.ratio:.3f}x [{comparison.ratio_low:.3f}, {comparison.ratio_high:.3f}]"


def geomean_ratio(comparisons: list[Comparison]) -> float | None:
    return geomean([c.ratio for c in comparisons])
