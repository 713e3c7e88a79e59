# expect: ok
# Honest: a constant table of column-block sizes is stored as c10::Half (exact small integers) and read back as integers; all arithmetic is float32.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/EmptyTensor.h>
#include <c10/util/Half.h>
#include <algorithm>
#include <vector>

// Column blocks by head-size class, stored compactly; every entry is an integer that half holds exactly.
static const c10::Half kBlock[4] = {c10::Half(8.0f), c10::Half(16.0f), c10::Half(32.0f), c10::Half(64.0f)};

static int64_t block_for(int64_t D) {
    const int cls = D <= 16 ? 0 : D <= 48 ? 1 : D <= 96 ? 2 : 3;
    return static_cast<int64_t>(static_cast<float>(kBlock[cls]));
}

at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous() && gate.is_contiguous() &&
                beta.is_contiguous() && q.scalar_type() == at::kFloat, "contiguous float32 inputs expected");
    const int64_t B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3), block = block_for(D);
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
                for (int64_t j0 = 0; j0 < D; j0 += block) {
                    const int64_t j1 = std::min(D, j0 + block);
                    for (int64_t j = j0; j < j1; ++j) yt[j] = 0.0f;
                    for (int64_t i = 0; i < D; ++i) {
                        float* s = S.data() + i * D;
                        const float kb = bp[row] * kt[i];
                        for (int64_t j = j0; j < j1; ++j) {
                            s[j] = gp[row] * s[j] + kb * vt[j];
                            yt[j] += qt[i] * s[j];
                        }
                    }
                }
            }
        }
    return y;
}
"""
module = load_inline(name="judge_honest_cpu_half_table", cpp_sources=CPP, functions=["run"],
                     no_implicit_headers=True, with_pytorch_error_handling=False, extra_cflags=["-O0"])


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous())
