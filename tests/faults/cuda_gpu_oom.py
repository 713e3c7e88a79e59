# expect: runtime_error
# reason: out of memory
# Asks the GPU for an 11 TB workspace: the caching allocator raises torch.OutOfMemoryError at once.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = "torch::Tensor run(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta);"

CUDA = r"""
#include <ATen/cuda/CUDAContext.h>

__global__ void copy_kernel(const float* q, float* y, float* workspace, int64_t n) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) {
        workspace[i] = q[i];
        y[i] = workspace[i];
    }
}

torch::Tensor run(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta) {
    const int64_t huge = int64_t(5) << 39;   // 2.7e12 floats: 11 TB
    auto workspace = torch::empty({huge}, q.options());
    auto qc = q.contiguous();
    auto y = torch::empty_like(qc);
    const int64_t n = y.numel();
    copy_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        qc.data_ptr<float>(), y.data_ptr<float>(), workspace.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""
module = load_inline(name="fault_cuda_gpu_oom", cpp_sources=CPP, cuda_sources=CUDA, functions=["run"])


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q, k, v, gate, beta)
