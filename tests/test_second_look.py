"""The second look (judge.Judge.second_look): a shape whose lone calls alone failed D108, twin and all, is judged
again after the other shapes, and is integrity only if its lone calls fail again. Run on the CPU with the
reference standing in for the candidate; the lone calls' times are set by the test."""
from __future__ import annotations

import json

import pytest
import torch

from harness import judge
from harness.verify import tensors_of
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


def test_a_lone_call_follows_an_untimed_call_on_another_slot_that_cannot_open_its_inputs(referee, monkeypatch):
    """Judge.lone_call warms the sandbox with one untimed call right before the timed one (a call after an idle
    sandbox pays a cold start the empty call subtracted does not). That call runs on slot 1 once slot 0's new
    inputs are staged: a candidate that computes ahead in it finds them sealed, and the seed that opens them
    goes only with the timed request."""
    referee, shape, layout = referee
    assert layout.slots > 1
    start = layout.in_offsets[0][0]
    seen: list[tuple] = []
    ask = judge.SandboxClient.ask

    def watching(client, op, *args, **kwargs):
        if client is referee.sandbox and op in ("burst", "stage"):
            seen.append((op, kwargs.get("slots"), kwargs.get("unseal", "owed"),
                         referee.arena_bytes[start:start + layout.input_bytes].clone()))
        return ask(client, op, *args, **kwargs)

    monkeypatch.setattr(judge.SandboxClient, "ask", watching)
    assert referee.lone_call(shape, layout, "cpu", 0) > 0   # its output checked against the gold (D103)
    assert [(op, slots) for op, slots, _, _ in seen] == [("stage", [0]), ("burst", [1]), ("burst", [0])], seen
    (_, _, _, at_stage), (_, _, warm_seal, at_warm), (_, _, timed_seal, _) = seen
    assert warm_seal is None and timed_seal == "owed"   # "owed": the client adds the seed to this request
    assert bool((at_warm == at_stage).all())
    from harness.verify import derive_seed

    plain = tensors_of(referee.draw(shape, None, derive_seed(referee.secret_seed, "timing", shape.name, "single",
                                                             0, 0)))[0].contiguous()
    staged = referee.arena_view(start, tuple(plain.shape), plain.dtype)
    assert not torch.equal(staged, plain)   # sealed in the arena while the untimed call ran


def test_with_one_slot_a_lone_call_is_warmed_before_its_inputs_reach_the_arena(referee, requests_sent):
    referee, shape, layout = referee
    one = referee.layout_for(shape, 1)
    referee.sandbox.ask("layout", **one.message(float(referee.settings.get("spin_us", 40.0))))
    try:
        referee.stage_fresh(shape, one, "warm", 0, 1)
        referee.sandbox.ask("burst", slots=[0], copy_out=True)   # slot 0 holds valid inputs, unsealed
        del requests_sent[:]
        referee.lone_call(shape, one, "cpu", 0)
        ops = [(op, args.get("slots")) for op, args in requests_sent]
        assert ops[:3] == [("burst", [0]), ("stage", [0]), ("burst", [0])], ops
        assert not requests_sent[0][1]["unseal"] and requests_sent[2][1]["unseal"]["slots"] == 1
    finally:
        referee.sandbox.ask("layout", **layout.message(float(referee.settings.get("spin_us", 40.0))))
        referee.stage_fresh(shape, layout, "warm", 0)
        referee.sandbox.ask("burst", slots=list(range(layout.slots)), copy_out=True)
