# expect: runtime_error|crashed
# reason: illegal memory access|SIG
# A kernel writes 4 TiB past the end of its output: an illegal address that loses this process's CUDA context.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = "torch::Tensor run(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta);"

CUDA = r"""
#include <ATen/cuda/CUDAContext.h>

__global__ void out_of_bounds_kernel(float* y, int64_t n) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i + (int64_t(1) << 40)] = 0.0f;   // meant to be y[i]
}

torch::Tensor run(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta) {
    auto y = torch::empty_like(q);
    const int64_t n = y.numel();
    out_of_bounds_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(y.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""
module = load_inline(name="fault_cuda_illegal_address", cpp_sources=CPP, cuda_sources=CUDA, functions=["run"])


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q, k, v, gate, beta)
