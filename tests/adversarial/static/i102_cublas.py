# expect: I102
# Calls cublasSgemm from the host function.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

DECL = "torch::Tensor sgd(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta);"
SOURCE = r"""#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cublas_v2.h>

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
            float s = gate[row] * S[i * D + j] + beta[row] * k[row * D + i] * v[row * D + j];
            S[i * D + j] = s;
            acc += q[row * D + i] * s;
        }
        y[row * D + j] = acc;
    }
}

torch::Tensor sgd(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta) {
    auto y = torch::empty_like(q);
    cublasHandle_t handle;
    cublasCreate(&handle);
    const float one = 1.f, zero = 0.f;
    int D = q.size(3);
    cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, D, D, D, &one, k.data_ptr<float>(), D, v.data_ptr<float>(), D,
                &zero, y.data_ptr<float>(), D);
    return y;
}
"""


ext = load_inline(
    name="i102_cublas",
    cpp_sources=DECL,
    cuda_sources=SOURCE,
    functions=["sgd"],
    extra_ldflags=["-lcublas"],
)



class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, gate, beta):
        return ext.sgd(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous())
