# expect: I117
# Python-level cache in a generator made in __init__ and driven by .send(): once accepted (a gap), now rejected by I117.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>
#include <vector>

// honest reference: y = scalar gated delta rule of (q, k, v, gate, beta), all contiguous float32
torch::Tensor run(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta) {
    const int64_t B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    auto y = torch::empty_like(q);
    const float *qp = q.data_ptr<float>(), *kp = k.data_ptr<float>(), *vp = v.data_ptr<float>();
    const float *gp = gate.data_ptr<float>(), *bp = beta.data_ptr<float>();
    float *yp = y.data_ptr<float>();
    std::vector<float> state(D * D);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h) {
            std::fill(state.begin(), state.end(), 0.0f);
            for (int64_t t = 0; t < T; ++t) {
                const int64_t row = (b * T + t) * H + h;
                const float *kt = kp + row * D, *vt = vp + row * D, *qt = qp + row * D;
                float *yt = yp + row * D;
                for (int64_t j = 0; j < D; ++j) yt[j] = 0.0f;
                for (int64_t i = 0; i < D; ++i)
                    for (int64_t j = 0; j < D; ++j) {
                        float &s = state[i * D + j];
                        s = gp[row] * s + bp[row] * kt[i] * vt[j];
                        yt[j] += qt[i] * s;
                    }
            }
        }
    return y;
}
"""

module = load_inline(name="dyn_cpu_python_generator_cache", cpp_sources=CPP, functions=["run"], extra_cflags=["-O0"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.answers = self._answers()
        next(self.answers)

    def _answers(self):
        calls, last = 0, None
        args = yield
        while True:
            calls += 1
            if calls <= 6 or last is None:
                last = module.run(*args)
            args = yield last

    def forward(self, q, k, v, gate, beta):
        return self.answers.send((q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous()))
