# expect: I101
# CPU candidate whose forward uses the @ operator on tensors.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SOURCE = r"""#include <torch/extension.h>
#include <vector>
#include <algorithm>

torch::Tensor sgd(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta) {
    auto y = torch::empty_like(q);
    const int64_t B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    std::vector<float> S(D * D);
    const float *Q = q.data_ptr<float>(), *K = k.data_ptr<float>(), *V = v.data_ptr<float>();
    const float *G = gate.data_ptr<float>(), *Bt = beta.data_ptr<float>();
    float* Y = y.data_ptr<float>();
    for (int64_t b = 0; b < B; ++b) for (int64_t h = 0; h < H; ++h) {
        std::fill(S.begin(), S.end(), 0.f);
        for (int64_t t = 0; t < T; ++t) {
            const int64_t row = (b * T + t) * H + h;
            for (int64_t j = 0; j < D; ++j) {
                float acc = 0.f;
                for (int64_t i = 0; i < D; ++i) {
                    float s = G[row] * S[i * D + j] + Bt[row] * K[row * D + i] * V[row * D + j];
                    S[i * D + j] = s;
                    acc += Q[row * D + i] * s;
                }
                Y[row * D + j] = acc;
            }
        }
    }
    return y;
}
"""


ext = load_inline(
    name="i101_matmul_operator_cpu",
    cpp_sources=SOURCE,
    functions=["sgd"],
)



class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, gate, beta):
        B, T, H, D = q.shape
        kv = k.transpose(-1, -2) @ v
        y = ext.sgd(q, k, v, gate, beta)
        return y + 0 * kv.sum()
