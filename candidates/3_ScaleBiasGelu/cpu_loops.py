# cpu: plain C++ loops on the host, compiled with -O3. The whole chain in one pass over x: scale, bias,
# exact GELU (erf) and the sigmoid gate, where eager reads and writes memory once per operation.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor scale_bias_gelu_cpu_forward(torch::Tensor x, torch::Tensor bias, double scale) {
  TORCH_CHECK(!x.is_cuda() && !bias.is_cuda(), "CPU tensors");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 && bias.scalar_type() == torch::kFloat32, "float32 tensors");
  TORCH_CHECK(x.dim() == 2 && bias.dim() == 1 && bias.size(0) == x.size(1), "x (rows, cols) and bias (cols)");
  TORCH_CHECK(x.is_contiguous() && bias.is_contiguous(), "contiguous tensors");
  const int64_t rows = x.size(0), cols = x.size(1);
  auto y = torch::empty_like(x);
  const float* xp = x.data_ptr<float>();
  const float* bp = bias.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  const float s = static_cast<float>(scale);
  const float inv_sqrt2 = 0.70710678118654752f;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = xp + r * cols;
    float* yr = yp + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      const float v = xr[c] * s + bp[c];
      const float gelu = 0.5f * v * (1.0f + std::erf(v * inv_sqrt2));
      yr[c] = gelu / (1.0f + std::exp(-xr[c]));
    }
  }
  return y;
}
"""

_ext = load_inline(
    name="kb_scale_bias_gelu_cpu_loops",
    cpp_sources=[CPP_SRC],
    functions=["scale_bias_gelu_cpu_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x, bias):
        return _ext.scale_bias_gelu_cpu_forward(x.contiguous(), bias.contiguous(), self.scale)
