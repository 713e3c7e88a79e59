"""Runner: a problem, candidates and a config in; signed records appended and leaderboards written out.

Builds and evaluations go through a backend (backend.py): this machine's worker and judge processes, or the
same judge path inside Ray tasks on a cluster's nodes (backend_ray.py, `run --backend ray`); either way the
runner alone decides the order and writes records.

Order of work: environment probe (child process), static check (in process: parsing only),
parallel builds (confined worker processes), and evaluation, one judge process per candidate (which runs
the candidate in a confined sandbox of its own, judge.py): the eager
reference first, on a quiet CPU (it also proves the problem is not near-constant), then the builds,
and the other baselines and the candidates as their builds finish (or after all builds, on CPU runs),
spread over the GPUs. Only the runner writes records, each signed with a key no worker sees
(signing.py); finished records from an earlier run with the same candidate, problem, environment and
config, whose signature checks out, are reused, so an interrupted run resumes.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import queue
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Protocol

from harness import build as build_stage
from harness import signing, spawn
from harness.backend import Backend, LocalBackend, open_backend
from harness.config import Config
from harness.discovery import Candidate
from harness.env import REPO_ROOT, EnvInfo, MachineLoad, machine_load
from harness.leaderboard import EAGER, Row, build_rows, write_leaderboard
from harness.report_html import write_report
from harness.problem import Problem, ProblemError, select_shapes
from harness.protocol import EvaluateJob, ShapeOutcome
from harness.records import Record, append_record, now_utc, read_records, write_atomic
from harness.rules import ERROR, check_source, is_accepted, parse_candidate
from harness.spawn import WorkerOutcome
from harness.worker import worker_crash_reason

log = logging.getLogger(__name__)
BASELINES = (("ref:eager", "eager"), ("ref:graph", "graph"), ("ref:compile", "compile"))


class Reporter(Protocol):
    """Progress by phase (check, build, evaluate, warm-up): `advance` counts one item done ("ITEM: OUTCOME").
    A reporter may also have `start(name, item)` and `finish(name, item, outcome)`, told what is in flight and
    for how long (harness/progress.py); `finish` then counts instead of `advance` (Run.started, Run.finished)."""
    def phase(self, name: str, total: int) -> None: ...
    def advance(self, name: str, description: str) -> None: ...
    def note(self, message: str) -> None: ...


class SilentReporter:
    def phase(self, name: str, total: int) -> None:
        pass

    def advance(self, name: str, description: str) -> None:
        pass

    def note(self, message: str) -> None:
        log.info(message)


@dataclass
class RunOptions:
    problem: Problem
    config: Config
    env: EnvInfo
    candidates: list[Candidate]
    shapes: list[str]
    results_dir: Path
    gpus: list[int] = field(default_factory=lambda: [0])
    fresh: bool = False
    build_only: bool = False
    backend: str = "local"            # where builds and evaluations run: local, or ray (backend_ray.py)
    ray_address: str | None = None    # --backend ray: a cluster's address, or None for a local Ray instance


@dataclass
class RunSummary:
    rows: list[Row]
    shapes: list[str]
    output_dir: Path
    reused: int
    evaluated: int
    wall_s: float


@dataclass(frozen=True)
class Entry:
    """One row-to-be: a candidate file or a baseline."""
    id: str
    kind: str
    sha256: str
    candidate: Candidate | None = None
    baseline: str = ""
    uses_cuda: bool = False


def config_digest(config: Config) -> str:
    return hashlib.sha256(json.dumps(config.data, sort_keys=True).encode()).hexdigest()[:16]


def default_shapes(problem: Problem, config: Config, device: str, requested: list[str] | None) -> list[str]:
    if requested:
        return [s.name for s in select_shapes(problem, requested)]
    wanted = config.get("evaluate.shapes").get(device) or list(problem.shapes)
    return [s for s in wanted if s in problem.shapes] or list(problem.shapes)


class Run:
    def __init__(self, options: RunOptions, reporter: Reporter, backend: Backend | None = None):
        self.options = options
        self.backend = backend or LocalBackend()
        self.reporter = reporter
        self.problem = options.problem
        self.env = options.env
        self.config = options.config
        self.output_dir = options.results_dir / self.problem.name
        self.records_path = self.output_dir / "records.jsonl"
        self.run_id = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ-") + secrets.token_hex(3)
        self.config_sha = config_digest(self.config)
        self.secret_seed = secrets.randbits(62)
        self.core_plan: spawn.CorePlan | None = None   # build_and_evaluate's (spawn.plan_cores)
        self.record_key = signing.record_key()
        self.done: dict[tuple, Record] = {}
        self.lock = threading.Lock()
        self.held: list[Record] | None = None   # records waiting on the reference check (several GPUs)
        self.closed = False                      # interrupted or refused: nothing more is written or shown
        self.evaluated = 0
        self.reused = 0
        self.machine_load: MachineLoad | None = None   # CPU runs: how busy the machine was before it started

    # --- records -------------------------------------------------------------------------------------
    def record(self, entry: Entry, shape: str, status: str, reason: str, stage: str, **extra) -> Record:
        record = Record(run_id=self.run_id, problem=self.problem.name, problem_sha256=self.problem.sha256,
                        candidate=entry.id, candidate_sha256=entry.sha256, kind=entry.kind, shape=shape,
                        status=status, reason=reason, stage=stage, env_key=self.env.key,
                        config_sha256=self.config_sha, device=self.env.device, recorded_at=now_utc(), **extra)
        with self.lock:
            if self.closed:   # a worker killed by the interrupt is unfinished, not crashed
                return record
            if self.held is not None and entry.id != EAGER:
                self.held.append(record)   # until the reference is known to depend on its inputs
            else:
                append_record(self.records_path, record, self.record_key)
            self.done[record.resume_key] = record
            self.evaluated += 1
        return record

    def release_held(self) -> None:
        with self.lock:
            for record in self.held or []:
                append_record(self.records_path, record, self.record_key)
            self.held = None

    def key(self, entry: Entry, shape: str) -> tuple:
        return (entry.id, entry.sha256, self.problem.sha256, self.env.key, self.config_sha, shape)

    def pending_shapes(self, entry: Entry) -> list[str]:
        return [s for s in self.options.shapes if self.key(entry, s) not in self.done]

    def save_env(self) -> None:
        """env.json is this run's environment; envs.jsonl and configs.jsonl keep every environment and
        config that records refer to, so tables can be rebuilt from the results folder alone."""
        write_atomic(self.output_dir / "env.json", json.dumps(self.env.to_json(), indent=2) + "\n")
        append_once(self.output_dir / "envs.jsonl", self.env.to_json())
        append_once(self.output_dir / "configs.jsonl", {"key": self.config_sha, "path": str(self.config.path),
                                                        "config": self.config.data})

    def load_previous(self) -> None:
        if self.options.fresh:
            return
        for record in read_records(self.records_path, self.record_key):   # only records whose signature checks out
            self.done[record.resume_key] = record

    # --- stages --------------------------------------------------------------------------------------
    def baselines(self) -> list[Entry]:
        """The enabled baselines; the eager reference always runs, every speedup is over it."""
        flags = self.config.get("baselines")
        return [Entry(ident, "baseline", self.problem.sha256, baseline=name) for ident, name in BASELINES
                if name == "eager" or flags.get(name)]

    def check(self, candidates: list[Candidate]) -> list[Entry]:
        accepted = []
        enforce = self.config.get("check.static") == "enforce"
        self.reporter.phase("check", len(candidates))
        for candidate in candidates:
            text = candidate.path.read_text(encoding="utf-8", errors="replace")
            source = parse_candidate(str(candidate.path), text, self.problem.reference_module)
            findings = check_source(source)
            entry = Entry(candidate.id, "candidate", candidate.sha256, candidate, uses_cuda=source.uses_cuda)
            outcome = "accepted"
            if is_accepted(findings) or not enforce:
                accepted.append(entry)
            else:
                errors = [f for f in findings if f.severity == ERROR]
                reason = "; ".join(f"{f.rule} line {f.line}: {f.message}" for f in errors[:3])
                for shape in self.pending_shapes(entry):
                    self.record(entry, shape, "rejected", reason, "check", check=errors[0].rule,
                                findings=[f.to_json() for f in findings])
                outcome = f"rejected ({errors[0].rule})"
            self.finished("check", candidate.id, outcome)
        return accepted

    def build_cache_dir(self) -> Path:
        cache = Path(self.config.get("build.cache_dir"))
        return cache if cache.is_absolute() else REPO_ROOT / cache

    def build(self, entries: list[Entry], on_built: Callable[[build_stage.BuildResult], None] = lambda r: None,
              cancel: threading.Event | None = None) -> dict[str, build_stage.BuildResult]:
        todo = [e for e in entries if self.pending_shapes(e)]
        self.reporter.phase("build", len(todo))
        settings = self.config.get("build")
        cache_dir = Path(settings["cache_dir"])

        start_next = self.report_build_starts([e.id for e in todo], int(settings["workers"]))

        def done(result: build_stage.BuildResult) -> None:
            word = "cached" if result.cached else result.status
            self.finished("build", result.candidate, word)
            start_next()
            on_built(result)

        return self.backend.build_all([(e.candidate, e.uses_cuda) for e in todo], self.env, self.arch, cache_dir,
                                      float(settings["time_limit_s"]), int(settings["workers"]), done, cancel)

    def started(self, name: str, item: str) -> None:
        start = getattr(self.reporter, "start", None)   # reporters that only count have none
        if start is not None:
            start(name, item)

    def finished(self, name: str, item: str, outcome: str = "") -> None:
        finish = getattr(self.reporter, "finish", None)
        if finish is not None:
            finish(name, item, outcome)
        else:
            self.reporter.advance(name, f"{item}: {outcome}" if outcome else item)

    def report_build_starts(self, ids: list[str], workers: int) -> Callable[[], None]:
        """Report builds as started the way build_all's pool starts them (build.py reports no starts): in this
        order, `workers` at a time, the next as soon as one ends. Returns what to call when a build ends."""
        waiting = list(ids)

        def start_next() -> None:
            if waiting:
                self.started("build", waiting.pop(0))

        for _ in range(max(1, workers or os.cpu_count() or 1)):
            start_next()
        return start_next

    def runs_here(self, entry: Entry) -> bool:
        """A CUDA candidate runs only on a CUDA run, a CPU one only on a CPU run."""
        return entry.uses_cuda == (self.env.device == "cuda")

    def skip_elsewhere(self, entry: Entry) -> None:
        """Neither built nor run: compiling what cannot run here would only cost time (minutes per CUDA
        build on a machine without a GPU). `run --build-only` compiles it; the test suite checks CUDA builds."""
        reason = ("no CUDA device: not compiled (--build-only compiles it)" if entry.uses_cuda else
                  "CPU candidate on a CUDA run: evaluate it with --device cpu")
        for shape in self.pending_shapes(entry):
            self.record(entry, shape, "skipped", reason, "check")
        self.finished("evaluate", entry.id, "skipped")

    def evaluate_entry(self, entry: Entry, gpu: int | None, build: build_stage.BuildResult | None,
                       gate: threading.Event | None = None) -> None:
        self.started("evaluate", entry.id)
        try:
            self.evaluate_shapes(entry, gpu, build, gate)
        finally:
            if not self.closed:   # the reporter is being torn down by the interrupted main thread
                self.finished("evaluate", entry.id, self.outcome_words(entry))

    def outcome_words(self, entry: Entry) -> str:
        """An entry's statuses in a few words for the progress display: "ok", "crashed (its reason)",
        "seed ok, medium wrong"."""
        records = [self.done[self.key(entry, s)] for s in self.options.shapes if self.key(entry, s) in self.done]
        if not records:
            return ""
        if len({r.status for r in records}) > 1:
            return ", ".join(f"{r.shape} {r.status}" for r in records)
        first = records[0]
        return first.status + (f" ({first.reason[:100]})" if first.status != "ok" and first.reason else "")

    def evaluate_job(self, entry: Entry, shapes: list[str], gpu: int | None,
                     build: build_stage.BuildResult | None) -> tuple[EvaluateJob, dict, Path, float]:
        sandbox_env: dict[str, str] = {"MAX_JOBS": "2"}
        extension_dir = ""
        if entry.candidate is not None:
            overrides = build_stage.worker_environment(build.build_dir, self.env, self.arch, entry.uses_cuda)
            sandbox_env.update(overrides)
            extension_dir = overrides["TORCH_EXTENSIONS_DIR"]
            log_path = build.build_dir / f"evaluate-{self.run_id}.log"
        else:
            log_path = self.output_dir / "logs" / f"{entry.id.replace(':', '_')}-{self.run_id}.log"
        env_overrides = {}
        if entry.baseline == "compile":   # reuse torch.compile's cache between runs
            env_overrides["TORCHINDUCTOR_CACHE_DIR"] = str(self.build_cache_dir() / "inductor")
            sandbox_env["TORCHINDUCTOR_CACHE_DIR"] = env_overrides["TORCHINDUCTOR_CACHE_DIR"]
        if gpu is not None and self.env.device == "cuda":
            env_overrides["CUDA_VISIBLE_DEVICES"] = str(gpu)
            sandbox_env["CUDA_VISIBLE_DEVICES"] = str(gpu)
        slot = 0 if entry.candidate is not None else None   # the actual user is taken when the judge starts
        log_path.parent.mkdir(parents=True, exist_ok=True)
        job = EvaluateJob(
            device=self.env.device, problem_path=str(self.problem.path.resolve()), shapes=tuple(shapes),
            timing=self.config.timing, judge=dict(self.config.get("judge")), secret_seed=self.secret_seed,
            results_path="", log_path=str(log_path), candidate_id=entry.id,
            candidate_path=str(entry.candidate.path.resolve()) if entry.candidate is not None else "",
            candidate_sha256=entry.sha256 if entry.candidate is not None else "", baseline=entry.baseline,
            check_reference=entry.id == EAGER, gpu=gpu,
            compile_shapes=tuple(self.config.get("baselines").get("compile_shapes", [])),
            compile_time_limit_s=float(self.config.get("baselines.compile_time_limit_s")),
            sandbox_slot=slot, sandbox_env=sandbox_env, extension_dir=extension_dir,
            lane_cores=self.lane_cores(gpu))
        limit = float(self.config.get("evaluate.time_limit_s"))
        if entry.baseline == "compile":   # dynamo may swallow the in-process alarm: the process limit backs it
            limit = min(limit, float(self.config.get("baselines.compile_time_limit_s")) * len(shapes) + 120)
        return job, env_overrides, log_path, limit

    def lane_cores(self, gpu: int | None) -> tuple[int, ...]:
        return self.core_plan.lanes.get(gpu, ()) if self.core_plan is not None else ()

    def judge(self, job: EvaluateJob, env_overrides: dict, limit: float, log_path: Path, on_line=None,
              gate: threading.Event | None = None) -> WorkerOutcome:
        return self.backend.judge(job, env_overrides, limit, log_path, on_line=on_line, gate=gate)

    def warm_compile(self, entry: Entry, gpu: int | None) -> None:
        """torch.compile the reference in its own worker while the candidates are evaluated (the compile is
        host work), so the timed worker queued last finds inductor's caches warm."""
        shapes = self.pending_shapes(entry)
        job, env_overrides, log_path, limit = self.evaluate_job(entry, shapes, gpu, None)
        self.reporter.phase("warm-up", 1)   # torch.compile can take minutes: in flight like a build
        self.started("warm-up", entry.id)
        outcome = self.judge(dataclasses.replace(job, warm_only=True, lane_cores=()), env_overrides, limit,
                             log_path)   # host work: it keeps off the lanes' cores
        if not self.closed:
            self.finished("warm-up", entry.id, "timeout" if outcome.timed_out else "done")
        self.compile_warm_s = {line["shape"]: line["compile_s"] for line in outcome.lines
                               if line.get("stage") == "warm" and line.get("compile_s") is not None}

    def evaluate_shapes(self, entry: Entry, gpu: int | None, build: build_stage.BuildResult | None,
                        gate: threading.Event | None = None) -> None:
        shapes = self.pending_shapes(entry)
        if not shapes:
            return
        extra = {}
        if build is not None:
            extra = {"compile_s": build.compile_s, "build_cached": build.cached}
            if build.status == "rejected" and self.config.get("check.static") == "warn":
                pass   # the static filter only warns: the judge alone decides
            elif build.status != "ok":
                status = build.status
                for shape in shapes:
                    self.record(entry, shape, status, build.reason, "build", check=build.check, **extra)
                return
        if entry.baseline in ("graph", "compile") and self.env.device != "cuda":
            for shape in shapes:   # said here, not by a judge: a process and a torch import per baseline saved
                self.record(entry, shape, "skipped", "CUDA-only baseline on a CPU run", "setup")
            return
        job, env_overrides, log_path, limit = self.evaluate_job(entry, shapes, gpu, build)
        seen = set()

        def take(line: dict) -> None:
            """Record one finished shape while the judge goes on with the next."""
            outcome = ShapeOutcome.from_json(line)
            shape = outcome.shape
            if shape not in shapes or shape in seen:
                return
            seen.add(shape)
            line_extra = dict(extra)
            if entry.baseline == "compile" and shape in self.compile_warm_s:
                line_extra["compile_s"] = self.compile_warm_s[shape]
            self.record(entry, shape, outcome.status, outcome.reason, outcome.stage, check=outcome.check,
                        max_abs_err=outcome.max_abs_err, max_rel_err=outcome.max_rel_err, trials=outcome.trials,
                        time_us=outcome.time_us, host_us=outcome.host_us, timing=outcome.timing,
                        confinement=outcome.confinement, **line_extra)
            if outcome.near_constant:
                self.near_constant = True
            if outcome.status in ("compile_error", "load_error") and build is not None and build.cached:
                build_stage.forget_build(build)   # a cached build that no longer loads: rebuild next time

        outcome = self.judge(job, env_overrides, limit, log_path, on_line=take, gate=gate)
        missing = [s for s in shapes if s not in seen]
        for shape in missing:
            if outcome.timed_out and entry.baseline == "compile":
                self.record(entry, shape, "skipped", f"torch.compile did not finish within {limit:.0f} s", "evaluate")
            elif outcome.timed_out:
                self.record(entry, shape, "timeout", f"evaluation killed after the {limit:.0f} s time limit", "evaluate", **extra)
            else:
                self.record(entry, shape, "crashed", worker_crash_reason("judge", outcome), "evaluate", **extra)

    def build_and_evaluate(self, baselines: list[Entry], candidates: list[Entry], overlap: bool) -> None:
        """Builds feed a queue that one thread per GPU drains; with `overlap`, evaluation starts as soon as
        the first build is done instead of after the last. Either way the eager reference is timed on a quiet
        CPU: at small shapes it is bound by the host's launch rate, and compiles beside it slowed it 2-4x."""
        todo = [e for e in baselines + candidates if self.pending_shapes(e)]
        runnable = [e for e in candidates if self.runs_here(e)]
        by_id = {e.id: e for e in runnable}
        builds: dict[str, build_stage.BuildResult] = {}
        work: queue.Queue[Entry] = queue.Queue()
        all_queued, stop = threading.Event(), threading.Event()
        self.near_constant = False
        self.compile_warm_s: dict[str, float] = {}

        def on_built(result: build_stage.BuildResult) -> None:
            builds[result.candidate] = result
            if overlap:
                work.put(by_id[result.candidate])

        builder = threading.Thread(target=self.build, args=(runnable, on_built, stop), daemon=True)
        self.reporter.phase("evaluate", len(todo))
        for entry in candidates:
            if not self.runs_here(entry) and self.pending_shapes(entry):
                self.skip_elsewhere(entry)
        gpus = self.backend.lanes(self.env, self.options.gpus)   # evaluations in flight at once
        self.core_plan = self.plan_cores(gpus, overlap)
        setting = self.config.get("evaluate.prestart")
        prestart = getattr(self.backend, "holds_judges", False) and (
            setting == "always" or (setting == "auto" and self.env.device == "cuda"))

        def drain(gpu: int | None) -> None:
            """One GPU's lane: one evaluation at a time on it. With prestart, the next entry's judge and sandbox
            start while the current one runs and wait at their gate, so their process starts and imports (seconds
            of host work) are off the GPU's critical path."""
            running: threading.Thread | None = None
            while not stop.is_set():
                try:
                    entry = work.get(timeout=0.2)
                except queue.Empty:
                    if all_queued.is_set() and work.empty():
                        break
                    continue
                if not prestart:
                    evaluate(entry, gpu)
                    continue
                gate = threading.Event()
                upcoming = threading.Thread(target=evaluate, args=(entry, gpu, gate), daemon=True)
                upcoming.start()
                if running is not None:
                    wait([running])
                gate.set()
                running = upcoming
            if running is not None:
                wait([running])

        def evaluate(entry: Entry, gpu: int | None, gate: threading.Event | None = None) -> None:
            try:
                self.evaluate_entry(entry, gpu, builds.get(entry.id), gate)
            except Exception:
                if not stop.is_set():   # after an interrupt its worker was killed: nothing to record
                    raise

        def wait(threads: list[threading.Thread]) -> None:
            for thread in threads:
                while thread.is_alive():
                    thread.join(timeout=0.5)   # short joins keep Ctrl-C responsive

        threads: list[threading.Thread] = []   # all started threads, for the interrupt to wait on
        warmers: list[threading.Thread] = []
        first_gpu_busy: threading.Thread | None = None
        try:
            if self.core_plan is not None:   # all this process starts keeps off the lanes' cores (a judge moves there)
                spawn.move_process(os.getpid(), self.core_plan.rest)
            if not overlap:
                builder.start()
                wait([builder])            # CPU runs: compiling beside a timed call would disturb it
                for entry in runnable:     # then in the order given, not the order the builds finished in
                    if entry.id in builds:
                        work.put(entry)
            eager = [e for e in todo if e.id == EAGER]
            rest = [e for e in todo if e.kind == "baseline" and e.id != EAGER]
            warmers = [threading.Thread(target=self.warm_compile, args=(entry, gpus[0]), daemon=True)
                       for entry in rest if entry.baseline == "compile" and self.env.device == "cuda"]
            for entry in (e for e in rest if e.baseline != "compile"):
                work.put(entry)
            # The eager reference also checks the problem itself. With one GPU it runs before any candidate;
            # with more it runs on the first GPU beside the others, whose records are held back until it passes.
            first_gpu_busy = threading.Thread(target=lambda: [evaluate(e, gpus[0]) for e in eager], daemon=True)
            self.held = [] if eager and len(gpus) > 1 else None
            first_gpu_busy.start()
            threads = [] if len(gpus) == 1 else [threading.Thread(target=drain, args=(gpu,), daemon=True)
                                                 for gpu in gpus[1:]]
            for thread in threads:
                thread.start()
            wait([first_gpu_busy])
            if self.near_constant:
                with self.lock:            # a refused problem writes none of the held records
                    self.held, self.closed = [], True
                raise ProblemError(f"{self.problem.path}: reference: expected an output that depends on the inputs "
                                   "(near-constant across seeds, so a constant output could pass)")
            self.release_held()
            if overlap:
                builder.start()            # after the eager reference, whose timing the compiles would slow
            for thread in warmers:
                thread.start()             # torch.compile's warm-up is host work; its timed worker comes last
            threads.append(threading.Thread(target=drain, args=(gpus[0],), daemon=True))
            threads[-1].start()
            wait([builder, *warmers])
            for entry in (e for e in rest if e.baseline == "compile"):
                work.put(entry)            # torch.compile can take minutes: it never delays a candidate
            all_queued.set()
            wait(threads)
        except BaseException:
            stop.set()                     # no new builds or evaluations
            self.release_held()            # an interrupted run keeps what finished (a refused problem held none)
            with self.lock:
                self.closed = True
            self.backend.stop()            # running workers die now, and are not recorded
            # Give the threads a moment to see the stop and their killed workers: a thread still running at
            # exit is torn down mid-way by the interpreter, traceback and all.
            deadline = time.monotonic() + 5.0
            for thread in [builder, *warmers, *threads, *([first_gpu_busy] if first_gpu_busy else [])]:
                if thread.is_alive():
                    thread.join(timeout=max(0.0, deadline - time.monotonic()))
            raise
        finally:
            if self.core_plan is not None:
                spawn.move_process(os.getpid(), self.core_plan.cores)

    def plan_cores(self, gpus: list[int | None], overlap: bool) -> spawn.CorePlan | None:
        """Cores of its own for each GPU's timing judge and sandbox (spawn.plan_cores), on a CUDA run of this
        machine that compiles while it evaluates: `evaluate.lane_cores`."""
        if self.config.get("evaluate.lane_cores") != "auto" or not overlap or self.env.device != "cuda" \
                or not isinstance(self.backend, LocalBackend) or not hasattr(os, "sched_getaffinity"):
            return None
        return spawn.plan_cores(sorted(os.sched_getaffinity(0)), [gpu for gpu in gpus if gpu is not None])

    def finish(self, order: list[str]) -> list[Row]:
        current = [r for key, r in self.done.items() if r.candidate in order and key[2:5] == (
            self.problem.sha256, self.env.key, self.config_sha) and r.shape in self.options.shapes]
        rows = build_rows(current, order, self.options.shapes, self.previous_times())
        load = self.machine_load
        meta = {"timing_method": self.config.get("timing.method") if self.env.device == "cuda" else "cpu",
                "machine_load_at_start": dataclasses.asdict(load) if load else None, "timing": self.config.timing,
                "problem_sha256": self.problem.sha256, "config": str(self.config.path), "run_id": self.run_id}
        write_leaderboard(self.output_dir, self.problem.name, self.env.to_json(), rows, self.options.shapes, meta)
        write_report_safely(self.output_dir, self.problem, self.env.to_json(), rows, self.options.shapes, meta)
        return rows

    def previous_times(self) -> dict[tuple[str, str], float]:
        """For what this run timed: the time of the same source at the same shape in the latest earlier run on
        this machine's environment, from the records that verify."""
        timed_now = {(r.candidate_sha256, r.shape) for r in self.done.values() if r.run_id == self.run_id}
        previous: dict[tuple[str, str], float] = {}
        for record in read_records(self.records_path, self.record_key):
            key = (record.candidate_sha256, record.shape)
            if (record.run_id != self.run_id and record.status == "ok" and record.time_us and key in timed_now
                    and record.env_key == self.env.key):
                previous[key] = record.time_us   # the file is in time order: the latest wins
        return previous


def append_once(path: Path, entry: dict) -> None:
    """Append `entry` (which has a "key") to a JSON-lines file unless an entry with that key is there."""
    known = path.read_text() if path.exists() else ""
    if f'"key": "{entry["key"]}"' not in known:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")


def read_keyed(path: Path, key: str) -> dict:
    if path.exists():
        for line in path.read_text().splitlines():
            data = json.loads(line)
            if data.get("key") == key:
                return data
    return {}


def run(options: RunOptions, reporter: Reporter | None = None, backend: Backend | None = None) -> RunSummary:
    """`backend`: one the caller opened and will close (tools/ray_scale.py reads its task timings); by default
    the one `options` names, opened and closed here."""
    reporter = reporter or SilentReporter()
    started = time.perf_counter()
    if backend is None:
        backend = open_backend(options.backend, options.ray_address)
        try:
            return run_stages(options, reporter, backend, started)
        finally:
            backend.close()
    return run_stages(options, reporter, backend, started)


def run_stages(options: RunOptions, reporter: Reporter, backend: Backend, started: float) -> RunSummary:
    state = Run(options, reporter, backend)
    state.load_previous()
    state.save_env()
    state.reused = len([k for k in state.done if k[2:5] == (state.problem.sha256, state.env.key, state.config_sha)
                        and k[5] in options.shapes])
    build_settings = options.config.get("build")
    state.arch = build_stage.arch_list(build_settings["cuda_arch_list"], state.env, build_settings["fallback_arch"])
    baselines = state.baselines()
    candidates = state.check(options.candidates)
    timing_ahead = any(state.pending_shapes(e) for e in baselines + candidates)
    if state.env.device == "cpu" and not options.build_only and timing_ahead:   # a warm run times nothing
        state.machine_load = machine_load()
        if state.machine_load is not None and state.machine_load.busy:
            reporter.note(f"[yellow]the machine is busy[/]: {state.machine_load.busy_cores:.1f} of its "
                          f"{state.machine_load.cores} cores were in use before this run started. CPU times will read "
                          "slower and spread wider than on a quiet machine; re-measure there with --fresh.")
    if options.build_only:
        state.build(candidates)
        return RunSummary([], options.shapes, state.output_dir, state.reused, state.evaluated,
                          time.perf_counter() - started)
    overlap = options.config.get("build.overlap_evaluation")
    state.build_and_evaluate(baselines, candidates, overlap == "always" or (overlap == "auto" and state.env.device == "cuda"))
    order = [e.id for e in baselines] + [c.id for c in options.candidates]
    rows = state.finish(order)
    return RunSummary(rows, options.shapes, state.output_dir, state.reused, state.evaluated,
                      time.perf_counter() - started)


def report(problem: Problem, results_dir: Path) -> RunSummary:
    """Rebuild the leaderboards from records.jsonl alone: the latest run's problem, environment and config."""
    started = time.perf_counter()
    output_dir = results_dir / problem.name
    records = read_records(output_dir / "records.jsonl")
    if not records:
        raise ProblemError(f"{output_dir / 'records.jsonl'}: records: expected at least one record (run first)")
    latest = records[-1]
    wanted = (latest.problem_sha256, latest.env_key, latest.config_sha256)
    current: dict[tuple, Record] = {}
    for record in records:
        if (record.problem_sha256, record.env_key, record.config_sha256) == wanted:
            current[(record.candidate, record.shape)] = record
    shapes = [s for s in problem.shapes if any(k[1] == s for k in current)]
    names = list(dict.fromkeys(r.candidate for r in current.values()))
    order = [n for n, _ in BASELINES if n in names] + sorted(n for n in names if not n.startswith("ref:"))
    rows = build_rows(list(current.values()), order, shapes)
    env = read_keyed(output_dir / "envs.jsonl", latest.env_key) or {"key": latest.env_key}
    key_path = signing.DEFAULT_KEY_PATH
    verified = len(read_records(output_dir / "records.jsonl", signing.record_key())) if key_path.exists() else 0
    meta = {"problem_sha256": latest.problem_sha256, "run_id": latest.run_id, "regenerated": True,
            # a view of whatever the folder holds: records copied from another machine carry its key's signatures
            "signatures": f"{verified} of {len(records)} records verify with this machine's key"}
    config = read_keyed(output_dir / "configs.jsonl", latest.config_sha256)
    if config:
        meta.update(timing_method=config["config"]["timing"]["method"], timing=config["config"]["timing"],
                    config=config["path"])
    write_leaderboard(output_dir, problem.name, env, rows, shapes, meta)
    write_report_safely(output_dir, problem, env, rows, shapes, meta)
    return RunSummary(rows, shapes, output_dir, len(current), 0, time.perf_counter() - started)


def write_report_safely(output_dir: Path, problem: Problem, env: dict, rows: list[Row], shapes: list[str],
                        meta: dict) -> None:
    """report.html is a view: the leaderboard files are already written, and a failed chart must not fail the run."""
    try:
        write_report(output_dir, problem, env, rows, shapes, meta)
    except Exception as exc:   # noqa: BLE001 - any plotting failure
        log.warning("%s: report.html not written (%s)", output_dir, exc)
