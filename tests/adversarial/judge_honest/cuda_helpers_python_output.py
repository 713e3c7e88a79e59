# expect: ok
# Honest: device helper functions and a small device struct for one column of the state, a __constant__ float table of launch limits, a host-side helper class for the launch, and an output allocated by torch.empty in Python and filled by the kernel.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

DECL = r"""
#include <torch/csrc/utils/pybind.h>
void fill(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta, at::Tensor y);
"""
CUDA = r"""
#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

// [0]: largest head size handled; [1]: bytes of shared memory a block may take without opting in.
__constant__ float kLimits[2] = {1024.0f, 49152.0f};

// One column j of a (batch, head)'s state, kept in shared memory with stride D.
struct Column {
    float* base;
    int D;
    __device__ float& at(int i) const { return base[i * D]; }
    __device__ void zero() const { for (int i = 0; i < D; ++i) at(i) = 0.0f; }
};

__device__ __forceinline__ float decay_add(float s, float g, float kb, float vj) { return g * s + kb * vj; }

__global__ void recurrence(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                           const float* __restrict__ gate, const float* __restrict__ beta, float* __restrict__ y,
                           int T, int H, int D) {
    extern __shared__ float S[];
    const int bh = blockIdx.x, b = bh / H, h = bh % H, j = threadIdx.x;
    if (D > (int)kLimits[0]) return;
    const Column column{S + j, D};
    column.zero();
    for (int t = 0; t < T; ++t) {
        const size_t row = (size_t)(b * T + t) * H + h;
        const float g = gate[row], be = beta[row], vj = v[row * D + j];
        float acc = 0.0f;
        for (int i = 0; i < D; ++i) {
            const float s = decay_add(column.at(i), g, be * k[row * D + i], vj);
            column.at(i) = s;
            acc += q[row * D + i] * s;
        }
        y[row * D + j] = acc;
    }
}

// The launch: grid, block and shared memory for one call, opting in to large shared memory where needed.
class Launch {
  public:
    Launch(int B, int H, int D) : blocks_(B * H), threads_(D), shared_(sizeof(float) * D * D) {}
    void operator()(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& g,
                    const at::Tensor& b, at::Tensor& y) const {
        if (shared_ > 48 * 1024)
            C10_CUDA_CHECK(cudaFuncSetAttribute(recurrence, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared_));
        recurrence<<<blocks_, threads_, shared_, c10::cuda::getCurrentCUDAStream()>>>(
            q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), g.data_ptr<float>(), b.data_ptr<float>(),
            y.data_ptr<float>(), q.size(1), q.size(2), q.size(3));
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }

  private:
    int blocks_, threads_;
    size_t shared_;
};

void fill(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta, at::Tensor y) {
    TORCH_CHECK(q.is_cuda() && q.is_contiguous() && k.is_contiguous() && v.is_contiguous() && gate.is_contiguous() &&
                beta.is_contiguous() && q.scalar_type() == at::kFloat, "contiguous float32 CUDA inputs expected");
    TORCH_CHECK(y.is_cuda() && y.is_contiguous() && y.sizes() == q.sizes() && y.scalar_type() == at::kFloat, "bad output");
    TORCH_CHECK(q.size(3) <= 1024, "head size up to 1024");
    const c10::cuda::CUDAGuard guard(q.device());
    Launch(q.size(0), q.size(2), q.size(3))(q, k, v, gate, beta, y);
}
"""
module = load_inline(name="judge_honest_cuda_helpers", cpp_sources=DECL, cuda_sources=CUDA, functions=["fill"],
                     no_implicit_headers=True, with_pytorch_error_handling=False)


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        q = q.contiguous()
        y = torch.empty(q.shape, dtype=torch.float32, device=q.device)
        module.fill(q, k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous(), y)
        return y
