"""Sealed inputs: timed inputs reach the sandbox unreadable, and become readable only inside the request that times them.

A sandbox must copy a timed call's inputs into its own memory (`stage`) before the request that calls it, and the
candidate runs in the sandbox's process: it can replace the sandbox's own `stage` handler and compute every staged
answer there, where neither the judge's burst clock nor its CPU accounting is looking (the judge's corpus:
cpu_stage_precompute, cuda_stage_precompute). So the judge XORs the arena bytes of the input slots it stages for
timing with a keystream drawn from a secret seed, and sends the seed only with the request that calls those slots
(`time`, `burst`, `warm`); the sandbox XORs the same keystream back over the same bytes, in one pass, first
thing in that request, inside the judge's clock. The harness's own empty call is calibrated unsealing as many
slots in each request, so the judge's clock sees the cost on both sides of its subtraction.

The keystream on CUDA is torch's Philox on the device, drawn as 32-bit words. On the CPU it is numpy's
Philox-4x64-10 (a 128-bit key from the seed), drawn and XORed a chunk of `CHUNK_BYTES` at a time (`unseal_`): torch's
CPU generator is a Mersenne Twister (linear, 32 bits of the seed kept), and drawing the whole stream at once
allocated as many bytes as the staged inputs in every request. At 64 slots of 2 MiB that was ~200 ms of the
sandbox's CPU per request (~3 ms a call, page faults included), against ~130 us a call of an honest memory-bound
candidate; the CPU-time check (D108) subtracts that cost as calibrated, so its drift under load read as the
candidate's and refused honest candidates on a busy 2-core CI machine. The judge and its sandbox draw the same
bytes: the same generator on the same device type. Without the seed, no staged byte says anything about the input
it hides.

What it leaves open: the unsealing is one pass over the staged inputs inside the judge's clock, subtracted as
calibrated. A candidate that skips it and XORs the keystream inside its own kernel saves that pass, and the judge's
clock then reads up to one pass over the inputs less than its work (about one call's time for a memory-bound kernel
at the medium and large shapes): room to forge a claim by that much, which D108 would otherwise refuse. Reaching it
takes the Philox stream (torch's on CUDA, numpy's on the CPU) reproduced bit for bit in the candidate's kernel,
and a forged claim."""
from __future__ import annotations

import secrets

import torch


def new_seed() -> int:
    return secrets.randbits(62)


def region(in_offsets, out_offsets, count: int) -> tuple[int, int]:
    """The arena bytes of input slots 0 .. count - 1 (plan_layout lays the slots out in order, then the outputs)."""
    begin = in_offsets[0][0]
    end = in_offsets[count][0] if count < len(in_offsets) else out_offsets[0]
    return begin, end


CHUNK_BYTES = 1 << 18   # a chunk of the CPU keystream: drawn and XORed while it sits in cache (a multiple of 8)


def keystream(seed: int, nbytes: int, device) -> torch.Tensor:
    """`nbytes` bytes (a multiple of 4) drawn from `seed` alone, on `device`, as a uint8 tensor."""
    if nbytes % 4:
        raise ValueError(f"a sealed region is whole 32-bit words, not {nbytes} bytes")
    if torch.device(device).type == "cpu":
        words = _cpu_bits(seed).random_raw((nbytes + 7) // 8)
        return torch.from_numpy(words.view("uint8")[:nbytes])
    generator = torch.Generator(device=device).manual_seed(seed)
    words = torch.randint(-(1 << 31), 1 << 31, (nbytes // 4,), generator=generator, dtype=torch.int32, device=device)
    return words.view(torch.uint8)


def xor_(target: torch.Tensor, stream: torch.Tensor) -> None:
    """XOR `stream` (uint8) into the bytes of a contiguous tensor, in place. Twice restores it bit for bit."""
    if not target.is_contiguous():
        raise ValueError("sealing needs a contiguous tensor")
    data = target.reshape(-1).view(torch.uint8)
    if data.numel() != stream.numel():
        raise ValueError(f"{data.numel()} bytes against a keystream of {stream.numel()}")
    if data.numel():
        data.bitwise_xor_(stream)


def unseal_(target: torch.Tensor, seed: int, device) -> None:
    """`xor_(target, keystream(seed, its size, device))`, on the CPU without the whole stream in memory: a chunk
    at a time, on one thread, no allocation larger than a chunk (so no page faults, whose cost drifts with load)."""
    if torch.device(device).type != "cpu":
        xor_(target, keystream(seed, target.numel() * target.element_size(), device))
        return
    import numpy
    if not target.is_contiguous():
        raise ValueError("sealing needs a contiguous tensor")
    data = target.reshape(-1).view(torch.uint8).numpy()
    if data.size % 4:
        raise ValueError(f"a sealed region is whole 32-bit words, not {data.size} bytes")
    bits = _cpu_bits(seed)
    for start in range(0, data.size, CHUNK_BYTES):
        piece = data[start:start + CHUNK_BYTES]
        numpy.bitwise_xor(piece, bits.random_raw((piece.size + 7) // 8).view("uint8")[:piece.size], out=piece)


def _cpu_bits(seed: int):
    import numpy
    return numpy.random.Philox(seed)
