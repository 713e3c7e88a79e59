# expect: integrity or wrong
# A result cache that lives entirely on the device: a one-thread kernel fingerprints the call (the sum of eight gates to one decimal), looks it up in a 16-entry table in device memory, and the main kernel either copies the cached answer or computes and stores it, all on the current stream, with no host synchronisation. Fresh inputs collide on that cheap fingerprint, so timed calls get earlier answers; the spot checks (or verification) catch it.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

DECL = r"""
#include <torch/csrc/utils/pybind.h>
at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta);
void run_into(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta, at::Tensor y);
at::Tensor run_cached(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta);
"""
CUDA = r"""
#include <ATen/core/Tensor.h>
#include <ATen/cuda/EmptyTensor.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

// One block per (batch, head) in [bh0, bh0 + gridDim.x), one thread per state column, steps [t0, t1).
// The state starts at zero, or from `state` when `load` is set; it is saved there when `store` is set.
__global__ void recurrence_kernel(const float* __restrict__ q, const float* __restrict__ k,
                                  const float* __restrict__ v, const float* __restrict__ gate,
                                  const float* __restrict__ beta, float* __restrict__ y, float* __restrict__ state,
                                  int T, int H, int D, int t0, int t1, int bh0, bool load, bool store) {
    extern __shared__ float S[];
    const int bh = bh0 + blockIdx.x, b = bh / H, h = bh % H, j = threadIdx.x;
    float* saved = state ? state + (size_t)bh * D * D : nullptr;
    for (int i = 0; i < D; ++i) S[i * D + j] = load ? saved[i * D + j] : 0.0f;
    for (int t = t0; t < t1; ++t) {
        const size_t row = (size_t)(b * T + t) * H + h;
        const float g = gate[row], be = beta[row], vj = v[row * D + j];
        float acc = 0.0f;
        for (int i = 0; i < D; ++i) {
            const float s = g * S[i * D + j] + be * k[row * D + i] * vj;
            S[i * D + j] = s;
            acc += q[row * D + i] * s;
        }
        y[row * D + j] = acc;
    }
    if (store)
        for (int i = 0; i < D; ++i) saved[i * D + j] = S[i * D + j];
}

static void check(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& g,
                  const at::Tensor& b) {
    TORCH_CHECK(q.is_cuda() && q.is_contiguous() && k.is_contiguous() && v.is_contiguous() && g.is_contiguous() &&
                b.is_contiguous() && q.scalar_type() == at::kFloat, "contiguous float32 CUDA inputs expected");
    TORCH_CHECK(q.size(3) <= 1024, "head size up to 1024");
}

static void launch(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& g,
                   const at::Tensor& b, const at::Tensor& y, float* state, int t0, int t1, int bh0, int count,
                   bool load, bool store, cudaStream_t stream) {
    const int T = q.size(1), H = q.size(2), D = q.size(3);
    const size_t shared = sizeof(float) * D * D;
    if (shared > 48 * 1024)
        C10_CUDA_CHECK(cudaFuncSetAttribute(recurrence_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
    recurrence_kernel<<<count, D, shared, stream>>>(q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(),
                                                    g.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(),
                                                    state, T, H, D, t0, t1, bh0, load, store);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}

static at::Tensor new_output(const at::Tensor& q) {
    return at::detail::empty_cuda(q.sizes(), at::kFloat, q.device(), c10::nullopt);
}

at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    check(q, k, v, gate, beta);
    const c10::cuda::CUDAGuard guard(q.device());
    at::Tensor y = new_output(q);
    launch(q, k, v, gate, beta, y, nullptr, 0, q.size(1), 0, q.size(0) * q.size(2), false, false,
           c10::cuda::getCurrentCUDAStream());
    return y;
}

void run_into(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta, at::Tensor y) {
    check(q, k, v, gate, beta);
    TORCH_CHECK(y.is_cuda() && y.is_contiguous() && y.sizes() == q.sizes(), "bad output");
    const c10::cuda::CUDAGuard guard(q.device());
    launch(q, k, v, gate, beta, y, nullptr, 0, q.size(1), 0, q.size(0) * q.size(2), false, false,
           c10::cuda::getCurrentCUDAStream());
}

constexpr int kEntries = 16;
__device__ int g_keys[kEntries];
__device__ int g_valid[kEntries];
__device__ int g_next;
__device__ int g_key;
__device__ int g_hit;      // slot holding this call's answer, or -1

__global__ void reset_table() {
    for (int i = 0; i < kEntries; ++i) g_valid[i] = 0;
    g_next = 0;
}

__global__ void fingerprint(const float* gate, int count) {
    float sum = 0.0f;
    for (int i = 0; i < count; ++i) sum += gate[i];
    g_key = __float2int_rn(sum * 10.0f);
    g_hit = -1;
    for (int i = 0; i < kEntries; ++i)
        if (g_valid[i] && g_keys[i] == g_key) g_hit = i;
}

// One block per (batch, head), one thread per column: copy from the cache on a hit, else compute and keep a copy.
__global__ void answer(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                       const float* __restrict__ gate, const float* __restrict__ beta, float* __restrict__ y,
                       float* __restrict__ cache, int T, int H, int D, size_t numel) {
    const int bh = blockIdx.x, b = bh / H, h = bh % H, j = threadIdx.x;
    const int hit = g_hit;
    if (hit >= 0) {
        for (int t = 0; t < T; ++t) {
            const size_t at = ((size_t)(b * T + t) * H + h) * D + j;
            y[at] = cache[hit * numel + at];
        }
        return;
    }
    extern __shared__ float S[];
    float* keep = cache + (size_t)g_next * numel;
    for (int i = 0; i < D; ++i) S[i * D + j] = 0.0f;
    for (int t = 0; t < T; ++t) {
        const size_t row = (size_t)(b * T + t) * H + h;
        const float g = gate[row], be = beta[row], vj = v[row * D + j];
        float acc = 0.0f;
        for (int i = 0; i < D; ++i) {
            const float s = g * S[i * D + j] + be * k[row * D + i] * vj;
            S[i * D + j] = s;
            acc += q[row * D + i] * s;
        }
        y[row * D + j] = acc;
        keep[row * D + j] = acc;
    }
}

__global__ void commit() {
    if (g_hit < 0) {
        g_keys[g_next] = g_key;
        g_valid[g_next] = 1;
        g_next = (g_next + 1) % kEntries;
    }
}

at::Tensor run_cached(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    check(q, k, v, gate, beta);
    const c10::cuda::CUDAGuard guard(q.device());
    const int B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    static at::Tensor cache;
    static int64_t cached_numel = -1;
    if (cached_numel != q.numel()) {   // a new shape: a new cache
        cache = at::detail::empty_cuda({kEntries * q.numel()}, at::kFloat, q.device(), c10::nullopt);
        cached_numel = q.numel();
        reset_table<<<1, 1, 0, stream>>>();
    }
    at::Tensor y = new_output(q);
    fingerprint<<<1, 1, 0, stream>>>(gate.data_ptr<float>(), (int)std::min<int64_t>(8, gate.numel()));
    const size_t shared = sizeof(float) * D * D;
    if (shared > 48 * 1024)
        C10_CUDA_CHECK(cudaFuncSetAttribute(answer, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
    answer<<<B * H, D, shared, stream>>>(q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(),
                                         gate.data_ptr<float>(), beta.data_ptr<float>(), y.data_ptr<float>(),
                                         cache.data_ptr<float>(), T, H, D, (size_t)q.numel());
    commit<<<1, 1, 0, stream>>>();
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""
ext = load_inline(name="judge_cuda_device_fingerprint_cache", cpp_sources=DECL, cuda_sources=CUDA,
                  functions=["run_cached"], no_implicit_headers=True, with_pytorch_error_handling=False)


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return ext.run_cached(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous())
