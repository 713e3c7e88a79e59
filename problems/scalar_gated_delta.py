"""Reference for scalar_gated_delta: a gated linear-attention recurrence with scalar gates.

For each step t, per (batch, head):
    state = gate_t * state + beta_t * outer(k_t, v_t)      state is (D, D), starts at 0
    y_t[j] = sum_i q_t[i] * state[i, j]
q, k, v, y are (B, T, H, D); gate and beta are (B, T, H).
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, gate, beta):
        batch, steps, heads, dim = q.shape
        state = torch.zeros(batch, heads, dim, dim, dtype=q.dtype, device=q.device)
        outputs = []
        for t in range(steps):
            gate_t = gate[:, t, :, None, None]
            beta_t = beta[:, t, :, None, None]
            state = gate_t * state + beta_t * (k[:, t, :, :, None] * v[:, t, :, None, :])
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
    gate = torch.sigmoid(torch.randn((B, T, H), generator=generator) + 2.0)
    beta = torch.rand((B, T, H), generator=generator)
    return [q, k, v, gate, beta]
