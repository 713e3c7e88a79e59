# expect: ok
# Honest: importing compiles nothing; the extension is built by load_inline on the first forward call (inside the sandbox, with its private HOME/TMPDIR), then reused.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/EmptyTensor.h>
#include <vector>

at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous() && gate.is_contiguous() &&
                beta.is_contiguous() && q.scalar_type() == at::kFloat, "contiguous float32 inputs expected");
    const int64_t B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    at::Tensor y(at::detail::empty_cpu(q.sizes(), at::kFloat));
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
    return y;
}
"""

_module = None


def extension():
    """The compiled extension, built on first use."""
    global _module
    if _module is None:
        _module = load_inline(name="judge_honest_cpu_lazy_build", cpp_sources=CPP, functions=["run"],
                              no_implicit_headers=True, with_pytorch_error_handling=False, extra_cflags=["-O0"])
    return _module


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return extension().run(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous())
