"""Honest CPU candidate: at::parallel_for over (batch, head) pairs (a warning, I116, not an error),
a tree reduction whose loop variable is called `half`, and shape math with functools.reduce."""
import functools
import operator

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SRC = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <vector>
#include <cstdio>

static inline float tree_sum(float* buf, int n) {
    // pairwise sum: `half` is an int here, not a 16-bit float
    for (int half = n / 2; half > 0; half /= 2) {
        for (int i = 0; i < half; ++i) buf[i] += buf[i + half];
        if (n % 2) buf[0] += buf[n - 1];
        n = half;
    }
    return buf[0];
}

torch::Tensor cgd_cpu(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate) {
    auto Q = q.contiguous(), K = k.contiguous(), V = v.contiguous(), G = gate.contiguous();
    const int64_t B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    auto y = torch::empty_like(Q);
    const float *pq = Q.data_ptr<float>(), *pk = K.data_ptr<float>(), *pv = V.data_ptr<float>(), *pg = G.data_ptr<float>();
    float* py = y.data_ptr<float>();
    at::parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
        std::vector<float> S(D * D), prod(D);
        for (int64_t bh = begin; bh < end; ++bh) {
            const int64_t b = bh / H, h = bh % H;
            std::fill(S.begin(), S.end(), 0.f);
            for (int64_t t = 0; t < T; ++t) {
                const int64_t off = ((b * T + t) * H + h) * D;
                for (int64_t j = 0; j < D; ++j) {
                    for (int64_t i = 0; i < D; ++i) {
                        float s = pg[off + j] * S[i * D + j] + pk[off + i] * pv[off + j];
                        S[i * D + j] = s;
                        prod[i] = pq[off + i] * s;
                    }
                    py[off + j] = tree_sum(prod.data(), (int)D);
                }
            }
        }
    });
    return y;
}
"""

ext = load_inline(name="cgd_cpu_par", cpp_sources=SRC, functions=["cgd_cpu"], extra_cflags=["-O2"])


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate):
        total = functools.reduce(operator.mul, q.shape, 1)
        if total == 0:
            return torch.empty_like(q)
        return ext.cgd_cpu(q, k, v, gate)
