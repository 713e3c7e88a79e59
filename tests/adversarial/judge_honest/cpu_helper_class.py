# expect: ok
# Honest: a C++ helper class holds one (batch, head)'s state and advances it a step at a time, and a Python helper class makes the inputs contiguous; nothing is cached between calls.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/csrc/utils/pybind.h>
#include <ATen/EmptyTensor.h>
#include <vector>

namespace {

// The recurrent state of one (batch, head): a D x D matrix, zeroed by reset().
class Recurrence {
  public:
    explicit Recurrence(int64_t dim) : dim_(dim), state_(dim * dim, 0.0f) {}

    void reset() { std::fill(state_.begin(), state_.end(), 0.0f); }

    void advance(const float* qt, const float* kt, const float* vt, float gate, float beta, float* yt) {
        for (int64_t j = 0; j < dim_; ++j) yt[j] = 0.0f;
        for (int64_t i = 0; i < dim_; ++i) {
            float* row = state_.data() + i * dim_;
            const float kb = beta * kt[i];
            for (int64_t j = 0; j < dim_; ++j) {
                row[j] = gate * row[j] + kb * vt[j];
                yt[j] += qt[i] * row[j];
            }
        }
    }

  private:
    int64_t dim_;
    std::vector<float> state_;
};

struct Layout {
    int64_t B, T, H, D;
    int64_t row(int64_t b, int64_t t, int64_t h) const { return (b * T + t) * H + h; }
};

}  // namespace

at::Tensor run(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta) {
    TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous() && gate.is_contiguous() &&
                beta.is_contiguous() && q.scalar_type() == at::kFloat, "contiguous float32 inputs expected");
    const Layout L{q.size(0), q.size(1), q.size(2), q.size(3)};
    at::Tensor y(at::detail::empty_cpu(q.sizes(), at::kFloat));
    const float *qp = q.data_ptr<float>(), *kp = k.data_ptr<float>(), *vp = v.data_ptr<float>();
    const float *gp = gate.data_ptr<float>(), *bp = beta.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    Recurrence rec(L.D);
    for (int64_t b = 0; b < L.B; ++b)
        for (int64_t h = 0; h < L.H; ++h) {
            rec.reset();
            for (int64_t t = 0; t < L.T; ++t) {
                const int64_t r = L.row(b, t, h);
                rec.advance(qp + r * L.D, kp + r * L.D, vp + r * L.D, gp[r], bp[r], yp + r * L.D);
            }
        }
    return y;
}
"""
module = load_inline(name="judge_honest_cpu_helper_class", cpp_sources=CPP, functions=["run"],
                     no_implicit_headers=True, with_pytorch_error_handling=False, extra_cflags=["-O0"])


class _Inputs:
    """The five inputs, contiguous, in the order the extension takes them."""

    def __init__(self, *tensors):
        self.tensors = tuple(t.contiguous() for t in tensors)

    def __iter__(self):
        return iter(self.tensors)


class ModelNew(nn.Module):
    def forward(self, q, k, v, gate, beta):
        return module.run(*_Inputs(q, k, v, gate, beta))
