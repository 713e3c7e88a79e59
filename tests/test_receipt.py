"""Burst receipts (harness/receipt.py): a digest no reply can carry before its outputs exist, checked against the
output the judge fetches (D115)."""
from __future__ import annotations

import hashlib
import math
from pathlib import Path

import pytest
import torch

from harness import judge, receipt
from harness.kernelbench import INIT_SEED
from harness.protocol import ProtocolError, Reply, Request, parse_reply
from tests.conftest import calibrated_judge, load_reference

FORGER = Path(__file__).parent / "adversarial" / "judge" / "cpu_forge_receipts.py"


def test_a_digest_is_the_same_for_the_same_seed_and_bytes_and_moves_with_either():
    out = torch.randn(3, 5, 7)
    first = receipt.digests([out, out.clone()], 1234, out.numel(), "cpu")
    assert first[0] == first[1] == receipt.digests([out], 1234, out.numel(), "cpu")[0]
    assert receipt.mismatch(first[0], out, 1234, "cpu") == ""
    assert receipt.digests([out], 1235, out.numel(), "cpu")[0] != first[0]
    for index in (0, 17, out.numel() - 1):   # every element carries its own weight
        nudged = out.clone().reshape(-1)
        nudged[index] += 1.0
        assert receipt.mismatch(first[0], nudged.reshape(out.shape), 1234, "cpu") != "", index


def test_a_receipt_that_is_not_the_outputs_digest_does_not_match():
    out = torch.randn(64, 64)
    honest = receipt.digests([out], 7, out.numel(), "cpu")[0]
    scale = float(receipt.products([out], receipt.weights(7, out.numel(), "cpu")).abs().sum())
    assert receipt.mismatch(honest + 0.5 * receipt.TOLERANCE * scale, out, 7, "cpu") == ""   # rounding passes
    for forged in (0.0, honest + 4 * receipt.TOLERANCE * scale, -honest, math.nan, math.inf):
        assert receipt.mismatch(forged, out, 7, "cpu") != "", forged
    assert receipt.mismatch(0.0, torch.zeros(64, 64), 7, "cpu") == ""   # zeros digest to zero


def test_a_digest_rounds_within_half_the_tolerance_and_ignores_the_outputs_layout():
    generator = torch.Generator().manual_seed(3)
    out = torch.randn(1001, 37, generator=generator) * torch.logspace(-6, 6, 37)   # 37037: a partial last row
    product = receipt.products([out], receipt.weights(11, out.numel(), "cpu"))
    exact = product.double().sum().item()
    assert abs(receipt.digest(product)[0].item() - exact) <= receipt.TOLERANCE / 2 * product.abs().double().sum().item()
    strided = out.t().contiguous().t()   # the same values, another layout
    assert not strided.is_contiguous()
    assert receipt.digests([strided], 11, out.numel(), "cpu") == receipt.digests([out], 11, out.numel(), "cpu")


def test_small_outputs_digested_together_match_each_digested_alone(monkeypatch):
    generator = torch.Generator().manual_seed(5)
    outs = [torch.randn(4, 33, generator=generator) for _ in range(7)]
    outs[3] = torch.randn(5, 5)   # not the layout's size: NaN, and the others keep their places
    assert receipt.group_size(132, "cpu") == 1 and receipt.group_size(132, "cuda") > 7
    monkeypatch.setattr(receipt, "group_size", lambda numel, device_type: 3)   # as on CUDA: 0-2, then 4-6
    together = receipt.digests(outs, 9, 132, "cpu")
    assert math.isnan(together[3])
    for index, out in enumerate(outs):
        if index != 3:
            assert receipt.mismatch(together[index], out, 9, "cpu") == "", index
            assert together[index] == receipt.digests([out], 9, 132, "cpu")[0], index


def test_outputs_that_are_not_finite_or_not_tensors_of_the_layouts_size():
    out = torch.randn(10)
    out[3] = math.nan
    digest = receipt.digests([out, "not a tensor", torch.randn(9)], 5, 10, "cpu")
    assert all(math.isnan(value) for value in digest)
    assert receipt.mismatch(digest[0], out, 5, "cpu") == ""   # the output fails its own check, not this one
    out[3] = math.inf
    assert receipt.mismatch(receipt.digests([out], 5, 10, "cpu")[0], out, 5, "cpu") == ""
    assert receipt.mismatch(-math.inf, out, 5, "cpu") != ""


def test_a_receipt_that_is_not_a_number_is_a_protocol_error():
    def burst_reply(data):
        return Reply("burst", True, data=data).encode()
    parsed = parse_reply(burst_reply({"kept": 3, "receipts": [1.5, 2, math.nan]}), "burst")
    assert math.isnan(parsed.data["receipts"][2])
    for bad in (["1.5"], [None], [[1.0]], [True]):
        with pytest.raises(ProtocolError, match="receipts"):
            parse_reply(burst_reply({"kept": 1, "receipts": bad}), "burst")
    with pytest.raises(ProtocolError, match="receipts"):   # the field is owed even when empty
        parse_reply(burst_reply({"kept": 0}), "burst")


@pytest.fixture(scope="module")
def referee():
    with calibrated_judge("receipt-test", 23, receipts="always") as (referee, shape, layout):
        load_reference(referee)
        yield referee, shape, layout


def test_every_burst_brings_a_fresh_seed_and_an_honest_reply_matches_it(referee, requests_sent):
    referee, shape, layout = referee
    assert referee.sandbox.receipts
    exchange, _ = referee.checked_burst(shape, layout, "cpu", 2, 0)   # D103 and D115 pass on the reference
    again, _ = referee.checked_burst(shape, layout, "cpu", 2, 1)
    seeds = [args["receipt"]["seed"] for op, args in requests_sent if op == "burst"]
    assert seeds == [exchange.receipt_seed, again.receipt_seed] and seeds[0] != seeds[1]
    assert len(exchange.reply.data["receipts"]) == exchange.reply.data["kept"] == 2
    referee.lone_call(shape, layout, "cpu", 0)


def test_the_empty_call_is_calibrated_with_receipts_of_as_many_outputs(referee, requests_sent):
    referee, shape, layout = referee
    referee.sandbox.ask("load", kind="trivial")
    try:
        referee.calibrate_clock(shape, layout)
    finally:
        load_reference(referee)
    bursts = [args for op, args in requests_sent if op == "burst"]
    assert bursts and all("seed" in args["receipt"] for args in bursts)


def test_a_reply_with_receipts_it_was_not_asked_for_breaks_the_protocol(referee, monkeypatch):
    referee, shape, layout = referee
    monkeypatch.setattr(referee.sandbox, "receipts", False)   # asked for none: any receipt is a lie of the protocol
    monkeypatch.setattr(judge.seal, "new_seed", lambda: 99)
    bursts = referee.sandbox.ask("burst", slots=[0], copy_out=True)
    assert bursts.receipt_seed is None and bursts.reply.data["receipts"] == []
    real = Request.encode

    def with_receipt(self):   # the sandbox digests what it is asked, so ask it behind the client's back
        if self.op == "burst":
            return real(Request(self.op, dict(self.args, receipt={"seed": 99})))
        return real(self)
    monkeypatch.setattr(Request, "encode", with_receipt)
    with pytest.raises(ProtocolError, match="1 receipts for 0 outputs"):
        referee.sandbox.ask("burst", slots=[0], copy_out=True)


def test_a_sandbox_that_forges_its_receipts_is_caught_at_the_output_checked():
    with calibrated_judge("receipt-forger", 29, receipts="always") as (referee, shape, layout):
        sha = hashlib.sha256(FORGER.read_bytes()).hexdigest()
        referee.sandbox.ask("load", kind="candidate", path=str(FORGER), sha256=sha,
                            init_inputs=list(referee.problem.init_inputs), init_seed=INIT_SEED)
        with pytest.raises(judge.Integrity) as caught:
            referee.checked_burst(shape, layout, "cpu", 2, 0)
        assert caught.value.check == "D115", caught.value


def test_receipts_cannot_be_turned_off_and_a_bad_setting_is_one_line(tmp_path):
    from harness.config import load_config
    from harness.problem import ProblemError
    assert load_config().get("judge")["receipts"] == "auto"
    config = tmp_path / "bad.yaml"
    config.write_text("judge:\n  receipts: never\n")
    with pytest.raises(ProblemError) as caught:
        load_config(config)
    assert str(caught.value) == f"{config}: judge.receipts: expected auto or always, got 'never'"


def test_every_receipt_of_a_burst_is_checked_not_only_the_output_checked_against_gold():
    # as a sandbox that replied before its last call ended: every receipt true but the last one's
    path = Path(__file__).parent / "fixtures" / "receipt_forge_last.py"
    with calibrated_judge("receipt-partial", 31, receipts="always") as (referee, shape, layout):
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        referee.sandbox.ask("load", kind="candidate", path=str(path), sha256=sha,
                            init_inputs=list(referee.problem.init_inputs), init_seed=INIT_SEED)
        for index in range(3):   # whichever output is drawn for the gold check, the forged receipt is caught
            with pytest.raises(judge.Integrity) as caught:
                referee.checked_burst(shape, layout, "cpu", 4, index)
            assert caught.value.check == "D115" and "output 3" in str(caught.value), caught.value


def test_a_reply_with_fewer_receipts_than_outputs_kept_breaks_the_protocol(referee, monkeypatch):
    referee, shape, layout = referee
    real = judge.parse_reply

    def dropping(line, op):
        reply = real(line, op)
        return Reply(reply.op, True, data=dict(reply.data, receipts=reply.data["receipts"][1:])) \
            if op == "burst" else reply
    monkeypatch.setattr(judge, "parse_reply", dropping)
    with pytest.raises(ProtocolError, match="1 receipts for 2 outputs kept"):
        referee.sandbox.ask("burst", slots=[0, 1], copy_out=True)


def test_a_fetch_that_returns_fewer_outputs_than_asked_breaks_the_protocol(referee, monkeypatch):
    referee, shape, layout = referee
    real = judge.parse_reply

    def dropping(line, op):
        reply = real(line, op)
        return Reply(reply.op, True, data=dict(reply.data, outputs=[])) if op == "fetch" else reply
    monkeypatch.setattr(judge, "parse_reply", dropping)
    referee.sandbox.ask("burst", slots=[0], copy_out=True)
    with pytest.raises(ProtocolError, match="0 outputs for 1 asked"):
        referee.sandbox.ask("fetch", layout.output_bytes, positions=[0], out_slots=[0])
