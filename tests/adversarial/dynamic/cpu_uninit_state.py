# expect: wrong or integrity:D103 or integrity:D105
# Takes the recurrent state from an uninitialised allocation and never zeroes it: reads uninitialised (NaN-poisoned) memory.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/EmptyTensor.h>
#include <vector>

at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    const int64_t B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    auto y = at::detail::empty_cpu(q.sizes(), at::kFloat);
    auto state = at::detail::empty_cpu({D, D}, at::kFloat);
    const float *qp = q.data_ptr<float>(), *kp = k.data_ptr<float>(), *vp = v.data_ptr<float>();
    const float *gp = gate.data_ptr<float>(), *bp = beta.data_ptr<float>();
    float *yp = y.data_ptr<float>(), *sp = state.data_ptr<float>();
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
            for (int64_t t = 0; t < T; ++t) {
                const int64_t row = (b * T + t) * H + h;
                const float *kt = kp + row * D, *vt = vp + row * D, *qt = qp + row * D;
                float *yt = yp + row * D;
                for (int64_t j = 0; j < D; ++j) yt[j] = 0.0f;
                for (int64_t i = 0; i < D; ++i)
                    for (int64_t j = 0; j < D; ++j) {
                        float &s = sp[i * D + j];
                        s = (t == 0 ? 0.0f * s : gp[row] * s) + bp[row] * kt[i] * vt[j];
                        yt[j] += qt[i] * s;
                    }
            }
    return y;
}
"""

module = load_inline(name="dyn_cpu_uninit_state", cpp_sources=CPP, functions=["run"],
                     no_implicit_headers=True, with_pytorch_error_handling=False, extra_cflags=["-O0"])


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous())
