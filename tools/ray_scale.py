"""The Ray backend's scale, by simulation: N quick CPU candidates evaluated through harness/backend_ray.py on 1, 2
and 4 Ray nodes started on this one machine (ray.cluster_utils.Cluster: one raylet per node, each with a
node-local folder of its own, so every node unpacks its own copy of the builds). Not part of CI.

A CPU run times one candidate per node at a time, so N nodes keep N evaluations in flight. On a machine of few
cores every "node" shares the same cores: this measures scheduling (what Ray and the backend add around each
judge: a fresh worker process per evaluation, moving sources and builds, placement), not compute; wall time
cannot fall much with more simulated nodes here, and each judge slows as more run at once.

The candidates are copies of candidates/scalar_gated_delta/cpu_loops.py (or --honest), each with a harmless
constant of its own (so a hash, a record and a build cache entry of its own). Their C++ is identical, so it is
compiled once, and that build cache entry is copied under every copy's key (torch finds the extension up to date
and does not rebuild): the builds are not what is measured. Every configuration evaluates all copies afresh
(--fresh).

    .venv/bin/python tools/ray_scale.py --count 200 --nodes 1,2,4 --cpus-per-node 2

writes results/ray_scale/scale.log, scale.json and scale.png. On a GPU host, one node with its GPU, and the same
copies through the local backend for comparison (statuses and times side by side in scale.log):

    python tools/ray_scale.py --device cuda --honest candidates/scalar_gated_delta/v20_ws.py --count 12 \
        --nodes 1 --gpus-per-node 1 --cpus-per-node 16 --local --budget 0.5
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

from harness import build as build_stage  # noqa: E402
from harness import runner  # noqa: E402
from harness.backend_ray import NODE_DIR_VARIABLE, RayBackend  # noqa: E402
from harness.config import load_config  # noqa: E402
from harness.discovery import discover  # noqa: E402
from harness.env import REPO_ROOT, probe_env  # noqa: E402
from harness.problem import load_problem  # noqa: E402
from harness.records import read_records  # noqa: E402
from harness.rules import parse_candidate  # noqa: E402

PROBLEM = REPO_ROOT / "problems" / "scalar_gated_delta.yaml"
HONEST = REPO_ROOT / "candidates" / "scalar_gated_delta" / "cpu_loops.py"
# the tests' short timing (tests/conftest.py), without the CUDA-only baselines
CONFIG = "build:\n  cache_dir: {cache}\ntiming:\n  budget_s: {budget}\n  warmup_ms: 5\nbaselines:\n  graph: false\n  compile: false\n"


def make_copies(honest: Path, folder: Path, count: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    text = honest.read_text()
    paths = []
    for index in range(count):
        path = folder / f"{honest.stem}_{index:03d}.py"
        path.write_text(text + f"\nSCALE_COPY = {index}   # tools/ray_scale.py: gives this copy a hash of its own\n")
        paths.append(path)
    return paths


def seed_build_cache(honest: Path, cache: Path, copies: list[Path], env, arch: str, say) -> None:
    """Compile the honest candidate once, then give every copy that build under its own cache key."""
    (original,) = discover([honest])
    uses_cuda = parse_candidate(str(honest), honest.read_text(), load_problem(PROBLEM).reference_module).uses_cuda
    built = build_stage.build_one(original, uses_cuda, env, arch, cache, 900)
    if built.status != "ok":
        raise SystemExit(f"{honest}: the honest candidate did not build ({built.status}: {built.reason})")
    say(f"compiled {honest.name} once ({'cached' if built.cached else f'{built.compile_s:.0f} s'}); "
        f"copying its build to {len(copies)} cache keys")
    for candidate in discover(copies):
        target = build_stage.build_dir_for(cache, candidate, env, arch)
        if build_stage.trusted_entry(target) is None:
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(built.build_dir, target, ignore=shutil.ignore_patterns("*.lock", "evaluate-*"))


def run_on(nodes: int, cpus: int, gpus: int, options: runner.RunOptions, work: Path, say) -> dict:
    """One configuration: a cluster of `nodes` raylets, the run through the Ray backend, the figures."""
    node_env = lambda i: {NODE_DIR_VARIABLE: str(work / f"nodes{nodes}" / f"node{i}")}   # noqa: E731
    started = time.perf_counter()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": cpus, "num_gpus": gpus,
                                                            "env_vars": node_env(0), "include_dashboard": False})
    for index in range(1, nodes):
        cluster.add_node(num_cpus=cpus, num_gpus=gpus, env_vars=node_env(index))
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False, logging_level=logging.WARNING,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT),
                                                                                   os.environ.get("PYTHONPATH")]))}})
    cluster_s = time.perf_counter() - started
    backend = RayBackend()
    try:
        summary = runner.run(options, runner.SilentReporter(), backend)
    finally:
        ray.shutdown()
        cluster.shutdown()
    evaluations = [t for t in backend.timings if t.kind == "evaluate"]
    candidates = [t for t in evaluations if not t.item.startswith("ref:") and t.item != "eager"]
    overhead = [t.round_trip_s - t.work_s for t in candidates]
    idle = idle_between(evaluations)
    statuses = count_statuses(summary)
    figures = {
        "nodes": nodes, "cpus_per_node": cpus, "gpus_per_node": gpus, "in_flight": nodes * max(1, gpus),
        "candidates": len(candidates),
        "cluster_start_s": round(cluster_s, 2), "run_wall_s": round(summary.wall_s, 2),
        "per_candidate_wall_s": round(summary.wall_s / max(1, len(candidates)), 3),
        "overhead_per_candidate_s": {"mean": round(statistics.mean(overhead), 3),
                                     "median": round(statistics.median(overhead), 3),
                                     "max": round(max(overhead), 3)},
        "idle_between_evaluations_s": {"mean": round(statistics.mean(idle), 3) if idle else None,
                                       "median": round(statistics.median(idle), 3) if idle else None,
                                       "max": round(max(idle), 3) if idle else None},
        "ray_share_s": round(statistics.mean(t.round_trip_s - t.task_s for t in candidates), 3),
        "in_task_share_s": round(statistics.mean(t.task_s - t.work_s for t in candidates), 3),
        "judge_s_mean": round(statistics.mean(t.work_s for t in candidates), 3),
        "nodes_used": len({t.node for t in evaluations}), "statuses": statuses,
    }
    say(f"{nodes} node(s) x {cpus} CPUs: {len(candidates)} candidates in {summary.wall_s:.1f} s "
        f"({figures['per_candidate_wall_s']:.2f} s each); overhead per candidate mean "
        f"{figures['overhead_per_candidate_s']['mean']:.2f} s, median {figures['overhead_per_candidate_s']['median']:.2f} s "
        f"(Ray {figures['ray_share_s']:.2f} s, in the task {figures['in_task_share_s']:.2f} s); a node idle between "
        f"two evaluations: mean {figures['idle_between_evaluations_s']['mean']} s, median "
        f"{figures['idle_between_evaluations_s']['median']} s; judge "
        f"{figures['judge_s_mean']:.2f} s each; nodes used {figures['nodes_used']}; statuses {statuses}")
    return figures


def idle_between(evaluations: list) -> list[float]:
    """On each node, from one evaluation task's end to the next one's start: time its GPU (CUDA runs, one GPU a
    node) or its CPU lane sat idle while Ray handed over, in the task's own clock. Round trips include the
    time a task queued behind a busy GPU, which is not overhead."""
    gaps = []
    by_node: dict[str, list] = {}
    for task in evaluations:
        by_node.setdefault(task.node, []).append(task)
    for tasks in by_node.values():
        tasks.sort(key=lambda t: t.started_at)
        gaps += [max(0.0, b.started_at - a.finished_at) for a, b in zip(tasks, tasks[1:])]
    return gaps


def count_statuses(summary: runner.RunSummary) -> dict[str, int]:
    statuses: dict[str, int] = {}
    for row in summary.rows:
        statuses[row.status] = statuses.get(row.status, 0) + 1
    return statuses


def run_local(options: runner.RunOptions, say) -> dict:
    """The same copies through the local backend: what the Ray run's statuses and times are compared with."""
    summary = runner.run(options, runner.SilentReporter())
    say(f"local backend: {len(options.candidates)} candidates in {summary.wall_s:.1f} s "
        f"({summary.wall_s / max(1, len(options.candidates)):.2f} s each); statuses {count_statuses(summary)}")
    return {"backend": "local", "run_wall_s": round(summary.wall_s, 2), "statuses": count_statuses(summary)}


def compare_records(work: Path, problem: str, say) -> list[dict]:
    """Per copy and shape: the local and the Ray run's status and time, side by side."""
    def read(folder: Path) -> dict:
        return {(r.candidate, r.shape): r.to_json() for r in read_records(folder / problem / "records.jsonl")}

    ray_runs = sorted(work.glob("results-[0-9]*"))
    local, ray_rows = read(work / "results-local"), read(ray_runs[0])
    pairs = []
    for key in sorted(local):
        a, b = local[key], ray_rows.get(key, {})
        pairs.append({"candidate": key[0], "shape": key[1], "local": a["status"], "ray": b.get("status"),
                      "local_us": a.get("time_us"), "ray_us": b.get("time_us"),
                      "local_reason": a.get("reason", ""), "ray_reason": b.get("reason", "")})
        say(f"  {key[0]:<24} {key[1]:<7} local {a['status']:<9} {a.get('time_us') or 0:10.2f} us   "
            f"ray {b.get('status')!s:<9} {b.get('time_us') or 0:10.2f} us  {a.get('reason', '')[:60]} {b.get('reason', '')[:60]}")
    return pairs


def plot(figures: list[dict], path: Path, count: int, cores: int) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nodes = [f["nodes"] for f in figures]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(nodes, [f["run_wall_s"] for f in figures], "o-")
    left.set(xlabel="simulated Ray nodes", ylabel="run wall time (s)", xticks=nodes,
             title=f"{count} candidates, one {cores}-core machine")
    left.set_ylim(bottom=0)
    ray_share = [f["ray_share_s"] for f in figures]
    in_task = [f["in_task_share_s"] for f in figures]
    right.bar(nodes, ray_share, label="Ray: queue, dispatch, transfer")
    right.bar(nodes, in_task, bottom=ray_share, label="in the task: sources, build unpack")
    right.set(xlabel="simulated Ray nodes", ylabel="overhead per candidate (s)", xticks=nodes,
              title="time around each judge (mean)")
    right.legend(fontsize=8)
    fig.text(0.5, 0.01, "a simulation of scheduling, not of compute: every node shares the same cores",
             ha="center", fontsize=8)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=120)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200, help="candidate copies (default 200)")
    parser.add_argument("--nodes", default="1,2,4", help="node counts to run, e.g. 1,2,4")
    parser.add_argument("--cpus-per-node", type=int, default=2, help="CPUs each simulated node offers Ray")
    parser.add_argument("--gpus-per-node", type=int, default=0, help="GPUs each simulated node offers Ray")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--honest", default=str(HONEST), help="the honest candidate the copies are made of")
    parser.add_argument("--budget", type=float, default=0.3, help="timing.budget_s per (candidate, shape)")
    parser.add_argument("--local", action="store_true", help="also run the copies through the local backend")
    parser.add_argument("--out", default=str(REPO_ROOT / "results" / "ray_scale"))
    parser.add_argument("--work", default=str(REPO_ROOT / ".cache" / "ray_scale"),
                        help="candidate copies, build cache, node folders and results of the runs")
    args = parser.parse_args()
    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    log_file = open(out / "scale.log", "w")

    def say(line: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} {line}"
        print(line, flush=True)
        log_file.write(line + "\n")
        log_file.flush()

    env = probe_env(args.device)
    honest = Path(args.honest).resolve()
    say(f"{env.device_name} ({os.cpu_count()} cores), torch {env.torch}, ray {ray.__version__}; {args.count} copies "
        f"of {honest.name}; commit {env.harness_commit}")
    cache = work / "builds"
    work.mkdir(parents=True, exist_ok=True)
    (work / "config.yaml").write_text(CONFIG.format(cache=cache, budget=args.budget))
    config = load_config(work / "config.yaml")
    arch = build_stage.arch_list(config.get("build.cuda_arch_list"), env, config.get("build.fallback_arch"))
    copies = make_copies(honest, work / "candidates", args.count)
    seed_build_cache(honest, cache, copies, env, arch, say)
    problem = load_problem(PROBLEM)
    report = {"count": args.count, "cores": os.cpu_count(), "honest": honest.name, "env": env.to_json(),
              "configurations": []}

    def options_for(results: str, backend: str) -> runner.RunOptions:
        return runner.RunOptions(problem, config, env, discover(copies), ["seed"], work / results, fresh=True,
                                 backend=backend)

    if args.local:
        report["local"] = run_local(options_for("results-local", "local"), say)
    for nodes in [int(n) for n in args.nodes.split(",")]:
        report["configurations"].append(run_on(nodes, args.cpus_per_node, args.gpus_per_node,
                                               options_for(f"results-{nodes}", "ray"), work, say))
        (out / "scale.json").write_text(json.dumps(report, indent=2) + "\n")
    if args.local:
        report["local_vs_ray"] = compare_records(work, problem.name, say)
        (out / "scale.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(report["configurations"], out / "scale.png", args.count, os.cpu_count() or 0)
    say(f"wrote {out / 'scale.json'} and {out / 'scale.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
