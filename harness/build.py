"""Build: accepted candidates in, a `BuildResult` per candidate out.

Every candidate compiles in a directory of its own, keyed by a hash of its source, the torch and
CUDA versions and the target arch: two candidates that use the same extension name never collide,
and an unchanged candidate is never rebuilt. Compiles run in parallel worker processes under a
time limit; each keeps its compiler log beside its build. A library that built is then read by the
build-stage rules (I119: the symbols it calls); an error there makes the result `rejected`.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from harness.discovery import Candidate
from harness.env import REPO_ROOT, EnvInfo
from harness.records import locked, now_utc, write_atomic
from harness.rules import ERROR, check_library
from harness.spawn import kill_all_workers, sandbox_slot, spawn_worker
from harness.worker import worker_crash_reason

BUILD_RECIPE_VERSION = 1   # bump when the way candidates are compiled changes
BUILD_SLOTS = 32           # sandbox users 0..31 build; evaluations take the next ones (runner.py)
# Compiles overlap evaluation (build.overlap_evaluation) and fill every core: at a lower priority they yield the
# cores to the judge and sandbox beside them, whose clocks would otherwise read the compiles' load. Once no
# evaluation runs, a niced compile is as fast as any.
BUILD_NICENESS = 10


@dataclass(frozen=True)
class BuildResult:
    candidate: str
    status: str              # ok, rejected, compile_error, load_error, timeout, crashed, skipped
    reason: str
    compile_s: float | None
    cached: bool
    build_dir: Path
    log_path: Path
    check: str = ""          # the rule that rejected the built library (status rejected), e.g. I119


def arch_list(setting: str, env: EnvInfo, fallback: str) -> str:
    """TORCH_CUDA_ARCH_LIST: from the config, else the visible GPU, else the fallback."""
    if setting and setting != "auto":
        return setting
    return env.compute_capability or fallback


def build_key(candidate: Candidate, env: EnvInfo, arch: str) -> str:
    parts = [candidate.sha256, env.torch, env.torch_cuda, env.nvcc, arch, env.python, str(BUILD_RECIPE_VERSION)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:20]


def build_dir_for(cache_dir: Path, candidate: Candidate, env: EnvInfo, arch: str) -> Path:
    return cache_dir / f"{candidate.path.stem}-{build_key(candidate, env, arch)}"


def worker_environment(build_dir: Path, env: EnvInfo, arch: str, uses_cuda: bool) -> dict[str, str]:
    overrides = {"TORCH_EXTENSIONS_DIR": str(build_dir / "ext"), "MAX_JOBS": os.environ.get("MAX_JOBS", "2")}
    if env.cuda_home:
        overrides["CUDA_HOME"] = env.cuda_home
    if uses_cuda:
        overrides["TORCH_CUDA_ARCH_LIST"] = arch
        headers = missing_toolkit_headers(env.cuda_home)
        if headers:
            overrides["CPATH"] = os.pathsep.join(filter(None, [os.environ.get("CPATH", ""), headers]))
    return overrides


def missing_toolkit_headers(home: str) -> str:
    """An include folder for the library headers torch's CUDA headers need, when the toolkit lacks them.

    ATen/cuda/CUDAContext.h includes cusparse.h and cublas_v2.h; a minimal toolkit may not ship
    them, while the CUDA wheels torch depends on do (site-packages/nvidia/*/include).
    """
    if not home or (Path(home) / "include" / "cusparse.h").exists():
        return ""
    import torch

    site = Path(torch.__file__).resolve().parent.parent / "nvidia"
    for header in sorted(site.glob("*/include/cusparse.h")):
        return str(header.parent)
    return ""


def can_compile_cuda(env: EnvInfo) -> str:
    """Empty when CUDA candidates can be compiled here, else the reason they cannot."""
    if not env.torch_cuda:
        return "torch is a CPU build: CUDA candidates cannot be compiled here"
    if not env.cuda_home:
        return "no CUDA toolkit found (set CUDA_HOME): CUDA candidates cannot be compiled here"
    return ""


def build_one(candidate: Candidate, uses_cuda: bool, env: EnvInfo, arch: str, cache_dir: Path,
              time_limit_s: float) -> BuildResult:
    return screen_libraries(compile_one(candidate, uses_cuda, env, arch, cache_dir, time_limit_s))


def screen_libraries(result: BuildResult) -> BuildResult:
    """Run the build-stage rules on every library an ok build holds (cached ones too: rules change).

    The cache entry stays: the build itself succeeded, and the verdict is recomputed on each use.
    """
    if result.status != "ok":
        return result
    findings = [f for library in sorted((result.build_dir / "ext").rglob("*.so")) for f in check_library(library)]
    errors = [f for f in findings if f.severity == ERROR]
    if findings and not result.cached:
        try:
            with open(result.log_path, "a") as log:
                log.writelines(f"# {f.rule} {f.severity}: {f.message}\n" for f in findings)
        except OSError:
            pass
    if not errors:
        return result
    reason = "; ".join(f"{f.rule}: {f.message}" for f in errors)
    return replace(result, status="rejected", reason=reason, check=errors[0].rule)


def compile_one(candidate: Candidate, uses_cuda: bool, env: EnvInfo, arch: str, cache_dir: Path,
                time_limit_s: float) -> BuildResult:
    directory = build_dir_for(cache_dir, candidate, env, arch)
    log_path = directory / "build.log"
    marker = directory / "built.json"
    if uses_cuda and (reason := can_compile_cuda(env)):
        return BuildResult(candidate.id, "skipped", reason, None, False, directory, log_path)
    directory.mkdir(parents=True, exist_ok=True)
    with locked(directory / "build"):    # two runs at once build a candidate once
        if marker.exists():
            data = trusted_entry(directory)
            if data is not None:
                return BuildResult(candidate.id, "ok", "", data.get("compile_s"), True, directory, log_path)
            marker.unlink(missing_ok=True)   # corrupt or incomplete entry: rebuild from scratch
        # No trusted entry: ext/ holds a build that failed or was killed half-way, maybe with torch's own
        # lock file in it, on which the next build would wait forever. This run holds the directory's lock.
        shutil.rmtree(directory / "ext", ignore_errors=True)
        job = {"mode": "build", "device": "cpu",
               "candidate": {"id": candidate.id, "path": str(candidate.path.resolve()), "sha256": candidate.sha256}}
        log_path.write_text(f"# build of {candidate.path} at {now_utc()}\n")
        # importing the candidate runs its code: the build is confined to a user of its own, which may write
        # only this build's folder, seen at a fixed path (spawn.EXTENSION_MOUNT) that evaluations see too, and
        # sees no GPU, where another candidate may be being timed
        with sandbox_slot(0, BUILD_SLOTS) as slot:
            outcome = spawn_worker(job, worker_environment(directory, env, arch, uses_cuda), time_limit_s, log_path,
                                   sandbox_slot=slot, extension_dir=directory / "ext", niceness=BUILD_NICENESS,
                                   hide_gpus=True)
        if outcome.timed_out:
            return BuildResult(candidate.id, "timeout", f"compile killed after the {time_limit_s:.0f} s time limit",
                               outcome.seconds, False, directory, log_path)
        if not outcome.lines:
            return BuildResult(candidate.id, "crashed", worker_crash_reason("build worker", outcome), outcome.seconds,
                               False, directory, log_path)
        line = outcome.lines[-1]
        # the worker ran candidate code: its line is a claim, read only if it has the shape the worker writes
        if not (isinstance(line, dict) and line.get("status") in ("ok", "compile_error", "load_error")
                and isinstance(line.get("reason"), str) and isinstance(line.get("compile_s"), (int, float))
                and not isinstance(line.get("compile_s"), bool)):
            return BuildResult(candidate.id, "crashed", "the build worker wrote a result of the wrong shape",
                               outcome.seconds, False, directory, log_path)
        if line["status"] == "compile_error":
            line["reason"] = first_compiler_error(log_path) or line["reason"]
        if line["status"] == "ok":
            write_atomic(marker, json.dumps({"candidate": str(candidate.path), "sha256": candidate.sha256,
                                             "compile_s": line["compile_s"], "built_at": now_utc(),
                                             "libraries": library_digests(directory)}))
        return BuildResult(candidate.id, line["status"], line["reason"], line["compile_s"], False, directory, log_path)



def first_error_line(text: str) -> str:
    """The first line of compiler output that reports an error, or ""."""
    for line in text.splitlines():
        if ": error" in line or "error:" in line or line.startswith("error"):
            return line.strip()[:240]
    return ""


def first_compiler_error(log_path: Path) -> str:
    """The compiler's first error in a build log (the verbose build prints its output there)."""
    try:
        return first_error_line(log_path.read_text(errors="replace"))
    except OSError:
        return ""


def trusted_entry(directory: Path) -> dict | None:
    """A cache entry's marker (built.json) when its libraries still match the digests it lists, else None."""
    try:
        data = json.loads((directory / "built.json").read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) and data.get("libraries") == library_digests(directory) else None


def library_digests(directory: Path) -> dict[str, str]:
    """SHA-256 of every built extension library: a cache entry is trusted only if these still match."""
    return {str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted((directory / "ext").rglob("*.so"))}


def forget_build(result: BuildResult) -> None:
    """Drop a cache entry found broken at load time, so the next build starts clean."""
    (result.build_dir / "built.json").unlink(missing_ok=True)


def build_all(jobs: list[tuple[Candidate, bool]], env: EnvInfo, arch: str, cache_dir: Path, time_limit_s: float,
              workers: int, on_done: Callable[[BuildResult], None],
              cancel: threading.Event | None = None) -> dict[str, BuildResult]:
    cache_dir = cache_dir if cache_dir.is_absolute() else REPO_ROOT / cache_dir
    results: dict[str, BuildResult] = {}
    pool = ThreadPoolExecutor(max_workers=max(1, workers or os.cpu_count() or 1))
    try:
        def build_unless_cancelled(candidate: Candidate, uses_cuda: bool) -> BuildResult:
            if cancel is not None and cancel.is_set():
                directory = build_dir_for(cache_dir, candidate, env, arch)
                return BuildResult(candidate.id, "skipped", "run stopped before this build", None, False,
                                   directory, directory / "build.log")
            return build_one(candidate, uses_cuda, env, arch, cache_dir, time_limit_s)

        futures = [pool.submit(build_unless_cancelled, c, cuda) for c, cuda in jobs]
        for future in as_completed(futures):
            result = future.result()
            results[result.candidate] = result
            on_done(result)
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)   # queued builds never start
        kill_all_workers()                               # running ones die with their compilers
        raise
    pool.shutdown()
    return results
