"""Ray backend: a run's builds and evaluations as Ray tasks on a cluster's nodes. A build job or an evaluation job
in, the same `BuildResult` or `WorkerOutcome` the local backend gives out.

- Sources travel by content: a candidate's bytes and SHA-256 (and the problem's YAML and reference), written by
  the task into a node-local folder (`node_dir()`) and checked against their hash there, never a driver's path.
- Builds: a build task (`build_on_node`, one CPU) runs build.build_one, confined as on one machine, in its
  node's local cache, and returns the build folder packed (a tar) through Ray's object store. The driver unpacks
  it into its own build cache, the cache of record (same folders, same keys: build.build_key), and hands that
  one object to every evaluation of the candidate; the evaluation task unpacks it into its node's local cache
  unless an identical entry is there. A build already in the driver's cache is never sent out: it is packed
  from there.
- Evaluations: one task each (`evaluate_on_node`, one GPU on CUDA runs, one CPU on CPU runs). Inside it the
  local backend's judge path runs unchanged (backend.LocalBackend.judge): a fresh judge process, a fresh
  confined sandbox, the time limit and the kill at it, so a fault or a cheat's leftovers never meet the next
  candidate. The Ray worker itself only dispatches, like the local runner, and serves many evaluations. The
  task returns the judge's ShapeOutcome lines and the end of its log. On CPU runs a node times one candidate
  at a time, as the local backend does: a timed CPU call beside another evaluation reads slower and spreads
  wider.
- Records: written by the driver alone (runner.py), as each task returns.
- Failures: a task whose worker process or node dies is retried elsewhere, up to SYSTEM_RETRIES times; a
  candidate's failure is data (its lines), never an exception, so it is never retried. A task lost every time
  comes back as `crashed` lines saying so, so no (candidate, shape) is left without its record.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import io
import logging
import os
import platform
import re
import shutil
import socket
import tarfile
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import ray
from ray.exceptions import RayError, RayTaskError, TaskCancelledError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from harness import build as build_stage
from harness.backend import BackendUnavailable, LocalBackend
from harness.discovery import Candidate
from harness.env import REPO_ROOT, EnvInfo
from harness.problem import load_problem
from harness.protocol import EvaluateJob, ShapeOutcome
from harness.records import locked
from harness.spawn import WorkerOutcome
from harness.worker import read_tail

log = logging.getLogger(__name__)

NODE_DIR_VARIABLE = "HARNESS_RAY_NODE_DIR"   # where a node keeps sources, builds and logs (default: TMPDIR/harness-ray)
SYSTEM_RETRIES = 3      # a task whose worker or node died runs again, elsewhere if the node is gone
BUILD_CPUS = 1          # a compile's share of a node; ninja may use MAX_JOBS threads beside it
MAX_LANES = 256         # evaluations the driver keeps in flight, at most: one thread each
WORKER_CALLS = 100      # evaluations one Ray worker process serves before Ray replaces it (see evaluate_on_node)
LOG_BYTES = 256 << 10   # the end of a judge's log that comes back to the driver
MTIME_NS_HEADER = "HARNESS.mtime_ns"   # a packed file's modification time in ns (a pax header of its own)
# what a cluster's nodes get of this checkout (runtime_env working_dir): the harness, problems, candidates
CODE_EXCLUDES = [".venv", ".cache", ".git", "results", "**/__pycache__", ".pytest_cache", "*.egg-info"]


def node_dir() -> Path:
    return Path(os.environ.get(NODE_DIR_VARIABLE) or Path(tempfile.gettempdir()) / "harness-ray")


# --- what travels ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SourceFile:
    """A file by content: its name (relative, where it goes), bytes and SHA-256."""
    name: str
    data: bytes
    sha256: str

    @classmethod
    def read(cls, path: Path | str, name: str = "") -> "SourceFile":
        data = Path(path).read_bytes()
        return cls(name or Path(path).name, data, hashlib.sha256(data).hexdigest())

    def write_under(self, folder: Path) -> Path:
        """Write it under `folder` (unless an identical file is there) and return its path."""
        relative = Path(self.name)
        if relative.is_absolute() or ".." in relative.parts:
            raise ValueError(f"{self.name}: expected a relative name inside its folder")
        if hashlib.sha256(self.data).hexdigest() != self.sha256:
            raise ValueError(f"{self.name}: content does not match its SHA-256")
        path = folder / relative
        if path.exists() and hashlib.sha256(path.read_bytes()).hexdigest() == self.sha256:
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
        temporary.write_bytes(self.data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)   # two tasks on one node write the same bytes: either rename wins
        return path


@dataclass(frozen=True)
class NodeVersions:
    """What a node must have as the driver has it: the records carry the driver's environment."""
    torch: str
    python: str

    @classmethod
    def here(cls) -> "NodeVersions":
        """This machine's, read without importing torch (a fresh worker would pay seconds for it): torch's
        version.py holds torch.__version__ as the environment probe records it."""
        spec = importlib.util.find_spec("torch")
        text = Path(spec.origin).with_name("version.py").read_text() if spec and spec.origin else ""
        found = re.search(r"^__version__\s*(?::\s*str)?\s*=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
        return cls(found.group(1) if found else "unknown", platform.python_version())

    def check_here(self) -> None:
        """Refuse to work on a node whose torch or Python differs from the driver's."""
        here = NodeVersions.here()
        if here != self:
            raise NodeMismatch(f"node {this_node()} has torch {here.torch}, Python {here.python}; the driver has "
                               f"torch {self.torch}, Python {self.python}")


class NodeMismatch(RuntimeError):
    pass


@dataclass(frozen=True)
class BuildTask:
    candidate_id: str
    source: SourceFile
    uses_cuda: bool
    env: EnvInfo
    arch: str
    time_limit_s: float
    versions: NodeVersions


@dataclass(frozen=True)
class EvaluationTask:
    job: EvaluateJob                  # as the runner made it, with the driver's paths: the node rewrites them
    env_overrides: dict
    limit_s: float
    problem: tuple[SourceFile, ...]   # the problem file first, then what it refers to (the reference)
    candidate: SourceFile | None      # None for a baseline
    build_name: str                   # the build cache folder's name (<stem>-<key>); "" for a baseline
    versions: NodeVersions


@dataclass(frozen=True)
class NodeOutcome:
    """What an evaluation task returns: the judge's outcome, where and when it ran."""
    lines: tuple[dict, ...]
    returncode: int | None
    timed_out: bool
    judge_s: float         # the judge process, start to end
    log_text: str          # the end of the judge's log on the node
    node: str              # host name and Ray node id
    started_at: float      # the node's clock (time.time()), task start and end
    finished_at: float


@dataclass(frozen=True)
class TaskTiming:
    """One task as the driver saw it, for tools/ray_scale.py: `round_trip_s` less `work_s` is what Ray and the
    backend cost (queueing, dispatch, moving sources and builds); the gap between one evaluation's
    end and the next one's start on the same node is the time its GPU (or CPU lane) sat idle between them."""
    kind: str              # build or evaluate
    item: str              # candidate or baseline id
    node: str
    round_trip_s: float    # submitted to returned, on the driver's clock
    task_s: float          # the task's own start to end, on the node's clock
    work_s: float          # the judge (or compile) inside it
    started_at: float = 0.0    # the task's start and end on the node's clock (evaluations)
    finished_at: float = 0.0


# --- build folders through the object store -------------------------------------------------------------------

def pack_build(directory: Path) -> bytes:
    """A build cache entry as a gzipped tar: the extension, the marker and the build log (no locks, no logs of
    earlier evaluations), owned by nobody in particular (the unpacking side's user owns what it writes)."""
    def anonymous(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    def entry(path: Path) -> tarfile.TarInfo:
        info = anonymous(archive.gettarinfo(path, arcname=path.relative_to(directory).as_posix()))
        info.pax_headers = {MTIME_NS_HEADER: str(path.stat().st_mtime_ns)}
        return info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path in sorted(directory.rglob("*")):
            if path.is_file() and not path.is_symlink() and not path.name.endswith(".lock") \
                    and not path.name.startswith("evaluate-"):
                with open(path, "rb") as handle:
                    archive.addfile(entry(path), handle)
    return buffer.getvalue()


def restore_mtimes(archive: tarfile.TarFile, members: list[tarfile.TarInfo], directory: Path) -> None:
    """Each file's modification time to the nanosecond, as packed. tarfile keeps a float of seconds, which moves it
    by up to a few hundred ns; ninja then finds an output newer than its recorded dependencies and rebuilds (on
    an H200 a cached CUDA build was compiled again inside the sandbox: 59 s per evaluation)."""
    for member in members:
        recorded = member.pax_headers.get(MTIME_NS_HEADER)
        if recorded is not None and member.isfile():
            os.utime(directory / member.name, ns=(int(recorded), int(recorded)))


def bundle_libraries(bundle: bytes) -> dict | None:
    """The library digests a packed build's marker lists (None: no marker, the build failed)."""
    import json

    with tarfile.open(fileobj=io.BytesIO(bundle), mode="r:gz") as archive:
        try:
            member = archive.extractfile("built.json")
        except KeyError:
            return None
        return json.loads(member.read()).get("libraries") if member is not None else None


def unpack_build(bundle: bytes, directory: Path) -> None:
    """Make `directory` hold the packed build, unless a trusted entry with the same libraries is there already."""
    directory.mkdir(parents=True, exist_ok=True)
    with locked(directory / "build"):   # the lock build.compile_one takes: never beside a compile of it
        present = build_stage.trusted_entry(directory)
        if present is not None and present.get("libraries") == bundle_libraries(bundle):
            return
        (directory / "built.json").unlink(missing_ok=True)   # no half-unpacked entry is ever trusted
        shutil.rmtree(directory / "ext", ignore_errors=True)
        with tarfile.open(fileobj=io.BytesIO(bundle), mode="r:gz") as archive:
            members = [m for m in archive.getmembers() if m.name != "built.json"]
            archive.extractall(directory, members=members, filter="data")
            restore_mtimes(archive, members, directory)
            if "built.json" in archive.getnames():   # last: the entry is trusted only once all of it is there
                archive.extractall(directory, members=[archive.getmember("built.json")], filter="data")


def problem_files(problem_path: str) -> tuple[SourceFile, ...]:
    """The problem file first, then its reference and every file beside it named `<stem>.*` (a KernelBench file's
    `<stem>.tolerance.yaml`), each named relative to the problem's folder, as the problem refers to it."""
    problem = load_problem(problem_path)
    main = problem.path.resolve()
    base = main.parent
    related = {problem.reference_path.resolve(), *(p.resolve() for p in base.glob(f"{main.stem}.*") if p.is_file())}
    files = [SourceFile.read(main)]
    for path in sorted(related - {main}):
        try:
            name = path.relative_to(base).as_posix()
        except ValueError:
            name = path.name
        files.append(SourceFile.read(path, name))
    return tuple(files)


# --- the tasks, run on the nodes ------------------------------------------------------------------------------

def this_node() -> str:
    """The host name and, inside Ray, the node's id (several simulated nodes share one host)."""
    if not ray.is_initialized():   # asking for the runtime context outside Ray would join whatever cluster runs here
        return socket.gethostname()
    return f"{socket.gethostname()}/{ray.get_runtime_context().get_node_id()[:8]}"


@ray.remote(num_returns=2)
def build_on_node(task: BuildTask) -> tuple[build_stage.BuildResult, bytes]:
    """Compile one candidate in this node's cache (confined, under its time limit, as locally); the result and
    the packed build folder."""
    task.versions.check_here()
    root = node_dir()
    path = task.source.write_under(root / "sources" / task.source.sha256)
    candidate = Candidate(task.candidate_id, path, task.source.sha256)
    result = build_stage.build_one(candidate, task.uses_cuda, task.env, task.arch, root / "builds", task.time_limit_s)
    return result, pack_build(result.build_dir)


@ray.remote(max_calls=WORKER_CALLS)
def evaluate_on_node(task: EvaluationTask, bundle: bytes | None) -> NodeOutcome:
    """Evaluate one entry through the local backend's judge path, with the task's files written on this node.
    The Ray worker running this never imports torch or the candidate: it starts a fresh judge process, which
    starts a fresh confined sandbox, and both are gone (with every process of the sandbox's user) when it
    returns, as a local runner's thread does for each evaluation. So a worker serves many evaluations; a fresh
    one each (max_calls=1) isolated nothing more and left an H200 idle 2.6 s between two candidates."""
    return evaluate_here(task, bundle)


def evaluate_here(task: EvaluationTask, bundle: bytes | None) -> NodeOutcome:
    started = time.time()
    task.versions.check_here()
    root = node_dir()
    job = task.job
    digest = hashlib.sha256("".join(f.sha256 for f in task.problem).encode()).hexdigest()[:16]
    problem_path = [f.write_under(root / "problems" / digest) for f in task.problem][0]
    candidate_path = ""
    if task.candidate is not None:
        candidate_path = str(task.candidate.write_under(root / "sources" / task.candidate.sha256))
    sandbox_env, env_overrides = dict(job.sandbox_env), dict(task.env_overrides)
    extension_dir = ""
    logs = root / "logs" / (task.build_name or "baselines")
    if bundle is not None:
        build_dir = root / "builds" / task.build_name
        unpack_build(bundle, build_dir)
        extension_dir = str(build_dir / "ext")
        sandbox_env["TORCH_EXTENSIONS_DIR"] = extension_dir   # what build.worker_environment says locally
    if "TORCHINDUCTOR_CACHE_DIR" in env_overrides:            # ref:compile's cache: this node's own
        env_overrides["TORCHINDUCTOR_CACHE_DIR"] = sandbox_env["TORCHINDUCTOR_CACHE_DIR"] = str(root / "inductor")
    if job.device == "cuda":   # the GPU Ray gave this task, for the sandbox too (its environment is minimal)
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0")
        env_overrides["CUDA_VISIBLE_DEVICES"] = sandbox_env["CUDA_VISIBLE_DEVICES"] = visible
    log_path = logs / Path(job.log_path).name
    job = dataclasses.replace(job, problem_path=str(problem_path), candidate_path=candidate_path,
                              extension_dir=extension_dir, sandbox_env=sandbox_env, log_path=str(log_path),
                              gpu=0 if job.device == "cuda" else job.gpu)
    offset = log_path.stat().st_size if log_path.exists() else 0
    outcome = LocalBackend().judge(job, env_overrides, task.limit_s, log_path)
    return NodeOutcome(tuple(outcome.lines), outcome.returncode, outcome.timed_out, outcome.seconds,
                       read_tail(log_path, offset, LOG_BYTES), this_node(), started, time.time())


# --- the driver's side --------------------------------------------------------------------------------------------

def lost_reason(what: str, exc: BaseException) -> str:
    """Why a task came back without a result, in one line: the harness failing on the node (never retried), or
    the task lost with its worker or node every time it ran."""
    if isinstance(exc, RayTaskError):
        cause = exc.cause if isinstance(getattr(exc, "cause", None), BaseException) else exc
        first = next((line.strip() for line in str(cause).splitlines() if line.strip()), "")
        return f"{what} failed on its Ray node: {type(cause).__name__}: {first[:240]}"
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    return (f"{what} lost on the Ray cluster after {SYSTEM_RETRIES} retries ({type(exc).__name__}"
            + (f": {first[:200]}" if first else "") + ")")


def cpu_nodes() -> list[str]:
    """The ids of the cluster's live nodes that offer a CPU to tasks."""
    return [node["NodeID"] for node in ray.nodes() if node.get("Alive") and node.get("Resources", {}).get("CPU", 0) >= 1]


def refuse_unreachable(address: str) -> None:
    """ray.init waits minutes for a cluster that is not there (also for "auto" after the last one stopped):
    a TCP connect to its address says so at once."""
    if address.startswith("ray://"):   # Ray Client: its own handshake
        return
    try:   # resolves "auto" as ray.init would; a private function, hence the fallback
        from ray._private.services import canonicalize_bootstrap_address
        resolved = canonicalize_bootstrap_address(address)
    except Exception:   # noqa: BLE001 - moved or changed in another Ray release
        resolved = None if address == "auto" else address
    if resolved is None:
        raise BackendUnavailable(f"--ray-address {address}: no running Ray cluster found on this machine; "
                                 "start one with `ray start --head`")
    host, _, port = resolved.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except (OSError, ValueError):
        raise BackendUnavailable(f"--ray-address {address}: no Ray cluster answers at {resolved}; start one with "
                                 "`ray start --head`, or give its HOST:PORT") from None


class RayBackend:
    """Builds and evaluations as Ray tasks: on the cluster at `address` ("auto", or HOST:PORT), or on a Ray
    instance started here when there is none; one already connected in this process (tools/ray_scale.py, the
    tests) is used as it is, and left running."""

    def __init__(self, address: str | None = None):
        self.owns_ray = not ray.is_initialized()
        if self.owns_ray:
            self.connect(address)
        self.bundles: dict[str, ray.ObjectRef] = {}   # build folder name -> its packed build in the object store
        self.in_flight: set[ray.ObjectRef] = set()
        self.lock = threading.Lock()
        self.timings: list[TaskTiming] = []
        self.problems: dict[str, tuple[SourceFile, ...]] = {}
        self.versions = NodeVersions.here()   # the driver's, which its environment probe recorded
        self.busy_nodes: set[str] = set()       # CPU runs: the nodes timing a candidate now

    @staticmethod
    def connect(address: str | None) -> None:
        options = dict(include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
        if address:   # a cluster's nodes get this checkout's code; the driver's environment key covers it
            refuse_unreachable(address)
            runtime_env = {"working_dir": str(REPO_ROOT), "excludes": CODE_EXCLUDES}
        else:         # a local instance: its workers import the harness from this checkout
            paths = [str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]
            runtime_env = {"env_vars": {"PYTHONPATH": os.pathsep.join(filter(None, paths))}}
        try:
            # "local": a new instance even where one runs (or ran: ray.init() would wait on a stale address)
            ray.init(address=address or "local", runtime_env=runtime_env, **options)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            first = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
            where = f"--ray-address {address}" if address else "--backend ray"
            raise BackendUnavailable(f"{where}: could not start or join a Ray cluster ({first.strip()[:200]})") from None

    def lanes(self, env: EnvInfo, gpus: list[int]) -> list[int | None]:
        """As many evaluations in flight as the cluster has GPUs (CUDA runs: Ray picks the GPU and sets
        CUDA_VISIBLE_DEVICES in the task, so no lane names one) or nodes (CPU runs: one each, see `take_node`)."""
        if env.device == "cuda":
            count = int(ray.cluster_resources().get("GPU", 0))
            if count == 0:
                raise BackendUnavailable("--backend ray: a CUDA run, but the Ray cluster has no GPU")
        else:
            count = len(cpu_nodes())
        return [None] * max(1, min(count, MAX_LANES))

    def take_node(self) -> str | None:
        """A live node no CPU evaluation of this run is on, marked busy; None when every one is (a node died
        and the lanes outnumber the nodes left): Ray then places the task."""
        with self.lock:
            free = [node for node in cpu_nodes() if node not in self.busy_nodes]
            if not free:
                return None
            self.busy_nodes.add(free[0])
            return free[0]

    def release_node(self, node: str | None) -> None:
        with self.lock:
            self.busy_nodes.discard(node)

    # --- builds ----------------------------------------------------------------------------------------------
    def build_all(self, jobs: list[tuple[Candidate, bool]], env: EnvInfo, arch: str, cache_dir: Path,
                  time_limit_s: float, workers: int, on_done: Callable[[build_stage.BuildResult], None],
                  cancel: threading.Event | None = None) -> dict[str, build_stage.BuildResult]:
        """Every build as a task (`workers` is the cluster's business here), unless the driver's cache has it."""
        cache_dir = cache_dir if cache_dir.is_absolute() else REPO_ROOT / cache_dir
        results: dict[str, build_stage.BuildResult] = {}
        pending: dict[ray.ObjectRef, tuple[Candidate, Path, ray.ObjectRef, float]] = {}

        def finish(result: build_stage.BuildResult) -> None:
            results[result.candidate] = result
            on_done(result)

        for candidate, uses_cuda in jobs:
            directory = build_stage.build_dir_for(cache_dir, candidate, env, arch)
            if uses_cuda and (reason := build_stage.can_compile_cuda(env)):
                finish(build_stage.BuildResult(candidate.id, "skipped", reason, None, False, directory,
                                               directory / "build.log"))
                continue
            cached = self.cached_build(candidate, directory)
            if cached is not None:
                finish(build_stage.screen_libraries(cached))   # rules change: a cached build is screened again
                continue
            task = BuildTask(candidate.id, SourceFile.read(candidate.path), uses_cuda, env, arch, time_limit_s,
                             self.versions)
            result_ref, bundle_ref = build_on_node.options(num_cpus=BUILD_CPUS, max_retries=SYSTEM_RETRIES).remote(task)
            pending[result_ref] = (candidate, directory, bundle_ref, time.time())
            self.track(result_ref, bundle_ref)
        try:
            while pending:
                if cancel is not None and cancel.is_set():
                    for ref, (candidate, directory, bundle_ref, _) in pending.items():
                        ray.cancel(ref, force=True)
                        self.untrack(ref, bundle_ref)
                        finish(build_stage.BuildResult(candidate.id, "skipped", "run stopped before this build", None,
                                                       False, directory, directory / "build.log"))
                    pending.clear()
                    break
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
                for ref in ready:
                    candidate, directory, bundle_ref, submitted = pending.pop(ref)
                    finish(self.collect_build(ref, candidate, directory, bundle_ref, submitted))
        finally:
            self.untrack(*[ref for ref in pending], *[entry[2] for entry in pending.values()])
        return results

    def cached_build(self, candidate: Candidate, directory: Path) -> build_stage.BuildResult | None:
        """The driver's cache entry when it is trusted, with its packed copy put in the object store."""
        if not directory.exists():
            return None
        with locked(directory / "build"):
            entry = build_stage.trusted_entry(directory)
            if entry is None:
                return None
            self.bundles[directory.name] = ray.put(pack_build(directory))
        return build_stage.BuildResult(candidate.id, "ok", "", entry.get("compile_s"), True, directory,
                                       directory / "build.log")

    def collect_build(self, ref: ray.ObjectRef, candidate: Candidate, directory: Path, bundle_ref: ray.ObjectRef,
                      submitted: float) -> build_stage.BuildResult:
        try:
            node_result, bundle = ray.get([ref, bundle_ref])
        except TaskCancelledError:
            raise
        except RayError as exc:   # the worker or node died every time, or the harness failed on the node
            return build_stage.BuildResult(candidate.id, "crashed", lost_reason("build", exc), None, False, directory,
                                           directory / "build.log")
        finally:
            self.untrack(ref, bundle_ref)
        unpack_build(bundle, directory)   # into the driver's cache, the cache of record; the log comes with it
        if build_stage.trusted_entry(directory) is not None:   # it compiled (a `rejected` one may still be judged)
            self.bundles[directory.name] = bundle_ref
        with self.lock:   # a build's node and own span are not tracked: the scale figures are about evaluations
            round_trip = time.time() - submitted
            self.timings.append(TaskTiming("build", candidate.id, "", round_trip, round_trip, node_result.compile_s or 0.0))
        return dataclasses.replace(node_result, build_dir=directory, log_path=directory / "build.log")

    # --- evaluations ------------------------------------------------------------------------------------------
    def judge(self, job: EvaluateJob, env_overrides: dict, limit_s: float, log_path: Path,
              on_line: Callable[[dict], None] | None = None, gate=None) -> WorkerOutcome:
        if gate is not None:   # the runner holds no Ray judge early (holds_judges is unset): never blocks
            gate.wait()
        build_name = Path(job.extension_dir).parent.name if job.extension_dir else ""
        if job.problem_path not in self.problems:
            self.problems[job.problem_path] = problem_files(job.problem_path)
        task = EvaluationTask(job, dict(env_overrides), limit_s, self.problems[job.problem_path],
                              SourceFile.read(job.candidate_path) if job.candidate_path else None, build_name,
                              self.versions)
        options = dict(num_gpus=1, num_cpus=1) if job.device == "cuda" else dict(num_gpus=0, num_cpus=1)
        placed_on = self.take_node() if job.device == "cpu" else None
        if placed_on is not None:   # soft: a retry after this node died runs elsewhere
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(placed_on, soft=True)
        submitted = time.time()
        ref = evaluate_on_node.options(max_retries=SYSTEM_RETRIES, retry_exceptions=False, **options).remote(
            task, self.bundles.get(build_name))
        self.track(ref)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            node: NodeOutcome = ray.get(ref)
        except TaskCancelledError:
            raise   # stop(): the run was interrupted, nothing is recorded
        except RayError as exc:
            reason = lost_reason("evaluation", exc)
            with open(log_path, "a", encoding="utf-8") as handle:
                handle.write(f"{reason}\n{exc}\n")
            lines = [ShapeOutcome(shape=shape, status="crashed", stage="evaluate", reason=reason).to_json()
                     for shape in job.shapes]
            self.deliver(lines, on_line)
            return WorkerOutcome(lines, None, False, time.time() - submitted, log_path)
        finally:
            self.untrack(ref)
            self.release_node(placed_on)
        with open(log_path, "a", encoding="utf-8") as handle:   # the judge's log, where the local backend keeps it
            handle.write(node.log_text)
        self.deliver(node.lines, on_line)
        with self.lock:
            self.timings.append(TaskTiming("evaluate", job.candidate_id or job.baseline, node.node,
                                           time.time() - submitted, node.finished_at - node.started_at, node.judge_s,
                                           node.started_at, node.finished_at))
        return WorkerOutcome(list(node.lines), node.returncode, node.timed_out, node.judge_s, log_path)

    @staticmethod
    def deliver(lines, on_line: Callable[[dict], None] | None) -> None:
        for line in lines if on_line is not None else ():
            on_line(line)

    # --- in flight --------------------------------------------------------------------------------------------
    def track(self, *refs: ray.ObjectRef) -> None:
        with self.lock:
            self.in_flight.update(refs)

    def untrack(self, *refs: ray.ObjectRef) -> None:
        with self.lock:
            self.in_flight.difference_update(refs)

    def stop(self) -> None:
        """Cancel every task in flight; force kills its worker process, and the judge and sandbox die with it."""
        with self.lock:
            refs = list(self.in_flight)
        for ref in refs:
            try:
                ray.cancel(ref, force=True)
            except Exception:   # noqa: BLE001 - already finished, or a second return of a task
                pass

    def close(self) -> None:
        if self.owns_ray and ray.is_initialized():
            ray.shutdown()
