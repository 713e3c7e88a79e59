"""Sealed inputs: timed inputs reach the sandbox unreadable, and become readable only inside the timed request.

A sandbox must copy a timed call's inputs into its own memory (`stage`) before the request that calls it, and the
candidate runs in the sandbox's process: it can replace the sandbox's own `stage` handler and compute every staged
answer there, where neither the judge's burst clock nor its CPU accounting is looking (the judge's corpus:
cpu_stage_precompute). So the judge stages each timed input set XORed with a keystream of its own, drawn from a
secret seed per input tensor, and sends the seeds only with the request that calls the set (`time`, `burst`,
`warm`); the sandbox XORs the same keystream back in place first thing in that request, inside the judge's clock.
The harness's own empty call is calibrated with the same unsealing in each request, so the judge's clock sees
the same cost on both sides of its subtraction.

The keystream is torch's own generator (Philox on CUDA, Mersenne Twister on the CPU) seeded with 62 secret bits:
the judge and its sandbox run the same torch on the same device type, so both draw the same words. Without the
seed, no staged byte says anything about the input it seals."""
from __future__ import annotations

import secrets

import torch

_WORDS = {4: torch.int32, 2: torch.int16, 1: torch.int8}


def new_seed() -> int:
    return secrets.randbits(62)


def _words(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor's bytes as the widest integer words that tile them (a view: XOR into it changes the tensor)."""
    flat = tensor.reshape(-1).view(torch.uint8)
    for size, dtype in _WORDS.items():
        if flat.numel() % size == 0:
            return flat.view(dtype)
    raise AssertionError("unreachable: one byte always tiles")


def keystream(seed: int, words: torch.Tensor) -> torch.Tensor:
    """Words as many and of the same type as `words`, on its device, drawn from `seed` alone."""
    bits = 8 * words.element_size()
    generator = torch.Generator(device=words.device).manual_seed(seed)
    return torch.randint(-(1 << (bits - 1)), 1 << (bits - 1), (words.numel(),), generator=generator,
                         dtype=words.dtype, device=words.device)


def seal_(tensor: torch.Tensor, seed: int) -> None:
    """XOR the keystream of `seed` into a contiguous tensor's bytes, in place. Sealing and unsealing are the same
    operation: twice restores the tensor bit for bit."""
    if not tensor.is_contiguous():
        raise ValueError("sealing needs a contiguous tensor")
    if tensor.numel() == 0:
        return
    words = _words(tensor)
    words.bitwise_xor_(keystream(seed, words))
