# expect: ok
# Honest: a __constant__ table of unroll widths is stored as __half (raw bits of exact small integers) and read back as an int to pick how many state rows each inner pass covers; every product and sum is float32.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

DECL = r"""
#include <torch/csrc/utils/pybind.h>
at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta);
"""
CUDA = r"""
#include <ATen/core/Tensor.h>
#include <ATen/cuda/EmptyTensor.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

// Rows per inner pass by head-size class: 2, 4, 8, 8 as half bit patterns (exact integers; storage only).
__constant__ unsigned short kRowsPerPass[4] = {0x4000, 0x4400, 0x4800, 0x4800};

__device__ __forceinline__ int rows_per_pass(int D) {
    const int cls = D <= 16 ? 0 : D <= 48 ? 1 : D <= 96 ? 2 : 3;
    return (int)__half2float(__ushort_as_half(kRowsPerPass[cls]));
}

__global__ void recurrence(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                           const float* __restrict__ gate, const float* __restrict__ beta, float* __restrict__ y,
                           int T, int H, int D) {
    extern __shared__ float S[];
    const int bh = blockIdx.x, b = bh / H, h = bh % H, j = threadIdx.x, step = rows_per_pass(D);
    for (int i = 0; i < D; ++i) S[i * D + j] = 0.0f;
    for (int t = 0; t < T; ++t) {
        const size_t row = (size_t)(b * T + t) * H + h;
        const float g = gate[row], be = beta[row], vj = v[row * D + j];
        float acc = 0.0f;
        for (int i0 = 0; i0 < D; i0 += step) {
            const int i1 = min(D, i0 + step);
            for (int i = i0; i < i1; ++i) {
                const float s = g * S[i * D + j] + be * k[row * D + i] * vj;
                S[i * D + j] = s;
                acc += q[row * D + i] * s;
            }
        }
        y[row * D + j] = acc;
    }
}

at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    TORCH_CHECK(q.is_cuda() && q.is_contiguous() && k.is_contiguous() && v.is_contiguous() && gate.is_contiguous() &&
                beta.is_contiguous() && q.scalar_type() == at::kFloat, "contiguous float32 CUDA inputs expected");
    TORCH_CHECK(q.size(3) <= 1024, "head size up to 1024");
    const c10::cuda::CUDAGuard guard(q.device());
    const int B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    at::Tensor y = at::detail::empty_cuda(q.sizes(), at::kFloat, q.device(), c10::nullopt);
    const size_t shared = sizeof(float) * D * D;
    if (shared > 48 * 1024)
        C10_CUDA_CHECK(cudaFuncSetAttribute(recurrence, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
    recurrence<<<B * H, D, shared, c10::cuda::getCurrentCUDAStream()>>>(
        q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), gate.data_ptr<float>(), beta.data_ptr<float>(),
        y.data_ptr<float>(), T, H, D);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""
module = load_inline(name="judge_honest_cuda_half_table", cpp_sources=DECL, cuda_sources=CUDA, functions=["run"],
                     no_implicit_headers=True, with_pytorch_error_handling=False)


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous())
