"""The second look (judge.Judge.second_look): a shape whose lone calls alone failed D108, twin and all, is judged
again after the other shapes, and is integrity only if its lone calls fail again. Run on the CPU with the
reference standing in for the candidate; the lone calls' times are set by the test."""
from __future__ import annotations

import json

import pytest

from harness import judge
from tests.conftest import calibrated_judge, load_reference

CLAIMED_US = 1e6   # a claim so large that only a lone call far slower still can fail D108


@pytest.fixture(scope="module")
def referee():
    with calibrated_judge("second-look-test", 5) as (referee, shape, layout):
        load_reference(referee)
        yield referee, shape, layout


def lone_calls_taking(monkeypatch, referee, seconds: float) -> list[int]:
    """Every lone call of the candidate reads `seconds` on the judge's clock; returns the seeds' indices asked."""
    taken: list[int] = []

    def lone_call(shape, layout, method, index):
        taken.append(index)
        return seconds
    monkeypatch.setattr(referee, "lone_call", lone_call)
    return taken


def first_look_fails(monkeypatch, referee, shape, layout) -> dict:
    taken = lone_calls_taking(monkeypatch, referee, 100.0)
    report = referee.cross_check(shape, layout, CLAIMED_US, False, "cpu")
    assert report["judge_second_look"] == "pending" and "seed" in referee.second_looks
    assert taken == list(range(6)), taken   # three lone calls, three more beside the twin
    return report


def test_lone_calls_that_pass_the_second_time_leave_the_shape_ok(referee, monkeypatch):
    referee, shape, layout = referee
    first_look_fails(monkeypatch, referee, shape, layout)
    overhead_s = referee.calibration["seed"]["round_trip_s"] + referee.calibration["seed"]["per_call_s"]
    taken = lone_calls_taking(monkeypatch, referee, overhead_s)
    record = {"timing": {}}
    assert referee.second_look(shape, record) == ("ok", "", "")
    assert taken == [6, 7, 8], taken   # fresh inputs: seeds the first look never used; no twin needed
    look = record["timing"]["judge_second_look"]
    assert look["first"].startswith("D108: one call alone took") and look["latency_us"] == 0.0
    assert "seed" not in referee.second_looks


def test_lone_calls_that_fail_again_end_it_integrity(referee, monkeypatch):
    referee, shape, layout = referee
    first_look_fails(monkeypatch, referee, shape, layout)
    lone_calls_taking(monkeypatch, referee, 100.0)
    record = {"timing": {}}
    status, reason, check = referee.second_look(shape, record)
    assert (status, check) == ("integrity", "D108") and "one call alone took" in reason
    assert record["timing"]["judge_second_look"]["lone_calls"] == 6   # beside a twin again


def test_a_shape_whose_lone_calls_pass_takes_no_second_look(referee, monkeypatch):
    referee, shape, layout = referee
    lone_calls_taking(monkeypatch, referee, 0.0)
    report = referee.cross_check(shape, layout, CLAIMED_US, False, "cpu")
    assert "judge_second_look" not in report and "seed" not in referee.second_looks


def test_where_no_second_look_can_be_taken_the_first_verdict_stands(referee, monkeypatch):
    """A later shape lost the CUDA context: the held shape is emitted integrity, as its first look found."""
    referee, shape, layout = referee
    first_look_fails(monkeypatch, referee, shape, layout)
    emitted: list[str] = []
    monkeypatch.setattr(referee, "emit", emitted.append)
    referee.settle([(shape, "done", 0.1, False, {"timing": {}})], look_again=False)
    outcome = json.loads(emitted[0]) if isinstance(emitted[0], str) else emitted[0]
    assert (outcome["status"], outcome["check"]) == ("integrity", "D108")
    assert outcome["reason"].startswith("D108: one call alone took") and "seed" not in referee.second_looks


def test_a_lone_call_follows_an_untimed_call_before_its_inputs_reach_the_arena(referee, monkeypatch):
    """Judge.lone_call warms the sandbox with one untimed call first (a call after an idle sandbox pays a cold
    start the empty call subtracted does not). A candidate that computes ahead in that call finds only the
    inputs earlier calls ran on in the arena, never the ones the timed call gets."""
    referee, shape, layout = referee
    referee.stage_fresh(shape, layout, "warm", 0, 1)
    start = layout.in_offsets[0][0]
    seen: list[tuple] = []
    ask = judge.SandboxClient.ask

    def watching(client, op, *args, **kwargs):
        if client is referee.sandbox and op in ("burst", "stage"):
            seen.append((op, kwargs.get("slots"), referee.arena_bytes[start:start + layout.input_bytes].clone()))
        return ask(client, op, *args, **kwargs)

    monkeypatch.setattr(judge.SandboxClient, "ask", watching)
    assert referee.lone_call(shape, layout, "cpu", 0) > 0   # its output checked against the gold (D103)
    assert [(op, slots) for op, slots, _ in seen] == [("burst", [0]), ("stage", [0]), ("burst", [0])], seen
    (_, _, at_warm), (_, _, at_stage), (_, _, at_timed) = seen
    assert not bool((at_warm == at_timed).all()) and bool((at_stage == at_timed).all())
