"""The Ray backend's scale, by simulation: N quick CPU candidates evaluated through harness/backend_ray.py on 1, 2
and 4 Ray nodes started on this one machine (ray.cluster_utils.Cluster: one raylet per node, each with a
node-local folder of its own, so every node unpacks its own copy of the builds). Not part of CI.

A CPU run times one candidate per node at a time, so N nodes keep N evaluations in flight. On a machine of few
cores every "node" shares the same cores: this measures scheduling (what Ray and the backend add around each
judge: a fresh worker process per evaluation, moving sources and builds, placement), not compute; wall time
cannot fall much with more simulated nodes here, and each judge slows as more run at once.

The candidates are copies of candidates/scalar_gated_delta/cpu_loops.py, each with a harmless constant of its own
(so a hash, a record and a build cache entry of its own). Their C++ is identical, so it is compiled once, and that
build cache entry is copied under every copy's key (torch finds the extension up to date and does not rebuild):
the builds are not what is measured. Every configuration evaluates all copies afresh (--fresh).

    .venv/bin/python tools/ray_scale.py --count 200 --nodes 1,2,4 --cpus-per-node 2

writes results/ray_scale/scale.log, scale.json and scale.png.
"""
from __future__ import annotations

import argparse
import json
import logging
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

PROBLEM = REPO_ROOT / "problems" / "scalar_gated_delta.yaml"
HONEST = REPO_ROOT / "candidates" / "scalar_gated_delta" / "cpu_loops.py"
# the tests' short timing (tests/conftest.py), without the CUDA-only baselines
CONFIG = "build:\n  cache_dir: {cache}\ntiming:\n  budget_s: 0.3\n  warmup_ms: 5\nbaselines:\n  graph: false\n  compile: false\n"


def make_copies(folder: Path, count: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    text = HONEST.read_text()
    paths = []
    for index in range(count):
        path = folder / f"cpu_loops_{index:03d}.py"
        path.write_text(text + f"\nSCALE_COPY = {index}   # tools/ray_scale.py: gives this copy a hash of its own\n")
        paths.append(path)
    return paths


def seed_build_cache(cache: Path, copies: list[Path], env, arch: str, say) -> None:
    """Compile the honest candidate once, then give every copy that build under its own cache key."""
    (original,) = discover([HONEST])
    built = build_stage.build_one(original, False, env, arch, cache, 900)
    if built.status != "ok":
        raise SystemExit(f"{HONEST}: the honest candidate did not build ({built.status}: {built.reason})")
    say(f"compiled {HONEST.name} once ({'cached' if built.cached else f'{built.compile_s:.0f} s'}); "
        f"copying its build to {len(copies)} cache keys")
    for candidate in discover(copies):
        target = build_stage.build_dir_for(cache, candidate, env, arch)
        if build_stage.trusted_entry(target) is None:
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(built.build_dir, target, ignore=shutil.ignore_patterns("*.lock", "evaluate-*"))


def run_on(nodes: int, cpus: int, options: runner.RunOptions, work: Path, say) -> dict:
    """One configuration: a cluster of `nodes` raylets, the run through the Ray backend, the figures."""
    node_env = lambda i: {NODE_DIR_VARIABLE: str(work / f"nodes{nodes}" / f"node{i}")}   # noqa: E731
    started = time.perf_counter()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": cpus, "env_vars": node_env(0),
                                                            "include_dashboard": False})
    for index in range(1, nodes):
        cluster.add_node(num_cpus=cpus, env_vars=node_env(index))
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False, logging_level=logging.WARNING,
             runtime_env={"env_vars": {"PYTHONPATH": str(REPO_ROOT)}})
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
    statuses: dict[str, int] = {}
    for row in summary.rows:
        statuses[row.status] = statuses.get(row.status, 0) + 1
    figures = {
        "nodes": nodes, "cpus_per_node": cpus, "in_flight": nodes, "candidates": len(candidates),
        "cluster_start_s": round(cluster_s, 2), "run_wall_s": round(summary.wall_s, 2),
        "per_candidate_wall_s": round(summary.wall_s / max(1, len(candidates)), 3),
        "overhead_per_candidate_s": {"mean": round(statistics.mean(overhead), 3),
                                     "median": round(statistics.median(overhead), 3),
                                     "max": round(max(overhead), 3)},
        "ray_share_s": round(statistics.mean(t.round_trip_s - t.task_s for t in candidates), 3),
        "in_task_share_s": round(statistics.mean(t.task_s - t.work_s for t in candidates), 3),
        "judge_s_mean": round(statistics.mean(t.work_s for t in candidates), 3),
        "nodes_used": len({t.node for t in evaluations}), "statuses": statuses,
    }
    say(f"{nodes} node(s) x {cpus} CPUs: {len(candidates)} candidates in {summary.wall_s:.1f} s "
        f"({figures['per_candidate_wall_s']:.2f} s each); overhead per candidate mean "
        f"{figures['overhead_per_candidate_s']['mean']:.2f} s, median {figures['overhead_per_candidate_s']['median']:.2f} s "
        f"(Ray {figures['ray_share_s']:.2f} s, in the task {figures['in_task_share_s']:.2f} s); judge "
        f"{figures['judge_s_mean']:.2f} s each; nodes used {figures['nodes_used']}; statuses {statuses}")
    return figures


def plot(figures: list[dict], path: Path, count: int, cores: int) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nodes = [f["nodes"] for f in figures]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(nodes, [f["run_wall_s"] for f in figures], "o-")
    left.set(xlabel="simulated Ray nodes", ylabel="run wall time (s)", xticks=nodes,
             title=f"{count} CPU candidates, one {cores}-core machine")
    left.set_ylim(bottom=0)
    ray_share = [f["ray_share_s"] for f in figures]
    in_task = [f["in_task_share_s"] for f in figures]
    right.bar(nodes, ray_share, label="Ray: queue, fresh worker, transfer")
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

    import os
    env = probe_env("cpu")
    say(f"{env.cpu} ({os.cpu_count()} cores), torch {env.torch}, ray {ray.__version__}; {args.count} candidates")
    cache = work / "builds"
    work.mkdir(parents=True, exist_ok=True)
    (work / "config.yaml").write_text(CONFIG.format(cache=cache))
    config = load_config(work / "config.yaml")
    arch = build_stage.arch_list(config.get("build.cuda_arch_list"), env, config.get("build.fallback_arch"))
    copies = make_copies(work / "candidates", args.count)
    seed_build_cache(cache, copies, env, arch, say)
    problem = load_problem(PROBLEM)
    figures = []
    for nodes in [int(n) for n in args.nodes.split(",")]:
        options = runner.RunOptions(problem, config, env, discover(copies), ["seed"], work / f"results-{nodes}",
                                    fresh=True, backend="ray")
        figures.append(run_on(nodes, args.cpus_per_node, options, work, say))
        (out / "scale.json").write_text(json.dumps({"count": args.count, "cores": os.cpu_count(), "env": env.to_json(),
                                                    "configurations": figures}, indent=2) + "\n")
    plot(figures, out / "scale.png", args.count, os.cpu_count() or 0)
    say(f"wrote {out / 'scale.json'} and {out / 'scale.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
