# Honest CPU candidate: C++ only, plain loops, std::vector scratch; no CUDA.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = """
#include <torch/extension.h>
#include <vector>
#include <algorithm>
#include <cmath>

// Reference uses torch.stack and .sum; here everything is explicit loops.
torch::Tensor channel_gated_delta(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate) {
    TORCH_CHECK(q.dim() == 4, "q must be (B, T, H, D)");
    TORCH_CHECK(!q.is_cuda(), "CPU candidate");
    auto qc = q.contiguous(), kc = k.contiguous(), vc = v.contiguous(), gc = gate.contiguous();
    const int64_t B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    auto y = torch::empty({B, T, H, D}, q.options());
    const float* Q = qc.data_ptr<float>();
    const float* K = kc.data_ptr<float>();
    const float* V = vc.data_ptr<float>();
    const float* G = gc.data_ptr<float>();
    float* Y = y.data_ptr<float>();
    std::vector<float> state(D * D);
    for (int64_t b = 0; b < B; ++b) {
        for (int64_t h = 0; h < H; ++h) {
            std::fill(state.begin(), state.end(), 0.0f);
            for (int64_t t = 0; t < T; ++t) {
                const int64_t off = ((b * T + t) * H + h) * D;
                for (int64_t i = 0; i < D; ++i) {
                    for (int64_t j = 0; j < D; ++j) {
                        float& s = state[i * D + j];
                        s = G[off + j] * s + K[off + i] * V[off + j];
                    }
                }
                for (int64_t j = 0; j < D; ++j) {
                    float acc = 0.0f;
                    for (int64_t i = 0; i < D; ++i) acc += Q[off + i] * state[i * D + j];
                    Y[off + j] = acc;
                }
            }
        }
    }
    return y;
}
"""

ext = load_inline(name="cgd_cpu", cpp_sources=cpp_src, functions=["channel_gated_delta"], extra_cflags=["-O3"])


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate):
        if q.dim() != 4:
            raise ValueError(f"expected 4-d input, got {q.dim()}")
        return ext.channel_gated_delta(q, k, v, gate)
