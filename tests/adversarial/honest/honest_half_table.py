"""Honest: float32 math throughout, with a tiny `__half` constant table that scales beta by exactly 1.

One block per (batch, head), thread j owns column j of the D x D state in shared memory. The per-head
scale is read from a `__constant__ __half` table of 1.0s (0x3C00) and widened to float before use,
so every product and sum is float32. A reduced-precision *type* appears (I108 warns), but no
reduced-precision arithmetic: the answer is the float32 one.
"""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = ("torch::Tensor gated_delta_half_table(torch::Tensor q, torch::Tensor k, torch::Tensor v, "
              "torch::Tensor gate, torch::Tensor beta);")

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_fp16.h>

// Per-head scale of beta, stored compactly: every entry is exactly 1.0 in IEEE half (0x3C00).
__constant__ __half kBetaScale[4] = {__half_raw{0x3C00}, __half_raw{0x3C00}, __half_raw{0x3C00}, __half_raw{0x3C00}};

__global__ void gated_delta_half_table_kernel(const float* __restrict__ q, const float* __restrict__ k,
                                              const float* __restrict__ v, const float* __restrict__ gate,
                                              const float* __restrict__ beta, float* __restrict__ y,
                                              int T, int H, int D) {
    extern __shared__ float state[];           // D x D, column j owned by thread j
    const int bh = blockIdx.x;
    const int b = bh / H, h = bh % H;
    const int j = threadIdx.x;
    const float scale = __half2float(kBetaScale[h & 3]);   // 1.0f exactly
    for (int i = 0; i < D; ++i) state[i * D + j] = 0.0f;
    for (int t = 0; t < T; ++t) {
        const size_t row = (size_t)(b * T + t) * H + h;
        const size_t base = row * D;
        const float g = gate[row];
        const float bt = beta[row] * scale;
        const float vj = v[base + j];
        float acc = 0.0f;
        for (int i = 0; i < D; ++i) {
            const float s = g * state[i * D + j] + bt * k[base + i] * vj;
            state[i * D + j] = s;
            acc += q[base + i] * s;
        }
        y[base + j] = acc;
    }
}

torch::Tensor gated_delta_half_table(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate,
                                     torch::Tensor beta) {
    TORCH_CHECK(q.is_cuda() && q.scalar_type() == at::kFloat, "expected float32 CUDA tensors");
    auto qc = q.contiguous(), kc = k.contiguous(), vc = v.contiguous();
    auto gc = gate.contiguous(), bc = beta.contiguous();
    auto y = torch::empty_like(qc);
    const int B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    TORCH_CHECK(D <= 128, "D must be at most 128");
    const size_t smem = (size_t)D * D * sizeof(float);   // 64 KiB at D = 128: past the default 48 KiB
    if (smem > 48 * 1024)
        C10_CUDA_CHECK(cudaFuncSetAttribute(gated_delta_half_table_kernel,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    auto stream = at::cuda::getCurrentCUDAStream();
    gated_delta_half_table_kernel<<<B * H, D, smem, stream>>>(
        qc.data_ptr<float>(), kc.data_ptr<float>(), vc.data_ptr<float>(), gc.data_ptr<float>(),
        bc.data_ptr<float>(), y.data_ptr<float>(), T, H, D);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

module = load_inline(
    name="gated_delta_half_table",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["gated_delta_half_table"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.gated_delta_half_table(q, k, v, gate, beta)
