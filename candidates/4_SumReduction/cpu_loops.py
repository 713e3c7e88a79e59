# cpu: plain C++ loops on the host, compiled with -O3. Viewed as (outer, reduced, inner), each outer block
# adds its reduced rows into a row of double accumulators, the inner loop over contiguous memory.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = r"""
#include <torch/extension.h>
#include <vector>

torch::Tensor sum_reduction_cpu_forward(torch::Tensor x, int64_t dim) {
  TORCH_CHECK(!x.is_cuda(), "a CPU tensor");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "a float32 tensor");
  TORCH_CHECK(x.is_contiguous(), "a contiguous tensor");
  const int64_t rank = x.dim();
  if (dim < 0) dim += rank;
  TORCH_CHECK(dim >= 0 && dim < rank, "dim within the tensor's dimensions");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.size(d);
  for (int64_t d = dim + 1; d < rank; ++d) inner *= x.size(d);
  const int64_t reduced = x.size(dim);
  std::vector<int64_t> sizes(x.sizes().begin(), x.sizes().end());
  sizes[dim] = 1;
  auto y = torch::empty(sizes, x.options());
  const float* xp = x.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  std::vector<double> acc((size_t)inner);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) acc[i] = 0.0;
    const float* block = xp + o * reduced * inner;
    for (int64_t r = 0; r < reduced; ++r) {
      const float* row = block + r * inner;
      for (int64_t i = 0; i < inner; ++i) acc[i] += row[i];
    }
    float* out = yp + o * inner;
    for (int64_t i = 0; i < inner; ++i) out[i] = static_cast<float>(acc[i]);
  }
  return y;
}
"""

_ext = load_inline(
    name="kb_sum_reduction_cpu_loops",
    cpp_sources=[CPP_SRC],
    functions=["sum_reduction_cpu_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return _ext.sum_reduction_cpu_forward(x.contiguous(), self.dim)
