"""Honest CPU candidate: C++ walks T in chunks; a Python helper computes the chunk bounds.

The helper takes the tensor only to read its length, and compares plain ints (`while start < total`,
`if end > total`); forward compares the bounds it gets back. None of that is tensor math, though
the helper is called with a tensor (I101 once read its result as one).
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>

// Steps [start, end) of the recurrence; `state` (B, H, D, D) carries over from the previous chunk.
void gated_delta_chunk(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate,
                       torch::Tensor beta, torch::Tensor state, torch::Tensor y, int64_t start, int64_t end) {
    TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous(), "expected contiguous q, k, v");
    TORCH_CHECK(gate.is_contiguous() && beta.is_contiguous() && y.is_contiguous(), "expected contiguous inputs");
    const int64_t B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    TORCH_CHECK(0 <= start && start <= end && end <= T, "chunk out of range");
    const float *qp = q.data_ptr<float>(), *kp = k.data_ptr<float>(), *vp = v.data_ptr<float>();
    const float *gp = gate.data_ptr<float>(), *bp = beta.data_ptr<float>();
    float *sp = state.data_ptr<float>(), *yp = y.data_ptr<float>();
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h) {
            float* s = sp + (b * H + h) * D * D;
            for (int64_t t = start; t < end; ++t) {
                const int64_t row = (b * T + t) * H + h;
                const float g = gp[row], be = bp[row];
                const float *kt = kp + row * D, *vt = vp + row * D, *qt = qp + row * D;
                float* yt = yp + row * D;
                for (int64_t j = 0; j < D; ++j) yt[j] = 0.0f;
                for (int64_t i = 0; i < D; ++i) {
                    float* si = s + i * D;
                    const float kb = be * kt[i];
                    for (int64_t j = 0; j < D; ++j) {
                        si[j] = g * si[j] + kb * vt[j];
                        yt[j] += qt[i] * si[j];
                    }
                }
            }
        }
}
"""

module = load_inline(name="honest_int_compare_helper", cpp_sources=CPP, functions=["gated_delta_chunk"],
                     extra_cflags=["-O2"])


def chunk_bounds(x, chunk):
    """(start, end) pairs covering x's time axis, `chunk` steps at a time."""
    total = x.shape[1]
    bounds = []
    start = 0
    while start < total:
        end = start + chunk
        if end > total:
            end = total
        bounds.append((start, end))
        start = end
    return bounds


class ModelNew(nn.Module):
    def __init__(self, chunk: int = 32):
        super().__init__()
        self.chunk = chunk

    def forward(self, q, k, v, gate, beta):
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        gate, beta = gate.contiguous(), beta.contiguous()
        batch, t, heads, dim = q.shape
        y = torch.empty_like(q)
        state = torch.zeros((batch, heads, dim, dim), dtype=q.dtype, device=q.device)
        done = 0
        for start, end in chunk_bounds(q, self.chunk):
            if start != done or end > t:
                raise RuntimeError(f"chunk [{start}, {end}) does not continue at {done}")
            module.gated_delta_chunk(q, k, v, gate, beta, state, y, start, end)
            done = end
        return y
