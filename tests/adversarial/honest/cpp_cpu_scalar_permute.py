"""Honest CPU candidate for scalar_gated_delta: inputs permuted to (B, H, T, D) views first."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SOURCE = """
#include <torch/extension.h>
#include <cstring>

namespace {
inline void zero(float* p, int64_t n) { std::memset(p, 0, sizeof(float) * n); }
}  // namespace

torch::Tensor sgd_cpu(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor g, torch::Tensor beta) {
    // q, k, v: (B, H, T, D) contiguous; g, beta: (B, H, T)
    const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3);
    torch::Tensor y = torch::empty({B, H, T, D}, q.options());
    torch::Tensor state = torch::zeros({D, D}, q.options());
    float* S = state.data_ptr<float>();
    auto qa = q.accessor<float, 4>();
    auto ka = k.accessor<float, 4>();
    auto va = v.accessor<float, 4>();
    auto ga = g.accessor<float, 3>();
    auto ba = beta.accessor<float, 3>();
    auto ya = y.accessor<float, 4>();
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h) {
            zero(S, D * D);
            for (int64_t t = 0; t < T; ++t) {
                const float gt = ga[b][h][t], bt = ba[b][h][t];
                for (int64_t j = 0; j < D; ++j) {
                    float acc = 0.f;
                    for (int64_t i = 0; i < D; ++i) {
                        float s = gt * S[i * D + j] + bt * ka[b][h][t][i] * va[b][h][t][j];
                        S[i * D + j] = s;
                        acc += qa[b][h][t][i] * s;
                    }
                    ya[b][h][t][j] = acc;
                }
            }
        }
    return y;
}
"""

sgd = load_inline(name="sgd_cpu_perm", cpp_sources=[SOURCE], functions=["sgd_cpu"])


def _bhtd(x):
    return x.permute(0, 2, 1, 3).contiguous()


def _bht(x):
    return x.transpose(1, 2).contiguous()


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        batch, steps, heads, dim = q.shape
        y = sgd.sgd_cpu(_bhtd(q), _bhtd(k), _bhtd(v), _bht(gate), _bht(beta))
        y = y.permute(0, 2, 1, 3)
        return y.contiguous().view(batch, steps, heads, dim)
