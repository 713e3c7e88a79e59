"""Honest candidate whose comments and strings mention every forbidden thing.

Docstring: we do not use torch.matmul, torch.einsum, try/except fallbacks, exec(), eval(), open(),
threading, torch.cuda.Stream, .half(), bfloat16, tf32, lru_cache, or self.cache = ... anywhere.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

NOTES = "try: out = torch.matmul(a, b) except: pass  # this is just a string, never run"

cuda_src = r'''
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
/* Forbidden in real code: cublasSgemm, at::matmul, std::thread, cudaStreamCreate, __half,
   static torch::Tensor cache; fopen("answer.bin"), #include "local.h", a##b token pasting. */
// Also: cudaGraphLaunch, getStreamFromPool, #pragma omp parallel, wmma::precision::tf32
__global__ void k_scalar(const float* q, const float* k, const float* v, const float* g, const float* beta,
                         float* y, int T, int H, int D) {
    extern __shared__ float S[];
    const int bh = blockIdx.x, j = threadIdx.x;
    const int b = bh / H, h = bh % H;
    for (int i = 0; i < D; ++i) S[i * D + j] = 0.f;
    __syncthreads();
    for (int t = 0; t < T; ++t) {
        const int row = (b * T + t) * H + h;
        float acc = 0.f;
        for (int i = 0; i < D; ++i) {
            const float s = g[row] * S[i * D + j] + beta[row] * k[row * D + i] * v[row * D + j];
            S[i * D + j] = s;
            acc += q[row * D + i] * s;
        }
        y[row * D + j] = acc;
    }
}

torch::Tensor scalar_gated_delta(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor g,
                                 torch::Tensor beta) {
    TORCH_CHECK(q.scalar_type() == torch::kFloat32, "float32 only: half, bfloat16 and tf32 are not supported");
    TORCH_CHECK(q.is_contiguous(), "call .contiguous() first; try again");
    auto y = torch::empty_like(q);
    const int B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    k_scalar<<<B * H, D, D * D * sizeof(float), at::cuda::getCurrentCUDAStream()>>>(
        q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), g.data_ptr<float>(),
        beta.data_ptr<float>(), y.data_ptr<float>(), T, H, D);
    return y;
}
'''

cpp_src = "torch::Tensor scalar_gated_delta(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor g, torch::Tensor beta);"

ext = load_inline(name="sgd_words", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["scalar_gated_delta"])


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        """Return y. (We could `try` torch.einsum('bthd,bthe->bhde', k, v) but that would be cheating.)"""
        # exec, eval, open, threading: none of them here.
        return ext.scalar_gated_delta(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(),
                                      beta.contiguous())
