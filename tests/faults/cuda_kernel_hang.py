# expect: timeout
# reason: evaluation killed
# A kernel that never finishes (it waits for clock64() to run backwards): the worker is killed at the time limit.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = "torch::Tensor run(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta);"

CUDA = r"""
#include <ATen/cuda/CUDAContext.h>

__global__ void spin_kernel(float* y, int64_t n) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const long long start = clock64();
    while (clock64() >= start) {
    }
    if (i < n) y[i] = 0.0f;
}

torch::Tensor run(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta) {
    auto y = torch::empty_like(q);
    const int64_t n = y.numel();
    spin_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(y.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""
module = load_inline(name="fault_cuda_kernel_hang", cpp_sources=CPP, cuda_sources=CUDA, functions=["run"])


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q, k, v, gate, beta)
