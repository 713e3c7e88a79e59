"""Sealed inputs: timed inputs reach the sandbox unreadable, and become readable only inside the request that times them.

A sandbox must copy a timed call's inputs into its own memory (`stage`) before the request that calls it, and the
candidate runs in the sandbox's process: it can replace the sandbox's own `stage` handler and compute every staged
answer there, where neither the judge's burst clock nor its CPU accounting is looking (the judge's corpus:
cpu_stage_precompute, cuda_stage_precompute). So the judge XORs the arena bytes of the input slots it stages for
timing with a keystream drawn from a secret seed, and sends the seed only with the request that calls those slots
(`time`, `burst`, `warm`); the sandbox XORs the same keystream back over the same bytes, in one operation, first
thing in that request, inside the judge's clock. The harness's own empty call is calibrated unsealing as many
slots in each request, so the judge's clock sees the cost on both sides of its subtraction.

The keystream is torch's own generator (Philox on CUDA; the CPU's Mersenne Twister keeps 32 bits of the seed)
drawn as 32-bit words: the judge and its sandbox run the same torch on the same device type, so both draw the same
bytes. Without the seed, no staged byte says anything about the input it hides.

What it leaves open: the unsealing is one pass over the staged inputs inside the judge's clock, subtracted as
calibrated. A candidate that skips it and XORs the keystream inside its own kernel saves that pass, and the judge's
clock then reads up to one pass over the inputs less than its work (about one call's time for a memory-bound kernel
at the medium and large shapes): room to forge a claim by that much, which D108 would otherwise refuse. Reaching it
takes torch's Philox stream reproduced bit for bit in the candidate's kernel, and a forged claim."""
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


def keystream(seed: int, nbytes: int, device) -> torch.Tensor:
    """`nbytes` bytes (a multiple of 4) drawn from `seed` alone, on `device`, as a uint8 tensor."""
    if nbytes % 4:
        raise ValueError(f"a sealed region is whole 32-bit words, not {nbytes} bytes")
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
