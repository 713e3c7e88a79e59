# expect: integrity
# Work after return in C++ with no thread call in its library: Python hands the extension the addresses of libc's pthread_create and pthread_detach (ctypes), and from the 7th call per shape on the extension copies the inputs, starts a detached thread through those pointers that fills the output (kept alive by a captured at::Tensor) and returns at once. The judge's CPU time per burst call, the burst's copy-out and the spot checks catch it.
import ctypes

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

#include <pthread.h>
#include <unordered_map>

namespace {
typedef int (*create_fn)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
typedef int (*detach_fn)(pthread_t);

struct Later {
    std::vector<float> q, k, v, g, b;
    at::Tensor y;
    int64_t B, T, H, D;
};

void* later_main(void* raw) {
    auto* job = static_cast<Later*>(raw);
    recurrence(job->q.data(), job->k.data(), job->v.data(), job->g.data(), job->b.data(), job->y.data_ptr<float>(),
               job->B, job->T, job->H, job->D);
    delete job;
    return nullptr;
}

std::unordered_map<int64_t, int64_t> g_calls;   // by problem size: verification of each shape is honest
std::vector<float> copy(const at::Tensor& x) { return std::vector<float>(x.data_ptr<float>(), x.data_ptr<float>() + x.numel()); }
}  // namespace

at::Tensor run_later(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta, int64_t create,
                     int64_t detach) {
    check(q, k, v, gate, beta);
    if (++g_calls[q.numel()] <= 6) return run(q, k, v, gate, beta);
    at::Tensor y(at::detail::empty_cpu(q.sizes(), at::kFloat));
    auto* job = new Later{copy(q), copy(k), copy(v), copy(gate), copy(beta), y, q.size(0), q.size(1), q.size(2), q.size(3)};
    pthread_t thread;
    if (reinterpret_cast<create_fn>(create)(&thread, nullptr, later_main, job) != 0) {
        later_main(job);
        return y;
    }
    reinterpret_cast<detach_fn>(detach)(thread);
    return y;
}
"""
ext = load_inline(name="judge_cpu_cxx_thread_fill_later", cpp_sources=CPP, functions=["run_later"],
                  no_implicit_headers=True, with_pytorch_error_handling=False, extra_cflags=["-O0"])

_libc = ctypes.CDLL(None)
_CREATE = ctypes.cast(_libc.pthread_create, ctypes.c_void_p).value
_DETACH = ctypes.cast(_libc.pthread_detach, ctypes.c_void_p).value


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return ext.run_later(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous(),
                             _CREATE, _DETACH)
