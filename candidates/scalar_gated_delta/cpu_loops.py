# cpu: plain C++ loops on the host, compiled with -O3. Per (batch, head) a D x D fp32 state;
# each step updates a row at a time, S[i, :] = g*S[i, :] + (beta k_i) v, and accumulates
# y += q_i S[i, :] in the same pass (inner loop over contiguous j, so it vectorises).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = r"""
#include <torch/extension.h>
#include <vector>

torch::Tensor sgd_cpu_forward(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate,
                              torch::Tensor beta) {
  TORCH_CHECK(!q.is_cuda() && !k.is_cuda() && !v.is_cuda() && !gate.is_cuda() && !beta.is_cuda(), "CPU tensors");
  TORCH_CHECK(q.scalar_type() == torch::kFloat32 && k.scalar_type() == torch::kFloat32 &&
              v.scalar_type() == torch::kFloat32 && gate.scalar_type() == torch::kFloat32 &&
              beta.scalar_type() == torch::kFloat32, "float32 tensors");
  TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous() && gate.is_contiguous() &&
              beta.is_contiguous(), "contiguous tensors");
  const int64_t B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
  auto y = torch::empty_like(q);
  const float* qp = q.data_ptr<float>();
  const float* kp = k.data_ptr<float>();
  const float* vp = v.data_ptr<float>();
  const float* gp = gate.data_ptr<float>();
  const float* bp = beta.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  std::vector<float> S((size_t)(D * D));
  std::vector<float> acc((size_t)D);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      for (auto& s : S) s = 0.f;
      for (int64_t t = 0; t < T; ++t) {
        const int64_t row = (b * T + t) * H + h;
        const float* qt = qp + row * D;
        const float* kt = kp + row * D;
        const float* vt = vp + row * D;
        const float g = gp[row];
        const float be = bp[row];
        for (int64_t j = 0; j < D; ++j) acc[j] = 0.f;
        for (int64_t i = 0; i < D; ++i) {
          const float bk = be * kt[i];
          const float qi = qt[i];
          float* Si = S.data() + i * D;
          for (int64_t j = 0; j < D; ++j) {
            Si[j] = g * Si[j] + bk * vt[j];
            acc[j] += qi * Si[j];
          }
        }
        float* yt = yp + row * D;
        for (int64_t j = 0; j < D; ++j) yt[j] = acc[j];
      }
    }
  }
  return y;
}
"""

_ext = load_inline(
    name="sgd_cpu_loops",
    cpp_sources=[CPP_SRC],
    functions=["sgd_cpu_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, gate, beta):
        return _ext.sgd_cpu_forward(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(),
                                    beta.contiguous())
