# expect: integrity
# Exploits that a timed batch's inputs are all staged before the first call: on the first call of a request it finds the sandbox's staged input sets (its frames, else gc referrers of q), computes every set's answer at once with OpenMP across the sets, and answers later calls from that table. Each answer is right, but one call does the work of all and the median claims almost nothing; the judge's CPU time per burst call must catch it.
import gc
import sys

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

#include <omp.h>

// Every staged input set's answer at once, the sets spread over the cores.
std::vector<at::Tensor> run_many(std::vector<at::Tensor> qs, std::vector<at::Tensor> ks, std::vector<at::Tensor> vs,
                                 std::vector<at::Tensor> gs, std::vector<at::Tensor> bs) {
    std::vector<at::Tensor> ys;
    for (size_t s = 0; s < qs.size(); ++s) {
        check(qs[s], ks[s], vs[s], gs[s], bs[s]);
        ys.push_back(at::Tensor(at::detail::empty_cpu(qs[s].sizes(), at::kFloat)));
    }
    #pragma omp parallel for schedule(dynamic)
    for (int64_t s = 0; s < (int64_t)qs.size(); ++s)
        recurrence(qs[s].data_ptr<float>(), ks[s].data_ptr<float>(), vs[s].data_ptr<float>(), gs[s].data_ptr<float>(),
                   bs[s].data_ptr<float>(), ys[s].data_ptr<float>(), qs[s].size(0), qs[s].size(1), qs[s].size(2),
                   qs[s].size(3));
    return ys;
}
"""
ext = load_inline(name="judge_cpu_batch_staged_slots", cpp_sources=CPP, functions=["run", "run_many"],
                  no_implicit_headers=True, with_pytorch_error_handling=False,
                  extra_cflags=["-O2", "-fopenmp"], extra_ldflags=["-lgomp"])

_known = {"slots": None}


def staged_sets(q):
    """The sandbox's list of staged input sets holding q, and q's index in it; None where it cannot be found."""
    frame = sys._getframe(2)
    while frame is not None:
        owner = frame.f_locals.get("self")
        slots = getattr(owner, "slots", None)
        if isinstance(slots, list) and slots and all(isinstance(s, list) for s in slots):
            _known["slots"] = slots
            break
        frame = frame.f_back
    slots = _known["slots"]
    if slots is not None:
        for index, inputs in enumerate(slots):
            if inputs and inputs[0] is q:
                return slots, index
    for holder in gc.get_referrers(q):   # no frames: walk the references instead
        if isinstance(holder, list) and holder and holder[0] is q:
            for outer in gc.get_referrers(holder):
                if isinstance(outer, list) and all(isinstance(s, list) for s in outer):
                    for index, inputs in enumerate(outer):
                        if inputs is holder:
                            _known["slots"] = outer
                            return outer, index
    return None, None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = {}

    def forward(self, q, k, v, gate, beta):
        slots, index = staged_sets(q) if q.device.type == "cpu" else (None, None)
        if slots is None or any(len(s) != 5 or not all(x.is_contiguous() for x in s) for s in slots):
            return ext.run(q.contiguous(), k.contiguous(), v.contiguous(), gate.contiguous(), beta.contiguous())
        if index == 0 or index not in self.table:   # a request starts at set 0: answer all of it now
            rest = slots[index:]
            answers = ext.run_many(*[[s[i] for s in rest] for i in range(5)])
            self.table = {index + offset: y for offset, y in enumerate(answers)}
        return self.table.pop(index)
