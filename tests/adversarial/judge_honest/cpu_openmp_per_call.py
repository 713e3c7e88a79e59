# expect: ok
# Honest: every call opens its own `#pragma omp parallel for` over (batch, head); OpenMP's worker threads stay parked (and may spin briefly) between calls, which the judge's idle-CPU and thread checks must tolerate.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/EmptyTensor.h>
#include <omp.h>
#include <vector>

at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous() && gate.is_contiguous() &&
                beta.is_contiguous() && q.scalar_type() == at::kFloat, "contiguous float32 inputs expected");
    const int64_t B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    at::Tensor y(at::detail::empty_cpu(q.sizes(), at::kFloat));
    const float *qp = q.data_ptr<float>(), *kp = k.data_ptr<float>(), *vp = v.data_ptr<float>();
    const float *gp = gate.data_ptr<float>(), *bp = beta.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    #pragma omp parallel for schedule(static)
    for (int64_t bh = 0; bh < B * H; ++bh) {
        const int64_t b = bh / H, h = bh % H;
        std::vector<float> S(D * D, 0.0f);
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
    return y;
}
"""
module = load_inline(name="judge_honest_cpu_openmp", cpp_sources=CPP, functions=["run"], no_implicit_headers=True,
                     with_pytorch_error_handling=False, extra_cflags=["-O2", "-fopenmp"], extra_ldflags=["-lgomp"])


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous())
