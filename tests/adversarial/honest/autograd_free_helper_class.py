"""Honest: a small launcher class holds the extension; forward delegates through it. Uses .to(device)."""
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cuda = """
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

template <int D_MAX>
__global__ void cgd(const float* q, const float* k, const float* v, const float* gate, float* y, int T, int H, int D) {
    __shared__ float S[D_MAX * D_MAX];
    int bh = blockIdx.x, j = threadIdx.x, b = bh / H, h = bh % H;
    for (int i = 0; i < D; ++i) S[i * D + j] = 0.f;
    for (int t = 0; t < T; ++t) {
        long off = ((long)(b * T + t) * H + h) * D;
        float acc = 0.f;
        for (int i = 0; i < D; ++i) {
            float s = gate[off + j] * S[i * D + j] + k[off + i] * v[off + j];
            S[i * D + j] = s;
            acc += q[off + i] * s;
        }
        y[off + j] = acc;
    }
}

torch::Tensor run(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate) {
    auto y = at::empty_like(q);
    int T = q.size(1), H = q.size(2), D = q.size(3);
    TORCH_CHECK(D <= 32, "D too large for this variant");
    cgd<32><<<q.size(0) * H, D, 0, at::cuda::getCurrentCUDAStream()>>>(q.data_ptr<float>(), k.data_ptr<float>(),
        v.data_ptr<float>(), gate.data_ptr<float>(), y.data_ptr<float>(), T, H, D);
    return y;
}
"""


@dataclass(frozen=True)
class LaunchConfig:
    max_dim: int = 32

    def fits(self, dim: int) -> bool:
        return dim <= self.max_dim


class Launcher:
    def __init__(self, config: LaunchConfig):
        self.config = config
        self.ext = load_inline(name="cgd_launcher", cpp_sources="torch::Tensor run(torch::Tensor q, torch::Tensor k, "
                               "torch::Tensor v, torch::Tensor gate);", cuda_sources=_cuda, functions=["run"])

    def __call__(self, q, k, v, gate):
        if not self.config.fits(q.shape[-1]):
            raise ValueError("head dim too large")
        return self.ext.run(q, k, v, gate)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.launch = Launcher(LaunchConfig())

    def forward(self, q, k, v, gate):
        device = q.device
        q, k, v, gate = (t.to(device).contiguous() for t in (q, k, v, gate))
        return self.launch(q, k, v, gate)
