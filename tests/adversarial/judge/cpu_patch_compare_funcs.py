# expect: wrong
# At import replaces torch.allclose/isclose/equal, torch.testing.assert_close and Tensor.__eq__/sub/abs so any comparison of two outputs passes, then returns a cheap answer whose state forgets everything older than 16 steps; the judge compares in its own process with its own float64 gold, so the patches change nothing there.
import torch
import torch.nn as nn
import torch.testing
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

// The cheap version: the state restarts every `window` steps (a short memory is 'close enough').
at::Tensor windowed(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta, int64_t window) {
    check(q, k, v, gate, beta);
    const int64_t B = q.size(0), T = q.size(1), H = q.size(2), D = q.size(3);
    at::Tensor y(at::detail::empty_cpu(q.sizes(), at::kFloat));
    const float *qp = q.data_ptr<float>(), *kp = k.data_ptr<float>(), *vp = v.data_ptr<float>();
    const float *gp = gate.data_ptr<float>(), *bp = beta.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    std::vector<float> S(D * D);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
            for (int64_t t = 0; t < T; ++t) {
                if (t % window == 0) std::fill(S.begin(), S.end(), 0.0f);
                const int64_t row = (b * T + t) * H + h;
                for (int64_t j = 0; j < D; ++j) yp[row * D + j] = 0.0f;
                for (int64_t i = 0; i < D; ++i)
                    for (int64_t j = 0; j < D; ++j) {
                        float& s = S[i * D + j];
                        s = gp[row] * s + bp[row] * kp[row * D + i] * vp[row * D + j];
                        yp[row * D + j] += qp[row * D + i] * s;
                    }
            }
    return y;
}
"""
ext = load_inline(name="judge_cpu_patch_compare_funcs", cpp_sources=CPP, functions=["run", "windowed"],
                  no_implicit_headers=True, with_pytorch_error_handling=False, extra_cflags=["-O0"])


def _is_output_like(*tensors):
    """Only comparisons between float tensors shaped like an output are rigged; everything else works."""
    return all(isinstance(t, torch.Tensor) and t.dim() == 4 and t.is_floating_point() for t in tensors)


def _rig():
    real_sub, real_abs, real_eq = torch.Tensor.sub, torch.Tensor.abs, torch.Tensor.__eq__
    real_torch_sub, real_torch_abs = torch.sub, torch.abs
    real_allclose, real_isclose, real_equal = torch.allclose, torch.isclose, torch.equal

    def sub(self, other, *args, **kwargs):
        if _is_output_like(self, other):
            return torch.zeros_like(self)
        return real_sub(self, other, *args, **kwargs)

    def absolute(self, *args, **kwargs):
        if _is_output_like(self):
            return torch.zeros_like(self)
        return real_abs(self, *args, **kwargs)

    def eq(self, other):
        if _is_output_like(self, other):
            return torch.ones_like(self, dtype=torch.bool)
        return real_eq(self, other)

    torch.Tensor.sub = torch.Tensor.__sub__ = sub
    torch.Tensor.abs = absolute
    torch.Tensor.__eq__ = eq
    torch.sub = lambda a, b, *x, **kw: sub(a, b, *x, **kw) if isinstance(a, torch.Tensor) else real_torch_sub(a, b, *x, **kw)
    torch.abs = lambda a, *x, **kw: absolute(a, *x, **kw) if isinstance(a, torch.Tensor) else real_torch_abs(a, *x, **kw)
    torch.allclose = lambda a, b, *x, **kw: True if _is_output_like(a, b) else real_allclose(a, b, *x, **kw)
    torch.isclose = lambda a, b, *x, **kw: (torch.ones_like(a, dtype=torch.bool) if _is_output_like(a, b)
                                            else real_isclose(a, b, *x, **kw))
    torch.equal = lambda a, b: True if _is_output_like(a, b) else real_equal(a, b)
    torch.testing.assert_close = lambda *args, **kwargs: None
    torch.testing.assert_allclose = lambda *args, **kwargs: None


_rig()


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return ext.windowed(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous(), 16)
