"""Experiment (a benchmark, not a test; needs a GPU): where an event pair puts its start and what that costs.

Per call, with the L2 flushed before it, compares
- after_spin:  spin, [Ea Eb], Es, call, Ee      -> (Ee - Es) - median(Eb - Ea)   (the harness's events method)
- spin_inside: Es, spin, call, Ee  and, alternating, Ea, spin, Eb  -> (Ee - Es) - median(Eb - Ea)
  (the call's launch follows a kernel, as in a graph, instead of an event record)
- graph: calls captured back to back in a CUDA graph, replay time over the count (warm L2);
and the harness's own methods: `events` three times over, and `graph` with the L2 flushed before every call.
Workloads: a one-element add, a 1 MB sum, and optionally a candidate's forward at a problem's shape.

    python3 tools/timer_layouts.py [--candidate candidates/scalar_gated_delta/v20_ws.py \
        --problem problems/scalar_gated_delta.yaml --shape seed] --out layouts.json
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness import timing  # noqa: E402
from harness.problem import load_problem, select_shapes  # noqa: E402

SPIN_US = 40.0


def measure(call, layout: str, calls: int, flush) -> tuple[list[float], float]:
    cycles = timing._spin_cycles(SPIN_US)
    samples, empties = [], []
    for index in range(calls):
        pairs = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
        empty_start, empty_end, start, end = pairs
        flush()
        if layout == "after_spin":
            torch.cuda._sleep(cycles)
            empty_start.record()
            empty_end.record()
            start.record()
            call(index)
            end.record()
        else:
            empty_start.record()
            torch.cuda._sleep(cycles)
            empty_end.record()
            flush()
            start.record()
            torch.cuda._sleep(cycles)
            call(index)
            end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) * 1e3)
        empties.append(empty_start.elapsed_time(empty_end) * 1e3)
    overhead = statistics.median(empties)
    return [s - overhead for s in samples], overhead


SETTINGS = {"max_iters": 2000, "min_iters": 50, "budget_s": 1.0, "target_rse": 0.0, "l2_flush": "read",
            "spin_us": SPIN_US, "warmup_iters": 3, "warmup_ms": 50}


def harness_events(call) -> float:
    """The harness's own events method (spin check, empty pair subtracted), median per call."""
    return statistics.median(timing.time_cuda_events(call, SETTINGS).device_us(True))


def harness_cold_graph(call, calls: int = 20) -> float:
    """The harness's graph method with the L2 flushed before every captured call, less the flushes alone."""
    graph, _, flushes = timing.capture_timed_graph(call, calls, torch.device("cuda"), "read")
    return statistics.median(timing.time_cuda_graph(graph, calls, SETTINGS, flushes))


def graph_time(call, calls: int = 20, repeats: int = 50) -> float:
    graph, _ = timing.capture_graph(call, calls)
    per_call = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        per_call.append(start.elapsed_time(end) * 1e3 / calls)
    return statistics.median(per_call)


def candidate_call(candidate: str, problem_path: str, shape_name: str):
    from harness.verify import make_inputs  # the harness's own input generator

    problem = load_problem(problem_path)
    shape = select_shapes(problem, [shape_name])[0]
    spec = importlib.util.spec_from_file_location("candidate_under_test", candidate)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.ModelNew().cuda()
    sets = [make_inputs(problem, shape, None, seed, torch.device("cuda")) for seed in range(4)]
    return lambda i: model(*sets[i % len(sets)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidate")
    parser.add_argument("--problem")
    parser.add_argument("--shape", default="seed")
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--out", default="layouts.json")
    args = parser.parse_args()
    flush = timing.flush_with(timing.l2_flush_buffer(torch.device("cuda")), "read")
    x = torch.zeros(1, device="cuda")
    y = torch.randn(1 << 18, device="cuda")
    sink = torch.empty((), device="cuda")
    workloads = {"add 1 element": lambda i: x.add_(1.0), "sum 1 MB": lambda i: torch.sum(y, dim=0, out=sink)}
    if args.candidate:
        workloads[f"{Path(args.candidate).stem} {args.shape}"] = candidate_call(args.candidate, args.problem, args.shape)
    report = {}
    for name, call in workloads.items():
        for i in range(20):
            call(i)
        torch.cuda.synchronize()
        row = {"graph_us": graph_time(call), "harness_events_us": [harness_events(call) for _ in range(3)],
               "harness_cold_graph_us": harness_cold_graph(call)}
        for layout in ("after_spin", "spin_inside"):
            samples, overhead = measure(call, layout, args.calls, flush)
            row[layout] = {"median_us": statistics.median(samples), "min_us": min(samples),
                           "overhead_us": overhead}
        report[name] = row
        print(f"{name:<32} harness events {', '.join(f'{t:.2f}' for t in row['harness_events_us'])}  "
              f"cold graph {row['harness_cold_graph_us']:.2f}", flush=True)
        print(f"{name:<32} graph {row['graph_us']:7.2f}  " + "  ".join(
            f"{layout} {row[layout]['median_us']:7.2f} (less {row[layout]['overhead_us']:.2f})"
            for layout in ("after_spin", "spin_inside")), flush=True)
    Path(args.out).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
