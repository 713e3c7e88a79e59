# expect: wrong
# Single bf16 products (operands rounded to bf16, products exact, fp32 accumulate: what one bf16 MMA into an
# fp32 accumulator computes). I118 only warns on such MMAs, so the fp32 tolerance must reject it.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

DECL = "torch::Tensor sgd(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta);"
SOURCE = r"""#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
__device__ __forceinline__ float tf(float x) {  // round to 8 significant bits, nearest, ties away
    return __uint_as_float((__float_as_uint(x) + 0x8000u) & 0xffff0000u);
}

__global__ void sgd_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                           const float* __restrict__ gate, const float* __restrict__ beta, float* __restrict__ y,
                           int T, int H, int D) {
    extern __shared__ float S[];
    const int bh = blockIdx.x, j = threadIdx.x, b = bh / H, h = bh % H;
    for (int i = 0; i < D; ++i) S[i * D + j] = 0.f;
    for (int t = 0; t < T; ++t) {
        const int row = (b * T + t) * H + h;
        float acc = 0.f;
        for (int i = 0; i < D; ++i) {
            float s = tf(gate[row]) * tf(S[i * D + j]) + tf(beta[row] * k[row * D + i]) * tf(v[row * D + j]);
            S[i * D + j] = s;
            acc += tf(q[row * D + i]) * tf(s);
        }
        y[row * D + j] = acc;
    }
}

torch::Tensor sgd(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta) {
    auto y = torch::empty_like(q);
    const int B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    sgd_kernel<<<B * H, D, D * D * sizeof(float), at::cuda::getCurrentCUDAStream()>>>(
        q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), gate.data_ptr<float>(),
        beta.data_ptr<float>(), y.data_ptr<float>(), T, H, D);
    return y;
}
"""


ext = load_inline(
    name="cuda_bf16_single",
    cpp_sources=DECL,
    cuda_sources=SOURCE,
    functions=["sgd"],
)



class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, gate, beta):
        return ext.sgd(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous())
