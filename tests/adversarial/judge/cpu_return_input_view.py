# expect: integrity or wrong
# Allocates nothing: the extension writes each y_t over q_t (q_t is not needed after step t, so the numbers are right) and forward returns a view of q. The output aliases an input that the judge's arena owns, and the input is no longer what the judge wrote: the sandbox's alias check or the judge's same-input-twice check catches it.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/core/Tensor.h>
#include <vector>

at::Tensor run_in_place(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous() && gate.is_contiguous() &&
                beta.is_contiguous() && q.scalar_type() == at::kFloat, "contiguous float32 inputs expected");
    const int64_t B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    float* qp = q.data_ptr<float>();
    const float *kp = k.data_ptr<float>(), *vp = v.data_ptr<float>();
    const float *gp = gate.data_ptr<float>(), *bp = beta.data_ptr<float>();
    std::vector<float> S(D * D), yt(D);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h) {
            std::fill(S.begin(), S.end(), 0.0f);
            for (int64_t t = 0; t < T; ++t) {
                const int64_t row = (b * T + t) * H + h;
                float* qt = qp + row * D;
                const float *kt = kp + row * D, *vt = vp + row * D;
                std::fill(yt.begin(), yt.end(), 0.0f);
                for (int64_t i = 0; i < D; ++i) {
                    float* s = S.data() + i * D;
                    const float kb = bp[row] * kt[i];
                    for (int64_t j = 0; j < D; ++j) {
                        s[j] = gp[row] * s[j] + kb * vt[j];
                        yt[j] += qt[i] * s[j];
                    }
                }
                std::copy(yt.begin(), yt.end(), qt);   // q_t is spent: its memory now holds y_t
            }
        }
    return q;
}
"""
ext = load_inline(name="judge_cpu_return_input_view", cpp_sources=CPP, functions=["run_in_place"],
                  no_implicit_headers=True, with_pytorch_error_handling=False, extra_cflags=["-O0"])


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        y = ext.run_in_place(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous())
        return y.view(y.shape)
