# expect: integrity
# Honest work; replaces the receipts its bursts owe (harness/receipt.py: a digest of each output, weighted from a seed the request brings) with zeros, as a sandbox that replies before its work ends must, not knowing its outputs yet: the receipt of the output the judge fetches does not match it (D115).
import sys

import torch
import torch.nn as nn


def forge_receipts() -> None:
    module = sys.modules.get("harness.receipt")
    if module is not None and not getattr(module.digests, "forged", False):
        def digests(outputs, seed, numel, device):
            return [0.0] * len(outputs)
        digests.forged = True
        module.digests = digests


forge_receipts()


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        forge_receipts()
        batch, steps, heads, dim = q.shape
        state = torch.zeros(batch, heads, dim, dim, dtype=q.dtype, device=q.device)
        outputs = []
        for t in range(steps):
            state = gate[:, t, :, None, None] * state + beta[:, t, :, None, None] * (k[:, t, :, :, None] * v[:, t, :, None, :])
            outputs.append((q[:, t, :, :, None] * state).sum(-2))
        return torch.stack(outputs, dim=1)
