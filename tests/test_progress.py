"""Progress: what is in flight and for how long, on a terminal and in a log file (a hung candidate must show)."""
import io
import time

import pytest
from rich.console import Console

from harness import progress, runner
from harness.progress import Board, InFlight, LiveReporter, PlainReporter, heartbeat_line, make_reporter
from tests.conftest import FIXTURES, harness_cli


def test_heartbeat_names_what_is_in_flight_longest_first_and_the_counts():
    flights = [InFlight("evaluate", "cpu_forward_hang", 662.4), InFlight("build", "cuda_v3", 40.9)]
    line = heartbeat_line(750, {"check": (19, 19), "build": (17, 18), "evaluate": (3, 19)}, flights)
    assert line == ("[12m30s] in flight: cpu_forward_hang (evaluate) 11m02s, cuda_v3 (build) 40s; "
                    "done: check 19/19, build 17/18, evaluate 3/19")


def test_heartbeat_with_nothing_in_flight_or_too_much_to_name():
    assert heartbeat_line(5, {}, []) == "[5s] nothing in flight"
    many = [InFlight("evaluate", f"c{i}", 10.0) for i in range(progress.MAX_LISTED + 2)]
    assert heartbeat_line(3700, {}, many).endswith("c5 (evaluate) 10s, +2 more")
    assert heartbeat_line(3700, {}, many).startswith("[1h01m] in flight: c0 (evaluate) 10s")


def test_board_lists_the_longest_running_first_and_counts_finishes(monkeypatch):
    clock = [50.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    board = Board()
    board.phase("evaluate", 3)
    board.start("evaluate", "old")
    clock[0] = 90.0
    board.start("evaluate", "young")
    clock[0] = 100.0
    board.start("build", "other")
    clock[0] = 110.0
    assert [(f.item, f.seconds) for f in board.in_flight()] == [("old", 60.0), ("young", 20.0), ("other", 10.0)]
    assert [f.item for f in board.in_flight("build")] == ["other"]
    assert board.finish("evaluate", "old") == (1, 3, 60.0)
    assert board.finish("evaluate", "never_started") == (2, 3, None)
    assert [f.item for f in board.in_flight("evaluate")] == ["young"]


def plain(heartbeat_s: float = 3600.0) -> tuple[PlainReporter, io.StringIO]:
    out = io.StringIO()
    return PlainReporter(Console(file=out, width=200), heartbeat_s), out


def test_plain_lines_say_each_finished_item_and_beat_while_one_hangs():
    reporter, out = plain(heartbeat_s=0.05)
    with reporter:
        reporter.phase("evaluate", 2)
        reporter.start("evaluate", "cpu_forward_hang")
        reporter.start("evaluate", "cpu_segfault")
        reporter.finish("evaluate", "cpu_segfault", "crashed (sandbox died from SIGSEGV)")
        time.sleep(0.3)   # the hang: several heartbeats name it
        reporter.advance("evaluate", "cuda_v3")   # a count-only call: never in flight
        reporter.note("[yellow]the machine is busy[/]: 1.9 of its 2 cores")
    lines = out.getvalue().splitlines()
    assert lines[0] == "[0s] evaluate: 2 to do"
    assert lines[1] == "[0s] evaluate 1/2 cpu_segfault: crashed (sandbox died from SIGSEGV), in 0s"
    beats = [line for line in lines if "in flight: cpu_forward_hang (evaluate)" in line]
    assert len(beats) >= 2 and beats[0].endswith("; done: evaluate 1/2"), lines
    assert "[0s] evaluate 2/2 cuda_v3" in lines
    assert "the machine is busy: 1.9 of its 2 cores" in lines   # the runner's markup, rendered


def test_plain_lines_keep_brackets_in_candidate_names():
    reporter, out = plain()
    reporter.finish("build", "odd[bold]name", "ok")
    assert "odd[bold]name: ok" in out.getvalue()


def test_a_terminal_gets_live_bars_with_an_eta_and_what_is_in_flight():
    console = Console(file=io.StringIO(), force_terminal=True, width=160)
    reporter = make_reporter(console)
    assert isinstance(reporter, LiveReporter)
    reporter.phase("evaluate", 4)
    reporter.start("evaluate", "cpu_forward_hang")
    reporter.board.running[("evaluate", "cpu_forward_hang")] -= 125   # running for 2m05s
    reporter.finish("evaluate", "cpu_scalar", "ok")
    columns = reporter.progress.columns
    assert any(isinstance(c, progress.TimeRemainingColumn) for c in columns)
    task = reporter.progress.tasks[0]
    in_flight = next(c for c in columns if isinstance(c, progress.InFlightColumn))
    assert in_flight.render(task).plain == "running: cpu_forward_hang 2m05s"
    reporter.finish("evaluate", "cpu_forward_hang", "timeout")
    assert in_flight.render(task).plain == "cpu_forward_hang: timeout"


def test_anything_but_a_terminal_gets_plain_lines_at_the_configured_beat(monkeypatch):
    monkeypatch.setenv("HARNESS_HEARTBEAT_S", "7")
    reporter = make_reporter(Console(file=io.StringIO()))
    assert isinstance(reporter, PlainReporter) and reporter.heartbeat_s == 7.0
    monkeypatch.setenv("HARNESS_HEARTBEAT_S", "soon")
    assert make_reporter(Console(file=io.StringIO())).heartbeat_s == progress.HEARTBEAT_S


class Recorder:
    def __init__(self):
        self.events = []

    def phase(self, name, total):
        self.events.append(("phase", name, total))

    def start(self, name, item):
        self.events.append(("start", name, item))

    def finish(self, name, item, outcome=""):
        self.events.append(("finish", name, item, outcome))

    def advance(self, name, description):
        self.events.append(("advance", name, description))

    def note(self, message):
        pass


def bare_run(reporter) -> runner.Run:
    state = runner.Run.__new__(runner.Run)   # only the progress methods are used
    state.reporter = reporter
    return state


def test_builds_are_in_flight_as_the_pool_starts_them():
    """build_all's pool takes its jobs in order, `workers` at a time, the next as soon as one ends."""
    recorder = Recorder()
    state = bare_run(recorder)
    start_next = state.report_build_starts(["a", "b", "c", "d"], 2)
    assert recorder.events == [("start", "build", "a"), ("start", "build", "b")]
    start_next()
    start_next()
    start_next()   # nothing left to start
    assert [e[2] for e in recorder.events] == ["a", "b", "c", "d"]


def test_a_reporter_that_only_counts_still_gets_each_item_and_its_outcome():
    class Counter:
        def __init__(self):
            self.descriptions = []

        def advance(self, name, description):
            self.descriptions.append((name, description))

    counter = Counter()
    state = bare_run(counter)
    state.started("evaluate", "cpu_scalar")
    state.finished("evaluate", "cpu_scalar", "ok")
    state.finished("check", "no_model_new")
    assert counter.descriptions == [("evaluate", "cpu_scalar: ok"), ("check", "no_model_new")]


RAISES_AT_IMPORT = '''\
# Raises before its kernel compiles: a build that ends in seconds, as load_error.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

raise RuntimeError("this candidate fails at import on purpose")

module = load_inline(name="raises_before_compiling", cpp_sources="at::Tensor run(at::Tensor q) { return q; }",
                     functions=["run"])


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q)
'''


@pytest.mark.slow
def test_a_redirected_run_prints_a_line_per_finished_candidate_and_heartbeats(tmp_path, cache_config, monkeypatch):
    """stdout is a pipe here, as in `harness run ... > run.log`: no live display, plain lines instead."""
    candidate = tmp_path / "raises_before_compiling.py"
    candidate.write_text(RAISES_AT_IMPORT)
    monkeypatch.setenv("HARNESS_HEARTBEAT_S", "1")
    done = harness_cli("run", "problems/scalar_gated_delta.yaml", "--device", "cpu", "--results", str(tmp_path / "results"),
                       "--config", str(cache_config), "--candidates", str(candidate), str(FIXTURES / "no_model_new.py"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    finished = [line for line in lines if line.startswith("[") and " in flight" not in line]

    def has(text):
        return any(text in line for line in finished)

    assert has("check 1/2 raises_before_compiling: accepted") and has("no_model_new: rejected (S00"), finished
    assert has("build 1/1 raises_before_compiling: load_error, in "), finished
    assert has("ref:eager: ok, in ") and has("raises_before_compiling: load_error (RuntimeError: this candidate"), finished
    assert any(" in flight: ref:eager (evaluate) " in line for line in lines), "no heartbeat named the reference"
    assert "━" not in done.stdout, "a live bar was printed into a file"
