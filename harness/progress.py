"""Progress: what the runner reports (phases, each item's start and finish) in; a live display or plain lines out.

On a terminal, one rich progress bar per phase (check, build, evaluate) with its count, elapsed time, an ETA
and every build or evaluation in flight with how long it has run. Where stdout is not a terminal (output
redirected to a file, CI), a live display shows nothing until the end, so instead: one line per finished
item, and every `heartbeat_s` seconds one line naming what is in flight and for how long. A hung candidate
(evaluations may run up to evaluate.time_limit_s, 20 minutes by default) shows itself either way.
Used by the CLI only: the runner calls a `Reporter` (runner.py) and never prints.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)
from rich.text import Text

HEARTBEAT_S = 30.0   # between heartbeat lines when stdout is not a terminal; HARNESS_HEARTBEAT_S overrides
MAX_LISTED = 6       # items in flight named per line; the rest are counted


@dataclass(frozen=True)
class InFlight:
    phase: str
    item: str
    seconds: float


class Board:
    """Phases with their counts and the items in flight with their start times; shared by threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.started = time.monotonic()
        self.counts: dict[str, list[int]] = {}          # phase -> [done, total], in the order phases began
        self.running: dict[tuple[str, str], float] = {}  # (phase, item) -> when it started

    def phase(self, name: str, total: int) -> None:
        with self.lock:
            self.counts[name] = [0, max(total, 0)]

    def start(self, name: str, item: str) -> None:
        with self.lock:
            self.running[(name, item)] = time.monotonic()

    def finish(self, name: str, item: str) -> tuple[int, int, float | None]:
        """Count `item` done; its phase's (done, total) and how long it ran (None if never started)."""
        with self.lock:
            began = self.running.pop((name, item), None)
            count = self.counts.setdefault(name, [0, 0])
            count[0] += 1
            return count[0], count[1], None if began is None else time.monotonic() - began

    def in_flight(self, name: str | None = None) -> list[InFlight]:
        """Longest-running first: a hung item leads."""
        now = time.monotonic()
        with self.lock:
            items = [InFlight(phase, item, now - began) for (phase, item), began in self.running.items()
                     if name is None or phase == name]
        return sorted(items, key=lambda flight: -flight.seconds)

    def done_counts(self) -> dict[str, tuple[int, int]]:
        with self.lock:
            return {name: (done, total) for name, (done, total) in self.counts.items()}

    def elapsed(self) -> float:
        return time.monotonic() - self.started


def format_duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def list_in_flight(flights: list[InFlight], with_phase: bool = True) -> str:
    named = [f"{f.item} ({f.phase}) {format_duration(f.seconds)}" if with_phase else
             f"{f.item} {format_duration(f.seconds)}" for f in flights[:MAX_LISTED]]
    more = len(flights) - MAX_LISTED
    return ", ".join(named) + (f", +{more} more" if more > 0 else "")


def heartbeat_line(elapsed_s: float, counts: dict[str, tuple[int, int]], flights: list[InFlight]) -> str:
    """E.g. "[12m30s] in flight: cpu_forward_hang (evaluate) 11m02s, cuda_v3 (build) 40s; done: build 17/18,
    evaluate 3/19"."""
    running = f"in flight: {list_in_flight(flights)}" if flights else "nothing in flight"
    done = ", ".join(f"{name} {finished}/{total}" for name, (finished, total) in counts.items())
    return f"[{format_duration(elapsed_s)}] {running}" + (f"; done: {done}" if done else "")


def finished_line(elapsed_s: float, name: str, done: int, total: int, item: str, outcome: str,
                  took_s: float | None) -> str:
    """E.g. "[12m30s] evaluate 4/19 cpu_segfault: crashed, in 9s"."""
    line = f"[{format_duration(elapsed_s)}] {name} {done}/{total} {item}"
    if outcome:
        line += f": {outcome}"
    if took_s is not None:
        line += f"{',' if outcome else ''} in {format_duration(took_s)}"
    return line


class InFlightColumn(ProgressColumn):
    """A phase's items in flight with their running times, else the last one finished."""

    def __init__(self, board: Board):
        super().__init__()
        self.board = board

    def render(self, task: Task) -> Text:
        flights = self.board.in_flight(task.fields["phase"])
        text = f"running: {list_in_flight(flights, with_phase=False)}" if flights else task.description
        return Text(text, no_wrap=True, overflow="ellipsis")


class LiveReporter:
    """Rich progress bars for a terminal: count, elapsed, ETA and what is in flight, per phase."""

    def __init__(self, console: Console):
        self.console = console
        self.board = Board()
        self.progress = Progress(TextColumn("{task.fields[phase]:>8}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                                 InFlightColumn(self.board), console=console, transient=False)
        self.tasks: dict[str, int] = {}

    def __enter__(self):
        self.progress.start()
        return self

    def __exit__(self, *exc):
        self.progress.stop()

    def phase(self, name: str, total: int) -> None:
        self.board.phase(name, total)
        self.tasks[name] = self.progress.add_task("", total=max(total, 0), phase=name)

    def start(self, name: str, item: str) -> None:
        self.board.start(name, item)

    def finish(self, name: str, item: str, outcome: str = "") -> None:
        self.board.finish(name, item)
        if name in self.tasks:
            self.progress.update(self.tasks[name], advance=1, description=f"{item}: {outcome}" if outcome else item)

    def advance(self, name: str, description: str) -> None:   # an item that was never in flight
        self.finish(name, description)

    def note(self, message: str) -> None:
        self.progress.console.print(message)   # the runner's own words, markup included


class PlainReporter:
    """Plain lines for a log file: one per phase begun and per item finished, and a heartbeat naming what is in
    flight every `heartbeat_s` seconds. Each line is flushed at once, so `tail -f` sees it."""

    def __init__(self, console: Console, heartbeat_s: float = HEARTBEAT_S):
        self.console = console
        self.board = Board()
        self.heartbeat_s = heartbeat_s
        self.stopped = threading.Event()
        self.beat = threading.Thread(target=self.beat_until_stopped, name="heartbeat", daemon=True)
        self.print_lock = threading.Lock()

    def __enter__(self):
        self.beat.start()
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        self.beat.join(timeout=5)

    def beat_until_stopped(self) -> None:
        while not self.stopped.wait(self.heartbeat_s):
            self.print(heartbeat_line(self.board.elapsed(), self.board.done_counts(), self.board.in_flight()))

    def print(self, line: str, markup: bool = False) -> None:
        with self.print_lock:   # candidate names are never markup; the runner's notes are
            self.console.print(line, markup=markup, highlight=False, soft_wrap=True)
            self.console.file.flush()

    def phase(self, name: str, total: int) -> None:
        self.board.phase(name, total)
        self.print(f"[{format_duration(self.board.elapsed())}] {name}: {total} to do")

    def start(self, name: str, item: str) -> None:
        self.board.start(name, item)

    def finish(self, name: str, item: str, outcome: str = "") -> None:
        done, total, took_s = self.board.finish(name, item)
        self.print(finished_line(self.board.elapsed(), name, done, total, item, outcome, took_s))

    def advance(self, name: str, description: str) -> None:   # an item that was never in flight
        self.finish(name, description)

    def note(self, message: str) -> None:
        self.print(message, markup=True)


def make_reporter(console: Console) -> LiveReporter | PlainReporter:
    """Live bars on a terminal, plain lines elsewhere (every HARNESS_HEARTBEAT_S seconds, default 30, a heartbeat)."""
    if console.is_terminal:
        return LiveReporter(console)
    try:
        heartbeat_s = float(os.environ.get("HARNESS_HEARTBEAT_S", HEARTBEAT_S))
    except ValueError:
        heartbeat_s = HEARTBEAT_S
    return PlainReporter(console, max(heartbeat_s, 0.1))
