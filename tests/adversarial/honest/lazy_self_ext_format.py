"""Honest: the extension is built lazily on the first forward and kept on self; the CUDA source is a
template filled with str.format; a __host__ __device__ helper; printf debugging compiled out."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

TEMPLATE = """
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cstdio>

#define DEBUG_PRINT 0
#define MAX_D {max_d}

__host__ __device__ inline int cdiv(int a, int b) {{ return (a + b - 1) / b; }}

__global__ void sgd_kernel(const float* q, const float* k, const float* v, const float* gate, const float* beta,
                           float* y, int T, int H, int D) {{
    __shared__ float S[MAX_D * MAX_D];
    const int bh = blockIdx.x, j = threadIdx.x, b = bh / H, h = bh % H;
    for (int i = 0; i < D; ++i) S[i * D + j] = 0.f;
    for (int t = 0; t < T; ++t) {{
        const int row = (b * T + t) * H + h;
        float acc = 0.f;
        for (int i = 0; i < D; ++i) {{
            const float s = gate[row] * S[i * D + j] + beta[row] * k[row * D + i] * v[row * D + j];
            S[i * D + j] = s;
            acc += q[row * D + i] * s;
        }}
        y[row * D + j] = acc;
    }}
#if DEBUG_PRINT
    if (bh == 0 && j == 0) printf("done %d\\n", T);
#endif
}}

torch::Tensor sgd(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta) {{
    const c10::cuda::OptionalCUDAGuard guard(q.device());
    TORCH_CHECK(q.size(3) <= MAX_D, "head dim above MAX_D");
    auto y = torch::empty_like(q);
    const int T = q.size(1), H = q.size(2), D = q.size(3);
    sgd_kernel<<<q.size(0) * H, D, 0, at::cuda::getCurrentCUDAStream()>>>(q.data_ptr<float>(), k.data_ptr<float>(),
        v.data_ptr<float>(), gate.data_ptr<float>(), beta.data_ptr<float>(), y.data_ptr<float>(), T, H, D);
    return y;
}}
"""

MAX_D = 32


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ext = None

    def forward(self, q, k, v, gate, beta):
        if self.ext is None:
            self.ext = load_inline(
                name="sgd_lazy_self",
                cpp_sources="torch::Tensor sgd(torch::Tensor q, torch::Tensor k, torch::Tensor v, "
                            "torch::Tensor gate, torch::Tensor beta);",
                cuda_sources=TEMPLATE.format(max_d=MAX_D),
                functions=["sgd"],
            )
        inputs = [t.contiguous() for t in (q, k, v, gate, beta)]
        return self.ext.sgd(*inputs)
