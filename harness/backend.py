"""Backends: where a run's builds and evaluations execute. A build job or an evaluation job in, a `BuildResult`
or a `WorkerOutcome` out, whichever machine did the work.

The runner (runner.py) decides what to build and evaluate, in which order, and alone writes records; a backend
only executes. `LocalBackend` runs everything on this machine: builds in a pool of confined worker processes,
each evaluation in a judge process of its own (judge.py) that confines the candidate's sandbox. The Ray backend
(backend_ray.py) runs that same judge code path inside Ray tasks on a cluster's nodes.
"""
from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Callable, Protocol

from harness import build as build_stage
from harness import confine
from harness.discovery import Candidate
from harness.env import EnvInfo
from harness.problem import ProblemError
from harness.protocol import EvaluateJob
from harness.spawn import WorkerOutcome, kill_all_workers, sandbox_slot, spawn_worker

BACKENDS = ("local", "ray")


class BackendUnavailable(ProblemError):
    """A backend that cannot start here (Ray not installed, no cluster at the address). A ProblemError, so
    that the command line reports it as its one line and exit code 2, like any refused input."""


class Backend(Protocol):
    def lanes(self, env: EnvInfo, gpus: list[int]) -> list[int | None]:
        """One entry per evaluation the runner may keep in flight (a GPU index, or None where the backend or
        the CPU places it)."""

    def build_all(self, jobs: list[tuple[Candidate, bool]], env: EnvInfo, arch: str, cache_dir: Path,
                  time_limit_s: float, workers: int, on_done: Callable[[build_stage.BuildResult], None],
                  cancel: threading.Event | None = None) -> dict[str, build_stage.BuildResult]:
        """Build every (candidate, uses_cuda), calling `on_done` as each finishes; results by candidate id,
        with `build_dir` in this machine's cache."""

    def judge(self, job: EvaluateJob, env_overrides: dict, limit_s: float, log_path: Path,
              on_line: Callable[[dict], None] | None = None, gate: threading.Event | None = None) -> WorkerOutcome:
        """Evaluate one entry in a judge process (killed at `limit_s`), `on_line` seeing each ShapeOutcome line;
        the judge's output ends up in `log_path` on this machine. With `gate`, the judge may start at once but
        touches the GPU only once the gate is set (a backend that cannot hold a judge waits for it first)."""

    def stop(self) -> None:
        """Kill everything in flight (Ctrl-C): nothing of it is recorded."""

    def close(self) -> None:
        """The run is over."""


class LocalBackend:
    """This machine: as many evaluations in flight as GPUs given (one on CPU runs)."""
    holds_judges = True   # a judge can start early and wait at its gate (spawn.spawn_worker)

    def lanes(self, env: EnvInfo, gpus: list[int]) -> list[int | None]:
        return list(gpus) if env.device == "cuda" else [None]

    def build_all(self, jobs, env, arch, cache_dir, time_limit_s, workers, on_done, cancel=None):
        return build_stage.build_all(jobs, env, arch, cache_dir, time_limit_s, workers, on_done, cancel)

    def judge(self, job: EvaluateJob, env_overrides: dict, limit_s: float, log_path: Path,
              on_line: Callable[[dict], None] | None = None, gate: threading.Event | None = None) -> WorkerOutcome:
        if job.sandbox_slot is None:   # a trusted baseline: no user of its own
            return spawn_worker(job.to_json(), env_overrides, limit_s, log_path, on_line=on_line, module="harness.judge",
                                gate=gate)
        with sandbox_slot(build_stage.BUILD_SLOTS, confine.SANDBOX_SLOTS - build_stage.BUILD_SLOTS) as slot:
            job = dataclasses.replace(job, sandbox_slot=slot)
            try:
                return spawn_worker(job.to_json(), env_overrides, limit_s, log_path, on_line=on_line,
                                    module="harness.judge", gate=gate)
            finally:   # a judge killed at its time limit leaves its sandbox's user behind
                if confine.can_drop_privileges():
                    confine.kill_user(confine.sandbox_uid(slot))

    def stop(self) -> None:
        kill_all_workers()

    def close(self) -> None:
        pass


def open_backend(name: str, ray_address: str | None = None) -> Backend:
    """The backend called `name`; Ray is imported only when asked for, and its absence is one clear line."""
    if name == "local":
        if ray_address:
            raise BackendUnavailable("--ray-address: only with --backend ray")
        return LocalBackend()
    if name == "ray":
        try:
            import ray  # noqa: F401  (only to learn whether it is installed)
        except ImportError:
            raise BackendUnavailable("--backend ray: Ray is not installed; install it with "
                                     "`pip install .[ray]` (or `pip install 'ray>=2.9'`)") from None
        from harness.backend_ray import RayBackend

        return RayBackend(ray_address)
    raise BackendUnavailable(f"--backend: expected one of {', '.join(BACKENDS)}, got {name!r}")
