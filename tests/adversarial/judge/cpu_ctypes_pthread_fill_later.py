# expect: integrity
# Work after return on a thread made by libc's pthread_create through ctypes (invisible to threading.enumerate and active_count): from the 7th call per shape on, forward returns the empty output and the raw thread fills it. The judge's burst clock, the uid's CPU time and the fetch checks catch it.
import ctypes
import itertools

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/EmptyTensor.h>
#include <vector>

// The honest recurrence, per (batch, head): S = gate_t S + beta_t k_t v_t^T, y_t = q_t^T S.
static void recurrence(const float* q, const float* k, const float* v, const float* g, const float* be, float* y,
                       int64_t B, int64_t T, int64_t H, int64_t D) {
    std::vector<float> S(D * D);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h) {
            std::fill(S.begin(), S.end(), 0.0f);
            for (int64_t t = 0; t < T; ++t) {
                const int64_t row = (b * T + t) * H + h;
                const float *qt = q + row * D, *kt = k + row * D, *vt = v + row * D;
                float* yt = y + row * D;
                for (int64_t j = 0; j < D; ++j) yt[j] = 0.0f;
                for (int64_t i = 0; i < D; ++i) {
                    float* s = S.data() + i * D;
                    const float kb = be[row] * kt[i];
                    for (int64_t j = 0; j < D; ++j) {
                        s[j] = g[row] * s[j] + kb * vt[j];
                        yt[j] += qt[i] * s[j];
                    }
                }
            }
        }
}

static void check(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& g,
                  const at::Tensor& b) {
    TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous() && g.is_contiguous() &&
                b.is_contiguous() && q.scalar_type() == at::kFloat, "contiguous float32 inputs expected");
}

at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    check(q, k, v, gate, beta);
    at::Tensor y(at::detail::empty_cpu(q.sizes(), at::kFloat));
    recurrence(q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(), gate.data_ptr<float>(),
               beta.data_ptr<float>(), y.data_ptr<float>(), q.size(0), q.size(1), q.size(2), q.size(3));
    return y;
}

// Same, into a given output, with the GIL released: callable from a background thread.
void run_into(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta, at::Tensor y) {
    check(q, k, v, gate, beta);
    TORCH_CHECK(y.is_contiguous() && y.sizes() == q.sizes() && y.scalar_type() == at::kFloat, "bad output");
    const float *qp = q.data_ptr<float>(), *kp = k.data_ptr<float>(), *vp = v.data_ptr<float>();
    const float *gp = gate.data_ptr<float>(), *bp = beta.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    const int64_t B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    pybind11::gil_scoped_release nogil;
    recurrence(qp, kp, vp, gp, bp, yp, B, T, H, D);
}
"""
ext = load_inline(name="judge_cpu_ctypes_pthread_fill_later", cpp_sources=CPP, functions=["run", "run_into"],
                  no_implicit_headers=True, with_pytorch_error_handling=False, extra_cflags=["-O0"])

_libc = ctypes.CDLL(None)
_START = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)
_libc.pthread_create.argtypes = [ctypes.POINTER(ctypes.c_ulong), ctypes.c_void_p, _START, ctypes.c_void_p]
_libc.pthread_detach.argtypes = [ctypes.c_ulong]
_jobs = {}
_numbers = itertools.count(1)


def _fill(number):
    job = _jobs.pop(number, None)
    if job is not None:
        ext.run_into(*job)
    return None


_entry = _START(_fill)   # kept alive for as long as the module


def start_raw_thread(job) -> None:
    number = next(_numbers)
    _jobs[number] = job
    thread = ctypes.c_ulong()
    if _libc.pthread_create(ctypes.byref(thread), None, _entry, number) != 0:
        _fill(number)
        return
    _libc.pthread_detach(thread.value)


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
        y = torch.empty_like(inputs[0])
        start_raw_thread((*[x.clone() for x in inputs], y))
        return y
