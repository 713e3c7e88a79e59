# Honest: forward walks T in chunks, launching the kernel per chunk with a state tensor carried
# between launches inside one call (allocated fresh per call). Slicing views only.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CHUNK = 64

decl = "void chunk(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta, torch::Tensor state, torch::Tensor y, int64_t t0, int64_t t1);"

src = """
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void chunk_kernel(const float* q, const float* k, const float* v, const float* gate, const float* beta,
                             float* state, float* y, int T, int H, int D, int t0, int t1) {
    int bh = blockIdx.x, j = threadIdx.x, b = bh / H, h = bh % H;
    float* S = state + (size_t)bh * D * D;
    for (int t = t0; t < t1; ++t) {
        int row = (b * T + t) * H + h;
        float acc = 0.f;
        for (int i = 0; i < D; ++i) {
            float s = gate[row] * S[i * D + j] + beta[row] * k[(size_t)row * D + i] * v[(size_t)row * D + j];
            S[i * D + j] = s;
            acc += q[(size_t)row * D + i] * s;
        }
        y[(size_t)row * D + j] = acc;
    }
}

void chunk(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, torch::Tensor beta,
           torch::Tensor state, torch::Tensor y, int64_t t0, int64_t t1) {
    const int B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    chunk_kernel<<<B * H, D, 0, at::cuda::getCurrentCUDAStream()>>>(
        q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), gate.data_ptr<float>(),
        beta.data_ptr<float>(), state.data_ptr<float>(), y.data_ptr<float>(), T, H, D, (int)t0, (int)t1);
}
"""

lib = load_inline(name="sgd_chunked", cpp_sources=[decl], cuda_sources=[src], functions=["chunk"])


def chunk_bounds(steps, chunk=CHUNK):
    """Yield (start, stop) pairs covering range(steps)."""
    start = 0
    while start < steps:
        stop = min(start + chunk, steps)
        yield start, stop
        start = stop


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        B, T, H, D = q.size()
        tensors = [t.contiguous() for t in (q, k, v, gate, beta)]
        state = torch.zeros((B, H, D, D), device=q.device, dtype=torch.float32)
        y = torch.empty((B, T, H, D), device=q.device, dtype=q.dtype)
        n_chunks = (T + CHUNK - 1) // CHUNK
        for index, (t0, t1) in enumerate(chunk_bounds(T)):
            assert index < n_chunks
            lib.chunk(*tensors, state, y, t0, t1)
        return y.view(B, T, H, D)
