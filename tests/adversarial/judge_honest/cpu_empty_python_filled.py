# expect: ok
# Honest: the output is allocated fresh by torch.empty in Python on every call and filled in full by the C++ function, which returns nothing.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/core/Tensor.h>
#include <vector>

void fill(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta, at::Tensor y) {
    TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous() && gate.is_contiguous() &&
                beta.is_contiguous() && q.scalar_type() == at::kFloat, "contiguous float32 inputs expected");
    TORCH_CHECK(y.is_contiguous() && y.sizes() == q.sizes() && y.scalar_type() == at::kFloat, "bad output tensor");
    const int64_t B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    const float *qp = q.data_ptr<float>(), *kp = k.data_ptr<float>(), *vp = v.data_ptr<float>();
    const float *gp = gate.data_ptr<float>(), *bp = beta.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    std::vector<float> S(D * D);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h) {
            std::fill(S.begin(), S.end(), 0.0f);
            for (int64_t t = 0; t < T; ++t) {
                const int64_t row = (b * T + t) * H + h;
                const float *qt = qp + row * D, *kt = kp + row * D, *vt = vp + row * D;
                float* yt = yp + row * D;
                for (int64_t j = 0; j < D; ++j) yt[j] = 0.0f;
                for (int64_t i = 0; i < D; ++i) {
                    float* s = S.data() + i * D;
                    const float kb = bp[row] * kt[i];
                    for (int64_t j = 0; j < D; ++j) {
                        s[j] = gp[row] * s[j] + kb * vt[j];
                        yt[j] += qt[i] * s[j];
                    }
                }
            }
        }
}
"""
module = load_inline(name="judge_honest_cpu_empty_filled", cpp_sources=CPP, functions=["fill"],
                     no_implicit_headers=True, with_pytorch_error_handling=False, extra_cflags=["-O0"])


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        q = q.contiguous()
        y = torch.empty(q.shape, dtype=q.dtype, device=q.device)
        module.fill(q, k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous(), y)
        return y
