"""Honest: templated kernels, two launches, Python helpers doing shape math, sources built by f-string."""
import functools
import math

import torch
from torch import nn
from torch.utils import cpp_extension

BLOCK = 128
TILE = 16

CUDA_SRC = f"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>

constexpr int kBlock = {BLOCK};
constexpr int kTile = {TILE};

template <typename scalar_t, int TILE_T>
__device__ __forceinline__ scalar_t dot_row(const scalar_t* a, const scalar_t* b, int n) {{
    scalar_t acc = 0;
    #pragma unroll 4
    for (int i = 0; i < n; ++i) acc += a[i] * b[i];
    return acc;
}}

template <typename scalar_t>
__global__ void zero_kernel(scalar_t* __restrict__ out, long n) {{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = scalar_t(0);
}}

template <typename scalar_t>
__global__ void recur_kernel(const scalar_t* __restrict__ q, const scalar_t* __restrict__ k,
                             const scalar_t* __restrict__ v, const scalar_t* __restrict__ gate,
                             scalar_t* __restrict__ state, scalar_t* __restrict__ y, int T, int H, int D) {{
    const int bh = blockIdx.x;
    const int j = threadIdx.x;
    if (j >= D) return;
    scalar_t* S = state + (size_t)bh * D * D;
    const int b = bh / H, h = bh - b * H;
    for (int t = 0; t < T; ++t) {{
        const size_t off = ((size_t)(b * T + t) * H + h) * D;
        const scalar_t g = gate[off + j];
        scalar_t acc = 0;
        for (int i = 0; i < D; ++i) {{
            scalar_t s = g * S[i * D + j] + k[off + i] * v[off + j];
            S[i * D + j] = s;
            acc += q[off + i] * s;
        }}
        y[off + j] = acc;
    }}
}}

void launch(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate,
            torch::Tensor state, torch::Tensor y) {{
    const int B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    cudaStream_t stream = at::cuda::getCurrentCUDAStream().stream();
    const long n = state.numel();
    zero_kernel<float><<<(n + kBlock - 1) / kBlock, kBlock, 0, stream>>>(state.data_ptr<float>(), n);
    recur_kernel<float><<<B * H, D, 0, stream>>>(q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(),
        gate.data_ptr<float>(), state.data_ptr<float>(), y.data_ptr<float>(), T, H, D);
}}
"""

CPP_SRC = ("void launch(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor gate, "
           + "torch::Tensor state, torch::Tensor y);")


@functools.lru_cache(maxsize=None)
def _extension():
    return cpp_extension.load_inline(
        name="channel_gated_delta_tpl",
        cpp_sources=[CPP_SRC],
        cuda_sources=[CUDA_SRC],
        functions=["launch"],
        extra_cuda_cflags=["-O3", "-lineinfo"],
    )


def _blocks(n: int, block: int = BLOCK) -> int:
    return (n + block - 1) // block


def _state_shape(batch: int, heads: int, dim: int) -> tuple[int, int, int, int]:
    return (batch, heads, dim, dim)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = BLOCK

    def _prepare(self, x):
        return x.contiguous().view(x.shape[0], x.shape[1], x.shape[2], -1)

    def forward(self, q, k, v, gate):
        batch, steps, heads, dim = q.shape
        assert dim <= 1024 and q.dtype == torch.float32, "one thread per column"
        q, k, v, gate = (self._prepare(t) for t in (q, k, v, gate))
        state = torch.empty(_state_shape(batch, heads, dim), dtype=q.dtype, device=q.device)
        y = torch.empty_like(q)
        grid = _blocks(batch * heads * dim * dim, self.block)
        if grid * self.block < state.numel():
            raise RuntimeError("grid too small")
        _ = math.ceil(steps / TILE)
        torch.cuda.current_stream()
        _extension().launch(q, k, v, gate, state, y)
        return y
