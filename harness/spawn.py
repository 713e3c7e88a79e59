"""Worker processes: a job in, the worker's JSON lines and how it ended out.

Each worker runs in its own process group so that a timeout kills it and everything it started
(the compiler included). Results travel through a file of JSON lines, never parsed from stdout.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Callable
from pathlib import Path

from harness.env import REPO_ROOT


@dataclass(frozen=True)
class WorkerOutcome:
    lines: list[dict]
    returncode: int | None
    timed_out: bool
    seconds: float
    log_path: Path

    @property
    def crash_reason(self) -> str:
        if self.timed_out:
            return f"killed after the {self.seconds:.0f} s time limit"
        code = self.returncode
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"worker died from {name}{self.log_hint()}"
        return f"worker exited with code {code} without a result{self.log_hint()}"

    def log_hint(self) -> str:
        try:
            lines = [line.strip() for line in self.log_path.read_text(errors="replace").splitlines() if line.strip()]
        except OSError:
            return ""
        return f": {lines[-1][:160]}" if lines else ""


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


def spawn_worker(job: dict, env_overrides: dict[str, str], timeout_s: float, log_path: Path,
                 on_line: Callable[[dict], None] | None = None) -> WorkerOutcome:
    """Run one worker to its end (or its time limit). `on_line` sees each result line as soon as the worker
    has written it, so the caller can record a finished shape while the next one runs."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="harness-worker-") as scratch:
        results_path = Path(scratch) / "results.jsonl"
        results_path.touch()
        job = dict(job, results_path=str(results_path), runner_pid=os.getpid())
        env = dict(os.environ)
        env.update(env_overrides)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH", "")]))
        env["PYTHONUNBUFFERED"] = "1"
        started = time.perf_counter()
        with open(log_path, "ab") as log:
            # workers start in the repository root, whatever the caller's folder: jobs carry absolute paths
            process = subprocess.Popen([sys.executable, "-m", "harness.worker"], stdin=subprocess.PIPE, stdout=log,
                                       stderr=subprocess.STDOUT, env=env, cwd=REPO_ROOT, start_new_session=True)
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
                process.stdin.write(json.dumps(job).encode())
                process.stdin.close()
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
        seconds = time.perf_counter() - started
        collect()
    return WorkerOutcome(lines, process.returncode, timed_out, seconds, log_path)
