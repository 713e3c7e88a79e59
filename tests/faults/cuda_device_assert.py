# expect: runtime_error|crashed
# reason: device-side assert|SIG
# A device-side assertion of the kernel's own fails (CUDA_KERNEL_ASSERT stays on under NDEBUG).
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = "torch::Tensor run(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta);"

CUDA = r"""
#include <ATen/cuda/CUDAContext.h>

__global__ void asserting_kernel(const float* q, float* y, int64_t n, int64_t d) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        CUDA_KERNEL_ASSERT(d == 64);   // the author assumed head dim 64; the seed shape has 24
        y[i] = q[i];
    }
}

torch::Tensor run(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta) {
    auto qc = q.contiguous();
    auto y = torch::empty_like(qc);
    const int64_t n = y.numel();
    asserting_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        qc.data_ptr<float>(), y.data_ptr<float>(), n, q.size(3));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""
module = load_inline(name="fault_cuda_device_assert", cpp_sources=CPP, cuda_sources=CUDA, functions=["run"])


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q, k, v, gate, beta)
