"""Sealed inputs (harness/seal.py): a timed input set is staged XORed with a keystream of a secret seed, and the
seeds travel only with the request that calls the set. Run on the CPU with the reference standing in for the
candidate. The cheat this answers is tests/adversarial/judge/cpu_stage_precompute.py (answers computed inside the
sandbox's own `stage` handler)."""
from __future__ import annotations

import pytest
import torch

from harness import judge, seal
from harness.protocol import Request
from harness.verify import tensors_of
from tests.conftest import calibrated_judge, load_reference


@pytest.mark.parametrize("dtype,shape", [(torch.float32, (3, 5)), (torch.float16, (7,)), (torch.int8, (5,)),
                                         (torch.float64, (2, 2)), (torch.float32, (0,))])
def test_sealing_twice_restores_every_bit_and_once_hides_them(dtype, shape):
    plain = (torch.randn(shape) * 100).to(dtype)
    sealed = plain.clone()
    seal.seal_(sealed, 12345)
    if plain.numel():
        assert not torch.equal(sealed.view(torch.uint8), plain.view(torch.uint8))
    again = sealed.clone()
    seal.seal_(again, 12345)
    assert torch.equal(again.view(torch.uint8), plain.view(torch.uint8))
    other = sealed.clone()
    seal.seal_(other, 12346)   # another seed unseals nothing
    if plain.numel():
        assert not torch.equal(other.view(torch.uint8), plain.view(torch.uint8))


def test_a_non_contiguous_tensor_is_refused():
    with pytest.raises(ValueError):
        seal.seal_(torch.zeros(4, 4).t(), 1)


@pytest.fixture(scope="module")
def referee():
    with calibrated_judge("seal-test", 11) as (referee, shape, layout):
        load_reference(referee)
        yield referee, shape, layout


@pytest.fixture
def requests_sent(monkeypatch):
    """Every request the judge writes to a sandbox, as (op, args), in order."""
    sent: list[tuple[str, dict]] = []
    encode = Request.encode

    def recording(self):
        sent.append((self.op, dict(self.args)))
        return encode(self)
    monkeypatch.setattr(Request, "encode", recording)
    return sent


def test_a_timed_set_is_staged_sealed_and_its_seeds_come_only_with_the_call(referee, requests_sent):
    referee, shape, layout = referee
    exchange, _ = referee.checked_burst(shape, layout, "cpu", 2, 0)   # the reference's outputs pass D103
    ops = [op for op, _ in requests_sent]
    assert ops[:2] == ["stage", "burst"], ops
    stage_args, burst_args = requests_sent[0][1], requests_sent[1][1]
    assert "unseal" not in stage_args
    unseal = dict((slot, seeds) for slot, seeds in burst_args["unseal"])
    assert sorted(unseal) == [0, 1] and all(len(seeds) == len(layout.inputs) for seeds in unseal.values())
    assert not referee.sandbox.sealed   # each seed is sent once
    # the arena still holds what was staged: sealed, and the seeds sent open it to the inputs the judge drew
    from harness.verify import derive_seed
    for slot in (0, 1):
        plain = tensors_of(referee.draw(shape, None, derive_seed(referee.secret_seed, "timing", shape.name,
                                                                 "burst", 0, slot)))
        for index, (offset, tensor) in enumerate(zip(layout.in_offsets[slot], plain)):
            staged = referee.arena_view(offset, tuple(tensor.shape), tensor.dtype).clone()
            assert not torch.equal(staged, tensor), (slot, index)
            seal.seal_(staged, unseal[slot][index])
            assert torch.equal(staged, tensor), (slot, index)


def test_a_plain_stage_drops_the_seeds_of_what_it_overwrites(referee, requests_sent):
    referee, shape, layout = referee
    referee.stage_fresh(shape, layout, "warm", 0, 1)
    assert 0 in referee.sandbox.sealed
    referee.sandbox.ask("stage", layout.input_bytes, slots=[0])   # as verification stages plain inputs
    assert 0 not in referee.sandbox.sealed
    referee.sandbox.ask("burst", slots=[0], copy_out=True)
    assert "unseal" not in requests_sent[-1][1]


def test_the_empty_call_is_calibrated_unsealing_what_the_timed_requests_unseal(referee, requests_sent):
    referee, shape, layout = referee
    referee.sandbox.ask("load", kind="trivial")
    try:
        referee.calibrate_clock(shape, layout)
    finally:
        load_reference(referee)
    bursts = [args for op, args in requests_sent if op == "burst"]
    untimed = bursts[0::3][:3]   # per round: the untimed single, the timed single, the full burst
    timed_singles, fulls = bursts[1::3][:3], bursts[2::3][:3]
    assert all("unseal" not in args for args in untimed)
    assert all([slot for slot, _ in args["unseal"]] == [0] for args in timed_singles)
    assert all([slot for slot, _ in args["unseal"]] == list(range(layout.slots)) for args in fulls)
    assert all(len(seeds) == len(layout.inputs) for args in fulls for _, seeds in args["unseal"])
    assert judge.unseal_as_timed(layout, [0]) == [[0, [1] * len(layout.inputs)]]
