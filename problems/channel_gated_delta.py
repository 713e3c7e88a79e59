"""Reference for channel_gated_delta: a gated linear-attention recurrence with per-channel gates.

For each step t, per (batch, head):
    state[i, j] = gate_t[j] * state[i, j] + k_t[i] * v_t[j]   state is (D, D), starts at 0
    y_t[j] = sum_i q_t[i] * state[i, j]
q, k, v, gate, y are all (B, T, H, D); the gate scales the value (column) index j. No beta.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, gate):
        batch, steps, heads, dim = q.shape
        state = torch.zeros(batch, heads, dim, dim, dtype=q.dtype, device=q.device)
        outputs = []
        for t in range(steps):
            state = gate[:, t].unsqueeze(-2) * state + k[:, t, :, :, None] * v[:, t, :, None, :]
            outputs.append((q[:, t, :, :, None] * state).sum(-2))
        return torch.stack(outputs, dim=1)


def get_init_inputs():
    return []


def get_inputs(B=2, T=128, H=4, D=24, generator=None):
    """KernelBench-style default inputs; the harness draws its own from the problem YAML."""
    shape = (B, T, H, D)
    q = torch.randn(shape, generator=generator)
    k = torch.randn(shape, generator=generator)
    v = torch.randn(shape, generator=generator)
    gate = torch.sigmoid(torch.randn(shape, generator=generator) + 2.0)
    return [q, k, v, gate]
