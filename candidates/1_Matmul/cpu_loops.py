# cpu: plain C++ loops on the host, compiled with -O3. C = A @ B in i-k-j order: each row of C accumulates
# a[i, k] * B[k, :], so the inner loop runs over contiguous B and C rows and vectorises.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = r"""
#include <torch/extension.h>

torch::Tensor matmul_cpu_forward(torch::Tensor a, torch::Tensor b) {
  TORCH_CHECK(!a.is_cuda() && !b.is_cuda(), "CPU tensors");
  TORCH_CHECK(a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32, "float32 tensors");
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0), "an (M, K) and a (K, N) matrix");
  TORCH_CHECK(a.is_contiguous() && b.is_contiguous(), "contiguous tensors");
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  auto c = torch::empty({M, N}, a.options());
  const float* ap = a.data_ptr<float>();
  const float* bp = b.data_ptr<float>();
  float* cp = c.data_ptr<float>();
  for (int64_t i = 0; i < M; ++i) {
    float* ci = cp + i * N;
    for (int64_t j = 0; j < N; ++j) ci[j] = 0.f;
    for (int64_t k = 0; k < K; ++k) {
      const float aik = ap[i * K + k];
      const float* bk = bp + k * N;
      for (int64_t j = 0; j < N; ++j) ci[j] += aik * bk[j];
    }
  }
  return c;
}
"""

_ext = load_inline(
    name="kb_matmul_cpu_loops",
    cpp_sources=[CPP_SRC],
    functions=["matmul_cpu_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return _ext.matmul_cpu_forward(A.contiguous(), B.contiguous())
