"""Honest: the extension is built on first use through a module-level handle (global), sources joined."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_HEADER = "#include <torch/extension.h>\n#include <c10/cuda/CUDAStream.h>\n"
_KERNEL = r"""
__global__ void scalar_delta(const float* q, const float* k, const float* v, const float* g,
                             const float* beta, float* y, int T, int H, int D) {
    extern __shared__ float S[];
    int bh = blockIdx.x, j = threadIdx.x, b = bh / H, h = bh % H;
    for (int i = 0; i < D; ++i) S[i * D + j] = 0.f;
    for (int t = 0; t < T; ++t) {
        int row = (b * T + t) * H + h;
        float gt = g[row], bt = beta[row], acc = 0.f;
        for (int i = 0; i < D; ++i) {
            float s = gt * S[i * D + j] + bt * k[row * D + i] * v[row * D + j];
            S[i * D + j] = s;
            acc += q[row * D + i] * s;
        }
        y[row * D + j] = acc;
    }
}
"""
_HOST = r"""
torch::Tensor run(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor g, torch::Tensor beta) {
    auto y = at::empty(q.sizes(), q.options());
    int T = q.size(1), H = q.size(2), D = q.size(3);
    auto stream = c10::cuda::getCurrentCUDAStream();
    scalar_delta<<<q.size(0) * H, D, sizeof(float) * D * D, stream>>>(q.data_ptr<float>(), k.data_ptr<float>(),
        v.data_ptr<float>(), g.data_ptr<float>(), beta.data_ptr<float>(), y.data_ptr<float>(), T, H, D);
    return y;
}
"""
_SOURCES = "\n".join([_HEADER, _KERNEL, _HOST])

_ext = None


def _module():
    global _ext
    if _ext is None:
        _ext = load_inline("scalar_delta_lazy", "torch::Tensor run(torch::Tensor q, torch::Tensor k, torch::Tensor v, "
                           "torch::Tensor g, torch::Tensor beta);", _SOURCES, functions=["run"])
    return _ext


class ModelNew(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, gate: torch.Tensor, beta: torch.Tensor):
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        return _module().run(q, k, v, gate.contiguous(), beta.contiguous())
