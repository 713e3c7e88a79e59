# expect: integrity or wrong
# Same quarter-of-the-work trick on a stream nothing in torch knows about: cuStreamCreate is fetched through the runtime's cudaGetDriverEntryPoint (called through ctypes, so the library names neither) and a non-blocking stream created with it; from the 7th call per shape on, the caller's stream waits for the first quarter of the steps only. The judge catches unfinished outputs, slow fetches and claims its burst clock cannot account for.
import ctypes

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

DECL = r"""
#include <torch/csrc/utils/pybind.h>
at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta);
void run_into(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta, at::Tensor y);
void launch_steps(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta, at::Tensor y,
                  at::Tensor state, int64_t t0, int64_t t1, bool load, bool store, int64_t stream);
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

// Steps [t0, t1) of every (batch, head), launched on the stream given as a number, the state carried in
// `state` from one launch to the next. The extension creates, records and waits for nothing itself.
void launch_steps(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta, at::Tensor y,
                  at::Tensor state, int64_t t0, int64_t t1, bool load, bool store, int64_t stream) {
    check(q, k, v, gate, beta);
    TORCH_CHECK(state.is_cuda() && state.numel() >= q.size(0) * q.size(2) * q.size(3) * q.size(3), "bad state");
    const c10::cuda::CUDAGuard guard(q.device());
    launch(q, k, v, gate, beta, y, state.data_ptr<float>(), (int)t0, (int)t1, 0, q.size(0) * q.size(2), load, store,
           reinterpret_cast<cudaStream_t>(stream));
}
"""
ext = load_inline(name="judge_cuda_stream_driver_entry", cpp_sources=DECL, cuda_sources=CUDA,
                  functions=["run", "launch_steps"], no_implicit_headers=True, with_pytorch_error_handling=False)

_streams = {}
CU_STREAM_NON_BLOCKING = 1


def stream_create_function():
    """cuStreamCreate's address from the CUDA runtime's entry-point query, else from the driver library itself."""
    entry, status = ctypes.c_void_p(), ctypes.c_int()
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            runtime = ctypes.CDLL(name)
        except OSError:
            continue
        for query, args in (("cudaGetDriverEntryPointByVersion", (ctypes.c_uint(12000),)), ("cudaGetDriverEntryPoint", ())):
            function = getattr(runtime, query, None)
            if function is not None and function(b"cuStreamCreate", ctypes.byref(entry), *args,
                                                 ctypes.c_ulonglong(0), ctypes.byref(status)) == 0 and entry.value:
                return ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint)(entry.value)
    return ctypes.CDLL("libcuda.so.1").cuStreamCreate


def side_stream(device):
    if device not in _streams:
        torch.cuda.current_stream(device)     # the context exists and is current before the driver is asked
        handle = ctypes.c_void_p()
        create = stream_create_function()
        if create(ctypes.byref(handle), CU_STREAM_NON_BLOCKING) != 0:
            raise RuntimeError("cuStreamCreate failed")
        _streams[device] = torch.cuda.ExternalStream(handle.value, device=device)
    return _streams[device]


def quarter_then_rest(inputs, side):
    """The first quarter of the steps, then the rest, on `side`; the caller's stream waits for the quarter only."""
    q = inputs[0]
    batch, steps, heads, dim = q.shape
    quarter = max(1, steps // 4)
    current = torch.cuda.current_stream(q.device)
    y = torch.empty_like(q)
    state = torch.empty(batch * heads * dim * dim, device=q.device)
    side.wait_stream(current)                     # the inputs are ready
    ext.launch_steps(*inputs, y, state, 0, quarter, False, True, side.cuda_stream)
    first = torch.cuda.Event()
    first.record(side)
    ext.launch_steps(*inputs, y, state, quarter, steps, True, False, side.cuda_stream)
    current.wait_event(first)
    for tensor in (*inputs, y, state):            # the allocator must not hand these out while side runs
        tensor.record_stream(side)
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = {}

    def forward(self, q, k, v, gate, beta):
        inputs = [x.contiguous() for x in (q, k, v, gate, beta)]
        shape = tuple(q.shape)
        calls = self.calls[shape] = self.calls.get(shape, 0) + 1
        if calls <= 6:
            return ext.run(*inputs)
        return quarter_then_rest(inputs, side_stream(q.device))
