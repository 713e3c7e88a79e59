"""The twin sandbox (judge.Judge.twin_lone_calls): when a lone call overruns its room, a fresh sandbox that never
loads the candidate times the harness's empty call now, alternating with the candidate's lone calls while the
candidate's sandbox is stopped, and the machine's slowdown since calibration (1-2x) stretches the room. Run on
the CPU with the harness's own trivial call standing in for the candidate."""
from __future__ import annotations

import contextlib
import os

import pytest

from harness import judge
from harness.spawn import move_process
from tests.conftest import calibrated_judge, load_reference
from tests.test_spawn import thread_cores


@pytest.fixture(scope="module")
def calibrated():
    with calibrated_judge("twin-test", 7) as calibrated:
        yield calibrated


def states_during(referee, calls: list[str]):
    """A stand-in for the candidate's lone call: its sandbox's state as the call starts, then the call."""
    def call(index: int) -> None:
        with open(f"/proc/{referee.sandbox.process.pid}/stat") as handle:
            calls.append(handle.read().rsplit(")", 1)[1].split()[0])
        referee.sandbox.ask("burst", slots=[0], copy_out=True)
    return call


def test_the_twin_times_the_empty_call_between_the_candidates_lone_calls(calibrated):
    referee, shape, layout = calibrated
    states: list[str] = []
    found = referee.twin_lone_calls(shape, layout, "cpu", 3, states_during(referee, states))
    assert "judge_twin_error" not in found, found
    assert len(states) == 3 and "T" not in states, states   # continued before each of its own calls
    assert 1.0 <= found["judge_slowdown"] <= 2.0 and found["judge_twin_us"] > 0


def test_the_slowdown_is_measured_against_calibration_and_capped(calibrated):
    referee, shape, layout = calibrated
    saved = dict(referee.calibration["seed"])
    try:
        for factor, expected in ((1 / 50, 2.0), (50, 1.0)):   # calibrated on a far faster, then far slower machine
            referee.calibration["seed"] = dict(saved, round_trip_s=saved["round_trip_s"] * factor,
                                               per_call_s=saved["per_call_s"] * factor)
            found = referee.twin_lone_calls(shape, layout, "cpu", 2, lambda index: None)
            assert found["judge_slowdown"] == expected, found
    finally:
        referee.calibration["seed"] = saved


def test_the_candidate_is_stopped_while_the_twin_is_timed(calibrated, monkeypatch):
    referee, shape, layout = calibrated
    seen: list[str] = []
    ask = judge.SandboxClient.ask

    def watching(client, op, *args, **kwargs):
        if client is not referee.sandbox and op == "burst":
            with open(f"/proc/{referee.sandbox.process.pid}/stat") as handle:
                seen.append(handle.read().rsplit(")", 1)[1].split()[0])
        return ask(client, op, *args, **kwargs)

    monkeypatch.setattr(judge.SandboxClient, "ask", watching)
    referee.twin_lone_calls(shape, layout, "cpu", 2, lambda index: None)
    # the first three warm the twin; then per round an untimed call (as before a lone call) and the timed one
    assert len(seen) == 3 + 2 * 2 and seen[3:] == ["T"] * 4, seen


def test_a_failure_of_the_candidates_call_is_its_own_not_the_twins(calibrated):
    referee, shape, layout = calibrated

    def wrong(index: int) -> None:
        raise judge.Integrity("D103", "single output 0, checked in secret, is wrong")

    with pytest.raises(judge.Integrity, match="D103"):
        referee.twin_lone_calls(shape, layout, "cpu", 2, wrong)
    with contextlib.suppress(OSError):   # running again afterwards
        with open(f"/proc/{referee.sandbox.process.pid}/stat") as handle:
            assert handle.read().rsplit(")", 1)[1].split()[0] != "T"


def test_bursts_failed_by_an_under_calibrated_empty_call_are_judged_again_beside_the_twin(calibrated, monkeypatch):
    """The harness's own empty call as the candidate, its empty call's CPU time calibrated at a tenth of what it
    is (a lucky calibration): its bursts fail D108 at first, are taken again beside the twin, and the verdict
    follows the second figure. The second measurement is set here (the candidate's bursts cost what the twin's
    empty ones do: an honest candidate whose claim accounts for its work), so the verdict does not hang on
    this machine's noise; the real one is test_work_the_claim_leaves_out_stays_d108_beside_the_twin's."""
    referee, shape, layout = calibrated
    saved = dict(referee.calibration["seed"])
    calibrated_cpu_s = saved["cpu_per_call_s"] / 10
    monkeypatch.setitem(referee.calibration, "seed", dict(saved, cpu_per_call_s=calibrated_cpu_s))
    monkeypatch.setitem(referee.rules, "clock_margin_us", 1.0)   # so the first look fails whatever this machine reads
    monkeypatch.setattr(referee, "lone_call", lambda shape, layout, method, index: 0.0)
    monkeypatch.setattr(referee, "check_fetched", lambda *args, **kwargs: None)   # the empty call's outputs are no answer
    asked = []

    def measured(shape, layout, method, calls, rounds, first):
        asked.append((calls, rounds, first))
        spent = (calls * 1.5 * calibrated_cpu_s,) * rounds
        return judge.TwinBursts(calls, (0.01,) * rounds, spent, (0.01,) * rounds, spent)

    monkeypatch.setattr(referee, "bursts_beside_twin", measured)
    try:
        report = referee.cross_check(shape, layout, 0.0, False, "cpu")
    finally:
        referee.second_looks.pop("seed", None)
    calls = report["judge_burst_calls"]
    assert asked == [(calls, 3, 3)], asked   # as many bursts as the first look, on inputs it never used
    assert report["judge_first_reason"].startswith("the sandbox used"), report
    assert report["judge_first_cpu_us"] > report["judge_cpu_us"] == 0.0, report


@pytest.fixture(scope="module")
def working():
    """A judge whose candidate is the problem's reference: real work in every call."""
    with calibrated_judge("twin-burst-test", 11) as (referee, shape, layout):
        load_reference(referee)
        yield referee, shape, layout


def test_work_the_claim_leaves_out_stays_d108_beside_the_twin(working, monkeypatch):
    """A claim of 1 us for calls that do the reference's work: the bursts fail D108, are taken again beside a
    twin, and fail again; the record keeps what both looks read."""
    referee, shape, layout = working
    monkeypatch.setattr(referee, "lone_call", lambda shape, layout, method, index: 0.0)
    with pytest.raises(judge.Integrity) as caught:
        referee.cross_check(shape, layout, 1.0, False, "cpu")
    assert caught.value.check == "D108" and "CPU per call" in str(caught.value), caught.value
    evidence = caught.value.evidence
    assert "judge_twin_burst_error" not in evidence, evidence
    assert evidence["judge_first_reason"].startswith("the sandbox used") and evidence["judge_twin_burst_s"] > 0
    assert len(evidence["judge_burst_again_us"]) == 3 and evidence["judge_cpu_us"] > 100, evidence


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores to move a process between")
def test_the_judge_and_its_sandbox_move_to_their_lane_at_the_gate(calibrated):
    """EvaluateJob.lane_cores: at its gate the judge moves itself and its sandbox, every thread of both, onto the
    lane's cores; a twin started later shares the sandbox's cores."""
    referee, _, _ = calibrated
    everywhere, threads = os.sched_getaffinity(0), referee.torch.get_num_threads()
    lane = max(everywhere)
    try:
        referee.move_to_lane((lane,))
        assert set(thread_cores(os.getpid()).values()) == {str(lane)}
        assert set(thread_cores(referee.sandbox.process.pid).values()) == {str(lane)}
        assert referee.confinement["lane_cores"] == [lane]
        assert judge.cores_of(referee.sandbox) == 1
        assert referee.torch.get_num_threads() == 1
    finally:
        referee.torch.set_num_threads(threads)
        move_process(os.getpid(), everywhere)
        move_process(referee.sandbox.process.pid, everywhere)


def test_a_lane_that_cannot_be_had_is_said_not_hidden(calibrated):
    """Cores the judge may not move to (here: one this machine does not have) leave it where it is, and its
    records say so; the evaluation goes on."""
    referee, _, _ = calibrated
    everywhere = os.sched_getaffinity(0)
    try:
        referee.move_to_lane((4096,))
        assert referee.confinement["lane_cores"].startswith("not moved: "), referee.confinement["lane_cores"]
        assert os.sched_getaffinity(0) == everywhere
    finally:
        referee.confinement.pop("lane_cores", None)


def test_calibration_times_each_empty_single_after_an_untimed_one(calibrated, monkeypatch):
    """The empty call subtracted from a lone call is timed as warm as the lone call (Judge.lone_call): each of
    calibration's timed singles follows an untimed single."""
    referee, shape, layout = calibrated
    bursts: list[int] = []
    ask = judge.SandboxClient.ask

    def watching(client, op, *args, **kwargs):
        if op == "burst":
            bursts.append(len(kwargs["slots"]))
        return ask(client, op, *args, **kwargs)

    monkeypatch.setattr(judge.SandboxClient, "ask", watching)
    rounds = max(3, int(referee.rules["bursts"]))
    referee.calibrate(shape, layout)
    assert bursts == [1, 1, layout.slots] * rounds + [layout.slots] * (rounds + 1), bursts
