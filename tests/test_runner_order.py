"""The runner's order of work, with the build and evaluation stages replaced by recorders (no compiles)."""
import dataclasses
import threading
import time

import pytest

from harness import runner
from harness.config import load_config
from harness.discovery import discover
from harness.env import collect_env
from harness.problem import ProblemError, load_problem
from tests.conftest import FIXTURES, REPO


def ordered_run(tmp_path, monkeypatch, overlap: bool, gpus=(0, 1), fixtures=("cpu_scalar.py",),
                builds_end_reversed: bool = False) -> list[str]:
    events: list[str] = []
    lock = threading.Lock()

    def log(what: str) -> None:
        with lock:
            events.append(what)

    def build(self, entries, on_built=lambda r: None, cancel=None):
        log("build starts")
        for entry in (reversed(entries) if builds_end_reversed else entries):
            on_built(type("Built", (), {"candidate": entry.id})())
        return {}

    def evaluate_entry(self, entry, gpu, build, gate=None):
        if gate is not None:      # a judge started early: host work now, the GPU once the gate opens
            log(f"{entry.id} held")
            gate.wait()
        log(f"{entry.id} starts")
        time.sleep(0.3 if entry.id == runner.EAGER else 0.01)
        log(f"{entry.id} ends")

    monkeypatch.setattr(runner.Run, "build", build)
    monkeypatch.setattr(runner.Run, "evaluate_entry", evaluate_entry)
    monkeypatch.setattr(runner.Run, "warm_compile", lambda self, entry, gpu: log("compile warm-up starts"))
    env = dataclasses.replace(collect_env("cpu"), device="cuda")   # the GPU run's order, without a GPU
    options = runner.RunOptions(load_problem(REPO / "problems" / "scalar_gated_delta.yaml"), load_config(None),
                                env, discover([FIXTURES / name for name in fixtures]), ["seed"], tmp_path,
                                gpus=list(gpus))
    state = runner.Run(options, runner.SilentReporter())
    # a candidate of the run's device (the fixture is a CPU one; the GPU run's order is what is tested)
    state.build_and_evaluate(state.baselines(), [runner.Entry(c.id, "candidate", c.sha256, c, uses_cuda=env.device == "cuda")
                                                 for c in options.candidates], overlap)
    return events


def test_gpu_runs_build_and_warm_torch_compile_only_after_the_eager_reference(tmp_path, monkeypatch):
    events = ordered_run(tmp_path, monkeypatch, overlap=True)
    eager_done = events.index(f"{runner.EAGER} ends")
    assert events.index("build starts") > eager_done, events
    assert events.index("compile warm-up starts") > eager_done, events
    assert events.index("cpu_scalar starts") > eager_done, events


def test_cpu_runs_build_everything_before_evaluating(tmp_path, monkeypatch):
    events = ordered_run(tmp_path, monkeypatch, overlap=False)
    assert events[0] == "build starts", events


def test_without_overlap_candidates_are_evaluated_in_the_order_given_whatever_order_their_builds_end_in(
        tmp_path, monkeypatch):
    """A run that builds everything first evaluates in the order it was given: a test (or a user) can put one
    candidate after another on purpose, e.g. an honest kernel after one that destroys its CUDA context, even
    where the second's build was cached and ended first."""
    given = ("cpu_scalar.py", "cpu_zeros.py", "no_model_new.py")
    for overlap, expected in ((False, ["cpu_scalar", "cpu_zeros", "no_model_new"]),
                              (True, ["no_model_new", "cpu_zeros", "cpu_scalar"])):   # overlap: as they end
        events = ordered_run(tmp_path / str(overlap), monkeypatch, overlap=overlap, gpus=[0], fixtures=given,
                             builds_end_reversed=True)
        assert [e.split()[0] for e in events if e.endswith(" starts") and not e.startswith(("ref:", "build", "compile"))] \
            == expected, events


def test_gpu_runs_start_the_next_judge_early_and_let_it_on_the_gpu_only_after_the_last(tmp_path, monkeypatch):
    events = ordered_run(tmp_path, monkeypatch, overlap=True, gpus=[0], fixtures=("cpu_scalar.py", "cpu_zeros.py"))
    first, second = [e.split()[0] for e in events if e.endswith(" held") and e.startswith("cpu_")]
    assert events.index(f"{second} held") < events.index(f"{first} ends"), events   # started early
    assert events.index(f"{second} starts") > events.index(f"{first} ends"), events  # one on the GPU at a time
    starts = [i for i, e in enumerate(events) if e.endswith(" starts") and not e.startswith(("build", "compile warm-up"))]
    ends = [i for i, e in enumerate(events) if e.endswith(" ends")]
    assert all(s > e for s, e in zip(starts[1:], ends)), events


def test_a_gpu_host_that_compiles_while_it_times_keeps_each_lane_on_cores_of_its_own(tmp_path, monkeypatch):
    """evaluate.lane_cores (auto): on 16 cores with two GPUs, each GPU's judge gets two cores; the runner, and all it
    starts (builds, judges waiting for their turn), keeps to the other twelve until the run ends."""
    moves, given = [], []

    def evaluate_entry(self, entry, gpu, build, gate=None):
        given.append((entry.id, gpu, self.lane_cores(gpu)))
        if entry.kind == "baseline":
            given.append(("job", gpu, self.evaluate_job(entry, ["seed"], gpu, None)[0].lane_cores))

    def run(config=None):
        monkeypatch.setattr(runner.os, "sched_getaffinity", lambda pid: set(range(16)))
        monkeypatch.setattr(runner.spawn, "move_process", lambda pid, cores: moves.append((pid, sorted(cores))))
        monkeypatch.setattr(runner.Run, "build", lambda self, entries, on_built=lambda r: None, cancel=None: [
            on_built(type("Built", (), {"candidate": e.id})()) for e in entries])
        monkeypatch.setattr(runner.Run, "evaluate_entry", evaluate_entry)
        monkeypatch.setattr(runner.Run, "warm_compile", lambda self, entry, gpu: None)
        env = dataclasses.replace(collect_env("cpu"), device="cuda")
        options = runner.RunOptions(load_problem(REPO / "problems" / "scalar_gated_delta.yaml"), load_config(config),
                                    env, discover([FIXTURES / "cpu_scalar.py"]), ["seed"], tmp_path, gpus=[0, 1])
        state = runner.Run(options, runner.SilentReporter())
        state.build_and_evaluate(state.baselines(), [runner.Entry(c.id, "candidate", c.sha256, c, uses_cuda=True)
                                                     for c in options.candidates], True)

    run()
    assert moves == [(runner.os.getpid(), list(range(12))), (runner.os.getpid(), list(range(16)))]
    lanes = {0: (12, 13), 1: (14, 15)}
    assert given and all(cores == lanes[gpu] for _, gpu, cores in given), given
    assert ("job", 0, (12, 13)) in given   # the judge's job carries them
    moves.clear()
    given.clear()
    never = tmp_path / "never.yaml"
    never.write_text("evaluate:\n  lane_cores: never\n")
    run(never)
    assert moves == [] and all(cores == () for _, _, cores in given), given


def test_an_unknown_lane_cores_setting_is_one_line(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("evaluate:\n  lane_cores: sometimes\n")
    with pytest.raises(ProblemError) as caught:
        load_config(config)
    assert str(caught.value) == f"{config}: evaluate.lane_cores: expected auto or never, got 'sometimes'"
