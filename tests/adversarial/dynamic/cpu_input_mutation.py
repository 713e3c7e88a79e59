# expect: integrity:D101
# Correct answer, but folds beta into k in place (k *= beta) to save a multiply: the input changes.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/EmptyTensor.h>
#include <algorithm>
#include <vector>
// honest reference: y = scalar gated delta rule of (q, k, v, gate, beta), all contiguous float32
static void reference(const float *qp, const float *kp, const float *vp, const float *gp, const float *bp,
                      float *yp, int64_t B, int64_t T, int64_t H, int64_t D) {
    std::vector<float> state(D * D);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h) {
            std::fill(state.begin(), state.end(), 0.0f);
            for (int64_t t = 0; t < T; ++t) {
                const int64_t row = (b * T + t) * H + h;
                const float g = gp[row], be = bp[row];
                const float *kt = kp + row * D, *vt = vp + row * D, *qt = qp + row * D;
                float *yt = yp + row * D;
                for (int64_t j = 0; j < D; ++j) yt[j] = 0.0f;
                for (int64_t i = 0; i < D; ++i) {
                    float *s = state.data() + i * D;
                    for (int64_t j = 0; j < D; ++j) {
                        s[j] = g * s[j] + be * kt[i] * vt[j];
                        yt[j] += qt[i] * s[j];
                    }
                }
            }
        }
}

at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    const int64_t B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    float *kp = k.data_ptr<float>();
    const float *bp = beta.data_ptr<float>();
    for (int64_t r = 0; r < B * T * H; ++r)
        for (int64_t j = 0; j < D; ++j) kp[r * D + j] *= bp[r];
    auto ones = at::detail::empty_cpu(beta.sizes(), at::kFloat);
    std::fill_n(ones.data_ptr<float>(), ones.numel(), 1.0f);
    auto y = at::detail::empty_cpu(q.sizes(), at::kFloat);
    reference(q.data_ptr<float>(), kp, v.data_ptr<float>(), gate.data_ptr<float>(), ones.data_ptr<float>(),
              y.data_ptr<float>(), B, T, H, D);
    return y;
}
"""

module = load_inline(name="dyn_cpu_input_mutation", cpp_sources=CPP, functions=["run"],
                     no_implicit_headers=True, with_pytorch_error_handling=False, extra_cflags=["-O0"])


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous())
