"""Sealed inputs (harness/seal.py): a timed input set is staged XORed with a keystream of a secret seed, and the
seeds travel only with the request that calls the set. Run on the CPU with the reference standing in for the
candidate. The cheat this answers is tests/adversarial/judge/cpu_stage_precompute.py (answers computed inside the
sandbox's own `stage` handler)."""
from __future__ import annotations

import pytest
import torch

from harness import judge, seal
from harness.verify import tensors_of
from tests.conftest import calibrated_judge, load_reference


@pytest.mark.parametrize("dtype,shape", [(torch.float32, (3, 5)), (torch.float16, (7,)), (torch.int8, (5,)),
                                         (torch.float64, (2, 2)), (torch.float32, (0,))])
def test_sealing_twice_restores_every_bit_and_once_hides_them(dtype, shape):
    plain = (torch.randn(shape) * 100).to(dtype)
    nbytes = plain.numel() * plain.element_size()
    stream = seal.keystream(12345, (nbytes + 3) // 4 * 4, "cpu")[:nbytes]
    sealed = plain.clone()
    seal.xor_(sealed, stream)
    if plain.numel():
        assert not torch.equal(sealed.view(torch.uint8), plain.view(torch.uint8))
    again = sealed.clone()
    seal.xor_(again, seal.keystream(12345, (nbytes + 3) // 4 * 4, "cpu")[:nbytes])   # the same seed, drawn again
    assert torch.equal(again.view(torch.uint8), plain.view(torch.uint8))
    other = sealed.clone()
    seal.xor_(other, seal.keystream(12346, (nbytes + 3) // 4 * 4, "cpu")[:nbytes])   # another seed unseals nothing
    if plain.numel():
        assert not torch.equal(other.view(torch.uint8), plain.view(torch.uint8))


def test_bad_regions_and_tensors_are_refused():
    with pytest.raises(ValueError):
        seal.keystream(1, 6, "cpu")   # not whole words
    with pytest.raises(ValueError):
        seal.xor_(torch.zeros(4, 4).t(), seal.keystream(1, 64, "cpu"))   # not contiguous
    with pytest.raises(ValueError):
        seal.xor_(torch.zeros(4), seal.keystream(1, 8, "cpu"))   # a keystream of another length


@pytest.mark.parametrize("nbytes", [4, 8, 12, 3 * 64 + 4, 5 * 64])
def test_unsealing_a_chunk_at_a_time_is_the_whole_keystream_xored(monkeypatch, nbytes):
    monkeypatch.setattr(seal, "CHUNK_BYTES", 64)   # chunk edges inside, at and past the end of the region
    plain = torch.randint(0, 256, (nbytes,), dtype=torch.uint8)
    whole = plain.clone()
    seal.xor_(whole, seal.keystream(99, nbytes, "cpu"))
    chunked = plain.clone()
    seal.unseal_(chunked, 99, "cpu")
    assert torch.equal(chunked, whole) and not torch.equal(chunked, plain)
    seal.unseal_(chunked, 99, "cpu")
    assert torch.equal(chunked, plain)


def test_unsealing_on_the_cpu_never_holds_the_whole_keystream():
    """What made its cost drift under load (seal.py): a fresh allocation as large as the staged inputs in every
    request, faulted in page by page."""
    import tracemalloc
    target = torch.zeros(16 << 20, dtype=torch.uint8)
    tracemalloc.start()
    try:
        seal.unseal_(target, 5, "cpu")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * seal.CHUNK_BYTES + (1 << 16), peak
    assert target.count_nonzero() > 0


def test_the_region_of_the_first_slots_ends_where_the_next_slot_or_the_outputs_begin():
    layout = judge.plan_layout("s", [(3, 5), (7,)], (3, 5), "float32", 4, 3)
    assert seal.region(layout.in_offsets, layout.out_offsets, 1) == (0, layout.in_offsets[1][0])
    assert seal.region(layout.in_offsets, layout.out_offsets, 3) == (0, layout.out_offsets[0])


@pytest.fixture(scope="module")
def referee():
    with calibrated_judge("seal-test", 11) as (referee, shape, layout):
        load_reference(referee)
        yield referee, shape, layout


def test_a_timed_set_is_staged_sealed_and_its_seed_comes_only_with_the_call(referee, requests_sent):
    referee, shape, layout = referee
    exchange, _ = referee.checked_burst(shape, layout, "cpu", 2, 0)   # the reference's outputs pass D103
    ops = [op for op, _ in requests_sent]
    assert ops[:2] == ["stage", "burst"], ops
    stage_args, burst_args = requests_sent[0][1], requests_sent[1][1]
    assert "unseal" not in stage_args
    assert burst_args["unseal"]["slots"] == 2 and referee.sandbox.sealed is None   # sent once
    # the arena still holds what was staged: sealed, and the seed sent opens it to the inputs the judge drew
    from harness.verify import derive_seed
    begin, end = seal.region(layout.in_offsets, layout.out_offsets, 2)
    stream = seal.keystream(burst_args["unseal"]["seed"], end - begin, "cpu")
    for slot in (0, 1):
        plain = tensors_of(referee.draw(shape, None, derive_seed(referee.secret_seed, "timing", shape.name,
                                                                 "burst", 0, slot)))
        for index, (offset, tensor) in enumerate(zip(layout.in_offsets[slot], plain)):
            staged = referee.arena_view(offset, tuple(tensor.shape), tensor.dtype).clone()
            assert not torch.equal(staged, tensor), (slot, index)
            seal.xor_(staged, stream[offset - begin:offset - begin + tensor.numel() * tensor.element_size()])
            assert torch.equal(staged, tensor), (slot, index)


def test_a_plain_stage_drops_the_seed_of_what_it_overwrites(referee, requests_sent):
    referee, shape, layout = referee
    referee.stage_fresh(shape, layout, "warm", 0, 1)
    assert referee.sandbox.sealed["slots"] == 1
    referee.sandbox.ask("stage", layout.input_bytes, slots=[0])   # as verification stages plain inputs
    assert referee.sandbox.sealed is None
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
    assert all(args["unseal"]["slots"] == 1 for args in timed_singles)
    assert all(args["unseal"]["slots"] == layout.slots for args in fulls)
