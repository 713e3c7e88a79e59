# expect: wrong or integrity:D103
# Memoises results in a static map from q's data pointer to a device buffer; a repeated address replays the stored answer.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <unordered_map>
static std::unordered_map<void *, std::pair<float *, size_t>> cache;

__global__ void sgd_kernel(const float *q, const float *k, const float *v, const float *gate, const float *beta,
                           float *y, int T, int H, int D, int t_end) {
    extern __shared__ float sh[];          // q_t and k_t
    const int b = blockIdx.x / H, h = blockIdx.x % H, j = threadIdx.x;
    float s[128];
    for (int i = 0; i < D; ++i) s[i] = 0.0f;
    for (int t = 0; t < t_end; ++t) {
        const long row = ((long)b * T + t) * H + h;
        sh[j] = q[row * D + j];
        sh[D + j] = k[row * D + j];
        __syncthreads();
        const float g = gate[row], bv = beta[row] * v[row * D + j];
        float acc = 0.0f;
        for (int i = 0; i < D; ++i) {
            s[i] = g * s[i] + sh[D + i] * bv;
            acc += sh[i] * s[i];
        }
        y[row * D + j] = acc;
        __syncthreads();
    }
}

torch::Tensor run(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta) {
    const int B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    TORCH_CHECK(D <= 128, "D <= 128");
    auto y = torch::empty_like(q);
    auto stream = at::cuda::getCurrentCUDAStream();
    const size_t bytes = q.numel() * sizeof(float);
    auto found = cache.find(q.data_ptr());
    if (found != cache.end() && found->second.second == bytes) {
        cudaMemcpyAsync(y.data_ptr<float>(), found->second.first, bytes, cudaMemcpyDeviceToDevice, stream);
        return y;
    }
    sgd_kernel<<<B * H, D, 2 * D * sizeof(float), at::cuda::getCurrentCUDAStream()>>>(
        q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), gate.data_ptr<float>(), beta.data_ptr<float>(),
        y.data_ptr<float>(), T, H, D, T);
    float *copy = nullptr;
    cudaMalloc(&copy, bytes);
    cudaMemcpyAsync(copy, y.data_ptr<float>(), bytes, cudaMemcpyDeviceToDevice, stream);
    cache[q.data_ptr()] = {copy, bytes};
    return y;
}
"""

module = load_inline(name="dyn_cuda_cache_pointer", cpp_sources="torch::Tensor run(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta);", cuda_sources=CUDA,
                     functions=["run"], extra_cuda_cflags=["-O2"])


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous())
