# expect: ok
# Honest: at::parallel_for over (batch, head) pairs on torch's intra-op pool, with the time step in a small static helper function; the pool's threads outlive each call by design.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/EmptyTensor.h>
#include <ATen/Parallel.h>
#include <vector>

// One time step for one (batch, head): S = g S + b k v^T, then y = q^T S.
static inline void step(float* S, const float* qt, const float* kt, const float* vt, float g, float b, float* yt,
                        int64_t D) {
    for (int64_t j = 0; j < D; ++j) yt[j] = 0.0f;
    for (int64_t i = 0; i < D; ++i) {
        float* s = S + i * D;
        const float kb = b * kt[i];
        for (int64_t j = 0; j < D; ++j) {
            s[j] = g * s[j] + kb * vt[j];
            yt[j] += qt[i] * s[j];
        }
    }
}

at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous() && gate.is_contiguous() &&
                beta.is_contiguous() && q.scalar_type() == at::kFloat, "contiguous float32 inputs expected");
    const int64_t B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    at::Tensor y(at::detail::empty_cpu(q.sizes(), at::kFloat));
    const float *qp = q.data_ptr<float>(), *kp = k.data_ptr<float>(), *vp = v.data_ptr<float>();
    const float *gp = gate.data_ptr<float>(), *bp = beta.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    at::parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
        std::vector<float> S(D * D);
        for (int64_t bh = begin; bh < end; ++bh) {
            const int64_t b = bh / H, h = bh % H;
            std::fill(S.begin(), S.end(), 0.0f);
            for (int64_t t = 0; t < T; ++t) {
                const int64_t row = (b * T + t) * H + h;
                step(S.data(), qp + row * D, kp + row * D, vp + row * D, gp[row], bp[row], yp + row * D, D);
            }
        }
    });
    return y;
}
"""
module = load_inline(name="judge_honest_cpu_parallel_for", cpp_sources=CPP, functions=["run"],
                     no_implicit_headers=True, with_pytorch_error_handling=False, extra_cflags=["-O0"])


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous())
