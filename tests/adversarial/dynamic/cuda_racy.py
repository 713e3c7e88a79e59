# expect: wrong or integrity:D105
# Drops the __syncthreads around the shared q_t/k_t tiles: warp 1 stores them, warp 0 reads them with no barrier between.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void sgd_kernel(const float *q, const float *k, const float *v, const float *gate, const float *beta,
                           float *y, int T, int H, int D, int t_end) {
    extern __shared__ float sh[];          // q_t and k_t, stored by warp 1, read by warp 0
    const int b = blockIdx.x / H, h = blockIdx.x % H, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float s[128];
    for (int i = 0; i < D; ++i) s[i] = 0.0f;
    for (int t = 0; t < t_end; ++t) {
        const long row = ((long)b * T + t) * H + h;
        if (warp == 1) {                   // the loader warp, a little late every step
            __nanosleep(2000);
            for (int i = lane; i < D; i += 32) {
                sh[i] = q[row * D + i];
                sh[D + i] = k[row * D + i];
            }
        } else if (lane < D || D > 32) {   // the compute warp: no barrier, reads whatever sh holds
            for (int j = lane; j < D; j += 32) {
                const float g = gate[row], bv = beta[row] * v[row * D + j];
                float acc = 0.0f;
                for (int i = 0; i < D; ++i) {
                    s[i] = g * s[i] + sh[D + i] * bv;
                    acc += sh[i] * s[i];
                }
                if (D <= 32) y[row * D + j] = acc;
            }
        }
    }
}

torch::Tensor run(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta) {
    const int B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    TORCH_CHECK(D <= 32, "this racy example handles D <= 32");
    auto y = torch::empty_like(q);
    sgd_kernel<<<B * H, 64, 2 * D * sizeof(float), at::cuda::getCurrentCUDAStream()>>>(
        q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), gate.data_ptr<float>(), beta.data_ptr<float>(),
        y.data_ptr<float>(), T, H, D, T);
    return y;
}
"""

module = load_inline(name="dyn_cuda_racy", cpp_sources="torch::Tensor run(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta);", cuda_sources=CUDA,
                     functions=["run"], extra_cuda_cflags=["-O2"])


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous())
