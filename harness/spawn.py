"""Worker processes: a job in, the worker's JSON lines and how it ended out.

Each worker runs in its own process group so that a timeout kills it and everything it started
(the compiler included). Results travel through a file of JSON lines, never parsed from stdout.
A worker that runs candidate code itself (a build imports the candidate, which compiles) runs confined:
a user of its own, a minimal environment, a private temporary folder (confine.py); it may write only
its results file and the folders it is given, and every process of its user is killed when it ends.
Evaluations run in the judge (judge.py), trusted, which confines the candidate's sandbox itself.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterator
from pathlib import Path

from harness import confine
from harness.env import REPO_ROOT


@dataclass(frozen=True)
class WorkerOutcome:
    lines: list[dict]
    returncode: int | None
    timed_out: bool
    seconds: float
    log_path: Path


# Where a confined process sees its candidate's extension folder: one fixed path, mounted in a mount namespace
# of its own over the real folder (the build's, or a private copy for an evaluation), so torch's loader finds
# the build where it was made and never rebuilds, and no sandbox needs a way into the real cache's folders.
EXTENSION_MOUNT = Path("/tmp/harness-ext")
# The GPU's device nodes (NVIDIA's driver: nvidia0.., nvidiactl, nvidia-uvm, nvidia-caps/ ...), hidden from a build
GPU_DEVICES = "/dev/nvidia*"
EMPTY_FOLDER = Path("/tmp/harness-empty")


def mounts_possible() -> bool:
    return confine.can_drop_privileges() and sys.platform.startswith("linux")


def extension_mount() -> Path:
    """The fixed mount point, made once (root-owned, 0755); an impostor there is refused."""
    return _root_folder(EXTENSION_MOUNT)


SLOT_LOCKS = Path("/tmp/harness-slots")


def _root_folder(path: Path) -> Path:
    """A folder of ours at a fixed path (made 0755 if missing); a link or another owner's folder is refused."""
    try:
        path.mkdir(mode=0o755)
    except FileExistsError:
        pass
    info = path.lstat()
    if not path.is_dir() or path.is_symlink() or info.st_uid != os.geteuid():
        raise PermissionError(f"{path}: expected a folder owned by uid {os.geteuid()}, not a link")
    return path


@contextlib.contextmanager
def sandbox_slot(first: int, count: int) -> Iterator[int]:
    """A sandbox user no other harness process on this machine holds (one flock per slot): every process of
    a slot's user is killed before and after each use, so two runs must never share one."""
    folder = _root_folder(SLOT_LOCKS)
    while True:
        for slot in range(first, first + count):
            handle = open(folder / f"{slot}.lock", "a")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            try:
                yield slot
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
                handle.close()
            return
        time.sleep(0.2)


def _blocked_ancestor(path: Path) -> Path | None:
    """The highest folder above `path` that other users cannot enter (e.g. /root, 0700), or None."""
    for ancestor in reversed(path.parents):
        try:
            if not os.stat(ancestor).st_mode & 0o001:
                return ancestor
        except OSError:
            return None
    return None


def reach_plan(paths: list[Path]) -> list[tuple[str, list[str]]]:
    """Folders a sandbox's user cannot enter, each with what inside it the sandbox needs (the interpreter's
    installation, say, under a 0700 /root): the mount namespace hides each such folder behind an empty
    tmpfs and mounts only those paths back, so the sandbox reaches them and nothing else there."""
    plan: dict[Path, set[str]] = {}
    for path in paths:
        real = Path(os.path.realpath(path))
        blocked = _blocked_ancestor(real)
        if blocked is not None:
            plan.setdefault(blocked, set()).add(str(real))
    return [(str(blocked), sorted(needed)) for blocked, needed in sorted(plan.items())]


def interpreter_paths() -> list[Path]:
    """What a sandboxed Python needs to read: the harness, the interpreter and its packages."""
    import sysconfig
    found = [REPO_ROOT, Path(sys.prefix), Path(sys.base_prefix), Path(os.path.realpath(sys.executable)).parent]
    found += [Path(p) for p in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}]
    return found


def gpu_masks() -> list[tuple[str, str]]:
    """Binds that hide every GPU device node: /dev/null over each node, an empty folder over each folder. A
    build runs the candidate's own code while another candidate is timed on the GPU: with the GPU hidden it
    cannot run work there to slow that one down (an environment variable would be a courtesy: the code can
    change its own environment before CUDA starts). Mounts are locked in its namespace: it cannot undo them."""
    import glob

    masks = []
    for path in sorted(glob.glob(GPU_DEVICES)):
        if os.path.islink(path):
            continue   # a link resolves to a node masked here
        masks.append((str(_root_folder(EMPTY_FOLDER)) if os.path.isdir(path) else os.devnull, path))
    return masks


def with_binds(binds: list[tuple[str, str]], then: Callable[[], None] | None,
               stash: Path | None = None) -> Callable[[], None] | None:
    """A preexec function that, in a mount namespace of the child's own (private propagation: nothing leaks
    back to the host), makes the interpreter reachable (see `reach_plan`; `stash` is a root-owned folder for
    its temporary mount points), bind-mounts each source over its target, then applies the confinement."""
    plan = reach_plan(interpreter_paths()) if stash is not None else []
    if not binds and not plan:
        return then
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    CLONE_NEWNS, MS_REC, MS_PRIVATE, MS_BIND, MS_NOSUID, MS_NODEV = 0x00020000, 0x4000, 1 << 18, 4096, 2, 4
    encoded = [(source.encode(), target.encode()) for source, target in binds]
    steps = []   # (blocked folder, [(needed path, its stash mount point)])
    for index, (blocked, needed) in enumerate(plan):
        points = []
        for inner, path in enumerate(needed):
            point = stash / f"{index}-{inner}"
            point.mkdir(parents=True, exist_ok=True)
            points.append((path, str(point)))
        steps.append((blocked, points))

    def fail(step: str) -> None:
        code = ctypes.get_errno()
        os.write(2, f"sandbox mount failed at {step}: {os.strerror(code)}\n".encode())
        raise OSError(code, step)

    def preexec() -> None:
        if libc.unshare(CLONE_NEWNS) != 0:
            fail("unshare(CLONE_NEWNS)")
        if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
            fail("making mounts private")
        for blocked, points in steps:
            for path, point in points:
                if libc.mount(path.encode(), point.encode(), None, MS_BIND | MS_REC, None) != 0:
                    fail(f"stash {path}")
            if libc.mount(b"tmpfs", blocked.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=755") != 0:
                fail(f"hide {blocked}")
            for path, point in points:
                os.makedirs(path, mode=0o755, exist_ok=True)
                if libc.mount(point.encode(), path.encode(), None, MS_BIND | MS_REC, None) != 0:
                    fail(f"restore {path}")
        for source, target in encoded:
            if libc.mount(source, target, None, MS_BIND, None) != 0:
                fail(f"bind {source!r}")
        if then is not None:
            then()
    return preexec


_LIVE: set[subprocess.Popen] = set()
_LIVE_LOCK = threading.Lock()


def _children() -> dict[int, list[int]]:
    """Parent pid -> child pids, from /proc (empty where /proc is missing)."""
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read().decode(errors="replace")
            parent = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        tree.setdefault(parent, []).append(int(entry))
    return tree


def _descendants(pid: int) -> list[int]:
    tree, found, todo = _children(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kill_tree(process: subprocess.Popen) -> None:
    """Kill the worker, its process group and every descendant: ninja gives each compiler a group of its own."""
    victims = _descendants(process.pid)
    for pid in [process.pid, *victims]:
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError, OSError):
                pass
    process.wait()


def kill_all_workers() -> int:
    """Kill every live worker (Ctrl-C in the runner); returns how many were running."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for process in live:
        if process.poll() is None:
            _kill_tree(process)
    return len(live)


class LineReader:
    """The complete JSON lines a worker has written so far, each returned once."""

    def __init__(self, path: Path):
        self.path, self.offset, self.broken = path, 0, False

    def new_lines(self) -> list[dict]:
        if self.broken:
            return []
        with open(self.path, "rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        complete = data[:data.rfind(b"\n") + 1]
        self.offset += len(complete)
        lines = []
        for raw in complete.decode("utf-8", errors="replace").splitlines():
            try:
                lines.append(json.loads(raw))
            except json.JSONDecodeError:
                self.broken = True    # a line cut short by a crash: everything before it stands
                break
        return lines


@dataclass(frozen=True)
class CorePlan:
    """A GPU run's cores on a host that compiles while it evaluates: each lane's judge and sandbox time on cores
    of their own, and everything else (builds, waiting judges, the runner) keeps off them. Compiles fill every
    core they may use, and a lone call's latency on a shared core grew enough to read as work left running
    (D108) on an honest candidate."""
    lanes: dict            # GPU index -> the cores its timing judge and sandbox run on
    rest: frozenset        # the cores everything else may use

    @property
    def cores(self) -> frozenset:
        """Every core of the plan: the lanes' and the rest."""
        return self.rest.union(*self.lanes.values())


def plan_cores(available: list[int], gpus: list[int], per_lane: int = 2) -> CorePlan | None:
    """`per_lane` cores for each GPU's lane, from the top, where at least three times as many remain for the
    rest (so 8 cores or more for one GPU); None otherwise: too few cores to give any away."""
    available = sorted(available)
    reserved = per_lane * len(gpus)
    if per_lane < 1 or not gpus or len(available) - reserved < 3 * reserved:
        return None
    top = available[len(available) - reserved:]
    lanes = {gpu: tuple(top[i * per_lane:(i + 1) * per_lane]) for i, gpu in enumerate(gpus)}
    return CorePlan(lanes=lanes, rest=frozenset(available[:len(available) - reserved]))


def move_process(pid: int, cores) -> None:
    """Every thread of `pid` onto `cores` (sched_setaffinity moves one thread; threads it starts later inherit).
    A thread that ended meanwhile is skipped."""
    try:
        threads = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except FileNotFoundError:
        threads = [pid]
    for thread in threads:
        try:
            os.sched_setaffinity(thread, set(cores))
        except ProcessLookupError:
            pass


def lowered(niceness: int, then: Callable[[], None] | None) -> Callable[[], None]:
    """A preexec function that lowers the child's CPU priority by `niceness`, then runs `then`."""
    def preexec() -> None:
        os.nice(niceness)
        if then is not None:
            then()
    return preexec


def spawn_worker(job: dict, env_overrides: dict[str, str], timeout_s: float, log_path: Path,
                 on_line: Callable[[dict], None] | None = None, module: str = "harness.worker",
                 sandbox_slot: int | None = None, writable: list[Path] = (),
                 extension_dir: Path | None = None, gate: threading.Event | None = None,
                 niceness: int = 0, hide_gpus: bool = False) -> WorkerOutcome:
    """Run one worker (`module`) to its end (or its time limit). `on_line` sees each result line as soon as the
    worker has written it, so the caller can record a finished shape while the next one runs. With
    `sandbox_slot` the worker runs confined (a user of its own where the runner is root), able to write only
    its results file, `writable` and `extension_dir` (seen at EXTENSION_MOUNT), and imports a copy of the
    candidate file made in its own folder. With `gate`, the worker gets its job at once but stdin stays open until
    the gate is set (a judge does its host work, then waits there for the GPU); its time limit starts then.
    `niceness` lowers the worker's CPU priority (inherited by what it starts): background work such as a compile
    then yields the cores to a judge timing a candidate beside it. `hide_gpus` (a confined worker, as root) hides
    the GPU's device nodes from it (`gpu_masks`)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    uid = confine.sandbox_uid(sandbox_slot) if sandbox_slot is not None and confine.can_drop_privileges() else None
    with tempfile.TemporaryDirectory(prefix="harness-worker-") as scratch:
        results_path = Path(scratch) / "results.jsonl"
        results_path.touch()
        job = dict(job, results_path=str(results_path), runner_pid=os.getpid())
        env = dict(os.environ)
        env.update(env_overrides)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH", "")]))
        env["PYTHONUNBUFFERED"] = "1"
        preexec, private_tmp = None, None
        if sandbox_slot is not None:
            confine.kill_user(uid)
            writable = [*writable, Path(scratch)]
            keep = dict(env_overrides, PYTHONPATH=str(REPO_ROOT), PYTHONUNBUFFERED="1")
            binds = []
            if extension_dir is not None:
                extension_dir.mkdir(parents=True, exist_ok=True)
                writable.append(extension_dir)
                if uid is not None and mounts_possible():
                    binds.append((str(extension_dir.absolute()), str(extension_mount())))
                    keep["TORCH_EXTENSIONS_DIR"] = str(EXTENSION_MOUNT)
            if job.get("candidate", {}).get("path"):   # the confined user may not reach the original's folder
                copy = Path(scratch) / Path(job["candidate"]["path"]).name
                shutil.copyfile(job["candidate"]["path"], copy)
                job = dict(job, candidate=dict(job["candidate"], path=str(copy)))
            private_tmp, confinement = confine.prepare_sandbox(uid, writable, [source for source, _ in binds])
            if hide_gpus and uid is not None and mounts_possible():
                binds.extend(gpu_masks())
            env = confine.sandbox_env(private_tmp, keep)
            stash = Path(tempfile.mkdtemp(prefix="harness-stash-")) if uid is not None and mounts_possible() else None
            preexec = with_binds(binds, confine.preexec(uid, confinement), stash)
        if niceness:
            preexec = lowered(niceness, preexec)
        started = time.perf_counter()
        with open(log_path, "ab") as log:
            # workers start in the repository root, whatever the caller's folder: jobs carry absolute paths
            process = subprocess.Popen([sys.executable, "-m", module], stdin=subprocess.PIPE, stdout=log,
                                       stderr=subprocess.STDOUT, env=env, cwd=REPO_ROOT, start_new_session=True,
                                       preexec_fn=preexec)
            with _LIVE_LOCK:
                _LIVE.add(process)
            timed_out = False
            reader, lines = LineReader(results_path), []

            def collect() -> None:
                for line in reader.new_lines():
                    lines.append(line)
                    if on_line is not None:
                        on_line(line)

            try:
                process.stdin.write(json.dumps(job).encode() + b"\n")
                process.stdin.flush()
                while gate is not None and not gate.wait(0.05) and process.poll() is None:
                    collect()
                process.stdin.close()
                started = time.perf_counter()
                while process.poll() is None:
                    if time.perf_counter() - started > timeout_s:
                        timed_out = True
                        _kill_tree(process)
                        break
                    collect()
                    time.sleep(0.05)
            except BaseException:   # Ctrl-C: take the worker down with us
                _kill_tree(process)
                raise
            finally:
                if process.poll() is None:
                    _kill_tree(process)
                with _LIVE_LOCK:
                    _LIVE.discard(process)
                if sandbox_slot is not None:   # daemons it started die with it, and its folders come back
                    confine.kill_user(uid)
                    confine.release_sandbox(private_tmp, writable)
                    if stash is not None:
                        shutil.rmtree(stash, ignore_errors=True)
        seconds = time.perf_counter() - started
        collect()
    return WorkerOutcome(lines, process.returncode, timed_out, seconds, log_path)
