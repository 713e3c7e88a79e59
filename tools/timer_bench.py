"""Benchmark of the timer itself (a benchmark, not a test; needs a GPU).

1. The floor of each timing method on a trivial kernel (a one-element add): per-call events with
   nothing ahead (what a naive harness reports), the harness's `events` method (spin kernel ahead
   of the start event, L2 flush), `graph` replay, and `host` (wall clock, synchronized); and a
   zero-cycle kernel timed by events and by graph replay (the launch cost an event pair includes).
2. One candidate timed in several separate worker processes (separate runs of the harness's own
   verify-and-time path), printing each shape's median per run and the spread, beside its graph time
   (the L2 flushed before each call inside the graph, as the events method does; and warm, unflushed)
   and the events method's variants (raw pair, L2 flush by writing, no flush).

    python3 tools/timer_bench.py --candidate candidates/scalar_gated_delta/v20_ws.py \
        --problem problems/scalar_gated_delta.yaml --shapes seed,medium,large --runs 3 --out timer.json
"""
from __future__ import annotations

import argparse
import json
import secrets
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness import build as build_stage  # noqa: E402
from harness import timing  # noqa: E402
from harness.config import load_config  # noqa: E402

GRAPH_CALLS = 20   # calls per captured graph (the harness itself now captures one call per replay)
from harness.discovery import discover  # noqa: E402
from harness.env import collect_env, probe_env  # noqa: E402
from harness.problem import load_problem  # noqa: E402
from harness.rules import check_text  # noqa: E402
from harness.spawn import spawn_worker  # noqa: E402


def trivial_floors(settings: dict) -> dict:
    import torch

    x = torch.zeros(1, device="cuda")
    call = lambda i: x.add_(1.0)
    sync = torch.cuda.synchronize
    timing.warm_up(call, settings, sync)
    naive = []
    for _ in range(200):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call(0)
        end.record()
        torch.cuda.synchronize()
        naive.append(start.elapsed_time(end) * 1e3)
    events = timing.time_cuda_events(call, settings)
    rows = {"naive_events": naive, "events (less the empty pair)": events.device_us(True),
            "events, raw pair": events.raw_us, "empty event pair": events.empty_us}
    for flush in ("write", "off"):
        rows[f"events flush={flush}"] = timing.time_cuda_events(call, dict(settings, l2_flush=flush)).device_us(True)
    # The same call launched as a one-call graph between the events: does the graph's launch path take the
    # ~0.6-0.9 us by which events read above back-to-back graph replay (issue 4's seed criterion)?
    one_call, _ = timing.capture_graph(call, 1)
    rows["events, one-call graph launch"] = timing.time_cuda_events(lambda i: one_call.replay(), settings).device_us(True)
    # An all-but-empty kernel (a zero-cycle spin) both ways: what one launch costs inside an event pair beyond
    # the empty pair, against back-to-back replay, with no work and no memory traffic to blur it.
    empty_kernel = lambda i: torch.cuda._sleep(0)
    rows["events, zero-cycle kernel"] = timing.time_cuda_events(empty_kernel, settings).device_us(True)
    empty_graph, _ = timing.capture_graph(empty_kernel, GRAPH_CALLS)
    rows["graph, zero-cycle kernel"] = timing.time_cuda_graph(empty_graph, GRAPH_CALLS, settings)
    calls = GRAPH_CALLS
    graph, _, flushes = timing.capture_timed_graph(call, calls, torch.device("cuda"), settings["l2_flush"])
    rows[f"graph (flush={settings['l2_flush']})"] = timing.time_cuda_graph(graph, calls, settings, flushes)
    warm, _ = timing.capture_graph(call, calls)
    rows["graph, warm L2"] = timing.time_cuda_graph(warm, calls, settings)
    rows["host"] = timing.time_host(call, 200, sync)
    return {name: {"median_us": statistics.median(s), "min_us": min(s), "n": len(s)} for name, s in rows.items()}


def repeated_runs(candidate_path: str, problem_path: str, shapes: list[str], runs: int, config) -> dict:
    env = probe_env("cuda")
    problem = load_problem(problem_path)
    candidate = discover([candidate_path])[0]
    uses_cuda = "cuda_sources" in candidate.path.read_text()
    settings = config.get("build")
    arch = build_stage.arch_list(settings["cuda_arch_list"], env, settings["fallback_arch"])
    cache = Path(settings["cache_dir"])
    cache = cache if cache.is_absolute() else Path(__file__).resolve().parent.parent / cache
    built = build_stage.build_one(candidate, uses_cuda, env, arch, cache, float(settings["time_limit_s"]))
    if built.status != "ok":
        raise SystemExit(f"{candidate_path}: build {built.status}: {built.reason}")
    def evaluate(run: int, method: str, **timing_overrides) -> dict:
        job = {"mode": "evaluate", "device": "cuda", "problem_path": str(problem.path), "shapes": shapes,
               "timing": dict(config.timing, method=method, **timing_overrides), "secret_seed": secrets.randbits(62), "baseline": None,
               "gpu": 0, "candidate": {"id": candidate.id, "path": str(candidate.path), "sha256": candidate.sha256}}
        outcome = spawn_worker(job, build_stage.worker_environment(built.build_dir, env, arch, uses_cuda), 900,
                               built.build_dir / f"timer-bench-{method}-{run}{''.join(f'-{k}={v}' for k, v in timing_overrides.items())}.log")
        return {line["shape"]: line for line in outcome.lines}

    per_run = [evaluate(run, config.get("timing.method")) for run in range(runs)]
    graph_run = evaluate(0, "graph")
    warm_graph_run = evaluate(0, "graph", l2_flush="off")
    variants = {"raw pair": evaluate(0, "events", subtract_event_overhead=False),
                **{f"flush={mode}": evaluate(0, "events", l2_flush=mode) for mode in ("write", "off")}}
    summary = {}
    for shape in shapes:
        medians = [r.get(shape, {}).get("time_us") for r in per_run]
        statuses = [r.get(shape, {}).get("status") for r in per_run]
        ok = [m for m in medians if m]
        spread = (max(ok) - min(ok)) / statistics.median(ok) if len(ok) == len(medians) and ok else None
        summary[shape] = {"medians_us": medians, "statuses": statuses, "spread": spread,
                          "host_us": [r.get(shape, {}).get("timing", {}).get("host_median_us") for r in per_run],
                          "graph_us": graph_run.get(shape, {}).get("time_us"),
                          "graph_warm_l2_us": warm_graph_run.get(shape, {}).get("time_us"),
                          "events_variants_us": {name: r.get(shape, {}).get("time_us") for name, r in variants.items()}}
    return {"candidate": candidate.id, "sha256": candidate.sha256, "shapes": summary}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidate", required=True)
    parser.add_argument("--problem", required=True)
    parser.add_argument("--shapes", default="seed,medium,large")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--config")
    parser.add_argument("--out", default="timer_bench.json")
    args = parser.parse_args()
    config = load_config(args.config)
    findings = check_text(args.candidate, Path(args.candidate).read_text())
    if any(f.severity == "error" for f in findings):
        raise SystemExit(f"{args.candidate}: rejected by the static check: {findings[0]}")
    floors = trivial_floors(config.timing)
    runs = repeated_runs(args.candidate, args.problem, args.shapes.split(","), args.runs, config)
    report = {"env": collect_env("cuda").to_json(), "timing": config.timing, "trivial_kernel": floors, "repeat": runs}
    Path(args.out).write_text(json.dumps(report, indent=2))
    print("trivial kernel (one-element add), per call:")
    for name, row in floors.items():
        print(f"  {name:<28} median {row['median_us']:8.2f} us   min {row['min_us']:8.2f} us   n={row['n']}")
    print(f"{runs['candidate']} in {args.runs} separate worker processes ({config.get('timing.method')}):")
    for shape, row in runs["shapes"].items():
        medians = ", ".join(f"{m:.2f}" if m else "—" for m in row["medians_us"])
        spread = f"{100 * row['spread']:.2f}%" if row["spread"] is not None else "—"
        graph = f"{row['graph_us']:.2f}" if row["graph_us"] else "—"
        warm = f"{row['graph_warm_l2_us']:.2f}" if row["graph_warm_l2_us"] else "—"
        print(f"  {shape:<7} medians {medians} us   spread {spread}   graph {graph} us (warm L2 {warm})   "
              f"statuses {row['statuses']}")
        if row["graph_us"]:
            gaps = ", ".join(f"{m - row['graph_us']:+.2f}" if m else "—" for m in row["medians_us"])
            agree = [bool(m) and abs(m - row["graph_us"]) <= max(1.0, 0.15 * row["graph_us"]) for m in row["medians_us"]]
            print(f"          events - graph per run: {gaps} us; within 15% or 1 us in {sum(agree)} of {len(agree)} runs")
        others = "  ".join(f"{m} {t:.2f}" if t else f"{m} —" for m, t in row["events_variants_us"].items())
        print(f"          events variants: {others} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
