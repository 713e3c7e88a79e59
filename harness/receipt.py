"""Burst receipts: the reply to a burst carries a keyed digest of every output it kept, so the reply cannot leave
the sandbox before the outputs exist.

The judge's clock on a burst runs from its request to the sandbox's reply. The candidate runs in the sandbox's
process and can patch the synchronize at the end of a burst away: the reply then arrives while the burst's work is
still queued on the GPU, and only a later fetch would wait for it (D109, whose margin is milliseconds). So every
timed burst's request carries a fresh seed, and the reply must carry, for each output the burst kept, the sum of
its elements weighted by random weights drawn from that seed. No value of it is known before the output is: a
weight per element, independent of every other, leaves no shortcut through the operator (a weight shared along an
axis would: for a linear recurrence, a fixed weight on the output's last axis is carried by a vector recurrence
D times cheaper than the state's). After the reply, the judge checks one output drawn in secret against gold,
and the receipts of it and of the burst's other outputs against its own digests of their bytes (D115;
judge.Judge.check_receipts). A sandbox that forged even one receipt to reply early is caught; one that computed
them waited for its outputs inside the judge's clock.

The digest sums the float32 products in groups of 16 in float32, and the groups' sums in float64: no float64
copy of the products, which a float64 sum of them makes first (on an H100 at the large shape: 438 µs an output
against 782; `tools/receipt_bench.py`). Each side's rounding is then at most 15 float32 ulps of the sum of the
products' magnitudes (float64's adds far less), so the judge allows twice 16 (`TOLERANCE`); the products are
the same bits on both sides, and only the order of the sums may differ (the sandbox digests small outputs
together). A receipt made up without its output passes only by landing that close to the digest: for normal
outputs the digest's spread is ~1.4 / sqrt(n) of that sum, so a guess lands with odds ~1e-6 sqrt(n) (~1% a
receipt at the large shape's 67M elements). A burst's receipts cost one draw of the weights and four passes over
each kept output (six for outputs small enough to be stacked and digested together, which saves launches); the
harness's own empty call is calibrated with receipts of as many outputs, so the judge's clock subtracts it.

What it leaves open: a candidate whose kernel folds the weighted sum into its own output pass saves those passes,
and the judge's clock then reads up to a few passes over the outputs less than its work."""
from __future__ import annotations

import math

import torch

ROW = 16                           # products summed in float32 by groups of ROW, the groups in float64
TOLERANCE = 2 * ROW * 2.0 ** -24   # relative to the sum of the products' magnitudes
GROUP_ELEMENTS = 1 << 22           # outputs smaller than this are digested together


def weights(seed: int, numel: int, device) -> torch.Tensor:
    """`numel` float32 weights in [-0.5, 0.5), drawn from `seed` on `device`: the same values in any process
    drawing them on the same device type (torch's Philox on CUDA, its Mersenne Twister on the CPU)."""
    generator = torch.Generator(device=device).manual_seed(seed)
    return torch.empty(numel, dtype=torch.float32, device=device).uniform_(-0.5, 0.5, generator=generator)


def products(outs: list, weight: torch.Tensor) -> torch.Tensor:
    """(len(outs), numel) float32: each output's elements times the weights, an output a row."""
    flat = [out.detach().reshape(1, -1).to(torch.float32) for out in outs]
    return (flat[0] if len(flat) == 1 else torch.cat(flat)) * weight


def digest(product: torch.Tensor) -> torch.Tensor:
    """Each row of `product` (float32, one output's products a row) summed: its elements in groups of ROW, each
    group's in float32 and the groups' in float64 (a float64 tensor of one value a row). A group is ROW elements
    a stride apart, so that the float32 sums read memory in order."""
    count, numel = product.shape
    whole = numel - numel % ROW
    grouped = product[:, :whole].reshape(count, ROW, -1).sum(dim=1)
    if whole < numel:   # a partial group: its products as they are
        grouped = torch.cat((grouped, product[:, whole:]), dim=1)
    return grouped.sum(dim=1, dtype=torch.float64)


def group_size(numel: int, device_type: str) -> int:
    """How many outputs of `numel` elements are digested together."""
    return max(1, GROUP_ELEMENTS // max(1, numel)) if device_type == "cuda" else 1


def digests(outputs: list, seed: int, numel: int, device) -> list[float]:
    """The receipt of a burst: one digest per kept output, NaN for one that is not a tensor of `numel` elements
    (the output itself fails its check wherever it is fetched). On CUDA, outputs of fewer than GROUP_ELEMENTS
    elements are digested many at a time, a few launches for all: a burst of small ones is bound by launches. On
    the CPU one at a time: stacking them allocates fresh pages (64 of 24,576 elements: 9.5 ms against 3.3)."""
    if not outputs:
        return []
    weight = weights(seed, numel, device)
    valid = [index for index, out in enumerate(outputs)
             if isinstance(out, torch.Tensor) and out.numel() == numel and out.device.type == weight.device.type]
    per_group = group_size(numel, weight.device.type)
    sums = [digest(products([outputs[index] for index in valid[first:first + per_group]], weight))
            for first in range(0, len(valid), per_group)]
    values = (sums[0] if len(sums) == 1 else torch.cat(sums)).tolist() if sums else []   # waits for every output
    result = [math.nan] * len(outputs)
    for index, value in zip(valid, values):
        result[index] = value
    return result


def mismatch(claimed: float, out: torch.Tensor, seed: int, device) -> str:
    """Why a receipt does not match an output the judge fetched, or "" if it does."""
    product = products([out], weights(seed, out.numel(), device))
    expected = float(digest(product)[0])
    scale = float(product.abs().sum(dtype=torch.float64))
    if math.isfinite(expected) and math.isfinite(claimed) and abs(claimed - expected) <= TOLERANCE * scale:
        return ""
    if not math.isfinite(expected) and (claimed == expected or (math.isnan(claimed) and math.isnan(expected))):
        return ""
    return f"receipt {claimed!r}, the output fetched digests to {expected!r}"
