"""Throughput for automated search: N honest CUDA candidates through one `harness run`, end to end, and where the
time went. Not part of CI; run it on a GPU host.

The candidates are variants of a shipped kernel (default: candidates/scalar_gated_delta/v20_ws.py), each with
a constant of its own in its CUDA source, so each one is a new source that really compiles. The run starts from
an empty build cache and the default config (every check on, every shape); only the torch.compile baseline is off,
a one-off of minutes per run that says nothing per candidate.

    python tools/throughput.py --count 24 --out /tmp/throughput

prints and writes OUT/throughput.log and OUT/throughput.json: candidates per hour, the compile time, the judge's
time per evaluation split into its setup phases (records' timing.judge_setup_s) and its per-shape phases
(timing.judge_costs_s), the GPU lane's time per evaluation (the steady rate: what bounds a long run once the
first builds are done), and how long the lane waited with nothing to evaluate.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.env import REPO_ROOT  # noqa: E402
from harness.records import read_records  # noqa: E402

SOURCE = REPO_ROOT / "candidates" / "scalar_gated_delta" / "v20_ws.py"
PROBLEM = REPO_ROOT / "problems" / "scalar_gated_delta.yaml"
CONFIG = "build:\n  cache_dir: {cache}\nbaselines:\n  compile: false\n{extra}"
BEFORE_GATE = ("process_start", "sandbox_start", "judge_init", "sandbox_ready", "arena_ahead", "waiting_for_gpu")   # judge.SETUP's host phases
CUDA_OPENING = re.compile(r'^(CUDA_SRC = r""")', re.M)


def make_variants(source: Path, folder: Path, count: int) -> list[Path]:
    """Copies of `source`, the i-th with `constexpr int kThroughputVariant = i;` at the head of its CUDA source."""
    text = source.read_text()
    if not CUDA_OPENING.search(text):
        raise SystemExit(f"{source}: expected a CUDA_SRC = r\"\"\" string to put the variant's constant in")
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(count):
        path = folder / f"{source.stem}_{index:03d}.py"
        path.write_text(CUDA_OPENING.sub(lambda m: f"{m.group(1)}\nconstexpr int kThroughputVariant = {index};",
                                         text, count=1))
        paths.append(path)
    return paths


def mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def summarize(results: Path, wall_s: float, count: int, shapes: list[str]) -> dict:
    records = [dataclasses.asdict(r) for r in read_records(results) if r.kind == "candidate"]
    by_candidate: dict[str, list[dict]] = {}
    for record in records:
        by_candidate.setdefault(record["candidate"], []).append(record)
    statuses: dict[str, int] = {}
    for record in records:
        statuses[record["status"]] = statuses.get(record["status"], 0) + 1
    compiles = [r[0]["compile_s"] for r in by_candidate.values() if r[0].get("compile_s") is not None
                and not r[0].get("build_cached")]
    setup: dict[str, list[float]] = {}
    shape_costs: dict[str, list[float]] = {}
    evaluations = []
    for rows in by_candidate.values():
        timed = [r["timing"] for r in rows if r.get("timing")]
        if not timed:
            continue
        # The GPU lane's time: from the judge's start to its last shape, less, for a judge started early
        # (evaluate.prestart), the host work it did and its wait before its gate opened.
        phases = timed[0].get("judge_setup_s", {})
        before_gate = sum(phases.get(k, 0.0) for k in BEFORE_GATE) if "waiting_for_gpu" in phases else 0.0
        evaluations.append(max(t.get("judge_elapsed_s", 0.0) for t in timed) - before_gate)
        for name, seconds in timed[0].get("judge_setup_s", {}).items():
            setup.setdefault(name, []).append(seconds)
        for t in timed:
            for name, seconds in t.get("judge_costs_s", {}).items():
                shape_costs.setdefault(name, []).append(seconds)
    per_evaluation_shapes = {name: sum(v) / max(1, len(evaluations)) for name, v in shape_costs.items()}
    busy = sum(evaluations)
    finished = sum(1 for rows in by_candidate.values() if {r["shape"] for r in rows} >= set(shapes))
    return {
        "candidates": count, "finished": finished, "shapes": shapes, "wall_s": round(wall_s, 1),
        "candidates_per_hour": round(finished / wall_s * 3600, 1), "statuses": statuses,
        "compile_s_mean": round(mean(compiles), 1), "compile_s_sum": round(sum(compiles), 1), "compiled": len(compiles),
        "gpu_lane_s_per_evaluation": round(mean(evaluations), 2), "evaluated": len(evaluations),
        "steady_candidates_per_hour": round(3600 / mean(evaluations), 1) if evaluations else 0.0,
        "judge_setup_s_mean": {k: round(mean(v), 3) for k, v in setup.items()},
        "judge_shape_phases_s_per_evaluation": {k: round(v, 3) for k, v in per_evaluation_shapes.items()},
        "gpu_lane_busy_s": round(busy, 1), "gpu_lane_waiting_s": round(max(0.0, wall_s - busy), 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=24)
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument("--problem", type=Path, default=PROBLEM)
    parser.add_argument("--shapes", default="seed,medium,large")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--config-extra", default="", help="YAML lines added to the run's config")
    parser.add_argument("--limit-s", type=float, default=None,
                        help="stop the run after this long and report the candidates that finished")
    args = parser.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    log = open(out / "throughput.log", "a")

    def say(line: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} {line}"
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    folder = out / "candidates"
    make_variants(args.source, folder, args.count)
    config = out / "config.yaml"
    config.write_text(CONFIG.format(cache=out / "builds", extra=args.config_extra))
    command = [sys.executable, "-m", "harness", "run", str(args.problem), "--candidates", str(folder),
               "--shapes", args.shapes, "--results", str(out / "results"), "--config", str(config)]
    say(f"{args.count} variants of {args.source.name}; {' '.join(command[1:])}")
    started = time.monotonic()
    with open(out / "run.log", "w") as run_log:
        process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=run_log, stderr=subprocess.STDOUT,
                                   env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
        try:
            code = process.wait(timeout=args.limit_s)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGINT)   # the runner keeps what finished and kills its workers
            code = process.wait()
            say(f"stopped after {args.limit_s:.0f} s (--limit-s): only the candidates that finished count")
    wall_s = time.monotonic() - started
    results = out / "results" / args.problem.stem / "records.jsonl"
    summary = summarize(results, wall_s, args.count, args.shapes.split(","))
    summary["exit_code"] = code
    (out / "throughput.json").write_text(json.dumps(summary, indent=2) + "\n")
    for key, value in summary.items():
        say(f"  {key}: {value}")
    return code


if __name__ == "__main__":
    sys.exit(main())
